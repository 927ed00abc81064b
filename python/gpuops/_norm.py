# SPDX-License-Identifier: MIT
"""Normalization and rotary embeddings (gpuops.h section 8), along the last dimension of a
contiguous float32, float16 or bfloat16 tensor (rows = the leading dimensions).

One custom op per row of the registry GPUOPS__NORM_OPS, named as in C, derived from its prototype:
the const pointers are the inputs in C order (x, residual, dy: tensors of one shape; mean, rstd:
the forward's float32 statistics, one a row; gamma, beta: optional [cols] weights of x's dtype),
then the scalars (eps, approx), then, for a backward, weight_grads; the other pointers are the
outputs, returned in C order:

  layernorm_fwd(x, gamma, beta, eps, algo)                 -> (y, mean, rstd)
  rmsnorm_fwd(x, gamma, eps, algo)                         -> (y, rstd)
  add_layernorm_fwd(x, residual, gamma, beta, eps, algo)   -> (y, h, mean, rstd)   h = x + residual
  add_rmsnorm_fwd(x, residual, gamma, eps, algo)           -> (y, h, rstd)
  layernorm_gelu_fwd(x, gamma, beta, eps, approx, algo)    -> (y, mean, rstd)      y = gelu(layernorm(x))
  layernorm_bwd(dy, x, mean, rstd, gamma, weight_grads, algo)               -> (dx, dgamma, dbeta)
  rmsnorm_bwd(dy, x, rstd, gamma, weight_grads, algo)                       -> (dx, dgamma)
  layernorm_gelu_bwd(dy, x, mean, rstd, gamma, beta, approx, weight_grads, algo) -> (dx, dgamma, dbeta)

weight_grads=False passes NULL for dgamma and dbeta (returned empty, shape [0]); the backwards'
workspace (gpuops_norm_bwd_workspace_size) comes from PyTorch's caching allocator. Autograd: each
forward through the backward of its norm (the add_ forms on h, plus h's own gradient); the
statistics carry no gradient.

  rope_fwd(x, positions, cos_sin, rot_dim, base, pairing, algo)    rotary embedding of x
  rope_bwd(dy, positions, cos_sin, rot_dim, base, pairing, algo)   its inverse rotation (the gradient)

x is [tokens, heads, head_dim] with unit strides inside a token and any token stride >= heads *
head_dim (a view of a fused qkv buffer passes as it lies); the output is a new contiguous tensor.
positions: int64 [tokens] or None (token t at position t); cos_sin: a float32 [positions, rot_dim]
cache (cos then sin of each pair) or None (angles from base); rot_dim None: head_dim; pairing 0
adjacent (GPT-J), 1 halves (GPT-NeoX, Llama)."""
import math

import torch

from . import _capi
from ._lib import INVALID_ARGUMENT, GpuopsError, workspace_size
from ._torch import FLOAT, OPS, REQUIRED, algo_arg, check, define, launch, optional_out, ptr, suffix, workspace

MATRICES = ("x", "residual", "dy", "y", "h", "dx")
STATS = ("mean", "rstd")
WEIGHTS = ("gamma", "beta")
WEIGHT_GRADS = ("dgamma", "dbeta")
SIZES = ("rows", "cols", "workspace", "workspace_bytes", "algo", "stream")
SCALARS = {"eps": ("float", 1e-5), "approx": ("int", 0)}


def _prototype(name):
    """(outputs, inputs, scalars) of gpuops_<name>_f32 by parameter name, in C order."""
    outs, ins, scalars = [], [], []
    for ctype, p in _capi.FUNCTIONS[f"gpuops_{name}_f32"][1]:
        if p in SIZES:
            continue
        if ctype.endswith("*"):
            (ins if ctype.startswith("const") else outs).append(p)
        else:
            scalars.append(p)
    return outs, ins, scalars


def _check_norm(name, a, ins, scalars):
    """Checks one call's tensors and scalars; (x, its C suffix, rows, cols)."""
    x = a["x"]
    check(name, *[a[t] for t in ins if t in MATRICES], same_shape=True)
    if x.dim() == 0:
        raise GpuopsError(INVALID_ARGUMENT, name, "expects at least one dimension (the normalized one)")
    s = suffix(name, x, FLOAT)
    rows, cols = math.prod(x.shape[:-1]), x.shape[-1]
    for t in ins:
        v = a[t]
        if t in STATS:
            check(name, x, v, same_dtype=False)
            if v.dtype != torch.float32 or v.numel() != rows:
                raise GpuopsError(INVALID_ARGUMENT, name, f"{t} must be float32 with one value a row ({rows})")
        elif t in WEIGHTS and v is not None:
            check(name, x, v)
            if tuple(v.shape) != (cols,):
                raise GpuopsError(INVALID_ARGUMENT, name, f"{t} of shape {tuple(v.shape)}, expects ({cols},)")
    if "eps" in scalars and not (math.isfinite(a["eps"]) and a["eps"] > 0):
        raise GpuopsError(INVALID_ARGUMENT, name, f"eps {a['eps']} (finite and > 0)")
    if "approx" in scalars and a["approx"] not in _capi.ENUMS["gpuops_gelu_approx"].values():
        raise GpuopsError(INVALID_ARGUMENT, name, f"approx {a['approx']} (0 erf, 1 tanh)")
    return x, s, rows, cols


def _outputs(outs, x, cols, weight_grads):
    made = {}
    for o in outs:
        if o in MATRICES:
            made[o] = torch.empty_like(x)
        elif o in STATS:
            made[o] = x.new_empty(x.shape[:-1], dtype=torch.float32)
        else:
            made[o] = optional_out(weight_grads, (cols,), x)
    return made


def _norm_op(name, bwd):
    outs, ins, scalars = _prototype(name)
    params = [(t, "Tensor?" if t in WEIGHTS else "Tensor", None if t in WEIGHTS else REQUIRED) for t in ins]
    params += [(p, *SCALARS[p]) for p in scalars]
    params += ([("weight_grads", "bool", True)] if bwd else []) + [("algo", "int", 0)]
    returns = "(" + ", ".join("Tensor" for _ in outs) + ")"

    def impl(**a):
        x, s, rows, cols = _check_norm(name, a, ins, scalars)
        made = _outputs(outs, x, cols, a.get("weight_grads", False))
        args = {t: ptr(a[t]) if t in WEIGHTS else a[t] for t in ins}
        args.update({p: a[p] for p in scalars})
        args.update({o: ptr(t) for o, t in made.items()})
        if bwd:
            nbytes = workspace_size("gpuops_norm_bwd_workspace_size", rows, cols) if a["weight_grads"] else 0
            args.update(workspace=workspace(nbytes, x.device), workspace_bytes=nbytes)
        launch(f"gpuops_{name}_{s}", x.device, **args, rows=rows, cols=cols, algo=algo_arg(a["algo"]))
        return tuple(made[o] for o in outs)

    def fake(**a):
        x, _, rows, cols = _check_norm(name, a, ins, scalars)
        made = _outputs(outs, x, cols, a.get("weight_grads", False))
        return tuple(made[o] for o in outs)

    return params, impl, fake, returns


def _norm_grad(fwd, names, bwd):
    """The autograd formula of forward `fwd` (parameters `names`) through its C backward: on x, or
    for add_<norm> on h (then dx = dresidual = the norm's dx + h's own gradient)."""
    outs, ins, _ = _prototype(fwd)
    bwd_outs, bwd_ins, bwd_scalars = _prototype(bwd)
    residual = "residual" in ins

    def setup(ctx, a, out):
        got = dict(zip(outs, out))
        saved = {"x": got["h"] if residual else a["x"], "mean": got.get("mean"), "rstd": got["rstd"],
                 "gamma": a.get("gamma"), "beta": a.get("beta")}
        ctx.keys = list(saved)
        ctx.save_for_backward(*saved.values())
        ctx.scalars = {p: a[p] for p in bwd_scalars}

    def backward(ctx, *grads):
        g = dict(zip(outs, grads))
        saved = dict(zip(ctx.keys, ctx.saved_tensors))
        need = dict(zip(names, ctx.needs_input_grad))
        args = {t: saved[t] for t in bwd_ins if t != "dy"}
        wg = bool(need.get("gamma") or need.get("beta"))
        got = dict(zip(bwd_outs, OPS[bwd](g["y"].contiguous(), **args, **ctx.scalars, weight_grads=wg)))
        dx = got["dx"] + g["h"] if residual and g["h"] is not None else got["dx"]
        out = {"x": dx, "residual": dx if residual else None}
        for w, d in zip(WEIGHTS, WEIGHT_GRADS):
            if need.get(w):
                out[w] = got[d]
        return out

    return setup, backward


def _define_registry():
    rows = _capi.REGISTRIES["NORM_OPS"]
    names = {r[0] for r in rows}
    for name, _rms, res, _gelu, bwd in rows:
        params, impl, fake, returns = _norm_op(name, bwd)
        setup = backward = None
        partner = (name[len("add_"):] if res else name)[:-len("_fwd")] + "_bwd"
        if not bwd and partner in names:
            setup, backward = _norm_grad(name, [p for p, _, _ in params], partner)
        define(name, params, returns, impl, fake, setup=setup, backward=backward)


_define_registry()


# ---- rotary position embeddings ----
PAIRINGS = _capi.ENUMS["gpuops_rope_pairing"]


def _rope_check(name, t, positions, cos_sin, rot_dim, base, pairing):
    """(suffix, tokens, heads, head_dim, rot_dim, token stride of t)."""
    check(name, t, contiguous=False)
    s = suffix(name, t, FLOAT)
    if t.dim() != 3:
        raise GpuopsError(INVALID_ARGUMENT, name, f"expects [tokens, heads, head_dim], got shape {tuple(t.shape)}")
    tokens, heads, head_dim = t.shape
    row = heads * head_dim
    if (head_dim > 1 and t.stride(2) != 1) or (heads > 1 and t.stride(1) != head_dim):
        raise GpuopsError(INVALID_ARGUMENT, name, f"strides {tuple(t.stride())}: each token's heads must be "
                          "contiguous (call .contiguous())")
    ld = t.stride(0) if tokens > 1 else max(row, 1)
    if ld < row:
        raise GpuopsError(INVALID_ARGUMENT, name, f"token stride {ld} < heads * head_dim = {row}")
    rot = head_dim if rot_dim is None else rot_dim
    if rot % 2 or not 0 <= rot <= head_dim:
        raise GpuopsError(INVALID_ARGUMENT, name, f"rot_dim {rot} (even, 0 .. head_dim = {head_dim})")
    if pairing not in PAIRINGS.values():
        raise GpuopsError(INVALID_ARGUMENT, name, f"pairing {pairing} (0 adjacent, 1 halves)")
    if positions is not None:
        check(name, t, positions, same_dtype=False, contiguous=False)  # t may have a token stride
        check(name, positions, contiguous=True)
        if positions.dtype != torch.int64 or positions.numel() != tokens:
            raise GpuopsError(INVALID_ARGUMENT, name, f"positions must be int64 with one value a token ({tokens})")
    if cos_sin is not None:
        check(name, t, cos_sin, same_dtype=False, contiguous=False)  # t may have a token stride
        check(name, cos_sin, contiguous=True)
        if cos_sin.dtype != torch.float32 or cos_sin.dim() != 2 or cos_sin.shape[1] != rot:
            raise GpuopsError(INVALID_ARGUMENT, name, f"cos_sin must be float32 [positions, rot_dim = {rot}]")
    elif not (math.isfinite(base) and base > 0):
        raise GpuopsError(INVALID_ARGUMENT, name, f"base {base} (finite and > 0)")
    return s, tokens, heads, head_dim, rot, ld


def _rope_op(name):
    out, inp = [p for _, p in _capi.FUNCTIONS[f"gpuops_{name}_f32"][1][:2]]
    params = [(inp, "Tensor", REQUIRED), ("positions", "Tensor?", None), ("cos_sin", "Tensor?", None),
              ("rot_dim", "int?", None), ("base", "float", 10000.0), ("pairing", "int", 0), ("algo", "int", 0)]

    def impl(**a):
        t = a[inp]
        s, tokens, heads, head_dim, rot, ld = _rope_check(name, t, a["positions"], a["cos_sin"], a["rot_dim"], a["base"],
                                                          a["pairing"])
        y = t.new_empty(t.shape)
        launch(f"gpuops_{name}_{s}", t.device, **{out: y, inp: t, "ld" + out: max(heads * head_dim, 1), "ld" + inp: ld},
               positions=a["positions"], cos_sin=a["cos_sin"], tokens=tokens, heads=heads, head_dim=head_dim,
               rot_dim=rot, base=a["base"], pairing=a["pairing"], algo=algo_arg(a["algo"]))
        return y

    def fake(**a):
        t = a[inp]
        _rope_check(name, t, a["positions"], a["cos_sin"], a["rot_dim"], a["base"], a["pairing"])
        return t.new_empty(t.shape)

    return params, impl, fake


def _rope_setup(ctx, a, y):
    ctx.save_for_backward(a["positions"], a["cos_sin"])
    ctx.args = {k: a[k] for k in ("rot_dim", "base", "pairing")}


def _rope_grad(ctx, g):
    positions, cos_sin = ctx.saved_tensors
    return {"x": OPS["rope_bwd"](g.contiguous(), positions, cos_sin, **ctx.args)}


for _name, _setup, _backward in (("rope_fwd", _rope_setup, _rope_grad), ("rope_bwd", None, None)):
    _params, _impl, _fake = _rope_op(_name)
    define(_name, _params, "Tensor", _impl, _fake, setup=_setup, backward=_backward)
