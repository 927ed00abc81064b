/* SPDX-License-Identifier: MIT */
/* tests/test_c99.c - gpuops.h as a plain C99 program sees it: built by gcc with
   -std=c99 -pedantic -Wall -Wextra -Werror, with the implementation in this file and a second
   translation unit (c99_other.c) that includes the header without it. Without nvcc every GPU op
   must return GPUOPS_ERR_NO_CUDA for valid arguments, and still check its arguments first. */
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <math.h>
#include <string.h>

#include "harness.h"

/* Defined in c99_other.c: calls the API from a translation unit without the implementation. */
int c99_other_add(float *c, const float *a, const float *b, int n);

int main(void) {
  float a[5] = {1.0f, 2.0f, 3.0f, -4.0f, 0.5f}, b[5] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, c[5];
  gpuops_f16 h[5];
  gpuops_bf16 g[5];
  int8_t q[5];
  int i, ok;

  th_case(strcmp(gpuops_status_string(GPUOPS_ERR_NO_CUDA), gpuops_status_string(GPUOPS_OK)) != 0, "c99: status strings", "");
  th_case(gpuops_cuda_error() == 0, "c99: no CUDA error", "%d", gpuops_cuda_error());

  th_case(gpuops_add_f32(c, a, b, 5, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_NO_CUDA, "c99: GPU op without nvcc says NO_CUDA", "");
  th_case(gpuops_quantize_f32(q, a, 5, 0.0f, 0, NULL, 0, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_INVALID_ARGUMENT,
          "c99: GPU op still checks its arguments", "");
  th_case(gpuops_gelu_fwd_f32(c, a, 0, GPUOPS_GELU_TANH, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_OK, "c99: size 0 is OK", "");

  ok = gpuops_cpu_add_f32(c, a, b, 5) == GPUOPS_OK;
  for (i = 0; i < 5; ++i) ok = ok && c[i] == a[i] + b[i];
  th_case(ok, "c99: cpu add", "");
  th_case(c99_other_add(c, a, b, 5) == 0 && c[3] == -3.5f, "c99: a second translation unit links and calls the API", "");

  for (i = 0; i < 5; ++i) h[i] = gpuops_f32_to_f16(a[i]), g[i] = gpuops_f32_to_bf16(a[i]);
  ok = 1;
  for (i = 0; i < 5; ++i) ok = ok && gpuops_f16_to_f32(h[i]) == a[i] && gpuops_bf16_to_f32(g[i]) == a[i];
  th_case(ok, "c99: half conversions round-trip exact values", "");
  th_case(gpuops_cpu_silu_fwd_f16(h, h, 5) == GPUOPS_OK && fabsf(gpuops_f16_to_f32(h[0]) - 0.7310586f) < 1e-3f, "c99: cpu silu f16 in place",
          "%g", gpuops_f16_to_f32(h[0]));
  th_case(gpuops_cpu_quantize_f32(q, a, 5, 0.5f, 1) == GPUOPS_OK && q[0] == 3 && q[3] == -7 && q[4] == 2, "c99: cpu quantize", "%d %d %d",
          q[0], q[3], q[4]);
  return th_summary();
}
