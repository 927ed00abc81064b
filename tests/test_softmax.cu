// SPDX-License-Identifier: MIT
// tests/test_softmax.cu - the softmax family: softmax, log_softmax and the softmax backward along
// the rows of a matrix.
//   Everywhere: the CPU implementations against hand-computed values, identities (rows sum to 1,
//   log_softmax = log(softmax), the backward against finite differences and its formula), the
//   special rows (all -inf, mixed -inf, NaN, +inf, magnitudes of 1e4), the 16-bit forms against
//   the f32 form, and argument checking of the CPU and GPU entry points (nothing written).
//   With a GPU: every version x storage type x {softmax, log_softmax, backward} on row lengths
//   from 1 to 2^20 (every on-chip configuration of AUTO and its edges, the short rows' groups of
//   1 to 16 lanes with row counts that leave a warp's last rows dead, the cluster path, the
//   streaming fallback), one row and many rows (the row loops), masked, all -inf, NaN and large
//   rows, offset pointers (element accesses), in place, outputs poisoned and guard zones checked;
//   and one AUTO case past 2^31 elements.
// GPUOPS_TEST_QUICK=1 drops the largest sizes and the 2^31 case (for compute-sanitizer).
// GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_SOFTMAX
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string.h>

#include <string>
#include <vector>

#include "check.h"
#include "softmax_ops.h"
#include "harness.h"

using check::guarded;
using check::quick;
using check::rng;
using std::string;
using std::vector;



// ---- CPU implementations -------------------------------------------------------------------------

static bool near(double got, double want, double tol) { return fabs(got - want) <= tol * (1.0 + fabs(want)); }

static void test_cpu_known_values() {
  // Two rows: [1, 2, 3] and [1e4, -1e4, 1e4 - 1]. Reference values from Python's math.exp in double.
  const float x[6] = {1.0f, 2.0f, 3.0f, 1e4f, -1e4f, 1e4f - 1.0f};
  const double want[6] = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219, 0.7310585786300049, 0.0, 0.2689414213699951};
  const double want_log[6] = {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806, -0.31326168751822286, -20000.313261687518,
                              -1.3132616875182228};
  float y[6], ly[6];
  const gpuops_status s1 = gpuops_cpu_softmax_fwd_f32(y, x, 2, 3), s2 = gpuops_cpu_log_softmax_fwd_f32(ly, x, 2, 3);
  bool ok = s1 == GPUOPS_OK, ok_log = s2 == GPUOPS_OK;
  for (int i = 0; i < 6; ++i) ok = ok && near(y[i], want[i], 1e-7), ok_log = ok_log && near(ly[i], want_log[i], 1e-7);
  th_case(ok, "cpu softmax of [1, 2, 3] and [1e4, -1e4, 1e4 - 1]", "got %.9g %.9g %.9g / %.9g %.9g %.9g", y[0], y[1], y[2], y[3], y[4], y[5]);
  th_case(ok_log, "cpu log_softmax of [1, 2, 3] and [1e4, -1e4, 1e4 - 1]", "got %.9g %.9g %.9g / %.9g %.9g %.9g", ly[0], ly[1], ly[2], ly[3],
          ly[4], ly[5]);

  // One column: softmax 1, log_softmax 0; a constant row: 1/n.
  const float one[3] = {-5.0f, 7.0f, 1e30f};
  float y1[3], l1[3], c[4];
  const float cx[4] = {2.5f, 2.5f, 2.5f, 2.5f};
  gpuops_cpu_softmax_fwd_f32(y1, one, 3, 1);
  gpuops_cpu_log_softmax_fwd_f32(l1, one, 3, 1);
  gpuops_cpu_softmax_fwd_f32(c, cx, 1, 4);
  th_case(y1[0] == 1 && y1[1] == 1 && y1[2] == 1 && l1[0] == 0 && l1[1] == 0 && l1[2] == 0 && c[0] == 0.25f && c[3] == 0.25f,
          "cpu softmax of one column and of a constant row", "%g %g %g / %g %g %g / %g", y1[0], y1[1], y1[2], l1[0], l1[1], l1[2], c[0]);

  // Backward by hand: y = [0.25, 0.75], dy = [1, -1]: dot = -0.5, dx = [0.375, -0.375].
  const float by[2] = {0.25f, 0.75f}, bdy[2] = {1.0f, -1.0f};
  float bdx[2];
  const gpuops_status s3 = gpuops_cpu_softmax_bwd_f32(bdx, bdy, by, 1, 2);
  th_case(s3 == GPUOPS_OK && bdx[0] == 0.375f && bdx[1] == -0.375f, "cpu softmax backward by hand", "%g %g", bdx[0], bdx[1]);
}

// The special rows: all -inf, some -inf, NaN, +inf, huge values.
static void test_cpu_special_rows() {
  const float ni = -INFINITY;
  const float x[5][4] = {
      {ni, ni, ni, ni},                   // all masked
      {ni, 0.0f, ni, 0.0f},               // half masked: 0.5 where not
      {1.0f, NAN, 2.0f, ni},              // NaN: the row is NaN
      {1.0f, INFINITY, 2.0f, 3.0f},       // +inf: the row is NaN (inf - inf), as in PyTorch
      {3e38f, -3e38f, 3e38f, 0.0f},       // the largest magnitudes: no overflow
  };
  float y[20], l[20];
  gpuops_cpu_softmax_fwd_f32(y, &x[0][0], 5, 4);
  gpuops_cpu_log_softmax_fwd_f32(l, &x[0][0], 5, 4);
  bool all_inf = true, nan_rows = true;
  for (int j = 0; j < 4; ++j) {
    all_inf = all_inf && y[j] == 0.0f && l[j] == -INFINITY;
    nan_rows = nan_rows && isnan(y[8 + j]) && isnan(l[8 + j]) && isnan(y[12 + j]) && isnan(l[12 + j]);
  }
  th_case(all_inf, "cpu: a row of only -inf gives 0 (softmax) and -inf (log_softmax)", "%g %g", y[0], l[0]);
  th_case(y[4] == 0.0f && y[5] == 0.5f && y[6] == 0.0f && y[7] == 0.5f && l[4] == -INFINITY && near(l[5], -0.6931471805599453, 1e-7),
          "cpu: masked entries get 0, the rest share the mass", "%g %g %g %g, log %g %g", y[4], y[5], y[6], y[7], l[4], l[5]);
  th_case(nan_rows, "cpu: NaN or +inf in a row makes the row NaN", "%g %g", y[8], y[12]);
  // log_softmax(-3e38) in that row is -6e38, past f32's range: -inf is its correct rounding.
  th_case(y[16] == 0.5f && y[17] == 0.0f && y[18] == 0.5f && y[19] == 0.0f && near(l[16], -0.6931471805599453, 1e-7) &&
              l[17] == -INFINITY && near(l[19], -3e38, 1e-7),
          "cpu: magnitudes of 3e38 do not overflow", "%g %g %g %g, log %g %g %g", y[16], y[17], y[18], y[19], l[16], l[17], l[19]);

  // Backward with a NaN in dy: the row's dx is NaN; a masked y (0) with finite dy gives 0.
  const float dy[6] = {1.0f, NAN, 2.0f, 1.0f, 2.0f, 3.0f}, yy[6] = {0.5f, 0.5f, 0.0f, 0.0f, 0.5f, 0.5f};
  float dx[6];
  gpuops_cpu_softmax_bwd_f32(dx, dy, yy, 2, 3);
  th_case(isnan(dx[0]) && isnan(dx[1]) && isnan(dx[2]) && dx[3] == 0.0f && dx[4] == -0.25f && dx[5] == 0.25f,
          "cpu backward: NaN in dy makes the row NaN; masked entries get 0", "%g %g %g %g %g %g", dx[0], dx[1], dx[2], dx[3], dx[4], dx[5]);
}

// Identities on random rows: sums, log = log of softmax, shift invariance, the backward against
// finite differences of L = sum dy * softmax(x) and against its formula.
static void test_cpu_identities(rng &r) {
  const int64_t rows = 7, cols = 129;
  vector<float> x(rows * cols), y(rows * cols), l(rows * cols);
  check::fill_uniform(x, r, -10, 10);
  for (int64_t i = 0; i < rows * cols; i += 5) x[i] = -INFINITY;
  CHECK_OK(gpuops_cpu_softmax_fwd_f32(y.data(), x.data(), rows, cols));
  CHECK_OK(gpuops_cpu_log_softmax_fwd_f32(l.data(), x.data(), rows, cols));
  double worst_sum = 0.0, worst_log = 0.0;
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t k = i * cols + j;
      s += y[k];
      if (y[k] > 1e-30f) worst_log = fmax(worst_log, fabs(log((double)y[k]) - l[k]) / (1.0 + fabs(l[k])));
      else if (!(l[k] < -60.0f)) worst_log = 1.0;  // a vanishing probability must have a very negative log
    }
    worst_sum = fmax(worst_sum, fabs(s - 1.0));
  }
  th_case(worst_sum < 1e-5, "cpu softmax rows sum to 1", "worst |sum - 1| = %g", worst_sum);
  th_case(worst_log < 1e-6, "cpu log_softmax = log(softmax)", "worst relative difference %g", worst_log);

  // Shift invariance on exactly representable shifts: x + 64 (all |x| < 64 keep their bits' meaning).
  vector<float> xs(cols), ys(cols), y0(cols);
  for (int64_t j = 0; j < cols; ++j) xs[j] = x[j] + 64.0f, x[j] = xs[j] - 64.0f;
  CHECK_OK(gpuops_cpu_softmax_fwd_f32(y0.data(), x.data(), 1, cols));
  CHECK_OK(gpuops_cpu_softmax_fwd_f32(ys.data(), xs.data(), 1, cols));
  bool same = true;
  for (int64_t j = 0; j < cols; ++j) same = same && near(ys[j], y0[j], 1e-6);
  th_case(same, "cpu softmax is invariant to a shift of the row", "");

  // Finite differences: dL/dx_i for L = sum_j dy_j softmax(x)_j, central, h = 1e-3, in f32 outputs.
  const int n = 9;
  vector<float> fx(n), dy(n), fy(n), dx(n), xp(n), xm(n), yp(n), ym(n);
  check::fill_uniform(fx, r, -2, 2);
  check::fill_uniform(dy, r, -1, 1);
  CHECK_OK(gpuops_cpu_softmax_fwd_f32(fy.data(), fx.data(), 1, n));
  CHECK_OK(gpuops_cpu_softmax_bwd_f32(dx.data(), dy.data(), fy.data(), 1, n));
  double worst = 0.0;
  const double h = 1e-3;
  for (int i = 0; i < n; ++i) {
    xp = fx, xm = fx;
    xp[i] += (float)h, xm[i] -= (float)h;
    const double step = (double)xp[i] - (double)xm[i];  // the step as stored in f32
    CHECK_OK(gpuops_cpu_softmax_fwd_f32(yp.data(), xp.data(), 1, n));
    CHECK_OK(gpuops_cpu_softmax_fwd_f32(ym.data(), xm.data(), 1, n));
    double lp = 0.0, lm = 0.0;
    for (int j = 0; j < n; ++j) lp += (double)dy[j] * yp[j], lm += (double)dy[j] * ym[j];
    worst = fmax(worst, fabs((lp - lm) / step - dx[i]));
  }
  th_case(worst < 2e-4, "cpu softmax backward matches finite differences", "max error %g", worst);

  // The formula in double on the f32 inputs.
  double dot = 0.0, worst_f = 0.0;
  for (int j = 0; j < n; ++j) dot += (double)dy[j] * fy[j];
  for (int j = 0; j < n; ++j) worst_f = fmax(worst_f, fabs((double)fy[j] * ((double)dy[j] - dot) - dx[j]));
  th_case(worst_f < 1e-7, "cpu softmax backward = y * (dy - sum dy y)", "max error %g", worst_f);
}

// The 16-bit forms compute in double on the converted inputs and round once: they equal the f32
// form's result rounded to 16 bits, up to one 16-bit rounding (double rounding through f32).
template <class T> static void test_cpu_half(rng &r) {
  const int64_t rows = 5, cols = 77;
  vector<T> x(rows * cols), y(rows * cols), l(rows * cols);
  check::fill_uniform(x, r, -8, 8);
  x[3] = check::from_float<T>(-INFINITY);
  vector<float> xf(rows * cols), yf(rows * cols), lf(rows * cols);
  for (size_t i = 0; i < x.size(); ++i) xf[i] = check::to_float(x[i]);
  CHECK_OK(api<T>::cpu(FWD, y.data(), x.data(), nullptr, rows, cols));
  CHECK_OK(api<T>::cpu(LOG_FWD, l.data(), x.data(), nullptr, rows, cols));
  CHECK_OK(gpuops_cpu_softmax_fwd_f32(yf.data(), xf.data(), rows, cols));
  CHECK_OK(gpuops_cpu_log_softmax_fwd_f32(lf.data(), xf.data(), rows, cols));
  vector<T> yr(rows * cols), lr(rows * cols);
  for (size_t i = 0; i < x.size(); ++i) yr[i] = check::from_float<T>(yf[i]), lr[i] = check::from_float<T>(lf[i]);
  const check::result a = check::compare(y.data(), yr.data(), rows * cols, check::default_tolerance<T>());
  const check::result b = check::compare(l.data(), lr.data(), rows * cols, check::default_tolerance<T>());
  th_case(a.ok() && b.ok(), (string("cpu ") + check::dtype_name<T>() + " softmax and log_softmax agree with f32").c_str(), "%s / %s",
          check::verdict(a).c_str(), check::verdict(b).c_str());
}

// ---- argument checking -----------------------------------------------------------------------------
// Each failure returns its status and leaves the output untouched. The GPU entry points check on
// the host before any launch, so these run without a device (the pointers are never touched).
static void test_arguments() {
  float x[16], y[16], d[16];
  for (int i = 0; i < 16; ++i) x[i] = d[i] = (float)i;
  memset(y, 0x5a, sizeof y);
  auto untouched = [&] {
    const unsigned char *p = (const unsigned char *)y;
    for (size_t i = 0; i < sizeof y; ++i)
      if (p[i] != 0x5a) return false;
    return true;
  };
  float *mis = (float *)((char *)y + 2);
  const float *xmis = (const float *)((const char *)x + 1);
  gpuops_bf16 hb[8];
  memset(hb, 0x5a, sizeof hb);
  struct expect {
    const char *name;
    gpuops_status got, want;
  };
  const gpuops_algo A = GPUOPS_ALGO_AUTO;
  const expect cases[] = {
      {"negative rows", gpuops_softmax_fwd_f32(y, x, -1, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative cols", gpuops_log_softmax_fwd_f32(y, x, 4, -1, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu negative rows", gpuops_cpu_softmax_fwd_f32(y, x, -2, 4), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu negative cols, backward", gpuops_cpu_softmax_bwd_f32(y, d, x, 2, -4), GPUOPS_ERR_INVALID_ARGUMENT},
      {"NULL output", gpuops_softmax_fwd_f32(nullptr, x, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"NULL input", gpuops_log_softmax_fwd_f32(y, nullptr, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"backward NULL y", gpuops_softmax_bwd_f32(y, d, nullptr, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"backward NULL dy", gpuops_softmax_bwd_f32(y, nullptr, x, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu NULL input", gpuops_cpu_log_softmax_fwd_f32(y, nullptr, 4, 4), GPUOPS_ERR_INVALID_ARGUMENT},
      {"rows == 0 with NULL pointers", gpuops_softmax_fwd_f32(nullptr, nullptr, 0, 4, A, 0), GPUOPS_OK},
      {"cols == 0 with NULL pointers", gpuops_softmax_bwd_f32(nullptr, nullptr, nullptr, 4, 0, A, 0), GPUOPS_OK},
      {"cpu rows == 0 with NULL pointers", gpuops_cpu_softmax_fwd_f32(nullptr, nullptr, 0, 0), GPUOPS_OK},
      {"rows * cols overflows", gpuops_softmax_fwd_f32(y, x, INT64_MAX / 2, 3, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"rows * cols * 4 bytes overflows", gpuops_softmax_fwd_f32(y, x, INT64_MAX / 3, 2, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"algorithm out of range", gpuops_softmax_fwd_f32(y, x, 4, 4, (gpuops_algo)99, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative algorithm", gpuops_softmax_bwd_f32(y, d, x, 4, 4, (gpuops_algo)-1, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"a version softmax lacks (naive)", gpuops_softmax_fwd_f32(y, x, 4, 4, GPUOPS_ALGO_NAIVE, 0), GPUOPS_ERR_UNSUPPORTED},
      {"a version softmax lacks (decoupled lookback)", gpuops_log_softmax_fwd_f32(y, x, 4, 4, GPUOPS_ALGO_DECOUPLED_LOOKBACK, 0), GPUOPS_ERR_UNSUPPORTED},
      {"version checked before sizes are zero", gpuops_softmax_fwd_f32(y, x, 0, 0, GPUOPS_ALGO_VECTORIZED, 0), GPUOPS_ERR_UNSUPPORTED},
      {"misaligned f32 output", gpuops_softmax_fwd_f32(mis, x, 2, 2, A, 0), GPUOPS_ERR_MISALIGNED},
      {"misaligned f32 input", gpuops_log_softmax_fwd_f32(y, xmis, 2, 2, A, 0), GPUOPS_ERR_MISALIGNED},
      {"misaligned backward y", gpuops_softmax_bwd_f32(y, d, xmis, 2, 2, A, 0), GPUOPS_ERR_MISALIGNED},
      {"cpu misaligned output", gpuops_cpu_softmax_fwd_f32(mis, x, 2, 2), GPUOPS_ERR_MISALIGNED},
      {"misaligned bf16 output", gpuops_softmax_fwd_bf16((gpuops_bf16 *)((char *)hb + 1), hb, 1, 2, A, 0), GPUOPS_ERR_MISALIGNED},
      {"partial overlap of output and input", gpuops_softmax_fwd_f32(y + 1, y, 2, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"partial overlap of dx and y", gpuops_softmax_bwd_f32(y, d, y + 3, 2, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu partial overlap", gpuops_cpu_log_softmax_fwd_f32(y, y + 2, 2, 4), GPUOPS_ERR_INVALID_ARGUMENT},
  };
  for (const expect &c : cases)
    th_case(c.got == c.want && untouched(), (string("argument check: ") + c.name).c_str(), "returned '%s', wanted '%s'%s",
            gpuops_status_string(c.got), gpuops_status_string(c.want), untouched() ? "" : ", and the output was written");
  bool hb_ok = true;
  for (int i = 0; i < 8; ++i) hb_ok = hb_ok && hb[i].bits == 0x5a5a;
  th_case(hb_ok, "argument check: rejected bf16 call wrote nothing", "");
  // In place (output == input) is allowed: forward and backward.
  float ip[4] = {0.0f, 0.0f, 0.0f, 0.0f}, g[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  const gpuops_status s1 = gpuops_cpu_softmax_fwd_f32(ip, ip, 1, 4);
  const bool fwd_ok = s1 == GPUOPS_OK && ip[0] == 0.25f && ip[3] == 0.25f;
  const gpuops_status s2 = gpuops_cpu_softmax_bwd_f32(g, g, ip, 1, 4);  // dy = 1: dx = y (1 - 1) = 0
  th_case(fwd_ok && s2 == GPUOPS_OK && g[0] == 0.0f && g[3] == 0.0f, "cpu in place, forward and backward", "%g %g", ip[0], g[0]);
}

// ---- GPU --------------------------------------------------------------------------------------------

// A device array with guard zones: the data starts `guard + offset` elements in; everything else
// keeps the fill byte, which guards_hold() verifies.
// Tolerances. Forward outputs lie in [0, 1]: relative, with an absolute floor far under any value
// that matters. log_softmax: relative, with an absolute floor for values near 0. The backward's
// error is absolute in y_i * (|dy_i| + sum_j |dy_j y_j|) (the dot product's rounding): see bwd_k.
template <class T> static check::tolerance fwd_tol();
template <> check::tolerance fwd_tol<float>() { return {1e-12, 3e-5}; }
template <> check::tolerance fwd_tol<gpuops_f16>() { return {1e-7, 2e-3}; }
template <> check::tolerance fwd_tol<gpuops_bf16>() { return {1e-30, 1.6e-2}; }
template <class T> static check::tolerance log_tol();
template <> check::tolerance log_tol<float>() { return {3e-6, 3e-5}; }
template <> check::tolerance log_tol<gpuops_f16>() { return {1e-4, 2e-3}; }
template <> check::tolerance log_tol<gpuops_bf16>() { return {1e-3, 1.6e-2}; }
template <class T> static double bwd_k() { return sizeof(T) == 4 ? 1e-4 : 4e-3; }
template <> double bwd_k<gpuops_bf16>() { return 1.6e-2; }

// Host data of one case and its CPU reference.
template <class T> struct host_case {
  int64_t rows = 0, cols = 0;
  vector<T> a, b, ref;  // forward: a = x; backward: a = dy, b = y
  vector<float> scale;  // backward: y_i * (|dy_i| + sum_j |dy_j y_j|)
};

// Rows of random values in [-8, 8], with (for rows >= 4) row 1 all -inf, row 2 holding a NaN,
// row 3 of magnitudes up to 8e3 with a third masked, row 4 with its first 3/4 masked (a causal
// mask: whole warps, blocks or cluster ranks see only -inf), row 6 holding a +inf, and every odd
// row past 4 a tenth masked.
template <class T> static vector<T> make_x(int64_t rows, int64_t cols, rng &r) {
  vector<T> x(rows * cols);
  check::fill_uniform(x, r, -8, 8);
  const T ninf = check::from_float<T>(-INFINITY);
  for (int64_t i = 0; i < rows; ++i) {
    T *row = x.data() + i * cols;
    if (rows < 4) break;
    if (i == 1) {
      for (int64_t j = 0; j < cols; ++j) row[j] = ninf;
    } else if (i == 2) {
      row[r.below(cols)] = check::from_float<T>(NAN);
    } else if (i == 3) {
      for (int64_t j = 0; j < cols; ++j) row[j] = r.below(3) == 0 ? ninf : check::from_float<T>((float)r.uniform(-8e3, 8e3));
    } else if (i == 4) {
      for (int64_t j = 0; j < 3 * cols / 4; ++j) row[j] = ninf;
    } else if (i == 6) {
      row[r.below(cols)] = check::from_float<T>(INFINITY);
    } else if (i % 2 == 1) {
      for (int64_t j = 0; j < cols; ++j)
        if (r.below(10) == 0) row[j] = ninf;
    }
  }
  return x;
}

template <class T> static host_case<T> make_case(sm_op o, int64_t rows, int64_t cols, rng &r) {
  host_case<T> h;
  h.rows = rows, h.cols = cols;
  const int64_t n = rows * cols;
  h.ref.resize(n);
  if (o != BWD) {
    h.a = make_x<T>(rows, cols, r);
    CHECK_OK(api<T>::cpu(o, h.ref.data(), h.a.data(), nullptr, rows, cols));
    return h;
  }
  // Backward: y = softmax(x) rounded to T (with the masks, so y has zeros), dy in [-1, 1]; row 2's
  // NaN moves to dy (y's NaN row would be the same test).
  const vector<T> x = make_x<T>(rows, cols, r);
  h.b.resize(n);
  CHECK_OK(api<T>::cpu(FWD, h.b.data(), x.data(), nullptr, rows, cols));
  h.a.resize(n);
  check::fill_uniform(h.a, r, -1, 1);
  if (rows >= 4)
    for (int64_t j = 0; j < cols; ++j) h.b[2 * cols + j] = check::from_float<T>(1.0f / (float)cols), h.a[2 * cols + j] = h.a[j];
  if (rows >= 4) h.a[2 * cols + r.below(cols)] = check::from_float<T>(NAN);
  CHECK_OK(api<T>::cpu(BWD, h.ref.data(), h.a.data(), h.b.data(), rows, cols));
  h.scale.resize(n);
  for (int64_t i = 0; i < rows; ++i) {
    double sa = 0.0;
    for (int64_t j = 0; j < cols; ++j) sa += fabs((double)check::to_float(h.a[i * cols + j]) * check::to_float(h.b[i * cols + j]));
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t k = i * cols + j;
      h.scale[k] = (float)(fabs((double)check::to_float(h.b[k])) * (fabs((double)check::to_float(h.a[k])) + sa));
    }
  }
  return h;
}

// "" or why got differs from the reference.
template <class T> static string compare_out(sm_op o, const host_case<T> &h, const vector<T> &got) {
  const int64_t n = h.rows * h.cols;
  char buf[256];
  if (o != BWD) {
    const check::result res = check::compare(got.data(), h.ref.data(), n, o == FWD ? fwd_tol<T>() : log_tol<T>());
    if (res.ok()) return "";
    snprintf(buf, sizeof buf, "%lld bad, first at row %lld col %lld: got %.8g want %.8g", (long long)res.bad,
             (long long)(res.first_bad / h.cols), (long long)(res.first_bad % h.cols), res.got, res.want);
    return buf;
  }
  const check::tolerance t = check::default_tolerance<T>();
  const double rtol = sizeof(T) == 4 ? 3e-5 : t.rtol, floor = sizeof(T) == 4 ? 1e-12 : 1e-7;
  int64_t bad = 0, first = -1;
  float fg = 0, fw = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float g = check::to_float(got[i]), w = check::to_float(h.ref[i]);
    bool ok;
    if (isnan(w)) ok = isnan(g);
    else ok = !isnan(g) && fabs((double)g - w) <= floor + rtol * fabs((double)w) + bwd_k<T>() * h.scale[i];
    if (!ok && bad++ == 0) first = i, fg = g, fw = w;
  }
  if (!bad) return "";
  snprintf(buf, sizeof buf, "%lld bad, first at row %lld col %lld: got %.8g want %.8g", (long long)bad, (long long)(first / h.cols),
           (long long)(first % h.cols), fg, fw);
  return buf;
}

// Runs one case with one version at element offsets (out, a, b) (or in place: out == a); "" or why not.
template <class T> static string run_case(sm_op o, const host_case<T> &h, gpuops_algo algo, int64_t off_out, int64_t off_in, bool in_place) {
  const int64_t n = h.rows * h.cols;
  guarded out(n, off_out, sizeof(T)), a(n, off_in, sizeof(T)), b(o == BWD ? n : 0, off_in, sizeof(T));
  a.upload(h.a.data());
  if (o == BWD) b.upload(h.b.data());
  T *po = (T *)out.data();
  if (in_place) {
    out.upload(h.a.data());  // out is a's copy; a stays as it is, unused
  }
  const T *pa = in_place ? po : (const T *)a.data();
  const gpuops_status st = api<T>::gpu(o, po, pa, (const T *)b.data(), h.rows, h.cols, algo, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (st != GPUOPS_OK) return string("status ") + gpuops_status_string(st);
  if (!out.guards_hold()) return "wrote outside the output";
  if (!a.guards_hold() || (o == BWD && !b.guards_hold())) return "wrote into an input's guard zone";
  vector<T> got(n);
  out.download(got.data());
  return compare_out(o, h, got);
}

// no_cluster: AUTO only, on the lengths where a device with clusters would use them, with clusters
// disabled (gpuops::row_clusters_disabled): the 1024-thread kernels and the fallback.
template <class T> static void test_gpu_op(sm_op o, rng &r, bool no_cluster = false) {
  struct shape {
    int64_t rows, cols;
  };
  // Every AUTO configuration and its edges (forward and backward: groups of 1 to 16 lanes to 16
  // vectors, 64 f32 or 128 16-bit columns; forward: 256, 1024, 4096, 8192, clusters to 65536,
  // 1024 threads to 32768, twice those past 4096 for 16-bit types (E = 64 raw registers), and for
  // 16-bit types 4 vectors a thread to 8192;
  // backward: 256, 512, 1024 (128 threads a row), 2048, 4096, clusters to 32768, 16384, clusters of
  // 1024 to 131072; rows at every phase, the offset variants, move each edge by up to V - 1), the
  // streaming fallback past them, and rows from 1 to many (the row loops run more than once where
  // rows exceed the grid: 8448 blocks on an H100).
  vector<shape> shapes;
  for (int64_t c : {1, 2, 3, 7, 31, 32, 33, 100, 255, 256, 257, 511, 512, 513, 1000, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 8191,
                    8192, 8193, 12289, 16384, 16385, 32768, 32769, 49153, 65536, 65537, 131072, 131073})
    shapes.push_back({std::max<int64_t>(5, std::min<int64_t>(2000, (1 << 19) / c)), c}), shapes.push_back({1, c});
  if (no_cluster) {
    shapes.clear();
    for (int64_t c : {4097, 8193, 12289, 16384, 16385, 32768, 32769, 65536, 65537}) shapes.push_back({std::max<int64_t>(5, (1 << 20) / c), c});
    shapes.push_back({1, 32768});
    shapes.push_back({3, 1 << 18});  // split rows' fallback: ONLINE's streaming kernels
  }
  shapes.push_back({100003, 32});  // a group of 8 f32 or 4 16-bit lanes per row, past the grid's rows
  // Short rows (a group of 1 to 16 lanes, 32 / TPR rows per warp): every group's edges in both
  // vector widths, with row counts that leave a warp's or a block's last rows dead (1, 2, 7, 33,
  // 1000; the shapes above add 2000 and 1); quick: a few of them.
  if (!no_cluster) {
    const vector<int64_t> short_cols = quick() ? vector<int64_t>{1, 3, 5, 17, 129}
                                               : vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
    const vector<int64_t> short_rows = quick() ? vector<int64_t>{7, 33} : vector<int64_t>{2, 7, 33, 1000};
    for (int64_t c : short_cols)
      for (int64_t rows : short_rows) shapes.push_back({rows, c});
    // More rows than one sweep of the grid holds (8448 blocks of 256 / TPR rows on an H100), so the
    // groups' row loops run twice or more: TPR = 1 (1 and 3 columns), 16 / 8 (33), 16 (100, bf16).
    if (!quick())
      for (shape sh : vector<shape>{{2500003, 1}, {2500003, 3}, {300007, 33}, {150001, 100}, {100003, 17}}) shapes.push_back(sh);
  }
  if (!quick() && !no_cluster) {
    shapes.push_back({10007, 2048});   // block per row, past the grid
    shapes.push_back({20001, 1000});   // the backward's 128 threads a row, two rows a block: the last block's second row dead, past the grid
    shapes.push_back({601, 16384});    // clusters (or 1024 threads), past the grid
    shapes.push_back({5, 1 << 20});    // split rows (a cluster per row; elsewhere the streaming fallback) on 2^20 columns
    shapes.push_back({4, (1 << 20) + 3});
    shapes.push_back({1, 5000001});    // split rows: one row, 16 blocks (8 where non-portable clusters are refused)
    shapes.push_back({16, (1 << 20) + 3});
    shapes.push_back({200, 65537});    // split rows on clusters of 2: more clusters than are resident
  }
  // The backward's clusters of 1024-thread blocks (3 of them), rows for every resident cluster.
  if (!no_cluster) shapes.push_back({100, 40000});
  // Split rows (or the streaming fallback), quick too; quick (compute-sanitizer, whose racecheck
  // takes minutes over long split rows) on clusters of 4 instead of 16.
  shapes.push_back({3, quick() ? 40003 : 131075});
  const gpuops_algo algos[3] = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_THREE_PASS, GPUOPS_ALGO_ONLINE};
  string why[3];
  int cases[3] = {0, 0, 0};
  struct variant {
    int64_t off_out, off_in;
    bool in_place;
  };
  // Aligned; both offset by one element (element accesses); offsets that differ; in place.
  const variant vs[] = {{0, 0, false}, {1, 1, false}, {0, 3, false}, {0, 0, true}};
  for (const shape &s : shapes) {
    const host_case<T> h = make_case<T>(o, s.rows, s.cols, r);  // fresh data per shape, one reference for every version
    for (int k = 0; k < (no_cluster ? 1 : 3); ++k)
      for (const variant &v : vs) {
        const bool plain = !v.off_out && !v.off_in && !v.in_place;
        if (!plain && (s.rows * s.cols > (1 << 21) || (k > 0 && (v.in_place || v.off_in == 3)))) continue;
        const string got = run_case<T>(o, h, algos[k], v.off_out, v.off_in, v.in_place);
        ++cases[k];
        if (!got.empty() && why[k].empty())
          why[k] = got + " (" + std::to_string(s.rows) + " x " + std::to_string(s.cols) + ", offsets " + std::to_string(v.off_out) + "/" +
                   std::to_string(v.off_in) + (v.in_place ? ", in place)" : ")");
      }
  }
  const string name = string("gpu ") + op_name(o) + " " + check::dtype_name<T>();
  if (no_cluster) {
    th_case(why[0].empty(), (name + ", auto without clusters: lengths 4097 to 2^18").c_str(), "%s [%d cases]", why[0].c_str(), cases[0]);
    return;
  }
  for (int k = 0; k < 3; ++k)
    th_case(why[k].empty(), (name + ", " + gpuops_algo_name(algos[k]) + ": lengths 1 to 2^20, masks, NaN, offsets, in place").c_str(),
            "%s [%d cases]", why[k].c_str(), cases[k]);
}

// A failed check on the GPU path leaves device memory untouched.
static void test_gpu_bad_input_writes_nothing() {
  guarded y(1000, 0, 4), x(1000, 0, 4);
  const gpuops_status s1 = gpuops_softmax_fwd_f32((float *)y.data(), (const float *)x.data(), 10, 100, GPUOPS_ALGO_NAIVE, 0);
  const gpuops_status s2 = gpuops_softmax_bwd_f32((float *)y.data(), (const float *)x.data(), nullptr, 10, 100, GPUOPS_ALGO_AUTO, 0);
  const gpuops_status s3 = gpuops_log_softmax_fwd_f32((float *)y.data() + 1, (const float *)y.data(), 9, 100, GPUOPS_ALGO_AUTO, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  th_case(s1 == GPUOPS_ERR_UNSUPPORTED && s2 == GPUOPS_ERR_INVALID_ARGUMENT && s3 == GPUOPS_ERR_INVALID_ARGUMENT && y.guards_hold() &&
              x.guards_hold(),
          "gpu: rejected calls write nothing", "statuses %d %d %d", s1, s2, s3);
}

// gpuops::online_softmax as a user's kernel (flash attention) uses it: each thread of a block of
// 96 adds its elements of a row one at a time (add(x)), and again four at a time (add<4>); the
// block merges with block_combine (warp_combine inside). Per row: log-sum-exp of both states,
// prob() and log_prob() of the row's first element.
__global__ void online_state_kernel(const float *x, int64_t cols, float *out) {
  __shared__ gpuops::online_softmax scratch[32];
  const float *row = x + blockIdx.x * cols;
  gpuops::online_softmax a = gpuops::online_softmax::identity(), b = gpuops::online_softmax::identity();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) a.add(row[j]);
  for (int64_t j = 4 * (int64_t)threadIdx.x; j < cols; j += 4 * (int64_t)blockDim.x) {
    float v[4];
    for (int k = 0; k < 4; ++k) v[k] = j + k < cols ? row[j + k] : -INFINITY;
    b.add(v);
  }
  a = gpuops::block_combine(a, scratch);
  b = gpuops::block_combine(b, scratch);
  if (threadIdx.x == 0) {
    float *o = out + 4 * blockIdx.x;
    o[0] = a.m + logf(a.s);  // -inf + log(0) = -inf for a row of only -inf
    o[1] = b.m + logf(b.s);
    o[2] = a.prob(row[0]);
    o[3] = b.log_prob(row[0]);
  }
}

static void test_gpu_online_state(rng &r) {
  const int64_t rows = 8, cols = 1001;
  const vector<float> x = make_x<float>(rows, cols, r);  // rows 1-6: all -inf, a NaN, large, causal mask, +inf
  vector<float> want(rows * cols), want_log(rows * cols);
  CHECK_OK(gpuops_cpu_softmax_fwd_f32(want.data(), x.data(), rows, cols));
  CHECK_OK(gpuops_cpu_log_softmax_fwd_f32(want_log.data(), x.data(), rows, cols));
  float *dx = check::to_device(x), *dout = nullptr;
  CHECK_CUDA(cudaMalloc(&dout, rows * 4 * sizeof(float)));
  online_state_kernel<<<(unsigned)rows, 96>>>(dx, cols, dout);
  CHECK_CUDA(cudaGetLastError());
  const vector<float> got = check::to_host(dout, rows * 4);
  cudaFree(dx);
  cudaFree(dout);
  string why;
  for (int64_t i = 0; i < rows && why.empty(); ++i) {
    // log-sum-exp in double: m + log(sum exp(x - m)); -inf for a row of only -inf, NaN with a NaN.
    double m = -INFINITY, s = 0.0;
    bool nan = false;
    for (int64_t j = 0; j < cols; ++j) {
      const double v = x[i * cols + j];
      if (isnan(v)) nan = true;
      else m = fmax(m, v);
    }
    if (m != -INFINITY)
      for (int64_t j = 0; j < cols; ++j) s += exp((double)x[i * cols + j] - m);
    const float lse = nan ? NAN : m == -INFINITY ? -INFINITY : (float)(m + log(s));
    const check::tolerance t = {3e-6, 3e-6};
    const float w[4] = {lse, lse, want[i * cols], want_log[i * cols]};
    for (int k = 0; k < 4; ++k)
      if (!check::close(got[4 * i + k], w[k], k == 2 ? check::tolerance{1e-12, 3e-5} : t))
        why = "row " + std::to_string(i) + " value " + std::to_string(k) + ": got " + std::to_string(got[4 * i + k]) + ", want " +
              std::to_string(w[k]);
  }
  th_case(why.empty(), "gpu online_softmax device helper: add, add<4>, block_combine, prob, log_prob", "%s", why.c_str());
}

// Random device data without a host round trip: a hash of (seed, i) mapped to [-8, 8].
__global__ void fill_bf16_kernel(__nv_bfloat16 *p, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    p[i] = __float2bfloat16_rn(-8.0f + 16.0f * (float)(z >> 40) * (1.0f / 16777216.0f));
  }
}

// AUTO past 2^31 elements (bf16, 4096 columns: the block-per-row kernel), checked on the rows
// around the 2^31 boundary and the last rows against the CPU.
static void test_gpu_past_2_31(rng &r) {
  const char *name = "gpu softmax and backward bf16 on 524291 x 4096 (past 2^31 elements), AUTO";
  if (quick()) return th_skip(name, "GPUOPS_TEST_QUICK is set");
  const int64_t cols = 4096, rows = (1ll << 31) / cols + 3, n = rows * cols;
  size_t free_b = 0, total_b = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < (size_t)(3 * n * 2 + (1 << 30))) return th_skip(name, "needs 14 GB of free device memory");
  gpuops_bf16 *x = nullptr, *y = nullptr, *dx = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * 2));
  CHECK_CUDA(cudaMalloc(&y, n * 2));
  CHECK_CUDA(cudaMalloc(&dx, n * 2));
  fill_bf16_kernel<<<4096, 256>>>((__nv_bfloat16 *)x, n, r.next());
  CHECK_CUDA(cudaGetLastError());
  check::poison(y, n * 2);
  check::poison(dx, n * 2);
  const gpuops_status s1 = gpuops_softmax_fwd_bf16(y, x, rows, cols, GPUOPS_ALGO_AUTO, 0);
  const gpuops_status s2 = gpuops_softmax_bwd_bf16(dx, x, y, rows, cols, GPUOPS_ALGO_AUTO, 0);  // dy = x
  CHECK_CUDA(cudaDeviceSynchronize());
  string why;
  if (s1 != GPUOPS_OK || s2 != GPUOPS_OK) why = string("status ") + gpuops_status_string(s1) + " / " + gpuops_status_string(s2);
  const int64_t boundary = (1ll << 31) / cols;  // the first row past 2^31 elements
  for (int64_t row : {(int64_t)0, boundary - 2, boundary - 1, boundary, boundary + 1, rows - 1}) {
    if (!why.empty()) break;
    vector<gpuops_bf16> hx(cols), hy(cols), hdx(cols), ry(cols), rdx(cols);
    CHECK_CUDA(cudaMemcpy(hx.data(), x + row * cols, cols * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hy.data(), y + row * cols, cols * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hdx.data(), dx + row * cols, cols * 2, cudaMemcpyDeviceToHost));
    CHECK_OK(gpuops_cpu_softmax_fwd_bf16(ry.data(), hx.data(), 1, cols));
    CHECK_OK(gpuops_cpu_softmax_bwd_bf16(rdx.data(), hx.data(), hy.data(), 1, cols));  // the GPU's y as input
    const check::result a = check::compare(hy.data(), ry.data(), cols, fwd_tol<gpuops_bf16>());
    host_case<gpuops_bf16> hc;
    hc.rows = 1, hc.cols = cols, hc.a = hx, hc.b = hy, hc.ref = rdx;
    hc.scale.resize(cols);
    double sa = 0.0;
    for (int64_t j = 0; j < cols; ++j) sa += fabs((double)check::to_float(hx[j]) * check::to_float(hy[j]));
    for (int64_t j = 0; j < cols; ++j) hc.scale[j] = (float)(check::to_float(hy[j]) * (fabs((double)check::to_float(hx[j])) + sa));
    const string b = compare_out(BWD, hc, hdx);
    if (!a.ok() || !b.empty()) why = "row " + std::to_string(row) + ": forward " + check::verdict(a) + ", backward " + (b.empty() ? "ok" : b);
  }
  cudaFree(x);
  cudaFree(y);
  cudaFree(dx);
  th_case(why.empty(), name, "%s", why.c_str());
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_softmax: seed %llu (GPUOPS_SEED=%llu replays it)%s\n", (unsigned long long)seed, (unsigned long long)seed,
         quick() ? ", quick" : "");
  rng r(seed);
  test_cpu_known_values();
  test_cpu_special_rows();
  test_cpu_identities(r);
  test_cpu_half<gpuops_f16>(r);
  test_cpu_half<gpuops_bf16>(r);
  test_arguments();
  if (!check::have_gpu()) {
    const char *why = "no CUDA device";
    for (const char *t : {"f32", "f16", "bf16"})
      for (sm_op o : {FWD, LOG_FWD, BWD})
        for (const char *al : {"auto", "three-pass", "online", "auto without clusters"})
          if (strcmp(t, "f16") || strcmp(al, "auto without clusters")) th_skip((string("gpu ") + op_name(o) + " " + t + ", " + al).c_str(), why);
    th_skip("gpu online_softmax device helper", why);
    th_skip("gpu rejected calls write nothing", why);
    th_skip("gpu past 2^31 elements", why);
  } else {
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
    printf("device: %s (compute capability %d.%d)\n", p.name, p.major, p.minor);
    for (sm_op o : {FWD, LOG_FWD, BWD}) {
      test_gpu_op<float>(o, r);
      test_gpu_op<gpuops_f16>(o, r);
      test_gpu_op<gpuops_bf16>(o, r);
    }
    gpuops::row_clusters_disabled() = true;
    for (sm_op o : {FWD, LOG_FWD, BWD}) {
      test_gpu_op<float>(o, r, true);
      test_gpu_op<gpuops_bf16>(o, r, true);
    }
    gpuops::row_clusters_disabled() = false;
    test_gpu_online_state(r);
    test_gpu_bad_input_writes_nothing();
    test_gpu_past_2_31(r);
  }
  return th_summary();
}
