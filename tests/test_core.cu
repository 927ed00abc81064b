// SPDX-License-Identifier: MIT
// tests/test_core.cu - the core tier's device helpers: welford (push, merge, warp_combine,
// block_combine, variance), the tensor-core blocks (ldmatrix_x4, _x2, _x4_trans, _x2_trans,
// mma_m16n8k16_f16 and _bf16) and swizzle_chunk.
//   Everywhere: swizzle_chunk permutes the 8 chunks of every row, and one chunk of any 8 consecutive
//   rows covers all 32 banks once; the test kernel's ldmatrix addresses, run through a host model of
//   ldmatrix (PTX ISA), hand every lane exactly the elements the mma fragment layout says it holds;
//   the large-mean row defeats the naive E[x^2] - E[x]^2 in f32 (so the row tells Welford from it).
//   With a GPU: per-block mean and variance of rows (lengths 1, 31, 32, 33, 1000, 4097, a constant
//   row, mean 1e4 with stddev 1 and with stddev 1e-3) with 32, 256 and 1024 threads, plain and
//   shifted, against a double two-pass computation, outputs poisoned; every thread the same bits; a
//   second block_combine on the same scratch; the same bits on a second run. With compute capability
//   8.0 or more: one warp's products from shared memory, f16 and bf16: 16x8x16 through ldmatrix_x4 +
//   ldmatrix_x2, 16x16x16 through ldmatrix_x4_trans, 16x8x16 through ldmatrix_x2_trans, and 16x8x64
//   from swizzled tiles, element by element against a double product.
// GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_REDUCE  // the smallest family: this test calls no op, only device helpers
#include "gpuops_cuda.cuh"

#include <string.h>

#include <string>
#include <type_traits>
#include <vector>

#include "check.h"
#include "harness.h"

using check::rng;
using std::string;
using std::vector;

static bool same_bits(float a, float b) { return memcmp(&a, &b, 4) == 0; }

// ==== Swizzle (host) =========================================================================

static void test_swizzle() {
  bool perm = true, banks = true;
  for (int row = 0; row < 4096; ++row) {
    unsigned seen = 0;
    for (int c = 0; c < 8; ++c) {
      const int p = gpuops::swizzle_chunk(row, c);
      if (p < 0 || p > 7) perm = false;
      else seen |= 1u << p;
    }
    perm = perm && seen == 0xffu;
  }
  th_case(perm, "swizzle_chunk permutes the 8 chunks of every row (rows 0-4095)", "not a permutation");
  // One 8x8 matrix of an ldmatrix: chunk c of rows r0..r0+7 of a tile of 128-byte rows. Each 16-byte
  // row covers 4 banks of 4 bytes; the 8 rows together must cover all 32 banks once.
  for (int r0 = 0; r0 < 64; ++r0)
    for (int c = 0; c < 8; ++c) {
      unsigned hit = 0;
      int hits = 0;
      for (int j = 0; j < 8; ++j) {
        const int row = r0 + j, byte = row * 128 + gpuops::swizzle_chunk(row, c) * 16;
        for (int w = 0; w < 4; ++w) hit |= 1u << ((byte / 4 + w) % 32), ++hits;
      }
      banks = banks && hit == 0xffffffffu && hits == 32;
    }
  th_case(banks, "swizzle_chunk: one chunk of any 8 consecutive rows covers the 32 banks once", "bank conflict");
}

// ==== Tensor cores ===========================================================================
// Shared tiles of 16-bit words. Word (row, col) of a tile of `ld` words per row, 8 words (16 bytes)
// to a chunk, chunks swizzled when swz (rows of 8 chunks only).
__host__ __device__ inline int tile_word(int row, int col, int ld, bool swz) {
  const int c = col / 8;
  return row * ld + (swz ? gpuops::swizzle_chunk(row, c) : c) * 8 + col % 8;
}
// The row each lane hands to ldmatrix (gpuops_cuda.cuh section 1.4), as a word offset into the tile.
// A (16 x K, row-major), k-step s: ldmatrix_x4, lane l at row l % 16, columns 16 s + 8 (l / 16).
__host__ __device__ inline int a_addr(int lane, int s, int ld, bool swz) { return tile_word(lane % 16, 16 * s + 8 * (lane / 16), ld, swz); }
// Bt (B stored n-major: 8 rows n of K), k-step s: ldmatrix_x2, lane l at n row l % 8, k columns
// 16 s + 8 ((l / 8) % 2) (lanes 16-31 repeat lanes 0-15; ldmatrix ignores them).
__host__ __device__ inline int bt_addr(int lane, int s, int ld, bool swz) { return tile_word(lane % 8, 16 * s + 8 * ((lane / 8) % 2), ld, swz); }
// B stored k-major, 16 x 16: ldmatrix_x4_trans, matrix i = l / 8 at k rows 8 (i % 2).., n columns
// 8 (i / 2)..: r[0], r[1] are the B fragment of n-tile 0, r[2], r[3] of n-tile 1.
__host__ __device__ inline int b_trans4_addr(int lane) {
  const int i = lane / 8;
  return tile_word(8 * (i % 2) + lane % 8, 8 * (i / 2), 16, false);
}
// The same B, columns n0..n0+7 through ldmatrix_x2_trans: lane l at k row l % 16.
__host__ __device__ inline int b_trans2_addr(int lane, int n0) { return tile_word(lane % 16, n0, 16, false); }

template <class T> __device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  if constexpr (std::is_same<T, __half>::value) gpuops::mma_m16n8k16_f16(d, a, b, c);
  else gpuops::mma_m16n8k16_bf16(d, a, b, c);
}

// One warp. Global inputs: a 16 x K row-major; b as Bt[n][k] (n * K + k) in modes 0 and 2, as B[k][n]
// (k * 16 + n) in mode 1; c 16 x N f32 row-major. d 16 x N f32 row-major, d2 16 x 8.
//   mode 0: K = 16, N = 8: ldmatrix_x4 (A) + ldmatrix_x2 (Bt), one mma.
//   mode 1: K = 16, N = 16: ldmatrix_x4_trans gives both n-tiles' B fragments, two mmas into d; and
//           ldmatrix_x2_trans of columns 8-15, a third mma into d2 (= d's columns 8-15).
//   mode 2: K = 64, N = 8, A and Bt in swizzled tiles (rows of 128 bytes): 4 k-steps accumulated.
template <class T> __global__ void k_mma(int mode, const uint16_t *a, const uint16_t *b, const float *c, float *d, float *d2) {
  __shared__ __align__(16) uint16_t sa[16 * 64];
  __shared__ __align__(16) uint16_t sb[16 * 32];
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const int K = mode == 2 ? 64 : 16, N = mode == 1 ? 16 : 8;
  const bool swz = mode == 2;
  for (int i = lane; i < 16 * K; i += 32) sa[tile_word(i / K, i % K, K, swz)] = a[i];
  if (mode == 1)
    for (int i = lane; i < 16 * 16; i += 32) sb[tile_word(i / 16, i % 16, 16, false)] = b[i];
  else
    for (int i = lane; i < 8 * K; i += 32) sb[tile_word(i / K, i % K, K, swz)] = b[i];
  __syncthreads();

  // C and D fragments: {[g][n0 + 2t], [g][n0 + 2t + 1], [g + 8][n0 + 2t], [g + 8][n0 + 2t + 1]}.
  auto load_c = [&](float(&acc)[4], int n0) {
    for (int e = 0; e < 4; ++e) acc[e] = c[(g + 8 * (e / 2)) * N + n0 + 2 * t + e % 2];
  };
  auto store = [&](float *out, int ldo, int n0, const float(&acc)[4]) {
    for (int e = 0; e < 4; ++e) out[(g + 8 * (e / 2)) * ldo + n0 + 2 * t + e % 2] = acc[e];
  };
  if (mode == 1) {
    uint32_t fa[4], fb[4], fb2[2];
    float acc0[4], acc1[4], acc2[4];
    gpuops::ldmatrix_x4(fa, sa + a_addr(lane, 0, 16, false));
    gpuops::ldmatrix_x4_trans(fb, sb + b_trans4_addr(lane));
    gpuops::ldmatrix_x2_trans(fb2, sb + b_trans2_addr(lane, 8));
    load_c(acc0, 0);
    load_c(acc1, 8);
    load_c(acc2, 8);
    const uint32_t b0[2] = {fb[0], fb[1]}, b1[2] = {fb[2], fb[3]};
    mma16816<T>(acc0, fa, b0, acc0);
    mma16816<T>(acc1, fa, b1, acc1);
    mma16816<T>(acc2, fa, fb2, acc2);
    store(d, 16, 0, acc0);
    store(d, 16, 8, acc1);
    store(d2, 8, 0, acc2);
  } else {
    float acc[4];
    load_c(acc, 0);
    for (int s = 0; s < K / 16; ++s) {
      uint32_t fa[4], fb[2];
      gpuops::ldmatrix_x4(fa, sa + a_addr(lane, s, K, swz));
      gpuops::ldmatrix_x2(fb, sb + bt_addr(lane, s, K, swz));
      mma16816<T>(acc, fa, fb, acc);
    }
    store(d, 8, 0, acc);
  }
}

// The PTX ISA's ldmatrix on the host: smem holds the tile's 16-bit words, addr[l] is lane l's row
// (a word offset); matrix i's row j is the 8 words at addr[8 i + j]. Lane l receives in r[l][i]
// matrix i's row l / 4, words 2 (l % 4) and 2 (l % 4) + 1; with trans, column l / 4 of rows 2 (l % 4)
// and 2 (l % 4) + 1. The first of the two in the low half.
static void model_ldmatrix(const uint16_t *smem, const int *addr, int count, bool trans, uint32_t (*r)[4]) {
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < count; ++i) {
      const int g = l / 4, t = l % 4;
      const uint16_t lo = trans ? smem[addr[8 * i + 2 * t] + g] : smem[addr[8 * i + g] + 2 * t];
      const uint16_t hi = trans ? smem[addr[8 * i + 2 * t + 1] + g] : smem[addr[8 * i + g] + 2 * t + 1];
      r[l][i] = lo | (uint32_t)hi << 16;
    }
}
static uint32_t pack(uint16_t lo, uint16_t hi) { return lo | (uint32_t)hi << 16; }

// The kernel's tiles and addresses through the ldmatrix model must give the mma fragments
// (gpuops_cuda.cuh section 1.4, from the PTX ISA): a[0] = A[g][k0+2t, +1], a[1] = A[g+8][k0+2t, +1],
// a[2] = A[g][k0+2t+8, +9], a[3] = A[g+8][k0+2t+8, +9]; b[0] = B[k0+2t, +1][n0+g], b[1] = B[k0+2t+8, +9][n0+g].
// Words are distinct ids (row * 64 + col + 1), so any misplaced element shows. Host only.
static void test_fragment_model() {
  for (int mode = 0; mode < 3; ++mode) {
    const int K = mode == 2 ? 64 : 16;
    const bool swz = mode == 2;
    auto A = [&](int m, int k) { return (uint16_t)(1 + m * 64 + k); };
    auto B = [&](int k, int n) { return (uint16_t)(2048 + k * 64 + n); };
    vector<uint16_t> sa(16 * 64, 0), sb(16 * 32, 0);
    for (int m = 0; m < 16; ++m)
      for (int k = 0; k < K; ++k) sa[tile_word(m, k, K, swz)] = A(m, k);
    if (mode == 1) {
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 16; ++n) sb[tile_word(k, n, 16, false)] = B(k, n);
    } else {
      for (int n = 0; n < 8; ++n)
        for (int k = 0; k < K; ++k) sb[tile_word(n, k, K, swz)] = B(k, n);
    }
    bool ok = true;
    int bad_lane = -1;
    auto expect_a = [&](const uint32_t (*ra)[4], int k0) {
      for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        const uint32_t want[4] = {pack(A(g, k0 + 2 * t), A(g, k0 + 2 * t + 1)), pack(A(g + 8, k0 + 2 * t), A(g + 8, k0 + 2 * t + 1)),
                                  pack(A(g, k0 + 2 * t + 8), A(g, k0 + 2 * t + 9)), pack(A(g + 8, k0 + 2 * t + 8), A(g + 8, k0 + 2 * t + 9))};
        for (int e = 0; e < 4; ++e)
          if (ra[l][e] != want[e]) ok = false, bad_lane = bad_lane < 0 ? l : bad_lane;
      }
    };
    auto expect_b = [&](const uint32_t (*rb)[4], int first, int k0, int n0) {
      for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        const uint32_t want[2] = {pack(B(k0 + 2 * t, n0 + g), B(k0 + 2 * t + 1, n0 + g)), pack(B(k0 + 2 * t + 8, n0 + g), B(k0 + 2 * t + 9, n0 + g))};
        for (int e = 0; e < 2; ++e)
          if (rb[l][first + e] != want[e]) ok = false, bad_lane = bad_lane < 0 ? l : bad_lane;
      }
    };
    int addr[32];
    uint32_t r[32][4];
    for (int s = 0; s < K / 16; ++s) {
      for (int l = 0; l < 32; ++l) addr[l] = a_addr(l, s, K, swz);
      model_ldmatrix(sa.data(), addr, 4, false, r);
      expect_a(r, 16 * s);
      if (mode == 1) {
        for (int l = 0; l < 32; ++l) addr[l] = b_trans4_addr(l);
        model_ldmatrix(sb.data(), addr, 4, true, r);
        expect_b(r, 0, 0, 0);
        expect_b(r, 2, 0, 8);
        for (int l = 0; l < 32; ++l) addr[l] = b_trans2_addr(l, 8);
        model_ldmatrix(sb.data(), addr, 2, true, r);
        expect_b(r, 0, 0, 8);
      } else {
        for (int l = 0; l < 32; ++l) addr[l] = bt_addr(l, s, K, swz);
        model_ldmatrix(sb.data(), addr, 2, false, r);
        expect_b(r, 0, 16 * s, 0);
      }
    }
    const char *names[3] = {"ldmatrix model: A by x4, Bt by x2 give the m16n8k16 fragments",
                            "ldmatrix model: B by x4_trans and x2_trans give the m16n8k16 fragments",
                            "ldmatrix model: swizzled A and Bt, 4 k-steps, give the m16n8k16 fragments"};
    th_case(ok, names[mode], "lane %d holds the wrong elements", bad_lane);
  }
}

static uint16_t round16(float v, float &back, __half) {
  const __half h = __float2half_rn(v);
  back = __half2float(h);
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}
static uint16_t round16(float v, float &back, __nv_bfloat16) {
  const __nv_bfloat16 h = __float2bfloat16_rn(v);
  back = __bfloat162float(h);
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}

static const char *kMmaCase[4] = {"16x8x16, ldmatrix_x4 + ldmatrix_x2", "16x16x16, ldmatrix_x4 + ldmatrix_x4_trans",
                                  "16x8x16, ldmatrix_x4 + ldmatrix_x2_trans", "16x8x64, swizzled tiles, 4 k-steps"};
static string mma_name(const char *type, int k) { return string("gpu mma_m16n8k16_") + type + " " + kMmaCase[k]; }

// Inputs uniform in [-1, 1] rounded to T, C uniform in [-1, 1]; the reference is the double product
// of the rounded inputs plus C. Tolerance 1e-3 absolute: the products are exact in f32 and the
// sums of at most 64 + 1 terms of size <= 1 round by at most 65 * 2^-24 ~ 4e-6 each step, under
// 3e-4 in all (twice that if the tensor cores truncate; an H100 showed 1.2e-6 at most); an element
// read from the wrong place is off by ~0.1-1.
template <class T> static void test_gpu_mma(rng &r, const char *type) {
  for (int mode = 0; mode < 3; ++mode) {
    const int K = mode == 2 ? 64 : 16, N = mode == 1 ? 16 : 8;
    vector<float> A(16 * K), B(K * N), C(16 * N), want(16 * N);
    vector<uint16_t> ha(16 * K), hb(K * N);
    for (int i = 0; i < 16 * K; ++i) ha[i] = round16((float)r.uniform(-1, 1), A[i], T());
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) {
        float back;
        const uint16_t u = round16((float)r.uniform(-1, 1), back, T());
        B[k * N + n] = back;
        hb[mode == 1 ? k * 16 + n : n * K + k] = u;  // mode 1: k-major; else n-major (Bt)
      }
    for (auto &v : C) v = (float)r.uniform(-1, 1);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < N; ++n) {
        double s = C[m * N + n];
        for (int k = 0; k < K; ++k) s += (double)A[m * K + k] * B[k * N + n];
        want[m * N + n] = (float)s;
      }
    uint16_t *da = check::to_device(ha), *db = check::to_device(hb);
    float *dc = check::to_device(C), *dd = nullptr, *dd2 = nullptr;
    CHECK_CUDA(cudaMalloc(&dd, 16 * N * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dd2, 16 * 8 * sizeof(float)));
    check::poison(dd, 16 * N * sizeof(float));
    check::poison(dd2, 16 * 8 * sizeof(float));
    k_mma<T><<<1, 32>>>(mode, da, db, dc, dd, dd2);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    const vector<float> got = check::to_host(dd, 16 * N), got2 = check::to_host(dd2, 16 * 8);
    const check::tolerance tol = {1e-3, 0.0};
    const check::result res = check::compare(got.data(), want.data(), 16 * N, tol);
    const int which = mode == 0 ? 0 : mode == 1 ? 1 : 3;
    th_case(res.ok(), mma_name(type, which).c_str(), "%lld wrong, first [%lld] (row %lld, col %lld) = %g, want %g; max |err| %g",
            (long long)res.bad, (long long)res.first_bad, (long long)(res.first_bad / N), (long long)(res.first_bad % N), res.got, res.want,
            res.max_abs);
    if (mode == 1) {
      vector<float> want2(16 * 8);
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n) want2[m * 8 + n] = want[m * 16 + 8 + n];
      const check::result res2 = check::compare(got2.data(), want2.data(), 16 * 8, tol);
      th_case(res2.ok(), mma_name(type, 2).c_str(), "%lld wrong, first [%lld] = %g, want %g", (long long)res2.bad, (long long)res2.first_bad,
              res2.got, res2.want);
    }
    cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd), cudaFree(dd2);
  }
}

// ==== Welford ================================================================================

// One block per row: each thread pushes x[i] for i = threadIdx.x, + blockDim.x, ... (less the row's
// first value when shifted), then block_combine; a second state, of 2 x - 2 shift, goes through the
// same scratch right after the first. stats[5 row ..] = {count, mean, variance, mean2, variance2}
// from thread 0; every thread writes its mean and variance to all_mean/all_var[row * blockDim.x + tid].
__global__ void k_welford_rows(const float *x, const int64_t *start, const int *len, int shifted, float *stats, float *all_mean, float *all_var) {
  __shared__ gpuops::welford scratch[32];
  const int row = blockIdx.x, n = len[row];
  const float *p = x + start[row];
  const float shift = shifted && n > 0 ? p[0] : 0.0f;
  gpuops::welford a{}, b{};
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    a.push(p[i] - shift);
    b.push(2.0f * p[i] - 2.0f * shift);
  }
  a = gpuops::block_combine(a, scratch);
  b = gpuops::block_combine(b, scratch);
  const float mean = a.mean + shift, var = a.variance();
  all_mean[(int64_t)row * blockDim.x + threadIdx.x] = mean;
  all_var[(int64_t)row * blockDim.x + threadIdx.x] = var;
  if (threadIdx.x == 0) {
    float *s = stats + 5 * (int64_t)row;
    s[0] = a.count, s[1] = mean, s[2] = var, s[3] = b.mean + 2.0f * shift, s[4] = b.variance();
  }
}

// Rows and their tolerances. Mean: |got - want| <= 2e-6 (stddev + |want|), about 16 roundings of
// the larger of the two (a host emulation of this kernel's order of pushes and merges in f32, 200
// seeds, 32, 256 and 1024 threads, plain and shifted: <= 2.6e-7; an H100: <= 1.4e-7).
// Variance, relative:
//   1e-4 for well-conditioned rows (|mean| / stddev ~ 2 or less, and every shifted row; emulation
//   <= 3e-7, H100 <= 1.4e-7). 1e-4 still catches the sample variance (/ (n - 1)) in place of the
//   population one at every length here (1 / 4096 = 2.4e-4).
//   plain_rtol 1e-3 for mean 1e4, stddev 1 (|mean| / stddev = 1e4; Welford's error ~ 1e4 * 6e-8
//   per push; emulation <= 2.7e-4, H100 <= 2e-5). The naive f32 E[x^2] - E[x]^2 is off by 300x and
//   more on this row (test_naive_fails shows it on the host): E[x^2] ~ 1e8, where f32's spacing is
//   8, against a variance of 1.
//   plain_rtol < 0: not checked plain. Mean 1e4, stddev 1e-3 (|mean| / stddev = 1e7) is past f32
//   Welford's reach without a shift (emulation up to 80% off, H100 2-28%: the f32 values themselves
//   lie 1 stddev apart); shifted it is well conditioned and must meet 1e-4 (emulation 1.7e-7, H100
//   1.4e-7).
// exact: one value or a constant row: the mean is that value and the variance 0, bit for bit.
struct stat_row {
  string name;
  vector<float> x;
  double plain_rtol;  // variance tolerance unshifted (< 0: unchecked); shifted rows use 1e-4
  bool exact;
};

static vector<stat_row> make_rows(rng &r) {
  vector<stat_row> rows;
  for (int n : {1, 31, 32, 33, 1000, 4097}) {
    stat_row s{"n=" + std::to_string(n), vector<float>(n), 1e-4, n == 1};
    check::fill_uniform(s.x, r, -1.0, 1.0);
    rows.push_back(s);
  }
  rows.push_back({"constant -3.7, n=1000", vector<float>(1000, -3.7f), 1e-4, true});
  const double sqrt3 = 1.7320508075688772;  // uniform on [-sqrt3 s, sqrt3 s] has stddev s
  stat_row big{"mean 1e4 stddev 1, n=4097", vector<float>(4097), 1e-3, false};
  for (auto &v : big.x) v = (float)(1e4 + r.uniform(-sqrt3, sqrt3));
  rows.push_back(big);
  stat_row tiny{"mean 1e4 stddev 1e-3, n=4097", vector<float>(4097), -1.0, false};
  for (auto &v : tiny.x) v = (float)(1e4 + r.uniform(-sqrt3 * 1e-3, sqrt3 * 1e-3));
  rows.push_back(tiny);
  return rows;
}

static void two_pass(const vector<float> &x, double &mean, double &var) {
  double s = 0.0, q = 0.0;
  for (float v : x) s += v;
  mean = s / (double)x.size();
  for (float v : x) q += ((double)v - mean) * ((double)v - mean);
  var = q / (double)x.size();
}

// The large-mean row against the naive formula in f32 (sums in row order): its relative error must
// exceed 1e-2, ten times the tolerance Welford meets on the same row. Host only.
static void test_naive_fails(const vector<stat_row> &rows) {
  for (const stat_row &s : rows) {
    if (s.name.rfind("mean 1e4 stddev 1,", 0) != 0) continue;
    float s1 = 0.0f, s2 = 0.0f;
    for (float v : s.x) s1 += v, s2 += v * v;
    const float n = (float)s.x.size(), naive = s2 / n - (s1 / n) * (s1 / n);
    double mean, var;
    two_pass(s.x, mean, var);
    const double rel = fabs((double)naive - var) / var;
    th_case(rel > 1e-2, "naive f32 E[x^2] - E[x]^2 fails the large-mean row (so Welford's test of it means something)",
            "naive %g, want %g: relative error %g", naive, var, rel);
  }
}

static string welford_name(int threads, bool shifted, const char *what) {
  return "gpu welford rows, " + std::to_string(threads) + " threads, " + (shifted ? "shifted: " : "plain: ") + what;
}
static const char *kWelfordWhat[4] = {"count, mean and variance (both calls) against double", "every thread the same bits",
                                      "second run the same bits", "constant and one-value rows exact"};

static bool mean_ok(float got, double want, double sd) { return fabs((double)got - want) <= 2e-6 * (sd + fabs(want)); }
static bool var_ok(float got, double want, double rtol) { return fabs((double)got - want) <= rtol * want; }

static void test_gpu_welford(const vector<stat_row> &rows) {
  const int R = (int)rows.size();
  vector<float> xs;
  vector<int64_t> start;
  vector<int> len;
  for (const stat_row &s : rows) start.push_back((int64_t)xs.size()), len.push_back((int)s.x.size()), xs.insert(xs.end(), s.x.begin(), s.x.end());
  float *dx = check::to_device(xs);
  int64_t *dstart = check::to_device(start);
  int *dlen = check::to_device(len);
  float *dstats[2], *dmean[2], *dvar[2];
  for (int k = 0; k < 2; ++k) {
    CHECK_CUDA(cudaMalloc(&dstats[k], 5 * R * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dmean[k], (size_t)R * 1024 * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dvar[k], (size_t)R * 1024 * sizeof(float)));
  }
  for (int threads : {32, 256, 1024})
    for (int shifted = 0; shifted < 2; ++shifted) {
      vector<float> stats[2], all_mean[2], all_var[2];
      for (int k = 0; k < 2; ++k) {  // two identical runs
        check::poison(dstats[k], 5 * R * sizeof(float));
        check::poison(dmean[k], (size_t)R * 1024 * sizeof(float));
        check::poison(dvar[k], (size_t)R * 1024 * sizeof(float));
        k_welford_rows<<<R, threads>>>(dx, dstart, dlen, shifted, dstats[k], dmean[k], dvar[k]);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaDeviceSynchronize());
        stats[k] = check::to_host(dstats[k], 5 * R);
        all_mean[k] = check::to_host(dmean[k], (size_t)R * threads);
        all_var[k] = check::to_host(dvar[k], (size_t)R * threads);
      }
      string bad_values, bad_exact;
      int64_t bad_thread = -1;
      for (int i = 0; i < R; ++i) {
        const stat_row &s = rows[i];
        const float *st = &stats[0][5 * i];
        double mean, var;
        two_pass(s.x, mean, var);
        const double sd = sqrt(var), rtol = shifted ? 1e-4 : s.plain_rtol;
        char buf[320];
        if (st[0] != (float)s.x.size() || (rtol >= 0.0 && !(mean_ok(st[1], mean, sd) && var_ok(st[2], var, rtol) &&
                                                            mean_ok(st[3], 2.0 * mean, 2.0 * sd) && var_ok(st[4], 4.0 * var, rtol)))) {
          snprintf(buf, sizeof buf, "[%s: count %g, mean %.9g want %.9g, var %.9g want %.9g (rel %.3g, tol %g); second call mean %.9g var %.9g] ",
                   s.name.c_str(), st[0], st[1], mean, st[2], var, fabs(st[2] - var) / var, rtol, st[3], st[4]);
          bad_values += buf;
        }
        if (s.exact && !(same_bits(st[1], s.x[0]) && st[2] == 0.0f && same_bits(st[3], 2.0f * s.x[0]) && st[4] == 0.0f)) {
          snprintf(buf, sizeof buf, "[%s: mean %.9g want %.9g, var %g, second %.9g %g] ", s.name.c_str(), st[1], s.x[0], st[2], st[3], st[4]);
          bad_exact += buf;
        }
        for (int t = 0; t < threads; ++t)
          if (bad_thread < 0 && !(same_bits(all_mean[0][(size_t)i * threads + t], st[1]) && same_bits(all_var[0][(size_t)i * threads + t], st[2])))
            bad_thread = (int64_t)i * threads + t;
      }
      const bool rerun_same = memcmp(stats[0].data(), stats[1].data(), stats[0].size() * 4) == 0 &&
                              memcmp(all_mean[0].data(), all_mean[1].data(), all_mean[0].size() * 4) == 0 &&
                              memcmp(all_var[0].data(), all_var[1].data(), all_var[0].size() * 4) == 0;
      th_case(bad_values.empty(), welford_name(threads, shifted, kWelfordWhat[0]).c_str(), "%s", bad_values.c_str());
      th_case(bad_thread < 0, welford_name(threads, shifted, kWelfordWhat[1]).c_str(), "row %lld, thread %lld differs from thread 0",
              (long long)(bad_thread / threads), (long long)(bad_thread % threads));
      th_case(rerun_same, welford_name(threads, shifted, kWelfordWhat[2]).c_str(), "the two runs differ");
      th_case(bad_exact.empty(), welford_name(threads, shifted, kWelfordWhat[3]).c_str(), "%s", bad_exact.c_str());
    }
  for (int k = 0; k < 2; ++k) cudaFree(dstats[k]), cudaFree(dmean[k]), cudaFree(dvar[k]);
  cudaFree(dx), cudaFree(dstart), cudaFree(dlen);
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_core: seed %llu (GPUOPS_SEED=%llu replays it)\n", (unsigned long long)seed, (unsigned long long)seed);
  rng r(seed);
  test_swizzle();
  test_fragment_model();
  const vector<stat_row> rows = make_rows(r);
  test_naive_fails(rows);
  if (!check::have_gpu()) {
    for (int threads : {32, 256, 1024})
      for (int shifted = 0; shifted < 2; ++shifted)
        for (const char *w : kWelfordWhat) th_skip(welford_name(threads, shifted, w).c_str(), "no CUDA device");
    for (const char *type : {"f16", "bf16"})
      for (int k = 0; k < 4; ++k) th_skip(mma_name(type, k).c_str(), "no CUDA device");
  } else {
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
    printf("device: %s (compute capability %d.%d)\n", p.name, p.major, p.minor);
    test_gpu_welford(rows);
    if (p.major < 8) {
      char why[96];
      snprintf(why, sizeof why, "compute capability %d.%d: mma.sync m16n8k16 needs 8.0", p.major, p.minor);
      for (const char *type : {"f16", "bf16"})
        for (int k = 0; k < 4; ++k) th_skip(mma_name(type, k).c_str(), why);
    } else {
      test_gpu_mma<__half>(r, "f16");
      test_gpu_mma<__nv_bfloat16>(r, "bf16");
    }
  }
  return th_summary();
}
