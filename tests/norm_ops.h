// SPDX-License-Identifier: MIT
// tests/norm_ops.h - the normalization family by op and storage type, for the tests and the bench:
// one call of any norm op (the registry GPUOPS__NORM_OPS of gpuops.h) on the GPU or the CPU, its
// arrays in one struct, and RoPE by storage type.
#ifndef GPUOPS_TESTS_NORM_OPS_H
#define GPUOPS_TESTS_NORM_OPS_H

#include <stdint.h>

#include "gpuops.h"

#define NORM_OP_ENUM(OP, name, RMS, RES, GELU, BWD) N_##OP,
enum norm_op { GPUOPS__NORM_OPS(NORM_OP_ENUM) N_COUNT };
#undef NORM_OP_ENUM

struct norm_op_info {
  const char *name;
  bool rms, res, gelu, bwd;
};
inline norm_op_info norm_info(norm_op o) {
#define NORM_OP_INFO(OP, name, RMS, RES, GELU, BWD) {#name, RMS != 0, RES != 0, GELU != 0, BWD != 0},
  static const norm_op_info info[] = {GPUOPS__NORM_OPS(NORM_OP_INFO)};
#undef NORM_OP_INFO
  return info[o];
}

// Every array an op may use (device pointers for gpu(), host pointers for cpu()); the op reads what
// its signature has: forward y, h, mean, rstd written and x, res, gamma, beta read; backward y (= dx),
// dgamma, dbeta written and dy, x, mean_in, rstd_in, gamma, beta read.
struct norm_io {
  void *y = nullptr, *h = nullptr, *dgamma = nullptr, *dbeta = nullptr;
  float *mean = nullptr, *rstd = nullptr;
  const void *x = nullptr, *res = nullptr, *dy = nullptr, *gamma = nullptr, *beta = nullptr;
  const float *mean_in = nullptr, *rstd_in = nullptr;
  int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
  gpuops_gelu_approx approx = GPUOPS_GELU_ERF;
  void *ws = nullptr;
  size_t ws_bytes = 0;
};

template <class T> struct norm_api;
#define NORM_API(T, S)                                                                                                              \
  template <> struct norm_api<T> {                                                                                                  \
    static gpuops_status gpu(norm_op o, const norm_io &a, gpuops_algo al, gpuops_stream s = nullptr) {                              \
      T *y = (T *)a.y, *h = (T *)a.h, *dg = (T *)a.dgamma, *db = (T *)a.dbeta;                                                      \
      const T *x = (const T *)a.x, *r = (const T *)a.res, *dy = (const T *)a.dy, *g = (const T *)a.gamma, *b = (const T *)a.beta;  \
      switch (o) {                                                                                                                  \
      case N_LN_FWD: return gpuops_layernorm_fwd_##S(y, a.mean, a.rstd, x, g, b, a.rows, a.cols, a.eps, al, s);                     \
      case N_RMS_FWD: return gpuops_rmsnorm_fwd_##S(y, a.rstd, x, g, a.rows, a.cols, a.eps, al, s);                                 \
      case N_ADD_LN_FWD: return gpuops_add_layernorm_fwd_##S(y, h, a.mean, a.rstd, x, r, g, b, a.rows, a.cols, a.eps, al, s);       \
      case N_ADD_RMS_FWD: return gpuops_add_rmsnorm_fwd_##S(y, h, a.rstd, x, r, g, a.rows, a.cols, a.eps, al, s);                   \
      case N_LN_GELU_FWD: return gpuops_layernorm_gelu_fwd_##S(y, a.mean, a.rstd, x, g, b, a.rows, a.cols, a.eps, a.approx, al, s); \
      case N_LN_BWD:                                                                                                                \
        return gpuops_layernorm_bwd_##S(y, dg, db, dy, x, a.mean_in, a.rstd_in, g, a.rows, a.cols, a.ws, a.ws_bytes, al, s);        \
      case N_RMS_BWD: return gpuops_rmsnorm_bwd_##S(y, dg, dy, x, a.rstd_in, g, a.rows, a.cols, a.ws, a.ws_bytes, al, s);           \
      case N_LN_GELU_BWD:                                                                                                           \
        return gpuops_layernorm_gelu_bwd_##S(y, dg, db, dy, x, a.mean_in, a.rstd_in, g, b, a.rows, a.cols, a.approx, a.ws,         \
                                             a.ws_bytes, al, s);                                                                    \
      default: return GPUOPS_ERR_INVALID_ARGUMENT;                                                                                  \
      }                                                                                                                             \
    }                                                                                                                               \
    static gpuops_status cpu(norm_op o, const norm_io &a) {                                                                         \
      T *y = (T *)a.y, *h = (T *)a.h, *dg = (T *)a.dgamma, *db = (T *)a.dbeta;                                                      \
      const T *x = (const T *)a.x, *r = (const T *)a.res, *dy = (const T *)a.dy, *g = (const T *)a.gamma, *b = (const T *)a.beta;  \
      switch (o) {                                                                                                                  \
      case N_LN_FWD: return gpuops_cpu_layernorm_fwd_##S(y, a.mean, a.rstd, x, g, b, a.rows, a.cols, a.eps);                        \
      case N_RMS_FWD: return gpuops_cpu_rmsnorm_fwd_##S(y, a.rstd, x, g, a.rows, a.cols, a.eps);                                    \
      case N_ADD_LN_FWD: return gpuops_cpu_add_layernorm_fwd_##S(y, h, a.mean, a.rstd, x, r, g, b, a.rows, a.cols, a.eps);          \
      case N_ADD_RMS_FWD: return gpuops_cpu_add_rmsnorm_fwd_##S(y, h, a.rstd, x, r, g, a.rows, a.cols, a.eps);                      \
      case N_LN_GELU_FWD: return gpuops_cpu_layernorm_gelu_fwd_##S(y, a.mean, a.rstd, x, g, b, a.rows, a.cols, a.eps, a.approx);    \
      case N_LN_BWD: return gpuops_cpu_layernorm_bwd_##S(y, dg, db, dy, x, a.mean_in, a.rstd_in, g, a.rows, a.cols);                \
      case N_RMS_BWD: return gpuops_cpu_rmsnorm_bwd_##S(y, dg, dy, x, a.rstd_in, g, a.rows, a.cols);                                \
      case N_LN_GELU_BWD: return gpuops_cpu_layernorm_gelu_bwd_##S(y, dg, db, dy, x, a.mean_in, a.rstd_in, g, b, a.rows, a.cols, a.approx); \
      default: return GPUOPS_ERR_INVALID_ARGUMENT;                                                                                  \
      }                                                                                                                             \
    }                                                                                                                               \
    static gpuops_status rope(bool bwd, T *y, const T *x, const int64_t *pos, const float *cs, int64_t tokens, int64_t heads,       \
                              int64_t hd, int64_t rot, int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pr, gpuops_algo al,  \
                              gpuops_stream s = nullptr) {                                                                          \
      return bwd ? gpuops_rope_bwd_##S(y, x, pos, cs, tokens, heads, hd, rot, ldy, ldx, base, pr, al, s)                          \
                 : gpuops_rope_fwd_##S(y, x, pos, cs, tokens, heads, hd, rot, ldy, ldx, base, pr, al, s);                         \
    }                                                                                                                               \
    static gpuops_status cpu_rope(bool bwd, T *y, const T *x, const int64_t *pos, const float *cs, int64_t tokens, int64_t heads,   \
                                  int64_t hd, int64_t rot, int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pr) {          \
      return bwd ? gpuops_cpu_rope_bwd_##S(y, x, pos, cs, tokens, heads, hd, rot, ldy, ldx, base, pr)                             \
                 : gpuops_cpu_rope_fwd_##S(y, x, pos, cs, tokens, heads, hd, rot, ldy, ldx, base, pr);                            \
    }                                                                                                                               \
  };
NORM_API(float, f32)
NORM_API(gpuops_f16, f16)
NORM_API(gpuops_bf16, bf16)
#undef NORM_API

#endif
