# SPDX-License-Identifier: MIT
"""bench/torch_softmax.py - what a PyTorch user would run instead of gpuops' softmax family:
torch.softmax, torch.log_softmax and the softmax backward (aten._softmax_backward_data), eager and
torch.compile (forward ops), on the bench's shapes in f32 and bf16, timed like bench/harness.h does
(CUDA events, warm-up, median of 25, L2 flushed before each run) on the same device, with the copy
ceiling measured again here. Writes CSV and, given gpuops' CSV from the same run, prints gpuops'
speedup over each.

usage: python3 bench/torch_softmax.py --csv OUT.csv [--gpuops build/bench/bench_softmax.csv]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import RATE_HEAD, copy_ceiling, gpuops_rows, median_ms, rate, start, torch, write_csv  # noqa: E402

SHAPES = [(32768, 4096), (131072, 1024), (4096, 65536), (256, 1 << 20), (4095, 4097), (2048, 50257)]  # the last two: odd lengths


def main():
    args, dev, flush = start(__doc__)
    copy = copy_ceiling(dev, flush)
    aten = torch.ops.aten
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
                    rows.append(["softmax", name, dname, r, c, version, *rate(median_ms(f, flush), bpe * r * c, copy), dev])
            del x, dy, y
            torch.cuda.empty_cache()
    write_csv(args.csv, ["family", "op", "dtype", "rows", "cols", "version", *RATE_HEAD, "device"], rows)
    g = gpuops_rows(args.gpuops)
    if g is None:
        return
    ours = {(r["op"], r["dtype"], int(r["rows"]), int(r["cols"])): float(r["time_us"]) for r in g if r["version"] == "auto"}
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
