// SPDX-License-Identifier: MIT
// tests/link_main.cu - linking: this unit holds the implementation; link_other.cu includes both
// headers without it and launches its own kernel built from a device helper. One program, two
// translation units, no duplicate symbols.
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"
#include "gpuops_cuda.cuh"
#include "harness.h"

int link_other_gelu(float *y_host, float x);  // link_other.cu

int main(void) {
  int devices = 0;
  th_case(gpuops_status_string(GPUOPS_OK) != 0, "link: two translation units, one implementation", "");
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    th_skip("link: device helper in a user kernel", "no CUDA device");
  } else {
    float y = 0.0f;
    const int rc = link_other_gelu(&y, 1.0f);
    th_case(rc == 0 && y > 0.8411f && y < 0.8413f, "link: device helper in a user kernel", "rc %d, gelu_tanh(1) = %g", rc, y);
  }
  return th_summary();
}
