# SPDX-License-Identifier: MIT
"""Elementwise ops and activations (gpuops.h section 2), one custom op per row of the registry
GPUOPS__EW_OPS: torch.ops.gpuops.<name>, named as in C (add, gelu_fwd, silu_bwd, ...).

Every op but the quantizers is derived from its C prototype alone: the const pointers are the
input tensors (in order, named as in C), the other pointer the output (a new tensor like the first
input), n the element count, the scalars between n and algo the op's scalar arguments (an enum
defaults to its first value), then algo. An op whose registry row reads more arrays than it has
const pointers (axpy) updates its output in place. A forward <stem>_fwd whose <stem>_bwd takes
(dy, x) gets that backward as its autograd formula; GRADS holds the formulas of the others.
Tensors: contiguous, one CUDA device, one dtype (float32, float16, bfloat16), one shape."""
import torch

from . import _capi
from ._lib import INVALID_ARGUMENT, GpuopsError, workspace_size
from ._torch import FLOAT, OPS, REQUIRED, algo_arg, check, define, launch, suffix, workspace

SPECIAL = {"QUANTIZE", "DEQUANTIZE"}  # hand-written below (int8 side, per-channel forms)


def _prototype(name):
    """(output, inputs, scalars) of gpuops_<name>_f32: the output pointer's name, the input
    pointers' names, and [(name, schema type, default)] of the scalars."""
    out, inputs, scalars = None, [], []
    for ctype, pname in _capi.FUNCTIONS[f"gpuops_{name}_f32"][1]:
        if pname in ("n", "algo", "stream"):
            continue
        if ctype.endswith("*"):
            if ctype.startswith("const"):
                inputs.append(pname)
            else:
                out = pname
        elif ctype == "float":
            scalars.append((pname, "float", REQUIRED))
        elif ctype in _capi.ENUMS:
            scalars.append((pname, "int", 0))
        else:
            scalars.append((pname, "int", REQUIRED))
    return out, inputs, scalars


def _map_op(name, reads):
    out, inputs, scalars = _prototype(name)
    in_place = reads > len(inputs)  # the output is read too (axpy: y = a x + y)
    tensors = ([out] if in_place else []) + inputs
    params = [(t, "Tensor(a!)" if in_place and t == out else "Tensor", REQUIRED) for t in tensors]
    params += scalars + [("algo", "int", 0)]

    def impl(**a):
        ts = [a[t] for t in tensors]
        check(name, *ts, same_shape=True)
        s = suffix(name, ts[0], FLOAT)
        y = a[out] if in_place else torch.empty_like(ts[0])
        args = {t: a[t] for t in inputs}
        args.update({p: a[p] for p, _, _ in scalars})
        launch(f"gpuops_{name}_{s}", ts[0].device, **{out: y}, **args, n=ts[0].numel(), algo=algo_arg(a["algo"]))
        return None if in_place else y

    def fake(**a):
        ts = [a[t] for t in tensors]
        check(name, *ts, same_shape=True)
        suffix(name, ts[0], FLOAT)
        return None if in_place else torch.empty_like(ts[0])

    return params, impl, fake, ("()" if in_place else "Tensor"), ((out,) if in_place else ())


# Autograd formulas of the ops that have no <stem>_bwd partner: setup(ctx, args, output) and
# backward(ctx, grad) -> {input: gradient}, in PyTorch arithmetic (their derivatives are trivial).
def _save_out_s(ctx, a, y):
    ctx.save_for_backward(y)
    ctx.s = a["s"]


def _add_mul_exp_grad(ctx, g):  # y = exp((x + z) s): dy/dx = dy/dz = s y
    (y,) = ctx.saved_tensors
    d = (g.float() * y.float() * ctx.s).to(g.dtype)
    return {"x": d, "z": d}


GRADS = {
    "add": (None, lambda ctx, g: {"a": g, "b": g}),
    "add_scalar": (None, lambda ctx, g: {"x": g}),
    "add_mul_exp": (_save_out_s, _add_mul_exp_grad),
}


def _pair_grad(fwd, bwd):
    """The autograd formula of <stem>_fwd through its C backward <stem>_bwd(dy, x, scalars...)."""
    _, _, scalars = _prototype(bwd)
    keep = [p for p, _, _ in scalars]

    def setup(ctx, a, y):
        ctx.save_for_backward(a["x"])
        ctx.scalars = {p: a[p] for p in keep}

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return {"x": OPS[bwd](g.contiguous(), x, **ctx.scalars)}

    return setup, backward


def _define_registry():
    names = {row[0] for row in _capi.REGISTRIES["EW_OPS"]}
    for name, sig, reads, _fused, _lo, _hi in _capi.REGISTRIES["EW_OPS"]:
        if sig in SPECIAL:
            continue
        params, impl, fake, returns, mutates = _map_op(name, reads)
        setup = backward = None
        stem = name[:-4] if name.endswith("_fwd") else None
        if stem and f"{stem}_bwd" in names and _prototype(f"{stem}_bwd")[1] == ["dy", "x"]:
            setup, backward = _pair_grad(name, f"{stem}_bwd")
        elif name in GRADS:
            setup, backward = GRADS[name]
        define(name, params, returns, impl, fake, mutates=mutates, backward=backward, setup=setup)


_define_registry()


# ---- int8 quantization: per tensor and per channel (the channel axis of any shape) ----

def _channels(op, x, scale, zero_point, axis):
    if not -x.dim() <= axis < max(x.dim(), 1):
        raise GpuopsError(INVALID_ARGUMENT, op, f"axis {axis} out of range for {x.dim()} dimensions")
    axis %= max(x.dim(), 1)
    c = x.shape[axis] if x.dim() else 1
    outer = 1
    for d in x.shape[:axis]:
        outer *= d
    inner = 1
    for d in x.shape[axis + 1:]:
        inner *= d
    check(op, x, scale, zero_point, same_dtype=False)
    if scale.dtype != torch.float32 or zero_point.dtype != torch.int32:
        raise GpuopsError(INVALID_ARGUMENT, op, "scale must be float32 and zero_point int32")
    if scale.numel() != c or zero_point.numel() != c:
        raise GpuopsError(INVALID_ARGUMENT, op, f"expects {c} scales and zero points (the size of axis {axis})")
    return outer, c, inner


def _quantize(x, scale, zero_point, algo=0):
    check("quantize", x)
    s = suffix("quantize", x, FLOAT)
    q = torch.empty_like(x, dtype=torch.int8)
    a = algo_arg(algo)
    ws_bytes = workspace_size("gpuops_quantize_workspace_size", x.numel(), a)
    ws = workspace(ws_bytes, x.device)
    launch(f"gpuops_quantize_{s}", x.device, q=q, x=x, n=x.numel(), scale=scale, zero_point=zero_point,
           workspace=ws, workspace_bytes=ws_bytes, algo=a)
    return q


def _quantize_fake(x, scale, zero_point, algo=0):
    check("quantize", x)
    suffix("quantize", x, FLOAT)
    return torch.empty_like(x, dtype=torch.int8)


def _quantize_pc(x, scale, zero_point, axis, algo=0):
    outer, c, inner = _channels("quantize_per_channel", x, scale, zero_point, axis)
    s = suffix("quantize_per_channel", x, FLOAT)
    q = torch.empty_like(x, dtype=torch.int8)
    a = algo_arg(algo)
    ws_bytes = workspace_size("gpuops_quantize_workspace_size", x.numel(), a)
    ws = workspace(ws_bytes, x.device)
    launch(f"gpuops_quantize_per_channel_{s}", x.device, q=q, x=x, scale=scale, zero_point=zero_point, outer=outer,
           channels=c, inner=inner, workspace=ws, workspace_bytes=ws_bytes, algo=a)
    return q


def _quantize_pc_fake(x, scale, zero_point, axis, algo=0):
    _channels("quantize_per_channel", x, scale, zero_point, axis)
    suffix("quantize_per_channel", x, FLOAT)
    return torch.empty_like(x, dtype=torch.int8)


def _dequant_out(op, q, dtype):
    check(op, q)
    if q.dtype != torch.int8:
        raise GpuopsError(INVALID_ARGUMENT, op, f"expects int8 data, got {q.dtype}")
    y = torch.empty_like(q, dtype=dtype)
    return y, suffix(op, y, FLOAT)


def _dequantize(q, scale, zero_point, dtype, algo=0):
    x, s = _dequant_out("dequantize", q, dtype)
    launch(f"gpuops_dequantize_{s}", q.device, x=x, q=q, n=q.numel(), scale=scale, zero_point=zero_point, algo=algo_arg(algo))
    return x


def _dequantize_fake(q, scale, zero_point, dtype, algo=0):
    return _dequant_out("dequantize", q, dtype)[0]


def _dequantize_pc(q, scale, zero_point, axis, dtype, algo=0):
    outer, c, inner = _channels("dequantize_per_channel", q, scale, zero_point, axis)
    x, s = _dequant_out("dequantize_per_channel", q, dtype)
    launch(f"gpuops_dequantize_per_channel_{s}", q.device, x=x, q=q, scale=scale, zero_point=zero_point, outer=outer,
           channels=c, inner=inner, algo=algo_arg(algo))
    return x


def _dequantize_pc_fake(q, scale, zero_point, axis, dtype, algo=0):
    _channels("dequantize_per_channel", q, scale, zero_point, axis)
    return _dequant_out("dequantize_per_channel", q, dtype)[0]


T, R = "Tensor", REQUIRED
define("quantize", [("x", T, R), ("scale", "float", R), ("zero_point", "int", R), ("algo", "int", 0)], T,
       _quantize, _quantize_fake)
define("quantize_per_channel", [("x", T, R), ("scale", T, R), ("zero_point", T, R), ("axis", "int", R),
                                ("algo", "int", 0)], T, _quantize_pc, _quantize_pc_fake)
define("dequantize", [("q", T, R), ("scale", "float", R), ("zero_point", "int", R), ("dtype", "ScalarType", R),
                      ("algo", "int", 0)], T, _dequantize, _dequantize_fake)
define("dequantize_per_channel", [("q", T, R), ("scale", T, R), ("zero_point", T, R), ("axis", "int", R),
                                  ("dtype", "ScalarType", R), ("algo", "int", 0)], T, _dequantize_pc, _dequantize_pc_fake)
