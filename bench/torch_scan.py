# SPDX-License-Identifier: MIT
"""bench/torch_scan.py - what a PyTorch user would run instead of gpuops' prefix scan:
torch.cumsum (eager, and torch.compile where it compiles) on f32, i32 (dtype kept with dtype=) and
i64 at 2^28 elements, and the row scan (cumsum along the last dimension) on [2^22, 64] and
[64, 2^22]. Timed like bench/harness.h does (CUDA events, warm-up, median of 25, L2 flushed before
each run) on the same device, with the copy ceiling measured again here. Bytes per element: input
read once, output written once. Writes CSV and, given gpuops' CSV from the same run, prints the
look-back scan's speedup over each. PyTorch has no exclusive cumsum: inclusive only.

usage: python3 bench/torch_scan.py --csv OUT.csv [--gpuops build/bench/bench_scan.csv]
"""
import argparse
import csv
import os

import torch

N = 1 << 28
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
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(1)
    for dname, dtype in (("f32", torch.float32), ("i32", torch.int32), ("i64", torch.int64)):
        if dtype.is_floating_point:
            x = torch.rand(N, device="cuda", generator=gen) * 2 - 1
        else:
            x = torch.randint(-1000, 1001, (N,), device="cuda", dtype=dtype, generator=gen)
        size = x.element_size()

        def scan(t, dtype=dtype):
            return torch.cumsum(t, dim=-1, dtype=dtype)

        versions = [("torch-eager", scan)]
        try:
            compiled = torch.compile(scan)
            compiled(x[: 1 << 20])
            versions.append(("torch-compile", compiled))
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"torch.compile of cumsum failed for {dname}: {type(e).__name__}")
        for version, f in versions:
            for op, shape in (("scan_inclusive", (N,)), ("rows 4194304x64", (N // 64, 64)), ("rows 64x4194304", (64, N // 64))):
                try:
                    t = x.view(shape)
                    ms = median_ms(lambda: f(t), flush)
                except Exception as e:  # noqa: BLE001
                    print(f"{version} {op} {dname} failed: {type(e).__name__}")
                    continue
                gbps = 2 * size * N / (ms * 1e6)
                rows.append(["scan", op, dname, N, version, f"{ms * 1e3:.3f}", f"{gbps:.1f}", f"{gbps / copy:.4f}", f"{copy:.1f}", dev])
        del x
        torch.cuda.empty_cache()
    with open(args.csv, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["family", "op", "dtype", "n", "version", "time_us", "gb_per_s", "x_copy", "copy_gb_per_s", "device"])
        w.writerows(rows)
    print(f"wrote {args.csv}")
    if not args.gpuops or not os.path.exists(args.gpuops):
        return
    ours = {}
    with open(args.gpuops) as fh:
        for r in csv.DictReader(fh):
            if int(r["n"]) != N or r["op"] != "scan_inclusive":
                continue
            if r["version"] == "decoupled-lookback":
                ours[("scan_inclusive", r["dtype"])] = float(r["time_us"])
            elif r["version"].startswith("rows "):
                ours[(r["version"], r["dtype"])] = float(r["time_us"])
    theirs = {(r[1], r[2], r[4]): float(r[5]) for r in rows}
    print(f"\ngpuops (look-back scan; rows: AUTO) against PyTorch at n = 2^28, speedup = PyTorch time / gpuops time ({dev}):")
    head = f"{'op':20s} {'type':5s} {'gpuops us':>10s} {'eager us':>10s} {'vs eager':>9s} {'compile us':>11s} {'vs compile':>10s}"
    print(head + "\n" + "-" * len(head))
    for (op, dname), us in sorted(ours.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        e = theirs.get((op, dname, "torch-eager"))
        c = theirs.get((op, dname, "torch-compile"))
        es = f"{e:10.1f} {e / us:8.2f}x" if e else f"{'-':>10s} {'-':>9s}"
        cs = f"{c:11.1f} {c / us:9.2f}x" if c else f"{'-':>11s} {'-':>10s}"
        print(f"{op:20s} {dname:5s} {us:10.1f} {es} {cs}")


if __name__ == "__main__":
    main()
