// SPDX-License-Identifier: MIT
// tools/profile_kernels.cu - a few launches of one op at a given size, nothing else, for Nsight
// Compute (ncu --launch-skip 2 --launch-count 1 ...) on the kernel the bench reports slow.
//   usage: profile_kernels matmul M N K [algo] | scan N [algo]     (algo: gpuops_algo's number)
#define GPUOPS_ONLY_MATMUL
#define GPUOPS_ONLY_SCAN
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const bool mm = strcmp(argv[1], "matmul") == 0;
  const int64_t m = atoll(argv[2]), n = mm && argc > 4 ? atoll(argv[3]) : 0, k = mm && argc > 4 ? atoll(argv[4]) : 0;
  const int ai = mm ? 5 : 3;
  const gpuops_algo algo = argc > ai ? (gpuops_algo)atoi(argv[ai]) : GPUOPS_ALGO_AUTO;
  gpuops_status st = GPUOPS_OK;
  if (mm) {
    float *a, *b, *c;
    cudaMalloc(&a, m * k * 4), cudaMalloc(&b, k * n * 4), cudaMalloc(&c, m * n * 4);
    cudaMemset(a, 0, m * k * 4), cudaMemset(b, 0, k * n * 4);
    for (int r = 0; r < 4 && st == GPUOPS_OK; ++r)
      st = gpuops_matmul_f32(c, a, b, m, n, k, k, n, n, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, algo, 0);
  } else {
    float *x, *y;
    void *ws;
    const size_t wsb = gpuops_scan_workspace_size(m, algo);
    cudaMalloc(&x, m * 4), cudaMalloc(&y, m * 4), cudaMalloc(&ws, wsb ? wsb : 16);
    cudaMemset(x, 0, m * 4);
    for (int r = 0; r < 4 && st == GPUOPS_OK; ++r)
      st = gpuops_scan_f32(y, x, m, GPUOPS_SCAN_INCLUSIVE, ws, wsb, algo, 0);
  }
  const cudaError_t e = cudaDeviceSynchronize();
  printf("%s: status %d, %s\n", argv[1], (int)st, cudaGetErrorString(e));
  return st != GPUOPS_OK || e != cudaSuccess;
}
