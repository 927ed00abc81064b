// SPDX-License-Identifier: MIT
// tests/test_matmul.cu - matrix multiply: C = alpha op(A) op(B) + beta C, f32.
//   Everywhere: the CPU reference against hand-computed products (all four layouts, alpha, beta,
//   k = 0, beta = 0 over NaN, padded rows left alone), the CPU baselines against the reference on
//   odd shapes, and argument checking of the CPU and GPU entry points (the checks run before any
//   launch, so they need no device): NULL, negative sizes, each leading dimension too small,
//   bad op / algo / kind values, an algorithm of another family, misalignment, overlap.
//   With a GPU: every version x {NN, NT, TN, TT} on degenerate and odd shapes against the CPU
//   reference, with padded and misaligned leading dimensions and offset pointers (NaN in every
//   padding element of A and B, so a read past a row fails), C poisoned where beta = 0 and its
//   padding checked untouched, alpha / beta, k = 0, every WARP_TILED tile configuration, AUTO's
//   few-rows path (m or n = 2, 3, 7, 16, 17, 33, 64 in every layout, k and n up to 4095; k 8195
//   and 8196 on few tiles: the k split over a cluster), 1024^3,
//   and every version with leading dimensions whose index products pass 2^31 (8.7 GB matrices).
// Tolerance per element: |got - ref| <= max(1e-5, (k + 2) 2^-23) * (|alpha| sum_p |A(i,p) B(p,j)|
// + |beta C(i,j)|), computed on the CPU: a rigorous bound for any order of f32 summation.
// GPUOPS_TEST_QUICK=1 drops the 1024^3 and past-2^31 cases and most few-rows ones (for
// compute-sanitizer). GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_MATMUL
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "harness.h"

using bench::fmt;
using check::guarded;
using check::quick;
using check::rng;
using std::string;
using std::vector;

static const char *op_name(gpuops_op a, gpuops_op b) {
  static const char *names[4] = {"NN", "NT", "TN", "TT"};
  return names[(int)a * 2 + (int)b];
}

// ---- one problem: sizes, layouts, scalars, host data with NaN padding, reference and bound -------

struct problem {
  int64_t m, n, k, lda, ldb, ldc;
  gpuops_op oa, ob;
  float alpha, beta;
  int a_off = 0, b_off = 0, c_off = 0;  // elements the pointers sit past the allocation's start
};
static const float kSentinel = 12345.0f;

struct prepared {
  problem p;
  vector<float> a, b, c0, ref;  // a, b, c0 include the offsets
  vector<double> bound;
  int64_t a_size, b_size, c_size;
};

static int64_t rows_of(gpuops_op op, int64_t r, int64_t c) { return op == GPUOPS_OP_N ? r : c; }

static prepared prepare(const problem &p, rng &r) {
  prepared d;
  d.p = p;
  const int64_t ar = rows_of(p.oa, p.m, p.k), ac = rows_of(p.oa, p.k, p.m);
  const int64_t br = rows_of(p.ob, p.k, p.n), bc = rows_of(p.ob, p.n, p.k);
  d.a_size = p.a_off + ar * p.lda + 1, d.b_size = p.b_off + br * p.ldb + 1, d.c_size = p.c_off + p.m * p.ldc + 1;
  d.a.assign(d.a_size, NAN), d.b.assign(d.b_size, NAN), d.c0.assign(d.c_size, kSentinel);
  for (int64_t i = 0; i < ar; ++i)
    for (int64_t j = 0; j < ac; ++j) d.a[p.a_off + i * p.lda + j] = (float)r.uniform(-1.0, 1.0);
  for (int64_t i = 0; i < br; ++i)
    for (int64_t j = 0; j < bc; ++j) d.b[p.b_off + i * p.ldb + j] = (float)r.uniform(-1.0, 1.0);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) d.c0[p.c_off + i * p.ldc + j] = p.beta == 0.0f ? NAN : (float)r.uniform(-1.0, 1.0);
  d.ref = d.c0;
  CHECK_OK(gpuops_cpu_matmul_f32(d.ref.data() + p.c_off, d.a.data() + p.a_off, d.b.data() + p.b_off, p.m, p.n, p.k, p.lda,
                                 p.ldb, p.ldc, p.alpha, p.beta, p.oa, p.ob));
  const int64_t sai = p.oa == GPUOPS_OP_N ? p.lda : 1, sap = p.oa == GPUOPS_OP_N ? 1 : p.lda;
  const int64_t sbp = p.ob == GPUOPS_OP_N ? p.ldb : 1, sbj = p.ob == GPUOPS_OP_N ? 1 : p.ldb;
  d.bound.assign(p.m * p.n, 0.0);
  const float *A = d.a.data() + p.a_off, *B = d.b.data() + p.b_off;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double s = 0.0;
      for (int64_t q = 0; q < p.k; ++q) s += fabs((double)A[i * sai + q * sap] * (double)B[q * sbp + j * sbj]);
      const double c = p.beta != 0.0f ? fabs((double)p.beta * d.c0[p.c_off + i * p.ldc + j]) : 0.0;
      d.bound[i * p.n + j] = fabs((double)p.alpha) * s + c;
    }
  return d;
}

// "" or why got (the whole C allocation) is wrong: every element of C within the bound, every
// padding element still the sentinel.
static string judge(const prepared &d, const vector<float> &got) {
  const problem &p = d.p;
  const double rel = fmax(1e-5, (double)(p.k + 2) * 1.1920929e-7);
  for (int64_t e = 0; e < d.c_size; ++e) {
    const int64_t off = e - p.c_off, i = off >= 0 ? off / p.ldc : -1, j = off >= 0 ? off % p.ldc : -1;
    if (i >= 0 && i < p.m && j < p.n) {
      const double g = got[e], w = d.ref[e], tol = rel * d.bound[i * p.n + j];
      if (!(fabs(g - w) <= tol))
        return fmt("C(%lld,%lld) = %.9g, want %.9g (tol %.3g)", (long long)i, (long long)j, g, w, tol);
    } else if (memcmp(&got[e], &d.c0[e], 4) != 0) {
      return fmt("element %lld outside C written: %g", (long long)e, got[e]);
    }
  }
  return "";
}

// ---- CPU reference: hand-computed products -----------------------------------------------------

static void test_cpu_hand_cases() {
  // A = [1 2 3; 4 5 6], B = [7 8; 9 10; 11 12], A B = [58 64; 139 154].
  const float A[6] = {1, 2, 3, 4, 5, 6}, At[6] = {1, 4, 2, 5, 3, 6}, B[6] = {7, 8, 9, 10, 11, 12}, Bt[6] = {7, 9, 11, 8, 10, 12};
  const float want[4] = {58, 64, 139, 154};
  for (int oa = 0; oa < 2; ++oa)
    for (int ob = 0; ob < 2; ++ob) {
      float c[4] = {NAN, NAN, NAN, NAN};
      const gpuops_status st = gpuops_cpu_matmul_f32(c, oa ? At : A, ob ? Bt : B, 2, 2, 3, oa ? 2 : 3, ob ? 3 : 2, 2, 1.0f, 0.0f,
                                                     (gpuops_op)oa, (gpuops_op)ob);
      const bool ok = st == GPUOPS_OK && memcmp(c, want, sizeof c) == 0;
      th_case(ok, fmt("cpu matmul 2x2x3 %s", op_name((gpuops_op)oa, (gpuops_op)ob)).c_str(), "status %d, got %g %g %g %g", st, c[0],
              c[1], c[2], c[3]);
    }
  {  // alpha, beta, and a padded ldc: C = 2 A B + 0.5 C0, the padding column untouched
    float c[6] = {1, 2, -7, 3, 4, -7};
    const float w[6] = {116.5f, 129, -7, 279.5f, 310, -7};
    gpuops_status st = gpuops_cpu_matmul_f32(c, A, B, 2, 2, 3, 3, 2, 3, 2.0f, 0.5f, GPUOPS_OP_N, GPUOPS_OP_N);
    th_case(st == GPUOPS_OK && memcmp(c, w, sizeof c) == 0, "cpu matmul alpha 2, beta 0.5, ldc 3", "got %g %g %g %g %g %g", c[0], c[1],
            c[2], c[3], c[4], c[5]);
  }
  {  // k = 0: C = beta C, A and B never read (NULL is fine)
    float c[4] = {1, 2, 3, 4};
    gpuops_status st = gpuops_cpu_matmul_f32(c, nullptr, nullptr, 2, 2, 0, 1, 2, 2, 3.0f, 0.5f, GPUOPS_OP_N, GPUOPS_OP_N);
    th_case(st == GPUOPS_OK && c[0] == 0.5f && c[3] == 2.0f, "cpu matmul k = 0 gives beta C", "status %d, %g %g", st, c[0], c[3]);
    float z[4] = {NAN, NAN, NAN, NAN};
    st = gpuops_cpu_matmul_f32(z, nullptr, nullptr, 2, 2, 0, 1, 2, 2, 3.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N);
    th_case(st == GPUOPS_OK && z[0] == 0.0f && z[3] == 0.0f, "cpu matmul k = 0, beta = 0 over NaN gives 0", "%g %g", z[0], z[3]);
  }
  {  // beta = 0 never reads C: NaN in C gives finite results
    float c[4] = {NAN, NAN, NAN, NAN};
    gpuops_status st = gpuops_cpu_matmul_f32(c, A, B, 2, 2, 3, 3, 2, 2, -1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N);
    th_case(st == GPUOPS_OK && c[0] == -58.0f && c[3] == -154.0f, "cpu matmul beta = 0 over NaN", "%g %g", c[0], c[3]);
  }
  {  // a row vector times a matrix and a matrix times a column vector, against a second formula
    float y[3], x[2] = {2, -1};
    CHECK_OK(gpuops_cpu_matmul_f32(y, x, B, 1, 2, 2, 2, 2, 2, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N));  // [2 -1] [7 8; 9 10]
    th_case(y[0] == 5.0f && y[1] == 6.0f, "cpu matmul 1x2x2 (vector-matrix)", "%g %g", y[0], y[1]);
    CHECK_OK(gpuops_cpu_matmul_f32(y, A, x, 2, 1, 2, 3, 1, 1, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N));  // [1 2; 4 5] [2; -1]
    th_case(y[0] == 0.0f && y[1] == 3.0f, "cpu matmul 2x1x2 (matrix-vector), lda 3", "%g %g", y[0], y[1]);
  }
  {  // (A B)^T = B^T A^T: the TT product of the stored matrices is the transpose of the NN one
    rng r(7);
    const int64_t m = 5, n = 6, k = 7;
    vector<float> a(m * k), b(k * n), c1(m * n), c2(n * m);
    check::fill_uniform(a, r, -1, 1);
    check::fill_uniform(b, r, -1, 1);
    CHECK_OK(gpuops_cpu_matmul_f32(c1.data(), a.data(), b.data(), m, n, k, k, n, n, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N));
    CHECK_OK(gpuops_cpu_matmul_f32(c2.data(), b.data(), a.data(), n, m, k, n, k, m, 1.0f, 0.0f, GPUOPS_OP_T, GPUOPS_OP_T));
    bool ok = true;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) ok = ok && c1[i * n + j] == c2[j * m + i];
    th_case(ok, "cpu matmul (A B)^T == B^T A^T", "differs");
  }
}

// ---- CPU baselines against the reference --------------------------------------------------------

static void test_cpu_baselines(rng &r) {
  struct shape { int64_t m, n, k; float alpha, beta; };
  const shape shapes[] = {{1, 1, 1, 1.0f, 0.0f}, {17, 33, 65, 1.0f, 0.0f}, {70, 130, 131, 1.5f, 0.5f}, {129, 67, 300, -1.0f, 1.0f},
                          {9, 300, 20, 1.0f, 0.0f}, {3, 5, 0, 2.0f, 0.5f}};
  const char *kinds[] = {"naive", "blocked", "simd"};
  for (const shape &s : shapes)
    for (int o = 0; o < 4; ++o) {
      const gpuops_op oa = (gpuops_op)(o >> 1), ob = (gpuops_op)(o & 1);
      problem p{s.m, s.n, s.k, rows_of(oa, s.k, s.m) + 1, rows_of(ob, s.n, s.k) + 2, s.n + 1, oa, ob, s.alpha, s.beta};
      const prepared d = prepare(p, r);
      for (int kind = 0; kind < 3; ++kind) {
        vector<float> c = d.c0;
        const gpuops_status st = gpuops_cpu_matmul_baseline_f32(c.data(), d.a.data(), d.b.data(), p.m, p.n, p.k, p.lda, p.ldb, p.ldc,
                                                                p.alpha, p.beta, oa, ob, (gpuops_cpu_gemm_kind)kind);
        const string why = st != GPUOPS_OK ? gpuops_status_string(st) : judge(d, c);
        th_case(why.empty(), fmt("cpu baseline %s %lldx%lldx%lld %s", kinds[kind], (long long)p.m, (long long)p.n, (long long)p.k, op_name(oa, ob)).c_str(),
                "%s", why.c_str());
      }
    }
}

// ---- argument checks (CPU and GPU entry points; no device needed) -------------------------------

struct call_args {
  float *c;
  const float *a, *b;
  int64_t m, n, k, lda, ldb, ldc;
  gpuops_op oa, ob;
  gpuops_algo algo;
  int kind;
};

static void test_argument_checks() {
  static float A[64], B[64], C[64];
  const call_args base = {C, A, B, 2, 3, 4, 4, 3, 3, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_ALGO_AUTO, GPUOPS_CPU_GEMM_SIMD};
  struct bad {
    const char *name;
    call_args x;
    gpuops_status want;
  };
  vector<bad> cases;
  auto with = [&](const char *name, gpuops_status want, auto edit) {
    call_args x = base;
    edit(x);
    cases.push_back({name, x, want});
  };
  const gpuops_status INV = GPUOPS_ERR_INVALID_ARGUMENT;
  with("m < 0", INV, [](call_args &x) { x.m = -1; });
  with("n < 0", INV, [](call_args &x) { x.n = -1; });
  with("k < 0", INV, [](call_args &x) { x.k = -1; });
  with("c NULL", INV, [](call_args &x) { x.c = nullptr; });
  with("a NULL", INV, [](call_args &x) { x.a = nullptr; });
  with("b NULL", INV, [](call_args &x) { x.b = nullptr; });
  with("lda < k (A)", INV, [](call_args &x) { x.lda = 3; });
  with("lda < m (A^T)", INV, [](call_args &x) { x.oa = GPUOPS_OP_T, x.lda = 1; });
  with("ldb < n (B)", INV, [](call_args &x) { x.ldb = 2; });
  with("ldb < k (B^T)", INV, [](call_args &x) { x.ob = GPUOPS_OP_T, x.ldb = 3; });
  with("ldc < n", INV, [](call_args &x) { x.ldc = 2; });
  with("ldc 0 with n = 0", INV, [](call_args &x) { x.n = 0, x.ldc = 0, x.ldb = 1; });
  with("op_a = 2", INV, [](call_args &x) { x.oa = (gpuops_op)2; });
  with("op_b = -1", INV, [](call_args &x) { x.ob = (gpuops_op)-1; });
  with("C misaligned", GPUOPS_ERR_MISALIGNED, [](call_args &x) { x.c = (float *)((char *)C + 2); });
  with("A misaligned", GPUOPS_ERR_MISALIGNED, [](call_args &x) { x.a = (const float *)((const char *)A + 1); });
  with("C overlaps A", INV, [](call_args &x) { x.c = A + 5; });
  with("C is B", INV, [](call_args &x) { x.c = B; });
  with("extent past int64", INV, [](call_args &x) { x.m = INT64_MAX / 2, x.ldc = 4; });
  with("m = 0: nothing to do", GPUOPS_OK, [](call_args &x) { x.m = 0, x.c = nullptr; });
  with("n = 0: nothing to do", GPUOPS_OK, [](call_args &x) { x.n = 0, x.a = nullptr; });
  with("A^T with lda = m is fine", GPUOPS_OK, [](call_args &x) { x.oa = GPUOPS_OP_T, x.lda = 2; });  // runs (CPU)
  for (const bad &b : cases) {
    const call_args &x = b.x;
    for (int form = 0; form < 3; ++form) {
      const bool runs = b.want == GPUOPS_OK && x.m > 0 && x.n > 0;
      if (form == 2 && runs) continue;  // host pointers: the GPU form would launch on them
      for (float &v : C) v = NAN;
      gpuops_status st;
      if (form == 0) st = gpuops_cpu_matmul_f32(x.c, x.a, x.b, x.m, x.n, x.k, x.lda, x.ldb, x.ldc, 1.0f, 0.0f, x.oa, x.ob);
      else if (form == 1)
        st = gpuops_cpu_matmul_baseline_f32(x.c, x.a, x.b, x.m, x.n, x.k, x.lda, x.ldb, x.ldc, 1.0f, 0.0f, x.oa, x.ob, (gpuops_cpu_gemm_kind)x.kind);
      else st = gpuops_matmul_f32(x.c, x.a, x.b, x.m, x.n, x.k, x.lda, x.ldb, x.ldc, 1.0f, 0.0f, x.oa, x.ob, x.algo, nullptr);
      bool untouched = true;
      for (float v : C) untouched = untouched && isnan(v);
      const char *forms[] = {"cpu", "cpu baseline", "gpu"};
      th_case(st == b.want && (runs || untouched), fmt("%s checks: %s", forms[form], b.name).c_str(), "status %s (want %s)%s",
              gpuops_status_string(st), gpuops_status_string(b.want), untouched || runs ? "" : ", C written");
    }
  }
  // Enum values that only some forms take.
  struct enum_case {
    const char *name;
    gpuops_algo algo;
    int kind;
    gpuops_status want;
  };
  const enum_case enums[] = {{"algo -1", (gpuops_algo)-1, 0, INV},
                             {"algo past the last", GPUOPS_ALGO_COUNT_, 0, INV},
                             {"algo of another family (grid-stride)", GPUOPS_ALGO_GRID_STRIDE, 0, GPUOPS_ERR_UNSUPPORTED},
                             {"algo of transpose (shared-padded)", GPUOPS_ALGO_SHARED_PADDED, 0, GPUOPS_ERR_UNSUPPORTED},
                             {"algo of softmax (three-pass)", GPUOPS_ALGO_THREE_PASS, 0, GPUOPS_ERR_UNSUPPORTED}};
  for (const enum_case &e : enums) {
    for (float &v : C) v = NAN;
    const gpuops_status st = gpuops_matmul_f32(C, A, B, 2, 3, 4, 4, 3, 3, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, e.algo, nullptr);
    th_case(st == e.want && isnan(C[0]), fmt("gpu checks: %s", e.name).c_str(), "status %s", gpuops_status_string(st));
  }
  for (int kind : {-1, 3}) {
    for (float &v : C) v = NAN;
    const gpuops_status st = gpuops_cpu_matmul_baseline_f32(C, A, B, 2, 3, 4, 4, 3, 3, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, (gpuops_cpu_gemm_kind)kind);
    th_case(st == INV && isnan(C[0]), fmt("cpu baseline checks: kind %d", kind).c_str(), "status %s", gpuops_status_string(st));
  }
}

// ---- GPU ------------------------------------------------------------------------------------------

// Uploads the problem, runs call(c, a, b) on the offset device pointers, and judges the result.
template <class F> static string run_gpu(const prepared &d, F call) {
  float *a = check::to_device(d.a), *b = check::to_device(d.b), *c = check::to_device(d.c0);
  const gpuops_status st = call(c + d.p.c_off, a + d.p.a_off, b + d.p.b_off);
  CHECK_CUDA(cudaDeviceSynchronize());
  string why = st != GPUOPS_OK ? fmt("status %s (cuda error %d)", gpuops_status_string(st), gpuops_cuda_error()) : judge(d, check::to_host(c, d.c_size));
  for (float *p : {a, b, c}) CHECK_CUDA(cudaFree(p));
  return why;
}

static const gpuops_algo kAlgos[] = {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_COALESCED, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_REGISTER_1D,
                                     GPUOPS_ALGO_REGISTER_2D, GPUOPS_ALGO_VECTORIZED, GPUOPS_ALGO_WARP_TILED, GPUOPS_ALGO_AUTO};

static string describe(const problem &p, const char *what) {
  return fmt("%s %lldx%lldx%lld %s lda %lld ldb %lld ldc %lld off %d/%d/%d alpha %g beta %g", what, (long long)p.m, (long long)p.n,
             (long long)p.k, op_name(p.oa, p.ob), (long long)p.lda, (long long)p.ldb, (long long)p.ldc, p.a_off, p.b_off, p.c_off,
             p.alpha, p.beta);
}

static void run_all_algos(const problem &p, rng &r, bool gpu) {
  const prepared d = prepare(p, r);
  for (gpuops_algo algo : kAlgos) {
    const string name = describe(p, gpuops_algo_name(algo));
    if (!gpu) {
      th_skip(name.c_str(), "no CUDA device");
      continue;
    }
    const string why = run_gpu(d, [&](float *c, const float *a, const float *b) {
      return gpuops_matmul_f32(c, a, b, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.alpha, p.beta, p.oa, p.ob, algo, nullptr);
    });
    th_case(why.empty(), name.c_str(), "%s", why.c_str());
  }
}

// AUTO alone (shapes whose other versions the cases above already cover).
static void run_auto(const problem &p, rng &r, bool gpu) {
  const string name = describe(p, "auto");
  if (!gpu) {
    th_skip(name.c_str(), "no CUDA device");
    return;
  }
  const prepared d = prepare(p, r);
  const string why = run_gpu(d, [&](float *c, const float *a, const float *b) {
    return gpuops_matmul_f32(c, a, b, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.alpha, p.beta, p.oa, p.ob, GPUOPS_ALGO_AUTO, nullptr);
  });
  th_case(why.empty(), name.c_str(), "%s", why.c_str());
}

// Leading dimensions: tight, padded to a multiple of 4 and beyond (rows 16-byte aligned, so the
// 128-bit paths run, with partial vectors at the tails), or odd with pointers offset by a float or
// three (no 16-byte access possible).
enum ld_kind { TIGHT, PADDED, ODD };
static problem make(int64_t m, int64_t n, int64_t k, gpuops_op oa, gpuops_op ob, ld_kind ld, float alpha, float beta) {
  problem p{m, n, k, rows_of(oa, k, m), rows_of(ob, n, k), n, oa, ob, alpha, beta};
  auto up4 = [](int64_t v) { return (v + 3) / 4 * 4; };  // padded rows stay 16-byte aligned, tails remain
  if (ld == PADDED) p.lda = up4(p.lda) + 4, p.ldb = up4(p.ldb) + 8, p.ldc = up4(p.ldc) + 4;
  if (ld == ODD) p.lda += 1, p.ldb += 3, p.ldc += 1, p.a_off = 1, p.b_off = 3, p.c_off = 1;
  p.lda = p.lda < 1 ? 1 : p.lda, p.ldb = p.ldb < 1 ? 1 : p.ldb;  // k = 0: rows of length 0
  return p;
}

static void test_gpu(rng &r) {
  const bool gpu = check::have_gpu();
  struct shape { int64_t m, n, k; };
  const shape shapes[] = {{1, 1, 1}, {1, 67, 45}, {67, 1, 45}, {33, 17, 1}, {17, 33, 65}, {127, 129, 131}, {255, 257, 511}, {1, 300, 260}, {300, 1, 260}};
  for (int o = 0; o < 4; ++o) {
    const gpuops_op oa = (gpuops_op)(o >> 1), ob = (gpuops_op)(o & 1);
    for (const shape &s : shapes) run_all_algos(make(s.m, s.n, s.k, oa, ob, TIGHT, 1.0f, 0.0f), r, gpu);
    run_all_algos(make(64, 64, 64, oa, ob, TIGHT, 1.0f, 0.0f), r, gpu);          // no tails: the pure 16-byte paths
    run_all_algos(make(127, 129, 131, oa, ob, PADDED, -0.75f, 0.5f), r, gpu);    // padded rows, beta reads C
    run_all_algos(make(130, 260, 36, oa, ob, ODD, 2.0f, 1.0f), r, gpu);          // odd ld, offset pointers, accumulate
    run_all_algos(make(1, 129, 70, oa, ob, ODD, 1.0f, 1.0f), r, gpu);            // GEMV shapes with odd strides
    run_all_algos(make(129, 1, 70, oa, ob, ODD, 1.0f, 0.0f), r, gpu);
  }
  // AUTO's FEW_ROWS path (2 <= min(m, n) <= 32; 33 and 64 take WARP_TILED and its k split): m rows
  // of C, and n columns as the transposed product; odd k and n (1 takes GEMV), tails of every quad,
  // padded and odd leading dimensions, offset pointers, beta = 0 over NaN and beta != 0.
  {
    const int64_t all_rows[] = {2, 3, 7, 16, 17, 32, 33, 64}, quick_rows[] = {3, 17};
    const bool q = quick();
    for (int64_t m : q ? vector<int64_t>(quick_rows, quick_rows + 2) : vector<int64_t>(all_rows, all_rows + 8))
      for (int o = 0; o < 4; ++o) {
        const gpuops_op oa = (gpuops_op)(o >> 1), ob = (gpuops_op)(o & 1);
        run_auto(make(m, 129, 260, oa, ob, TIGHT, 1.0f, 0.0f), r, gpu);       // 16-byte paths, tails in n and k
        run_auto(make(m, 4095, 17, oa, ob, PADDED, -0.75f, 0.5f), r, gpu);    // odd k, many outputs, beta reads C
        run_auto(make(m, 17, 4095, oa, ob, ODD, 1.5f, 0.0f), r, gpu);         // long odd k, offset pointers, NaN C
        run_auto(make(257, m, 65, oa, ob, ODD, 1.0f, 1.0f), r, gpu);          // few columns (the transposed product)
        run_auto(make(m, 260, 8196, oa, ob, TIGHT, 1.0f, 0.5f), r, gpu);      // few tiles, long k: split over a cluster of 8 (sm_90)
        if (q) continue;
        run_auto(make(m, 129, 8195, oa, ob, ODD, 1.0f, 0.0f), r, gpu);       // the split with tails and offset pointers
        run_auto(make(m, 1, 4095, oa, ob, PADDED, 1.0f, 0.0f), r, gpu);      // n = 1: GEMV
        run_auto(make(m, 64, 64, oa, ob, TIGHT, 2.0f, -1.0f), r, gpu);        // no tails
        run_auto(make(4095, m, 36, oa, ob, PADDED, 1.0f, 0.0f), r, gpu);
      }
  }
  // GEMVs of 2^22 elements and more: AUTO runs the one-row FEW_ROWS kernel where X runs along the outputs
  // in whole 16-byte quads (matmul_gemv_by_rows), the GEMV kernels otherwise; a k tail, every layout.
  for (int o = 0; o < 4; ++o) {
    const gpuops_op oa = (gpuops_op)(o >> 1), ob = (gpuops_op)(o & 1);
    run_auto(make(1, 4100, 4099, oa, ob, TIGHT, 1.0f, 0.5f), r, gpu);
    run_auto(make(4100, 1, 4099, oa, ob, TIGHT, -1.0f, 0.0f), r, gpu);
  }

  // k = 0: C = beta C for every version (beta = 0 over NaN gives zeros).
  run_all_algos(make(5, 7, 0, GPUOPS_OP_N, GPUOPS_OP_N, PADDED, 2.0f, 0.5f), r, gpu);
  run_all_algos(make(5, 7, 0, GPUOPS_OP_T, GPUOPS_OP_T, TIGHT, 2.0f, 0.0f), r, gpu);

  // Every WARP_TILED tile configuration, called directly (AUTO chooses among them by size). The
  // last two are a few 64 x 64 tiles, so config 3 splits k over clusters (sm_90): 8 blocks over 129
  // k-tiles with tails in m, n and k, and 4 blocks over 19.
  for (int config = 1; config <= 3; ++config)
    for (int o = 0; o < 4; ++o) {
      const gpuops_op oa = (gpuops_op)(o >> 1), ob = (gpuops_op)(o & 1);
      for (const problem &p : {make(255, 257, 511, oa, ob, TIGHT, 1.0f, 0.0f), make(130, 260, 36, oa, ob, ODD, 1.5f, -1.0f),
                               make(300, 520, 40, oa, ob, PADDED, 1.0f, 0.25f), make(63, 300, 2049, oa, ob, ODD, 1.5f, -1.0f),
                               make(100, 70, 300, oa, ob, PADDED, 1.0f, 0.0f)}) {
        const string name = describe(p, fmt("warp-tiled config %d", config).c_str());
        if (!gpu) {
          th_skip(name.c_str(), "no CUDA device");
          continue;
        }
        const prepared d = prepare(p, r);
        const string why = run_gpu(d, [&](float *c, const float *a, const float *b) {
          gpuops__mm_args args = gpuops__mm_make(c, a, b, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.alpha, p.beta, p.oa, p.ob);
          args.algo = GPUOPS_ALGO_WARP_TILED;
          return gpuops::matmul_warp_tiled_config(args, config);
        });
        th_case(why.empty(), name.c_str(), "%s", why.c_str());
      }
    }

  // 1024^3: AUTO and WARP_TILED, two layouts.
  if (quick()) {
    th_skip("matmul 1024^3", "GPUOPS_TEST_QUICK");
    return;
  }
  for (const problem &p : {make(1024, 1024, 1024, GPUOPS_OP_N, GPUOPS_OP_N, TIGHT, 1.0f, 0.0f), make(1024, 1024, 1024, GPUOPS_OP_T, GPUOPS_OP_N, TIGHT, 1.0f, 0.0f)}) {
    if (!gpu) {
      th_skip(describe(p, "auto and warp-tiled").c_str(), "no CUDA device");
      continue;
    }
    const prepared d = prepare(p, r);
    for (gpuops_algo algo : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_WARP_TILED}) {
      const string why = run_gpu(d, [&](float *c, const float *a, const float *b) {
        return gpuops_matmul_f32(c, a, b, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.alpha, p.beta, p.oa, p.ob, algo, nullptr);
      });
      th_case(why.empty(), describe(p, gpuops_algo_name(algo)).c_str(), "%s", why.c_str());
    }
  }
}

// ---- GPU: index products past 2^31 ---------------------------------------------------------------
// Small products whose leading dimensions make row x ld (i lda and i ldc for A and C, k lda for A^T,
// j ldb for B^T) pass 2^31 elements: a 32-bit product anywhere reads or writes a wrong element.
// Each such matrix is allocated whole on the device (about 8.7 GB), set to NaN (0xFF bytes), and
// only the used part of its rows is copied in (cudaMemcpy2D); C comes back with one padding element
// per row where ldc > n, which must still be NaN. Skipped (named) where the device lacks the memory.

// rows x cols host values (row pitch cols) into a NaN-filled device matrix of row pitch ld; NULL
// when the allocation fails.
static float *upload_pitched(const float *h, int64_t rows, int64_t cols, int64_t ld) {
  float *d = nullptr;
  const size_t bytes = (size_t)(rows * ld) * sizeof(float);
  if (cudaMalloc(&d, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  check::poison(d, bytes);
  CHECK_CUDA(cudaMemcpy2D(d, (size_t)ld * sizeof(float), h, (size_t)cols * sizeof(float), (size_t)cols * sizeof(float), (size_t)rows,
                          cudaMemcpyHostToDevice));
  return d;
}

static void test_gpu_past_2_31(rng &r, bool gpu) {
  const int64_t L = 66000;  // 32999 * 66000 = 2.18e9 > 2^31
  const gpuops_op N_ = GPUOPS_OP_N, T_ = GPUOPS_OP_T;
  struct big_case { int64_t m, n, k, lda, ldb, ldc; gpuops_op oa, ob; float beta; };
  const big_case cases[] = {
      {33000, 40, 20, L, 40, L, N_, N_, 0.5f},        // A and C: i lda, i ldc
      {40, 33000, 20, 20, L, 33000, N_, T_, 0.0f},    // B^T: j ldb
      {40, 36, 33000, L, 36, 36, T_, N_, 0.5f},       // A^T: q lda (k past the pitch)
      {33000, 1, 20, L, 1, L, N_, N_, 0.0f},          // n = 1 (AUTO: GEMV): i lda, i ldc
      {1, 33000, 20, 20, L, 33000, N_, T_, 0.5f},     // m = 1 (AUTO: GEMV): j ldb
      {16, 33000, 20, 20, L, 33000, N_, T_, 0.5f},    // m = 16 (AUTO: few rows, dot): j ldb
      {33000, 3, 20, L, 3, L, N_, N_, 0.0f}};         // n = 3 (AUTO: few columns): i lda, i ldc
  for (const big_case &c : cases) {
    problem p{c.m, c.n, c.k, rows_of(c.oa, c.k, c.m), rows_of(c.ob, c.n, c.k), c.n, c.oa, c.ob, 1.0f, c.beta};  // compact on the host
    const string name = fmt("matmul past 2^31: %lldx%lldx%lld %s lda %lld ldb %lld ldc %lld beta %g, every version", (long long)c.m,
                            (long long)c.n, (long long)c.k, op_name(c.oa, c.ob), (long long)c.lda, (long long)c.ldb, (long long)c.ldc, c.beta);
    if (quick()) {
      th_skip(name.c_str(), "GPUOPS_TEST_QUICK");
      continue;
    }
    if (!gpu) {
      th_skip(name.c_str(), "no CUDA device");
      continue;
    }
    const prepared d = prepare(p, r);
    const int64_t ar = rows_of(c.oa, c.m, c.k), ac = p.lda, br = rows_of(c.ob, c.k, c.n), bc = p.ldb;
    float *da = upload_pitched(d.a.data(), ar, ac, c.lda);
    float *db = da ? upload_pitched(d.b.data(), br, bc, c.ldb) : nullptr;
    float *dc = nullptr;
    const size_t c_bytes = (size_t)(c.m * c.ldc) * sizeof(float);
    if (db && cudaMalloc(&dc, c_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      dc = nullptr;
    }
    if (!dc) {
      for (float *q : {da, db})
        if (q) CHECK_CUDA(cudaFree(q));
      th_skip(name.c_str(), "not enough device memory");
      continue;
    }
    const int64_t w = c.ldc > c.n ? c.n + 1 : c.n;  // columns of C read back: with a padding element where there is one
    string why;
    for (gpuops_algo algo : kAlgos) {
      check::poison(dc, c_bytes);
      CHECK_CUDA(cudaMemcpy2D(dc, (size_t)c.ldc * sizeof(float), d.c0.data(), (size_t)c.n * sizeof(float), (size_t)c.n * sizeof(float),
                              (size_t)c.m, cudaMemcpyHostToDevice));
      const gpuops_status st = gpuops_matmul_f32(dc, da, db, c.m, c.n, c.k, c.lda, c.ldb, c.ldc, p.alpha, p.beta, c.oa, c.ob, algo, nullptr);
      CHECK_CUDA(cudaDeviceSynchronize());
      if (st != GPUOPS_OK) {
        why = fmt("%s: status %s (cuda error %d)", gpuops_algo_name(algo), gpuops_status_string(st), gpuops_cuda_error());
        break;
      }
      vector<float> back((size_t)(c.m * w));
      CHECK_CUDA(cudaMemcpy2D(back.data(), (size_t)w * sizeof(float), dc, (size_t)c.ldc * sizeof(float), (size_t)w * sizeof(float),
                              (size_t)c.m, cudaMemcpyDeviceToHost));
      vector<float> got = d.c0;  // compact C (ldc = n) and its sentinel
      bool pad_ok = true;
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) got[i * c.n + j] = back[i * w + j];
        if (w > c.n) {
          uint32_t bits;
          memcpy(&bits, &back[i * w + c.n], 4);
          pad_ok = pad_ok && bits == 0xFFFFFFFFu;
        }
      }
      why = judge(d, got);
      if (why.empty() && !pad_ok) why = "a padding element of C was written";
      if (!why.empty()) {
        why = fmt("%s: %s", gpuops_algo_name(algo), why.c_str());
        break;
      }
    }
    for (float *q : {da, db, dc}) CHECK_CUDA(cudaFree(q));
    th_case(why.empty(), name.c_str(), "%s", why.c_str());
  }
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_matmul: seed %llu (GPUOPS_SEED replays it)\n", (unsigned long long)seed);
  rng r(seed);
  test_cpu_hand_cases();
  test_cpu_baselines(r);
  test_argument_checks();
  test_gpu(r);
  test_gpu_past_2_31(r, check::have_gpu());
  return th_summary();
}
