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

#include "norm_cases.h"  // the replay: test_norm's cases (includes tests/check.h, before the emulation's macros)

#include "emulate_cuda.h"


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
  case 7: emu_launch(3, 256, [&] { norm_fwd_on_chip<T, 128, 4, true>(p); }); break;  // two rows a block: odd row counts leave a group idle
  case 6: {  // clusters of 3 blocks of 256 x 8 vectors (rows to 3 x 256 x 8 x V), 2 clusters, gamma and beta staged
    p.cluster = 3;
    std::barrier<> bar(3 * 256);
    emu_cluster_bar = &bar;
    emu_launch(6, 256, [&] { norm_fwd_on_chip<T, 256, 8, false, true>(p); }, 3);
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
  case 7:    // the wide rows' blocks of 1024 (kWide; kNormBwdWideE for 16-bit): a cluster of 2,
  case 8: {  // or one block a row, 3 blocks
    constexpr int W = (sizeof(T) == 2 ? kNormBwdWideE : kNormBwdE) / (16 / sizeof(T));
    p.cluster = which == 7 ? 2 : 1;
    std::barrier<> bar(2 * 1024);
    emu_cluster_bar = &bar;
    parts = p.parts = which == 7 ? 2 : 3;
    emu_launch(which == 7 ? 4 : 3, 1024, [&] { norm_bwd_on_chip<T, 1024, W, false, true>(p); }, which == 7 ? 2 : 1);
    break;
  }
  case 5: parts = p.parts = 12 * 8; emu_launch(12, 256, [&] { norm_bwd_on_chip<T, 32, N, false>(p); }); break;  // two levels of the finish
  // Row views (kPhased; cols not a multiple of the vector): a warp a row, 64 threads (four rows a
  // block) with GELU, a block of 256 (one row)
  case 9: parts = p.parts = 2 * 8; emu_launch(2, 256, [&] { norm_bwd_on_chip<T, 32, N, false, false, true>(p); }); break;
  case 10: parts = p.parts = 3 * 4; emu_launch(3, 256, [&] { norm_bwd_on_chip<T, 64, N, true, false, true>(p); }); break;
  case 11: parts = p.parts = 2; emu_launch(2, 256, [&] { norm_bwd_on_chip<T, 256, N, false, false, true>(p); }); break;
  case 6: parts = p.parts = 3 * 4; emu_launch(3, 256, [&] { norm_bwd_on_chip<T, 64, N, true>(p); }); break;  // four rows a block
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

template <class T> static void rope_case(int64_t tokens, int64_t heads, int64_t hd, int64_t rot, int64_t pad, bool halves, bool bwd, bool cache, int which,
                                         bool in_place = false, int off = 0, int64_t blocks = 3) {
  const int64_t ld = heads * hd + pad, n = tokens * ld + off;
  std::vector<T> x(n), y(n), w(n);
  for (auto &v : x) v = from<T>((float)uni(-2, 2));
  y = x, w = x;
  std::vector<int64_t> pos(tokens);
  for (auto &q : pos) q = (int64_t)uni(0, 999);
  std::vector<float> cs(1000 * (rot > 0 ? rot : 1));
  for (auto &v : cs) v = (float)uni(-1, 1);
  gpuops__rope_args a;
  memset(&a, 0, sizeof a);
  a.dt = dt<T>(), a.bwd = bwd, a.y = w.data() + off, a.x = x.data() + off, a.positions = pos.data(), a.cos_sin = cache ? cs.data() : nullptr, a.tokens = tokens;
  a.heads = heads, a.head_dim = hd, a.rot_dim = rot, a.ldy = ld, a.ldx = ld, a.base = 10000.0f, a.pairing = halves;
  if (gpuops__rope_cpu(&a) != GPUOPS_OK) { printf("FAIL rope cpu\n"); ++fails; return; }
  constexpr int V = 16 / sizeof(T);
  T *out = (in_place ? x.data() : y.data()) + off;
  rope_params<T> p = {};
  p.y = out, p.x = x.data() + off, p.pos = pos.data(), p.cs = a.cos_sin, p.tokens = tokens, p.heads = heads, p.head_dim = hd, p.rot = rot, p.ldy = ld, p.ldx = ld;
  p.l2b = log2(10000.0), p.halves = halves, p.bwd = bwd, p.copy = !in_place;
  // as rope_launch_typed: 16-byte accesses where the pointers (off), dims and stride allow
  p.vec = off % V == 0 && rot % (2 * V) == 0 && hd % V == 0 && ld % V == 0;
  if (which == 1) {
    emu_launch(3, 256, [&] { rope_naive<T>(p); });
  } else if (p.vec) {
    const int64_t g = rope_plan<T, kRopeHeads>(p, blocks);
    if (g > 0) emu_launch((unsigned)g, 256, [&] { halves ? rope_vectorized<T, kRopeHeads, true, true>(p) : rope_vectorized<T, kRopeHeads, true, false>(p); });
  } else {
    const int64_t g = rope_plan<T, kRopeHeadsElem>(p, blocks);
    if (g > 0) emu_launch((unsigned)g, 256, [&] { halves ? rope_vectorized<T, kRopeHeadsElem, false, true>(p) : rope_vectorized<T, kRopeHeadsElem, false, false>(p); });
  }
  std::vector<T> got(in_place ? x : y);
  char ctx[200];
  snprintf(ctx, sizeof ctx, "rope %s %lld x %lld x %lld rot %lld pad %lld off %d blocks %lld %s%s%s%s kernel %d%s", sizeof(T) == 4 ? "f32" : "bf16", (long long)tokens,
           (long long)heads, (long long)hd, (long long)rot, (long long)pad, off, (long long)blocks, halves ? "halves" : "adjacent", bwd ? " bwd" : "", cache ? " cache" : "",
           in_place ? " in place" : "", which, which == 0 ? (p.vec ? " (16-byte)" : " (elements)") : "");
  expect_close("y", got, w, sizeof(T) == 4 ? 2e-6 : 1.6e-2, ctx);
}

template <class T> static void clusters() {
  constexpr int V = 16 / sizeof(T);
  fwd_case<T>(GPUOPS__NORM_LN_FWD, 5, 3 * 256 * 8 * V, 6, true, 0);
  fwd_case<T>(GPUOPS__NORM_ADD_RMS_FWD, 4, 2 * 256 * 8 * V + 256 * V, 6, true, 0);
  bwd_case<T>(GPUOPS__NORM_LN_BWD, 5, 2 * 8192, 4, true);
  bwd_case<T>(GPUOPS__NORM_RMS_BWD, 3, 8192 + 1024, 4, true);
  bwd_case<T>(GPUOPS__NORM_LN_BWD, 150, 64, 5, true);
  const int wide = 1024 * (sizeof(T) == 2 ? kNormBwdWideE : kNormBwdE);  // a block of 1024's row
  bwd_case<T>(GPUOPS__NORM_LN_BWD, 5, 2 * wide, 7, true);
  bwd_case<T>(GPUOPS__NORM_RMS_BWD, 3, wide + 3 * V, 7, true);
  bwd_case<T>(GPUOPS__NORM_LN_BWD, 7, wide - 5 * V, 8, false);
  bwd_case<T>(GPUOPS__NORM_RMS_BWD, 4, wide / 2 + V, 8, true);
}

template <class T> static void ropes();

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
  // 128 threads a row, two rows a block: full and partial rows, odd row counts (a group idle in the
  // last step), with and without GELU.
  for (auto op : {GPUOPS__NORM_LN_FWD, GPUOPS__NORM_ADD_RMS_FWD, GPUOPS__NORM_LN_GELU_FWD})
    for (int64_t c : {(int64_t)128 * 4 * (16 / sizeof(T)), (int64_t)128 * 3 * (16 / sizeof(T)) + 16 / sizeof(T)})
      for (int64_t rows : {19, 1, 6}) fwd_case<T>(op, rows, c, 7, rows != 6, op == GPUOPS__NORM_LN_GELU_FWD ? GPUOPS_ACT_GELU_TANH : 0);
  for (int k = 0; k < 4; ++k)
    for (auto op : {GPUOPS__NORM_LN_BWD, GPUOPS__NORM_RMS_BWD, GPUOPS__NORM_LN_GELU_BWD}) {
      if (op == GPUOPS__NORM_LN_GELU_BWD && (k == 0 || k == 2)) continue;
      const int64_t cap = (k == 0 ? 32 : k == 1 ? 128 : 256) * kNormBwdE;
      for (int64_t c : {cap, cap - 16 * (16 / (int64_t)sizeof(T)), (int64_t)16}) bwd_case<T>(op, 45, c, k, c != 16);
      if (k == 3) bwd_case<T>(op, 23, 300 + 3, k, true), bwd_case<T>(op, 130, 5, k, true);
    }
  for (auto op : {GPUOPS__NORM_LN_BWD, GPUOPS__NORM_RMS_BWD, GPUOPS__NORM_LN_GELU_BWD})  // 64 threads a row: rows to 512
    for (int64_t c : {(int64_t)64 * kNormBwdE, (int64_t)40 * kNormBwdE}) bwd_case<T>(op, 45, c, 6, true);
  for (auto op : {GPUOPS__NORM_LN_BWD, GPUOPS__NORM_RMS_BWD, GPUOPS__NORM_LN_GELU_BWD}) {  // row views: each row at its own phase
    constexpr int64_t V = 16 / sizeof(T);
    const int gelu = op == GPUOPS__NORM_LN_GELU_BWD;
    if (!gelu) {
      for (int64_t c : {32 * kNormBwdE - V + 1, (int64_t)1, (int64_t)3, (int64_t)37}) bwd_case<T>(op, 45, c, 9, c != 37);
      for (int64_t c : {256 * kNormBwdE - V + 1, (int64_t)1001}) bwd_case<T>(op, 5, c, 11, true);
    }
    for (int64_t c : {64 * kNormBwdE - V + 1, (int64_t)301}) bwd_case<T>(op, 45, c, 10, c != 301);
  }
  ropes<T>();
}

template <class T> static void ropes() {
  for (int which = 0; which < 2; ++which)
    for (bool halves : {false, true})
      for (bool bwd : {false, true}) {
        rope_case<T>(5, 9, 64, 64, 0, halves, bwd, false, which);
        rope_case<T>(4, 3, 64, 32, 16, halves, bwd, true, which);
        rope_case<T>(3, 2, 24, 12, 5, halves, bwd, false, which);
        rope_case<T>(2, 2, 16, 0, 0, halves, bwd, false, which);
        rope_case<T>(2, 2, 16, 0, 0, halves, bwd, false, which, true);                  // in place, nothing to do
        rope_case<T>(40, 32, 128, 128, 0, halves, bwd, false, which);                  // the bench's shape, fewer tokens
        rope_case<T>(40, 32, 128, 128, 0, halves, bwd, true, which, true);             // the same in place, cache
        rope_case<T>(33, 5, 128, 64, 8 * (16 / sizeof(T)), halves, bwd, false, which); // groups of unequal size, a passed-through half
        rope_case<T>(30, 6, 80, 80, 0, halves, bwd, true, which, false, 0, 1);         // one block: several steps of tokens
        rope_case<T>(9, 4, 64, 48, 0, halves, bwd, false, which, true, 1);            // misaligned: element accesses, in place
        rope_case<T>(6, 7, 40, 34, 3, halves, bwd, true, which, false, 2, 1);          // elements, partial, odd stride
      }
  // test_norm's GPU shapes (tokens, heads, head_dim, rot_dim, pad) through AUTO's kernel: forward,
  // backward, forward with the cache, forward in place
  const int64_t shapes[][5] = {{1, 1, 2, 2, 0},   {7, 3, 16, 16, 0}, {33, 4, 64, 64, 0},   {100, 8, 128, 128, 0}, {65, 5, 128, 64, 0},
                               {40, 2, 96, 32, 8}, {17, 3, 80, 80, 0}, {9, 2, 24, 12, 5}, {300, 32, 128, 128, 256}, {5, 1, 64, 0, 0}};
  for (const auto &s : shapes)
    for (bool halves : {false, true})
      for (int mode = 0; mode < 4; ++mode) rope_case<T>(s[0], s[1], s[2], s[3], s[4], halves, mode == 1, mode == 2, 0, mode == 3);
}

// ---- replay: test_norm's GPU cases of a seed, run through the emulated kernels -------------------
// `emulate_norm.sh replay SEED [OP[/TYPE[/COLS[/ROWS]]] ...]` builds test_norm's cases from the seed
// (norm_cases.h: the same draws, references and tolerances; GPUOPS_TEST_QUICK=1 for a quick run's
// seed) and runs each matching one (the plain variant: no offsets, statistics asked for) through the
// kernels AUTO, ROW_REGISTERS, ONLINE and UNFUSED pick on a device with clusters, on a small grid:
// dgamma's partial sums may differ from the GPU's in their order, nothing else.
template <class H> struct dev_of { using type = H; };
template <> struct dev_of<gpuops_f16> { using type = __half; };
template <> struct dev_of<gpuops_bf16> { using type = __nv_bfloat16; };

// The forward on chip as norm_fwd_rows picks it (compute capability 9.0): false where nothing holds the row.
template <class T, bool kAct> static bool emu_fwd_rows(norm_params<T> p) {
  constexpr int V = 16 / sizeof(T);
  const int64_t cols = p.cols, rows = p.rows;
  auto blocks = [&](int rpb) { return (unsigned)std::min<int64_t>((rows + rpb - 1) / rpb, 3); };
  if (!p.vec) return false;
  if (cols <= 32 * 2 * V) emu_launch(blocks(8), 256, [&] { norm_fwd_on_chip<T, 32, 2, kAct>(p); });
  else if (cols <= 32 * 4 * V) emu_launch(blocks(8), 256, [&] { norm_fwd_on_chip<T, 32, 4, kAct>(p); });
  else if (cols <= 32 * 8 * V) emu_launch(blocks(8), 256, [&] { norm_fwd_on_chip<T, 32, 8, kAct>(p); });
  else if (cols <= 128 * 4 * V) emu_launch(blocks(2), 256, [&] { norm_fwd_on_chip<T, 128, 4, kAct>(p); });
  else if (cols <= 128 * 8 * V) emu_launch(blocks(2), 256, [&] { norm_fwd_on_chip<T, 128, 8, kAct>(p); });
  else if (cols <= 256 * 8 * V) emu_launch(blocks(1), 256, [&] { norm_fwd_on_chip<T, 256, 8, kAct>(p); });
  else if (cols <= (int64_t)kNormMaxCluster * 256 * 8 * V) {
    p.cluster = (int)((cols + 256 * 8 * V - 1) / (256 * 8 * V));
    std::barrier<> bar(p.cluster * 256);
    emu_cluster_bar = &bar;
    // one cluster walks every row; gamma and beta staged from clusters of 3
    if (p.cluster >= 3) emu_launch(p.cluster, 256, [&] { norm_fwd_on_chip<T, 256, 8, kAct, true>(p); }, p.cluster);
    else emu_launch(p.cluster, 256, [&] { norm_fwd_on_chip<T, 256, 8, kAct>(p); }, p.cluster);
  } else {
    return false;
  }
  return true;
}

// The forward over row views as norm_fwd_phased picks it (AUTO, rows not whole vectors; the host
// arrays share phase 0, and a row's phase follows from cols), on at most 3 blocks (they loop).
template <class T, bool kAct> static bool emu_fwd_phased(norm_params<T> p) {
  constexpr int V = 16 / sizeof(T);
  const int64_t ext = p.cols + V - 1, rows = p.rows;
  auto blocks = [&](int rpb) { return (unsigned)std::min<int64_t>((rows + rpb - 1) / rpb, 3); };
  if (ext <= 32 * 5 * V) emu_launch(blocks(8), 256, [&] { norm_fwd_on_chip<T, 32, 5, kAct, false, true>(p); });
  else if (ext <= 64 * 5 * V) emu_launch(blocks(4), 256, [&] { norm_fwd_on_chip<T, 64, 5, kAct, false, true>(p); });
  else if (ext <= 128 * 5 * V) emu_launch(blocks(2), 256, [&] { norm_fwd_on_chip<T, 128, 5, kAct, false, true>(p); });
  else if (ext <= 128 * 10 * V) emu_launch(blocks(2), 256, [&] { norm_fwd_on_chip<T, 128, 10, kAct, false, true>(p); });
  else if (ext <= 256 * 8 * V) emu_launch(blocks(1), 256, [&] { norm_fwd_on_chip<T, 256, 8, kAct, false, true>(p); });
  else if (ext <= 1024 * 4 * V) emu_launch(blocks(1), 1024, [&] { norm_fwd_on_chip<T, 1024, 4, kAct, false, true>(p); });
  else return false;
  return true;
}

template <class T> static void emu_fwd_stream(const norm_params<T> &p) {
  emu_launch((unsigned)std::min<int64_t>(p.rows, 2), p.cols >= kNormWideStreamCols ? 1024 : 256, [&] { norm_fwd_stream<T>(p); });
}

// A forward run as norm_launch_typed makes it; false: ROW_REGISTERS refused it.
template <class T> static bool emu_fwd(norm_params<T> p, gpuops_algo algo) {
  if (algo == GPUOPS_ALGO_UNFUSED) {
    if (p.res) {
      const norm_map_params<T> m = {p.h, p.x, p.res, nullptr, nullptr, nullptr, nullptr, p.rows * p.cols, divisor((uint64_t)p.cols), kMapAdd, 0, p.vec};
      emu_launch(2, 256, [&] { norm_map<T>(m); });
      p.x = p.h, p.res = nullptr, p.h = nullptr;
      return emu_fwd(p, GPUOPS_ALGO_AUTO);
    }
    const int act = p.act;
    p.act = GPUOPS_ACT_NONE;
    emu_fwd(p, GPUOPS_ALGO_AUTO);
    const norm_map_params<T> m = {p.y, p.y, nullptr, nullptr, nullptr, nullptr, nullptr, p.rows * p.cols, divisor((uint64_t)p.cols), kMapAct, act, p.vec};
    emu_launch(2, 256, [&] { norm_map<T>(m); });
    return true;
  }
  if (algo == GPUOPS_ALGO_ONLINE) return emu_fwd_stream(p), true;
  if (algo == GPUOPS_ALGO_AUTO && !p.vec && (p.act != GPUOPS_ACT_NONE ? emu_fwd_phased<T, true>(p) : emu_fwd_phased<T, false>(p))) return true;
  if (p.act != GPUOPS_ACT_NONE ? emu_fwd_rows<T, true>(p) : emu_fwd_rows<T, false>(p)) return true;
  if (algo == GPUOPS_ALGO_ROW_REGISTERS) return false;
  emu_fwd_stream(p);
  return true;
}

// The backward's partials summed as norm_bwd_finish_launch does.
template <class T> static void emu_finish(T *dg, T *db, float *part, int64_t parts, int64_t ldp, int64_t cols) {
  float *bufs[2] = {part, part + 2 * parts * ldp};
  int bi = 0;
  for (;;) {
    const int64_t ys = (parts + GPUOPS__NORM_FINISH_ROWS - 1) / GPUOPS__NORM_FINISH_ROWS;
    emu_launch(dim3e((unsigned)((cols + 127) / 128), (unsigned)ys, (dg && db) ? 2u : 1u), 256,
               [&] { norm_bwd_finish<T>(dg, db, bufs[1 - bi], bufs[bi], parts, ldp, cols); });
    if (ys == 1) return;
    parts = ys, bi = 1 - bi;
  }
}

// The backward on chip with TPR threads a row (norm_bwd_launch_rows), on a grid of at most 3 groups
// of blocks; C > 1: one cluster.
template <class T, int TPR, bool kAct, int N = kNormBwdE * (int)sizeof(T) / 16, bool kWide = false, bool kPhased = false>
static int64_t emu_bwd_launch(norm_bwd_params<T> p, int64_t max_parts, int C) {
  constexpr int threads = block_threads<TPR>(), RPB = threads / TPR;
  p.cluster = C;
  const int64_t blocks = C > 1 ? C : std::max<int64_t>(1, std::min(std::min<int64_t>(3, max_parts / RPB), (p.rows + RPB - 1) / RPB));
  p.parts = blocks / C * RPB;
  if (C > 1) {
    std::barrier<> bar(C * threads);
    emu_cluster_bar = &bar;
    emu_launch((unsigned)blocks, threads, [&] { norm_bwd_on_chip<T, TPR, N, kAct, kWide, kPhased>(p); }, C);
  } else {
    emu_launch((unsigned)blocks, threads, [&] { norm_bwd_on_chip<T, TPR, N, kAct, kWide, kPhased>(p); });
  }
  return p.parts;
}

template <class T, bool kAct> static int64_t emu_bwd_rows(const norm_bwd_params<T> &p, int64_t max_parts) {
  constexpr int E = kNormBwdE;
  const int64_t cols = p.cols;
  if (cols <= 32 * E) return emu_bwd_launch<T, 32, kAct>(p, max_parts, 1);
  if (cols <= 64 * E) return emu_bwd_launch<T, 64, kAct>(p, max_parts, 1);
  if (cols <= 128 * E) return emu_bwd_launch<T, 128, kAct>(p, max_parts, 1);
  if (cols <= 256 * E) return emu_bwd_launch<T, 256, kAct>(p, max_parts, 1);
  if (cols <= 512 * E) return emu_bwd_launch<T, 512, kAct>(p, max_parts, 1);
  if (cols <= 1024 * E) return emu_bwd_launch<T, 1024, kAct>(p, max_parts, 1);
  constexpr int W = (sizeof(T) == 2 && !kAct ? kNormBwdWideE : E) / (16 / (int)sizeof(T));
  const int64_t C = (cols + 1024 * W * (16 / sizeof(T)) - 1) / (1024 * W * (16 / sizeof(T)));
  if (C <= kNormMaxCluster) return emu_bwd_launch<T, 1024, kAct, W, !kAct>(p, max_parts, (int)C);
  return 0;
}

// The backward over row views (norm_bwd_phased); 0 past its rows.
template <class T, bool kAct> static int64_t emu_bwd_phased(const norm_bwd_params<T> &p, int64_t max_parts) {
  constexpr int V = 16 / sizeof(T), E = kNormBwdE, N = E / V, W = kAct ? 1 : 2;
  const int64_t ext = p.cols + V - 1;
  if (ext <= 32 * E) return emu_bwd_launch<T, 32, kAct, N, false, true>(p, max_parts, 1);
  if (ext <= 64 * E) return emu_bwd_launch<T, 64, kAct, N, false, true>(p, max_parts, 1);
  if (ext <= 128 * E) return emu_bwd_launch<T, 128, kAct, N, false, true>(p, max_parts, 1);
  if (ext <= 256 * E) return emu_bwd_launch<T, 256, kAct, N, false, true>(p, max_parts, 1);
  if (ext <= 256 * W * E) return emu_bwd_launch<T, 256, kAct, W * N, false, true>(p, max_parts, 1);
  if (ext <= 512 * W * E) return emu_bwd_launch<T, 512, kAct, W * N, false, true>(p, max_parts, 1);
  if (ext <= 1024 * W * E) return emu_bwd_launch<T, 1024, kAct, W * N, false, true>(p, max_parts, 1);
  return 0;
}

// A backward run as norm_bwd_typed makes it; false: ROW_REGISTERS refused it.
template <class T> static bool emu_bwd(norm_bwd_params<T> p, T *dg, T *db, gpuops_algo algo) {
  if (algo == GPUOPS_ALGO_UNFUSED) {
    const norm_map_params<T> m = {p.dx, p.dy, p.x, p.gamma, p.beta, p.mean, p.rstd, p.rows * p.cols, divisor((uint64_t)p.cols), kMapDz, p.act, p.vec};
    emu_launch(2, 256, [&] { norm_map<T>(m); });
    p.dy = p.dx, p.act = GPUOPS_ACT_NONE;
    return emu_bwd(p, dg, db, GPUOPS_ALGO_AUTO);
  }
  const int64_t max_parts = gpuops__norm_max_parts(p.rows, p.cols);
  if (algo != GPUOPS_ALGO_ONLINE && (p.vec || (algo == GPUOPS_ALGO_AUTO && (uintptr_t)p.dy % 16 == (uintptr_t)p.x % 16 && (uintptr_t)p.dx % 16 == (uintptr_t)p.x % 16))) {
    const bool act = p.act != GPUOPS_ACT_NONE;
    const int64_t parts = p.vec ? (act ? emu_bwd_rows<T, true>(p, max_parts) : emu_bwd_rows<T, false>(p, max_parts))
                                : (act ? emu_bwd_phased<T, true>(p, max_parts) : emu_bwd_phased<T, false>(p, max_parts));
    if (parts > 0) {
      if (dg || db) emu_finish(dg, db, p.part, parts, p.ldp, p.cols);
      return true;
    }
  }
  if (algo == GPUOPS_ALGO_ROW_REGISTERS) return false;
  if (dg || db) {
    constexpr int V = 16 / sizeof(T);
    const int64_t tiles = (p.cols + 32 * V - 1) / (32 * V), chunks = std::min<int64_t>(3, p.rows), chunk = (p.rows + chunks - 1) / chunks;
    p.parts = (p.rows + chunk - 1) / chunk;
    emu_launch(dim3e((unsigned)tiles, (unsigned)p.parts), 256, [&] { norm_bwd_columns<T>(p, chunk); });
    emu_finish(dg, db, p.part, p.parts, p.ldp, p.cols);
  }
  emu_launch((unsigned)std::min<int64_t>(p.rows, 2), p.cols >= kNormWideStreamCols ? 1024 : 256, [&] { norm_bwd_stream<T>(p); });
  return true;
}

// One case with one version, emulated: "" or the first difference (norm_check, the test's).
template <class H> static std::string emu_case(const host_case<H> &hc, gpuops_algo algo, double *worst) {
  using T = typename dev_of<H>::type;
  const norm_op_info in = norm_info(hc.op);
  const int64_t n = hc.rows * hc.cols, c = hc.cols;
  std::vector<H> y(n), h(in.res ? n : 0), dg(in.bwd ? c : 0), db(in.bwd ? c : 0);
  std::vector<float> mean(hc.rows), rstd(hc.rows);
  for (auto *v : {&y, &h, &dg, &db}) memset(v->data(), 0xff, v->size() * sizeof(H));  // poisoned: NaN
  memset(mean.data(), 0xff, hc.rows * 4), memset(rstd.data(), 0xff, hc.rows * 4);
  const T *g = hc.affine ? (const T *)hc.gamma.data() : nullptr, *b = hc.affine && !in.rms ? (const T *)hc.beta.data() : nullptr;
  const int act = in.gelu ? (int)hc.approx + 1 : GPUOPS_ACT_NONE;
  bool ran;
  if (!in.bwd) {
    norm_params<T> p = {};
    p.y = (T *)y.data(), p.h = in.res ? (T *)h.data() : nullptr, p.mean = in.rms ? nullptr : mean.data(), p.rstd = rstd.data();
    p.x = (const T *)hc.x.data(), p.res = in.res ? (const T *)hc.res.data() : nullptr, p.gamma = g, p.beta = b;
    p.rows = hc.rows, p.cols = c, p.eps = hc.eps, p.act = act, p.rms = in.rms, p.cluster = 1;
    p.vec = c % (16 / sizeof(T)) == 0;  // host vectors: 16-byte aligned
    ran = emu_fwd(p, algo);
  } else {
    std::vector<float> ws(gpuops_norm_bwd_workspace_size(hc.rows, c) / 4 + 4);
    norm_bwd_params<T> p = {};
    p.dx = (T *)y.data(), p.part = ws.data(), p.dy = (const T *)hc.dy.data(), p.x = (const T *)hc.x.data(), p.gamma = g, p.beta = b;
    p.mean = in.rms ? nullptr : hc.mean.data(), p.rstd = hc.rstd.data(), p.rows = hc.rows, p.cols = c, p.ldp = gpuops__norm_cols4(c);
    p.inv_cols = 1.0f / (float)c, p.act = act, p.rms = in.rms, p.cluster = 1, p.vec = c % (16 / sizeof(T)) == 0;
    ran = emu_bwd(p, (T *)dg.data(), in.rms ? nullptr : (T *)db.data(), algo);
  }
  if (!ran) return "refused";
  return norm_check<H>(hc, algo, y.data(), in.res ? h.data() : nullptr, !in.bwd && !in.rms ? mean.data() : nullptr, !in.bwd ? rstd.data() : nullptr,
                       in.bwd ? dg.data() : nullptr, in.bwd && !in.rms ? db.data() : nullptr, worst);
}

// A case filter: OP[/TYPE[/COLS[/ROWS]]], each part "*" or absent for any.
struct replay_spec {
  std::string op = "*", type = "*";
  int64_t cols = -1, rows = -1;
  explicit replay_spec(const char *a) {
    std::vector<std::string> f(1);
    for (const char *c = a; *c; ++c) *c == '/' ? f.push_back("") : (void)(f.back() += *c);
    op = f[0];
    if (f.size() > 1) type = f[1];
    if (f.size() > 2 && f[2] != "*") cols = atoll(f[2].c_str());
    if (f.size() > 3 && f[3] != "*") rows = atoll(f[3].c_str());
  }
  bool match(const char *o, const char *t, int64_t c, int64_t r) const {
    return (op == "*" || op == o) && (type == "*" || type == t) && (cols < 0 || cols == c) && (rows < 0 || rows == r);
  }
};

static int replay(int argc, char **argv) {
  const uint64_t seed = strtoull(argv[2], nullptr, 0);
  std::vector<replay_spec> specs;
  for (int i = 3; i < argc; ++i) specs.emplace_back(argv[i]);
  if (specs.empty()) specs.emplace_back("*");
  const char *only_algo = getenv("GPUOPS_REPLAY_ALGO");  // e.g. "auto": that version alone
  printf("replay of test_norm's GPU cases, seed %llu%s\n", (unsigned long long)seed, check::quick() ? " (quick)" : "");
  check::rng r(seed);
  for (int i = 0; i < kNormCpuDraws; ++i) r.next();
  int n_cases = 0, n_fail = 0;
  auto each = [&](auto tag, norm_op o) {
    using H = decltype(tag);
    const norm_op_info in = norm_info(o);
    norm_gpu_cases<H>(o, r, false, [&](const host_case<H> &hc) {
      bool any = false;
      for (const replay_spec &q : specs) any = any || q.match(in.name, check::dtype_name<H>(), hc.cols, hc.rows);
      if (!any) return;
      std::vector<gpuops_algo> algos = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_ROW_REGISTERS, GPUOPS_ALGO_ONLINE};
      if (in.res || in.gelu) algos.push_back(GPUOPS_ALGO_UNFUSED);
      for (gpuops_algo al : algos) {
        if (only_algo && strcmp(only_algo, gpuops_algo_name(al))) continue;
        double worst = 0.0;
        const std::string why = emu_case(hc, al, &worst);
        if (why == "refused") continue;
        ++n_cases, n_fail += !why.empty();
        char w[48];
        snprintf(w, sizeof w, "ok, largest error / tolerance %.3f", worst);
        printf("%s %s %s %lld x %lld, eps %g, %s, gelu %s, %s: %s\n", why.empty() ? "ok  " : "FAIL", in.name, check::dtype_name<H>(), (long long)hc.rows,
               (long long)hc.cols, hc.eps, hc.affine ? "gamma/beta" : "no gamma/beta", hc.approx == GPUOPS_GELU_TANH ? "tanh" : "erf", gpuops_algo_name(al),
               why.empty() ? w : why.c_str());
        fflush(stdout);
      }
    });
  };
  for (norm_op o : {N_LN_FWD, N_RMS_FWD, N_ADD_LN_FWD, N_ADD_RMS_FWD, N_LN_GELU_FWD, N_LN_BWD, N_RMS_BWD, N_LN_GELU_BWD}) {
    each(float(), o);
    each(gpuops_f16(), o);
    each(gpuops_bf16(), o);
  }
  printf("replay: %d runs, %d failed\n", n_cases, n_fail);
  return n_fail ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "replay")) return replay(argc, argv);
  const bool only_clusters = argc > 1 && !strcmp(argv[1], "clusters");
  if (argc > 1 && !strcmp(argv[1], "rope")) {
    ropes<float>();
    ropes<__nv_bfloat16>();
    printf("emulate_norm rope: %d checks, %d failed\n", runs, fails);
    return fails ? 1 : 0;
  }
  if (!only_clusters) {
    all<float>();
    all<__nv_bfloat16>();
  }
  clusters<float>();
  clusters<__nv_bfloat16>();
  printf("emulate_norm: %d checks, %d failed\n", runs, fails);
  return fails ? 1 : 0;
}
