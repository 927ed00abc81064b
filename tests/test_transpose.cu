// SPDX-License-Identifier: MIT
// tests/test_transpose.cu - the transpose family (section 6 of gpuops.h and gpuops_cuda.cuh).
//   Everywhere: the CPU implementation against hand-written cases, against the defining formula on
//   random shapes, transposed twice (identity), bit for bit (NaN payloads, -0); the leading-dimension
//   forms leave the gaps between rows alone; argument checking of the CPU and GPU entry points (the
//   checks run before any CUDA call, so they need no device).
//   With a GPU: every version x storage type x shape against the CPU implementation, bit for bit,
//   outputs poisoned and guard zones checked; offset (misaligned-to-16-bytes) pointers and odd
//   pitches (VECTORIZED's any-pitch form); a few rows or columns (its interleave); leading
//   dimensions (VECTORIZED's element-wise edge path, also with more tiles than one wave of
//   blocks); AUTO's plain copy with a wide other pitch; rejected calls write nothing; tall
//   matrices (grid y capped at 65535);
//   16384 x 16384 f32; one case past 2^31 elements.
// GPUOPS_TEST_QUICK=1 drops the shapes past 2^20 elements and the 2^31 case (for compute-sanitizer).
// GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_TRANSPOSE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string.h>

#include <string>
#include <vector>

#include "check.h"
#include "harness.h"
#include "transpose_ops.h"

using check::guarded;
using check::quick;
using check::rng;
using std::string;
using std::vector;


// Random bits of any type: every pattern, NaNs with payloads included (a transpose is a copy).
template <class T> static vector<T> random_bits(int64_t n, rng &r) {
  vector<T> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t b = r.next();
    memcpy(&v[(size_t)i], &b, sizeof(T));
  }
  return v;
}

template <class T> static bool same_bits(const vector<T> &a, const vector<T> &b) {
  return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The defining formula, written out: y[c * ldy + r] = x[r * ldx + c]; the gaps keep y0's values.
template <class T>
static vector<T> reference(const vector<T> &x, vector<T> y0, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) memcpy(&y0[(size_t)(c * ldy + r)], &x[(size_t)(r * ldx + c)], sizeof(T));
  return y0;
}

static string shape_name(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// ---- CPU -------------------------------------------------------------------------------------

static void test_cpu_hand_cases() {
  const float x[6] = {1, 2, 3, 4, 5, 6};  // 2 x 3
  const float want[6] = {1, 4, 2, 5, 3, 6};
  float y[6];
  gpuops_status st = gpuops_cpu_transpose_f32(y, x, 2, 3);
  th_case(st == GPUOPS_OK && memcmp(y, want, sizeof y) == 0, "cpu transpose 2x3 by hand", "got %g %g %g %g %g %g", y[0], y[1], y[2], y[3],
          y[4], y[5]);

  // 2 x 3 stored with pitch 4 (x[3] and x[7] are gaps), into 3 x 2 with pitch 3 (y[2], y[5], y[8]).
  const float xl[8] = {1, 2, 3, -1, 4, 5, 6, -1};
  float yl[9];
  for (float &v : yl) v = 99;
  const float want_l[9] = {1, 4, 99, 2, 5, 99, 3, 6, 99};
  st = gpuops_cpu_transpose_ld_f32(yl, xl, 2, 3, 4, 3);
  th_case(st == GPUOPS_OK && memcmp(yl, want_l, sizeof yl) == 0, "cpu transpose_ld 2x3 (ldx 4, ldy 3) by hand; gaps untouched", "");

  // One row and one column are plain copies.
  const int8_t q[5] = {-1, 2, -3, 4, 127};
  int8_t qr[5], qc[5];
  st = gpuops_cpu_transpose_i8(qr, q, 1, 5);
  gpuops_status st2 = gpuops_cpu_transpose_i8(qc, q, 5, 1);
  th_case(st == GPUOPS_OK && st2 == GPUOPS_OK && memcmp(qr, q, 5) == 0 && memcmp(qc, q, 5) == 0, "cpu transpose 1x5 and 5x1 are copies", "");

  // Bits unchanged: NaN payloads, -0, subnormals, infinities.
  const uint32_t bits[4] = {0x7fc01234u, 0x80000000u, 0x00000001u, 0xff800000u};
  float fb[4], fy[4];
  memcpy(fb, bits, sizeof fb);
  st = gpuops_cpu_transpose_f32(fy, fb, 2, 2);
  const uint32_t want_b[4] = {bits[0], bits[2], bits[1], bits[3]};
  th_case(st == GPUOPS_OK && memcmp(fy, want_b, sizeof fy) == 0, "cpu transpose keeps every bit (NaN payload, -0, subnormal, -inf)", "");

  const int64_t big[4] = {INT64_MIN, -1, INT64_MAX, 42};
  int64_t by[4];
  st = gpuops_cpu_transpose_i64(by, big, 1, 4);
  th_case(st == GPUOPS_OK && memcmp(by, big, sizeof by) == 0, "cpu transpose i64 extremes", "");
}

// Random shapes: against the formula, and transposed twice = identity (both with and without
// leading dimensions).
template <class T> static void test_cpu_random(rng &r) {
  const string name = string("cpu transpose ") + trt::api<T>::name() + ": formula and twice = identity on random shapes";
  string why;
  const int64_t fixed[][2] = {{1, 1}, {1, 100}, {100, 1}, {31, 33}, {33, 31}, {32, 32}, {65, 129}, {200, 3}};
  for (int k = 0; k < 28 && why.empty(); ++k) {
    const int64_t rows = k < 8 ? fixed[k][0] : 1 + r.below(150), cols = k < 8 ? fixed[k][1] : 1 + r.below(150);
    const vector<T> x = random_bits<T>(rows * cols, r);
    vector<T> y = random_bits<T>(rows * cols, r), back = random_bits<T>(rows * cols, r);
    const gpuops_status s1 = trt::api<T>::cpu(y.data(), x.data(), rows, cols);
    const gpuops_status s2 = trt::api<T>::cpu(back.data(), y.data(), cols, rows);
    if (s1 != GPUOPS_OK || s2 != GPUOPS_OK) why = "status " + string(gpuops_status_string(s1 != GPUOPS_OK ? s1 : s2));
    else if (!same_bits(y, reference(x, y, rows, cols, cols, rows))) why = "differs from the formula";
    else if (!same_bits(back, x)) why = "transposed twice differs from x";
    // With leading dimensions: the gaps keep their values.
    const int64_t ldx = cols + r.below(5), ldy = rows + r.below(5);
    const vector<T> xl = random_bits<T>((rows - 1) * ldx + cols, r), yl0 = random_bits<T>((cols - 1) * ldy + rows, r);
    vector<T> yl = yl0;
    if (why.empty() && trt::api<T>::cpu_ld(yl.data(), xl.data(), rows, cols, ldx, ldy) != GPUOPS_OK) why = "ld form failed";
    else if (why.empty() && !same_bits(yl, reference(xl, yl0, rows, cols, ldx, ldy))) why = "ld form differs from the formula";
    if (!why.empty()) why += " (" + shape_name(rows, cols) + ")";
  }
  th_case(why.empty(), name.c_str(), "%s", why.c_str());
}

// ---- argument checking ------------------------------------------------------------------------
// Every failure returns its status and leaves the output untouched. The GPU entry points check on
// the host before any CUDA call, so these run without a device (the pointers are never touched).

static void test_arguments() {
  alignas(16) float buf[64];
  alignas(16) float out[64];
  for (int i = 0; i < 64; ++i) buf[i] = (float)i;
  memset(out, 0x5a, sizeof out);
  auto untouched = [&] {
    for (size_t i = 0; i < sizeof out; ++i)
      if (((const unsigned char *)out)[i] != 0x5a) return false;
    return true;
  };
  struct expect {
    const char *name;
    gpuops_status got, want;
  };
  const gpuops_algo A = GPUOPS_ALGO_AUTO;
  float *mis = (float *)((char *)out + 2);
  const expect cases[] = {
      {"NULL y", gpuops_transpose_f32(nullptr, buf, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"NULL x", gpuops_transpose_f32(out, nullptr, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu NULL x", gpuops_cpu_transpose_bf16((gpuops_bf16 *)out, nullptr, 4, 4), GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative rows", gpuops_transpose_f32(out, buf, -1, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative cols", gpuops_transpose_f16((gpuops_f16 *)out, (const gpuops_f16 *)buf, 4, -3, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu negative rows", gpuops_cpu_transpose_f32(out, buf, -2, 4), GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative size with NULL pointers", gpuops_transpose_f32(nullptr, nullptr, 0, -1, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"empty (0 rows) with NULL pointers", gpuops_transpose_f32(nullptr, nullptr, 0, 7, A, 0), GPUOPS_OK},
      {"empty (0 cols) with NULL pointers", gpuops_transpose_i64(nullptr, nullptr, 7, 0, GPUOPS_ALGO_VECTORIZED, 0), GPUOPS_OK},
      {"cpu empty with NULL pointers", gpuops_cpu_transpose_i8(nullptr, nullptr, 0, 0), GPUOPS_OK},
      {"ldx < cols", gpuops_transpose_ld_f32(out, buf, 4, 4, 3, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"ldy < rows", gpuops_transpose_ld_f32(out, buf, 4, 4, 4, 3, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu ldy < rows", gpuops_cpu_transpose_ld_f32(out, buf, 4, 4, 4, 2), GPUOPS_ERR_INVALID_ARGUMENT},
      {"negative ldx on an empty matrix", gpuops_transpose_ld_f32(out, buf, 3, 0, -1, 3, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"algorithm out of range (99)", gpuops_transpose_f32(out, buf, 4, 4, (gpuops_algo)99, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"algorithm out of range (-1)", gpuops_transpose_f32(out, buf, 4, 4, (gpuops_algo)-1, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"algorithm out of range on an empty matrix", gpuops_transpose_f32(out, buf, 0, 0, GPUOPS_ALGO_COUNT_, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"grid-stride is not a transpose version", gpuops_transpose_f32(out, buf, 4, 4, GPUOPS_ALGO_GRID_STRIDE, 0), GPUOPS_ERR_UNSUPPORTED},
      {"warp-tiled is not a transpose version", gpuops_transpose_bf16((gpuops_bf16 *)out, (const gpuops_bf16 *)buf, 4, 4, GPUOPS_ALGO_WARP_TILED, 0), GPUOPS_ERR_UNSUPPORTED},
      {"in place (y == x)", gpuops_transpose_f32(out, out, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu in place (y == x)", gpuops_cpu_transpose_f32(out, out, 4, 4), GPUOPS_ERR_INVALID_ARGUMENT},
      {"y overlaps the end of x", gpuops_transpose_f32(out + 15, out, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"x overlaps the end of y", gpuops_transpose_f32(out, out + 10, 4, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu y overlaps x", gpuops_cpu_transpose_i8((int8_t *)out + 3, (const int8_t *)out, 2, 2), GPUOPS_ERR_INVALID_ARGUMENT},
      {"ld form: spans overlap", gpuops_transpose_ld_f32(out + 30, out, 4, 4, 10, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"misaligned f32 y (2 bytes)", gpuops_transpose_f32(mis, buf, 4, 4, A, 0), GPUOPS_ERR_MISALIGNED},
      {"misaligned f32 x (2 bytes)", gpuops_transpose_f32(out, (const float *)((const char *)buf + 2), 4, 4, A, 0), GPUOPS_ERR_MISALIGNED},
      {"misaligned bf16 x (1 byte)", gpuops_transpose_bf16((gpuops_bf16 *)out, (const gpuops_bf16 *)((const char *)buf + 1), 2, 2, A, 0), GPUOPS_ERR_MISALIGNED},
      {"cpu misaligned i64 y (4 bytes)", gpuops_cpu_transpose_i64((int64_t *)((char *)out + 4), (const int64_t *)buf, 2, 2), GPUOPS_ERR_MISALIGNED},
      {"size overflow (2^40 x 2^40)", gpuops_transpose_f32(out, buf, 1ll << 40, 1ll << 40, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"span overflow (ldx 2^62)", gpuops_transpose_ld_f32(out, buf, 4, 4, 1ll << 62, 4, A, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"bytes overflow (2^61 i64 elements)", gpuops_cpu_transpose_i64((int64_t *)out, (const int64_t *)buf, 1, 1ll << 61), GPUOPS_ERR_INVALID_ARGUMENT},
  };
  for (const expect &c : cases)
    th_case(c.got == c.want && untouched(), (string("argument check: ") + c.name).c_str(), "returned '%s', wanted '%s'%s",
            gpuops_status_string(c.got), gpuops_status_string(c.want), untouched() ? "" : ", and the output was written");
  th_case(strcmp(gpuops_algo_name(GPUOPS_ALGO_SHARED_PADDED), "shared-padded") == 0, "version names", "%s",
          gpuops_algo_name(GPUOPS_ALGO_SHARED_PADDED));
}

// ---- GPU ------------------------------------------------------------------------------------

// A device allocation with guard zones: the data starts `guard + offset` elements in; everything
// else keeps the poison, which guards_hold() verifies.
// One shape of one type: x random, the CPU result as reference; each version and pair of element
// offsets runs on a poisoned output with guard zones. "" or why not.
template <class T>
static string run_shape(int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, const vector<gpuops_algo> &algos, bool offsets, rng &r,
                        int &count) {
  const int64_t nx = (rows - 1) * ldx + cols, ny = (cols - 1) * ldy + rows;
  const vector<T> x = random_bits<T>(nx, r);
  vector<T> poisoned(ny);
  memset(poisoned.data(), 0xFF, ny * sizeof(T));
  const bool ld = ldx != cols || ldy != rows;
  vector<T> want = poisoned;  // the gaps between rows keep the poison
  CHECK_OK(trt::api<T>::cpu_ld(want.data(), x.data(), rows, cols, ldx, ldy));
  struct off {
    int64_t y, x;
  };
  vector<off> offs = {{0, 0}};
  if (offsets) offs.insert(offs.end(), {{1, 0}, {0, 1}, {3, 5}, {16 / (int64_t)sizeof(T), 16 / (int64_t)sizeof(T)}});
  vector<T> got(ny);
  for (const off &o : offs)
    for (gpuops_algo algo : algos) {
      guarded gx(nx, o.x, sizeof(T)), gy(ny, o.y, sizeof(T));
      gx.upload(x.data());
      T *dy = (T *)gy.data();
      const T *dx = (const T *)gx.data();
      const gpuops_status st = ld ? trt::api<T>::gpu_ld(dy, dx, rows, cols, ldx, ldy, algo, 0) : trt::api<T>::gpu(dy, dx, rows, cols, algo, 0);
      CHECK_CUDA(cudaDeviceSynchronize());
      ++count;
      char where[160];
      snprintf(where, sizeof where, " (%s, %s, ld %lld/%lld, offsets y %lld x %lld)", shape_name(rows, cols).c_str(), gpuops_algo_name(algo),
               (long long)ldx, (long long)ldy, (long long)o.y, (long long)o.x);
      if (st != GPUOPS_OK) return string("status ") + gpuops_status_string(st) + where;
      if (!gy.guards_hold()) return string("wrote outside y") + where;
      gy.download(got.data());
      if (!same_bits(got, want)) {
        int64_t i = 0;
        while (memcmp(&got[i], &want[i], sizeof(T)) == 0) ++i;
        return "element " + std::to_string(i) + " differs (row " + std::to_string(i / ldy) + " of y)" + where;
      }
    }
  return "";
}

template <class T> static void test_gpu_type(rng &r) {
  const vector<gpuops_algo> all = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_SHARED_PADDED,
                                   GPUOPS_ALGO_VECTORIZED};
  const int64_t V = 16 / (int64_t)sizeof(T);
  const int64_t shapes[][2] = {{1, 1}, {1, 1000}, {1000, 1}, {31, 33}, {33, 31}, {32, 32}, {64, 64}, {65, 129}, {129, 65},
                               {3 * V, 5 * V}, {64 + V, 2 * V}, {4095, 4097}, {4096, 4096}, {1024, 64 * V + V},
                               // few rows or columns: VECTORIZED's interleave (several segments); past 16 only where a
                               // pitch is not whole pieces (17 x 4000, 33 x 4097, 63 x 2001; 48 x 3001 past 256 bytes in i64)
                               {3, 5000}, {5000, 3}, {16, 3001}, {3001, 16}, {8, 4097}, {17, 4000}, {3, 1000000},
                               {33, 4097}, {4097, 33}, {63, 2001}, {2001, 63}, {48, 3001}, {64, 1000}};
  string why;
  int count = 0;
  for (auto &s : shapes) {
    if (!why.empty()) break;
    const bool big = s[0] * s[1] > (1 << 20);
    if (big && quick()) continue;  // compute-sanitizer is slow on 4096^2
    why = run_shape<T>(s[0], s[1], s[1], s[0], all, !big, r, count);
  }
  th_case(why.empty(), (string("gpu transpose ") + trt::api<T>::name() + ": every version, shapes 1x1 .. 4096x4096, offset pointers").c_str(),
          "%s [%d runs]", why.c_str(), count);

  // Leading dimensions: multiples of the vector with sizes that are not (VECTORIZED's element-wise
  // edges), odd ones (AUTO falls back), and one row or column with a pitch (no plain copy).
  // Each row: rows, cols, then either pitches in whole vectors past the sizes rounded up to a
  // vector (mode 0) or pitches in elements past the sizes (mode 1).
  const int64_t lds[][5] = {{5, 7, 0, 1, 0},   {V + 1, 2 * V - 1, 0, 0, 1}, {130, 67, 0, 2, 1}, {1, 9, 0, 3, 0}, {9, 1, 0, 0, 3},
                            {33, 31, 1, 6, 8}, {1, 50, 1, 0, 2},           {50, 1, 1, 1, 0},   {200, 300, 0, 1, 2},
                            // one row with ldy 1 / one column with ldx 1 but the other pitch wide: AUTO's plain copy
                            {1, 50, 1, 3, 0},  {50, 1, 1, 0, 4},
                            // VECTORIZED's edge chunks in a grid of more tiles than one resident wave (blocks loop)
                            {3001, 4001, 0, 1, 1}};
  why.clear();
  count = 0;
  for (auto &s : lds) {
    if (!why.empty()) break;
    const int64_t rows = s[0], cols = s[1];
    const int64_t ldx = s[2] ? cols + s[3] : ((cols + V - 1) / V + s[3]) * V, ldy = s[2] ? rows + s[4] : ((rows + V - 1) / V + s[4]) * V;
    const bool big = rows * cols > (1 << 20);
    if (big && quick()) continue;
    why = run_shape<T>(rows, cols, ldx, ldy, all, !big, r, count);
  }
  th_case(why.empty(), (string("gpu transpose_ld ") + trt::api<T>::name() + ": leading dimensions, every version").c_str(), "%s [%d runs]",
          why.c_str(), count);
}

// A failed check leaves device memory untouched.
static void test_gpu_rejected_calls_write_nothing() {
  guarded y(1024, 0, 4), x(1024, 1, 4);
  const float *dx = (const float *)x.data();  // 4 bytes past a 16-byte boundary
  float *dy = (float *)y.data();
  const gpuops_status s1 = gpuops_transpose_f32(dy, (const float *)((const char *)dx + 2), 32, 32, GPUOPS_ALGO_VECTORIZED, 0);
  const gpuops_status s2 = gpuops_transpose_f32(dy, (const float *)dy + 1, 16, 16, GPUOPS_ALGO_AUTO, 0);
  const gpuops_status s3 = gpuops_transpose_ld_f32(dy, dx, 32, 32, 31, 32, GPUOPS_ALGO_AUTO, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  th_case(s1 == GPUOPS_ERR_MISALIGNED && s2 == GPUOPS_ERR_INVALID_ARGUMENT && s3 == GPUOPS_ERR_INVALID_ARGUMENT && y.guards_hold(),
          "gpu: rejected calls write nothing", "statuses %d %d %d", s1, s2, s3);
}

// Tall and thin: more tile rows than a grid's y dimension holds (65535), so NAIVE (8 rows a block)
// and SHARED_* (32 rows a block) loop over the rows with a capped grid; the i8 shape also runs
// VECTORIZED (32813 tiles, one column of them).
static void test_gpu_tall(rng &r) {
  const char *name = "gpu transpose tall (f32 2100003 x 3, i8 2100000 x 16): grid y past 65535, every version";
  if (quick()) return th_skip(name, "GPUOPS_TEST_QUICK is set");
  const vector<gpuops_algo> all = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_SHARED_PADDED,
                                   GPUOPS_ALGO_VECTORIZED};
  int count = 0;
  string why = run_shape<float>(2100003, 3, 3, 2100003, all, false, r, count);
  if (why.empty()) why = run_shape<int8_t>(2100000, 16, 16, 2100000, all, false, r, count);
  th_case(why.empty(), name, "%s [%d runs]", why.c_str(), count);
}

// 16384 x 16384 f32 (1 GiB each side), AUTO and VECTORIZED, compared on the host.
static void test_gpu_16384(rng &r) {
  const char *name = "gpu transpose f32 16384 x 16384, auto and vectorized";
  if (quick()) return th_skip(name, "GPUOPS_TEST_QUICK is set");
  const int64_t n = 16384;
  const vector<float> x = random_bits<float>(n * n, r);
  vector<float> want(n * n), got(n * n);
  CHECK_OK(gpuops_cpu_transpose_f32(want.data(), x.data(), n, n));
  float *dx = check::to_device(x), *dy = nullptr;
  CHECK_CUDA(cudaMalloc(&dy, n * n * sizeof(float)));
  string why;
  for (gpuops_algo algo : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_VECTORIZED}) {
    check::poison(dy, n * n * sizeof(float));
    const gpuops_status st = gpuops_transpose_f32(dy, dx, n, n, algo, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(got.data(), dy, n * n * sizeof(float), cudaMemcpyDeviceToHost));
    if (st != GPUOPS_OK || !same_bits(got, want)) {
      why = string(gpuops_algo_name(algo)) + ": status " + gpuops_status_string(st);
      break;
    }
  }
  cudaFree(dx);
  cudaFree(dy);
  th_case(why.empty(), name, "%s", why.c_str());
}

// Past 2^31 elements: 65536 x 32776 bf16 (2^31 + 2^19 elements, 4.3 GB each side), every version;
// and 65536 x 32771 (the pitch of x is not 16 bytes: AUTO runs SHARED_PADDED). Element (r, c)
// holds (r * 40503 mod 2^16) ^ h(c), h a hash of the column: two elements of one column always
// differ, so an index that wraps at 2^31 or 2^32 reads or writes a wrong one; checked by the
// formula (a CPU transpose of 4 GB would take longer than the rest of the test).
static uint16_t hash_col(int64_t c) {
  uint64_t z = ((uint64_t)c + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
  z ^= z >> 29;
  return (uint16_t)(z >> 17);
}

static void test_gpu_past_2_31() {
  const char *name = "gpu transpose bf16 past 2^31 elements (65536 x 32776 every version, 65536 x 32771 auto)";
  if (quick()) return th_skip(name, "GPUOPS_TEST_QUICK is set");
  const int64_t rows = 65536, cols_max = 32776;
  size_t free_b = 0, total_b = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < (size_t)(2 * rows * cols_max * 2 + (1ll << 30))) return th_skip(name, "needs 10 GB of free device memory");
  gpuops_bf16 *dx = nullptr, *dy = nullptr;
  CHECK_CUDA(cudaMalloc(&dx, rows * cols_max * 2));
  CHECK_CUDA(cudaMalloc(&dy, rows * cols_max * 2));
  vector<uint16_t> colv(cols_max), rowv(rows);
  for (int64_t c = 0; c < cols_max; ++c) colv[c] = hash_col(c);
  for (int64_t r = 0; r < rows; ++r) rowv[r] = (uint16_t)((uint32_t)r * 40503u);
  string why;
  struct run {
    int64_t cols;
    gpuops_algo algo;
  };
  const run runs[] = {{32776, GPUOPS_ALGO_AUTO},          {32776, GPUOPS_ALGO_NAIVE},         {32776, GPUOPS_ALGO_SHARED_TILED},
                      {32776, GPUOPS_ALGO_SHARED_PADDED}, {32776, GPUOPS_ALGO_VECTORIZED},    {32771, GPUOPS_ALGO_AUTO}};
  int64_t uploaded = 0;
  vector<uint16_t> h, got;
  for (const run &u : runs) {
    const int64_t cols = u.cols, n = rows * cols;
    if (uploaded != cols) {
      h.resize(n);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) h[r * cols + c] = rowv[r] ^ colv[c];
      CHECK_CUDA(cudaMemcpy(dx, h.data(), n * 2, cudaMemcpyHostToDevice));
      uploaded = cols;
    }
    check::poison(dy, n * 2);
    const gpuops_status st = gpuops_transpose_bf16(dy, dx, rows, cols, u.algo, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    got.resize(n);
    CHECK_CUDA(cudaMemcpy(got.data(), dy, n * 2, cudaMemcpyDeviceToHost));
    int64_t bad = 0, first = -1;
    for (int64_t c = 0; c < cols; ++c) {
      const uint16_t *yrow = got.data() + c * rows, cv = colv[c];
      int64_t bad_here = 0;
      for (int64_t r = 0; r < rows; ++r) bad_here += yrow[r] != (uint16_t)(rowv[r] ^ cv);
      if (bad_here && first < 0)
        for (int64_t r = 0; r < rows && first < 0; ++r)
          if (yrow[r] != (uint16_t)(rowv[r] ^ cv)) first = c * rows + r;
      bad += bad_here;
    }
    if (st != GPUOPS_OK || bad) {
      why = shape_name(rows, cols) + " " + gpuops_algo_name(u.algo) + ": status " + gpuops_status_string(st) + ", " + std::to_string(bad) +
            " wrong, first at " + std::to_string(first);
      break;
    }
  }
  cudaFree(dx);
  cudaFree(dy);
  th_case(why.empty(), name, "%s", why.c_str());
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_transpose: seed %llu (GPUOPS_SEED=%llu replays it)%s\n", (unsigned long long)seed, (unsigned long long)seed,
         quick() ? ", quick" : "");
  rng r(seed);
  test_cpu_hand_cases();
  test_cpu_random<float>(r);
  test_cpu_random<gpuops_f16>(r);
  test_cpu_random<gpuops_bf16>(r);
  test_cpu_random<int8_t>(r);
  test_cpu_random<int64_t>(r);
  test_arguments();
  if (!check::have_gpu()) {
    const char *why = "no CUDA device";
    for (const char *t : {"f32", "f16", "bf16", "i8", "i64"}) {
      th_skip((string("gpu transpose ") + t + ": every version, shapes, offset pointers").c_str(), why);
      th_skip((string("gpu transpose_ld ") + t + ": leading dimensions").c_str(), why);
    }
    for (const char *g : {"gpu rejected calls write nothing", "gpu transpose tall: grid y past 65535", "gpu transpose f32 16384 x 16384",
                          "gpu transpose past 2^31 elements"})
      th_skip(g, why);
  } else {
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
    printf("device: %s (compute capability %d.%d)\n", p.name, p.major, p.minor);
    test_gpu_type<float>(r);
    test_gpu_type<gpuops_f16>(r);
    test_gpu_type<gpuops_bf16>(r);
    test_gpu_type<int8_t>(r);
    test_gpu_type<int64_t>(r);
    test_gpu_rejected_calls_write_nothing();
    test_gpu_tall(r);
    test_gpu_16384(r);
    test_gpu_past_2_31();
  }
  return th_summary();
}
