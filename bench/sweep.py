# SPDX-License-Identifier: MIT
"""bench/sweep.py - gpuops against PyTorch eager and torch.compile over sizes and shapes, in one run
on one device, on the same tensors; writes CSV (bench/plot_sweep.py draws it).

What is swept (each family as a PyTorch user would call it, through the gpuops Python package):
  elementwise  every op of the registry, float32 and bfloat16, n = 2^14 .. 2^28 by powers of two and
               odd sizes (2^k - 1, 2^k + 1, primes); the tensor's copy (tensor.copy_, a cudaMemcpyAsync)
               at each n;
  reduce       sum and max of n elements; sum and max of each row of [2^24 / cols, cols] with
               cols = 1 .. 2^20; the histogram of n int32 values in 256 bins (torch.bincount);
  scan         cumsum of n elements (float32, int32) and of the rows of [2^24 / cols, cols];
  softmax      softmax, log_softmax and the softmax backward over the rows of [2^24 / cols, cols],
               cols = 1 .. 2^20, and of [n / 1024, 1024], n = 2^14 .. 2^28;
  transpose    x.t().contiguous() of square matrices of 2^14 .. 2^28 elements and odd shapes;
  matmul       float32 (TF32 off): squares 256 .. 8192, GEMV (1 x 4096 x 4096, 4096 x 1 x 4096),
               skinny GEMMs m = 2 .. 128 (x 4096 x 4096) and odd shapes;
  norm         layernorm, rmsnorm, add_rmsnorm (h = x + r, then rmsnorm), layernorm + GELU (tanh), and
               the backwards of layernorm and rmsnorm (dx, dgamma, dbeta; eager: ATen's layernorm
               backward, rmsnorm's gradient in f32) over
               the rows of [2^24 / cols, cols], cols = 1000 .. 65536, and rotary embeddings (halves
               pairing, cos and sin from a cache by position) of [tokens, cols / 128, 128]; PyTorch's
               side is plain torch code (F.layer_norm, rmsnorm in f32 inside, rotate-half);
  gemm         bfloat16 linear and linear + GELU (y = act(x W^T + b) against F.linear, F.gelu(F.linear))
               at m x n x k = 4096 x 4096 x 4096, 4096 x 11008 x 4096, 4096 x 4096 x 11008, decode rows
               m = 1, 16, 64 (x 4096 x 4096) and an odd shape;
  attention    bfloat16 [B, H, S, D] (scaled_dot_product_attention's layout) with B S = 16384 tokens and
               H D = 2048, seqlen 512 .. 8192, head_dim 64 and 128, causal and not, the forward and the
               forward + backward (autograd's gradients of q, k, v), against F.scaled_dot_product_attention
               (its default backend choice) and torch.compile of it; TFLOP/s as flash attention counts
               them: 4 B H S^2 D for the forward, half of it causal, 3.5x that forward and backward;
  conv         conv2d + bias + ReLU on ResNet-50's layers at batch 32 (the 7x7 stem, 3x3 and 1x1, stride
               1 and 2), bfloat16 channels_last (gpuops' "nhwc", PyTorch on the channels_last views of
               the same memory) and float32 NCHW (cuDNN with TF32 off, benchmark on), against F.conv2d +
               F.relu and torch.compile of it; float32 also forward + backward (the gradients of x,
               weight and bias; counted as 3x the forward's bytes and FLOPs).

Timing: each version's calls are captured into a CUDA graph (launch gaps and Python overhead out,
for all three alike), the graph replayed, CUDA events around each replay, median of the replays
divided by the calls per graph; calls that move 256 MB or more are timed by events around batches
of calls instead, queued behind a sleep kernel so that the events see the GPU's time and not the
host's (a Python call can take longer than such a kernel). Before capture every version runs twice (warm-up; torch.compile
compiles then). Inputs rotate among enough copies that a replay touches twice the L2 cache (at
most 16 copies: below about 2^19 elements the data stays in L2, as it does between the ops of a
model). An op that cannot be captured (torch.bincount synchronizes) is timed by events around
batches of calls instead (column `timing`). torch.compile: dynamic shapes for the ops over n
elements (one compiled kernel for every n, as PyTorch does after the second size), static row
length and dynamic row count for the row ops. Each case also checks that gpuops and eager agree
(column `check`). The sweep works in tiers (the key sizes of every family first, then the rest)
and stops a tier when --budget seconds have passed, writing what it has.

usage: python3 bench/sweep.py --csv OUT.csv [--budget 280] [--families elementwise,softmax,...]
       [--tiers 0,1] [--dry-run]
"""
import argparse
import csv
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

FAMILIES = ["elementwise", "reduce", "scan", "softmax", "transpose", "matmul", "norm", "gemm", "attention", "conv"]
HEAD = ["family", "op", "dtype", "sweep", "x", "shape", "n", "version", "time_us", "gb_per_s", "tflops", "bytes",
        "flops", "nsets", "calls", "timing", "check", "device"]

P = [1 << k for k in range(14, 29)]
# The 1-d sizes of each tier (powers of two, 2^k -+ 1, primes near 2^16 .. 2^28), the ones that the
# >= 0.90x goal names first, so that a sweep cut short by its budget still has them.
N_TIER0 = [1 << 20, 1 << 24, 1 << 28, (1 << 20) + 1, (1 << 24) - 1, 1048573, 16777213, 1 << 14, 1 << 16, 1 << 18,
           1 << 22, 1 << 26]
N_TIER1 = [(1 << 16) - 1, (1 << 16) + 1, (1 << 20) - 1, (1 << 24) + 1, 65521, 4194301, 67108859, 268435399] + \
    sorted(set(P) - set(N_TIER0))
COLS_TIER0 = [1000, 4097, 65536, 1 << 20, 1, 32]
COLS_TIER1 = [3, 128, 1024, 4096, 16384, 262144]
ROW_TOTAL = 1 << 24
# Calls that move this many bytes or more are timed by events around batches of calls queued
# behind a sleep kernel (time_events); below, by CUDA graph replays. (Graph-timed, the copy and gpuops' out-of-place
# ops ran 14% slower at 2^28 f32 elements than at 2^26, PyTorch's kernels did not: see
# docs/performance.md.)
GRAPH_BELOW = 256 << 20


def args_parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="the CSV to write (rows are flushed as they come)")
    ap.add_argument("--budget", type=float, default=280.0, help="seconds; a tier stops once they have passed")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--tiers", default="0,1", help="0: the key sizes of every family; 1: the rest")
    ap.add_argument("--dry-run", action="store_true", help="count the cases of each family and tier, run nothing")
    return ap.parse_args()


class Sweep:
    def __init__(self, args, torch, gpuops):
        self.torch, self.gpuops = torch, gpuops
        self.t0 = time.time()
        self.budget = args.budget
        self.dev = torch.cuda.get_device_name()
        self.l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.fh = open(args.csv, "w", newline="")
        self.out = csv.writer(self.fh)
        self.out.writerow(HEAD)
        self.compiled = {}
        self.failed = set()
        self.cycles_per_us = None
        self.skipped = 0
        self.cases = 0
        self.dry = args.dry_run

    def over(self):
        return time.time() - self.t0 > self.budget

    # ---- timing ----
    def nsets(self, footprint):
        return max(1, min(16, math.ceil(2 * self.l2 / max(footprint, 1))))

    def _calls(self, footprint, flops):
        est = max(footprint / 3e12, flops / 4e13, 2e-6)  # seconds per call, roughly
        return max(2, min(64, math.ceil(2e-4 / est))), (7 if est > 2e-4 else 15)

    def time_graph(self, fn, nsets, calls, reps):
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn(0)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for j in range(calls):
                fn(j % nsets)
        g.replay()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(reps):
            e0.record()
            g.replay()
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1))
        del g
        return statistics.median(times) * 1e3 / calls

    def sleep_cycles_per_us(self):
        """Clock cycles of torch.cuda._sleep per microsecond here (timed once)."""
        if self.cycles_per_us is None:
            torch = self.torch
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1 << 20)  # clocks up
            e0.record()
            torch.cuda._sleep(1 << 24)
            e1.record()
            torch.cuda.synchronize()
            self.cycles_per_us = (1 << 24) / (e0.elapsed_time(e1) * 1e3)
        return self.cycles_per_us

    def time_events(self, fn, nsets, calls, reps):
        """Events around `calls` calls, the stream held first by a sleep kernel as long as the host
        takes to issue them (twice that), so the calls queue behind it and the events see the
        GPU's time, not the host's (a Python call can take longer than a 60 us kernel)."""
        torch = self.torch
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t = time.perf_counter()
        for j in range(calls):
            fn(j % nsets)
        host_us = (time.perf_counter() - t) * 1e6
        torch.cuda.synchronize()
        sleep = getattr(torch.cuda, "_sleep", None)  # internal to PyTorch: without it, no queue
        cycles = int(min(2 * host_us + 50, 1e6) * self.sleep_cycles_per_us()) if sleep else 0
        times = []
        for _ in range(reps):
            if sleep:
                sleep(cycles)
            e0.record()
            for j in range(calls):
                fn(j % nsets)
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1))
        return statistics.median(times) * 1e3 / calls

    def measure(self, fn, nsets, footprint, flops, graph=True):
        """(microseconds per call, timing method) after two warm-up calls."""
        calls, reps = self._calls(footprint, flops)
        for i in range(min(nsets, 2)):
            fn(i)
        self.torch.cuda.synchronize()
        if graph and footprint < GRAPH_BELOW:
            try:
                return self.time_graph(fn, nsets, calls, reps), "graph"
            except Exception as e:  # noqa: BLE001 - an op that cannot be captured: events instead
                print(f"    capture failed ({type(e).__name__}: {str(e).splitlines()[0][:100]}); timing by events")
                self.torch.cuda.synchronize()
        return self.time_events(fn, nsets, calls, reps), "events"

    def compile(self, key, fn, dynamic):
        """torch.compile(fn), once per key; once it has failed, later calls fail at once."""
        c = self.compiled.get(key)
        if c is None:
            compiled = self.torch.compile(fn, dynamic=dynamic)

            def c(*a):
                if key in self.failed:
                    raise RuntimeError("torch.compile failed on an earlier case")
                try:
                    return compiled(*a)
                except Exception:
                    self.failed.add(key)
                    raise
            self.compiled[key] = c
        return c

    # ---- one case: every version on the same inputs ----
    def case(self, family, op, dtype, sweep, x, shape, n, nbytes, flops, versions, nsets, check=None):
        """versions: [(name, fn(set index), use a graph)]; check: fn() -> (gpuops' result, eager's,
        rtol, atol): they agree where max |got - want| <= rtol max |want| + atol."""
        self.cases += 1
        if self.dry:
            return
        torch = self.torch
        verdict = "n/a"
        if check is not None:
            try:
                got, want, rtol, atol = check()
                got, want = got.double(), want.double()
                err = float((got - want).abs().max()) if got.numel() else 0.0
                ref = float(want.abs().max()) if want.numel() else 0.0
                verdict = "ok" if got.shape == want.shape and err <= rtol * ref + atol else f"mismatch {err:.3g}"
            except Exception as e:  # noqa: BLE001
                verdict = f"error {type(e).__name__}"
        dname = str(dtype).replace("torch.", "")
        said = []
        k = self.cases % len(versions)  # each version is timed first in a share of the cases
        for name, fn, graph in versions[k:] + versions[:k]:
            try:
                us, how = self.measure(fn, nsets, nbytes, flops, graph)
                calls = self._calls(nbytes, flops)[0]
                row = [family, op, dname, sweep, x, shape, n, name, f"{us:.3f}", f"{nbytes / (us * 1e3):.2f}",
                       f"{flops / (us * 1e6):.4f}" if flops else "", nbytes, flops, nsets, calls, how,
                       verdict if name == "gpuops" else "", self.dev]
            except Exception as e:  # noqa: BLE001 - record it and go on
                msg = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
                print(f"    {family} {op} {dname} {shape} {name}: {msg}")
                row = [family, op, dname, sweep, x, shape, n, name, "", "", "", nbytes, flops, nsets, 0, "", f"error {msg}",
                       self.dev]
                torch.cuda.synchronize()
            self.out.writerow(row)
            said.append(f"{name} {row[8] or 'error'}")
        self.fh.flush()
        print(f"  {time.time() - self.t0:5.0f}s {family} {op} {dname} {shape}: {', '.join(said)} us [{verdict}]")
        if nbytes > (1 << 30):
            torch.cuda.empty_cache()

    def close(self):
        self.fh.close()


# ---- families: each yields (tier, callable that runs the cases of one point) ----

def trio(g, e, c, args):
    """The three versions of a case: gpuops g, PyTorch eager e and torch.compile c, each called on
    args(i), the arguments of input set i."""
    return [("gpuops", lambda i: g(*args(i)), True), ("torch-eager", lambda i: e(*args(i)), True),
            ("torch-compile", lambda i: c(*args(i)), True)]


def row_inputs(sw, torch, cols, dtype, arrays):
    """[2^24 / cols, cols] input sets for a row op moving `arrays` arrays, rows marked dynamic:
    (rows, sets, element size)."""
    es = torch.empty((), dtype=dtype).element_size()
    r = ROW_TOTAL // cols
    gen = torch.Generator(device="cuda").manual_seed(cols)
    xs = [(torch.rand(r, cols, device="cuda", generator=gen) * 2 - 1).to(dtype)
          for _ in range(sw.nsets(arrays * ROW_TOTAL * es))]
    for x in xs:
        torch._dynamo.maybe_mark_dynamic(x, 0)
    return r, xs, es


def elementwise(sw, torch, gpuops):
    F, aten = torch.nn.functional, torch.ops.aten
    C = 1024  # channels of the per-channel quantizers (the last dimension)

    def ops():
        """name -> (gpuops fn, eager fn, input names, arrays moved per element (in elements of the
        float type; int8 arrays count as `q`), check rtol)."""
        return {
            "add": (lambda x, z: gpuops.add(x, z), lambda x, z: x + z, "xz", 3, 0),
            "add_scalar": (lambda x: gpuops.add_scalar(x, 2.0), lambda x: x + 2.0, "x", 2, 0),
            "axpy": (lambda y, x: gpuops.axpy_(y, x, 1.0 / 1024), lambda y, x: y.add_(x, alpha=1.0 / 1024), "yx", 3, None),
            "gelu_erf": (lambda x: gpuops.gelu(x), lambda x: F.gelu(x), "x", 2, 1e-5),
            "gelu_tanh": (lambda x: gpuops.gelu(x, "tanh"), lambda x: F.gelu(x, approximate="tanh"), "x", 2, 1e-5),
            "gelu_erf_bwd": (lambda d, x: gpuops.gelu_bwd(d, x, 0), lambda d, x: aten.gelu_backward(d, x), "dx", 3, 1e-5),
            "gelu_tanh_bwd": (lambda d, x: gpuops.gelu_bwd(d, x, 1),
                              lambda d, x: aten.gelu_backward(d, x, approximate="tanh"), "dx", 3, 1e-5),
            "silu": (lambda x: gpuops.silu(x), lambda x: F.silu(x), "x", 2, 1e-5),
            "silu_bwd": (lambda d, x: gpuops.silu_bwd(d, x), lambda d, x: aten.silu_backward(d, x), "dx", 3, 1e-5),
            "relu": (lambda x: gpuops.relu(x), lambda x: torch.relu(x), "x", 2, 0),
            "relu_bwd": (lambda d, x: gpuops.relu_bwd(d, x), lambda d, x: aten.threshold_backward(d, x, 0), "dx", 3, 0),
            "sigmoid": (lambda x: gpuops.sigmoid(x), lambda x: torch.sigmoid(x), "x", 2, 1e-5),
            # PyTorch's sigmoid and tanh backwards read the forward's output, gpuops' the input: the same bytes.
            "sigmoid_bwd": (lambda d, x: gpuops.sigmoid_bwd(d, x), lambda d, y: aten.sigmoid_backward(d, y), "dy", 3, None),
            "tanh": (lambda x: gpuops.tanh(x), lambda x: torch.tanh(x), "x", 2, 1e-5),
            "tanh_bwd": (lambda d, x: gpuops.tanh_bwd(d, x), lambda d, y: aten.tanh_backward(d, y), "dy", 3, None),
            "add_mul_exp": (lambda x, z: gpuops.add_mul_exp(x, z, 0.5), lambda x, z: torch.exp((x + z) * 0.5), "xz", 3, 1e-5),
            "quantize": (lambda x: gpuops.quantize(x, 0.02, 3),
                         lambda x: torch.clamp(torch.round(x.float() / 0.02 + 3), -128, 127).to(torch.int8), "x", "xq", 0.01),
            "quantize_per_channel": (lambda x, s, zp, zpf: gpuops.quantize_per_channel(x, s, zp, -1),
                                     lambda x, s, zp, zpf: torch.clamp(torch.round(x.float() / s + zpf), -128, 127)
                                     .to(torch.int8), "xSZz", "xq", 0.01),
            "dequantize": (lambda q, dt: gpuops.dequantize(q, 0.02, 3, dt), lambda q, dt: ((q.float() - 3) * 0.02).to(dt),
                           "qT", "xq", 1e-5),
            "dequantize_per_channel": (lambda q, s, zp, zpf, dt: gpuops.dequantize_per_channel(q, s, zp, -1, dt),
                                       lambda q, s, zp, zpf, dt: ((q.float() - zpf) * s).to(dt), "qSZzT", "xq", 1e-5),
        }

    table = ops()

    def point(n, dtype, tier):
        def run():
            es = torch.empty((), dtype=dtype).element_size()
            gen = torch.Generator(device="cuda").manual_seed(n)
            ns = sw.nsets(3 * n * es)
            pc = n % C == 0
            shape2 = (n // C, C) if pc else (n,)
            sets = []
            for _ in range(ns):
                x = (torch.rand(shape2, device="cuda", generator=gen) * 6 - 3).to(dtype)
                z = (torch.rand(shape2, device="cuda", generator=gen) * 6 - 3).to(dtype)
                sets.append({"x": x, "z": z, "d": z, "y": torch.tanh(x) if dtype.is_floating_point else x,
                             "q": torch.randint(-128, 128, shape2, device="cuda", dtype=torch.int8, generator=gen)})
            sc = torch.rand(C, device="cuda", generator=gen) * 0.04 + 0.01
            zp = (torch.arange(C, device="cuda", dtype=torch.int32) % 41 - 20)
            zpf = zp.float()
            copy_dst = torch.empty_like(sets[0]["x"])
            sw.case("elementwise", "copy", dtype, "n", n, str(n), n, 2 * n * es, 0,
                    [("copy", lambda i: copy_dst.copy_(sets[i]["x"]), True)], ns)
            for name, (g, e, ins, arrays, rtol) in table.items():
                if "S" in ins and not pc:
                    continue

                def args(i, ins=ins, eager=False, name=name):
                    s = sets[i]
                    out = []
                    for c in ins:
                        if c == "S":
                            out.append(sc)
                        elif c == "Z":
                            out.append(zp)
                        elif c == "z" and "Z" in ins:
                            out.append(zpf)
                        elif c == "T":
                            out.append(dtype)
                        elif c == "y" and name.endswith("_bwd") and eager:
                            out.append(s["y"])  # PyTorch's backward takes the forward's output
                        elif c == "y" and name.endswith("_bwd"):
                            out.append(s["x"])
                        else:
                            out.append(s[c])
                    return out

                nbytes = n * (es + 1) if arrays == "xq" else arrays * n * es
                comp = sw.compile(("ew", name), e, True)
                versions = trio(g, e, comp, lambda i, a=args: a(i, eager=True))
                versions[0] = ("gpuops", lambda i, g=g, a=args: g(*a(i)), True)
                check = None
                if rtol is not None:
                    def check(g=g, e=e, a=args, rtol=rtol):
                        return g(*a(0)), e(*a(0, eager=True)), (rtol if dtype == torch.float32 else 2e-2), 0.0
                sw.case("elementwise", name, dtype, "n", n, str(n), n, nbytes, 0, versions, ns, check)
            del sets
        return run

    for tier, sizes in ((0, N_TIER0), (1, N_TIER1)):
        for n in sizes:
            for dtype in (torch.float32, torch.bfloat16):
                yield tier, point(n, dtype, tier)


def reduce_family(sw, torch, gpuops):
    def vector(n, dtype):
        def run():
            es = torch.empty((), dtype=dtype).element_size()
            gen = torch.Generator(device="cuda").manual_seed(n)
            ns = sw.nsets(n * es)
            xs = [(torch.rand(n, device="cuda", generator=gen) * 2 - 1).to(dtype) for _ in range(ns)]
            tol = {"sum": 1e-5 * float(xs[0].float().abs().sum()), "max": 0.0}  # f32 sums: 1e-5 sum |x|
            for name, g, e in (("sum", lambda x: gpuops.sum(x), lambda x: torch.sum(x, dtype=torch.float32)),
                               ("max", lambda x: gpuops.amax(x), lambda x: torch.amax(x))):
                comp = sw.compile(("red", name), e, True)
                sw.case("reduce", name, dtype, "n", n, str(n), n, n * es, 0, trio(g, e, comp, lambda i: (xs[i],)), ns,
                        lambda g=g, e=e, t=tol[name]: (g(xs[0]), e(xs[0]), 0.0, t))
        return run

    def rows(cols, dtype):
        def run():
            r, xs, es = row_inputs(sw, torch, cols, dtype, 1)
            for name, g, e in (("rows_sum", lambda x: gpuops.sum(x, dim=-1), lambda x: x.sum(-1, dtype=torch.float32)),
                               ("rows_max", lambda x: gpuops.amax(x, dim=-1), lambda x: x.amax(-1))):
                comp = sw.compile(("red", name), e, None)
                sw.case("reduce", name, dtype, "cols", cols, f"{r}x{cols}", r * cols, r * cols * es, 0,
                        trio(g, e, comp, lambda i: (xs[i],)), len(xs),
                        lambda g=g, e=e: (g(xs[0]), e(xs[0]).float(), 0.0, 1e-5 * cols))
        return run

    def histogram(n):
        def run():
            gen = torch.Generator(device="cuda").manual_seed(n)
            ns = sw.nsets(n * 4)
            xs = [torch.randint(0, 256, (n,), device="cuda", dtype=torch.int32, generator=gen) for _ in range(ns)]
            sw.case("reduce", "histogram_256", torch.int32, "n", n, str(n), n, 4 * n, 0,
                    [("gpuops", lambda i: gpuops.histogram(xs[i], 256), True),
                     ("torch-eager", lambda i: torch.bincount(xs[i], minlength=256), False)], ns,
                    lambda: (gpuops.histogram(xs[0], 256), torch.bincount(xs[0], minlength=256), 0.0, 0.0))
        return run

    for tier, sizes, cols in ((0, N_TIER0, COLS_TIER0), (1, N_TIER1, COLS_TIER1)):
        for n in sizes:
            for dtype in (torch.float32, torch.bfloat16):
                yield tier, vector(n, dtype)
            yield tier, histogram(n)
        for c in cols:
            for dtype in (torch.float32, torch.bfloat16):
                yield tier, rows(c, dtype)


def scan_family(sw, torch, gpuops):
    def vector(n, dtype):
        def run():
            es = torch.empty((), dtype=dtype).element_size()
            gen = torch.Generator(device="cuda").manual_seed(n)
            ns = sw.nsets(2 * n * es)
            if dtype.is_floating_point:
                xs = [torch.rand(n, device="cuda", generator=gen) * 2 - 1 for _ in range(ns)]
            else:
                xs = [torch.randint(-1000, 1001, (n,), device="cuda", dtype=dtype, generator=gen) for _ in range(ns)]

            def e(x):
                return torch.cumsum(x, 0, dtype=x.dtype)

            comp = sw.compile(("scan", "vector"), e, True)
            sw.case("scan", "cumsum", dtype, "n", n, str(n), n, 2 * n * es, 0,
                    trio(gpuops.cumsum, e, comp, lambda i: (xs[i],)), ns,
                    lambda: (gpuops.cumsum(xs[0]), e(xs[0]), 0.0, 1e-5 * n if dtype.is_floating_point else 0.0))
        return run

    def rows(cols, dtype):
        def run():
            r, xs, es = row_inputs(sw, torch, cols, dtype, 2)

            def e(x):
                return torch.cumsum(x, -1)

            comp = sw.compile(("scan", "rows"), e, None)
            sw.case("scan", "cumsum_rows", dtype, "cols", cols, f"{r}x{cols}", r * cols, 2 * r * cols * es, 0,
                    trio(gpuops.cumsum, e, comp, lambda i: (xs[i],)), len(xs),
                    lambda: (gpuops.cumsum(xs[0]), e(xs[0]), 0.0, 1e-5 * cols))
        return run

    for tier, sizes, cols in ((0, N_TIER0, COLS_TIER0), (1, N_TIER1, COLS_TIER1)):
        for n in sizes:
            for dtype in (torch.float32, torch.int32):
                yield tier, vector(n, dtype)
        for c in cols:
            yield tier, rows(c, torch.float32)


def softmax_family(sw, torch, gpuops):
    aten = torch.ops.aten

    def point(rows, cols, dtype, sweep, x_value):
        def run():
            es = torch.empty((), dtype=dtype).element_size()
            gen = torch.Generator(device="cuda").manual_seed(rows * 7 + cols)
            n = rows * cols
            ns = sw.nsets(3 * n * es)
            sets = []
            for _ in range(ns):
                x = (torch.rand(rows, cols, device="cuda", generator=gen) * 16 - 8).to(dtype)
                dy = (torch.rand(rows, cols, device="cuda", generator=gen) * 2 - 1).to(dtype)
                y = torch.softmax(x, -1)
                for t in (x, dy, y):
                    torch._dynamo.maybe_mark_dynamic(t, 0)
                sets.append((x, dy, y))
            table = {
                "softmax": (lambda s: gpuops.softmax(s[0]), lambda x, dy, y: torch.softmax(x, -1), 2),
                "log_softmax": (lambda s: gpuops.log_softmax(s[0]), lambda x, dy, y: torch.log_softmax(x, -1), 2),
                "softmax_bwd": (lambda s: gpuops.softmax_backward(s[1], s[2]),
                                lambda x, dy, y: aten._softmax_backward_data(dy, y, -1, y.dtype), 3),
            }
            for name, (g, e, arrays) in table.items():
                comp = sw.compile(("softmax", name), e, None)
                sw.case("softmax", name, dtype, sweep, x_value, f"{rows}x{cols}", n, arrays * n * es, 0,
                        trio(lambda *s, g=g: g(s), e, comp, lambda i: sets[i]), ns,
                        lambda g=g, e=e: (g(sets[0]), e(*sets[0]), 1e-4 if dtype == torch.float32 else 2e-2, 0.0))
            del sets
        return run

    for tier, cols_list, sizes in ((0, COLS_TIER0, N_TIER0), (1, COLS_TIER1, N_TIER1)):
        for c in cols_list:
            for dtype in (torch.float32, torch.bfloat16):
                yield tier, point(ROW_TOTAL // c, c, dtype, "cols", c)
        for n in sizes:
            if n % 1024 == 0:
                for dtype in (torch.float32, torch.bfloat16):
                    yield tier, point(n // 1024, 1024, dtype, "n", n)


def transpose_family(sw, torch, gpuops):
    def point(r, c, dtype, sweep, x_value):
        def run():
            es = torch.empty((), dtype=dtype).element_size()
            gen = torch.Generator(device="cuda").manual_seed(r * 3 + c)
            ns = sw.nsets(2 * r * c * es)
            xs = [(torch.rand(r, c, device="cuda", generator=gen)).to(dtype) for _ in range(ns)]

            def e(x):
                return x.t().contiguous()

            comp = sw.compile(("transpose",), e, True)
            sw.case("transpose", "transpose", dtype, sweep, x_value, f"{r}x{c}", r * c, 2 * r * c * es, 0,
                    trio(gpuops.transpose, e, comp, lambda i: (xs[i],)), ns,
                    lambda: (gpuops.transpose(xs[0]).float(), e(xs[0]).float(), 0.0, 0.0))
        return run

    odd0 = [(4095, 4097), (4097, 4095), (16384, 1024), (1000, 3)]
    odd1 = [(3, 1000000), (33, 65537), (8191, 8193)]  # (1 row or 1 column: a view in PyTorch, no work)
    for tier, ks, odd in ((0, range(7, 15, 2), odd0), (1, range(8, 15, 2), odd1)):
        for k in ks:
            for dtype in (torch.float32, torch.bfloat16):
                yield tier, point(1 << k, 1 << k, dtype, "n", 1 << (2 * k))
        for r, c in odd:
            for dtype in (torch.float32, torch.bfloat16):
                yield tier, point(r, c, dtype, "shape", r * c)


def matmul_family(sw, torch, gpuops):
    def point(m, n, k, sweep, x_value):
        def run():
            gen = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
            nbytes = 4 * (m * k + k * n + m * n)
            flops = 2 * m * n * k
            ns = sw.nsets(nbytes)
            sets = [((torch.rand(m, k, device="cuda", generator=gen) * 2 - 1),
                     (torch.rand(k, n, device="cuda", generator=gen) * 2 - 1)) for _ in range(ns)]
            sw.case("matmul", "matmul", torch.float32, sweep, x_value, f"{m}x{n}x{k}", m * n, nbytes, flops,
                    [("gpuops", lambda i: gpuops.matmul(*sets[i]), True),
                     ("torch-eager", lambda i: torch.matmul(*sets[i]), True)], ns,
                    lambda: (gpuops.matmul(*sets[0]), torch.matmul(*sets[0]), 1e-4, 0.0))
        return run

    for s in (256, 1024, 4096):
        yield 0, point(s, s, s, "square", s)
    yield 0, point(1, 4096, 4096, "gemv", 1)
    yield 0, point(4096, 1, 4096, "gemv", 4096)
    for m in (8, 64):
        yield 0, point(m, 4096, 4096, "skinny", m)
    yield 0, point(4095, 4097, 1023, "shape", 4095)
    for s in (512, 2048, 8192):
        yield 1, point(s, s, s, "square", s)
    for m in (2, 4, 16, 32, 128):
        yield 1, point(m, 4096, 4096, "skinny", m)
    yield 1, point(1, 16384, 16384, "gemv", 16384)
    yield 1, point(1000, 1000, 1000, "shape", 1000)


NORM_COLS_TIER0 = [1024, 4096, 65536, 1000, 4097]
NORM_COLS_TIER1 = [2048, 8192, 16384, 32768, 3000, 12289]


def norm_family(sw, torch, gpuops):
    F = torch.nn.functional
    eps = 1e-5

    def rmsnorm(x, w):  # the Llama form, f32 inside
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

    def add_rmsnorm(x, r, w):
        h = x + r
        return h, rmsnorm(h, w)

    def rope(x, positions, cache):  # rotate-half (GPT-NeoX, Llama), cos and sin gathered by position
        half = x.shape[-1] // 2
        cs = cache[positions]
        cos, sin = cs[:, None, :half], cs[:, None, half:]
        cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        xf = x.float()
        rot = torch.cat([-xf[..., half:], xf[..., :half]], -1)
        return (xf * cos + rot * sin).to(x.dtype)

    def flat(out):  # an op's outputs as one tensor, for the check
        return torch.cat([t.flatten() for t in out]) if isinstance(out, tuple) else out

    head_dim = 128
    table = {  # name -> (gpuops, eager, arrays moved)
        "layernorm": (lambda x, r, w, b: gpuops.layernorm(x, w, b, eps),
                      lambda x, r, w, b: F.layer_norm(x, x.shape[-1:], w, b, eps), 2),
        "rmsnorm": (lambda x, r, w, b: gpuops.rmsnorm(x, w, eps), lambda x, r, w, b: rmsnorm(x, w), 2),
        # Both outputs, h (the residual stream a pre-norm block carries on) and y: returning y alone
        # lets torch.compile drop h's store and move 3 arrays where the op moves 4.
        "add_rmsnorm": (lambda x, r, w, b: gpuops.add_rmsnorm(x, r, w, eps),
                        lambda x, r, w, b: add_rmsnorm(x, r, w), 4),
        "layernorm_gelu": (lambda x, r, w, b: gpuops.layernorm_gelu(x, w, b, eps, approximate="tanh"),
                           lambda x, r, w, b: F.gelu(F.layer_norm(x, x.shape[-1:], w, b, eps), approximate="tanh"), 2),
    }

    def point(cols, dtype):
        def run():
            es = torch.empty((), dtype=dtype).element_size()
            rows = ROW_TOTAL // cols
            n = rows * cols
            gen = torch.Generator(device="cuda").manual_seed(cols)
            ns = sw.nsets(4 * n * es)
            sets = []
            for _ in range(ns):
                x = (torch.rand(rows, cols, device="cuda", generator=gen) * 6 - 3).to(dtype)
                r = (torch.rand(rows, cols, device="cuda", generator=gen) * 6 - 3).to(dtype)
                for t in (x, r):
                    torch._dynamo.maybe_mark_dynamic(t, 0)
                sets.append((x, r))
            w = (torch.rand(cols, device="cuda", generator=gen) + 0.5).to(dtype)
            b = (torch.rand(cols, device="cuda", generator=gen) - 0.5).to(dtype)
            tol = 1e-4 if dtype == torch.float32 else 2e-2
            for name, (g, e, arrays) in table.items():
                comp = sw.compile(("norm", name), e, None)
                sw.case("norm", name, dtype, "cols", cols, f"{rows}x{cols}", n, arrays * n * es, 0,
                        trio(g, e, comp, lambda i: (*sets[i], w, b)), ns,
                        lambda g=g, e=e: (flat(g(*sets[0], w, b)), flat(e(*sets[0], w, b)), tol, tol))
            # The backwards (dx and the weights' gradients) from dy (each set's second array), x and
            # each side's own forward statistics, computed once outside the timing; dy, x and dx
            # are the bytes moved. Eager: ATen's LayerNorm backward, and RMSNorm's gradient
            # written out in f32 (eager has no RMSNorm backward kernel of its own).
            bsets = []
            for x, dy in sets:
                _, gm, gr = gpuops.layernorm(x, w, b, eps, return_stats=True)
                _, tm, tr = torch.ops.aten.native_layer_norm(x, [cols], w, b, eps)
                _, grr = gpuops.rmsnorm(x, w, eps, return_stats=True)
                trr = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
                bsets.append((dy, x, gm, gr, tm, tr, grr, trr, w, b))

            def rms_bwd(dy, x, rstd, w):
                g = dy.float() * w.float()
                xhat = x.float() * rstd
                dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
                return dx.to(x.dtype), (dy.float() * xhat).sum(0).to(w.dtype)

            # Everything a case uses comes in as an argument: torch.compile keeps one compiled
            # function a name for every shape.
            backwards = {
                "layernorm_bwd": (lambda dy, x, gm, gr, tm, tr, grr, trr, w, b: gpuops.layernorm_bwd(dy, x, gm, gr, w, True),
                                  lambda dy, x, gm, gr, tm, tr, grr, trr, w, b: torch.ops.aten.native_layer_norm_backward(
                                      dy, x, x.shape[-1:], tm, tr, w, b, [True, True, True])),
                "rmsnorm_bwd": (lambda dy, x, gm, gr, tm, tr, grr, trr, w, b: gpuops.rmsnorm_bwd(dy, x, grr, w, True),
                                lambda dy, x, gm, gr, tm, tr, grr, trr, w, b: rms_bwd(dy, x, trr, w)),
            }
            for name, (g, e) in backwards.items():
                comp = sw.compile(("norm", name), e, None)
                sw.case("norm", name, dtype, "cols", cols, f"{rows}x{cols}", n, 3 * n * es, 0,
                        trio(g, e, comp, lambda i: bsets[i]), ns,
                        lambda g=g, e=e: (flat(g(*bsets[0])), flat(e(*bsets[0])), tol, tol))
            del bsets
            if cols % head_dim == 0:  # q [tokens, cols / 128 heads, 128]
                positions = torch.randint(0, 4096, (rows,), device="cuda", generator=gen)
                torch._dynamo.maybe_mark_dynamic(positions, 0)
                ang = torch.rand(4096, head_dim // 2, device="cuda", generator=gen) * 100
                cache = torch.cat([ang.cos(), ang.sin()], -1)
                qs = [x.view(rows, cols // head_dim, head_dim) for x, _ in sets]

                def g(q, p):
                    return gpuops.rope(q, p, cache, pairing="halves")

                def e(q, p):
                    return rope(q, p, cache)

                comp = sw.compile(("norm", "rope"), e, None)
                sw.case("norm", "rope", dtype, "cols", cols, f"{rows}x{cols}", n, 2 * n * es + 8 * rows, 0,
                        trio(g, e, comp, lambda i: (qs[i], positions)), ns,
                        lambda: (g(qs[0], positions), e(qs[0], positions), tol, tol))
            del sets
        return run

    for tier, cols in ((0, NORM_COLS_TIER0), (1, NORM_COLS_TIER1)):
        for c in cols:
            for dtype in (torch.float32, torch.bfloat16):
                yield tier, point(c, dtype)


def gemm_family(sw, torch, gpuops):
    F = torch.nn.functional
    bf16 = torch.bfloat16

    def point(m, n, k, sweep):
        x_value = m if sweep == "decode" else m * n * k >> 24

        def run():
            gen = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
            nbytes = 2 * (m * k + k * n + m * n + n)
            flops = 2 * m * n * k
            ns = sw.nsets(nbytes)
            sets = [((torch.rand(m, k, device="cuda", generator=gen) * 2 - 1).to(bf16),
                     ((torch.rand(n, k, device="cuda", generator=gen) * 2 - 1) * k**-0.5).to(bf16),
                     (torch.rand(n, device="cuda", generator=gen) - 0.5).to(bf16)) for _ in range(ns)]
            for name, g, e in (("linear", lambda x, w, b: gpuops.linear(x, w, b), F.linear),
                               ("linear_gelu", lambda x, w, b: gpuops.linear(x, w, b, activation="gelu_erf"),
                                lambda x, w, b: F.gelu(F.linear(x, w, b)))):
                comp = sw.compile(("gemm", name), e, None)
                sw.case("gemm", name, bf16, sweep, x_value, f"{m}x{n}x{k}", m * n, nbytes, flops,
                        trio(g, e, comp, lambda i: sets[i]), ns,
                        lambda g=g, e=e: (g(*sets[0]), e(*sets[0]), 2e-2, 2e-2))
        return run

    yield 0, point(4096, 4096, 4096, "transformer")
    yield 0, point(4096, 11008, 4096, "transformer")
    for m in (1, 16, 64):
        yield 0, point(m, 4096, 4096, "decode")
    yield 1, point(4096, 4096, 11008, "transformer")  # the down projection
    yield 1, point(4095, 4097, 1023, "transformer")


def attention_family(sw, torch, gpuops):
    F = torch.nn.functional
    bf16 = torch.bfloat16
    tokens, width = 16384, 2048

    def point(s, d, causal):
        def run():
            b, h = tokens // s, width // d
            shape = (b, h, s, d)
            elems = b * h * s * d
            flops = 4 * b * h * s * s * d // (2 if causal else 1)
            gen = torch.Generator(device="cuda").manual_seed(s * 31 + d * 2 + causal)
            ns = sw.nsets(4 * elems * 2)
            sets = [tuple((torch.rand(shape, device="cuda", generator=gen) * 2 - 1).to(bf16) for _ in range(3))
                    for _ in range(ns)]
            dout = (torch.rand(shape, device="cuda", generator=gen) * 2 - 1).to(bf16)

            def ours(q, k, v):
                return gpuops.attention(q, k, v, causal=causal, layout="bhsd")

            def theirs(q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            def train(f):
                def step(q, k, v):
                    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
                    return torch.autograd.grad(f(q, k, v), (q, k, v), dout)
                return step

            def flat(grads):
                return torch.cat([t.flatten() for t in grads])

            tag = f"_d{d}" + ("_causal" if causal else "")
            comp = sw.compile(("attn", causal), theirs, False)
            sw.case("attention", "attention" + tag, bf16, "seqlen", s, f"{b}x{h}x{s}x{d}", elems, 4 * elems * 2, flops,
                    trio(ours, theirs, comp, lambda i: sets[i]), ns,
                    lambda: (ours(*sets[0]), theirs(*sets[0]), 2e-2, 2e-2))
            versions = [("gpuops", lambda i: train(ours)(*sets[i]), False),
                        ("torch-eager", lambda i: train(theirs)(*sets[i]), False),
                        ("torch-compile", lambda i: train(comp)(*sets[i]), False)]
            sw.case("attention", "attention_fwd_bwd" + tag, bf16, "seqlen", s, f"{b}x{h}x{s}x{d}", elems,
                    12 * elems * 2, flops * 7 // 2, versions, ns,
                    lambda: (flat(train(ours)(*sets[0])), flat(train(theirs)(*sets[0])), 3e-2, 3e-2))
            del sets
        return run

    for causal in (False, True):
        for s in (1024, 4096):
            yield 0, point(s, 128, causal)
    for causal in (False, True):
        for s, d in ((512, 128), (2048, 128), (8192, 128), (512, 64), (1024, 64), (2048, 64), (4096, 64), (8192, 64)):
            yield 1, point(s, d, causal)


def conv_family(sw, torch, gpuops):
    F = torch.nn.functional
    n = 32
    # ResNet-50's layers at batch 32: (C, H = W, K, R = S, stride), padding R // 2
    layers = [(64, 56, 64, 3, 1), (256, 56, 64, 1, 1), (256, 14, 256, 3, 1), (512, 7, 512, 3, 1),
              (3, 224, 64, 7, 2), (128, 56, 128, 3, 2), (128, 28, 128, 3, 1), (1024, 14, 256, 1, 1), (2048, 7, 512, 1, 1)]

    def point(c, hw, k, f, stride, dtype, layout):
        def run():
            pad = f // 2
            p = (hw + 2 * pad - f) // stride + 1
            nhwc = layout == "nhwc"
            es = torch.empty((), dtype=dtype).element_size()
            flops = 2 * n * p * p * k * c * f * f
            nbytes = es * (n * hw * hw * c + k * c * f * f + n * p * p * k + k)
            gen = torch.Generator(device="cuda").manual_seed(c * 31 + hw * 7 + k + f + stride)
            ns = sw.nsets(nbytes)

            def u(*shape, s=1.0):
                return ((torch.rand(*shape, device="cuda", generator=gen) * 2 - 1) * s).to(dtype)

            xs, ws = ((n, hw, hw, c), (k, f, f, c)) if nhwc else ((n, c, hw, hw), (k, c, f, f))
            sets = [(u(*xs), u(*ws, s=(c * f * f) ** -0.5), u(k, s=0.5)) for _ in range(ns)]

            def ours(x, w, b):
                return gpuops.conv2d(x, w, b, stride, pad, relu=True, layout=layout)

            def theirs(x, w, b):  # nhwc: torch's channels_last views of the same memory, out [N, P, Q, K]
                if nhwc:
                    return F.relu(F.conv2d(x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2), b, stride, pad)).permute(0, 2, 3, 1)
                return F.relu(F.conv2d(x, w, b, stride, pad))

            shape = f"{n}x{hw}x{hw}x{c}-{k} {f}x{f}/{stride}"
            tol = 1e-4 if dtype == torch.float32 else 2e-2
            comp = sw.compile(("conv", c, hw, k, f, stride, layout), theirs, False)
            sw.case("conv", f"conv2d_relu_{layout}", dtype, "resnet", flops / 2**30, shape, n * p * p * k, nbytes, flops,
                    trio(ours, theirs, comp, lambda i: sets[i]), ns,
                    lambda: (ours(*sets[0]), theirs(*sets[0]), tol, tol))
            if dtype != torch.float32:  # gpuops' backward is float32 only
                return
            dout = torch.rand(n, k, p, p, device="cuda", generator=gen) * 2 - 1

            def train(fn):
                def step(x, w, b):
                    x, w, b = (t.detach().requires_grad_() for t in (x, w, b))
                    return torch.autograd.grad(fn(x, w, b), (x, w, b), dout)
                return step

            def flat(grads):
                return torch.cat([t.flatten() for t in grads])

            # The check's gradients are those of conv2d + bias without the ReLU: where a pre-activation
            # lies within rounding of 0 the two summation orders may take opposite sides of the ReLU,
            # and each such element moves db and dW by up to |dout x| (up to 1 here) on either side.
            def ours_lin(x, w, b):
                return gpuops.conv2d(x, w, b, stride, pad, relu=False, layout=layout)

            def theirs_lin(x, w, b):
                return F.conv2d(x, w, b, stride, pad)

            versions = [("gpuops", lambda i: train(ours)(*sets[i]), False),
                        ("torch-eager", lambda i: train(theirs)(*sets[i]), False),
                        ("torch-compile", lambda i: train(comp)(*sets[i]), False)]
            sw.case("conv", "conv2d_relu_fwd_bwd_nchw", dtype, "resnet", flops / 2**30, shape, n * p * p * k,
                    3 * nbytes, 3 * flops, versions, ns, lambda: (flat(train(ours_lin)(*sets[0])), flat(train(theirs_lin)(*sets[0])),
                                                                 1e-3, 1e-3))
            del sets
        return run

    for i, (c, hw, k, f, stride) in enumerate(layers):
        for dtype, layout in ((torch.bfloat16, "nhwc"), (torch.float32, "nchw")):
            yield (0 if i < 4 else 1), point(c, hw, k, f, stride, dtype, layout)


def main():
    args = args_parse()
    fams = [f for f in args.families.split(",") if f]
    tiers = [int(t) for t in args.tiers.split(",")]
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        sys.exit("bench/sweep.py: no CUDA device")
    gpuops = None
    if not args.dry_run:
        import gpuops

        gpuops.load()
        torch.backends.cuda.matmul.allow_tf32 = False  # gpuops' matmul is FFMA f32: compare with cuBLAS SGEMM
        torch.set_float32_matmul_precision("highest")
        torch.backends.cudnn.allow_tf32 = False  # conv: f32 against cuDNN's f32, as matmul
        torch.backends.cudnn.benchmark = True  # cuDNN times its algorithms and keeps the fastest
        cfg = torch._dynamo.config  # one compiled graph per op, dtype and row length: lift the limits
        for name in ("cache_size_limit", "recompile_limit"):
            if hasattr(cfg, name):
                setattr(cfg, name, 4096)
        for name in ("accumulated_cache_size_limit", "accumulated_recompile_limit"):
            if hasattr(cfg, name):
                setattr(cfg, name, 1 << 16)
        cfg.automatic_dynamic_shapes = False  # row ops: static row length, rows dynamic where marked

    class Dry:  # --dry-run: the points are listed, not run
        l2 = 50 << 20

    sw = Dry() if args.dry_run else Sweep(args, torch, gpuops)
    gens = {"elementwise": elementwise, "reduce": reduce_family, "scan": scan_family, "softmax": softmax_family,
            "transpose": transpose_family, "matmul": matmul_family, "norm": norm_family, "gemm": gemm_family,
            "attention": attention_family, "conv": conv_family}
    per = {t: {f: [] for f in fams} for t in tiers}
    for f in fams:
        for tier, run in gens[f](sw, torch, gpuops):
            if tier in per:
                per[tier][f].append(run)
    points = {}  # each tier's points, the families interleaved (a budget cut shortens every family)
    for t in tiers:
        queues = [[(f, r) for r in per[t][f]] for f in fams]
        points[t] = [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]
    if args.dry_run:
        for t in tiers:
            per = {f: sum(1 for g, _ in points[t] if g == f) for f in fams}
            print(f"tier {t}: {len(points[t])} points: {per}")
        return
    print(f"gpuops sweep on {sw.dev}, torch {torch.__version__}, L2 {sw.l2 >> 20} MiB, budget {args.budget:.0f} s")
    for t in tiers:
        done = 0
        for f, run in points[t]:
            if sw.over():
                sw.skipped += 1
                continue
            try:
                run()
            except Exception as e:  # noqa: BLE001 - one point's failure (memory, say) must not end the sweep
                print(f"  {f} tier {t}: {type(e).__name__}: {str(e)[:200]}")
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            done += 1
        print(f"tier {t}: {done} of {len(points[t])} points, {time.time() - sw.t0:.0f} s so far")
    sw.close()
    print(f"{sw.cases} cases, {sw.skipped} points skipped (budget), {time.time() - sw.t0:.0f} s; wrote {args.csv}")


if __name__ == "__main__":
    main()
