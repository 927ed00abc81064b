// SPDX-License-Identifier: MIT
// tests/softmax_ops.h - the softmax family by storage type, for the tests and the bench: one call
// of any op (softmax, log_softmax, backward) on the GPU or the CPU for f32, f16 and bf16.
#ifndef GPUOPS_TESTS_SOFTMAX_OPS_H
#define GPUOPS_TESTS_SOFTMAX_OPS_H

#include <stdint.h>

#include "gpuops.h"

enum sm_op { FWD, LOG_FWD, BWD };
static inline const char *op_name(sm_op o) { return o == FWD ? "softmax" : o == LOG_FWD ? "log_softmax" : "softmax_bwd"; }

// One call of any op and type: a = x (forward) or dy, b = y (backward only).
template <class T> struct api;
#define SM_API(T, S)                                                                                                     \
  template <> struct api<T> {                                                                                            \
    static gpuops_status gpu(sm_op o, T *out, const T *a, const T *b, int64_t r, int64_t c, gpuops_algo al,              \
                             gpuops_stream s = nullptr) {                                                                \
      return o == FWD ? gpuops_softmax_fwd_##S(out, a, r, c, al, s)                                                     \
             : o == LOG_FWD ? gpuops_log_softmax_fwd_##S(out, a, r, c, al, s)                                           \
                            : gpuops_softmax_bwd_##S(out, a, b, r, c, al, s);                                           \
    }                                                                                                                    \
    static gpuops_status cpu(sm_op o, T *out, const T *a, const T *b, int64_t r, int64_t c) {                           \
      return o == FWD ? gpuops_cpu_softmax_fwd_##S(out, a, r, c)                                                        \
             : o == LOG_FWD ? gpuops_cpu_log_softmax_fwd_##S(out, a, r, c)                                              \
                            : gpuops_cpu_softmax_bwd_##S(out, a, b, r, c);                                              \
    }                                                                                                                    \
  };
SM_API(float, f32)
SM_API(gpuops_f16, f16)
SM_API(gpuops_bf16, bf16)
#undef SM_API

#endif
