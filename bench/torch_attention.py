# SPDX-License-Identifier: MIT
"""bench/torch_attention.py - what a PyTorch user would run instead of gpuops' attention:
torch.nn.functional.scaled_dot_product_attention in bf16 with each of its fused backends forced
(flash, memory-efficient, cuDNN; torch.nn.attention.sdpa_kernel), forward and backward, at the
shapes of bench_attention: seqlen 512 .. 16384 with batch = 16384 / seqlen, 32 query heads over
32, 8 and 1 kv heads (enable_gqa), head_dim 64 and 128, causal and not, [B, H, S, D]. The backward
is timed alone (torch.autograd.grad of a kept forward). TFLOP/s as flash attention's papers count:
4 B H Sq Sk D forward, half of it causal, 2.5x for the backward. A backend that refuses a shape
reads "unsupported". Timed like bench/harness.h (CUDA events, warm-up, median of 25, L2 flushed
before each run). Writes CSV and, given gpuops' CSV from the same run, prints gpuops' ratio to
each backend at each shape.

usage: python3 bench/torch_attention.py --csv OUT.csv [--gpuops build/bench/bench_attention.csv] [--quick]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
quick = "--quick" in sys.argv
if quick:
    sys.argv.remove("--quick")
from torch_common import gpuops_rows, median_ms, start, torch, write_csv  # noqa: E402

SEQLENS = (1024, 4096) if quick else (512, 1024, 2048, 4096, 8192, 16384)


def flops(b, h, s, d, causal, bwd):
    f = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    return f * 2.5 if bwd else f


def main():
    args, dev, flush = start(__doc__)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    backends = (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                ("cudnn", SDPBackend.CUDNN_ATTENTION))
    rows = []
    for s in SEQLENS:
        for d in (64, 128):
            for hkv in (32, 8, 1):
                for causal in (0, 1):
                    b, hq = max(16384 // s, 1), 32
                    q = (torch.rand(b, hq, s, d, device="cuda", dtype=torch.bfloat16) * 3 - 1.5).requires_grad_()
                    k = (torch.rand(b, hkv, s, d, device="cuda", dtype=torch.bfloat16) * 3 - 1.5).requires_grad_()
                    v = (torch.rand(b, hkv, s, d, device="cuda", dtype=torch.bfloat16) * 2 - 1).requires_grad_()
                    dout = torch.rand(b, hq, s, d, device="cuda", dtype=torch.bfloat16) * 2 - 1
                    for name, be in backends:
                        for direction in ("fwd", "bwd"):
                            row = {"dir": direction, "seqlen": s, "batch": b, "heads_q": hq, "heads_kv": hkv, "head_dim": d,
                                   "causal": causal, "version": f"sdpa {name}", "time_us": "", "tflops": "", "device": dev}
                            try:
                                with sdpa_kernel([be]):
                                    def fwd():
                                        return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), enable_gqa=hkv != hq)
                                    if direction == "fwd":
                                        with torch.no_grad():
                                            ms = median_ms(fwd, flush)
                                    else:
                                        out = fwd()
                                        ms = median_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), flush)
                                        del out
                                row["time_us"] = f"{ms * 1e3:.3f}"
                                row["tflops"] = f"{flops(b, hq, s, d, causal, direction == 'bwd') / (ms * 1e9):.3f}"
                            except RuntimeError as e:  # the backend refuses the shape
                                row["time_us"] = "unsupported"
                                print(f"  sdpa {name} {direction} S {s} D {d} Hkv {hkv} causal {causal}: {str(e).splitlines()[0][:100]}")
                            rows.append(row)
                    del q, k, v, dout
                    torch.cuda.empty_cache()
    ours = {}
    for r in gpuops_rows(args.gpuops) or []:
        if not (r["check"].startswith("ok") or r["check"] == "tests") or r["tflops"] in ("", "-"):
            continue
        key = (r["dir"], int(r["seqlen"]), int(r["heads_kv"]), int(r["head_dim"]), int(r["causal"]))
        # The faster tensor-core version at each shape (WGMMA where it runs, FLASH2).
        if r["version"] in ("flash2", "wgmma") and (key not in ours or float(r["tflops"]) > ours[key][1]):
            ours[key] = (r["version"], float(r["tflops"]))
    print(f"PyTorch {torch.__version__} bf16 on {dev}:")
    print(f"{'dir':>4} {'seqlen':>6} {'hkv':>4} {'D':>4} {'causal':>6}  {'backend':>16}  {'TFLOP/s':>8}  {'gpuops':>8}  {'x torch':>7}  version")
    for r in rows:
        key = (r["dir"], r["seqlen"], r["heads_kv"], r["head_dim"], r["causal"])
        mine = ours.get(key)
        tf = float(r["tflops"]) if r["tflops"] else float("nan")
        ratio = f"{mine[1] / tf:7.3f}" if mine and tf == tf else f"{'-':>7}"
        print(f"{r['dir']:>4} {r['seqlen']:>6} {r['heads_kv']:>4} {r['head_dim']:>4} {r['causal']:>6}  {r['version']:>16}  {tf:8.1f}  "
              f"{mine[1] if mine else float('nan'):8.1f}  {ratio}  {mine[0] if mine else '-'}")
    write_csv(args.csv, list(rows[0]), [list(r.values()) for r in rows])


if __name__ == "__main__":
    main()
