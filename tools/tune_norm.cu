// SPDX-License-Identifier: MIT
// tools/tune_norm.cu - norm_fwd_on_chip configurations (gpuops_cuda.cuh 8.3: threads per row TPR,
// vectors per thread N, rows per block) side by side with a device-to-device copy of the same bytes
// in one run, for LayerNorm forward (gamma and beta given) at the bench's row lengths: each
// configuration is checked against the library's AUTO result first (max |d|), then timed with
// bench::timer (median of 25 after 3 warm-ups, L2 flushed before each).
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. -Itests tools/tune_norm.cu -o build/tune_norm
//   usage: tune_norm [--bf16] [--log2 E] [COLS ...]   (2^E elements a shape, default 27; default
//          row lengths 4096 1024 512 8192)
#define GPUOPS_ONLY_NORM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include "check.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace gpuops;

// The host storage type of device type T (same bytes): check.h's to_float / from_float convert it.
template <class T>
using host_t = std::conditional_t<sizeof(T) == 4, float, std::conditional_t<std::is_same<T, __half>::value, gpuops_f16, gpuops_bf16>>;

template <class T> struct shape_run {
  int64_t rows, cols;
  T *x, *y, *gamma, *beta;
  std::vector<host_t<T>> ref;
  double copy_ms;
};

static bench::timer *g_timer;

template <class T, class K> void try_kernel(shape_run<T> &c, const char *name, K kernel, int threads, int rpb) {
  norm_params<T> p = {};
  p.y = c.y, p.x = c.x, p.gamma = c.gamma, p.beta = c.beta, p.rows = c.rows, p.cols = c.cols, p.eps = 1e-5f;
  p.act = GPUOPS_ACT_NONE, p.rms = false, p.vec = true, p.cluster = 1;
  const size_t bytes = (size_t)c.rows * c.cols * sizeof(T);
  cudaMemset(c.y, 0xff, bytes);
  gpuops_status st = launch_rows(kernel, threads, rpb, p, 0);
  cudaError_t e = cudaDeviceSynchronize();
  if (st != GPUOPS_OK || e != cudaSuccess) {
    printf("    %-28s failed: %d %s\n", name, (int)st, cudaGetErrorString(e));
    cudaGetLastError();
    return;
  }
  std::vector<host_t<T>> got(c.rows * c.cols);
  cudaMemcpy(got.data(), c.y, bytes, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = fabs((double)check::to_float(got[i]) - (double)check::to_float(c.ref[i]));
    if (!(d <= worst)) worst = d != d ? INFINITY : d;
  }
  cudaFuncAttributes fa;
  cudaFuncGetAttributes(&fa, kernel);
  int blocks = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0);
  const double ms = g_timer->median_ms([&] { launch_rows(kernel, threads, rpb, p, 0); });
  printf("    %-28s regs %3d blocks/SM %d %8.4f ms %7.0f GB/s %6.3fx copy  max|d| vs AUTO %.2e\n", name, fa.numRegs, blocks, ms,
         2.0 * bytes / ms / 1e6, c.copy_ms / ms, worst);
}

// One configuration: TPR threads a row, N vectors a thread, block_threads<TPR>() / TPR rows a block.
template <class T, int TPR, int N> void config(shape_run<T> &c) {
  constexpr int V = 16 / sizeof(T), BT = block_threads<TPR>();
  if (c.cols > (int64_t)TPR * N * V) return;
  char name[64];
  snprintf(name, sizeof name, "%dx%d (%d rows a block)", TPR, N, BT / TPR);
  try_kernel(c, name, norm_fwd_on_chip<T, TPR, N, false>, BT, BT / TPR);
}

template <class T> void run_shape(const char *tname, int64_t rows, int64_t cols) {
  shape_run<T> c;
  c.rows = rows, c.cols = cols;
  const size_t bytes = (size_t)rows * cols * sizeof(T);
  cudaMalloc(&c.x, bytes), cudaMalloc(&c.y, bytes);
  cudaMalloc(&c.gamma, cols * sizeof(T)), cudaMalloc(&c.beta, cols * sizeof(T));
  std::vector<host_t<T>> hx(rows * cols), hg(cols), hb(cols);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (float)(s >> 40) / 16777216.0f;
  };
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = check::from_float<host_t<T>>(next() * 16.0f - 8.0f + (float)(i / cols % 7));
  for (int64_t i = 0; i < cols; ++i) hg[i] = check::from_float<host_t<T>>(0.5f + next()), hb[i] = check::from_float<host_t<T>>(next() - 0.5f);
  cudaMemcpy(c.x, hx.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(c.gamma, hg.data(), cols * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(c.beta, hb.data(), cols * sizeof(T), cudaMemcpyHostToDevice);
  g_timer->settle();
  c.copy_ms = g_timer->median_ms([&] { cudaMemcpyAsync(c.y, c.x, bytes, cudaMemcpyDeviceToDevice, 0); });
  gpuops__norm_args a = gpuops__norm_make(GPUOPS__NORM_LN_FWD, sizeof(T) == 4 ? GPUOPS__F32 : std::is_same<T, __half>::value ? GPUOPS__F16 : GPUOPS__BF16);
  a.y = c.y, a.x = c.x, a.gamma = c.gamma, a.beta = c.beta, a.rows = rows, a.cols = cols, a.eps = 1e-5f;
  gpuops__norm_launch(&a);
  cudaDeviceSynchronize();
  c.ref.resize(rows * cols);
  cudaMemcpy(c.ref.data(), c.y, bytes, cudaMemcpyDeviceToHost);
  const double auto_ms = g_timer->median_ms([&] { gpuops__norm_launch(&a); });
  printf("%s %lld x %lld: copy %.4f ms (%.0f GB/s); AUTO %.4f ms %.3fx copy\n", tname, (long long)rows, (long long)cols, c.copy_ms,
         2.0 * bytes / c.copy_ms / 1e6, auto_ms, c.copy_ms / auto_ms);
  config<T, 32, 2>(c);
  config<T, 32, 4>(c);
  config<T, 32, 8>(c);
  config<T, 64, 2>(c);
  config<T, 64, 4>(c);
  config<T, 64, 8>(c);
  config<T, 128, 2>(c);
  config<T, 128, 4>(c);
  config<T, 128, 8>(c);
  config<T, 256, 2>(c);
  config<T, 256, 4>(c);
  config<T, 256, 8>(c);
  config<T, 512, 2>(c);
  config<T, 512, 4>(c);
  config<T, 1024, 1>(c);
  config<T, 1024, 2>(c);
  cudaFree(c.x), cudaFree(c.y), cudaFree(c.gamma), cudaFree(c.beta);
}

int main(int argc, char **argv) {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  printf("device: %s\n", p.name);
  bench::timer t;
  g_timer = &t;
  bool only16 = false;
  int log2e = 27;
  std::vector<int64_t> lengths;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--bf16")) only16 = true;
    else if (!strcmp(argv[i], "--log2") && i + 1 < argc) log2e = atoi(argv[++i]);
    else lengths.push_back(atoll(argv[i]));
  }
  if (lengths.empty()) lengths = {4096, 1024, 512, 8192};
  for (int64_t cols : lengths) {
    run_shape<__nv_bfloat16>("bf16", ((int64_t)1 << log2e) / cols, cols);
    if (!only16) run_shape<float>("f32", ((int64_t)1 << log2e) / cols, cols);
  }
  return 0;
}
