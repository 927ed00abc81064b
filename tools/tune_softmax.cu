// SPDX-License-Identifier: MIT
// tools/tune_softmax.cu - softmax_fwd_on_chip variants (gpuops_cuda.cuh 5.3: kPrefetch, kFastExp;
// for 16-bit rows on clusters also the block size and the vectors a thread holds) side by side with
// a device-to-device copy of the same bytes in one run, for the AUTO shapes of the bench and rows
// of 65536: each variant is checked against the library's AUTO result first (max |d| / ulp of T),
// then timed with bench::timer (median of 25 after 3 warm-ups, L2 flushed before each).
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_softmax.cu -o build/tune_softmax
#define GPUOPS_ONLY_SOFTMAX
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <cmath>
#include <cstdio>
#include <vector>

using namespace gpuops;

template <class T> float host_f32(T v) {
  if constexpr (sizeof(T) == 4) return (float)v;
  else {
    uint16_t b;
    memcpy(&b, &v, 2);
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
      uint32_t w = (uint32_t)b << 16;
      float f;
      memcpy(&f, &w, 4);
      return f;
    } else {
      return __half2float(v);
    }
  }
}

template <class T> struct shape_run {
  int64_t rows, cols;
  T *x, *y;
  std::vector<T> ref;
  double copy_ms;
};

static bench::timer *g_timer;

template <class T, class K> void try_kernel(shape_run<T> &c, const char *name, K kernel, int threads, int rpb, int C) {
  softmax_params<T> p = {c.y, c.x, nullptr, c.rows, c.cols, true, false, 1};
  static std::atomic<int> known[9];
  int resident = 0;
  if (C > 8) {
    printf("    %-34s clusters of %d: past this tool's table\n", name, C);
    return;
  }
  if (C > 1) {
    for (auto &k : known) k.store(0);
    resident = row_clusters(kernel, threads, C, known);
    if (resident == 0) {
      printf("    %-34s no clusters of %d\n", name, C);
      return;
    }
    p.cluster = C;
  }
  const size_t bytes = (size_t)c.rows * c.cols * sizeof(T);
  cudaMemset(c.y, 0xff, bytes);
  gpuops_status st = launch_rows(kernel, threads, rpb, p, 0, resident);
  cudaError_t e = cudaDeviceSynchronize();
  if (st != GPUOPS_OK || e != cudaSuccess) {
    printf("    %-34s failed: %d %s\n", name, (int)st, cudaGetErrorString(e));
    cudaGetLastError();
    return;
  }
  std::vector<T> got(c.rows * c.cols);
  cudaMemcpy(got.data(), c.y, bytes, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = fabs((double)host_f32(got[i]) - (double)host_f32(c.ref[i]));
    if (!(d <= worst)) worst = d != d ? INFINITY : d;
  }
  cudaFuncAttributes fa;
  cudaFuncGetAttributes(&fa, kernel);
  const double ms = g_timer->median_ms([&] { launch_rows(kernel, threads, rpb, p, 0, resident); });
  printf("    %-34s regs %3d %8.4f ms %7.0f GB/s %6.3fx copy  max|d| vs AUTO %.2e\n", name, fa.numRegs, ms, 2.0 * bytes / ms / 1e6,
         c.copy_ms / ms, worst);
}

template <class T> void run_shape(const char *tname, int64_t rows, int64_t cols) {
  shape_run<T> c;
  c.rows = rows, c.cols = cols;
  const size_t bytes = (size_t)rows * cols * sizeof(T);
  cudaMalloc(&c.x, bytes), cudaMalloc(&c.y, bytes);
  std::vector<float> hf(rows * cols);
  std::vector<T> hx(rows * cols);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < hx.size(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const float f = ((float)(s >> 40) / 16777216.0f) * 16.0f - 8.0f;
    if constexpr (sizeof(T) == 4) hx[i] = f;
    else if constexpr (std::is_same<T, __half>::value) hx[i] = __float2half(f);
    else hx[i] = __float2bfloat16(f);
  }
  cudaMemcpy(c.x, hx.data(), bytes, cudaMemcpyHostToDevice);
  g_timer->settle();
  c.copy_ms = g_timer->median_ms([&] { cudaMemcpyAsync(c.y, c.x, bytes, cudaMemcpyDeviceToDevice, 0); });
  gpuops__softmax_args a = {};
  a.dt = sizeof(T) == 4 ? GPUOPS__F32 : std::is_same<T, __half>::value ? GPUOPS__F16 : GPUOPS__BF16;
  a.op = GPUOPS__SM_FWD, a.out = c.y, a.a = c.x, a.b = nullptr, a.rows = rows, a.cols = cols, a.algo = GPUOPS_ALGO_AUTO, a.stream = 0;
  gpuops__softmax_launch(&a);
  cudaDeviceSynchronize();
  c.ref.resize(rows * cols);
  cudaMemcpy(c.ref.data(), c.y, bytes, cudaMemcpyDeviceToHost);
  const double auto_ms = g_timer->median_ms([&] { gpuops__softmax_launch(&a); });
  printf("%s %lld x %lld: copy %.4f ms (%.0f GB/s); AUTO %.4f ms %.3fx copy\n", tname, (long long)rows, (long long)cols, c.copy_ms,
         2.0 * bytes / c.copy_ms / 1e6, auto_ms, c.copy_ms / auto_ms);
  constexpr int V = 16 / sizeof(T), EL = 8 * V;
  constexpr bool F = sizeof(T) == 2;
  if (cols <= 32 * 32) {
    try_kernel(c, "32x32", softmax_fwd_on_chip<T, 32, 32, false, F>, 256, 8, 1);
  } else if (cols <= 256 * 16) {
    try_kernel(c, "256x16", softmax_fwd_on_chip<T, 256, 16, false, F>, 256, 1, 1);
  } else if (F) {
    const int C = (int)((cols + 256 * EL - 1) / (256 * EL));
    try_kernel(c, "256xEL cl (AUTO)", softmax_fwd_on_chip<T, 256, EL, false, true>, 256, 1, C);
    try_kernel(c, "256xEL cl prefetch", softmax_fwd_on_chip<T, 256, EL, true, true>, 256, 1, C);
    try_kernel(c, "256xEL/2 cl x2", softmax_fwd_on_chip<T, 256, EL / 2, false, true>, 256, 1, 2 * C);
    try_kernel(c, "256xEL/2 cl x2 prefetch", softmax_fwd_on_chip<T, 256, EL / 2, true, true>, 256, 1, 2 * C);
    try_kernel(c, "512xEL/2 cl prefetch", softmax_fwd_on_chip<T, 512, EL / 2, true, true>, 512, 1, C);
    try_kernel(c, "1024xEL/4 cl prefetch", softmax_fwd_on_chip<T, 1024, EL / 4, true, true>, 1024, 1, C);
  } else {
    const int C = (int)((cols + 256 * EL - 1) / (256 * EL));
    try_kernel(c, "256xEL cl", softmax_fwd_on_chip<T, 256, EL>, 256, 1, C);
  }
  cudaFree(c.x), cudaFree(c.y);
}

int main() {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  printf("device: %s\n", p.name);
  bench::timer t;
  g_timer = &t;
  run_shape<__nv_bfloat16>("bf16", 4096, 65536);
  run_shape<__nv_bfloat16>("bf16", 1024, 65536);
  run_shape<__nv_bfloat16>("bf16", 256, 65536);
  run_shape<__nv_bfloat16>("bf16", 512, 32768);
  run_shape<float>("f32", 4096, 65536);
  run_shape<__nv_bfloat16>("bf16", 32768, 4096);
  run_shape<float>("f32", 32768, 4096);
  run_shape<__nv_bfloat16>("bf16", 131072, 1024);
  run_shape<float>("f32", 131072, 1024);
  return 0;
}
