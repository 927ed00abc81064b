// SPDX-License-Identifier: MIT
// tools/tune_transpose.cu - what VECTORIZED's any-pitch form (gpuops_cuda.cuh 6.3) costs, part by
// part: the same 4096 x 4096 matrix with x, y or both one element past a 16-byte boundary (x:
// loads realigned in registers, or in 4-byte types copied element by element; y: the tile's extra rows and shifted stores), then odd shapes
// (4095 x 4097, 4097 x 4095, 8191 x 8193), each against the whole-chunk form on 4096 x 4096 and
// SHARED_PADDED (the version AUTO took on odd pitches before) on the same call; then matrices of
// a few rows or columns under every version. Each output is
// compared on the device with SHARED_PADDED's before it is timed (bench::timer: median of 25
// after 3 warm-ups, L2 flushed); GB/s counts bytes read + written.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_transpose.cu -o build/tune_transpose
//   usage: tune_transpose [rows cols x_offset y_offset f32|bf16]   (one case, e.g. under ncu)
//          tune_transpose --thin   (the few-rows shapes and small matrices only)
#define GPUOPS_ONLY_TRANSPOSE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace gpuops;

template <class U>
void run(bench::timer &t, double copy, int64_t rows, int64_t cols, int offx, int offy, const char *tn, gpuops__dtype dt) {
  const size_t bytes = (size_t)rows * cols * sizeof(U);
  U *bx, *by, *ref;
  cudaMalloc(&bx, bytes + 64), cudaMalloc(&by, bytes + 64), cudaMalloc(&ref, bytes + 64);
  U *x = bx + offx, *y = by + offy, *r = ref + offy;
  bench::fill_uniform((float *)bx, (int64_t)((bytes + 64) / 4), 7, -1.0f, 1.0f);
  gpuops__tr_args a = {};
  a.dt = dt, a.y = r, a.x = x, a.rows = rows, a.cols = cols, a.ldx = cols, a.ldy = rows, a.algo = GPUOPS_ALGO_SHARED_PADDED;
  gpuops__tr_launch(&a);
  const double padded = t.median_ms([&] { gpuops__tr_launch(&a); });
  a.y = y, a.algo = GPUOPS_ALGO_VECTORIZED;
  cudaMemset(by, 0xff, bytes + 64);
  gpuops__tr_launch(&a);
  const unsigned long long d = bench::differing_bytes(y, r, bytes);
  const double vec = t.median_ms([&] { gpuops__tr_launch(&a); });
  auto x_copy = [&](double ms) { return 2.0 * bytes / ms / 1e6 / copy; };
  printf("  %5lld x %-5lld %-5s x +%d y +%d  %-9s vectorized %7.2f us %6.3fx copy | shared-padded %7.2f us %6.3fx copy | %.2fx %s\n",
         (long long)rows, (long long)cols, tn, offx, offy, transpose_x_whole(x, cols) && transpose_y_whole(y, rows) ? "(whole)" : "(any)", vec * 1e3, x_copy(vec),
         padded * 1e3, x_copy(padded), padded / vec, d == 0 ? "=padded" : "DIFFERS");
  cudaFree(bx), cudaFree(by), cudaFree(ref);
}

// Few rows or few columns: every version on the same matrix (AUTO's rule for such shapes).
template <class U> void skinny(bench::timer &t, double copy, int64_t rows, int64_t cols, const char *tn, gpuops__dtype dt) {
  const size_t bytes = (size_t)rows * cols * sizeof(U);
  U *x, *y, *ref;
  cudaMalloc(&x, bytes), cudaMalloc(&y, bytes), cudaMalloc(&ref, bytes);
  bench::fill_uniform((float *)x, (int64_t)(bytes / 4), 7, -1.0f, 1.0f);
  gpuops__tr_args a = {};
  a.dt = dt, a.y = ref, a.x = x, a.rows = rows, a.cols = cols, a.ldx = cols, a.ldy = rows, a.algo = GPUOPS_ALGO_SHARED_PADDED;
  gpuops__tr_launch(&a);
  printf("  %7lld x %-7lld %-5s", (long long)rows, (long long)cols, tn);
  for (gpuops_algo algo : {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_SHARED_PADDED, GPUOPS_ALGO_VECTORIZED}) {
    a.y = y, a.algo = algo;
    cudaMemset(y, 0xff, bytes);
    gpuops__tr_launch(&a);
    const unsigned long long d = bench::differing_bytes(y, ref, bytes);
    const double ms = t.median_ms([&] { gpuops__tr_launch(&a); });
    printf(" | %s %7.2f us %5.3fx copy%s", gpuops_algo_name(algo), ms * 1e3, 2.0 * bytes / ms / 1e6 / copy, d ? " DIFFERS" : "");
  }
  printf("\n");
  cudaFree(x), cudaFree(y), cudaFree(ref);
}

int main(int argc, char **argv) {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  bench::timer t;
  const double copy = bench::copy_ceiling(t);
  printf("device: %s\n", p.name);
  t.settle();
  if (argc == 6) {  // one case (for a profiler): rows cols offx offy f32|bf16
    const int64_t r = atoll(argv[1]), c = atoll(argv[2]);
    if (argv[5][0] == 'f') run<uint32_t>(t, copy, r, c, atoi(argv[3]), atoi(argv[4]), "f32", GPUOPS__F32);
    else run<uint16_t>(t, copy, r, c, atoi(argv[3]), atoi(argv[4]), "bf16", GPUOPS__BF16);
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "--thin") {  // the interleave's short sides, and small matrices (latency)
    const int64_t thin[][2] = {{1000, 3},     {3, 1000},     {3, 1000000},  {1000000, 3},  {16, 262144}, {262144, 16},
                               {17, 65537},   {24, 65536},   {32, 65536},   {33, 65537},   {65537, 33},  {48, 65536},
                               {63, 65537},   {64, 65536},   {65536, 64},   {33, 4097},    {128, 128},   {256, 256}};
    for (const auto &s : thin) skinny<uint32_t>(t, copy, s[0], s[1], "f32", GPUOPS__F32);
    for (const auto &s : thin) skinny<uint16_t>(t, copy, s[0], s[1], "bf16", GPUOPS__BF16);
    return 0;
  }
  const int64_t shapes[][4] = {{4096, 4096, 0, 0}, {4096, 4096, 1, 0}, {4096, 4096, 0, 1}, {4096, 4096, 1, 1},
                               {4095, 4097, 0, 0}, {4097, 4095, 0, 0}, {8191, 8193, 0, 0}, {16383, 16385, 0, 0}};
  for (const auto &s : shapes) run<uint32_t>(t, copy, s[0], s[1], (int)s[2], (int)s[3], "f32", GPUOPS__F32);
  for (const auto &s : shapes) run<uint16_t>(t, copy, s[0], s[1], (int)s[2], (int)s[3], "bf16", GPUOPS__BF16);
  const int64_t thin[][2] = {{3, 1000000}, {1000000, 3}, {1000, 3}, {3, 1000}, {8, 524288}, {524288, 8},
                             {16, 262144}, {262144, 16}, {33, 65537}, {65537, 33}};
  for (const auto &s : thin) skinny<uint32_t>(t, copy, s[0], s[1], "f32", GPUOPS__F32);
  for (const auto &s : thin) skinny<uint16_t>(t, copy, s[0], s[1], "bf16", GPUOPS__BF16);
  return 0;
}
