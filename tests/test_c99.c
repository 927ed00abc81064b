/* SPDX-License-Identifier: MIT */
/* tests/test_c99.c - gpuops.h as a plain C99 program sees it: built by gcc with
   -std=c99 -pedantic -Wall -Wextra -Werror, with the implementation in this file and a second
   translation unit (c99_other.c) that includes the header without it. Without nvcc every GPU op
   must return GPUOPS_ERR_NO_CUDA for valid arguments, and still check its arguments first. */
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <math.h>
#include <stdlib.h>
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

  /* Every family from plain C: the GPU op says NO_CUDA for valid arguments, checks bad ones, and
     the CPU form computes. */
  {
    float m[6] = {1, 2, 3, 4, 5, 6}, t[6], r[2], s, y[6], eye[4] = {1, 0, 0, 1};
    int32_t v[6] = {0, 1, 1, 3, 7, -1}, vs[6];
    int64_t counts[4];
    enum { WS_BYTES = 1024 };
    char *ws = (char *)malloc(WS_BYTES); /* malloc's alignment (16 on x86-64) suits every workspace */
    th_case(gpuops_reduce_f32(&s, m, 6, GPUOPS_REDUCE_SUM, ws, WS_BYTES, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_NO_CUDA &&
                gpuops_reduce_f32(NULL, m, 6, GPUOPS_REDUCE_SUM, ws, WS_BYTES, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_INVALID_ARGUMENT,
            "c99: reduce without nvcc", "");
    th_case(gpuops_cpu_reduce_f32(&s, m, 6, GPUOPS_REDUCE_SUM) == GPUOPS_OK && s == 21.0f &&
                gpuops_cpu_reduce_rows_f32(r, m, 2, 3, GPUOPS_REDUCE_MAX) == GPUOPS_OK && r[0] == 3.0f && r[1] == 6.0f,
            "c99: cpu reduce", "%g %g %g", s, r[0], r[1]);
    th_case(gpuops_histogram_i32(counts, v, 6, 4, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_NO_CUDA, "c99: histogram without nvcc", "");
    th_case(gpuops_cpu_histogram_i32(counts, v, 6, 4) == GPUOPS_OK && counts[0] == 1 && counts[1] == 2 && counts[2] == 0 && counts[3] == 1,
            "c99: cpu histogram (out-of-range values ignored)", "");
    th_case(gpuops_scan_workspace_size(6, GPUOPS_ALGO_AUTO) <= WS_BYTES &&
                gpuops_scan_i32(vs, v, 6, GPUOPS_SCAN_INCLUSIVE, ws, WS_BYTES, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_NO_CUDA &&
                gpuops_scan_i32(vs, v, 6, GPUOPS_SCAN_INCLUSIVE, ws, 0, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_WORKSPACE,
            "c99: scan without nvcc (and a short workspace refused)", "%zu", gpuops_scan_workspace_size(6, GPUOPS_ALGO_AUTO));
    th_case(gpuops_cpu_scan_i32(vs, v, 6, GPUOPS_SCAN_EXCLUSIVE) == GPUOPS_OK && vs[0] == 0 && vs[5] == 12, "c99: cpu exclusive scan", "%d %d",
            vs[0], vs[5]);
    th_case(gpuops_softmax_fwd_f32(y, m, 2, 3, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_NO_CUDA, "c99: softmax without nvcc", "");
    th_case(gpuops_cpu_softmax_fwd_f32(y, m, 2, 3) == GPUOPS_OK && fabsf(y[0] + y[1] + y[2] - 1.0f) < 1e-6f && y[2] > y[1] && y[1] > y[0],
            "c99: cpu softmax", "");
    th_case(gpuops_transpose_f32(t, m, 2, 3, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_NO_CUDA, "c99: transpose without nvcc", "");
    th_case(gpuops_cpu_transpose_f32(t, m, 2, 3) == GPUOPS_OK && t[0] == 1 && t[1] == 4 && t[4] == 3 && t[5] == 6, "c99: cpu transpose", "");
    th_case(gpuops_matmul_f32(y, m, eye, 3, 2, 2, 2, 2, 2, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_ALGO_AUTO, NULL) == GPUOPS_ERR_NO_CUDA &&
                gpuops_matmul_f32(y, m, eye, 3, 2, 2, 1, 2, 2, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_ALGO_AUTO, NULL) ==
                    GPUOPS_ERR_INVALID_ARGUMENT,
            "c99: matmul without nvcc (and lda < k refused)", "");
    ok = gpuops_cpu_matmul_f32(y, m, eye, 3, 2, 2, 2, 2, 2, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N) == GPUOPS_OK;
    for (i = 0; i < 6; ++i) ok = ok && y[i] == m[i];
    th_case(ok, "c99: cpu matmul by the identity", "");
    free(ws);
  }
  { /* attention: one key gives O = v; the GPU op checks, then says NO_CUDA */
    float aq[8] = {1, 2, 0, 0, 0, 0, 0, 1}, ak[8] = {0.5f, 1, 0, 0, 0, 0, 0, 2}, av[8] = {3, -1, 2, 0, 0, 0, 0, 7}, ao[8], al = 0.0f;
    gpuops_attention_dims d = gpuops_attention_dims_bshd(1, 1, 1, 1, 1, 8), bad = d;
    bad.heads_kv = 0;
    th_case(gpuops_attention_fwd_f32(ao, &al, aq, ak, av, &d, 0.5f, GPUOPS_ATTN_MASK_NONE, NULL, 0, GPUOPS_ALGO_FLASH2, NULL) == GPUOPS_ERR_NO_CUDA &&
                gpuops_attention_fwd_f32(ao, &al, aq, ak, av, &bad, 0.5f, GPUOPS_ATTN_MASK_NONE, NULL, 0, GPUOPS_ALGO_AUTO, NULL) ==
                    GPUOPS_ERR_INVALID_ARGUMENT,
            "c99: attention without nvcc (and heads_kv 0 refused)", "");
    th_case(gpuops_cpu_attention_fwd_f32(ao, &al, aq, ak, av, &d, 0.5f, GPUOPS_ATTN_MASK_CAUSAL) == GPUOPS_OK && memcmp(ao, av, sizeof ao) == 0 &&
                al == 2.25f,
            "c99: cpu attention, one key", "%g %g", ao[0], al);
  }
  return th_summary();
}
