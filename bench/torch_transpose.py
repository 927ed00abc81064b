# SPDX-License-Identifier: MIT
"""bench/torch_transpose.py - what a PyTorch user would run instead of gpuops_transpose: x.t().contiguous()
in eager mode and under torch.compile, for f32 and bf16 on the shapes of bench_transpose, timed like
bench/harness.h does (CUDA events, warm-up, median of 25, L2 flushed before each run) on the same
device, with the copy ceiling measured again here. Writes CSV and, given gpuops' CSV from the same
run, prints gpuops' (auto) speedup over each.

usage: python3 bench/torch_transpose.py --csv OUT.csv [--gpuops build/bench/bench_transpose.csv]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import RATE_HEAD, copy_ceiling, gpuops_rows, median_ms, rate, start, torch, write_csv  # noqa: E402

SHAPES = [(1024, 1024), (4096, 4096), (16384, 16384), (4095, 4097), (16384, 1024)]


def transpose(x):
    return x.t().contiguous()


def main():
    args, dev, flush = start(__doc__)
    copy = copy_ceiling(dev, flush)
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
                rows.append(["transpose", "transpose", dname, r * c, r, c, version, *rate(ms, 2 * x.numel() * x.element_size(), copy), dev])
            del x, ref
            torch.cuda.empty_cache()
    write_csv(args.csv, ["family", "op", "dtype", "n", "rows", "cols", "version", *RATE_HEAD, "device"], rows)
    theirs = {(r[2], r[4], r[5], r[6]): (float(r[7]), float(r[9])) for r in rows}
    ours = {(r["dtype"], int(r["rows"]), int(r["cols"])): (float(r["time_us"]), float(r["x_copy"]))
            for r in gpuops_rows(args.gpuops) or [] if r["version"] == "auto"}
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
