// SPDX-License-Identifier: MIT
// examples/10_layernorm.cu - step 10 of the learning path: LayerNorm along the rows of a matrix, then
// fusion with what comes after it.
//
// What it teaches
//   y = (x - mean) * rstd * gamma + beta needs two numbers of the whole row (mean and variance)
//   before it can write anything, like softmax (step 7): a row op whose roofline is the copy
//   bandwidth IF x crosses DRAM once. Two more lessons are new here:
//   1. The variance. E[x^2] - E[x]^2 subtracts two numbers of size mean^2: on a row of mean 1e4 and
//      standard deviation 1e-2 it loses every digit in f32. Every version below first shifts the row
//      by its first element (exact near it), then either sums twice (mean, then squared deviations) or
//      runs Welford's update, which merges partial (count, mean, m2) triples exactly where sums would
//      cancel. The table's last column checks a row like that in every run.
//   2. Fusion. A transformer block runs LayerNorm, then GELU (or adds the residual first): as
//      separate kernels each intermediate makes a round trip through DRAM. Fused, the output of the
//      norm goes straight into the activation in registers: LN + GELU moves 2 arrays instead of 4.
//   The versions, each reading x from memory more or fewer times:
//     naive (this file)  one thread per row, three loops: 16384 rows give 16384 threads, and the 32
//                        threads of a warp read 32 different rows (uncoalesced).
//     block-per-row      a block of 256 per row, coalesced element loads, a shared-memory tree for
//                        each sum: three passes over x (mean, squared deviations, outputs).
//     warp-per-row       a warp per row, Welford's update per element, merged by shuffles (no
//                        shared memory, no barrier): two passes.
//     online             streaming: a block per row, 128-bit loads, Welford per vector: two passes;
//                        any row length (AUTO's choice past the on-chip lengths).
//     row-registers      the row loaded once into registers (a warp, a block, a cluster of blocks
//                        on H100), its statistics in one reduction of (count, mean, m2): one pass.
//     auto               row-registers where the row fits and the row is 16-byte aligned, else online.
//   PREDICTION for an H100, written before it ran (measured: docs/learning-path.md, step 10), at
//   16384 x 4096 f32: naive ~0.05x copy, block-per-row ~0.5x, warp-per-row ~0.6x, online ~0.7x,
//   row-registers and auto ~0.9x; rows of 65536: online ~0.6x, auto (clusters) ~0.85x; LN + GELU
//   fused ~1.9x faster than unfused in bf16 (2 arrays moved instead of 4).
//
// The kernels to read: gpuops_cuda.cuh, core section 1.3 (welford) and 1.5 (row_reduce, row_stats,
// cluster_merge, sweep_row2), then section 8: 8.2 norm_block_per_row, norm_warp_per_row,
// norm_fwd_stream, norm_map; 8.3 norm_fwd_on_chip; 8.4 and 8.5 (how AUTO picks).
// Every GPU version is checked against the CPU implementation (gpuops_cpu_layernorm_fwd_*) before it
// is timed. Build: nvcc -O3 -std=c++17 -arch=sm_90 -I. examples/10_layernorm.cu -o layernorm.
// GPUOPS_SEED=N replays. Run time on an H100 host: about 15 s, nearly all of it on the CPU (four
// references of 2^26 elements, about 1 s each as 07_softmax's, and each version's 2^26 results
// compared on the host); the GPU work, 6 x 28 runs of under 1 ms and 6 of the naive kernel's few
// ms, is under a second.
#define GPUOPS_ONLY_NORM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <functional>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using std::string;
using std::vector;

// The naive version: one thread per row, three loops (mean, variance, outputs), shifted by x[0].
__global__ void layernorm_naive_kernel(float *y, const float *x, const float *g, const float *b, int64_t rows, int64_t cols, float eps) {
  const int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float *xr = x + r * cols, s = xr[0];
  float *yr = y + r * cols;
  float m = 0.0f, v = 0.0f;
  for (int64_t j = 0; j < cols; ++j) m += xr[j] - s;
  m /= (float)cols;
  for (int64_t j = 0; j < cols; ++j) v += (xr[j] - s - m) * (xr[j] - s - m);
  const float rstd = 1.0f / sqrtf(v / (float)cols + eps);
  for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - s - m) * rstd * g[j] + b[j];
}

struct version {
  string name;
  std::function<gpuops_status()> run;
  int reps;
};

struct result {
  string best;
  double best_us = NAN, cpu_us = NAN;
  vector<double> us;  // each version's time, in order
  bool ok = true;
};

// One table: the CPU row, then each GPU version validated and timed. `arrays` is the number of
// n-element arrays the op must move (for GB/s).
template <class T>
static result run_table(bench::timer &timer, double copy, int64_t n, double arrays, const vector<T> &want, T *d_y, double cpu_us,
                        const vector<version> &versions, bool prev_col = true) {
  const double bytes = arrays * (double)n * sizeof(T);
  result res;
  res.cpu_us = cpu_us;
  bench::table t;
  t.head = {"version", "time (us)", "GB/s", "x copy", "x cpu", prev_col ? "x prev" : "x first", "check"};
  auto gbps = [&](double us) { return bytes / (us * 1e3); };
  if (!isnan(cpu_us)) t.add({"cpu", bench::num(cpu_us), bench::num(gbps(cpu_us)), bench::num(gbps(cpu_us) / copy, "x"), "1.00x", "-", "reference"});
  double prev = cpu_us, first = NAN;
  const check::tolerance tol = sizeof(T) == 4 ? check::tolerance{2e-5, 1e-5} : check::tolerance{2e-2, 1.6e-2};
  for (const version &v : versions) {
    check::poison(d_y, n * sizeof(T));
    const gpuops_status st = v.run();
    CHECK_CUDA(cudaDeviceSynchronize());
    string chk;
    double us = NAN;
    if (st == GPUOPS_ERR_UNSUPPORTED) {  // ROW_REGISTERS on rows of 65536 without clusters (before compute capability 9.0)
      chk = "not on this device";
    } else if (st != GPUOPS_OK) {
      chk = string("FAIL ") + gpuops_status_string(st);
    } else {
      const vector<T> got = check::to_host(d_y, n);
      chk = check::verdict(check::compare(got.data(), want.data(), n, tol));
      us = 1e3 * timer.median_ms([&] { CHECK_OK(v.run()); }, v.reps);
    }
    res.ok = res.ok && (chk == "ok" || st == GPUOPS_ERR_UNSUPPORTED);
    if (isnan(first)) first = us;
    res.us.push_back(us);
    t.add({v.name, bench::num(us), bench::num(gbps(us)), bench::num(gbps(us) / copy, "x"), bench::num(cpu_us / us, "x"),
           bench::num((prev_col ? prev : first) / us, "x"), chk});
    if (!isnan(us) && (isnan(res.best_us) || us < res.best_us)) res.best_us = us, res.best = v.name;
    prev = us;
  }
  t.print();
  return res;
}

int main() {
  if (!check::have_gpu()) {
    printf("10_layernorm needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  const double copy = timer.copy_gbps(size_t(1) << 30);
  printf("10 layernorm along rows; seed %llu (GPUOPS_SEED replays it)\n", (unsigned long long)seed);
  printf("device: %s, %d SMs, %.0f MB L2\n", dev.name, dev.sms, dev.l2_bytes / 1e6);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written)\n", copy);
  fflush(stdout);

  setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line, also into a pipe: a time limit shows where it stopped
  check::rng rng(seed);
  const int64_t n = 16384ll * 4096;  // every table uses 2^26 elements
  const float eps = 1e-5f;
  vector<float> x(n), g(65536), b(65536);
  check::fill_uniform(x, rng, -3.0, 3.0);
  check::fill_uniform(g, rng, 0.5, 1.5);
  check::fill_uniform(b, rng, -1.0, 1.0);
  for (int64_t j = 0; j < 4096; ++j) x[4096 + j] = (float)(1e4 + 1e-2 * rng.uniform(-1.7, 1.7));  // row 1: mean 1e4, std 1e-2
  float *d_x = check::to_device(x), *d_g = check::to_device(g), *d_b = check::to_device(b), *d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_y, n * sizeof(float)));
  vector<float> want(n);

  auto versions = [&](int64_t rows, int64_t cols, bool slow) {
    vector<version> v;
    if (slow) {
      v.push_back({"naive (thread per row)",
                   [=] {
                     layernorm_naive_kernel<<<(unsigned)((rows + 255) / 256), 256>>>(d_y, d_x, d_g, d_b, rows, cols, eps);
                     return cudaGetLastError() == cudaSuccess ? GPUOPS_OK : GPUOPS_ERR_CUDA;
                   },
                   3});
      for (gpuops_algo al : {GPUOPS_ALGO_BLOCK_PER_ROW, GPUOPS_ALGO_WARP_PER_ROW})
        v.push_back({gpuops_algo_name(al), [=] { return gpuops_layernorm_fwd_f32(d_y, nullptr, nullptr, d_x, d_g, d_b, rows, cols, eps, al, nullptr); }, 10});
    }
    for (gpuops_algo al : {GPUOPS_ALGO_ONLINE, GPUOPS_ALGO_ROW_REGISTERS, GPUOPS_ALGO_AUTO})
      v.push_back({gpuops_algo_name(al), [=] { return gpuops_layernorm_fwd_f32(d_y, nullptr, nullptr, d_x, d_g, d_b, rows, cols, eps, al, nullptr); }, 25});
    return v;
  };
  auto cpu_ref = [&](int64_t rows, int64_t cols) {
    return bench::host_us([&] { return gpuops_cpu_layernorm_fwd_f32(want.data(), nullptr, nullptr, x.data(), g.data(), b.data(), rows, cols, eps); });
  };

  printf("\nLayerNorm f32, rows of 4096: 16384 x 4096 (row 1: mean 1e4, standard deviation 1e-2)\n");
  const result main_res = run_table<float>(timer, copy, n, 2.0, want, d_y, cpu_ref(16384, 4096), versions(16384, 4096, true));
  printf("\nLayerNorm f32, rows of 65536: 1024 x 65536 (row-registers: clusters of 8 blocks on compute capability 9.0)\n");
  const result long_res = run_table<float>(timer, copy, n, 2.0, want, d_y, cpu_ref(1024, 65536), versions(1024, 65536, false));

  // Fusion, bf16 at 16384 x 4096: LN + GELU and residual-add + LN, fused against their separate kernels.
  const int64_t rows = 16384, cols = 4096;
  vector<gpuops_bf16> xb(n), rb(n), gb(cols), bb(cols), wantb(n), hb(n);
  for (int64_t i = 0; i < n; ++i) xb[i] = gpuops_f32_to_bf16(x[i] > 100 ? 1.0f : x[i]), rb[i] = gpuops_f32_to_bf16(x[(i * 7) % n] > 100 ? 0.0f : x[(i * 7) % n]);
  for (int64_t j = 0; j < cols; ++j) gb[j] = gpuops_f32_to_bf16(g[j]), bb[j] = gpuops_f32_to_bf16(b[j]);
  gpuops_bf16 *dxb = check::to_device(xb), *drb = check::to_device(rb), *dgb = check::to_device(gb), *dbb = check::to_device(bb), *dyb = nullptr, *dhb = nullptr;
  CHECK_CUDA(cudaMalloc(&dyb, n * 2));
  CHECK_CUDA(cudaMalloc(&dhb, n * 2));
  printf("\nLayerNorm + GELU (tanh) bf16, 16384 x 4096: 2 arrays fused, 4 unfused (the norm's output written, read back)\n");
  const double cpu_g = bench::host_us([&] {
    return gpuops_cpu_layernorm_gelu_fwd_bf16(wantb.data(), nullptr, nullptr, xb.data(), gb.data(), bb.data(), rows, cols, eps, GPUOPS_GELU_TANH);
  });
  vector<version> gv;
  for (gpuops_algo al : {GPUOPS_ALGO_UNFUSED, GPUOPS_ALGO_AUTO})
    gv.push_back({string(al == GPUOPS_ALGO_AUTO ? "fused (auto)" : "unfused: layernorm, then gelu"),
                  [=] { return gpuops_layernorm_gelu_fwd_bf16(dyb, nullptr, nullptr, dxb, dgb, dbb, rows, cols, eps, GPUOPS_GELU_TANH, al, nullptr); }, 25});
  const result gelu_res = run_table<gpuops_bf16>(timer, copy, n, 2.0, wantb, dyb, cpu_g, gv);
  printf("\nresidual add + LayerNorm bf16, 16384 x 4096: h = x + r and y = LN(h) both written: 4 arrays fused, 5 unfused\n");
  const double cpu_a = bench::host_us([&] {
    return gpuops_cpu_add_layernorm_fwd_bf16(wantb.data(), hb.data(), nullptr, nullptr, xb.data(), rb.data(), gb.data(), bb.data(), rows, cols, eps);
  });
  vector<version> av;
  for (gpuops_algo al : {GPUOPS_ALGO_UNFUSED, GPUOPS_ALGO_AUTO})
    av.push_back({string(al == GPUOPS_ALGO_AUTO ? "fused (auto)" : "unfused: add, then layernorm"),
                  [=] { return gpuops_add_layernorm_fwd_bf16(dyb, dhb, nullptr, nullptr, dxb, drb, dgb, dbb, rows, cols, eps, al, nullptr); }, 25});
  const result add_res = run_table<gpuops_bf16>(timer, copy, n, 4.0, wantb, dyb, cpu_a, av);

  const double gbps = 2.0 * (double)n * sizeof(float) / (main_res.best_us * 1e3);
  const bool ok = main_res.ok && long_res.ok && gelu_res.ok && add_res.ok;
  printf("\nLN + GELU: fused %.2fx faster than unfused (bytes predict 2.0x); residual add + LN: %.2fx (bytes predict 1.25x)\n",
         gelu_res.us[0] / gelu_res.us[1], add_res.us[0] / add_res.us[1]);
  printf("\nresult: 10 layernorm | %s | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", main_res.best.c_str(), gbps, gbps / copy, main_res.cpu_us / main_res.best_us,
         ok ? "ok" : "FAIL");
  for (void *p : {(void *)d_x, (void *)d_g, (void *)d_b, (void *)d_y, (void *)dxb, (void *)drb, (void *)dgb, (void *)dbb, (void *)dyb, (void *)dhb})
    CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}
