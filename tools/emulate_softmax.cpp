// SPDX-License-Identifier: MIT
// tools/emulate_softmax.cpp - the short-row kernels of gpuops_cuda.cuh run on the CPU through
// tools/emulate_cuda.h (a thread per CUDA thread, real barriers and shuffles: a warp whose lanes
// leave the row loop at different trips deadlocks here), compared with gpuops.h's CPU forms:
// softmax_fwd_on_chip and softmax_bwd_on_chip on groups of TPR = 1 .. 16 lanes (softmax, log_softmax,
// backward) and reduce_rows_group (sum, max, min), and for rows shorter than a vector the packed
// kernels softmax_packed and reduce_rows_packed, f32 and bf16, the kernel AUTO picks for each length;
// then on clusters (emulate_cuda.h's model): the split-row kernels softmax_fwd_split,
// softmax_bwd_split and reduce_rows_split, and the on-chip cluster kernels,
// NaN and +-inf inputs,
// aligned (128-bit) and offset pointers (rows at every phase: the kPhased forms), row counts that leave a warp's last rows dead,
// and grids smaller than the rows (the row loop runs again). Outputs poisoned, guard elements on
// both sides. Built by tools/emulate_softmax.sh under AddressSanitizer.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <vector_types.h>
#include <vector_functions.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <barrier>
#include <type_traits>
#include <vector>

#define GPUOPS_ONLY_SOFTMAX
#define GPUOPS_ONLY_REDUCE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "emulate_cuda.h"


#include "softmax_body.inc"

using namespace gpuops;

static uint64_t s_ = 88172645463325252ull;
static double uni(double lo, double hi) { s_ ^= s_ << 13, s_ ^= s_ >> 7, s_ ^= s_ << 17; return lo + (hi - lo) * (double)(s_ >> 11) / 9007199254740992.0; }
static int fails = 0, runs = 0;

template <class T> static float f32(T v) { return (float)v; }
template <> float f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> static T from(float v);
template <> float from<float>(float v) { return v; }
template <> __nv_bfloat16 from<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

constexpr int kGuard = 40;  // poisoned elements on each side of an output

// 0 (softmax), 1 (log_softmax), 2 (backward).
// split > 0: the split-row kernels on clusters of `split` blocks of `threads` threads, `grid`
// clusters; onchip > 0: softmax_fwd_on_chip / softmax_bwd_on_chip on clusters of `onchip` blocks of
// 256 (AUTO's cluster configuration), `grid` clusters.
template <class T> static void softmax_case(int op, int64_t rows, int64_t cols, int off, unsigned grid, int split = 0, unsigned threads = 64,
                                            int onchip = 0) {
  constexpr int V = 16 / sizeof(T);
  const int64_t n = rows * cols;
  // Inputs at element offset `off` of a 16-byte aligned buffer; the output with guards.
  std::vector<T> abuf(n + 16), bbuf(n + 16), obuf(n + 2 * kGuard + 16);
  T *a = abuf.data() + off, *b = bbuf.data() + off;
  while ((uintptr_t)a % 16) a = (T *)((char *)a + sizeof(T)), b = (T *)((char *)b + sizeof(T));
  a += off, b += off;
  for (int64_t i = 0; i < n; ++i) a[i] = from<T>((float)uni(-8, 8)), b[i] = from<T>((float)uni(0, 1));
  if (rows > 1 && op != 2)
    for (int64_t j = 0; j < cols; ++j) a[cols + j] = from<T>(-INFINITY);  // row 1 all -inf
  if (rows > 2 && cols > 1 && op != 2) a[2 * cols + 1] = from<T>(-INFINITY);  // a masked entry
  if (rows > 5) a[3 * cols] = from<T>(NAN), a[4 * cols] = from<T>(INFINITY), a[5 * cols + cols - 1] = from<T>(-INFINITY);
  for (auto &v : obuf) v = from<T>(NAN);
  T *o = obuf.data() + kGuard;
  while ((uintptr_t)o % 16) ++o;
  o += off;
  std::vector<T> want(n);
  gpuops_status st;
  if (std::is_same<T, float>::value) {
    st = op == 0 ? gpuops_cpu_softmax_fwd_f32((float *)want.data(), (const float *)a, rows, cols)
         : op == 1 ? gpuops_cpu_log_softmax_fwd_f32((float *)want.data(), (const float *)a, rows, cols)
                   : gpuops_cpu_softmax_bwd_f32((float *)want.data(), (const float *)a, (const float *)b, rows, cols);
  } else {
    st = op == 0 ? gpuops_cpu_softmax_fwd_bf16((gpuops_bf16 *)want.data(), (const gpuops_bf16 *)a, rows, cols)
         : op == 1 ? gpuops_cpu_log_softmax_fwd_bf16((gpuops_bf16 *)want.data(), (const gpuops_bf16 *)a, rows, cols)
                   : gpuops_cpu_softmax_bwd_bf16((gpuops_bf16 *)want.data(), (const gpuops_bf16 *)a, (const gpuops_bf16 *)b, rows, cols);
  }
  if (st != GPUOPS_OK) abort();
  softmax_params<T> p;
  p.out = o, p.a = a, p.b = op == 2 ? b : nullptr, p.rows = rows, p.cols = cols, p.log = op == 1, p.cluster = 1;
  p.vec = ((uintptr_t)o % 16 == 0) && ((uintptr_t)a % 16 == 0) && (op != 2 || (uintptr_t)b % 16 == 0) && cols % V == 0;
  // As AUTO: rows that are not whole vectors with every array at one phase take the kPhased forms,
  // sized for ext view columns.
  const bool phased = !p.vec && (uintptr_t)o % 16 == (uintptr_t)a % 16 && (op != 2 || (uintptr_t)b % 16 == (uintptr_t)a % 16);
  const int64_t ext = phased ? cols + V - 1 : cols;
  auto by_phase = [&](auto f) { phased ? f(std::true_type()) : f(std::false_type()); };
  if (split > 0) {
    p.cluster = split;
    if (op == 2) emu_launch_cluster(dim3e(grid * split), dim3e(threads), split, [&] { softmax_bwd_split<T>(p); });
    else emu_launch_cluster(dim3e(grid * split), dim3e(threads), split, [&] { softmax_fwd_split<T>(p); });
  } else if (onchip > 0) {
    constexpr bool F = sizeof(T) == 2;
    const int64_t per = 256 * (op == 2 ? kSoftmaxBwdE : kSoftmaxLongVectors * V);  // columns a block holds
    onchip = std::max<int>(onchip, (int)((ext + per - 1) / per));
    p.cluster = onchip;
    by_phase([&](auto ph) {
      constexpr bool P = decltype(ph)::value;
      if (op == 2) emu_launch_cluster(dim3e(grid * onchip), dim3e(256), onchip, [&] { softmax_bwd_on_chip<T, 256, kSoftmaxBwdE, true, P>(p); });
      else emu_launch_cluster(dim3e(grid * onchip), dim3e(256), onchip, [&] { softmax_fwd_on_chip<T, 256, kSoftmaxLongVectors * V, false, F, P>(p); });
    });
  } else if (cols < V) {  // AUTO's packed rows: vec means aligned pointers
    p.vec = ((uintptr_t)o % 16 == 0) && ((uintptr_t)a % 16 == 0) && (op != 2 || (uintptr_t)b % 16 == 0);
    with_packed_cols<16 / (int)sizeof(T)>(cols, [&](auto c) {  // as AUTO picks
      constexpr int C = decltype(c)::value;
      if (op == 2) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_packed<T, C, true>(p); });
      else emu_launch(dim3e(grid), dim3e(256), [&] { softmax_packed<T, C, false>(p); });
    });
  } else if (ext > kSoftmaxGroupMaxTPR * V) {  // past the groups: AUTO's warp per row, or the backward's 128 threads
    by_phase([&](auto ph) {
      constexpr bool P = decltype(ph)::value;
      constexpr int BS = kSoftmaxBwdShortE, BE = kSoftmaxBwdE, WS = kSoftmaxWarpShortE, W = kSoftmaxWarpE;
      if (op == 2) {
        if (ext <= 32 * BS) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_bwd_on_chip<T, 32, BS, false, P>(p); });
        else if (ext <= 32 * BE) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_bwd_on_chip<T, 32, BE, false, P>(p); });
        else if (ext <= 128 * BS) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_bwd_on_chip<T, 128, BS, false, P>(p); });
        else if (ext <= 256 * BS) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_bwd_on_chip<T, 256, BS, false, P>(p); });
        else abort();  // not a case of this program
      } else {
        if (ext <= 32 * WS) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_fwd_on_chip<T, 32, WS, false, sizeof(T) == 2, P>(p); });
        else if (ext <= 32 * W) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_fwd_on_chip<T, 32, W, false, sizeof(T) == 2, P>(p); });
        else if (ext <= 256 * kSoftmaxBlockE) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_fwd_on_chip<T, 256, kSoftmaxBlockE, false, sizeof(T) == 2, P>(p); });
        else if (sizeof(T) == 2 && ext <= 256 * kSoftmaxBlockMidE)
          emu_launch(dim3e(grid), dim3e(256), [&] { softmax_fwd_on_chip<T, 256, kSoftmaxBlockMidE, false, true, P>(p); });
        else abort();
      }
    });
  } else {
    by_phase([&](auto ph) {
      constexpr bool P = decltype(ph)::value;
      with_group_lanes<16 / (int)sizeof(T), kSoftmaxGroupMaxTPR>(ext, [&](auto tpr) {  // as AUTO picks
        constexpr int TPR = decltype(tpr)::value;
        if (op == 2) emu_launch(dim3e(grid), dim3e(256), [&] { softmax_bwd_on_chip<T, TPR, V, false, P>(p); });
        else emu_launch(dim3e(grid), dim3e(256), [&] { softmax_fwd_on_chip<T, TPR, V, true, sizeof(T) == 2, P>(p); });
      });
    });
  }
  ++runs;
  char ctx[160];
  snprintf(ctx, sizeof ctx, "%s %s %lld x %lld offset %d grid %u vec %d phased %d split %d x %u onchip %d", op == 0 ? "softmax" : op == 1 ? "log_softmax" : "backward",
           sizeof(T) == 4 ? "f32" : "bf16", (long long)rows, (long long)cols, off, grid, (int)p.vec, (int)phased, split, threads, onchip);
  for (T *g = obuf.data(); g < obuf.data() + obuf.size(); ++g)
    if ((g < o || g >= o + n) && !isnan(f32(*g))) { printf("FAIL %s: wrote outside the output at %lld\n", ctx, (long long)(g - o)); ++fails; return; }
  const double tol = sizeof(T) == 4 ? 2e-5 : 2e-2;
  // The backward's error is absolute in y_i * (|dy_i| + sum_j |dy_j y_j|) (the dot's rounding), as
  // tests/test_softmax.cu has it.
  std::vector<double> dots(op == 2 ? rows : 0);
  for (int64_t r = 0; r < (int64_t)dots.size(); ++r)
    for (int64_t j = 0; j < cols; ++j) dots[r] += fabs((double)f32(a[r * cols + j]) * f32(b[r * cols + j]));
  for (int64_t i = 0; i < n; ++i) {
    const double g = f32(o[i]), w = f32(want[i]);
    const double sc = op == 2 ? (sizeof(T) == 4 ? 1e-5 : 1.6e-2) * fabs(f32(b[i])) * (fabs(f32(a[i])) + dots[i / cols]) : 0.0;
    const bool ok = isnan(w) ? isnan(g) : (g == w || fabs(g - w) <= tol * (1.0 + fabs(w)) + sc);
    if (!ok) { printf("FAIL %s: [%lld] = %.8g, want %.8g\n", ctx, (long long)i, g, w); ++fails; return; }
  }
}

// split > 0: reduce_rows_split on `grid` clusters of `split` blocks of `threads` threads.
template <class T> static void reduce_case(int max, int64_t rows, int64_t cols, int off, unsigned grid, int split = 0, unsigned threads = 64) {
  constexpr int V = 16 / sizeof(T);
  const int64_t n = rows * cols;
  std::vector<T> abuf(n + 16);
  T *a = abuf.data();
  while ((uintptr_t)a % 16) ++a;
  a += off;
  for (int64_t i = 0; i < n; ++i) a[i] = from<T>((float)uni(-4, 4));
  std::vector<float> obuf(rows + 2 * kGuard, NAN), want(rows);
  float *o = obuf.data() + kGuard;
  const gpuops_reduce_op op = max == 1 ? GPUOPS_REDUCE_MAX : max == 2 ? GPUOPS_REDUCE_MIN : GPUOPS_REDUCE_SUM;
  if (rows > 3) a[2 * cols] = from<T>(NAN), a[3 * cols + cols - 1] = from<T>(max == 2 ? -INFINITY : INFINITY);
  if ((std::is_same<T, float>::value ? gpuops_cpu_reduce_rows_f32(want.data(), (const float *)a, rows, cols, op)
                                     : gpuops_cpu_reduce_rows_bf16(want.data(), (const gpuops_bf16 *)a, rows, cols, op)) != GPUOPS_OK)
    abort();
  bool vec = (uintptr_t)a % 16 == 0 && cols % V == 0;
  if (split > 0) {
    auto run = [&](auto op) {
      reduce_split_params<T, decltype(op)> p{o, a, rows, cols, split, op};
      emu_launch_cluster(dim3e(grid * split), dim3e(threads), split, [&] { reduce_rows_split<T, decltype(op)>(p); });
    };
    if (max == 1) run(maximum());
    else if (max == 2) run(minimum());
    else run(plus());
  } else if (cols < V) {  // AUTO's packed rows: vec means x and out aligned
    vec = (uintptr_t)a % 16 == 0 && (uintptr_t)o % 16 == 0;
    with_packed_cols<16 / (int)sizeof(T)>(cols, [&](auto c) {  // as AUTO picks
      constexpr int C = decltype(c)::value;
      if (max == 1) emu_launch(dim3e(grid), dim3e(256), [&] { reduce_rows_packed<T, C, maximum>(o, a, rows, vec, maximum()); });
      else if (max == 2) emu_launch(dim3e(grid), dim3e(256), [&] { reduce_rows_packed<T, C, minimum>(o, a, rows, vec, minimum()); });
      else emu_launch(dim3e(grid), dim3e(256), [&] { reduce_rows_packed<T, C, plus>(o, a, rows, vec, plus()); });
    });
  } else {
    with_group_lanes<16 / (int)sizeof(T), 16>(cols, [&](auto tpr) {  // as AUTO picks
      constexpr int TPR = decltype(tpr)::value;
      if (max == 1) emu_launch(dim3e(grid), dim3e(256), [&] { reduce_rows_group<T, TPR, maximum>(o, a, rows, cols, vec, maximum()); });
      else if (max == 2) emu_launch(dim3e(grid), dim3e(256), [&] { reduce_rows_group<T, TPR, minimum>(o, a, rows, cols, vec, minimum()); });
      else emu_launch(dim3e(grid), dim3e(256), [&] { reduce_rows_group<T, TPR, plus>(o, a, rows, cols, vec, plus()); });
    });
  }
  ++runs;
  char ctx[160];
  snprintf(ctx, sizeof ctx, "reduce %s %s %lld x %lld offset %d grid %u vec %d split %d x %u", max == 1 ? "max" : max == 2 ? "min" : "sum",
           sizeof(T) == 4 ? "f32" : "bf16", (long long)rows, (long long)cols, off, grid, (int)vec, split, threads);
  for (size_t i = 0; i < obuf.size(); ++i)
    if ((i < kGuard || i >= kGuard + (size_t)rows) && !isnan(obuf[i])) { printf("FAIL %s: wrote outside out\n", ctx); ++fails; return; }
  for (int64_t r = 0; r < rows; ++r)
    if (!(isnan(want[r]) ? isnan(o[r]) : o[r] == want[r] || fabs(o[r] - want[r]) <= 1e-5 * (1.0 + cols))) { printf("FAIL %s: row %lld = %.8g, want %.8g\n", ctx, (long long)r, o[r], want[r]); ++fails; return; }
}

int main() {
  const int64_t cols_list[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128};
  const int64_t rows_list[] = {1, 2, 7, 33, 300, 4099};
  for (int64_t c : cols_list)
    for (int64_t r : rows_list)
      for (int off : {0, 1, 2}) {
        if ((r > 300 && c > 7) || (off == 2 && c > 7)) continue;  // 4099 rows and offset 2: packed rows
        const unsigned grid = r > 100 ? 1 : 2;  // 300 (4099 packed) rows on one block: the row loop runs again
        for (int op = 0; op < 3; ++op) {
          if (c <= 64) softmax_case<float>(op, r, c, off, grid);
          softmax_case<__nv_bfloat16>(op, r, c, off, grid);
        }
        for (int mx = 0; mx < 3; ++mx) {
          if (c <= 64) reduce_case<float>(mx, r, c, off, grid);
          reduce_case<__nv_bfloat16>(mx, r, c, off, grid);
        }
      }
  // Split rows: clusters of 2 to 5 blocks; slices of one width (multiples of 64 columns), the last
  // short or empty (100 columns on 4 blocks: 64, 36, 0, 0); rows past the clusters (the row loop
  // runs again, the exchange's two slots alternate); odd lengths and offset pointers (element path).
  const int before = runs;
  struct { int64_t rows, cols; int C; unsigned grid, threads; } sp[] = {
      {1, 100, 4, 1, 64},  {3, 1000, 2, 1, 64}, {3, 1000, 3, 2, 32}, {5, 4099, 4, 2, 64}, {2, 8192, 5, 1, 96},
      {4, 777, 2, 4, 64},  {1, 64, 2, 1, 32},   {7, 1536, 3, 3, 64},
  };
  for (auto &c : sp)
    for (int off : {0, 1}) {
      for (int op = 0; op < 3; ++op) {
        softmax_case<float>(op, c.rows, c.cols, off, c.grid, c.C, c.threads);
        softmax_case<__nv_bfloat16>(op, c.rows, c.cols, off, c.grid, c.C, c.threads);
      }
      for (int mx = 0; mx < 3; ++mx) {
        reduce_case<float>(mx, c.rows, c.cols, off, c.grid, c.C, c.threads);
        reduce_case<__nv_bfloat16>(mx, c.rows, c.cols, off, c.grid, c.C, c.threads);
      }
    }
  // AUTO's on-chip cluster kernels (256 threads a block): rows of up to 2 x 8192 f32 / 2 x 16384
  // bf16 (forward) and 2 x 4096 (backward) on clusters of 2, 3 rows on one cluster.
  for (int off : {0, 1}) {
    softmax_case<float>(0, 3, 9000, off, 1, 0, 256, 2);
    softmax_case<float>(1, 3, 16384, off, 1, 0, 256, 2);
    softmax_case<__nv_bfloat16>(0, 3, 20000, off, 1, 0, 256, 2);
    softmax_case<float>(2, 3, 5000, off, 1, 0, 256, 2);
    softmax_case<__nv_bfloat16>(2, 3, 8192, off, 1, 0, 256, 2);
    // Odd lengths: rows at every phase (kPhased where the arrays share one), the first and last
    // vectors of a row element by element; 16381 bf16 at offset 1 needs a third block.
    softmax_case<float>(0, 3, 9001, off, 1, 0, 256, 2);
    softmax_case<__nv_bfloat16>(1, 3, 16381, off, 1, 0, 256, 2);
    softmax_case<__nv_bfloat16>(2, 3, 8191, off, 1, 0, 256, 2);
  }
  // Rows past the groups: a warp per row (forward; backward to 16 elements a thread), then the
  // backward's 128 threads a row, two rows a block (3 rows on one block: its second row dead on the
  // second trip), aligned and at every phase (1024 at offset 1: a block of 256 a row).
  for (int off : {0, 1})
    for (int64_t c : {129, 200, 513, 1000, 1024}) {
      for (int op = 0; op < 3; ++op) {
        softmax_case<__nv_bfloat16>(op, 3, c, off, 1);
        if (c <= 1000) softmax_case<float>(op, 3, c, off, 1);
      }
    }
  // The 16-bit forward's block of 256 with 4 vectors a thread (rows of 4097 to 8192), aligned and at every phase.
  for (int off : {0, 1})
    for (int64_t c : {4097, 8185})
      for (int op = 0; op < 2; ++op) softmax_case<__nv_bfloat16>(op, 3, c, off, 1);
  printf("emulate_softmax: %d runs (%d on clusters), %d failed\n", runs, runs - before, fails);
  return fails != 0;
}
