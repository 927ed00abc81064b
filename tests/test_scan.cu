// SPDX-License-Identifier: MIT
// tests/test_scan.cu - the prefix scan family.
//   Everywhere: the CPU scans against hand-computed cases, a second formula (each prefix summed
//   from scratch), the inclusive / exclusive relation, two's complement wrap, in place, rows
//   against one scan per row; every argument check of the CPU and GPU entry points (bad input =>
//   the exact status, the output left as it was); the workspace sizes.
//   With a GPU: every version x dtype x kind on sizes around the tiles of every version, with x
//   and y at equal, unequal and zero offsets modulo 16 bytes and in place, outputs poisoned, guard
//   zones checked, the workspace poisoned before every call (each call must initialize it); f32
//   within 1e-5 of the running sum of |x| and bitwise equal run to run; rows of many shapes; a
//   rejected call writes nothing; a NaN reaches exactly the later outputs of its row, in every
//   version; one i32 scan past 2^31 elements per version (streamed check).
// GPUOPS_TEST_QUICK=1 drops the largest sizes and the 2^31 case (for compute-sanitizer).
// GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_SCAN
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string.h>

#include <cmath>
#include <string>
#include <vector>

#include "check.h"
#include "harness.h"
#include "scan_ops.h"

using check::guarded;
using check::quick;
using check::rng;
using std::string;
using std::vector;


static const gpuops_scan_kind kKinds[] = {GPUOPS_SCAN_INCLUSIVE, GPUOPS_SCAN_EXCLUSIVE};

// ---- host data and references ------------------------------------------------------------------

template <class T> static void fill(vector<T> &v, rng &r);
template <> void fill<float>(vector<float> &v, rng &r) {
  for (auto &x : v) x = (float)r.uniform(-1.0, 1.0);
}
template <> void fill<int32_t>(vector<int32_t> &v, rng &r) {  // the whole range: sums wrap
  for (auto &x : v) x = (int32_t)(uint32_t)r.next();
}
template <> void fill<int64_t>(vector<int64_t> &v, rng &r) {
  for (auto &x : v) x = (int64_t)r.next();
}

// Bitwise equality (integers must be exact; f32 determinism is bitwise).
template <class T> static int64_t first_diff(const T *a, const T *b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (memcmp(a + i, b + i, sizeof(T)) != 0) return i;
  return -1;
}

// The f32 check: |got - want| <= 1e-5 * sum_{j in prefix} |x_j| + 1e-6 (the prefix being the one
// element i's output sums). Returns the first failing index, or -1.
static int64_t f32_bad(const float *got, const float *want, const float *x, int64_t n, int64_t cols, gpuops_scan_kind k) {
  double absum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (i % cols == 0) absum = 0.0;
    if (k == GPUOPS_SCAN_INCLUSIVE) absum += fabs((double)x[i]);
    const double tol = 1e-5 * absum + 1e-6;
    if (!(fabs((double)got[i] - (double)want[i]) <= tol)) return i;
    if (k == GPUOPS_SCAN_EXCLUSIVE) absum += fabs((double)x[i]);
  }
  return -1;
}

template <class T> static int64_t mismatch(const T *got, const T *want, const T *x, int64_t n, int64_t cols, gpuops_scan_kind k) {
  if constexpr (std::is_same<T, float>::value) return f32_bad(got, want, x, n, cols, k);
  else return first_diff(got, want, n);
}

template <class T> static double as_double(T v) { return (double)v; }

// ---- CPU ----------------------------------------------------------------------------------------

static void test_cpu_hand_cases() {
  const float xf[5] = {1.0f, 2.0f, 3.0f, 4.0f, -0.5f};
  float yf[5];
  gpuops_status s1 = gpuops_cpu_scan_f32(yf, xf, 5, GPUOPS_SCAN_INCLUSIVE);
  th_case(s1 == GPUOPS_OK && yf[0] == 1 && yf[1] == 3 && yf[2] == 6 && yf[3] == 10 && yf[4] == 9.5f, "cpu f32 inclusive, hand case",
          "%g %g %g %g %g", yf[0], yf[1], yf[2], yf[3], yf[4]);
  s1 = gpuops_cpu_scan_f32(yf, xf, 5, GPUOPS_SCAN_EXCLUSIVE);
  th_case(s1 == GPUOPS_OK && yf[0] == 0 && yf[1] == 1 && yf[2] == 3 && yf[3] == 6 && yf[4] == 10, "cpu f32 exclusive, hand case",
          "%g %g %g %g %g", yf[0], yf[1], yf[2], yf[3], yf[4]);

  // f32 in double: 1 + 2^-30 + ... stays exact in the accumulator; each output rounds once.
  const float xs[3] = {1.0f, 1e-8f, 1e-8f};
  float ys[3];
  gpuops_cpu_scan_f32(ys, xs, 3, GPUOPS_SCAN_INCLUSIVE);
  th_case(ys[2] == (float)(1.0 + 2e-8), "cpu f32 accumulates in double", "%.9g", ys[2]);

  // i32 wrap: INT32_MAX + 1 = INT32_MIN, and back.
  const int32_t xi[4] = {INT32_MAX, 1, 5, -6};
  int32_t yi[4];
  s1 = gpuops_cpu_scan_i32(yi, xi, 4, GPUOPS_SCAN_INCLUSIVE);
  th_case(s1 == GPUOPS_OK && yi[0] == INT32_MAX && yi[1] == INT32_MIN && yi[2] == INT32_MIN + 5 && yi[3] == INT32_MAX,
          "cpu i32 inclusive wraps (two's complement)", "%d %d %d %d", yi[0], yi[1], yi[2], yi[3]);
  s1 = gpuops_cpu_scan_i32(yi, xi, 4, GPUOPS_SCAN_EXCLUSIVE);
  th_case(s1 == GPUOPS_OK && yi[0] == 0 && yi[1] == INT32_MAX && yi[2] == INT32_MIN && yi[3] == INT32_MIN + 5, "cpu i32 exclusive wraps",
          "%d %d %d %d", yi[0], yi[1], yi[2], yi[3]);

  const int64_t xl[4] = {INT64_MAX, 2, INT64_MIN, -1};
  int64_t yl[4];
  s1 = gpuops_cpu_scan_i64(yl, xl, 4, GPUOPS_SCAN_INCLUSIVE);
  // MAX + 2 = MIN + 1; + MIN = 1 (wraps); + (-1) = 0
  th_case(s1 == GPUOPS_OK && yl[0] == INT64_MAX && yl[1] == INT64_MIN + 1 && yl[2] == 1 && yl[3] == 0, "cpu i64 inclusive wraps",
          "%lld %lld %lld %lld", (long long)yl[0], (long long)yl[1], (long long)yl[2], (long long)yl[3]);

  // Rows: [[1 2 3] [4 5 6]] -> inclusive [[1 3 6] [4 9 15]], exclusive [[0 1 3] [0 4 9]].
  const int32_t xr[6] = {1, 2, 3, 4, 5, 6};
  int32_t yr[6], ye[6];
  s1 = gpuops_cpu_scan_rows_i32(yr, xr, 2, 3, GPUOPS_SCAN_INCLUSIVE);
  gpuops_status s2 = gpuops_cpu_scan_rows_i32(ye, xr, 2, 3, GPUOPS_SCAN_EXCLUSIVE);
  const int32_t wr[6] = {1, 3, 6, 4, 9, 15}, we[6] = {0, 1, 3, 0, 4, 9};
  th_case(s1 == GPUOPS_OK && s2 == GPUOPS_OK && !memcmp(yr, wr, sizeof wr) && !memcmp(ye, we, sizeof we), "cpu rows, hand case",
          "status %d %d", s1, s2);
}

// Identities on random data: exclusive shifted by one is inclusive; each prefix summed from
// scratch (long double / unsigned) agrees; in place equals out of place; rows equal one scan
// per row.
template <class T> static void test_cpu_identities(rng &r) {
  const char *dt = sct::api<T>::name();
  const int64_t n = 10007;
  vector<T> x(n), inc(n), exc(n), inplace;
  fill(x, r);
  gpuops_status s1 = sct::api<T>::cpu(inc.data(), x.data(), n, GPUOPS_SCAN_INCLUSIVE);
  gpuops_status s2 = sct::api<T>::cpu(exc.data(), x.data(), n, GPUOPS_SCAN_EXCLUSIVE);
  bool ok = s1 == GPUOPS_OK && s2 == GPUOPS_OK && exc[0] == T(0);
  for (int64_t i = 1; i < n && ok; ++i) ok = memcmp(&exc[i], &inc[i - 1], sizeof(T)) == 0;
  th_case(ok, (string("cpu ") + dt + ": exclusive[i + 1] == inclusive[i], exclusive[0] == 0").c_str(), "status %d %d", s1, s2);

  // A second formula: every 97th prefix summed from scratch.
  int64_t bad = -1;
  for (int64_t i = 0; i < n && bad < 0; i += 97) {
    if constexpr (std::is_same<T, float>::value) {
      long double s = 0;
      for (int64_t j = 0; j <= i; ++j) s += x[j];
      if ((float)s != inc[i] && fabs((double)s - inc[i]) > 1e-7 * (1.0 + fabs((double)s))) bad = i;
    } else {
      using U = typename std::make_unsigned<T>::type;
      U s = 0;
      for (int64_t j = 0; j <= i; ++j) s = (U)(s + (U)x[j]);
      if ((U)inc[i] != s) bad = i;
    }
  }
  th_case(bad < 0, (string("cpu ") + dt + ": inclusive equals each prefix summed from scratch").c_str(), "first at %lld", (long long)bad);

  inplace = x;
  s1 = sct::api<T>::cpu(inplace.data(), inplace.data(), n, GPUOPS_SCAN_EXCLUSIVE);
  th_case(s1 == GPUOPS_OK && first_diff(inplace.data(), exc.data(), n) < 0, (string("cpu ") + dt + ": in place").c_str(), "status %d", s1);

  const int64_t rows = 13, cols = 769;
  vector<T> xr(rows * cols), yr(rows * cols), want(rows * cols);
  fill(xr, r);
  s1 = sct::api<T>::cpu_rows(yr.data(), xr.data(), rows, cols, GPUOPS_SCAN_INCLUSIVE);
  for (int64_t i = 0; i < rows; ++i) sct::api<T>::cpu(want.data() + i * cols, xr.data() + i * cols, cols, GPUOPS_SCAN_INCLUSIVE);
  th_case(s1 == GPUOPS_OK && first_diff(yr.data(), want.data(), rows * cols) < 0, (string("cpu ") + dt + ": rows equal one scan per row").c_str(),
          "status %d", s1);
}

// ---- argument checks (no device needed: every check runs before any CUDA call) ------------------

// A rejected call must return `want` and leave y as it was (poisoned).
template <class T> static void expect(const char *name, gpuops_status want, gpuops_status got, const T *y, int64_t n) {
  bool untouched = true;
  for (int64_t i = 0; i < n; ++i) {
    unsigned char b[sizeof(T)];
    memcpy(b, y + i, sizeof(T));
    for (size_t k = 0; k < sizeof(T); ++k) untouched = untouched && b[k] == 0xFF;
  }
  th_case(got == want && untouched, name, "got %s (want %s), output %s", gpuops_status_string(got), gpuops_status_string(want),
          untouched ? "untouched" : "WRITTEN");
}

template <class T> static void test_arguments() {
  using A = sct::api<T>;
  const string dt = A::name();
  auto nm = [&](const char *s) { return "args " + dt + ": " + s; };
  const int64_t n = 64;
  vector<T> x(n + 1, T(1));
  alignas(16) unsigned char ybuf[(n + 2) * sizeof(T)];
  T *y = (T *)ybuf;
  alignas(16) unsigned char ws[1 << 12];
  const size_t wsb = gpuops_scan_workspace_size(n, GPUOPS_ALGO_AUTO);
  const gpuops_algo LB = GPUOPS_ALGO_DECOUPLED_LOOKBACK;
  const gpuops_scan_kind I = GPUOPS_SCAN_INCLUSIVE;
  auto poison = [&] { memset(ybuf, 0xFF, sizeof ybuf); };

  poison(); expect(nm("cpu n < 0").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::cpu(y, x.data(), -1, I), y, n);
  poison(); expect(nm("gpu n < 0").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::gpu(y, x.data(), -1, I, ws, wsb, LB, 0), y, n);
  poison(); expect(nm("cpu bad kind").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::cpu(y, x.data(), n, (gpuops_scan_kind)2), y, n);
  poison(); expect(nm("gpu bad kind").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::gpu(y, x.data(), n, (gpuops_scan_kind)-1, ws, wsb, LB, 0), y, n);
  poison(); expect(nm("gpu algo out of range").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::gpu(y, x.data(), n, I, ws, wsb, (gpuops_algo)99, 0), y, n);
  poison(); expect(nm("gpu algo -1").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::gpu(y, x.data(), n, I, ws, wsb, (gpuops_algo)-1, 0), y, n);
  poison(); expect(nm("gpu algo of another family").c_str(), GPUOPS_ERR_UNSUPPORTED, A::gpu(y, x.data(), n, I, ws, wsb, GPUOPS_ALGO_VECTORIZED, 0), y, n);
  poison(); expect(nm("cpu NULL x").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::cpu(y, nullptr, n, I), y, n);
  poison(); expect(nm("gpu NULL x").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::gpu(y, nullptr, n, I, ws, wsb, LB, 0), y, n);
  poison(); expect(nm("gpu NULL y").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::gpu(nullptr, x.data(), n, I, ws, wsb, LB, 0), y, n);
  th_case(A::cpu(nullptr, nullptr, 0, I) == GPUOPS_OK && A::gpu(nullptr, nullptr, 0, I, nullptr, 0, LB, 0) == GPUOPS_OK,
          nm("n == 0 is OK with NULL pointers and no workspace").c_str(), "");
  T *ym = (T *)(ybuf + 1);
  poison(); expect(nm("cpu misaligned y").c_str(), GPUOPS_ERR_MISALIGNED, A::cpu(ym, x.data(), n, I), y, n);
  poison(); expect(nm("gpu misaligned x").c_str(), GPUOPS_ERR_MISALIGNED, A::gpu(y, (const T *)((const char *)x.data() + 2), n, I, ws, wsb, LB, 0), y, n);
  poison(); expect(nm("cpu partial overlap").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::cpu(y + 1, y, n, I), y, 0);
  poison(); expect(nm("gpu partial overlap").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::gpu(y, y + 1, n, I, ws, wsb, LB, 0), y, 0);
  for (gpuops_algo al : sct::kVersions) {
    const size_t need = gpuops_scan_workspace_size(n, al);
    const string an = gpuops_algo_name(al);
    poison(); expect(nm(("workspace one byte short, " + an).c_str()).c_str(), GPUOPS_ERR_WORKSPACE, A::gpu(y, x.data(), n, I, ws, need - 1, al, 0), y, n);
    poison(); expect(nm(("NULL workspace, " + an).c_str()).c_str(), GPUOPS_ERR_WORKSPACE, A::gpu(y, x.data(), n, I, nullptr, need, al, 0), y, n);
    poison(); expect(nm(("workspace not 16-byte aligned, " + an).c_str()).c_str(), GPUOPS_ERR_MISALIGNED, A::gpu(y, x.data(), n, I, ws + 8, need, al, 0), y, n);
  }
  // The workspace must not overlap the data: here it is y's own buffer.
  poison(); expect(nm("workspace overlaps y").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::gpu(y, x.data(), n, I, (void *)ybuf, 1 << 20, LB, 0), y, 0);

  // Rows.
  poison(); expect(nm("rows < 0").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::rows(y, x.data(), -1, 4, I, GPUOPS_ALGO_AUTO, 0), y, n);
  poison(); expect(nm("cols < 0").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::cpu_rows(y, x.data(), 4, -1, I), y, n);
  poison(); expect(nm("rows * cols overflows").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::rows(y, x.data(), INT64_MAX / 2, 3, I, GPUOPS_ALGO_AUTO, 0), y, n);
  poison(); expect(nm("rows with a named version").c_str(), GPUOPS_ERR_UNSUPPORTED, A::rows(y, x.data(), 4, 16, I, GPUOPS_ALGO_BLELLOCH, 0), y, n);
  poison(); expect(nm("rows bad kind").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::rows(y, x.data(), 4, 16, (gpuops_scan_kind)5, GPUOPS_ALGO_AUTO, 0), y, n);
  poison(); expect(nm("rows partial overlap").c_str(), GPUOPS_ERR_INVALID_ARGUMENT, A::rows(y + 1, y, 4, 16, I, GPUOPS_ALGO_AUTO, 0), y, 0);
  th_case(A::rows(nullptr, nullptr, 0, 5, I, GPUOPS_ALGO_AUTO, 0) == GPUOPS_OK && A::cpu_rows(nullptr, nullptr, 7, 0, I) == GPUOPS_OK,
          nm("rows with no elements is OK").c_str(), "");
}

static void test_workspace_sizes() {
  bool ok = gpuops_scan_workspace_size(0, GPUOPS_ALGO_AUTO) == 0 && gpuops_scan_workspace_size(-5, GPUOPS_ALGO_BLELLOCH) == 0 &&
            gpuops_scan_workspace_size(1000, GPUOPS_ALGO_NAIVE) == 0 && gpuops_scan_workspace_size(1000, (gpuops_algo)99) == 0;
  th_case(ok, "workspace size: 0 for no elements or a version the scan lacks", "");
  ok = true;
  for (gpuops_algo al : sct::kVersions) {
    size_t prev = 0;
    for (int64_t n = 1; n < (1ll << 34); n = n * 3 + 1) {
      const size_t s = gpuops_scan_workspace_size(n, al);
      ok = ok && s > 0 && s >= prev && s % 8 == 0;
      prev = s;
    }
  }
  ok = ok && gpuops_scan_workspace_size(1, GPUOPS_ALGO_AUTO) == gpuops_scan_workspace_size(1, GPUOPS_ALGO_DECOUPLED_LOOKBACK);
  ok = ok && gpuops_scan_workspace_size(1ll << 40, GPUOPS_ALGO_REDUCE_THEN_SCAN) <= 8192;
  // The look-back's tile states for the largest n of 8-byte tiles (2048 elements, 20 bytes).
  ok = ok && gpuops_scan_workspace_size(1ll << 31, GPUOPS_ALGO_DECOUPLED_LOOKBACK) >= 256 + ((1ll << 31) / 2048 + 1) * 20;
  th_case(ok, "workspace size: positive, nondecreasing in n, bounded for reduce-then-scan", "");
}

// ---- GPU -----------------------------------------------------------------------------------------

// A device allocation with guard zones: the data starts `guard + offset` elements in; everything
// else keeps the poison, which guards_hold() verifies.
// Placement of x and y: offsets in elements from a 256-byte boundary (+ guard), or in place.
struct placement {
  const char *name;
  int64_t ox, oy;
  bool in_place;
};
static const placement kPlacements[] = {
    {"aligned", 0, 0, false}, {"both offset by 1", 1, 1, false}, {"offsets 1 and 2", 1, 2, false}, {"in place, offset 3", 3, 3, true}};

static string wrong_at(int64_t i, double got, double want) {
  char buf[160];
  snprintf(buf, sizeof buf, "first wrong at %lld: %.9g, want %.9g", (long long)i, got, want);
  return buf;
}

// One GPU scan against the CPU; "" or why it failed.
template <class T>
static string run_scan(const vector<T> &hx, const vector<T> &want, gpuops_scan_kind kind, gpuops_algo algo, const placement &pl,
                       vector<T> *out = nullptr) {
  const int64_t n = (int64_t)hx.size();
  guarded gx(n, pl.ox, sizeof(T)), gy(n, pl.oy, sizeof(T));
  T *x = (T *)gx.data(), *y = pl.in_place ? x : (T *)gy.data();
  CHECK_CUDA(cudaMemcpy(x, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const size_t wsb = gpuops_scan_workspace_size(n, algo);
  void *ws = nullptr;
  if (wsb) {
    CHECK_CUDA(cudaMalloc(&ws, wsb));
    check::poison(ws, wsb);  // the op must initialize what it uses
  }
  const gpuops_status st = sct::api<T>::gpu(y, x, n, kind, ws, wsb, algo, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (ws) cudaFree(ws);
  if (st != GPUOPS_OK) return string("status ") + gpuops_status_string(st);
  vector<T> got = check::to_host(y, n);
  const int64_t bad = mismatch(got.data(), want.data(), hx.data(), n, n, kind);
  if (bad >= 0)
    return wrong_at(bad, as_double(got[bad]), as_double(want[bad]));
  if (!gx.guards_hold() || (!pl.in_place && !gy.guards_hold())) return "wrote outside its arrays";
  if (out) *out = got;
  return "";
}

// Every version x kind x size x placement for one dtype. Sizes straddle each version's tiles:
// 512 (Hillis-Steele), 1024 (Blelloch), the look-back tile (sct::lookback_tile), reduce-then-scan's (4096 or 2048),
// many tiles, and (not quick) more tiles than reduce-then-scan has blocks.
template <class T> static void test_gpu_scan(rng &r) {
  const string dt = sct::api<T>::name();
  const int64_t tile = sct::lookback_tile<T>();
  vector<int64_t> sizes = {1, 2, 3, 5, 31, 33, 511, 512, 513, 1023, 1024, 1025, tile - 1, tile, tile + 1, 2 * tile + 3, 7 * tile - 5,
                           100 * tile + 17};
  if (const int64_t rt = sct::rts_tile<T>(); rt != tile) sizes.insert(sizes.begin() + 12, {rt - 1, rt, rt + 1, 3 * rt + 1});
  if (!quick()) sizes.push_back(1100 * tile + 12345);  // > 1024 tiles: several tiles per reduce-then-scan block
  for (int64_t n : sizes) {
    vector<T> hx(n);
    fill(hx, r);
    for (gpuops_scan_kind kind : kKinds) {
      vector<T> want(n);
      CHECK_OK(sct::api<T>::cpu(want.data(), hx.data(), n, kind));
      for (gpuops_algo algo : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_HILLIS_STEELE, GPUOPS_ALGO_BLELLOCH, GPUOPS_ALGO_REDUCE_THEN_SCAN,
                               GPUOPS_ALGO_DECOUPLED_LOOKBACK}) {
        string why;
        const placement *failed = nullptr;
        for (const placement &pl : kPlacements) {
          // The largest sizes: two placements only (time).
          if (n > 50 * tile && pl.ox != pl.oy) continue;
          why = run_scan(hx, want, kind, algo, pl);
          if (!why.empty()) {
            failed = &pl;
            break;
          }
        }
        const string name = "gpu scan " + dt + " " + sct::kind_name(kind) + " " + gpuops_algo_name(algo) + " n=" + std::to_string(n);
        th_case(why.empty(), name.c_str(), "%s: %s", failed ? failed->name : "", why.c_str());
      }
    }
  }
}

// f32: positive data (the running sum grows like the sum of |x|: the hardest case for the
// tolerance) and bitwise equality across three runs, per version.
static void test_gpu_f32_determinism(rng &r) {
  const int64_t tile = sct::lookback_tile<float>(), n = quick() ? 300 * tile + 7 : 1500 * tile + 7;
  vector<float> hx(n);
  for (auto &v : hx) v = (float)r.uniform(0.0, 1.0);
  for (gpuops_scan_kind kind : kKinds) {
    vector<float> want(n);
    CHECK_OK(gpuops_cpu_scan_f32(want.data(), hx.data(), n, kind));
    for (gpuops_algo algo : sct::kVersions) {
      vector<float> first, again;
      string why = run_scan(hx, want, kind, algo, kPlacements[0], &first);
      for (int rep = 0; rep < 2 && why.empty(); ++rep) {
        why = run_scan(hx, want, kind, algo, kPlacements[0], &again);
        const int64_t d = why.empty() ? first_diff(first.data(), again.data(), n) : -1;
        if (d >= 0) why = wrong_at(d, again[d], first[d]) + " (differs from the first run)";
      }
      const string name = string("gpu scan f32 ") + sct::kind_name(kind) + " " + gpuops_algo_name(algo) +
                          ": positive data within tolerance, bitwise equal over 3 runs";
      th_case(why.empty(), name.c_str(), "%s", why.c_str());
    }
  }
}

// Rows: warps over whole rows (segmented, about 1024 elements a warp) below 2048 columns, a block
// per row from 2048; a few long rows on compute capability 9.0+ a cluster of blocks per row (split
// rows: 7 x 20000 on 2, 2 x 100003 on 12, 16 x 2^20 + 3 and 1 x 5000001 on 16).
template <class T> static void test_gpu_rows(rng &r) {
  const string dt = sct::api<T>::name();
  struct shape { int64_t rows, cols; };
  vector<shape> shapes = {{1, 1}, {5, 1}, {3000, 1}, {777, 3}, {3, 7}, {17, 127}, {64, 128}, {1000, 33}, {9, 2047}, {3, 2048}, {2, 5001}, {40000, 8}};
  shapes.push_back({7, 20000}), shapes.push_back({2, 100003});
  if (!quick()) shapes.push_back({3, (1 << 20) + 3}), shapes.push_back({16, (1 << 20) + 3}), shapes.push_back({1, 5000001});
  for (const shape &s : shapes) {
    const int64_t n = s.rows * s.cols;
    vector<T> hx(n);
    fill(hx, r);
    for (gpuops_scan_kind kind : kKinds) {
      vector<T> want(n);
      CHECK_OK(sct::api<T>::cpu_rows(want.data(), hx.data(), s.rows, s.cols, kind));
      string why;
      for (int in_place = 0; in_place < 2 && why.empty(); ++in_place) {
        guarded gx(n, 1, sizeof(T)), gy(n, 0, sizeof(T));
        T *x = (T *)gx.data(), *y = in_place ? x : (T *)gy.data();
        CHECK_CUDA(cudaMemcpy(x, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
        const gpuops_status st = sct::api<T>::rows(y, x, s.rows, s.cols, kind, GPUOPS_ALGO_AUTO, 0);
        CHECK_CUDA(cudaDeviceSynchronize());
        if (st != GPUOPS_OK) { why = gpuops_status_string(st); break; }
        const vector<T> got = check::to_host(y, n);
        const int64_t bad = mismatch(got.data(), want.data(), hx.data(), n, s.cols, kind);
        if (bad >= 0) why = wrong_at(bad, as_double(got[bad]), as_double(want[bad])) + (in_place ? " (in place)" : "");
        else if (!gx.guards_hold() || (!in_place && !gy.guards_hold())) why = "wrote outside its arrays";
      }
      const string name = "gpu rows " + dt + " " + sct::kind_name(kind) + " " + std::to_string(s.rows) + " x " + std::to_string(s.cols);
      th_case(why.empty(), name.c_str(), "%s", why.c_str());
    }
  }
}

// NaN: a NaN at element k must reach every later output of its row and nothing before it (nor
// another row): no padding, tile total, carry or offset may pull it backwards or across a segment.
// Outputs that are NaN on the CPU must be NaN, the others within the f32 tolerance.
static string nan_check(const vector<float> &got, const vector<float> &want, const vector<float> &x, int64_t cols, gpuops_scan_kind k) {
  double absum = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if ((int64_t)i % cols == 0) absum = 0.0;
    const double xi = std::isnan(x[i]) ? 0.0 : fabs((double)x[i]);
    if (k == GPUOPS_SCAN_INCLUSIVE) absum += xi;
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : fabs((double)got[i] - (double)want[i]) <= 1e-5 * absum + 1e-6;
    if (!ok) return wrong_at((int64_t)i, got[i], want[i]);
    if (k == GPUOPS_SCAN_EXCLUSIVE) absum += xi;
  }
  return "";
}

static void test_gpu_nan(rng &r) {
  const int64_t tile = sct::lookback_tile<float>(), n = 3 * tile + 77, k = tile + 100;  // the NaN in the second look-back tile
  vector<float> hx(n);
  fill(hx, r);
  hx[k] = NAN;
  for (gpuops_scan_kind kind : kKinds) {
    vector<float> want(n);
    CHECK_OK(gpuops_cpu_scan_f32(want.data(), hx.data(), n, kind));
    for (gpuops_algo algo : sct::kVersions) {
      guarded gx(n, 1, 4), gy(n, 1, 4);
      CHECK_CUDA(cudaMemcpy(gx.data(), hx.data(), n * 4, cudaMemcpyHostToDevice));
      const size_t wsb = gpuops_scan_workspace_size(n, algo);
      void *ws = nullptr;
      CHECK_CUDA(cudaMalloc(&ws, wsb));
      const gpuops_status st = gpuops_scan_f32((float *)gy.data(), (const float *)gx.data(), n, kind, ws, wsb, algo, 0);
      CHECK_CUDA(cudaDeviceSynchronize());
      cudaFree(ws);
      const string why = st != GPUOPS_OK ? gpuops_status_string(st) : nan_check(check::to_host((const float *)gy.data(), n), want, hx, n, kind);
      th_case(why.empty(), (string("gpu scan f32 ") + sct::kind_name(kind) + " " + gpuops_algo_name(algo) + ": a NaN reaches exactly the later outputs").c_str(),
              "%s", why.c_str());
    }
    // Rows: the NaN's row only, from the NaN on (warp rows below 2048 columns, block rows above,
    // split rows at 20000 on compute capability 9.0+).
    for (int64_t cols : {(int64_t)5, (int64_t)300, (int64_t)3000, (int64_t)20000}) {  // 20000: split rows, the NaN in the first slice
      const int64_t rows = 7, m = rows * cols, kr = 3 * cols + cols / 2;
      vector<float> rx(m), rw(m);
      fill(rx, r);
      rx[kr] = NAN;
      CHECK_OK(gpuops_cpu_scan_rows_f32(rw.data(), rx.data(), rows, cols, kind));
      guarded gx(m, 0, 4), gy(m, 1, 4);
      CHECK_CUDA(cudaMemcpy(gx.data(), rx.data(), m * 4, cudaMemcpyHostToDevice));
      const gpuops_status st = gpuops_scan_rows_f32((float *)gy.data(), (const float *)gx.data(), rows, cols, kind, GPUOPS_ALGO_AUTO, 0);
      CHECK_CUDA(cudaDeviceSynchronize());
      const string why = st != GPUOPS_OK ? gpuops_status_string(st) : nan_check(check::to_host((const float *)gy.data(), m), rw, rx, cols, kind);
      th_case(why.empty(), (string("gpu rows f32 ") + sct::kind_name(kind) + " 7 x " + std::to_string(cols) + ": a NaN stays in its row, from its column on").c_str(),
              "%s", why.c_str());
    }
  }
}

// A call rejected for its workspace leaves the device output as it was.
static void test_gpu_rejected_writes_nothing() {
  const int64_t n = 5000;
  guarded gx(n, 0, 4), gy(n, 0, 4);
  void *ws = nullptr;
  const size_t need = gpuops_scan_workspace_size(n, GPUOPS_ALGO_AUTO);
  CHECK_CUDA(cudaMalloc(&ws, need));
  CHECK_CUDA(cudaMemset(gx.data(), 0, n * 4));
  const gpuops_status st = gpuops_scan_f32((float *)gy.data(), (const float *)gx.data(), n, GPUOPS_SCAN_INCLUSIVE, ws, need - 1,
                                           GPUOPS_ALGO_AUTO, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  const vector<uint32_t> y = check::to_host((const uint32_t *)gy.data(), n);
  bool untouched = true;
  for (uint32_t v : y) untouched = untouched && v == 0xFFFFFFFFu;
  cudaFree(ws);
  th_case(st == GPUOPS_ERR_WORKSPACE && untouched && gy.guards_hold(), "gpu workspace too small: WORKSPACE, output untouched", "%s, %s",
          gpuops_status_string(st), untouched ? "untouched" : "WRITTEN");
}

// i32 past 2^31 elements: x[i] = a hash of the 64-bit i, in [-3, 4], written on the device; the
// reference is a running sum on the host over the downloaded output, chunk by chunk.
__host__ __device__ inline int32_t big_value(int64_t i) {
  uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull;
  z ^= z >> 29;
  return (int32_t)((z * 0xbf58476d1ce4e5b9ull) >> 61) - 3;
}
__global__ void big_fill(int32_t *x, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) x[i] = big_value(i);
}

static void test_gpu_past_2_31() {
  const char *name = "gpu scan i32 past 2^31 elements, every version";
  if (quick()) return th_skip(name, "GPUOPS_TEST_QUICK is set");
  const int64_t n = (1ll << 31) + 4099;
  size_t free_b = 0, total_b = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t ws_need = gpuops_scan_workspace_size(n, GPUOPS_ALGO_HILLIS_STEELE) > gpuops_scan_workspace_size(n, GPUOPS_ALGO_AUTO)
                             ? gpuops_scan_workspace_size(n, GPUOPS_ALGO_HILLIS_STEELE)
                             : gpuops_scan_workspace_size(n, GPUOPS_ALGO_AUTO);
  if (free_b < 2 * (size_t)n * 4 + ws_need + (1ull << 30)) return th_skip(name, "needs 18 GB of free device memory");
  int32_t *x = nullptr, *y = nullptr;
  void *ws = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * 4));
  CHECK_CUDA(cudaMalloc(&y, n * 4));
  CHECK_CUDA(cudaMalloc(&ws, ws_need));
  big_fill<<<4096, 256>>>(x, n);
  CHECK_CUDA(cudaGetLastError());
  const int64_t chunk = 1 << 26;
  vector<int32_t> h(chunk);
  string why;
  int which = 0;
  for (gpuops_algo algo : sct::kVersions) {
    const gpuops_scan_kind kind = (which++ & 1) ? GPUOPS_SCAN_EXCLUSIVE : GPUOPS_SCAN_INCLUSIVE;
    check::poison(y, n * 4);
    const gpuops_status st = gpuops_scan_i32(y, x, n, kind, ws, ws_need, algo, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (st != GPUOPS_OK) {
      why = string(gpuops_algo_name(algo)) + ": " + gpuops_status_string(st);
      break;
    }
    uint32_t acc = 0;
    int64_t bad = -1;
    for (int64_t c0 = 0; c0 < n && bad < 0; c0 += chunk) {
      const int64_t m = n - c0 < chunk ? n - c0 : chunk;
      CHECK_CUDA(cudaMemcpy(h.data(), y + c0, m * 4, cudaMemcpyDeviceToHost));
      for (int64_t k = 0; k < m; ++k) {
        const uint32_t v = (uint32_t)big_value(c0 + k);
        if (kind == GPUOPS_SCAN_INCLUSIVE) acc += v;
        if ((uint32_t)h[k] != acc) { bad = c0 + k; break; }
        if (kind == GPUOPS_SCAN_EXCLUSIVE) acc += v;
      }
    }
    if (bad >= 0) {
      why = string(gpuops_algo_name(algo)) + " " + sct::kind_name(kind) + ": first wrong at " + std::to_string(bad);
      break;
    }
  }
  cudaFree(x);
  cudaFree(y);
  cudaFree(ws);
  th_case(why.empty(), name, "%s", why.c_str());
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_scan: seed %llu (GPUOPS_SEED=%llu replays it)%s\n", (unsigned long long)seed, (unsigned long long)seed,
         quick() ? ", quick" : "");
  rng r(seed);
  test_cpu_hand_cases();
  test_cpu_identities<float>(r);
  test_cpu_identities<int32_t>(r);
  test_cpu_identities<int64_t>(r);
  test_arguments<float>();
  test_arguments<int32_t>();
  test_arguments<int64_t>();
  test_workspace_sizes();
  if (!check::have_gpu()) {
    const char *why = "no CUDA device";
    for (const char *t : {"f32", "i32", "i64"}) {
      th_skip((string("gpu scan ") + t + ", every version x kind x size x placement").c_str(), why);
      th_skip((string("gpu rows ") + t).c_str(), why);
    }
    for (const char *g : {"gpu f32 determinism", "gpu NaN propagation", "gpu rejected call writes nothing", "gpu scan i32 past 2^31 elements"}) th_skip(g, why);
    // A valid call without a device reaches CUDA and reports its error.
    float x[3] = {1, 2, 3}, y[3];
    const gpuops_status st = gpuops_scan_f32(y, x, 3, GPUOPS_SCAN_INCLUSIVE, nullptr, 0, GPUOPS_ALGO_HILLIS_STEELE, 0);
    th_case(st == GPUOPS_ERR_WORKSPACE, "no device: argument checks still run first", "%s", gpuops_status_string(st));
  } else {
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
    printf("device: %s (compute capability %d.%d)\n", p.name, p.major, p.minor);
    test_gpu_scan<float>(r);
    test_gpu_scan<int32_t>(r);
    test_gpu_scan<int64_t>(r);
    test_gpu_f32_determinism(r);
    test_gpu_rows<float>(r);
    test_gpu_rows<int32_t>(r);
    test_gpu_rows<int64_t>(r);
    test_gpu_nan(r);
    test_gpu_rejected_writes_nothing();
    test_gpu_past_2_31();
  }
  return th_summary();
}
