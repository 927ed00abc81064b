# SPDX-License-Identifier: MIT
"""Transpose (gpuops.h section 6).

  torch.ops.gpuops.transpose(x, algo)   x.t().contiguous() of a 2-d tensor

A transpose copies bits, so any dtype of 1, 2, 4 or 8 bytes works (through the C entry point of
that width). x may be a row-slice of a wider matrix: its rows need unit stride (x.stride(1) == 1)
and a row pitch x.stride(0) >= its columns, which the pitched C form (transpose_ld) takes. The
output is contiguous. Autograd: the gradient is the gradient transposed."""
import torch

from ._lib import INVALID_ARGUMENT, UNSUPPORTED, GpuopsError
from ._torch import BY_WIDTH, REQUIRED, algo_arg, check, define, launch


def _check(x):
    check("transpose", x, contiguous=False)
    if x.dim() != 2:
        raise GpuopsError(INVALID_ARGUMENT, "transpose", f"expects a 2-d tensor, got {x.dim()} dimensions")
    if x.element_size() not in BY_WIDTH:
        raise GpuopsError(UNSUPPORTED, "transpose", f"dtype {x.dtype} ({x.element_size()} bytes; 1, 2, 4 or 8 work)")
    rows, cols = x.shape
    if (cols > 1 and x.stride(1) != 1) or (rows > 1 and x.stride(0) < max(cols, 1)):
        raise GpuopsError(INVALID_ARGUMENT, "transpose",
                          f"expects rows of unit stride and a row pitch >= cols, got strides {tuple(x.stride())}")


def _transpose(x, algo=0):
    _check(x)
    rows, cols = x.shape
    y = x.new_empty((cols, rows))
    s = BY_WIDTH[x.element_size()]
    ldx = x.stride(0) if rows > 1 else max(cols, 1)  # one row: its pitch is never used
    if ldx == cols:
        launch(f"gpuops_transpose_{s}", x.device, y=y, x=x, rows=rows, cols=cols, algo=algo_arg(algo))
    else:
        launch(f"gpuops_transpose_ld_{s}", x.device, y=y, x=x, rows=rows, cols=cols, ldx=ldx, ldy=max(rows, 1),
               algo=algo_arg(algo))
    return y


def _transpose_fake(x, algo=0):
    _check(x)
    return x.new_empty((x.shape[1], x.shape[0]))


def _grad(ctx, g):
    return {"x": torch.ops.gpuops.transpose(g.contiguous())}


define("transpose", [("x", "Tensor", REQUIRED), ("algo", "int", 0)], "Tensor", _transpose, _transpose_fake,
       backward=_grad)
