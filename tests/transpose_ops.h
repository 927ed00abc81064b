// SPDX-License-Identifier: MIT
// tests/transpose_ops.h - the transpose entry points of every storage type behind one template, for
// the tests, the bench and the example, so that they loop over types x versions.
#ifndef GPUOPS_TESTS_TRANSPOSE_OPS_H
#define GPUOPS_TESTS_TRANSPOSE_OPS_H

#include <stdint.h>

#include "gpuops.h"

namespace trt {

template <class T> struct api;
#define TRT_API(T, S)                                                                                                        \
  template <> struct api<T> {                                                                                                \
    static const char *name() { return #S; }                                                                                 \
    static gpuops_status gpu(T *y, const T *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream) {          \
      return gpuops_transpose_##S(y, x, rows, cols, algo, stream);                                                           \
    }                                                                                                                        \
    static gpuops_status gpu_ld(T *y, const T *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, gpuops_algo algo,   \
                                gpuops_stream stream) {                                                                      \
      return gpuops_transpose_ld_##S(y, x, rows, cols, ldx, ldy, algo, stream);                                              \
    }                                                                                                                        \
    static gpuops_status cpu(T *y, const T *x, int64_t rows, int64_t cols) { return gpuops_cpu_transpose_##S(y, x, rows, cols); } \
    static gpuops_status cpu_ld(T *y, const T *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy) {                    \
      return gpuops_cpu_transpose_ld_##S(y, x, rows, cols, ldx, ldy);                                                        \
    }                                                                                                                        \
  };
TRT_API(float, f32)
TRT_API(gpuops_f16, f16)
TRT_API(gpuops_bf16, bf16)
TRT_API(int8_t, i8)
TRT_API(int64_t, i64)
#undef TRT_API

// The versions, in learning-path order.
static const gpuops_algo kVersions[] = {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_SHARED_PADDED, GPUOPS_ALGO_VECTORIZED};

}  // namespace trt

#endif
