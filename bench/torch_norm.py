# SPDX-License-Identifier: MIT
"""bench/torch_norm.py - what a PyTorch user would run instead of gpuops' normalization family, eager
and torch.compile of the same Python function (the backwards' torch.compile at 32768 x 4096 only: each compile takes
seconds), on the bench's shapes in f32 and bf16, timed like
bench/harness.h does (CUDA events, warm-up, median of 25, L2 flushed before each run) on the same
device, with the copy ceiling measured again here. The functions:
  layernorm_fwd       F.layer_norm(x, (cols,), w, b)
  rmsnorm_fwd         x * rsqrt(mean(x^2) + eps) * w, in f32 inside (the Llama form)
  layernorm_bwd       aten.native_layer_norm_backward (dx, dgamma, dbeta from the saved mean, rstd)
  rmsnorm_bwd         the autograd backward of rmsnorm_fwd (dx and dgamma)
  add_layernorm_fwd   h = x + r; (F.layer_norm(h), h)
  add_rmsnorm_fwd     h = x + r; (rmsnorm(h), h)
  layernorm_gelu_fwd  F.gelu(F.layer_norm(x), approximate='tanh')
  layernorm_gelu_bwd  the autograd backward of layernorm_gelu_fwd (dx, dgamma, dbeta)
  rope_halves_cache   GPT-NeoX / Llama rotate-half with cos and sin gathered from a cache by position
Bytes are counted as bench_norm counts them, so x_copy compares directly. Writes CSV and, given gpuops'
CSV from the same run, prints gpuops' speedup over each.

usage: python3 bench/torch_norm.py --csv OUT.csv [--gpuops build/bench/bench_norm.csv]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import RATE_HEAD, copy_ceiling, gpuops_rows, median_ms, rate, start, torch, write_csv  # noqa: E402

SHAPES = [(32768, 4096), (131072, 1024), (8192, 16384), (2048, 65536)]
EPS = 1e-5


def rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def main():
    args, dev, flush = start(__doc__)
    # Each shape and type compiles the same Python lambdas again: keep every one compiled.
    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.accumulated_cache_size_limit = 4096
    copy = copy_ceiling(dev, flush)
    F = torch.nn.functional
    aten = torch.ops.aten
    rows = []

    def add(op, dname, r, c, version, fn, nbytes):
        try:
            ms = median_ms(fn, flush)
        except Exception as e:  # a compile failure is reported, not fatal
            print(f"{op} {dname} {r}x{c} {version}: {type(e).__name__}: {str(e)[:200]}")
            return
        rows.append(["norm", op, dname, r, c, version, *rate(ms, nbytes, copy), dev])

    for dname, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        for k_shape, (r, c) in enumerate(SHAPES):
            gen = torch.Generator(device="cuda").manual_seed(1)
            x = torch.rand((r, c), device="cuda", dtype=dtype, generator=gen) * 6 - 3
            res = torch.rand((r, c), device="cuda", dtype=dtype, generator=gen) * 6 - 3
            dy = torch.rand((r, c), device="cuda", dtype=dtype, generator=gen) * 2 - 1
            w = torch.rand((c,), device="cuda", dtype=dtype, generator=gen) + 0.5
            b = torch.rand((c,), device="cuda", dtype=dtype, generator=gen) * 2 - 1
            s = x.element_size()
            n = r * c
            _, mean, rstd = aten.native_layer_norm(x, [c], w, b, EPS)

            ln = lambda: F.layer_norm(x, (c,), w, b, EPS)  # noqa: E731
            rms = lambda: rmsnorm(x, w)  # noqa: E731

            def add_ln():
                h = x + res
                return F.layer_norm(h, (c,), w, b, EPS), h

            def add_rms():
                h = x + res
                return rmsnorm(h, w), h

            ln_gelu = lambda: F.gelu(F.layer_norm(x, (c,), w, b, EPS), approximate="tanh")  # noqa: E731
            ln_bwd = lambda: aten.native_layer_norm_backward(dy, x, [c], mean, rstd, w, b, [True, True, True])  # noqa: E731

            def grad_fn(f, with_bias):
                xg = x.detach().requires_grad_()
                wg = w.detach().requires_grad_()
                bg = b.detach().requires_grad_() if with_bias else None

                def run():
                    out = f(xg, wg, bg)
                    return torch.autograd.grad(out, [xg, wg] + ([bg] if with_bias else []), dy)
                return run

            fwd_ops = {
                "layernorm_fwd": (ln, 2),
                "rmsnorm_fwd": (rms, 2),
                "add_layernorm_fwd": (add_ln, 4),
                "add_rmsnorm_fwd": (add_rms, 4),
                "layernorm_gelu_fwd": (ln_gelu, 2),
            }
            for name, (fn, k) in fwd_ops.items():
                add(name, dname, r, c, "torch-eager", fn, k * s * n)
                add(name, dname, r, c, "torch-compile", torch.compile(fn), k * s * n)
            # The backwards: torch.compile (slow to compile) at the first shape only.
            rms_f = lambda xx, ww, bb: rmsnorm(xx, ww)  # noqa: E731
            lng_f = lambda xx, ww, bb: F.gelu(F.layer_norm(xx, (c,), ww, bb, EPS), approximate="tanh")  # noqa: E731
            add("layernorm_bwd", dname, r, c, "torch-eager", ln_bwd, 3 * s * n)
            add("rmsnorm_bwd", dname, r, c, "torch-eager", grad_fn(rms_f, False), 3 * s * n)
            add("layernorm_gelu_bwd", dname, r, c, "torch-eager", grad_fn(lng_f, True), 3 * s * n)
            if k_shape == 0:
                add("layernorm_bwd", dname, r, c, "torch-compile", torch.compile(ln_bwd), 3 * s * n)
                add("rmsnorm_bwd", dname, r, c, "torch-compile", grad_fn(torch.compile(rms_f), False), 3 * s * n)
                add("layernorm_gelu_bwd", dname, r, c, "torch-compile", grad_fn(torch.compile(lng_f), True), 3 * s * n)
            del x, res, dy, w, b, mean, rstd
            torch.cuda.empty_cache()
        # RoPE, rotate-half with a cos/sin cache gathered by position: 16384 tokens x 32 heads x 128.
        t, hh, d = 16384, 32, 128
        q = torch.rand((t, hh, d), device="cuda", dtype=dtype) * 4 - 2
        pos = (torch.arange(t, device="cuda") * 7919) % 16384
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device="cuda").float() / d))
        ang = torch.outer(torch.arange(16384, device="cuda").float(), inv)
        cos_c, sin_c = ang.cos(), ang.sin()

        def rope():
            cos = cos_c[pos].unsqueeze(1).to(dtype)
            sin = sin_c[pos].unsqueeze(1).to(dtype)
            x1, x2 = q[..., : d // 2], q[..., d // 2:]
            return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
        nb = 2 * q.element_size() * q.numel()
        add("rope_halves_cache", dname, t, hh * d, "torch-eager", rope, nb)
        add("rope_halves_cache", dname, t, hh * d, "torch-compile", torch.compile(rope), nb)
        del q
        torch.cuda.empty_cache()
    write_csv(args.csv, ["family", "op", "dtype", "rows", "cols", "version", *RATE_HEAD, "device"], rows)
    g = gpuops_rows(args.gpuops)
    if g is None:
        return
    ours = {(r["op"], r["dtype"], int(r["rows"]), int(r["cols"])): (float(r["time_us"]), float(r["x_copy"]))
            for r in g if r["version"] == "auto"}
    unf = {(r["op"], r["dtype"], int(r["rows"]), int(r["cols"])): float(r["time_us"]) for r in g if r["version"] == "unfused"}
    theirs = {(r[1], r[2], r[3], r[4], r[5]): (float(r[6]), float(r[8])) for r in rows}
    print(f"\ngpuops (auto) against PyTorch ({dev}): x copy of each, speedup = PyTorch time / gpuops time")
    head = (f"{'op':20s} {'type':5s} {'shape':>13s} {'gpuops':>7s} {'eager':>7s} {'compile':>8s} {'copy':>5s}"
            f" {'vs eager':>9s} {'vs compile':>10s} {'vs unfused':>10s}")
    print(head + "\n" + "-" * len(head))
    for (op, dname, r, c), (us, xc) in sorted(ours.items()):
        e = theirs.get((op, dname, r, c, "torch-eager"))
        cp = theirs.get((op, dname, r, c, "torch-compile"))
        if e is None and cp is None:
            continue
        u = unf.get((op, dname, r, c))
        es = f"{e[1]:7.3f}" if e else f"{'-':>7s}"
        cs = f"{cp[1]:8.3f}" if cp else f"{'-':>8s}"
        ve = f"{e[0] / us:8.2f}x" if e else f"{'-':>9s}"
        vc = f"{cp[0] / us:9.2f}x" if cp else f"{'-':>10s}"
        vu = f"{u / us:9.2f}x" if u else f"{'-':>10s}"
        print(f"{op:20s} {dname:5s} {f'{r}x{c}':>13s} {xc:7.3f} {es} {cs} {1.0:5.2f} {ve} {vc} {vu}")


if __name__ == "__main__":
    main()
