# SPDX-License-Identifier: MIT
"""bench/torch_conv.py - what a PyTorch user would run instead of gpuops' conv2d: torch's conv2d
(cuDNN, torch.backends.cudnn.benchmark on, so cuDNN times its algorithms and keeps the fastest)
followed by ReLU, with bias, stride 1 and 'same' padding, on the layers of bench_conv: ResNet-50's
3x3 layers (56x56x64, 28x28x128, 14x14x256, 7x7x512, K = C) and 1x1 reductions (256->64, 512->128,
1024->256, 2048->512) at batch 64 and 128, and N 64, C 256, 56x56, K 256, 3x3. f32 with TF32 off
(torch.backends.cudnn.allow_tf32 = False) in NCHW and channels_last (NHWC), bf16 in channels_last.
The backward as bench_conv times it: f32 NCHW, the 3x3 layers at batch 64, the input gradient and the
filter gradient each on its own (aten.convolution_backward with one output asked for, cuDNN's
backward algorithms). Timed like bench/harness.h (CUDA events, warm-up, median of 25, L2 flushed before each run).
Writes CSV and, given gpuops' CSV from the same run, prints gpuops' ratio to cuDNN at each layer.

usage: python3 bench/torch_conv.py --csv OUT.csv [--gpuops build/bench/bench_conv.csv]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, for torch_common
from torch_common import gpuops_rows, median_ms, start, torch, write_csv  # noqa: E402

LAYERS = [("56x56x64 3x3", 64, 56, 64, 3), ("28x28x128 3x3", 128, 28, 128, 3), ("14x14x256 3x3", 256, 14, 256, 3),
          ("7x7x512 3x3", 512, 7, 512, 3), ("56x56 1x1 256->64", 256, 56, 64, 1), ("28x28 1x1 512->128", 512, 28, 128, 1),
          ("14x14 1x1 1024->256", 1024, 14, 256, 1), ("7x7 1x1 2048->512", 2048, 7, 512, 1)]
JOBS = [(f"N{n} {name}", n, c, hw, k, f) for n in (64, 128) for (name, c, hw, k, f) in LAYERS] + \
       [("N64 56x56 256->256 3x3", 64, 256, 56, 256, 3)]
TYPES = [("f32", "nchw"), ("f32", "nhwc"), ("bf16", "nhwc")]


def main():
    args, dev, flush = start(__doc__)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    F = torch.nn.functional
    rows = []
    for name, n, c, hw, k, f in JOBS:
        for dt, layout in TYPES:
            dtype = torch.float32 if dt == "f32" else torch.bfloat16
            fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
            x = (torch.rand(n, c, hw, hw, device="cuda", dtype=dtype) * 2 - 1).to(memory_format=fmt)
            w = ((torch.rand(k, c, f, f, device="cuda", dtype=dtype) * 2 - 1) * 0.1).to(memory_format=fmt)
            b = torch.rand(k, device="cuda", dtype=dtype) - 0.5

            def fn(x=x, w=w, b=b, f=f):
                return F.relu(F.conv2d(x, w, b, padding=f // 2))
            ms = median_ms(fn, flush)
            flops = 2.0 * n * hw * hw * k * c * f * f
            rows.append({"shape": name, "dtype": dt, "layout": layout, "version": "cudnn conv2d+relu",
                         "time_us": f"{ms * 1e3:.3f}", "tflops": f"{flops / (ms * 1e9):.3f}", "device": dev})
            del x, w, b
        torch.cuda.empty_cache()
    for name, c, hw, k, f in LAYERS:
        if f != 3:
            continue
        n = 64
        x = torch.rand(n, c, hw, hw, device="cuda") * 2 - 1
        w = (torch.rand(k, c, f, f, device="cuda") * 2 - 1) * 0.1
        dy = torch.rand(n, k, hw, hw, device="cuda") * 2 - 1
        flops = 2.0 * n * hw * hw * k * c * f * f
        for op, mask in (("conv2d_bwd_data", [True, False, False]), ("conv2d_bwd_filter", [False, True, False])):
            def fn(x=x, w=w, dy=dy, mask=mask):
                return torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)
            ms = median_ms(fn, flush)
            rows.append({"shape": f"N{n} {name}", "dtype": "f32", "layout": "nchw", "version": f"cudnn {op}",
                         "time_us": f"{ms * 1e3:.3f}", "tflops": f"{flops / (ms * 1e9):.3f}", "device": dev})
        del x, w, dy
        torch.cuda.empty_cache()
    ours = {}
    for r in gpuops_rows(args.gpuops) or []:
        if r["op"] == "conv2d" and r["check"] == "ok":
            key = (r["shape"], r["dtype"], r["layout"])
        elif r["op"] in ("conv2d_bwd_data", "conv2d_bwd_filter"):
            key = (r["shape"], r["dtype"], r["layout"], r["op"])
        else:
            continue
        ours.setdefault(key, {})[r["version"]] = float(r["tflops"])
    print(f"PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()} on {dev} (TF32 off):")
    print(f"{'layer':>26}  {'type':>9}  {'cuDNN TF/s':>10}  {'gpuops auto':>11}  {'x cuDNN':>7}  {'best gpuops version':>22}  {'x cuDNN':>7}")
    for r in rows:
        bwd = r["version"].split()[-1] if r["version"].startswith("cudnn conv2d_bwd") else None
        mine = ours.get((r["shape"], r["dtype"], r["layout"]) + ((bwd,) if bwd else ()), {})
        auto = mine.get("auto")
        best = max(mine.items(), key=lambda kv: kv[1]) if mine else None
        t = float(r["tflops"])
        print(f"{r['shape'] + (' ' + bwd[7:] if bwd else ''):>26}  {r['dtype'] + ' ' + r['layout']:>9}  {t:10.1f}  "
              f"{(f'{auto:.1f}' if auto else '-'):>11}  {(f'{auto / t:.2f}' if auto else '-'):>7}  "
              f"{(best[0] if best else '-'):>22}  {(f'{best[1] / t:.2f}' if best else '-'):>7}")
    write_csv(args.csv, list(rows[0].keys()), [list(r.values()) for r in rows])


if __name__ == "__main__":
    main()
