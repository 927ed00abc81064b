// SPDX-License-Identifier: MIT
// examples/06_scan.cu - step 6 of the learning path: prefix scan (prefix sum).
//
// What it teaches
//   y[i] = x[0] + ... + x[i] looks serial: every output depends on every input before it. It is
//   not: addition is associative, so a scan splits into tiles that are scanned in parallel and
//   then joined by the tiles' running totals. The op does one add per element and must read x
//   and write y once (8 bytes per f32 element), so its roofline is the copy bandwidth, the same as
//   vector add's. The versions below differ in how much extra work and memory traffic the join
//   costs, and that is the whole story of their speed.
//
// The kernels to read: gpuops_cuda.cuh, section 4 (4.2 the first three, 4.3 scan_lookback).
//   hillis-steele       scan_hillis_steele_tiles + scan_spine + scan_add_tile_offsets. Each
//                       512-element tile is scanned in shared memory in log2(512) = 9 steps; in
//                       step s every element adds the element 2^s before it (n log n adds, a
//                       barrier per step). Tile totals are scanned by one block, and a third
//                       kernel adds each tile's offset: y is written, read back and written again,
//                       4 accesses per element instead of 2. Prediction on an H100: ~0.3x copy.
//   blelloch            the same three kernels around Blelloch's work-efficient tile scan: an
//                       up-sweep builds a tree of partial sums, a down-sweep pushes prefixes back
//                       down (2n adds), shared indices padded (i + i/32) so the tree's power-of-two
//                       strides do not pile onto one bank. Less shared-memory work, the same 4
//                       accesses per element. Prediction: ~0.35x copy.
//   reduce-then-scan    scan_rts_reduce + scan_spine + scan_rts_downsweep. 1024 blocks each own a
//                       range of 4096-element tiles: kernel 1 only sums them (reads x), one block
//                       scans the 1024 sums, kernel 3 scans its tiles again from its offset (reads
//                       x, writes y). 3 accesses per element; each thread holds 16 elements in
//                       registers, loads them as four 128-bit vectors, and the block scans by warp
//                       shuffles (no shared-memory tree). Prediction: ~0.6x copy.
//   decoupled-lookback  scan_lookback: one pass, 2 accesses per element, like a copy. Each block
//                       takes the next tile number from an atomic counter, scans its tile,
//                       publishes the tile's total, then looks back at the states its predecessors
//                       published (32 at a time, one per lane) until it finds a published running
//                       prefix: the join costs a few L2 round trips per tile, overlapped with other
//                       blocks' loads. The f32 join is a fixed left-to-right fold, so the result
//                       is the same bits every run. Prediction: ~0.85x copy, at or above CUB.
//   cub                 cub::DeviceScan::InclusiveSum, the vendor's single-pass scan, last row.
//
// Every GPU version is checked against the CPU implementation (gpuops_cpu_scan_f32, which sums
// in double) before it is timed; f32 sums round differently in every version, so the check allows
// 1e-5 of the running sum of |x|.
// Build: nvcc -O3 -arch=sm_90 -I. examples/06_scan.cu -o scan. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_SCAN
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cub/cub.cuh>
#include <functional>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using bench::fmt;
using std::string;
using std::vector;

static const int64_t n = (int64_t(1) << 26) + 3;

// "ok", or the first element outside 1e-5 of the running sum of |x| (+ 1e-6).
static string verdict(const vector<float> &got, const vector<float> &want, const vector<float> &x) {
  double absum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    absum += fabs((double)x[i]);
    if (!(fabs((double)got[i] - (double)want[i]) <= 1e-5 * absum + 1e-6))
      return fmt("FAIL at %lld: %.9g, want %.9g", (long long)i, got[i], want[i]);
  }
  return "ok";
}

int main() {
  if (!check::have_gpu()) {
    printf("06_scan needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  const double copy = timer.copy_gbps(size_t(1) << 30);
  printf("06 prefix scan: inclusive sum of n = %lld f32 elements, seed %llu (GPUOPS_SEED replays it)\n", (long long)n,
         (unsigned long long)seed);
  printf("device: %s, %d SMs\n", dev.name, dev.sms);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written); the scan moves 8 bytes per element\n\n", copy);
  fflush(stdout);

  check::rng rng(seed);
  vector<float> x(n), want(n);
  check::fill_uniform(x, rng, -1.0, 1.0);
  float *d_x = check::to_device(x), *d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_y, n * sizeof(float)));
  const double cpu_us = bench::host_us([&] { return gpuops_cpu_scan_f32(want.data(), x.data(), n, GPUOPS_SCAN_INCLUSIVE); });

  size_t ws_bytes = 0;
  const gpuops_algo versions[] = {GPUOPS_ALGO_HILLIS_STEELE, GPUOPS_ALGO_BLELLOCH, GPUOPS_ALGO_REDUCE_THEN_SCAN, GPUOPS_ALGO_DECOUPLED_LOOKBACK};
  for (gpuops_algo a : versions) ws_bytes = std::max(ws_bytes, gpuops_scan_workspace_size(n, a));
  void *d_ws = nullptr;
  CHECK_CUDA(cudaMalloc(&d_ws, ws_bytes));
  size_t cub_bytes = 0;
  CHECK_CUDA(cub::DeviceScan::InclusiveSum(nullptr, cub_bytes, d_x, d_y, (int)n));
  void *d_cub = nullptr;
  CHECK_CUDA(cudaMalloc(&d_cub, cub_bytes));

  bench::table table;
  table.head = {"version", "time (us)", "GB/s", "x copy", "x cpu", "x prev", "check"};
  table.add({"cpu (double sum)", bench::num(cpu_us), bench::num(8.0 * n / (cpu_us * 1e3)), "-", "1.00x", "-", "reference"});
  bool ok = true;
  double prev = cpu_us, best_us = NAN;
  string best;
  auto row = [&](const string &name, const std::function<void()> &run) {
    check::poison(d_y, n * sizeof(float));
    run();
    CHECK_CUDA(cudaDeviceSynchronize());
    const string chk = verdict(check::to_host(d_y, n), want, x);
    ok = ok && chk == "ok";
    const double us = 1e3 * timer.median_ms(run);
    const double gbps = 8.0 * n / (us * 1e3);
    table.add({name, bench::num(us), bench::num(gbps), bench::num(gbps / copy, "x"), bench::num(cpu_us / us, "x"), bench::num(prev / us, "x"), chk});
    prev = us;
    return us;
  };
  for (gpuops_algo a : versions) {
    const double us = row(gpuops_algo_name(a), [&] { CHECK_OK(gpuops_scan_f32(d_y, d_x, n, GPUOPS_SCAN_INCLUSIVE, d_ws, ws_bytes, a, nullptr)); });
    if (!(us >= best_us)) best_us = us, best = gpuops_algo_name(a);
  }
  row("cub DeviceScan::InclusiveSum", [&] {
    size_t b = cub_bytes;
    CHECK_CUDA(cub::DeviceScan::InclusiveSum(d_cub, b, d_x, d_y, (int)n));
  });
  table.print();

  const double gbps = 8.0 * n / (best_us * 1e3);
  printf("result: 06 scan | %s | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", best.c_str(), gbps, gbps / copy, cpu_us / best_us,
         ok ? "ok" : "FAIL");
  for (void *p : {(void *)d_x, (void *)d_y, d_ws, d_cub}) CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}
