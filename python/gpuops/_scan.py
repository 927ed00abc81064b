# SPDX-License-Identifier: MIT
"""Prefix scan (gpuops.h section 4).

  torch.ops.gpuops.cumsum(x, exclusive, algo)   prefix sums along the last dimension

float32, int32 or int64 (the result keeps the dtype: integers wrap as in C), contiguous. One row
(a 1-d tensor, or every leading dimension 1) runs the vector scan, whose versions algo picks and
whose workspace comes from PyTorch's caching allocator; more rows run the row scan (AUTO only).
float32 has autograd: the gradient of a prefix sum is the suffix sum of the gradient."""
import torch

from ._torch import REQUIRED, SCAN_TYPES, algo_arg, check, define, launch, rows_cols, suffix, workspace
from ._lib import workspace_size


def _cumsum(x, exclusive=False, algo=0):
    check("cumsum", x)
    s = suffix("cumsum", x, SCAN_TYPES)
    y = torch.empty_like(x)
    rows, cols = rows_cols(x)
    kind = 1 if exclusive else 0
    a = algo_arg(algo)
    if rows <= 1:
        ws_bytes = workspace_size("gpuops_scan_workspace_size", x.numel(), a)
        ws = workspace(ws_bytes, x.device)
        launch(f"gpuops_scan_{s}", x.device, y=y, x=x, n=x.numel(), kind=kind, workspace=ws, workspace_bytes=ws_bytes, algo=a)
    else:
        launch(f"gpuops_scan_rows_{s}", x.device, y=y, x=x, rows=rows, cols=cols, kind=kind, algo=a)
    return y


def _cumsum_fake(x, exclusive=False, algo=0):
    check("cumsum", x)
    suffix("cumsum", x, SCAN_TYPES)
    return torch.empty_like(x)


def _setup(ctx, a, y):
    ctx.exclusive = a["exclusive"]


def _grad(ctx, g):
    # d/dx_j of y_i = sum_{k <= i} x_k (k < i when exclusive) is 1 for i >= j (i > j): the
    # gradient is the same scan of the reversed gradient, reversed.
    r = torch.flip(g, [-1]).contiguous()
    return {"x": torch.flip(torch.ops.gpuops.cumsum(r, ctx.exclusive), [-1])}


define("cumsum", [("x", "Tensor", REQUIRED), ("exclusive", "bool", False), ("algo", "int", 0)], "Tensor",
       _cumsum, _cumsum_fake, setup=_setup, backward=_grad)
