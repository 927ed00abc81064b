# SPDX-License-Identifier: MIT
"""tools/transpose_small.py - small and thin transposes graph-timed (tools/graph_timing.py, 16 rotating
inputs, as bench/sweep.py times them): PyTorch eager's x.t().contiguous() beside gpuops.transpose
with AUTO, SHARED_PADDED and VECTORIZED, each checked against eager first; microseconds a call.

usage: GPUOPS_LIBRARY=build/libgpuops.so PYTHONPATH=python python3 tools/transpose_small.py"""
import os
import sys

import torch

import gpuops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_timing import graph_us  # noqa: E402

SHAPES = [(128, 128), (256, 256), (512, 512), (700, 700), (1024, 1024), (1000, 3), (3, 1000), (33, 4097),
          (3, 100000), (100000, 3), (16, 16384), (33, 65537), (65537, 33), (63, 65537)]

for dt in (torch.float32, torch.bfloat16):
    for r, c in SHAPES:
        xs = [torch.randn(r, c, device="cuda").to(dt) for _ in range(16)]
        sets = [(x,) for x in xs]
        row = [f"{r}x{c}", str(dt).split(".")[1], "eager %.2f" % graph_us(lambda x: x.t().contiguous(), sets)]
        for a in ("auto", "shared-padded", "vectorized"):
            assert torch.equal(gpuops.transpose(xs[0], algo=a), xs[0].t().contiguous())
            row.append("%s %.2f" % (a, graph_us(lambda x, a=a: gpuops.transpose(x, algo=a), sets)))
        print("  ".join(row), flush=True)
