# SPDX-License-Identifier: MIT
"""Convolution (gpuops.h section 11): cross-correlation, as torch.nn.functional.conv2d, with zero
padding, f32 arithmetic, each output rounded once.

  torch.ops.gpuops.conv2d_fwd(x, weight, bias, stride, padding, dilation, relu, nhwc, algo) -> y
  torch.ops.gpuops.conv2d_bwd_data(dy, weight, x_size, stride, padding, dilation, nhwc, algo) -> dx
  torch.ops.gpuops.conv2d_bwd_filter(dy, x, weight_size, stride, padding, dilation, nhwc, algo) -> dw
  torch.ops.gpuops.conv1d(x, f, algo) -> y          (learning path: one signal, "same" padding)
  torch.ops.gpuops.conv2d_plane(x, f, algo) -> y    (learning path: one plane, "same" padding)

Layouts, as gpuops_layout takes them, every tensor contiguous ("tight"); nothing is permuted here:
  nhwc=False (GPUOPS_LAYOUT_NCHW): x [N, C, H, W], weight [K, C, R, S], y [N, K, P, Q]: torch's
      conv2d layout, weight as nn.Conv2d holds it.
  nhwc=True  (GPUOPS_LAYOUT_NHWC): x [N, H, W, C], weight [K, R, S, C], y [N, P, Q, K]: torch's
      channels_last memory with its dimensions in memory order. From channels_last torch tensors
      x.permute(0, 2, 3, 1) and weight.permute(0, 2, 3, 1) are such tensors without a copy, and
      y.permute(0, 3, 1, 2) is torch's [N, K, P, Q] (channels_last) view of the result.
P = (H + 2 pad_h - dil_h (R - 1) - 1) // stride_h + 1, Q likewise; bias [K] or None; relu applied
after the bias (GPUOPS_ACT_RELU; the library has the other activations too, not bound here: the
backward reads the ReLU's mask from y). f32, f16 and bf16; versions "unfused" (im2col + GEMM, with
workspace from PyTorch's caching allocator), "implicit-gemm" (any dtype, either layout),
"mma-sync" (f16 / bf16, NHWC, compute capability 8.0+; any C), "wgmma" (the same on Hopper's
wgmma, C a multiple of 8: a library built for sm_90a on compute capability 9.0) and "auto" (implicit-gemm for
f32; for 16-bit wgmma, else mma-sync, where they run, else implicit-gemm; 1x1 layers at stride 1
without padding as one GEMM, 16-bit ones only from 129 filters).

The backward is float32 only (gpuops_conv2d_bwd_data_f32, _bwd_filter_f32, implicit GEMMs, version
"auto" = "implicit-gemm"): dy is the gradient before bias and ReLU; autograd masks it with y > 0 and
makes it contiguous, and the bias gradient is dy summed over N, P, Q by PyTorch. A 16-bit forward
has no gpuops backward: its gradient raises GpuopsError.

conv1d and conv2d_plane (float32): y[i] = sum_j x[i + j - (fw - 1) // 2] f[j] over a 1-d x [n] and
f [fw], y of x's length (conv2d_plane: the same over x [h, w] and f [fh, fw]), filters of 1 to 15
taps; an even filter has one tap more after the centre, as torch's padding="same". Versions
"naive", "const-filter", "shared-tiled", "cached-halo", and "register-1d" (conv1d) or "register-2d"
(conv2d_plane), which "auto" picks; const-filter, shared-tiled, cached-halo and register-2d with a
square filter share one constant-memory filter buffer per program: do not run them on two streams
at once."""
import ctypes

import torch

from . import _capi, _lib
from ._lib import INVALID_ARGUMENT, GpuopsError, struct
from ._torch import FLOAT, OPS, REQUIRED, algo_arg, check, define, launch, suffix, workspace

LAYOUTS = _capi.ENUMS["gpuops_layout"]
ACTS = _capi.ENUMS["gpuops_activation"]
AUTO = _lib.ALGOS["auto"]
F32 = {torch.float32: "f32"}
MAX_TAPS = 15  # GPUOPS__CONV_MAX_F


def out_dim(size, f, stride, pad, dil):
    return (size + 2 * pad - dil * (f - 1) - 1) // stride + 1


def _geometry(op, xs, ws, stride, padding, dilation, nhwc):
    """Checks the sizes of x and weight (in the layout) and the steps; ((N, C, H, W), (K, R, S),
    (P, Q)) as the C shape has them."""
    lay = "x [N, H, W, C], weight [K, R, S, C]" if nhwc else "x [N, C, H, W], weight [K, C, R, S]"
    if len(xs) != 4 or len(ws) != 4:
        raise GpuopsError(INVALID_ARGUMENT, op, f"expects 4-d {lay}, got {len(xs)} and {len(ws)} dimensions")
    N, H, W, C = xs if nhwc else (xs[0], xs[2], xs[3], xs[1])
    K, R, S, Cw = ws if nhwc else (ws[0], ws[2], ws[3], ws[1])
    if Cw != C:
        raise GpuopsError(INVALID_ARGUMENT, op, f"x {tuple(xs)} has {C} channels, weight {tuple(ws)} {Cw} ({lay})")
    if any(v < 1 for v in (C, H, W, R, S)):
        raise GpuopsError(INVALID_ARGUMENT, op, f"x {tuple(xs)}, weight {tuple(ws)}: channels, height and width >= 1")
    for name, v, lo in (("stride", stride, 1), ("padding", padding, 0), ("dilation", dilation, 1)):
        if len(v) != 2 or any(e < lo for e in v):
            raise GpuopsError(INVALID_ARGUMENT, op, f"{name} {tuple(v)}: two values >= {lo}")
    P = out_dim(H, R, stride[0], padding[0], dilation[0])
    Q = out_dim(W, S, stride[1], padding[1], dilation[1])
    if P < 1 or Q < 1:
        raise GpuopsError(INVALID_ARGUMENT, op, f"input {H}x{W}, filter {R}x{S}, padding {tuple(padding)}, dilation "
                          f"{tuple(dilation)}: the window leaves no output")
    return (N, C, H, W), (K, R, S), (P, Q)


def _y_shape(nc, krs, pq, nhwc):
    N, K, (P, Q) = nc[0], krs[0], pq
    return (N, P, Q, K) if nhwc else (N, K, P, Q)


def _shape(nchw, krs, stride, padding, dilation, nhwc):
    """The gpuops_conv2d_shape of one call."""
    (n, c, h, w), (k, r, s) = nchw, krs
    return struct("gpuops_conv2d_shape")(n=n, c=c, h=h, w=w, k=k, r=r, s=s, stride_h=stride[0], stride_w=stride[1],
                                         pad_h=padding[0], pad_w=padding[1], dil_h=dilation[0], dil_w=dilation[1],
                                         layout=LAYOUTS["GPUOPS_LAYOUT_NHWC" if nhwc else "GPUOPS_LAYOUT_NCHW"])


def _check_fwd(x, weight, bias, stride, padding, dilation, nhwc):
    check("conv2d_fwd", x, weight)
    s = suffix("conv2d_fwd", x, FLOAT)
    geo = _geometry("conv2d_fwd", x.shape, weight.shape, stride, padding, dilation, nhwc)
    if bias is not None:
        check("conv2d_fwd", x, bias)
        if tuple(bias.shape) != (geo[1][0],):
            raise GpuopsError(INVALID_ARGUMENT, "conv2d_fwd", f"bias {tuple(bias.shape)}: one value per filter "
                              f"({geo[1][0]},)")
    return s, geo


def _conv2d_fwd(x, weight, bias, stride, padding, dilation, relu=False, nhwc=False, algo=0):
    s, geo = _check_fwd(x, weight, bias, stride, padding, dilation, nhwc)
    y = x.new_empty(_y_shape(*geo, nhwc))
    sh = _shape(geo[0], geo[1], stride, padding, dilation, nhwc)
    algo = algo_arg(algo)
    nbytes = _lib.workspace_size("gpuops_conv2d_workspace_size", ctypes.addressof(sh), algo)
    launch(f"gpuops_conv2d_{s}", x.device, y=y, x=x, w=weight, bias=bias, shape=ctypes.addressof(sh),
           act=ACTS["GPUOPS_ACT_RELU" if relu else "GPUOPS_ACT_NONE"], workspace=workspace(nbytes, x.device),
           workspace_bytes=nbytes, algo=algo)
    return y


def _conv2d_fwd_fake(x, weight, bias, stride, padding, dilation, relu=False, nhwc=False, algo=0):
    _, geo = _check_fwd(x, weight, bias, stride, padding, dilation, nhwc)
    return x.new_empty(_y_shape(*geo, nhwc))


def _check_bwd(op, dy, t, xs, ws, stride, padding, dilation, nhwc):
    """dy and t (weight for bwd_data, x for bwd_filter): float32, one device, contiguous, dy of the
    forward's output shape."""
    check(op, dy, t)
    suffix(op, dy, F32)
    geo = _geometry(op, xs, ws, stride, padding, dilation, nhwc)
    want = _y_shape(*geo, nhwc)
    if tuple(dy.shape) != tuple(want):
        raise GpuopsError(INVALID_ARGUMENT, op, f"dy {tuple(dy.shape)}: the forward's output is {tuple(want)}")
    return geo


def _conv2d_bwd_data(dy, weight, x_size, stride, padding, dilation, nhwc=False, algo=0):
    geo = _check_bwd("conv2d_bwd_data", dy, weight, x_size, weight.shape, stride, padding, dilation, nhwc)
    dx = dy.new_empty(x_size)
    sh = _shape(geo[0], geo[1], stride, padding, dilation, nhwc)
    launch("gpuops_conv2d_bwd_data_f32", dy.device, dx=dx, dy=dy, w=weight, shape=ctypes.addressof(sh),
           algo=algo_arg(algo))
    return dx


def _conv2d_bwd_data_fake(dy, weight, x_size, stride, padding, dilation, nhwc=False, algo=0):
    _check_bwd("conv2d_bwd_data", dy, weight, x_size, weight.shape, stride, padding, dilation, nhwc)
    return dy.new_empty(x_size)


def _conv2d_bwd_filter(dy, x, weight_size, stride, padding, dilation, nhwc=False, algo=0):
    geo = _check_bwd("conv2d_bwd_filter", dy, x, x.shape, weight_size, stride, padding, dilation, nhwc)
    dw = dy.new_empty(weight_size)
    sh = _shape(geo[0], geo[1], stride, padding, dilation, nhwc)
    algo = algo_arg(algo)
    nbytes = _lib.workspace_size("gpuops_conv2d_bwd_filter_workspace_size", ctypes.addressof(sh), algo)
    launch("gpuops_conv2d_bwd_filter_f32", dy.device, dw=dw, dy=dy, x=x, shape=ctypes.addressof(sh),
           workspace=workspace(nbytes, dy.device), workspace_bytes=nbytes, algo=algo)
    return dw


def _conv2d_bwd_filter_fake(dy, x, weight_size, stride, padding, dilation, nhwc=False, algo=0):
    _check_bwd("conv2d_bwd_filter", dy, x, x.shape, weight_size, stride, padding, dilation, nhwc)
    return dy.new_empty(weight_size)


def _setup(ctx, a, y):
    ctx.save_for_backward(a["x"], a["weight"], y if a["relu"] else None)
    ctx.args = dict(stride=a["stride"], padding=a["padding"], dilation=a["dilation"], nhwc=a["nhwc"], algo=AUTO)
    ctx.has_bias = a["bias"] is not None


def _grad(ctx, g):
    if g is None:
        return {}
    x, weight, y = ctx.saved_tensors
    need = tuple(ctx.needs_input_grad) + (False,) * 3  # a trace may hand fewer flags than inputs
    if y is not None:  # the ReLU: y > 0 where the value before it was
        g = g.masked_fill(y <= 0, 0)
    g = g.contiguous()
    out = {}
    if need[0]:
        out["x"] = OPS["conv2d_bwd_data"](g, weight, list(x.shape), **ctx.args)
    if need[1]:
        out["weight"] = OPS["conv2d_bwd_filter"](g, x, list(weight.shape), **ctx.args)
    if need[2] and ctx.has_bias:
        out["bias"] = g.sum((0, 1, 2) if ctx.args["nhwc"] else (0, 2, 3))
    return out


def _check_learn(op, x, f, dims):
    check(op, x, f)
    suffix(op, x, F32)
    if x.dim() != dims or f.dim() != dims:
        raise GpuopsError(INVALID_ARGUMENT, op, f"expects {dims}-d x and f, got {x.dim()} and {f.dim()} dimensions")
    if not all(1 <= t <= MAX_TAPS for t in f.shape):
        raise GpuopsError(INVALID_ARGUMENT, op, f"filter {tuple(f.shape)}: 1 to {MAX_TAPS} taps a dimension")


def _conv1d(x, f, algo=0):
    _check_learn("conv1d", x, f, 1)
    y = x.new_empty(x.shape)
    launch("gpuops_conv1d_f32", x.device, y=y, x=x, f=f, n=x.shape[0], fw=f.shape[0], algo=algo_arg(algo))
    return y


def _conv2d_plane(x, f, algo=0):
    _check_learn("conv2d_plane", x, f, 2)
    y = x.new_empty(x.shape)
    launch("gpuops_conv2d_plane_f32", x.device, y=y, x=x, f=f, h=x.shape[0], w=x.shape[1], fh=f.shape[0],
           fw=f.shape[1], algo=algo_arg(algo))
    return y


def _learn_fake(op, dims):
    def fake(x, f, algo=0):
        _check_learn(op, x, f, dims)
        return x.new_empty(x.shape)
    return fake


T, R = "Tensor", REQUIRED
_STEPS = [("stride", "int[2]", R), ("padding", "int[2]", R), ("dilation", "int[2]", R)]
_TAIL = [("nhwc", "bool", False), ("algo", "int", 0)]
define("conv2d_fwd", [("x", T, R), ("weight", T, R), ("bias", "Tensor?", R)] + _STEPS + [("relu", "bool", False)] + _TAIL,
       "Tensor", _conv2d_fwd, _conv2d_fwd_fake, setup=_setup, backward=_grad)
define("conv2d_bwd_data", [("dy", T, R), ("weight", T, R), ("x_size", "SymInt[]", R)] + _STEPS + _TAIL, "Tensor",
       _conv2d_bwd_data, _conv2d_bwd_data_fake)
define("conv2d_bwd_filter", [("dy", T, R), ("x", T, R), ("weight_size", "SymInt[]", R)] + _STEPS + _TAIL, "Tensor",
       _conv2d_bwd_filter, _conv2d_bwd_filter_fake)
define("conv1d", [("x", T, R), ("f", T, R), ("algo", "int", 0)], "Tensor", _conv1d, _learn_fake("conv1d", 1))
define("conv2d_plane", [("x", T, R), ("f", T, R), ("algo", "int", 0)], "Tensor", _conv2d_plane,
       _learn_fake("conv2d_plane", 2))
