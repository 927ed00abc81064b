# SPDX-License-Identifier: MIT
"""Tensor-core matrix multiply and linear layers (gpuops.h section 9): float16 or bfloat16
operands, float32 accumulation.

  torch.ops.gpuops.gemm(a, b, c, bias, residual, alpha, beta, act, out_dtype, return_preact, algo)
      -> (out, preact)      out = act(alpha a @ b + beta c + bias) + residual
  torch.ops.gpuops.linear_fwd(x, weight, bias, act, return_preact, algo) -> (y, preact)
      y = act(x @ weight^T + bias), x [..., in], weight [out, in]: torch.nn.functional.linear, then act
  torch.ops.gpuops.linear_bwd(dy, preact, x, weight, act, grad_x, grad_weight, grad_bias, algo)
      -> (dx, dweight, dbias)   dx in x's dtype, dweight and dbias in float32 (f32 master weights)

gemm: a [m, k] and b [k, n] pass as they lie in memory (_torch.layout: op N or op T with their
leading dimensions, so w.t() costs nothing); out is a new contiguous [m, n] tensor of out_dtype
(None: the operands' dtype; or float32: gpuops_gemm_<t>_f32). c (needs beta != 0) is copied into
out first, which the library then reads. The epilogue (gpuops_epilogue): bias [n] and residual
[m, n] (rows of unit stride, any pitch) of out's dtype, act a gpuops_activation (0 none, 1 GELU
erf, 2 GELU tanh, 3 SiLU, 4 ReLU), preact (the value before act, written when return_preact)
returned as [m, n], else as an empty tensor. gemm has no autograd.
linear_fwd: contiguous x and weight; preact (x @ W^T + b) is written when return_preact, which the
backward needs for an activation. Autograd through linear_bwd (its workspace,
gpuops_linear_bwd_workspace_size, from PyTorch's caching allocator); the weight's and bias's
float32 gradients are cast to their dtypes. linear_bwd's grad_* flags pass NULL for the gradients
not wanted (returned empty)."""
import ctypes
import math

import torch

from . import _capi
from ._lib import INVALID_ARGUMENT, GpuopsError, struct, workspace_size
from ._torch import (OP_N, OPS, REQUIRED, algo_arg, check, define, launch, layout, optional_out, ptr, suffix,
                     workspace)

HALF = {torch.float16: "f16", torch.bfloat16: "bf16"}
ACTIVATIONS = {k.replace("GPUOPS_ACT_", "").lower(): v for k, v in _capi.ENUMS["gpuops_activation"].items()}


def activation(name):
    """A gpuops_activation from its name (none, gelu_erf, gelu_tanh, silu, relu; None: none) or value."""
    if name is None:
        return 0
    if isinstance(name, str):
        if name not in ACTIVATIONS:
            raise GpuopsError(INVALID_ARGUMENT, "activation", f"{name!r}; one of {', '.join(ACTIVATIONS)}")
        return ACTIVATIONS[name]
    return int(name)


def _check_act(op, act):
    if act not in ACTIVATIONS.values():
        raise GpuopsError(INVALID_ARGUMENT, op, f"act {act} ({', '.join(f'{v} {k}' for k, v in ACTIVATIONS.items())})")


def _check_gemm(a, b, c, bias, residual, beta, act, out_dtype):
    """(out dtype, m, n, k)."""
    check("gemm", a, b, contiguous=False)
    suffix("gemm", a, HALF)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise GpuopsError(INVALID_ARGUMENT, "gemm", f"expects [m, k] @ [k, n], got {tuple(a.shape)} @ {tuple(b.shape)}")
    layout("gemm", a)
    layout("gemm", b)
    m, k = a.shape
    n = b.shape[1]
    dt = out_dtype or a.dtype
    if dt not in (a.dtype, torch.float32):
        raise GpuopsError(INVALID_ARGUMENT, "gemm", f"out_dtype {dt} (the operands' dtype or float32)")
    for nm, t, shape in (("c", c, (m, n)), ("bias", bias, (n,)), ("residual", residual, (m, n))):
        if t is None:
            continue
        check("gemm", a, t, same_dtype=False, contiguous=False)  # a may be a transposed view
        if nm == "bias":
            check("gemm", t, contiguous=True)
        if t.dtype != dt or tuple(t.shape) != shape:
            raise GpuopsError(INVALID_ARGUMENT, "gemm", f"{nm} must be {dt} of shape {shape}")
    if residual is not None and layout("gemm", residual)[0] != OP_N:
        raise GpuopsError(INVALID_ARGUMENT, "gemm", "residual needs rows of unit stride (call .contiguous())")
    if c is None and beta != 0:
        raise GpuopsError(INVALID_ARGUMENT, "gemm", f"beta {beta} without c")
    _check_act("gemm", act)
    return dt, m, n, k


def _addr(t):
    """A struct field's pointer: the tensor's address, or None (NULL)."""
    return t.data_ptr() if ptr(t) is not None else None


def _gemm(a, b, c=None, bias=None, residual=None, alpha=1.0, beta=0.0, act=0, out_dtype=None, return_preact=False,
          algo=0):
    dt, m, n, k = _check_gemm(a, b, c, bias, residual, beta, act, out_dtype)
    out = a.new_empty((m, n), dtype=dt)
    if c is not None:
        out.copy_(c)
    pre = optional_out(return_preact, (m, n), out)
    op_a, lda = layout("gemm", a)
    op_b, ldb = layout("gemm", b)
    ld = max(n, 1)
    epi = struct("gpuops_epilogue")(bias=_addr(bias), residual=_addr(residual), preact=_addr(pre), act=act, ldp=ld,
                                    ldr=layout("gemm", residual)[1] if residual is not None else ld)
    s = HALF[a.dtype] + ("_f32" if dt == torch.float32 else "")
    launch(f"gpuops_gemm_{s}", a.device, c=out, a=a, b=b, m=m, n=n, k=k, lda=lda, ldb=ldb, ldc=ld, alpha=alpha, beta=beta,
           op_a=op_a, op_b=op_b, epi=ctypes.addressof(epi), algo=algo_arg(algo))
    return out, pre


def _gemm_fake(a, b, c=None, bias=None, residual=None, alpha=1.0, beta=0.0, act=0, out_dtype=None, return_preact=False,
               algo=0):
    dt, m, n, _ = _check_gemm(a, b, c, bias, residual, beta, act, out_dtype)
    out = a.new_empty((m, n), dtype=dt)
    return out, optional_out(return_preact, (m, n), out)


# ---- linear layers: x [..., in], weight [out, in], rows tight ----

def _check_linear(op, x, weight, bias, act):
    """(suffix, batch, in_features, out_features)."""
    check(op, x, weight)
    s = suffix(op, x, HALF)
    if x.dim() < 1 or weight.dim() != 2 or x.shape[-1] != weight.shape[1]:
        raise GpuopsError(INVALID_ARGUMENT, op, f"expects x [..., in] and weight [out, in], got {tuple(x.shape)} and "
                          f"{tuple(weight.shape)}")
    if bias is not None:
        check(op, x, bias)
        if tuple(bias.shape) != (weight.shape[0],):
            raise GpuopsError(INVALID_ARGUMENT, op, f"bias of shape {tuple(bias.shape)}, expects ({weight.shape[0]},)")
    _check_act(op, act)
    return s, math.prod(x.shape[:-1]), weight.shape[1], weight.shape[0]


def _linear_fwd(x, weight, bias=None, act=0, return_preact=False, algo=0):
    s, batch, fin, fout = _check_linear("linear_fwd", x, weight, bias, act)
    y = x.new_empty((*x.shape[:-1], fout))
    pre = optional_out(return_preact, y.shape, y)
    launch(f"gpuops_linear_fwd_{s}", x.device, y=y, preact=ptr(pre), x=x, w=weight, bias=bias, batch=batch,
           in_features=fin, out_features=fout, act=act, algo=algo_arg(algo))
    return y, pre


def _linear_fwd_fake(x, weight, bias=None, act=0, return_preact=False, algo=0):
    _check_linear("linear_fwd", x, weight, bias, act)
    y = x.new_empty((*x.shape[:-1], weight.shape[0]))
    return y, optional_out(return_preact, y.shape, y)


def _check_linear_bwd(dy, preact, x, weight, act):
    s, batch, fin, fout = _check_linear("linear_bwd", x, weight, None, act)
    want = (*x.shape[:-1], fout)
    for nm, t in (("dy", dy), ("preact", preact)):
        if t is None:
            continue
        check("linear_bwd", x, t)
        if tuple(t.shape) != want:
            raise GpuopsError(INVALID_ARGUMENT, "linear_bwd", f"{nm} of shape {tuple(t.shape)}, expects {want}")
    if preact is None and act != ACTIVATIONS["none"]:
        raise GpuopsError(INVALID_ARGUMENT, "linear_bwd", "an activation's backward needs preact (the forward's, "
                          "return_preact=True)")
    return s, batch, fin, fout


def _bwd_outputs(x, weight, grad_x, grad_weight, grad_bias):
    f32 = torch.float32
    return (optional_out(grad_x, x.shape, x), optional_out(grad_weight, weight.shape, x, f32),
            optional_out(grad_bias, weight.shape[:1], x, f32))


def _linear_bwd(dy, preact, x, weight, act=0, grad_x=True, grad_weight=True, grad_bias=True, algo=0):
    s, batch, fin, fout = _check_linear_bwd(dy, preact, x, weight, act)
    dx, dw, db = _bwd_outputs(x, weight, grad_x, grad_weight, grad_bias)
    nbytes = workspace_size("gpuops_linear_bwd_workspace_size", batch, fout, act)
    launch(f"gpuops_linear_bwd_{s}", x.device, dx=ptr(dx), dw=ptr(dw), db=ptr(db), dy=dy, preact=preact, x=x, w=weight,
           batch=batch, in_features=fin, out_features=fout, act=act, workspace=workspace(nbytes, x.device),
           workspace_bytes=nbytes, algo=algo_arg(algo))
    return dx, dw, db


def _linear_bwd_fake(dy, preact, x, weight, act=0, grad_x=True, grad_weight=True, grad_bias=True, algo=0):
    _check_linear_bwd(dy, preact, x, weight, act)
    return _bwd_outputs(x, weight, grad_x, grad_weight, grad_bias)


def _linear_setup(ctx, a, out):
    pre = out[1] if a["act"] != ACTIVATIONS["none"] and out[1].numel() == out[0].numel() else None
    ctx.save_for_backward(a["x"], a["weight"], pre)
    ctx.act, ctx.algo = a["act"], a["algo"]
    ctx.bias_dtype = a["bias"].dtype if a["bias"] is not None else None


def _linear_grad(ctx, g, _g_preact):
    x, weight, pre = ctx.saved_tensors
    need = tuple(ctx.needs_input_grad) + (False,) * 3  # a trace may hand fewer flags than inputs
    dx, dw, db = OPS["linear_bwd"](g.contiguous(), pre, x, weight, ctx.act, need[0], need[1], need[2], ctx.algo)
    out = {"x": dx if need[0] else None}
    if need[1]:
        out["weight"] = dw.to(weight.dtype)
    if need[2] and ctx.bias_dtype is not None:
        out["bias"] = db.to(ctx.bias_dtype)
    return out


T, R = "Tensor", REQUIRED
define("gemm", [("a", T, R), ("b", T, R), ("c", "Tensor?", None), ("bias", "Tensor?", None), ("residual", "Tensor?", None),
                ("alpha", "float", 1.0), ("beta", "float", 0.0), ("act", "int", 0), ("out_dtype", "ScalarType?", None),
                ("return_preact", "bool", False), ("algo", "int", 0)], "(Tensor, Tensor)", _gemm, _gemm_fake)
define("linear_fwd", [("x", T, R), ("weight", T, R), ("bias", "Tensor?", None), ("act", "int", 0),
                      ("return_preact", "bool", False), ("algo", "int", 0)], "(Tensor, Tensor)", _linear_fwd,
       _linear_fwd_fake, setup=_linear_setup, backward=_linear_grad)
define("linear_bwd", [("dy", T, R), ("preact", "Tensor?", R), ("x", T, R), ("weight", T, R), ("act", "int", 0),
                      ("grad_x", "bool", True), ("grad_weight", "bool", True), ("grad_bias", "bool", True),
                      ("algo", "int", 0)], "(Tensor, Tensor, Tensor)", _linear_bwd, _linear_bwd_fake)
