// SPDX-License-Identifier: MIT
// tests/attention_ops.h - the attention family by storage type, for the tests, the bench and the
// example: one call of gpuops_attention_{fwd,bwd}_* (GPU or CPU) for T (float, gpuops_f16,
// gpuops_bf16), and the FLOP counts flash attention's papers use.
#ifndef GPUOPS_TESTS_ATTENTION_OPS_H
#define GPUOPS_TESTS_ATTENTION_OPS_H

#include <stdint.h>

#include "gpuops.h"

template <class T> struct attn_api;
#define ATTN_API(T, S)                                                                                                          \
  template <> struct attn_api<T> {                                                                                              \
    static gpuops_status fwd(T *o, float *lse, const T *q, const T *k, const T *v, const gpuops_attention_dims *d, float sc,     \
                             gpuops_attention_mask m, void *ws, size_t wsb, gpuops_algo al, gpuops_stream s = nullptr) {        \
      return gpuops_attention_fwd_##S(o, lse, q, k, v, d, sc, m, ws, wsb, al, s);                                               \
    }                                                                                                                           \
    static gpuops_status bwd(T *dq, T *dk, T *dv, const T *dout, const T *q, const T *k, const T *v, const T *o, const float *lse, \
                             const gpuops_attention_dims *d, float sc, gpuops_attention_mask m, void *ws, size_t wsb,           \
                             gpuops_algo al, gpuops_stream s = nullptr) {                                                      \
      return gpuops_attention_bwd_##S(dq, dk, dv, dout, q, k, v, o, lse, d, sc, m, ws, wsb, al, s);                             \
    }                                                                                                                           \
    static gpuops_status cpu_fwd(T *o, float *lse, const T *q, const T *k, const T *v, const gpuops_attention_dims *d, float sc, \
                                 gpuops_attention_mask m) {                                                                     \
      return gpuops_cpu_attention_fwd_##S(o, lse, q, k, v, d, sc, m);                                                           \
    }                                                                                                                           \
    static gpuops_status cpu_bwd(T *dq, T *dk, T *dv, const T *dout, const T *q, const T *k, const T *v, const T *o,           \
                                 const float *lse, const gpuops_attention_dims *d, float sc, gpuops_attention_mask m) {         \
      return gpuops_cpu_attention_bwd_##S(dq, dk, dv, dout, q, k, v, o, lse, d, sc, m);                                         \
    }                                                                                                                           \
  };
ATTN_API(float, f32)
ATTN_API(gpuops_f16, f16)
ATTN_API(gpuops_bf16, bf16)
#undef ATTN_API

// Floating-point operations as flash attention's papers count them: 4 B H Sq Sk D for the
// forward (two matrix products), half of it causal (Sq == Sk), 2.5x the forward for the backward.
inline double attn_flops(const gpuops_attention_dims &d, bool causal, bool bwd) {
  double f = 4.0 * (double)d.batch * (double)d.heads_q * (double)d.seqlen_q * (double)d.seqlen_k * (double)d.head_dim;
  if (causal) f *= 0.5;
  return bwd ? 2.5 * f : f;
}

// Elements from the first to one past the last of a [n0, n1, n2, D] tensor with strides st.
inline int64_t attn_extent(const int64_t st[3], int64_t n0, int64_t n1, int64_t n2, int64_t D) {
  if (n0 == 0 || n1 == 0 || n2 == 0) return 0;
  return (n0 - 1) * st[0] + (n1 - 1) * st[1] + (n2 - 1) * st[2] + D;
}

#endif
