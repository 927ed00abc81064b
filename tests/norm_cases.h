// SPDX-License-Identifier: MIT
// tests/norm_cases.h - the host side of test_norm.cu's GPU cases, shared with the CPU replay in
// tools/emulate_norm.cpp: each case's random inputs (the same draws from the seed), the CPU
// reference, the tolerances' scales and the comparison. GPUOPS_SEED=N test_norm and
// tools/emulate_norm.sh replay N ... build the same cases.
#ifndef GPUOPS_TESTS_NORM_CASES_H
#define GPUOPS_TESTS_NORM_CASES_H

#include <math.h>
#include <stdio.h>

#include <algorithm>
#include <string>
#include <vector>

#include "check.h"
#include "norm_ops.h"

// Tolerances: |got - want| <= kAbs * scale + extra + rtol * |want|, each term derived from the
// arithmetic (u_T: the unit roundoff of the storage type, 2^-24 f32, 2^-11 f16, 2^-8 bf16).
// - rtol * |want|: the two final roundings to T, the GPU's and the reference's (2 u_T; rtol is
//   about 4 u_T for 16-bit types; f32 1e-5, far under 1e-3).
// - kAbs * scale: the f32 arithmetic. Every kernel computes in f32 and sums hierarchically (at most
//   about 150 terms in one thread's running sum, then trees over threads, blocks and clusters), so
//   a result's error is at most about 300 u_f32 (kAbs = 2e-5 = 336 u_f32) times the sum of the
//   magnitudes of the terms it is computed from: the scale. Forward: |gamma| (1 + |xhat|) + |beta|.
//   Backward, with m_j the magnitude of dz_j's terms: dx_j: rstd (m_j |gamma_j| + mean_k m_k
//   |gamma_k| + |xhat_j| mean_k m_k |gamma_k xhat_k|) (an error in dz_k reaches dx_j through those
//   three terms of the formula); dgamma, dbeta: the sums over rows of m |xhat| and m. For
//   layernorm and rmsnorm m = |dy|. For layernorm_gelu, dz = dy gelu'(z) and f32 gelu' is the sum
//   of two terms (erf: Phi(z) + z phi(z); tanh: s + z 2 s (1 - s) sqrt(2/pi) (1 + 3 kappa z^2))
//   that cancel where gelu' crosses 0 (z near -0.75): its error is relative to their magnitudes,
//   not to gelu'; and z = xhat gamma + beta carries a few roundings of |xhat gamma| + |beta|, which
//   gelu'' carries into gelu'. So m = |dy| (|term 1| + |term 2| + |gelu''(z)| (|xhat gamma| + |beta|)).
// - extra (UNFUSED only): its intermediate in storage precision, z_T = z (1 + d) + e with |d| <=
//   u_T and |e| <= eta_T (half the smallest subnormal spacing: f16 2^-25). layernorm_gelu forward:
//   gelu(z_T) - gelu(z) <= |gelu'(z)| D + 0.4 D^2 with D = u_T |z| + eta_T (|gelu''| <= 0.8 for
//   both forms). Backward: dz_T = dz (1 + d) + e enters the layernorm backward as above: dx_j gets
//   rstd (w_j |gamma_j| + mean_k w_k |gamma_k| + |xhat_j| mean_k w_k |gamma_k xhat_k|) with w =
//   u_T |dz| + eta_T, dgamma and dbeta the sums of w |xhat| and w. (add_* UNFUSED rounds h = x +
//   residual as the fused kernels do: no extra.)
// - Infinities: an infinite value compares as the overflow threshold of T (the smallest magnitude
//   that rounds to infinity), so equal infinities match and an infinity matches a finite value only
//   within the tolerance of that threshold. NaN matches NaN only.
template <class T> static double rtol() { return sizeof(T) == 4 ? 1e-5 : 2e-3; }
template <> double rtol<gpuops_bf16>() { return 1.6e-2; }
static const double kAbs = 2e-5;
template <class T> static double unit_roundoff() { return sizeof(T) == 4 ? 0x1p-24 : 0x1p-11; }
template <> double unit_roundoff<gpuops_bf16>() { return 0x1p-8; }
template <class T> static double half_subnormal() { return sizeof(T) == 4 ? 0x1p-150 : 0x1p-25; }
template <> double half_subnormal<gpuops_bf16>() { return 0x1p-134; }
template <class T> static double overflow_threshold() { return sizeof(T) == 4 ? 0x1.ffffffp127 : 0x1.ffep15; }
template <> double overflow_threshold<gpuops_bf16>() { return 0x1.ffp127; }

// GELU's derivative as the f32 forms compute it: |term 1| + |term 2| (see above), and |gelu''(z)|
// (a central difference in double of gpuops.h's gelu'; its error, O(1e-8), does not matter here).
static double gelu_grad_terms(double z, gpuops_gelu_approx a) {
  if (a == GPUOPS_GELU_ERF) return 0.5 * erfc(-z / sqrt(2.0)) + fabs(z) * exp(-0.5 * z * z) * 0.3989422804014327;  // 1 / sqrt(2 pi)
  const double k = 0.7978845608028654, s = 1.0 / (1.0 + exp(-2.0 * k * (z + 0.044715 * z * z * z)));  // k = sqrt(2 / pi)
  return s + fabs(z * 2.0 * s * (1.0 - s) * k * (1.0 + 3.0 * 0.044715 * z * z));
}
static double gelu_grad2(double z, gpuops_gelu_approx a) {
  const double h = 1e-4;
  return fabs(gpuops__cpu_activate_grad(z + h, a + 1) - gpuops__cpu_activate_grad(z - h, a + 1)) / (2.0 * h);
}

// One case's host data: inputs, the CPU reference, the terms of the tolerances.
template <class T> struct host_case {
  norm_op op;
  int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
  gpuops_gelu_approx approx = GPUOPS_GELU_ERF;
  bool affine = true;
  std::vector<T> x, res, dy, gamma, beta, y, h, dg, db;  // y, h, dg, db: the reference
  std::vector<float> mean, rstd;                         // forward: the reference; backward: inputs
  std::vector<float> sy, sdg, sdb;                       // the scales of kAbs (y or dx, dgamma, dbeta)
  std::vector<float> ey, edg, edb;                       // UNFUSED's extra terms
};

// x: random rows in [-3, 3] with, where there are enough rows, a row of mean 1e4 (16-bit: 1e2) and
// a tiny spread, a constant row, a row of mean -50 (the shift differs from the mean).
template <class T> static std::vector<T> make_rows(int64_t rows, int64_t cols, check::rng &r) {
  std::vector<T> x(rows * cols);
  check::fill_uniform(x, r, -3, 3);
  if (rows >= 4) {
    const double m = sizeof(T) == 4 ? 1e4 : 1e2, s = sizeof(T) == 4 ? 1e-2 : 1.0;
    for (int64_t j = 0; j < cols; ++j) {
      x[1 * cols + j] = check::from_float<T>((float)(m + s * r.uniform(-1.7, 1.7)));
      x[2 * cols + j] = check::from_float<T>(0.75f);
      x[3 * cols + j] = check::from_float<T>((float)(-50 + r.uniform(-3, 3)));
    }
  }
  return x;
}

template <class T> static host_case<T> make_case(norm_op o, int64_t rows, int64_t cols, bool affine, float eps, check::rng &r) {
  const norm_op_info in = norm_info(o);
  host_case<T> h;
  h.op = o, h.rows = rows, h.cols = cols, h.eps = eps, h.affine = affine;
  h.approx = r.below(2) ? GPUOPS_GELU_TANH : GPUOPS_GELU_ERF;
  const int64_t n = rows * cols;
  h.x = make_rows<T>(rows, cols, r);
  h.gamma.resize(cols), h.beta.resize(cols);
  check::fill_uniform(h.gamma, r, 0.5, 1.5);
  check::fill_uniform(h.beta, r, -1, 1);
  if (in.res) {
    h.res.resize(n);
    check::fill_uniform(h.res, r, -3, 3);
  }
  h.y.resize(n), h.mean.resize(rows), h.rstd.resize(rows), h.sy.resize(n);
  norm_io a;
  a.rows = rows, a.cols = cols, a.eps = eps, a.approx = h.approx, a.x = h.x.data();
  a.gamma = affine ? h.gamma.data() : nullptr, a.beta = affine && !in.rms ? h.beta.data() : nullptr;
  if (!in.bwd) {
    if (in.res) h.h.resize(n), a.h = h.h.data(), a.res = h.res.data();
    a.y = h.y.data(), a.mean = in.rms ? nullptr : h.mean.data(), a.rstd = h.rstd.data();
    CHECK_OK(norm_api<T>::cpu(o, a));
    const std::vector<T> &src = in.res ? h.h : h.x;
    const double u = unit_roundoff<T>(), eta = half_subnormal<T>();
    h.ey.assign(n, 0.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const double v = check::to_float(src[i * cols + j]), xh = (v - (in.rms ? 0.0 : h.mean[i])) * h.rstd[i];
        const double g = affine ? check::to_float(h.gamma[j]) : 1.0, b = affine && !in.rms ? check::to_float(h.beta[j]) : 0.0;
        h.sy[i * cols + j] = (float)(fabs(g) * (1.0 + fabs(xh)) + fabs(b));
        if (in.gelu) {  // UNFUSED rounds z to T before GELU
          const double z = xh * g + b, d = u * fabs(z) + eta;
          h.ey[i * cols + j] = (float)(fabs(gpuops__cpu_activate_grad(z, h.approx + 1)) * d + 0.4 * d * d);
        }
      }
    return h;
  }
  // Backward: mean and rstd from the CPU forward (f32, as the GPU forward writes them), dy in [-1, 1].
  const norm_op f = o == N_LN_BWD ? N_LN_FWD : o == N_RMS_BWD ? N_RMS_FWD : N_LN_GELU_FWD;
  a.y = h.y.data(), a.mean = in.rms ? nullptr : h.mean.data(), a.rstd = h.rstd.data();
  CHECK_OK(norm_api<T>::cpu(f, a));
  h.dy.resize(n);
  check::fill_uniform(h.dy, r, -1, 1);
  h.dg.resize(cols), h.db.resize(cols), h.sdg.assign(cols, 0.0f), h.sdb.assign(cols, 0.0f);
  norm_io b = a;
  b.mean = b.rstd = nullptr, b.y = h.y.data(), b.dy = h.dy.data(), b.mean_in = in.rms ? nullptr : h.mean.data(), b.rstd_in = h.rstd.data();
  b.beta = affine && !in.rms ? h.beta.data() : nullptr;
  b.dgamma = h.dg.data(), b.dbeta = in.rms ? nullptr : h.db.data();
  CHECK_OK(norm_api<T>::cpu(o, b));
  h.sy.assign(n, 0.0f), h.ey.assign(n, 0.0f), h.edg.assign(cols, 0.0f), h.edb.assign(cols, 0.0f);
  const double u = unit_roundoff<T>(), eta = half_subnormal<T>();
  std::vector<double> m(cols), w(cols), xh(cols), ga(cols);
  for (int64_t i = 0; i < rows; ++i) {
    double mg = 0, mgx = 0, wg = 0, wgx = 0;  // row means of m |gamma|, m |gamma xhat|, and of w
    for (int64_t j = 0; j < cols; ++j) {
      const double g = affine ? check::to_float(h.gamma[j]) : 1.0, bb = affine && !in.rms ? check::to_float(h.beta[j]) : 0.0;
      const double dy = check::to_float(h.dy[i * cols + j]);
      xh[j] = (check::to_float(h.x[i * cols + j]) - (in.rms ? 0.0 : h.mean[i])) * h.rstd[i];
      ga[j] = fabs(g);
      double dz = dy;
      m[j] = fabs(dy);
      if (in.gelu) {
        const double z = xh[j] * g + bb;
        dz = dy * gpuops__cpu_activate_grad(z, h.approx + 1);
        m[j] = fabs(dy) * (gelu_grad_terms(z, h.approx) + gelu_grad2(z, h.approx) * (fabs(xh[j] * g) + fabs(bb)));
      }
      w[j] = u * fabs(dz) + eta;
      mg += m[j] * ga[j] / cols, mgx += m[j] * ga[j] * fabs(xh[j]) / cols;
      wg += w[j] * ga[j] / cols, wgx += w[j] * ga[j] * fabs(xh[j]) / cols;
      h.sdg[j] += (float)(m[j] * fabs(xh[j])), h.sdb[j] += (float)m[j];
      h.edg[j] += (float)(w[j] * fabs(xh[j])), h.edb[j] += (float)w[j];
    }
    for (int64_t j = 0; j < cols; ++j) {
      h.sy[i * cols + j] = (float)(h.rstd[i] * (m[j] * ga[j] + mg + fabs(xh[j]) * mgx));
      h.ey[i * cols + j] = (float)(h.rstd[i] * (w[j] * ga[j] + wg + fabs(xh[j]) * wgx));
    }
  }
  return h;
}

// "" or the first element of got outside |got - want| <= kAbs * scale + extra + rt * |want| (scale,
// extra: per element, NULL for 1 and 0), infinities as T's overflow threshold, NaN only for NaN.
// worst (optional): the largest |got - want| / tolerance seen.
template <class T>
std::string compare_scaled(const char *what, const T *got, const T *want, const float *scale, const float *extra, int64_t n, double rt, int64_t cols,
                           double *worst = nullptr) {
  const double big = overflow_threshold<T>();
  for (int64_t i = 0; i < n; ++i) {
    const double g = check::to_float(got[i]), w = check::to_float(want[i]);
    const double gf = isinf(g) ? copysign(big, g) : g, wf = isinf(w) ? copysign(big, w) : w;
    // + 2 half_subnormal: got and want are each rounded to T, relatively (rt) only down to T's
    // smallest normal; a subnormal result (f16 dgamma of a few 1e-6) is rounded by up to half a
    // step in each: together one subnormal step.
    const double tol = kAbs * (scale ? scale[i] : 1.0) + (extra ? extra[i] : 0.0) + rt * fabs(wf) + 2 * half_subnormal<T>();
    const bool ok = isnan(w) ? isnan(g) : !isnan(g) && fabs(gf - wf) <= tol;
    if (worst && ok && !isnan(w)) *worst = std::max(*worst, fabs(gf - wf) / tol);
    if (!ok) {
      char buf[200];
      snprintf(buf, sizeof buf, "%s[%lld] (row %lld col %lld) = %.8g, want %.8g", what, (long long)i, (long long)(i / cols), (long long)(i % cols), g, w);
      return buf;
    }
  }
  return "";
}

// One run's outputs against the case's reference: "" or the first difference. y: y (forward) or dx;
// h: add_*'s; mean, rstd: the forward's statistics; dg, db: the backward's dgamma and dbeta (each
// NULL where the run did not ask for it). worst (optional): the largest |error| / tolerance.
template <class T>
std::string norm_check(const host_case<T> &hc, gpuops_algo algo, const T *y, const T *h, const float *mean, const float *rstd, const T *dg,
                       const T *db, double *worst = nullptr) {
  const norm_op_info in = norm_info(hc.op);
  const int64_t n = hc.rows * hc.cols, c = hc.cols;
  const bool unf = algo == GPUOPS_ALGO_UNFUSED;
  std::string why = compare_scaled<T>(in.bwd ? "dx" : "y", y, hc.y.data(), hc.sy.data(), unf ? hc.ey.data() : nullptr, n, rtol<T>(), c, worst);
  if (why.empty() && h) why = compare_scaled<T>("h", h, hc.h.data(), nullptr, nullptr, n, 0.0, c);  // the same rounding of x + residual
  for (int64_t i = 0; i < hc.rows && why.empty() && rstd; ++i) {
    const bool ok_r = fabs(rstd[i] - hc.rstd[i]) <= 1e-5 * fabs(hc.rstd[i]);
    const bool ok_m = !mean || fabs(mean[i] - hc.mean[i]) <= 1e-6 * fabs(hc.mean[i]) + 1e-5 / hc.rstd[i];
    if (!ok_r || !ok_m)
      why = "row " + std::to_string(i) + ": mean " + std::to_string(mean ? mean[i] : 0.0f) + " rstd " + std::to_string(rstd[i]) + ", want " +
            std::to_string(hc.mean[i]) + " " + std::to_string(hc.rstd[i]);
  }
  if (why.empty() && dg) why = compare_scaled<T>("dgamma", dg, hc.dg.data(), hc.sdg.data(), unf ? hc.edg.data() : nullptr, c, rtol<T>(), c, worst);
  if (why.empty() && db) why = compare_scaled<T>("dbeta", db, hc.db.data(), hc.sdb.data(), unf ? hc.edb.data() : nullptr, c, rtol<T>(), c, worst);
  return why;
}

// The draws test_norm.cu makes from the seed before its first GPU case (test_cpu_backward_fd: 3 ops
// x (x and dy: 21 each, gamma and beta: 7 each); test_cpu_large_mean: a row of 4097); test_norm
// checks this count, the replay skips it.
constexpr int kNormCpuDraws = 3 * (21 + 21 + 7 + 7) + 4097;

// test_gpu_op's cases of op o in storage type T, in order, each built with its draws from r:
// f(const host_case<T> &). no_cluster: the lengths of the run without clusters.
template <class T, class F> void norm_gpu_cases(norm_op o, check::rng &r, bool no_cluster, F f) {
  // Every on-chip configuration and its edges (forward 4 and 8 vectors a warp, 4 and 8 on 128 threads, 8
  // a block of 256, clusters, 1024 threads; backward 8 elements a thread, 32 to 1024 threads,
  // clusters), the streaming kernels past them, odd lengths (AUTO's forward walks them as row views
  // on every configuration up to a block of 1024: 2049, 4097, 8191 and 12289 reach the longer ones;
  // ROW_REGISTERS refuses them).
  std::vector<int64_t> lengths = {1, 2, 3, 7, 8, 32, 100, 128, 256, 257, 512, 1000, 1024, 1025, 2048, 2049, 2056, 4096, 4097, 4104, 8191, 8192, 8200, 12289, 16384, 16392};
  if (!check::quick()) for (int64_t c : {32768, 32776, 65536, 65544, 131072}) lengths.push_back(c);
  if (check::quick()) lengths = {1, 7, 256, 1000, 1024, 4097, 4104, 8192, 16384, 32776};
  if (no_cluster) lengths = {8200, 16384, 16392, 32768, 32776, 65536};
  const float eps_set[4] = {1e-12f, 1e-6f, 1e-5f, 1e-2f};
  int k_case = 0;
  for (int64_t c : lengths) {
    const int64_t big_rows = std::max<int64_t>(5, std::min<int64_t>(1500, (check::quick() ? (1 << 16) : (1 << 19)) / c));
    for (int64_t rows : {big_rows, (int64_t)1}) {
      const bool affine = (k_case++ % 3) != 2;
      const float eps = eps_set[r.below(4)];
      f(make_case<T>(o, rows, c, affine, eps, r));
    }
  }
}

#endif
