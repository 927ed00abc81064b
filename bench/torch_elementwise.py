# SPDX-License-Identifier: MIT
"""bench/torch_elementwise.py - what a PyTorch user would run instead of gpuops' elementwise ops:
PyTorch eager for every op and type, and torch.compile for the fused ones (and one activation),
timed like bench/harness.h does (CUDA events, warm-up, median of 25, L2 flushed before each run)
on the same device, with the copy ceiling measured again here. Writes CSV and, given gpuops'
CSV from the same run, prints gpuops' speedup over each.

usage: python3 bench/torch_elementwise.py --csv OUT.csv [--gpuops build/bench/bench_elementwise.csv]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import RATE_HEAD, copy_ceiling, gpuops_rows, median_ms, rate, start, torch, write_csv  # noqa: E402

N = 1 << 28
CHANNELS = 4096


def ops(dtype):
    """name -> (function of the inputs, inputs, bytes per element). Same byte counts as gpuops."""
    F, aten = torch.nn.functional, torch.ops.aten
    s = 2 if dtype != torch.float32 else 4
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.rand(N, device="cuda", dtype=dtype, generator=gen) * 6 - 3  # [-3, 3], as gpuops' bench
    z = torch.rand(N, device="cuda", dtype=dtype, generator=gen) * 6 - 3
    y = torch.rand(N, device="cuda", dtype=dtype, generator=gen) * 6 - 3
    q = torch.randint(-128, 128, (N,), device="cuda", dtype=torch.int8, generator=gen)
    scale_c = torch.rand(CHANNELS, device="cuda", generator=gen) * 0.04 + 0.01
    zp_c = (torch.arange(CHANNELS, device="cuda") % 41 - 20).float()

    def quantize(x):
        return torch.clamp(torch.round(x.float() / 0.02 + 3), -128, 127).to(torch.int8)

    def quantize_pc(x):
        v = x.view(-1, CHANNELS).float() / scale_c + zp_c
        return torch.clamp(torch.round(v), -128, 127).to(torch.int8)

    def dequantize(q):
        return ((q.float() - 3) * 0.02).to(dtype)

    def dequantize_pc(q):
        return ((q.view(-1, CHANNELS).float() - zp_c) * scale_c).to(dtype)

    return {
        "add": (lambda a, b: a + b, (x, z), 3 * s),
        "add_scalar": (lambda a: a.add_(2.0), (y,), 2 * s),
        "axpy": (lambda a, b: b.add_(a, alpha=1.0 / 1024), (x, y), 3 * s),
        "gelu_erf_fwd": (lambda a: F.gelu(a), (x,), 2 * s),
        "gelu_erf_bwd": (lambda dy, a: aten.gelu_backward(dy, a), (z, x), 3 * s),
        "gelu_tanh_fwd": (lambda a: F.gelu(a, approximate="tanh"), (x,), 2 * s),
        "gelu_tanh_bwd": (lambda dy, a: aten.gelu_backward(dy, a, approximate="tanh"), (z, x), 3 * s),
        "silu_fwd": (lambda a: F.silu(a), (x,), 2 * s),
        "silu_bwd": (lambda dy, a: aten.silu_backward(dy, a), (z, x), 3 * s),
        "relu_fwd": (lambda a: torch.relu(a), (x,), 2 * s),
        "relu_bwd": (lambda dy, a: aten.threshold_backward(dy, a, 0), (z, x), 3 * s),
        "sigmoid_fwd": (lambda a: torch.sigmoid(a), (x,), 2 * s),
        # PyTorch's backward kernels take the forward's output (gpuops' take x): the same bytes.
        "sigmoid_bwd": (lambda dy, a: aten.sigmoid_backward(dy, a), (z, x), 3 * s),
        "tanh_fwd": (lambda a: torch.tanh(a), (x,), 2 * s),
        "tanh_bwd": (lambda dy, a: aten.tanh_backward(dy, a), (z, x), 3 * s),
        "add_mul_exp": (lambda a, b: torch.exp((a + b) * 0.5), (x, z), 3 * s),
        "quantize": (quantize, (x,), s + 1),
        "quantize_per_channel": (quantize_pc, (x,), s + 1),
        "dequantize": (dequantize, (q,), 1 + s),
        "dequantize_per_channel": (dequantize_pc, (q,), 1 + s),
    }


COMPILED = {"add_mul_exp", "quantize", "quantize_per_channel", "dequantize", "dequantize_per_channel", "gelu_tanh_fwd"}


def main():
    args, dev, flush = start(__doc__)
    copy = copy_ceiling(dev, flush)
    rows = []
    for dname, dtype in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
        for name, (fn, inputs, bpe) in ops(dtype).items():
            versions = [("torch-eager", fn)]
            if name in COMPILED and dtype != torch.float16:
                versions.append(("torch-compile", torch.compile(fn)))
            for version, f in versions:
                ms = median_ms(lambda: f(*inputs), flush)
                rows.append(["elementwise", name, dname, N, version, *rate(ms, bpe * N, copy), dev])
        torch.cuda.empty_cache()
    write_csv(args.csv, ["family", "op", "dtype", "n", "version", *RATE_HEAD, "device"], rows)
    g = gpuops_rows(args.gpuops)
    if g is None:
        return
    ours = {(r["op"], r["dtype"]): float(r["time_us"]) for r in g if r["version"] == "auto" and int(r["n"]) == N}
    theirs = {(r[1], r[2], r[4]): float(r[5]) for r in rows}
    print(f"\ngpuops (auto) against PyTorch at n = 2^28, speedup = PyTorch time / gpuops time ({dev}):")
    head = f"{'op':24s} {'type':5s} {'gpuops us':>10s} {'eager us':>10s} {'vs eager':>9s} {'compile us':>11s} {'vs compile':>10s}"
    print(head + "\n" + "-" * len(head))
    for (op, dname), us in sorted(ours.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        e = theirs.get((op, dname, "torch-eager"))
        c = theirs.get((op, dname, "torch-compile"))
        cs = f"{c:11.1f} {c / us:9.2f}x" if c else f"{'-':>11s} {'-':>10s}"
        print(f"{op:24s} {dname:5s} {us:10.1f} {e:10.1f} {e / us:8.2f}x {cs}")


if __name__ == "__main__":
    main()
