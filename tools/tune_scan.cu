// SPDX-License-Identifier: MIT
// tools/tune_scan.cu - decoupled look-back configurations (gpuops_cuda.cuh 4.3, scan_lookback_config)
// side by side with cub::DeviceScan::InclusiveSum and a device-to-device cudaMemcpy in one run, for
// choosing scan_lookback_default and scan_lookback_short (4.4). f32, i32, i64 inclusive at n = 2^24
// and 2^28 by default (L2 flushed before each run).
// Each candidate is checked before it is timed: integers bit for bit against CUB; f32 against a
// CPU double-precision scan (|d| <= 1e-3 |ref| + 1e-3 on data in [0, 1)), and "=def" marks a
// result bit for bit equal to the default configuration's (expected for the same tile shape).
// Times: bench::timer (median of 25 runs after 3 warm-ups, L2 flushed before each; the tuning steps
// of 2026-11-21 in docs/performance.md were timed with a median of 15 and no flush), each run
// including the states' clear.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_scan.cu -o build/tune_scan
//   usage: build/tune_scan [log2 n ...]      (default 24 28)
#define GPUOPS_ONLY_SCAN
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <functional>
#include <type_traits>
#include <vector>

using namespace gpuops;

// Candidates: scan_lookback_config<threads, rounds, min blocks per SM, backoff ns, i64 acq/rel,
// staged in shared memory, groups>. The history of the choice: docs/performance.md, "Prefix scan"
// and "Design decisions by kernel".
template <class T> using K0 = scan_lookback_default<T>;  // the library's (first: "=def" compares with it)
template <class T> using K1 = scan_lookback_registers<T>;  // the fallback: tiles in registers
using K2 = scan_lookback_config<512, 8, 3, 0, false, true, 4>;    // staged: 64 KB tiles of 512 threads, 3 blocks
using K3 = scan_lookback_config<512, 12, 2, 0, false, true, 4>;   // staged: 96 KB tiles of 512 threads, 2 blocks
using K4 = scan_lookback_config<384, 16, 2, 0, false, true, 4>;   // staged: 96 KB tiles of 384 threads
using K5 = scan_lookback_config<256, 16, 3, 0, false, true, 4>;   // staged: 64 KB tiles, 3 blocks
using K6 = scan_lookback_config<256, 20, 2, 0, false, true, 4>;   // staged: 80 KB tiles, 2 blocks
using K7 = scan_lookback_config<128, 48, 2, 0, false, true, 4>;   // staged: 96 KB tiles of 128 threads
using K8 = scan_lookback_config<128, 12, 8, 0, false, true, 4>;   // staged: 24 KB tiles, 8 blocks (short inputs)
using K9 = scan_lookback_config<128, 16, 6, 0, false, true, 4>;   // staged: 32 KB tiles, 6 blocks
using K10 = scan_lookback_config<256, 8, 6, 0, false, true, 4>;   // staged: 32 KB tiles of 256 threads, 6 blocks
using K11 = scan_lookback_config<256, 12, 4, 0, false, true, 4>;  // staged: 48 KB tiles, 4 blocks
using K12 = scan_lookback_config<128, 24, 4, 0, false, true, 4>;  // staged: 48 KB tiles of 128 threads, 4 blocks
template <class T> using K13 = scan_lookback_short<T>;         // the library's short inputs: 16 KB tiles, 8 blocks
using K14 = scan_lookback_config<256, 4, 6, 0, false, true, 4>;   // staged: 16 KB tiles of 256 threads, 6 blocks
using K15 = scan_lookback_config<128, 4, 8, 0, false, true, 4>;   // staged: 8 KB tiles, 8 blocks (not for i64: below the workspace's tile)

template <class C> const char *cname() {
  static char s[64];
  snprintf(s, sizeof s, "%dx%d b%d nap%d%s%s g%d", C::kThreads, C::kRounds, C::kMinBlocks, C::kBackoffNs, C::kAcqRel ? " acqrel" : "",
           C::kStaged ? " smem" : "", C::kGroups);
  return s;
}

// The bench's timer (bench/harness.h): median of 25 runs after 3 warm-ups, L2 flushed before each.
static float median_ms(const std::function<void()> &f) {
  static bench::timer t;
  return (float)t.median_ms(f);
}

template <class T> struct ctx {
  int64_t n;
  T *x, *y;
  unsigned char *ws;
  std::vector<T> hx, ref, got, def;  // input; CUB's output (integers); a candidate's; the default's (f32)
  float copy_ms, cub_ms;
};

static bool check_f32(const std::vector<float> &x, const std::vector<float> &y, double &worst) {
  double acc = 0;
  worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    acc += x[i];
    const double d = fabs((double)y[i] - acc);
    if (!(d <= 1e-3 * fabs(acc) + 1e-3)) return false;  // NaN fails
    worst = std::max(worst, d / (fabs(acc) + 1e-30));
  }
  return true;
}

template <class T, class Cfg> void try_config(ctx<T> &c) {
  const size_t bytes = (size_t)c.n * sizeof(T);
  cudaMemset(c.y, 0xff, bytes);  // poison: NaN in f32
  gpuops_status st = scan_lookback_run<Cfg, T>(c.y, c.x, c.n, false, c.ws, 0);
  cudaError_t e = cudaDeviceSynchronize();
  cudaFuncAttributes fa;
  cudaFuncGetAttributes(&fa, scan_lookback<T, true, Cfg>);
  int occ = 0;  // resident blocks per SM (whether MIN_BLOCKS was met)
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, scan_lookback<T, true, Cfg>, Cfg::kThreads, Cfg::template smem<T>());
  if (st != GPUOPS_OK || e != cudaSuccess) {
    printf("  %-26s failed: status %d, %s\n", cname<Cfg>(), (int)st, cudaGetErrorString(e));
    cudaGetLastError();
    return;
  }
  cudaMemcpy(c.got.data(), c.y, bytes, cudaMemcpyDeviceToHost);
  bool ok;
  char note[48] = "exact";
  if constexpr (std::is_same<T, float>::value) {
    double worst;
    ok = check_f32(c.hx, c.got, worst);
    if (c.def.empty()) c.def = c.got;  // K0 runs first
    snprintf(note, sizeof note, "rel %.1e%s", worst, memcmp(c.got.data(), c.def.data(), bytes) ? "" : " =def");
  } else {
    ok = memcmp(c.got.data(), c.ref.data(), bytes) == 0;
  }
  if (!ok) {
    printf("  %-26s regs %3d  WRONG RESULT\n", cname<Cfg>(), fa.numRegs);
    return;
  }
  const float ms = median_ms([&] { scan_lookback_run<Cfg, T>(c.y, c.x, c.n, false, c.ws, 0); });
  const double gbs = 2.0 * bytes / ms / 1e6;
  printf("  %-26s regs %3d local %3d B blk/SM %2d %8.4f ms %7.0f GB/s %6.3fx copy %6.3fx cub  %s\n", cname<Cfg>(), fa.numRegs,
         (int)fa.localSizeBytes, occ, ms, gbs, c.copy_ms / ms, c.cub_ms / ms, note);
}

template <class T> void run_type(const char *name, int64_t n) {
  ctx<T> c;
  c.n = n;
  const size_t bytes = (size_t)n * sizeof(T);
  // States for tiles of 256 elements or more (+ 2 for a partial tile and the offset), 24 B each.
  const size_t wsb = GPUOPS__SCAN_LB_HEADER + ((size_t)n / 256 + 2) * GPUOPS__SCAN_LB_STATE_BYTES;
  if (cudaMalloc(&c.x, bytes) != cudaSuccess || cudaMalloc(&c.y, bytes) != cudaSuccess || cudaMalloc(&c.ws, wsb) != cudaSuccess) {
    printf("%s n=%lld: out of device memory\n", name, (long long)n);
    exit(1);
  }
  c.hx.resize(n), c.got.resize(n);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (auto &v : c.hx) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    if constexpr (std::is_same<T, float>::value) v = (float)(s >> 40) / 16777216.0f;  // [0, 1)
    else v = (T)s;                                                                   // wraps: every bit matters
  }
  cudaMemcpy(c.x, c.hx.data(), bytes, cudaMemcpyHostToDevice);
  c.copy_ms = median_ms([&] { cudaMemcpyAsync(c.y, c.x, bytes, cudaMemcpyDeviceToDevice, 0); });
  void *tmp = nullptr;
  size_t tmpb = 0;
  cub::DeviceScan::InclusiveSum(tmp, tmpb, c.x, c.y, (int)n);
  cudaMalloc(&tmp, tmpb);
  auto cub_run = [&] { cub::DeviceScan::InclusiveSum(tmp, tmpb, c.x, c.y, (int)n); };
  cub_run();
  cudaDeviceSynchronize();
  if constexpr (!std::is_same<T, float>::value) {
    c.ref.resize(n);
    cudaMemcpy(c.ref.data(), c.y, bytes, cudaMemcpyDeviceToHost);
  }
  c.cub_ms = median_ms(cub_run);
  printf("%s inclusive n = 2^%d: copy %.4f ms %.0f GB/s; cub %.4f ms %.0f GB/s %.3fx copy\n", name, (int)log2((double)n),
         c.copy_ms, 2.0 * bytes / c.copy_ms / 1e6, c.cub_ms, 2.0 * bytes / c.cub_ms / 1e6, c.copy_ms / c.cub_ms);
  try_config<T, K0<T>>(c), try_config<T, K1<T>>(c), try_config<T, K2>(c), try_config<T, K3>(c), try_config<T, K4>(c),
      try_config<T, K5>(c), try_config<T, K6>(c), try_config<T, K7>(c), try_config<T, K8>(c), try_config<T, K9>(c), try_config<T, K10>(c),
      try_config<T, K11>(c), try_config<T, K12>(c), try_config<T, K13<T>>(c), try_config<T, K14>(c);
  if constexpr (sizeof(T) < 8) try_config<T, K15>(c);
  cudaFree(tmp), cudaFree(c.x), cudaFree(c.y), cudaFree(c.ws);
}

int main(int argc, char **argv) {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    printf("no CUDA device\n");
    return 1;
  }
  printf("device: %s, %d SMs; columns: config (threads x rounds, min blocks/SM, first backoff ns), registers,\n"
         "spilled bytes, resident blocks/SM, median ms, GB/s (2 n sizeof(T) / time), x copy, x cub, check\n",
         p.name, p.multiProcessorCount);
  std::vector<int> lg;
  for (int i = 1; i < argc; ++i) lg.push_back(atoi(argv[i]));
  if (lg.empty()) lg = {24, 28};
  for (int l : lg) {
    const int64_t n = (int64_t)1 << l;
    run_type<float>("f32", n);
    run_type<uint32_t>("i32", n);
    run_type<uint64_t>("i64", n);
  }
  return 0;
}
