// SPDX-License-Identifier: MIT
// tools/emulate_norm.cpp - the normalization and RoPE kernels of gpuops_cuda.cuh (section 8) run on
// the CPU through tools/emulate_cuda.h (a thread per CUDA thread, real barriers and shuffles; blocks
// one after another, so grids smaller than the work loop over rows), compared with gpuops.h's CPU
// forms: the on-chip forward and backward (warp, group and block rows, partial rows, the gradient
// partials and their fixed-order sum), the streaming and learning-path kernels, UNFUSED's steps and
// RoPE in both pairings. f32 and bf16. Built by tools/emulate_norm.sh under AddressSanitizer (reads
// past an array). It checks logic, not timing or anything a GPU adds; clusters are not modelled.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <vector_types.h>
#include <vector_functions.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <barrier>
#include <type_traits>
#include <vector>

#define GPUOPS_ONLY_NORM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "emulate_cuda.h"

inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = ((uint64_t)y << 32) | x;
  unsigned r = 0;
  for (int k = 0; k < 4; ++k) r |= (unsigned)((v >> (8 * ((s >> (4 * k)) & 7))) & 0xff) << (8 * k);
  return r;
}
inline void __trap() { abort(); }

// The cluster of the emulated launch: its barrier (all threads of its blocks) and its blocks' row
// states by slot and rank (see emulate_norm.sh).
inline std::barrier<> *emu_cluster_bar = nullptr;
inline unsigned char emu_cluster_slot[2][8][16];
inline void emu_cluster_sync() { emu_cluster_bar->arrive_and_wait(); }

#include "norm_body.inc"

using namespace gpuops;

static uint64_t s_ = 88172645463325252ull;
static double uni(double lo, double hi) { s_ ^= s_ << 13, s_ ^= s_ >> 7, s_ ^= s_ << 17; return lo + (hi - lo) * (double)(s_ >> 11) / 9007199254740992.0; }
static int fails = 0, runs = 0;

template <class T> struct host_t { using type = T; };
template <> struct host_t<__nv_bfloat16> { using type = gpuops_bf16; };
template <class T> static float f32(T v) { return (float)v; }
template <> float f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> static T from(float v);
template <> float from<float>(float v) { return v; }
template <> __nv_bfloat16 from<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <class T> static gpuops__dtype dt() { return sizeof(T) == 4 ? GPUOPS__F32 : GPUOPS__BF16; }

template <class T> static void expect_close(const char *what, const std::vector<T> &got, const std::vector<T> &want, double tol, const char *ctx) {
  ++runs;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = f32(got[i]), w = f32(want[i]);
    if (!(fabs(g - w) <= tol * (1.0 + fabs(w)))) {
      printf("FAIL %s %s: [%zu] = %.8g, want %.8g\n", ctx, what, i, g, w);
      ++fails;
      return;
    }
  }
}

// A norm call on host arrays: the CPU oracle through gpuops__norm_cpu (same args struct).
static gpuops_status cpu(gpuops__norm_args a) {
  a.cpu = 1;
  return gpuops__norm_cpu(&a);
}

template <class T> static void fwd_case(gpuops__norm_op op, int64_t rows, int64_t cols, int which, bool affine, int act) {
  const bool res = op == GPUOPS__NORM_ADD_LN_FWD || op == GPUOPS__NORM_ADD_RMS_FWD, rms = op == GPUOPS__NORM_RMS_FWD || op == GPUOPS__NORM_ADD_RMS_FWD;
  const int64_t n = rows * cols;
  std::vector<T> x(n), r(n), g(cols), b(cols), y(n, from<T>(NAN)), h(n, from<T>(NAN)), wy(n), wh(n);
  for (auto &v : x) v = from<T>((float)uni(-3, 3));
  for (int64_t j = 0; j < cols && rows > 1; ++j) x[cols + j] = from<T>((float)(sizeof(T) == 4 ? 1e4 + uni(-0.01, 0.01) : 100 + uni(-1, 1)));
  for (auto &v : r) v = from<T>((float)uni(-3, 3));
  for (auto &v : g) v = from<T>((float)uni(0.5, 1.5));
  for (auto &v : b) v = from<T>((float)uni(-1, 1));
  std::vector<float> mean(rows, NAN), rstd(rows, NAN), wm(rows), wr(rows);
  gpuops__norm_args a = gpuops__norm_make(op, dt<T>());
  a.y = wy.data(), a.h = res ? wh.data() : nullptr, a.mean = rms ? nullptr : wm.data(), a.rstd = wr.data(), a.x = x.data(), a.res = res ? r.data() : nullptr;
  a.gamma = affine ? g.data() : nullptr, a.beta = affine && !rms ? b.data() : nullptr, a.rows = rows, a.cols = cols, a.eps = 1e-5f, a.act = act;
  if (cpu(a) != GPUOPS_OK) { printf("FAIL cpu status\n"); ++fails; return; }
  norm_params<T> p = {};
  p.y = y.data(), p.h = res ? h.data() : nullptr, p.mean = rms ? nullptr : mean.data(), p.rstd = rstd.data(), p.x = x.data(), p.res = res ? r.data() : nullptr;
  p.gamma = affine ? g.data() : nullptr, p.beta = affine && !rms ? b.data() : nullptr, p.rows = rows, p.cols = cols, p.eps = 1e-5f, p.act = act;
  p.rms = rms, p.cluster = 1;
  p.vec = cols % (16 / sizeof(T)) == 0;
  char ctx[160];
  snprintf(ctx, sizeof ctx, "fwd op %d %s %lld x %lld kernel %d%s act %d", (int)op, sizeof(T) == 4 ? "f32" : "bf16", (long long)rows, (long long)cols, which,
           affine ? "" : " no affine", act);
  constexpr int V = 16 / sizeof(T);
  switch (which) {
  case 0: emu_launch(3, 256, [&] { norm_fwd_on_chip<T, 32, 4, false>(p); }); break;
  case 1: emu_launch(2, 256, [&] { norm_fwd_on_chip<T, 256, 4, false>(p); }); break;
  case 2: emu_launch(2, 256, [&] { norm_fwd_on_chip<T, 32, 8, true>(p); }); break;
  case 3: emu_launch(2, 256, [&] { norm_fwd_stream<T>(p); }); break;
  case 4: emu_launch(2, 256, [&] { norm_block_per_row<T>(p); }); break;
  case 5: emu_launch(2, 256, [&] { norm_warp_per_row<T>(p); }); break;
  case 6: {  // clusters of 3 blocks of 256 x 8 vectors (rows to 3 x 256 x 8 x V), 2 clusters
    p.cluster = 3;
    std::barrier<> bar(3 * 256);
    emu_cluster_bar = &bar;
    emu_launch(6, 256, [&] { norm_fwd_on_chip<T, 256, 8, false>(p); }, 3);
    break;
  }
  }
  (void)V;
  const double tol = sizeof(T) == 4 ? 2e-5 : 2e-2;
  expect_close("y", y, wy, tol, ctx);
  if (res) expect_close("h", h, wh, 0.0, ctx);
  std::vector<float> wr2(wr), r2(rstd);
  ++runs;
  for (int64_t i = 0; i < rows; ++i)
    if (!(fabs(rstd[i] - wr[i]) <= 1e-5 * wr[i]) || (!rms && !(fabs(mean[i] - wm[i]) <= 1e-6 * fabs(wm[i]) + 1e-5 / wr[i]))) {
      printf("FAIL %s: row %lld mean %g rstd %g want %g %g\n", ctx, (long long)i, rms ? 0.0f : mean[i], rstd[i], rms ? 0.0f : wm[i], wr[i]);
      ++fails;
      break;
    }
}

template <class T> static void bwd_case(gpuops__norm_op op, int64_t rows, int64_t cols, int which, bool affine) {
  const bool rms = op == GPUOPS__NORM_RMS_BWD, gelu = op == GPUOPS__NORM_LN_GELU_BWD;
  const int64_t n = rows * cols, ldp = gpuops__norm_cols4(cols);
  std::vector<T> x(n), dy(n), g(cols), b(cols), y(n), dx(n, from<T>(NAN)), wdx(n), dg(cols, from<T>(NAN)), db(cols, from<T>(NAN)), wdg(cols), wdb(cols);
  for (auto &v : x) v = from<T>((float)uni(-3, 3));
  for (auto &v : dy) v = from<T>((float)uni(-1, 1));
  for (auto &v : g) v = from<T>((float)uni(0.5, 1.5));
  for (auto &v : b) v = from<T>((float)uni(-1, 1));
  std::vector<float> mean(rows), rstd(rows);
  const gpuops__norm_op fop = rms ? GPUOPS__NORM_RMS_FWD : gelu ? GPUOPS__NORM_LN_GELU_FWD : GPUOPS__NORM_LN_FWD;
  gpuops__norm_args f = gpuops__norm_make(fop, dt<T>());
  f.y = y.data(), f.mean = rms ? nullptr : mean.data(), f.rstd = rstd.data(), f.x = x.data(), f.gamma = affine ? g.data() : nullptr;
  f.beta = affine && !rms ? b.data() : nullptr, f.rows = rows, f.cols = cols, f.eps = 1e-5f, f.act = gelu ? GPUOPS_ACT_GELU_TANH : 0;
  cpu(f);
  gpuops__norm_args a = gpuops__norm_make(op, dt<T>());
  a.y = wdx.data(), a.dgamma = wdg.data(), a.dbeta = rms ? nullptr : wdb.data(), a.dy = dy.data(), a.x = x.data(), a.mean_in = rms ? nullptr : mean.data();
  a.rstd_in = rstd.data(), a.gamma = f.gamma, a.beta = f.beta, a.rows = rows, a.cols = cols, a.act = f.act;
  if (cpu(a) != GPUOPS_OK) { printf("FAIL cpu bwd status\n"); ++fails; return; }
  const int64_t max_parts = gpuops__norm_max_parts(rows, cols);
  std::vector<float> ws(gpuops_norm_bwd_workspace_size(rows, cols) / 4 + 4, NAN);
  norm_bwd_params<T> p = {};
  p.dx = dx.data(), p.part = ws.data(), p.dy = dy.data(), p.x = x.data(), p.gamma = (const T *)f.gamma, p.beta = (const T *)f.beta, p.mean = f.mean, p.rstd = rstd.data();
  p.rows = rows, p.cols = cols, p.ldp = ldp, p.inv_cols = 1.0f / cols, p.act = f.act, p.rms = rms, p.cluster = 1;
  p.vec = cols % (16 / sizeof(T)) == 0;
  constexpr int N = kNormBwdE / (16 / sizeof(T));
  int64_t parts = 0;
  switch (which) {
  case 0: parts = p.parts = 2 * 8; emu_launch(2, 256, [&] { norm_bwd_on_chip<T, 32, N, false>(p); }); break;
  case 1: parts = p.parts = 3 * 2; emu_launch(3, 256, [&] { norm_bwd_on_chip<T, 128, N, true>(p); }); break;
  case 2: parts = p.parts = 2; emu_launch(2, 256, [&] { norm_bwd_on_chip<T, 256, N, false>(p); }); break;
  case 4: {  // clusters of 2 blocks of 1024 (rows to 2 x 8192), 2 clusters
    p.cluster = 2;
    std::barrier<> bar(2 * 1024);
    emu_cluster_bar = &bar;
    parts = p.parts = 2;
    emu_launch(4, 1024, [&] { norm_bwd_on_chip<T, 1024, N, false>(p); }, 2);
    break;
  }
  case 5: parts = p.parts = 12 * 8; emu_launch(12, 256, [&] { norm_bwd_on_chip<T, 32, N, false>(p); }); break;  // two levels of the finish
  case 3: {
    const int64_t chunks = 3, chunk = (rows + chunks - 1) / chunks;
    parts = p.parts = (rows + chunk - 1) / chunk;
    emu_launch(dim3e((unsigned)((cols + 32 * (16 / sizeof(T)) - 1) / (32 * (16 / sizeof(T)))), (unsigned)parts), 256, [&] { norm_bwd_columns<T>(p, chunk); });
    emu_launch(2, 256, [&] { norm_bwd_stream<T>(p); });
    break;
  }
  }
  if (parts > max_parts) { printf("FAIL parts %lld > max %lld\n", (long long)parts, (long long)max_parts); ++fails; return; }
  // The finish, as norm_bwd_finish_launch runs it (levels of 64 rows).
  float *bufs[2] = {ws.data(), ws.data() + 2 * parts * ldp};
  int bi = 0;
  T *pdb = rms ? nullptr : db.data();
  for (int64_t pr = parts;;) {
    const int64_t ys = (pr + GPUOPS__NORM_FINISH_ROWS - 1) / GPUOPS__NORM_FINISH_ROWS;
    emu_launch(dim3e((unsigned)((cols + 127) / 128), (unsigned)ys, pdb ? 2u : 1u), 256, [&] { norm_bwd_finish<T>(dg.data(), pdb, bufs[1 - bi], bufs[bi], pr, ldp, cols); });
    if (ys == 1) break;
    pr = ys, bi = 1 - bi;
  }
  char ctx[160];
  snprintf(ctx, sizeof ctx, "bwd op %d %s %lld x %lld kernel %d%s", (int)op, sizeof(T) == 4 ? "f32" : "bf16", (long long)rows, (long long)cols, which,
           affine ? "" : " no affine");
  const double tol = sizeof(T) == 4 ? 5e-5 : 2e-2;
  expect_close("dx", dx, wdx, tol, ctx);
  expect_close("dgamma", dg, wdg, tol * 10, ctx);
  if (!rms) expect_close("dbeta", db, wdb, tol * 10, ctx);
}

template <class T> static void rope_case(int64_t tokens, int64_t heads, int64_t hd, int64_t rot, int64_t pad, bool halves, bool bwd, bool cache, int which) {
  const int64_t ld = heads * hd + pad, n = tokens * ld;
  std::vector<T> x(n), y(n), w(n);
  for (auto &v : x) v = from<T>((float)uni(-2, 2));
  y = x, w = x;
  std::vector<int64_t> pos(tokens);
  for (auto &q : pos) q = (int64_t)uni(0, 999);
  std::vector<float> cs(1000 * (rot > 0 ? rot : 1));
  for (auto &v : cs) v = (float)uni(-1, 1);
  gpuops__rope_args a;
  memset(&a, 0, sizeof a);
  a.dt = dt<T>(), a.bwd = bwd, a.y = w.data(), a.x = x.data(), a.positions = pos.data(), a.cos_sin = cache ? cs.data() : nullptr, a.tokens = tokens;
  a.heads = heads, a.head_dim = hd, a.rot_dim = rot, a.ldy = ld, a.ldx = ld, a.base = 10000.0f, a.pairing = halves;
  if (gpuops__rope_cpu(&a) != GPUOPS_OK) { printf("FAIL rope cpu\n"); ++fails; return; }
  constexpr int V = 16 / sizeof(T);
  rope_params<T> p = {};
  p.y = y.data(), p.x = x.data(), p.pos = pos.data(), p.cs = a.cos_sin, p.tokens = tokens, p.heads = heads, p.head_dim = hd, p.rot = rot, p.ldy = ld, p.ldx = ld;
  p.l2b = log2(10000.0), p.halves = halves, p.bwd = bwd, p.copy = true;
  p.vec = rot % (2 * V) == 0 && hd % V == 0 && ld % V == 0;
  p.chunks = std::max<int64_t>(1, (rot / 2 + V - 1) / V);
  p.splits = std::max<int64_t>(1, (heads + kRopeHeadsPerUnit - 1) / kRopeHeadsPerUnit);
  if (which == 0) emu_launch(3, 256, [&] { rope_vectorized<T>(p); });
  else emu_launch(3, 256, [&] { rope_naive<T>(p); });
  char ctx[160];
  snprintf(ctx, sizeof ctx, "rope %s %lld x %lld x %lld rot %lld pad %lld %s%s%s kernel %d", sizeof(T) == 4 ? "f32" : "bf16", (long long)tokens, (long long)heads,
           (long long)hd, (long long)rot, (long long)pad, halves ? "halves" : "adjacent", bwd ? " bwd" : "", cache ? " cache" : "", which);
  expect_close("y", y, w, sizeof(T) == 4 ? 2e-6 : 1.6e-2, ctx);
}

template <class T> static void clusters() {
  constexpr int V = 16 / sizeof(T);
  fwd_case<T>(GPUOPS__NORM_LN_FWD, 5, 3 * 256 * 8 * V, 6, true, 0);
  fwd_case<T>(GPUOPS__NORM_ADD_RMS_FWD, 4, 2 * 256 * 8 * V + 256 * V, 6, true, 0);
  bwd_case<T>(GPUOPS__NORM_LN_BWD, 5, 2 * 8192, 4, true);
  bwd_case<T>(GPUOPS__NORM_RMS_BWD, 3, 8192 + 1024, 4, true);
  bwd_case<T>(GPUOPS__NORM_LN_BWD, 150, 64, 5, true);
}

template <class T> static void all() {
  for (int k = 0; k < 6; ++k)
    for (auto op : {GPUOPS__NORM_LN_FWD, GPUOPS__NORM_RMS_FWD, GPUOPS__NORM_ADD_LN_FWD, GPUOPS__NORM_ADD_RMS_FWD, GPUOPS__NORM_LN_GELU_FWD}) {
      const bool vec_only = k <= 2;
      const int act = op == GPUOPS__NORM_LN_GELU_FWD ? GPUOPS_ACT_GELU_ERF : 0;
      if (act && (k == 0 || k == 1)) continue;  // kAct false kernels
      const int64_t cols_vec[3] = {k == 1 ? 2048 : 256, k == 1 ? 1000 + 8 * 3 : 128, 8};
      for (int64_t c : cols_vec) {
        if (k == 2 && c > 8 * 32 * 8 / (int64_t)(sizeof(T) == 4 ? 2 : 1)) continue;
        fwd_case<T>(op, 19, c, k, (c & 8) == 0, act);
      }
      if (!vec_only) {
        fwd_case<T>(op, 9, 131, k, true, act);
        fwd_case<T>(op, 1, 1, k, true, act);
      }
    }
  for (int k = 0; k < 4; ++k)
    for (auto op : {GPUOPS__NORM_LN_BWD, GPUOPS__NORM_RMS_BWD, GPUOPS__NORM_LN_GELU_BWD}) {
      if (op == GPUOPS__NORM_LN_GELU_BWD && (k == 0 || k == 2)) continue;
      const int64_t cap = (k == 0 ? 32 : k == 1 ? 128 : 256) * kNormBwdE;
      for (int64_t c : {cap, cap - 16 * (16 / (int64_t)sizeof(T)), (int64_t)16}) bwd_case<T>(op, 45, c, k, c != 16);
      if (k == 3) bwd_case<T>(op, 23, 300 + 3, k, true), bwd_case<T>(op, 130, 5, k, true);
    }
  for (int which = 0; which < 2; ++which)
    for (bool halves : {false, true})
      for (bool bwd : {false, true}) {
        rope_case<T>(5, 9, 64, 64, 0, halves, bwd, false, which);
        rope_case<T>(4, 3, 64, 32, 16, halves, bwd, true, which);
        rope_case<T>(3, 2, 24, 12, 5, halves, bwd, false, which);
        rope_case<T>(2, 2, 16, 0, 0, halves, bwd, false, which);
      }
}

int main(int argc, char **argv) {
  const bool only_clusters = argc > 1 && !strcmp(argv[1], "clusters");
  if (!only_clusters) {
    all<float>();
    all<__nv_bfloat16>();
  }
  clusters<float>();
  clusters<__nv_bfloat16>();
  printf("emulate_norm: %d checks, %d failed\n", runs, fails);
  return fails ? 1 : 0;
}
