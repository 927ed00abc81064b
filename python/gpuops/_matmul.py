# SPDX-License-Identifier: MIT
"""Matrix multiply in float32 on CUDA cores (gpuops.h section 7; no TF32).

  torch.ops.gpuops.matmul(a, b, alpha, algo)   alpha * a @ b for 2-d float32 a [m, k], b [k, n]

Each operand is passed as it lies in memory (_torch.layout): a tensor with unit stride along its
rows is op N with leading dimension stride(0); one with unit stride along its columns (a
transposed view such as w.t()) is op T with leading dimension stride(1). Any other layout is
refused (call .contiguous()). The output is a new contiguous [m, n] tensor (beta = 0). Autograd:
dA = alpha g @ B^T and dB = alpha A^T @ g, both through this op on transposed views."""
import torch

from ._lib import INVALID_ARGUMENT, GpuopsError
from ._torch import REQUIRED, algo_arg, check, define, launch, layout


def _check(a, b):
    check("matmul", a, b, contiguous=False)
    if a.dtype != torch.float32:
        raise GpuopsError(INVALID_ARGUMENT, "matmul", f"expects float32, got {a.dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise GpuopsError(INVALID_ARGUMENT, "matmul", f"expects [m, k] @ [k, n], got {tuple(a.shape)} @ {tuple(b.shape)}")
    layout("matmul", a)
    layout("matmul", b)


def _matmul(a, b, alpha=1.0, algo=0):
    _check(a, b)
    m, k = a.shape
    n = b.shape[1]
    c = a.new_empty((m, n))
    op_a, lda = layout("matmul", a)
    op_b, ldb = layout("matmul", b)
    launch("gpuops_matmul_f32", a.device, c=c, a=a, b=b, m=m, n=n, k=k, lda=lda, ldb=ldb, ldc=max(n, 1), alpha=alpha,
           beta=0.0, op_a=op_a, op_b=op_b, algo=algo_arg(algo))
    return c


def _matmul_fake(a, b, alpha=1.0, algo=0):
    _check(a, b)
    return a.new_empty((a.shape[0], b.shape[1]))


def _setup(ctx, args, c):
    ctx.save_for_backward(args["a"], args["b"])
    ctx.alpha = args["alpha"]


def _grad(ctx, g):
    a, b = ctx.saved_tensors
    g = g.contiguous()
    out = {}
    if ctx.needs_input_grad[0]:
        out["a"] = torch.ops.gpuops.matmul(g, b.t(), ctx.alpha)
    if ctx.needs_input_grad[1]:
        out["b"] = torch.ops.gpuops.matmul(a.t(), g, ctx.alpha)
    return out


define("matmul", [("a", "Tensor", REQUIRED), ("b", "Tensor", REQUIRED), ("alpha", "float", 1.0), ("algo", "int", 0)],
       "Tensor", _matmul, _matmul_fake, setup=_setup, backward=_grad)
