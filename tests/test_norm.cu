// SPDX-License-Identifier: MIT
// tests/test_norm.cu - the normalization family: LayerNorm, RMSNorm, their residual and GELU forms,
// forward and backward, and RoPE.
//   Everywhere: the CPU implementations against hand-computed values and finite differences, the
//   rows where E[x^2] - E[x]^2 fails, and argument checking of the CPU and GPU entry points
//   (every rejected call writes nothing).
//   With a GPU: every op x version x storage type against the CPU on row lengths from 1 to 2^17
//   (every on-chip configuration and its edges, clusters, the 1024-thread fallback without them,
//   the streaming versions), one row and many rows (the row loops), rows of mean 1e4 and tiny
//   variance, constant rows, eps from 1e-12 to 1e-2, gamma and beta present or NULL, offset
//   pointers (element accesses), in place; outputs poisoned, guard zones checked; dgamma and dbeta
//   the same bits on a second run; RoPE in both pairings, with and without a cos/sin cache, partial
//   rotation, token strides, in place; and one AUTO case past 2^31 elements.
// GPUOPS_TEST_QUICK=1 drops the largest sizes and the 2^31 case (for compute-sanitizer).
// GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_NORM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "check.h"
#include "harness.h"
#include "norm_cases.h"
#include "norm_ops.h"

using check::guarded;
using check::quick;
using check::rng;
using std::string;
using std::vector;

static bool g_clusters = false;  // the device runs thread-block clusters (compute capability 9.0+)

static bool near(double got, double want, double tol) { return fabs(got - want) <= tol * (1.0 + fabs(want)); }

// ---- CPU implementations ---------------------------------------------------------------------

static void test_cpu_known_values() {
  // LayerNorm of [1, 2, 3, 4]: mean 2.5, variance 1.25; gamma [1, 2, 1, 1], beta [0, 0, 1, 0].
  const float x[4] = {1, 2, 3, 4}, g[4] = {1, 2, 1, 1}, b[4] = {0, 0, 1, 0}, eps = 1e-5f;
  float y[4], mean, rstd;
  const double rs = 1.0 / sqrt(1.25 + (double)eps);
  const double want[4] = {-1.5 * rs, -0.5 * rs * 2, 0.5 * rs + 1, 1.5 * rs};
  gpuops_status st = gpuops_cpu_layernorm_fwd_f32(y, &mean, &rstd, x, g, b, 1, 4, eps);
  bool ok = st == GPUOPS_OK && mean == 2.5f && near(rstd, rs, 1e-7);
  for (int i = 0; i < 4; ++i) ok = ok && near(y[i], want[i], 1e-7);
  th_case(ok, "cpu layernorm of [1, 2, 3, 4]", "%g %g %g %g, mean %g rstd %g", y[0], y[1], y[2], y[3], mean, rstd);
  // RMSNorm of [3, 4]: mean square 12.5.
  const float x2[2] = {3, 4};
  float y2[2], r2;
  st = gpuops_cpu_rmsnorm_fwd_f32(y2, &r2, x2, nullptr, 1, 2, eps);
  const double rs2 = 1.0 / sqrt(12.5 + (double)eps);
  th_case(st == GPUOPS_OK && near(y2[0], 3 * rs2, 1e-7) && near(y2[1], 4 * rs2, 1e-7) && near(r2, rs2, 1e-7), "cpu rmsnorm of [3, 4]", "%g %g",
          y2[0], y2[1]);
  // The residual form: h = x + residual, y = norm(h); GELU: gelu of the layernorm.
  const float r[4] = {1, 1, -1, 0};
  float h[4], y3[4], y4[4], yg[4];
  gpuops_cpu_add_layernorm_fwd_f32(y3, h, nullptr, nullptr, x, r, g, b, 1, 4, eps);
  const float hx[4] = {2, 3, 2, 4};
  gpuops_cpu_layernorm_fwd_f32(y4, nullptr, nullptr, hx, g, b, 1, 4, eps);
  gpuops_cpu_layernorm_gelu_fwd_f32(yg, nullptr, nullptr, x, g, b, 1, 4, eps, GPUOPS_GELU_TANH);
  bool ok3 = true;
  for (int i = 0; i < 4; ++i)
    ok3 = ok3 && h[i] == hx[i] && y3[i] == y4[i] && near(yg[i], gpuops__cpu_gelu(want[i], 1), 1e-6);
  th_case(ok3, "cpu add_layernorm = layernorm(x + residual); layernorm_gelu = gelu(layernorm)", "");
  // A constant row and one column: xhat = 0, y = beta.
  const float c[3] = {7, 7, 7}, bb[3] = {0.5f, -1, 2};
  float yc[3], y1[3];
  gpuops_cpu_layernorm_fwd_f32(yc, nullptr, nullptr, c, nullptr, bb, 1, 3, 1e-12f);
  gpuops_cpu_layernorm_fwd_f32(y1, nullptr, nullptr, c, nullptr, bb, 3, 1, 1e-12f);
  th_case(yc[0] == 0.5f && yc[1] == -1 && yc[2] == 2 && y1[0] == 0.5f && y1[1] == 0.5f, "cpu layernorm of a constant row and of cols == 1", "");
}

// The backward against central differences of L = sum dy * f(x) (and of dgamma, dbeta).
static void test_cpu_backward_fd(rng &r) {
  const int64_t rows = 3, cols = 7;
  for (norm_op o : {N_LN_BWD, N_RMS_BWD, N_LN_GELU_BWD}) {
    const norm_op f = o == N_LN_BWD ? N_LN_FWD : o == N_RMS_BWD ? N_RMS_FWD : N_LN_GELU_FWD;
    vector<float> x(rows * cols), dy(rows * cols), g(cols), b(cols), y(rows * cols), mean(rows), rstd(rows), dx(rows * cols), dg(cols), db(cols);
    check::fill_uniform(x, r, -2, 2);
    check::fill_uniform(dy, r, -1, 1);
    check::fill_uniform(g, r, 0.5, 1.5);
    check::fill_uniform(b, r, -0.5, 0.5);
    norm_io a;
    a.rows = rows, a.cols = cols, a.eps = 1e-3f, a.approx = GPUOPS_GELU_ERF, a.gamma = g.data(), a.beta = norm_info(o).rms ? nullptr : b.data();
    auto loss = [&](const vector<float> &xx, const vector<float> &gg, const vector<float> &bb) {
      norm_io q = a;
      q.x = xx.data(), q.gamma = gg.data(), q.beta = a.beta ? bb.data() : nullptr, q.y = y.data();
      CHECK_OK(norm_api<float>::cpu(f, q));
      double l = 0;
      for (int64_t i = 0; i < rows * cols; ++i) l += (double)dy[i] * y[i];
      return l;
    };
    a.x = x.data(), a.y = y.data(), a.mean = norm_info(o).rms ? nullptr : mean.data(), a.rstd = rstd.data();
    CHECK_OK(norm_api<float>::cpu(f, a));
    norm_io bw = a;
    bw.y = dx.data(), bw.dgamma = dg.data(), bw.dbeta = a.beta ? db.data() : nullptr, bw.dy = dy.data(), bw.mean_in = a.mean, bw.rstd_in = rstd.data();
    bw.mean = bw.rstd = nullptr;
    CHECK_OK(norm_api<float>::cpu(o, bw));
    double worst = 0;
    const float hstep = 1e-2f;
    auto fd = [&](vector<float> &v, int64_t i, double analytic) {
      const float keep = v[i];
      v[i] = keep + hstep;
      const double lp = loss(x, g, b);
      v[i] = keep - hstep;
      const double lm = loss(x, g, b);
      v[i] = keep;
      worst = std::max(worst, fabs((lp - lm) / (2.0 * hstep) - analytic) / (1.0 + fabs(analytic)));
    };
    for (int64_t i = 0; i < rows * cols; ++i) fd(x, i, dx[i]);
    for (int64_t j = 0; j < cols; ++j) fd(g, j, dg[j]);
    if (a.beta)
      for (int64_t j = 0; j < cols; ++j) fd(b, j, db[j]);
    th_case(worst < 2e-3, (string("cpu ") + norm_info(o).name + " matches finite differences (dx, dgamma, dbeta)").c_str(), "worst %g", worst);
  }
}

// A row of mean 1e4 and standard deviation 1e-2 (f32): E[x^2] - E[x]^2 would lose every digit;
// the CPU's double two-pass keeps them (checked against the mean and variance in long double).
static void test_cpu_large_mean(rng &r) {
  const int64_t cols = 4097;
  vector<float> x(cols), y(cols);
  for (auto &v : x) v = (float)(1e4 + 1e-2 * r.uniform(-1.7, 1.7));
  float mean, rstd;
  CHECK_OK(gpuops_cpu_layernorm_fwd_f32(y.data(), &mean, &rstd, x.data(), nullptr, nullptr, 1, cols, 1e-12f));
  long double m = 0, v = 0;
  for (float e : x) m += e;
  m /= cols;
  for (float e : x) v += (e - m) * (e - m);
  v /= cols;
  const double want = 1.0 / sqrt((double)v + 1e-12);
  th_case(near(rstd, want, 1e-6) && near(mean, (double)m, 1e-7), "cpu layernorm statistics of a row of mean 1e4, std 1e-2", "rstd %g want %g",
          rstd, want);
}

// ---- argument checking ---------------------------------------------------------------------------
static void test_arguments() {
  float x[64], y[64], g[16], st[8], st2[8];
  alignas(16) unsigned char wsbuf[1 << 12];
  for (int i = 0; i < 64; ++i) x[i] = (float)i;
  for (int i = 0; i < 16; ++i) g[i] = 1.0f;
  memset(y, 0x5a, sizeof y);
  memset(st, 0x5a, sizeof st);
  memset(st2, 0x5a, sizeof st2);
  auto untouched = [&] {
    const unsigned char *p = (const unsigned char *)y, *q = (const unsigned char *)st, *u = (const unsigned char *)st2;
    for (size_t i = 0; i < sizeof y; ++i)
      if (p[i] != 0x5a) return false;
    for (size_t i = 0; i < sizeof st; ++i)
      if (q[i] != 0x5a || u[i] != 0x5a) return false;
    return true;
  };
  const gpuops_algo A = GPUOPS_ALGO_AUTO;
  float *mis = (float *)((char *)y + 2);
  const size_t wsb = gpuops_norm_bwd_workspace_size(4, 8);
  struct expect {
    const char *name;
    gpuops_status got, want;
  };
  const gpuops_status INV = GPUOPS_ERR_INVALID_ARGUMENT, UNS = GPUOPS_ERR_UNSUPPORTED, MIS = GPUOPS_ERR_MISALIGNED, WS = GPUOPS_ERR_WORKSPACE;
  const float nan = NAN, inf = INFINITY;
  const expect cases[] = {
      {"negative rows", gpuops_layernorm_fwd_f32(y, st, st2, x, g, g, -1, 8, 1e-5f, A, 0), INV},
      {"negative cols", gpuops_rmsnorm_fwd_f32(y, st, x, g, 4, -8, 1e-5f, A, 0), INV},
      {"eps 0", gpuops_layernorm_fwd_f32(y, st, st2, x, g, g, 4, 8, 0.0f, A, 0), INV},
      {"eps negative", gpuops_rmsnorm_fwd_f32(y, st, x, g, 4, 8, -1e-5f, A, 0), INV},
      {"eps NaN", gpuops_add_rmsnorm_fwd_f32(y, y + 32, st, x, x + 32, g, 4, 8, nan, A, 0), INV},
      {"eps infinite", gpuops_layernorm_gelu_fwd_f32(y, st, st2, x, g, g, 4, 8, inf, GPUOPS_GELU_ERF, A, 0), INV},
      {"eps 0 on the CPU", gpuops_cpu_layernorm_fwd_f32(y, st, st2, x, g, g, 4, 8, 0.0f), INV},
      {"eps 0 with rows == 0", gpuops_layernorm_fwd_f32(y, st, st2, x, g, g, 0, 8, 0.0f, A, 0), INV},
      {"bad gelu approximation", gpuops_layernorm_gelu_fwd_f32(y, st, st2, x, g, g, 4, 8, 1e-5f, (gpuops_gelu_approx)7, A, 0), INV},
      {"bad gelu approximation, backward", gpuops_layernorm_gelu_bwd_f32(y, nullptr, nullptr, x, x + 32, st, st2, g, g, 4, 8, (gpuops_gelu_approx)-1, nullptr, 0, A, 0), INV},
      {"NULL x", gpuops_layernorm_fwd_f32(y, st, st2, nullptr, g, g, 4, 8, 1e-5f, A, 0), INV},
      {"NULL y", gpuops_rmsnorm_fwd_f32(nullptr, st, x, g, 4, 8, 1e-5f, A, 0), INV},
      {"NULL residual", gpuops_add_layernorm_fwd_f32(y, y + 32, st, st2, x, nullptr, g, g, 4, 8, 1e-5f, A, 0), INV},
      {"NULL h", gpuops_add_rmsnorm_fwd_f32(y, nullptr, st, x, x + 32, g, 4, 8, 1e-5f, A, 0), INV},
      {"backward NULL mean", gpuops_layernorm_bwd_f32(y, nullptr, nullptr, x, x + 32, nullptr, st2, g, 4, 8, nullptr, 0, A, 0), INV},
      {"backward NULL rstd", gpuops_rmsnorm_bwd_f32(y, nullptr, x, x + 32, nullptr, g, 4, 8, nullptr, 0, A, 0), INV},
      {"backward NULL dy", gpuops_layernorm_bwd_f32(y, nullptr, nullptr, nullptr, x, st, st2, g, 4, 8, nullptr, 0, A, 0), INV},
      {"cpu backward NULL x", gpuops_cpu_rmsnorm_bwd_f32(y, nullptr, x, nullptr, st2, g, 4, 8), INV},
      {"rows * cols overflows", gpuops_layernorm_fwd_f32(y, st, st2, x, g, g, INT64_MAX / 2, 3, 1e-5f, A, 0), INV},
      {"algorithm out of range", gpuops_layernorm_fwd_f32(y, st, st2, x, g, g, 4, 8, 1e-5f, (gpuops_algo)99, 0), INV},
      {"algorithm in a gap of the list", gpuops_layernorm_fwd_f32(y, st, st2, x, g, g, 4, 8, 1e-5f, (gpuops_algo)27, 0), INV},
      {"a version the norms lack (naive)", gpuops_layernorm_fwd_f32(y, st, st2, x, g, g, 4, 8, 1e-5f, GPUOPS_ALGO_NAIVE, 0), UNS},
      {"UNFUSED of a plain layernorm", gpuops_layernorm_fwd_f32(y, st, st2, x, g, g, 4, 8, 1e-5f, GPUOPS_ALGO_UNFUSED, 0), UNS},
      {"block-per-row backward", gpuops_layernorm_bwd_f32(y, nullptr, nullptr, x, x + 32, st, st2, g, 4, 8, nullptr, 0, GPUOPS_ALGO_BLOCK_PER_ROW, 0), UNS},
      {"misaligned y", gpuops_layernorm_fwd_f32(mis, st, st2, x, g, g, 2, 8, 1e-5f, A, 0), MIS},
      {"misaligned mean", gpuops_layernorm_fwd_f32(y, (float *)((char *)st + 1), st2, x, g, g, 2, 8, 1e-5f, A, 0), MIS},
      {"misaligned bf16 gamma", gpuops_rmsnorm_fwd_bf16((gpuops_bf16 *)y, st, (const gpuops_bf16 *)x, (const gpuops_bf16 *)((char *)g + 1), 2, 8, 1e-5f, A, 0), MIS},
      {"y overlaps x partly", gpuops_layernorm_fwd_f32(y + 1, st, st2, y, g, g, 4, 8, 1e-5f, A, 0), INV},
      {"h overlaps y", gpuops_add_layernorm_fwd_f32(y, y + 8, st, st2, x, x + 32, g, g, 4, 8, 1e-5f, A, 0), INV},
      {"y is gamma", gpuops_rmsnorm_fwd_f32(y, st, x, y, 4, 8, 1e-5f, A, 0), INV},
      {"mean overlaps rstd", gpuops_layernorm_fwd_f32(y, st, st + 2, x, g, g, 4, 8, 1e-5f, A, 0), INV},
      {"mean inside y", gpuops_layernorm_fwd_f32(y, y + 20, st2, x, g, g, 4, 8, 1e-5f, A, 0), INV},
      {"dgamma overlaps dbeta", gpuops_layernorm_bwd_f32(y, st, st + 4, x, x + 32, st2, st2, g, 4, 8, wsbuf, wsb, A, 0), INV},
      {"dx overlaps dy partly", gpuops_layernorm_bwd_f32(y, nullptr, nullptr, y + 3, x, st, st2, g, 4, 8, nullptr, 0, A, 0), INV},
      {"UNFUSED backward in place on x", gpuops_layernorm_gelu_bwd_f32(y, nullptr, nullptr, x, y, st, st2, g, g, 4, 8, GPUOPS_GELU_ERF, nullptr, 0, GPUOPS_ALGO_UNFUSED, 0), INV},
      {"no workspace for dgamma", gpuops_layernorm_bwd_f32(y, st, nullptr, x, x + 32, st2, st2, g, 4, 8, nullptr, 0, A, 0), WS},
      {"workspace too small", gpuops_rmsnorm_bwd_f32(y, st, x, x + 32, st2, g, 4, 8, wsbuf, wsb - 4, A, 0), WS},
      {"workspace misaligned", gpuops_rmsnorm_bwd_f32(y, st, x, x + 32, st2, g, 4, 8, wsbuf + 4, wsb, A, 0), MIS},
      {"workspace overlaps dx", gpuops_rmsnorm_bwd_f32(y, st, x, x + 32, st2, g, 4, 8, y, wsb, A, 0), INV},
      {"rows == 0 with NULL pointers", gpuops_layernorm_fwd_f32(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 8, 1e-5f, A, 0), GPUOPS_OK},
      {"cols == 0 with NULL pointers", gpuops_layernorm_bwd_f32(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 4, 0, nullptr, 0, A, 0), GPUOPS_OK},
      {"cpu cols == 0", gpuops_cpu_rmsnorm_fwd_f32(nullptr, nullptr, nullptr, nullptr, 3, 0, 1e-5f), GPUOPS_OK},
  };
  for (const expect &c : cases)
    th_case(c.got == c.want && untouched(), (string("argument check: ") + c.name).c_str(), "returned '%s', wanted '%s'%s",
            gpuops_status_string(c.got), gpuops_status_string(c.want), untouched() ? "" : ", and an output was written");
  th_case(gpuops_norm_bwd_workspace_size(0, 8) == 0 && gpuops_norm_bwd_workspace_size(8, 0) == 0 && wsb > 0 && wsb % 16 == 0 &&
              gpuops_norm_bwd_workspace_size(1 << 20, 4096) <= ((size_t)36 << 20),
          "norm backward workspace sizes: 0 for empty calls, at most about 34 MB", "%zu", gpuops_norm_bwd_workspace_size(1 << 20, 4096));

  // RoPE: tokens 2, heads 2, head_dim 8.
  const expect rope[] = {
      {"rope odd rot_dim", gpuops_rope_fwd_f32(y, x, nullptr, nullptr, 2, 2, 8, 5, 16, 16, 10000.0f, GPUOPS_ROPE_HALVES, A, 0), INV},
      {"rope rot_dim > head_dim", gpuops_rope_fwd_f32(y, x, nullptr, nullptr, 2, 2, 8, 10, 16, 16, 10000.0f, GPUOPS_ROPE_HALVES, A, 0), INV},
      {"rope negative rot_dim", gpuops_rope_bwd_f32(y, x, nullptr, nullptr, 2, 2, 8, -2, 16, 16, 10000.0f, GPUOPS_ROPE_HALVES, A, 0), INV},
      {"rope token stride too small", gpuops_rope_fwd_f32(y, x, nullptr, nullptr, 2, 2, 8, 8, 15, 16, 10000.0f, GPUOPS_ROPE_ADJACENT, A, 0), INV},
      {"rope base 0", gpuops_rope_fwd_f32(y, x, nullptr, nullptr, 2, 2, 8, 8, 16, 16, 0.0f, GPUOPS_ROPE_ADJACENT, A, 0), INV},
      {"rope base NaN", gpuops_cpu_rope_fwd_f32(y, x, nullptr, nullptr, 2, 2, 8, 8, 16, 16, nan, GPUOPS_ROPE_ADJACENT), INV},
      {"rope bad pairing", gpuops_rope_fwd_f32(y, x, nullptr, nullptr, 2, 2, 8, 8, 16, 16, 1e4f, (gpuops_rope_pairing)2, A, 0), INV},
      {"rope NULL x", gpuops_rope_fwd_f32(y, nullptr, nullptr, nullptr, 2, 2, 8, 8, 16, 16, 1e4f, GPUOPS_ROPE_HALVES, A, 0), INV},
      {"rope y overlaps x partly", gpuops_rope_fwd_f32(y + 1, y, nullptr, nullptr, 2, 2, 8, 8, 16, 16, 1e4f, GPUOPS_ROPE_HALVES, A, 0), INV},
      {"rope in place with other strides", gpuops_rope_fwd_f32(y, y, nullptr, nullptr, 2, 2, 8, 8, 20, 16, 1e4f, GPUOPS_ROPE_HALVES, A, 0), INV},
      {"rope y overlaps the cache", gpuops_rope_fwd_f32(y, x, nullptr, y + 4, 2, 2, 8, 8, 16, 16, 1e4f, GPUOPS_ROPE_HALVES, A, 0), INV},
      {"rope misaligned positions", gpuops_rope_fwd_f32(y, x, (const int64_t *)((char *)st + 4), nullptr, 2, 2, 8, 8, 16, 16, 1e4f, GPUOPS_ROPE_HALVES, A, 0), MIS},
      {"rope a version it lacks", gpuops_rope_fwd_f32(y, x, nullptr, nullptr, 2, 2, 8, 8, 16, 16, 1e4f, GPUOPS_ROPE_HALVES, GPUOPS_ALGO_ONLINE, 0), UNS},
      {"rope tokens == 0", gpuops_rope_fwd_f32(nullptr, nullptr, nullptr, nullptr, 0, 2, 8, 8, 16, 16, 1e4f, GPUOPS_ROPE_HALVES, A, 0), GPUOPS_OK},
  };
  for (const expect &c : rope)
    th_case(c.got == c.want && untouched(), (string("argument check: ") + c.name).c_str(), "returned '%s', wanted '%s'%s",
            gpuops_status_string(c.got), gpuops_status_string(c.want), untouched() ? "" : ", and an output was written");
}

// ---- GPU: the norms ---------------------------------------------------------------------------
// The cases, their references and tolerances: norm_cases.h.

struct variant {
  int64_t off_out, off_in;
  bool in_place, stats;  // stats: ask for mean and rstd (forward) or dgamma and dbeta (backward)
};

// Runs one case with one version; "" or why it failed.
template <class T> static string run_case(const host_case<T> &hc, gpuops_algo algo, variant v) {
  const norm_op_info in = norm_info(hc.op);
  const int64_t n = hc.rows * hc.cols, c = hc.cols, rows = hc.rows;
  guarded y(n, v.off_out, sizeof(T)), h(in.res ? n : 0, v.off_out, sizeof(T)), x(n, v.off_in, sizeof(T)), res(in.res ? n : 0, v.off_in, sizeof(T));
  guarded dy(in.bwd ? n : 0, v.off_in, sizeof(T)), g(c, v.off_in, sizeof(T)), b(c, v.off_in, sizeof(T));
  guarded mean(rows, 0, 4), rstd(rows, 0, 4), dg(in.bwd ? c : 0, v.off_out, sizeof(T)), db(in.bwd ? c : 0, v.off_out, sizeof(T));
  x.upload(hc.x.data());
  g.upload(hc.gamma.data());
  b.upload(hc.beta.data());
  if (in.res) res.upload(hc.res.data());
  norm_io a;
  a.rows = rows, a.cols = c, a.eps = hc.eps, a.approx = hc.approx;
  a.gamma = hc.affine ? g.data() : nullptr, a.beta = hc.affine && !in.rms ? b.data() : nullptr;
  a.x = x.data(), a.y = y.data();
  void *ws = nullptr;
  if (!in.bwd) {
    a.res = res.data(), a.h = in.res ? h.data() : nullptr;
    if (v.stats) a.mean = in.rms ? nullptr : (float *)mean.data(), a.rstd = (float *)rstd.data();
    if (v.in_place) {  // y == x; add_*: h == residual
      y.upload(hc.x.data());
      a.x = y.data();
      if (in.res) h.upload(hc.res.data()), a.res = h.data();
    }
  } else {
    dy.upload(hc.dy.data());
    mean.upload(hc.mean.data());
    rstd.upload(hc.rstd.data());
    a.dy = dy.data(), a.mean_in = in.rms ? nullptr : (const float *)mean.data(), a.rstd_in = (const float *)rstd.data();
    if (v.stats) a.dgamma = dg.data(), a.dbeta = in.rms ? nullptr : db.data();
    if (v.in_place) y.upload(hc.dy.data()), a.dy = y.data();  // dx == dy
    a.ws_bytes = gpuops_norm_bwd_workspace_size(rows, c);
    if (a.ws_bytes) CHECK_CUDA(cudaMalloc(&ws, a.ws_bytes));
    a.ws = ws;
  }
  const gpuops_status st = norm_api<T>::gpu(hc.op, a, algo);
  CHECK_CUDA(cudaDeviceSynchronize());
  string why;
  if (st != GPUOPS_OK) why = string("status ") + gpuops_status_string(st);
  else if (!y.guards_hold() || !h.guards_hold() || !mean.guards_hold() || !rstd.guards_hold() || !dg.guards_hold() || !db.guards_hold())
    why = "wrote outside an output";
  else if (!x.guards_hold() || !res.guards_hold() || !g.guards_hold() || !b.guards_hold() || !dy.guards_hold())
    why = "wrote into an input's guard zone";
  if (why.empty()) {
    vector<T> gy(n), gh(in.res ? n : 0), gdg(in.bwd ? c : 0), gdb(in.bwd ? c : 0);
    vector<float> gm(rows), gr(rows);
    y.download(gy.data());
    if (in.res) h.download(gh.data());
    const bool fstats = !in.bwd && v.stats, bstats = in.bwd && v.stats;
    if (fstats) mean.download(gm.data()), rstd.download(gr.data());
    if (bstats) {
      dg.download(gdg.data());
      if (!in.rms) db.download(gdb.data());
    }
    why = norm_check<T>(hc, algo, gy.data(), in.res ? gh.data() : nullptr, fstats && !in.rms ? gm.data() : nullptr, fstats ? gr.data() : nullptr,
                        bstats ? gdg.data() : nullptr, bstats && !in.rms ? gdb.data() : nullptr);
    // Determinism: a second run gives the same dgamma bits.
    if (why.empty() && bstats && !v.in_place) {
      vector<T> again(c);
      check::poison(dg.data(), c * sizeof(T));
      CHECK_OK(norm_api<T>::gpu(hc.op, a, algo));
      CHECK_CUDA(cudaDeviceSynchronize());
      dg.download(again.data());
      if (memcmp(gdg.data(), again.data(), c * sizeof(T))) why = "dgamma differs between two runs";
    }
  }
  if (ws) cudaFree(ws);
  return why;
}

template <class T> static void test_gpu_op(norm_op o, rng &r, bool no_cluster = false) {
  const norm_op_info in = norm_info(o);
  vector<gpuops_algo> algos = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_ROW_REGISTERS, GPUOPS_ALGO_ONLINE};
  if (!in.bwd) algos.push_back(GPUOPS_ALGO_BLOCK_PER_ROW), algos.push_back(GPUOPS_ALGO_WARP_PER_ROW);
  if (in.res || in.gelu) algos.push_back(GPUOPS_ALGO_UNFUSED);
  if (no_cluster) algos = {GPUOPS_ALGO_AUTO};
  std::vector<string> why(algos.size());
  std::vector<int> cases(algos.size(), 0);
  const variant vs[] = {{0, 0, false, true}, {1, 1, false, false}, {0, 0, true, true}, {0, 3, false, true}};
  norm_gpu_cases<T>(o, r, no_cluster, [&](const host_case<T> &hc) {
    const int64_t rows = hc.rows, c = hc.cols;
    for (size_t k = 0; k < algos.size(); ++k) {
      const bool rr = algos[k] == GPUOPS_ALGO_ROW_REGISTERS;
      const bool learn = algos[k] == GPUOPS_ALGO_BLOCK_PER_ROW || algos[k] == GPUOPS_ALGO_WARP_PER_ROW;
      if (learn && c > 16392) continue;  // slow, and nothing new past the lengths above
      for (const variant &v : vs) {
        const bool plain = !v.off_out && !v.off_in && !v.in_place;
        if (!plain && (rows * c > (1 << 20) || (k > 0 && v.off_in == 3) || (quick() && v.in_place))) continue;
        const int V = 16 / (int)sizeof(T);
        // ROW_REGISTERS refuses element accesses and the longest rows; its refusals are checked.
        // The backward's blocks of 1024 hold 8 elements a thread, 16 for 16-bit types without GELU.
        const int64_t bwd_block = 1024 * (sizeof(T) == 2 && !in.gelu ? 16 : 8);
        const int64_t fwd_max = g_clusters ? (int64_t)8 * 256 * 8 * V : (int64_t)1024 * 4 * V, bwd_max = g_clusters ? 8 * bwd_block : bwd_block;
        const bool odd = c % V != 0 || v.off_out % V != 0 || v.off_in % V != 0;
        if (rr && (odd || c > (in.bwd ? bwd_max : fwd_max))) continue;  // refused: test_gpu_refusals
        const string got = run_case<T>(hc, algos[k], v);
        ++cases[k];
        if (!got.empty() && why[k].empty()) {
          char e[64];
          snprintf(e, sizeof e, ", eps %g, gelu %s)", hc.eps, hc.approx == GPUOPS_GELU_TANH ? "tanh" : "erf");
          why[k] = got + " (" + std::to_string(rows) + " x " + std::to_string(c) + ", offsets " + std::to_string(v.off_out) + "/" +
                   std::to_string(v.off_in) + (v.in_place ? ", in place" : "") + (hc.affine ? "" : ", no gamma/beta") + e;
        }
      }
    }
  });
  const string name = string("gpu ") + in.name + " " + check::dtype_name<T>();
  for (size_t k = 0; k < algos.size(); ++k)
    th_case(why[k].empty(), (name + ", " + gpuops_algo_name(algos[k]) + (no_cluster ? " without clusters" : "") + ": lengths 1 to 131072").c_str(),
            "%s [%d cases]", why[k].c_str(), cases[k]);
}

// ROW_REGISTERS refuses what it cannot hold: element accesses (misaligned pointers: MISALIGNED;
// cols not a multiple of the vector: UNSUPPORTED) and rows past its lengths; AUTO runs them.
static void test_gpu_refusals() {
  guarded y(1 << 20, 0, 4), x(1 << 20, 0, 4);
  const gpuops_status s1 = gpuops_layernorm_fwd_f32((float *)y.data() + 1, nullptr, nullptr, (const float *)x.data(), nullptr, nullptr, 4, 64, 1e-5f, GPUOPS_ALGO_ROW_REGISTERS, 0);
  const gpuops_status s2 = gpuops_rmsnorm_fwd_f32((float *)y.data(), nullptr, (const float *)x.data(), nullptr, 4, 63, 1e-5f, GPUOPS_ALGO_ROW_REGISTERS, 0);
  const gpuops_status s3 = gpuops_rmsnorm_fwd_f32((float *)y.data(), nullptr, (const float *)x.data(), nullptr, 1, 1 << 20, 1e-5f, GPUOPS_ALGO_ROW_REGISTERS, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  th_case(s1 == GPUOPS_ERR_MISALIGNED && s2 == GPUOPS_ERR_UNSUPPORTED && s3 == GPUOPS_ERR_UNSUPPORTED && y.guards_hold(),
          "gpu row-registers refuses element accesses and rows past its lengths, writing nothing", "statuses %d %d %d", s1, s2, s3);
}

// ---- GPU: RoPE ----------------------------------------------------------------------------------
template <class T> static void test_gpu_rope(rng &r) {
  struct shape {
    int64_t tokens, heads, hd, rot, pad;  // pad: token stride - heads * hd
  };
  vector<shape> shapes = {{1, 1, 2, 2, 0}, {7, 3, 16, 16, 0}, {33, 4, 64, 64, 0}, {100, 8, 128, 128, 0}, {65, 5, 128, 64, 0},
                          {40, 2, 96, 32, 8}, {17, 3, 80, 80, 0}, {9, 2, 24, 12, 5}, {300, 32, 128, 128, 256}, {5, 1, 64, 0, 0}};
  if (!quick()) shapes.push_back({2048, 32, 128, 128, 0});
  string why[2];
  int cases[2] = {0, 0};
  const gpuops_algo algos[2] = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_NAIVE};
  for (const shape &s : shapes)
    for (int pairing = 0; pairing < 2; ++pairing)
      for (int mode = 0; mode < 4; ++mode) {  // 0 forward, 1 backward, 2 forward with a cache and positions, 3 forward in place
        const bool bwd = mode == 1, cache = mode == 2, in_place = mode == 3;
        const int64_t ld = s.heads * s.hd + s.pad, n = s.tokens * ld, max_pos = 4096;
        vector<T> x(n);
        check::fill_uniform(x, r, -2, 2);
        vector<int64_t> pos(s.tokens);
        for (auto &p : pos) p = r.below(max_pos);
        vector<float> cs(max_pos * std::max<int64_t>(s.rot, 1));
        for (auto &v : cs) v = (float)r.uniform(-1, 1);
        const float base = r.below(2) ? 10000.0f : 500000.0f;
        const int64_t *hp = cache || r.below(2) ? pos.data() : nullptr;
        const gpuops_rope_pairing pr = (gpuops_rope_pairing)pairing;
        vector<T> want(x);  // the dims past each head's and the token stride's end keep x (in place)
        CHECK_OK(norm_api<T>::cpu_rope(bwd, want.data(), x.data(), hp, cache ? cs.data() : nullptr, s.tokens, s.heads, s.hd, s.rot, ld, ld, base, pr));
        int64_t *dpos = nullptr;
        float *dcs = nullptr;
        if (hp) dpos = check::to_device(pos);
        if (cache) dcs = check::to_device(cs);
        for (int k = 0; k < 2; ++k) {
          guarded dx(n, 0, sizeof(T)), dy(n, 0, sizeof(T));
          dx.upload(x.data());
          T *out = in_place ? (T *)dx.data() : (T *)dy.data();
          if (!in_place) dy.upload(x.data());  // out of place: the padding keeps x's values too
          const gpuops_status st =
              norm_api<T>::rope(bwd, out, (const T *)dx.data(), hp ? dpos : nullptr, dcs, s.tokens, s.heads, s.hd, s.rot, ld, ld, base, pr, algos[k]);
          CHECK_CUDA(cudaDeviceSynchronize());
          vector<T> got(n);
          string w;
          if (st != GPUOPS_OK) w = string("status ") + gpuops_status_string(st);
          else if (!dx.guards_hold() || !dy.guards_hold()) w = "wrote outside y";
          if (w.empty()) {
            (in_place ? dx : dy).download(got.data());
            for (int64_t i = 0; i < n && w.empty(); ++i) {
              const double g = check::to_float(got[i]), e = check::to_float(want[i]);
              if (!(fabs(g - e) <= 1e-6 * 4.0 + rtol<T>() * fabs(e))) {
                char buf[200];
                snprintf(buf, sizeof buf, "[%lld] = %.8g, want %.8g", (long long)i, g, e);
                w = buf;
              }
            }
          }
          ++cases[k];
          if (!w.empty() && why[k].empty())
            why[k] = w + " (" + std::to_string(s.tokens) + " tokens x " + std::to_string(s.heads) + " x " + std::to_string(s.hd) + ", rot " +
                     std::to_string(s.rot) + (pairing ? ", halves" : ", adjacent") + (bwd ? ", backward" : "") + (cache ? ", cache" : "") +
                     (in_place ? ", in place" : "") + ")";
        }
        if (dpos) cudaFree(dpos);
        if (dcs) cudaFree(dcs);
      }
  for (int k = 0; k < 2; ++k)
    th_case(why[k].empty(), (string("gpu rope ") + check::dtype_name<T>() + ", " + gpuops_algo_name(algos[k]) + ": both pairings, cache, partial, strides, in place").c_str(),
            "%s [%d cases]", why[k].c_str(), cases[k]);
}

// Random device data without a host round trip: a hash of (seed, i) mapped to [-3, 3].
__global__ void fill_bf16_kernel(__nv_bfloat16 *p, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    p[i] = __float2bfloat16_rn(-3.0f + 6.0f * (float)(z >> 40) * (1.0f / 16777216.0f));
  }
}

// AUTO past 2^31 elements (bf16, 4096 columns), layernorm forward and backward, checked on the rows
// around the boundary and the last rows against the CPU.
static void test_gpu_past_2_31(rng &r) {
  const char *name = "gpu layernorm forward and backward bf16 on 524291 x 4096 (past 2^31 elements), AUTO";
  if (quick()) return th_skip(name, "GPUOPS_TEST_QUICK is set");
  const int64_t cols = 4096, rows = (1ll << 31) / cols + 3, n = rows * cols;
  size_t free_b = 0, total_b = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t wsb = gpuops_norm_bwd_workspace_size(rows, cols);
  if (free_b < (size_t)(3 * n * 2) + wsb + (1u << 30)) return th_skip(name, "needs 14 GB of free device memory");
  gpuops_bf16 *x = nullptr, *y = nullptr, *dx = nullptr, *dg = nullptr;
  float *mean = nullptr, *rstd = nullptr;
  void *ws = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * 2));
  CHECK_CUDA(cudaMalloc(&y, n * 2));
  CHECK_CUDA(cudaMalloc(&dx, n * 2));
  CHECK_CUDA(cudaMalloc(&dg, cols * 2));
  CHECK_CUDA(cudaMalloc(&mean, rows * 4));
  CHECK_CUDA(cudaMalloc(&rstd, rows * 4));
  CHECK_CUDA(cudaMalloc(&ws, wsb));
  fill_bf16_kernel<<<4096, 256>>>((__nv_bfloat16 *)x, n, r.next());
  CHECK_CUDA(cudaGetLastError());
  check::poison(y, n * 2);
  check::poison(dx, n * 2);
  const gpuops_status s1 = gpuops_layernorm_fwd_bf16(y, mean, rstd, x, nullptr, nullptr, rows, cols, 1e-5f, GPUOPS_ALGO_AUTO, 0);
  const gpuops_status s2 = gpuops_layernorm_bwd_bf16(dx, dg, nullptr, y, x, mean, rstd, nullptr, rows, cols, ws, wsb, GPUOPS_ALGO_AUTO, 0);  // dy = y
  CHECK_CUDA(cudaDeviceSynchronize());
  string why;
  if (s1 != GPUOPS_OK || s2 != GPUOPS_OK) why = string("status ") + gpuops_status_string(s1) + " / " + gpuops_status_string(s2);
  const int64_t boundary = (1ll << 31) / cols;
  for (int64_t row : {(int64_t)0, boundary - 1, boundary, boundary + 1, rows - 1}) {
    if (!why.empty()) break;
    vector<gpuops_bf16> hx(cols), hy(cols), hdx(cols), ry(cols), rdx(cols);
    float m, rs, rm, rrs;
    CHECK_CUDA(cudaMemcpy(hx.data(), x + row * cols, cols * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hy.data(), y + row * cols, cols * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hdx.data(), dx + row * cols, cols * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(&m, mean + row, 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(&rs, rstd + row, 4, cudaMemcpyDeviceToHost));
    CHECK_OK(gpuops_cpu_layernorm_fwd_bf16(ry.data(), &rm, &rrs, hx.data(), nullptr, nullptr, 1, cols, 1e-5f));
    CHECK_OK(gpuops_cpu_layernorm_bwd_bf16(rdx.data(), nullptr, nullptr, hy.data(), hx.data(), &m, &rs, nullptr, 1, cols));
    const check::result a = check::compare(hy.data(), ry.data(), cols, {2e-2, 1.6e-2});
    const check::result b = check::compare(hdx.data(), rdx.data(), cols, {2e-3, 1.6e-2});
    if (!a.ok() || !b.ok() || fabs(rs - rrs) > 1e-5 * rrs)
      why = "row " + std::to_string(row) + ": forward " + check::verdict(a) + ", backward " + check::verdict(b);
  }
  for (void *p : {(void *)x, (void *)y, (void *)dx, (void *)dg, (void *)mean, (void *)rstd, ws}) cudaFree(p);
  th_case(why.empty(), name, "%s", why.c_str());
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_norm: seed %llu (GPUOPS_SEED=%llu replays it)%s\n", (unsigned long long)seed, (unsigned long long)seed, quick() ? ", quick" : "");
  rng r(seed);
  test_cpu_known_values();
  test_cpu_backward_fd(r);
  test_cpu_large_mean(r);
  {  // the replay (tools/emulate_norm.sh replay SEED) starts the GPU cases kNormCpuDraws draws in
    check::rng probe(seed);
    for (int i = 0; i < kNormCpuDraws; ++i) probe.next();
    th_case(probe.s == r.s, "the GPU cases start kNormCpuDraws draws into the seed (norm_cases.h)", "update kNormCpuDraws");
  }
  test_arguments();
  const norm_op ops[] = {N_LN_FWD, N_RMS_FWD, N_ADD_LN_FWD, N_ADD_RMS_FWD, N_LN_GELU_FWD, N_LN_BWD, N_RMS_BWD, N_LN_GELU_BWD};
  if (!check::have_gpu()) {
    const char *why = "no CUDA device";
    for (const char *t : {"f32", "f16", "bf16"}) {
      for (norm_op o : ops) th_skip((string("gpu ") + norm_info(o).name + " " + t).c_str(), why);
      th_skip((string("gpu rope ") + t).c_str(), why);
    }
    th_skip("gpu norms without clusters", why);
    th_skip("gpu row-registers refusals", why);
    th_skip("gpu past 2^31 elements", why);
    return th_summary();
  }
  cudaDeviceProp p;
  CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
  printf("device: %s (compute capability %d.%d)\n", p.name, p.major, p.minor);
  g_clusters = p.major >= 9;
  for (norm_op o : ops) {
    test_gpu_op<float>(o, r);
    test_gpu_op<gpuops_f16>(o, r);
    test_gpu_op<gpuops_bf16>(o, r);
  }
  gpuops::row_clusters_disabled() = true;
  for (norm_op o : {N_LN_FWD, N_ADD_RMS_FWD, N_LN_BWD}) {
    test_gpu_op<float>(o, r, true);
    test_gpu_op<gpuops_bf16>(o, r, true);
  }
  gpuops::row_clusters_disabled() = false;
  test_gpu_refusals();
  test_gpu_rope<float>(r);
  test_gpu_rope<gpuops_f16>(r);
  test_gpu_rope<gpuops_bf16>(r);
  test_gpu_past_2_31(r);
  return th_summary();
}
