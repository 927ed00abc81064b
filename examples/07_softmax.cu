// SPDX-License-Identifier: MIT
// examples/07_softmax.cu - step 7 of the learning path: softmax along the rows of a matrix.
//
// What it teaches
//   softmax(x)_j = exp(x_j - m) / sum_k exp(x_k - m), with m the row's maximum: subtracting m keeps
//   every exponent <= 0, so nothing overflows (rows of 1e4 work) and a masked entry (-inf) gets 0.
//   Per element it reads 4 bytes and writes 4 (f32) and does one exponential and a few flops: a
//   memory-bound op whose roofline is the copy bandwidth, IF x is read from memory only once. The
//   catch is that each output needs two numbers of the whole row (m and the sum) before it can be
//   written. The versions differ in how often they read x:
//     naive (this file)  one thread per row, three loops over its row: max, sum, write. The 32
//                        threads of a warp walk 32 different rows, so every load touches 32 cache
//                        lines for 4 useful bytes each; and 16384 rows give only 16384 threads.
//     three-pass         a block per row, threads side by side along the row (coalesced 128-bit
//                        loads): pass 1 the max, a block reduction; pass 2 the sum of exp(x - m),
//                        a reduction; pass 3 the outputs. x is read three times: 4 transfers of
//                        the matrix where 2 would do (the rereads partly hit L2).
//     online             the running (max, sum) of gpuops::online_softmax: when the max grows from
//                        m to m', the sum so far is multiplied by exp(m - m'). One pass gives both
//                        numbers, and the states of threads, warps and blocks merge the same way.
//                        Two reads of x: 3 transfers. (Flash attention is built on this state.)
//     auto               the row kept on chip: each thread loads its part of the row into
//                        registers once (a warp per row up to 1024 columns, a block per row up to
//                        8192, a cluster of blocks sharing (max, sum) through distributed shared
//                        memory on H100 up to 65536), reduces, and writes from the registers:
//                        x read once, 2 transfers, the copy ceiling in reach.
//   PREDICTION for an H100, written before it ran (measured: docs/learning-path.md, step 7), at
//   16384 x 4096 f32: naive ~0.05x copy, three-pass
//   ~0.6x, online ~0.75x, auto ~0.9x (the family's target). Rows of 65536 (second
//   table): online ~0.6x, auto (clusters of 8 blocks) ~0.85x.
//
// The kernels to read: gpuops_cuda.cuh, core section 1.3 online_softmax and 1.5 the row engine
// (load_cols, row_max / row_sum, cluster_state for the cluster exchange), then section 5: 5.2
// softmax_three_pass and softmax_online, 5.3 softmax_fwd_on_chip, 5.4 and 5.5 (how AUTO picks).
// There is no vendor row: cuDNN's softmax needs -lcudnn, which this project does not link; the
// ceiling is the copy bandwidth.
// Every GPU version is checked against the CPU implementation (gpuops_cpu_softmax_fwd_f32) before
// it is timed. Build: nvcc -O3 -arch=sm_90 -I. examples/07_softmax.cu -o softmax. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_SOFTMAX
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <functional>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using bench::fmt;
using std::string;
using std::vector;

// The naive version: one thread per row, three loops over the row (max, sum, write).
__global__ void softmax_naive_kernel(float *y, const float *x, int64_t rows, int64_t cols) {
  const int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float *xr = x + r * cols;
  float *yr = y + r * cols;
  float m = -INFINITY, s = 0.0f;
  for (int64_t j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
  for (int64_t j = 0; j < cols; ++j) s += expf(xr[j] - m);
  for (int64_t j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) / s;
}

struct version {
  string name;
  std::function<gpuops_status()> run;
  int reps;
};

struct result {
  string best;
  double best_us = NAN, cpu_us = NAN;
  bool ok = true;
};

// One table: the CPU row, then each GPU version validated and timed.
static result run_table(bench::timer &timer, double copy, int64_t rows, int64_t cols, const float *d_x, float *d_y, const vector<float> &x,
                        const vector<version> &versions) {
  const int64_t n = rows * cols;
  const double bytes = 2.0 * (double)n * sizeof(float);
  vector<float> want(n);
  result res;
  res.cpu_us = bench::host_us([&] { return gpuops_cpu_softmax_fwd_f32(want.data(), x.data(), rows, cols); });
  bench::table t;
  t.head = {"version", "time (us)", "GB/s", "x copy", "x cpu", "x prev", "check"};
  auto gbps = [&](double us) { return bytes / (us * 1e3); };
  t.add({"cpu", bench::num(res.cpu_us), bench::num(gbps(res.cpu_us)), bench::num(gbps(res.cpu_us) / copy, "x"), "1.00x", "-", "reference"});
  double prev = res.cpu_us;
  // Tolerance: f32 outputs in [0, 1], relative 3e-5 (the tests' bound), an absolute floor far under any value that matters.
  const check::tolerance tol = {1e-12, 3e-5};
  for (const version &v : versions) {
    check::poison(d_y, n * sizeof(float));
    const gpuops_status st = v.run();
    CHECK_CUDA(cudaDeviceSynchronize());
    string chk;
    double us = NAN;
    if (st != GPUOPS_OK) {
      chk = string("FAIL ") + gpuops_status_string(st);
    } else {
      const vector<float> got = check::to_host(d_y, n);
      chk = check::verdict(check::compare(got.data(), want.data(), n, tol));
      us = 1e3 * timer.median_ms([&] { CHECK_OK(v.run()); }, v.reps);
    }
    res.ok = res.ok && chk == "ok";
    t.add({v.name, bench::num(us), bench::num(gbps(us)), bench::num(gbps(us) / copy, "x"), bench::num(res.cpu_us / us, "x"),
           bench::num(prev / us, "x"), chk});
    if (!isnan(us) && (isnan(res.best_us) || us < res.best_us)) res.best_us = us, res.best = v.name;
    prev = us;
  }
  t.print();
  return res;
}

int main() {
  if (!check::have_gpu()) {
    printf("07_softmax needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  const double copy = timer.copy_gbps(size_t(1) << 30);
  printf("07 softmax along rows, f32; seed %llu (GPUOPS_SEED replays it)\n", (unsigned long long)seed);
  printf("device: %s, %d SMs, %.0f MB L2\n", dev.name, dev.sms, dev.l2_bytes / 1e6);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written)\n", copy);
  fflush(stdout);

  check::rng rng(seed);
  const int64_t n = 16384ll * 4096;  // both tables use 2^26 elements (256 MiB per array)
  vector<float> x(n);
  check::fill_uniform(x, rng, -8.0, 8.0);
  for (int64_t i = 0; i < n; i += 97) x[i] = -INFINITY;  // some masked entries
  float *d_x = check::to_device(x), *d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_y, n * sizeof(float)));

  auto versions = [&](int64_t rows, int64_t cols, bool naive) {
    vector<version> v;
    if (naive)
      v.push_back({"naive (thread per row)",
                   [=] {
                     softmax_naive_kernel<<<(unsigned)((rows + 255) / 256), 256>>>(d_y, d_x, rows, cols);
                     return cudaGetLastError() == cudaSuccess ? GPUOPS_OK : GPUOPS_ERR_CUDA;
                   },
                   5});
    for (gpuops_algo al : {GPUOPS_ALGO_THREE_PASS, GPUOPS_ALGO_ONLINE, GPUOPS_ALGO_AUTO})
      v.push_back({gpuops_algo_name(al), [=] { return gpuops_softmax_fwd_f32(d_y, d_x, rows, cols, al, nullptr); }, 25});
    return v;
  };

  printf("\nrows of 4096: 16384 x 4096\n");
  const result main_res = run_table(timer, copy, 16384, 4096, d_x, d_y, x, versions(16384, 4096, true));
  printf("\nrows of 65536: 1024 x 65536 (AUTO: clusters of 8 blocks on compute capability 9.0, else ONLINE)\n");
  const result long_res = run_table(timer, copy, 1024, 65536, d_x, d_y, x, versions(1024, 65536, false));

  const double gbps = 2.0 * (double)n * sizeof(float) / (main_res.best_us * 1e3);
  const bool ok = main_res.ok && long_res.ok;
  printf("\nresult: 07 softmax | %s | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", main_res.best.c_str(), gbps, gbps / copy,
         main_res.cpu_us / main_res.best_us, ok ? "ok" : "FAIL");
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
  return ok ? 0 : 1;
}
