# SPDX-License-Identifier: MIT
"""bench/report.py - the markdown tables of docs/performance.md, from the bench's CSV files.

usage: python3 bench/report.py build/bench/bench_elementwise.csv [build/bench/torch_elementwise.csv]
"""
import csv
import sys


def load(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def main():
    rows = load(sys.argv[1])
    torch_rows = load(sys.argv[2]) if len(sys.argv) > 2 else []
    big = max(int(r["n"]) for r in rows)
    at = {(r["op"], r["dtype"], int(r["n"]), r["version"]): r for r in rows}
    ops = list(dict.fromkeys(r["op"] for r in rows))
    types = ["f32", "f16", "bf16"]
    dev, copy = rows[0]["device"], float(rows[0]["copy_gb_per_s"])
    print(f"Every op at n = 2^{big.bit_length() - 1} on {dev}; copy ceiling {copy:.0f} GB/s. "
          "Cells: AUTO's fraction of the copy ceiling (its time in us).\n")
    print("| op | " + " | ".join(types) + " |")
    print("| --- |" + " --- |" * len(types))
    for op in ops:
        cells = []
        for t in types:
            r = at.get((op, t, big, "auto"))
            x = float(r["x_copy"])
            cells.append(f"{'**' if x < 0.92 else ''}{x:.3f}{'**' if x < 0.92 else ''} ({float(r['time_us']):.0f})")
        print(f"| {op} | " + " | ".join(cells) + " |")
    print("\nThe versions of the learning path at the same size, bf16 (GB/s):\n")
    print("| op | naive | grid-stride | vectorized |")
    print("| --- | --- | --- | --- |")
    for op in ops:
        g = [float(at[(op, "bf16", big, v)]["gb_per_s"]) for v in ("naive", "grid-stride", "vectorized")]
        print(f"| {op} | {g[0]:.0f} | {g[1]:.0f} | {g[2]:.0f} |")
    fused = [op for op in ops if (op, "f32", big, "unfused") in at]
    print("\nFused against unfused (speedup = unfused time / fused time):\n")
    print("| op | " + " | ".join(types) + " |")
    print("| --- |" + " --- |" * len(types))
    for op in fused:
        print(f"| {op} | " + " | ".join(
            f"{float(at[(op, t, big, 'unfused')]['time_us']) / float(at[(op, t, big, 'auto')]['time_us']):.2f}x" for t in types) + " |")
    sizes = sorted({int(r["n"]) for r in rows})
    print("\nAUTO's fraction of the copy ceiling by size (L2 flushed before each run):\n")
    print("| op | type | " + " | ".join(f"2^{n.bit_length() - 1}" for n in sizes) + " |")
    print("| --- | --- |" + " --- |" * len(sizes))
    for op in ("add", "relu_fwd", "gelu_erf_fwd", "gelu_erf_bwd", "quantize", "dequantize"):
        for t in ("f32", "bf16"):
            print(f"| {op} | {t} | " + " | ".join(f"{float(at[(op, t, n, 'auto')]['x_copy']):.2f}" for n in sizes) + " |")
    if torch_rows:
        th = {(r["op"], r["dtype"], r["version"]): float(r["time_us"]) for r in torch_rows}
        print(f"\ngpuops against PyTorch {'' if not torch_rows else ''}at n = 2^{big.bit_length() - 1} "
              "(speedup = PyTorch time / gpuops time; above 1 gpuops is faster):\n")
        print("| op | type | gpuops us | eager us | vs eager | torch.compile us | vs compile |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for t in types:
            for op in ops:
                us = float(at[(op, t, big, "auto")]["time_us"])
                e, c = th.get((op, t, "torch-eager")), th.get((op, t, "torch-compile"))
                cs = f"{c:.0f} | {c / us:.2f}x" if c else "- | -"
                print(f"| {op} | {t} | {us:.0f} | {e:.0f} | {e / us:.2f}x | {cs} |")


if __name__ == "__main__":
    main()
