# SPDX-License-Identifier: MIT
"""bench/torch_softmax.py - what a PyTorch user would run instead of gpuops' softmax family:
torch.softmax, torch.log_softmax and the softmax backward (aten._softmax_backward_data), eager and
torch.compile (forward ops), on the issue's shapes in f32 and bf16, timed like bench/harness.h does
(CUDA events, warm-up, median of 25, L2 flushed before each run) on the same device, with the copy
ceiling measured again here. Writes CSV and, given gpuops' CSV from the same run, prints gpuops'
speedup over each.

usage: python3 bench/torch_softmax.py --csv OUT.csv [--gpuops build/bench/bench_softmax.csv]
"""
import argparse
import csv
import os

import torch

SHAPES = [(32768, 4096), (131072, 1024), (4096, 65536), (256, 1 << 20)]
REPS = 25
aten = torch.ops.aten


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
    for dname, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        for r, c in SHAPES:
            gen = torch.Generator(device="cuda").manual_seed(1)
            x = torch.rand((r, c), device="cuda", dtype=dtype, generator=gen) * 16 - 8  # [-8, 8], as gpuops' bench
            dy = torch.rand((r, c), device="cuda", dtype=dtype, generator=gen) * 2 - 1
            y = torch.softmax(x, dim=-1)
            s = x.element_size()
            ops = {
                "softmax": (lambda: torch.softmax(x, dim=-1), 2 * s, True),
                "log_softmax": (lambda: torch.log_softmax(x, dim=-1), 2 * s, True),
                "softmax_bwd": (lambda: aten._softmax_backward_data(dy, y, -1, dtype), 3 * s, False),
            }
            for name, (fn, bpe, compile_it) in ops.items():
                versions = [("torch-eager", fn)]
                if compile_it:
                    versions.append(("torch-compile", torch.compile(fn)))
                for version, f in versions:
                    ms = median_ms(f, flush)
                    gbps = bpe * r * c / (ms * 1e6)
                    rows.append(["softmax", name, dname, r, c, version, f"{ms * 1e3:.3f}", f"{gbps:.1f}", f"{gbps / copy:.4f}", f"{copy:.1f}", dev])
            del x, dy, y
            torch.cuda.empty_cache()
    with open(args.csv, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["family", "op", "dtype", "rows", "cols", "version", "time_us", "gb_per_s", "x_copy", "copy_gb_per_s", "device"])
        w.writerows(rows)
    print(f"wrote {args.csv}")
    if not args.gpuops or not os.path.exists(args.gpuops):
        return
    ours = {}
    with open(args.gpuops) as fh:
        for r in csv.DictReader(fh):
            if r["version"] == "auto":
                ours[(r["op"], r["dtype"], int(r["rows"]), int(r["cols"]))] = float(r["time_us"])
    theirs = {(r[1], r[2], r[3], r[4], r[5]): float(r[6]) for r in rows}
    print(f"\ngpuops (auto) against PyTorch, speedup = PyTorch time / gpuops time ({dev}):")
    head = f"{'op':12s} {'type':5s} {'shape':>14s} {'gpuops us':>10s} {'eager us':>10s} {'vs eager':>9s} {'compile us':>11s} {'vs compile':>10s}"
    print(head + "\n" + "-" * len(head))
    for (op, dname, r, c), us in sorted(ours.items()):
        e = theirs.get((op, dname, r, c, "torch-eager"))
        if e is None:
            continue
        cp = theirs.get((op, dname, r, c, "torch-compile"))
        cs = f"{cp:11.1f} {cp / us:9.2f}x" if cp else f"{'-':>11s} {'-':>10s}"
        print(f"{op:12s} {dname:5s} {f'{r}x{c}':>14s} {us:10.1f} {e:10.1f} {e / us:8.2f}x {cs}")


if __name__ == "__main__":
    main()
