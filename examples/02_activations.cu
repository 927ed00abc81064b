// SPDX-License-Identifier: MIT
// examples/02_activations.cu - step 2 of the learning path: activations (GELU, SiLU, ReLU),
// forward and backward, in f32, f16 and bf16.
//
// What it teaches
//   An activation is elementwise like step 1, with more math per element: the forward pass reads
//   x and writes y (2 arrays), the backward pass reads dy and x and writes dx (3 arrays): 8 and 12
//   bytes per element in f32, 4 and 6 in f16 and bf16. The math runs from 1 compare (ReLU) to a
//   few dozen flops (GELU: erff or expf plus a polynomial). The roofline is still the copy
//   bandwidth: an H100 issues some 20 f32 flops in the time it moves one byte, so the math hides
//   behind memory and the rows land near the copy ceiling.
//   16-bit storage halves the bytes, so an op handles twice the elements per second (the Gelem/s
//   column; x prev on an f16 row is its speedup over f32), while the math per element stays: loads
//   convert to f32, the op computes in f32, the store rounds once. So the instruction budget per
//   element halves too (at 3 TB/s a bf16 forward streams 0.75e12 elements/s; an H100 SXM retires
//   about 33e12 thread instructions/s: some 45 per element), and that is where transcendental cost
//   (erff, expf) starts to show. A 16-bit row well under 2x its f32 row is turning compute-bound.
//
// The kernels to read: gpuops_cuda.cuh, section 2.1 (gelu_erf, gelu_tanh, silu, relu and their
// gradients, and the functors gelu_fwd_op<T, kTanh>, silu_fwd_op<T>, ...: 16-bit T takes the fast
// forms of the math), 2.2 (map_naive, map_grid_stride) and 2.3 (map_vectorized: with 16-bit storage
// one 16-byte vector holds 8 elements). The three versions are shown for GELU (erf form) forward
// in bf16; every other op and type runs AUTO (vectorized on aligned pointers).
// Every GPU row is checked against the CPU implementation (gpuops_cpu_*) before it is timed.
// Build: nvcc -O3 -arch=sm_90 -I. examples/02_activations.cu -o activations. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_ELEMENTWISE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <chrono>
#include <initializer_list>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using bench::fmt;
using std::string;
using std::vector;

static const int64_t n = (int64_t(1) << 26) + 3;

enum activation { GELU_ERF, GELU_TANH, SILU, RELU };
struct op_desc {
  const char *name;
  activation act;
  bool backward;  // dx = dy * f'(x) instead of y = f(x)
};
static const op_desc ops[] = {
    {"gelu_erf fwd", GELU_ERF, false}, {"gelu_erf bwd", GELU_ERF, true},
    {"gelu_tanh fwd", GELU_TANH, false}, {"gelu_tanh bwd", GELU_TANH, true},
    {"silu fwd", SILU, false}, {"silu bwd", SILU, true},
    {"relu fwd", RELU, false}, {"relu bwd", RELU, true},
};
static const op_desc &showcase = ops[0];  // its bf16 form runs every version

// The public calls of one storage type in one shape: out = f(x) forward, out = dy * f'(x) backward
// (dy unused forward). The macro only pastes the type suffix: f32, f16, bf16.
#define ACTIVATION_CALLS(S, T)                                                                                 \
  static gpuops_status gpu_call(const op_desc &o, T *out, const T *dy, const T *x, gpuops_algo al) {           \
    const gpuops_gelu_approx ap = o.act == GELU_TANH ? GPUOPS_GELU_TANH : GPUOPS_GELU_ERF;                     \
    switch (o.act) {                                                                                           \
    case SILU:                                                                                                 \
      return o.backward ? gpuops_silu_bwd_##S(out, dy, x, n, al, nullptr)                                      \
                        : gpuops_silu_fwd_##S(out, x, n, al, nullptr);                                         \
    case RELU:                                                                                                 \
      return o.backward ? gpuops_relu_bwd_##S(out, dy, x, n, al, nullptr)                                      \
                        : gpuops_relu_fwd_##S(out, x, n, al, nullptr);                                         \
    default:                                                                                                   \
      return o.backward ? gpuops_gelu_bwd_##S(out, dy, x, n, ap, al, nullptr)                                  \
                        : gpuops_gelu_fwd_##S(out, x, n, ap, al, nullptr);                                     \
    }                                                                                                          \
  }                                                                                                            \
  static gpuops_status cpu_call(const op_desc &o, T *out, const T *dy, const T *x) {                           \
    const gpuops_gelu_approx ap = o.act == GELU_TANH ? GPUOPS_GELU_TANH : GPUOPS_GELU_ERF;                     \
    switch (o.act) {                                                                                           \
    case SILU:                                                                                                 \
      return o.backward ? gpuops_cpu_silu_bwd_##S(out, dy, x, n) : gpuops_cpu_silu_fwd_##S(out, x, n);         \
    case RELU:                                                                                                 \
      return o.backward ? gpuops_cpu_relu_bwd_##S(out, dy, x, n) : gpuops_cpu_relu_fwd_##S(out, x, n);         \
    default:                                                                                                   \
      return o.backward ? gpuops_cpu_gelu_bwd_##S(out, dy, x, n, ap) : gpuops_cpu_gelu_fwd_##S(out, x, n, ap); \
    }                                                                                                          \
  }
ACTIVATION_CALLS(f32, float)
ACTIVATION_CALLS(f16, gpuops_f16)
ACTIVATION_CALLS(bf16, gpuops_bf16)
#undef ACTIVATION_CALLS

// One storage type's data: the same random values in every type (one seed), rounded to T.
template <class T> struct arrays {
  vector<T> x, dy, want;
  T *d_x, *d_dy, *d_out;
  explicit arrays(uint64_t seed) : x(n), dy(n), want(n) {
    check::rng rng(seed);
    check::fill_uniform(x, rng, -6.0, 6.0);
    check::fill_uniform(dy, rng, -1.0, 1.0);
    d_x = check::to_device(x);
    d_dy = check::to_device(dy);
    CHECK_CUDA(cudaMalloc(&d_out, (size_t)n * sizeof(T)));
  }
  ~arrays() {
    cudaFree(d_x);
    cudaFree(d_dy);
    cudaFree(d_out);
  }
  arrays(const arrays &) = delete;
  arrays &operator=(const arrays &) = delete;
};


// The table: GB/s counts the bytes the op must move, % copy compares with the measured ceiling.
// x prev compares with the row above when it holds the same op (the previous version, or the
// previous storage type), and shows "-" where the op changes.
struct report {
  double copy_gbps;
  bench::table table;
  bool ok = true;
  string best;  // the fastest version of the showcase op, for the summary line
  double best_us = NAN, best_cpu_us = NAN, best_bytes = 0;
  explicit report(double copy) : copy_gbps(copy) {
    table.head = {"op", "type", "version", "time (us)", "GB/s", "Gelem/s", "% copy", "x cpu", "x prev", "check"};
  }
  static double gbps(double bytes, double us) { return bytes * (double)n / (us * 1e3); }
  void row(const op_desc &o, const char *type, const string &ver, double us, double bytes, double cpu_us,
           double prev_us, const string &chk) {
    const double g = gbps(bytes, us), gelems = (double)n / (us * 1e3);
    table.add({o.name, type, ver, bench::num(us), bench::num(g), bench::num(gelems), bench::num(100.0 * g / copy_gbps, "%"), bench::num(cpu_us / us, "x"),
               bench::num(prev_us / us, "x"), chk});
  }
};

// Rows of one op in one storage type: the CPU reference (a row only when asked), then each GPU
// version, validated on a poisoned output and then timed. prev_us carries x prev between calls.
template <class T> static void run_op(report &rep, bench::timer &timer, const op_desc &o, arrays<T> &d,
                                      std::initializer_list<gpuops_algo> algos, bool cpu_row, double &prev_us) {
  const double bytes = (o.backward ? 3 : 2) * sizeof(T);
  const char *type = check::dtype_name<T>();
  const double cpu = bench::host_us([&] { return cpu_call(o, d.want.data(), d.dy.data(), d.x.data()); });
  if (cpu_row) {
    rep.row(o, type, "cpu", cpu, bytes, cpu, NAN, "reference");
    prev_us = cpu;
  }
  for (gpuops_algo algo : algos) {
    auto run = [&] { return gpu_call(o, d.d_out, d.d_dy, d.d_x, algo); };
    check::poison(d.d_out, (size_t)n * sizeof(T));
    const gpuops_status st = run();
    double us = NAN;
    string chk = string("FAIL ") + gpuops_status_string(st);
    if (st == GPUOPS_OK) {
      const vector<T> got = check::to_host(d.d_out, n);
      chk = check::verdict(check::compare(got.data(), d.want.data(), n, check::default_tolerance<T>()));
      us = 1e3 * timer.median_ms([&] { CHECK_OK(run()); });
    }
    rep.row(o, type, gpuops_algo_name(algo), us, bytes, cpu, prev_us, chk);
    rep.ok = rep.ok && chk == "ok";
    if (cpu_row && (us < rep.best_us || (isnan(rep.best_us) && !isnan(us)))) {
      rep.best = fmt("%s %s %s", o.name, type, gpuops_algo_name(algo));
      rep.best_us = us, rep.best_cpu_us = cpu, rep.best_bytes = bytes;
    }
    prev_us = us;
  }
}

int main() {
  if (!check::have_gpu()) {
    printf("02_activations needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  report rep(timer.copy_gbps(size_t(1) << 30));
  printf("02 activations: n = %lld elements per array, x in [-6, 6], dy in [-1, 1], seed %llu (GPUOPS_SEED replays it)\n",
         (long long)n, (unsigned long long)seed);
  printf("device: %s, %d SMs\n", dev.name, dev.sms);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written)\n", rep.copy_gbps);
  printf("bytes per element: forward 2 arrays, backward 3 (f32: 8 and 12; f16, bf16: 4 and 6)\n");
  printf("x cpu: against the CPU implementation of the same op and type, each timed once (the first is a row)\n\n");
  fflush(stdout);

  arrays<float> f32(seed);
  arrays<gpuops_f16> f16(seed);
  arrays<gpuops_bf16> bf16(seed);

  double prev = NAN;
  run_op(rep, timer, showcase, bf16, {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_GRID_STRIDE, GPUOPS_ALGO_VECTORIZED}, true, prev);
  for (const op_desc &o : ops) {
    prev = NAN;
    run_op(rep, timer, o, f32, {GPUOPS_ALGO_AUTO}, false, prev);
    run_op(rep, timer, o, f16, {GPUOPS_ALGO_AUTO}, false, prev);
    if (&o != &showcase) run_op(rep, timer, o, bf16, {GPUOPS_ALGO_AUTO}, false, prev);
  }
  rep.table.print();

  const double gbps = report::gbps(rep.best_bytes, rep.best_us);
  printf("result: 02 activations | %s | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", rep.best.c_str(), gbps,
         gbps / rep.copy_gbps, rep.best_cpu_us / rep.best_us, rep.ok ? "ok" : "FAIL");
  return rep.ok ? 0 : 1;
}
