// SPDX-License-Identifier: MIT
// tools/emulate_gemm.cpp - the tensor-core GEMM kernels of gpuops_cuda.cuh (section 9) run on the
// CPU, for checking their index arithmetic, fragment layouts, swizzles, pipeline and epilogue where
// there is no GPU. Built on tools/emulate_cuda.h (a thread per CUDA thread, blocks one at a time),
// with the warp-wide instructions (ldmatrix, mma.sync, WMMA) modelled in tools/emulate_mma.h.
// Each kernel x layout x shape (tails, unaligned leading dimensions, offset pointers, alpha, beta
// over NaN, every epilogue) is compared with the library's CPU reference (gpuops_cpu_gemm_*); the
// elements outside C and preact must stay untouched; and the loss, AdamW and linear-backward
// kernels against their CPU forms. cp.async runs its synchronous (pre-sm_80)
// branch, so the pipeline's group counting is not checked here. Not part of `make test` (C++20,
// minutes of CPU): run tools/emulate_gemm.sh [substring of the case names].
#define GPUOPS_ONLY_GEMM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <vector_types.h>
#include <vector_functions.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string>
#include <type_traits>
#include <vector>
#include "emulate_cuda.h"
#include "emulate_mma.h"

#include "gemm_body.inc"
using namespace gpuops;
// The launcher's gemm_either (9.5, not extracted): the epilogue as WMMA and MMA_SYNC take it.
template <class T, class TC> gemm_epilogue_either<T> gemm_either_of(const gemm_epilogue<TC> &e) {
  gemm_epilogue_either<T> x = {};
  if constexpr (std::is_same<TC, float>::value) x.f32_epi = e, x.f32 = 1;
  else x.narrow = e, x.f32 = 0;
  return x;
}

// ---- the cases ---------------------------------------------------------------------------------
static uint64_t s_ = 12345;
static float rnd() { s_ = s_ * 6364136223846793005ull + 1442695040888963407ull; return (float)((s_ >> 40) / 16777216.0 * 2 - 1); }
static int fails = 0, runs = 0;
static const char *filter = nullptr;

template <class T> struct host_of;
template <> struct host_of<__half> { using type = gpuops_f16; };
template <> struct host_of<__nv_bfloat16> { using type = gpuops_bf16; };
template <> struct host_of<float> { using type = float; };
template <class H> H host_from(float v);
template <> gpuops_f16 host_from<gpuops_f16>(float v) { return gpuops_f32_to_f16(v); }
template <> gpuops_bf16 host_from<gpuops_bf16>(float v) { return gpuops_f32_to_bf16(v); }
template <> float host_from<float>(float v) { return v; }
static float host_to(gpuops_f16 h) { return gpuops_f16_to_f32(h); }
static float host_to(gpuops_bf16 h) { return gpuops_bf16_to_f32(h); }
static float host_to(float f) { return f; }

template <class T, class TC>
static gpuops_status cpu_ref(TC *c, const T *a, const T *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float al, float be,
                             gpuops_op oa, gpuops_op ob, const gpuops_epilogue *e) {
  if constexpr (std::is_same<T, gpuops_f16>::value) {
    if constexpr (std::is_same<TC, float>::value) return gpuops_cpu_gemm_f16_f32(c, a, b, m, n, k, lda, ldb, ldc, al, be, oa, ob, e);
    else return gpuops_cpu_gemm_f16(c, a, b, m, n, k, lda, ldb, ldc, al, be, oa, ob, e);
  } else {
    if constexpr (std::is_same<TC, float>::value) return gpuops_cpu_gemm_bf16_f32(c, a, b, m, n, k, lda, ldb, ldc, al, be, oa, ob, e);
    else return gpuops_cpu_gemm_bf16(c, a, b, m, n, k, lda, ldb, ldc, al, be, oa, ob, e);
  }
}

// kernel: 0 WMMA, 1..3 MMA_SYNC configurations (256x128, skinny, staged), 4 the few-rows kernels
// (NT with 16-byte rows, m <= 8: gemm_gemv for m = 1, else gemm_decode)
template <class T, class TC>
static void test(int kernel, int64_t m, int64_t n, int64_t k, int oa, int ob, int ldpad, int off, float alpha, float beta, int act, bool bias,
                 bool resid, bool pre, int stages = 3) {
  using H = typename host_of<T>::type;
  using HC = typename std::conditional<std::is_same<TC, float>::value, float, H>::type;
  const char *kn[] = {"wmma", "mma 256x128", "mma skinny", "mma staged", "decode"};
  char name[256];
  snprintf(name, sizeof name, "%s %s->%s %lldx%lldx%lld %c%c ldpad %d off %d a %g b %g act %d%s%s%s st %d", kn[kernel],
           std::is_same<T, __half>::value ? "f16" : "bf16", std::is_same<TC, float>::value ? "f32" : "16", (long long)m, (long long)n,
           (long long)k, oa ? 'T' : 'N', ob ? 'T' : 'N', ldpad, off, alpha, beta, act, bias ? " bias" : "", resid ? " resid" : "", pre ? " pre" : "", stages);
  if (filter && !strstr(name, filter)) return;
  ++runs;
  const int64_t ar = oa ? k : m, ac = oa ? m : k, br = ob ? n : k, bc = ob ? k : n;
  const int64_t lda = ac + ldpad, ldb = bc + ldpad, ldc = n + ldpad;
  std::vector<H> A(off + ar * lda + 8), B(off + br * ldb + 8);
  for (auto &v : A) v = host_from<H>(NAN);
  for (auto &v : B) v = host_from<H>(NAN);
  for (int64_t i = 0; i < ar; ++i) for (int64_t j = 0; j < ac; ++j) A[off + i * lda + j] = host_from<H>(rnd());
  for (int64_t i = 0; i < br; ++i) for (int64_t j = 0; j < bc; ++j) B[off + i * ldb + j] = host_from<H>(rnd());
  std::vector<HC> C(off + m * ldc + 8, host_from<HC>(777.0f)), Bi(n + 1), R(m * ldc + 1), P(off + m * ldc + 8, host_from<HC>(555.0f));
  for (int64_t i = 0; i < m; ++i) for (int64_t j = 0; j < n; ++j) C[off + i * ldc + j] = host_from<HC>(beta == 0 ? NAN : rnd());
  for (auto &v : Bi) v = host_from<HC>(rnd());
  for (auto &v : R) v = host_from<HC>(rnd());
  std::vector<HC> Cref = C, Pref = P;
  gpuops_epilogue e = {};
  e.act = (gpuops_activation)act;
  e.bias = bias ? Bi.data() : nullptr;
  e.residual = resid ? R.data() : nullptr, e.ldr = ldc;
  e.ldp = ldc;
  e.preact = pre ? Pref.data() + off : nullptr;
  if (cpu_ref<H, HC>(Cref.data() + off, A.data() + off, B.data() + off, m, n, k, lda, ldb, ldc, alpha, beta, (gpuops_op)oa, (gpuops_op)ob, &e) != GPUOPS_OK) {
    printf("FAIL %s: cpu reference refused\n", name);
    ++fails;
    return;
  }
  gemm_params p;
  p.a = A.data() + off, p.b = B.data() + off, p.m = m, p.n = n, p.k = k, p.lda = lda, p.ldb = ldb, p.trans_a = oa, p.trans_b = ob;
  p.a_vec = ((uintptr_t)p.a % 16 == 0) && lda % 8 == 0, p.b_vec = ((uintptr_t)p.b % 16 == 0) && ldb % 8 == 0;
  gemm_epilogue<TC> ep;
  ep.c = (TC *)(C.data() + off), ep.bias = (const TC *)e.bias, ep.residual = (const TC *)e.residual, ep.preact = pre ? (TC *)(P.data() + off) : nullptr;
  ep.m = m, ep.n = n, ep.ldc = ldc, ep.ldr = ldc, ep.ldp = ldc, ep.alpha = alpha, ep.beta = beta, ep.act = act;
  const gemm_epilogue_either<T> epx = gemm_either_of<T>(ep);
  auto go = [&](auto cfg, auto kern) {
    using Cfg = decltype(cfg);
    const int64_t tm = (m + Cfg::BM - 1) / Cfg::BM, tn = (n + Cfg::BN - 1) / Cfg::BN;
    emu_launch(dim3e((unsigned)(tm * tn < 3 ? tm * tn : 3)), dim3e(Cfg::THREADS), [&] { kern(tm, tn); });  // <= 3 blocks: the tile loop too
  };
  if (kernel == 4 && m == 1) {  // the GEMV, 2 blocks walking the row pairs
    emu_launch(dim3e(2), dim3e(256), [&] { gemm_gemv<T>(p, epx); });
  } else if (kernel == 4) {
    const int64_t tiles = (n + 15) / 16;
    emu_launch(dim3e((unsigned)(tiles < 3 ? tiles : 3)), dim3e(32 * kGemmDecodeWarps), [&] { gemm_decode<T, 1>(p, epx, gemm_decode_kper(k)); });
  } else if (kernel == 0) {
    using Cfg = gemm_wmma_128x128;
    go(Cfg{}, [&](int64_t tm, int64_t tn) {
      if (oa == 0 && ob == 0) gemm_wmma<Cfg, T, false, false>(p, epx, tm, tn);
      else if (oa == 0) gemm_wmma<Cfg, T, false, true>(p, epx, tm, tn);
      else if (ob == 0) gemm_wmma<Cfg, T, true, false>(p, epx, tm, tn);
      else gemm_wmma<Cfg, T, true, true>(p, epx, tm, tn);
    });
  } else {
    auto mma = [&](auto cfg) {
      using Cfg = decltype(cfg);
      go(cfg, [&](int64_t tm, int64_t tn) {
        if (oa == 0 && ob == 0) gemm_mma_sync<Cfg, T, false, false>(p, epx, tm, tn, stages);
        else if (oa == 0) gemm_mma_sync<Cfg, T, false, true>(p, epx, tm, tn, stages);
        else if (ob == 0) gemm_mma_sync<Cfg, T, true, false>(p, epx, tm, tn, stages);
        else gemm_mma_sync<Cfg, T, true, true>(p, epx, tm, tn, stages);
      });
    };
    if (kernel == 1) mma(gemm_mma_256x128{});
    else if (kernel == 2) mma(gemm_mma_skinny{});
    else mma(gemm_mma_staged{});
  }
  // Compare: C within the tolerance, everything else untouched.
  const double rel = std::is_same<TC, float>::value ? 1e-5 : std::is_same<T, __half>::value ? 2e-3 : 1.6e-2;
  int bad = 0;
  for (size_t i = 0; i < C.size(); ++i) {
    const float g = host_to(C[i]), w = host_to(Cref[i]);
    const bool ok = (isnan(w) && isnan(g)) || fabs(g - w) <= 2e-3 * (1 + sqrt((double)k)) * 0.05 + rel * fabs(w) + 1e-4;
    if (!ok && bad++ < 3) printf("  %s: C[%zu] = %g, want %g\n", name, i, g, w);
  }
  for (size_t i = 0; i < P.size(); ++i) {
    const float g = host_to(P[i]), w = host_to(Pref[i]);
    const bool ok = (isnan(w) && isnan(g)) || fabs(g - w) <= 1e-3 * (1 + sqrt((double)k)) * 0.05 + rel * fabs(w) + 1e-4;
    if (!ok && bad++ < 3) printf("  %s: preact[%zu] = %g, want %g\n", name, i, g, w);
  }
  if (bad) ++fails, printf("FAIL %s (%d wrong)\n", name, bad);
}

// The loss, AdamW and the linear backward's dh / db pass against the CPU forms (launch shapes as 9.5's).
// The staged WGMMA epilogue's form (gemm_epilogue::rows, its bias from bias_pair) against N calls
// of the per-pair form, bit for bit: every activation, beta over C, bias, residual and preact on and
// off, rows past m, a pair at the last column and one past n, C at an odd element or an odd leading
// dimension (pairs that do not move as one access), and accumulators holding -0, infinities and NaN.
template <class TC> static void rows_case(int act, float beta, bool bias, bool res, bool pre, int64_t col, int off, int odd_ld) {
  using H = typename host_of<TC>::type;
  constexpr int N = 8;
  constexpr int step = 2;
  const int64_t m = 13, n = 37, row0 = 1, ld = 42 - odd_ld;
  std::vector<H> c1(m * ld + 2), c2, p1(m * ld + 2), p2, r(m * ld + 2), b(n + 2);
  for (auto *v : {&c1, &p1, &r, &b})
    for (H &x : *v) x = host_from<H>(rnd() * 4);
  c2 = c1, p2 = p1;
  auto epi = [&](std::vector<H> &c, std::vector<H> &p) {
    gemm_epilogue<TC> e = {};
    e.c = (TC *)(c.data() + off), e.bias = bias ? (const TC *)b.data() : nullptr, e.residual = res ? (const TC *)(r.data() + off) : nullptr;
    e.preact = pre ? (TC *)(p.data() + off) : nullptr;
    e.m = m, e.n = n, e.ldc = ld, e.ldr = ld, e.ldp = ld, e.alpha = 1.25f, e.beta = beta, e.act = act;
    return e;
  };
  float a0[N], a1[N];
  const float special[] = {-0.0f, INFINITY, -INFINITY, NAN, 30.0f, -30.0f};
  for (int i = 0; i < N; ++i) a0[i] = rnd() * 6, a1[i] = i < 6 ? special[i] : rnd() * 6;
  const gemm_epilogue<TC> e1 = epi(c1, p1), e2 = epi(c2, p2);
  if (e1.whole_pair(col)) e1.template rows<N, step>(row0, col, e1.bias_word(col), a0, a1);
  else  // the staged epilogue's other path
    for (int i = 0; i < N; ++i) e1(row0 + i * step, col, a0[i], a1[i]);
  for (int i = 0; i < N; ++i) e2(row0 + i * step, col, a0[i], a1[i]);
  ++runs;
  if (memcmp(c1.data(), c2.data(), c1.size() * sizeof(H)) || memcmp(p1.data(), p2.data(), p1.size() * sizeof(H)))
    ++fails, printf("FAIL epilogue rows: C %zu bytes, act %d beta %g bias %d residual %d preact %d col %lld off %d\n", sizeof(H), act, beta, bias, res,
                    pre, (long long)col, off);
}
static void rows_cases() {
  for (int act = 0; act <= GPUOPS_ACT_RELU; ++act)
    for (int f = 0; f < 16; ++f)
      for (int64_t col : {0, 8, 36, 37})
        for (int off : {0, 1}) {
          const float beta = f & 1 ? 0.5f : 0.0f;
          for (int odd_ld = 0; odd_ld < 2; ++odd_ld) {
            rows_case<__nv_bfloat16>(act, beta, f & 2, f & 4, f & 8, col, off, odd_ld);
            rows_case<__half>(act, beta, f & 2, f & 4, f & 8, col, off, odd_ld);
            rows_case<float>(act, beta, f & 2, f & 4, f & 8, col, off, odd_ld);
          }
        }
}

static void train_cases() {
  const int64_t n = 10000, B = 300, O = 70;
  std::vector<gpuops_bf16> y(n), t(n), dy(n), dy_ref(n), w16(n), w16_ref(n);
  std::vector<float> w(n), m(n), v(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = gpuops_f32_to_bf16(rnd()), t[i] = gpuops_f32_to_bf16(rnd());
    w[i] = rnd(), m[i] = 0.1f * rnd(), v[i] = 0.01f * (rnd() + 1.0f), g[i] = rnd();
  }
  float loss_ref = 0, loss = NAN;
  gpuops_cpu_mse_loss_bf16(&loss_ref, dy_ref.data(), y.data(), t.data(), 1, n);
  const int blocks = (int)(gpuops_mse_loss_workspace_size(n) / 4);
  std::vector<float> part(blocks);
  auto *Y = (const __nv_bfloat16 *)y.data(), *Tt = (const __nv_bfloat16 *)t.data();
  emu_launch(dim3e(blocks), dim3e(256), [&] { mse_loss_partial<__nv_bfloat16>(part.data(), (__nv_bfloat16 *)dy.data(), Y, Tt, n, (float)(2.0 / n)); });
  emu_launch(dim3e(1), dim3e(256), [&] { mse_loss_final<>(&loss, part.data(), blocks, (float)(1.0 / n)); });
  ++runs;
  int bad = fabs(loss - loss_ref) > 1e-5 * loss_ref;
  for (int64_t i = 0; i < n; ++i) bad += fabs(gpuops_bf16_to_f32(dy[i]) - gpuops_bf16_to_f32(dy_ref[i])) > 1e-2 * fabs(gpuops_bf16_to_f32(dy_ref[i]));
  if (bad) ++fails, printf("FAIL mse loss: %g want %g, %d wrong\n", loss, loss_ref, bad);
  std::vector<float> wr = w, mr = m, vr = v;
  gpuops_cpu_adamw_step_bf16(wr.data(), mr.data(), vr.data(), w16_ref.data(), g.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3);
  const float bc1 = (float)(1 - pow(0.9f, 3)), bc2 = (float)(1 - pow(0.999f, 3));
  emu_launch(dim3e(8), dim3e(256), [&] {
    adamw_step<__nv_bfloat16>(w.data(), m.data(), v.data(), (__nv_bfloat16 *)w16.data(), g.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, bc1, bc2);
  });
  ++runs, bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += fabs(w[i] - wr[i]) > 1e-6 || fabs(m[i] - mr[i]) > 1e-6 || fabs(v[i] - vr[i]) > 1e-7 * (1 + vr[i] * 1e6);
  if (bad) ++fails, printf("FAIL adamw: %d wrong\n", bad);
  // dh = dy gelu'(h) and db, against the CPU backward's db (dx, dW not asked for).
  std::vector<gpuops_bf16> gy(B * O), h(B * O), dh(B * O);
  for (auto &e : gy) e = gpuops_f32_to_bf16(rnd());
  for (auto &e : h) e = gpuops_f32_to_bf16(3 * rnd());
  std::vector<float> db_ref(O), db(O), parts(((B + GPUOPS__LIN_ROWS - 1) / GPUOPS__LIN_ROWS) * O);
  gpuops_cpu_linear_bwd_bf16(nullptr, nullptr, db_ref.data(), gy.data(), h.data(), nullptr, nullptr, B, 5, O, GPUOPS_ACT_GELU_ERF);
  const int64_t rb = (B + GPUOPS__LIN_ROWS - 1) / GPUOPS__LIN_ROWS;
  emu_launch(dim3e((unsigned)((O + 63) / 64), (unsigned)rb), dim3e(32, 8), [&] {
    linear_bwd_dh<__nv_bfloat16>((__nv_bfloat16 *)dh.data(), parts.data(), (const __nv_bfloat16 *)gy.data(), (const __nv_bfloat16 *)h.data(), B, O,
                                 GPUOPS_ACT_GELU_ERF);
  });
  emu_launch(dim3e(1), dim3e(256), [&] { linear_bwd_db<>(db.data(), parts.data(), rb, O); });
  ++runs, bad = 0;
  for (int64_t j = 0; j < O; ++j) bad += fabs(db[j] - db_ref[j]) > 1e-4 * (1 + fabs(db_ref[j]));
  for (int64_t i = 0; i < B * O; ++i) {
    const double want = gpuops_bf16_to_f32(gy[i]) * gpuops__cpu_activate_grad(gpuops_bf16_to_f32(h[i]), GPUOPS_ACT_GELU_ERF);
    bad += fabs(gpuops_bf16_to_f32(dh[i]) - want) > 1e-2 * fabs(want) + 1e-6;
  }
  if (bad) ++fails, printf("FAIL linear backward dh / db: %d wrong\n", bad);
}

int main(int argc, char **argv) {
  filter = argc > 1 ? argv[1] : nullptr;
  for (int kernel = 0; kernel < 4; ++kernel)
    for (int o = 0; o < 4; ++o) {
      const int oa = o >> 1, ob = o & 1;
      test<__nv_bfloat16, __nv_bfloat16>(kernel, 130, 270, 150, oa, ob, 0, 0, 1.0f, 0.0f, 0, false, false, false);   // tails, aligned rows? (150: no)
      test<__nv_bfloat16, float>(kernel, 64, 256, 128, oa, ob, 8, 8, 1.0f, 0.0f, 0, false, false, false);             // whole tiles, 16-byte rows
      test<__half, __half>(kernel, 37, 45, 70, oa, ob, 8, 0, -0.5f, 0.75f, GPUOPS_ACT_GELU_TANH, true, true, true);   // epilogue, beta, ld % 8 == 0
      test<__half, float>(kernel, 17, 129, 23, oa, ob, 3, 1, 2.0f, 0.0f, GPUOPS_ACT_RELU, true, false, true);          // odd ld, offsets
      test<__nv_bfloat16, __nv_bfloat16>(kernel, 256, 256, 200, oa, ob, 8, 0, 1.0f, 0.0f, 0, false, false, false);  // whole tiles: the fast copies
    }
  test<__nv_bfloat16, __nv_bfloat16>(1, 300, 520, 200, 0, 1, 0, 0, 1.0f, 0.0f, GPUOPS_ACT_SILU, true, false, false, 2);  // stage counts
  test<__nv_bfloat16, __nv_bfloat16>(1, 300, 260, 200, 1, 0, 8, 0, 1.0f, 0.0f, GPUOPS_ACT_GELU_ERF, true, true, false, 4);
  test<__half, __half>(2, 1, 70, 700, 0, 1, 0, 0, 1.0f, 0.0f, 0, false, false, false, 8);
  test<__nv_bfloat16, float>(2, 16, 100, 333, 0, 0, 0, 0, 1.0f, 0.0f, GPUOPS_ACT_GELU_ERF, true, false, false, 3);
  test<__nv_bfloat16, __nv_bfloat16>(2, 64, 96, 1000, 1, 1, 8, 0, 1.0f, 0.0f, 0, false, false, false, 8);
  for (int o = 0; o < 4; ++o) {  // staged: odd ld in one or both operands, 3 and 4 stages
    test<__nv_bfloat16, __nv_bfloat16>(3, 150, 140, 77, o >> 1, o & 1, 1, 1, 1.0f, 0.0f, 0, false, false, false, 3);
    test<__half, float>(3, 256, 130, 96, o >> 1, o & 1, 0, 0, 1.0f, 0.5f, GPUOPS_ACT_GELU_ERF, true, false, false, 4);
    test<__nv_bfloat16, float>(3, 300, 270, 200, o >> 1, o & 1, 3, 0, 1.0f, 0.0f, 0, false, false, false, 3);
  }
  // The few-rows kernel (NT, 16-byte rows): m 1..8, n and K tails, K of whole chunks and not, K past
  // a round of the block's warps, epilogues, beta, f32 and 16-bit C.
  test<__nv_bfloat16, __nv_bfloat16>(4, 1, 40, 4096, 0, 1, 0, 0, 1.0f, 0.0f, 0, false, false, false);
  test<__half, float>(4, 1, 37, 1000, 0, 1, 8, 8, 1.5f, 0.5f, GPUOPS_ACT_GELU_ERF, true, true, true);  // the GEMV: odd n, K tail
  test<__nv_bfloat16, __nv_bfloat16>(4, 1, 700, 520, 0, 1, 0, 0, 1.0f, 0.0f, 0, false, false, false);  // the GEMV: pairs past the grid
  test<__nv_bfloat16, float>(4, 8, 33, 1000, 0, 1, 0, 0, 1.0f, 0.0f, 0, false, false, false);
  test<__half, __half>(4, 7, 17, 1032, 0, 1, 8, 8, -0.5f, 0.75f, GPUOPS_ACT_GELU_TANH, true, true, true);
  test<__nv_bfloat16, __nv_bfloat16>(4, 3, 70, 24, 0, 1, 0, 0, 1.0f, 0.0f, GPUOPS_ACT_SILU, true, false, false);
  test<__half, float>(4, 5, 64, 5160, 0, 1, 0, 0, 2.0f, 0.5f, GPUOPS_ACT_RELU, true, false, true);
  if (!filter || strstr("train", filter)) train_cases();
  if (!filter || strstr("rows", filter)) rows_cases();
  printf("%d runs, %d failed, %ld instruction errors\n", runs, fails, (long)emu_errors);
  return fails || emu_errors ? 1 : 0;
}
