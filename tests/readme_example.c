/* SPDX-License-Identifier: MIT */
/* tests/readme_example.c - the README's C example, built by make test exactly as shown there. */
#include <stdio.h>
#include <cuda_runtime_api.h>
#include "gpuops.h"

int main(void) {
  const int64_t n = 1 << 20;
  float *x = NULL, *y = NULL, y0 = 0;
  gpuops_status st = GPUOPS_OK;
  cudaError_t err = cudaMalloc((void **)&x, n * sizeof(float));
  if (err == cudaSuccess) err = cudaMalloc((void **)&y, n * sizeof(float));
  if (err == cudaSuccess) err = cudaMemset(x, 0x3f, n * sizeof(float)); /* every x = 0.747 */
  if (err == cudaSuccess) {
    st = gpuops_gelu_fwd_f32(y, x, n, GPUOPS_GELU_TANH, GPUOPS_ALGO_AUTO, NULL);
    err = cudaMemcpy(&y0, y, sizeof y0, cudaMemcpyDeviceToHost); /* waits for the default stream */
  }
  if (err == cudaSuccess)
    printf("gelu: %s, y[0] = %f\n", gpuops_status_string(st), y0);
  else
    fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
  cudaFree(x);
  cudaFree(y);
  return err != cudaSuccess || st != GPUOPS_OK;
}
