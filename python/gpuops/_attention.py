# SPDX-License-Identifier: MIT
"""Scaled dot-product attention (gpuops.h section 10): float16 and bfloat16 (float32 for the naive
and flash versions), multi-head, grouped-query and multi-query, causal or not.

  torch.ops.gpuops.attention_fwd(q, k, v, scale, causal, bhsd, algo) -> (o, lse)
  torch.ops.gpuops.attention_bwd(dout, q, k, v, o, lse, scale, causal, bhsd, algo) -> (dq, dk, dv)

q is [B, Sq, Hq, D], k and v [B, Sk, Hkv, D] (bhsd=False), or [B, Hq, Sq, D] and [B, Hkv, Sk, D]
(bhsd=True, PyTorch's scaled_dot_product_attention layout); each passes as it lies, with its own
batch, sequence and head strides (gpuops_attention_dims) and a contiguous last dimension, so a view
of a fused qkv buffer costs no copy. Hq is a multiple of Hkv; D a multiple of 8 from 8 to 256.
scale None: gpuops_attention_default_scale(D) = 1 / sqrt(D). causal: query i sees key j when
j <= i + Sk - Sq (aligned to the bottom-right corner; the square case is j <= i); a query that sees
no key gets o = 0 and lse = -inf. o is a new contiguous tensor of q's shape and dtype, lse the
float32 log-sum-exp of each row's scaled scores, [B, Hq, Sq].

The backward takes o and lse from the forward; dout is read with o's strides (copied to them
when it has others); dq, dk, dv are new tensors with the strides of q, k, v. Workspace
(gpuops_attention_fwd_workspace_size, _bwd_workspace_size) comes from PyTorch's caching allocator;
AUTO's forward first runs without one (WGMMA and FLASH2 need none) and allocates only when the
version it picks asks for it. Autograd: the forward's gradient through attention_bwd with the
forward's version (a naive forward's, which has no backward of its own, through AUTO); lse carries
no gradient."""
import ctypes
import math

import torch

from . import _capi, _lib
from ._lib import INVALID_ARGUMENT, GpuopsError, struct
from ._torch import FLOAT, OPS, REQUIRED, algo_arg, check, define, launch, suffix, workspace

MASKS = _capi.ENUMS["gpuops_attention_mask"]
CAUSAL, NONE = MASKS["GPUOPS_ATTN_MASK_CAUSAL"], MASKS["GPUOPS_ATTN_MASK_NONE"]
AUTO, NAIVE = _lib.ALGOS["auto"], _lib.ALGOS["naive"]
ERR_WORKSPACE = _lib.STATUS["GPUOPS_ERR_WORKSPACE"]


def _strides(t, bhsd):
    """(batch, sequence, head) strides of a [B, S, H, D] (or, bhsd, [B, H, S, D]) tensor."""
    s = t.stride()
    return (s[0], s[2], s[1]) if bhsd else (s[0], s[1], s[2])


def _bsh(t, bhsd):
    """(batch, seqlen, heads, head_dim) of a tensor in the layout."""
    b, x, y, d = t.shape
    return (b, y, x, d) if bhsd else (b, x, y, d)


def _check(op, q, k, v, scale, bhsd):
    """Checks q, k, v and scale; (suffix, B, Sq, Sk, Hq, Hkv, D)."""
    check(op, q, k, v, contiguous=False)
    s = suffix(op, q, FLOAT)
    lay = "[B, H, S, D]" if bhsd else "[B, S, H, D]"
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise GpuopsError(INVALID_ARGUMENT, op, f"expects 4-d q, k, v {lay}, got {q.dim()}, {k.dim()} and {v.dim()} "
                          "dimensions")
    B, Sq, Hq, D = _bsh(q, bhsd)
    Bk, Sk, Hkv, Dk = _bsh(k, bhsd)
    if k.shape != v.shape or Bk != B or Dk != D:
        raise GpuopsError(INVALID_ARGUMENT, op, f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: k and v of "
                          f"one shape, the batch and head_dim of q ({lay})")
    if Hkv < 1 or Hq % Hkv:
        raise GpuopsError(INVALID_ARGUMENT, op, f"heads_q {Hq} is not a multiple of heads_kv {Hkv}")
    if D % 8 or not 8 <= D <= 256:
        raise GpuopsError(INVALID_ARGUMENT, op, f"head_dim {D} (a multiple of 8 from 8 to 256)")
    if Sk == 0 and Sq > 0:
        raise GpuopsError(INVALID_ARGUMENT, op, "seqlen_k 0 with queries")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.stride(3) != 1:
            raise GpuopsError(INVALID_ARGUMENT, op, f"{name} of strides {tuple(t.stride())}: the last dimension (head_dim) "
                              "must be contiguous")
    if scale is not None and not math.isfinite(scale):
        raise GpuopsError(INVALID_ARGUMENT, op, f"scale {scale} (finite)")
    return s, B, Sq, Sk, Hq, Hkv, D


def _dims(q, k, v, o, bhsd, sizes):
    """The gpuops_attention_dims of one call (o: the output's strides, dout's in the backward)."""
    _, B, Sq, Sk, Hq, Hkv, D = sizes
    return struct("gpuops_attention_dims")(batch=B, seqlen_q=Sq, seqlen_k=Sk, heads_q=Hq, heads_kv=Hkv, head_dim=D,
                                           q_stride=_strides(q, bhsd), k_stride=_strides(k, bhsd),
                                           v_stride=_strides(v, bhsd), o_stride=_strides(o, bhsd))


def _scale(scale, D):
    return float(_lib.fn("gpuops_attention_default_scale")(D)) if scale is None else float(scale)


def _fwd_outputs(q, sizes):
    _, B, Sq, _, Hq, _, _ = sizes
    return q.new_empty(q.shape), q.new_empty((B, Hq, Sq), dtype=torch.float32)


def _attention_fwd(q, k, v, scale=None, causal=False, bhsd=False, algo=0):
    sizes = _check("attention_fwd", q, k, v, scale, bhsd)
    o, lse = _fwd_outputs(q, sizes)
    dims = _dims(q, k, v, o, bhsd, sizes)
    algo = algo_arg(algo)
    name = f"gpuops_attention_fwd_{sizes[0]}"
    args = dict(o=o, lse=lse, q=q, k=k, v=v, dims=ctypes.addressof(dims), scale=_scale(scale, sizes[6]),
                mask=CAUSAL if causal else NONE, algo=algo)
    if algo == AUTO and q.dtype != torch.float32:
        try:  # WGMMA and FLASH2, which AUTO picks where they run, need no workspace
            launch(name, q.device, **args, workspace=None, workspace_bytes=0)
            return o, lse
        except GpuopsError as e:
            if e.status != ERR_WORKSPACE:
                raise
    nbytes = _lib.workspace_size("gpuops_attention_fwd_workspace_size", ctypes.addressof(dims), algo)
    launch(name, q.device, **args, workspace=workspace(nbytes, q.device), workspace_bytes=nbytes)
    return o, lse


def _attention_fwd_fake(q, k, v, scale=None, causal=False, bhsd=False, algo=0):
    return _fwd_outputs(q, _check("attention_fwd", q, k, v, scale, bhsd))


def _same_layout(a, b):
    """Whether a and b (of one shape) address their elements alike (strides of extent-1 dimensions
    do not matter)."""
    return all(n == 1 or x == y for n, x, y in zip(a.shape, a.stride(), b.stride()))


def _check_bwd(dout, q, k, v, o, lse, scale, bhsd):
    """Checks a backward's tensors; the sizes as _check gives them."""
    sizes = _check("attention_bwd", q, k, v, scale, bhsd)
    _, B, Sq, _, Hq, _, _ = sizes
    check("attention_bwd", q, dout, o, contiguous=False)
    check("attention_bwd", q, lse, same_dtype=False, contiguous=False)
    if dout.shape != q.shape or o.shape != q.shape:
        raise GpuopsError(INVALID_ARGUMENT, "attention_bwd", f"dout {tuple(dout.shape)} and o {tuple(o.shape)} must "
                          f"have q's shape {tuple(q.shape)}")
    if o.stride(3) != 1:
        raise GpuopsError(INVALID_ARGUMENT, "attention_bwd", "o's last dimension must be contiguous")
    if lse.dtype != torch.float32 or tuple(lse.shape) != (B, Hq, Sq) or not lse.is_contiguous():
        raise GpuopsError(INVALID_ARGUMENT, "attention_bwd", f"lse must be contiguous float32 of shape {(B, Hq, Sq)} "
                          "(the forward's)")
    return sizes


def _bwd_outputs(q, k, v):
    return tuple(t.new_empty_strided(t.shape, t.stride()) for t in (q, k, v))


def _attention_bwd(dout, q, k, v, o, lse, scale=None, causal=False, bhsd=False, algo=0):
    sizes = _check_bwd(dout, q, k, v, o, lse, scale, bhsd)
    if not _same_layout(dout, o):  # the library reads dout with o's strides
        dout = o.new_empty_strided(o.shape, o.stride()).copy_(dout)
    dq, dk, dv = _bwd_outputs(q, k, v)
    dims = _dims(q, k, v, o, bhsd, sizes)
    algo = algo_arg(algo)
    nbytes = _lib.workspace_size("gpuops_attention_bwd_workspace_size", ctypes.addressof(dims), algo)
    launch(f"gpuops_attention_bwd_{sizes[0]}", q.device, dq=dq, dk=dk, dv=dv, dout=dout, q=q, k=k, v=v, o=o, lse=lse,
           dims=ctypes.addressof(dims), scale=_scale(scale, sizes[6]), mask=CAUSAL if causal else NONE,
           workspace=workspace(nbytes, q.device), workspace_bytes=nbytes, algo=algo)
    return dq, dk, dv


def _attention_bwd_fake(dout, q, k, v, o, lse, scale=None, causal=False, bhsd=False, algo=0):
    _check_bwd(dout, q, k, v, o, lse, scale, bhsd)
    return _bwd_outputs(q, k, v)


def _setup(ctx, a, out):
    o, lse = out
    ctx.save_for_backward(a["q"], a["k"], a["v"], o, lse)
    algo = algo_arg(a["algo"])
    # NAIVE is a forward-only version: its gradient runs AUTO's backward.
    ctx.args = dict(scale=a["scale"], causal=a["causal"], bhsd=a["bhsd"], algo=AUTO if algo == NAIVE else algo)


def _grad(ctx, g, _g_lse):
    if g is None:
        return {}
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = OPS["attention_bwd"](g, q, k, v, o, lse, **ctx.args)
    return {"q": dq, "k": dk, "v": dv}


T, R = "Tensor", REQUIRED
_ARGS = [("scale", "float?", None), ("causal", "bool", False), ("bhsd", "bool", False), ("algo", "int", 0)]
define("attention_fwd", [("q", T, R), ("k", T, R), ("v", T, R)] + _ARGS, "(Tensor, Tensor)", _attention_fwd,
       _attention_fwd_fake, setup=_setup, backward=_grad)
define("attention_bwd", [("dout", T, R), ("q", T, R), ("k", T, R), ("v", T, R), ("o", T, R), ("lse", T, R)] + _ARGS,
       "(Tensor, Tensor, Tensor)", _attention_bwd, _attention_bwd_fake)
