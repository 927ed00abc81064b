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

// Tolerances. Storage rounding (rtol: a few 16-bit roundings; f32 far under 1e-3) plus an absolute
// term for the f32 arithmetic, scaled by the size of what is added up: forward |gamma| (1 + |xhat|) +
// |beta|; dx rstd (|dy gamma| + mean|g| + |xhat| mean|g xhat|); dgamma and dbeta the sum over rows of
// |dz xhat| and |dz|.
template <class T> static double rtol() { return sizeof(T) == 4 ? 1e-5 : 2e-3; }
template <> double rtol<gpuops_bf16>() { return 1.6e-2; }
static const double kAbs = 2e-5;

// One case's host data: inputs, the CPU reference, the scales of the tolerances.
template <class T> struct host_case {
  norm_op op;
  int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
  gpuops_gelu_approx approx = GPUOPS_GELU_ERF;
  bool affine = true;
  std::vector<T> x, res, dy, gamma, beta, y, h, dg, db;  // y, h, dg, db: the reference
  std::vector<float> mean, rstd;                         // forward: the reference; backward: inputs
  std::vector<float> sy, sdg, sdb;                       // tolerance scales
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
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const double v = check::to_float(src[i * cols + j]), xh = (v - (in.rms ? 0.0 : h.mean[i])) * h.rstd[i];
        const double g = affine ? fabs(check::to_float(h.gamma[j])) : 1.0, b = affine && !in.rms ? fabs(check::to_float(h.beta[j])) : 0.0;
        h.sy[i * cols + j] = (float)(g * (1.0 + fabs(xh)) + b);
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
  for (int64_t i = 0; i < rows; ++i) {
    double ma = 0, mb = 0;
    std::vector<double> dz(cols), xh(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const double g = affine ? check::to_float(h.gamma[j]) : 1.0, bb = affine && !in.rms ? check::to_float(h.beta[j]) : 0.0;
      xh[j] = (check::to_float(h.x[i * cols + j]) - (in.rms ? 0.0 : h.mean[i])) * h.rstd[i];
      dz[j] = check::to_float(h.dy[i * cols + j]) * (in.gelu ? gpuops__cpu_activate_grad(xh[j] * g + bb, h.approx + 1) : 1.0);
      ma += fabs(dz[j] * g) / cols, mb += fabs(dz[j] * g * xh[j]) / cols;
      h.sdg[j] += (float)fabs(dz[j] * xh[j]), h.sdb[j] += (float)fabs(dz[j]);
    }
    for (int64_t j = 0; j < cols; ++j) {
      const double g = affine ? fabs(check::to_float(h.gamma[j])) : 1.0;
      h.sy[i * cols + j] = (float)(h.rstd[i] * (fabs(dz[j]) * g + ma + fabs(xh[j]) * mb));
    }
  }
  return h;
}

// "" or the first element of got outside |got - want| <= kAbs * scale + rtol * |want|.
template <class T> static std::string compare_scaled(const char *what, const T *got, const T *want, const float *scale, int64_t n, double rt, int64_t cols) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = check::to_float(got[i]), w = check::to_float(want[i]);
    const bool ok = isnan(w) ? isnan(g) : !isnan(g) && fabs(g - w) <= kAbs * (scale ? scale[i] : 1.0) + rt * fabs(w) + 1e-30;
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
// NULL where the run did not ask for it).
template <class T>
std::string norm_check(const host_case<T> &hc, gpuops_algo algo, const T *y, const T *h, const float *mean, const float *rstd, const T *dg,
                       const T *db) {
  const norm_op_info in = norm_info(hc.op);
  const int64_t n = hc.rows * hc.cols, c = hc.cols;
  (void)algo;
  std::string why = compare_scaled<T>(in.bwd ? "dx" : "y", y, hc.y.data(), hc.sy.data(), n, rtol<T>(), c);
  if (why.empty() && h) why = compare_scaled<T>("h", h, hc.h.data(), nullptr, n, 0.0, c);  // the same rounding of x + residual
  for (int64_t i = 0; i < hc.rows && why.empty() && rstd; ++i) {
    const bool ok_r = fabs(rstd[i] - hc.rstd[i]) <= 1e-5 * fabs(hc.rstd[i]);
    const bool ok_m = !mean || fabs(mean[i] - hc.mean[i]) <= 1e-6 * fabs(hc.mean[i]) + 1e-5 / hc.rstd[i];
    if (!ok_r || !ok_m)
      why = "row " + std::to_string(i) + ": mean " + std::to_string(mean ? mean[i] : 0.0f) + " rstd " + std::to_string(rstd[i]) + ", want " +
            std::to_string(hc.mean[i]) + " " + std::to_string(hc.rstd[i]);
  }
  if (why.empty() && dg) why = compare_scaled<T>("dgamma", dg, hc.dg.data(), hc.sdg.data(), c, rtol<T>(), c);
  if (why.empty() && db) why = compare_scaled<T>("dbeta", db, hc.db.data(), hc.sdb.data(), c, rtol<T>(), c);
  return why;
}

// The draws test_norm.cu makes from the seed before its first GPU case (test_cpu_backward_fd: 3 ops
// x (x and dy: 21 each, gamma and beta: 7 each); test_cpu_large_mean: a row of 4097); test_norm
// checks this count, the replay skips it.
constexpr int kNormCpuDraws = 3 * (21 + 21 + 7 + 7) + 4097;

// test_gpu_op's cases of op o in storage type T, in order, each built with its draws from r:
// f(const host_case<T> &). no_cluster: the lengths of the run without clusters.
template <class T, class F> void norm_gpu_cases(norm_op o, check::rng &r, bool no_cluster, F f) {
  // Every on-chip configuration and its edges (forward 4 and 8 vectors a warp, 4 and 8 a block of
  // 256, clusters, 1024 threads; backward 8 elements a thread, 32 to 1024 threads, clusters), the
  // streaming kernels past them, odd lengths (element accesses: ROW_REGISTERS refuses them).
  std::vector<int64_t> lengths = {1, 2, 3, 7, 8, 32, 100, 128, 256, 257, 512, 1000, 1024, 1025, 2048, 2056, 4096, 4104, 8192, 8200, 16384, 16392};
  if (!check::quick()) for (int64_t c : {32768, 32776, 65536, 65544, 131072}) lengths.push_back(c);
  if (check::quick()) lengths = {1, 7, 256, 1000, 1024, 4104, 8192, 16384};
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
