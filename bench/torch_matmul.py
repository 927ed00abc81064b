# SPDX-License-Identifier: MIT
"""bench/torch_matmul.py - what a PyTorch user would run instead of gpuops_matmul_f32: torch.matmul
on f32 tensors with TF32 off (torch.backends.cuda.matmul.allow_tf32 = False, so cuBLAS runs FFMA
SGEMM like gpuops), timed like bench/harness.h does (CUDA events, warm-up, median of 25, L2 flushed
before each run) at the shapes of bench_matmul (row-major, C = A B). Writes CSV and, given gpuops'
CSV from the same run, prints the best gpuops version's ratio to PyTorch at each shape.

usage: python3 bench/torch_matmul.py --csv OUT.csv [--gpuops build/bench/bench_matmul.csv]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import gpuops_rows, median_ms, start, torch, write_csv  # noqa: E402

SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (4095, 4097, 1023), (1, 4096, 4096), (4096, 1, 4096)]


def main():
    args, dev, flush = start(__doc__)
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32 FFMA, no TF32 tensor cores
    torch.set_float32_matmul_precision("highest")
    rows = []
    for m, n, k in SHAPES:
        a = torch.rand(m, k, device="cuda") * 2 - 1
        b = torch.rand(k, n, device="cuda") * 2 - 1
        c = torch.empty(m, n, device="cuda")
        ms = median_ms(lambda: torch.matmul(a, b, out=c), flush)
        tflops = 2.0 * m * n * k / (ms * 1e9)
        rows.append({"m": m, "n": n, "k": k, "version": "torch.matmul (no tf32)", "time_us": f"{ms * 1e3:.3f}",
                     "tflops": f"{tflops:.3f}", "device": dev})
        del a, b, c
        torch.cuda.empty_cache()
    best = {}
    for r in gpuops_rows(args.gpuops) or []:
        if r["layout"] != "NN" or r["version"] == "cublas" or r["check"] != "ok":
            continue
        key = (int(r["m"]), int(r["n"]), int(r["k"]))
        if key not in best or float(r["tflops"]) > best[key][1]:
            best[key] = (r["version"], float(r["tflops"]))
    print(f"PyTorch f32 matmul (TF32 off) on {dev}:")
    print(f"{'shape':>16}  {'torch TFLOP/s':>13}  {'best gpuops':>22}  {'x torch':>7}")
    for r in rows:
        key = (r["m"], r["n"], r["k"])
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        if key in best:
            v, t = best[key]
            print(f"{shape:>16}  {float(r['tflops']):13.2f}  {v + f' {t:.2f}':>22}  {t / float(r['tflops']):7.3f}")
        else:
            print(f"{shape:>16}  {float(r['tflops']):13.2f}  {'-':>22}  {'-':>7}")
    write_csv(args.csv, list(rows[0]), [list(r.values()) for r in rows])


if __name__ == "__main__":
    main()
