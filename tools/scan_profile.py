# SPDX-License-Identifier: MIT
"""tools/scan_profile.py - what one cumsum call costs on the GPU, gpuops against torch.cumsum.

For each n, f32: the GPU activities of the call (eager, recorded by torch.profiler through CUPTI:
the memset of the look-back's tile states and the scan kernel; CUB's init and scan kernels for
PyTorch), each one's median duration, and the time per call in a CUDA graph of 64 calls on the
same tensor (L2-warm below about 2^23 elements). The library is the one GPUOPS_LIBRARY names.

usage: GPUOPS_LIBRARY=build/libgpuops.so PYTHONPATH=python python3 tools/scan_profile.py TAG
"""
import sys

import torch

import gpuops
from graph_timing import graph_us, kernel_us


def main():
    tag = sys.argv[1] if len(sys.argv) > 1 else "gpuops"
    for n in [16384, 65536, 1 << 18, 1 << 20, 1 << 21, 1 << 22]:
        x = torch.rand(n, device="cuda")
        for name, f in [("gpuops", lambda: gpuops.cumsum(x)), ("torch", lambda: torch.cumsum(x, 0))]:
            per = kernel_us(f, 5)
            desc = "; ".join("%s x%d %.2f us" % (k[:60], len(v), sorted(v)[len(v) // 2]) for k, v in per.items())
            print("%s n=%d %s graph %.2f us/call | %s" % (tag, n, name, graph_us(f), desc), flush=True)


if __name__ == "__main__":
    main()
