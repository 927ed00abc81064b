# SPDX-License-Identifier: MIT
"""tools/ew_profile.py - what one small elementwise call costs on the GPU, gpuops against PyTorch.

For a few ops and sizes (L2-resident): each GPU kernel of the call with its median duration
(eager calls recorded by torch.profiler through CUPTI), and the time per call in a CUDA graph of
64 calls on the same tensors (tools/graph_timing.py), for gpuops, PyTorch eager and
torch.compile. The kernel duration against the graph time separates the kernel from what the
graph adds between kernels. The library is the one GPUOPS_LIBRARY names.

usage: GPUOPS_LIBRARY=build/libgpuops.so PYTHONPATH=python:tools python3 tools/ew_profile.py TAG
"""
import statistics
import sys

import torch

import gpuops
from graph_timing import graph_us, kernel_us


def main():
    tag = sys.argv[1] if len(sys.argv) > 1 else "gpuops"
    aten = torch.ops.aten
    C = 1024
    for n in [1 << 14, 1 << 18, 1 << 20]:
        for dtype in (torch.float32, torch.bfloat16):
            x = (torch.rand(n // C, C, device="cuda") * 6 - 3).to(dtype)
            z = (torch.rand(n // C, C, device="cuda") * 6 - 3).to(dtype)
            sc = torch.rand(C, device="cuda") * 0.04 + 0.01
            zp = torch.arange(C, device="cuda", dtype=torch.int32) % 41 - 20
            zpf = zp.float()
            cases = {
                "add": (lambda: gpuops.add(x, z), lambda: x + z),
                "silu_bwd": (lambda: gpuops.silu_bwd(z, x), lambda: aten.silu_backward(z, x)),
                "sigmoid": (lambda: gpuops.sigmoid(x), lambda: torch.sigmoid(x)),
                "quantize_per_channel": (lambda: gpuops.quantize_per_channel(x, sc, zp, -1),
                                         lambda: torch.clamp(torch.round(x.float() / sc + zpf), -128, 127).to(torch.int8)),
            }
            for name, (g, e) in cases.items():
                c = torch.compile(e)
                for ver, f in (("gpuops", g), ("eager", e), ("compile", c)):
                    ks = kernel_us(f, 9)
                    us = graph_us(lambda: f())
                    kt = "; ".join(f"{k[:60]} {statistics.median(v):.2f} us x{len(v)}" for k, v in ks.items())
                    print(f"{tag} {name:22s} {str(dtype)[6:]:9s} n {n:8d} {ver:8s} graph {us:6.2f} us/call | kernels: {kt}", flush=True)


if __name__ == "__main__":
    main()
