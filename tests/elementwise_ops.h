// SPDX-License-Identifier: MIT
// tests/elementwise_ops.h - the elementwise family as a table, for the tests and the bench: every
// op, its inputs and data range, and one call that runs it on the GPU or the CPU for any storage
// type, so that both programs loop over ops x types x versions instead of spelling out each call.
#ifndef GPUOPS_TESTS_ELEMENTWISE_OPS_H
#define GPUOPS_TESTS_ELEMENTWISE_OPS_H

#include <stdint.h>

#include "gpuops.h"

namespace ewt {

enum op {
  ADD, ADD_SCALAR, AXPY, GELU_ERF_FWD, GELU_ERF_BWD, GELU_TANH_FWD, GELU_TANH_BWD, SILU_FWD, SILU_BWD,
  RELU_FWD, RELU_BWD, ADD_MUL_EXP, QUANTIZE, QUANTIZE_PC, DEQUANTIZE, DEQUANTIZE_PC, OP_COUNT
};

struct info {
  const char *name;
  int inputs;         // floating-point inputs read (axpy reads x and y)
  bool fused;         // has an UNFUSED version
  bool int8_out, int8_in, per_channel;
  double lo, hi;      // test data range of the floating-point inputs
};

inline const info &describe(op o) {
  static const info t[OP_COUNT] = {
      {"add", 2, false, false, false, false, -10, 10},
      {"add_scalar", 1, false, false, false, false, -10, 10},
      {"axpy", 2, false, false, false, false, -10, 10},
      {"gelu_erf_fwd", 1, false, false, false, false, -6, 6},
      {"gelu_erf_bwd", 2, false, false, false, false, -6, 6},
      {"gelu_tanh_fwd", 1, false, false, false, false, -6, 6},
      {"gelu_tanh_bwd", 2, false, false, false, false, -6, 6},
      {"silu_fwd", 1, false, false, false, false, -10, 10},
      {"silu_bwd", 2, false, false, false, false, -10, 10},
      {"relu_fwd", 1, false, false, false, false, -1, 1},
      {"relu_bwd", 2, false, false, false, false, -1, 1},
      {"add_mul_exp", 2, true, false, false, false, -0.5, 0.5},
      {"quantize", 1, true, true, false, false, -3, 3},
      {"quantize_per_channel", 1, true, true, false, true, -3, 3},
      {"dequantize", 0, true, false, true, false, 0, 0},
      {"dequantize_per_channel", 0, true, false, true, true, 0, 0},
  };
  return t[o];
}

// Bytes the op must move per element: each input read once, the output written once.
inline double bytes_per_element(op o, int float_size) {
  const info &d = describe(o);
  return (d.int8_out ? 1 : float_size) + (d.int8_in ? 1 : 0) + d.inputs * float_size;
}

// One call's arguments. y is the output (int8 for quantize), a and b the inputs (a is int8 for
// dequantize; axpy reads a = x and updates y in place). Scalars: s (add_scalar's s, axpy's a,
// add_mul_exp's s), scale and zero_point (per tensor) or scale_c, zero_point_c (per channel, on
// the side that runs the op).
struct call {
  void *y = nullptr;
  const void *a = nullptr, *b = nullptr;
  int64_t n = 0, outer = 1, channels = 1, inner = 1;
  float s = 2.0f, scale = 0.02f;
  int32_t zero_point = 3;
  const float *scale_c = nullptr;
  const int32_t *zero_point_c = nullptr;
  void *workspace = nullptr;
  size_t workspace_bytes = 0;
};

template <class T> struct api;
#define EWT_API(S, T)                                                                                        \
  template <> struct api<T> {                                                                                \
    static gpuops_status gpu(op o, const call &c, gpuops_algo al, gpuops_stream st) {                       \
      T *y = (T *)c.y;                                                                                       \
      const T *a = (const T *)c.a, *b = (const T *)c.b;                                                      \
      switch (o) {                                                                                           \
      case ADD: return gpuops_add_##S(y, a, b, c.n, al, st);                                                \
      case ADD_SCALAR: return gpuops_add_scalar_##S(y, a, c.n, c.s, al, st);                                \
      case AXPY: return gpuops_axpy_##S(y, a, c.n, c.s, al, st);                                            \
      case GELU_ERF_FWD: return gpuops_gelu_fwd_##S(y, a, c.n, GPUOPS_GELU_ERF, al, st);                    \
      case GELU_ERF_BWD: return gpuops_gelu_bwd_##S(y, a, b, c.n, GPUOPS_GELU_ERF, al, st);                 \
      case GELU_TANH_FWD: return gpuops_gelu_fwd_##S(y, a, c.n, GPUOPS_GELU_TANH, al, st);                  \
      case GELU_TANH_BWD: return gpuops_gelu_bwd_##S(y, a, b, c.n, GPUOPS_GELU_TANH, al, st);               \
      case SILU_FWD: return gpuops_silu_fwd_##S(y, a, c.n, al, st);                                         \
      case SILU_BWD: return gpuops_silu_bwd_##S(y, a, b, c.n, al, st);                                      \
      case RELU_FWD: return gpuops_relu_fwd_##S(y, a, c.n, al, st);                                         \
      case RELU_BWD: return gpuops_relu_bwd_##S(y, a, b, c.n, al, st);                                      \
      case ADD_MUL_EXP: return gpuops_add_mul_exp_##S(y, a, b, c.n, c.s, al, st);                           \
      case QUANTIZE:                                                                                         \
        return gpuops_quantize_##S((int8_t *)c.y, a, c.n, c.scale, c.zero_point, c.workspace,               \
                                   c.workspace_bytes, al, st);                                               \
      case QUANTIZE_PC:                                                                                      \
        return gpuops_quantize_per_channel_##S((int8_t *)c.y, a, c.scale_c, c.zero_point_c, c.outer,        \
                                               c.channels, c.inner, c.workspace, c.workspace_bytes, al, st); \
      case DEQUANTIZE: return gpuops_dequantize_##S(y, (const int8_t *)c.a, c.n, c.scale, c.zero_point, al, st); \
      case DEQUANTIZE_PC:                                                                                    \
        return gpuops_dequantize_per_channel_##S(y, (const int8_t *)c.a, c.scale_c, c.zero_point_c,         \
                                                 c.outer, c.channels, c.inner, al, st);                      \
      default: return GPUOPS_ERR_INVALID_ARGUMENT;                                                           \
      }                                                                                                      \
    }                                                                                                        \
    static gpuops_status cpu(op o, const call &c) {                                                          \
      T *y = (T *)c.y;                                                                                       \
      const T *a = (const T *)c.a, *b = (const T *)c.b;                                                      \
      switch (o) {                                                                                           \
      case ADD: return gpuops_cpu_add_##S(y, a, b, c.n);                                                    \
      case ADD_SCALAR: return gpuops_cpu_add_scalar_##S(y, a, c.n, c.s);                                    \
      case AXPY: return gpuops_cpu_axpy_##S(y, a, c.n, c.s);                                                \
      case GELU_ERF_FWD: return gpuops_cpu_gelu_fwd_##S(y, a, c.n, GPUOPS_GELU_ERF);                        \
      case GELU_ERF_BWD: return gpuops_cpu_gelu_bwd_##S(y, a, b, c.n, GPUOPS_GELU_ERF);                     \
      case GELU_TANH_FWD: return gpuops_cpu_gelu_fwd_##S(y, a, c.n, GPUOPS_GELU_TANH);                      \
      case GELU_TANH_BWD: return gpuops_cpu_gelu_bwd_##S(y, a, b, c.n, GPUOPS_GELU_TANH);                   \
      case SILU_FWD: return gpuops_cpu_silu_fwd_##S(y, a, c.n);                                             \
      case SILU_BWD: return gpuops_cpu_silu_bwd_##S(y, a, b, c.n);                                          \
      case RELU_FWD: return gpuops_cpu_relu_fwd_##S(y, a, c.n);                                             \
      case RELU_BWD: return gpuops_cpu_relu_bwd_##S(y, a, b, c.n);                                          \
      case ADD_MUL_EXP: return gpuops_cpu_add_mul_exp_##S(y, a, b, c.n, c.s);                               \
      case QUANTIZE: return gpuops_cpu_quantize_##S((int8_t *)c.y, a, c.n, c.scale, c.zero_point);          \
      case QUANTIZE_PC:                                                                                      \
        return gpuops_cpu_quantize_per_channel_##S((int8_t *)c.y, a, c.scale_c, c.zero_point_c, c.outer,    \
                                                   c.channels, c.inner);                                     \
      case DEQUANTIZE: return gpuops_cpu_dequantize_##S(y, (const int8_t *)c.a, c.n, c.scale, c.zero_point); \
      case DEQUANTIZE_PC:                                                                                    \
        return gpuops_cpu_dequantize_per_channel_##S(y, (const int8_t *)c.a, c.scale_c, c.zero_point_c,     \
                                                     c.outer, c.channels, c.inner);                          \
      default: return GPUOPS_ERR_INVALID_ARGUMENT;                                                           \
      }                                                                                                      \
    }                                                                                                        \
  };
EWT_API(f32, float)
EWT_API(f16, gpuops_f16)
EWT_API(bf16, gpuops_bf16)
#undef EWT_API

}  // namespace ewt

#endif
