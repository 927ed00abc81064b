// SPDX-License-Identifier: MIT
// tools/tune_transpose.cu - the launch shape of transpose_vectorized (gpuops_cuda.cuh 6.3): the
// library's persistent grid (one resident wave of blocks walking the tiles, each prefetching its
// next tile) against one block per 64 x 64 tile (the same kernel: its loop then runs once), the
// question tools/tune_engine answered for the elementwise engine (there: one block per tile +4-8%).
// Each flat run's output is compared on the device with the library's AUTO output before it is
// timed (bench::timer: median of 25 after 3 warm-ups, L2 flushed); GB/s counts bytes read + written.
// Measured on an NVIDIA H100 80GB HBM3 on 2026-11-22 (build/tune_transpose, x copy, persistent ->
// one block per tile): 16384^2 f32
// 0.922 -> 0.964, bf16 0.879 -> 0.923; 8192^2 f32 0.904 -> 0.939; 4096^2 f32 0.840 -> 0.863;
// 16384 x 1024 f32 0.731 -> 0.858. Now the library's launch, so both columns read the same.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_transpose.cu -o build/tune_transpose
#define GPUOPS_ONLY_TRANSPOSE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <cstdio>

using namespace gpuops;

template <class U> void run(bench::timer &t, double copy, int64_t rows, int64_t cols, const char *tn, gpuops__dtype dt) {
  const size_t bytes = (size_t)rows * cols * sizeof(U);
  U *x, *y, *ref;
  cudaMalloc(&x, bytes), cudaMalloc(&y, bytes), cudaMalloc(&ref, bytes);
  bench::fill_uniform((float *)x, (int64_t)(bytes / 4), 7, -1.0f, 1.0f);
  gpuops__tr_args a = {};
  a.dt = dt, a.y = ref, a.x = x, a.rows = rows, a.cols = cols, a.ldx = cols, a.ldy = rows, a.algo = GPUOPS_ALGO_AUTO;
  gpuops__tr_launch(&a);
  const double lib = t.median_ms([&] { gpuops__tr_launch(&a); });
  const transpose_args<U> p = {y, x, rows, cols, cols, rows};
  const int64_t tiles = ((rows + 63) / 64) * ((cols + 63) / 64);
  cudaMemset(y, 0xff, bytes);
  transpose_vectorized<U><<<(unsigned)tiles, 256>>>(p);
  const unsigned long long d = bench::differing_bytes(y, ref, bytes);
  const double flat = t.median_ms([&] { transpose_vectorized<U><<<(unsigned)tiles, 256>>>(p); });
  auto x_copy = [&](double ms) { return 2.0 * bytes / ms / 1e6 / copy; };
  printf("  %6lld x %-6lld %-5s persistent (library) %8.4f ms %6.3fx copy | one block per tile (%lld) %8.4f ms %6.3fx copy %s\n",
         (long long)rows, (long long)cols, tn, lib, x_copy(lib), (long long)tiles, flat, x_copy(flat), d == 0 ? "=AUTO" : "DIFFERS");
  cudaFree(x), cudaFree(y), cudaFree(ref);
}

int main() {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  bench::timer t;
  const double copy = bench::copy_ceiling(t);
  printf("device: %s\n", p.name);
  t.settle();
  for (int64_t n : {4096, 8192, 16384}) {
    run<uint32_t>(t, copy, n, n, "f32", GPUOPS__F32);
    run<uint16_t>(t, copy, n, n, "bf16", GPUOPS__BF16);
  }
  run<uint32_t>(t, copy, 16384, 1024, "f32", GPUOPS__F32);
  return 0;
}
