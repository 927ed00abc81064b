// SPDX-License-Identifier: MIT
// examples/04_reduction.cu - step 4 of the learning path: parallel reduction (a sum).
//
// What it teaches
//   A sum of n floats reads 4n bytes and does n adds: like vector add it is memory-bound, and its
//   roofline is the read bandwidth (here: bytes read over time, against the copy ceiling of the same
//   run). What makes it harder: the adds depend on each other. A GPU sum is a tree: each block
//   reduces its part to one partial in shared memory, the partials go to the caller's workspace,
//   and a second tiny kernel reduces them in a fixed order. No float atomics anywhere, so the result
//   is the same bits on every run (checked below). The versions, each a fix of the one before
//   (the classic sequence; gpuops_cuda.cuh sections 3.2 and 3.3):
//     interleaved   one element per thread into shared memory, then 8 levels: at level s, threads
//                   with tid % 2s == 0 add s[tid + s]. Every warp stays busy with half, then a
//                   quarter... of its threads active, and % is slow. Prediction: 0.3x copy.
//     sequential    same tree, threads tid < s add s[tid + s]: active threads are contiguous, whole
//                   warps finish early and shared accesses have no bank conflicts. Prediction: 0.4x.
//     first-add     each thread loads two elements and adds them while loading: half the blocks, no
//                   thread idle at the first level. Prediction: 0.6x.
//     warp-shuffle  once 64 values remain, one warp finishes with register shuffles: no barriers
//                   for the last 6 levels. Prediction: 0.65x.
//     warp-reduce   the fast one (AUTO): a grid that fills the GPU once; each thread adds many
//                   elements from 128-bit loads, 4 loads in flight, then a shuffle reduction per
//                   warp and one warp for the block. Loads dominate; the adds hide under them.
//                   Prediction: 0.93x copy, about 1.0x CUB.
//   The tree versions are bound by work per byte (a barrier per level, 256 elements per block);
//   the last one by memory alone. The last row is cub::DeviceReduce::Sum on the same data.
//   Accuracy: f32 accumulation in a tree is far better than one long serial f32 chain; the CPU
//   reference sums in double, and every row is checked within 1e-5 * sum |x|.
//
// The kernels to read: gpuops_cuda.cuh, section 1.3 (the NaN-propagating operators plus, maximum,
// minimum; warp_reduce, block_reduce), 3.1 (thread_reduce_strided), 3.2 (reduce_tree), 3.3
// (reduce_warp, reduce_finish) and 3.5 (reduce_vector).
// Build: nvcc -O3 -arch=sm_90 -I. examples/04_reduction.cu -o reduction. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_REDUCE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cub/cub.cuh>
#include <string.h>

#include <functional>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using bench::fmt;
using std::string;
using std::vector;

static const int64_t n = (int64_t(1) << 26) + 3;

int main() {
  if (!check::have_gpu()) {
    printf("04_reduction needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  const double copy = timer.copy_gbps(size_t(1) << 30);
  printf("04 reduction: sum of n = %lld f32 elements, seed %llu (GPUOPS_SEED replays it)\n", (long long)n, (unsigned long long)seed);
  printf("device: %s, %d SMs\n", dev.name, dev.sms);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written); a sum only reads\n\n", copy);
  fflush(stdout);

  check::rng rng(seed);
  vector<float> x(n);
  check::fill_uniform(x, rng, -1.0, 1.0);
  double asum = 0.0;
  for (float v : x) asum += fabs((double)v);
  float *d_x = check::to_device(x), *d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_out, sizeof(float)));
  size_t ws_bytes = 0;
  const gpuops_algo algos[] = {GPUOPS_ALGO_INTERLEAVED, GPUOPS_ALGO_SEQUENTIAL, GPUOPS_ALGO_FIRST_ADD, GPUOPS_ALGO_WARP_SHUFFLE,
                               GPUOPS_ALGO_WARP_REDUCE, GPUOPS_ALGO_AUTO};
  for (gpuops_algo a : algos) ws_bytes = std::max(ws_bytes, gpuops_reduce_workspace_size(n, a));
  void *d_ws = nullptr;
  CHECK_CUDA(cudaMalloc(&d_ws, ws_bytes));

  float want = 0.0f;
  const double cpu_us = bench::host_us([&] { return gpuops_cpu_reduce_f32(&want, x.data(), n, GPUOPS_REDUCE_SUM); });

  struct version {
    string name;
    std::function<gpuops_status()> run;
  };
  vector<version> versions;
  for (gpuops_algo a : algos)
    versions.push_back({gpuops_algo_name(a), [=] { return gpuops_reduce_f32(d_out, d_x, n, GPUOPS_REDUCE_SUM, d_ws, ws_bytes, a, nullptr); }});
  size_t cub_bytes = 0;
  CHECK_CUDA(cub::DeviceReduce::Sum(nullptr, cub_bytes, d_x, d_out, n));
  void *d_cub = nullptr;
  CHECK_CUDA(cudaMalloc(&d_cub, cub_bytes));
  versions.push_back({"cub::DeviceReduce::Sum", [&] {
                        size_t b = cub_bytes;
                        return cub::DeviceReduce::Sum(d_cub, b, d_x, d_out, n) == cudaSuccess ? GPUOPS_OK : GPUOPS_ERR_CUDA;
                      }});

  bench::table table;
  table.head = {"version", "time (us)", "GB/s read", "x copy", "x cpu", "x prev", "check"};
  const double bytes = 4.0 * (double)n;
  table.add({"cpu (double)", bench::num(cpu_us), bench::num(bytes / (cpu_us * 1e3)), bench::num(bytes / (cpu_us * 1e3) / copy), "1.00x", "-",
             "reference"});
  bool ok = true;
  double prev = cpu_us, best_us = NAN, cub_us = NAN;
  string best;
  for (size_t i = 0; i < versions.size(); ++i) {
    const version &v = versions[i];
    const bool is_cub = i + 1 == versions.size();
    float got[2];
    string chk = "ok";
    for (int k = 0; k < 2; ++k) {  // twice: the same bits both times
      check::poison(d_out, sizeof(float));
      const gpuops_status st = v.run();
      CHECK_CUDA(cudaDeviceSynchronize());
      if (st != GPUOPS_OK) chk = string("FAIL ") + gpuops_status_string(st);
      CHECK_CUDA(cudaMemcpy(&got[k], d_out, sizeof(float), cudaMemcpyDeviceToHost));
    }
    if (chk == "ok" && !(fabs((double)got[0] - (double)want) <= 1e-5 * asum)) chk = fmt("FAIL %.9g, want %.9g", got[0], want);
    if (chk == "ok" && memcmp(&got[0], &got[1], 4) != 0) chk = is_cub ? "ok (bits differ between runs)" : "FAIL not deterministic";
    const double us = chk.rfind("FAIL", 0) == 0 ? NAN : 1e3 * timer.median_ms([&] { CHECK_OK(v.run()); });
    if (!is_cub) ok = ok && chk.rfind("ok", 0) == 0;
    const double gbps = bytes / (us * 1e3);
    table.add({v.name, bench::num(us), bench::num(gbps), fmt("%.3f", gbps / copy), bench::num(cpu_us / us, "x"), bench::num(prev / us, "x"),
               chk});
    prev = us;
    if (is_cub) cub_us = us;
    else if (us < best_us || isnan(best_us)) best_us = us, best = v.name;
  }
  table.print();

  // The other ops of the family, AUTO only: max and min, and a row reduction.
  float mx = 0, mn = 0, gmx = 0, gmn = 0;
  CHECK_OK(gpuops_cpu_reduce_f32(&mx, x.data(), n, GPUOPS_REDUCE_MAX));
  CHECK_OK(gpuops_cpu_reduce_f32(&mn, x.data(), n, GPUOPS_REDUCE_MIN));
  CHECK_OK(gpuops_reduce_f32(d_out, d_x, n, GPUOPS_REDUCE_MAX, d_ws, ws_bytes, GPUOPS_ALGO_AUTO, nullptr));
  CHECK_CUDA(cudaMemcpy(&gmx, d_out, 4, cudaMemcpyDeviceToHost));
  CHECK_OK(gpuops_reduce_f32(d_out, d_x, n, GPUOPS_REDUCE_MIN, d_ws, ws_bytes, GPUOPS_ALGO_AUTO, nullptr));
  CHECK_CUDA(cudaMemcpy(&gmn, d_out, 4, cudaMemcpyDeviceToHost));
  const bool mm_ok = gmx == mx && gmn == mn;
  printf("\nmax %.9g (cpu %.9g), min %.9g (cpu %.9g): %s\n", gmx, mx, gmn, mn, mm_ok ? "ok" : "FAIL");
  ok = ok && mm_ok;
  const int64_t rows = 16384, cols = 4096;  // the first rows * cols elements of x
  vector<float> rwant(rows);
  CHECK_OK(gpuops_cpu_reduce_rows_f32(rwant.data(), x.data(), rows, cols, GPUOPS_REDUCE_SUM));
  float *d_rows = nullptr;
  CHECK_CUDA(cudaMalloc(&d_rows, rows * sizeof(float)));
  CHECK_OK(gpuops_reduce_rows_f32(d_rows, d_x, rows, cols, GPUOPS_REDUCE_SUM, GPUOPS_ALGO_AUTO, nullptr));
  const vector<float> rgot = check::to_host(d_rows, rows);
  int64_t rbad = 0;
  for (int64_t r = 0; r < rows; ++r) rbad += !(fabs((double)rgot[r] - rwant[r]) <= 1e-5 * cols);
  const double rus = 1e3 * timer.median_ms([&] { CHECK_OK(gpuops_reduce_rows_f32(d_rows, d_x, rows, cols, GPUOPS_REDUCE_SUM, GPUOPS_ALGO_AUTO, nullptr)); });
  const double rgbps = 4.0 * rows * cols / (rus * 1e3);
  printf("row sums of %lld x %lld (one block per row): %.1f us, %.0f GB/s read, %.3fx copy: %s\n", (long long)rows, (long long)cols, rus, rgbps,
         rgbps / copy, rbad ? "FAIL" : "ok");
  ok = ok && rbad == 0;

  const double gbps = bytes / (best_us * 1e3);
  printf("best: %s at %.3fx cub::DeviceReduce::Sum\n", best.c_str(), cub_us / best_us);
  printf("result: 04 reduction | %s | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", best.c_str(), gbps, gbps / copy, cpu_us / best_us,
         ok ? "ok" : "FAIL");
  for (void *p : {(void *)d_x, (void *)d_out, d_ws, d_cub, (void *)d_rows}) CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}
