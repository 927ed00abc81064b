// SPDX-License-Identifier: MIT
// tests/test_reduce.cu - reductions (vector and rows) and the histogram.
//   Everywhere: the CPU implementations against hand-computed values and a second formula (a
//   vector is one row; the rows' sums add up to the vector's), empty inputs, NaN and infinities,
//   and argument checking of the CPU and GPU entry points (checked before any launch, so no
//   device is needed), each rejected call leaving its output untouched.
//   With a GPU: every version x storage type x op on sizes 1, odd, non-multiples of the vector
//   and of the block, large, and offset pointers, against the CPU implementation with the output
//   poisoned; bitwise determinism (two runs, the same bits); special values; rows of every
//   length; the histogram on uniform, skewed, sorted and all-out-of-range inputs for bins 1 to
//   100000 (exact counts); one sum, max and min past 2^31 elements and one histogram past 2^31.
// GPUOPS_TEST_QUICK=1 drops the largest sizes and the 2^31 cases (for compute-sanitizer).
// GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_REDUCE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string.h>

#include <string>
#include <type_traits>
#include <vector>

#include "check.h"
#include "harness.h"

using check::guarded;
using check::quick;
using check::rng;
using std::string;
using std::vector;


static const gpuops_reduce_op kOps[] = {GPUOPS_REDUCE_SUM, GPUOPS_REDUCE_MAX, GPUOPS_REDUCE_MIN};
static const char *op_name(gpuops_reduce_op o) { return o == GPUOPS_REDUCE_SUM ? "sum" : o == GPUOPS_REDUCE_MAX ? "max" : "min"; }
static const gpuops_algo kVectorAlgos[] = {GPUOPS_ALGO_AUTO,       GPUOPS_ALGO_INTERLEAVED,  GPUOPS_ALGO_SEQUENTIAL,
                                           GPUOPS_ALGO_FIRST_ADD,  GPUOPS_ALGO_WARP_SHUFFLE, GPUOPS_ALGO_WARP_REDUCE};
static const gpuops_algo kHistAlgos[] = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_GLOBAL_ATOMIC, GPUOPS_ALGO_SHARED_ATOMIC, GPUOPS_ALGO_RUN_AGGREGATE};

// The typed entry points, for templates over the storage type.
template <class T> struct api;
#define REDUCE_API(T, S)                                                                                                    \
  template <> struct api<T> {                                                                                               \
    static gpuops_status gpu(float *o, const T *x, int64_t n, gpuops_reduce_op op, void *ws, size_t wb, gpuops_algo a) {    \
      return gpuops_reduce_##S(o, x, n, op, ws, wb, a, 0);                                                                  \
    }                                                                                                                       \
    static gpuops_status cpu(float *o, const T *x, int64_t n, gpuops_reduce_op op) { return gpuops_cpu_reduce_##S(o, x, n, op); } \
    static gpuops_status gpu_rows(float *o, const T *x, int64_t r, int64_t c, gpuops_reduce_op op, gpuops_algo a) {         \
      return gpuops_reduce_rows_##S(o, x, r, c, op, a, 0);                                                                  \
    }                                                                                                                       \
    static gpuops_status cpu_rows(float *o, const T *x, int64_t r, int64_t c, gpuops_reduce_op op) {                        \
      return gpuops_cpu_reduce_rows_##S(o, x, r, c, op);                                                                    \
    }                                                                                                                       \
  };
REDUCE_API(float, f32)
REDUCE_API(gpuops_f16, f16)
REDUCE_API(gpuops_bf16, bf16)

static bool same_bits(float a, float b) { return memcmp(&a, &b, 4) == 0; }

// A GPU result against the CPU's: NaN only where the reference is NaN, infinities equal, a max or
// min exactly equal, a sum within 1e-5 * sum |x| (f32 accumulation against double; the trees and
// per-thread chains here add at most a few thousand roundings of 6e-8).
static bool result_ok(gpuops_reduce_op op, float got, float want, double abs_sum) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  if (op != GPUOPS_REDUCE_SUM) return got == want;
  return fabs((double)got - (double)want) <= 1e-5 * abs_sum + 1e-30;
}

template <class T> static double abs_sum(const T *x, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += fabs((double)check::to_float(x[i]));
  return s;
}

// ---- CPU implementations -------------------------------------------------------------------

static void test_cpu_known_values() {
  const float x[5] = {1.0f, -2.0f, 4.5f, 0.25f, 3.0f};
  float s = 0, mx = 0, mn = 0;
  gpuops_status st = gpuops_cpu_reduce_f32(&s, x, 5, GPUOPS_REDUCE_SUM);
  gpuops_cpu_reduce_f32(&mx, x, 5, GPUOPS_REDUCE_MAX);
  gpuops_cpu_reduce_f32(&mn, x, 5, GPUOPS_REDUCE_MIN);
  th_case(st == GPUOPS_OK && s == 6.75f && mx == 4.5f && mn == -2.0f, "cpu sum, max, min of 5 values", "%g %g %g", s, mx, mn);

  gpuops_f16 h[5];
  gpuops_bf16 b[5];
  for (int i = 0; i < 5; ++i) h[i] = gpuops_f32_to_f16(x[i]), b[i] = gpuops_f32_to_bf16(x[i]);
  float hs = 0, bs = 0, hm = 0, bm = 0;
  gpuops_cpu_reduce_f16(&hs, h, 5, GPUOPS_REDUCE_SUM);
  gpuops_cpu_reduce_bf16(&bs, b, 5, GPUOPS_REDUCE_SUM);
  gpuops_cpu_reduce_f16(&hm, h, 5, GPUOPS_REDUCE_MIN);
  gpuops_cpu_reduce_bf16(&bm, b, 5, GPUOPS_REDUCE_MAX);
  th_case(hs == 6.75f && bs == 6.75f && hm == -2.0f && bm == 4.5f, "cpu f16 and bf16 reductions", "%g %g %g %g", hs, bs, hm, bm);

  // Empty: the identities are written.
  float e[3] = {7, 7, 7};
  gpuops_status s0 = gpuops_cpu_reduce_f32(&e[0], nullptr, 0, GPUOPS_REDUCE_SUM);
  gpuops_status s1 = gpuops_cpu_reduce_f32(&e[1], nullptr, 0, GPUOPS_REDUCE_MAX);
  gpuops_status s2 = gpuops_cpu_reduce_f32(&e[2], nullptr, 0, GPUOPS_REDUCE_MIN);
  th_case(s0 == GPUOPS_OK && s1 == GPUOPS_OK && s2 == GPUOPS_OK && e[0] == 0.0f && e[1] == -INFINITY && e[2] == INFINITY,
          "cpu empty input: 0, -inf, +inf", "%g %g %g", e[0], e[1], e[2]);

  // NaN propagates; infinities are numbers.
  const float xn[4] = {1.0f, NAN, 3.0f, -1.0f}, xi[3] = {1.0f, INFINITY, -5.0f}, xii[2] = {INFINITY, -INFINITY};
  float r[3], ri[3], rii = 0;
  for (int k = 0; k < 3; ++k) gpuops_cpu_reduce_f32(&r[k], xn, 4, kOps[k]), gpuops_cpu_reduce_f32(&ri[k], xi, 3, kOps[k]);
  gpuops_cpu_reduce_f32(&rii, xii, 2, GPUOPS_REDUCE_SUM);
  th_case(isnan(r[0]) && isnan(r[1]) && isnan(r[2]), "cpu NaN propagates through sum, max, min", "%g %g %g", r[0], r[1], r[2]);
  th_case(ri[0] == INFINITY && ri[1] == INFINITY && ri[2] == -5.0f && isnan(rii), "cpu infinities", "%g %g %g, inf - inf = %g", ri[0],
          ri[1], ri[2], rii);

  // Double accumulation: 1e8 + 1 + ... + 1 - 1e8 loses every 1 in f32, none in double.
  vector<float> big(1002, 1.0f);
  big[0] = 1e8f;
  big[1001] = -1e8f;
  float bsum = 0;
  gpuops_cpu_reduce_f32(&bsum, big.data(), 1002, GPUOPS_REDUCE_SUM);
  th_case(bsum == 1000.0f, "cpu sum accumulates in double", "%g", bsum);

  // Rows: 2 x 3, and a matrix with no columns gives the identities.
  const float m[6] = {1, 2, 3, -4, 10, 0.5f};
  float rs[2], rmx[2], rmn[2], z[3] = {5, 5, 5};
  gpuops_cpu_reduce_rows_f32(rs, m, 2, 3, GPUOPS_REDUCE_SUM);
  gpuops_cpu_reduce_rows_f32(rmx, m, 2, 3, GPUOPS_REDUCE_MAX);
  gpuops_cpu_reduce_rows_f32(rmn, m, 2, 3, GPUOPS_REDUCE_MIN);
  th_case(rs[0] == 6 && rs[1] == 6.5f && rmx[0] == 3 && rmx[1] == 10 && rmn[0] == 1 && rmn[1] == -4, "cpu rows on 2 x 3",
          "%g %g / %g %g / %g %g", rs[0], rs[1], rmx[0], rmx[1], rmn[0], rmn[1]);
  gpuops_status sz = gpuops_cpu_reduce_rows_f32(z, nullptr, 3, 0, GPUOPS_REDUCE_MAX);
  th_case(sz == GPUOPS_OK && z[0] == -INFINITY && z[2] == -INFINITY, "cpu rows with 0 columns write the identity", "%g", z[0]);
  float untouched = 5;
  th_case(gpuops_cpu_reduce_rows_f32(&untouched, nullptr, 0, 7, GPUOPS_REDUCE_SUM) == GPUOPS_OK && untouched == 5,
          "cpu 0 rows write nothing", "%g", untouched);

  // Histogram: out-of-range values are ignored; counts are zeroed first.
  const int32_t hx[10] = {0, 1, 1, 3, -1, 4, 100, 3, 3, INT32_MIN};
  int64_t c[4] = {9, 9, 9, 9}, c1[1] = {9};
  gpuops_status hs1 = gpuops_cpu_histogram_i32(c, hx, 10, 4);
  gpuops_status hs2 = gpuops_cpu_histogram_i32(c1, hx, 10, 1);
  th_case(hs1 == GPUOPS_OK && hs2 == GPUOPS_OK && c[0] == 1 && c[1] == 2 && c[2] == 0 && c[3] == 3 && c1[0] == 1,
          "cpu histogram, out-of-range values ignored, bins = 1", "%lld %lld %lld %lld | %lld", (long long)c[0], (long long)c[1],
          (long long)c[2], (long long)c[3], (long long)c1[0]);
  int64_t ce[2] = {9, 9};
  th_case(gpuops_cpu_histogram_i32(ce, nullptr, 0, 2) == GPUOPS_OK && ce[0] == 0 && ce[1] == 0, "cpu histogram of nothing zeroes counts",
          "%lld", (long long)ce[0]);
}

// Second formulas: a vector is a 1 x n matrix; the rows' sums add up to the vector's sum; max of
// the rows' max is the vector's max; histogram counts add up to the values in range.
static void test_cpu_identities(rng &r) {
  const int64_t rows = 37, cols = 101, n = rows * cols;
  vector<float> x(n);
  check::fill_uniform(x, r, -10.0, 10.0);
  bool ok = true;
  for (gpuops_reduce_op op : kOps) {
    float v = 0, one = 0;
    vector<float> per(rows);
    gpuops_cpu_reduce_f32(&v, x.data(), n, op);
    gpuops_cpu_reduce_rows_f32(&one, x.data(), 1, n, op);
    gpuops_cpu_reduce_rows_f32(per.data(), x.data(), rows, cols, op);
    float combined = 0;
    gpuops_cpu_reduce_f32(&combined, per.data(), rows, op);
    ok = ok && same_bits(v, one) && (op == GPUOPS_REDUCE_SUM ? fabs(combined - v) <= 1e-4 * (1 + fabs(v)) : combined == v);
  }
  th_case(ok, "cpu vector = 1 x n rows; rows combine to the vector", "");

  vector<int32_t> hx(10000);
  for (auto &v : hx) v = (int32_t)r.below(300) - 20;
  vector<int64_t> counts(256);
  gpuops_cpu_histogram_i32(counts.data(), hx.data(), 10000, 256);
  int64_t total = 0, in_range = 0;
  for (int64_t c : counts) total += c;
  for (int32_t v : hx) in_range += v >= 0 && v < 256;
  th_case(total == in_range, "cpu histogram counts add up to the values in range", "%lld vs %lld", (long long)total, (long long)in_range);
}

// ---- argument checking ------------------------------------------------------------------------
// Each rejected call returns its status and leaves every output untouched. The GPU entry points
// check on the host before any launch, so these run without a device (no pointer is touched).

static void test_arguments() {
  float buf[64], ws[64];
  int64_t counts[8];
  alignas(16) int32_t ix[8] = {0, 1, 2, 3, 0, 1, 2, 3};
  memset(buf, 0x5a, sizeof buf);
  memset(counts, 0x5a, sizeof counts);
  float *out = buf, *x = buf + 8;  // out below x: the huge sizes below do not overlap it
  const float *cx = x;
  auto untouched = [&] {
    for (size_t i = 0; i < 8 * sizeof(float); ++i)
      if (((const unsigned char *)buf)[i] != 0x5a) return false;
    for (size_t i = 0; i < sizeof counts; ++i)
      if (((const unsigned char *)counts)[i] != 0x5a) return false;
    return true;
  };
  const size_t wsb = sizeof ws;
  const gpuops_algo A = GPUOPS_ALGO_AUTO, bad_algo = (gpuops_algo)99;
  const gpuops_reduce_op S = GPUOPS_REDUCE_SUM;
  const gpuops_bf16 *bx = (const gpuops_bf16 *)x;
  const int64_t huge = (int64_t)1 << 40;
  struct expect {
    const char *name;
    gpuops_status got, want;
  };
  const expect cases[] = {
      {"negative n", gpuops_reduce_f32(out, cx, -1, S, ws, wsb, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu negative n", gpuops_cpu_reduce_f32(out, cx, -1, S), GPUOPS_ERR_INVALID_ARGUMENT},
      {"NULL output", gpuops_reduce_f32(nullptr, cx, 8, S, ws, wsb, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"NULL output, n == 0", gpuops_reduce_f32(nullptr, nullptr, 0, S, nullptr, 0, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu NULL output", gpuops_cpu_reduce_bf16(nullptr, bx, 4, S), GPUOPS_ERR_INVALID_ARGUMENT},
      {"NULL input", gpuops_reduce_f32(out, nullptr, 8, S, ws, wsb, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu NULL input", gpuops_cpu_reduce_f32(out, nullptr, 8, S), GPUOPS_ERR_INVALID_ARGUMENT},
      {"op out of range", gpuops_reduce_f32(out, cx, 8, (gpuops_reduce_op)3, ws, wsb, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu op out of range", gpuops_cpu_reduce_f32(out, cx, 8, (gpuops_reduce_op)-1), GPUOPS_ERR_INVALID_ARGUMENT},
      {"algorithm out of range", gpuops_reduce_f32(out, cx, 8, S, ws, wsb, bad_algo, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"algorithm of another family", gpuops_reduce_f32(out, cx, 8, S, ws, wsb, GPUOPS_ALGO_VECTORIZED, 0), GPUOPS_ERR_UNSUPPORTED},
      {"histogram algorithm on a reduction", gpuops_reduce_f32(out, cx, 8, S, ws, wsb, GPUOPS_ALGO_SHARED_ATOMIC, 0), GPUOPS_ERR_UNSUPPORTED},
      {"misaligned output", gpuops_reduce_f32((float *)((char *)out + 2), cx, 4, S, ws, wsb, A, 0), GPUOPS_ERR_MISALIGNED},
      {"misaligned f32 input", gpuops_reduce_f32(out, (const float *)((const char *)cx + 1), 4, S, ws, wsb, A, 0), GPUOPS_ERR_MISALIGNED},
      {"misaligned bf16 input", gpuops_reduce_bf16(out, (const gpuops_bf16 *)((const char *)cx + 1), 4, S, ws, wsb, A, 0), GPUOPS_ERR_MISALIGNED},
      {"cpu misaligned input", gpuops_cpu_reduce_f16(out, (const gpuops_f16 *)((const char *)cx + 3), 4, S), GPUOPS_ERR_MISALIGNED},
      {"output inside the input", gpuops_reduce_f32(x + 2, cx, 8, S, ws, wsb, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"output is the input", gpuops_reduce_f32(x, cx, 8, S, ws, wsb, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu output inside the input", gpuops_cpu_reduce_f32(x + 7, cx, 8, S), GPUOPS_ERR_INVALID_ARGUMENT},
      {"no workspace", gpuops_reduce_f32(out, cx, 8, S, nullptr, 0, A, 0), GPUOPS_ERR_WORKSPACE},
      {"workspace too small", gpuops_reduce_f32(out, cx, 1 << 20, S, ws, wsb, GPUOPS_ALGO_SEQUENTIAL, 0), GPUOPS_ERR_WORKSPACE},
      {"workspace 1 byte short", gpuops_reduce_f32(out, cx, 8, S, ws, 3, A, 0), GPUOPS_ERR_WORKSPACE},
      {"misaligned workspace", gpuops_reduce_f32(out, cx, 8, S, (char *)ws + 2, 8, A, 0), GPUOPS_ERR_MISALIGNED},
      {"workspace overlaps the input", gpuops_reduce_f32(out, cx, 8, S, x + 4, 64, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"workspace overlaps the output", gpuops_reduce_f32(out, cx, 8, S, out, 64, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"tree version past the grid limit", gpuops_reduce_f32(out, cx, huge, S, ws, wsb, GPUOPS_ALGO_INTERLEAVED, 0), GPUOPS_ERR_UNSUPPORTED},
      {"rows negative", gpuops_reduce_rows_f32(out, cx, -1, 4, S, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu cols negative", gpuops_cpu_reduce_rows_f32(out, cx, 2, -4, S), GPUOPS_ERR_INVALID_ARGUMENT},
      {"rows x cols overflows", gpuops_reduce_rows_f32(out, cx, INT64_MAX / 2, 3, S, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"rows: a tree version", gpuops_reduce_rows_f32(out, cx, 2, 4, S, GPUOPS_ALGO_INTERLEAVED, 0), GPUOPS_ERR_UNSUPPORTED},
      {"rows: op out of range", gpuops_reduce_rows_f32(out, cx, 2, 4, (gpuops_reduce_op)5, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"rows: NULL output", gpuops_reduce_rows_f32(nullptr, cx, 2, 4, S, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"rows: output overlaps the input", gpuops_reduce_rows_f32(x + 1, cx, 2, 4, S, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"rows: 0 rows with NULL pointers", gpuops_reduce_rows_f32(nullptr, nullptr, 0, 4, S, A, 0), GPUOPS_OK},
      {"cpu rows: misaligned input", gpuops_cpu_reduce_rows_f32(out, (const float *)((const char *)cx + 2), 1, 4, S), GPUOPS_ERR_MISALIGNED},
      {"histogram bins 0", gpuops_histogram_i32(counts, ix, 8, 0, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu histogram bins -3", gpuops_cpu_histogram_i32(counts, ix, 8, -3), GPUOPS_ERR_INVALID_ARGUMENT},
      {"histogram negative n", gpuops_histogram_i32(counts, ix, -8, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"histogram NULL counts", gpuops_histogram_i32(nullptr, ix, 8, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"histogram NULL counts, n == 0", gpuops_histogram_i32(nullptr, nullptr, 0, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"histogram NULL input", gpuops_histogram_i32(counts, nullptr, 8, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"histogram a reduction version", gpuops_histogram_i32(counts, ix, 8, 4, GPUOPS_ALGO_WARP_REDUCE, 0), GPUOPS_ERR_UNSUPPORTED},
      {"histogram algorithm out of range", gpuops_histogram_i32(counts, ix, 8, 4, (gpuops_algo)-2, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"histogram misaligned counts", gpuops_histogram_i32((int64_t *)((char *)counts + 4), ix, 8, 4, A, 0), GPUOPS_ERR_MISALIGNED},
      {"histogram misaligned input", gpuops_histogram_i32(counts, (const int32_t *)((const char *)ix + 2), 4, 4, A, 0), GPUOPS_ERR_MISALIGNED},
      {"histogram counts overlap the input", gpuops_histogram_i32((int64_t *)ix, ix, 8, 2, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu histogram counts overlap the input", gpuops_cpu_histogram_i32((int64_t *)(ix + 2), ix, 8, 2), GPUOPS_ERR_INVALID_ARGUMENT},
      {"shared-atomic histogram past 65535 bin ranges", gpuops_histogram_i32(counts, ix, 0, INT32_MAX, GPUOPS_ALGO_SHARED_ATOMIC, 0), GPUOPS_ERR_UNSUPPORTED},
  };
  for (const expect &c : cases)
    th_case(c.got == c.want && untouched(), (string("argument check: ") + c.name).c_str(), "returned '%s', wanted '%s'%s",
            gpuops_status_string(c.got), gpuops_status_string(c.want), untouched() ? "" : ", and an output was written");

  // Workspace sizes: partials of the fast pass (<= 2048), or one per tree block (+ a fast pass).
  const size_t w0 = gpuops_reduce_workspace_size(0, A), w1 = gpuops_reduce_workspace_size(1, A),
               w28 = gpuops_reduce_workspace_size((int64_t)1 << 28, GPUOPS_ALGO_WARP_REDUCE),
               wi = gpuops_reduce_workspace_size(1000, GPUOPS_ALGO_INTERLEAVED), wf = gpuops_reduce_workspace_size(1025, GPUOPS_ALGO_FIRST_ADD),
               wbig = gpuops_reduce_workspace_size((int64_t)1 << 28, GPUOPS_ALGO_SEQUENTIAL),
               wnone = gpuops_reduce_workspace_size(1000, GPUOPS_ALGO_NAIVE), wneg = gpuops_reduce_workspace_size(-4, A);
  th_case(w0 == 0 && w1 == 4 && w28 == 2048 * 4 && wi == 4 * 4 && wf == 3 * 4 && wbig == ((1 << 20) + 256) * 4 && wnone == 0 && wneg == 0,
          "reduce workspace sizes", "%zu %zu %zu %zu %zu %zu %zu %zu", w0, w1, w28, wi, wf, wbig, wnone, wneg);
}

// ---- GPU ---------------------------------------------------------------------------------------

// Device buffers reused by every case: x with room for an offset, out, workspace.
struct gpu_buffers {
  void *x = nullptr, *ws = nullptr;
  float *out = nullptr;
  size_t x_bytes = 0, ws_bytes = 0;
  int64_t out_count = 0;
  void reserve(size_t xb, size_t wb, int64_t outs) {
    if (xb > x_bytes) {
      cudaFree(x);
      CHECK_CUDA(cudaMalloc(&x, xb));
      x_bytes = xb;
    }
    if (wb > ws_bytes) {
      cudaFree(ws);
      CHECK_CUDA(cudaMalloc(&ws, wb));
      ws_bytes = wb;
    }
    if (outs > out_count) {
      cudaFree(out);
      CHECK_CUDA(cudaMalloc(&out, outs * sizeof(float)));
      out_count = outs;
    }
  }
  ~gpu_buffers() {
    cudaFree(x);
    cudaFree(ws);
    cudaFree(out);
  }
};
static gpu_buffers g_buf;

// One vector case on the GPU: returns "" or why it failed. Runs twice and compares the bits.
template <class T>
static string run_vector(const vector<T> &hx, int64_t offset, gpuops_reduce_op op, gpuops_algo algo, float want, double asum) {
  const int64_t n = (int64_t)hx.size();
  const size_t wb = gpuops_reduce_workspace_size(n, algo);
  g_buf.reserve((n + offset) * sizeof(T) + 16, wb + 16, 1);
  T *x = (T *)g_buf.x + offset;
  if (n) CHECK_CUDA(cudaMemcpy(x, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  float got[2];
  for (int k = 0; k < 2; ++k) {
    check::poison(g_buf.out, sizeof(float));
    const gpuops_status st = api<T>::gpu(g_buf.out, x, n, op, n ? g_buf.ws : nullptr, wb, algo);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (st != GPUOPS_OK) return string("status ") + gpuops_status_string(st);
    CHECK_CUDA(cudaMemcpy(&got[k], g_buf.out, sizeof(float), cudaMemcpyDeviceToHost));
  }
  char buf[200];
  if (!same_bits(got[0], got[1])) {
    snprintf(buf, sizeof buf, "not deterministic: %.9g then %.9g", got[0], got[1]);
    return buf;
  }
  if (!result_ok(op, got[0], want, asum)) {
    snprintf(buf, sizeof buf, "got %.9g, want %.9g (sum |x| %g)", got[0], want, asum);
    return buf;
  }
  return "";
}

template <class T> static void test_gpu_vector(rng &r) {
  vector<int64_t> sizes = {1, 2, 3, 5, 7, 8, 9, 31, 255, 256, 257, 511, 512, 513, 1000, 4095, 4096, 4097, 65537, 300007};
  if (!quick()) sizes.push_back((1 << 20) + 3), sizes.push_back(3000001);  // > 2048 tree partials: the extra pass
  for (gpuops_reduce_op op : kOps)
    for (gpuops_algo algo : kVectorAlgos) {
      string why;
      int64_t worst_n = 0;
      for (int64_t n : sizes) {
        vector<T> hx(n);
        check::fill_uniform(hx, r, -4.0, 4.0);
        float want = 0;
        CHECK_OK(api<T>::cpu(&want, hx.data(), n, op));
        const double asum = abs_sum(hx.data(), n);
        for (int64_t offset : {0, 1, 3}) {
          why = run_vector(hx, offset, op, algo, want, asum);
          if (!why.empty()) {
            worst_n = n, why += ", offset " + std::to_string(offset);
            break;
          }
        }
        if (!why.empty()) break;
      }
      const string name = string("gpu ") + op_name(op) + " " + check::dtype_name<T>() + " " + gpuops_algo_name(algo);
      th_case(why.empty(), name.c_str(), "n = %lld: %s", (long long)worst_n, why.c_str());
    }
}

// n == 0 writes the identity; NaN, infinities and large magnitudes, at every position class.
template <class T> static void test_gpu_special(rng &r) {
  string why;
  for (gpuops_algo algo : kVectorAlgos)
    for (gpuops_reduce_op op : kOps) {
      const float id = op == GPUOPS_REDUCE_SUM ? 0.0f : op == GPUOPS_REDUCE_MAX ? -INFINITY : INFINITY;
      string w = run_vector(vector<T>(), 0, op, algo, id, 0.0);
      if (!w.empty() && why.empty()) why = string("n == 0 ") + op_name(op) + " " + gpuops_algo_name(algo) + ": " + w;
      for (int64_t n : {1, 13, 4099, 70001}) {
        for (int kind = 0; kind < 5; ++kind) {
          vector<T> hx(n);
          check::fill_uniform(hx, r, -1.0, 1.0);
          const int64_t at = r.below(n), at2 = r.below(n);
          const float big = std::is_same<T, gpuops_f16>::value ? 60000.0f : 3e38f;  // near each type's largest
          switch (kind) {
          case 0: hx[at] = check::from_float<T>(NAN); break;
          case 1: hx[at] = check::from_float<T>(INFINITY); break;
          case 2: hx[at] = check::from_float<T>(-INFINITY); break;
          case 3: hx[at] = check::from_float<T>(INFINITY), hx[at2] = check::from_float<T>(-INFINITY); break;  // sum NaN unless at == at2
          case 4:  // large magnitudes: max and min find them; the sum stays finite in f32
            if (op == GPUOPS_REDUCE_SUM) hx[at] = check::from_float<T>(big / 4), hx[at2] = check::from_float<T>(-big / 8);
            else hx[at] = check::from_float<T>(big), hx[at2] = check::from_float<T>(-big);
            break;
          }
          float want = 0;
          CHECK_OK(api<T>::cpu(&want, hx.data(), n, op));
          w = run_vector(hx, 1, op, algo, want, abs_sum(hx.data(), n));
          if (!w.empty() && why.empty())
            why = string(op_name(op)) + " " + gpuops_algo_name(algo) + " n " + std::to_string(n) + " kind " + std::to_string(kind) + ": " + w;
        }
      }
    }
  th_case(why.empty(), (string("gpu special values and n == 0, ") + check::dtype_name<T>()).c_str(), "%s", why.c_str());
}

template <class T> static void test_gpu_rows(rng &r) {
  struct shape {
    int64_t rows, cols;
  };
  vector<shape> shapes = {{1, 1}, {5, 1}, {1000, 1}, {3, 7}, {17, 33}, {9, 100}, {64, 2048}, {9, 2049}, {4, 10000}, {1000, 3}, {2, 0}, {33, 8}};
  if (!quick()) shapes.push_back({3000, 513}), shapes.push_back({12, 100003});
  // A few long rows (AUTO on compute capability 9.0+: split rows, a cluster of 2 to 16 blocks per
  // row; 12 x 100003 above: 12, past the portable 8): odd lengths and slices, 1 row, rows past the
  // resident clusters (256 x 65536: 256 clusters of 2).
  // Quick (for compute-sanitizer, whose racecheck takes minutes over the 2^20 columns): 3 x 100003.
  shapes.push_back({5, 20000}), shapes.push_back({3, quick() ? 100003 : (1 << 20) + 1});
  if (!quick()) shapes.push_back({1, 5000001}), shapes.push_back({16, (1 << 20) + 3}), shapes.push_back({256, 65536}), shapes.push_back({100, 65537});
  // Short rows (AUTO: a group of 1 to 16 lanes, 32 / TPR rows per warp): every group's edges in
  // both vector widths, with row counts that leave a warp's or a block's last rows dead.
  const vector<int64_t> short_cols = quick() ? vector<int64_t>{2, 5, 16, 17, 65, 129}
                                             : vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
  for (int64_t c : short_cols)
    for (int64_t rows : quick() ? vector<int64_t>{7, 33} : vector<int64_t>{1, 2, 7, 33, 1000}) shapes.push_back({rows, c});
  // More rows than one sweep of the grid holds (8448 blocks of 256 / TPR rows on an H100), so the
  // groups' row loops run twice or more: TPR = 1 (1 and 3 columns), 16 / 8 (33), 16 (100, bf16).
  if (!quick())
    for (shape sh : vector<shape>{{2500003, 1}, {2500003, 3}, {300007, 33}, {150001, 100}, {100003, 17}}) shapes.push_back(sh);
  for (gpuops_reduce_op op : kOps)
    for (gpuops_algo algo : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_WARP_REDUCE}) {
      string why;
      for (const shape &s : shapes) {
        const int64_t n = s.rows * s.cols;
        vector<T> hx(n);
        check::fill_uniform(hx, r, -4.0, 4.0);
        if (n > 2) hx[r.below(n)] = check::from_float<T>(op == GPUOPS_REDUCE_MIN ? -INFINITY : NAN);
        vector<float> want(s.rows), got(s.rows), again(s.rows);
        CHECK_OK(api<T>::cpu_rows(want.data(), hx.data(), s.rows, s.cols, op));
        for (int64_t offset : {0, 1}) {
          g_buf.reserve((n + offset) * sizeof(T) + 16, 16, s.rows);
          T *x = (T *)g_buf.x + offset;
          if (n) CHECK_CUDA(cudaMemcpy(x, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
          gpuops_status st = GPUOPS_OK;
          for (int k = 0; k < 2 && st == GPUOPS_OK; ++k) {
            check::poison(g_buf.out, s.rows * sizeof(float));
            st = api<T>::gpu_rows(g_buf.out, x, s.rows, s.cols, op, algo);
            CHECK_CUDA(cudaDeviceSynchronize());
            CHECK_CUDA(cudaMemcpy(k ? again.data() : got.data(), g_buf.out, s.rows * sizeof(float), cudaMemcpyDeviceToHost));
          }
          char buf[200] = "";
          if (st != GPUOPS_OK) snprintf(buf, sizeof buf, "status %s", gpuops_status_string(st));
          else if (memcmp(got.data(), again.data(), s.rows * sizeof(float)) != 0) snprintf(buf, sizeof buf, "not deterministic");
          for (int64_t i = 0; i < s.rows && !buf[0]; ++i)
            if (!result_ok(op, got[i], want[i], abs_sum(hx.data() + i * s.cols, s.cols)))
              snprintf(buf, sizeof buf, "row %lld: got %.9g, want %.9g", (long long)i, got[i], want[i]);
          if (buf[0]) {
            why = string(buf) + " (" + std::to_string(s.rows) + " x " + std::to_string(s.cols) + ", offset " + std::to_string(offset) + ")";
            break;
          }
        }
        if (!why.empty()) break;
      }
      const string name = string("gpu rows ") + op_name(op) + " " + check::dtype_name<T>() + " " + gpuops_algo_name(algo);
      th_case(why.empty(), name.c_str(), "%s", why.c_str());
    }
}

// ---- histogram ----

// Data of one distribution: 0 uniform over [-3, bins + 3) (some out of range), 1 skewed (90% one
// value, the rest uniform), 2 sorted runs, 3 every value out of range.
static vector<int32_t> hist_data(int kind, int64_t n, int32_t bins, rng &r) {
  vector<int32_t> x(n);
  const int32_t hot = (int32_t)r.below(bins);
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
    case 0: x[i] = (int32_t)(r.below((int64_t)bins + 6) - 3); break;
    case 1: x[i] = r.below(10) ? hot : (int32_t)r.below(bins); break;
    case 2: x[i] = (int32_t)((i * (int64_t)bins) / (n > 0 ? n : 1)); break;
    default: x[i] = (r.next() & 1) ? (int32_t)(bins + r.below(1000)) : (int32_t)(-1 - r.below(1000)) | (int32_t)((r.next() & 1) << 31); break;
    }
  }
  return x;
}

static void test_gpu_histogram(rng &r) {
  const int32_t bin_list[] = {1, 7, 256, 1536, 1537, 12288, 12289, 65536, 100000};
  const char *kinds[] = {"uniform", "skewed", "sorted", "all out of range"};
  vector<int64_t> sizes = {1, 5, 4099, 1000003};
  if (quick()) sizes.pop_back(), sizes.push_back(100003);
  for (gpuops_algo algo : kHistAlgos) {
    string why;
    for (int32_t bins : bin_list)
      for (int kind = 0; kind < 4 && why.empty(); ++kind)
        for (int64_t n : sizes) {
          const vector<int32_t> hx = hist_data(kind, n, bins, r);
          vector<int64_t> want(bins), got(bins);
          CHECK_OK(gpuops_cpu_histogram_i32(want.data(), hx.data(), n, bins));
          const int64_t offset = r.below(4);
          g_buf.reserve((n + offset) * sizeof(int32_t) + 16, 16, 2 * (int64_t)bins);
          int32_t *x = (int32_t *)g_buf.x + offset;
          int64_t *counts = (int64_t *)g_buf.out;
          CHECK_CUDA(cudaMemcpy(x, hx.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice));
          check::poison(counts, bins * sizeof(int64_t));
          const gpuops_status st = gpuops_histogram_i32(counts, x, n, bins, algo, 0);
          CHECK_CUDA(cudaDeviceSynchronize());
          CHECK_CUDA(cudaMemcpy(got.data(), counts, bins * sizeof(int64_t), cudaMemcpyDeviceToHost));
          int64_t bad = -1;
          for (int32_t b = 0; b < bins && bad < 0; ++b)
            if (got[b] != want[b]) bad = b;
          if (st != GPUOPS_OK || bad >= 0) {
            char buf[240];
            if (st != GPUOPS_OK) snprintf(buf, sizeof buf, "status %s", gpuops_status_string(st));
            else snprintf(buf, sizeof buf, "bin %lld: %lld, want %lld", (long long)bad, (long long)got[bad], (long long)want[bad]);
            why = string(buf) + " (bins " + std::to_string(bins) + ", " + kinds[kind] + ", n " + std::to_string(n) + ", offset " +
                  std::to_string(offset) + ")";
            break;
          }
        }
    th_case(why.empty(), (string("gpu histogram ") + gpuops_algo_name(algo) + ", bins 1..100000, 4 distributions").c_str(), "%s", why.c_str());
  }
  // n == 0 zeroes counts.
  check::poison(g_buf.out, 16 * sizeof(int64_t));
  const gpuops_status st = gpuops_histogram_i32((int64_t *)g_buf.out, nullptr, 0, 16, GPUOPS_ALGO_AUTO, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  vector<int64_t> z(16, 9);
  CHECK_CUDA(cudaMemcpy(z.data(), g_buf.out, 16 * sizeof(int64_t), cudaMemcpyDeviceToHost));
  bool zero = st == GPUOPS_OK;
  for (int64_t c : z) zero = zero && c == 0;
  th_case(zero, "gpu histogram of nothing zeroes counts", "status %s", gpuops_status_string(st));
}

// ---- the caller's stream ----

// Spins about `cycles` clocks: work already queued on a stream when an op is called.
__global__ void spin_cycles(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// Every launch and the histogram's zeroing must go on the caller's stream. On a non-blocking
// stream (no implicit order with the default stream), a spin kernel, then the input data (copied
// from a staging buffer; x holds zeros before) and stale counts arrive late, then the op, then
// the result is copied back on the same stream; only that stream is synchronized. A kernel or the
// cudaMemsetAsync put on another stream would read zeros or be overwritten by the stale counts.
static void test_gpu_stream(rng &r) {
  cudaStream_t s = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const long long spin = 20000000;  // ~10 ms
  const int64_t n = (1 << 20) + 3, rows = 300, cols = 3000;  // SEQUENTIAL: > 2048 partials, an extra pass
  string why;
  auto fail = [&](const string &w) {
    if (why.empty()) why = w;
  };
  {  // vector and rows, f32
    vector<float> hx(n);
    check::fill_uniform(hx, r, -4.0, 4.0);
    float *stage = check::to_device(hx), *x = nullptr, *out = nullptr;
    const size_t wb = gpuops_reduce_workspace_size(n, GPUOPS_ALGO_SEQUENTIAL);
    void *ws = nullptr;
    CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&out, rows * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&ws, wb));
    for (gpuops_algo algo : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_SEQUENTIAL}) {
      float want = 0, got = 0;
      CHECK_OK(gpuops_cpu_reduce_f32(&want, hx.data(), n, GPUOPS_REDUCE_SUM));
      CHECK_CUDA(cudaMemset(x, 0, n * sizeof(float)));
      check::poison(out, sizeof(float));
      CHECK_CUDA(cudaDeviceSynchronize());
      spin_cycles<<<1, 1, 0, s>>>(spin);
      CHECK_CUDA(cudaMemcpyAsync(x, stage, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
      const gpuops_status st = gpuops_reduce_f32(out, x, n, GPUOPS_REDUCE_SUM, ws, wb, algo, s);
      CHECK_CUDA(cudaMemcpyAsync(&got, out, sizeof(float), cudaMemcpyDeviceToHost, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      if (st != GPUOPS_OK || !result_ok(GPUOPS_REDUCE_SUM, got, want, abs_sum(hx.data(), n)))
        fail(string("sum ") + gpuops_algo_name(algo) + ": status " + gpuops_status_string(st) + ", got " + std::to_string(got) + ", want " +
             std::to_string(want));
    }
    for (int64_t c : {(int64_t)cols, (int64_t)7}) {  // one block per row, one warp per row
      vector<float> want(rows), got(rows);
      CHECK_OK(gpuops_cpu_reduce_rows_f32(want.data(), hx.data(), rows, c, GPUOPS_REDUCE_MAX));
      CHECK_CUDA(cudaMemset(x, 0, n * sizeof(float)));
      check::poison(out, rows * sizeof(float));
      CHECK_CUDA(cudaDeviceSynchronize());
      spin_cycles<<<1, 1, 0, s>>>(spin);
      CHECK_CUDA(cudaMemcpyAsync(x, stage, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
      const gpuops_status st = gpuops_reduce_rows_f32(out, x, rows, c, GPUOPS_REDUCE_MAX, GPUOPS_ALGO_AUTO, s);
      CHECK_CUDA(cudaMemcpyAsync(got.data(), out, rows * sizeof(float), cudaMemcpyDeviceToHost, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      if (st != GPUOPS_OK || got != want) fail("rows max, cols " + std::to_string(c) + ": status " + gpuops_status_string(st) + " or values differ");
    }
    for (void *p : {(void *)stage, (void *)x, (void *)out, ws}) CHECK_CUDA(cudaFree(p));
  }
  {  // histogram: stale counts (0x5a bytes) arrive after the spin, before the op zeroes them
    const int32_t bins = 300;
    const vector<int32_t> hx = hist_data(1, n, bins, r);
    vector<int64_t> want(bins);
    CHECK_OK(gpuops_cpu_histogram_i32(want.data(), hx.data(), n, bins));
    int32_t *stage = check::to_device(hx), *x = nullptr;
    int64_t *counts = nullptr;
    CHECK_CUDA(cudaMalloc(&x, n * sizeof(int32_t)));
    CHECK_CUDA(cudaMalloc(&counts, bins * sizeof(int64_t)));
    for (gpuops_algo algo : kHistAlgos) {
      vector<int64_t> got(bins);
      CHECK_CUDA(cudaMemset(x, 0, n * sizeof(int32_t)));
      CHECK_CUDA(cudaMemset(counts, 0, bins * sizeof(int64_t)));
      CHECK_CUDA(cudaDeviceSynchronize());
      spin_cycles<<<1, 1, 0, s>>>(spin);
      CHECK_CUDA(cudaMemcpyAsync(x, stage, n * sizeof(int32_t), cudaMemcpyDeviceToDevice, s));
      CHECK_CUDA(cudaMemsetAsync(counts, 0x5a, bins * sizeof(int64_t), s));
      const gpuops_status st = gpuops_histogram_i32(counts, x, n, bins, algo, s);
      CHECK_CUDA(cudaMemcpyAsync(got.data(), counts, bins * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      if (st != GPUOPS_OK || got != want)
        fail(string("histogram ") + gpuops_algo_name(algo) + ": status " + gpuops_status_string(st) + ", bin 0 " + std::to_string(got[0]) +
             ", want " + std::to_string(want[0]));
    }
    CHECK_CUDA(cudaFree(stage));
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(counts));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaStreamDestroy(s));
  th_case(why.empty(), "gpu ops on a non-blocking stream: zeroing and every kernel on the caller's stream", "%s", why.c_str());
}

// ---- past 2^31 elements ----

// A 32-bit hash (murmur3's finalizer) of the index: the data, on both sides.
__host__ __device__ inline uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}
// +1 or -1 by the hash: every partial sum is an integer far below 2^24, so the f32 sums are exact.
__global__ void fill_signs_bf16(__nv_bfloat16 *x, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    x[i] = __float2bfloat16_rn((mix32((uint32_t)i) >> 31) ? 1.0f : -1.0f);
}
// Histogram data past 2^31: pattern 0 is i % 3 (bins 0 and 1 counted, 2 ignored; the value changes
// at every element, so no runs); pattern 1 is 0 except i % 4096 == 1 (value 1) and i % 4096 == 2
// (value -5, ignored): long runs, and bin 0 ends above 2^31.
__global__ void fill_hist_pattern(int32_t *x, int64_t n, int pattern) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    x[i] = pattern == 0 ? (int32_t)(i % 3) : (i & 4095) == 1 ? 1 : (i & 4095) == 2 ? -5 : 0;
}

static bool enough_memory(size_t bytes) {
  size_t free_b = 0, total_b = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
  return free_b >= bytes + (1u << 30);
}

static void test_gpu_past_2_31() {
  const char *name = "gpu sum, max, min of 2^31 + 1234 bf16 values, AUTO and SEQUENTIAL";
  const int64_t n = (1ll << 31) + 1234, at_max = n - 7, at_min = (1ll << 31) + 3;
  if (quick()) {
    th_skip(name, "GPUOPS_TEST_QUICK is set");
  } else if (!enough_memory(n * 2 + (n / 64) + 8)) {
    th_skip(name, "needs 5.5 GB of free device memory");
  } else {
    // The CPU reference in double, from the same hash, with the two planted extremes.
    double want_sum = 0.0;
    for (int64_t i = 0; i < n; ++i) want_sum += (mix32((uint32_t)i) >> 31) ? 1.0 : -1.0;
    want_sum += 5.0 - ((mix32((uint32_t)at_max) >> 31) ? 1.0 : -1.0);
    want_sum += -7.0 - ((mix32((uint32_t)at_min) >> 31) ? 1.0 : -1.0);
    __nv_bfloat16 *x = nullptr;
    void *ws = nullptr;
    float *out = nullptr;
    const size_t wb = gpuops_reduce_workspace_size(n, GPUOPS_ALGO_SEQUENTIAL);
    CHECK_CUDA(cudaMalloc(&x, n * 2));
    CHECK_CUDA(cudaMalloc(&ws, wb));
    CHECK_CUDA(cudaMalloc(&out, 4));
    fill_signs_bf16<<<4096, 256>>>(x, n);
    CHECK_CUDA(cudaGetLastError());
    const gpuops_bf16 five = gpuops_f32_to_bf16(5.0f), minus7 = gpuops_f32_to_bf16(-7.0f);
    CHECK_CUDA(cudaMemcpy(x + at_max, &five, 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(x + at_min, &minus7, 2, cudaMemcpyHostToDevice));
    string why;
    for (gpuops_algo algo : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_SEQUENTIAL})
      for (gpuops_reduce_op op : kOps) {
        check::poison(out, 4);
        const gpuops_status st = gpuops_reduce_bf16(out, (const gpuops_bf16 *)x, n, op, ws, wb, algo, 0);
        CHECK_CUDA(cudaDeviceSynchronize());
        float got = 0;
        CHECK_CUDA(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
        const double want = op == GPUOPS_REDUCE_SUM ? want_sum : op == GPUOPS_REDUCE_MAX ? 5.0 : -7.0;
        // |sum| is far below 2^24 and every partial is an integer: exact; and within 1e-5 sum |x|.
        if ((st != GPUOPS_OK || (double)got != want) && why.empty())
          why = string(gpuops_algo_name(algo)) + " " + op_name(op) + ": status " + gpuops_status_string(st) + ", got " +
                std::to_string(got) + ", want " + std::to_string(want);
      }
    cudaFree(x);
    cudaFree(ws);
    cudaFree(out);
    th_case(why.empty(), name, "%s", why.c_str());
  }

  const char *hname = "gpu histogram of 2^31 + 2^22 + 777 int32 values, one bin past 2^31 (AUTO, SHARED_ATOMIC, global runs)";
  const int64_t hn = (1ll << 31) + (1ll << 22) + 777;
  if (quick()) return th_skip(hname, "GPUOPS_TEST_QUICK is set");
  const int32_t max_bins = 100000;
  if (!enough_memory(hn * 4 + max_bins * 8)) return th_skip(hname, "needs 9.7 GB of free device memory");
  int32_t *hx = nullptr;
  int64_t *counts = nullptr;
  CHECK_CUDA(cudaMalloc(&hx, hn * 4));
  CHECK_CUDA(cudaMalloc(&counts, max_bins * sizeof(int64_t)));
  struct hcase {
    int pattern;
    int32_t bins;
    gpuops_algo algo;
  };
  // bins 100000 takes RUN_AGGREGATE past its shared ranges: runs added with 64-bit global atomics.
  const hcase hcases[] = {{0, 2, GPUOPS_ALGO_AUTO},      {0, 2, GPUOPS_ALGO_SHARED_ATOMIC},        {1, 2, GPUOPS_ALGO_AUTO},
                          {1, 2, GPUOPS_ALGO_SHARED_ATOMIC}, {1, max_bins, GPUOPS_ALGO_RUN_AGGREGATE}};
  string why;
  int filled = -1;
  for (const hcase &c : hcases) {
    if (c.pattern != filled) {
      fill_hist_pattern<<<4096, 256>>>(hx, hn, c.pattern);
      CHECK_CUDA(cudaGetLastError());
      filled = c.pattern;
    }
    vector<int64_t> want(c.bins, 0), got(c.bins, 0);
    if (c.pattern == 0) {
      want[0] = (hn + 2) / 3, want[1] = (hn + 1) / 3;  // value 2 is out of range
    } else {
      const int64_t ones = hn / 4096 + (hn % 4096 > 1), ignored = hn / 4096 + (hn % 4096 > 2);
      want[0] = hn - ones - ignored, want[1] = ones;  // want[0] = 2150628103 > 2^31
    }
    check::poison(counts, c.bins * sizeof(int64_t));
    const gpuops_status st = gpuops_histogram_i32(counts, hx, hn, c.bins, c.algo, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(got.data(), counts, c.bins * sizeof(int64_t), cudaMemcpyDeviceToHost));
    if ((st != GPUOPS_OK || got != want) && why.empty()) {
      int32_t bad = 0;
      while (bad + 1 < c.bins && got[bad] == want[bad]) ++bad;
      why = string(gpuops_algo_name(c.algo)) + " pattern " + std::to_string(c.pattern) + " bins " + std::to_string(c.bins) + ": status " +
            gpuops_status_string(st) + ", bin " + std::to_string(bad) + " = " + std::to_string(got[bad]) + ", want " + std::to_string(want[bad]);
    }
  }
  cudaFree(hx);
  cudaFree(counts);
  th_case(why.empty(), hname, "%s", why.c_str());
}

template <class T> static void test_gpu_type(rng &r) {
  test_gpu_vector<T>(r);
  test_gpu_special<T>(r);
  test_gpu_rows<T>(r);
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_reduce: seed %llu (GPUOPS_SEED=%llu replays it)%s\n", (unsigned long long)seed, (unsigned long long)seed,
         quick() ? ", quick" : "");
  rng r(seed);
  test_cpu_known_values();
  test_cpu_identities(r);
  test_arguments();
  if (!check::have_gpu()) {
    const char *why = "no CUDA device";
    for (const char *t : {"f32", "f16", "bf16"}) {
      for (gpuops_reduce_op op : kOps)
        for (gpuops_algo a : kVectorAlgos) th_skip((string("gpu ") + op_name(op) + " " + t + " " + gpuops_algo_name(a)).c_str(), why);
      th_skip((string("gpu special values and n == 0, ") + t).c_str(), why);
      for (gpuops_reduce_op op : kOps)
        for (gpuops_algo a : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_WARP_REDUCE})
          th_skip((string("gpu rows ") + op_name(op) + " " + t + " " + gpuops_algo_name(a)).c_str(), why);
    }
    for (gpuops_algo a : kHistAlgos) th_skip((string("gpu histogram ") + gpuops_algo_name(a)).c_str(), why);
    for (const char *g : {"gpu histogram of nothing", "gpu ops on a non-blocking stream", "gpu reductions past 2^31 elements", "gpu histogram past 2^31 elements"}) th_skip(g, why);
  } else {
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
    printf("device: %s (compute capability %d.%d)\n", p.name, p.major, p.minor);
    test_gpu_type<float>(r);
    test_gpu_type<gpuops_f16>(r);
    test_gpu_type<gpuops_bf16>(r);
    test_gpu_histogram(r);
    test_gpu_stream(r);
    test_gpu_past_2_31();
  }
  return th_summary();
}
