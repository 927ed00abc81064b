# SPDX-License-Identifier: MIT
"""bench/torch_reduce.py - what a PyTorch user would run instead of gpuops' reductions and
histogram: torch.sum / torch.amax (f32 result), row sums, and torch.bincount, timed like
bench/harness.h does (CUDA events, warm-up, median of 25, L2 flushed before each run) on the same
device, with the copy ceiling measured again here. Rates count bytes read only, as bench_reduce.
Writes CSV and, given gpuops' CSV from the same run, prints gpuops' speedup over each.

usage: python3 bench/torch_reduce.py --csv OUT.csv [--gpuops build/bench/bench_reduce.csv]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import RATE_HEAD, copy_ceiling, gpuops_rows, median_ms, rate, start, torch, write_csv  # noqa: E402

N = 1 << 28


def cases():
    """(op, dtype name, n, function, bytes read) with the names bench_reduce writes."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    out = []
    for dname, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        x = (torch.rand(N, device="cuda", generator=gen) * 2 - 1).to(dtype)
        s = x.element_size()
        out.append(("sum", dname, N, lambda x=x: torch.sum(x, dtype=torch.float32), N * s))
        out.append(("max", dname, N, lambda x=x: torch.amax(x), N * s))
        m = x[: 32768 * 4096].view(32768, 4096)
        out.append(("rows_sum 32768x4096", dname, m.numel(), lambda m=m: torch.sum(m, dim=1, dtype=torch.float32), m.numel() * s))
    hot = 256 // 3
    u = torch.randint(0, 256, (N,), device="cuda", dtype=torch.int32, generator=gen)
    pick = torch.rand(N, device="cuda", generator=gen) < 0.9
    k = torch.where(pick, torch.full_like(u, hot), u)
    out.append(("histogram 256 bins uniform", "i32", N, lambda u=u: torch.bincount(u, minlength=256), N * 4))
    out.append(("histogram 256 bins skewed", "i32", N, lambda k=k: torch.bincount(k, minlength=256), N * 4))
    return out


def main():
    args, dev, flush = start(__doc__)
    copy = copy_ceiling(dev, flush)
    rows = []
    for op, dname, n, fn, nbytes in cases():
        family = "histogram" if op.startswith("histogram") else "reduce"
        rows.append([family, op, dname, n, "torch-eager", *rate(median_ms(fn, flush), nbytes, copy), dev])
    write_csv(args.csv, ["family", "op", "dtype", "n", "version", *RATE_HEAD, "device"], rows)
    g = gpuops_rows(args.gpuops)
    if g is None:
        return
    ours = {(r["op"], r["dtype"], int(r["n"])): float(r["time_us"]) for r in g if r["version"] == "auto"}
    print(f"\ngpuops (auto) against PyTorch eager, speedup = PyTorch time / gpuops time ({dev}):")
    head = f"{'op':28s} {'type':5s} {'gpuops us':>10s} {'torch us':>10s} {'speedup':>8s}"
    print(head + "\n" + "-" * len(head))
    for r in rows:
        us = ours.get((r[1], r[2], int(r[3])))
        t = float(r[5])
        print(f"{r[1]:28s} {r[2]:5s} {us if us else float('nan'):10.1f} {t:10.1f} {t / us if us else float('nan'):7.2f}x")


if __name__ == "__main__":
    main()
