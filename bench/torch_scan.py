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
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import RATE_HEAD, copy_ceiling, gpuops_rows, median_ms, rate, start, torch, write_csv  # noqa: E402

N = 1 << 28


def main():
    args, dev, flush = start(__doc__)
    copy = copy_ceiling(dev, flush)
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
                rows.append(["scan", op, dname, N, version, *rate(ms, 2 * size * N, copy), dev])
        del x
        torch.cuda.empty_cache()
    write_csv(args.csv, ["family", "op", "dtype", "n", "version", *RATE_HEAD, "device"], rows)
    g = gpuops_rows(args.gpuops)
    if g is None:
        return
    ours = {}
    for r in g:
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
