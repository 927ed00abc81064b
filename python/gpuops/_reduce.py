# SPDX-License-Identifier: MIT
"""Reductions and histogram (gpuops.h section 3).

  torch.ops.gpuops.reduce(x, op, algo)        sum / max / min of all elements: a 0-d float32 tensor
  torch.ops.gpuops.reduce_rows(x, op, algo)   of each row of the last dimension: float32, x.shape[:-1]
  torch.ops.gpuops.histogram(x, bins, algo)   counts of the int32 values 0 .. bins-1: int64 [bins]

op: 0 sum, 1 max, 2 min (gpuops_reduce_op). Inputs float32, float16 or bfloat16 (histogram int32),
contiguous. The sums have autograd (the gradient is the output's, broadcast); max and min have
none. The vector reduction's workspace comes from PyTorch's caching allocator."""
import torch

from . import _capi
from ._lib import INVALID_ARGUMENT, GpuopsError, workspace_size
from ._torch import FLOAT, REQUIRED, algo_arg, check, define, launch, rows_cols, suffix, workspace

OPS_ENUM = {k.replace("GPUOPS_REDUCE_", "").lower(): v for k, v in _capi.ENUMS["gpuops_reduce_op"].items()}


def _op_value(name, op):
    if op not in OPS_ENUM.values():
        raise GpuopsError(INVALID_ARGUMENT, name, f"op {op} (0 sum, 1 max, 2 min)")
    return op


def _reduce(x, op=0, algo=0):
    check("reduce", x)
    s = suffix("reduce", x, FLOAT)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    a = algo_arg(algo)
    ws_bytes = workspace_size("gpuops_reduce_workspace_size", x.numel(), a)
    ws = workspace(ws_bytes, x.device)
    launch(f"gpuops_reduce_{s}", x.device, out=out, x=x, n=x.numel(), op=_op_value("reduce", op), workspace=ws,
           workspace_bytes=ws_bytes, algo=a)
    return out


def _reduce_fake(x, op=0, algo=0):
    check("reduce", x)
    suffix("reduce", x, FLOAT)
    return x.new_empty((), dtype=torch.float32)


def _rows_out_shape(x):
    return x.shape[:-1] if x.dim() > 0 else ()


def _reduce_rows(x, op=0, algo=0):
    check("reduce_rows", x)
    s = suffix("reduce_rows", x, FLOAT)
    rows, cols = rows_cols(x)
    out = torch.empty(_rows_out_shape(x), dtype=torch.float32, device=x.device)
    launch(f"gpuops_reduce_rows_{s}", x.device, out=out, x=x, rows=rows, cols=cols, op=_op_value("reduce_rows", op),
           algo=algo_arg(algo))
    return out


def _reduce_rows_fake(x, op=0, algo=0):
    check("reduce_rows", x)
    suffix("reduce_rows", x, FLOAT)
    return x.new_empty(_rows_out_shape(x), dtype=torch.float32)


def _save_x_meta(ctx, a, out):
    ctx.shape, ctx.dtype, ctx.op = a["x"].shape, a["x"].dtype, a["op"]


def _sum_grad(ctx, g):
    if ctx.op != 0:
        raise RuntimeError("gpuops: max and min have no backward (use the sum, or PyTorch's amax)")
    return {"x": g.to(ctx.dtype).expand(ctx.shape)}


def _rows_grad(ctx, g):
    if ctx.op != 0:
        raise RuntimeError("gpuops: max and min have no backward (use the sum, or PyTorch's amax)")
    if len(ctx.shape) == 0:
        return {"x": g.to(ctx.dtype)}
    return {"x": g.to(ctx.dtype).unsqueeze(-1).expand(ctx.shape)}


def _histogram_check(x, bins):
    check("histogram", x)
    if x.dtype != torch.int32:
        raise GpuopsError(INVALID_ARGUMENT, "histogram", f"expects int32 values, got {x.dtype}")
    if not 1 <= bins <= 2**31 - 1:
        raise GpuopsError(INVALID_ARGUMENT, "histogram", f"bins {bins} (1 <= bins <= 2^31 - 1)")


def _histogram(x, bins, algo=0):
    _histogram_check(x, bins)
    counts = torch.empty(bins, dtype=torch.int64, device=x.device)
    launch("gpuops_histogram_i32", x.device, counts=counts, x=x, n=x.numel(), bins=bins, algo=algo_arg(algo))
    return counts


def _histogram_fake(x, bins, algo=0):
    _histogram_check(x, bins)
    return x.new_empty(bins, dtype=torch.int64)


T, R = "Tensor", REQUIRED
define("reduce", [("x", T, R), ("op", "int", 0), ("algo", "int", 0)], T, _reduce, _reduce_fake,
       setup=_save_x_meta, backward=_sum_grad)
define("reduce_rows", [("x", T, R), ("op", "int", 0), ("algo", "int", 0)], T, _reduce_rows, _reduce_rows_fake,
       setup=_save_x_meta, backward=_rows_grad)
define("histogram", [("x", T, R), ("bins", "int", R), ("algo", "int", 0)], T, _histogram, _histogram_fake)
