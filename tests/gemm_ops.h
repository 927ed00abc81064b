// SPDX-License-Identifier: MIT
// tests/gemm_ops.h - the tensor-core GEMM family by storage type, for the tests, the bench and the
// examples: one call of gpuops_gemm_* (GPU or CPU) for operands T (gpuops_f16, gpuops_bf16) and
// C of type TC (T or float), and of the linear layer, the MSE loss and the AdamW step for T.
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
    static gpuops_status mse(float *loss, T *dy, const T *y, const T *t, int64_t r, int64_t c, void *ws, size_t wsb,             \
                             gpuops_stream s = nullptr) {                                                                       \
      return gpuops_mse_loss_##S(loss, dy, y, t, r, c, ws, wsb, s);                                                             \
    }                                                                                                                           \
    static gpuops_status cpu_mse(float *loss, T *dy, const T *y, const T *t, int64_t r, int64_t c) {                             \
      return gpuops_cpu_mse_loss_##S(loss, dy, y, t, r, c);                                                                     \
    }                                                                                                                           \
    static gpuops_status adamw(float *w, float *m, float *v, T *w16, const float *g, int64_t n, float lr, float b1, float b2,    \
                               float eps, float wd, int64_t step, gpuops_stream s = nullptr) {                                  \
      return gpuops_adamw_step_##S(w, m, v, w16, g, n, lr, b1, b2, eps, wd, step, s);                                           \
    }                                                                                                                           \
    static gpuops_status cpu_adamw(float *w, float *m, float *v, T *w16, const float *g, int64_t n, float lr, float b1,         \
                                   float b2, float eps, float wd, int64_t step) {                                               \
      return gpuops_cpu_adamw_step_##S(w, m, v, w16, g, n, lr, b1, b2, eps, wd, step);                                          \
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
