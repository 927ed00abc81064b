# SPDX-License-Identifier: MIT
"""Softmax (gpuops.h section 5), one custom op per row of the registry GPUOPS__SOFTMAX_OPS, along
the last dimension of a contiguous float32, float16 or bfloat16 tensor (rows = the leading
dimensions):

  torch.ops.gpuops.softmax_fwd(x, algo)       softmax
  torch.ops.gpuops.log_softmax_fwd(x, algo)   log-softmax
  torch.ops.gpuops.softmax_bwd(dy, y, algo)   the backward from the forward's output y

A registry row reading one array takes (x); one reading two takes (dy, y), named as in C. The
forward softmax's autograd runs softmax_bwd; log-softmax's is dy - exp(y) sum(dy), in PyTorch."""
import torch

from . import _capi
from ._torch import FLOAT, OPS, REQUIRED, algo_arg, check, define, launch, rows_cols, suffix


def _row_op(name, inputs):
    tensors = ["x"] if inputs == 1 else ["dy", "y"]
    out = "y" if inputs == 1 else "dx"
    params = [(t, "Tensor", REQUIRED) for t in tensors] + [("algo", "int", 0)]

    def impl(**a):
        ts = [a[t] for t in tensors]
        check(name, *ts, same_shape=True)
        s = suffix(name, ts[0], FLOAT)
        rows, cols = rows_cols(ts[0])
        y = torch.empty_like(ts[0])
        launch(f"gpuops_{name}_{s}", ts[0].device, **{out: y}, **{t: a[t] for t in tensors}, rows=rows, cols=cols,
               algo=algo_arg(a["algo"]))
        return y

    def fake(**a):
        ts = [a[t] for t in tensors]
        check(name, *ts, same_shape=True)
        suffix(name, ts[0], FLOAT)
        return torch.empty_like(ts[0])

    return params, impl, fake


def _save_out(ctx, a, y):
    ctx.save_for_backward(y)


def _softmax_grad(ctx, g):
    (y,) = ctx.saved_tensors
    return {"x": OPS["softmax_bwd"](g.contiguous(), y)}


def _log_softmax_grad(ctx, g):
    (y,) = ctx.saved_tensors
    gf = g.float()
    return {"x": (gf - torch.exp(y.float()) * gf.sum(-1, keepdim=True)).to(g.dtype)}


GRADS = {"softmax_fwd": (_save_out, _softmax_grad), "log_softmax_fwd": (_save_out, _log_softmax_grad)}

for _name, _inputs in _capi.REGISTRIES["SOFTMAX_OPS"]:
    _params, _impl, _fake = _row_op(_name, _inputs)
    _setup, _backward = GRADS.get(_name, (None, None))
    define(_name, _params, "Tensor", _impl, _fake, setup=_setup, backward=_backward)
