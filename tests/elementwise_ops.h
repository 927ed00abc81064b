// SPDX-License-Identifier: MIT
// tests/elementwise_ops.h - the elementwise family as a table, for the tests and the bench: every
// op, its inputs and data range, and one call that runs it on the GPU or the CPU for any storage
// type, so that both programs loop over ops x types x versions instead of spelling out each call.
#ifndef GPUOPS_TESTS_ELEMENTWISE_OPS_H
#define GPUOPS_TESTS_ELEMENTWISE_OPS_H

#include <stdint.h>

#include <type_traits>

#include "gpuops.h"

namespace ewt {

// The test rows, generated from the library's registry (GPUOPS__EW_OPS in gpuops.h): one per
// registry row, two for GELU (erf and tanh forms) and for the quantizers (per tensor and per
// channel). EWT_ROWS_<SIG>(X, OP, name, INPUTS, FUSED, LO, HI) calls
// X(ENUM, "name", library function stem, inputs, fused, int8_out, int8_in, variant, lo, hi), where
// variant is GELU's approximation or the quantizers' per-channel flag.
#define EWT_ROWS_PLAIN(X, OP, name, INPUTS, FUSED, LO, HI) X(OP, #name, name, INPUTS, FUSED, false, false, 0, LO, HI)
#define EWT_ROWS_UNARY EWT_ROWS_PLAIN
#define EWT_ROWS_GRAD EWT_ROWS_PLAIN
#define EWT_ROWS_BINARY EWT_ROWS_PLAIN
#define EWT_ROWS_SCALAR EWT_ROWS_PLAIN
#define EWT_ROWS_AXPY EWT_ROWS_PLAIN
#define EWT_ROWS_BINARY_SCALAR EWT_ROWS_PLAIN
#define EWT_ROWS_GELU_FWD(X, OP, name, INPUTS, FUSED, LO, HI) \
  X(GELU_ERF_FWD, "gelu_erf_fwd", name, INPUTS, FUSED, false, false, 0, LO, HI) X(GELU_TANH_FWD, "gelu_tanh_fwd", name, INPUTS, FUSED, false, false, 1, LO, HI)
#define EWT_ROWS_GELU_BWD(X, OP, name, INPUTS, FUSED, LO, HI) \
  X(GELU_ERF_BWD, "gelu_erf_bwd", name, INPUTS, FUSED, false, false, 0, LO, HI) X(GELU_TANH_BWD, "gelu_tanh_bwd", name, INPUTS, FUSED, false, false, 1, LO, HI)
#define EWT_ROWS_QUANTIZE(X, OP, name, INPUTS, FUSED, LO, HI) \
  X(OP, #name, name, INPUTS, FUSED, true, false, 0, LO, HI) X(OP##_PC, #name "_per_channel", name, INPUTS, FUSED, true, false, 1, LO, HI)
#define EWT_ROWS_DEQUANTIZE(X, OP, name, INPUTS, FUSED, LO, HI) \
  X(OP, #name, name, INPUTS, FUSED, false, true, 0, LO, HI) X(OP##_PC, #name "_per_channel", name, INPUTS, FUSED, false, true, 1, LO, HI)
#define EWT_ROWS(X, OP, name, SIG, INPUTS, FUSED, LO, HI, CPU) EWT_ROWS_##SIG(X, OP, name, INPUTS, FUSED, LO, HI)

#define EWT_ENUM(E, str, stem, inputs, fused, i8o, i8i, variant, lo, hi) E,
#define EWT_ENUM_ROW(...) EWT_ROWS(EWT_ENUM, __VA_ARGS__)
enum op { GPUOPS__EW_OPS(EWT_ENUM_ROW) OP_COUNT };

struct info {
  const char *name;
  int inputs;         // floating-point inputs read (axpy reads x and y)
  bool fused;         // has an UNFUSED version
  bool int8_out, int8_in, per_channel;
  double lo, hi;      // test data range of the floating-point inputs
};

inline const info &describe(op o) {
#define EWT_INFO(E, str, stem, inputs, fused, i8o, i8i, variant, lo, hi) {str, inputs, fused != 0, i8o, i8i, (i8o || i8i) && variant, lo, hi},
#define EWT_INFO_ROW(...) EWT_ROWS(EWT_INFO, __VA_ARGS__)
  static const info t[OP_COUNT] = {GPUOPS__EW_OPS(EWT_INFO_ROW)};
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

// One call of each library function, for every float storage type, as overloads gpu_<stem> and
// cpu_<stem> taking (y, a, b, call, variant[, algo, stream]); the op's SIG says which arguments
// the library function takes.
#define EWT_FNS_UNARY(S, T, name)                                                                            \
  inline gpuops_status gpu_##name(T *y, const T *a, const T *, const call &c, int, gpuops_algo al, gpuops_stream st) { \
    return gpuops_##name##_##S(y, a, c.n, al, st);                                                           \
  }                                                                                                          \
  inline gpuops_status cpu_##name(T *y, const T *a, const T *, const call &c, int) { return gpuops_cpu_##name##_##S(y, a, c.n); }
#define EWT_FNS_GRAD(S, T, name)                                                                             \
  inline gpuops_status gpu_##name(T *y, const T *a, const T *b, const call &c, int, gpuops_algo al, gpuops_stream st) { \
    return gpuops_##name##_##S(y, a, b, c.n, al, st);                                                        \
  }                                                                                                          \
  inline gpuops_status cpu_##name(T *y, const T *a, const T *b, const call &c, int) { return gpuops_cpu_##name##_##S(y, a, b, c.n); }
#define EWT_FNS_BINARY EWT_FNS_GRAD
#define EWT_FNS_SCALAR(S, T, name)                                                                           \
  inline gpuops_status gpu_##name(T *y, const T *a, const T *, const call &c, int, gpuops_algo al, gpuops_stream st) { \
    return gpuops_##name##_##S(y, a, c.n, c.s, al, st);                                                      \
  }                                                                                                          \
  inline gpuops_status cpu_##name(T *y, const T *a, const T *, const call &c, int) { return gpuops_cpu_##name##_##S(y, a, c.n, c.s); }
#define EWT_FNS_AXPY EWT_FNS_SCALAR
#define EWT_FNS_BINARY_SCALAR(S, T, name)                                                                    \
  inline gpuops_status gpu_##name(T *y, const T *a, const T *b, const call &c, int, gpuops_algo al, gpuops_stream st) { \
    return gpuops_##name##_##S(y, a, b, c.n, c.s, al, st);                                                   \
  }                                                                                                          \
  inline gpuops_status cpu_##name(T *y, const T *a, const T *b, const call &c, int) { return gpuops_cpu_##name##_##S(y, a, b, c.n, c.s); }
#define EWT_GELU(v) ((v) ? GPUOPS_GELU_TANH : GPUOPS_GELU_ERF)
#define EWT_FNS_GELU_FWD(S, T, name)                                                                         \
  inline gpuops_status gpu_##name(T *y, const T *a, const T *, const call &c, int v, gpuops_algo al, gpuops_stream st) { \
    return gpuops_##name##_##S(y, a, c.n, EWT_GELU(v), al, st);                                              \
  }                                                                                                          \
  inline gpuops_status cpu_##name(T *y, const T *a, const T *, const call &c, int v) { return gpuops_cpu_##name##_##S(y, a, c.n, EWT_GELU(v)); }
#define EWT_FNS_GELU_BWD(S, T, name)                                                                         \
  inline gpuops_status gpu_##name(T *y, const T *a, const T *b, const call &c, int v, gpuops_algo al, gpuops_stream st) { \
    return gpuops_##name##_##S(y, a, b, c.n, EWT_GELU(v), al, st);                                           \
  }                                                                                                          \
  inline gpuops_status cpu_##name(T *y, const T *a, const T *b, const call &c, int v) {                     \
    return gpuops_cpu_##name##_##S(y, a, b, c.n, EWT_GELU(v));                                               \
  }
#define EWT_FNS_QUANTIZE(S, T, name)                                                                         \
  inline gpuops_status gpu_##name(int8_t *q, const T *x, const T *, const call &c, int pc, gpuops_algo al, gpuops_stream st) { \
    if (pc)                                                                                                  \
      return gpuops_##name##_per_channel_##S(q, x, c.scale_c, c.zero_point_c, c.outer, c.channels, c.inner, \
                                             c.workspace, c.workspace_bytes, al, st);                       \
    return gpuops_##name##_##S(q, x, c.n, c.scale, c.zero_point, c.workspace, c.workspace_bytes, al, st);   \
  }                                                                                                          \
  inline gpuops_status cpu_##name(int8_t *q, const T *x, const T *, const call &c, int pc) {                \
    if (pc) return gpuops_cpu_##name##_per_channel_##S(q, x, c.scale_c, c.zero_point_c, c.outer, c.channels, c.inner); \
    return gpuops_cpu_##name##_##S(q, x, c.n, c.scale, c.zero_point);                                       \
  }
#define EWT_FNS_DEQUANTIZE(S, T, name)                                                                       \
  inline gpuops_status gpu_##name(T *x, const int8_t *q, const T *, const call &c, int pc, gpuops_algo al, gpuops_stream st) { \
    if (pc) return gpuops_##name##_per_channel_##S(x, q, c.scale_c, c.zero_point_c, c.outer, c.channels, c.inner, al, st); \
    return gpuops_##name##_##S(x, q, c.n, c.scale, c.zero_point, al, st);                                   \
  }                                                                                                          \
  inline gpuops_status cpu_##name(T *x, const int8_t *q, const T *, const call &c, int pc) {                \
    if (pc) return gpuops_cpu_##name##_per_channel_##S(x, q, c.scale_c, c.zero_point_c, c.outer, c.channels, c.inner); \
    return gpuops_cpu_##name##_##S(x, q, c.n, c.scale, c.zero_point);                                       \
  }
#define EWT_FNS_TYPE(S, T, D, ROW) EWT_FNS_TYPE_(S, T, GPUOPS__EXPAND ROW)
#define EWT_FNS_TYPE_(...) EWT_FNS_TYPE__(__VA_ARGS__)
#define EWT_FNS_TYPE__(S, T, name, SIG) EWT_FNS_##SIG(S, T, name)
#define EWT_FNS_ROW(OP, name, SIG, INPUTS, FUSED, LO, HI, CPU) GPUOPS__FLOAT_TYPES(EWT_FNS_TYPE, (name, SIG))
GPUOPS__EW_OPS(EWT_FNS_ROW)

// Run test op o for storage type T on the GPU or the CPU. The int8 side (the quantizers') is cast
// by overload resolution: y or a is passed as the library function's own pointer type.
template <class T> struct api {
  static gpuops_status gpu(op o, const call &c, gpuops_algo al, gpuops_stream st) {
    const T *b = (const T *)c.b;
    switch (o) {
#define EWT_GPU_CASE(E, str, stem, inputs, fused, i8o, i8i, variant, lo, hi)                                  \
  case E:                                                                                                    \
    return gpu_##stem((std::conditional_t<i8o, int8_t, T> *)c.y, (const std::conditional_t<i8i, int8_t, T> *)c.a, b, c, variant, al, st);
#define EWT_GPU_ROW(...) EWT_ROWS(EWT_GPU_CASE, __VA_ARGS__)
      GPUOPS__EW_OPS(EWT_GPU_ROW)
    default: return GPUOPS_ERR_INVALID_ARGUMENT;
    }
  }
  static gpuops_status cpu(op o, const call &c) {
    const T *b = (const T *)c.b;
    switch (o) {
#define EWT_CPU_CASE(E, str, stem, inputs, fused, i8o, i8i, variant, lo, hi)                                  \
  case E: return cpu_##stem((std::conditional_t<i8o, int8_t, T> *)c.y, (const std::conditional_t<i8i, int8_t, T> *)c.a, b, c, variant);
#define EWT_CPU_ROW(...) EWT_ROWS(EWT_CPU_CASE, __VA_ARGS__)
      GPUOPS__EW_OPS(EWT_CPU_ROW)
    default: return GPUOPS_ERR_INVALID_ARGUMENT;
    }
  }
};

}  // namespace ewt

#endif
