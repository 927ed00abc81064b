// SPDX-License-Identifier: MIT
// tests/test_attention.cu - attention, O = softmax(scale Q K^T + mask) V, forward and backward.
//   Everywhere: the CPU reference against hand values (one key: O = v; scale 0: the mean of V;
//   causal with seqlen_q > seqlen_k: the rows that see no key give O = 0 and lse = -inf), the
//   CPU backward against central finite differences of the CPU forward, the dims helpers and
//   workspace sizes, and argument checking of every CPU and GPU entry point (the checks run before
//   any launch, so they need no device): NULL, negative sizes, heads_q % heads_kv, head_dim,
//   overlapping strides, scale, mask and algo values, overlaps, misalignment, workspace; nothing
//   written by a refused call.
//   With a GPU: every version (NAIVE, FLASH, FLASH2, WGMMA, AUTO) x f16 / bf16 (NAIVE, FLASH and
//   AUTO also f32) against the CPU reference, outputs poisoned with NaN and padding checked
//   untouched: odd seqlens (1, 17, 70, 1000, 4097), causal with seqlen_q != seqlen_k, GQA and MQA,
//   head_dim 8 to 256 (WGMMA: up to 128; it answers unsupported past that, and off compute
//   capability 9.0 or without sm_90a code: skipped), [B,S,H,D], [B,H,S,D] and padded layouts, lse;
//   FLASH2 and WGMMA on unaligned layouts must answer misaligned and write nothing; the backward (FLASH, FLASH2, AUTO) against the CPU backward (from
//   the same O and lse): FLASH the same bits on every run, FLASH2's dK and dV too (its dQ comes from
//   f32 atomics); FLASH2 at head_dim > 128 and WGMMA (forward only) must answer unsupported and
//   write nothing.
//   Shapes past 512 rows are checked on sampled row ranges (the CPU reference of a sub-call).
// Tolerance per element: |got - ref| <= atol + rtol |ref|: f32 1e-5 + 1e-4; f16 2e-3 + 2e-3; bf16
// 1e-2 + 1e-2 (P is rounded to the storage type before P V, as in every 16-bit flash attention);
// lse 2e-4 + 2e-5. GPUOPS_TEST_QUICK=1 drops the 1000 and 4097 seqlens. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_ATTENTION
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <math.h>
#include <string.h>

#include <string>
#include <type_traits>
#include <vector>

#include "../bench/harness.h"
#include "attention_ops.h"
#include "check.h"
#include "harness.h"

using bench::fmt;
using check::quick;
using check::rng;
using std::string;
using std::vector;

template <class T> static T hv(float v) { return check::from_float<T>(v); }
template <class T> static float fv(T v) { return check::to_float(v); }
template <class T> static check::tolerance tol_of() {
  return std::is_same<T, float>::value ? check::tolerance{1e-5, 1e-4}
         : std::is_same<T, gpuops_f16>::value ? check::tolerance{2e-3, 2e-3} : check::tolerance{1e-2, 1e-2};
}
static const check::tolerance kLseTol = {2e-4, 2e-5};

// One problem: dims (with layout and padding), mask, scale.
struct problem {
  int64_t B, Sq, Sk, Hq, Hkv, D;
  bool bhsd;
  int pad;  // elements added to every stride step (0: tight)
  bool causal;
  float scale;
  gpuops_attention_dims dims() const {
    gpuops_attention_dims d = bhsd ? gpuops_attention_dims_bhsd(B, Sq, Sk, Hq, Hkv, D) : gpuops_attention_dims_bshd(B, Sq, Sk, Hq, Hkv, D);
    if (pad) {
      auto grow = [&](int64_t *st, int64_t n1, int64_t n2) {
        if (bhsd) st[1] = D + pad, st[2] = st[1] * n1 + pad, st[0] = st[2] * n2 + pad;
        else st[2] = D + pad, st[1] = st[2] * n2 + pad, st[0] = st[1] * n1 + pad;
      };
      grow(d.q_stride, Sq, Hq), grow(d.o_stride, Sq, Hq), grow(d.k_stride, Sk, Hkv), grow(d.v_stride, Sk, Hkv);
    }
    return d;
  }
  gpuops_attention_mask mask() const { return causal ? GPUOPS_ATTN_MASK_CAUSAL : GPUOPS_ATTN_MASK_NONE; }
  string name() const {
    return fmt("B%lld Sq%lld Sk%lld Hq%lld Hkv%lld D%lld %s%s%s scale %g", (long long)B, (long long)Sq, (long long)Sk, (long long)Hq, (long long)Hkv,
               (long long)D, bhsd ? "bhsd" : "bshd", pad ? fmt(" pad%d", pad).c_str() : "", causal ? " causal" : "", scale);
  }
};

// A host tensor over its whole extent: the elements of the tensor random, the padding NaN.
template <class T> static vector<T> make_tensor(const int64_t st[3], int64_t n0, int64_t n1, int64_t n2, int64_t D, rng *r, float amp) {
  vector<T> v(attn_extent(st, n0, n1, n2, D) + 1, hv<T>(NAN));
  if (r)
    for (int64_t a = 0; a < n0; ++a)
      for (int64_t b = 0; b < n1; ++b)
        for (int64_t c = 0; c < n2; ++c)
          for (int64_t e = 0; e < D; ++e) v[a * st[0] + b * st[1] + c * st[2] + e] = hv<T>((float)r->uniform(-amp, amp));
  return v;
}

// ---- CPU: hand values, finite differences, helpers ------------------------------------------------

static void test_cpu_hand() {
  {  // one key: O = v, lse = scale q.k
    const float q[8] = {1, 2, 0, 0, 0, 0, 0, 1}, k[8] = {0.5f, 1, 0, 0, 0, 0, 0, 2}, v[8] = {3, -1, 2, 0, 0, 0, 0, 7};
    float o[8], lse = NAN;
    const gpuops_attention_dims d = gpuops_attention_dims_bshd(1, 1, 1, 1, 1, 8);
    const gpuops_status st = gpuops_cpu_attention_fwd_f32(o, &lse, q, k, v, &d, 0.5f, GPUOPS_ATTN_MASK_NONE);
    th_case(st == GPUOPS_OK && memcmp(o, v, sizeof o) == 0 && lse == 2.25f, "cpu attention one key: O = v, lse = scale q.k", "status %d, o[0] %g lse %g", st,
            o[0], lse);
  }
  {  // scale 0: uniform weights, O = mean of V over the keys seen; lse = log(count)
    const int64_t Sk = 5, D = 8;
    vector<float> q(D, 1.0f), k(Sk * D), v(Sk * D), o(3 * D);
    for (int64_t j = 0; j < Sk * D; ++j) k[j] = (float)(j % 7), v[j] = (float)(j / D);
    vector<float> q3(3 * D, 1.0f), lse(3);
    const gpuops_attention_dims d = gpuops_attention_dims_bshd(1, 3, Sk, 1, 1, D);
    const gpuops_status st = gpuops_cpu_attention_fwd_f32(o.data(), lse.data(), q3.data(), k.data(), v.data(), &d, 0.0f, GPUOPS_ATTN_MASK_CAUSAL);
    // causal, bottom-right: row i sees keys j <= i + 2: rows see 3, 4, 5 keys (means 1, 1.5, 2).
    const bool ok = st == GPUOPS_OK && fabs(o[0] - 1.0f) < 1e-6 && fabs(o[D] - 1.5f) < 1e-6 && fabs(o[2 * D] - 2.0f) < 1e-6 &&
                    fabs(lse[0] - logf(3)) < 1e-6 && fabs(lse[2] - logf(5)) < 1e-6;
    th_case(ok, "cpu attention scale 0, causal bottom-right: the mean of the keys seen", "status %d, %g %g %g lse %g", st, o[0], o[D], o[2 * D], lse[0]);
  }
  {  // causal with seqlen_q > seqlen_k: rows 0 and 1 of 4 see no key (2 keys: row i sees j <= i - 2)
    const int64_t D = 8;
    vector<float> q(4 * D, 0.3f), k(2 * D, 0.1f), v(2 * D, 2.0f), o(4 * D, NAN), lse(4, NAN);
    const gpuops_attention_dims d = gpuops_attention_dims_bshd(1, 4, 2, 1, 1, D);
    const gpuops_status st = gpuops_cpu_attention_fwd_f32(o.data(), lse.data(), q.data(), k.data(), v.data(), &d, 1.0f, GPUOPS_ATTN_MASK_CAUSAL);
    const bool ok = st == GPUOPS_OK && o[0] == 0.0f && o[D] == 0.0f && lse[0] == -INFINITY && lse[1] == -INFINITY && o[2 * D] == 2.0f &&
                    fabs(lse[2] - 0.24f) < 1e-6 && fabs(o[3 * D] - 2.0f) < 1e-6;
    th_case(ok, "cpu attention causal seqlen_q > seqlen_k: unseeing rows give O = 0, lse = -inf", "status %d, o %g %g %g lse %g %g %g", st, o[0], o[D],
            o[2 * D], lse[0], lse[1], lse[2]);
  }
  {  // the dims helpers and the default scale
    const gpuops_attention_dims a = gpuops_attention_dims_bshd(2, 3, 5, 8, 2, 64), b = gpuops_attention_dims_bhsd(2, 3, 5, 8, 2, 64);
    const bool ok = a.q_stride[0] == 3 * 8 * 64 && a.q_stride[1] == 8 * 64 && a.q_stride[2] == 64 && a.k_stride[1] == 2 * 64 &&
                    b.q_stride[0] == 8 * 3 * 64 && b.q_stride[1] == 64 && b.q_stride[2] == 3 * 64 && b.v_stride[2] == 5 * 64 &&
                    gpuops_attention_default_scale(64) == 0.125f;
    th_case(ok, "attention dims helpers and default scale", "strides or scale wrong");
    const size_t ws = gpuops_attention_fwd_workspace_size(&a, GPUOPS_ALGO_FLASH), wn = gpuops_attention_fwd_workspace_size(&a, GPUOPS_ALGO_NAIVE);
    th_case(ws == (size_t)2 * 8 * 3 * 66 * 4 && wn == 64 + 30 && gpuops_attention_fwd_workspace_size(&a, GPUOPS_ALGO_FLASH2) == 0 &&
                gpuops_attention_fwd_workspace_size(&a, GPUOPS_ALGO_AUTO) == ws && gpuops_attention_bwd_workspace_size(&a, GPUOPS_ALGO_FLASH) == 2 * 8 * 3 * 4 &&
                gpuops_attention_bwd_workspace_size(&a, GPUOPS_ALGO_AUTO) == 2 * 8 * 3 * 4 + 2 * 8 * 3 * 64 * 4 + 2 * 4 * 2 * 2 * 5 * 64 * 4,  // D, dQ, 4 parts of dK and dV
            "attention workspace sizes", "flash %zu naive %zu", ws, wn);
  }
}

// The CPU backward against central differences of L = sum dO * O (f32, small).
static void test_cpu_finite_differences(rng &r) {
  const problem pr = {1, 5, 7, 2, 1, 8, false, 0, true, 0.4f};
  const gpuops_attention_dims d = pr.dims();
  vector<float> q = make_tensor<float>(d.q_stride, 1, 5, 2, 8, &r, 1.0f), k = make_tensor<float>(d.k_stride, 1, 7, 1, 8, &r, 1.0f);
  vector<float> v = make_tensor<float>(d.v_stride, 1, 7, 1, 8, &r, 1.0f), dout = make_tensor<float>(d.o_stride, 1, 5, 2, 8, &r, 1.0f);
  vector<float> o(dout.size()), lse(10), dq(q.size(), NAN), dk(k.size(), NAN), dv(v.size(), NAN);
  CHECK_OK(gpuops_cpu_attention_fwd_f32(o.data(), lse.data(), q.data(), k.data(), v.data(), &d, pr.scale, pr.mask()));
  CHECK_OK(gpuops_cpu_attention_bwd_f32(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(), lse.data(), &d, pr.scale,
                                        pr.mask()));
  auto loss = [&](const vector<float> &qq, const vector<float> &kk, const vector<float> &vv) {
    vector<float> oo(o.size());
    vector<float> l(10);
    CHECK_OK(gpuops_cpu_attention_fwd_f32(oo.data(), l.data(), qq.data(), kk.data(), vv.data(), &d, pr.scale, pr.mask()));
    double s = 0.0;
    for (size_t i = 0; i < oo.size(); ++i) s += (double)oo[i] * dout[i];
    return s;
  };
  double worst = 0.0;
  const float h = 1e-2f;
  for (int which = 0; which < 3; ++which) {
    vector<float> *x = which == 0 ? &q : which == 1 ? &k : &v;
    const vector<float> &g = which == 0 ? dq : which == 1 ? dk : dv;
    for (size_t i = 0; i < x->size(); ++i) {
      const float x0 = (*x)[i];
      (*x)[i] = x0 + h;
      const double lp = loss(q, k, v);
      (*x)[i] = x0 - h;
      const double lm = loss(q, k, v);
      (*x)[i] = x0;
      const double fd = (lp - lm) / (2.0 * h), err = fabs(fd - g[i]) / (1e-2 + fabs(fd));
      worst = err > worst ? err : worst;
    }
  }
  th_case(worst < 2e-3, "cpu attention backward vs central differences (causal, GQA)", "worst relative error %g", worst);
}

// ---- argument checks: CPU and GPU entry points, nothing written ---------------------------------

static void test_arguments() {
  const int64_t B = 1, S = 4, H = 2, D = 16;
  const gpuops_attention_dims good = gpuops_attention_dims_bshd(B, S, S, H, 1, D);
  vector<gpuops_bf16> q(B * S * H * D, hv<gpuops_bf16>(0.5f)), k(B * S * D, hv<gpuops_bf16>(0.5f)), v = k;
  vector<gpuops_bf16> o(q.size() + 8, hv<gpuops_bf16>(7.0f));
  vector<float> lse(B * H * S + 4, 7.0f);
  vector<char> ws(1 << 16);
  struct bad_case {
    const char *name;
    gpuops_attention_dims d;
    float scale;
    int mask;
    gpuops_algo algo;
    int ptr;  // 0 good, 1 q NULL, 2 o NULL, 3 o overlaps q, 4 o misaligned, 5 lse overlaps o, 6 dims NULL, 7 k NULL
    gpuops_status want;
  };
  auto with = [&](void (*f)(gpuops_attention_dims &)) {
    gpuops_attention_dims d = good;
    f(d);
    return d;
  };
  const bad_case cases[] = {
      {"heads_q not a multiple of heads_kv", with([](gpuops_attention_dims &d) { d.heads_q = 3, d.heads_kv = 2; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"heads_kv 0", with([](gpuops_attention_dims &d) { d.heads_kv = 0; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"head_dim 12", with([](gpuops_attention_dims &d) { d.head_dim = 12; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"head_dim 264", with([](gpuops_attention_dims &d) { d.head_dim = 264; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"head_dim 0", with([](gpuops_attention_dims &d) { d.head_dim = 0; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative batch", with([](gpuops_attention_dims &d) { d.batch = -1; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative seqlen_k", with([](gpuops_attention_dims &d) { d.seqlen_k = -3; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"seqlen_k 0 with queries", with([](gpuops_attention_dims &d) { d.seqlen_k = 0; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"q head stride < head_dim (rows overlap)", with([](gpuops_attention_dims &d) { d.q_stride[2] = 8; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"o seq stride covers one head only", with([](gpuops_attention_dims &d) { d.o_stride[1] = 16; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative k stride", with([](gpuops_attention_dims &d) { d.k_stride[1] = -16; }), 0.25f, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"scale NaN", good, NAN, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"scale inf", good, INFINITY, 0, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"mask 2", good, 0.25f, 2, GPUOPS_ALGO_AUTO, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"algo 45 (not a version)", good, 0.25f, 0, (gpuops_algo)45, 0, GPUOPS_ERR_INVALID_ARGUMENT},
      {"algo wmma (another family's)", good, 0.25f, 0, GPUOPS_ALGO_WMMA, 0, GPUOPS_ERR_UNSUPPORTED},
      {"q NULL", good, 0.25f, 0, GPUOPS_ALGO_AUTO, 1, GPUOPS_ERR_INVALID_ARGUMENT},
      {"k NULL", good, 0.25f, 0, GPUOPS_ALGO_AUTO, 7, GPUOPS_ERR_INVALID_ARGUMENT},
      {"o NULL", good, 0.25f, 0, GPUOPS_ALGO_AUTO, 2, GPUOPS_ERR_INVALID_ARGUMENT},
      {"o overlaps q", good, 0.25f, 0, GPUOPS_ALGO_AUTO, 3, GPUOPS_ERR_INVALID_ARGUMENT},
      {"o misaligned", good, 0.25f, 0, GPUOPS_ALGO_AUTO, 4, GPUOPS_ERR_MISALIGNED},
      {"lse overlaps o", good, 0.25f, 0, GPUOPS_ALGO_AUTO, 5, GPUOPS_ERR_INVALID_ARGUMENT},
      {"dims NULL", good, 0.25f, 0, GPUOPS_ALGO_AUTO, 6, GPUOPS_ERR_INVALID_ARGUMENT},
  };
  for (const bad_case &c : cases)
    for (int gpu = 0; gpu < 2; ++gpu) {
      vector<gpuops_bf16> qq = q, oo = o;
      vector<float> ll = lse;
      const gpuops_bf16 *qp = c.ptr == 1 ? nullptr : qq.data(), *kp = c.ptr == 7 ? nullptr : k.data();
      gpuops_bf16 *op = c.ptr == 2 ? nullptr : c.ptr == 3 ? qq.data() + 1 : oo.data();
      if (c.ptr == 4) op = (gpuops_bf16 *)((char *)oo.data() + 1);
      float *lp = c.ptr == 5 ? (float *)(void *)oo.data() : ll.data();
      const gpuops_attention_dims *dp = c.ptr == 6 ? nullptr : &c.d;
      const gpuops_status st =
          gpu ? gpuops_attention_fwd_bf16(op, lp, qp, kp, v.data(), dp, c.scale, (gpuops_attention_mask)c.mask, ws.data(), ws.size(), c.algo, nullptr)
              : gpuops_cpu_attention_fwd_bf16(op, lp, qp, kp, v.data(), dp, c.scale, (gpuops_attention_mask)c.mask);
      const bool untouched = memcmp(qq.data(), q.data(), q.size() * 2) == 0 && memcmp(oo.data(), o.data(), o.size() * 2) == 0 &&
                             memcmp(ll.data(), lse.data(), lse.size() * 4) == 0;
      const gpuops_status want = !gpu && c.algo != GPUOPS_ALGO_AUTO ? GPUOPS_OK : c.want;  // the CPU form takes no algo
      if (!gpu && c.algo != GPUOPS_ALGO_AUTO) continue;
      th_case(st == want && untouched, fmt("%s attention fwd: %s", gpu ? "gpu" : "cpu", c.name).c_str(), "status %s (want %s)%s",
              gpuops_status_string(st), gpuops_status_string(want), untouched ? "" : ", something was written");
    }
  {  // the backward: NULL, overlaps, an unsupported version, and the GPU workspace rule
    vector<gpuops_bf16> dq(q.size(), hv<gpuops_bf16>(7.0f)), dk(k.size(), hv<gpuops_bf16>(7.0f)), dv = dk, dout = q;
    const vector<gpuops_bf16> dq0 = dq, dk0 = dk;
    struct bc {
      const char *name;
      gpuops_bf16 *dq, *dk, *dv;
      const float *lse;
      gpuops_algo algo;
      size_t wsb;
      gpuops_status want, want_cpu;
    } bcs[] = {
        {"dq NULL", nullptr, dk.data(), dv.data(), lse.data(), GPUOPS_ALGO_AUTO, ws.size(), GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_INVALID_ARGUMENT},
        {"lse NULL", dq.data(), dk.data(), dv.data(), nullptr, GPUOPS_ALGO_AUTO, ws.size(), GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_INVALID_ARGUMENT},
        {"dk is dv", dq.data(), dk.data(), dk.data(), lse.data(), GPUOPS_ALGO_AUTO, ws.size(), GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_INVALID_ARGUMENT},
        {"dq overlaps dout", dout.data() + 2, dk.data(), dv.data(), lse.data(), GPUOPS_ALGO_AUTO, ws.size(), GPUOPS_ERR_INVALID_ARGUMENT,
         GPUOPS_ERR_INVALID_ARGUMENT},
        {"naive backward", dq.data(), dk.data(), dv.data(), lse.data(), GPUOPS_ALGO_NAIVE, ws.size(), GPUOPS_ERR_UNSUPPORTED, GPUOPS_OK},
        {"workspace too small", dq.data(), dk.data(), dv.data(), lse.data(), GPUOPS_ALGO_FLASH, 8, GPUOPS_ERR_WORKSPACE, GPUOPS_OK},
    };
    for (const bc &c : bcs) {
      const gpuops_status st = gpuops_attention_bwd_bf16(c.dq, c.dk, c.dv, dout.data(), q.data(), k.data(), v.data(), o.data(), c.lse, &good, 0.25f,
                                                         GPUOPS_ATTN_MASK_NONE, ws.data(), c.wsb, c.algo, nullptr);
      const bool untouched = memcmp(dq.data(), dq0.data(), dq.size() * 2) == 0 && memcmp(dk.data(), dk0.data(), dk.size() * 2) == 0 &&
                             memcmp(dv.data(), dk0.data(), dv.size() * 2) == 0;
      th_case(st == c.want && untouched, fmt("gpu attention bwd: %s", c.name).c_str(), "status %s (want %s)%s", gpuops_status_string(st),
              gpuops_status_string(c.want), untouched ? "" : ", something was written");
      if (c.want_cpu != GPUOPS_OK) {
        const gpuops_status sc = gpuops_cpu_attention_bwd_bf16(c.dq, c.dk, c.dv, dout.data(), q.data(), k.data(), v.data(), o.data(), c.lse, &good,
                                                               0.25f, GPUOPS_ATTN_MASK_NONE);
        th_case(sc == c.want_cpu, fmt("cpu attention bwd: %s", c.name).c_str(), "status %s", gpuops_status_string(sc));
      }
    }
    // FLASH forward with too small a workspace: refused before any launch.
    vector<gpuops_bf16> oo = o;
    const gpuops_status st = gpuops_attention_fwd_bf16(oo.data(), nullptr, q.data(), k.data(), v.data(), &good, 0.25f, GPUOPS_ATTN_MASK_NONE, ws.data(), 8,
                                                       GPUOPS_ALGO_FLASH, nullptr);
    th_case(st == GPUOPS_ERR_WORKSPACE && memcmp(oo.data(), o.data(), o.size() * 2) == 0, "gpu attention fwd: flash workspace too small", "status %s",
            gpuops_status_string(st));
    // Empty calls do nothing (NULL pointers allowed).
    gpuops_attention_dims e = good;
    e.batch = 0;
    th_case(gpuops_attention_fwd_bf16(nullptr, nullptr, nullptr, nullptr, nullptr, &e, 0.25f, GPUOPS_ATTN_MASK_NONE, nullptr, 0, GPUOPS_ALGO_AUTO,
                                      nullptr) == GPUOPS_OK,
            "gpu attention fwd: batch 0 does nothing", "not ok");
  }
}

// ---- GPU: every version against the CPU reference ----------------------------------------------

// Row ranges compared: all rows up to 512, else a few ranges of 24 rows (first, middle, last).
static vector<std::pair<int64_t, int64_t>> row_ranges(int64_t Sq) {
  if (Sq <= 512) return {{0, Sq}};
  return {{0, 24}, {Sq / 2 - 12, 24}, {Sq - 24, 24}};
}

// The CPU reference of rows [r0, r0 + n) (all heads and batches) into oref / lref (full layout):
// a sub-call whose causal corner is the same (its keys end at r0 + n + Sk - Sq).
template <class T>
static void cpu_rows(const problem &pr, const gpuops_attention_dims &d, int64_t r0, int64_t n, const vector<T> &q, const vector<T> &k, const vector<T> &v,
                     vector<T> &oref, vector<float> &lref) {
  gpuops_attention_dims s = d;
  s.seqlen_q = n;
  if (pr.causal) s.seqlen_k = std::min(d.seqlen_k, r0 + n + d.seqlen_k - d.seqlen_q);
  if (s.seqlen_k <= 0) {  // no row of the range sees a key
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t h = 0; h < d.heads_q; ++h)
        for (int64_t i = r0; i < r0 + n; ++i) {
          for (int64_t e = 0; e < d.head_dim; ++e) oref[b * d.o_stride[0] + i * d.o_stride[1] + h * d.o_stride[2] + e] = hv<T>(0.0f);
          lref[(b * d.heads_q + h) * d.seqlen_q + i] = -INFINITY;
        }
    return;
  }
  vector<float> l(d.batch * d.heads_q * n);
  CHECK_OK(attn_api<T>::cpu_fwd(oref.data() + r0 * d.o_stride[1], l.data(), q.data() + r0 * d.q_stride[1], k.data(), v.data(), &s, pr.scale, pr.mask()));
  for (int64_t bh = 0; bh < d.batch * d.heads_q; ++bh)
    for (int64_t i = 0; i < n; ++i) lref[bh * d.seqlen_q + r0 + i] = l[bh * n + i];
}

template <class T> static void test_gpu_fwd(const problem &pr, rng &r, bool gpu, const vector<gpuops_algo> &algos) {
  const gpuops_attention_dims d = pr.dims();
  for (gpuops_algo al : algos) {
    const string name = fmt("gpu attention fwd %s %s %s", check::dtype_name<T>(), gpuops_algo_name(al), pr.name().c_str());
    if (!gpu) {
      th_skip(name.c_str(), "no CUDA device");
      continue;
    }
    const vector<T> q = make_tensor<T>(d.q_stride, pr.B, pr.Sq, pr.Hq, pr.D, &r, 1.5f), k = make_tensor<T>(d.k_stride, pr.B, pr.Sk, pr.Hkv, pr.D, &r, 1.5f);
    const vector<T> v = make_tensor<T>(d.v_stride, pr.B, pr.Sk, pr.Hkv, pr.D, &r, 1.0f);
    vector<T> oref = make_tensor<T>(d.o_stride, pr.B, pr.Sq, pr.Hq, pr.D, nullptr, 0.0f);
    const int64_t rows = pr.B * pr.Hq * pr.Sq;
    vector<float> lref(rows, NAN);
    const auto ranges = row_ranges(pr.Sq);
    for (auto rg : ranges) cpu_rows<T>(pr, d, rg.first, rg.second, q, k, v, oref, lref);
    T *dq = check::to_device(q), *dk = check::to_device(k), *dv = check::to_device(v), *dout = check::to_device(oref);
    float *dl = nullptr;
    CHECK_CUDA(cudaMalloc(&dl, rows * 4 + 16));
    check::poison(dout, oref.size() * sizeof(T));  // every element NaN: the padding must stay so
    check::poison(dl, rows * 4);
    const size_t wsb = gpuops_attention_fwd_workspace_size(&d, al);
    void *ws = nullptr;
    if (wsb) CHECK_CUDA(cudaMalloc(&ws, wsb));
    const gpuops_status st = attn_api<T>::fwd(dout, dl, dq, dk, dv, &d, pr.scale, pr.mask(), ws, wsb, al);
    CHECK_CUDA(cudaDeviceSynchronize());
    string why;
    if (st != GPUOPS_OK) {
      const bool unsupported = st == GPUOPS_ERR_UNSUPPORTED;
      if (unsupported) th_skip(name.c_str(), "unsupported on this device or build");
      else why = fmt("status %s", gpuops_status_string(st));
    } else {
      const vector<T> got = check::to_host(dout, oref.size());
      const vector<float> gl = check::to_host(dl, rows);
      for (size_t e = 0; e < got.size() && why.empty(); ++e) {
        const bool pad_or_skipped = isnan(fv(oref[e]));  // padding, or a row not in a compared range
        if (pad_or_skipped) continue;
        if (!check::close(fv(got[e]), fv(oref[e]), tol_of<T>())) why = fmt("O element %zu = %g, want %g", e, fv(got[e]), fv(oref[e]));
      }
      // The padding stays NaN: every element of the output is finite, so the NaN count is the padding's.
      if (why.empty() && pr.pad) {
        int64_t nan_got = 0;
        for (size_t e = 0; e < got.size(); ++e) nan_got += isnan(fv(got[e]));
        const int64_t want_nan = (int64_t)got.size() - pr.B * pr.Sq * pr.Hq * pr.D;
        if (nan_got != want_nan) why = fmt("%lld NaN elements, want %lld (the padding)", (long long)nan_got, (long long)want_nan);
      }
      for (int64_t e = 0; e < rows && why.empty(); ++e) {
        if (isnan(lref[e])) continue;
        if (!check::close(gl[e], lref[e], kLseTol)) why = fmt("lse[%lld] = %g, want %g", (long long)e, gl[e], lref[e]);
      }
      th_case(why.empty(), name.c_str(), "%s", why.c_str());
    }
    if (!why.empty() && st != GPUOPS_OK) th_case(false, name.c_str(), "%s", why.c_str());
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dl), cudaFree(ws);
  }
}

// FLASH2 and WGMMA on layouts they cannot copy 16 bytes at a time: misaligned, nothing written;
// AUTO still right.
template <class T> static void test_gpu_flash2_misaligned(rng &r, bool gpu, gpuops_algo al) {
  const problem pr = {1, 20, 20, 2, 2, 64, false, 4, true, 0.125f};  // strides not multiples of 8
  const string name = fmt("gpu attention fwd %s %s on 8-byte rows answers misaligned", check::dtype_name<T>(), gpuops_algo_name(al));
  if (!gpu) return th_skip(name.c_str(), "no CUDA device");
  const gpuops_attention_dims d = pr.dims();
  const vector<T> q = make_tensor<T>(d.q_stride, 1, 20, 2, 64, &r, 1.0f), k = make_tensor<T>(d.k_stride, 1, 20, 2, 64, &r, 1.0f), v = k;
  vector<T> o = make_tensor<T>(d.o_stride, 1, 20, 2, 64, nullptr, 0.0f);
  T *dq = check::to_device(q), *dk = check::to_device(k), *dv = check::to_device(v), *dout = check::to_device(o);
  check::poison(dout, o.size() * sizeof(T));
  const gpuops_status st = attn_api<T>::fwd(dout, nullptr, dq, dk, dv, &d, pr.scale, pr.mask(), nullptr, 0, al);
  CHECK_CUDA(cudaDeviceSynchronize());
  const vector<T> got = check::to_host(dout, o.size());
  bool untouched = true;
  for (const T &x : got) untouched = untouched && isnan(fv(x));
  const bool old = st == GPUOPS_ERR_UNSUPPORTED;  // a device without the version answers unsupported first
  th_case((st == GPUOPS_ERR_MISALIGNED || old) && untouched, name.c_str(), "status %s%s", gpuops_status_string(st), untouched ? "" : ", written");
  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout);
}

template <class T> static void test_gpu_bwd(const problem &pr, rng &r, bool gpu, gpuops_algo al) {
  const gpuops_attention_dims d = pr.dims();
  const string name = fmt("gpu attention bwd %s %s %s", check::dtype_name<T>(), gpuops_algo_name(al), pr.name().c_str());
  if (!gpu) return th_skip(name.c_str(), "no CUDA device");
  const vector<T> q = make_tensor<T>(d.q_stride, pr.B, pr.Sq, pr.Hq, pr.D, &r, 1.5f), k = make_tensor<T>(d.k_stride, pr.B, pr.Sk, pr.Hkv, pr.D, &r, 1.5f);
  const vector<T> v = make_tensor<T>(d.v_stride, pr.B, pr.Sk, pr.Hkv, pr.D, &r, 1.0f), dout = make_tensor<T>(d.o_stride, pr.B, pr.Sq, pr.Hq, pr.D, &r, 1.0f);
  vector<T> o = make_tensor<T>(d.o_stride, pr.B, pr.Sq, pr.Hq, pr.D, nullptr, 0.0f);
  const int64_t rows = pr.B * pr.Hq * pr.Sq;
  vector<float> lse(rows + 1);
  CHECK_OK(attn_api<T>::cpu_fwd(o.data(), lse.data(), q.data(), k.data(), v.data(), &d, pr.scale, pr.mask()));
  vector<T> gq = make_tensor<T>(d.q_stride, pr.B, pr.Sq, pr.Hq, pr.D, nullptr, 0.0f), gk = make_tensor<T>(d.k_stride, pr.B, pr.Sk, pr.Hkv, pr.D, nullptr, 0.0f);
  vector<T> gv = make_tensor<T>(d.v_stride, pr.B, pr.Sk, pr.Hkv, pr.D, nullptr, 0.0f);
  vector<T> rq = gq, rk = gk, rv = gv;
  CHECK_OK(attn_api<T>::cpu_bwd(rq.data(), rk.data(), rv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(), lse.data(), &d, pr.scale, pr.mask()));
  T *Dq = check::to_device(q), *Dk = check::to_device(k), *Dv = check::to_device(v), *Do = check::to_device(o), *Ddo = check::to_device(dout);
  float *Dl = check::to_device(lse);
  T *Gq = check::to_device(gq), *Gk = check::to_device(gk), *Gv = check::to_device(gv);
  const size_t wsb = gpuops_attention_bwd_workspace_size(&d, al);
  void *ws = nullptr;
  if (wsb) CHECK_CUDA(cudaMalloc(&ws, wsb));
  string why;
  vector<T> first[3];
  bool skipped = false;
  for (int run = 0; run < 2 && why.empty(); ++run) {
    check::poison(Gq, gq.size() * sizeof(T)), check::poison(Gk, gk.size() * sizeof(T)), check::poison(Gv, gv.size() * sizeof(T));
    const gpuops_status st = attn_api<T>::bwd(Gq, Gk, Gv, Ddo, Dq, Dk, Dv, Do, Dl, &d, pr.scale, pr.mask(), ws, wsb, al);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (st == GPUOPS_ERR_UNSUPPORTED && (al == GPUOPS_ALGO_FLASH2 || al == GPUOPS_ALGO_WGMMA)) {  // head_dim > 128, f32, or a device (WGMMA: or build) without the version: nothing written
      const vector<T> got = check::to_host(Gk, gk.size());
      bool untouched = true;
      for (const T &x : got) untouched = untouched && isnan(fv(x));
      if (!untouched) why = "unsupported, but dK was written";
      else if (pr.D > 128 || std::is_same<T, float>::value) th_case(true, name.c_str(), "%s", "");
      else th_skip(name.c_str(), "unsupported on this device or build"), skipped = true;
      break;
    }
    if (st != GPUOPS_OK) {
      why = fmt("status %s", gpuops_status_string(st));
      break;
    }
    const vector<T> got[3] = {check::to_host(Gq, gq.size()), check::to_host(Gk, gk.size()), check::to_host(Gv, gv.size())};
    const vector<T> *want[3] = {&rq, &rk, &rv};
    const char *nm[3] = {"dQ", "dK", "dV"};
    for (int w = 0; w < 3 && why.empty(); ++w) {
      double mx = 0.0;
      for (const T &x : *want[w]) mx = isnan(fv(x)) ? mx : fmax(mx, fabs(fv(x)));
      const check::tolerance t = {tol_of<T>().atol * fmax(1.0, mx), tol_of<T>().rtol};
      for (size_t e = 0; e < got[w].size() && why.empty(); ++e)
        if (!check::close(fv(got[w][e]), fv((*want[w])[e]), t)) why = fmt("%s element %zu = %g, want %g", nm[w], e, fv(got[w][e]), fv((*want[w])[e]));
      // FLASH is deterministic; FLASH2's and WGMMA's dQ come from f32 atomics (their dK and dV must repeat).
      const bool repeats = al == GPUOPS_ALGO_FLASH || w > 0;
      if (run == 0) first[w] = got[w];
      else if (why.empty() && repeats && memcmp(first[w].data(), got[w].data(), got[w].size() * sizeof(T)) != 0)
        why = fmt("%s differs between two runs", nm[w]);
    }
    if (run == 1 && why.empty()) th_case(true, name.c_str(), "%s", "");
  }
  if (!why.empty()) th_case(false, name.c_str(), "%s", why.c_str());
  (void)skipped;
  cudaFree(Dq), cudaFree(Dk), cudaFree(Dv), cudaFree(Do), cudaFree(Ddo), cudaFree(Dl), cudaFree(Gq), cudaFree(Gk), cudaFree(Gv), cudaFree(ws);
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_attention: seed %llu (GPUOPS_SEED=%llu replays it)%s\n", (unsigned long long)seed, (unsigned long long)seed, quick() ? ", quick" : "");
  rng r(seed);
  test_cpu_hand();
  test_cpu_finite_differences(r);
  test_arguments();
  const bool gpu = check::have_gpu();
  if (gpu) {
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
    printf("device: %s (compute capability %d.%d)\n", p.name, p.major, p.minor);
  }
  const vector<gpuops_algo> all16 = {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_FLASH, GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA, GPUOPS_ALGO_AUTO};
  const vector<gpuops_algo> all32 = {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_FLASH, GPUOPS_ALGO_AUTO};
  const vector<gpuops_algo> fast = {GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA, GPUOPS_ALGO_AUTO};
  // {B, Sq, Sk, Hq, Hkv, D, bhsd, pad, causal, scale}
  const problem small[] = {
      {1, 1, 1, 1, 1, 64, false, 0, false, 0.125f},     {2, 17, 17, 4, 2, 64, false, 0, false, 0.125f},  {1, 17, 70, 4, 1, 128, true, 0, true, 0.09f},
      {1, 70, 17, 2, 2, 64, false, 8, true, 0.125f},    {2, 70, 70, 4, 4, 128, true, 0, true, 0.0884f}, {1, 130, 257, 8, 2, 128, false, 0, false, 0.09f},
      {1, 1, 300, 2, 1, 64, false, 0, true, 0.125f},     {1, 200, 520, 2, 2, 128, true, 0, false, 0.0884f}, {1, 150, 300, 2, 1, 64, false, 0, true, -0.1f},
  };
  for (const problem &pr : small) {
    test_gpu_fwd<gpuops_bf16>(pr, r, gpu, all16);
    test_gpu_fwd<gpuops_f16>(pr, r, gpu, all16);
    test_gpu_fwd<float>(pr, r, gpu, all32);
  }
  for (int64_t D : {8, 16, 24, 40, 56, 72, 96, 136, 192, 256}) {  // head_dim beside the fast paths
    const problem pr = {1, 33, 47, 2, 1, D, D % 16 == 0, 0, D % 3 == 0, (float)(1.0 / sqrt((double)D))};
    test_gpu_fwd<gpuops_bf16>(pr, r, gpu, all16);
    test_gpu_fwd<gpuops_f16>(pr, r, gpu, {GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA});
  }
  if (!quick()) {
    const problem big[] = {{1, 1000, 1000, 2, 1, 128, false, 0, true, 0.0884f}, {1, 1000, 1000, 2, 2, 64, true, 0, false, 0.125f},
                           {1, 4097, 4097, 1, 1, 64, false, 0, true, 0.125f},   {1, 4097, 1000, 2, 1, 128, true, 0, true, 0.0884f}};
    for (const problem &pr : big) {
      test_gpu_fwd<gpuops_bf16>(pr, r, gpu, all16);
      test_gpu_fwd<gpuops_f16>(pr, r, gpu, fast);
    }
  } else {
    th_skip("gpu attention seqlen 1000 and 4097", "GPUOPS_TEST_QUICK is set");
  }
  test_gpu_flash2_misaligned<gpuops_bf16>(r, gpu, GPUOPS_ALGO_FLASH2);
  test_gpu_flash2_misaligned<gpuops_bf16>(r, gpu, GPUOPS_ALGO_WGMMA);
  const problem bwd[] = {{1, 17, 17, 2, 2, 64, false, 0, false, 0.125f}, {1, 70, 17, 4, 2, 64, true, 0, true, 0.125f},
                         {2, 17, 70, 2, 1, 128, false, 8, true, 0.09f},  {1, 130, 129, 4, 1, 40, false, 0, true, 0.158f},
                         {1, 33, 47, 2, 2, 256, true, 0, false, 0.0625f},
                         // several Q tiles, split query heads (MQA), causal with seqlen_k > seqlen_q; head_dim 96 in the 128 path
                         {1, 200, 300, 4, 1, 64, false, 0, true, 0.125f},  {1, 150, 150, 2, 2, 96, true, 0, false, -0.1f}};
  for (const problem &pr : bwd)
    for (gpuops_algo al : {GPUOPS_ALGO_FLASH, GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA, GPUOPS_ALGO_AUTO}) {
      test_gpu_bwd<gpuops_bf16>(pr, r, gpu, al);
      test_gpu_bwd<gpuops_f16>(pr, r, gpu, al);
    }
  test_gpu_bwd<float>(bwd[1], r, gpu, GPUOPS_ALGO_FLASH);
  test_gpu_bwd<float>(bwd[1], r, gpu, GPUOPS_ALGO_WGMMA);  // 16-bit only: unsupported, nothing written
  test_gpu_bwd<float>(bwd[1], r, gpu, GPUOPS_ALGO_AUTO);
  if (!quick()) {
    const problem big[] = {{1, 600, 600, 2, 1, 128, false, 0, true, 0.0884f}, {2, 300, 520, 4, 2, 64, true, 0, true, 0.125f},
                           {1, 1000, 1000, 8, 1, 128, false, 0, false, 0.0884f}};
    for (const problem &pr : big)
      for (gpuops_algo al : {GPUOPS_ALGO_FLASH, GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA})
        test_gpu_bwd<gpuops_bf16>(pr, r, gpu, al);
  }
  return th_summary();
}
