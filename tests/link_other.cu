// SPDX-License-Identifier: MIT
// tests/link_other.cu - a user's translation unit: both headers, no implementation, its own kernel.
#include "gpuops.h"
#include "gpuops_cuda.cuh"

__global__ void user_kernel(float *y, float x) { *y = gpuops::gelu_tanh(x); }

int link_other_gelu(float *y_host, float x) {
  float *y = nullptr;
  if (cudaMalloc(&y, sizeof(float)) != cudaSuccess) return 1;
  user_kernel<<<1, 1>>>(y, x);
  const int rc = cudaMemcpy(y_host, y, sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess;
  cudaFree(y);
  return rc;
}
