// SPDX-License-Identifier: MIT
// tests/check.h - data and checks shared by the tests, the examples and the bench (host code, nvcc):
// a seeded random generator, host values in every storage type, and the comparison every check
// uses (compare, against the CPU implementation's result): |got - want| <= atol + rtol * |want| per
// element, plus the relative norm error; NaN passes only where the reference is NaN, infinities
// only where they match.
#ifndef GPUOPS_TESTS_CHECK_H
#define GPUOPS_TESTS_CHECK_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <string>
#include <vector>

#include "gpuops.h"

// For programs (tests, examples, bench), not the library: a failed CUDA call ends the program.
#define CHECK_CUDA(call)                                                                        \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
      exit(2);                                                                                  \
    }                                                                                           \
  } while (0)

// A gpuops call that must succeed in a program.
#define CHECK_OK(call)                                                                          \
  do {                                                                                          \
    gpuops_status s_ = (call);                                                                  \
    if (s_ != GPUOPS_OK) {                                                                      \
      fprintf(stderr, "%s:%d: %s: %s (cuda error %d)\n", __FILE__, __LINE__, #call,             \
              gpuops_status_string(s_), gpuops_cuda_error());                                   \
      exit(2);                                                                                  \
    }                                                                                           \
  } while (0)

namespace check {

// splitmix64: small, fast, and good enough for test data.
struct rng {
  uint64_t s;
  explicit rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * (double)(next() >> 11) * (1.0 / 9007199254740992.0); }
  int64_t below(int64_t n) { return (int64_t)(next() % (uint64_t)n); }
};

// The run's seed: GPUOPS_SEED if set (to replay a failure), else the clock. Print it.
inline uint64_t seed() {
  const char *s = getenv("GPUOPS_SEED");
  return s ? strtoull(s, nullptr, 0) : (uint64_t)time(nullptr);
}

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// ---- host storage types ----
inline float to_float(float x) { return x; }
inline float to_float(gpuops_f16 x) { return gpuops_f16_to_f32(x); }
inline float to_float(gpuops_bf16 x) { return gpuops_bf16_to_f32(x); }
inline float to_float(int8_t x) { return (float)x; }

template <class T> T from_float(float x);
template <> inline float from_float<float>(float x) { return x; }
template <> inline gpuops_f16 from_float<gpuops_f16>(float x) { return gpuops_f32_to_f16(x); }
template <> inline gpuops_bf16 from_float<gpuops_bf16>(float x) { return gpuops_f32_to_bf16(x); }
template <> inline int8_t from_float<int8_t>(float x) { return (int8_t)x; }

template <class T> const char *dtype_name();
template <> inline const char *dtype_name<float>() { return "f32"; }
template <> inline const char *dtype_name<gpuops_f16>() { return "f16"; }
template <> inline const char *dtype_name<gpuops_bf16>() { return "bf16"; }
template <> inline const char *dtype_name<int8_t>() { return "i8"; }

struct tolerance {
  double atol, rtol;
};
// Per storage type: a few roundings of the type, and f32 far under 1e-3.
template <class T> tolerance default_tolerance();
template <> inline tolerance default_tolerance<float>() { return {1e-6, 1e-5}; }
template <> inline tolerance default_tolerance<gpuops_f16>() { return {1e-5, 2e-3}; }
template <> inline tolerance default_tolerance<gpuops_bf16>() { return {1e-4, 1.6e-2}; }
template <> inline tolerance default_tolerance<int8_t>() { return {0.0, 0.0}; }
const tolerance exact = {0.0, 0.0};

template <class T> void fill_uniform(std::vector<T> &v, rng &r, double lo, double hi) {
  for (auto &x : v) x = from_float<T>((float)r.uniform(lo, hi));
}

struct result {
  int64_t bad = 0, first_bad = -1;
  double max_abs = 0.0, rel_norm = 0.0;
  float got = 0.0f, want = 0.0f;  // at first_bad
  bool ok() const { return bad == 0; }
};

inline bool close(float g, float w, tolerance tol) {
  if (isnan(w)) return isnan(g);
  if (isnan(g)) return false;
  if (isinf(w) || isinf(g)) return g == w;
  return fabs((double)g - (double)w) <= tol.atol + tol.rtol * fabs((double)w);
}

// abs_scale (optional, per element) multiplies atol: for an op whose error is absolute in a factor
// that another input scales, such as dy * f'(x).
template <class T> result compare(const T *got, const T *want, int64_t n, tolerance tol, const float *abs_scale = nullptr) {
  result r;
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float g = to_float(got[i]), w = to_float(want[i]);
    const tolerance t = abs_scale ? tolerance{tol.atol * fmax(1.0, fabs((double)abs_scale[i])), tol.rtol} : tol;
    if (!close(g, w, t)) {
      if (r.bad++ == 0) { r.first_bad = i; r.got = g; r.want = w; }
      continue;
    }
    if (isfinite(w)) {
      const double d = fabs((double)g - (double)w);
      r.max_abs = d > r.max_abs ? d : r.max_abs;
      num += d * d;
      den += (double)w * w;
    }
  }
  r.rel_norm = den > 0.0 ? sqrt(num / den) : sqrt(num);
  return r;
}

// "ok", or how a comparison failed, for a table's check column.
inline std::string verdict(const result &r) {
  if (r.ok()) return "ok";
  char buf[160];
  snprintf(buf, sizeof buf, "FAIL %lld wrong, first [%lld] = %g, want %g", (long long)r.bad, (long long)r.first_bad, r.got, r.want);
  return buf;
}

// Device buffers holding a host vector's bytes.
template <class T> T *to_device(const std::vector<T> &h) {
  T *d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, h.size() * sizeof(T) + 16));
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <class T> std::vector<T> to_host(const T *d, size_t n) {
  std::vector<T> h(n);
  CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// Poison: every byte 0xFF, a NaN in f32, f16 and bf16 (and -1 in int8), so that an element no
// kernel wrote fails the comparison.
inline void poison(void *d, size_t bytes) { CHECK_CUDA(cudaMemset(d, 0xFF, bytes)); }

// GPUOPS_TEST_QUICK=1 (set by `make sanitize`): drop the largest sizes and the 2^31 cases.
inline bool quick() { return getenv("GPUOPS_TEST_QUICK") != nullptr; }

// A device array of n elements of esize bytes, starting `offset` elements past a 64-element guard
// zone, with another guard zone after it; all of it poisoned (0xFF) at birth. guards_hold() says
// whether everything outside the n elements still holds the poison (nothing wrote out of bounds).
struct guarded {
  static constexpr int64_t guard = 64;
  unsigned char *base = nullptr;
  size_t bytes = 0, esize = 0;
  int64_t n = 0, offset = 0;
  guarded(int64_t n_, int64_t offset_, size_t esize_) : esize(esize_), n(n_), offset(offset_) {
    bytes = (size_t)(n + offset + 2 * guard) * esize;
    CHECK_CUDA(cudaMalloc(&base, bytes));
    poison(base, bytes);
  }
  ~guarded() { cudaFree(base); }
  guarded(const guarded &) = delete;
  guarded &operator=(const guarded &) = delete;
  void *data() const { return base + (guard + offset) * esize; }
  void upload(const void *h) { CHECK_CUDA(cudaMemcpy(data(), h, n * esize, cudaMemcpyHostToDevice)); }
  void download(void *h) const { CHECK_CUDA(cudaMemcpy(h, data(), n * esize, cudaMemcpyDeviceToHost)); }
  void fill(unsigned char byte) { CHECK_CUDA(cudaMemset(base, byte, bytes)); }
  bool guards_hold(unsigned char byte = 0xFF) const {
    std::vector<unsigned char> h(bytes);
    CHECK_CUDA(cudaMemcpy(h.data(), base, bytes, cudaMemcpyDeviceToHost));
    const size_t lo = (guard + offset) * esize, hi = lo + n * esize;
    for (size_t i = 0; i < bytes; ++i)
      if ((i < lo || i >= hi) && h[i] != byte) return false;
    return true;
  }
};

}  // namespace check

#endif
