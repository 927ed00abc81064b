# SPDX-License-Identifier: MIT
"""bench/torch_transpose.py - what a PyTorch user would run instead of gpuops_transpose: x.t().contiguous()
in eager mode and under torch.compile, for f32 and bf16 on the shapes of bench_transpose, timed like
bench/harness.h does (CUDA events, warm-up, median of 25, L2 flushed before each run) on the same
device, with the copy ceiling measured again here. Writes CSV and, given gpuops' CSV from the same
run, prints gpuops' (auto) speedup over each.

usage: python3 bench/torch_transpose.py --csv OUT.csv [--gpuops build/bench/bench_transpose.csv]
"""
import argparse
import csv
import os

import torch

SHAPES = [(1024, 1024), (4096, 4096), (16384, 16384), (4095, 4097), (16384, 1024)]
REPS = 25


def median_ms(fn, flush):
    for _ in range(3):
        fn()
    times = []
    for _ in range(REPS):
        flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[REPS // 2]


def transpose(x):
    return x.t().contiguous()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--gpuops", default=None)
    args = ap.parse_args()
    dev = torch.cuda.get_device_name()
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + (1 << 22), device="cuda")
    src = torch.empty(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    copy = 2 * src.numel() * 4 / (median_ms(lambda: dst.copy_(src), flush) * 1e6)
    del src, dst
    print(f"PyTorch {torch.__version__} on {dev}; copy ceiling (tensor.copy_, 1 GiB) {copy:.0f} GB/s")
    compiled = torch.compile(transpose)
    rows = []
    for dname, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        for r, c in SHAPES:
            x = torch.rand(r, c, device="cuda").to(dtype)
            ref = x.t().contiguous()
            for version, fn in (("torch-eager", transpose), ("torch-compile", compiled)):
                if not torch.equal(fn(x), ref):
                    print(f"{version} {dname} {r}x{c}: wrong result")
                ms = median_ms(lambda: fn(x), flush)
                gbps = 2 * x.numel() * x.element_size() / (ms * 1e6)
                rows.append(["matmul", "transpose", dname, r * c, r, c, version, f"{ms * 1e3:.3f}", f"{gbps:.1f}", f"{gbps / copy:.4f}",
                             f"{copy:.1f}", dev])
            del x, ref
            torch.cuda.empty_cache()
    with open(args.csv, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["family", "op", "dtype", "n", "rows", "cols", "version", "time_us", "gb_per_s", "x_copy", "copy_gb_per_s", "device"])
        w.writerows(rows)
    print(f"wrote {args.csv}")
    theirs = {(r[2], r[4], r[5], r[6]): (float(r[7]), float(r[9])) for r in rows}
    ours = {}
    if args.gpuops and os.path.exists(args.gpuops):
        with open(args.gpuops) as fh:
            for r in csv.DictReader(fh):
                if r["version"] == "auto":
                    ours[(r["dtype"], int(r["rows"]), int(r["cols"]))] = (float(r["time_us"]), float(r["x_copy"]))
    print(f"\nx.t().contiguous() against the copy ceiling, and gpuops (auto) speedup = PyTorch time / gpuops time ({dev}):")
    head = f"{'shape':12s} {'type':5s} {'eager x copy':>12s} {'compile x copy':>14s} {'gpuops x copy':>13s} {'vs eager':>9s} {'vs compile':>10s}"
    print(head + "\n" + "-" * len(head))
    for dname in ("f32", "bf16"):
        for r, c in SHAPES:
            e_us, e_x = theirs[(dname, r, c, "torch-eager")]
            c_us, c_x = theirs[(dname, r, c, "torch-compile")]
            o = ours.get((dname, r, c))
            og = f"{o[1]:13.3f} {e_us / o[0]:8.2f}x {c_us / o[0]:9.2f}x" if o else f"{'-':>13s} {'-':>9s} {'-':>10s}"
            print(f"{r}x{c:<7d} {dname:5s} {e_x:12.3f} {c_x:14.3f} {og}")


if __name__ == "__main__":
    main()
