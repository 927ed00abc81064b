// SPDX-License-Identifier: MIT
// tools/emulate_attention.cpp - the attention kernels of gpuops_cuda.cuh (section 10) run on the
// CPU, for checking their index arithmetic, fragment layouts, swizzles, masks and online softmax
// where there is no GPU. Built on tools/emulate_cuda.h (a thread per CUDA thread, blocks one at a
// time) and tools/emulate_mma.h (ldmatrix, mma.sync). Each kernel x shape (odd seqlens, causal
// with seqlen_q != seqlen_k, GQA and MQA, head_dim 64, 128 and others, [B,S,H,D] and [B,H,S,D]
// layouts, padded strides) is compared with the library's CPU reference (gpuops_cpu_attention_*),
// and every element outside the outputs must stay untouched. cp.async runs its synchronous
// (pre-sm_80) branch, so the pipeline's group counting is not checked here, and exp2 is exact
// (the GPU's ex2.approx differs by ~2^-22). Not part of `make test` (C++20, minutes of CPU): run
// tools/emulate_attention.sh [substring of the case names].
#define GPUOPS_ONLY_ATTENTION
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
static int emu_vs_key;

#include "attention_body.inc"
using namespace gpuops;

static uint64_t s_ = 12345;
static float rnd() { s_ = s_ * 6364136223846793005ull + 1442695040888963407ull; return (float)((s_ >> 40) / 16777216.0 * 2 - 1); }
static int fails = 0, runs = 0;
static const char *filter = nullptr;

template <class T> struct host_of;
template <> struct host_of<__half> { using type = gpuops_f16; };
template <> struct host_of<__nv_bfloat16> { using type = gpuops_bf16; };
template <> struct host_of<float> { using type = float; };
static void host_from(gpuops_f16 &h, float v) { h = gpuops_f32_to_f16(v); }
static void host_from(gpuops_bf16 &h, float v) { h = gpuops_f32_to_bf16(v); }
static void host_from(float &h, float v) { h = v; }
static float host_to(gpuops_f16 h) { return gpuops_f16_to_f32(h); }
static float host_to(gpuops_bf16 h) { return gpuops_bf16_to_f32(h); }
static float host_to(float f) { return f; }

#define CPU_API(H, S)                                                                                                        \
  static gpuops_status cpu_fwd(H *o, float *lse, const H *q, const H *k, const H *v, const gpuops_attention_dims *d, float sc, \
                               gpuops_attention_mask m) {                                                                    \
    return gpuops_cpu_attention_fwd_##S(o, lse, q, k, v, d, sc, m);                                                          \
  }                                                                                                                          \
  static gpuops_status cpu_bwd(H *dq, H *dk, H *dv, const H *dout, const H *q, const H *k, const H *v, const H *o,          \
                               const float *lse, const gpuops_attention_dims *d, float sc, gpuops_attention_mask m) {        \
    return gpuops_cpu_attention_bwd_##S(dq, dk, dv, dout, q, k, v, o, lse, d, sc, m);                                        \
  }
CPU_API(gpuops_f16, f16)
CPU_API(gpuops_bf16, bf16)
CPU_API(float, f32)

// A tensor [n0 = batch, n1 = seq, n2 = heads, D] with strides st, in a buffer padded with NaN.
template <class H> struct tensor {
  std::vector<H> buf;
  int64_t span = 0;
  tensor(const int64_t st[3], int64_t n0, int64_t n1, int64_t n2, int64_t D, bool fill, float amp = 1.0f) {
    span = gpuops__attn_span(st, n0, n1, n2, D);
    buf.resize(span + 16);
    for (auto &x : buf) host_from(x, NAN);
    for (int64_t a = 0; a < n0; ++a)
      for (int64_t b = 0; b < n1; ++b)
        for (int64_t c = 0; c < n2; ++c)
          for (int64_t e = 0; e < D; ++e) host_from(buf[a * st[0] + b * st[1] + c * st[2] + e], fill ? amp * rnd() : NAN);
  }
  H *ptr() { return buf.data(); }
};

// Compares got with want: every element within atol + rtol |want| (NaN only where want is NaN).
template <class H> static int compare(const char *name, const char *what, const std::vector<H> &got, const std::vector<H> &want, double atol, double rtol) {
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = host_to(got[i]), w = host_to(want[i]);
    const bool ok = (isnan(w) && isnan(g)) || (isinf(w) && g == w) || fabs(g - w) <= atol + rtol * fabs(w);
    if (!ok && bad++ < 4) printf("  %s: %s[%zu] = %.6g, want %.6g\n", name, what, i, g, w);
  }
  return bad;
}

// kind: 0 FLASH2 forward, 1 FLASH forward, 2 backward on CUDA cores (FLASH), 3 FLASH2 backward
template <class T>
static void test(int kind, int64_t B, int64_t Sq, int64_t Sk, int64_t Hq, int64_t Hkv, int64_t D, bool bhsd, int pad, bool causal, float scale) {
  using H = typename host_of<T>::type;
  const char *kn[] = {"flash2", "flash", "backward", "flash2 backward"};
  char name[256];
  snprintf(name, sizeof name, "%s %s B%lld Sq%lld Sk%lld Hq%lld Hkv%lld D%lld %s pad%d%s scale %g", kn[kind],
           std::is_same<T, float>::value ? "f32" : std::is_same<T, __half>::value ? "f16" : "bf16", (long long)B, (long long)Sq, (long long)Sk,
           (long long)Hq, (long long)Hkv, (long long)D, bhsd ? "bhsd" : "bshd", pad, causal ? " causal" : "", scale);
  if (filter && !strstr(name, filter)) return;
  ++runs;
  gpuops_attention_dims d = bhsd ? gpuops_attention_dims_bhsd(B, Sq, Sk, Hq, Hkv, D) : gpuops_attention_dims_bshd(B, Sq, Sk, Hq, Hkv, D);
  if (pad) {  // padded rows: every stride grows by pad elements per step (a multiple of 8 keeps 16-byte rows)
    auto grow = [&](int64_t *st, int64_t n1, int64_t n2) {
      if (bhsd) st[1] = D + pad, st[2] = st[1] * n1 + pad, st[0] = st[2] * n2 + pad;
      else st[2] = D + pad, st[1] = st[2] * n2 + pad, st[0] = st[1] * n1 + pad;
    };
    grow(d.q_stride, Sq, Hq), grow(d.o_stride, Sq, Hq), grow(d.k_stride, Sk, Hkv), grow(d.v_stride, Sk, Hkv);
  }
  const gpuops_attention_mask mask = causal ? GPUOPS_ATTN_MASK_CAUSAL : GPUOPS_ATTN_MASK_NONE;
  tensor<H> q(d.q_stride, B, Sq, Hq, D, true, 1.5f), k(d.k_stride, B, Sk, Hkv, D, true, 1.5f), v(d.v_stride, B, Sk, Hkv, D, true);
  tensor<H> o(d.o_stride, B, Sq, Hq, D, false), oref(d.o_stride, B, Sq, Hq, D, false);
  const int64_t rows = B * Hq * Sq;
  std::vector<float> lse(rows + 4, NAN), lref(rows + 4, NAN);
  if (cpu_fwd(oref.ptr(), lref.data(), q.ptr(), k.ptr(), v.ptr(), &d, scale, mask) != GPUOPS_OK) {
    printf("FAIL %s: cpu reference refused\n", name), ++fails;
    return;
  }
  gpuops__attn_args r;
  memset(&r, 0, sizeof r);
  r.d = d, r.scale = scale, r.mask = mask, r.q = q.ptr(), r.k = k.ptr(), r.v = v.ptr(), r.o = o.ptr(), r.lse = lse.data();
  attn_params p = {};
  for (int x = 0; x < 3; ++x) p.qs[x] = d.q_stride[x], p.ks[x] = d.k_stride[x], p.vs[x] = d.v_stride[x], p.os[x] = d.o_stride[x];
  p.q = q.ptr(), p.k = k.ptr(), p.v = v.ptr(), p.o = o.ptr(), p.lse = lse.data();
  p.batch = B, p.sq = Sq, p.sk = Sk, p.hq = Hq, p.group = Hq / Hkv, p.d = D, p.off = Sk - Sq, p.scale = scale, p.scale_log2 = scale * kLog2e;
  p.causal = causal;
  const double atol = std::is_same<T, float>::value ? 1e-5 : std::is_same<T, __half>::value ? 2e-3 : 1.2e-2;
  const double rtol = std::is_same<T, float>::value ? 1e-5 : std::is_same<T, __half>::value ? 2e-3 : 1.2e-2;
  int bad = 0;
  if (kind == 0) {
    if constexpr (!std::is_same<T, float>::value)
      attn_with_dim(D, [&](auto dim) {
        constexpr int kD = decltype(dim)::value;
        using Cfg = attn_flash2_cfg<kD>;
        const int64_t blocks = (Sq + Cfg::BM - 1) / Cfg::BM * B * Hq;
        emu_launch(dim3e((unsigned)blocks), dim3e(Cfg::THREADS), [&] { attn_flash2_fwd<T, kD>(p); });
        return GPUOPS_OK;
      });
  } else if (kind == 1) {
    std::vector<float> ws(gpuops_attention_fwd_workspace_size(&d, GPUOPS_ALGO_FLASH) / 4 + 4, NAN);
    p.ws = ws.data();
    attn_with_dim(D, [&](auto dim) {
      emu_launch(dim3e((unsigned)(B * Hq)), dim3e(128), [&] { attn_flash_fwd<T, decltype(dim)::value>(p); });
      return GPUOPS_OK;
    });
  }
  if (kind <= 1) {
    bad += compare(name, "O", o.buf, oref.buf, atol, rtol);
    bad += compare(name, "lse", lse, lref, 2e-5, 2e-5);
  } else {
    // The backward from the reference forward's O and lse.
    tensor<H> dout(d.o_stride, B, Sq, Hq, D, true);
    tensor<H> dq(d.q_stride, B, Sq, Hq, D, false), dk(d.k_stride, B, Sk, Hkv, D, false), dv(d.v_stride, B, Sk, Hkv, D, false);
    tensor<H> dqr(d.q_stride, B, Sq, Hq, D, false), dkr(d.k_stride, B, Sk, Hkv, D, false), dvr(d.v_stride, B, Sk, Hkv, D, false);
    if (cpu_bwd(dqr.ptr(), dkr.ptr(), dvr.ptr(), dout.ptr(), q.ptr(), k.ptr(), v.ptr(), oref.ptr(), lref.data(), &d, scale, mask) != GPUOPS_OK) {
      printf("FAIL %s: cpu backward refused\n", name), ++fails;
      return;
    }
    std::vector<float> ws(gpuops_attention_bwd_workspace_size(&d, kind == 3 ? GPUOPS_ALGO_FLASH2 : GPUOPS_ALGO_FLASH) / 4 + 4, NAN);
    p.ws = ws.data(), p.dout = dout.ptr(), p.oin = oref.ptr(), p.lse_in = lref.data(), p.dq = dq.ptr(), p.dk = dk.ptr(), p.dv = dv.ptr();
    emu_launch(dim3e((unsigned)((rows + 7) / 8)), dim3e(256), [&] { attn_bwd_pre<T>(p); });
    if (kind == 3) {
      if constexpr (!std::is_same<T, float>::value) {
        float *dq_acc = ws.data() + (rows + 3) / 4 * 4;
        for (int64_t x = 0; x < rows * D; ++x) dq_acc[x] = 0.0f;
        attn_with_dim(D, [&](auto dim) {
          constexpr int kD = attn_bwd_dim(decltype(dim)::value);
          using Cfg = attn_flash2_bwd_cfg<kD>;
          const int splits = (int)gpuops__attn_bwd_splits(&d);
          float *dkv_acc = dq_acc + rows * D;
          emu_launch(dim3e((unsigned)((Sk + Cfg::BN - 1) / Cfg::BN * B * Hkv * splits)), dim3e(Cfg::THREADS),
                     [&] { attn_flash2_bwd<T, kD>(p, dq_acc, dkv_acc, splits); });
          if (splits > 1) emu_launch(dim3e(4), dim3e(256), [&] { attn_bwd_dkv_reduce<T>(p, dkv_acc, splits); });
          if (Hq / Hkv > 1 && splits == 1) printf("  (group %lld not split)\n", (long long)(Hq / Hkv));
          emu_launch(dim3e(4), dim3e(256), [&] { attn_bwd_dq_convert<T>(p, dq_acc); });
          return GPUOPS_OK;
        });
      }
    } else {
      attn_with_dim(D, [&](auto dim) {
        constexpr int kD = decltype(dim)::value;
        emu_launch(dim3e((unsigned)((Sk + 3) / 4 * B * Hkv)), dim3e(128), [&] { attn_bwd_dkdv<T, kD>(p); });
        emu_launch(dim3e((unsigned)((rows + 3) / 4)), dim3e(128), [&] { attn_bwd_dq<T, kD>(p); });
        return GPUOPS_OK;
      });
    }
    bad += compare(name, "dQ", dq.buf, dqr.buf, atol, rtol);
    bad += compare(name, "dK", dk.buf, dkr.buf, atol, rtol);
    bad += compare(name, "dV", dv.buf, dvr.buf, atol, rtol);
  }
  if (bad) ++fails, printf("FAIL %s (%d wrong)\n", name, bad);
}

int main(int argc, char **argv) {
  filter = argc > 1 ? argv[1] : nullptr;
  using bf = __nv_bfloat16;
  using hf = __half;
  for (int kind = 0; kind < 3; ++kind) {
    test<bf>(kind, 1, 17, 17, 2, 2, 64, false, 0, false, 0.125f);
    test<bf>(kind, 1, 70, 70, 2, 1, 64, true, 0, true, 0.125f);    // causal square, MQA, bhsd
    test<hf>(kind, 2, 1, 17, 4, 2, 128, false, 0, false, 0.09f);   // one query row, GQA
    test<hf>(kind, 1, 17, 70, 2, 2, 128, false, 8, true, 0.09f);   // causal sq < sk, padded
    test<bf>(kind, 1, 70, 17, 2, 2, 64, true, 0, true, 0.125f);    // causal sq > sk: rows that see nothing
    test<bf>(kind, 1, 33, 40, 3, 1, 40, false, 0, false, 0.2f);    // head_dim 40 (zero-filled to 64)
    test<hf>(kind, 1, 65, 31, 2, 2, 200, true, 0, true, 0.07f);    // head_dim 200 (256 path)
    test<bf>(kind, 1, 130, 129, 1, 1, 128, false, 0, true, 0.1f);  // several q tiles and kv tiles
    test<hf>(kind, 1, 9, 9, 1, 1, 8, false, 0, false, -0.3f);      // head_dim 8, negative scale
    test<bf>(kind, 1, 260, 300, 1, 1, 64, true, 0, false, 0.125f); // causal, several q tiles of 128 and a short last one
    test<bf>(kind, 1, 33, 70, 2, 1, 64, true, 0, false, 0.0f);     // scale 0: uniform weights over the keys each row sees
  }
  test<bf>(3, 1, 17, 17, 2, 2, 64, false, 0, false, 0.125f);
  test<bf>(3, 1, 70, 70, 2, 1, 64, true, 0, true, 0.125f);     // causal square, MQA, bhsd
  test<hf>(3, 2, 1, 17, 4, 2, 128, false, 0, false, 0.09f);    // one query row, GQA
  test<hf>(3, 1, 17, 70, 2, 2, 128, false, 8, true, 0.09f);    // causal sq < sk, padded
  test<bf>(3, 1, 70, 17, 2, 2, 64, true, 0, true, 0.125f);     // causal sq > sk
  test<bf>(3, 1, 33, 40, 3, 1, 40, false, 0, false, 0.2f);     // head_dim 40
  test<bf>(3, 1, 130, 129, 1, 1, 128, false, 0, true, 0.1f);   // several tiles both ways
  test<hf>(3, 1, 9, 9, 1, 1, 8, false, 0, false, -0.3f);       // head_dim 8, negative scale
  test<bf>(3, 1, 200, 130, 4, 2, 128, false, 0, true, 0.1f);  // causal sq > sk, GQA: Q tiles of two heads in one sequence, rows that see nothing
  test<hf>(3, 2, 200, 130, 4, 2, 64, true, 8, false, 0.125f);  // the same without mask, head_dim 64, padded bhsd
  test<hf>(3, 1, 70, 130, 8, 1, 128, true, 0, false, 0.09f);   // MQA 8/1, causal sq < sk: the group split over 8 blocks, their dK and dV added
  test<bf>(3, 1, 260, 300, 2, 1, 64, true, 0, false, 0.125f);  // causal, MQA: three 128-key blocks (a short last one), the first Q tile of each past 0
  test<float>(1, 1, 17, 40, 2, 1, 64, false, 0, true, 0.125f);
  test<float>(2, 1, 17, 40, 2, 1, 72, true, 0, true, 0.125f);
  printf("%d runs, %d failed, %ld instruction errors\n", runs, fails, (long)emu_errors);
  return fails || emu_errors ? 1 : 0;
}
