// SPDX-License-Identifier: MIT
// tools/race_norm_bwd.cu - the norm backward's row views (norm_bwd_on_chip's kPhased: the partials
// of dgamma and dbeta by column in shared memory, ordered row after row by the row's barriers)
// under compute-sanitizer's racecheck, which does not finish the whole of test_norm in minutes:
// AUTO's LayerNorm, RMSNorm and LN + GELU backwards on rows that are not whole 16-byte vectors, one
// length per configuration (a warp, 64 to 1024 threads a row, 16 elements a thread), f32 and bf16.
// Results are not checked here (tests/test_norm does): this only launches.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/race_norm_bwd.cu -o build/race_norm_bwd
//   run:   compute-sanitizer --tool racecheck build/race_norm_bwd
#define GPUOPS_ONLY_NORM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cuda_runtime.h>
#include <stdio.h>

int main() {
  const int64_t rows = 37, lengths[] = {3, 37, 301, 1001, 2047, 4097, 6001, 12289};
  const int64_t most = 12289 * rows;
  void *dx, *dy, *x, *g, *b, *dg, *db, *mean, *rstd, *ws;
  size_t wsb = 0;
  for (int64_t c : lengths) wsb = gpuops_norm_bwd_workspace_size(rows, c) > wsb ? gpuops_norm_bwd_workspace_size(rows, c) : wsb;
  cudaMalloc(&dx, most * 4), cudaMalloc(&dy, most * 4), cudaMalloc(&x, most * 4), cudaMalloc(&g, 12289 * 4), cudaMalloc(&b, 12289 * 4);
  cudaMalloc(&dg, 12289 * 4), cudaMalloc(&db, 12289 * 4), cudaMalloc(&mean, rows * 4), cudaMalloc(&rstd, rows * 4), cudaMalloc(&ws, wsb);
  cudaMemset(dy, 0, most * 4), cudaMemset(x, 0, most * 4), cudaMemset(g, 0, 12289 * 4), cudaMemset(b, 0, 12289 * 4);
  cudaMemset(mean, 0, rows * 4), cudaMemset(rstd, 0, rows * 4);
  int bad = 0;
  for (int64_t c : lengths) {
    gpuops_status s[6];
    s[0] = gpuops_layernorm_bwd_f32((float *)dx, (float *)dg, (float *)db, (const float *)dy, (const float *)x, (const float *)mean, (const float *)rstd,
                                    (const float *)g, rows, c, ws, wsb, GPUOPS_ALGO_AUTO, 0);
    s[1] = gpuops_rmsnorm_bwd_f32((float *)dx, (float *)dg, (const float *)dy, (const float *)x, (const float *)rstd, (const float *)g, rows, c, ws, wsb,
                                  GPUOPS_ALGO_AUTO, 0);
    s[2] = gpuops_layernorm_gelu_bwd_f32((float *)dx, (float *)dg, (float *)db, (const float *)dy, (const float *)x, (const float *)mean, (const float *)rstd,
                                         (const float *)g, (const float *)b, rows, c, GPUOPS_GELU_TANH, ws, wsb, GPUOPS_ALGO_AUTO, 0);
    s[3] = gpuops_layernorm_bwd_bf16((gpuops_bf16 *)dx, (gpuops_bf16 *)dg, (gpuops_bf16 *)db, (const gpuops_bf16 *)dy, (const gpuops_bf16 *)x,
                                     (const float *)mean, (const float *)rstd, (const gpuops_bf16 *)g, rows, c, ws, wsb, GPUOPS_ALGO_AUTO, 0);
    s[4] = gpuops_rmsnorm_bwd_bf16((gpuops_bf16 *)dx, (gpuops_bf16 *)dg, (const gpuops_bf16 *)dy, (const gpuops_bf16 *)x, (const float *)rstd,
                                   (const gpuops_bf16 *)g, rows, c, ws, wsb, GPUOPS_ALGO_AUTO, 0);
    s[5] = gpuops_layernorm_gelu_bwd_bf16((gpuops_bf16 *)dx, (gpuops_bf16 *)dg, (gpuops_bf16 *)db, (const gpuops_bf16 *)dy, (const gpuops_bf16 *)x,
                                          (const float *)mean, (const float *)rstd, (const gpuops_bf16 *)g, (const gpuops_bf16 *)b, rows, c, GPUOPS_GELU_TANH,
                                          ws, wsb, GPUOPS_ALGO_AUTO, 0);
    for (gpuops_status v : s) bad += v != GPUOPS_OK;
  }
  const cudaError_t e = cudaDeviceSynchronize();
  printf("%d calls refused, %s\n", bad, cudaGetErrorString(e));
  return bad != 0 || e != cudaSuccess;
}
