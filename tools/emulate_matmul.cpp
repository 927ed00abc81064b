// SPDX-License-Identifier: MIT
// tools/emulate_matmul.cpp - the matmul kernels of gpuops_cuda.cuh (section 7) run on the CPU,
// for checking their index arithmetic where there is no GPU, on tools/emulate_cuda.h (blocks one
// at a time, static arrays for shared memory; the core's warp_reduce on its shuffles), with the
// pre-sm_80 (synchronous) branch of the core's cp.async calls (section 1.4). Each kernel x layout x
// shape (tails, padded and odd leading dimensions, offset pointers, beta) is compared with a
// double-precision product; elements outside C must stay untouched. It does not check cp.async's
// asynchrony, timing, or anything a real GPU adds. Not part of `make test` (it needs C++20 and
// minutes of CPU); run it with tools/emulate_matmul.sh [kernel number 0-10].
// ASYNC=1 tools/emulate_matmul.sh models their sm_80+ branch instead (EMU_ASYNC): a copy
// fills its destination with NaN when issued and lands only when a cp.async.wait_group would have
// waited for its group, so a wrong group count or a read of a stage still in flight fails; it
// also checks each copy's alignment and that no copy is in flight when a kernel ends.
#include <vector_types.h>
#include <vector_functions.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <type_traits>
#include "emulate_cuda.h"
#ifdef EMU_ASYNC
// The core's cp.async calls (section 1.4) as on sm_80+, deferred (mm_body.inc leaves them out).
namespace gpuops {
struct pending_copy { float *dst; const float *src; int bytes, src_bytes; };
thread_local std::vector<std::vector<pending_copy>> cp_groups;  // committed, oldest first
thread_local std::vector<pending_copy> cp_open;                 // issued, not yet committed
std::atomic<long> cp_errors{0};
inline void cp_issue(void *dst, const void *src, int bytes, int src_bytes) {
  if ((uintptr_t)dst % bytes || (uintptr_t)src % bytes)
    if (cp_errors++ < 5) printf("misaligned %d-byte cp.async: dst %p src %p\n", bytes, dst, src);
  for (int i = 0; i < bytes / 4; ++i) static_cast<float *>(dst)[i] = NAN;  // in flight
  cp_open.push_back({static_cast<float *>(dst), static_cast<const float *>(src), bytes, src_bytes});
}
inline void cp_async16(void *dst, const void *src) { cp_issue(dst, src, 16, 16); }
inline void cp_async16_zfill(void *dst, const void *src, int src_bytes) { cp_issue(dst, src, 16, src_bytes); }
inline void cp_async4_zfill(void *dst, const void *src, bool valid) { cp_issue(dst, src, 4, valid ? 4 : 0); }
inline void cp_async_commit() { cp_groups.push_back(cp_open); cp_open.clear(); }
inline void cp_async_wait(int pending) {
  while ((int)cp_groups.size() > pending) {
    for (const pending_copy &c : cp_groups.front())
      for (int i = 0; i < c.bytes / 4; ++i) c.dst[i] = 4 * i < c.src_bytes ? c.src[i] : 0.0f;  // zero-fill past src_bytes
    cp_groups.erase(cp_groups.begin());
  }
}
inline void cp_kernel_end() {
  for (auto &g : cp_groups)
    if (!g.empty() && cp_errors++ < 5) printf("kernel ended with %zu copies in flight\n", g.size());
  if (!cp_open.empty()) ++cp_errors;
  cp_groups.clear(), cp_open.clear();
}
}  // namespace gpuops
#endif
#include "mm_body.inc"
using namespace gpuops;

static uint64_t s_ = 12345;
static float rnd() { s_ = s_ * 6364136223846793005ull + 1442695040888963407ull; return (float)((s_ >> 40) / 16777216.0 * 2 - 1); }
inline bool al16(const void *p) { return ((uintptr_t)p & 15) == 0; }
inline int mode_of(const matmul_operand &o, bool k16) {
  if (o.sx == 1 && o.sk % 4 == 0 && al16(o.ptr)) return kMatmulX16;
  if (o.sx == 1 && o.sk != 1) return kMatmulXScalar;
  if (k16 && o.sk == 1 && o.sx % 4 == 0 && al16(o.ptr)) return kMatmulK16;
  return o.sk == 1 ? kMatmulKScalar : kMatmulXScalar;
}
int fails = 0, runs = 0;
void test(int64_t m, int64_t n, int64_t k, int oa, int ob, int ldpad, int off, float alpha, float beta, int which) {
  int64_t ar = oa ? k : m, ac = oa ? m : k, br = ob ? n : k, bc = ob ? k : n;
  int64_t lda = ac + ldpad, ldb = bc + ldpad, ldc = n + ldpad;
  if (lda < 1) lda = 1; if (ldb < 1) ldb = 1;
  std::vector<float> A(off + ar * lda + 8, NAN), B(off + br * ldb + 8, NAN), C(off + m * ldc + 8, 777.0f), R;
  for (int64_t i = 0; i < ar; ++i) for (int64_t j = 0; j < ac; ++j) A[off + i * lda + j] = rnd();
  for (int64_t i = 0; i < br; ++i) for (int64_t j = 0; j < bc; ++j) B[off + i * ldb + j] = rnd();
  for (int64_t i = 0; i < m; ++i) for (int64_t j = 0; j < n; ++j) C[off + i * ldc + j] = beta == 0 ? NAN : rnd();
  R = C;
  int64_t sai = oa ? 1 : lda, sap = oa ? lda : 1, sbp = ob ? 1 : ldb, sbj = ob ? ldb : 1;
  const float *a = A.data() + off, *b = B.data() + off;
  for (int64_t i = 0; i < m; ++i) for (int64_t j = 0; j < n; ++j) {
    double s = 0; for (int64_t q = 0; q < k; ++q) s += (double)a[i * sai + q * sap] * b[q * sbp + j * sbj];
    float *r = &R[off + i * ldc + j]; *r = (float)(alpha * s + (beta != 0 ? beta * (double)*r : 0.0));
  }
  matmul_params p;
  p.c = C.data() + off; p.a = {a, sai, sap, m}; p.b = {b, sbj, sbp, n};
  p.m = m; p.n = n; p.k = k; p.ldc = ldc; p.alpha = alpha; p.beta = beta;
  p.a_mode = p.b_mode = kMatmulXScalar; p.c_vec = (ldc % 4 == 0 && al16(p.c));
  p.split = 1;  // WARP_TILED's k split needs distributed shared memory: GPU tests only
  auto cd = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  const char *name = "";
  switch (which) {
  case 0: { name = "shared"; int64_t tn = cd(n, 32), tiles = tn * cd(m, 32); emu_launch(2, {32, 32}, [&] { matmul_shared_tiled(p, tn, tiles); }); break; }
  case 1: { name = "reg1d"; int64_t tn = cd(n, 64), tiles = tn * cd(m, 64); emu_launch(2, {512, 1}, [&] { matmul_register_1d(p, tn, tiles); }); break; }
  case 2: { name = "reg2d"; int64_t tn = cd(n, 128), tiles = tn * cd(m, 128); emu_launch(2, {256, 1}, [&] { matmul_register_2d<false>(p, tn, tiles); }); break; }
  case 3: { name = "vec"; p.a_mode = mode_of(p.a, true); p.b_mode = mode_of(p.b, true); int64_t tn = cd(n, 128), tiles = tn * cd(m, 128); emu_launch(2, {256, 1}, [&] { matmul_register_2d<true>(p, tn, tiles); }); break; }
  case 4: case 5: case 6: {
    p.a_mode = mode_of(p.a, false); p.b_mode = mode_of(p.b, false);
    auto go = [&](auto cfg) { using Cf = decltype(cfg); int64_t tm = cd(m, Cf::BM), tn = cd(n, Cf::BN); emu_launch(3, {Cf::THREADS, 1}, [&] { matmul_warp_tiled<Cf>(p, tm, tn); }); };
    if (which == 4) { name = "wt128"; go(matmul_wt_128x128{}); }
    if (which == 5) { name = "wt256"; go(matmul_wt_128x256{}); }
    if (which == 6) { name = "wt64"; go(matmul_wt_64x64{}); }
    break; }
  case 9: {
    name = "gemv";
    matmul_gemv_params g; g.alpha = alpha; g.beta = beta; g.k = k;
    if (m == 1) { g.y = p.c; g.sy = 1; g.x = b; g.so = sbj; g.sq = sbp; g.v = a; g.sv = sap; g.outputs = n; }
    else { g.y = p.c; g.sy = ldc; g.x = a; g.so = sai; g.sq = sap; g.v = b; g.sv = sbp; g.outputs = m; }
    if (g.sq == 1 || g.outputs == 1) emu_launch(2, {256, 1}, [&] { matmul_gemv_dot(g); });
    else emu_launch(2, {32, 32}, [&] { matmul_gemv_cols(g); });
    break; }
  case 10: {  // FEW_ROWS, mapped as matmul_few_rows maps it (gpuops_cuda.cuh 7.5)
    name = "rows";
    matmul_rows_params g; g.y = p.c; g.k = k; g.alpha = alpha; g.beta = beta;
    if (m <= n) { g.syr = ldc; g.syo = 1; g.x = b; g.so = sbj; g.sq = sbp; g.v = a; g.svr = sai; g.svq = sap; g.rows = m; g.outputs = n; }
    else { g.syr = 1; g.syo = ldc; g.x = a; g.so = sai; g.sq = sap; g.v = b; g.svr = sbj; g.svq = sbp; g.rows = n; g.outputs = m; }
    const bool dot = g.so != 1;
    g.x16 = (dot ? g.so % 4 == 0 : g.sq % 4 == 0) && al16(g.x);
    g.v16 = g.svq == 1 && g.svr % 4 == 0 && al16(g.v);
    p.a_mode = g.x16, p.b_mode = g.v16 + 2 * dot;  // reported on failure
    g.split = 1;  // the cluster's k split needs distributed shared memory: GPU tests only
    auto go = [&](auto ic) {
      constexpr int R = kMatmulRowsPerPass[decltype(ic)::value], U = kMatmulRowsUnroll[decltype(ic)::value];
      g.groups = cd(g.rows, R);
      const int64_t tiles = matmul_rows_tiles(g);
      const unsigned grid = tiles < 3 ? (unsigned)tiles : 3;  // fewer blocks than tiles: the tile loop runs
      if (dot) emu_launch(grid, {256, 1}, [&] { matmul_rows_dot<R, U>(g); });
      else emu_launch(grid, {256, 1}, [&] { matmul_rows_cols<R, U>(g); });
    };
    const int64_t rows = m <= n ? m : n;
    if (rows <= kMatmulRowsPerPass[0]) go(std::integral_constant<int, 0>{});
    else if (rows <= kMatmulRowsPerPass[1]) go(std::integral_constant<int, 1>{});
    else go(std::integral_constant<int, 2>{});
    break; }
  case 7: { name = "naive"; int64_t tm = cd(m, 32), tiles = tm * cd(n, 8); emu_launch(3, {32, 8}, [&] { matmul_naive(p, tm, tiles); }); break; }
  case 8: { name = "coal"; int64_t tn = cd(n, 32), tiles = tn * cd(m, 8); emu_launch(3, {32, 8}, [&] { matmul_coalesced(p, tn, tiles); }); break; }
  }
  ++runs;
  double rel = fmax(1e-5, (k + 2) * 1.2e-7);
  for (size_t e = 0; e < C.size(); ++e) {
    int64_t o = (int64_t)e - off; int64_t i = o >= 0 ? o / ldc : -1, j = o >= 0 ? o % ldc : -1;
    bool inside = i >= 0 && i < m && j < n;
    bool ok = inside ? fabs(C[e] - R[e]) <= rel * (fabs(R[e]) + 1e-3) * 50 + 1e-5 : (C[e] == R[e]);
    if (!ok) { printf("FAIL %s %lldx%lldx%lld op %d%d pad %d off %d beta %g: e %zu (i %lld j %lld) got %g want %g (modes %d %d)\n", name, (long long)m, (long long)n, (long long)k, oa, ob, ldpad, off, beta, e, (long long)i, (long long)j, C[e], R[e], p.a_mode, p.b_mode); ++fails; return; }
  }
}
int main(int argc, char **argv) {
#ifdef EMU_ASYNC
  emu_thread_end = cp_kernel_end;
#endif
  int only = argc > 1 ? atoi(argv[1]) : -1;
  struct S { int64_t m, n, k; } shapes[] = {{1, 1, 1}, {17, 33, 65}, {130, 260, 36}, {64, 64, 64}, {129, 257, 19}, {5, 7, 0}};
  if (only == 9) {
    S g[] = {{1, 1, 1}, {1, 67, 45}, {67, 1, 45}, {1, 300, 260}, {300, 1, 260}, {1, 5, 200}, {1, 1, 300}};
    for (auto s : g) for (int o = 0; o < 4; ++o) for (int v = 0; v < 3; ++v) {
      int pad = v == 0 ? 0 : v == 1 ? 4 : 1, off = v == 2 ? 1 : 0; (void)0;
      test(s.m, s.n, s.k, o >> 1, o & 1, pad, off, v == 2 ? 1.5f : 1.0f, v == 0 ? 0.0f : 0.5f, 9);
    }
  }
  if (only == 10) {
    S g[] = {{2, 67, 45}, {3, 17, 1}, {7, 130, 17}, {16, 64, 64}, {16, 33, 260}, {17, 5, 131}, {33, 129, 67}, {64, 36, 40},
             {5, 3, 4095}, {67, 2, 45}, {130, 7, 17}, {33, 17, 65}, {40, 64, 36}, {64, 64, 64}, {2, 2, 9}, {300, 20, 36}};
    for (auto s : g) for (int o = 0; o < 4; ++o) for (int v = 0; v < 3; ++v) {
      int pad = v == 0 ? 0 : v == 1 ? 4 : 1, off = v == 2 ? 1 : 0;
      test(s.m, s.n, s.k, o >> 1, o & 1, pad, off, v == 2 ? 1.5f : 1.0f, v == 0 ? 0.0f : 0.5f, 10);
    }
  }
  for (int w = 0; w < 9; ++w) {
    if (only >= 0 && w != only) continue;
    for (auto s : shapes) for (int o = 0; o < 4; ++o)
      for (int v = 0; v < 3; ++v) {
        int pad = v == 0 ? 0 : v == 1 ? 4 : 1, off = v == 2 ? 1 : 0; (void)0;
        test(s.m, s.n, s.k, o >> 1, o & 1, pad, off, v == 2 ? 1.5f : 1.0f, v == 0 ? 0.0f : 0.5f, w);
      }
  }
#ifdef EMU_ASYNC
  printf("cp.async model: %ld errors\n", (long)cp_errors);
  fails += (int)cp_errors;
#endif
  printf("%d runs, %d failures\n", runs, fails);
  return fails != 0;
}
