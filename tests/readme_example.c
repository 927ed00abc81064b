/* SPDX-License-Identifier: MIT */
/* tests/readme_example.c - the README's C example, built by make test exactly as shown there. */
#include <stdio.h>
#include <cuda_runtime_api.h>
#include "gpuops.h"

int main(void) {
  const int64_t n = 1 << 20;
  float *x, *y;
  if (cudaMalloc((void **)&x, n * sizeof(float)) || cudaMalloc((void **)&y, n * sizeof(float))) return 1;
  cudaMemset(x, 0x3f, n * sizeof(float)); /* every x = 0.747 */
  gpuops_status st = gpuops_gelu_fwd_f32(y, x, n, GPUOPS_GELU_TANH, GPUOPS_ALGO_AUTO, NULL);
  float y0 = 0;
  cudaMemcpy(&y0, y, sizeof y0, cudaMemcpyDeviceToHost); /* waits for the default stream */
  printf("gelu: %s, y[0] = %f\n", gpuops_status_string(st), y0);
  return st != GPUOPS_OK;
}
