// SPDX-License-Identifier: MIT
// tests/gemm_ops.h - the tensor-core GEMM family by storage type, for the tests, the bench and the
// examples: one call of gpuops_gemm_* (GPU or CPU) for operands T (gpuops_f16, gpuops_bf16) and
// C of type TC (T or float), and of the linear layer for T.
#ifndef GPUOPS_TESTS_GEMM_OPS_H
#define GPUOPS_TESTS_GEMM_OPS_H

#include <stdint.h>

#include "gpuops.h"

template <class T, class TC> struct gemm_api;
#define GEMM_API(T, TC, S)                                                                                                         \
  template <> struct gemm_api<T, TC> {                                                                                             \
    static gpuops_status gpu(TC *c, const T *a, const T *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, \
                             float alpha, float beta, gpuops_op oa, gpuops_op ob, const gpuops_epilogue *e, gpuops_algo al,         \
                             gpuops_stream s = nullptr) {                                                                          \
      return gpuops_gemm_##S(c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, oa, ob, e, al, s);                                      \
    }                                                                                                                              \
    static gpuops_status cpu(TC *c, const T *a, const T *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, \
                             float alpha, float beta, gpuops_op oa, gpuops_op ob, const gpuops_epilogue *e) {                      \
      return gpuops_cpu_gemm_##S(c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, oa, ob, e);                                         \
    }                                                                                                                              \
  };
GEMM_API(gpuops_f16, gpuops_f16, f16)
GEMM_API(gpuops_bf16, gpuops_bf16, bf16)
GEMM_API(gpuops_f16, float, f16_f32)
GEMM_API(gpuops_bf16, float, bf16_f32)
#undef GEMM_API

template <class T> struct linear_api;
#define LINEAR_API(T, S)                                                                                                        \
  template <> struct linear_api<T> {                                                                                            \
    static gpuops_status fwd(T *y, T *pre, const T *x, const T *w, const T *b, int64_t B, int64_t I, int64_t O,                 \
                             gpuops_activation act, gpuops_algo al, gpuops_stream s = nullptr) {                                \
      return gpuops_linear_fwd_##S(y, pre, x, w, b, B, I, O, act, al, s);                                                       \
    }                                                                                                                           \
    static gpuops_status cpu_fwd(T *y, T *pre, const T *x, const T *w, const T *b, int64_t B, int64_t I, int64_t O,             \
                                 gpuops_activation act) {                                                                       \
      return gpuops_cpu_linear_fwd_##S(y, pre, x, w, b, B, I, O, act);                                                          \
    }                                                                                                                           \
    static gpuops_status bwd(T *dx, float *dw, float *db, const T *dy, const T *pre, const T *x, const T *w, int64_t B,         \
                             int64_t I, int64_t O, gpuops_activation act, void *ws, size_t wsb, gpuops_algo al,                 \
                             gpuops_stream s = nullptr) {                                                                       \
      return gpuops_linear_bwd_##S(dx, dw, db, dy, pre, x, w, B, I, O, act, ws, wsb, al, s);                                    \
    }                                                                                                                           \
    static gpuops_status cpu_bwd(T *dx, float *dw, float *db, const T *dy, const T *pre, const T *x, const T *w, int64_t B,     \
                                 int64_t I, int64_t O, gpuops_activation act) {                                                 \
      return gpuops_cpu_linear_bwd_##S(dx, dw, db, dy, pre, x, w, B, I, O, act);                                                \
    }                                                                                                                           \
  };
LINEAR_API(gpuops_f16, f16)
LINEAR_API(gpuops_bf16, bf16)
#undef LINEAR_API

static inline const char *gemm_act_name(gpuops_activation a) {
  switch (a) {
  case GPUOPS_ACT_GELU_ERF: return "gelu";
  case GPUOPS_ACT_GELU_TANH: return "gelu-tanh";
  case GPUOPS_ACT_SILU: return "silu";
  case GPUOPS_ACT_RELU: return "relu";
  default: return "none";
  }
}

#endif
