# SPDX-License-Identifier: MIT
"""tools/bench_compare.py OUT_DIR - reads what tools/bench_compare.sh wrote (a<r>_<family>.csv,
b<r>_<family>.csv) and prints, per family, how build B's rows compare with build A's: each row's
ratio to its baseline measured in the same run (x_copy, or x_cublas for matmul), B's mean over
A's mean, and the noise: the largest relative difference between two runs of the same build.
Rows are matched on every column that is not a measurement. Prints the rows that moved by more
than the noise (or 2%, whichever is larger), then one summary line per family."""
import csv
import glob
import os
import statistics
import sys

MEASURED = {"family", "time_us", "gb_per_s", "x_copy", "x_cub", "copy_gb_per_s", "tflops", "x_cublas", "check", "device"}


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    out = {}
    for r in rows:
        key = tuple((k, v) for k, v in r.items() if k not in MEASURED)
        metric = "x_cublas" if "x_cublas" in r else "x_copy"
        try:
            out[key] = float(r[metric])
        except (KeyError, ValueError):
            pass
    return out


def main():
    d = sys.argv[1]
    families = sorted({os.path.basename(p).split("_", 1)[1][:-4] for p in glob.glob(os.path.join(d, "[ab][0-9]*_*.csv"))})
    print(f"{'family':<12} {'rows':>5} {'B/A median':>10} {'B/A min':>8} {'B/A max':>8} {'noise A':>8} {'noise B':>8}")
    moved = []
    for fam in families:
        runs = {s: [load(p) for p in sorted(glob.glob(os.path.join(d, f"{s}[0-9]*_{fam}.csv")))] for s in "ab"}
        if not runs["a"] or not runs["b"]:
            continue
        keys = set.intersection(*(set(r) for r in runs["a"] + runs["b"]))
        ratios, noise = [], {"a": [], "b": []}
        for k in sorted(keys):
            a = [r[k] for r in runs["a"]]
            b = [r[k] for r in runs["b"]]
            if min(a) <= 0:
                continue
            q = statistics.mean(b) / statistics.mean(a)
            ratios.append(q)
            for s, v in (("a", a), ("b", b)):
                if len(v) > 1 and max(v) > 0:
                    noise[s].append((max(v) - min(v)) / max(v))
            moved.append((fam, dict(k), q, a, b))
        if not ratios:
            continue
        na = max(noise["a"]) if noise["a"] else 0.0
        nb = max(noise["b"]) if noise["b"] else 0.0
        print(f"{fam:<12} {len(ratios):>5} {statistics.median(ratios):>10.4f} {min(ratios):>8.4f} {max(ratios):>8.4f} {na:>8.4f} {nb:>8.4f}")
    print("\nrows where B / A moved past max(2%, that row's own noise):")
    for fam, k, q, a, b in moved:
        own = max((max(a) - min(a)) / max(a), (max(b) - min(b)) / max(b) if max(b) > 0 else 0.0)
        if abs(q - 1) > max(0.02, own):
            desc = " ".join(v for kk, v in k.items() if kk not in ("family",))
            print(f"  {fam:<11} {desc:<60} A {' '.join(f'{v:.3f}' for v in a)}  B {' '.join(f'{v:.3f}' for v in b)}  B/A {q:.3f}")


if __name__ == "__main__":
    main()
