// SPDX-License-Identifier: MIT
// tests/scan_ops.h - the scan family by storage type, for the tests, the bench and the example:
// one call per form (GPU, CPU, rows) for float, int32_t and int64_t, the versions, and names.
#ifndef GPUOPS_TESTS_SCAN_OPS_H
#define GPUOPS_TESTS_SCAN_OPS_H

#include <stdint.h>

#include "gpuops.h"

namespace sct {

// The scan's versions, in learning-path order (AUTO is DECOUPLED_LOOKBACK).
static const gpuops_algo kVersions[] = {GPUOPS_ALGO_HILLIS_STEELE, GPUOPS_ALGO_BLELLOCH, GPUOPS_ALGO_REDUCE_THEN_SCAN,
                                        GPUOPS_ALGO_DECOUPLED_LOOKBACK};

template <class T> struct api;
#define SCT_API(T, S)                                                                                                      \
  template <> struct api<T> {                                                                                              \
    static const char *name() { return #S; }                                                                               \
    static gpuops_status gpu(T *y, const T *x, int64_t n, gpuops_scan_kind k, void *ws, size_t wsb, gpuops_algo a,          \
                             gpuops_stream s) {                                                                            \
      return gpuops_scan_##S(y, x, n, k, ws, wsb, a, s);                                                                   \
    }                                                                                                                      \
    static gpuops_status cpu(T *y, const T *x, int64_t n, gpuops_scan_kind k) { return gpuops_cpu_scan_##S(y, x, n, k); }   \
    static gpuops_status rows(T *y, const T *x, int64_t r, int64_t c, gpuops_scan_kind k, gpuops_algo a, gpuops_stream s) { \
      return gpuops_scan_rows_##S(y, x, r, c, k, a, s);                                                                    \
    }                                                                                                                      \
    static gpuops_status cpu_rows(T *y, const T *x, int64_t r, int64_t c, gpuops_scan_kind k) {                            \
      return gpuops_cpu_scan_rows_##S(y, x, r, c, k);                                                                      \
    }                                                                                                                      \
  };
SCT_API(float, f32)
SCT_API(int32_t, i32)
SCT_API(int64_t, i64)
#undef SCT_API

inline const char *kind_name(gpuops_scan_kind k) { return k == GPUOPS_SCAN_INCLUSIVE ? "inclusive" : "exclusive"; }

// Elements per tile of the single-pass scan (scan_lookback_default, gpuops_cuda.cuh 4.4) and of
// reduce-then-scan (scan_tile's default shape, 4.1) for a storage type.
template <class T> constexpr int64_t lookback_tile() {
  using C = typename gpuops::scan_lookback_default<T>::template tile<T>;
  return C::kItems;
}
template <class T> constexpr int64_t rts_tile() { return sizeof(T) == 8 ? 2048 : 4096; }

}  // namespace sct

#endif
