# SPDX-License-Identifier: MIT
"""tools/norm_builds.py TAG [compile] - times the norm forwards of one build of the library (the
libgpuops.so that GPUOPS_LIBRARY names) at short-kernel shapes (2^24 elements) and two bench shapes,
beside a copy of the same bytes in the same process and, with "compile", torch.compile of the
PyTorch form: CUDA graphs of 20 calls over 8 rotating input sets (2 at 2^27 elements), the median of
15 replays. Two builds compare by running it for each in turn, alternating:
  GPUOPS_LIBRARY=A/libgpuops.so PYTHONPATH=python python3 tools/norm_builds.py a
  GPUOPS_LIBRARY=B/libgpuops.so PYTHONPATH=python python3 tools/norm_builds.py b
Each line: TAG op dtype shape, time, GB/s, x copy, and err = max |gpuops - eager| / (1 + |eager|).
The compile column compiles each shape statically, and on an H200 it ran most cases at 0.2-0.53x
copy (RMSNorm bf16 2048 x 8192 0.52x, 131072 x 1024 0.20x), where bench/sweep.py's torch.compile
(dynamic row count) runs the 2^24-element ones at 0.8-0.97x: PyTorch's numbers are the sweep's."""
import sys, torch, gpuops
from graph_timing import graph_us
F = torch.nn.functional
tag = sys.argv[1]; with_compile = "compile" in sys.argv[2:]
eps = 1e-5
def rms(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w
SH = [("rmsnorm", "bf16", 16384, 1024), ("layernorm", "bf16", 16384, 1024), ("rmsnorm", "bf16", 2048, 8192),
      ("layernorm", "bf16", 4096, 4096), ("rmsnorm", "f32", 16384, 1024), ("layernorm", "f32", 2048, 8192),
      ("add_rmsnorm", "bf16", 16384, 1024), ("layernorm_gelu", "bf16", 16384, 1024), ("rmsnorm", "bf16", 1024, 16384),
      ("rmsnorm", "bf16", 131072, 1024), ("layernorm", "bf16", 32768, 4096)]
def tg(f, sets):
    return graph_us(f, sets, calls=20)
for op, dt, rows, cols in SH:
    dtype = torch.bfloat16 if dt == "bf16" else torch.float32
    ns = 8 if rows * cols <= (1 << 24) else 2
    w = (torch.rand(cols, device="cuda") + 0.5).to(dtype); b = (torch.rand(cols, device="cuda") - 0.5).to(dtype)
    sets = [((torch.rand(rows, cols, device="cuda") * 6 - 3).to(dtype), (torch.rand(rows, cols, device="cuda") * 6 - 3).to(dtype)) for _ in range(ns)]
    g = {"rmsnorm": lambda x, r: gpuops.rmsnorm(x, w, eps), "layernorm": lambda x, r: gpuops.layernorm(x, w, b, eps),
         "add_rmsnorm": lambda x, r: gpuops.add_rmsnorm(x, r, w, eps),
         "layernorm_gelu": lambda x, r: gpuops.layernorm_gelu(x, w, b, eps, approximate="tanh")}[op]
    e = {"rmsnorm": lambda x, r: rms(x, w), "layernorm": lambda x, r: F.layer_norm(x, (cols,), w, b, eps),
         "add_rmsnorm": lambda x, r: (lambda h: (h, rms(h, w)))(x + r),
         "layernorm_gelu": lambda x, r: F.gelu(F.layer_norm(x, (cols,), w, b, eps), approximate="tanh")}[op]
    arrays = 4 if op == "add_rmsnorm" else 2
    nbytes = arrays * rows * cols * sets[0][0].element_size()
    cp = torch.empty_like(sets[0][0]); cp2 = torch.empty_like(sets[0][0])
    copy = tg((lambda x, r: cp.copy_(x)) if arrays == 2 else (lambda x, r: (cp.copy_(x), cp2.copy_(r))), sets)
    gt = tg(g, sets)
    go, eo = g(*sets[1]), e(*sets[1])
    go = torch.cat([t.flatten().float() for t in go]) if isinstance(go, tuple) else go.float()
    eo = torch.cat([t.flatten().float() for t in eo]) if isinstance(eo, tuple) else eo.float()
    err = ((go - eo).abs() / (1 + eo.abs())).max().item()
    line = f"{tag} {op} {dt} {rows}x{cols}: gpuops {gt:.2f} us ({nbytes / gt / 1e3:.0f} GB/s, {copy / gt:.3f}x copy {copy:.2f} us) err {err:.1e}"
    if with_compile:
        ct = tg(torch.compile(e), sets)
        line += f"  compile {ct:.2f} us ({copy / ct:.3f}x copy)"
    print(line, flush=True)
    del sets
