// SPDX-License-Identifier: MIT
// tests/test_gemm.cu - tensor-core matrix multiply and linear layers: C = epilogue(alpha op(A) op(B)
// + beta C) for f16 / bf16 operands with f16, bf16 or f32 C, and the linear forward and backward.
//   Everywhere: the CPU reference against hand-computed products (four layouts, alpha, beta, k = 0,
//   beta = 0 over NaN, bias, every activation, residual, residual == C, preact), the CPU linear
//   layer against hand values, and argument checking of every CPU and GPU entry point (the checks
//   run before any launch, so they need no device): NULL, negative sizes, each leading dimension,
//   bad op / activation / algo values, another family's algo, misalignment, overlaps, workspace.
//   With a GPU: every version (WMMA, MMA_SYNC, WGMMA, AUTO) x {NN, NT, TN, TT} x the four type pairs
//   on degenerate and odd shapes (M, N or K = 1, 17, 4095; few rows, M = 5 and 8, which AUTO gives
//   the few-rows kernel where the layout is NT with 16-byte rows), with tight, padded (16-byte rows),
//   shifted (16-byte rows, A and B 16 bytes past an allocation, C and its rows odd) and odd leading
//   dimensions and offset pointers (2-byte element copies), NaN in every padding element of A and B
//   (a read past a row fails), C poisoned with NaN where beta = 0 and its padding checked
//   untouched; every epilogue; k = 0. A version this device or build lacks must answer unsupported;
//   WGMMA (sm_90a code on compute capability 9.0) must run, correctly, wherever A and B are 16-byte
//   aligned with lda, ldb multiples of 8 elements (the TMA's rule) and answer misaligned, writing
//   nothing, elsewhere; AUTO must be right everywhere;
//   every MMA_SYNC configuration forced (256 x 128, skinny, staged); 512^3; index products past 2^31; the linear forward and
//   backward against the CPU (db bit-identical across runs), its workspace rules; the MSE loss (in
//   place, bit-identical across runs) and the AdamW step against the CPU.
// Tolerance per element, from the CPU: |got - ref| <= 1.2 (max(1e-5, (k + 2) 2^-23) S + a S) +
// u |ref|, S = |alpha| sum_p |A(i,p) B(p,j)| + |beta C(i,j)| + |bias(j)| (f32 accumulation, any
// order), a = 1e-5 with an activation (its f32 / fast forms), u = one unit in the last place of C's
// type (2^-7 bf16, 2^-10 f16, 0 f32): two roundings of nearly equal values differ by at most one;
// below the normal range that unit is the subnormal step (2^-133 bf16, 2^-24 f16), which every
// 16-bit comparison also allows.
// GPUOPS_TEST_QUICK=1 drops 512^3 and the past-2^31 cases (for compute-sanitizer). GPUOPS_SEED=N
// replays a run.
#define GPUOPS_ONLY_GEMM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <math.h>
#include <string.h>

#include <string>
#include <type_traits>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "gemm_ops.h"
#include "harness.h"

using bench::fmt;
using check::quick;
using check::rng;
using std::string;
using std::vector;

static const char *op_name(gpuops_op a, gpuops_op b) {
  static const char *names[4] = {"NN", "NT", "TN", "TT"};
  return names[(int)a * 2 + (int)b];
}
template <class T> static const char *tname() { return check::dtype_name<T>(); }
template <class T> static double ulp_of() { return std::is_same<T, float>::value ? 0.0 : std::is_same<T, gpuops_f16>::value ? 0x1p-10 : 0x1p-7; }
// The spacing of T's subnormals (one unit in the last place below the normal range), with a floor
// that lets an exact zero compare equal in f32.
template <class T> static double sub_of() { return std::is_same<T, float>::value ? 1e-30 : std::is_same<T, gpuops_f16>::value ? 0x1p-24 : 0x1p-133; }
static int64_t rows_of(gpuops_op op, int64_t r, int64_t c) { return op == GPUOPS_OP_N ? r : c; }
template <class T> static T hv(float v) { return check::from_float<T>(v); }
template <class T> static float fv(T v) { return check::to_float(v); }

// ---- one problem: sizes, layouts, scalars, epilogue, host data with NaN padding, reference -------

struct problem {
  int64_t m, n, k, lda, ldb, ldc;
  gpuops_op oa, ob;
  float alpha, beta;
  int a_off, b_off, c_off;
  gpuops_activation act;
  bool bias, resid, resid_is_c, pre;
};
static const float kSentinel = 12345.0f;

template <class T, class TC> struct prepared {
  problem p;
  vector<T> a, b;            // with the offsets and NaN padding
  vector<TC> c0, bias, res;  // c0 with the offset and the sentinel after it
  vector<TC> pre0;           // preact's allocation (like C: offset, ldc rows, sentinel)
  vector<TC> ref, pre_ref;
  vector<double> bound;
  int64_t c_size;
  gpuops_epilogue epi(TC *c, TC *bias_p, TC *res_p, TC *pre_p) const {
    gpuops_epilogue e = {};
    e.act = p.act;
    e.bias = p.bias ? bias_p : nullptr;
    e.residual = p.resid_is_c ? c : p.resid ? res_p : nullptr;
    e.ldr = p.ldc;
    e.preact = p.pre ? pre_p : nullptr;
    e.ldp = p.ldc;
    return e;
  }
};

template <class T, class TC> static prepared<T, TC> prepare(const problem &p, rng &r) {
  prepared<T, TC> d;
  d.p = p;
  const int64_t ar = rows_of(p.oa, p.m, p.k), ac = rows_of(p.oa, p.k, p.m);
  const int64_t br = rows_of(p.ob, p.k, p.n), bc = rows_of(p.ob, p.n, p.k);
  d.a.assign(p.a_off + ar * p.lda + 1, hv<T>(NAN));
  d.b.assign(p.b_off + br * p.ldb + 1, hv<T>(NAN));
  d.c_size = p.c_off + p.m * p.ldc + 1;
  d.c0.assign(d.c_size, hv<TC>(kSentinel));
  d.pre0.assign(d.c_size, hv<TC>(kSentinel));
  d.bias.assign(p.n + 1, hv<TC>(NAN));
  d.res.assign(p.m * p.ldc + 1, hv<TC>(NAN));
  for (int64_t i = 0; i < ar; ++i)
    for (int64_t j = 0; j < ac; ++j) d.a[p.a_off + i * p.lda + j] = hv<T>((float)r.uniform(-1.0, 1.0));
  for (int64_t i = 0; i < br; ++i)
    for (int64_t j = 0; j < bc; ++j) d.b[p.b_off + i * p.ldb + j] = hv<T>((float)r.uniform(-1.0, 1.0));
  const bool reads_c = p.beta != 0.0f || p.resid_is_c;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      d.c0[p.c_off + i * p.ldc + j] = reads_c ? hv<TC>((float)r.uniform(-1.0, 1.0)) : hv<TC>(NAN);
      d.res[i * p.ldc + j] = hv<TC>((float)r.uniform(-1.0, 1.0));
    }
  for (int64_t j = 0; j < p.n; ++j) d.bias[j] = hv<TC>((float)r.uniform(-1.0, 1.0));
  d.ref = d.c0;
  d.pre_ref = d.pre0;
  gpuops_epilogue e = d.epi(d.ref.data() + p.c_off, d.bias.data(), d.res.data(), d.pre_ref.data() + p.c_off);
  CHECK_OK((gemm_api<T, TC>::cpu(d.ref.data() + p.c_off, d.a.data() + p.a_off, d.b.data() + p.b_off, p.m, p.n, p.k, p.lda, p.ldb, p.ldc,
                                 p.alpha, p.beta, p.oa, p.ob, &e)));
  const int64_t sai = p.oa == GPUOPS_OP_N ? p.lda : 1, sap = p.oa == GPUOPS_OP_N ? 1 : p.lda;
  const int64_t sbp = p.ob == GPUOPS_OP_N ? p.ldb : 1, sbj = p.ob == GPUOPS_OP_N ? 1 : p.ldb;
  d.bound.assign(p.m * p.n, 0.0);
  const T *A = d.a.data() + p.a_off, *B = d.b.data() + p.b_off;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double s = 0.0;
      for (int64_t q = 0; q < p.k; ++q) s += fabs((double)fv(A[i * sai + q * sap]) * (double)fv(B[q * sbp + j * sbj]));
      double extra = p.beta != 0.0f ? fabs((double)p.beta * fv(d.c0[p.c_off + i * p.ldc + j])) : 0.0;
      if (p.bias) extra += fabs((double)fv(d.bias[j]));
      d.bound[i * p.n + j] = fabs((double)p.alpha) * s + extra;
    }
  return d;
}

// "" or why got (C's whole allocation) or got_pre (preact's) is wrong.
template <class T, class TC> static string judge(const prepared<T, TC> &d, const vector<TC> &got, const vector<TC> &got_pre) {
  const problem &p = d.p;
  const double rel = fmax(1e-5, (double)(p.k + 2) * 0x1p-23), a = p.act == GPUOPS_ACT_NONE ? 0.0 : 1e-5, u = ulp_of<TC>(), sub = sub_of<TC>();
  for (int64_t e = 0; e < d.c_size; ++e) {
    const int64_t off = e - p.c_off, i = off >= 0 ? off / p.ldc : -1, j = off >= 0 ? off % p.ldc : -1;
    const bool inside = i >= 0 && i < p.m && j < p.n;
    for (int which = 0; which < (p.pre ? 2 : 1); ++which) {
      const TC gv = which ? got_pre[e] : got[e], wv = which ? d.pre_ref[e] : d.ref[e], v0 = which ? d.pre0[e] : d.c0[e];
      if (inside) {
        const double g = fv(gv), w = fv(wv), s = d.bound[i * p.n + j];
        const double tol = (which ? 1.0 : 1.2) * (rel * s + a * s) + u * fabs(w) + sub;
        if (!(fabs(g - w) <= tol) && !(isnan(g) && isnan(w)))
          return fmt("%s(%lld,%lld) = %.9g, want %.9g (tol %.3g)", which ? "preact" : "C", (long long)i, (long long)j, g, w, tol);
      } else if (memcmp(&gv, &v0, sizeof(TC)) != 0) {
        return fmt("element %lld outside %s written: %g", (long long)e, which ? "preact" : "C", (double)fv(gv));
      }
    }
  }
  return "";
}

static string describe(const problem &p, const char *what, const char *types) {
  return fmt("%s %s %lldx%lldx%lld %s lda %lld ldb %lld ldc %lld off %d/%d/%d alpha %g beta %g act %s%s%s%s", what, types, (long long)p.m,
             (long long)p.n, (long long)p.k, op_name(p.oa, p.ob), (long long)p.lda, (long long)p.ldb, (long long)p.ldc, p.a_off, p.b_off,
             p.c_off, p.alpha, p.beta, gemm_act_name(p.act), p.bias ? " bias" : "", p.resid_is_c ? " resid=C" : p.resid ? " resid" : "",
             p.pre ? " preact" : "");
}

// ---- CPU reference: hand-computed products --------------------------------------------------------

static void test_cpu_hand_cases() {
  // A = [1 2 3; 4 5 6], B = [7 8; 9 10; 11 12], A B = [58 64; 139 154] (exact in every type).
  const float Af[6] = {1, 2, 3, 4, 5, 6}, Atf[6] = {1, 4, 2, 5, 3, 6}, Bf[6] = {7, 8, 9, 10, 11, 12}, Btf[6] = {7, 9, 11, 8, 10, 12};
  gpuops_bf16 A[6], At[6], B[6], Bt[6];
  for (int i = 0; i < 6; ++i) A[i] = hv<gpuops_bf16>(Af[i]), At[i] = hv<gpuops_bf16>(Atf[i]), B[i] = hv<gpuops_bf16>(Bf[i]), Bt[i] = hv<gpuops_bf16>(Btf[i]);
  const float want[4] = {58, 64, 139, 154};
  for (int oa = 0; oa < 2; ++oa)
    for (int ob = 0; ob < 2; ++ob) {
      float c[4] = {NAN, NAN, NAN, NAN};
      const gpuops_status st = gpuops_cpu_gemm_bf16_f32(c, oa ? At : A, ob ? Bt : B, 2, 2, 3, oa ? 2 : 3, ob ? 3 : 2, 2, 1.0f, 0.0f,
                                                        (gpuops_op)oa, (gpuops_op)ob, nullptr);
      th_case(st == GPUOPS_OK && memcmp(c, want, sizeof c) == 0, fmt("cpu gemm bf16 2x2x3 %s", op_name((gpuops_op)oa, (gpuops_op)ob)).c_str(),
              "status %d, got %g %g %g %g", st, c[0], c[1], c[2], c[3]);
    }
  {  // the whole epilogue: C = relu(2 A B + 0.5 C0 + bias) + R, preact = 2 A B + 0.5 C0 + bias
    float c[4] = {1, -2, 3, 4}, pre[4] = {NAN, NAN, NAN, NAN};
    const float bias[2] = {-300, 1}, res[4] = {0.5f, 0.25f, -1, 2};
    gpuops_epilogue e = {bias, res, pre, 2, 2, GPUOPS_ACT_RELU};
    const gpuops_status st = gpuops_cpu_gemm_bf16_f32(c, A, B, 2, 2, 3, 3, 2, 2, 2.0f, 0.5f, GPUOPS_OP_N, GPUOPS_OP_N, &e);
    const float wp[4] = {116.5f - 300, 128 - 1 + 1, 278 + 1.5f - 300, 308 + 2 + 1}, wc[4] = {0.5f, 128.25f, -1, 313};
    th_case(st == GPUOPS_OK && memcmp(pre, wp, sizeof wp) == 0 && memcmp(c, wc, sizeof wc) == 0, "cpu gemm epilogue: bias, relu, residual, preact",
            "status %d, C %g %g %g %g, preact %g %g %g %g", st, c[0], c[1], c[2], c[3], pre[0], pre[1], pre[2], pre[3]);
  }
  {  // residual = C itself: C = A B + C0 (bf16 C, exact)
    gpuops_bf16 c[4] = {hv<gpuops_bf16>(1), hv<gpuops_bf16>(2), hv<gpuops_bf16>(3), hv<gpuops_bf16>(4)};
    gpuops_epilogue e = {nullptr, c, nullptr, 2, 0, GPUOPS_ACT_NONE};
    const gpuops_status st = gpuops_cpu_gemm_bf16(c, A, B, 2, 2, 3, 3, 2, 2, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, &e);
    th_case(st == GPUOPS_OK && fv(c[0]) == 59 && fv(c[1]) == 66 && fv(c[2]) == 142 && fv(c[3]) == 158, "cpu gemm residual = C accumulates",
            "status %d, %g %g %g %g", st, fv(c[0]), fv(c[1]), fv(c[2]), fv(c[3]));
  }
  {  // every activation of known values (k = 1, A = [x], B = [1]), f32 C
    const float xs[4] = {-2.0f, -0.5f, 0.5f, 3.0f};
    for (int act = 0; act <= GPUOPS_ACT_RELU; ++act) {
      bool ok = true;
      for (float x : xs) {
        gpuops_f16 a = hv<gpuops_f16>(x), b = hv<gpuops_f16>(1.0f);
        float c = NAN;
        gpuops_epilogue e = {nullptr, nullptr, nullptr, 0, 0, (gpuops_activation)act};
        CHECK_OK(gpuops_cpu_gemm_f16_f32(&c, &a, &b, 1, 1, 1, 1, 1, 1, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, &e));
        const double want = act == 1 ? 0.5 * x * erfc(-x / sqrt(2.0)) : act == 2 ? 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)))
                          : act == 3 ? x / (1 + exp(-x)) : act == 4 ? (x < 0 ? 0 : x) : x;
        ok = ok && fabs(c - want) <= 1e-6 * (1 + fabs(want));
      }
      th_case(ok, fmt("cpu gemm activation %s", gemm_act_name((gpuops_activation)act)).c_str(), "values differ");
    }
  }
  {  // k = 0: C = act(beta C + bias); beta = 0 over NaN reads nothing
    float c[2] = {4, NAN}, z[2] = {NAN, NAN};
    const float bias[2] = {-1, 2};
    gpuops_epilogue e = {bias, nullptr, nullptr, 0, 0, GPUOPS_ACT_RELU};
    gpuops_status st = gpuops_cpu_gemm_bf16_f32(c, nullptr, nullptr, 1, 1, 0, 1, 1, 1, 1.0f, 0.5f, GPUOPS_OP_N, GPUOPS_OP_N, &e);
    th_case(st == GPUOPS_OK && c[0] == 1.0f && isnan(c[1]), "cpu gemm k = 0 gives act(beta C + bias)", "status %d, %g", st, c[0]);
    st = gpuops_cpu_gemm_bf16_f32(z, nullptr, nullptr, 1, 2, 0, 1, 2, 2, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, &e);
    th_case(st == GPUOPS_OK && z[0] == 0.0f && z[1] == 2.0f, "cpu gemm k = 0, beta = 0 over NaN", "status %d, %g %g", st, z[0], z[1]);
  }
}

// The CPU linear layer by hand: batch 1, in 2, out 2.
static void test_cpu_linear_hand() {
  // x = [1, 2], W = [[1, -1], [2, 0.5]], b = [0.5, -4]: x W^T + b = [-0.5, -1]; relu: [0, 0].
  const float xf[2] = {1, 2}, wf[4] = {1, -1, 2, 0.5f}, bf[2] = {0.5f, -4}, dyf[2] = {3, -2};
  gpuops_f16 x[2], w[4], b[2], dy[2], y[2], pre[2], dx[2];
  for (int i = 0; i < 2; ++i) x[i] = hv<gpuops_f16>(xf[i]), b[i] = hv<gpuops_f16>(bf[i]), dy[i] = hv<gpuops_f16>(dyf[i]);
  for (int i = 0; i < 4; ++i) w[i] = hv<gpuops_f16>(wf[i]);
  gpuops_status st = gpuops_cpu_linear_fwd_f16(y, pre, x, w, b, 1, 2, 2, GPUOPS_ACT_NONE);
  th_case(st == GPUOPS_OK && fv(y[0]) == -0.5f && fv(y[1]) == -1.0f && fv(pre[0]) == -0.5f, "cpu linear forward by hand", "%g %g", fv(y[0]), fv(y[1]));
  float dw[4], db[2];
  st = gpuops_cpu_linear_bwd_f16(dx, dw, db, dy, pre, x, w, 1, 2, 2, GPUOPS_ACT_NONE);
  // dx = dy W = [3 - 4, -3 - 1] = [-1, -4]; dW = dy^T x = [[3, 6], [-2, -4]]; db = dy.
  th_case(st == GPUOPS_OK && fv(dx[0]) == -1 && fv(dx[1]) == -4 && dw[0] == 3 && dw[1] == 6 && dw[2] == -2 && dw[3] == -4 && db[0] == 3 && db[1] == -2,
          "cpu linear backward by hand", "dx %g %g dw %g %g %g %g db %g %g", fv(dx[0]), fv(dx[1]), dw[0], dw[1], dw[2], dw[3], db[0], db[1]);
  // ReLU with preact = [-0.5, 2]: only the second output passes its gradient.
  pre[1] = hv<gpuops_f16>(2.0f);
  st = gpuops_cpu_linear_bwd_f16(dx, dw, db, dy, pre, x, w, 1, 2, 2, GPUOPS_ACT_RELU);
  th_case(st == GPUOPS_OK && fv(dx[0]) == -4 && fv(dx[1]) == -1 && dw[0] == 0 && dw[1] == 0 && dw[2] == -2 && db[0] == 0 && db[1] == -2,
          "cpu linear backward through relu", "dx %g %g dw %g %g db %g %g", fv(dx[0]), fv(dx[1]), dw[0], dw[2], db[0], db[1]);
  th_case(gpuops_linear_bwd_workspace_size(0, 5, GPUOPS_ACT_RELU) == 0 && gpuops_linear_bwd_workspace_size(3, 5, GPUOPS_ACT_NONE) == 20 &&
              gpuops_linear_bwd_workspace_size(3, 5, GPUOPS_ACT_RELU) == 32 + 20 &&
              gpuops_linear_bwd_workspace_size(GPUOPS__LIN_ROWS + 1, 4, GPUOPS_ACT_NONE) == 32,
          "linear backward workspace sizes", "%zu %zu", gpuops_linear_bwd_workspace_size(3, 5, GPUOPS_ACT_NONE), gpuops_linear_bwd_workspace_size(3, 5, GPUOPS_ACT_RELU));
}

// ---- argument checks (no device needed) ----------------------------------------------------------

struct gemm_call {
  void *c;
  const void *a, *b;
  int64_t m, n, k, lda, ldb, ldc;
  gpuops_op oa, ob;
  gpuops_epilogue e;
  gpuops_algo algo;
};

static void test_argument_checks() {
  static gpuops_bf16 A[64], B[64], C[64], X[64];
  const gemm_call base = {C, A, B, 2, 3, 4, 4, 3, 3, GPUOPS_OP_N, GPUOPS_OP_N, {}, GPUOPS_ALGO_AUTO};
  struct bad {
    const char *name;
    gemm_call x;
    gpuops_status want;
  };
  vector<bad> cases;
  auto with = [&](const char *name, gpuops_status want, auto edit) {
    gemm_call x = base;
    edit(x);
    cases.push_back({name, x, want});
  };
  const gpuops_status INV = GPUOPS_ERR_INVALID_ARGUMENT, MIS = GPUOPS_ERR_MISALIGNED;
  with("m < 0", INV, [](gemm_call &x) { x.m = -1; });
  with("n < 0", INV, [](gemm_call &x) { x.n = -1; });
  with("k < 0", INV, [](gemm_call &x) { x.k = -1; });
  with("c NULL", INV, [](gemm_call &x) { x.c = nullptr; });
  with("a NULL", INV, [](gemm_call &x) { x.a = nullptr; });
  with("b NULL", INV, [](gemm_call &x) { x.b = nullptr; });
  with("lda < k (A)", INV, [](gemm_call &x) { x.lda = 3; });
  with("lda < m (A^T)", INV, [](gemm_call &x) { x.oa = GPUOPS_OP_T, x.lda = 1; });
  with("ldb < n (B)", INV, [](gemm_call &x) { x.ldb = 2; });
  with("ldb < k (B^T)", INV, [](gemm_call &x) { x.ob = GPUOPS_OP_T, x.ldb = 3; });
  with("ldc < n", INV, [](gemm_call &x) { x.ldc = 2; });
  with("ldr < n", INV, [](gemm_call &x) { x.e.residual = X, x.e.ldr = 2; });
  with("ldp < n", INV, [](gemm_call &x) { x.e.preact = X, x.e.ldp = 2; });
  with("op_a = 2", INV, [](gemm_call &x) { x.oa = (gpuops_op)2; });
  with("act = 5", INV, [](gemm_call &x) { x.e.act = (gpuops_activation)5; });
  with("act = -1", INV, [](gemm_call &x) { x.e.act = (gpuops_activation)-1; });
  with("C misaligned", MIS, [](gemm_call &x) { x.c = (char *)C + 1; });
  with("A misaligned", MIS, [](gemm_call &x) { x.a = (const char *)A + 1; });
  with("bias misaligned", MIS, [](gemm_call &x) { x.e.bias = (const char *)X + 1; });
  with("preact misaligned", MIS, [](gemm_call &x) { x.e.preact = (char *)X + 1, x.e.ldp = 3; });
  with("C overlaps A", INV, [](gemm_call &x) { x.c = A + 5; });
  with("C is B", INV, [](gemm_call &x) { x.c = B; });
  with("C overlaps bias", INV, [](gemm_call &x) { x.e.bias = C + 1; });
  with("preact overlaps C", INV, [](gemm_call &x) { x.e.preact = C + 2, x.e.ldp = 3; });
  with("preact overlaps residual", INV, [](gemm_call &x) { x.e.preact = X, x.e.ldp = 3, x.e.residual = X + 1, x.e.ldr = 3; });
  with("residual = C with another stride", INV, [](gemm_call &x) { x.e.residual = C, x.e.ldr = 4; });
  with("residual overlaps C", INV, [](gemm_call &x) { x.e.residual = C + 1, x.e.ldr = 3; });
  with("extent past int64", INV, [](gemm_call &x) { x.m = INT64_MAX / 2, x.ldc = 4; });
  with("m = 0: nothing to do", GPUOPS_OK, [](gemm_call &x) { x.m = 0, x.c = nullptr; });
  with("n = 0: nothing to do", GPUOPS_OK, [](gemm_call &x) { x.n = 0, x.a = nullptr; });
  with("residual = C, same stride", GPUOPS_OK, [](gemm_call &x) { x.e.residual = C, x.e.ldr = 3; });  // runs (CPU)
  with("k = 0 with NULL A and B", GPUOPS_OK, [](gemm_call &x) { x.k = 0, x.a = nullptr, x.b = nullptr; });  // runs (CPU)
  for (const bad &b : cases) {
    const gemm_call &x = b.x;
    for (int form = 0; form < 2; ++form) {
      const bool runs = b.want == GPUOPS_OK && x.m > 0 && x.n > 0;
      if (form == 1 && runs) continue;  // host pointers: the GPU form would launch on them
      const gpuops_bf16 nan = hv<gpuops_bf16>(NAN);
      for (gpuops_bf16 &v : C) v = nan;
      for (gpuops_bf16 &v : X) v = nan;
      const gpuops_status st =
          form == 0 ? gpuops_cpu_gemm_bf16((gpuops_bf16 *)x.c, (const gpuops_bf16 *)x.a, (const gpuops_bf16 *)x.b, x.m, x.n, x.k, x.lda, x.ldb, x.ldc, 1.0f, 0.0f, x.oa, x.ob, &x.e)
                    : gpuops_gemm_bf16((gpuops_bf16 *)x.c, (const gpuops_bf16 *)x.a, (const gpuops_bf16 *)x.b, x.m, x.n, x.k, x.lda, x.ldb, x.ldc, 1.0f, 0.0f, x.oa, x.ob, &x.e, x.algo, nullptr);
      bool untouched = true;
      for (gpuops_bf16 v : C) untouched = untouched && isnan(fv(v));
      for (gpuops_bf16 v : X) untouched = untouched && isnan(fv(v));
      th_case(st == b.want && (runs || untouched), fmt("%s gemm checks: %s", form ? "gpu" : "cpu", b.name).c_str(), "status %s (want %s)%s",
              gpuops_status_string(st), gpuops_status_string(b.want), untouched || runs ? "" : ", an output written");
    }
  }
  struct enum_case {
    string name;
    gpuops_algo algo;
    gpuops_status want;
  };
  // A value between two rows of GPUOPS_ALGO_LIST (the first the list leaves out, found by name so
  // that new rows do not turn it into a version).
  int gap = 1;
  while (gap < GPUOPS_ALGO_COUNT_ && strcmp(gpuops_algo_name((gpuops_algo)gap), "?") != 0) ++gap;
  vector<enum_case> enums = {{"algo -1", (gpuops_algo)-1, INV},
                             {"algo past the last", GPUOPS_ALGO_COUNT_, INV},
                             {"algo of another family (warp-tiled)", GPUOPS_ALGO_WARP_TILED, GPUOPS_ERR_UNSUPPORTED},
                             {"algo of another family (online)", GPUOPS_ALGO_ONLINE, GPUOPS_ERR_UNSUPPORTED}};
  if (gap < GPUOPS_ALGO_COUNT_) enums.push_back({fmt("algo between the listed values (%d)", gap), (gpuops_algo)gap, INV});
  else th_skip("algo between the listed values", "GPUOPS_ALGO_LIST has no gap");
  for (const enum_case &e : enums) {
    const gpuops_bf16 nan = hv<gpuops_bf16>(NAN);
    for (gpuops_bf16 &v : C) v = nan;
    gpuops_status st = gpuops_gemm_bf16(C, A, B, 2, 3, 4, 4, 3, 3, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, nullptr, e.algo, nullptr);
    th_case(st == e.want && isnan(fv(C[0])), fmt("gpu gemm checks: %s", e.name.c_str()).c_str(), "status %s", gpuops_status_string(st));
    st = gpuops_linear_fwd_bf16(C, nullptr, A, B, nullptr, 2, 2, 2, GPUOPS_ACT_NONE, e.algo, nullptr);
    th_case(st == e.want && isnan(fv(C[0])), fmt("gpu linear forward checks: %s", e.name.c_str()).c_str(), "status %s", gpuops_status_string(st));
  }
  const char *n_wmma = gpuops_algo_name(GPUOPS_ALGO_WMMA), *n_mma = gpuops_algo_name(GPUOPS_ALGO_MMA_SYNC), *n_wg = gpuops_algo_name(GPUOPS_ALGO_WGMMA);
  const char *n_neg = gpuops_algo_name((gpuops_algo)-1), *n_past = gpuops_algo_name(GPUOPS_ALGO_COUNT_);
  th_case(!strcmp(n_wmma, "wmma") && !strcmp(n_mma, "mma-sync") && !strcmp(n_wg, "wgmma") && !strcmp(n_neg, "?") && !strcmp(n_past, "?"),
          "algorithm names of the tensor-core versions", "wmma '%s', mma-sync '%s', wgmma '%s', -1 '%s', past the last '%s'", n_wmma, n_mma, n_wg,
          n_neg, n_past);

  // The linear backward's checks (batch 2, in 3, out 4): outputs dx (2x3), dw (4x3), db (4).
  static gpuops_bf16 dy[8], pre[8], x[6], w[12], dx[6];
  static float dw[12], db[4];
  static float ws[64];
  struct lb {
    const char *name;
    gpuops_bf16 *dx;
    float *dw, *db;
    const gpuops_bf16 *dy, *pre, *x, *w;
    int64_t B, I, O;
    gpuops_activation act;
    void *ws;
    size_t wsb;
    gpuops_status want;
  };
  const size_t need = gpuops_linear_bwd_workspace_size(2, 4, GPUOPS_ACT_GELU_ERF);
  const lb lbs[] = {
      {"batch < 0", dx, dw, db, dy, pre, x, w, -1, 3, 4, GPUOPS_ACT_NONE, ws, sizeof ws, INV},
      {"act = 7", dx, dw, db, dy, pre, x, w, 2, 3, 4, (gpuops_activation)7, ws, sizeof ws, INV},
      {"dy NULL", dx, dw, db, nullptr, pre, x, w, 2, 3, 4, GPUOPS_ACT_NONE, ws, sizeof ws, INV},
      {"preact NULL with an activation", dx, dw, db, dy, nullptr, x, w, 2, 3, 4, GPUOPS_ACT_SILU, ws, sizeof ws, INV},
      {"w NULL with dx", dx, nullptr, nullptr, dy, pre, x, nullptr, 2, 3, 4, GPUOPS_ACT_NONE, ws, sizeof ws, INV},
      {"x NULL with dw", nullptr, dw, nullptr, dy, pre, nullptr, w, 2, 3, 4, GPUOPS_ACT_NONE, ws, sizeof ws, INV},
      {"dw misaligned", dx, (float *)((char *)dw + 2), db, dy, pre, x, w, 2, 3, 4, GPUOPS_ACT_NONE, ws, sizeof ws, MIS},
      {"dx overlaps dy", (gpuops_bf16 *)dy + 1, dw, db, dy, pre, x, w, 2, 3, 4, GPUOPS_ACT_NONE, ws, sizeof ws, INV},
      {"dw overlaps db", dx, dw, dw + 4, dy, pre, x, w, 2, 3, 4, GPUOPS_ACT_NONE, ws, sizeof ws, INV},
      {"workspace too small", dx, dw, db, dy, pre, x, w, 2, 3, 4, GPUOPS_ACT_GELU_ERF, ws, need - 1, GPUOPS_ERR_WORKSPACE},
      {"workspace NULL", dx, dw, db, dy, pre, x, w, 2, 3, 4, GPUOPS_ACT_GELU_ERF, nullptr, 0, GPUOPS_ERR_WORKSPACE},
      {"workspace misaligned", dx, dw, db, dy, pre, x, w, 2, 3, 4, GPUOPS_ACT_GELU_ERF, (char *)ws + 4, need, MIS},
      {"workspace overlaps dw", dx, dw, db, dy, pre, x, w, 2, 3, 4, GPUOPS_ACT_NONE, dw, need, INV},
      {"no outputs: nothing to do", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 2, 3, 4, GPUOPS_ACT_GELU_ERF, nullptr, 0, GPUOPS_OK},
  };
  for (const lb &c : lbs)
    for (int form = 0; form < 2; ++form) {
      if (form == 0 && (c.want == GPUOPS_ERR_WORKSPACE || c.ws != ws)) continue;  // the CPU form takes no workspace
      for (float &v : dw) v = NAN;
      for (float &v : db) v = NAN;
      const gpuops_status st = form == 0 ? gpuops_cpu_linear_bwd_bf16(c.dx, c.dw, c.db, c.dy, c.pre, c.x, c.w, c.B, c.I, c.O, c.act)
                                         : gpuops_linear_bwd_bf16(c.dx, c.dw, c.db, c.dy, c.pre, c.x, c.w, c.B, c.I, c.O, c.act, c.ws, c.wsb,
                                                                  GPUOPS_ALGO_AUTO, nullptr);
      const bool want_ok = c.want == GPUOPS_OK;
      th_case(st == c.want && (want_ok || (isnan(dw[0]) && isnan(db[0]))), fmt("%s linear backward checks: %s", form ? "gpu" : "cpu", c.name).c_str(),
              "status %s (want %s)", gpuops_status_string(st), gpuops_status_string(c.want));
    }
}

// ---- GPU ------------------------------------------------------------------------------------------

template <class T> static T *upload(const vector<T> &h) { return check::to_device(h); }

// Uploads the problem, runs call(c, a, b, epi) on the offset device pointers, and judges it against
// want(a, b), the status the call must return for those operand pointers: GPUOPS_OK (then C and
// preact are judged), or a refusal (unsupported, misaligned), which must leave them untouched.
template <class T, class TC, class F, class W> static string run_gpu(const prepared<T, TC> &d, F call, W want) {
  const problem &p = d.p;
  T *a = upload(d.a), *b = upload(d.b);
  TC *c = upload(d.c0), *bias = upload(d.bias), *res = upload(d.res), *pre = upload(d.pre0);
  const gpuops_epilogue e = d.epi(c + p.c_off, bias, res, pre + p.c_off);
  const gpuops_status expect = want(a + p.a_off, b + p.b_off);
  const gpuops_status st = call(c + p.c_off, a + p.a_off, b + p.b_off, &e);
  CHECK_CUDA(cudaDeviceSynchronize());
  const vector<TC> got = check::to_host(c, d.c_size), got_pre = check::to_host(pre, d.c_size);
  string why;
  if (st != expect) {
    why = fmt("status %s (cuda error %d), want %s", gpuops_status_string(st), gpuops_cuda_error(), gpuops_status_string(expect));
  } else if (expect != GPUOPS_OK) {
    if (memcmp(got.data(), d.c0.data(), got.size() * sizeof(TC)) || memcmp(got_pre.data(), d.pre0.data(), got.size() * sizeof(TC)))
      why = fmt("refused (%s) but wrote", gpuops_status_string(st));
  } else {
    why = judge(d, got, got_pre);
  }
  for (void *q : {(void *)a, (void *)b, (void *)c, (void *)bias, (void *)res, (void *)pre}) CHECK_CUDA(cudaFree(q));
  return why;
}

// The device type of a host storage type.
template <class T> struct dev_type { using type = T; };
template <> struct dev_type<gpuops_f16> { using type = __half; };
template <> struct dev_type<gpuops_bf16> { using type = __nv_bfloat16; };

static const gpuops_algo kVersions[] = {GPUOPS_ALGO_WMMA, GPUOPS_ALGO_MMA_SYNC, GPUOPS_ALGO_WGMMA, GPUOPS_ALGO_AUTO};

static int device_cc() {
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major * 10 + minor;
}

// Whether this program holds the WGMMA kernels' sm_90a code (the Makefile builds it on a Hopper
// GPU; a plain sm_90 build has none, and WGMMA then answers unsupported).
static bool build_has_wgmma() {
#ifdef GPUOPS__GEMM_WGMMA
  return gpuops::gemm_wgmma_built<__nv_bfloat16, gpuops::wgmma_tile_rows, false, true, gpuops::gemm_epilogue<__nv_bfloat16>>();
#else
  return false;
#endif
}

// Whether this device and build run a version at all (else the version must answer GPUOPS_ERR_UNSUPPORTED).
template <class T> static bool device_runs(gpuops_algo algo) {
  const int cc = device_cc(), need16 = std::is_same<T, gpuops_f16>::value ? 70 : 80;
  switch (algo) {
  case GPUOPS_ALGO_WMMA: return cc >= need16;
  case GPUOPS_ALGO_MMA_SYNC: return cc >= 80;
  case GPUOPS_ALGO_WGMMA: return cc == 90 && build_has_wgmma();
  default: return cc >= need16;
  }
}

// The TMA's rule on an operand (gpuops.h section 9, WGMMA): 16-byte aligned, rows of whole 16 bytes.
static bool tma_takes(const void *x, int64_t ld) { return ((uintptr_t)x & 15u) == 0 && ld % 8 == 0; }

template <class T, class TC> static void run_versions(const problem &p, rng &r, bool gpu) {
  const string types = fmt("%s->%s", tname<T>(), tname<TC>());
  if (!gpu) {
    for (gpuops_algo algo : kVersions) th_skip(describe(p, gpuops_algo_name(algo), types.c_str()).c_str(), "no CUDA device");
    return;
  }
  const prepared<T, TC> d = prepare<T, TC>(p, r);
  for (gpuops_algo algo : kVersions) {
    const string name = describe(p, gpuops_algo_name(algo), types.c_str());
    // k = 0 is the epilogue alone in every version. Else a version this device or build lacks
    // refuses, writing nothing; WGMMA refuses operands the TMA cannot take (misaligned) and runs
    // every other shape; AUTO runs everything.
    const bool runs = device_runs<T>(algo);
    auto want = [&](const T *a, const T *b) {
      if (p.k == 0) return GPUOPS_OK;
      if (!runs) return GPUOPS_ERR_UNSUPPORTED;
      if (algo == GPUOPS_ALGO_WGMMA && !(tma_takes(a, p.lda) && tma_takes(b, p.ldb))) return GPUOPS_ERR_MISALIGNED;
      return GPUOPS_OK;
    };
    const string why = run_gpu(d, [&](TC *c, const T *a, const T *b, const gpuops_epilogue *e) {
      return gemm_api<T, TC>::gpu(c, a, b, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.alpha, p.beta, p.oa, p.ob, e, algo);
    }, want);
    th_case(why.empty(), name.c_str(), "%s", why.c_str());
  }
}

// Leading dimensions: tight; padded to a multiple of 8 and beyond (16-byte rows: cp.async and the
// TMA, with partial chunks at the tails); shifted: 16-byte rows with A and B starting 16 and 48
// bytes into their allocations and C one element in with odd rows (the TMA's rule holds, C's pairs
// are misaligned); or odd with the pointers offset by an element (2-byte copies).
enum ld_kind { TIGHT, PADDED, SHIFTED, ODD };
static problem make(int64_t m, int64_t n, int64_t k, gpuops_op oa, gpuops_op ob, ld_kind ld, float alpha, float beta) {
  problem p{m, n, k, rows_of(oa, k, m), rows_of(ob, n, k), n, oa, ob, alpha, beta, 0, 0, 0, GPUOPS_ACT_NONE, false, false, false, false};
  auto up8 = [](int64_t v) { return (v + 7) / 8 * 8; };
  if (ld == PADDED) p.lda = up8(p.lda) + 8, p.ldb = up8(p.ldb) + 16, p.ldc = up8(p.ldc) + 8;
  if (ld == SHIFTED) p.lda = up8(p.lda), p.ldb = up8(p.ldb) + 8, p.ldc = up8(p.ldc) + 3, p.a_off = 8, p.b_off = 24, p.c_off = 1;
  if (ld == ODD) p.lda += 1, p.ldb += 3, p.ldc += 1, p.a_off = 1, p.b_off = 3, p.c_off = 1;
  p.lda = p.lda < 1 ? 1 : p.lda, p.ldb = p.ldb < 1 ? 1 : p.ldb;
  return p;
}

template <class T, class TC> static void run_forced_configs(const problem &p, rng &r, bool gpu) {
  const string types = fmt("%s->%s", tname<T>(), tname<TC>());
  const bool runs = gpu && device_runs<T>(GPUOPS_ALGO_MMA_SYNC);
  const prepared<T, TC> d = runs ? prepare<T, TC>(p, r) : prepared<T, TC>();
  for (int config = 1; config <= 3; ++config) {
    const string name = describe(p, fmt("mma-sync config %d", config).c_str(), types.c_str());
    if (!runs) {
      th_skip(name.c_str(), gpu ? "needs compute capability 8.0" : "no CUDA device");
      continue;
    }
    const string why = run_gpu(d, [&](TC *c, const T *a, const T *b, const gpuops_epilogue *e) {
      using DT = typename dev_type<T>::type;
      using DTC = typename dev_type<TC>::type;
      gpuops__gemm_args args = gpuops__gemm_make(std::is_same<T, gpuops_f16>::value ? GPUOPS__F16 : GPUOPS__BF16,
                                                 std::is_same<TC, float>::value ? GPUOPS__F32 : std::is_same<TC, gpuops_f16>::value ? GPUOPS__F16 : GPUOPS__BF16,
                                                 c, a, b, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.alpha, p.beta, p.oa, p.ob, e);
      const gpuops_status st = gpuops__gemm_check(&args);
      if (st != GPUOPS_OK) return st;
      return gpuops::gemm_run_mma<DT, DTC>(gpuops::gemm_params_of(args), gpuops::gemm_epilogue_of<DTC>(args), config, nullptr);
    }, [](const T *, const T *) { return GPUOPS_OK; });
    th_case(why.empty(), name.c_str(), "%s", why.c_str());
  }
}

static void test_gpu_gemm(rng &r) {
  const bool gpu = check::have_gpu();
  struct shape { int64_t m, n, k; };
  const shape shapes[] = {{1, 1, 1}, {17, 17, 17}, {1, 67, 45}, {67, 1, 45}, {33, 17, 1}, {4095, 17, 33},
                          {17, 4095, 33}, {33, 17, 4095}, {129, 257, 200}, {256, 256, 128}, {8, 130, 1000}, {5, 33, 4104}};
  // GPUOPS_TEST_QUICK (compute-sanitizer): the small shapes, two leading-dimension kinds, two type pairs.
  const bool q = quick();
  if (gpu && device_cc() == 90 && !build_has_wgmma())
    th_skip("wgmma on this Hopper GPU", "this program has no sm_90a code, so WGMMA must answer unsupported (build with ARCH=-gencode=arch=compute_90a,code=sm_90a)");
  for (int o = 0; o < 4; ++o) {
    const gpuops_op oa = (gpuops_op)(o >> 1), ob = (gpuops_op)(o & 1);
    for (const shape &s : shapes) {
      if (q && s.m * s.n * s.k > 200 * 257 * 129) continue;
      for (ld_kind ld : {TIGHT, PADDED, SHIFTED, ODD}) {
        if (q && (ld == TIGHT || ld == SHIFTED)) continue;
        run_versions<gpuops_bf16, gpuops_bf16>(make(s.m, s.n, s.k, oa, ob, ld, 1.0f, 0.0f), r, gpu);
        if (!q) run_versions<gpuops_f16, gpuops_f16>(make(s.m, s.n, s.k, oa, ob, ld, 1.0f, 0.0f), r, gpu);
        if (!q) run_versions<gpuops_bf16, float>(make(s.m, s.n, s.k, oa, ob, ld, -0.5f, 0.75f), r, gpu);  // beta reads C
        run_versions<gpuops_f16, float>(make(s.m, s.n, s.k, oa, ob, ld, 1.0f, 0.0f), r, gpu);
      }
    }
  }
  // Every epilogue: each activation with bias and preact; with beta, a residual and bias (odd rows,
  // then shifted ones that WGMMA takes); residual = C.
  for (int act = 0; act <= GPUOPS_ACT_RELU; ++act)
    for (int o : {0, 1, 2, 3})
      for (int form = 0; form < 4; ++form) {
        if (q && (act % 2 == 0 || o > 1)) continue;
        const bool resid = form == 1 || form == 3;
        problem p = make(77, 133, 150, (gpuops_op)(o >> 1), (gpuops_op)(o & 1), form == 1 ? ODD : form == 3 ? SHIFTED : PADDED,
                         form == 2 ? -1.0f : 1.5f, resid ? 0.5f : 0.0f);
        p.act = (gpuops_activation)act, p.bias = form != 2, p.pre = form != 2, p.resid = resid, p.resid_is_c = form == 2;
        // Type pairs 0..3 (bf16, f16, bf16 -> f32, f16 -> f32): the layout's, the form's; the shifted
        // form one pair per case, all four in turn.
        const int pair = form == 3 ? (act + o) % 4 : -1;
        const bool run[4] = {pair < 0 ? o == 0 || form == 0 : pair == 0, pair < 0 ? o == 1 || form == 1 : pair == 1,
                             pair < 0 ? o == 2 || form == 2 : pair == 2, pair < 0 ? o == 3 : pair == 3};
        if (run[0]) run_versions<gpuops_bf16, gpuops_bf16>(p, r, gpu);
        if (run[1]) run_versions<gpuops_f16, gpuops_f16>(p, r, gpu);
        if (run[2]) run_versions<gpuops_bf16, float>(p, r, gpu);
        if (run[3]) run_versions<gpuops_f16, float>(p, r, gpu);
      }
  // k = 0: the epilogue of zero (beta C + bias, activation, residual); beta = 0 over NaN.
  {
    problem p = make(5, 7, 0, GPUOPS_OP_N, GPUOPS_OP_N, PADDED, 2.0f, 0.5f);
    p.act = GPUOPS_ACT_GELU_TANH, p.bias = p.pre = p.resid = true;
    run_versions<gpuops_bf16, gpuops_bf16>(p, r, gpu);
    run_versions<gpuops_f16, float>(make(5, 7, 0, GPUOPS_OP_T, GPUOPS_OP_T, TIGHT, 2.0f, 0.0f), r, gpu);
  }
  // The few-rows kernels' epilogue (NT, 16-byte rows): bias, GELU, preact, residual, beta.
  {
    problem p = make(7, 90, 1320, GPUOPS_OP_N, GPUOPS_OP_T, PADDED, 1.5f, 0.5f);
    p.act = GPUOPS_ACT_GELU_ERF, p.bias = p.pre = p.resid = true;
    run_versions<gpuops_bf16, gpuops_bf16>(p, r, gpu);
    run_versions<gpuops_f16, float>(p, r, gpu);
    problem q = make(1, 91, 1000, GPUOPS_OP_N, GPUOPS_OP_T, SHIFTED, 1.5f, 0.5f);  // one row: the GEMV, odd n, K tail
    q.act = GPUOPS_ACT_GELU_TANH, q.bias = q.pre = q.resid = true;
    run_versions<gpuops_bf16, float>(q, r, gpu);
    run_versions<gpuops_f16, gpuops_f16>(q, r, gpu);
  }
  // Every MMA_SYNC configuration on tails, odd and padded rows, every layout.
  for (int o = 0; o < 4; ++o) {
    const gpuops_op oa = (gpuops_op)(o >> 1), ob = (gpuops_op)(o & 1);
    run_forced_configs<gpuops_bf16, gpuops_bf16>(make(300, 520, 200, oa, ob, PADDED, 1.0f, 0.0f), r, gpu);
    problem p = make(130, 260, 36, oa, ob, ODD, 1.5f, -1.0f);
    p.act = GPUOPS_ACT_SILU, p.bias = p.pre = true;
    run_forced_configs<gpuops_f16, float>(p, r, gpu);
    run_forced_configs<gpuops_bf16, float>(make(40, 300, 700, oa, ob, TIGHT, 1.0f, 0.0f), r, gpu);
  }
  if (quick()) {
    th_skip("gemm 512^3, every version", "GPUOPS_TEST_QUICK");
    return;
  }
  run_versions<gpuops_bf16, gpuops_bf16>(make(512, 512, 512, GPUOPS_OP_N, GPUOPS_OP_N, TIGHT, 1.0f, 0.0f), r, gpu);
  run_versions<gpuops_f16, float>(make(512, 512, 512, GPUOPS_OP_T, GPUOPS_OP_T, TIGHT, 1.0f, 0.0f), r, gpu);
}

// ---- GPU: index products past 2^31 ---------------------------------------------------------------
// Small products whose leading dimensions make row x ld pass 2^31 elements (i lda and i ldc for A
// and C, j ldb for B^T): a 32-bit product anywhere reads or writes a wrong element. Each such matrix
// is allocated whole (about 4.4 GB), set to NaN, and only the used part of its rows copied in; C's
// padding element after each row must stay NaN. Skipped (named) where the device lacks the memory.
template <class T> static T *upload_pitched(const T *h, int64_t rows, int64_t cols, int64_t ld) {
  T *d = nullptr;
  const size_t bytes = (size_t)(rows * ld) * sizeof(T);
  if (cudaMalloc(&d, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  check::poison(d, bytes);
  CHECK_CUDA(cudaMemcpy2D(d, (size_t)ld * sizeof(T), h, (size_t)cols * sizeof(T), (size_t)cols * sizeof(T), (size_t)rows, cudaMemcpyHostToDevice));
  return d;
}

static void test_gpu_past_2_31(rng &r, bool gpu) {
  using T = gpuops_bf16;
  const int64_t L = 66000;  // 33000 * 66000 = 2.18e9 > 2^31
  struct big_case { int64_t m, n, k, lda, ldb, ldc; gpuops_op oa, ob; gpuops_algo algo; };
  const big_case cases[] = {{33000, 40, 24, L, 40, L, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_ALGO_MMA_SYNC},
                            {33000, 40, 24, L, 40, L, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_ALGO_WMMA},
                            {40, 33000, 24, 24, L, 33000, GPUOPS_OP_N, GPUOPS_OP_T, GPUOPS_ALGO_AUTO},
                            {1, 33000, 24, 24, L, 33000, GPUOPS_OP_N, GPUOPS_OP_T, GPUOPS_ALGO_AUTO}};
  for (const big_case &c : cases) {
    problem p = make(c.m, c.n, c.k, c.oa, c.ob, TIGHT, 1.0f, 0.0f);  // compact on the host
    const string name = fmt("gemm past 2^31: %s %lldx%lldx%lld %s lda %lld ldb %lld ldc %lld", gpuops_algo_name(c.algo), (long long)c.m,
                            (long long)c.n, (long long)c.k, op_name(c.oa, c.ob), (long long)c.lda, (long long)c.ldb, (long long)c.ldc);
    if (quick()) {
      th_skip(name.c_str(), "GPUOPS_TEST_QUICK");
      continue;
    }
    if (!gpu || !device_runs<T>(c.algo)) {
      th_skip(name.c_str(), gpu ? "version not on this device" : "no CUDA device");
      continue;
    }
    const prepared<T, T> d = prepare<T, T>(p, r);
    const int64_t ar = rows_of(c.oa, c.m, c.k), br = rows_of(c.ob, c.k, c.n);
    T *da = upload_pitched(d.a.data(), ar, p.lda, c.lda);
    T *db = da ? upload_pitched(d.b.data(), br, p.ldb, c.ldb) : nullptr;
    T *dc = nullptr;
    const size_t c_bytes = (size_t)(c.m * c.ldc) * sizeof(T);
    if (db && cudaMalloc(&dc, c_bytes) != cudaSuccess) (void)cudaGetLastError(), dc = nullptr;
    if (!dc) {
      if (da) CHECK_CUDA(cudaFree(da));
      if (db) CHECK_CUDA(cudaFree(db));
      th_skip(name.c_str(), "not enough device memory");
      continue;
    }
    check::poison(dc, c_bytes);
    const gpuops_status st = gpuops_gemm_bf16(dc, da, db, c.m, c.n, c.k, c.lda, c.ldb, c.ldc, 1.0f, 0.0f, c.oa, c.ob, nullptr, c.algo, nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    string why;
    if (st != GPUOPS_OK) {
      why = fmt("status %s (cuda error %d)", gpuops_status_string(st), gpuops_cuda_error());
    } else {
      const int64_t w = c.ldc > c.n ? c.n + 1 : c.n;
      vector<T> back((size_t)(c.m * w)), got = d.c0, nopre = d.pre0;
      CHECK_CUDA(cudaMemcpy2D(back.data(), (size_t)w * sizeof(T), dc, (size_t)c.ldc * sizeof(T), (size_t)w * sizeof(T), (size_t)c.m, cudaMemcpyDeviceToHost));
      bool pad_ok = true;
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) got[i * c.n + j] = back[i * w + j];
        if (w > c.n) pad_ok = pad_ok && back[i * w + c.n].bits == 0xFFFFu;
      }
      why = judge(d, got, nopre);
      if (why.empty() && !pad_ok) why = "a padding element of C was written";
    }
    for (T *q : {da, db, dc}) CHECK_CUDA(cudaFree(q));
    th_case(why.empty(), name.c_str(), "%s", why.c_str());
  }
}

// ---- GPU: the linear layer -------------------------------------------------------------------------

template <class T> static void test_gpu_linear(rng &r, bool gpu) {
  struct lsize { int64_t B, I, O; };
  const lsize sizes[] = {{1, 64, 64}, {17, 33, 45}, {256, 200, 300}, {300, 129, 7}};
  const double u = ulp_of<T>(), sub = sub_of<T>();
  for (const lsize &s : sizes)
    for (int act = 0; act <= GPUOPS_ACT_RELU; ++act)
      for (int variant = 0; variant < 2; ++variant) {  // 0: bias, preact, every gradient; 1: no bias, no dx
        if (quick() && (s.B == 256 || act % 2)) continue;
        const string name = fmt("linear %s batch %lld in %lld out %lld act %s%s", tname<T>(), (long long)s.B, (long long)s.I, (long long)s.O,
                                gemm_act_name((gpuops_activation)act), variant ? " (no bias, no dx)" : "");
        if (!gpu) {
          th_skip(name.c_str(), "no CUDA device");
          continue;
        }
        const gpuops_activation A = (gpuops_activation)act;
        vector<T> x(s.B * s.I), w(s.O * s.I), b(s.O), dy(s.B * s.O);
        for (auto &v : x) v = hv<T>((float)r.uniform(-1, 1));
        for (auto &v : w) v = hv<T>((float)r.uniform(-0.5, 0.5));
        for (auto &v : b) v = hv<T>((float)r.uniform(-1, 1));
        for (auto &v : dy) v = hv<T>((float)r.uniform(-1, 1));
        vector<T> y_ref(s.B * s.O), pre_ref(s.B * s.O), dx_ref(s.B * s.I);
        vector<float> dw_ref(s.O * s.I), db_ref(s.O);
        const T *bias = variant ? nullptr : b.data();
        CHECK_OK(linear_api<T>::cpu_fwd(y_ref.data(), pre_ref.data(), x.data(), w.data(), bias, s.B, s.I, s.O, A));
        CHECK_OK(linear_api<T>::cpu_bwd(dx_ref.data(), dw_ref.data(), db_ref.data(), dy.data(), pre_ref.data(), x.data(), w.data(), s.B, s.I, s.O, A));
        T *dx_ = upload(x), *dw_ = upload(w), *db_ = upload(b), *ddy = upload(dy);
        T *dy_out = nullptr, *dpre = nullptr, *ddx = nullptr;
        float *ddw = nullptr, *ddb = nullptr;
        CHECK_CUDA(cudaMalloc(&dy_out, s.B * s.O * sizeof(T)));
        CHECK_CUDA(cudaMalloc(&dpre, s.B * s.O * sizeof(T)));
        CHECK_CUDA(cudaMalloc(&ddx, s.B * s.I * sizeof(T)));
        CHECK_CUDA(cudaMalloc(&ddw, s.O * s.I * sizeof(float)));
        CHECK_CUDA(cudaMalloc(&ddb, s.O * sizeof(float)));
        check::poison(dy_out, s.B * s.O * sizeof(T));
        check::poison(dpre, s.B * s.O * sizeof(T));
        check::poison(ddx, s.B * s.I * sizeof(T));
        check::poison(ddw, s.O * s.I * sizeof(float));
        check::poison(ddb, s.O * sizeof(float));
        const size_t wsb = gpuops_linear_bwd_workspace_size(s.B, s.O, A);
        void *ws = nullptr;
        if (wsb) CHECK_CUDA(cudaMalloc(&ws, wsb));
        string why;
        gpuops_status st = linear_api<T>::fwd(dy_out, dpre, dx_, dw_, variant ? nullptr : db_, s.B, s.I, s.O, A, GPUOPS_ALGO_AUTO);
        if (st != GPUOPS_OK) why = fmt("forward: %s", gpuops_status_string(st));
        // The backward reads the CPU's preact (the same bits the GPU forward should produce).
        T *dpre_ref = upload(pre_ref);
        if (why.empty()) {
          st = linear_api<T>::bwd(variant ? nullptr : ddx, ddw, ddb, ddy, dpre_ref, dx_, dw_, s.B, s.I, s.O, A, ws, wsb, GPUOPS_ALGO_AUTO);
          if (st != GPUOPS_OK) why = fmt("backward: %s (cuda error %d)", gpuops_status_string(st), gpuops_cuda_error());
        }
        CHECK_CUDA(cudaDeviceSynchronize());
        if (why.empty()) {
          const vector<T> y = check::to_host(dy_out, s.B * s.O), pre = check::to_host(dpre, s.B * s.O), dxh = check::to_host(ddx, s.B * s.I);
          const vector<float> dwh = check::to_host(ddw, s.O * s.I), dbh = check::to_host(ddb, s.O);
          // Bounds from the magnitudes: forward sum |x| |w| + |b|; backward sums of |dh| times the other factor.
          auto dh_abs = [&](int64_t i, int64_t j) { return fabs((double)fv(dy[i * s.O + j])) * (A == GPUOPS_ACT_NONE ? 1.0 : 1.2); };
          for (int64_t i = 0; i < s.B && why.empty(); ++i)
            for (int64_t j = 0; j < s.O && why.empty(); ++j) {
              double sb = variant ? 0.0 : fabs((double)fv(b[j]));
              for (int64_t q = 0; q < s.I; ++q) sb += fabs((double)fv(x[i * s.I + q]) * fv(w[j * s.I + q]));
              const double tol = 1.2 * (fmax(1e-5, (s.I + 2) * 0x1p-23) + (A ? 1e-5 : 0.0)) * sb;
              const double gy = fv(y[i * s.O + j]), wy = fv(y_ref[i * s.O + j]), gp = fv(pre[i * s.O + j]), wp = fv(pre_ref[i * s.O + j]);
              if (!(fabs(gy - wy) <= tol + u * fabs(wy) + sub) || !(fabs(gp - wp) <= tol + u * fabs(wp) + sub))
                why = fmt("forward (%lld,%lld): y %g want %g, preact %g want %g", (long long)i, (long long)j, gy, wy, gp, wp);
            }
          // dh is rounded to T on the GPU before the GEMMs (not on the CPU): u / 2 relative per term.
          const double dhr = A == GPUOPS_ACT_NONE ? 0.0 : u;
          for (int64_t i = 0; i < s.B && why.empty() && !variant; ++i)
            for (int64_t q = 0; q < s.I && why.empty(); ++q) {
              double sb = 0.0;
              for (int64_t j = 0; j < s.O; ++j) sb += dh_abs(i, j) * fabs((double)fv(w[j * s.I + q]));
              const double g = fv(dxh[i * s.I + q]), want = fv(dx_ref[i * s.I + q]);
              if (!(fabs(g - want) <= (fmax(1e-5, (s.O + 2) * 0x1p-23) + dhr + 1e-5) * sb + u * fabs(want) + sub))
                why = fmt("dx(%lld,%lld) = %g, want %g", (long long)i, (long long)q, g, want);
            }
          for (int64_t j = 0; j < s.O && why.empty(); ++j) {
            double sdb = 0.0;
            for (int64_t i = 0; i < s.B; ++i) sdb += dh_abs(i, j);
            if (!(fabs(dbh[j] - db_ref[j]) <= (fmax(1e-5, (s.B + 2) * 0x1p-23) + 1e-5) * sdb))
              why = fmt("db(%lld) = %g, want %g", (long long)j, dbh[j], db_ref[j]);
            for (int64_t q = 0; q < s.I && why.empty(); ++q) {
              double sb = 0.0;
              for (int64_t i = 0; i < s.B; ++i) sb += dh_abs(i, j) * fabs((double)fv(x[i * s.I + q]));
              const double g = dwh[j * s.I + q], want = dw_ref[j * s.I + q];
              if (!(fabs(g - want) <= (fmax(1e-5, (s.B + 2) * 0x1p-23) + dhr + 1e-5) * sb + 1e-30))
                why = fmt("dW(%lld,%lld) = %g, want %g", (long long)j, (long long)q, g, want);
            }
          }
          if (variant && why.empty()) {  // dx was not asked for: still poisoned
            for (T v : dxh)
              if (v.bits != 0xFFFFu) { why = "dx written though NULL was passed"; break; }
          }
          if (why.empty()) {  // db and dW are deterministic: a second run gives the same bits
            CHECK_OK(linear_api<T>::bwd(nullptr, ddw, ddb, ddy, dpre_ref, dx_, dw_, s.B, s.I, s.O, A, ws, wsb, GPUOPS_ALGO_AUTO));
            CHECK_CUDA(cudaDeviceSynchronize());
            const vector<float> dw2 = check::to_host(ddw, s.O * s.I), db2 = check::to_host(ddb, s.O);
            if (memcmp(dw2.data(), dwh.data(), dw2.size() * 4) || memcmp(db2.data(), dbh.data(), db2.size() * 4)) why = "dW or db differ between runs";
          }
        }
        for (void *q : {(void *)dx_, (void *)dw_, (void *)db_, (void *)ddy, (void *)dy_out, (void *)dpre, (void *)ddx, (void *)ddw, (void *)ddb,
                        (void *)dpre_ref, ws})
          if (q) CHECK_CUDA(cudaFree(q));
        th_case(why.empty(), name.c_str(), "%s", why.c_str());
      }
}


// ---- the loss and the optimizer ---------------------------------------------------------------------

static void test_cpu_train_hand() {
  // y = [1, 2, 3, 4], t = [1, 0, 3, 2]: (y - t)^2 = [0, 4, 0, 4], mean 2; dy = 2 (y - t) / 4 = [0, 1, 0, 1].
  gpuops_bf16 y[4], t[4], dy[4];
  const float yf[4] = {1, 2, 3, 4}, tf[4] = {1, 0, 3, 2};
  for (int i = 0; i < 4; ++i) y[i] = hv<gpuops_bf16>(yf[i]), t[i] = hv<gpuops_bf16>(tf[i]);
  float loss = NAN;
  gpuops_status st = gpuops_cpu_mse_loss_bf16(&loss, dy, y, t, 2, 2);
  th_case(st == GPUOPS_OK && loss == 2.0f && fv(dy[0]) == 0 && fv(dy[1]) == 1 && fv(dy[3]) == 1, "cpu mse loss by hand", "loss %g dy %g %g", loss, fv(dy[0]), fv(dy[1]));
  st = gpuops_cpu_mse_loss_bf16(&loss, nullptr, nullptr, nullptr, 0, 5);
  th_case(st == GPUOPS_OK && loss == 0.0f, "cpu mse loss of no elements is 0", "loss %g", loss);
  // AdamW, step 1 from m = v = 0: m = 0.1 g, v = 0.001 g^2, m / (1 - 0.9) = g, v / (1 - 0.999) = g^2,
  // so w = w (1 - lr wd) - lr g / (|g| + eps).
  float w[2] = {1.0f, -2.0f}, m[2] = {0, 0}, v[2] = {0, 0};
  const float g[2] = {0.5f, -4.0f};
  gpuops_f16 w16[2];
  st = gpuops_cpu_adamw_step_f16(w, m, v, w16, g, 2, 0.1f, 0.9f, 0.999f, 0.0f, 0.01f, 1);
  const double w0 = 1.0 * (1 - 0.001) - 0.1, w1 = -2.0 * (1 - 0.001) + 0.1;
  th_case(st == GPUOPS_OK && fabs(w[0] - w0) < 1e-6 && fabs(w[1] - w1) < 1e-6 && fabs(m[0] - 0.05f) < 1e-7 && fabs(v[1] - (1.0 - (double)0.999f) * 16.0) < 1e-8 &&
              fv(w16[0]) == fv(hv<gpuops_f16>((float)w0)),
          "cpu adamw first step by hand", "w %g %g m %g v %g", w[0], w[1], m[0], v[1]);
  const gpuops_status bad[] = {gpuops_cpu_adamw_step_f16(w, m, v, w16, g, 2, 0.1f, 1.0f, 0.999f, 0.0f, 0.0f, 1),
                               gpuops_cpu_adamw_step_f16(w, m, v, w16, g, 2, 0.1f, 0.9f, 0.999f, 0.0f, 0.0f, 0),
                               gpuops_cpu_adamw_step_f16(w, m, v, w16, g, 2, NAN, 0.9f, 0.999f, 0.0f, 0.0f, 1),
                               gpuops_cpu_adamw_step_f16(w, w, v, w16, g, 2, 0.1f, 0.9f, 0.999f, 0.0f, 0.0f, 1),
                               gpuops_cpu_adamw_step_f16(w, m, v, w16, nullptr, 2, 0.1f, 0.9f, 0.999f, 0.0f, 0.0f, 1),
                               gpuops_adamw_step_f16(w, m, v, w16, g, 2, 0.1f, 0.9f, -0.5f, 0.0f, 0.0f, 1, nullptr),
                               gpuops_mse_loss_bf16(&loss, dy, y, t, 2, 2, nullptr, 0, nullptr),
                               gpuops_mse_loss_bf16(&loss, (gpuops_bf16 *)t + 1, y, t, 2, 2, w, 16, nullptr),
                               gpuops_cpu_mse_loss_bf16(nullptr, dy, y, t, 2, 2)};
  const gpuops_status want[] = {GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_INVALID_ARGUMENT,
                                GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_WORKSPACE, GPUOPS_ERR_INVALID_ARGUMENT,
                                GPUOPS_ERR_INVALID_ARGUMENT};
  for (int i = 0; i < 9; ++i)
    th_case(bad[i] == want[i], fmt("loss / adamw checks: case %d", i).c_str(), "status %s (want %s)", gpuops_status_string(bad[i]), gpuops_status_string(want[i]));
}

template <class T> static void test_gpu_train(rng &r, bool gpu) {
  for (int64_t n : {(int64_t)1, (int64_t)1000, (int64_t)70001}) {
    const string name = fmt("mse loss and adamw %s n %lld", tname<T>(), (long long)n);
    if (!gpu) {
      th_skip(name.c_str(), "no CUDA device");
      continue;
    }
    vector<T> y(n), t(n), dy_ref(n), w16_ref(n);
    vector<float> w(n), m(n), v(n), g(n);
    for (int64_t i = 0; i < n; ++i) {
      y[i] = hv<T>((float)r.uniform(-2, 2)), t[i] = hv<T>((float)r.uniform(-2, 2));
      w[i] = (float)r.uniform(-1, 1), m[i] = (float)r.uniform(-0.1, 0.1), v[i] = (float)r.uniform(0, 0.01), g[i] = (float)r.uniform(-1, 1);
    }
    float loss_ref = 0.0f;
    CHECK_OK(linear_api<T>::cpu_mse(&loss_ref, dy_ref.data(), y.data(), t.data(), 1, n));
    vector<float> w_ref = w, m_ref = m, v_ref = v;
    CHECK_OK(linear_api<T>::cpu_adamw(w_ref.data(), m_ref.data(), v_ref.data(), w16_ref.data(), g.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 7));
    T *dy_ = upload(y), *dt = upload(t), *dw16 = upload(y);
    float *dw = upload(w), *dm = upload(m), *dv = upload(v), *dg = upload(g), *dloss = nullptr;
    CHECK_CUDA(cudaMalloc(&dloss, 4));
    check::poison(dloss, 4);
    const size_t wsb = gpuops_mse_loss_workspace_size(n);
    void *ws = nullptr;
    CHECK_CUDA(cudaMalloc(&ws, wsb + 16));
    string why;
    gpuops_status st = linear_api<T>::mse(dloss, dy_, dy_, dt, 1, n, ws, wsb);  // dy in place of y
    if (st == GPUOPS_OK) st = linear_api<T>::adamw(dw, dm, dv, dw16, dg, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 7);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (st != GPUOPS_OK) why = fmt("status %s (cuda error %d)", gpuops_status_string(st), gpuops_cuda_error());
    if (why.empty()) {
      float loss = NAN;
      CHECK_CUDA(cudaMemcpy(&loss, dloss, 4, cudaMemcpyDeviceToHost));
      const vector<T> dyh = check::to_host(dy_, n), w16h = check::to_host(dw16, n);
      const vector<float> wh = check::to_host(dw, n), mh = check::to_host(dm, n), vh = check::to_host(dv, n);
      if (!(fabs(loss - loss_ref) <= 1e-5 * (double)loss_ref + 1e-30)) why = fmt("loss %.9g, want %.9g", loss, loss_ref);
      // 16-bit results within one rounding of the reference: a unit in the last place, the
      // subnormal step below the normal range (f16 below 2^-14: steps of 2^-24).
      const double u = ulp_of<T>(), sub = sub_of<T>();
      for (int64_t i = 0; i < n && why.empty(); ++i) {
        if (!(fabs(fv(dyh[i]) - fv(dy_ref[i])) <= u * fabs(fv(dy_ref[i])) + sub)) why = fmt("dy[%lld] = %g, want %g", (long long)i, fv(dyh[i]), fv(dy_ref[i]));
        else if (!(fabs(wh[i] - w_ref[i]) <= 1e-6 * (1 + fabs(w_ref[i]))) || !(fabs(mh[i] - m_ref[i]) <= 1e-6 * (1 + fabs(m_ref[i]))) ||
                 !(fabs(vh[i] - v_ref[i]) <= 1e-6 * fabs(v_ref[i]) + 1e-12))
          why = fmt("adamw [%lld]: w %g want %g, m %g want %g, v %g want %g", (long long)i, wh[i], w_ref[i], mh[i], m_ref[i], vh[i], v_ref[i]);
        else if (!(fabs(fv(w16h[i]) - wh[i]) <= u * fabs(wh[i]) + sub)) why = fmt("w16[%lld] = %g, w %g", (long long)i, fv(w16h[i]), wh[i]);
      }
      if (why.empty()) {  // the loss is deterministic: two more runs (without dy) give the same bits
        T *y2 = upload(y);
        float loss2 = NAN, again = NAN;
        CHECK_OK(linear_api<T>::mse(dloss, nullptr, y2, dt, 1, n, ws, wsb));
        CHECK_CUDA(cudaMemcpy(&loss2, dloss, 4, cudaMemcpyDeviceToHost));
        CHECK_OK(linear_api<T>::mse(dloss, nullptr, y2, dt, 1, n, ws, wsb));
        CHECK_CUDA(cudaMemcpy(&again, dloss, 4, cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaFree(y2));
        if (memcmp(&loss2, &again, 4) || memcmp(&loss2, &loss, 4)) why = "the loss differs between runs";
      }
    }
    for (void *q : {(void *)dy_, (void *)dt, (void *)dw16, (void *)dw, (void *)dm, (void *)dv, (void *)dg, (void *)dloss, ws}) CHECK_CUDA(cudaFree(q));
    th_case(why.empty(), name.c_str(), "%s", why.c_str());
  }
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_gemm: seed %llu (GPUOPS_SEED replays it)\n", (unsigned long long)seed);
  rng r(seed);
  const bool gpu = check::have_gpu();
  test_cpu_hand_cases();
  test_cpu_linear_hand();
  test_argument_checks();
  test_gpu_gemm(r);
  test_gpu_past_2_31(r, gpu);
  test_gpu_linear<gpuops_bf16>(r, gpu);
  test_gpu_linear<gpuops_f16>(r, gpu);
  test_cpu_train_hand();
  test_gpu_train<gpuops_bf16>(r, gpu);
  test_gpu_train<gpuops_f16>(r, gpu);
  return th_summary();
}
