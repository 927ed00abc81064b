/* SPDX-License-Identifier: MIT */
/* tests/c99_other.c - a second C translation unit: the header without the implementation. */
#include "gpuops.h"

int c99_other_add(float *c, const float *a, const float *b, int n) {
  return gpuops_cpu_add_f32(c, a, b, n) == GPUOPS_OK ? 0 : 1;
}
