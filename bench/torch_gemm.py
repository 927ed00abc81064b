# SPDX-License-Identifier: MIT
"""bench/torch_gemm.py - what a PyTorch user would run instead of gpuops' tensor-core GEMM: bf16
torch.matmul at the shapes of bench_gemm (row-major C = A B for NN, C = A B^T for NT), and the
linear layer y = gelu(x W^T + b) (torch.nn.functional.linear then gelu, approximate 'tanh' and
'none') eager and under torch.compile (default mode), at the transformer shapes. Timed like
bench/harness.h (CUDA events, warm-up, median of 25, L2 flushed before each run). Writes CSV and,
given gpuops' CSV from the same run, prints gpuops' ratio to PyTorch at each shape.

usage: python3 bench/torch_gemm.py --csv OUT.csv [--gpuops build/bench/bench_gemm.csv]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import gpuops_rows, median_ms, start, torch, write_csv  # noqa: E402

MATMULS = [(1024, 1024, 1024, "NN"), (2048, 2048, 2048, "NN"), (4096, 4096, 4096, "NN"), (8192, 8192, 8192, "NN"),
           (4095, 4097, 1023, "NN"), (4095, 4095, 4095, "NT")] + \
          [(m, n, 4096, "NT") for m in (1, 8, 16, 32, 64) for n in (4096, 11008)]
LINEARS = [(t, o, i) for t in (4096, 8192, 16384) for (i, o) in ((4096, 4096), (4096, 11008), (11008, 4096))]


def main():
    args, dev, flush = start(__doc__)
    F = torch.nn.functional
    rows = []
    for m, n, k, layout in MATMULS:
        a = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
        b = (torch.rand(k, n, device="cuda", dtype=torch.bfloat16) * 2 - 1) if layout == "NN" else \
            (torch.rand(n, k, device="cuda", dtype=torch.bfloat16) * 2 - 1)
        fn = (lambda: torch.matmul(a, b)) if layout == "NN" else (lambda: torch.matmul(a, b.t()))
        ms = median_ms(fn, flush)
        rows.append({"m": m, "n": n, "k": k, "layout": layout, "version": "torch.matmul", "time_us": f"{ms * 1e3:.3f}",
                     "tflops": f"{2.0 * m * n * k / (ms * 1e9):.3f}", "device": dev})
        del a, b
    for t, o, i in LINEARS:
        x = torch.rand(t, i, device="cuda", dtype=torch.bfloat16) * 2 - 1
        w = torch.rand(o, i, device="cuda", dtype=torch.bfloat16) * 2 - 1
        bias = torch.rand(o, device="cuda", dtype=torch.bfloat16) * 2 - 1
        for approx in ("tanh", "none"):
            def eager(x=x, w=w, bias=bias, approx=approx):
                return F.gelu(F.linear(x, w, bias), approximate=approx)
            compiled = torch.compile(eager)
            for name, fn in (("eager", eager), ("compiled", compiled)):
                ms = median_ms(fn, flush)
                rows.append({"m": t, "n": o, "k": i, "layout": "NT", "version": f"linear+gelu-{approx} {name}",
                             "time_us": f"{ms * 1e3:.3f}", "tflops": f"{2.0 * t * o * i / (ms * 1e9):.3f}", "device": dev})
        del x, w, bias
        torch.cuda.empty_cache()
    ours = {}
    for r in gpuops_rows(args.gpuops) or []:
        if r["check"] != "ok":
            continue
        ours[(int(r["m"]), int(r["n"]), int(r["k"]), r["layout"], r["version"])] = float(r["tflops"])
    print(f"PyTorch {torch.__version__} bf16 on {dev}:")
    print(f"{'shape':>18}  {'layout':>6}  {'torch version':>28}  {'TFLOP/s':>8}  {'gpuops':>8}  {'x torch':>7}")
    for r in rows:
        key = (r["m"], r["n"], r["k"], r["layout"])
        v = r["version"]
        mine = ours.get(key + ("auto",)) if v == "torch.matmul" else \
            ours.get(key + ("auto bias+gelu-tanh" if "tanh" in v else "auto bias+gelu-erf",))
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        ratio = f"{mine / float(r['tflops']):7.3f}" if mine else f"{'-':>7}"
        print(f"{shape:>18}  {r['layout']:>6}  {v:>28}  {float(r['tflops']):8.1f}  {mine or float('nan'):8.1f}  {ratio}")
    write_csv(args.csv, list(rows[0]), [list(r.values()) for r in rows])


if __name__ == "__main__":
    main()
