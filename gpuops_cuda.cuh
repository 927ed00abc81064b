// SPDX-License-Identifier: MIT
// gpuops_cuda.cuh - the device code of gpuops: kernels, and device helpers to fuse into your own.
//
// What it is
//   CUDA C++ in namespace gpuops. Include it from .cu files compiled by nvcc. The helpers and
//   kernel templates can be used on their own (write a functor, launch the elementwise engine on
//   it); the extern "C" launchers that gpuops.h's GPU ops call are compiled only where
//   GPUOPS_IMPLEMENTATION is defined, which gpuops.h arranges.
//
// Recipe
//   #include "gpuops_cuda.cuh"          // device helpers only, in any number of .cu files
//   __global__ void k(float *y, const float *x, int64_t n) {
//     int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
//     if (i < n) y[i] = gpuops::gelu_tanh(x[i]);
//   }
//   nvcc -O3 -arch=sm_90 -I. app.cu
//
// Options: the same macros as gpuops.h (GPUOPS_ONLY_<FAMILY>, GPUOPS_NO_<FAMILY>); the core is
// always compiled.
//
// Contents (gpuops.h uses the same numbers)
//   1. Core: 1.1 storage types (conversions, vectors, division by a constant), 1.2 the aligned
//      head / body / tail walk, 1.3 collectives (NaN-propagating operators, warp and block reduce
//      and scan, the online softmax state, Welford mean and variance), 1.4 asynchronous copy and
//      tensor-core fragments (cp.async, ldmatrix, mma.sync, the swizzle; on Hopper mbarriers, the
//      TMA, clusters, wgmma, setmaxnreg), 1.5 the row engine, 1.6 activations (GELU, SiLU,
//      sigmoid, ReLU and their gradients, fused by every family), 1.7 the Hopper GEMM engine
//      (warp-specialized wgmma, the GEMM and convolution families' kernel, and the epilogue of
//      every matrix product), 1.8 the host side (launch status, cached device properties, grids,
//      the dtype dispatch, the row engine's launches, TMA tensor maps, the engine's launch)
//   2. Elementwise and activations     3. Reductions and histogram     4. Prefix scan
//   5. Softmax                         6. Transpose                    7. Matrix multiply
//   8. Normalization and rotary embeddings                              9. Tensor-core matrix
//      multiply and linear layers                                      10. Attention
//   11. Convolution
//   Every family has the same inner order: N.1 contract and building blocks (functors, helpers),
//   N.2 learning-path kernels, N.3 production kernels, N.4 dispatch policy (named constants),
//   N.5 launcher and C entry point (compiled only with GPUOPS_IMPLEMENTATION).
//
// Version 0.1.0 (gpuops.h holds the version macros)
#ifndef GPUOPS_CUDA_CUH
#define GPUOPS_CUDA_CUH

#include <cuda.h>  // CUtensorMap and its enums (types only: nothing links -lcuda)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include <atomic>
#include <initializer_list>
#include <mutex>
#include <type_traits>
#include <utility>

#include <cooperative_groups.h>

#include "gpuops.h"

// ==== 1. Core ================================================================================
// Never behind a family flag: the pieces every family builds on.
namespace gpuops {

// ---- 1.1 Storage types: conversions, vectors, division by a constant -------------------------
// Threads per block of the memory-bound kernels: 8 warps, enough blocks per SM to fill it.
constexpr int kBlock = 256;

constexpr float kLog2e = 1.4426950408889634f;  // log2(e): e^x = 2^(x log2 e)

// One MUFU each, subnormals flushed: 2^x (ex2.approx, relative error ~2^-22) and 1 / x (rcp.approx,
// ~1 ulp). expf and IEEE division take about 8 instructions each. Used where a 16-bit output hides
// the difference: the kFast activations (section 2), softmax's kFastExp (section 5).
__device__ __forceinline__ float exp2_approx(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float rcp_approx(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
// sin and cos of x: x - k 2 pi (k = rint(x / 2 pi); the first FMA exact, the second adds 2 pi's
// f32 remainder) in [-pi, pi], then one MUFU each (sin.approx, cos.approx: absolute error ~2^-21.4
// there). A few instructions where sincosf takes tens and has a slow path. RoPE's 16-bit outputs.
__device__ __forceinline__ void sincos_approx(float x, float &s, float &c) {
  const float k = rintf(x * 0.159154943f), r = fmaf(-k, -1.74845553e-7f, fmaf(-k, 6.28318548f, x));
  asm("sin.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(r));
  asm("cos.approx.ftz.f32 %0, %1;" : "=f"(c) : "f"(r));
}

// Storage <-> f32. Every kernel loads storage types, computes in f32 and rounds once on store.
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f32(int8_t x) { return (float)x; }

// int8 through the FP32 pipe. The conversion instructions (I2F, F2I, and FRND for rounding) issue
// at a quarter of the FADD rate; instead, 1.5 * 2^23 + v holds v's byte in its low mantissa bits
// for any |v| <= 2^22, and the FADD that forms it rounds v half to even.
constexpr float kInt8Magic = 12582912.0f;  // 1.5 * 2^23, bits 0x4B400000
// Round x (which must lie in [-128, 127]) half to even; the int8 byte is in the low 8 bits.
__device__ __forceinline__ uint32_t int8_bits(float x) { return __float_as_uint(x + kInt8Magic); }
// Byte k of w as f32, where w holds 4 int8 values each biased by 128 (w ^ 0x80808080): the byte
// becomes the low byte of the magic, and one FADD removes magic and bias.
__device__ __forceinline__ float int8_byte_f32(uint32_t w_biased, int k) {
  return __uint_as_float(__byte_perm(w_biased, 0x4B400000u, 0x7650 + k)) - (kInt8Magic + 128.0f);
}

template <class T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
// int8: rounds half to even; x must lie in [-128, 127] (the quantizer clamps first).
template <> __device__ __forceinline__ int8_t from_f32<int8_t>(float x) { return (int8_t)(int8_bits(x) & 0xffu); }

// Two 16-bit values convert with one instruction (F2FP.*.PACK_AB) instead of one each. Memory moves
// them as plain 32-bit words: a vector of the pair class itself would be copied word by word.
template <class T> struct pair_of {
  static constexpr bool exists = false;
};
template <> struct pair_of<__half> {
  static constexpr bool exists = true;
  static __device__ __forceinline__ uint32_t pack(float a, float b) {
    const __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t *>(&h);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t w) { return __half22float2(*reinterpret_cast<const __half2 *>(&w)); }
};
template <> struct pair_of<__nv_bfloat16> {
  static constexpr bool exists = true;
  static __device__ __forceinline__ uint32_t pack(float a, float b) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t *>(&h);
  }
  // A bf16 is the high half of its f32: one shift or one AND per value (the intrinsic's PRMT +
  // shift for the upper half is two).
  static __device__ __forceinline__ float2 unpack(uint32_t w) { return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u)); }
};

// One 16-byte store to global memory (p 16-byte aligned). Spelled in PTX: written as a uint4
// assignment beside an element-wise edge path that stores the same values, the compiler merges the
// two into four 32-bit stores (4x the store requests; seen in transpose and softmax). No "memory"
// clobber: its callers never read what they store, so later loads may move above it.
#ifndef GPUOPS__ST16  // measurement hook (-DGPUOPS__ST16=...): the PTX store of store_global16
#define GPUOPS__ST16 "st.global.v4.u32"
#endif
__device__ __forceinline__ void store_global16(void *p, uint4 v) {
#if defined(__CUDA_ARCH__)
  asm volatile(GPUOPS__ST16 " [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
#else
  *reinterpret_cast<uint4 *>(p) = v;
#endif
}

// Bytes [o, o + 16) of the 32 bytes lo then hi (0 <= o < 16, a multiple of kStep): the 16 bytes of
// memory that start o bytes into the aligned chunk lo, rebuilt from lo and the chunk after it, hi.
// Two levels of selects (o's bits 3 and 2) and, for kStep < 4, a funnel shift per word: no
// local-memory array for the run-time index. For reading an unaligned row 16 bytes at a time.
template <int kStep> __device__ __forceinline__ uint4 chunk_realign(uint4 lo, uint4 hi, int o) {
  const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  uint32_t t[7], s[5];
#pragma unroll
  for (int i = 0; i < 7; ++i) t[i] = (kStep % 8 != 0 && (o & 4)) ? w[i + 1] : w[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) s[i] = (o & 8) ? t[i + 2] : t[i];
  if constexpr (kStep % 4 == 0) {
    return make_uint4(s[0], s[1], s[2], s[3]);
  } else {
    const unsigned sh = 8u * (unsigned)(o & 3);
    auto f = [&](int i) { return (uint32_t)((((uint64_t)s[i + 1] << 32) | s[i]) >> sh); };
    return make_uint4(f(0), f(1), f(2), f(3));
  }
}

// One vector stored at p, which must point to global memory: 16 bytes through store_global16 (as
// an assignment, the per-channel engine's stores came out as four 32-bit stores each; a shared or
// local p faults), narrower ones as an assignment. Like store_global16 it does not order a later
// load of the same address in the calling thread: for streamed outputs only.
template <class W> __device__ __forceinline__ void store_vec(void *p, const W &v) {
  if constexpr (sizeof(W) == 16) store_global16(p, *reinterpret_cast<const uint4 *>(&v));
  else *reinterpret_cast<W *>(p) = v;
}

// N elements of T moved as one access of sizeof(T) * N bytes (16 bytes: one 128-bit LDG/STG).
template <class T, int N> struct alignas(sizeof(T) * N) vec { T v[N]; };

// f(std::integral_constant<int, 0>{}), ..., f(std::integral_constant<int, N - 1>{}): a loop whose index
// is a constant expression in the body (for template arguments and instruction immediates).
template <class F, int... I> __host__ __device__ __forceinline__ void static_for_each(F &&f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F> __host__ __device__ __forceinline__ void static_for(F &&f) {
  static_for_each(static_cast<F &&>(f), std::make_integer_sequence<int, N>{});
}

// The absent second input of a one-input op: loads nothing.
struct none {};

// Load N elements starting at p[i] (p + i aligned to the vector) as f32: int8 four to a word
// through the FP32 pipe, 16-bit types in pairs, others one by one.
template <int N, class T> __device__ __forceinline__ void load_f32(const T *p, int64_t i, float (&out)[N]) {
  if constexpr (std::is_same<T, int8_t>::value && N % 4 == 0) {
    const vec<uint32_t, N / 4> v = *reinterpret_cast<const vec<uint32_t, N / 4> *>(p + i);
#pragma unroll
    for (int w = 0; w < N / 4; ++w)
#pragma unroll
      for (int k = 0; k < 4; ++k) out[4 * w + k] = int8_byte_f32(v.v[w] ^ 0x80808080u, k);
  } else if constexpr (pair_of<T>::exists && N % 2 == 0) {
    const vec<uint32_t, N / 2> v = *reinterpret_cast<const vec<uint32_t, N / 2> *>(p + i);
#pragma unroll
    for (int k = 0; k < N / 2; ++k) {
      const float2 f = pair_of<T>::unpack(v.v[k]);
      out[2 * k] = f.x, out[2 * k + 1] = f.y;
    }
  } else {
    const vec<T, N> v = *reinterpret_cast<const vec<T, N> *>(p + i);
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] = to_f32(v.v[k]);
  }
}
template <int N> __device__ __forceinline__ void load_f32(const none *, int64_t, float (&out)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) out[k] = 0.0f;
}

// Round N f32 values to T and store them at p[i] (global memory) as one access (the same three ways).
template <int N, class T> __device__ __forceinline__ void store_f32(T *p, int64_t i, const float (&in)[N]) {
  if constexpr (std::is_same<T, int8_t>::value && N % 4 == 0) {
    vec<uint32_t, N / 4> v;
#pragma unroll
    for (int w = 0; w < N / 4; ++w) {
      const uint32_t lo = __byte_perm(int8_bits(in[4 * w]), int8_bits(in[4 * w + 1]), 0x0040);
      const uint32_t hi = __byte_perm(int8_bits(in[4 * w + 2]), int8_bits(in[4 * w + 3]), 0x0040);
      v.v[w] = __byte_perm(lo, hi, 0x5410);
    }
    store_vec(p + i, v);
  } else if constexpr (pair_of<T>::exists && N % 2 == 0) {
    vec<uint32_t, N / 2> v;
#pragma unroll
    for (int k = 0; k < N / 2; ++k) v.v[k] = pair_of<T>::pack(in[2 * k], in[2 * k + 1]);
    store_vec(p + i, v);
  } else {
    vec<T, N> v;
#pragma unroll
    for (int k = 0; k < N; ++k) v.v[k] = from_f32<T>(in[k]);
    store_vec(p + i, v);
  }
}

// Division by a value fixed for a launch, without the integer divide (which the GPU runs through
// float reciprocals and quarter-rate conversions). Granlund-Montgomery: with l = ceil(log2 d) and
// m = floor(2^32 (2^l - d) / d) + 1, n / d = (n + umulhi(m, n)) >> l for every n < 2^32 and
// 1 <= d < 2^32: a multiply-high, an add and a shift. Larger n or d take the 64-bit divide.
struct divisor {
  uint64_t d;
  uint32_t m, l;
  __host__ __device__ explicit divisor(uint64_t d_ = 1) : d(d_), m(0), l(0) {
    if (d < (1ull << 32)) {
      while ((1ull << l) < d) ++l;
      m = (uint32_t)(((1ull << 32) * ((1ull << l) - d)) / d + 1);
    }
  }
  __device__ __forceinline__ uint64_t div(uint64_t n) const {
    if (((n | d) >> 32) == 0) return ((uint64_t)__umulhi(m, (uint32_t)n) + n) >> l;
    return n / d;
  }
};

// Threads an SM holds, for capping MIN_BLOCKS (sm_75: 1024; sm_86, 87, 89, 12x: 1536).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
#define GPUOPS__SM_THREADS 1024
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890 || __CUDA_ARCH__ >= 1200)
#define GPUOPS__SM_THREADS 1536
#else
#define GPUOPS__SM_THREADS 2048
#endif


// ---- 1.2 The aligned head / body / tail walk --------------------------------------------------
// Every memory-bound kernel moves 16 bytes per access. An array of T at p (aligned to sizeof(T))
// splits into a scalar head up to the first 16-byte boundary, a body of 16-byte vectors and a
// scalar tail. Arrays walked together can share one split only when they sit at the same offset
// modulo the vector (vec_offset equal); the launchers test that on the host.

// The offset of p, in elements of `elem` bytes, within a vector of v elements (p aligned to elem);
// for 16-byte vectors v = 16 / elem.
__host__ __device__ __forceinline__ int vec_offset(const void *p, int elem, int v) { return (int)(((uintptr_t)p / elem) % v); }
// The head of an array at offset m: elements up to the next vector boundary, at most n.
__host__ __device__ __forceinline__ int64_t vec_head(int m, int v, int64_t n) {
  const int h = (v - m) % v;
  return h < n ? h : n;
}

// for_each_vector: `threads` cooperating threads (a warp, a block, a grid), the caller numbered t
// in [0, threads), walk p[0 .. n). Thread t takes head element t and tail element t (where those
// exist: each is shorter than a vector) through scalar(T), and every threads-th 16-byte vector of
// the body through body(u, uint4), U of them loaded before the first is used (bytes in flight).
// Loads take the read-only path (nothing may write p while the kernel runs). Each thread's share
// and order depend only on (p, n, t, threads): callers that combine in that order are
// deterministic. No shared memory, no barrier.
template <int U, class T, class Scalar, class Body>
__device__ __forceinline__ void for_each_vector(const T *p, int64_t n, int64_t t, int64_t threads, Scalar scalar, Body body) {
  constexpr int V = 16 / (int)sizeof(T);
  const int64_t head = vec_head(vec_offset(p, (int)sizeof(T), V), V, n), nvec = (n - head) / V, tail = head + nvec * V;
  if (t < head) scalar(p[t]);
  if (t < n - tail) scalar(p[tail + t]);
  const uint4 *pv = reinterpret_cast<const uint4 *>(p + head);
  for (int64_t v0 = t; v0 < nvec; v0 += U * threads) {
    uint4 a[U];
#pragma unroll
    for (int u = 0; u < U; ++u)  // every load issued before the first use
      if (v0 + u * threads < nvec) a[u] = __ldg(pv + v0 + u * threads);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * threads < nvec) body(u, a[u]);
  }
}

// ---- 1.3 Collectives: operators, warp and block reduce and scan, online softmax, Welford -------
// The combining operators, with one NaN rule: a NaN operand wins (PyTorch's max, min and sum),
// so a reduction over values that hold a NaN is NaN. identity() is what an empty input reduces
// to. On sm_80+ max/min are one instruction (max.NaN.f32); before, a compare and a select.
struct plus {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
  static __device__ __forceinline__ float identity() { return 0.0f; }
};
struct maximum {
  __device__ __forceinline__ float operator()(float a, float b) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return (a > b || a != a) ? a : b;
#endif
  }
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; }
  static __device__ __forceinline__ float identity() { return __int_as_float(0xff800000); }  // -inf
};
struct minimum {
  __device__ __forceinline__ float operator()(float a, float b) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return (a < b || a != a) ? a : b;
#endif
  }
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
  static __device__ __forceinline__ float identity() { return __int_as_float(0x7f800000); }  // +inf
};

// warp_reduce: all 32 lanes of a warp call it together (none exited, none diverged away); every
// lane gets op over the 32 values. Butterfly of 5 __shfl_xor_sync steps, no shared memory. The
// order of combination is fixed, so the result is the same bits on every run.
// warp_reduce<W> (W = 1, 2, 4, 8, 16): the same over each aligned group of W consecutive lanes
// (xor offsets below W never leave the group), log2(W) steps; still every lane of the warp calls,
// with the full mask. W = 1 returns v.
template <int W = 32, class T, class Op> __device__ __forceinline__ T warp_reduce(T v, Op op) {
  static_assert(W >= 1 && W <= 32 && (W & (W - 1)) == 0, "W must be a power of two up to 32");
#pragma unroll
  for (int offset = W / 2; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// block_reduce: every thread of a one-dimensional block calls it together (blockDim.x a multiple
// of 32, at most 1024); every thread gets op over the block's values. scratch is __shared__
// T[32] of the caller's, reusable right after the call returns (the call begins with a
// __syncthreads, so back-to-back calls on one scratch are safe). Two barriers, one shared store
// and one load per warp; deterministic like warp_reduce.
template <class T, class Op> __device__ __forceinline__ T block_reduce(T v, Op op, T identity, T *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_reduce(v, op);
  __syncthreads();  // an earlier call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_reduce(lane < warps ? scratch[lane] : identity, op);
}


// Warp scans.
// warp_inclusive_scan: all 32 lanes call it together; lane l gets v_0 + ... + v_l (added in a
// fixed order, so the result is the same bits every run). 5 __shfl_up_sync steps (Hillis-Steele
// across the lanes), no shared memory.
template <class T> __device__ __forceinline__ T warp_inclusive_scan(T v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const T t = __shfl_up_sync(0xffffffffu, v, off);
    if (lane >= off) v = t + v;
  }
  return v;
}

// The exclusive value from an inclusive warp scan: lane l gets lane l-1's value, lane 0 gets 0
// (no subtraction, which would round differently in f32). All 32 lanes call it together.
template <class T> __device__ __forceinline__ T warp_exclusive_from_inclusive(T inc) {
  const T t = __shfl_up_sync(0xffffffffu, inc, 1);
  return (threadIdx.x & 31) ? t : T(0);
}

// The online softmax state: the fusable building block of softmax and attention.
// Softmax needs the row maximum m (to keep exponents <= 0) and the sum s of exp(x - m). The online
// form keeps both in one pass: when a new element raises the maximum from m to m', the sum so far
// is rescaled by exp(m - m'). Two partial states merge the same way, in any grouping, so threads,
// warps, blocks and clusters combine their parts of a row without a second pass over x. Flash
// attention keeps one per query row while it walks the keys.
//
// Exponentials are exp2f((x - m) * log2(e)), with x - m formed first so that large magnitudes
// (1e4) lose no accuracy: relative error about 2 ulp + |x - m| * 1e-7.
// Conventions: -inf elements count 0 (masks); an empty state or a state of only -inf has
// m = -inf, s = 0. A NaN element makes s NaN, and so does +inf (inf - inf); both stay so through
// every merge, so a whole row comes out NaN, as in PyTorch.

// exp(x - m), where m is a running maximum that may still be -inf (then x is -inf too, or the
// state is empty): the shift is taken as 0 there, so that -inf - -inf never makes a NaN.
__device__ __forceinline__ float exp_shifted(float x, float m) {
  return exp2f((x - (m == -INFINITY ? 0.0f : m)) * kLog2e);
}

// Contract: a plain aggregate (fine in registers or __shared__), any thread may use it; start from
// online_softmax::identity(). Results are the same bits for the same sequence of calls.
struct online_softmax {
  float m;  // maximum so far (-inf: nothing finite yet)
  float s;  // sum of exp(x - m) so far

  static __device__ __forceinline__ online_softmax identity() { return {-INFINITY, 0.0f}; }

  // One element.
  __device__ __forceinline__ void add(float x) {
    const float mn = fmaxf(m, x);  // fmaxf drops a NaN x: s below turns NaN instead
    s = s * exp_shifted(m, mn) + exp_shifted(x, mn);
    m = mn;
  }
  // N elements with one rescale: N + 1 exponentials instead of 2N.
  template <int N> __device__ __forceinline__ void add(const float (&x)[N]) {
    float vm = x[0];
#pragma unroll
    for (int k = 1; k < N; ++k) vm = fmaxf(vm, x[k]);
    const float mn = fmaxf(m, vm);
    float t = s * exp_shifted(m, mn);
#pragma unroll
    for (int k = 0; k < N; ++k) t += exp_shifted(x[k], mn);
    m = mn, s = t;
  }
  // Another state (of other elements of the same row). Commutative to the bit.
  __device__ __forceinline__ void merge(const online_softmax &o) {
    const float mn = fmaxf(m, o.m);
    // A part with m = -inf has s = 0 (or NaN, which must stay): its factor may be anything finite.
    s = s * exp_shifted(m, mn) + o.s * exp_shifted(o.m, mn);
    m = mn;
  }
  // 1 / s, or 0 for a row of only -inf (s = 0), so that its probabilities come out 0, not NaN.
  __device__ __forceinline__ float inv_sum() const { return s == 0.0f ? 0.0f : 1.0f / s; }
  // softmax(x) for an element x of the row, once every element has been added.
  __device__ __forceinline__ float prob(float x) const { return exp_shifted(x, m) * inv_sum(); }
  // log_softmax(x) = x - m - log(s); -inf for every element of a row of only -inf.
  __device__ __forceinline__ float log_prob(float x) const { return s == 0.0f ? -INFINITY : (x - m) - logf(s); }
};

// warp_combine: all 32 lanes call it together; every lane gets the merge of the 32 states
// (butterfly of shuffles, deterministic). block_combine: every thread of a one-dimensional block
// (blockDim.x a multiple of 32, at most 1024) calls it; every thread gets the block's merge.
// scratch is __shared__ online_softmax[32] of the caller's, free again when the call returns.
__device__ __forceinline__ online_softmax warp_combine(online_softmax a) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const online_softmax b = {__shfl_xor_sync(0xffffffffu, a.m, offset), __shfl_xor_sync(0xffffffffu, a.s, offset)};
    a.merge(b);
  }
  return a;
}
__device__ __forceinline__ online_softmax block_combine(online_softmax a, online_softmax *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  a = warp_combine(a);
  __syncthreads();  // an earlier call's readers are done with scratch
  if (lane == 0) scratch[warp] = a;
  __syncthreads();
  return warp_combine(lane < warps ? scratch[lane] : online_softmax::identity());
}


// Welford mean and variance: the building block of the norms.
// welford: the running statistics of a set of values, count, mean and m2 = sum (x - mean)^2, for the
// norms' rows. Why not sum x and sum x^2: E[x^2] - E[x]^2 subtracts two numbers of size mean^2 to get
// one of size stddev^2, so in f32 its relative error is about (mean / stddev)^2 * 6e-8; for a row
// of mean 1e4 and stddev 1 that is hundreds of percent. Welford accumulates deviations from the
// running mean instead, so its error grows like (|mean| / stddev) * 6e-8: 2e-5 measured on that row
// (4097 values, 32 to 1024 threads, an H100). Past |mean| / stddev ~ 1e5 f32 itself runs out: at
// mean 1e4 and stddev 1e-3 neighbouring f32 values lie 1 stddev apart, the running mean rounds by up
// to half of one, and the variance came out 2-28% off. Then push x - shift, shift one value of the
// row (x[0], which every thread can read), and add shift to the mean: x - shift is exact for x within
// a factor 2 of shift, and the variance does not change (that row: 1.4e-7).
// An aggregate, so it can live in __shared__: start from welford{} (all zero, the empty set).
// count is exact up to 2^24 values. Every step is IEEE (division included), so a fixed order of
// pushes and merges gives the same bits on every run.
struct welford {
  float count, mean, m2;

  // Add one value: one division and two FMAs.
  __device__ __forceinline__ void push(float x) {
    count += 1.0f;
    const float d = x - mean;
    mean += d / count;
    m2 += d * (x - mean);
  }

  // Add the values b summarizes (Chan, Golub, LeVeque): with n = na + nb and d = mean_b - mean_a,
  // mean = mean_a + d nb / n, m2 = m2_a + m2_b + d^2 na nb / n. Either side may be empty, and an
  // empty side changes nothing, bit for bit (f = 0, or f = 1 exactly). Not symmetric in its bits:
  // a.merge(b) and b.merge(a) may differ in the last place, so callers fix the order.
  __device__ __forceinline__ void merge(const welford &b) {
    const float n = count + b.count;
    const float f = n > 0.0f ? b.count / n : 0.0f;  // nb / n
    const float d = b.mean - mean;
    mean += d * f;
    m2 += b.m2 + d * (d * (count * f));  // count * f = na nb / n; 0 (not inf * 0) when a is empty
    count = n;
  }

  // Population variance m2 / count (NaN for the empty set).
  __device__ __forceinline__ float variance() const { return m2 / count; }
};

// warp_combine: all 32 lanes of a warp call it together (warp_reduce's contract); every lane gets
// the merge of the 32 states, the same bits in every lane. Butterfly of 5 steps of 3 __shfl_xor_sync,
// no shared memory; at each step both partners compute lower-lane.merge(upper-lane), so they agree
// bit for bit (merge is not symmetric), and the order is fixed (deterministic).
__device__ __forceinline__ welford warp_combine(welford w) {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    welford o;
    o.count = __shfl_xor_sync(0xffffffffu, w.count, offset);
    o.mean = __shfl_xor_sync(0xffffffffu, w.mean, offset);
    o.m2 = __shfl_xor_sync(0xffffffffu, w.m2, offset);
    const bool upper = (lane & offset) != 0;  // selected member by member: a selected struct went to local memory
    welford lo = {upper ? o.count : w.count, upper ? o.mean : w.mean, upper ? o.m2 : w.m2};
    const welford hi = {upper ? w.count : o.count, upper ? w.mean : o.mean, upper ? w.m2 : o.m2};
    lo.merge(hi);
    w = lo;
  }
  return w;
}

// block_combine: block_reduce's contract. Every thread of a one-dimensional block calls it together
// (blockDim.x a multiple of 32, at most 1024) and gets the merge of the block's states, the same bits
// in every thread. scratch is __shared__ welford[32] of the caller's, reusable right after the call
// (it begins with a __syncthreads, so back-to-back calls on one scratch are safe). Two barriers, one
// shared store per warp and a second warp_combine over the warps' states (empty past the last warp).
__device__ __forceinline__ welford block_combine(welford w, welford *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  w = warp_combine(w);
  __syncthreads();  // an earlier call's readers are done with scratch
  if (lane == 0) scratch[warp] = w;
  __syncthreads();
  return warp_combine(lane < warps ? scratch[lane] : welford{});
}

// red_add_f32x4: p[0..3] += v[0..3] in global memory, as relaxed atomics whose result is not
// returned (the other threads' adds to the same words are never lost). sm_90 sends the four as one
// vector reduction (red.global.add.v4.f32: one L2 request for 16 bytes, where scalar atomics take four
// and fill only part of each sector); earlier devices run four atomicAdd. p aligned to 16 bytes.
__device__ __forceinline__ void red_add_f32x4(float *p, float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
#else
  atomicAdd(p, a), atomicAdd(p + 1, b), atomicAdd(p + 2, c), atomicAdd(p + 3, d);
#endif
}

// ---- 1.4 Asynchronous copy and tensor-core fragments -------------------------------------------
// cp.async (sm_80+) copies global memory straight into shared memory without passing through
// registers, so a tile can land while the previous one is computed. Each thread commits its copies
// in groups and waits for its own groups; a __syncthreads after the wait makes every thread's
// copies visible to the block. Before sm_80 the same calls are ordinary loads and stores
// (synchronous, correct), and commit and wait do nothing.
// dst: shared memory, src: global memory, both aligned to the copy's size.

// 16 bytes.
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
#else
  *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
#endif
}
// 16 bytes of which the first src_bytes (0, 4, 8, 12 or 16) are read and the rest zero-filled: a
// tile's edge without a branch. src must be a valid address even when src_bytes is 0.
__device__ __forceinline__ void cp_async16_zfill(void *dst, const void *src, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
#else
  if (src_bytes == 16) {
    *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) static_cast<uint32_t *>(dst)[q] = 4 * q < src_bytes ? static_cast<const uint32_t *>(src)[q] : 0u;
  }
#endif
}
// 4 bytes, or 4 zero bytes when !valid (src must still be a valid address).
__device__ __forceinline__ void cp_async4_zfill(void *dst, const void *src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 4 : 0) : "memory");
#else
  *static_cast<uint32_t *>(dst) = valid ? *static_cast<const uint32_t *>(src) : 0u;
#endif
}
// Close this thread's current group of copies.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Wait until at most `pending` (0..7) of this thread's committed groups are still in flight. The
// instruction takes an immediate: call it with a constant, or inside an unrolled loop where the
// argument folds to one (the switch then disappears).
__device__ __forceinline__ void cp_async_wait(int pending) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  switch (pending) {
  case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
  case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
  case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
  case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
  case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
  case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
  case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
  default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
  }
#else
  (void)pending;
#endif
}

// Tile order of a matrix product: tile t of a tiles_m x tiles_n grid of output tiles, visited in
// groups of G tile rows (column by column inside a group) so that blocks running together share
// their A and B panels in L2.
__device__ __forceinline__ void grouped_tile(int64_t t, int64_t tiles_m, int64_t tiles_n, int64_t &tm, int64_t &tn, int64_t G = 8) {
  const int64_t width = G * tiles_n, group = t / width, first = group * G;
  const int64_t rows = tiles_m - first < G ? tiles_m - first : G, r = t - group * width;
  tm = first + r % rows;
  tn = r / rows;
}

// Tensor cores: ldmatrix and mma.sync m16n8k16.
// Lanes: g = lane / 4 (the group, 0-7), t = lane % 4 (the thread in the group). A register of two
// 16-bit elements holds the lower-numbered one in its low half.
//
// ldmatrix (sm_75+) loads 8x8 matrices of 16-bit elements from shared memory straight into that
// fragment layout: one instruction per warp for up to 4 matrices, 16 bytes per row, instead of one
// 32-bit LDS per register per lane, and no shuffles. Contract: all 32 lanes call it together
// (converged, the same instruction); lane 8i + j passes the address of row j of matrix i (x4: lanes
// 0-31; x2: lanes 0-15 are read, the others' addresses are ignored). Each row address points into
// shared memory (a generic pointer to __shared__ data) and is 16-byte aligned; rows may lie anywhere.
// Lane l receives r[i] = matrix i's row g, columns 2t and 2t + 1; with _trans, column g, rows 2t and
// 2t + 1 (the transposed matrix's fragment: a row-major k x n tile becomes the B operand). It reads
// what earlier shared stores wrote only after a barrier (__syncthreads, or __syncwarp within a warp).
//
// mma_m16n8k16_{f16,bf16} (sm_80+): d = a * b + c for one warp, A 16x16 (row), B 16x8 (col), C and D
// 16x8 f32; every lane calls it together; d may be c (accumulate in place). Fragments:
//   A: a[0] = A[g][2t, 2t+1]      a[1] = A[g+8][2t, 2t+1]
//      a[2] = A[g][2t+8, 2t+9]    a[3] = A[g+8][2t+8, 2t+9]
//      (ldmatrix_x4 with lane l at &A[l % 16][8 * (l / 16)] loads exactly this)
//   B: b[0] = B[2t, 2t+1][g]      b[1] = B[2t+8, 2t+9][g]
//      (ldmatrix_x2 with lane l at &Bt[l % 8][8 * (l / 8)] where Bt = B stored n-major (8 rows of 16
//      k); or ldmatrix_x2_trans with lane l at &B[l % 16][0] where B is stored k-major (16 rows of n))
//   C, D: d[0] = D[g][2t]  d[1] = D[g][2t+1]  d[2] = D[g+8][2t]  d[3] = D[g+8][2t+1]
// (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating point type".) Products of two 16-bit
// values are exact in f32; the sums keep f32 precision. One instruction does 4096 multiply-adds.
//
// On architectures without the instruction (ldmatrix before sm_75, mma before sm_80) these compile to
// nothing and leave their outputs unwritten: the host dispatch never runs them there.

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *smem_ptr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"((uint32_t)__cvta_generic_to_shared(smem_ptr)));
#endif
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void *smem_ptr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"((uint32_t)__cvta_generic_to_shared(smem_ptr)));
#endif
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void *smem_ptr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"((uint32_t)__cvta_generic_to_shared(smem_ptr)));
#endif
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void *smem_ptr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"((uint32_t)__cvta_generic_to_shared(smem_ptr)));
#endif
}

// The shared-space address of a generic pointer to shared memory (what ldmatrix and cp.async use).
__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// ldmatrix_x4 (kTrans: ldmatrix_x4_trans) from shared-space address addr + kOff bytes, the offset an
// immediate folded into the instruction: a loop over fragments then keeps one address register per
// row of its table, not one per fragment.
template <bool kTrans, int kOff> __device__ __forceinline__ void ldmatrix_x4_at(uint32_t (&r)[4], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4+%5];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr), "n"(kOff));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4+%5];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr), "n"(kOff));
#endif
}

// Not volatile: a pure function of its registers, which the compiler may schedule freely.
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}

// The same for a storage type: T = __half or __nv_bfloat16.
template <class T> __device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  if constexpr (std::is_same<T, __half>::value) mma_m16n8k16_f16(d, a, b, c);
  else mma_m16n8k16_bf16(d, a, b, c);
}

// Shared-memory swizzle.
// swizzle_chunk: where logical 16-byte chunk `chunk` (0-7) of tile row `row` (>= 0) is stored, for
// tiles whose rows are 128 bytes (8 chunks): chunk ^ (row % 8). Why: shared memory has 32 banks of 4
// bytes, so a 16-byte chunk covers 4 banks and a 128-byte row all 32; unswizzled, chunk c of every
// row sits in the same 4 banks, and an ldmatrix (or a 16-byte load per lane) reading chunk c of 8
// consecutive rows, one 8x8 matrix, is an 8-way bank conflict. XOR with row % 8 puts those 8 rows'
// chunks in 8 different bank groups: one conflict-free pass, with no padding, since for each row it
// permutes the 8 chunks (a bijection). Writers (a cp.async or 16-byte store per chunk) and readers use
// the same mapping. Rows of 8k chunks: apply it to each 128-byte group. Host and device.
__host__ __device__ __forceinline__ int swizzle_chunk(int row, int chunk) { return chunk ^ (row & 7); }
// Tiles whose rows are 64 bytes (4 chunks): two rows share a 128-byte line, so the chunk is XORed
// with (row / 2) % 4 and the 8 rows an ldmatrix reads (4 lines, 2 rows each) again cover all 32 banks.
__host__ __device__ __forceinline__ int swizzle_chunk64(int row, int chunk) { return chunk ^ ((row >> 1) & 3); }

// Hopper (sm_90): mbarriers, the tensor memory accelerator (TMA), thread-block clusters; and, on
// sm_90a only, wgmma and setmaxnreg. The pieces of a warp-specialized pipeline: a producer thread
// asks the TMA for a tile (one instruction moves a whole 2D box of global memory into shared
// memory, zero-filling what lies outside the tensor, swizzled as the tensor cores read it) and
// tells an mbarrier how many bytes to expect; consumers wait on that barrier's phase, read the tile
// with wgmma (a warpgroup-wide matrix multiply that reads its operands straight from shared memory
// and runs asynchronously), then arrive on a second barrier that frees the buffer for the next
// copy. Compiled for an older architecture (or for sm_90 without the "a" for the wgmma and
// setmaxnreg wrappers) these compile to nothing: their launchers check before they launch.

// mbarrier: a 64-bit shared-memory object with a phase bit, a count of pending arrivals and a count
// of pending transaction bytes. A phase completes when both reach zero; the barrier then re-arms
// with the count it was initialized with. Contract: one thread inits (count = arrivals per phase)
// before any use, then mbar_fence_init and a block (or cluster) barrier make the init visible (to
// the TMA and to the cluster). mbar_expect_tx is one arrival that also adds `bytes` to the phase's
// pending transaction count, which the TMA's completions (complete_tx) count down. mbar_wait(bar,
// parity) returns once the phase of that parity has completed: a consumer waits on parity 0, 1, 0,
// ... on successive uses; a producer waiting for a freshly initialized "empty" barrier passes
// parity 1, which counts as completed (the phase before the first); parity waits tell only the
// current phase from the one before, so a waiter must never run two phases ahead of a barrier.
// mbar_arrive_cluster arrives at the barrier at the same shared offset in block `cta` of the
// cluster: by default with release at cluster scope (the block's writes before it are visible to
// a waiter there that acquires at cluster scope); kRelease = false skips that fence (a costly
// MEMBAR.GPU) where the arrival only says "done reading", e.g. a consumer freeing a stage whose
// wgmma have retired.
__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void mbar_fence_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#endif
}
template <bool kRelease = true> __device__ __forceinline__ void mbar_arrive_cluster(uint64_t *bar, unsigned cta) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kRelease)
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\nmbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n" ::"r"(
                     smem_u32(bar)),
                 "r"(cta)
                 : "memory");
  else
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(smem_u32(bar)),
                 "r"(cta)
                 : "memory");
#endif
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
#endif
}
// kCluster: acquire at cluster scope (the arrivals came from other blocks' threads and what they
// wrote before is read next), else at block scope (enough for the TMA's bytes and this block).
template <bool kCluster = false> __device__ __forceinline__ bool mbar_try_wait(uint64_t *bar, unsigned parity) {
  uint32_t done = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kCluster)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(smem_u32(bar)), "r"(parity)
                 : "memory");
  else
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(smem_u32(bar)), "r"(parity)
                 : "memory");
#endif
  return done != 0;
}
template <bool kCluster = false> __device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
  while (!mbar_try_wait<kCluster>(bar, parity)) {
  }
}

// The cp.async copies this thread has issued so far arrive on `bar` once they have landed (each
// thread's call is one arrival, counted in the barrier's init count: the .noinc form). This lets
// threads that gather with cp.async feed an mbarrier pipeline as the TMA does; a consumer that reads
// the tile with wgmma (the async proxy) runs fence_proxy_async after its wait.
__device__ __forceinline__ void cp_async_mbar_arrive(uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#endif
}

// Orders this thread's earlier ordinary shared-memory writes before later reads by the async proxy
// (the TMA, wgmma): shared memory written with st.shared / stmatrix that a TMA store or a wgmma
// reads next needs it in each writing thread, before the barrier that hands the data over.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// TMA 2D tile load: the box of the tensor map `map` (a CUtensorMap in global, constant or
// __grid_constant__ parameter memory, built on the host: tma_map_2d in 1.8) whose first element
// has coordinates (c0 = innermost, c1) lands at dst (shared, aligned to 128 bytes; 1024 with the
// 128-byte swizzle), and completes `bytes of the box` on the mbarrier `bar` (the whole box counts,
// the zero-filled part outside the tensor too). _multicast writes the same box, and signals the
// barrier at the same offsets, in every block of the cluster whose bit is set in cta_mask (bit r =
// cluster rank r). One thread issues it. tma_prefetch_map brings the map into the cache early.
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
                   smem_u32(dst)),
               "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
               : "memory");
#endif
}
__device__ __forceinline__ void tma_load_2d_multicast(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1,
                                                      uint16_t cta_mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5}], [%2], "
      "%3;\n" ::"r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1)
      : "memory");
#endif
}
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap *map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
#endif
}

// Thread-block clusters: this block's rank in its cluster, and a barrier of every thread of the
// cluster (release / acquire: shared memory written before it is visible to the cluster after it).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
  return r;
}
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
// A barrier for `threads` threads (whole warps) of a block, numbered id (1..15; 0 is
// __syncthreads'): one warpgroup meets without stopping the others. Orders shared memory among them.
__device__ __forceinline__ void named_barrier(int id, int threads) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}
// Arrive at named barrier id without waiting: counts toward the `threads` that a named_barrier(id,
// threads) elsewhere waits for (one warpgroup signals another, which waits).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}

// wgmma shared-memory matrix descriptor for the 128-byte swizzle (the layout a TMA box with
// CU_TENSOR_MAP_SWIZZLE_128B writes: rows of 128 bytes, 16-byte chunk c of row r stored at chunk
// c ^ (r % 8), 8-row atoms of 1024 bytes, the tile 1024-byte aligned). An operand tile of 16-bit
// elements is either
//   K-major (rows along M or N, 64 elements of K per 128-byte row): sbo = 1024 (the next 8 rows),
//     lbo unused (16); the k-th 16-wide K step starts 32 * k bytes further;
//   MN-major (rows along K, 64 elements of M or N per row; the transposed operand): lbo = the
//     bytes from one 64-element M/N chunk to the next, sbo = 1024 (the next 8 K rows); the k-th
//     K step starts 16 * 128 * k bytes further.
// Bits: start address >> 4 (0-13), lbo >> 4 (16-29), sbo >> 4 (32-45), swizzle mode 1 = 128B (62-63).
// Adding (bytes >> 4) to the descriptor moves its start (within the 256 KB of shared memory).
__device__ __forceinline__ uint64_t wgmma_desc_sw128(const void *smem, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((smem_u32(smem) & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

// wgmma (sm_90a): D[64 x N] (+)= A[64 x 16] * B[16 x N], issued by a warpgroup (4 consecutive
// warps starting at a multiple of 4), every thread together, A and B read from shared memory
// through their descriptors, D in f32 registers. Thread l of warp w of the warpgroup holds
//   d[4j + 0, 1] = D[16w + l/4][8j + 2(l%4) + 0, 1]     d[4j + 2, 3] = D[16w + l/4 + 8][same]
// for j = 0 .. N/8 - 1 (the mma.sync C fragment, repeated along N). kTransA / kTransB: the operand
// is MN-major (A stored K x M, B stored K x N; the transposed layouts, 16-bit types only), else
// K-major. scale_d = 0 ignores D's old value (D = A * B), 1 accumulates. Sequence: wgmma_fence()
// (after any other access to d's registers), one or more wgmma_m64k16, wgmma_commit() (closes a
// group), wgmma_wait<n>() (until at most n groups are in flight; only then may d be read, or the
// operands' shared memory be overwritten). wgmma_fence_operand(d) pins d's registers at that point
// of the program, so the compiler neither reads them before a wait nor moves them around the
// asynchronous instructions.
__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void wgmma_wait() {
  static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes 0..7");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
template <int R> __device__ __forceinline__ void wgmma_fence_operand(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define GPUOPS__WGMMA_D32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define GPUOPS__WGMMA_D64 \
  GPUOPS__WGMMA_D32 ", " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GPUOPS__WGMMA_D128 \
  GPUOPS__WGMMA_D64 ", " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define GPUOPS__WGMMA_F8(d, i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define GPUOPS__WGMMA_F32(d, i) GPUOPS__WGMMA_F8(d, i), GPUOPS__WGMMA_F8(d, i + 8), GPUOPS__WGMMA_F8(d, i + 16), GPUOPS__WGMMA_F8(d, i + 24)
#define GPUOPS__WGMMA_F64(d, i) GPUOPS__WGMMA_F32(d, i), GPUOPS__WGMMA_F32(d, i + 32)
#define GPUOPS__WGMMA_F128(d, i) GPUOPS__WGMMA_F64(d, i), GPUOPS__WGMMA_F64(d, i + 64)
// One wgmma: N (a decimal literal), the input type's PTX name, the accumulators' placeholder list
// and constraint list, and the operand numbers of desc A (= N / 2) and the four operands after it.
#define GPUOPS__WGMMA(N, TY, DREGS, DCONS, A, B, S, TA, TB)                                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY \
               " {" DREGS "}, %" #A ", %" #B ", p, 1, 1, %" #TA ", %" #TB ";\n}\n"                                        \
               : DCONS                                                                                                    \
               : "l"(da), "l"(db), "r"(scale_d), "n"(kTransA ? 1 : 0), "n"(kTransB ? 1 : 0))

// T: __half or __nv_bfloat16; N: 64, 128 or 256.
template <class T, int N, bool kTransA, bool kTransB>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma_m64k16: N is 64, 128 or 256");
  static_assert(std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value, "wgmma_m64k16: f16 or bf16");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
  if constexpr (N == 64) {
    if constexpr (bf) GPUOPS__WGMMA(64, "bf16", GPUOPS__WGMMA_D32, GPUOPS__WGMMA_F32(d, 0), 32, 33, 34, 35, 36);
    else GPUOPS__WGMMA(64, "f16", GPUOPS__WGMMA_D32, GPUOPS__WGMMA_F32(d, 0), 32, 33, 34, 35, 36);
  } else if constexpr (N == 128) {
    if constexpr (bf) GPUOPS__WGMMA(128, "bf16", GPUOPS__WGMMA_D64, GPUOPS__WGMMA_F64(d, 0), 64, 65, 66, 67, 68);
    else GPUOPS__WGMMA(128, "f16", GPUOPS__WGMMA_D64, GPUOPS__WGMMA_F64(d, 0), 64, 65, 66, 67, 68);
  } else {
    if constexpr (bf) GPUOPS__WGMMA(256, "bf16", GPUOPS__WGMMA_D128, GPUOPS__WGMMA_F128(d, 0), 128, 129, 130, 131, 132);
    else GPUOPS__WGMMA(256, "f16", GPUOPS__WGMMA_D128, GPUOPS__WGMMA_F128(d, 0), 128, 129, 130, 131, 132);
  }
#else
  (void)d, (void)da, (void)db, (void)scale_d;
#endif
}

// wgmma with A from registers (sm_90a): D[64 x N] (+)= A[64 x 16] * B[16 x N], B from shared memory
// as for wgmma_m64k16. Warp w of the warpgroup holds rows 16 w .. 16 w + 15 of A in the mma.sync
// m16n8k16 A fragment (a[0] = A[l/4][2(l%4) + 0, 1], a[1] the row 8 below, a[2] and a[3] the same 8
// columns further), which is the accumulator layout of two adjacent 8-column groups of a previous
// wgmma rounded to pairs: a product's scores feed the next product without shared memory (the
// attention forward's P V). a must stay unmodified until the wgmma retires: wgmma_fence_operand(a)
// after the wait keeps the compiler from reusing its registers earlier.
#define GPUOPS__WGMMA_RS(N, TY, DREGS, DCONS, A0, A1, A2, A3, B, S, TB)                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY      \
               " {" DREGS "}, {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #B ", p, 1, 1, %" #TB ";\n}\n"                       \
               : DCONS                                                                                                       \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(kTransB ? 1 : 0))

// T: __half or __nv_bfloat16; N: 64 or 128.
template <class T, int N, bool kTransB>
__device__ __forceinline__ void wgmma_m64k16_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  static_assert(N == 64 || N == 128, "wgmma_m64k16_rs: N is 64 or 128");
  static_assert(std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value, "wgmma_m64k16_rs: f16 or bf16");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool bf = std::is_same<T, __nv_bfloat16>::value;
  if constexpr (N == 64) {
    if constexpr (bf) GPUOPS__WGMMA_RS(64, "bf16", GPUOPS__WGMMA_D32, GPUOPS__WGMMA_F32(d, 0), 32, 33, 34, 35, 36, 37, 38);
    else GPUOPS__WGMMA_RS(64, "f16", GPUOPS__WGMMA_D32, GPUOPS__WGMMA_F32(d, 0), 32, 33, 34, 35, 36, 37, 38);
  } else {
    if constexpr (bf) GPUOPS__WGMMA_RS(128, "bf16", GPUOPS__WGMMA_D64, GPUOPS__WGMMA_F64(d, 0), 64, 65, 66, 67, 68, 69, 70);
    else GPUOPS__WGMMA_RS(128, "f16", GPUOPS__WGMMA_D64, GPUOPS__WGMMA_F64(d, 0), 64, 65, 66, 67, 68, 69, 70);
  }
#else
  (void)d, (void)a, (void)db, (void)scale_d;
#endif
}
template <int R> __device__ __forceinline__ void wgmma_fence_operand(uint32_t (&a)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(a[i])::"memory");
}

// setmaxnreg (sm_90a): a warpgroup gives registers back to the SM (dec) or takes them (inc), so a
// producer warpgroup that only issues copies runs on few and the consumers get the rest. R: a
// multiple of 8 in 24..256. It takes effect only when the kernel has a register cap at entry
// (__launch_bounds__(threads, 1)) and each warpgroup's role is one branch of an if / else; every
// thread of the warpgroup executes it.
template <int R> __device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(R % 8 == 0 && R >= 24 && R <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}
template <int R> __device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(R % 8 == 0 && R >= 24 && R <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}

// ---- 1.5 The row engine ------------------------------------------------------------------------
// Dispatch policy shared by the streaming row kernels (reduce_rows, scan_rows): rows of up to
// kRowWarpMaxCols columns take one warp each, longer rows a block each.
constexpr int64_t kRowWarpMaxCols = 2048;
// Row kernels (softmax today, the norms next) hold a row of `cols` elements on chip: a warp, a block
// or a cluster of blocks per row by its length, E elements per thread, so the row is read from
// memory once and written once; rows too long for that stream through memory. This section holds
// the row engine's device side (access to a row in 16-byte pieces, the row-wide reductions, the
// cluster exchange); section 1.8 its launch side (launch_rows, row_clusters).
// V = 16 / sizeof(T) elements starting at column j (< cols) of a row: one 128-bit access when
// `vec` (every row pointer 16-byte aligned and cols % V == 0, decided once per launch), else
// element by element, columns past the end read as `pad` and not written.
template <int V, class T>
__device__ __forceinline__ void load_cols(const T *row, int64_t j, int64_t cols, bool vec, float pad, float (&v)[V]) {
  if (vec) {
    load_f32<V>(row, j, v);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = j + k < cols ? to_f32(row[j + k]) : pad;
  }
}
// Raw registers: the 16 bytes of V = 16 / sizeof(T) elements as stored, in a uint4: 16-bit types two
// to a register (half the registers of their f32 values), converted at each use. pack_raw rounds V
// f32 values to T (exact for values of T), unpack_raw converts back (exact).
template <class T> __device__ __forceinline__ uint4 pack_raw(const float (&v)[16 / sizeof(T)]) {
  if constexpr (sizeof(T) == 4) {
    return make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
  } else {  // in registers: store_f32 writes global memory (st.global), never a local
    return make_uint4(pair_of<T>::pack(v[0], v[1]), pair_of<T>::pack(v[2], v[3]), pair_of<T>::pack(v[4], v[5]), pair_of<T>::pack(v[6], v[7]));
  }
}
template <class T> __device__ __forceinline__ void unpack_raw(const uint4 &q, float (&v)[16 / sizeof(T)]) {
  if constexpr (sizeof(T) == 4) {
    v[0] = __uint_as_float(q.x), v[1] = __uint_as_float(q.y), v[2] = __uint_as_float(q.z), v[3] = __uint_as_float(q.w);
  } else {
    const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = pair_of<T>::unpack(w[k]);
      v[2 * k] = f.x, v[2 * k + 1] = f.y;
    }
  }
}
// Hides q's value from the compiler (no instruction): a pass that converts q after it cannot reuse
// an earlier pass's f32 copy, which would keep 2x the registers live across passes.
__device__ __forceinline__ void opaque(uint4 &q) {
#if defined(__CUDA_ARCH__)
  asm volatile("" : "+r"(q.x), "+r"(q.y), "+r"(q.z), "+r"(q.w));
#endif
}
// The absent second array of a one-array walk (see sweep_row2): reads as zeros.
template <int V> __device__ __forceinline__ void load_cols(const none *, int64_t, int64_t, bool, float, float (&v)[V]) {
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] = 0.0f;
}
// A row at any alignment, walked from the 16-byte chunk its first element lies in: in the row's
// view (the row's pointer less lo elements, lo = its offset within that chunk), view columns
// [lo, n), n = lo + cols, are the row's columns 0 .. cols - 1. Where every array of a launch shares
// one phase (pointers congruent modulo 16, any pitch), the vectors wholly inside [lo, n) are 16-byte
// aligned in each array and move as one 128-bit access; only a row's first and last vectors go
// element by element. A row of cols columns spans at most cols + V - 1 view columns (the launcher
// sizes its configuration for that). kPhased is a kernel's compile-time choice: without it lo = 0,
// n = cols, and the accesses below are load_cols' and store_cols' (the aligned launch, every vector
// whole where `vec`, or the element path), with no per-vector test added to the aligned kernels
// (the test's registers took the f32 256-thread softmax forward from 80 to 128).
struct row_span {
  int64_t lo, n;
};
template <bool kPhased, class T> __device__ __forceinline__ row_span span_of(const T *row, int64_t cols) {
  const int64_t lo = kPhased ? (int64_t)((uintptr_t)row % 16 / sizeof(T)) : 0;
  return {lo, lo + cols};
}
// Whether the V-element vector at view column j lies inside [s.lo, s.n): s.lo <= j <= s.n - V as
// one unsigned compare of j - s.lo against cols - V (j below s.lo wraps past it), once the row has
// V columns or more (a test of the row alone, which the compiler hoists out of a thread's vectors).
template <int V> __device__ __forceinline__ bool span_whole(int64_t j, row_span s) {
  const int64_t cols = s.n - s.lo;
  return cols >= V && (uint64_t)(j - s.lo) <= (uint64_t)(cols - V);
}
// A row's edge vector (partly outside [s.lo, s.n)) element by element, columns outside `pad`
// and never touched; and its store, columns outside not written.
template <int V, class T> __device__ __forceinline__ void load_edge(const T *view, int64_t j, row_span s, float pad, float (&v)[V]) {
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] = j + k >= s.lo && j + k < s.n ? to_f32(view[j + k]) : pad;
}
template <int V, class T> __device__ __forceinline__ void store_edge(T *view, int64_t j, row_span s, const float (&v)[V]) {
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (j + k >= s.lo && j + k < s.n) view[j + k] = from_f32<T>(v[k]);
}
// The same as calls (kOutline), in raw registers: a phased kernel meets at most two edge vectors a
// row, and their code inlined at each of a thread's vectors can take registers from the whole
// kernel. ptxas (sm_90a): the 16-bit softmax forward of 8 vectors a thread spilled 296 bytes at its
// 128 registers inline, 4 with the calls; the softmax backward ran slower with them (bf16 4095 x
// 4097 0.52 -> 0.39x copy, H200), and so keeps them inline.
template <class T> __device__ __noinline__ uint4 load_edge_call(const T *view, int64_t j, row_span s, float pad) {
  float v[16 / sizeof(T)];
  load_edge(view, j, s, pad, v);
  return pack_raw<T>(v);
}
template <class T> __device__ __noinline__ void store_edge_call(T *view, int64_t j, row_span s, uint4 q) {
  float v[16 / sizeof(T)];
  unpack_raw<T>(q, v);
  store_edge(view, j, s, v);
}
// load_cols over a view: V elements from view column j; one 128-bit access where `vec` (the launch
// is aligned, or phased) and the vector lies inside [s.lo, s.n), else load_edge.
template <int V, bool kPhased, bool kOutline = false, class T>
__device__ __forceinline__ void load_span(const T *view, int64_t j, row_span s, bool vec, float pad, float (&v)[V]) {
  if (!kPhased) load_cols<V>(view, j, s.n, vec, pad, v);
  else if (vec && span_whole<V>(j, s)) load_f32<V>(view, j, v);
  else if constexpr (kOutline) unpack_raw<T>(load_edge_call(view, j, s, pad), v);
  else load_edge(view, j, s, pad, v);
}
// load_span into raw registers (see pack_raw); view columns past the end (j itself may be) `pad`
// (softmax: -inf).
template <bool kPhased, bool kOutline = false, class T>
__device__ __forceinline__ uint4 load_raw(const T *view, int64_t j, row_span s, bool vec, float pad = -INFINITY) {
  constexpr int V = 16 / sizeof(T);
  float v[V];
  if (j < s.n) {
    // 16-bit types: the pairs as they are. f32 through load_span: the same LDG.128 with fewer
    // registers than a uint4 load.
    if constexpr (pair_of<T>::exists)
      if (vec && (!kPhased || span_whole<V>(j, s))) return *reinterpret_cast<const uint4 *>(view + j);
    if constexpr (kPhased && kOutline) return load_edge_call(view, j, s, pad);
    load_span<V, kPhased>(view, j, s, vec, pad, v);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = pad;
  }
  return pack_raw<T>(v);
}
// load_raw of a row without a view (columns 0 .. cols - 1 of row).
template <class T> __device__ __forceinline__ uint4 load_raw(const T *row, int64_t j, int64_t cols, bool vec, float pad = -INFINITY) {
  return load_raw<false>(row, j, row_span{0, cols}, vec, pad);
}
template <int V, class T> __device__ __forceinline__ void store_cols(T *row, int64_t j, int64_t cols, bool vec, const float (&v)[V]) {
  if (vec) {
    if constexpr (pair_of<T>::exists && V * sizeof(T) == 16) {
      // 16-bit types: one STG.128 (store_f32 beside the element path below comes out as four
      // STG.32: see store_global16).
      store_global16(row + j, pack_raw<T>(v));
    } else {
      store_f32<V>(row, j, v);  // f32: already one STG.128
    }
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (j + k < cols) row[j + k] = from_f32<T>(v[k]);
  }
}
// store_cols over a view (see load_span): view columns outside [s.lo, s.n) are not written.
template <int V, bool kPhased, bool kOutline = false, class T>
__device__ __forceinline__ void store_span(T *view, int64_t j, row_span s, bool vec, const float (&v)[V]) {
  if (!kPhased) store_cols<V>(view, j, s.n, vec, v);
  else if (vec && span_whole<V>(j, s)) store_cols<V>(view, j, s.n, true, v);
  else if constexpr (kOutline) store_edge_call(view, j, s, pack_raw<T>(v));  // pack_raw rounds as from_f32 does: the same bits
  else store_edge(view, j, s, v);
}
// store_span of raw registers (see pack_raw), for launches that are aligned (every vector whole) or
// phased: a whole vector as one 128-bit store, an edge element by element.
template <bool kPhased, bool kOutline = false, class T> __device__ __forceinline__ void store_raw_span(T *view, int64_t j, row_span s, uint4 q) {
  constexpr int V = 16 / sizeof(T);
  if (!kPhased || span_whole<V>(j, s)) {
    store_global16(view + j, q);
  } else if constexpr (kOutline) {
    store_edge_call(view, j, s, q);
  } else {
    float v[V];
    unpack_raw<T>(q, v);
    store_edge(view, j, s, v);
  }
}
// f(i) for each element i of the V-vector at view column j that is a column of the row: all V
// where the vector is whole (without kPhased, every vector a kernel visits), else those inside
// [s.lo, s.n). For sums over a row whose edge vectors hold padding.
template <int V, bool kPhased, class F> __device__ __forceinline__ void span_for(int64_t j, row_span s, F &&f) {
  if (!kPhased || span_whole<V>(j, s)) {
#pragma unroll
    for (int i = 0; i < V; ++i) f(i);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i)
      if (j + i >= s.lo && j + i < s.n) f(i);
  }
}
// The columns of a row among the 32 vectors of a warp at view column jw (jw .. jw + 32 V - 1).
template <int V> __device__ __forceinline__ int64_t span_count_warp(int64_t jw, row_span s) {
  const int64_t a = jw > s.lo ? jw : s.lo, b = jw + 32 * V < s.n ? jw + 32 * V : s.n;
  return b > a ? b - a : 0;
}

// Row-wide reductions. A row is held by TPR consecutive threads of a one-dimensional block: a
// group of TPR = 1, 2, 4, 8 or 16 lanes (32 / TPR rows per warp: short rows), a warp (TPR = 32), a
// group of TPR / 32 warps (several rows per block), or the whole block (TPR = blockDim.x). Every
// thread of the block calls together (below a block: every lane of the warp, dead rows included);
// each gets its row's result, the same bits in every thread of the row (a fixed order: group or
// warp butterflies, then the group's warps in order).
// row_reduce: K values at once, each reduced by op, with one pair of barriers for all K (none up
// to a warp); scratch is __shared__ float[32 * K] of the caller's, free again when the call returns
// (it begins with a barrier). With TPR = blockDim.x it is block_reduce, value by value.
template <int TPR, int K, class Op> __device__ __forceinline__ void row_reduce(float (&v)[K], Op op, float identity, float *scratch) {
#pragma unroll
  for (int i = 0; i < K; ++i) v[i] = warp_reduce<(TPR < 32 ? TPR : 32)>(v[i], op);
  if constexpr (TPR > 32) {
    constexpr int W = TPR / 32;  // warps per row
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, first = warp / W * W;
    __syncthreads();  // an earlier call's readers are done with scratch
    if (lane == 0)
#pragma unroll
      for (int i = 0; i < K; ++i) scratch[i * 32 + warp] = v[i];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < K; ++i) v[i] = warp_reduce(lane < W ? scratch[i * 32 + first + lane] : identity, op);
  }
}
template <int TPR> __device__ __forceinline__ float row_max(float m, float *fscratch) {
  float v[1] = {m};
  row_reduce<TPR>(v, maximum(), -INFINITY, fscratch);
  return v[0];
}
template <int TPR> __device__ __forceinline__ float row_sum(float s, float *fscratch) {
  float v[1] = {s};
  row_reduce<TPR>(v, plus(), 0.0f, fscratch);
  return v[0];
}
// row_stats: the Welford state (section 1.3) of a row held by TPR threads, each warp having taken
// its exact two-pass statistics (n_w, s_w = the sum of its shifted elements, mean_w, m2_w): the
// warps' squared deviations added about the row's exact mean, m2 = sum of m2_w + n_w (mean_w -
// mean)^2 (the norms' forward, section 8.3), over the W = TPR / 32 warps of the thread's group (TPR > 32: through
// `warps`, __shared__ float4[block threads / 32], two barriers, then shuffles over W lanes; the same
// bits in every thread and on every run: a fixed order).
template <int TPR>
__device__ __forceinline__ welford row_stats(float n_w, float s_w, float mean_w, float m2_w, float4 *warps) {
  if constexpr (TPR == 32) {
    (void)s_w, (void)warps;
    return welford{n_w, mean_w, m2_w};
  } else {
    constexpr int W = TPR / 32;
    const int warp = threadIdx.x >> 5;
    __syncthreads();  // an earlier row's readers are done with `warps`
    if ((threadIdx.x & 31) == 0) warps[warp] = make_float4(n_w, s_w, mean_w, m2_w);
    __syncthreads();
    // Lane i of each W lanes holds warp i's state; warp_reduce<W> gives every lane the same sums.
    const float4 e = warps[warp / W * W + (threadIdx.x & (W - 1))];
    const float n = warp_reduce<W>(e.x, plus()), sum = warp_reduce<W>(e.y, plus());
    const float mean = n > 0.0f ? sum / n : 0.0f, d = e.z - mean;
    const float m2 = warp_reduce<W>(fmaf(e.x * d, d, e.w), plus());
    return welford{n, mean, m2};
  }
}

// The state of a whole row from this block's state b (a row's state: online_softmax, welford, a
// few sums): b itself, or with clusters the merge of the cluster's blocks' states, merge(all, b_r)
// for ranks r = 0, 1, ... from `empty` (the same order in every block: the same bits); with
// ranks >= 0 only ranks r < ranks (ranks = this block's rank: the exclusive prefix, a scan's
// carry; without clusters, b or, for ranks = 0, empty).
// The exchange (compute capability 9.0+) has no cluster barrier: thread 0 of each block stores b
// into this block's slot in every block of the cluster, one st.async each (a store to distributed
// shared memory that counts its bytes down on the receiving block's mbarrier), and every thread
// waits on its own block's barrier, then reads the slots locally. A cluster barrier costs a row more
// than its latency: its release is a MEMBAR.ALL.GPU, which holds each thread until every load it
// has in flight is back (a row prefetched into registers included), and its acquire invalidates L1
// (H100: the norm backward at bf16 rows of 65536 0.68x -> 0.83x copy, docs/performance.md).
// share: __shared__ cluster_share<S> of the caller's, armed by cluster_share_init (every thread, once,
// before the first row); `row` counts the calls (0, 1, ...): its parity picks the slots and the
// barrier. After its wait, thread 0 arms that barrier for row + 2 (expects C states), before the
// block sends row + 1, so every byte of row + 2 lands after the arming. A block writes into
// another's slots for row + 2 only once it has every state of row + 1, which that block sends only
// after a block-wide barrier that follows its threads' reads of this row's slots (each caller's
// block reduction begins with one): two sets of slots suffice. cluster_done must follow the last
// row. Cluster-uniform calls, every thread.
constexpr int kClusterShareMax = 16;  // the largest cluster of a row (non-portable sizes included)
template <class S> struct cluster_share {
  static constexpr int kWords = sizeof(S) <= 4 ? 1 : sizeof(S) <= 8 ? 2 : 4;  // one st.async: b32, v2 or v4
  static_assert(sizeof(S) <= 16, "a row state of at most 16 bytes");
  static __host__ __device__ constexpr unsigned row_bytes(int cluster) { return (unsigned)(cluster * kWords * 4); }  // a row's arrivals
  alignas(16) uint32_t w[2][kClusterShareMax][kWords];  // [row parity][sender's rank]
  uint64_t bar[2];
};
template <class S> __device__ __forceinline__ void cluster_share_init(cluster_share<S> &sh, int cluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (cluster > 1) {
    if (threadIdx.x == 0) {
      for (int k = 0; k < 2; ++k) {
        mbar_init(&sh.bar[k], 1);
        mbar_expect_tx(&sh.bar[k], sh.row_bytes(cluster));
      }
      mbar_fence_init();
    }
    cluster_sync();  // every block's barriers armed before any block stores into them
  }
#else
  (void)sh, (void)cluster;
#endif
}
// W 32-bit words (1, 2 or 4; dst 4 W-byte aligned) into `dst` of block `cta` of the cluster (the
// same shared offset there), counting 4 W bytes down on the barrier at `bar`'s offset there.
template <int W> __device__ __forceinline__ void st_async_cluster(uint32_t *dst, const uint32_t (&v)[W], uint64_t *bar, unsigned cta) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t d = smem_u32(dst), b = smem_u32(bar);
  if constexpr (W == 1)
    asm volatile("{\n.reg .b32 ra, rb;\nmapa.shared::cluster.u32 ra, %0, %2;\nmapa.shared::cluster.u32 rb, %1, %2;\n"
                 "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [ra], %3, [rb];\n}\n" ::"r"(d),
                 "r"(b), "r"(cta), "r"(v[0])
                 : "memory");
  else if constexpr (W == 2)
    asm volatile("{\n.reg .b32 ra, rb;\nmapa.shared::cluster.u32 ra, %0, %2;\nmapa.shared::cluster.u32 rb, %1, %2;\n"
                 "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [ra], {%3, %4}, [rb];\n}\n" ::"r"(d),
                 "r"(b), "r"(cta), "r"(v[0]), "r"(v[1])
                 : "memory");
  else
    asm volatile("{\n.reg .b32 ra, rb;\nmapa.shared::cluster.u32 ra, %0, %2;\nmapa.shared::cluster.u32 rb, %1, %2;\n"
                 "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [ra], {%3, %4, %5, %6}, [rb];\n}\n" ::"r"(d),
                 "r"(b), "r"(cta), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
                 : "memory");
#endif
}
template <class S, class Merge>
__device__ __forceinline__ S cluster_merge(S b, int cluster, cluster_share<S> &sh, int row, S empty, Merge merge, int ranks = -1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (cluster > 1) {
    constexpr int W = cluster_share<S>::kWords;
    const int slot = row & 1;
    if (threadIdx.x == 0) {
      uint32_t v[W] = {}, *mine = sh.w[slot][cluster_rank()];
      memcpy(v, &b, sizeof(S));
      for (int q = 0; q < cluster; ++q) st_async_cluster<W>(mine, v, &sh.bar[slot], (unsigned)q);
    }
    mbar_wait(&sh.bar[slot], (unsigned)(row >> 1) & 1u);
    if (threadIdx.x == 0) mbar_expect_tx(&sh.bar[slot], sh.row_bytes(cluster));  // armed for row + 2
    S all = empty;
    const int upto = ranks < 0 ? cluster : ranks;
    for (int r = 0; r < upto; ++r) {
      S o;
      memcpy(&o, sh.w[slot][r], sizeof(S));
      merge(all, o);
    }
    return all;
  }
#else
  if (cluster > 1) __trap();  // the launcher never asks (it checks the kernel's architecture)
  (void)sh, (void)row, (void)merge;
#endif
  return ranks == 0 ? empty : b;
}
__device__ __forceinline__ online_softmax cluster_state(online_softmax b, int cluster, cluster_share<online_softmax> &share, int row) {
  return cluster_merge(b, cluster, share, row, online_softmax::identity(), [](online_softmax &a, const online_softmax &o) { a.merge(o); });
}
// The cluster size of a row kernel with TPR threads a row: p.cluster where a row is whole blocks of
// 256 or more threads (the only row kernels launched in clusters), else 1 at compile time, which
// leaves the cluster code out of the kernels of several rows a block.
template <int TPR> __device__ __forceinline__ int row_cluster(int cluster) { return TPR >= 256 ? cluster : 1; }
__device__ __forceinline__ void cluster_done(int cluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (cluster > 1) cooperative_groups::this_cluster().sync();
#else
  (void)cluster;
#endif
}

template <int TPR> __host__ __device__ constexpr int block_threads() { return TPR < kBlock ? kBlock : TPR; }

// The row loop of a row kernel (TPR threads per row, a block of block_threads<TPR>() threads, so
// RPB = block_threads / TPR rows per block): f(r, live) for this thread's rows first + the thread's
// row of the block, + step, ... The rows that share shuffles or barriers take the same trips: below
// a warp the warp's 32 / TPR rows (their shuffles take the full mask), for groups of warps below a
// block (TPR = 64, 128) the block's rows (their reductions take block-wide barriers). The loop runs
// while the first of those rows exists, and rows past the end come with live = false, to be
// computed on padding and never stored. A warp per row, or a block, just ends: live is true.
template <int TPR, class F> __device__ __forceinline__ void for_each_row(int64_t rows, int64_t first, int64_t step, F f) {
  constexpr int RPS = TPR < 32 ? 32 / TPR : TPR == 32 ? 1 : block_threads<TPR>() / TPR;  // rows in step
  const int in_block = (int)threadIdx.x / TPR;
  for (int64_t lead = first + in_block / RPS * RPS; lead < rows; lead += step) {
    const int64_t r = lead + in_block % RPS;
    f(r, r < rows);
  }
}

// Packed rows: rows shorter than a vector (C = cols < V = 16 / sizeof(T) columns, stored
// contiguously), several whole rows per thread. A thread holds K consecutive rows, K * C
// consecutive elements that are NV whole 16-byte vectors (lcm(C, V) / V of them, at least 2 so that
// 32 bytes a thread are in flight): f32 C = 1 holds 8 rows in 2 vectors, C = 3 4 rows in 3. Every
// loaded byte is a row's, and each row's reductions run in the thread's registers: no shuffles, no
// padding arithmetic. Chunk g of a thread is rows g * K .. g * K + K - 1.
template <class T, int C> struct packed_rows {
  static_assert(C >= 1 && C < 16 / (int)sizeof(T), "packed rows are shorter than a vector");
  static constexpr int V = 16 / (int)sizeof(T);
  static constexpr int NV = C / (C & -C) > 1 ? C / (C & -C) : 2;  // C / gcd(C, V): V is a power of 2
  static constexpr int N = NV * V, K = N / C;                      // elements and rows a thread holds
};
// Chunk g (elements [g * N, g * N + N) of x, n elements in all) as f32: NV 128-bit loads when `vec`
// (x 16-byte aligned) and the chunk is whole, else element by element, past n `pad`.
template <class T, int C>
__device__ __forceinline__ void load_packed(const T *x, int64_t g, int64_t n, bool vec, float pad, float (&v)[packed_rows<T, C>::N]) {
  using P = packed_rows<T, C>;
  const int64_t at = g * P::N;
  if (vec && at + P::N <= n) {
#pragma unroll
    for (int u = 0; u < P::NV; ++u) {
      float w[P::V];
      load_f32<P::V>(x, at + u * P::V, w);
#pragma unroll
      for (int k = 0; k < P::V; ++k) v[u * P::V + k] = w[k];
    }
  } else {
#pragma unroll
    for (int k = 0; k < P::N; ++k) v[k] = at + k < n ? to_f32(x[at + k]) : pad;
  }
}
// The converse: chunk g of y, elements past n not written.
template <class T, int C>
__device__ __forceinline__ void store_packed(T *y, int64_t g, int64_t n, bool vec, const float (&v)[packed_rows<T, C>::N]) {
  using P = packed_rows<T, C>;
  const int64_t at = g * P::N;
  if (vec && at + P::N <= n) {
#pragma unroll
    for (int u = 0; u < P::NV; ++u) {
      float w[P::V];
#pragma unroll
      for (int k = 0; k < P::V; ++k) w[k] = v[u * P::V + k];
      store_cols<P::V>(y, at + u * P::V, n, true, w);
    }
  } else {
#pragma unroll
    for (int k = 0; k < P::N; ++k)
      if (at + k < n) y[at + k] = from_f32<T>(v[k]);
  }
}
// The packed row loop: f(g) for this thread's chunks g of ceil(rows / K), grid-strided (threads are
// independent: no warp-uniform trip count needed).
template <class T, int C, class F> __device__ __forceinline__ void for_each_packed(int64_t rows, F f) {
  const int64_t chunks = (rows + packed_rows<T, C>::K - 1) / packed_rows<T, C>::K;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < chunks; g += (int64_t)gridDim.x * blockDim.x) f(g);
}
// The short-row choices of a launcher (host side), as compile-time constants for its kernels:
// with_group_lanes<V, MaxTPR>(cols, f) calls f(std::integral_constant<int, TPR>()) with the smallest
// TPR = 1, 2, 4, ..., MaxTPR whose lanes hold cols with one V-element vector each (the caller checks
// cols <= MaxTPR * V); with_packed_cols<V>(cols, f) calls f(std::integral_constant<int, C>()) with
// C = cols, for 1 <= cols < V (packed rows).
template <int V, int MaxTPR, int TPR = 1, class F> auto with_group_lanes(int64_t cols, F f) {
  if constexpr (TPR < MaxTPR)
    if (cols > TPR * V) return with_group_lanes<V, MaxTPR, 2 * TPR>(cols, f);
  return f(std::integral_constant<int, TPR>());
}
template <int V, int C = 1, class F> auto with_packed_cols(int64_t cols, F f) {
  if constexpr (C + 1 < V)
    if (cols > C) return with_packed_cols<V, C + 1>(cols, f);
  return f(std::integral_constant<int, C>());
}

// The streaming form, for rows too long to hold: a block walks a row, threads side by side along
// it, U vectors of each array per thread loaded before the first is used (stream_u: 16 elements).
template <class T> __host__ __device__ constexpr int stream_u() { return sizeof(T) == 4 ? 4 : 2; }

// sweep_row2: the row's columns this thread visits in arrays a and b (b may be `none`: zeros), U
// vectors of each at a time: f(j, step, va, vb) gets va[U][V] and vb[U][V], vector u starting at
// column j + u * step (step = blockDim.x * V); vectors past the row's end hold `pad` (the caller
// skips storing them). Threads past the row's end call f never. No barrier inside.
// kReverse walks the thread's trips last to first (the vectors within a trip still in order): a
// second pass over a row then starts with the columns the first pass read last, which are the
// likeliest still in L2.
template <int V, int U, bool kReverse = false, class A, class B, class F>
__device__ __forceinline__ void sweep_row2(const A *a, const B *b, int64_t cols, bool vec, float pad, F f) {
  const int64_t step = (int64_t)blockDim.x * V, first = (int64_t)threadIdx.x * V;
  const int64_t trips = first < cols ? (cols - first - 1) / (U * step) + 1 : 0;
  for (int64_t i = 0; i < trips; ++i) {
    const int64_t j = first + (kReverse ? trips - 1 - i : i) * (U * step);
    float va[U][V], vb[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (j + u * step < cols) {
        load_cols<V>(a, j + u * step, cols, vec, pad, va[u]);
        load_cols<V>(b, j + u * step, cols, vec, pad, vb[u]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) va[u][k] = vb[u][k] = pad;
      }
    }
    f(j, step, va, vb);
  }
}
// sweep_row: one array, stream_u<T>() vectors in flight: f(j, step, v).
template <int V, bool kReverse = false, class T, class F>
__device__ __forceinline__ void sweep_row(const T *row, int64_t cols, bool vec, float pad, F f) {
  constexpr int U = stream_u<T>();
  sweep_row2<V, U, kReverse>(row, (const none *)nullptr, cols, vec, pad,
                   [&](int64_t j, int64_t step, const float (&v)[U][V], const float (&)[U][V]) { f(j, step, v); });
}

// Split rows: a few rows too long to hold on chip (rows x 1 block would leave most SMs idle) are
// each streamed by a cluster of C blocks (compute capability 9.0+; the launch side picks C, see
// split_cluster in 1.8). Block `rank` of a cluster (blockIdx.x % C) walks slice row_slice(cols, C,
// rank) of the row with the sweep above; the slices' states meet through distributed shared memory
// (cluster_merge: one exchange per row, every block merging in rank order, so the same bits
// on every run and in every block); a second pass (softmax) then writes each slice. Each byte is
// still read by one block's stream; rows x C blocks fill the SMs instead of rows. Slices have one
// width, a multiple of kSliceAlign columns, so that a 16-byte aligned row's slices start aligned
// and hold whole vectors (the last slice is shorter, or empty: an empty slice adds the identity).
constexpr int64_t kSliceAlign = 64;
struct col_range {
  int64_t begin, end;
};
__host__ __device__ __forceinline__ col_range row_slice(int64_t cols, int C, int rank) {
  const int64_t w = ((cols + C - 1) / C + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
  const int64_t b = (int64_t)rank * w < cols ? (int64_t)rank * w : cols;
  return {b, b + w < cols ? b + w : cols};
}
// The split row loop: f(r, slice, k) for rows r = cluster, + clusters, ... (uniform within a
// cluster, as cluster_merge needs), slice this block's columns, k the count of rows before (the
// `row` cluster_merge takes, with `share`, armed here); then cluster_done. Every thread of the block
// calls it.
template <class S, class F> __device__ __forceinline__ void for_each_split_row(int64_t rows, int64_t cols, int C, cluster_share<S> &share, F f) {
  const col_range slice = row_slice(cols, C, (int)(blockIdx.x % C));
  cluster_share_init(share, C);
  int k = 0;
  for (int64_t r = blockIdx.x / C; r < rows; r += gridDim.x / C, ++k) f(r, slice, k);
  cluster_done(C);
}

}  // namespace gpuops

// ---- 1.6 Activations: the math every family fuses ---------------------------------------------
// f32 in, f32 out. The elementwise family applies them one element at a time; the norms, the
// linear layers' epilogues and the convolutions fuse them into their stores. kFast: the forms
// 16-bit outputs use (MUFU approximations far under a 16-bit rounding).
namespace gpuops {

constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2/pi), GELU tanh form
constexpr float kGeluKappa = 0.044715f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;   // 1/sqrt(2 pi), the normal density
constexpr float kInvSqrt2 = 0.7071067811865476f;

// sigmoid(x) = 1 / (1 + e^-x). kFast (16-bit outputs): one MUFU.EX2 and one MUFU.RCP, as silu.
template <bool kFast = false> __device__ __forceinline__ float sigmoid(float x) {
  if constexpr (kFast) return rcp_approx(1.0f + exp2_approx(x * -kLog2e));
  else return 1.0f / (1.0f + expf(-x));
}

// GELU, exact form, PyTorch's formula (approximate='none'): x Phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt 2)).
// Accuracy: below x = -4 the sum 1 + erf cancels and Phi keeps only an absolute accuracy of about
// 6e-8, as in PyTorch; the erfc form would fix the tail but costs over twice the math, and a
// branch to it diverges across a warp on real data.
__device__ __forceinline__ float normal_cdf(float x) { return 0.5f * (1.0f + erff(x * kInvSqrt2)); }

// The normal CDF Phi(x) and density phi(x), branch-free, for 16-bit outputs (kFast below): with
// u = 1 / (1 + k |x|), Phi(-|x|) = u R(u) e^(-x^2 / 2), R a degree-7 polynomial fitted for this
// library (tools/fit_erfc.c: minimax relative error of R, Mills-ratio form, k = 0.35 / sqrt 2). The
// one exponential serves both outputs. Relative error of Phi(-|x|), the MUFU errors included:
// 2.3e-6 for |x| <= 5.5, 9.4e-6 down to x = -13.2; below that e^(-x^2 / 2) flushes to 0 (ftz), and
// Phi, phi with it: values under 2^-126, which only bf16 subnormals could hold. About 17
// instructions and 2 MUFU against about 28 and 1 for erff (whose two branches diverge on real data).
__device__ __forceinline__ float normal_cdf_pdf_fast(float x, float &pdf) {
  constexpr float k = 0.247487366f, C = -0.5f * kLog2e;
  constexpr float c0 = 9.873314202e-02f, c1 = 9.872654825e-02f, c2 = 9.295466542e-02f, c3 = 7.733615488e-02f,
                  c4 = 8.147186786e-02f, c5 = -7.274841424e-03f, c6 = 1.006046310e-01f, c7 = -4.255259037e-02f;
  const float u = rcp_approx(fmaf(k, fabsf(x), 1.0f));
  float r = fmaf(c7, u, c6);
  r = fmaf(r, u, c5), r = fmaf(r, u, c4), r = fmaf(r, u, c3), r = fmaf(r, u, c2), r = fmaf(r, u, c1), r = fmaf(r, u, c0);
  const float e = exp2_approx(C * (x * x));  // e^(-x^2 / 2)
  pdf = e * kInvSqrt2Pi;
  const float h = (u * r) * e;  // Phi(-|x|)
  return x < 0.0f ? h : 1.0f - h;
}
// kFast: 16-bit outputs (normal_cdf_pdf_fast); f32 keeps erff and expf.
template <bool kFast = false> __device__ __forceinline__ float gelu_erf(float x) {
  if constexpr (kFast) {
    float pdf;
    return x * normal_cdf_pdf_fast(x, pdf);
  } else {
    return x * normal_cdf(x);
  }
}
template <bool kFast = false> __device__ __forceinline__ float gelu_erf_grad(float x) {
  if constexpr (kFast) {
    float pdf;
    const float cdf = normal_cdf_pdf_fast(x, pdf);
    return fmaf(x, pdf, cdf);
  } else {
    return normal_cdf(x) + x * kInvSqrt2Pi * expf(-0.5f * x * x);
  }
}

// GELU, tanh form: 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
// kFast (what 16-bit outputs use): e^-2u as 2^(x (c1 + c2 x^2)) and the division as a reciprocal, 7
// instructions instead of about 25. Relative error under 2^-22 + |2u| 2^-24, below 2^-16 wherever the
// result is not 0: far under a 16-bit rounding (2^-11 f16, 2^-8 bf16). Results under 2^-126 / |x|
// flush to 0 (none is an f16 number). f32 outputs keep expf and the IEEE division.
template <bool kFast = false> __device__ __forceinline__ float gelu_tanh(float x) {
  if constexpr (kFast) {
    constexpr float c1 = -2.0f * kSqrt2OverPi * kLog2e, c2 = c1 * kGeluKappa;
    return x * rcp_approx(1.0f + exp2_approx(x * fmaf(c2, x * x, c1)));
  } else {
    const float u = kSqrt2OverPi * (x + kGeluKappa * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
  }
}
// d/dx x s(2u) = s + 2 x s (1 - s) u'. Where s saturates the second term is exactly 0; the select
// keeps it from turning into 0 * inf for huge |x|. kFast: s as in gelu_tanh's fast form (one
// MUFU.EX2, one MUFU.RCP; relative error under 2^-21), for 16-bit results.
template <bool kFast = false> __device__ __forceinline__ float gelu_tanh_grad(float x) {
  float s;
  if constexpr (kFast) {
    constexpr float c1 = -2.0f * kSqrt2OverPi * kLog2e, c2 = c1 * kGeluKappa;
    s = rcp_approx(1.0f + exp2_approx(x * fmaf(c2, x * x, c1)));
  } else {
    const float u = kSqrt2OverPi * (x + kGeluKappa * x * x * x);
    s = 1.0f / (1.0f + expf(-2.0f * u));
  }
  const float k = 2.0f * s * (1.0f - s);
  return s + (k == 0.0f ? 0.0f : x * k * kSqrt2OverPi * (1.0f + 3.0f * kGeluKappa * x * x));
}

// SiLU (Swish): x * sigmoid(x). kFast as in gelu_tanh: one MUFU.EX2 and one MUFU.RCP, the floor.
template <bool kFast = false> __device__ __forceinline__ float silu(float x) {
  if constexpr (kFast) return x * rcp_approx(1.0f + exp2_approx(x * -kLog2e));
  else return x / (1.0f + expf(-x));
}
template <bool kFast = false> __device__ __forceinline__ float silu_grad(float x) {
  const float s = sigmoid<kFast>(x);
  return s * (1.0f + x * (1.0f - s));
}

// ReLU with PyTorch's NaN and gradient conventions.
__device__ __forceinline__ float relu(float x) { return x < 0.0f ? 0.0f : x; }
__device__ __forceinline__ float relu_grad_times(float dy, float x) { return x <= 0.0f ? 0.0f : dy; }

// One switch for every fused activation (gpuops_activation): act(x) and dy * act'(x).
template <int kAct, bool kFast = false> __device__ __forceinline__ float activate(float x) {
  if constexpr (kAct == GPUOPS_ACT_GELU_ERF) return gelu_erf<kFast>(x);
  else if constexpr (kAct == GPUOPS_ACT_GELU_TANH) return gelu_tanh<kFast>(x);
  else if constexpr (kAct == GPUOPS_ACT_SILU) return silu<kFast>(x);
  else if constexpr (kAct == GPUOPS_ACT_RELU) return relu(x);
  else return x;
}
template <int kAct, bool kFast = false> __device__ __forceinline__ float activate_grad_times(float dy, float x) {
  if constexpr (kAct == GPUOPS_ACT_GELU_ERF) return dy * gelu_erf_grad<kFast>(x);
  else if constexpr (kAct == GPUOPS_ACT_GELU_TANH) return dy * gelu_tanh_grad<kFast>(x);
  else if constexpr (kAct == GPUOPS_ACT_SILU) return dy * silu_grad(x);
  else if constexpr (kAct == GPUOPS_ACT_RELU) return relu_grad_times(dy, x);
  else return dy;
}
// The same with the activation a run-time value (uniform across the launch, so the switch is a
// uniform branch): for epilogues that serve every activation from one compiled kernel.
template <bool kFast = false> __device__ __forceinline__ float activate_dyn(int act, float x) {
  switch (act) {
  case GPUOPS_ACT_GELU_ERF: return activate<GPUOPS_ACT_GELU_ERF, kFast>(x);
  case GPUOPS_ACT_GELU_TANH: return activate<GPUOPS_ACT_GELU_TANH, kFast>(x);
  case GPUOPS_ACT_SILU: return activate<GPUOPS_ACT_SILU, kFast>(x);
  case GPUOPS_ACT_RELU: return relu(x);
  default: return x;
  }
}
// act(x) for every element of v, the run-time switch taken once for the whole array: each case is
// one straight run of the activation's code, so the instructions executed are contiguous (what a
// per-element switch interleaves with the untaken cases' code).
template <bool kFast = false, int N> __device__ __forceinline__ void activate_all(int act, float (&v)[N]) {
  switch (act) {
  case GPUOPS_ACT_GELU_ERF:
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = activate<GPUOPS_ACT_GELU_ERF, kFast>(v[i]);
    break;
  case GPUOPS_ACT_GELU_TANH:
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = activate<GPUOPS_ACT_GELU_TANH, kFast>(v[i]);
    break;
  case GPUOPS_ACT_SILU:
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = activate<GPUOPS_ACT_SILU, kFast>(v[i]);
    break;
  case GPUOPS_ACT_RELU:
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = relu(v[i]);
    break;
  default: break;
  }
}
template <bool kFast = false> __device__ __forceinline__ float activate_grad_times_dyn(int act, float dy, float x) {
  switch (act) {
  case GPUOPS_ACT_GELU_ERF: return activate_grad_times<GPUOPS_ACT_GELU_ERF, kFast>(dy, x);
  case GPUOPS_ACT_GELU_TANH: return activate_grad_times<GPUOPS_ACT_GELU_TANH, kFast>(dy, x);
  case GPUOPS_ACT_SILU: return activate_grad_times<GPUOPS_ACT_SILU>(dy, x);
  case GPUOPS_ACT_RELU: return relu_grad_times(dy, x);
  default: return dy;
  }
}

}  // namespace gpuops

// ---- 1.7 The Hopper GEMM engine: warp-specialized wgmma, and the epilogue of every GEMM -----------
// The product kernel that the GEMM family (9) and convolution's WGMMA version (11) both run, and
// gemm_epilogue, the one epilogue of the library's matrix products (bias, activation, residual,
// pre-activation). Its launch side is in 1.8.
namespace gpuops {

// Two adjacent elements of TC as one access (p aligned to the pair): a 32-bit word for 16-bit TC, a
// float2 for f32, kept raw until unpacked.
template <class TC> struct gemm_pair {
  using word = typename std::conditional<std::is_same<TC, float>::value, float2, uint32_t>::type;
  static constexpr uintptr_t kAlign = 2 * sizeof(TC);
  static __device__ __forceinline__ word load(const TC *p) { return *reinterpret_cast<const word *>(p); }
  static __device__ __forceinline__ float2 unpack(word w) {
    if constexpr (std::is_same<TC, float>::value) return w;
    else return pair_of<TC>::unpack(w);
  }
  static __device__ __forceinline__ void store(TC *p, float v0, float v1) {
    if constexpr (std::is_same<TC, float>::value) *reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
    else *reinterpret_cast<uint32_t *>(p) = pair_of<TC>::pack(v0, v1);
  }
};

// One or two adjacent elements of TC at p as f32 (two: p[0], p[1]; one: p[0], v1 = 0). The pair
// moves as one access when p is aligned to it.
template <class TC> __device__ __forceinline__ void gemm_load_pair(const TC *p, bool two, float &v0, float &v1) {
  if (two && ((uintptr_t)p & (gemm_pair<TC>::kAlign - 1)) == 0) {
    const float2 v = gemm_pair<TC>::unpack(gemm_pair<TC>::load(p));
    v0 = v.x, v1 = v.y;
    return;
  }
  v0 = to_f32(p[0]);
  v1 = two ? to_f32(p[1]) : 0.0f;
}
template <class TC> __device__ __forceinline__ void gemm_store_pair(TC *p, bool two, float v0, float v1) {
  if (two && ((uintptr_t)p & (gemm_pair<TC>::kAlign - 1)) == 0) {
    gemm_pair<TC>::store(p, v0, v1);
    return;
  }
  p[0] = from_f32<TC>(v0);
  if (two) p[1] = from_f32<TC>(v1);
}

// The epilogue (gpuops.h section 9's order): v = alpha acc + beta C + bias; preact = v; v =
// act(v) + residual; C = v. Built once by the launcher (gemm_epilogue_of), passed by value.
// 16-bit outputs use the activations' kFast forms. Cost per element: a few FMAs, plus the
// activation; against 2k flops of the product it is noise for k >= a few hundred.
template <class TC> struct gemm_epilogue {
  TC *c;
  const TC *bias, *residual;  // NULL: none
  TC *preact;                 // NULL: not written
  int64_t m, n, ldc, ldr, ldp;
  float alpha, beta;
  int act;  // gpuops_activation

  // Nothing past alpha and beta: gemm_epilogue_plain computes the same.
  __host__ __device__ bool plain() const { return !bias && !residual && !preact && act == GPUOPS_ACT_NONE; }

  __device__ __forceinline__ void operator()(int64_t row, int64_t col, float acc0, float acc1) const {
    if (row >= m || col >= n) return;
    const bool two = col + 1 < n;
    TC *cp = c + (row * ldc + col);
    float v0 = alpha * acc0, v1 = alpha * acc1;
    if (beta != 0.0f) {
      float c0, c1;
      gemm_load_pair(cp, two, c0, c1);
      v0 = fmaf(beta, c0, v0), v1 = fmaf(beta, c1, v1);
    }
    if (bias) {
      float b0, b1;
      gemm_load_pair(bias + col, two, b0, b1);
      v0 += b0, v1 += b1;
    }
    if (preact) gemm_store_pair(preact + (row * ldp + col), two, v0, v1);
    constexpr bool kFast = !std::is_same<TC, float>::value;
    v0 = activate_dyn<kFast>(act, v0), v1 = activate_dyn<kFast>(act, v1);
    if (residual) {
      float r0, r1;
      gemm_load_pair(residual + (row * ldr + col), two, r0, r1);
      v0 += r0, v1 += r1;
    }
    gemm_store_pair(cp, two, v0, v1);
  }

  using pair = gemm_pair<TC>;
  using word = typename pair::word;  // a pair as rows() takes it (bias_word)
  // Whether every pair at an even column moves as one access: C, bias, residual and preact
  // aligned to a pair, their leading dimensions even. Uniform over the launch.
  __device__ __forceinline__ bool pairs_aligned() const {
    const uintptr_t ptrs = (uintptr_t)c | (uintptr_t)bias | (uintptr_t)residual | (uintptr_t)preact;
    return (ptrs & (pair::kAlign - 1)) == 0 && ((ldc | (residual ? ldr : 0) | (preact ? ldp : 0)) & 1) == 0;
  }
  // Whether the pair at col is whole and moves as one access: rows() takes it (else operator()).
  __device__ __forceinline__ bool whole_pair(int64_t col) const { return col + 1 < n && pairs_aligned(); }
  // The bias pair at col as rows() takes it, raw (unpacked where used, so that a load issued a
  // chunk ahead is not waited for at once); loaded only where whole_pair(col).
  __device__ __forceinline__ word bias_word(int64_t col) const {
    word w = {};
    if (bias && whole_pair(col)) w = pair::load(bias + col);
    return w;
  }

  // The same as N calls of operator() for the pair at col of rows row0 + i STEP (the staged WGMMA
  // epilogue's form), for a col where whole_pair(col), the bias pair given as bias_word(col):
  // straight-line code, every step over all 2N values (one C load, bias add, preact store,
  // activation, residual add and store per pair, rows past m predicated), the loads of C and the
  // residual issued together before the first store (the per-pair form cannot hoist a load above
  // the previous pair's store, which may alias it) and the activation's switch taken once
  // (activate_all). The same bits as operator().
  template <int N, int STEP>
  __device__ __forceinline__ void rows(int64_t row0, int64_t col, word bw, const float (&a0)[N], const float (&a1)[N]) const {
    const int64_t left = m - row0;  // rows i with i STEP < left exist
    float v[2 * N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[2 * i] = alpha * a0[i], v[2 * i + 1] = alpha * a1[i];
    if (beta != 0.0f) {
      word w[N];
#pragma unroll
      for (int i = 0; i < N; ++i) w[i] = i * STEP < left ? pair::load(c + ((row0 + i * STEP) * ldc + col)) : word{};
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float2 x = pair::unpack(w[i]);
        v[2 * i] = fmaf(beta, x.x, v[2 * i]), v[2 * i + 1] = fmaf(beta, x.y, v[2 * i + 1]);
      }
    }
    if (bias) {
      const float2 b = pair::unpack(bw);
#pragma unroll
      for (int i = 0; i < N; ++i) v[2 * i] += b.x, v[2 * i + 1] += b.y;
    }
    if (preact)
#pragma unroll
      for (int i = 0; i < N; ++i)
        if (i * STEP < left) pair::store(preact + ((row0 + i * STEP) * ldp + col), v[2 * i], v[2 * i + 1]);
    activate_all<!std::is_same<TC, float>::value>(act, v);
    if (residual) {
      word w[N];
#pragma unroll
      for (int i = 0; i < N; ++i) w[i] = i * STEP < left ? pair::load(residual + ((row0 + i * STEP) * ldr + col)) : word{};
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float2 x = pair::unpack(w[i]);
        v[2 * i] += x.x, v[2 * i + 1] += x.y;
      }
    }
#pragma unroll
    for (int i = 0; i < N; ++i)
      if (i * STEP < left) pair::store(c + ((row0 + i * STEP) * ldc + col), v[2 * i], v[2 * i + 1]);
  }
};

// gemm_wgmma: C = epi(op(A) @ op(B)) for f16 / bf16 A and B, f32 accumulation, on sm_90a.
// Why it is fast: the tensor cores are fed without a thread in the way. Per block, one producer
// warpgroup and two consumer warpgroups (warp specialization):
//   - the producer's one thread asks the TMA for each K step's A and B tiles (64 K-elements wide,
//     in the 128-byte swizzle that wgmma reads without bank conflicts) into a ring of STAGES
//     shared-memory stages; each stage has a "full" mbarrier (the TMA counts its bytes down) and
//     an "empty" one (the consumers' warps arrive when they are done with it);
//   - a consumer warpgroup waits for a stage, issues 4 x MI wgmma (m64 x WN x k16, operands
//     straight from shared memory, accumulators in registers), keeps that group in flight while
//     it waits for the next stage, and frees a stage as soon as the wgmma that read it retire;
//   - setmaxnreg moves registers to where they are needed: the producer drops to 40, the consumers
//     rise to 232 (128 f32 accumulators each);
//   - a persistent grid (one block per SM) walks the output tiles in groups of `group` tile rows,
//     column by column within a group, so the blocks in flight share A and B panels in L2; the
//     producer runs ahead into the next tile while the consumers store the last one.
// Modes (how the two consumers share the work):
//   split_m   both work on one BM x BN tile, each BM / 2 rows (cooperative);
//   split_n   both on one tile, each BN / 2 columns (for BM = 64: few rows);
//   pingpong  each takes every other tile whole, so one consumer's epilogue overlaps the other's
//             main loop and the tensor cores do not wait for stores.
// Clusters: CLUSTER = 2 or 4 blocks take vertically adjacent tiles that share their B tile; each
// loads its share of B and multicasts it to all, cutting B's traffic from L2 by CLUSTER. KSPLIT >
// 1 instead splits K over the KSPLIT blocks of a cluster (for few output tiles, e.g. decode rows:
// the blocks stream disjoint parts of the weights); block 0 sums the others' partial
// accumulators through distributed shared memory in a fixed order (deterministic) and stores.
// Operand layouts (row-major storage): A is K-major for op_a = N, M-major for T; B K-major for
// op_b = T, N-major for N; the MN-major ones are loaded as 64-wide column chunks and read with
// wgmma's transpose bits. The TMA zero-fills whatever overhangs M, N or K, so any shape runs; the
// epilogue predicates its stores. Leading dimensions must be multiples of 8 elements (16 bytes)
// and A, B 16-byte aligned (the TMA's rule).
// Roofline (H100 SXM): 989 TFLOP/s dense f16 / bf16 at the boost clock; cuBLAS reaches about 790
// at 4096^3. A 128 x 256 x 64 stage is 48 KB of shared memory for 4.2 MFLOP (88 FLOP per byte): the
// large tiles are bound by the tensor cores. Decode rows (m <= 64) are bound by reading B once.
enum class wgmma_mode { split_m, split_n, pingpong };

// A tile configuration: block tile BM x BN (x 64 of K per stage), STAGES stages, the consumers'
// MODE, CLUSTER blocks per cluster along M sharing B, or KSPLIT blocks per cluster splitting K.
template <int BM_, int BN_, int STAGES_, int CLUSTER_ = 1, wgmma_mode MODE_ = wgmma_mode::split_m, int KSPLIT_ = 1>
struct wgmma_tile {
  static constexpr int BM = BM_, BN = BN_, BK = 64, STAGES = STAGES_, CLUSTER = CLUSTER_, KSPLIT = KSPLIT_;
  static constexpr wgmma_mode MODE = MODE_;
  static constexpr bool PINGPONG = MODE == wgmma_mode::pingpong;
  static constexpr int CTAS = CLUSTER * KSPLIT;                      // blocks per cluster
  static constexpr int THREADS = 384;                               // producer + 2 consumers
  static constexpr int WM = MODE == wgmma_mode::split_m ? BM / 2 : BM;  // a consumer's rows
  static constexpr int WN = MODE == wgmma_mode::split_n ? BN / 2 : BN;  // its columns: the wgmma's N
  static constexpr int MI = WM / 64;                                // m64 wgmma per K step of 16
  static constexpr int ACC = MI * WN / 2;                           // f32 accumulators per thread
  static constexpr int EMPTY_ARRIVALS = (PINGPONG ? 4 : 8) * CLUSTER;  // consumer warps per stage use
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int RED_BYTES = KSPLIT > 1 ? ACC * 256 * 4 : 0;  // partial sums for the K split
  static constexpr size_t SMEM_BYTES = (size_t)STAGES * STAGE_BYTES + RED_BYTES + 1024;  // + alignment
  // The staged epilogue (wgmma_staged): each consumer's accumulators pass through shared memory in
  // chunks of WM rows x STAGE_COLS columns of f32 (8 KB), rows padded by 4 floats (conflict-free
  // stores from the fragment layout). None with a K split: its partial sums fill that room.
  static constexpr int STAGE_COLS = 2048 / WM, STAGE_LD = STAGE_COLS + 4;
  static constexpr size_t EPI_BYTES = KSPLIT > 1 ? 0 : 2 * (size_t)WM * STAGE_LD * 4;
  static_assert(WM % 64 == 0 && WM >= 64 && (WN == 64 || WN == 128 || WN == 256), "wgmma_tile: consumer tile");
  static_assert(BM <= 256 && BN % 64 == 0 && (BN / 64) % CLUSTER == 0 && BN / CLUSTER <= 256, "wgmma_tile: TMA boxes");
  static_assert((CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4) && (KSPLIT == 1 || CLUSTER == 1) && CTAS <= 8, "wgmma_tile: cluster");
  static_assert(!(PINGPONG && KSPLIT > 1), "wgmma_tile: the K split needs both consumers on one tile");
  static_assert(SMEM_BYTES + EPI_BYTES + 16 * STAGES + 64 <= 227 * 1024, "wgmma_tile: shared memory");
  static_assert(WN % STAGE_COLS == 0, "wgmma_tile: epilogue chunks");
  static_assert(ACC <= 128, "wgmma_tile: accumulators");
};

struct wgmma_shape {
  int64_t m, n, k;
  int group;  // raster: cluster-tile rows per group (L2 reuse)
};

// Whether gemm_wgmma stages an epilogue Epi through shared memory: the full gemm_epilogue (bias,
// activations, residual, preact) is large, and inlined once per accumulator pair (64 times per
// consumer thread in a 128 x 256 tile) it makes a kernel larger than the instruction cache, which
// then refetches it for every tile. Staged, one copy of it runs in a loop over the chunk's pairs.
// Configurations with a K split keep the inlined form (no shared memory left for it).
template <class Epi> struct wgmma_staged_epilogue : std::false_type {};
template <class TC> struct wgmma_staged_epilogue<gemm_epilogue<TC>> : std::true_type {};
template <class Cfg, class Epi> constexpr bool wgmma_staged = wgmma_staged_epilogue<Epi>::value && Cfg::KSPLIT == 1;
template <class Cfg, class Epi> constexpr size_t wgmma_smem_bytes = Cfg::SMEM_BYTES + (wgmma_staged<Cfg, Epi> ? Cfg::EPI_BYTES : 0);

// Where A comes from (ASrc). wgmma_a_tma: A is a matrix in memory, its K steps loaded by the TMA
// through map_a, like B. A gathering source (kGather; conv_wgmma_gather, section 11, is one) has
// the producer warpgroup's 128 threads copy each BM x 64 step of A with cp.async into the 128-byte
// swizzle wgmma reads (chunk c of row r at chunk c ^ (r % 8)), each thread then arriving on the
// stage's full barrier (cp_async_mbar_arrive), and the consumers fence (fence_proxy_async) before
// their wgmma read it; its interface:
//   kArrivals                   the full barrier's arrivals per phase: 128 + the TMA's one;
//   struct row                  what the loader keeps per row of a tile (16 bytes: in shared memory);
//   struct cursor               what a thread keeps across a tile's K steps (registers);
//   rows(tab, m0, t, BM)        thread t (0..127) fills its rows of tab for the tile at row m0;
//   start(t, kb) -> cursor      the cursor of K step kb (the block's first, its K split's part);
//   load<BM>(sa, tab, cur, t)   thread t's copies of the step into stage A at sa; advance(cur).
struct wgmma_a_tma {
  static constexpr bool kGather = false;
  static constexpr unsigned kArrivals = 1;
  struct row {};
  struct cursor {};
};

// Epi: a functor with `void operator()(int64_t row, int64_t col, float acc0, float acc1) const`
// that finishes and stores C[row][col] and C[row][col + 1] (col is even) from the accumulated
// sums; it checks row < m and col (+ 1) < n itself (gemm_epilogue, 9.1, is one). kTransA: A is
// stored K x M (op_a = T); kTransB: B is stored K x N (op_b = N): the MN-major operands. map_a / map_b: tma_map_2d of A and B as stored, with the
// boxes gemm_wgmma_maps builds (map_a unused by a gathering ASrc); asrc: A's source, above.
template <class T, class Cfg, bool kTransA, bool kTransB, class Epi, class ASrc = wgmma_a_tma>
__global__ void __launch_bounds__(384, 1) gemm_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                                                     const wgmma_shape s, const Epi epi, const ASrc asrc) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BM = Cfg::BM, BN = Cfg::BN, STAGES = Cfg::STAGES, CLUSTER = Cfg::CLUSTER, KSPLIT = Cfg::KSPLIT, CTAS = Cfg::CTAS;
  constexpr int MI = Cfg::MI, WN = Cfg::WN;
  constexpr bool kGather = ASrc::kGather;
  static_assert(!kGather || (!kTransA && BM <= 256), "gemm_wgmma: a gathered A is K-major");
  // The barriers are static shared memory (the launcher reads its size to tell this body from the
  // empty one of other architectures); the stages are dynamic, aligned here to 1024 bytes. A
  // gathering source's row table: two tiles' worth, so a tile's is written while the last is read.
  __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES], red_full, red_free, order[2];
  __shared__ __align__(16) typename ASrc::row a_rows[kGather ? 2 * BM : 1];
  extern __shared__ unsigned char gemm_wgmma_smem[];
  unsigned char *const smem = gemm_wgmma_smem + ((1024 - (smem_u32(gemm_wgmma_smem) & 1023)) & 1023);

  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
  const unsigned crank = CTAS > 1 ? cluster_rank() : 0;
  const unsigned rank = KSPLIT > 1 ? 0 : crank;   // position along M within the cluster
  const unsigned krank = KSPLIT > 1 ? crank : 0;  // part of K
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; ++i) {
      mbar_init(&full[i], ASrc::kArrivals);          // the producer's expect_tx (the TMA adds the bytes), the gatherers
      mbar_init(&empty[i], Cfg::EMPTY_ARRIVALS);     // every consumer warp of every block it feeds
    }
    mbar_init(&red_full, (KSPLIT > 1 ? KSPLIT - 1 : 1) * 256);  // block 0: every consumer thread of the others
    mbar_init(&red_free, 256);                       // the others: block 0's consumer threads
    mbar_init(&order[0], 128);                       // ping-pong: a consumer's main loop is done
    mbar_init(&order[1], 128);
    mbar_fence_init();
  }
  if constexpr (CTAS > 1) cluster_sync();  // peers' barriers initialized before any remote access
  else __syncthreads();

  const int64_t tiles_m = (s.m + BM * CLUSTER - 1) / (BM * CLUSTER), tiles_n = (s.n + BN - 1) / BN;
  const int64_t tiles = tiles_m * tiles_n, kall = (s.k + 63) / 64;
  const int64_t kper = (kall + KSPLIT - 1) / KSPLIT, kbegin = krank * kper;
  const int64_t kblocks = kall - kbegin < kper ? (kall > kbegin ? kall - kbegin : 0) : kper;  // this block's K steps
  const int64_t first = blockIdx.x / CTAS, stride = gridDim.x / CTAS;

  if (wg == 0) {  // ---- producer ----
    setmaxnreg_dec<40>();
    const int pt = threadIdx.x;  // 0..127: every producer thread gathers; thread 0 drives the TMA
    if (kGather || pt == 0) {
      if (pt == 0) {
        if constexpr (!kGather) tma_prefetch_map(&map_a);
        tma_prefetch_map(&map_b);
      }
      int stage = 0;
      unsigned phase = 0;
      int64_t local = 0;
      for (int64_t t = first; t < tiles; t += stride, ++local) {
        int64_t tm, tn;
        grouped_tile(t, tiles_m, tiles_n, tm, tn, s.group);
        const int64_t row0 = (tm * CLUSTER + rank) * BM;  // the tile's first row
        const int m0 = (int)row0, n0 = (int)(tn * BN);     // as TMA coordinates
        typename ASrc::row *const tab = a_rows + (kGather ? (local & 1) * BM : 0);
        [[maybe_unused]] typename ASrc::cursor cur;
        if constexpr (kGather) {
          asrc.rows(tab, row0, pt, BM);
          named_barrier(3, 128);  // the table is whole (and the one before it, two tiles back, read)
          cur = asrc.start(pt, kbegin);
        }
        for (int64_t kb = kbegin; kb < kbegin + kblocks; ++kb) {
          mbar_wait(&empty[stage], phase ^ 1);
          unsigned char *sa = smem + (size_t)stage * Cfg::STAGE_BYTES, *sb = sa + Cfg::A_BYTES;
          const int k0 = (int)(kb * 64);
          if (pt == 0) {
            mbar_expect_tx(&full[stage], kGather ? Cfg::B_BYTES : Cfg::STAGE_BYTES);
            if constexpr (!kGather) {
              if constexpr (!kTransA) {
                tma_load_2d(sa, &map_a, &full[stage], k0, m0);  // box 64 x BM
              } else {
#pragma unroll
                for (int j = 0; j < BM / 64; ++j) tma_load_2d(sa + j * 8192, &map_a, &full[stage], m0 + 64 * j, k0);  // 64 x 64
              }
            }
            // B: this block's share, multicast to the cluster.
            if constexpr (!kTransB) {
              constexpr int rows = BN / CLUSTER;  // box 64 x rows
              if constexpr (CLUSTER == 1) tma_load_2d(sb, &map_b, &full[stage], k0, n0);
              else tma_load_2d_multicast(sb + rank * rows * 128, &map_b, &full[stage], k0, n0 + (int)rank * rows, (1u << CLUSTER) - 1);
            } else {
#pragma unroll
              for (int j = 0; j < BN / 64 / CLUSTER; ++j) {
                const int q = j * CLUSTER + (int)rank;  // 64 x 64 chunk q of B's N extent
                if constexpr (CLUSTER == 1) tma_load_2d(sb + q * 8192, &map_b, &full[stage], n0 + 64 * q, k0);
                else tma_load_2d_multicast(sb + q * 8192, &map_b, &full[stage], n0 + 64 * q, k0, (1u << CLUSTER) - 1);
              }
            }
          }
          if constexpr (kGather) {  // while the TMA brings B: this thread's share of A
            asrc.template load<BM>(sa, tab, cur, pt);
            asrc.advance(cur);
            cp_async_mbar_arrive(&full[stage]);
          }
          if (++stage == STAGES) stage = 0, phase ^= 1;
        }
      }
      if constexpr (kGather) cp_async_wait(0);  // no thread leaves with its copies in flight
      // Peers' consumers arrive on this block's empty barriers: wait for the last round of them,
      // so that this block outlives every access to its shared memory.
      if constexpr (CLUSTER > 1) {
        for (int i = 0; i < STAGES; ++i) {
          mbar_wait(&empty[stage], phase ^ 1);
          if (++stage == STAGES) stage = 0, phase ^= 1;
        }
      }
    }
  } else {  // ---- consumers ----
    setmaxnreg_inc<232>();
    const int c = wg - 1, warp = (threadIdx.x / 32) % 4;
    // This consumer's part of a stage, as descriptors (an MN-major operand is 64-wide chunks of
    // 8 KB: a step of 64 rows or columns is 8 KB in either layout).
    const int row0 = Cfg::MODE == wgmma_mode::split_m ? c * Cfg::WM : 0, col0 = Cfg::MODE == wgmma_mode::split_n ? c * WN : 0;
    constexpr uint32_t lbo_a = kTransA ? 8192 : 16, lbo_b = kTransB ? 8192 : 16;
    constexpr uint32_t kstep_a = kTransA ? 2048 : 32, kstep_b = kTransB ? 2048 : 32;  // bytes per K step of 16
    const uint64_t desc_a0 = wgmma_desc_sw128(smem + (kTransA ? (row0 / 64) * 8192 : row0 * 128), lbo_a, 1024);
    const uint64_t desc_b0 = wgmma_desc_sw128(smem + Cfg::A_BYTES + (kTransB ? (col0 / 64) * 8192 : col0 * 128), lbo_b, 1024);
    float acc[MI][WN / 2];
    int64_t local = 0;  // this block's tiles so far
    for (int64_t t = first; t < tiles; t += stride, ++local) {
      if (Cfg::PINGPONG && (local & 1) != c) continue;  // the other consumer's tile
      int64_t tm, tn;
      grouped_tile(t, tiles_m, tiles_n, tm, tn, s.group);
      const int64_t it0 = local * kblocks;  // the ring position of this tile's first stage
      int stage = (int)(it0 % STAGES);
      unsigned phase = (unsigned)((it0 / STAGES) & 1);
      if (kblocks == 0) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < WN / 2; ++j) acc[i][j] = 0.0f;
      }
      // Ping-pong: a consumer starts a tile's main loop only once the other has waited for every
      // stage of the tile before (its n-th completion of order[]), so that no wait on a stage's
      // full barrier runs two phases ahead; the other's epilogue then overlaps this main loop.
      if constexpr (Cfg::PINGPONG) {
        const int64_t n = local / 2;  // this consumer's tiles so far
        if (c == 1) mbar_wait(&order[0], (unsigned)(n & 1));
        else if (n > 0) mbar_wait(&order[1], (unsigned)((n - 1) & 1));
      }
      int prev = -1;
      auto release = [&](int st) {
        if (lane == 0) {
          if constexpr (CLUSTER == 1) mbar_arrive(&empty[st]);
          else
            for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster<false>(&empty[st], (unsigned)r);
        }
      };
      for (int64_t kb = 0; kb < kblocks; ++kb) {
        mbar_wait(&full[stage], phase);
        if constexpr (kGather) fence_proxy_async();  // A came by cp.async (the generic proxy); wgmma reads it
        const uint64_t off = (uint64_t)(stage * Cfg::STAGE_BYTES) >> 4;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
          for (int i = 0; i < MI; ++i)
            wgmma_m64k16<T, WN, kTransA, kTransB>(acc[i], desc_a0 + off + ((i * 8192 + kk * kstep_a) >> 4), desc_b0 + off + ((kk * kstep_b) >> 4),
                                                  (kb > 0 || kk > 0) ? 1 : 0);
        }
        wgmma_commit();
        wgmma_wait<1>();  // the previous K step's group has retired: free its stage
        if (prev >= 0) release(prev);
        prev = stage;
        if (++stage == STAGES) stage = 0, phase ^= 1;
      }
      if constexpr (Cfg::PINGPONG) mbar_arrive(&order[c]);
      wgmma_wait<0>();
      if (prev >= 0) release(prev);
#pragma unroll
      for (int i = 0; i < MI; ++i) wgmma_fence_operand(acc[i]);
      if constexpr (KSPLIT > 1) {
        // Partial sums: the other blocks leave theirs in their shared memory (one slot per
        // accumulator and thread, conflict-free) and tell block 0, which adds them in rank order
        // and hands the slots back. red_free's phase (local - 1) is block 0's read of tile
        // local - 1.
        float *red = reinterpret_cast<float *>(smem + (size_t)STAGES * Cfg::STAGE_BYTES);
        const int ct = threadIdx.x - 128;
        if (krank != 0) {
          if (local > 0) mbar_wait<true>(&red_free, (unsigned)((local - 1) & 1));
#pragma unroll
          for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < WN / 2; ++j) red[(i * (WN / 2) + j) * 256 + ct] = acc[i][j];
          mbar_arrive_cluster(&red_full, 0);
          continue;  // block 0 stores
        }
        mbar_wait<true>(&red_full, (unsigned)(local & 1));
        namespace cg = cooperative_groups;
        cg::cluster_group cl = cg::this_cluster();
        for (int r = 1; r < KSPLIT; ++r) {
          const float *peer = cl.map_shared_rank(red, r);
#pragma unroll
          for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < WN / 2; ++j) acc[i][j] += peer[(i * (WN / 2) + j) * 256 + ct];
        }
        for (int r = 1; r < KSPLIT; ++r) mbar_arrive_cluster(&red_free, (unsigned)r);
      }
      // Epilogue: the accumulator layout of wgmma_m64k16, two adjacent columns per call: thread
      // (warp, lane) holds rows 16 warp + lane / 4 (+ 8) and columns 8 j + 2 (lane % 4) (+ 1).
      const int64_t rb = (tm * CLUSTER + rank) * BM + row0, cb = tn * BN + col0;
      if constexpr (wgmma_staged<Cfg, Epi>) {
        // Staged: chunk by chunk of CW columns, the fragments go to shared memory (predicated
        // stores: the chunk is a run-time loop, the fragment indices stay compile-time), then each
        // of the consumer's 128 threads finishes one column pair of 8 rows through one copy of
        // the epilogue (gemm_epilogue::rows: its loads issued together).
        constexpr int CW = Cfg::STAGE_COLS, LD = Cfg::STAGE_LD, JQ = CW / 8;
        float *const st = reinterpret_cast<float *>(smem + (size_t)STAGES * Cfg::STAGE_BYTES) + c * Cfg::WM * LD;
        const int ct = threadIdx.x % 128;
        // Thread ct takes the pair at column 2 (ct % (CW / 2)) of rows ct / (CW / 2) + i * 256 / CW
        // (gemm_epilogue::rows where the pair is whole and aligned, else operator() row by row, in a
        // loop: that rare path's code appears once); its bias pair is loaded a chunk ahead, so no
        // chunk waits on a load from memory.
        constexpr int NR = Cfg::WM * CW / 256, STEP = 256 / CW;
        const int row = ct / (CW / 2), col = 2 * (ct % (CW / 2));
        typename Epi::word nb = epi.bias_word(cb + col);
        for (int q = 0; q < WN / CW; ++q) {
          const typename Epi::word bw = nb;
          if (q + 1 < WN / CW) nb = epi.bias_word(cb + (q + 1) * CW + col);
          named_barrier(1 + c, 128);  // the last chunk's (or tile's) reads are done
#pragma unroll
          for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < WN / 8; ++j)
              if (j / JQ == q) {
                float *d = st + (64 * i + warp * 16 + lane / 4) * LD + 8 * (j % JQ) + 2 * (lane % 4);
                *reinterpret_cast<float2 *>(d) = make_float2(acc[i][4 * j], acc[i][4 * j + 1]);
                *reinterpret_cast<float2 *>(d + 8 * LD) = make_float2(acc[i][4 * j + 2], acc[i][4 * j + 3]);
              }
          named_barrier(1 + c, 128);
          const int64_t gc = cb + q * CW + col;
          if (epi.whole_pair(gc)) {
            float a0[NR], a1[NR];
#pragma unroll
            for (int i = 0; i < NR; ++i) {
              const float2 v = *reinterpret_cast<const float2 *>(st + (row + i * STEP) * LD + col);
              a0[i] = v.x, a1[i] = v.y;
            }
            epi.template rows<NR, STEP>(rb + row, gc, bw, a0, a1);
          } else {  // a last odd column, odd pointers or leading dimensions: one pair at a time
#pragma unroll 1
            for (int i = 0; i < NR; ++i) {
              const float2 v = *reinterpret_cast<const float2 *>(st + (row + i * STEP) * LD + col);
              epi(rb + row + i * STEP, gc, v.x, v.y);
            }
          }
        }
      } else {
        const int64_t r0 = rb + warp * 16 + lane / 4, c0 = cb + 2 * (lane % 4);
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < WN / 8; ++j) {
            epi(r0 + 64 * i, c0 + 8 * j, acc[i][4 * j], acc[i][4 * j + 1]);
            epi(r0 + 64 * i + 8, c0 + 8 * j, acc[i][4 * j + 2], acc[i][4 * j + 3]);
          }
      }
    }
    // The K split: block 0 reads the others' slots until its last tile; they wait for that.
    if constexpr (KSPLIT > 1)
      if (krank != 0 && local > 0) mbar_wait<true>(&red_free, (unsigned)((local - 1) & 1));
  }
  // The K split, once more: every thread of the cluster meets before any block exits. The wait
  // above already keeps a block's shared memory alive while block 0 reads it; the barrier states
  // it in the form sanitizers model (they do not follow mbarrier ordering across blocks).
  if constexpr (KSPLIT > 1) cluster_done(KSPLIT);
#else
  (void)map_a, (void)map_b, (void)s, (void)epi, (void)asrc;
#endif
}

}  // namespace gpuops

// ---- 1.8 Host side of the core (implementation only) -------------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// After a launch: GPUOPS_OK, or GPUOPS_ERR_CUDA with the error kept for gpuops_cuda_error().
// cudaGetLastError also returns (and clears) an error that an earlier CUDA call of the program left
// pending on this thread: the op then reports that one.
inline gpuops_status launch_status() {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return GPUOPS_OK;
  gpuops__last_cuda_error = (int)e;
  return GPUOPS_ERR_CUDA;
}

// After a runtime call that is not a launch (cudaMemsetAsync, cudaFuncSetAttribute, ...): GPUOPS_OK,
// or GPUOPS_ERR_CUDA with e kept and CUDA's last error cleared, so no later launch_status sees it.
inline gpuops_status cuda_call_status(cudaError_t e) {
  if (e == cudaSuccess) return GPUOPS_OK;
  (void)cudaGetLastError();
  gpuops__last_cuda_error = (int)e;
  return GPUOPS_ERR_CUDA;
}

// What the launchers ask of the current device, read once per device and cached (a query costs
// microseconds; a launch a few). A failed query leaves the defaults: the launch that follows
// reports the error.
struct device_props {
  int sms = 1;                      // multiprocessors
  int cc = 0;                       // compute capability, major * 10 + minor
  size_t smem_optin = 48 * 1024;    // shared memory one block may opt in to
  int sm_threads = 1024;            // threads resident on one multiprocessor at most
};
inline const device_props &current_device() {
  constexpr int kDevices = 64;
  static device_props props[kDevices];
  static std::once_flag once[kDevices];
  static const device_props none;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) return none;
  std::call_once(once[dev], [dev] {
    int sms = 0, major = 0, minor = 0, optin = 0;
    device_props &d = props[dev];
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && sms > 0) d.sms = sms;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess)
      d.cc = major * 10 + minor;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess && optin > 0) d.smem_optin = (size_t)optin;
    int threads = 0;
    if (cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, dev) == cudaSuccess && threads > 0) d.sm_threads = threads;
    (void)cudaGetLastError();  // a refused query is an answer here, not an error to report later
  });
  return props[dev];
}

// Blocks of `kernel` (`threads` threads, `smem` dynamic shared bytes) resident on the current
// device at once: SMs x blocks per SM.
template <class K> inline int64_t resident_blocks(K kernel, int threads, size_t smem) {
  int b = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, threads, smem) != cudaSuccess || b < 1) b = 1;
  return (int64_t)b * current_device().sms;
}

// Whether `kernel` holds code compiled for compute capability `cc` or later (its PTX target: a
// kernel built only for an older one compiles to an empty body here). Asked once per kernel.
template <auto Kernel> inline bool built_for(int cc) {
  static const int ptx = [] {
    cudaFuncAttributes fa;
    const int v = cudaFuncGetAttributes(&fa, Kernel) == cudaSuccess ? fa.ptxVersion : 0;
    (void)cudaGetLastError();  // a refusal is an answer here, not an error to report later
    return v;
  }();
  return ptx >= cc;
}

// Whether Kernel was built for sm_90a (wgmma, setmaxnreg): its sm_90a body declares `bytes` or more
// of static shared memory (its mbarriers), the body built for anything else none. Asked once per
// kernel.
template <auto Kernel> inline bool built_sm90a(size_t bytes) {
  static const bool ok = [bytes] {
    cudaFuncAttributes fa;
    const bool b = cudaFuncGetAttributes(&fa, Kernel) == cudaSuccess && fa.sharedSizeBytes >= bytes;
    (void)cudaGetLastError();  // a refusal is an answer here, not an error to report later
    return b;
  }();
  return ok;
}

// Blocks that fill the current device once with Kernel (kBlock threads, no dynamic shared memory).
// Its occupancy is asked once (a template argument: each kernel keeps its own answer).
template <auto Kernel> inline int64_t full_grid() {
  static const int per_sm = [] {
    int b = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, Kernel, kBlock, 0) == cudaSuccess && b > 0 ? b : 1;
  }();
  return (int64_t)current_device().sms * per_sm;
}

// Blocks for a launch of one block per tile: the tile count, at least 1, at most the grid's x limit
// (2^31 - 1; a kernel launched this way walks tiles blockIdx.x, + gridDim.x, ... to cover more).
inline unsigned tile_grid(int64_t tiles) { return (unsigned)(tiles < 1 ? 1 : tiles < 0x7fffffff ? tiles : 0x7fffffff); }

// The dtype dispatch of every family's C launcher, written once: Cases is a list of
// dtype_case<GPUOPS__X, T>; f(T *) is called with a null pointer of the case that matches dt, and
// GPUOPS_ERR_INVALID_ARGUMENT is returned when none does.
template <gpuops__dtype D, class T> struct dtype_case {
  static constexpr gpuops__dtype dt = D;
  using type = T;
};
template <class... Cases, class F> inline gpuops_status dispatch_dtype(gpuops__dtype dt, F &&f) {
  gpuops_status st = GPUOPS_ERR_INVALID_ARGUMENT;
  (void)((dt == Cases::dt ? (st = f(static_cast<typename Cases::type *>(nullptr)), true) : false) || ...);
  return st;
}
// The floating-point storage types (gpuops.h's GPUOPS__FLOAT_TYPES) as device types.
template <class F> inline gpuops_status dispatch_float(gpuops__dtype dt, F &&f) {
  return dispatch_dtype<dtype_case<GPUOPS__F32, float>, dtype_case<GPUOPS__F16, __half>, dtype_case<GPUOPS__BF16, __nv_bfloat16>>(
      dt, static_cast<F &&>(f));
}

// ---- The row engine's launch side ----
// Whether the non-NULL pointers share one offset modulo 16 (a phase): the rows of such arrays can be
// walked as views (row_span), the kernels' kPhased forms.
inline bool one_phase(std::initializer_list<const void *> ptrs) {
  int phase = -1;
  for (const void *q : ptrs) {
    if (!q) continue;
    const int o = (int)((uintptr_t)q % 16);
    if (phase >= 0 && o != phase) return false;
    phase = o;
  }
  return true;
}

// Blocks for a row-looping kernel: one per group of rows, at most 8 x what fills the device
// (each block loops over rows), far inside the grid's x limit.
inline unsigned row_grid(int threads, int64_t groups) {
  const int64_t cap = (int64_t)current_device().sms * (2048 / threads) * 8;
  return (unsigned)(groups < cap ? groups : cap);
}

inline cudaLaunchConfig_t cluster_config(cudaLaunchAttribute *attr, unsigned blocks, int threads, int C, cudaStream_t stream, size_t smem = 0) {
  cudaLaunchConfig_t cfg = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.gridDim = dim3(blocks, 1, 1);
  cfg.blockDim = dim3((unsigned)threads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

// A row-on-chip kernel over p.rows rows, rows_per_block to a block, plain, or as clusters of
// p.cluster blocks per row: then a persistent grid of whole clusters (as many as can be resident
// at once, `resident`), each looping over rows; the loop is uniform within a cluster. P is the
// kernel's parameter struct (it has rows and cluster); smem the dynamic shared memory of a block.
template <class P, class K>
gpuops_status launch_rows(K kernel, int threads, int rows_per_block, const P &p, cudaStream_t stream, int resident = 0, size_t smem = 0) {
  const int64_t groups = (p.rows + rows_per_block - 1) / rows_per_block;
  if (p.cluster == 1) {
    kernel<<<row_grid(threads, groups), threads, smem, stream>>>(p);
    return launch_status();
  }
  const int64_t clusters = groups < resident ? groups : resident;
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)(clusters * p.cluster), threads, p.cluster, stream, smem);
  const gpuops_status st = cuda_call_status(cudaLaunchKernelEx(&cfg, kernel, p));
  return st != GPUOPS_OK ? st : launch_status();
}

// Test hook: true makes the row engine behave as on a device without clusters (the 1024-thread
// kernels and the streaming fallbacks run instead), so that one device tests both. Not for
// production use.
inline std::atomic<bool> &row_clusters_disabled() {
  static std::atomic<bool> v(false);
  return v;
}

// How many clusters of C blocks of `kernel` can be resident at once here, 0 where none can (or
// row_clusters_disabled()): the kernel must be built for compute capability 9.0+ (its cluster code
// exists: PTX of an older target, compiled on this device, would lack it) and the occupancy
// calculator must find room. Remembered per C in `known` (0 unknown, -1 none, else the count) for
// the first device asked.
template <class K> int row_clusters(K kernel, int threads, int C, std::atomic<int> *known, size_t smem = 0) {
  if (row_clusters_disabled()) return 0;
  const int k = known[C].load(std::memory_order_relaxed);
  if (k != 0) return k > 0 ? k : 0;
  int n = 0;
  cudaFuncAttributes fa;
  if (cudaFuncGetAttributes(&fa, kernel) == cudaSuccess && fa.ptxVersion >= 90 && fa.binaryVersion >= 90) {
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)C, threads, C, 0, smem);
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) n = 0;
  }
  (void)cudaGetLastError();  // a refusal here is an answer, not an error to report later
  known[C].store(n > 0 ? n : -1, std::memory_order_relaxed);
  return n > 0 ? n : 0;
}

// Split rows (section 1.5): the cluster size C for `rows` rows of `cols` columns, so that rows x C
// reaches `target` blocks (the family's policy: a few per SM) with slices of at least min_slice
// columns, C in 2 .. max_cluster; 0 where the rows alone reach target, the slices would be too
// short, or no cluster of `kernel` fits here (row_clusters: an sm_90 build on an sm_90 device).
// Past 8 blocks (the portable limit) the kernel is first allowed non-portable sizes; where that or
// the occupancy query refuses, or where clusters of 8 keep more blocks busy at once (fewer of the
// larger clusters fit than there are rows), 8. *resident: the clusters of C that can run at once.
// known: per C, as row_clusters (max_cluster + 1 entries).
template <class K>
int split_cluster(K kernel, int threads, int64_t rows, int64_t cols, int64_t min_slice, int64_t target, int max_cluster,
                  std::atomic<int> *known, int *resident) {
  if (rows < 1 || rows >= target) return 0;
  int64_t c = (target + rows - 1) / rows;
  if (c > cols / min_slice) c = cols / min_slice;
  if (c > max_cluster) c = max_cluster;
  if (c < 2) return 0;
  if (c > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError();  // a refusal is an answer: the portable size instead
    c = 8;
  }
  int n = row_clusters(kernel, threads, (int)c, known);
  if (c > 8) {
    const int n8 = row_clusters(kernel, threads, 8, known);
    auto busy = [&](int64_t clusters, int64_t size) { return (clusters < rows ? clusters : rows) * size; };
    if (busy(n8, 8) >= busy(n, c)) n = n8, c = 8;
  }
  *resident = n;
  return n > 0 ? (int)c : 0;
}

// ---- TMA tensor maps ----
// cuTensorMapEncodeTiled is a driver-API function: it is taken through the runtime's driver entry
// point, once per process, so that no program links -lcuda. Null where the driver lacks it.
using tensor_map_encode_fn = CUresult(CUDAAPI *)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                                 const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
inline tensor_map_encode_fn tensor_map_encoder() {
  static const tensor_map_encode_fn fn = [] {
    void *f = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &q);
#endif
    (void)cudaGetLastError();  // a refusal is an answer here (null), not an error to report later
    return e == cudaSuccess && q == cudaDriverEntryPointSuccess ? reinterpret_cast<tensor_map_encode_fn>(f) : nullptr;
  }();
  return fn;
}

// A 2D tensor map of a row-major rows x cols matrix of `dt` elements (2 bytes: F16 or BF16; 4:
// FLOAT32) with row stride ld elements, read in boxes of box_cols x box_rows elements that land in
// shared memory with the 128-byte swizzle (box_cols * element size <= 128), elements outside the
// matrix read as zero (so a tile may overhang every edge). Host only; no device call. Returns
// GPUOPS_ERR_MISALIGNED unless base is 16-byte aligned and ld * element size is a multiple of 16
// (the TMA's rule), GPUOPS_ERR_UNSUPPORTED where the driver has no TMA or a size exceeds the
// TMA's limits (2^32 elements a dimension, 2^40 bytes a stride), GPUOPS_ERR_CUDA (kept as
// cudaErrorInvalidValue) if the driver refuses the map. rows and cols of 0 are mapped as 1 (the
// kernel then issues no load).
inline gpuops_status tma_map_2d(CUtensorMap *map, const void *base, CUtensorMapDataType dt, int64_t rows, int64_t cols, int64_t ld,
                                uint32_t box_cols, uint32_t box_rows) {
  const int64_t es = dt == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ? 4 : 2;
  if (((uintptr_t)base & 15) != 0 || (ld * es) % 16 != 0) return GPUOPS_ERR_MISALIGNED;
  if (rows > ((int64_t)1 << 32) || cols > ((int64_t)1 << 32) || ld * es >= ((int64_t)1 << 40)) return GPUOPS_ERR_UNSUPPORTED;
  const tensor_map_encode_fn encode = tensor_map_encoder();
  if (encode == nullptr) return GPUOPS_ERR_UNSUPPORTED;
  const cuuint64_t dims[2] = {(cuuint64_t)(cols > 0 ? cols : 1), (cuuint64_t)(rows > 0 ? rows : 1)};
  const cuuint64_t strides[1] = {(cuuint64_t)(ld > 0 ? ld * es : 16)};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode(map, dt, 2, const_cast<void *>(base), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    gpuops__last_cuda_error = (int)cudaErrorInvalidValue;
    return GPUOPS_ERR_CUDA;
  }
  return GPUOPS_OK;
}

// ---- The Hopper GEMM engine's launch side (1.7) ----
// Raster group height (cluster-tile rows) of the persistent walk.
constexpr int kWgmmaGroup = 8;
// The largest m, n or k the engine takes: TMA coordinates are 32-bit signed, and a tile may
// overhang the end.
constexpr int64_t kWgmmaMaxExtent = 0x7fffffff - 512;
// The tensor-map element type of the engine's operands (T = __half or __nv_bfloat16).
template <class T> constexpr CUtensorMapDataType wgmma_tma_dtype() {
  return std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

// Whether gemm_wgmma<T, Cfg, kTransA, kTransB, Epi, ASrc> was built for sm_90a (elsewhere its body
// is the empty one: no static shared memory). Asked once per kernel.
template <class T, class Cfg, bool kTransA, bool kTransB, class Epi, class ASrc = wgmma_a_tma> bool gemm_wgmma_built() {
  return built_sm90a<gemm_wgmma<T, Cfg, kTransA, kTransB, Epi, ASrc>>(16 * Cfg::STAGES);
}

// Launches gemm_wgmma<T, Cfg, kTransA, kTransB, Epi, ASrc> (built: gemm_wgmma_built) on a
// persistent grid.
template <class T, class Cfg, bool kTransA, bool kTransB, class Epi, class ASrc = wgmma_a_tma>
gpuops_status gemm_wgmma_launch(const CUtensorMap &ma, const CUtensorMap &mb, const wgmma_shape &s, const Epi &epi, cudaStream_t stream,
                                const ASrc &asrc = ASrc()) {
  auto kernel = gemm_wgmma<T, Cfg, kTransA, kTransB, Epi, ASrc>;
  constexpr size_t smem = wgmma_smem_bytes<Cfg, Epi>;
  // Every call: the attribute is per device, and a failure must not read as OK later.
  const gpuops_status set = cuda_call_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  if (set != GPUOPS_OK) return set;
  const int64_t tiles = ((s.m + Cfg::BM * Cfg::CLUSTER - 1) / (Cfg::BM * Cfg::CLUSTER)) * ((s.n + Cfg::BN - 1) / Cfg::BN);
  if constexpr (Cfg::CTAS == 1) {
    const int64_t sms = current_device().sms, blocks = tiles < sms ? tiles : sms;
    kernel<<<(unsigned)(blocks > 0 ? blocks : 1), Cfg::THREADS, smem, stream>>>(ma, mb, s, epi, asrc);
    return launch_status();
  } else {
    cudaLaunchAttribute attr[1];
    cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)Cfg::CTAS, Cfg::THREADS, Cfg::CTAS, stream);
    cfg.dynamicSmemBytes = smem;
    static const int resident = [&cfg, kernel] {  // clusters that fit at once (first device asked)
      int n = 0;
      if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) n = 0;
      (void)cudaGetLastError();
      return n;
    }();
    if (resident < 1) return GPUOPS_ERR_UNSUPPORTED;
    const int64_t clusters = tiles < resident ? (tiles > 0 ? tiles : 1) : resident;
    cfg.gridDim = dim3((unsigned)(clusters * Cfg::CTAS), 1, 1);
    const gpuops_status st = cuda_call_status(cudaLaunchKernelEx(&cfg, kernel, ma, mb, s, epi, asrc));
    return st != GPUOPS_OK ? st : launch_status();
  }
}

}  // namespace gpuops
#endif  // GPUOPS_IMPLEMENTATION


// ==== 2. Elementwise and activations ========================================================
#ifndef GPUOPS_NO_ELEMENTWISE
namespace gpuops {

// ---- 2.1 Contract and functors ---------------------------------------------------------------
// y[i] = f(a[i], b[i]) for i < n, where f is a functor on f32 values (for a per-channel op, the
// functor bound to element i's channel).
//
// Roofline: these kernels do a handful of flops per element and move
// n * (sizeof(TA) + sizeof(TB) + sizeof(TY)) bytes: they are memory-bound, and the ceiling is
// the device's copy bandwidth. The three versions are the learning path:
//   map_naive        one element per thread, ceil(n / 256) blocks. Simple; index math and block
//                    scheduling per element, and 2- or 4-byte accesses.
//   map_grid_stride  a grid that fills the device once; each thread strides over the array.
//                    Launch size no longer grows with n; accesses are still narrow.
//   map_vectorized   each thread moves 16 bytes per access (LDG.128/STG.128) and keeps two
//                    such vectors per input in flight (four for per-channel ops): fewer
//                    instructions per byte and more bytes in flight per thread (small maps: one
//                    8-byte access a thread, section 2.4). One block per tile, no loop. A scalar head
//                    aligns all pointers to 16 bytes (possible when they sit at the same offset
//                    modulo 16), a scalar tail finishes the last n % V elements.

// Functors derive from this: f(a, b) on f32 values. A per-channel functor instead sets
// per_channel = true and has bind(c), which returns the plain functor of channel c.
struct elementwise_op {
  static constexpr bool per_channel = false;
};

// The quantizer's x / s from r = quantize_reciprocal(s): q = x r is within an ulp of x / s, the
// residual x - q s is exact in one fma, and one correction step t = q + (x - q s) r rounds
// correctly (Markstein's theorem; checked against IEEE division on 1.6e8 samples) where
// 2^-100 <= |x|, |q| < 2^100. Elsewhere t is not always x / s rounded, but the int8 it quantizes to
// is: with s in [2^-60, 2^60], |x| < 2^-100 or |q| < 2^-100 give |t| and |x / s| below 2^-38 (both
// + zero_point round to zero_point), and |q| >= 2^100 gives both beyond 2^99 with one sign (both
// clamp to the same end). The cases left produce a NaN: x inf or NaN, q overflowing, and r = NaN
// (s outside that range); those take the IEEE division. One NaN test per element in place of
// the four range tests of a general division by reciprocal; the reciprocal (MUFU.RCP and its range
// check) is paid once per tensor or channel instead of per element. tools/check_quantize.cpp replays this
// arithmetic on the host against the definition (2e8 samples, scales of every exponent: 0 wrong).
__device__ __host__ __forceinline__ float quantize_reciprocal(float s) {
#ifdef __CUDA_ARCH__
  const float r = __frcp_rn(s);
#else
  const float r = 1.0f / s;
#endif
  return (s >= 0x1p-60f && s <= 0x1p60f) ? r : __builtin_nanf("");
}

// Affine int8 quantization in f32, the IEEE operations spelled out so that no compiler flag
// (--use_fast_math) changes them: x / scale + zero_point, clamped to [-128, 127] (NaN goes to
// -128). The result is rounded half to even by the int8 store (from_f32<int8_t>); rounding after
// the clamp is the same as before it, because the bounds are integers. Bit for bit the int8 of
// the IEEE steps (the unfused quantizer, the CPU's).
__device__ __forceinline__ float quantize_f32(float x, float scale, float rcp_scale, float zero_point) {
  const float q = __fmul_rn(x, rcp_scale), t = fmaf(fmaf(-q, scale, x), rcp_scale, q);
  const float v = __fadd_rn(t == t ? t : __fdiv_rn(x, scale), zero_point);
  return fminf(fmaxf(v, -128.0f), 127.0f);
}
__device__ __forceinline__ float dequantize_f32(float q, float scale, float zero_point) {
  return __fmul_rn(q - zero_point, scale);  // q - zero_point is an exact small integer
}

// The ops.
// One functor per row of gpuops.h's registry (GPUOPS__EW_OPS), named <name>_op: f(a, b) on f32
// values, b = 0 for one-input ops, a = dy and b = x for a backward. T is the storage type: 16-bit
// storage takes the fast forms of the math (kFast; its rounding hides their error). A functor with
// a scalar parameter holds it as its member s, which the launcher sets from the call.

template <class T> struct add_op : elementwise_op {
  __device__ float operator()(float a, float b) const { return a + b; }
};
template <class T> struct add_scalar_op : elementwise_op {
  float s;
  __device__ float operator()(float a, float) const { return a + s; }
};
template <class T> struct axpy_op : elementwise_op {  // a = x, b = y, s = alpha
  float s;
  __device__ float operator()(float x, float y) const { return fmaf(s, x, y); }
};
template <class T> struct add_mul_exp_op : elementwise_op {
  float s;
  __device__ float operator()(float x, float z) const { return expf((x + z) * s); }
};
template <class T, bool kTanh> struct gelu_fwd_op : elementwise_op {
  static constexpr bool kFast = sizeof(T) == 2;
  __device__ float operator()(float x, float) const { return kTanh ? gelu_tanh<kFast>(x) : gelu_erf<kFast>(x); }
};
template <class T, bool kTanh> struct gelu_bwd_op : elementwise_op {
  static constexpr bool kFast = sizeof(T) == 2;
  __device__ float operator()(float dy, float x) const { return dy * (kTanh ? gelu_tanh_grad<kFast>(x) : gelu_erf_grad<kFast>(x)); }
};
template <class T> struct silu_fwd_op : elementwise_op {
  __device__ float operator()(float x, float) const { return silu<sizeof(T) == 2>(x); }
};
template <class T> struct silu_bwd_op : elementwise_op {
  __device__ float operator()(float dy, float x) const { return dy * silu_grad<sizeof(T) == 2>(x); }
};
template <class T> struct relu_fwd_op : elementwise_op {
  __device__ float operator()(float x, float) const { return relu(x); }
};
template <class T> struct relu_bwd_op : elementwise_op {
  __device__ float operator()(float dy, float x) const { return relu_grad_times(dy, x); }
};
template <class T> struct sigmoid_fwd_op : elementwise_op {
  __device__ float operator()(float x, float) const { return sigmoid<sizeof(T) == 2>(x); }
};
// sigmoid' = s (1 - s) = e / (1 + e)^2 with e = e^-|x|: no 1 - s cancellation (for x = 30, s is
// 1.0f and 1 - s would be 0); exact to a few ulp until e underflows. 16-bit storage (kFast): e by
// one MUFU.EX2 and the division by one MUFU.RCP (relative error about 2^-21; e flushes to 0 where
// it would be an f32 subnormal, |x| > 87), as the forward's fast forms.
template <class T> struct sigmoid_bwd_op : elementwise_op {
  static constexpr bool kFast = sizeof(T) == 2;
  __device__ float operator()(float dy, float x) const {
    const float e = kFast ? exp2_approx(-kLog2e * fabsf(x)) : expf(-fabsf(x)), q = 1.0f + e;
    return dy * (kFast ? e * rcp_approx(q * q) : e / (q * q));
  }
};
template <class T> struct tanh_fwd_op : elementwise_op {
  __device__ float operator()(float x, float) const { return tanhf(x); }
};
// tanh' = 1 - tanh^2 = 4 e / (1 + e)^2 with e = e^-2|x|: the same form without the cancellation
// of 1 - t^2 as t nears 1 (at x = 7 that loses 13 bits of f32). kFast as sigmoid_bwd_op's.
template <class T> struct tanh_bwd_op : elementwise_op {
  static constexpr bool kFast = sizeof(T) == 2;
  __device__ float operator()(float dy, float x) const {
    const float e = kFast ? exp2_approx(-2.0f * kLog2e * fabsf(x)) : expf(-2.0f * fabsf(x)), q = 1.0f + e;
    return dy * (kFast ? 4.0f * e * rcp_approx(q * q) : 4.0f * e / (q * q));
  }
};

// The unfused versions' steps (not registry ops): y = y * s, y = exp(y).
struct mul_scalar_op : elementwise_op {
  float s;
  __device__ float operator()(float a, float) const { return a * s; }
};
struct exp_op : elementwise_op {
  __device__ float operator()(float a, float) const { return expf(a); }
};

// Quantization parameters: one pair for the tensor, or one pair per channel (device arrays).
// Each quantization functor below is written once for both: with channel_qparams, bind(c) gives
// the tensor_qparams functor of channel c.
struct tensor_qparams {
  static constexpr bool per_channel = false;
  float scale, zero_point, rcp_scale;  // rcp_scale = quantize_reciprocal(scale)
};
struct channel_qparams {
  static constexpr bool per_channel = true;
  const float *scale;
  const int32_t *zero_point;
  __device__ tensor_qparams at(int64_t c) const {
    const float s = __ldg(scale + c);
    return {s, (float)__ldg(zero_point + c), quantize_reciprocal(s)};
  }
};
#define GPUOPS_QUANT_OP(NAME, ARGS, EXPR)                                                     \
  template <class Q> struct NAME {                                                          \
    static constexpr bool per_channel = Q::per_channel;                                     \
    Q q;                                                                                    \
    __device__ float operator() ARGS const { return EXPR; }                                 \
    __device__ NAME<tensor_qparams> bind(int64_t c) const { return {q.at(c)}; }             \
  };
GPUOPS_QUANT_OP(quantize_op, (float x, float), quantize_f32(x, q.scale, q.rcp_scale, q.zero_point))
GPUOPS_QUANT_OP(dequantize_op, (float v, float), dequantize_f32(v, q.scale, q.zero_point))
// The unfused quantizer's steps: t = x / scale; t = t + zero_point; q = round(clamp(t)).
// Each rounds exactly as quantize_f32 does, so the two versions agree bit for bit.
GPUOPS_QUANT_OP(divide_scale_op, (float x, float), __fdiv_rn(x, q.scale))
GPUOPS_QUANT_OP(add_zero_point_op, (float t, float), __fadd_rn(t, q.zero_point))
// The unfused dequantizer's steps: y = q; y = y - zero_point; y = y * scale (exact but the last).
GPUOPS_QUANT_OP(sub_zero_point_op, (float v, float), v - q.zero_point)
GPUOPS_QUANT_OP(mul_scale_op, (float v, float), __fmul_rn(v, q.scale))
#undef GPUOPS_QUANT_OP
struct clamp_op : elementwise_op {  // the int8 store rounds
  __device__ float operator()(float t, float) const { return fminf(fmaxf(t, -128.0f), 127.0f); }
};
struct copy_op : elementwise_op {
  __device__ float operator()(float a, float) const { return a; }
};

// ---- 2.2 Learning-path kernels: map_naive, map_grid_stride ------------------------------------
template <class F, class TY, class TA, class TB> struct map_params {
  static constexpr bool kTwoInputs = !std::is_same<TB, none>::value;
  TY *y;
  const TA *a;
  const TB *b;
  int64_t n;
  F f;
  divisor channels, inner;  // per-channel layout [outer, channels, inner] (F::per_channel only)
  int64_t first = 0;        // the tensor index of y[0], a[0], b[0] (map_vectorized offsets them)
};

// Elements per vector: 16 bytes of the widest type the op touches.
template <class T> struct elem_size { static constexpr int value = (int)sizeof(T); };
template <> struct elem_size<none> { static constexpr int value = 1; };
template <class TY, class TA, class TB> constexpr int vec_width() {
  return 16 / (elem_size<TY>::value > elem_size<TA>::value
                   ? (elem_size<TY>::value > elem_size<TB>::value ? elem_size<TY>::value : elem_size<TB>::value)
                   : (elem_size<TA>::value > elem_size<TB>::value ? elem_size<TA>::value : elem_size<TB>::value));
}

// Channel of element i, and i's position inside its channel's run of `inner` elements.
struct channel_pos {
  int64_t c, r;
};
__device__ __forceinline__ channel_pos channel_at(int64_t i, const divisor &channels, const divisor &inner) {
  const uint64_t q = inner.div((uint64_t)i);
  return {(int64_t)(q - channels.div(q) * channels.d), (int64_t)((uint64_t)i - q * inner.d)};
}
__device__ __forceinline__ void channel_next(channel_pos &p, const divisor &channels, const divisor &inner) {
  if (++p.r == (int64_t)inner.d) {
    p.r = 0;
    if (++p.c == (int64_t)channels.d) p.c = 0;
  }
}

// N consecutive elements from i: compute from loaded inputs and store. A per-channel op reads its
// channel's parameters once when the N elements share a channel (inner >= N: weights [out, in]
// per row, NCHW per channel), else once per element.
// f is the plain functor (p.f, or p.f bound to the elements' channel).
template <int N, class P, class F>
__device__ __forceinline__ void apply_store(const P &p, int64_t i, const F &f, const float (&a)[N], const float (&b)[N]) {
  float r[N];
#pragma unroll
  for (int k = 0; k < N; ++k) r[k] = f(a[k], b[k]);
  store_f32<N>(p.y, i, r);
}
template <int N, class P>
__device__ __forceinline__ void map_store(const P &p, int64_t i, const float (&a)[N], const float (&b)[N]) {
  if constexpr (decltype(p.f)::per_channel) {
    channel_pos pos = channel_at(p.first + i, p.channels, p.inner);
    if (pos.r + N <= (int64_t)p.inner.d) {
      apply_store<N>(p, i, p.f.bind(pos.c), a, b);
    } else {
      float r[N];
#pragma unroll
      for (int k = 0; k < N; ++k) {
        r[k] = p.f.bind(pos.c)(a[k], b[k]);
        channel_next(pos, p.channels, p.inner);
      }
      store_f32<N>(p.y, i, r);
    }
  } else {
    apply_store<N>(p, i, p.f, a, b);
  }
}

template <class P> __device__ __forceinline__ void map_one(const P &p, int64_t i) {
  float a[1], b[1];
  load_f32<1>(p.a, i, a);
  load_f32<1>(p.b, i, b);
  map_store<1>(p, i, a, b);
}

template <class P> __global__ void __launch_bounds__(kBlock) map_naive(P p) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) map_one(p, i);
}

template <class P> __global__ void __launch_bounds__(kBlock) map_grid_stride(P p) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += stride) map_one(p, i);
}

// ---- 2.3 Production kernel: map_vectorized ----------------------------------------------------
// The vectorized version: one block of B threads per tile of U x B vectors of V elements (B =
// kBlock, V = 16 bytes; small maps B = 128, U = 1, V = 8 bytes). The launcher offsets p's pointers
// to the first element where all of them are 16-byte aligned (p.first of the tensor; the p.first
// elements before it, fewer than 16 bytes' worth, the head, are at negative indices) and p.n counts
// from there. Thread t of tile b takes vectors b U B + u B + t, u < U: each u is one row of
// 32 V contiguous elements per warp, and every load of the thread is issued before the first use. No
// loop: the grid has a block per tile (it would loop over tiles only past 2^31 - 1 tiles). The head
// and the tail (the last p.n % V elements) go one element per thread to the first threads.
// A per-channel op binds its channel (index division, two loads, a reciprocal: about 50
// instructions) once for the thread's U vectors when they lie in one channel run, else per vector.
// Why a block per tile and no grid-stride loop: blocks that end and are replaced keep more loads in
// flight than warps that loop (each iteration's loads wait behind its own stores).
// Registers: the launch bound holds ptxas to 40 for one-input ops at U = 2 (six blocks, 1536
// threads per SM) and to 64 for the others (four blocks): more registers cost resident blocks and
// with them bytes in flight. The offset pointers serve the same end: as kernel parameters they
// stay in the constant bank. (The measurements behind these choices: docs/performance.md.)
// The launch bound of one-input ops at U = 2: six blocks of 256 threads per SM (40 registers); a
// block of B < kBlock threads keeps the register bound of kBlock.
constexpr int kMapBlocksOneInput = GPUOPS__SM_THREADS >= 1536 ? 6 : 4;  // sm_75 holds 1024 threads per SM
template <int V, int U, int B, class P>
__global__ void __launch_bounds__(B, (U == 2 && !P::kTwoInputs ? kMapBlocksOneInput : 4) * (kBlock / B)) map_vectorized(P p) {
  const int64_t t = (int64_t)blockIdx.x * B + threadIdx.x;
  const int64_t nvec = p.n / V, tail = nvec * V;
  if (t < p.first) map_one(p, t - p.first);  // the head
  if (t < p.n - tail) map_one(p, tail + t);
  for (int64_t tile = blockIdx.x; tile * (U * B) < nvec; tile += gridDim.x) {
    const int64_t v0 = tile * (U * B) + threadIdx.x;
    float a[U][V], b[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {  // issue every load before the first use
      const int64_t v = v0 + u * B;
      if (v < nvec) {
        load_f32<V>(p.a, v * V, a[u]);
        load_f32<V>(p.b, v * V, b[u]);
      }
    }
    if constexpr (decltype(p.f)::per_channel) {
      if (v0 + (U - 1) * B < nvec) {
        const channel_pos pos = channel_at(p.first + v0 * V, p.channels, p.inner);
        if (pos.r + ((U - 1) * B + 1) * V <= (int64_t)p.inner.d) {  // all U vectors in one run
          const auto f = p.f.bind(pos.c);
#pragma unroll
          for (int u = 0; u < U; ++u) apply_store<V>(p, (v0 + u * B) * V, f, a[u], b[u]);
          continue;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = v0 + u * B;
      if (v < nvec) map_store<V>(p, v * V, a[u], b[u]);
    }
  }
}

// ---- 2.4 Dispatch policy -----------------------------------------------------------------------
// AUTO is map_vectorized when every pointer sits at the same offset modulo the vector, else
// map_grid_stride (launch_map). Vectors in flight per thread (U): 4 for per-channel ops, which
// bind a channel once per U vectors; 2 for the others.
// Maps that fit on the device at once. With R = SMs x resident threads (about 2^18 on an H100/H200), a
// map of fewer vectors than the default shape's threads can hold leaves thread slots empty, and
// its time is one thread's chain of loads, math and stores rather than DRAM:
//   small   n / (V / 2) <= R / 4 (R for per-channel ops, whose binding is most of the chain): one
//           8-byte half vector a thread (U = 1, V / 2) in blocks of kMapSmallBlock = 128;
//   one     n / V <= R (not per-channel): one 16-byte vector a thread (U = 1, blocks of kBlock);
//   else    the default shape (U = 2, or 4 per channel).
// Graph-timed on an H200 with L2-resident inputs (tools/tune_map_small.cu), default -> small at
// 2^14 elements: the SiLU backward f32 1.75 -> 1.25 us, the channels-last per-channel quantizer
// f32 3.95 -> 1.65, bf16 6.56 -> 2.04, add 1.29 -> 1.12; at 2^20 f32, default -> one: the GELU
// backward 5.25 -> 4.86, sigmoid 3.97 -> 3.82 (in bench/sweep.py tanh lost 3-10% there, not
// understood). The half vectors lose where the threads would fill
// the device anyway (bf16 relu at 2^20: 2.17 -> 2.60 us in bench/sweep.py), and U = 1 loses for
// per-channel ops past R (f32 dequantize at 2^22: 9.90 default, 12.92 one); for the others, one
// vector a thread up to 2 R was even with the default (sweep medians 0.98-0.99 at 2^21 f32 and
// 2^22 bf16).
constexpr int kMapUnroll = 2, kMapUnrollPerChannel = 4, kMapSmallBlock = 128;

}  // namespace gpuops

// ---- 2.5 Launcher and C entry point (implementation only) -------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// Run one elementwise map with the asked version. AUTO is vectorized when every pointer sits at
// the same offset modulo the vector, else grid-stride.
template <class F, class TY, class TA, class TB>
gpuops_status launch_map(const gpuops__ew_args &args, gpuops_algo algo, F f, TY *y, const TA *a, const TB *b) {
  using P = map_params<F, TY, TA, TB>;
  constexpr int V = vec_width<TY, TA, TB>(), U = F::per_channel ? kMapUnrollPerChannel : kMapUnroll;
  const P p = {y, a, b, args.n, f, divisor((uint64_t)args.channels), divisor((uint64_t)args.inner)};
  const cudaStream_t stream = args.stream;
  if (algo == GPUOPS_ALGO_AUTO || algo == GPUOPS_ALGO_VECTORIZED) {
    const int m = vec_offset(y, sizeof(TY), V);
    if (vec_offset(a, sizeof(TA), V) == m && (b == nullptr || vec_offset(b, elem_size<TB>::value, V) == m)) {
      const int64_t head = vec_head(m, V, args.n);
      P pv = p;  // from the first element where every pointer is 16-byte aligned
      pv.y += head, pv.a += head, pv.b = b ? pv.b + head : nullptr, pv.n -= head, pv.first = head;
      const device_props &dev = current_device();
      const int64_t resident = (int64_t)dev.sms * dev.sm_threads;  // the shapes: section 2.4
      if (pv.n / (V / 2) <= (F::per_channel ? resident : resident / 4)) {
        const int64_t tiles = (pv.n / (V / 2) + kMapSmallBlock - 1) / kMapSmallBlock;
        map_vectorized<V / 2, 1, kMapSmallBlock, P><<<tile_grid(tiles), kMapSmallBlock, 0, stream>>>(pv);
      } else if (!F::per_channel && pv.n / V <= resident) {
        const int64_t tiles = (pv.n / V + kBlock - 1) / kBlock;
        map_vectorized<V, 1, kBlock, P><<<tile_grid(tiles), kBlock, 0, stream>>>(pv);
      } else {
        const int64_t tiles = (pv.n / V + U * kBlock - 1) / (U * kBlock);  // 0 still launches a block for head and tail
        map_vectorized<V, U, kBlock, P><<<tile_grid(tiles), kBlock, 0, stream>>>(pv);
      }
      return launch_status();
    }
    if (algo == GPUOPS_ALGO_VECTORIZED) return GPUOPS_ERR_MISALIGNED;
    algo = GPUOPS_ALGO_GRID_STRIDE;
  }
  const int64_t blocks = (args.n + kBlock - 1) / kBlock;
  if (algo == GPUOPS_ALGO_NAIVE) {
    if (blocks > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;  // past the grid's x limit
    map_naive<P><<<(unsigned)blocks, kBlock, 0, stream>>>(p);
  } else {
    const int64_t full = full_grid<map_grid_stride<P>>();
    map_grid_stride<P><<<(unsigned)(blocks < full ? blocks : full), kBlock, 0, stream>>>(p);
  }
  return launch_status();
}

template <class T> gpuops_status ew_quantize(const gpuops__ew_args &args, const T *x, int8_t *q) {
  auto run = [&](auto qp) -> gpuops_status {
    using Q = decltype(qp);
    if (args.algo != GPUOPS_ALGO_UNFUSED) return launch_map(args, args.algo, quantize_op<Q>{qp}, q, x, (const none *)nullptr);
    float *t = (float *)args.workspace;
    gpuops_status st = launch_map(args, GPUOPS_ALGO_AUTO, divide_scale_op<Q>{qp}, t, x, (const none *)nullptr);
    if (st == GPUOPS_OK) st = launch_map(args, GPUOPS_ALGO_AUTO, add_zero_point_op<Q>{qp}, t, (const float *)t, (const none *)nullptr);
    if (st == GPUOPS_OK) st = launch_map(args, GPUOPS_ALGO_AUTO, clamp_op{}, q, (const float *)t, (const none *)nullptr);
    return st;
  };
  if (args.per_channel) return run(channel_qparams{args.scale_c, args.zero_point_c});
  return run(tensor_qparams{args.s, (float)args.zero_point, quantize_reciprocal(args.s)});
}

template <class T> gpuops_status ew_dequantize(const gpuops__ew_args &args, T *x, const int8_t *q) {
  auto run = [&](auto qp) -> gpuops_status {
    using Q = decltype(qp);
    if (args.algo != GPUOPS_ALGO_UNFUSED) return launch_map(args, args.algo, dequantize_op<Q>{qp}, x, q, (const none *)nullptr);
    gpuops_status st = launch_map(args, GPUOPS_ALGO_AUTO, copy_op{}, x, q, (const none *)nullptr);
    if (st == GPUOPS_OK) st = launch_map(args, GPUOPS_ALGO_AUTO, sub_zero_point_op<Q>{qp}, x, (const T *)x, (const none *)nullptr);
    if (st == GPUOPS_OK) st = launch_map(args, GPUOPS_ALGO_AUTO, mul_scale_op<Q>{qp}, x, (const T *)x, (const none *)nullptr);
    return st;
  };
  if (args.per_channel) return run(channel_qparams{args.scale_c, args.zero_point_c});
  return run(tensor_qparams{args.s, (float)args.zero_point, quantize_reciprocal(args.s)});
}

// A registry op's functor for this call: F{}, with the call's scalar in s where F has one.
template <class F, class = void> struct has_scalar : std::false_type {};
template <class F> struct has_scalar<F, decltype((void)F::s, void())> : std::true_type {};
template <class F> F ew_functor(const gpuops__ew_args &args) {
  F f{};
  if constexpr (has_scalar<F>::value) f.s = args.s;
  return f;
}

// add_mul_exp, and its UNFUSED version: three passes, each rounding to the storage type.
template <class T> gpuops_status ew_add_mul_exp(const gpuops__ew_args &args, T *y, const T *a, const T *b) {
  const none *no_b = nullptr;
  if (args.algo != GPUOPS_ALGO_UNFUSED) return launch_map(args, args.algo, ew_functor<add_mul_exp_op<T>>(args), y, a, b);
  gpuops_status st = launch_map(args, GPUOPS_ALGO_AUTO, add_op<T>{}, y, a, b);
  if (st == GPUOPS_OK) st = launch_map(args, GPUOPS_ALGO_AUTO, mul_scalar_op{{}, args.s}, y, (const T *)y, no_b);
  if (st == GPUOPS_OK) st = launch_map(args, GPUOPS_ALGO_AUTO, exp_op{}, y, (const T *)y, no_b);
  return st;
}

// One launch per registry row, in the shape of its SIG.
#define GPUOPS__EW_RUN_UNARY(name) launch_map(args, args.algo, ew_functor<name##_op<T>>(args), y, a, no_b)
#define GPUOPS__EW_RUN_SCALAR(name) GPUOPS__EW_RUN_UNARY(name)
#define GPUOPS__EW_RUN_GRAD(name) launch_map(args, args.algo, ew_functor<name##_op<T>>(args), y, a, b)
#define GPUOPS__EW_RUN_BINARY(name) GPUOPS__EW_RUN_GRAD(name)
#define GPUOPS__EW_RUN_AXPY(name) GPUOPS__EW_RUN_GRAD(name)
#define GPUOPS__EW_RUN_GELU_FWD(name) \
  (args.gelu_tanh ? launch_map(args, args.algo, name##_op<T, true>{}, y, a, no_b) : launch_map(args, args.algo, name##_op<T, false>{}, y, a, no_b))
#define GPUOPS__EW_RUN_GELU_BWD(name) \
  (args.gelu_tanh ? launch_map(args, args.algo, name##_op<T, true>{}, y, a, b) : launch_map(args, args.algo, name##_op<T, false>{}, y, a, b))
#define GPUOPS__EW_RUN_BINARY_SCALAR(name) ew_##name<T>(args, y, a, b)
#define GPUOPS__EW_RUN_QUANTIZE(name) ew_quantize<T>(args, a, (int8_t *)args.y)
#define GPUOPS__EW_RUN_DEQUANTIZE(name) ew_dequantize<T>(args, y, (const int8_t *)args.a)

template <class T> gpuops_status ew_launch_typed(const gpuops__ew_args &args) {
  T *y = (T *)args.y;
  const T *a = (const T *)args.a, *b = (const T *)args.b;
  const none *no_b = nullptr;
  (void)no_b;
  switch (args.op) {
#define GPUOPS__EW_CASE(OP, name, SIG, INPUTS, FUSED, LO, HI, CPU) \
  case GPUOPS__EW_##OP: return GPUOPS__EW_RUN_##SIG(name);
    GPUOPS__EW_OPS(GPUOPS__EW_CASE)
#undef GPUOPS__EW_CASE
  }
  return GPUOPS_ERR_INVALID_ARGUMENT;
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__ew_launch(const gpuops__ew_args *p) {
  return gpuops::dispatch_float(p->dt, [&](auto *t) { return gpuops::ew_launch_typed<std::remove_pointer_t<decltype(t)>>(*p); });
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_ELEMENTWISE

// ==== 3. Reductions and histogram ============================================================
#ifndef GPUOPS_NO_REDUCE
namespace gpuops {

// Roofline. A reduction reads each input byte once and writes almost nothing: 1 flop per element
// against 2 or 4 bytes, so its ceiling is the device's read bandwidth (here: the copy bandwidth
// of the same run; a reduction's rate counts bytes read only). A histogram also reads 4 bytes per
// element; its limits are the atomics: how many land on the same address at the same time.

// ---- 3.1 Contract and building blocks: thread, warp and block helpers, bin counters -------------
// thread_reduce_strided: thread t of `threads` cooperating threads (any group: a warp, a block, a
// grid) returns op over its share of p[0 .. count) (for_each_vector's: scalar head and tail
// elements, then every threads-th 16-byte vector, U in flight) combined into `acc`; the caller
// then combines the threads' values (warp_reduce, block_reduce). p aligned to sizeof(T), not to
// 16. Each vector is reduced pairwise (shorter chains: more ILP, less rounding) into one of U
// partials. Deterministic; the read-only path: nothing may write p while the kernel runs.
template <int U, class T, class Op>
__device__ __forceinline__ float thread_reduce_strided(const T *p, int64_t count, int64_t t, int64_t threads, Op op, float acc) {
  constexpr int V = 16 / (int)sizeof(T);
  float part[U];
#pragma unroll
  for (int u = 0; u < U; ++u) part[u] = Op::identity();
  for_each_vector<U>(
      p, count, t, threads, [&](T x) { acc = op(acc, to_f32(x)); },
      [&](int u, const uint4 &w) {
        float a[V];
        unpack_raw<T>(w, a);
#pragma unroll
        for (int s = 1; s < V; s *= 2)
#pragma unroll
          for (int k = 0; k < V; k += 2 * s) a[k] = op(a[k], a[k + s]);
        part[u] = op(part[u], a[0]);
      });
#pragma unroll
  for (int u = 0; u < U; ++u) acc = op(acc, part[u]);
  return acc;
}

// row_reduce_warp: all 32 lanes of a warp call it together with the same row (none exited);
// every lane gets op over p[0 .. count). No shared memory. Deterministic.
template <class T, class Op> __device__ __forceinline__ float row_reduce_warp(const T *p, int64_t count, Op op) {
  return warp_reduce(thread_reduce_strided<4>(p, count, threadIdx.x & 31, 32, op, Op::identity()), op);
}

// row_reduce_block: every thread of a one-dimensional block calls it together with the same row
// (blockDim.x a multiple of 32); every thread gets op over p[0 .. count). scratch: __shared__
// float[32] of the caller's (block_reduce's contract: reusable after the call). Deterministic.
template <class T, class Op> __device__ __forceinline__ float row_reduce_block(const T *p, int64_t count, Op op, float *scratch) {
  const float v = thread_reduce_strided<4>(p, count, threadIdx.x, blockDim.x, op, Op::identity());
  return block_reduce(v, op, Op::identity(), scratch);
}

// Histogram building blocks.
// Counts of int32 values in [lo, lo + width), each thread over a strided share of x (4 values per
// 128-bit load, U loads in flight). bin_counter<kRuns, C> adds one value to counters h of type C
// (32-bit shared or 64-bit global): without runs, one atomicAdd per value in range; with runs, a
// thread keeps the last value it saw and how often it repeated, and adds the run with one atomic
// when the value changes (and at the end, flush()). On data where 90% of values are one value, a
// run ends at about 1 value in 5, and only about 1 in 10 lanes of a warp meets the hot bin at the
// same step, instead of 29 of 32 serializing on one address.
template <bool kRuns, class C> struct bin_counter {
  C *h;
  uint32_t lo, width;
  uint32_t cur = 0xffffffffu, cnt = 0;  // cur >= width: no run yet
  __device__ __forceinline__ void operator()(int32_t v) {
    const uint32_t u = (uint32_t)v - lo;  // values below lo (or negative) wrap past width
    if constexpr (kRuns) {
      if (u == cur) {
        ++cnt;
      } else {
        if (cur < width) atomicAdd(h + cur, (C)cnt);
        cur = u;
        cnt = 1;
      }
    } else if (u < width) {
      atomicAdd(h + u, (C)1);
    }
  }
  __device__ __forceinline__ void flush() {
    if (kRuns && cur < width) atomicAdd(h + cur, (C)cnt);
  }
};

// Calls f(v) for this thread's share of x[0 .. n) (for_each_vector's).
template <int U, class F> __device__ __forceinline__ void for_each_i32(const int32_t *x, int64_t n, int64_t t, int64_t threads, F &f) {
  for_each_vector<U>(x, n, t, threads, [&](int32_t v) { f(v); },
                     [&](int, const uint4 &w) { f((int32_t)w.x), f((int32_t)w.y), f((int32_t)w.z), f((int32_t)w.w); });
}

constexpr int kHistLoads = 2;  // 16-byte loads in flight per thread

// ---- 3.2 Learning-path kernels: the reduction trees, global-atomic histogram ------------------
// Every version writes one partial per block to partials[blockIdx.x]; reduce_finish (one block)
// then reduces the partials in a fixed order. No atomics: the same bits on every run.
//
//   INTERLEAVED   one element per thread into shared memory, then log2(256) = 8 levels: at level
//                 s, threads with tid % 2s == 0 add s[tid + s]. Half the threads of every warp idle
//                 from the first level (divergence), and the modulo is slow.
//   SEQUENTIAL    same tree, sequential addressing: at level s threads tid < s add s[tid + s].
//                 The active threads are contiguous, so whole warps retire and accesses are
//                 conflict-free. Still: half the threads idle after loading, 256 elements a block.
//   FIRST_ADD     each thread loads two elements (i and i + 256) and adds them while loading:
//                 half the blocks, every thread does useful work at the first level.
//   WARP_SHUFFLE  as FIRST_ADD, but once 64 values remain the first warp finishes with register
//                 shuffles (warp_reduce): no shared memory traffic or barriers for the last levels.
//   WARP_REDUCE   (reduce_warp) a grid that fills the device once; each thread reduces many
//                 elements from 128-bit loads, 4 in flight (thread_reduce_strided), then
//                 block_reduce: shuffles in each warp, one warp for the warps' partials. Per
//                 element: one load instruction per 4 (f32) or 8 (16-bit) elements and one add:
//                 the instruction cost disappears under the memory time, expect ~0.9x copy.
// The tree versions need a block per 256 (512) elements and a partial each; reduce_vector runs
// one WARP_REDUCE pass over their partials when there are more than 2048 of them.
enum class tree_kind { interleaved, sequential, first_add, warp_shuffle };

template <tree_kind kTree, class T, class Op>
__global__ void __launch_bounds__(kBlock) reduce_tree(float *partials, const T *x, int64_t n, Op op) {
  __shared__ float s[kBlock];
  const unsigned tid = threadIdx.x;
  constexpr bool two = kTree == tree_kind::first_add || kTree == tree_kind::warp_shuffle;
  const int64_t i = (int64_t)blockIdx.x * (two ? 2 * kBlock : kBlock) + tid;
  float v = i < n ? to_f32(x[i]) : Op::identity();
  if (two && i + kBlock < n) v = op(v, to_f32(x[i + kBlock]));
  s[tid] = v;
  __syncthreads();
  if constexpr (kTree == tree_kind::interleaved) {
    for (unsigned st = 1; st < kBlock; st *= 2) {
      if (tid % (2 * st) == 0) s[tid] = op(s[tid], s[tid + st]);
      __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = s[0];
  } else if constexpr (kTree == tree_kind::warp_shuffle) {
    for (unsigned st = kBlock / 2; st > 32; st >>= 1) {  // down to 64 values in s[0 .. 64)
      if (tid < st) s[tid] = op(s[tid], s[tid + st]);
      __syncthreads();
    }
    if (tid < 32) {
      const float w = warp_reduce(op(s[tid], s[tid + 32]), op);
      if (tid == 0) partials[blockIdx.x] = w;
    }
  } else {
    for (unsigned st = kBlock / 2; st > 0; st >>= 1) {
      if (tid < st) s[tid] = op(s[tid], s[tid + st]);
      __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = s[0];
  }
}

// The histogram with global atomics.
// GLOBAL_ATOMIC (kRuns false), and RUN_AGGREGATE past the shared ranges (kRuns true): counters
// straight in global memory. Bytes: 4 per element read; atomics: one per element (per run), on
// L2: fine for many bins and spread data, slow when many hit one bin.
template <bool kRuns>
__global__ void __launch_bounds__(kBlock) histogram_global(unsigned long long *counts, const int32_t *x, int64_t n, int32_t bins) {
  bin_counter<kRuns, unsigned long long> c{counts, 0u, (uint32_t)bins};
  for_each_i32<kHistLoads>(x, n, (int64_t)blockIdx.x * blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x, c);
  c.flush();
}

// ---- 3.3 Production kernels: warp reduction, row reductions, shared-memory histogram -------------
// WARP_REDUCE: block b writes op over its threads' strided shares of x[0 .. n).
template <class T, class Op> __global__ void __launch_bounds__(kBlock) reduce_warp(float *partials, const T *x, int64_t n, Op op) {
  __shared__ float scratch[32];
  const float v = thread_reduce_strided<4>(x, n, (int64_t)blockIdx.x * blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x,
                                           op, Op::identity());
  const float r = block_reduce(v, op, Op::identity(), scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = r;
}

// The second pass: one block reduces count partials (in a fixed order) into *out; count == 0
// writes the identity.
template <class Op> __global__ void __launch_bounds__(kBlock) reduce_finish(float *out, const float *partials, int64_t count, Op op) {
  __shared__ float scratch[32];
  float v = Op::identity();
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) v = op(v, partials[i]);
  v = block_reduce(v, op, Op::identity(), scratch);
  if (threadIdx.x == 0) *out = v;
}

// Row reductions.
// out[r] = op over row r of a row-major rows x cols matrix. Short rows: one warp per row, 8 rows
// per block (no barrier at all). Long rows: one block per row. Both loop over rows past the grid.
template <class T, class Op>
__global__ void __launch_bounds__(kBlock) reduce_rows_warp(float *out, const T *x, int64_t rows, int64_t cols, Op op) {
  constexpr int kWarps = kBlock / 32;
  for (int64_t r = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5); r < rows; r += (int64_t)gridDim.x * kWarps) {
    const float v = row_reduce_warp(x + r * cols, cols, op);
    if ((threadIdx.x & 31) == 0) out[r] = v;
  }
}

// Short rows (cols <= TPR * V): a group of TPR = 1, 2, 4, 8, 16 or 32 consecutive lanes per row, 32 /
// TPR rows per warp, one 16-byte vector a lane (128-bit when `vec`: x 16-byte aligned and cols % V
// == 0; else element by element, which for TPR = 1 is lane l reading row lead + l: coalesced), the
// vector reduced pairwise, then log2(TPR) shuffles; the group's first lane writes out[r]. The row
// loop is warp-uniform (for_each_row): dead rows read nothing and write nothing. Bytes: the row
// once, 4 per row written; a 1-column f32 row is one lane's load and store, not a warp's.
template <class T, int TPR, class Op>
__global__ void __launch_bounds__(kBlock) reduce_rows_group(float *out, const T *x, int64_t rows, int64_t cols, bool vec, Op op) {
  constexpr int V = 16 / (int)sizeof(T), RPB = kBlock / TPR;
  const int t = threadIdx.x % TPR;
  for_each_row<TPR>(rows, (int64_t)blockIdx.x * RPB, (int64_t)gridDim.x * RPB, [&](int64_t r, bool live) {
    const int64_t c = live ? cols : 0, j = (int64_t)t * V;
    float a[V];
    if (j < c) {
      load_cols<V>(x + r * cols, j, c, vec, Op::identity(), a);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) a[k] = Op::identity();
    }
#pragma unroll
    for (int s = 1; s < V; s *= 2)
#pragma unroll
      for (int k = 0; k < V; k += 2 * s) a[k] = op(a[k], a[k + s]);
    const float v = warp_reduce<TPR>(a[0], op);
    if (live && t == 0) out[r] = v;
  });
}

// Rows shorter than a vector (cols = C < V): packed rows (section 1.5), K whole rows a thread in NV
// 16-byte vectors, each row reduced in registers (no shuffles, no padding), its K results written
// as K / 4 float4 when `vec` (x and out 16-byte aligned) and the chunk is whole. Bytes: the rows
// once, 4 per row written; a 1-column row is 4 bytes read, not a lane's 16.
template <class T, int C, class Op>
__global__ void __launch_bounds__(kBlock) reduce_rows_packed(float *out, const T *x, int64_t rows, bool vec, Op op) {
  using P = packed_rows<T, C>;
  static_assert(P::K % 4 == 0, "a chunk's results are whole float4");
  for_each_packed<T, C>(rows, [&](int64_t g) {
    float v[P::N], o[P::K];
    load_packed<T, C>(x, g, rows * C, vec, Op::identity(), v);
#pragma unroll
    for (int k = 0; k < P::K; ++k) {
      o[k] = v[k * C];
#pragma unroll
      for (int i = 1; i < C; ++i) o[k] = op(o[k], v[k * C + i]);
    }
    const int64_t r = g * P::K;
    if (vec && r + P::K <= rows) {
#pragma unroll
      for (int k = 0; k < P::K; k += 4) {
        const float w[4] = {o[k], o[k + 1], o[k + 2], o[k + 3]};
        store_f32<4>(out, r + k, w);
      }
    } else {
#pragma unroll
      for (int k = 0; k < P::K; ++k)
        if (r + k < rows) out[r + k] = o[k];
    }
  });
}

// A few long rows: split rows (section 1.5), a cluster of p.cluster blocks per row, each block
// reducing its slice as reduce_rows_block does a row (thread_reduce_strided, then block_reduce),
// the slices' values merged in rank order through distributed shared memory; rank 0 writes
// out[r]. Bytes: the row once, 4 per row written; 16 rows of 2^20 f32 on 16 x 16 blocks read at
// the copy rate where 16 x 1 blocks read at a sixth of it. Any blockDim.x (a multiple of 32).
template <class T, class Op> struct reduce_split_params {
  float *out;
  const T *x;
  int64_t rows, cols;
  int cluster;
  Op op;
};
template <class T, class Op> __global__ void __launch_bounds__(1024) reduce_rows_split(reduce_split_params<T, Op> p) {
  __shared__ float scratch[32];
  __shared__ cluster_share<float> share;
  for_each_split_row(p.rows, p.cols, p.cluster, share, [&](int64_t r, col_range s, int nrow) {
    const T *x = p.x + r * p.cols + s.begin;
    float v = thread_reduce_strided<4>(x, s.end - s.begin, threadIdx.x, blockDim.x, p.op, Op::identity());
    v = block_reduce(v, p.op, Op::identity(), scratch);
    v = cluster_merge(v, p.cluster, share, nrow, Op::identity(), [&](float &a, const float &o) { a = p.op(a, o); });
    if (threadIdx.x == 0 && blockIdx.x % p.cluster == 0) p.out[r] = v;
  });
}

template <class T, class Op>
__global__ void __launch_bounds__(kBlock) reduce_rows_block(float *out, const T *x, int64_t rows, int64_t cols, Op op) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float v = row_reduce_block(x + r * cols, cols, op, scratch);
    if (threadIdx.x == 0) out[r] = v;
  }
}

// SHARED_ATOMIC (kRuns false, copies 1) and RUN_AGGREGATE (kRuns true, copies 1 or one per warp):
// bins [lo, lo + width) of range blockIdx.y, lo = blockIdx.y * range_bins, counted in shared memory
// (copies sub-histograms of width 32-bit counters: dynamic shared memory of copies * width * 4
// bytes), then added to counts with one 64-bit global atomic per nonzero bin. The grid bounds each
// block to fewer than 2^32 elements, so the 32-bit counters cannot wrap.
template <bool kRuns>
__global__ void __launch_bounds__(kBlock) histogram_shared(unsigned long long *counts, const int32_t *x, int64_t n, int32_t bins,
                                                          int32_t range_bins, int copies) {
  extern __shared__ uint32_t gpuops_hist_smem[];
  const uint32_t lo = blockIdx.y * (uint32_t)range_bins;
  const uint32_t width = (uint32_t)bins - lo < (uint32_t)range_bins ? (uint32_t)bins - lo : (uint32_t)range_bins;
  const uint32_t total = (uint32_t)copies * width;
  for (uint32_t i = threadIdx.x; i < total; i += blockDim.x) gpuops_hist_smem[i] = 0;
  __syncthreads();
  bin_counter<kRuns, uint32_t> c{gpuops_hist_smem + ((threadIdx.x >> 5) % (uint32_t)copies) * width, lo, width};
  for_each_i32<kHistLoads>(x, n, (int64_t)blockIdx.x * blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x, c);
  c.flush();
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < width; b += blockDim.x) {
    unsigned long long s = 0;
    for (int k = 0; k < copies; ++k) s += gpuops_hist_smem[(uint32_t)k * width + b];
    if (s) atomicAdd(counts + lo + b, s);
  }
}

// ---- 3.4 Dispatch policy -----------------------------------------------------------------------
// The sizes the host's workspace and grid checks share with the kernels are gpuops.h's
// GPUOPS__REDUCE_* and GPUOPS__HIST_* (section I.3); rows take a warp up to kRowWarpMaxCols
// columns (section 1.5). AUTO is WARP_REDUCE for reductions and RUN_AGGREGATE for histograms.
// AUTO's short rows, up to kReduceRowsGroupMaxTPR vectors, take the smallest group of TPR <= 32
// lanes that holds them with one vector a lane (reduce_rows_group); WARP_REDUCE keeps a warp per row
// (reduce_rows_warp: a block of 8 rows each, no loop; f32 rows of 128 columns ran 0.55x
// torch.compile there, 131072 rows on an H200, where the group kernel's grid loops over rows).
// With kReduceRowsPack, AUTO's rows of fewer than V columns take packed rows instead
// (reduce_rows_packed): several whole rows a thread.
// AUTO's rows longer than kRowWarpMaxCols, when fewer than kReduceSplitBlocksPerSM x SMs of them,
// are split rows (reduce_rows_split, compute capability 9.0+): clusters of kReduceSplitThreads
// threads a block, C blocks a row so that rows x C reaches that count (C <= kReduceSplitMaxCluster,
// past 8 where the device allows non-portable clusters), slices of at least kReduceSplitMinSlice
// columns. Elsewhere a block per row as before.
constexpr int kReduceRowsGroupMaxTPR = 32;
constexpr bool kReduceRowsPack = true;
constexpr int kReduceSplitThreads = 512, kReduceSplitBlocksPerSM = 2, kReduceSplitMaxCluster = 16;
constexpr int64_t kReduceSplitMinSlice = 8192;

}  // namespace gpuops

// ---- 3.5 Launcher and C entry point (implementation only) -------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

static_assert(kBlock == GPUOPS__REDUCE_BLOCK, "gpuops.h sizes the reduction workspace for kBlock threads");

// One WARP_REDUCE pass: op over x[0 .. n) into `blocks` partials (returned in *parts); never more
// than gpuops__reduce_fast_blocks(n), which the workspace holds.
template <class T, class Op> gpuops_status reduce_fast_pass(float *partials, const T *x, int64_t n, Op op, cudaStream_t s, int64_t *parts) {
  constexpr int64_t V = 16 / sizeof(T), U = 4;
  auto kernel = reduce_warp<T, Op>;
  int64_t blocks = (n / V + kBlock * U - 1) / (kBlock * U);
  const int64_t full = full_grid<reduce_warp<T, Op>>(), cap = gpuops__reduce_fast_blocks(n);
  blocks = blocks < full ? blocks : full;
  blocks = blocks < cap ? blocks : cap;
  blocks = blocks > 1 ? blocks : 1;
  kernel<<<(unsigned)blocks, kBlock, 0, s>>>(partials, x, n, op);
  *parts = blocks;
  return launch_status();
}

template <class T, class Op> gpuops_status reduce_vector(const gpuops__red_args &a, Op op) {
  float *ws = (float *)a.workspace, *out = (float *)a.out;
  const T *x = (const T *)a.x;
  const cudaStream_t s = a.stream;
  int64_t parts = 0;
  gpuops_status st = GPUOPS_OK;
  if (a.n > 0) {
    if (a.algo == GPUOPS_ALGO_AUTO || a.algo == GPUOPS_ALGO_WARP_REDUCE) {
      st = reduce_fast_pass(ws, x, a.n, op, s, &parts);
    } else {
      parts = gpuops__reduce_tree_blocks(a.n, a.algo);  // <= 2^31 - 1: checked on the host
      const unsigned g = (unsigned)parts;
      switch (a.algo) {
      case GPUOPS_ALGO_INTERLEAVED: reduce_tree<tree_kind::interleaved, T, Op><<<g, kBlock, 0, s>>>(ws, x, a.n, op); break;
      case GPUOPS_ALGO_SEQUENTIAL: reduce_tree<tree_kind::sequential, T, Op><<<g, kBlock, 0, s>>>(ws, x, a.n, op); break;
      case GPUOPS_ALGO_FIRST_ADD: reduce_tree<tree_kind::first_add, T, Op><<<g, kBlock, 0, s>>>(ws, x, a.n, op); break;
      default: reduce_tree<tree_kind::warp_shuffle, T, Op><<<g, kBlock, 0, s>>>(ws, x, a.n, op); break;
      }
      st = launch_status();
      if (st == GPUOPS_OK && parts > GPUOPS__REDUCE_MAX_PARTIALS) {  // too many for one block: one more pass
        float *ws2 = ws + parts;
        st = reduce_fast_pass(ws2, (const float *)ws, parts, op, s, &parts);
        ws = ws2;
      }
    }
  }
  if (st != GPUOPS_OK) return st;
  reduce_finish<Op><<<1, kBlock, 0, s>>>(out, ws, parts, op);
  return launch_status();
}

// Short rows: the smallest group of TPR = 1, 2, 4, 8, 16 or 32 lanes that holds cols with one vector a
// lane (the caller checks cols <= kReduceRowsGroupMaxTPR * V).
template <class T, class Op> gpuops_status reduce_rows_grouped(const gpuops__red_args &a, Op op) {
  constexpr int V = 16 / sizeof(T);
  return with_group_lanes<V, kReduceRowsGroupMaxTPR>(a.cols, [&](auto tpr) {
    constexpr int TPR = decltype(tpr)::value;
    const bool vec = (uintptr_t)a.x % 16 == 0 && a.cols % V == 0;
    const unsigned blocks = row_grid(kBlock, (a.rows + kBlock / TPR - 1) / (kBlock / TPR));
    reduce_rows_group<T, TPR, Op><<<blocks, kBlock, 0, a.stream>>>((float *)a.out, (const T *)a.x, a.rows, a.cols, vec, op);
    return launch_status();
  });
}

// Rows of C = cols < V columns: reduce_rows_packed<C>, C a launch constant.
template <class T, class Op> gpuops_status reduce_rows_pack(const gpuops__red_args &a, Op op) {
  return with_packed_cols<16 / sizeof(T)>(a.cols, [&](auto c) {
    constexpr int C = decltype(c)::value;
    constexpr int64_t K = packed_rows<T, C>::K;
    const bool vec = (uintptr_t)a.x % 16 == 0 && (uintptr_t)a.out % 16 == 0;
    const unsigned blocks = row_grid(kBlock, (a.rows + kBlock * K - 1) / (kBlock * K));
    reduce_rows_packed<T, C, Op><<<blocks, kBlock, 0, a.stream>>>((float *)a.out, (const T *)a.x, a.rows, vec, op);
    return launch_status();
  });
}

template <class T, class Op> gpuops_status reduce_rows(const gpuops__red_args &a, Op op) {
  float *out = (float *)a.out;
  const T *x = (const T *)a.x;
  const int64_t limit = 0x7fffffff;
  if (a.algo == GPUOPS_ALGO_AUTO && kReduceRowsPack && a.cols > 0 && a.cols < (int64_t)(16 / sizeof(T))) return reduce_rows_pack<T>(a, op);
  if (a.algo == GPUOPS_ALGO_AUTO && a.cols <= kReduceRowsGroupMaxTPR * (int64_t)(16 / sizeof(T))) return reduce_rows_grouped<T>(a, op);
  if (a.algo == GPUOPS_ALGO_AUTO && a.cols > kRowWarpMaxCols) {
    static std::atomic<int> known[kReduceSplitMaxCluster + 1];
    constexpr auto kernel = reduce_rows_split<T, Op>;
    const int64_t target = (int64_t)kReduceSplitBlocksPerSM * current_device().sms;
    int resident = 0;
    const int C = split_cluster(kernel, kReduceSplitThreads, a.rows, a.cols, kReduceSplitMinSlice, target, kReduceSplitMaxCluster, known,
                                &resident);
    if (C > 0) return launch_rows(kernel, kReduceSplitThreads, 1, reduce_split_params<T, Op>{out, x, a.rows, a.cols, C, op}, a.stream, resident);
  }
  if (a.algo == GPUOPS_ALGO_WARP_REDUCE || a.cols <= kRowWarpMaxCols) {
    const int64_t blocks = (a.rows + kBlock / 32 - 1) / (kBlock / 32);
    reduce_rows_warp<T, Op><<<(unsigned)(blocks < limit ? blocks : limit), kBlock, 0, a.stream>>>(out, x, a.rows, a.cols, op);
  } else {
    reduce_rows_block<T, Op><<<(unsigned)(a.rows < limit ? a.rows : limit), kBlock, 0, a.stream>>>(out, x, a.rows, a.cols, op);
  }
  return launch_status();
}

template <class T> gpuops_status reduce_typed(const gpuops__red_args &a) {
  switch (a.op) {
  case GPUOPS_REDUCE_SUM: return a.kind == GPUOPS__RED_ROWS ? reduce_rows<T>(a, plus{}) : reduce_vector<T>(a, plus{});
  case GPUOPS_REDUCE_MAX: return a.kind == GPUOPS__RED_ROWS ? reduce_rows<T>(a, maximum{}) : reduce_vector<T>(a, maximum{});
  case GPUOPS_REDUCE_MIN: return a.kind == GPUOPS__RED_ROWS ? reduce_rows<T>(a, minimum{}) : reduce_vector<T>(a, minimum{});
  }
  return GPUOPS_ERR_INVALID_ARGUMENT;
}

// Zero counts, then count. AUTO is RUN_AGGREGATE; RUN_AGGREGATE past GPUOPS__HIST_RANGES_MAX
// ranges of shared bins counts runs in global memory instead.
inline gpuops_status histogram_launch(const gpuops__red_args &a) {
  unsigned long long *counts = (unsigned long long *)a.out;
  const int32_t *x = (const int32_t *)a.x;
  const int64_t n = a.n, bins = a.bins;
  const cudaStream_t s = a.stream;
  gpuops_status st = cuda_call_status(cudaMemsetAsync(counts, 0, (size_t)bins * sizeof(int64_t), s));
  if (st != GPUOPS_OK || n == 0) return st;
  const gpuops_algo algo = a.algo == GPUOPS_ALGO_AUTO ? GPUOPS_ALGO_RUN_AGGREGATE : a.algo;
  const int64_t ranges = (bins + GPUOPS__HIST_SHARED_BINS - 1) / GPUOPS__HIST_SHARED_BINS;
  // Blocks: enough to fill the device, no more than the vectors need, and at least n / 2^30 so
  // that no block counts 2^32 elements into a 32-bit shared counter.
  const int64_t need = (n / 4 + kBlock * kHistLoads - 1) / (kBlock * kHistLoads), floor_blocks = (n >> 30) + 1;
  auto grid_x = [&](int64_t resident) {
    int64_t b = need < resident ? need : resident;
    b = b > floor_blocks ? b : floor_blocks;
    return (unsigned)(b < 0x7fffffff ? b : 0x7fffffff);
  };
  if (algo == GPUOPS_ALGO_GLOBAL_ATOMIC || (algo == GPUOPS_ALGO_RUN_AGGREGATE && ranges > GPUOPS__HIST_RANGES_MAX)) {
    auto kernel = algo == GPUOPS_ALGO_GLOBAL_ATOMIC ? histogram_global<false> : histogram_global<true>;
    kernel<<<grid_x(resident_blocks(kernel, kBlock, 0)), kBlock, 0, s>>>(counts, x, n, (int32_t)bins);
    return launch_status();
  }
  const bool runs = algo == GPUOPS_ALGO_RUN_AGGREGATE;
  const int copies = runs && bins <= GPUOPS__HIST_WARP_BINS ? kBlock / 32 : 1;
  const int32_t range_bins = (int32_t)(bins < GPUOPS__HIST_SHARED_BINS ? bins : GPUOPS__HIST_SHARED_BINS);
  const size_t smem = (size_t)copies * (size_t)range_bins * sizeof(uint32_t);  // <= 48 KB: no opt-in
  auto kernel = runs ? histogram_shared<true> : histogram_shared<false>;
  const dim3 grid(grid_x(resident_blocks(kernel, kBlock, smem)), (unsigned)ranges);  // ranges <= 65535: checked on the host
  kernel<<<grid, kBlock, smem, s>>>(counts, x, n, (int32_t)bins, range_bins, copies);
  return launch_status();
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__red_launch(const gpuops__red_args *p) {
  if (p->kind == GPUOPS__RED_HISTOGRAM) return gpuops::histogram_launch(*p);
  return gpuops::dispatch_float(p->dt, [&](auto *t) { return gpuops::reduce_typed<std::remove_pointer_t<decltype(t)>>(*p); });
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_REDUCE



// ==== 4. Prefix scan =========================================================================
#ifndef GPUOPS_NO_SCAN
namespace gpuops {

// The scans run on float, uint32_t and uint64_t: i32 and i64 data are scanned as their unsigned
// bit patterns, where addition wraps modulo 2^32 / 2^64 without undefined behaviour and gives the
// two's complement result bit for bit.
//
// Roofline: a scan reads n elements and writes n, one add each: memory-bound, ceiling the copy
// bandwidth (bytes read + written). The versions differ in how many times they touch memory:
//   scan_hillis_steele_tiles / scan_blelloch_tiles + scan_spine + scan_add_tile_offsets
//                                 4n (tile scan reads x, writes y; the offset pass reads and
//                                 writes y again): at best ~0.5x copy.
//   scan_rts_reduce + scan_spine + scan_rts_downsweep
//                                 3n (x read twice): at best ~0.67x copy.
//   scan_lookback                 2n: the ceiling is the copy itself.

// ---- 4.1 Contract and building blocks: the tiles of the single-pass and reduce-then-scan scans
// A tile is kThreads threads x R vectors of V = 16 / sizeof(T) elements; the default, 256 x 4, is
// 4096 floats or 32-bit ints, 2048 64-bit ints (16 KB). Round k of a tile is kThreads consecutive
// vectors, thread t owning vector t of each round (so each round is one coalesced 128-bit access
// per thread) and its V consecutive elements. Scan order inside a tile: element, then thread (a
// warp scan), then the R * kWarps (round, warp) partial sums, scanned by one warp (lane l owns
// kPer consecutive ones). Tiles are laid over logical positions j = i + m, where
// m = (x mod 16) / sizeof(T) puts every vector on a 16-byte boundary; a vector that straddles 0 or n
// is loaded element by element.
template <class T, int THREADS = 256, int ROUNDS = 4> struct scan_tile {
  static constexpr int kThreads = THREADS, kWarps = kThreads / 32, V = 16 / (int)sizeof(T), R = ROUNDS;
  static constexpr int kItems = kThreads * V * R, kParts = R * kWarps, kPer = (kParts + 31) / 32;
  static_assert(kThreads % 32 == 0 && kThreads <= 1024 && R >= 1, "whole warps, one block");
};
static_assert(scan_tile<uint64_t>::kItems == GPUOPS__SCAN_LB_MIN_TILE, "gpuops.h sizes the workspace for this tile");
static_assert(scan_tile<float>::kItems >= GPUOPS__SCAN_LB_MIN_TILE, "gpuops.h sizes the workspace for this tile");

// Loads thread's R vectors of the tile C starting at logical position `base` (identity 0 outside
// [0, n)). kVec: 128-bit loads where the vector lies inside [0, n) (needs x - m 16-byte aligned).
template <class C, bool kVec, class T>
__device__ __forceinline__ void scan_load_tile(const T *__restrict__ x, int64_t n, int64_t base, int m, T (&v)[C::R][C::V]) {
#pragma unroll
  for (int k = 0; k < C::R; ++k) {
    const int64_t i0 = base + (int64_t)(k * C::kThreads + (int)threadIdx.x) * C::V - m;
    if (kVec && i0 >= 0 && i0 + C::V <= n) {
      const vec<T, C::V> w = *reinterpret_cast<const vec<T, C::V> *>(x + i0);
#pragma unroll
      for (int q = 0; q < C::V; ++q) v[k][q] = w.v[q];
    } else {
#pragma unroll
      for (int q = 0; q < C::V; ++q) v[k][q] = (i0 + q >= 0 && i0 + q < n) ? x[i0 + q] : T(0);
    }
  }
}

template <class C, bool kVec, class T>
__device__ __forceinline__ void scan_store_tile(T *__restrict__ y, int64_t n, int64_t base, int m, const T (&v)[C::R][C::V]) {
#pragma unroll
  for (int k = 0; k < C::R; ++k) {
    const int64_t i0 = base + (int64_t)(k * C::kThreads + (int)threadIdx.x) * C::V - m;
    if (kVec && i0 >= 0 && i0 + C::V <= n) {
      vec<T, C::V> w;
#pragma unroll
      for (int q = 0; q < C::V; ++q) w.v[q] = v[k][q];
      *reinterpret_cast<vec<T, C::V> *>(y + i0) = w;
    } else {
#pragma unroll
      for (int q = 0; q < C::V; ++q)
        if (i0 + q >= 0 && i0 + q < n) y[i0 + q] = v[k][q];
    }
  }
}

// tile_scan: every thread of a C::kThreads block calls it together; it scans the tile's elements
// (inclusive or exclusive) and adds the tile's prefix. The thread's items come from load(k, w),
// which fills w with round k's vector (called twice per round: once for the totals, once for the
// results), and its results go to emit(k, w). `prefix(total)` is called by warp 0 only (all 32
// lanes together, after the tile's total is known) and must return the prefix of the tile (the sum
// of everything before it) in every lane. shared: C::kParts T of the caller's (s_part), reusable
// after the call once the block has passed a __syncthreads. Two __syncthreads inside. Bytes: none
// beyond what load reads and emit writes; flops: about 3 adds per element.
template <class C, class T, class Load, class Emit, class PrefixOp>
__device__ __forceinline__ void tile_scan(Load load, Emit emit, bool exclusive, T *s_part, PrefixOp prefix) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T wex[C::R];
#pragma unroll
  for (int k = 0; k < C::R; ++k) {  // thread sums, then R independent warp scans (ILP)
    T w[C::V];
    load(k, w);
    T s = w[0];
#pragma unroll
    for (int q = 1; q < C::V; ++q) s = s + w[q];
    const T inc = warp_inclusive_scan(s);
    if (lane == 31) s_part[k * C::kWarps + warp] = inc;
    wex[k] = warp_exclusive_from_inclusive(inc);
  }
  __syncthreads();
  if (warp == 0) {  // lane l owns partials [l * kPer, (l + 1) * kPer) that exist (identity past them)
    T a[C::kPer], s = T(0);
#pragma unroll
    for (int j = 0; j < C::kPer; ++j) {
      const int i = lane * C::kPer + j;
      a[j] = i < C::kParts ? s_part[i] : T(0);
      s = j ? s + a[j] : a[j];
    }
    const T inc = warp_inclusive_scan(s);
    const T ex = warp_exclusive_from_inclusive(inc);
    const T total = __shfl_sync(0xffffffffu, inc, 31);
    T run = prefix(total) + ex;
#pragma unroll
    for (int j = 0; j < C::kPer; ++j) {
      const int i = lane * C::kPer + j;
      if (i < C::kParts) s_part[i] = run;
      run = run + a[j];
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < C::R; ++k) {
    T w[C::V];
    load(k, w);
    T run = s_part[k * C::kWarps + warp] + wex[k];
#pragma unroll
    for (int q = 0; q < C::V; ++q) {
      const T x = w[q];
      if (exclusive) {
        w[q] = run;
        run = run + x;
      } else {
        run = run + x;
        w[q] = run;
      }
    }
    emit(k, w);
  }
}
// tile_scan over a tile held in registers (v[k] is round k), results back into v.
template <class C, class T, class PrefixOp>
__device__ __forceinline__ void tile_scan(T (&v)[C::R][C::V], bool exclusive, T *s_part, PrefixOp prefix) {
  tile_scan<C>([&](int k, T(&w)[C::V]) {
#pragma unroll
    for (int q = 0; q < C::V; ++q) w[q] = v[k][q];
  }, [&](int k, const T(&w)[C::V]) {
#pragma unroll
    for (int q = 0; q < C::V; ++q) v[k][q] = w[q];
  }, exclusive, s_part, prefix);
}

// ---- 4.2 Learning-path kernels: Hillis-Steele and Blelloch tiles, reduce-then-scan ------------
// The textbook tile scans.
// Scan-then-propagate: each kernel scans its tile into y (local sums only) and saves the tile's
// total; scan_spine scans the totals; scan_add_tile_offsets adds each tile's offset to y.

// Hillis-Steele: 512 threads, one element each. log2(512) = 9 steps; in step s every element
// adds the one 2^s before it (n log n adds instead of n), double-buffered so that a step reads
// only the previous step's values: one __syncthreads per step.
template <class T> __global__ void __launch_bounds__(GPUOPS__SCAN_HS_TILE) scan_hillis_steele_tiles(T *y, const T *x, int64_t n, bool exclusive, T *sums) {
  constexpr int kTile = GPUOPS__SCAN_HS_TILE;
  __shared__ T buf[2][kTile];
  const int t = threadIdx.x;
  const int64_t i = (int64_t)blockIdx.x * kTile + t;
  buf[0][t] = i < n ? x[i] : T(0);
  __syncthreads();
  int cur = 0;
#pragma unroll
  for (int off = 1; off < kTile; off <<= 1) {
    T a = buf[cur][t];
    if (t >= off) a = buf[cur][t - off] + a;
    buf[cur ^ 1][t] = a;
    cur ^= 1;
    __syncthreads();
  }
  if (i < n) y[i] = exclusive ? (t ? buf[cur][t - 1] : T(0)) : buf[cur][t];
  if (t == kTile - 1) sums[blockIdx.x] = buf[cur][t];
}

// Blelloch: 512 threads, two elements each (t and t + 512, coalesced). The up-sweep builds a sum
// tree in place (n - 1 adds), the root is cleared, and the down-sweep pushes prefixes down (n - 1
// adds, n - 1 swaps): O(n) work, 2 log2(n) barrier steps. Shared indices are padded by one word
// every 32 (i + i / 32), which spreads the tree's power-of-two strides over different banks.
template <class T> __global__ void __launch_bounds__(GPUOPS__SCAN_BL_TILE / 2) scan_blelloch_tiles(T *y, const T *x, int64_t n, bool exclusive, T *sums) {
  constexpr int kTile = GPUOPS__SCAN_BL_TILE;
  __shared__ T s[kTile + kTile / 32];
  auto pad = [](int i) { return i + (i >> 5); };
  const int t = threadIdx.x;
  const int64_t base = (int64_t)blockIdx.x * kTile, ia = base + t, ib = base + t + kTile / 2;
  const T xa = ia < n ? x[ia] : T(0), xb = ib < n ? x[ib] : T(0);
  s[pad(t)] = xa;
  s[pad(t + kTile / 2)] = xb;
  int offset = 1;
  for (int d = kTile / 2; d > 0; d >>= 1) {  // up-sweep
    __syncthreads();
    if (t < d) {
      const int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      s[pad(b)] = s[pad(a)] + s[pad(b)];
    }
    offset <<= 1;
  }
  if (t == 0) {
    sums[blockIdx.x] = s[pad(kTile - 1)];
    s[pad(kTile - 1)] = T(0);
  }
  for (int d = 1; d < kTile; d <<= 1) {  // down-sweep
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      const int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      const T ta = s[pad(a)];
      s[pad(a)] = s[pad(b)];
      s[pad(b)] = ta + s[pad(b)];
    }
  }
  __syncthreads();
  const T ea = s[pad(t)], eb = s[pad(t + kTile / 2)];
  if (ia < n) y[ia] = exclusive ? ea : ea + xa;
  if (ib < n) y[ib] = exclusive ? eb : eb + xb;
}

// y[i] += offsets[i / tile] (tile = 2^log2_tile), grid-stride.
template <class T> __global__ void __launch_bounds__(256) scan_add_tile_offsets(T *y, int64_t n, const T *offsets, int log2_tile) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = offsets[i >> log2_tile] + y[i];
}

// Reduce-then-scan.
// Block b owns tiles [b * per, min((b + 1) * per, tiles)). Kernel 1 sums them; scan_spine turns the
// block sums into exclusive block offsets; kernel 3 scans the tiles again from its offset.
template <class T, bool kVec>
__global__ void __launch_bounds__(256) scan_rts_reduce(T *sums, const T *x, int64_t n, int m, int64_t tiles, int64_t per) {
  using C = scan_tile<T>;
  __shared__ T scratch[32];
  const int64_t t0 = blockIdx.x * per, t1 = t0 + per < tiles ? t0 + per : tiles;
  T acc = T(0);
  for (int64_t t = t0; t < t1; ++t) {
    T v[C::R][C::V];
    scan_load_tile<C, kVec>(x, n, t * C::kItems, m, v);
#pragma unroll
    for (int k = 0; k < C::R; ++k)
#pragma unroll
      for (int q = 0; q < C::V; ++q) acc = acc + v[k][q];
  }
  acc = block_reduce(acc, plus(), T(0), scratch);
  if (threadIdx.x == 0) sums[blockIdx.x] = acc;
}

template <class T, bool kVec>
__global__ void __launch_bounds__(256) scan_rts_downsweep(T *y, const T *x, int64_t n, int m, bool exclusive, const T *offsets,
                                                          int64_t tiles, int64_t per) {
  using C = scan_tile<T>;
  __shared__ T s_part[C::kParts];
  const int64_t t0 = blockIdx.x * per, t1 = t0 + per < tiles ? t0 + per : tiles;
  T carry = offsets[blockIdx.x];  // used by warp 0 only
  for (int64_t t = t0; t < t1; ++t) {
    T v[C::R][C::V];
    scan_load_tile<C, kVec>(x, n, t * C::kItems, m, v);
    __syncthreads();  // the previous tile's readers of s_part are done
    tile_scan<C>(v, exclusive, s_part, [&](T total) {
      const T p = carry;
      carry = carry + total;
      return p;
    });
    scan_store_tile<C, kVec>(y, n, t * C::kItems, m, v);
  }
}

// scan_spine: one block of 1024 threads; sums[0, count) replaced by its exclusive scan, 8192 at a
// time (8 consecutive per thread, loaded together so that one block hides the load latency)
// with a running carry. count is at most 1024 for reduce-then-scan, n / 512 for the tile scans.
template <class T> __global__ void __launch_bounds__(1024) scan_spine(T *sums, int64_t count) {
  constexpr int kPer = 8;
  __shared__ T s_warp[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T carry = T(0);
  for (int64_t c0 = 0; c0 < count; c0 += 1024 * kPer) {
    const int64_t i0 = c0 + (int64_t)threadIdx.x * kPer;
    T v[kPer];
#pragma unroll
    for (int q = 0; q < kPer; ++q) v[q] = i0 + q < count ? sums[i0 + q] : T(0);
    T s = v[0];
#pragma unroll
    for (int q = 1; q < kPer; ++q) s = s + v[q];
    const T inc = warp_inclusive_scan(s);
    if (lane == 31) s_warp[warp] = inc;
    __syncthreads();
    T wsum = T(0), total = T(0);  // the warps before this one, and all 32, in a fixed order
    for (int w = 0; w < 32; ++w) {
      const T t = s_warp[w];
      if (w < warp) wsum = wsum + t;
      total = total + t;
    }
    T run = (carry + wsum) + warp_exclusive_from_inclusive(inc);
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      if (i0 + q < count) sums[i0 + q] = run;
      run = run + v[q];
    }
    carry = carry + total;
    __syncthreads();  // s_warp is rewritten by the next chunk
  }
}

// ---- 4.3 Production kernels: decoupled look-back, segmented rows --------------------------------
// The decoupled look-back (single pass).
// Each block takes the next tile id from an atomic counter (so every tile below it has been given
// to a block that is already running: waiting on one never waits on a block that may not have
// been scheduled), loads its tile, computes the tile's aggregate, and publishes it (flag AGG).
// Warp 0 then looks back over the predecessors' states, 32 tiles per step, one lane per tile,
// and once it has its prefix publishes its inclusive prefix (flag PFX). Tile 0 publishes PFX at
// once. The workspace (counter and states) must be zero on entry: the launcher clears it with one
// cudaMemsetAsync per call.
//
// Tile states. 4-byte T: one 64-bit word per tile, flag in the high half, value bits in the low,
// written and read with single 64-bit volatile accesses (a naturally aligned 64-bit access is
// single-copy atomic), so flag and value are always seen together. 8-byte T: a 16-byte word is
// not guaranteed atomic, so the value goes first into its own slot (one slot for the aggregate,
// one for the inclusive prefix: a value is never overwritten), then __threadfence(), then the
// flag; a reader loads the flag, then __threadfence(), then the slot the flag names (the
// release / acquire fence pattern of the PTX memory model). With kAcqRel the flag itself carries
// the ordering instead of the fences: st.release.gpu of the flag after the value, ld.acquire.gpu
// of the flag before the value (volatile accesses are relaxed.sys, so they take part in it).
// Polling with backoff (kBackoffNs > 0) sleeps between the reads of a window that saw an empty
// state; it changes when a state is seen, never what is seen.
//
// Determinism of f32: the inclusive prefixes are defined as the left fold P_t = P_(t-1) + A_t
// (rounded), and a tile that finds its latest published prefix P_j adds A_(j+1), ..., A_(t-1)
// to it one by one in that order, which recomputes P_(t-1) bit for bit whichever j it found. So
// the f32 result does not depend on timing. The fold is serial (lane 0, from shared memory) and
// reaches back at most kLookbackWindows windows of 32 tiles; with no prefix in reach it polls
// again. Integers are exact in any order: a warp reduction per window, reaching back as far as
// needed.
enum : uint32_t { kTileEmpty = 0, kTileAggregate = 1, kTilePrefix = 2 };
// How far back (in windows of 32 tiles) the f32 look-back reaches before it polls again from the
// nearest window: 512 tiles, about as many as an H100 keeps in flight.
constexpr int kLookbackWindows = 16;

template <class T, bool kAcqRel = false, bool kWide = (sizeof(T) == 8)> struct tile_states;

template <class T, bool kAcqRel> struct tile_states<T, kAcqRel, false> {  // float, uint32_t
  uint64_t *word;
  __host__ __device__ static size_t bytes(int64_t tiles) { return (size_t)tiles * 8; }
  __host__ __device__ static tile_states at(unsigned char *p, int64_t) { return {(uint64_t *)p}; }
  __device__ __forceinline__ void publish(int64_t t, uint32_t flag, T v) const {
    uint32_t b;
    memcpy(&b, &v, 4);
    *(volatile uint64_t *)(word + t) = ((uint64_t)flag << 32) | b;
  }
  __device__ __forceinline__ uint32_t read(int64_t t, T &v) const {
    const uint64_t w = *(volatile uint64_t *)(word + t);
    const uint32_t b = (uint32_t)w;
    memcpy(&v, &b, 4);
    return (uint32_t)(w >> 32);
  }
};

template <class T, bool kAcqRel> struct tile_states<T, kAcqRel, true> {  // uint64_t
  T *agg, *incl;
  uint32_t *flag;
  __host__ __device__ static size_t bytes(int64_t tiles) { return (size_t)tiles * 20; }
  __host__ __device__ static tile_states at(unsigned char *p, int64_t tiles) {
    return {(T *)p, (T *)(p + 8 * tiles), (uint32_t *)(p + 16 * tiles)};
  }
  __device__ __forceinline__ void publish(int64_t t, uint32_t f, T v) const {
    *(volatile T *)((f == kTileAggregate ? agg : incl) + t) = v;
    if constexpr (kAcqRel) {  // release: the value before the flag
      asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag + t), "r"(f) : "memory");
    } else {
      __threadfence();  // release: the value before the flag
      *(volatile uint32_t *)(flag + t) = f;
    }
  }
  __device__ __forceinline__ uint32_t read(int64_t t, T &v) const {
    uint32_t f;
    if constexpr (kAcqRel) {  // acquire: the flag before the value
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(flag + t) : "memory");
    } else {
      f = *(volatile uint32_t *)(flag + t);
      __threadfence();  // acquire: the flag before the value
    }
    v = f == kTileAggregate ? *(volatile T *)(agg + t) : f == kTilePrefix ? *(volatile T *)(incl + t) : T(0);
    return f;
  }
};

// One window of the look-back: lane l reads the state of tile `end - 32 + l` (a tile below 0
// reads as prefix 0), polling until no lane sees an empty state. Warp-uniform; all 32 lanes.
// kBackoffNs > 0: before each re-read the warp sleeps, kBackoffNs ns first, doubling up to 8x.
template <int kBackoffNs, class S, class T> __device__ __forceinline__ uint32_t lookback_window(const S &st, int64_t end, T &v) {
  const int64_t t = end - 32 + (threadIdx.x & 31);
  uint32_t f = kTilePrefix;
  v = T(0);
  if (t >= 0) f = st.read(t, v);
  unsigned ns = kBackoffNs;
  while (__any_sync(0xffffffffu, f == kTileEmpty)) {
    if constexpr (kBackoffNs > 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
      __nanosleep(ns);
#endif
      ns = ns < 8u * kBackoffNs ? 2 * ns : ns;
    }
    if (f == kTileEmpty) f = st.read(t, v);
  }
  return f;
}

// The prefix of tile `tile` (> 0): warp 0, all lanes; the result in every lane. See 4.3.
template <class T, int kBackoffNs = 0, class S> __device__ __forceinline__ T lookback(const S &st, int64_t tile, T *s_fold) {
  const int lane = threadIdx.x & 31;
  if constexpr (std::is_floating_point<T>::value) {
    // Windows within reach of the fold: kLookbackWindows * 32 tiles, values kept in s_fold with
    // the oldest window first (window k at 32 * (K - 1 - k)).
    constexpr int K = kLookbackWindows;
    for (;;) {
      for (int k = 0; k < K; ++k) {
        T v;
        const uint32_t f = lookback_window<kBackoffNs>(st, tile - 32 * k, v);
        s_fold[32 * (K - 1 - k) + lane] = v;
        const uint32_t pmask = __ballot_sync(0xffffffffu, f == kTilePrefix);
        if (pmask) {
          __syncwarp();
          T acc = T(0);
          if (lane == 0) {  // P_j, then A_(j+1), ..., A_(tile-1), one by one in that order
            const int start = 32 * (K - 1 - k) + 31 - __clz((int)pmask);
            acc = s_fold[start];
            // Unrolled: the loads run ahead of the add chain, which alone sets the pace.
#pragma unroll 8
            for (int i = start + 1; i < 32 * K; ++i) acc = acc + s_fold[i];
          }
          return __shfl_sync(0xffffffffu, acc, 0);
        }
      }
    }
  } else {
    T acc = T(0);
    for (int64_t end = tile;; end -= 32) {
      T v;
      const uint32_t f = lookback_window<kBackoffNs>(st, end, v);
      const uint32_t pmask = __ballot_sync(0xffffffffu, f == kTilePrefix);
      if (pmask) {
        const int p = 31 - __clz((int)pmask);
        return acc + warp_reduce(lane >= p ? v : T(0), plus());
      }
      acc = acc + warp_reduce(v, plus());
    }
  }
}

// scan_lookback's compile-time shape. THREADS x ROUNDS: the tile (4.2). MIN_BLOCKS: blocks per
// SM asked of __launch_bounds__ (capped by the threads an SM holds), which caps the registers.
// BACKOFF_NS: the poll's first sleep (0: spin). ACQ_REL: 8-byte states ordered by the flag's
// acquire / release instead of __threadfence (4-byte states need neither). STAGED: the tile is
// copied into (dynamic) shared memory by cp.async instead of registers, landing in GROUPS groups
// of rounds that the scan starts on one by one.
template <int THREADS, int ROUNDS, int MIN_BLOCKS, int BACKOFF_NS = 0, bool ACQ_REL = false, bool STAGED = false, int GROUPS = 1>
struct scan_lookback_config {
  static constexpr int kThreads = THREADS, kRounds = ROUNDS, kMinBlocks = MIN_BLOCKS, kBackoffNs = BACKOFF_NS, kGroups = GROUPS;
  static constexpr bool kAcqRel = ACQ_REL, kStaged = STAGED;
  template <class T> using tile = scan_tile<T, THREADS, ROUNDS>;
  // Dynamic shared memory of a block: the staged tile.
  template <class T> static constexpr size_t smem() { return STAGED ? sizeof(T) * tile<T>::kItems : 0; }
};
// The single-pass scan: one tile per block, a grid of `tiles` blocks, tiles numbered by the atomic
// counter (tickets), never by blockIdx. A block takes its ticket, loads, scans, looks back, stores.
// Its life is serial: while it waits for its ticket or its look-back it has no loads in flight, so
// the bytes in flight per SM (bandwidth, by Little's law) rest on the other resident blocks.
//
template <class T, bool kVec, class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks * Cfg::kThreads <= GPUOPS__SM_THREADS ? Cfg::kMinBlocks : GPUOPS__SM_THREADS / Cfg::kThreads)
    scan_lookback(T *y, const T *x, int64_t n, int m, bool exclusive, unsigned *counter, tile_states<T, Cfg::kAcqRel> st) {
  using C = typename Cfg::template tile<T>;
  __shared__ T s_part[C::kParts];
  __shared__ T s_fold[32 * kLookbackWindows];  // f32 only (the compiler drops it otherwise)
  __shared__ unsigned s_tile;
  if (threadIdx.x == 0) s_tile = atomicAdd(counter, 1u);
  __syncthreads();
  const int64_t tile = s_tile, base = tile * C::kItems;
  auto prefix = [&](T total) {
    T p = T(0);
    if (tile == 0) {
      if ((threadIdx.x & 31) == 0) st.publish(0, kTilePrefix, total);
    } else {
      if ((threadIdx.x & 31) == 0) st.publish(tile, kTileAggregate, total);
      p = lookback<T, Cfg::kBackoffNs>(st, tile, s_fold);
      if ((threadIdx.x & 31) == 0) st.publish(tile, kTilePrefix, p + total);
    }
    return p;
  };
  if constexpr (Cfg::kStaged) {
    // The tile goes to shared memory by cp.async (no registers held while it is in flight); each
    // thread copies and later reads back only its own vectors, so no barrier is needed between.
    extern __shared__ uint4 s_stage[];
    T *s_x = reinterpret_cast<T *>(s_stage);
    // G groups of R / G rounds each, committed in order: the first pass starts on a group as soon
    // as it has landed (Cfg::kGroups; 1: wait for the whole tile).
    constexpr int G = Cfg::kGroups, RG = C::R / G;
    static_assert(C::R % G == 0 && G <= 4, "groups of whole rounds, at most 4");
#pragma unroll
    for (int k = 0; k < C::R; ++k) {
      const int idx = (k * C::kThreads + (int)threadIdx.x) * C::V;
      const int64_t i0 = base + (int64_t)idx - m;
      if (kVec && i0 >= 0 && i0 + C::V <= n) {
        cp_async16(s_x + idx, x + i0);
      } else {
#pragma unroll
        for (int q = 0; q < C::V; ++q) s_x[idx + q] = (i0 + q >= 0 && i0 + q < n) ? x[i0 + q] : T(0);
      }
      if ((k + 1) % RG == 0) cp_async_commit();
    }
    bool landed = false;
    tile_scan<C>([&](int k, T(&w)[C::V]) {
      if (!landed && k % RG == 0) cp_async_wait(G - 1 - k / RG);
      if (k == C::R - 1) landed = true;  // the second pass waits no more
      const vec<T, C::V> r = *reinterpret_cast<const vec<T, C::V> *>(s_x + (k * C::kThreads + (int)threadIdx.x) * C::V);
#pragma unroll
      for (int q = 0; q < C::V; ++q) w[q] = r.v[q];
    }, [&](int k, const T(&w)[C::V]) {
      const int64_t i0 = base + (int64_t)(k * C::kThreads + (int)threadIdx.x) * C::V - m;
      if (kVec && i0 >= 0 && i0 + C::V <= n) {
        vec<T, C::V> r;
#pragma unroll
        for (int q = 0; q < C::V; ++q) r.v[q] = w[q];
        store_vec(y + i0, r);
      } else {
#pragma unroll
        for (int q = 0; q < C::V; ++q)
          if (i0 + q >= 0 && i0 + q < n) y[i0 + q] = w[q];
      }
    }, exclusive, s_part, prefix);
  } else {
    T v[C::R][C::V];
    scan_load_tile<C, kVec>(x, n, base, m, v);
    tile_scan<C>(v, exclusive, s_part, prefix);
    scan_store_tile<C, kVec>(y, n, base, m, v);
  }
}

// The segmented scan over rows.
// Rows of a row-major [rows, cols] matrix, each scanned on its own, in chunks with a carry. Rows
// start anywhere, so the accesses are element-wide (each lane 4 consecutive elements per chunk,
// which L1 merges into full lines). Memory-bound like the scan; long rows get a block each, so
// fewer long rows than SMs leave SMs idle (one row of 2^20 runs on one SM).

// scan_rows_warp (rows shorter than 2048): warp w owns the rows [w * rpw, (w + 1) * rpw), a
// contiguous range of about 1024 elements however short the rows are, and walks it in chunks of
// 128 (4 consecutive elements per lane). A row's first element (a head) restarts the sum: each
// lane reduces its 4 elements to (sum since its last head, saw a head), the warp scans these
// pairs with the segmented operator (l, r) -> (r.head ? r.sum : l.sum + r.sum, l.head | r.head),
// and the chunk's running sum carries into the next chunk. So rows of 8 keep all 32 lanes busy.
// The kernel is bound by issue, not memory (Nsight Compute, f32 4194304 x 64 on an H200: 76% of
// issue slots, 195 warp instructions a chunk): offsets are 32-bit from the warp's first element,
// the column a multiply-high by the divisor's magic number, and the scan's heads one ballot rather
// than a flag shuffled at every step (the same additions in the same order): 410 M -> 257 M
// instructions; at 4194304 x 64 f32 0.88 -> 0.92x copy, i32 0.75 -> 0.95x, i64 0.94 -> 0.90x.
template <class T>
__global__ void __launch_bounds__(256) scan_rows_warp(T *y, const T *x, int64_t rows, int64_t cols, int64_t rows_per_warp,
                                                      divisor cols_div, bool exclusive) {
  const int lane = threadIdx.x & 31;
  const uint32_t le_mask = 0xffffffffu >> (31 - lane);  // lanes 0 .. lane
  const int64_t warps = (rows + rows_per_warp - 1) / rows_per_warp;
  const int c = (int)cols;  // <= kRowWarpMaxCols here
  for (int64_t w = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5); w < warps; w += (int64_t)gridDim.x * 8) {
    // The warp's range starts a row and holds at most 2048 elements: 32-bit offsets from its start.
    const int64_t r0 = w * rows_per_warp, r1 = r0 + rows_per_warp < rows ? r0 + rows_per_warp : rows;
    const T *xw = x + r0 * cols;
    T *yw = y + r0 * cols;
    const int len = (int)((r1 - r0) * cols);
    T carry = T(0);
    for (int c0 = 0; c0 < len; c0 += 128) {
      const int e0 = c0 + lane * 4;
      int col = e0 - (int)((__umulhi(cols_div.m, (uint32_t)e0) + (uint32_t)e0) >> cols_div.l) * c;  // e0 % cols
      T v[4];
      bool head[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const bool in = e0 + q < len;
        v[q] = in ? xw[e0 + q] : T(0);
        head[q] = in && col == 0;
        col = col + 1 == c ? 0 : col + 1;
      }
      T s = T(0);
      bool f = false;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (head[q]) s = v[q], f = true;
        else s = s + v[q];
      }
      // The segmented scan of (s, f) over the lanes: lane l adds lane l - off's partial sum while
      // that lane lies in l's segment (at or after the last lane up to l that holds a head): the
      // heads from one ballot instead of a flag shuffled with every step.
      const uint32_t heads = __ballot_sync(0xffffffffu, f);
      const uint32_t mine = heads & le_mask;
      const int lo = mine ? 31 - __clz((int)mine) : 0;
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const T ps = __shfl_up_sync(0xffffffffu, s, off);
        if (lane - off >= lo) s = ps + s;
      }
      const T es = __shfl_up_sync(0xffffffffu, s, 1);
      const bool ef = (heads & (le_mask >> 1)) != 0;  // a head in lanes 0 .. lane - 1
      T run = lane == 0 ? carry : (ef ? es : carry + es);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (head[q]) run = T(0);
        const T xq = v[q];
        if (exclusive) v[q] = run, run = run + xq;
        else run = run + xq, v[q] = run;
      }
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (e0 + q < len) yw[e0 + q] = v[q];
      carry = __shfl_sync(0xffffffffu, run, 31);
    }
  }
}

// scan_row_block: a block of 256 threads scans one row xr[0 .. cols) into yr, starting from carry,
// in chunks of 1024 (4 elements a thread, a warp scan, the 8 warps' totals in a fixed order). Every
// thread calls it; s_warp is __shared__ T[8] of the caller's, free again when it returns.
template <class T> __device__ __forceinline__ void scan_row_block(T *yr, const T *xr, int64_t cols, T carry, bool exclusive, T *s_warp) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t c0 = 0; c0 < cols; c0 += 1024) {
    T v[4];
    const int64_t c = c0 + threadIdx.x * 4;
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = c + q < cols ? xr[c + q] : T(0);
    const T inc = warp_inclusive_scan(((v[0] + v[1]) + v[2]) + v[3]);
    if (lane == 31) s_warp[warp] = inc;
    __syncthreads();
    T before = T(0), total = T(0);  // fixed order: the same bits every run
#pragma unroll
    for (int w = 0; w < 8; ++w) {
      const T s = s_warp[w];
      if (w < warp) before = before + s;
      total = total + s;
    }
    T run = (carry + before) + warp_exclusive_from_inclusive(inc);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const T xq = v[q];
      if (exclusive) v[q] = run, run = run + xq;
      else run = run + xq, v[q] = run;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (c + q < cols) yr[c + q] = v[q];
    carry = carry + total;
    __syncthreads();  // s_warp is rewritten by the next chunk
  }
}
template <class T> __global__ void __launch_bounds__(256) scan_rows_block(T *y, const T *x, int64_t rows, int64_t cols, bool exclusive) {
  __shared__ T s_warp[8];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) scan_row_block(y + r * cols, x + r * cols, cols, T(0), exclusive, s_warp);
}

// A few long rows: split rows (section 1.5), a cluster of p.cluster blocks per row. Pass 1: each
// block sums its slice (16-byte loads, 4 in flight a thread; block_reduce); the cluster's blocks
// exchange the sums through distributed shared memory, each taking the sum of the slices before
// its own (cluster_merge's prefix, in rank order: the same bits every run) as its carry. Pass 2:
// scan_row_block over the slice from that carry. Bytes: x read twice, y written once (the streaming
// cost), on rows x C blocks instead of rows. In place works: a block reads and writes only its own
// slice, each element read before it is written.
template <class T> struct scan_split_params {
  T *y;
  const T *x;
  int64_t rows, cols;
  int cluster;
  bool exclusive;
};
template <class T> __global__ void __launch_bounds__(256) scan_rows_split(scan_split_params<T> p) {
  constexpr int V = 16 / (int)sizeof(T);
  __shared__ T s_warp[8];
  __shared__ T scratch[32];
  __shared__ cluster_share<T> share;
  const int rank = (int)(blockIdx.x % p.cluster);
  for_each_split_row(p.rows, p.cols, p.cluster, share, [&](int64_t r, col_range s, int nrow) {
    const T *xr = p.x + r * p.cols + s.begin;
    T *yr = p.y + r * p.cols + s.begin;
    const int64_t n = s.end - s.begin;
    T t = T(0);
    for_each_vector<4>(
        xr, n, threadIdx.x, blockDim.x, [&](T v) { t = t + v; },
        [&](int, const uint4 &w) {
          T e[V];
          memcpy(e, &w, sizeof e);
#pragma unroll
          for (int k = 0; k < V; ++k) t = t + e[k];
        });
    t = block_reduce(t, plus(), T(0), scratch);
    const T carry = cluster_merge(t, p.cluster, share, nrow, T(0), [](T &a, const T &o) { a = a + o; }, rank);
    scan_row_block(yr, xr, n, carry, p.exclusive, s_warp);
  });
}

// ---- 4.4 Dispatch policy -----------------------------------------------------------------------
// Row scans: a warp over whole rows below kRowWarpMaxCols columns, else a block per row; a few long
// rows (fewer than kScanSplitBlocksPerSM x SMs) on compute capability 9.0+ split rows
// (scan_rows_split): C <= kScanSplitMaxCluster blocks of 256 a row (past 8 where the device allows
// non-portable clusters) so that rows x C reaches that count, slices of at least kScanSplitMinSlice.
constexpr int kScanSplitBlocksPerSM = 4, kScanSplitMaxCluster = 16;
constexpr int64_t kScanSplitMinSlice = 8192;
// The library's default: 512 threads x 12 rounds of 16 bytes, 96 KB tiles staged in shared memory
// (a staged tile holds no registers while in flight), landing in 4 groups, 2 blocks per SM. What
// counts is the bytes of loads in flight per SM while blocks wait in their look-back, and how soon
// a block gets through its own tile: more threads per tile, a shorter serial scan per thread.
// Tiles are numbered by tickets, not blockIdx, so a tile never waits on a block that has not
// started. (The candidates measured against CUB: tools/tune_scan.cu, docs/performance.md.)
template <class T> using scan_lookback_default = scan_lookback_config<512, 12, 2, 0, false, true, 4>;
// Short inputs, whose 96 KB tiles would not reach half the SMs (f32 up to about 1.6 M elements on
// 132 SMs; 2^20 f32 is 43 such tiles): 16 KB tiles, 128 threads x 8 rounds, 8 blocks an SM. Each
// tile's life (load, scan, look-back, store) is what a short input costs, so smaller tiles end
// sooner: measured 1.2-1.7x faster up to 2^19, even at 2^20; slower for f32 from 2^21, where
// many more tiles each pay the look-back's ordered f32 fold (4.3).
template <class T> using scan_lookback_short = scan_lookback_config<128, 8, 8, 0, false, true, 4>;
// Devices whose blocks cannot have the default's 96 KB of shared memory (sm_75: 64 KB): tiles in
// registers, 128 x 32 for 4-byte T, 256 x 16 for 8-byte T (the defaults before staging).
template <class T>
using scan_lookback_registers = typename std::conditional<sizeof(T) == 8, scan_lookback_config<256, 16, 2>, scan_lookback_config<128, 32, 2>>::type;
static_assert(scan_lookback_default<float>::tile<float>::kItems >= GPUOPS__SCAN_LB_MIN_TILE &&
                  scan_lookback_default<uint64_t>::tile<uint64_t>::kItems >= GPUOPS__SCAN_LB_MIN_TILE &&
                  scan_lookback_short<uint64_t>::tile<uint64_t>::kItems >= GPUOPS__SCAN_LB_MIN_TILE &&
                  scan_lookback_registers<float>::tile<float>::kItems >= GPUOPS__SCAN_LB_MIN_TILE &&
                  scan_lookback_registers<uint64_t>::tile<uint64_t>::kItems >= GPUOPS__SCAN_LB_MIN_TILE,
              "gpuops.h sizes the workspace for this tile");

}  // namespace gpuops

// ---- 4.5 Launcher and C entry point (implementation only) -------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// Grids of the row scans loop over rows past 2^20 blocks.
inline int64_t scan_blocks_cap(int64_t blocks) { return blocks < (1 << 20) ? blocks : (1 << 20); }

// The tiled versions use 128-bit accesses when x and y sit at the same offset modulo 16 bytes: then
// the offset m in elements (4.2), else -1.
template <class T> int scan_vec_offset(const T *x, const T *y) {
  constexpr int V = 16 / (int)sizeof(T);
  const int mx = vec_offset(x, sizeof(T), V), my = vec_offset(y, sizeof(T), V);
  return mx == my ? mx : -1;
}

// Decoupled look-back with configuration Cfg: clear the counter and the tile states, then one
// launch. ws holds GPUOPS__SCAN_LB_HEADER + tile_states bytes for Cfg's tiles (+ 1 for the offset):
// gpuops_scan_workspace_size covers tiles of GPUOPS__SCAN_LB_MIN_TILE elements or more.
template <class Cfg, class T>
gpuops_status scan_lookback_run(T *y, const T *x, int64_t n, bool excl, unsigned char *ws, cudaStream_t stream) {
  using C = typename Cfg::template tile<T>;
  static_assert(C::kItems >= GPUOPS__SCAN_LB_MIN_TILE, "gpuops.h sizes the workspace for tiles this large or larger");
  int m = scan_vec_offset(x, y);
  const bool vec_ok = m >= 0;
  if (!vec_ok) m = 0;
  const int64_t tiles = (n + m + C::kItems - 1) / C::kItems;
  if (tiles > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
  unsigned *counter = (unsigned *)ws;
  using S = tile_states<T, Cfg::kAcqRel>;
  const S st = S::at(ws + GPUOPS__SCAN_LB_HEADER, tiles);
  const gpuops_status st_reset = cuda_call_status(cudaMemsetAsync(ws, 0, GPUOPS__SCAN_LB_HEADER + S::bytes(tiles), stream));
  if (st_reset != GPUOPS_OK) return st_reset;
  constexpr size_t smem = Cfg::template smem<T>();
  if constexpr (smem > 0) {  // once per kernel: allow the staged tile (its static shared memory counts toward the 48 KB default too)
    static const cudaError_t e = [] {
      cudaError_t a = cudaFuncSetAttribute(scan_lookback<T, true, Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
      cudaError_t b = cudaFuncSetAttribute(scan_lookback<T, false, Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
      return a != cudaSuccess ? a : b;
    }();
    if (e != cudaSuccess) return cuda_call_status(e);
  }
  if (vec_ok) scan_lookback<T, true, Cfg><<<(unsigned)tiles, Cfg::kThreads, smem, stream>>>(y, x, n, m, excl, counter, st);
  else scan_lookback<T, false, Cfg><<<(unsigned)tiles, Cfg::kThreads, smem, stream>>>(y, x, n, m, excl, counter, st);
  return launch_status();
}

template <class T> gpuops_status scan_launch_typed(const gpuops__scan_args &a) {
  using C = scan_tile<T>;
  T *y = (T *)a.y;
  const T *x = (const T *)a.x;
  const int64_t n = a.n;
  const bool excl = a.kind == GPUOPS_SCAN_EXCLUSIVE;
  const cudaStream_t stream = a.stream;
  if (a.segmented) {
    if (a.cols <= kRowWarpMaxCols) {
      const int64_t rpw = a.cols < 1024 ? 1024 / a.cols : 1, warps = (a.rows + rpw - 1) / rpw;
      const int64_t blocks = scan_blocks_cap((warps + 7) / 8);
      scan_rows_warp<T><<<(unsigned)blocks, 256, 0, stream>>>(y, x, a.rows, a.cols, rpw, divisor((uint64_t)a.cols), excl);
    } else {
      static std::atomic<int> known[kScanSplitMaxCluster + 1];
      const int64_t target = (int64_t)kScanSplitBlocksPerSM * current_device().sms;
      int resident = 0;
      const int C = split_cluster(scan_rows_split<T>, 256, a.rows, a.cols, kScanSplitMinSlice, target, kScanSplitMaxCluster, known, &resident);
      if (C > 0) return launch_rows(scan_rows_split<T>, 256, 1, scan_split_params<T>{y, x, a.rows, a.cols, C, excl}, stream, resident);
      scan_rows_block<T><<<(unsigned)scan_blocks_cap(a.rows), 256, 0, stream>>>(y, x, a.rows, a.cols, excl);
    }
    return launch_status();
  }
  unsigned char *ws = (unsigned char *)a.workspace;
  const gpuops_algo algo = a.algo == GPUOPS_ALGO_AUTO ? GPUOPS_ALGO_DECOUPLED_LOOKBACK : a.algo;
  if (algo == GPUOPS_ALGO_HILLIS_STEELE || algo == GPUOPS_ALGO_BLELLOCH) {
    const bool hs = algo == GPUOPS_ALGO_HILLIS_STEELE;
    const int tile = hs ? GPUOPS__SCAN_HS_TILE : GPUOPS__SCAN_BL_TILE, log2_tile = hs ? 9 : 10;
    const int64_t tiles = (n + tile - 1) / tile;
    if (tiles > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
    T *sums = (T *)ws;
    if (hs) scan_hillis_steele_tiles<T><<<(unsigned)tiles, tile, 0, stream>>>(y, x, n, excl, sums);
    else scan_blelloch_tiles<T><<<(unsigned)tiles, tile / 2, 0, stream>>>(y, x, n, excl, sums);
    if (tiles > 1) {
      scan_spine<T><<<1, 1024, 0, stream>>>(sums, tiles);
      const int64_t blocks = (n + 255) / 256, full = 4 * full_grid<scan_add_tile_offsets<T>>();
      scan_add_tile_offsets<T><<<(unsigned)(blocks < full ? blocks : full), 256, 0, stream>>>(y, n, sums, log2_tile);
    }
    return launch_status();
  }
  if (algo == GPUOPS_ALGO_REDUCE_THEN_SCAN) {
    int m = scan_vec_offset(x, y);
    const bool vec_ok = m >= 0;
    if (!vec_ok) m = 0;
    const int64_t tiles = (n + m + C::kItems - 1) / C::kItems;
    if (tiles > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
    const int64_t blocks = tiles < GPUOPS__SCAN_RTS_MAX_BLOCKS ? tiles : GPUOPS__SCAN_RTS_MAX_BLOCKS;
    const int64_t per = (tiles + blocks - 1) / blocks;
    const int64_t used = (tiles + per - 1) / per;  // blocks that own at least one tile
    T *sums = (T *)ws;
    if (vec_ok) scan_rts_reduce<T, true><<<(unsigned)used, 256, 0, stream>>>(sums, x, n, m, tiles, per);
    else scan_rts_reduce<T, false><<<(unsigned)used, 256, 0, stream>>>(sums, x, n, m, tiles, per);
    scan_spine<T><<<1, 1024, 0, stream>>>(sums, used);
    if (vec_ok) scan_rts_downsweep<T, true><<<(unsigned)used, 256, 0, stream>>>(y, x, n, m, excl, sums, tiles, per);
    else scan_rts_downsweep<T, false><<<(unsigned)used, 256, 0, stream>>>(y, x, n, m, excl, sums, tiles, per);
    return launch_status();
  }
  // The staged default where the device lets a block have its shared memory (and 8 KB to spare).
  const bool staged_ok = current_device().smem_optin >= scan_lookback_default<T>::template smem<T>() + 8 * 1024;
  if (!staged_ok) return scan_lookback_run<scan_lookback_registers<T>, T>(y, x, n, excl, ws, stream);
  using DefaultTile = typename scan_lookback_default<T>::template tile<T>;
  constexpr int64_t kDefaultItems = DefaultTile::kItems;
  if (2 * n <= kDefaultItems * (int64_t)current_device().sms) return scan_lookback_run<scan_lookback_short<T>, T>(y, x, n, excl, ws, stream);
  return scan_lookback_run<scan_lookback_default<T>, T>(y, x, n, excl, ws, stream);
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__scan_launch(const gpuops__scan_args *p) {
  using namespace gpuops;  // i32 and i64 scan as their unsigned bit patterns (section 4)
  return dispatch_dtype<dtype_case<GPUOPS__F32, float>, dtype_case<GPUOPS__I32, uint32_t>, dtype_case<GPUOPS__I64, uint64_t>>(
      p->dt, [&](auto *t) { return scan_launch_typed<std::remove_pointer_t<decltype(t)>>(*p); });
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_SCAN



// ==== 5. Softmax =============================================================================
#ifndef GPUOPS_NO_SOFTMAX
namespace gpuops {

// ---- 5.1 Contract and building blocks ----------------------------------------------------------
// The row's state is the core's online_softmax (section 1.3); the row access, the row-wide
// reductions and the cluster exchange are the core's row engine (section 1.5).

// The outputs of a row once its state (max m, sum s) is known: prob or log-prob, with the
// reciprocal and the logarithm taken once per row.
struct row_output {
  float m, inv, ls;
  bool log, empty;
  __device__ __forceinline__ row_output(const online_softmax &st, bool log_)
      : m(st.m), inv(st.inv_sum()), ls(logf(st.s)), log(log_), empty(st.s == 0.0f) {}
  __device__ __forceinline__ float operator()(float x) const {
    return log ? (empty ? -INFINITY : (x - m) - ls) : exp_shifted(x, m) * inv;
  }
};

template <class T> struct softmax_params {
  T *out;          // y, or dx
  const T *a, *b;  // x; or dy and y
  int64_t rows, cols;
  bool vec;        // 128-bit accesses (see load_cols)
  bool log;        // forward: log_softmax
  int cluster;     // blocks per row of the cluster kernels (1: none)
};

// ---- 5.2 Learning-path kernels: a block per row, x read from memory in every pass -------------
// Roofline: softmax moves 2 x sizeof(T) bytes per element (x read once, y written once) and does
// a few flops and one exponential: memory-bound. These versions read x three times (THREE_PASS) or
// twice (ONLINE): at best 2/4 and 2/3 of the copy ceiling when the rereads miss L2, better where
// a row (cols x sizeof(T)) times the rows in flight fits in L2. AUTO uses ONLINE for rows too
// long to keep on chip. The passes walk the row with the core's sweep_row (section 1.5): U vectors
// per thread (16 elements) loaded before the first is used.
template <class T> __global__ void __launch_bounds__(1024) softmax_three_pass(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), U = stream_u<T>();
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T *x = p.a + r * p.cols;
    T *y = p.out + r * p.cols;
    float m = -INFINITY;  // pass 1: the maximum (fmaxf drops NaN; pass 2 catches it)
    sweep_row<V>(x, p.cols, p.vec, -INFINITY, [&](int64_t, int64_t, const float (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) m = fmaxf(m, v[u][k]);  // columns past the end hold -inf
    });
    m = block_reduce(m, maximum(), -INFINITY, scratch);
    float s = 0.0f;  // pass 2: the sum of exponentials
    sweep_row<V>(x, p.cols, p.vec, -INFINITY, [&](int64_t, int64_t, const float (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) s += exp_shifted(v[u][k], m);
    });
    const row_output out(online_softmax{m, block_reduce(s, plus(), 0.0f, scratch)}, p.log);
    // pass 3: the outputs
    sweep_row<V>(x, p.cols, p.vec, -INFINITY, [&](int64_t j, int64_t step, const float (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float o[V];
#pragma unroll
        for (int k = 0; k < V; ++k) o[k] = out(v[u][k]);
        if (j + u * step < p.cols) store_cols<V>(y, j + u * step, p.cols, p.vec, o);
      }
    });
  }
}

template <class T> __global__ void __launch_bounds__(1024) softmax_online(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), U = stream_u<T>();
  __shared__ online_softmax scratch[32];
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T *x = p.a + r * p.cols;
    T *y = p.out + r * p.cols;
    online_softmax st = online_softmax::identity();  // pass 1: running (max, sum)
    sweep_row<V>(x, p.cols, p.vec, -INFINITY, [&](int64_t, int64_t, const float (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u) st.add(v[u]);  // vectors past the end hold -inf: no effect
    });
    const row_output out(block_combine(st, scratch), p.log);
    sweep_row<V>(x, p.cols, p.vec, -INFINITY, [&](int64_t j, int64_t step, const float (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float o[V];
#pragma unroll
        for (int k = 0; k < V; ++k) o[k] = out(v[u][k]);
        if (j + u * step < p.cols) store_cols<V>(y, j + u * step, p.cols, p.vec, o);
      }
    });
  }
}

// Backward, streaming: pass 1 dot = sum dy * y, pass 2 dx = y * (dy - dot). Reads dy and y twice.
template <class T> __global__ void __launch_bounds__(1024) softmax_bwd_stream(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), U = stream_u<T>() / 2;  // two arrays: 16 floats in flight
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T *dy = p.a + r * p.cols, *y = p.b + r * p.cols;
    T *dx = p.out + r * p.cols;
    float dot = 0.0f;
    sweep_row2<V, U>(dy, y, p.cols, p.vec, 0.0f, [&](int64_t, int64_t, const float (&g)[U][V], const float (&w)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) dot = fmaf(g[u][k], w[u][k], dot);  // vectors past the end hold 0
    });
    dot = block_reduce(dot, plus(), 0.0f, scratch);
    sweep_row2<V, U>(dy, y, p.cols, p.vec, 0.0f, [&](int64_t j, int64_t step, const float (&g)[U][V], const float (&w)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < p.cols) {
          float o[V];
#pragma unroll
          for (int k = 0; k < V; ++k) o[k] = w[u][k] * (g[u][k] - dot);
          store_cols<V>(dx, j + u * step, p.cols, p.vec, o);
        }
    });
  }
}

// ---- 5.3 Production kernels: the row on chip ---------------------------------------------------
// The row is loaded once into registers (E elements per thread, TPR threads per row), reduced,
// and written from the registers: x is read from memory once, so the ceiling is the copy rate.
// TPR = 1, 2, 4, 8 or 16: short rows, 32 / TPR rows per warp (256 / TPR per block), each on a group
// of TPR consecutive lanes with one 16-byte vector a lane; the group's reductions are log2(TPR)
// shuffles (none for TPR = 1), and a warp loads 32 / TPR rows of contiguous memory at once, so a
// 1-column row costs a lane, not a warp. The row loop is warp-uniform (for_each_row): the rows
// past the end of the last warp are computed on -inf padding and never stored. With TPR = 1 the
// element path (cols not a multiple of V, or an unaligned pointer) is coalesced: lane l reads
// element c of row lead + l, so a warp's load of one c touches 32 x cols consecutive elements
// (one 128-byte line for cols = 1, three for cols = 3), and the lines the c loop shares are L1
// hits. TPR = 32: a warp per row (8 rows per block of 256), shuffles only. TPR = 256 or 1024: a
// block per row. With `cluster` = C > 1 (compute capability 9.0+, TPR = 256) a row is split over a
// cluster of C blocks, each holding a slice of TPR * E columns; the blocks swap their (max, sum)
// through distributed shared memory, one exchange per row (cluster_state).
// Register layout: vector k of thread t holds columns slice + (k * TPR + t) * V ... + V - 1, so a
// warp's 32 accesses of one k are contiguous (coalesced 512-byte rows of 128-bit accesses). kPhased
// (rows that are not whole vectors, every array at one phase): the columns are the row view's
// (row_span), so a row's interior still moves in 128-bit accesses; without it such rows went element
// by element (bf16 4095 x 4097: 0.16x copy on an H200, 0.35x with it).
// Forward: the row stays as stored (raw registers, see pack_raw): 16-bit types two to a register,
// so 8 vectors a thread (E = 64) hold 32 KB of row per block of 256 threads, as f32's E = 32 does.
// Passes over the registers: the max, then exponentials and their sum, then the outputs. f32 keeps
// the exponentials in the row's registers; 16-bit registers cannot hold them unrounded, so the
// output pass takes a second one.
// Budget: bf16 at 0.9x of a 3.0 TB/s copy is 4 bytes, so 0.68e12 elements/s, 3.0 per clock per
// SM at 1.7 GHz; an SM issues 128 thread instructions and 16 MUFU.EX2 per clock: about 40
// instructions and 5 exponentials per element (f32: twice). f32 uses about 12 (max, sub, mul, ex2
// with its range fix-up, add, mul) and 1 exponential; 16-bit types about 20 and 2. Yet the row's
// phases are serial within a block (load, reduce, exponentiate, exchange, write). kFastExp: one
// ex2.approx.ftz per exponential, the -inf guard hoisted (probabilities under 2^-126 come out 0,
// which f16 cannot hold and bf16 holds only as subnormals). kPrefetch: the next row's loads issued
// before this row's reductions (short rows; on the cluster path it took the 256-thread 16-bit
// kernel to 254 registers, one block a SM, and measured 8-17% slower than without on an H200).
// The 16-bit 256-thread kernel of 8 vectors a thread (rows of 8193 to 16384 columns, and the
// clusters) asks for two blocks a SM (128 registers): left to itself ptxas gave it 128 or 168 by
// the launch bounds' form, and 168 (one block a SM) measured 40.6 us against 27.5 (bf16 256 x 65536, H200).
// The f32 256-thread kernel of 8 vectors asks for three (80 registers): its kPhased form took 97.
template <class T, int TPR, int E, bool kPrefetch = false, bool kFastExp = false, bool kPhased = false>
__global__ void __launch_bounds__(block_threads<TPR>(), sizeof(T) == 2 && TPR == 256 && E == 64 && !kPrefetch ? 2
                                                       : sizeof(T) == 4 && TPR == 256 && E == 32 ? 3 : 0)
    softmax_fwd_on_chip(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), N = E / V, RPB = block_threads<TPR>() / TPR;
  constexpr bool keep_e = sizeof(T) == 4;  // the row's registers can hold the exponentials
  static_assert(E % V == 0, "E must be a multiple of the vector width");
  __shared__ float fscratch[32];
  __shared__ cluster_share<online_softmax> share;
  int nrow = 0;  // rows merged so far (cluster_merge's row)
  const int t = threadIdx.x % TPR, C = row_cluster<TPR>(p.cluster);
  cluster_share_init(share, C);
  const int64_t slice = (int64_t)(blockIdx.x % C) * TPR * E;  // this block's first column
  const int64_t first = (int64_t)(blockIdx.x / C) * RPB, step = (int64_t)(gridDim.x / C) * RPB;
  // The row's view as stored (see pack_raw), columns outside the row -inf; a row past the last (a
  // dead row of a short-row warp) is all -inf and reads nothing.
  const bool vec = kPhased || p.vec;  // kPhased: the launch's arrays share a phase
  constexpr bool kOutline = sizeof(T) == 2;  // the row's edge vectors as calls (see load_edge_call)
  auto load_row = [&](int64_t r, uint4 (&q)[N]) {
    const bool live = r < p.rows;
    const T *x = p.a + (live ? r : 0) * p.cols;
    const row_span s = span_of<kPhased>(x, live ? p.cols : 0);
#pragma unroll
    for (int k = 0; k < N; ++k) q[k] = load_raw<kPhased, kOutline>(x - s.lo, slice + ((int64_t)k * TPR + t) * V, s, vec);
  };
  // e^(x - m) for the 16-bit path's two passes: kFastExp hoists the -inf guard of m out of the
  // element loop and takes one ex2.approx.ftz (results below 2^-126 flush to 0).
  auto expo = [&](float x, float m) {
    if constexpr (kFastExp) return exp2_approx((x - m) * kLog2e);
    else return exp_shifted(x, m);
  };
  uint4 q[N];
  if (kPrefetch) load_row(first + threadIdx.x / TPR, q);
  for_each_row<TPR>(p.rows, first, step, [&](int64_t r, bool live) {
    T *y = p.out + (live ? r : 0) * p.cols;
    const row_span sy = span_of<kPhased>(y, live ? p.cols : 0);  // a dead row stores nothing
    if (!kPrefetch) load_row(r, q);
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      float v[V];
      unpack_raw<T>(q[k], v);
#pragma unroll
      for (int i = 0; i < V; ++i) m = fmaxf(m, v[i]);
    }
    // kPrefetch: the next row's loads go out now, in flight through the reductions and both passes
    // below (twice the row's registers).
    uint4 qn[N];
    if (kPrefetch) load_row(r + step, qn);
    // The exponentials against the group's maximum (a reduction first): against each thread's own
    // maximum, online_softmax's merge would cost two exponentials a step.
    m = row_max<TPR>(m, fscratch);
    const float mx = kFastExp && m == -INFINITY ? 0.0f : m;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      float v[V];
      if (!keep_e) opaque(q[k]);
      unpack_raw<T>(q[k], v);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float e = keep_e ? exp_shifted(v[i], m) : expo(v[i], mx);
        s += e;
        v[i] = e;
      }
      if (keep_e) q[k] = p.log ? q[k] : pack_raw<T>(v);
    }
    const online_softmax st = cluster_state({m, row_sum<TPR>(s, fscratch)}, C, share, nrow);
    ++nrow;
    // f32 keeps e^(x - m): the factor e^(m - row max) turns them into the row's (0 where m = -inf).
    const float scale = keep_e ? (m == -INFINITY ? 0.0f : exp_shifted(m, st.m)) : 1.0f;
    const float f = st.inv_sum() * scale, ls = p.log ? logf(st.s) : 0.0f;  // no log for softmax
    const float sm = kFastExp && st.m == -INFINITY ? 0.0f : st.m;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = slice + ((int64_t)k * TPR + t) * V;
      if (j < sy.n) {
        float v[V], o[V];
        if (!keep_e) opaque(q[k]);
        unpack_raw<T>(q[k], v);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const float e = keep_e ? v[i] : expo(v[i], sm);  // 16-bit: the second exponential
          o[i] = p.log ? (st.s == 0.0f ? -INFINITY : (v[i] - st.m) - ls) : e * f;
        }
        store_span<V, kPhased, kOutline>(y - sy.lo, j, sy, vec, o);
      }
    }
    if constexpr (kPrefetch) {
#pragma unroll
      for (int k = 0; k < N; ++k) q[k] = qn[k];
    }
  });
  cluster_done(C);
}

// kCluster (the launcher's cluster forms): the blocks of a row meet through cluster_merge (its code
// only there: it took the 256-thread kernel of rows of up to 2048 from 32 to 48 registers), and in
// 16-bit types each thread rolls its rows (kRoll): it issues the loads of its slice of its next row
// before it reduces, meets its cluster and writes this one, so loads stay in flight through the
// barriers (16 more registers of raw vectors; the row is converted to f32 again for the stores
// rather than kept). On an H100, bf16 256 x 65536 0.71x -> 0.91x copy, 4096 x 65536 0.87x -> 0.96x
// (against an L2 prefetch of the next row, which had taken 4096 x 65536 from 0.71x to 0.82x and
// which the roll replaces; docs/performance.md). f32 keeps the plain loop: its 1024-thread form
// already fills the 64 registers of a block of 1024.
template <class T, int TPR, int E, bool kCluster = false, bool kPhased = false>
__global__ void __launch_bounds__(block_threads<TPR>()) softmax_bwd_on_chip(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), N = E / V, RPB = block_threads<TPR>() / TPR;
  static_assert(E % V == 0, "E must be a multiple of the vector width");
  static_assert(!kCluster || TPR > 32, "clusters of whole blocks");
  constexpr bool kRoll = kCluster && sizeof(T) == 2;
  __shared__ float fscratch[32];
  __shared__ cluster_share<float> share;
  int nrow = 0;  // rows merged so far (cluster_merge's row)
  const int t = threadIdx.x % TPR, C = kCluster ? p.cluster : 1;
  cluster_share_init(share, C);
  const int64_t slice = (int64_t)(blockIdx.x % C) * TPR * E;
  const int64_t step = (int64_t)(gridDim.x / C) * RPB, first = (int64_t)(blockIdx.x / C) * RPB;
  // kRoll: row r's dy and y as raw vectors (zeros past the row's end; nothing past the last row).
  struct raw_row {
    uint4 dy[kRoll ? N : 1], y[kRoll ? N : 1];
  };
  const bool vec = kPhased || p.vec;
  auto fetch = [&](int64_t r, raw_row &in) {
    if (r >= p.rows) return;
    const row_span s = span_of<kPhased>(p.a + r * p.cols, p.cols);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = slice + ((int64_t)k * TPR + t) * V;
      in.dy[k] = load_raw<kPhased>(p.a + r * p.cols - s.lo, j, s, vec, 0.0f), in.y[k] = load_raw<kPhased>(p.b + r * p.cols - s.lo, j, s, vec, 0.0f);
    }
  };
  raw_row cur;
  if constexpr (kRoll) fetch(first + threadIdx.x / TPR, cur);
  for_each_row<TPR>(p.rows, first, step, [&](int64_t r, bool live) {
    const int64_t at = (live ? r : 0) * p.cols;
    const row_span s = span_of<kPhased>(p.out + at, live ? p.cols : 0);  // a dead row reads and stores nothing
    const T *dy = p.a + at - s.lo, *y = p.b + at - s.lo;  // the row views
    T *dx = p.out + at - s.lo;
    raw_row next;
    if constexpr (kRoll) fetch(r + step, next);  // the next row's loads in flight through this row's barriers
    float g[N][V], w[N][V];
    float dot = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = slice + ((int64_t)k * TPR + t) * V;
      if constexpr (kRoll) {
        unpack_raw<T>(cur.dy[k], g[k]), unpack_raw<T>(cur.y[k], w[k]);
      } else if (j < s.n) {
        load_span<V, kPhased>(dy, j, s, vec, 0.0f, g[k]);
        load_span<V, kPhased>(y, j, s, vec, 0.0f, w[k]);
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) g[k][i] = w[k][i] = 0.0f;
      }
    }
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
      for (int i = 0; i < V; ++i) dot = fmaf(g[k][i], w[k][i], dot);
    dot = row_sum<TPR>(dot, fscratch);
    dot = cluster_merge(dot, C, share, nrow++, 0.0f, [](float &a, const float &o) { a += o; });
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = slice + ((int64_t)k * TPR + t) * V;
      if (j < s.n) {
        if constexpr (kRoll) {  // convert again rather than keep the f32 copies across the barriers
          opaque(cur.dy[k]), opaque(cur.y[k]);
          unpack_raw<T>(cur.dy[k], g[k]), unpack_raw<T>(cur.y[k], w[k]);
        }
        float o[V];
#pragma unroll
        for (int i = 0; i < V; ++i) o[i] = w[k][i] * (g[k][i] - dot);
        store_span<V, kPhased>(dx, j, s, vec, o);
      }
    }
    if constexpr (kRoll) cur = next;
  });
  cluster_done(C);
}

// Rows shorter than a vector (cols = C < V): packed rows (section 1.5), K whole rows per thread in
// NV 16-byte vectors, each row's max, sum and outputs (forward) or dot and dx (backward) computed
// in registers with no shuffles and no padding: one exponential per element (f32 or 16-bit) and
// one reciprocal per row. Roofline: the copy rate; a 1-column f32 row is 8 bytes of traffic and
// about 12 instructions (two MUFU), far inside an SM's issue budget. p.vec here means only that
// the pointers are 16-byte aligned (cols % V is never 0).
template <class T, int C, bool kBwd> __global__ void __launch_bounds__(kBlock) softmax_packed(softmax_params<T> p) {
  using P = packed_rows<T, C>;
  const int64_t n = p.rows * C;
  for_each_packed<T, C>(p.rows, [&](int64_t g) {
    float v[P::N];
    if constexpr (kBwd) {  // a = dy, b = y
      float dy[P::N];
      load_packed<T, C>(p.a, g, n, p.vec, 0.0f, dy);
      load_packed<T, C>(p.b, g, n, p.vec, 0.0f, v);
#pragma unroll
      for (int k = 0; k < P::K; ++k) {
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < C; ++i) dot = fmaf(dy[k * C + i], v[k * C + i], dot);
#pragma unroll
        for (int i = 0; i < C; ++i) v[k * C + i] = v[k * C + i] * (dy[k * C + i] - dot);
      }
    } else {
      load_packed<T, C>(p.a, g, n, p.vec, -INFINITY, v);  // rows past the end: -inf, never stored
#pragma unroll
      for (int k = 0; k < P::K; ++k) {
        float m = -INFINITY, e[C];  // fmaxf drops NaN; its exponential makes the row NaN
#pragma unroll
        for (int i = 0; i < C; ++i) m = fmaxf(m, v[k * C + i]);
        online_softmax st{m, 0.0f};
#pragma unroll
        for (int i = 0; i < C; ++i) st.s += (e[i] = exp_shifted(v[k * C + i], m));
        if (p.log) {
          const float ls = logf(st.s);
#pragma unroll
          for (int i = 0; i < C; ++i) v[k * C + i] = st.s == 0.0f ? -INFINITY : (v[k * C + i] - m) - ls;
        } else {
          const float inv = st.inv_sum();
#pragma unroll
          for (int i = 0; i < C; ++i) v[k * C + i] = e[i] * inv;
        }
      }
    }
    store_packed<T, C>(p.out, g, n, p.vec, v);
  });
}

// A few rows too long to hold on chip: split rows (section 1.5), a cluster of p.cluster blocks per
// row, each block streaming its slice as softmax_online does a row. Forward: pass 1 the slice's
// online (max, sum), merged over the block, then over the cluster (one exchange per row);
// pass 2 rereads the slice, last trips first (its most recently read columns, the likeliest still
// in L2), and writes the outputs. Backward: pass 1 the slice's dot(dy, y), merged the same way;
// pass 2 dx = y * (dy - dot). Roofline as the streaming kernels: x read twice and y written once
// (4 bytes of traffic per f32 element where 2 is the floor; the reversed reread turns part of the
// second read into L2 hits), but on rows x C blocks instead of rows, so the device's bandwidth is
// in reach. Any blockDim.x (a multiple of 32).
template <class T> __global__ void __launch_bounds__(1024) softmax_fwd_split(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), U = stream_u<T>();
  __shared__ online_softmax scratch[32];
  __shared__ cluster_share<online_softmax> share;
  for_each_split_row(p.rows, p.cols, p.cluster, share, [&](int64_t r, col_range s, int nrow) {
    const T *x = p.a + r * p.cols + s.begin;
    T *y = p.out + r * p.cols + s.begin;
    const int64_t n = s.end - s.begin;
    online_softmax st = online_softmax::identity();
    sweep_row<V>(x, n, p.vec, -INFINITY, [&](int64_t, int64_t, const float (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u) st.add(v[u]);  // vectors past the end hold -inf: no effect
    });
    const row_output out(cluster_state(block_combine(st, scratch), p.cluster, share, nrow), p.log);
    sweep_row<V, true>(x, n, p.vec, -INFINITY, [&](int64_t j, int64_t step, const float (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float o[V];
#pragma unroll
        for (int k = 0; k < V; ++k) o[k] = out(v[u][k]);
        if (j + u * step < n) store_cols<V>(y, j + u * step, n, p.vec, o);
      }
    });
  });
}

template <class T> __global__ void __launch_bounds__(1024) softmax_bwd_split(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), U = stream_u<T>() / 2;  // two arrays: 16 floats in flight
  __shared__ float scratch[32];
  __shared__ cluster_share<float> share;
  for_each_split_row(p.rows, p.cols, p.cluster, share, [&](int64_t r, col_range s, int nrow) {
    const int64_t at = r * p.cols + s.begin, n = s.end - s.begin;
    const T *dy = p.a + at, *y = p.b + at;
    T *dx = p.out + at;
    float dot = 0.0f;
    sweep_row2<V, U>(dy, y, n, p.vec, 0.0f, [&](int64_t, int64_t, const float (&g)[U][V], const float (&w)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) dot = fmaf(g[u][k], w[u][k], dot);  // vectors past the end hold 0
    });
    dot = block_reduce(dot, plus(), 0.0f, scratch);
    dot = cluster_merge(dot, p.cluster, share, nrow, 0.0f, [](float &a, const float &o) { a += o; });
    sweep_row2<V, U, true>(dy, y, n, p.vec, 0.0f, [&](int64_t j, int64_t step, const float (&g)[U][V], const float (&w)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < n) {
          float o[V];
#pragma unroll
          for (int k = 0; k < V; ++k) o[k] = w[u][k] * (g[u][k] - dot);
          store_cols<V>(dx, j + u * step, n, p.vec, o);
        }
    });
  });
}

// ---- 5.4 Dispatch policy -----------------------------------------------------------------------
// AUTO holds the row on chip in the smallest configuration that fits it, (threads per row TPR,
// elements per thread E), in this order; longer rows stream (ONLINE). The forward keeps 8 vectors
// a thread for long rows (32 f32 or 64 16-bit elements: 32 registers of row either way), with 4
// vectors (kSoftmaxBlockMidE) first for 16-bit rows of up to 8192: the 8-vector kernel's 128
// registers leave two blocks a SM, half their vectors empty on such rows, where 4 vectors take 80
// registers and three blocks (H200, bf16 16384 x 8192 0.53 -> 0.81x copy, 4095 x 4097 0.22 ->
// 0.35x); the
// backward holds dy and y, so 16 elements per array at most. Clusters (compute capability 9.0+)
// of up to kSoftmaxMaxCluster blocks of 256 threads hold rows past one block; the backward's rows
// past those, clusters of blocks of 1024 where there are rows for every resident cluster (rows of
// 65536: 4 blocks instead of a second pass over dy and y). Rows of up to
// kSoftmaxGroupMaxTPR vectors take the smallest group of TPR < 32 lanes that holds them with one
// vector a lane (cols <= V: TPR = 1; <= 2V: 2; ... <= 16V: 16), forward and backward; the
// forward's groups prefetch the next row (one vector of registers), since a short row alone keeps
// too few bytes in flight per lane. The backward's rows past a warp's 16 elements a thread and up
// to 128 x 8 take 128 threads a row, two rows a block: a block of 256 left half its threads without
// a vector on rows of 1024 16-bit columns (bf16 rows of 1024 at 0.70x copy on an H200, where
// torch.compile ran at 0.95x). 16-bit rows of 513 to 1024 take a warp each instead, 32 elements a
// lane: the same 64 KB of loads in flight a SM (98 registers, 512 threads, against 128-thread rows
// at 40 registers, 2048 threads), but no block barrier in the row's sum: bf16 131072 x 1024
// 213 -> 184 us on an H200, 1.02x copy (64 threads of 16 elements: 187 us). Below two rows a SM the
// 128-thread rows stay: 16 to 256 rows of 1024 ran 5-9% slower on a warp each (fewer warps).
// Rows sized as "ext": cols, or cols + V - 1 for phased rows.
// With kSoftmaxPackRows, rows of fewer than V columns skip the groups: packed rows
// (softmax_packed), several whole rows a thread, forward and backward.
constexpr int kSoftmaxGroupMaxTPR = 16;                         // short rows, TPR = 1 .. 16, E = V
constexpr bool kSoftmaxPackRows = true;                         // cols < V: softmax_packed
constexpr int kSoftmaxWarpShortE = 8, kSoftmaxWarpE = 32;       // forward, a warp per row
constexpr int kSoftmaxBlockE = 16, kSoftmaxLongVectors = 8;     // forward, a block of 256 per row
constexpr int kSoftmaxBlockMidE = 32;                           // forward, 16-bit rows to 8192, a block of 256
constexpr int kSoftmaxBwdShortE = 8, kSoftmaxBwdE = 16;         // backward, warp and block
constexpr int kSoftmaxBwdWarpWideE = 32;                         // backward, 16-bit rows to 1024, a warp per row
constexpr int kSoftmaxMaxCluster = 8;
// Rows past what a cluster holds on chip, when fewer than kSoftmaxSplitBlocksPerSM x SMs of them
// (forward and backward): split rows (softmax_fwd_split, softmax_bwd_split; compute capability
// 9.0+), clusters of kSoftmaxSplitThreads threads a block, C <= kSoftmaxSplitMaxCluster blocks a row
// (past 8 where the device allows non-portable clusters) so that rows x C reaches that count, with
// slices of at least kSoftmaxSplitMinSlice columns. More rows, or no clusters: ONLINE's kernels.
constexpr int kSoftmaxSplitThreads = 512, kSoftmaxSplitBlocksPerSM = 2, kSoftmaxSplitMaxCluster = 16;
constexpr int64_t kSoftmaxSplitMinSlice = 8192;
constexpr int64_t kSoftmaxWideStreamCols = 16384;               // streaming: 1024 threads from here

}  // namespace gpuops

// ---- 5.5 Launcher and C entry point (implementation only) --------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

template <class T> gpuops_status softmax_stream(const softmax_params<T> &p, gpuops_algo algo, bool bwd, cudaStream_t stream) {
  const int threads = p.cols >= kSoftmaxWideStreamCols ? 1024 : 256;
  const unsigned grid = row_grid(threads, p.rows);
  if (bwd) softmax_bwd_stream<T><<<grid, threads, 0, stream>>>(p);
  else if (algo == GPUOPS_ALGO_THREE_PASS) softmax_three_pass<T><<<grid, threads, 0, stream>>>(p);
  else softmax_online<T><<<grid, threads, 0, stream>>>(p);
  return launch_status();
}

// Short rows: the smallest group of TPR < 32 lanes (TPR = 1, 2, 4, 8, 16) that holds a row's `ext`
// view columns with one vector a lane (the caller checks ext <= kSoftmaxGroupMaxTPR * V).
template <class T, bool kPhased> gpuops_status softmax_group(const softmax_params<T> &p, int64_t ext, bool bwd, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  constexpr bool F = sizeof(T) == 2;  // 16-bit: kFastExp (see softmax_fwd_on_chip)
  return with_group_lanes<V, kSoftmaxGroupMaxTPR>(ext, [&](auto tpr) {
    constexpr int TPR = decltype(tpr)::value;
    if (bwd) return launch_rows(softmax_bwd_on_chip<T, TPR, V, false, kPhased>, 256, 256 / TPR, p, stream);
    return launch_rows(softmax_fwd_on_chip<T, TPR, V, true, F, kPhased>, 256, 256 / TPR, p, stream);
  });
}

// Rows of C = cols < V columns: softmax_packed<C>, C a launch constant (p.vec: aligned pointers).
template <class T> gpuops_status softmax_pack(const softmax_params<T> &p, bool bwd, cudaStream_t stream) {
  return with_packed_cols<16 / sizeof(T)>(p.cols, [&](auto c) {
    constexpr int C = decltype(c)::value, K = packed_rows<T, C>::K;
    if (bwd) return launch_rows(softmax_packed<T, C, true>, kBlock, kBlock * K, p, stream);
    return launch_rows(softmax_packed<T, C, false>, kBlock, kBlock * K, p, stream);
  });
}

// AUTO picks the smallest on-chip configuration that holds the row. E elements per thread: in the
// forward 8 vectors (32 f32, 64 of a 16-bit type: 32 registers of row either way), in the backward
// 16 per array (it holds dy and y as f32), 8 for short rows; rows of up to 16 vectors a group of
// lanes below a warp (softmax_group).
// Split rows (softmax_fwd_split / softmax_bwd_split) where the policy and the device allow; else
// GPUOPS_ERR_UNSUPPORTED, and the caller takes the next form.
template <class T> gpuops_status softmax_split(softmax_params<T> p, bool bwd, cudaStream_t stream) {
  static std::atomic<int> fwd_known[kSoftmaxSplitMaxCluster + 1], bwd_known[kSoftmaxSplitMaxCluster + 1];
  const auto kernel = bwd ? softmax_bwd_split<T> : softmax_fwd_split<T>;
  const int64_t target = (int64_t)kSoftmaxSplitBlocksPerSM * current_device().sms;
  int resident = 0;
  p.cluster = split_cluster(kernel, kSoftmaxSplitThreads, p.rows, p.cols, kSoftmaxSplitMinSlice, target, kSoftmaxSplitMaxCluster,
                            bwd ? bwd_known : fwd_known, &resident);
  if (p.cluster == 0) return GPUOPS_ERR_UNSUPPORTED;
  return launch_rows(kernel, kSoftmaxSplitThreads, 1, p, stream, resident);
}

template <class T> gpuops_status softmax_launch_typed(const gpuops__softmax_args &args) {
  constexpr int V = 16 / sizeof(T);
  softmax_params<T> p;
  p.out = (T *)args.out;
  p.a = (const T *)args.a;
  p.b = (const T *)args.b;
  p.rows = args.rows;
  p.cols = args.cols;
  p.log = args.op == GPUOPS__SM_LOG_FWD;
  p.cluster = 1;
  const uintptr_t bits = (uintptr_t)args.out | (uintptr_t)args.a | (uintptr_t)args.b;  // b may be NULL: 0
  p.vec = (bits % 16) == 0 && (args.cols % V) == 0;
  // Rows that are not whole vectors, every array at one phase (any cols, pointers congruent modulo
  // 16): the on-chip kernels' kPhased forms walk row views (row_span), a row spanning up to V - 1
  // more columns than it has, so the configuration is sized for ext of them. The streaming and
  // split kernels take the element path there.
  const bool phased = !p.vec && one_phase({args.a, args.out, args.b});
  const cudaStream_t stream = args.stream;
  const int64_t cols = args.cols, ext = phased ? cols + V - 1 : cols;
  const bool bwd = args.op == GPUOPS__SM_BWD;
  if (args.algo != GPUOPS_ALGO_AUTO) return softmax_stream(p, args.algo, bwd, stream);
  if (kSoftmaxPackRows && cols < V) {
    p.vec = bits % 16 == 0;
    return softmax_pack(p, bwd, stream);
  }
  auto dispatch = [&](auto phase) {
    constexpr bool P = decltype(phase)::value;
    // Each form's own record of the clusters resident (row_clusters): the phased kernels' registers differ.
    static std::atomic<int> fwd_known[kSoftmaxMaxCluster + 1], bwd_known[kSoftmaxMaxCluster + 1], bwd_wide_known[kSoftmaxMaxCluster + 1];
    if (ext <= kSoftmaxGroupMaxTPR * V) return softmax_group<T, P>(p, ext, bwd, stream);
    if (!bwd) {
      constexpr bool F = sizeof(T) == 2;  // 16-bit: kFastExp (see softmax_fwd_on_chip)
      constexpr int WS = kSoftmaxWarpShortE, W = kSoftmaxWarpE, B = kSoftmaxBlockE, EL = kSoftmaxLongVectors * V;
      if (ext <= 32 * WS) return launch_rows(softmax_fwd_on_chip<T, 32, WS, false, F, P>, 256, 8, p, stream);
      if (ext <= 32 * W) return launch_rows(softmax_fwd_on_chip<T, 32, W, false, F, P>, 256, 8, p, stream);
      if (ext <= 256 * B) return launch_rows(softmax_fwd_on_chip<T, 256, B, false, F, P>, 256, 1, p, stream);
      if (sizeof(T) == 2 && ext <= 256 * kSoftmaxBlockMidE)
        return launch_rows(softmax_fwd_on_chip<T, 256, kSoftmaxBlockMidE, false, F, P>, 256, 1, p, stream);
      if (ext <= 256 * EL) return launch_rows(softmax_fwd_on_chip<T, 256, EL, false, F, P>, 256, 1, p, stream);
      // Rows on clusters: the block kernel above with p.cluster blocks a row.
      const int64_t C = (ext + 256 * EL - 1) / (256 * EL);
      constexpr auto kCl = softmax_fwd_on_chip<T, 256, EL, false, F, P>;
      const int resident = C <= kSoftmaxMaxCluster ? row_clusters(kCl, 256, (int)C, fwd_known) : 0;
      if (resident > 0) {
        p.cluster = (int)C;
        return launch_rows(kCl, 256, 1, p, stream, resident);
      }
      if (ext > 1024 * EL) {
        const gpuops_status st = softmax_split(p, false, stream);
        if (st != GPUOPS_ERR_UNSUPPORTED) return st;
        return softmax_stream(p, GPUOPS_ALGO_ONLINE, false, stream);
      }
      return launch_rows(softmax_fwd_on_chip<T, 1024, EL, false, F, P>, 1024, 1, p, stream);
    }
    constexpr int BS = kSoftmaxBwdShortE, BE = kSoftmaxBwdE;
    if (ext <= 32 * BS) return launch_rows(softmax_bwd_on_chip<T, 32, BS, false, P>, 256, 8, p, stream);
    if (ext <= 32 * BE) return launch_rows(softmax_bwd_on_chip<T, 32, BE, false, P>, 256, 8, p, stream);
    if (sizeof(T) == 2 && ext <= 32 * kSoftmaxBwdWarpWideE && p.rows >= 2 * (int64_t)current_device().sms)
      return launch_rows(softmax_bwd_on_chip<T, 32, kSoftmaxBwdWarpWideE, false, P>, 256, 8, p, stream);
    if (ext <= 128 * BS) return launch_rows(softmax_bwd_on_chip<T, 128, BS, false, P>, 256, 2, p, stream);
    if (ext <= 256 * BS) return launch_rows(softmax_bwd_on_chip<T, 256, BS, false, P>, 256, 1, p, stream);
    if (ext <= 256 * BE) return launch_rows(softmax_bwd_on_chip<T, 256, BE, false, P>, 256, 1, p, stream);
    // The cluster forms (kCluster).
    constexpr auto kCl = softmax_bwd_on_chip<T, 256, BE, true, P>, kClWide = softmax_bwd_on_chip<T, 1024, BE, true, P>;
    const int64_t C = (ext + 256 * BE - 1) / (256 * BE);
    const int resident = C <= kSoftmaxMaxCluster ? row_clusters(kCl, 256, (int)C, bwd_known) : 0;
    if (resident > 0) {
      p.cluster = (int)C;
      return launch_rows(kCl, 256, 1, p, stream, resident);
    }
    if (ext <= 1024 * BE) return launch_rows(softmax_bwd_on_chip<T, 1024, BE, false, P>, 1024, 1, p, stream);
    // Past a cluster of 256-thread blocks: clusters of blocks of 1024 (kSoftmaxMaxCluster of them
    // hold 2^17 columns) where the rows fill every resident cluster; fewer rows split.
    const int64_t CW = (ext + 1024 * BE - 1) / (1024 * BE);
    const int wide = CW <= kSoftmaxMaxCluster ? row_clusters(kClWide, 1024, (int)CW, bwd_wide_known) : 0;
    if (wide > 0 && p.rows >= wide) {
      p.cluster = (int)CW;
      return launch_rows(kClWide, 1024, 1, p, stream, wide);
    }
    const gpuops_status st = softmax_split(p, true, stream);
    return st != GPUOPS_ERR_UNSUPPORTED ? st : softmax_stream(p, GPUOPS_ALGO_ONLINE, true, stream);
  };
  return phased ? dispatch(std::true_type()) : dispatch(std::false_type());
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__softmax_launch(const gpuops__softmax_args *p) {
  return gpuops::dispatch_float(p->dt, [&](auto *t) { return gpuops::softmax_launch_typed<std::remove_pointer_t<decltype(t)>>(*p); });
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_SOFTMAX



// ==== 6. Transpose ============================================================================
#ifndef GPUOPS_NO_TRANSPOSE
// y = x^T: y[c * ldy + r] = x[r * ldx + c]. A copy, so the kernels move raw bits: the element type U
// is the unsigned integer of the element's size (f16 and bf16 share uint16_t code, f32 uint32_t).
// Roofline: each element read once and written once, no arithmetic: the ceiling is the copy
// bandwidth (read + write bytes). What separates the versions is how whole the memory transactions
// are on both sides and how many bytes each SM keeps in flight.
namespace gpuops {

// ---- 6.1 Contract and building blocks ----------------------------------------------------------
// The matrices of one transpose.
template <class U> struct transpose_args {
  U *y;
  const U *x;
  int64_t rows, cols, ldx, ldy;  // x is rows x cols (pitch ldx), y is cols x rows (pitch ldy)
};

// ---- 6.2 Learning-path kernels: naive, shared-tiled, shared-padded -------------------------------
// NAIVE: thread (tx, ty) of a 32 x 8 block copies one element, x[r][c] -> y[c][r], with c along
// the warp. Reads are coalesced (a warp reads 32 consecutive elements, one 128-byte line of f32);
// writes are not: a warp's 32 stores land in 32 rows of y, 32 separate sectors of which each uses
// 4 of its 32 bytes. The grid covers the matrix once (y grid dimension capped at 65535: the
// threads then loop); expected well under half the copy ceiling.
template <class U> __global__ void __launch_bounds__(256) transpose_naive(transpose_args<U> p) {
  const int64_t r_step = (int64_t)gridDim.y * blockDim.y, c_step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < p.rows; r += r_step)
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < p.cols; c += c_step)
      p.y[c * p.ldy + r] = p.x[r * p.ldx + c];
}

// Padding of the shared tile that makes a column read conflict-free: one 4-byte bank word per
// row (33 f32, 34 16-bit, 36 8-bit elements per row; 33 for 8-byte elements, whose 64-bit
// accesses are served a half-warp at a time).
template <class U> constexpr int transpose_pad() { return sizeof(U) >= 4 ? 1 : 4 / (int)sizeof(U); }

// SHARED_TILED (kPad = 0) and SHARED_PADDED (kPad = transpose_pad<U>()): a 32 x 8 block moves a
// 32 x 32 tile: each thread reads 4 elements of x row-wise (coalesced) into tile[row][col], then,
// after a barrier, writes 4 elements of y row-wise (coalesced) from tile[col][row]: the column
// read. Without padding the 32 elements of a column sit 128 bytes apart, all in one bank: a 32-way
// conflict (16-way for 16-bit types), 32 shared-memory wavefronts for one warp's read. With the
// padding each row shifts by one bank and the column read is one wavefront. Both sides still move
// 4-byte (f32) accesses, so expect SHARED_PADDED well above NAIVE and below the copy ceiling.
// Blocks loop over tiles when the grid is capped (x at 2^31 - 1, y at 65535 tiles).
template <class U, int kPad> __global__ void __launch_bounds__(256) transpose_shared(transpose_args<U> p) {
  __shared__ U tile[32][32 + kPad];
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t r0 = (int64_t)blockIdx.y * 32; r0 < p.rows; r0 += (int64_t)gridDim.y * 32)
    for (int64_t c0 = (int64_t)blockIdx.x * 32; c0 < p.cols; c0 += (int64_t)gridDim.x * 32) {
      const int64_t xc = c0 + tx;
#pragma unroll
      for (int k = 0; k < 32; k += 8) {
        const int64_t xr = r0 + ty + k;
        if (xr < p.rows && xc < p.cols) tile[ty + k][tx] = p.x[xr * p.ldx + xc];
      }
      __syncthreads();
      const int64_t yc = r0 + tx;  // y's column index is x's row index
#pragma unroll
      for (int k = 0; k < 32; k += 8) {
        const int64_t yr = c0 + ty + k;
        if (yr < p.cols && yc < p.rows) p.y[yr * p.ldy + yc] = tile[tx][ty + k];
      }
      __syncthreads();  // the tile is read before the next iteration overwrites it
    }
}

// ---- 6.3 Production kernel: vectorized ----------------------------------------------------------
// The vectorized transpose's geometry for element type U. A 64 x 64 tile of x is held in shared
// memory as rows of 16-byte chunks (kCpr chunks of kV elements per row). Load side: thread t
// moves chunks g = i * 256 + t (i < kL) from x to the tile, 16 bytes each, consecutive threads
// along a row of x. Store side: chunk g belongs to warp g / 32; a warp covers kWc tile columns
// (rows of y) and kJpw consecutive chunks of each (kJpw * 16 bytes of one row of y: 128 bytes,
// 64 for i8), gathering each chunk's kV elements from kV tile rows.
template <class U> struct transpose_vec_shape {
  static constexpr int kThreads = 256;
  static constexpr int kV = 16 / (int)sizeof(U);      // elements per chunk: 16 (i8) .. 2 (i64)
  static constexpr int kTile = 64;                    // tile edge in elements
  static constexpr int kCpr = kTile / kV;             // chunks per tile row: 4 .. 32
  static constexpr int kSwizzle = kCpr < 8 ? kCpr : 8;  // period of the XOR swizzle
  static constexpr int kJpw = kSwizzle;               // store side: chunks per tile column per warp
  static constexpr int kWc = 32 / kJpw;               // store side: tile columns per warp
  static constexpr int kJg = kCpr / kJpw;             // store side: warps per tile column
  static constexpr int kL = kTile * kCpr / kThreads;  // chunks per thread per tile: 1 .. 8
};

// Element offset of p within its aligned kBytes (the "phase" of the any-pitch kernel), and of row
// r of a matrix at p with pitch ld; kN = kBytes / sizeof(U) elements.
template <int kBytes, class U> __host__ __device__ __forceinline__ uint32_t transpose_phase(const U *p) {
  return (uint32_t)((uintptr_t)p % kBytes / sizeof(U));
}
template <int kN> __host__ __device__ __forceinline__ uint32_t transpose_row_phase(uint32_t phase0, int64_t ld, int64_t r) {
  return (phase0 + (uint32_t)r * (uint32_t)ld) & (uint32_t)(kN - 1);  // r * ld mod kN: the low bits survive the wrap
}
// x's rows start on whole 16-byte chunks; y's rows on whole 32-byte sectors (the unit of L2's
// writes: a store that leaves part of a sector for another block to fill costs L2 a merge).
template <class U> __host__ __device__ __forceinline__ bool transpose_x_whole(const U *x, int64_t ldx) {
  return transpose_phase<16>(x) == 0 && ldx % (16 / (int64_t)sizeof(U)) == 0;
}
template <class U> __host__ __device__ __forceinline__ bool transpose_y_whole(const U *y, int64_t ldy) {
  return transpose_phase<32>(y) == 0 && ldy % (32 / (int64_t)sizeof(U)) == 0;
}

// Tiles of the vectorized transpose, row-major (the kernel takes the count, and the tiles per
// row as a divisor, from the launcher: built on the device, the divisor's 64-bit division and
// loop cost each thread about 150 instructions, more than its share of a 64 x 64 f32 tile's copy). When y's rows do not start on whole sectors, each
// tile's y-side windows shift up by up to a sector's elements less one (below), so one more tile
// row may be needed.
template <class U> __host__ __device__ __forceinline__ int64_t transpose_vec_tiles(int64_t rows, int64_t cols, bool y_whole) {
  constexpr int kSec = 32 / (int)sizeof(U), kTile = 64;
  return ((rows + (y_whole ? 0 : kSec - 1) + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
}

// kV elements (low address first) as the 16 bytes they occupy in memory.
template <class U> __device__ __forceinline__ uint4 transpose_pack(const U (&e)[16 / sizeof(U)]) {
  uint32_t w[4] = {0u, 0u, 0u, 0u};
  if constexpr (sizeof(U) == 8) {
#pragma unroll
    for (int k = 0; k < 2; ++k) w[2 * k] = (uint32_t)e[k], w[2 * k + 1] = (uint32_t)(e[k] >> 32);
  } else {
    constexpr int per = 4 / (int)sizeof(U);
#pragma unroll
    for (int k = 0; k < 16 / (int)sizeof(U); ++k) w[k / per] |= (uint32_t)e[k] << (8 * (int)sizeof(U) * (k % per));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// VECTORIZED: one 16-byte load and one 16-byte store per kV elements, on a 64 x 64 tile, 256
// threads. Shared layout: chunk ch of tile row r is stored at r * kCpr + (ch ^ ((r / kV) % kSwizzle)).
//   Load side: 8 consecutive lanes store 8 consecutive chunks of one row (two rows for i8), which
//   the XOR keeps in 8 distinct 16-byte bank groups: conflict-free 128-bit stores.
//   Store side: at step k a lane reads element (j * kV + k, c); the warp's lanes differ in c (kWc
//   columns, sharing one chunk position and so differing in bank word or sharing a word) and in j
//   (kJpw chunk rows, whose swizzle j % kSwizzle moves each to its own 16-byte bank group):
//   every read is one wavefront. The gathered kV elements are packed into one 16-byte store.
// A copy has no arithmetic to hide its index arithmetic behind: with 64-bit indices and bounds
// checks on every chunk the kernel issued about 180 instructions per 16-byte load (H100 profile),
// so tiles wholly inside the matrix (all but the last row and column of tiles) take a path with
// one pointer per thread and no checks; edge tiles check every chunk, and every element of a
// chunk that crosses the matrix's edge.
// kAnyPitch: x, y and the pitches need only the element's alignment (4095 x 4097 f32, offset
// views). The accesses then follow memory's chunks and sectors, not the tile's columns:
//   Load side: a row of x whose columns c0.. start ph elements into a chunk (its phase) is read as
//   the aligned chunks from c0 - ph. Once all of a tile's loads are issued, each lane's chunk is
//   joined with its neighbour's (a shuffle; the row's last lane has loaded one more chunk) and
//   realigned in registers (chunk_realign): the shared tile holds the tile's columns as above.
//   Store side: row c of y is written in whole 32-byte sectors: y elements r0 - d .. r0 - d + 63,
//   d being the sector phase of y's element (c, r0), so no sector is left part-written for the
//   neighbouring tile (on an H100, SHARED_PADDED ran 47 -> 68 us at 4096^2 f32 with y one
//   element off, L2 write sectors +25%, DRAM bytes the same). Those are rows of x from r0 - d:
//   the tile carries kSec more rows above r0 (read again by the tile above, from L2), and the tile
//   rows run one further. Reads cross chunk rows, so the gather is two-way conflicted for 8- and
//   16-bit types (conflict-free for f32). x is read 1 + 1/kCpr (the extra chunk) times
//   1 + kSec/64 (the halo) over, from L2. With y's rows whole sectors there is no halo; with x's
//   rows whole chunks, no realignment.
//   Tiles start on multiples of 64 rows and columns, and a thread's rows of x (or y) are kV (or
//   kSec) apart, so each thread's phases ph and d are the same for all its chunks and tiles.
//   4-byte types (f32, i32) whose x rows are not whole chunks skip the realignment (kElemX, the
//   launcher's choice): x is copied element by element with cp.async straight into the swizzled
//   tile, a warp on 32 consecutive elements of one tile row (5 sectors per 128 bytes of x at most;
//   in shared memory the XOR permutes chunks within each 128 bytes: 32 distinct banks). 3 shuffles
//   and about 13 selects per 16-byte chunk become 4 copies with no data in registers, and x is read
//   once, not 1 + 1/kCpr times (H100, 4095 x 4097 f32: 0.82 -> 0.88-0.90x copy). 16-bit types
//   cannot (cp.async's smallest copy is 4 bytes, their rows start on 2-byte boundaries); 8-byte
//   types keep the realignment (a chunk holds 2 elements).
// One block per tile (tile_grid; a grid capped at 2^31 - 1 blocks walks the rest, one after another).
// Without kAnyPitch: needs transpose_x_whole and transpose_y_whole. Ceiling: the copy bandwidth.
#ifndef GPUOPS__TR_MIN_BLOCKS  // measurement hook (-DGPUOPS__TR_MIN_BLOCKS=N): the any-pitch form's blocks per SM
#define GPUOPS__TR_MIN_BLOCKS 3
#endif
template <class U, bool kAnyPitch, bool kElemX = false>
__global__ void __launch_bounds__(256, kAnyPitch ? GPUOPS__TR_MIN_BLOCKS : 1)
    transpose_vectorized(transpose_args<U> p, int64_t tiles, divisor tiles_c) {
  static_assert(!kElemX || (kAnyPitch && sizeof(U) == 4), "element copies: the any-pitch form of a 4-byte type");
  using S = transpose_vec_shape<U>;
  constexpr int kV = S::kV, kTile = S::kTile, kCpr = S::kCpr, kSwizzle = S::kSwizzle, kJpw = S::kJpw, kJg = S::kJg, kL = S::kL;
  constexpr int kSec = 32 / (int)sizeof(U);                     // elements per 32-byte sector
  constexpr int kHalo = kAnyPitch ? kSec : 0;                    // tile rows above r0 (any pitch)
  constexpr int kB = kAnyPitch ? kL + 1 : kL;                    // chunks a thread loads: the last is the halo's
  constexpr int kRowsPerPass = S::kThreads / kCpr;               // load side: tile rows per pass (4 kV)
  constexpr int kColsPerPass = S::kThreads / 32 / kJg * S::kWc;  // store side: tile columns per pass
  __shared__ uint4 tile[(kTile + kHalo) * kCpr];
  const U *tile_e = reinterpret_cast<const U *>(tile);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  // Load side: chunk q of tile rows lrow + i * kRowsPerPass, and of halo row lrow (tid < 128).
  const int q = tid % kCpr, lrow = tid / kCpr;
  // Store side: tile columns sc + i * kColsPerPass (rows of y), chunk j of each.
  const int sc = (warp / kJg) * S::kWc + lane / kJpw, j = (warp % kJg) * kJpw + lane % kJpw;
  const bool x_whole = !kAnyPitch || (!kElemX && transpose_x_whole(p.x, p.ldx)), y_whole = !kAnyPitch || transpose_y_whole<U>(p.y, p.ldy);
  const bool halo = !y_whole && tid < kHalo * kCpr;  // warps 0..3 (any pitch, y not whole)
  const int ph = x_whole ? 0 : (int)transpose_row_phase<kV>(transpose_phase<16>(p.x), p.ldx, lrow);
  const int d = y_whole ? 0 : (int)transpose_row_phase<kSec>(transpose_phase<32>(p.y), p.ldy, sc);
  const int64_t x_pass = kRowsPerPass * p.ldx, y_pass = kColsPerPass * p.ldy;
  uint4 lo[kB], hi[kB];  // hi: the chunk after lo, loaded by a row's last lane (any pitch)
#pragma unroll
  for (int i = 0; i < kB; ++i) lo[i] = hi[i] = make_uint4(0u, 0u, 0u, 0u);

  // The first row and column of tile t (tiles numbered row by row), and whether every access of
  // the tile (halo and extra chunks included) lies inside the matrix.
  auto origin = [&](int64_t t, int64_t &r0, int64_t &c0) {
    const int64_t tr = (int64_t)tiles_c.div((uint64_t)t);
    r0 = tr * kTile;
    c0 = (t - tr * (int64_t)tiles_c.d) * kTile;
    const int reach = kElemX || x_whole ? 0 : kV;  // columns read on either side of the tile (the realignment's chunks)
    return r0 >= (y_whole ? 0 : kHalo) && r0 + kTile <= p.rows && c0 >= reach && c0 + kTile + reach <= p.cols;
  };
  // The 16 bytes at src, row xr, column xc of x (chunk-aligned in memory). Edge tiles: element
  // loads across the matrix's edge, zeros outside.
  auto fetch = [&](auto edge, const U *src, int64_t xr, int64_t xc) {
    if constexpr (!decltype(edge)::value) {
      return __ldg(reinterpret_cast<const uint4 *>(src));
    } else {
      uint4 v = make_uint4(0u, 0u, 0u, 0u);
      if (xr >= 0 && xr < p.rows && xc < p.cols && xc + kV > 0) {
        if (xc >= 0 && xc + kV <= p.cols) {
          v = __ldg(reinterpret_cast<const uint4 *>(src));
        } else {
          U e[kV];
#pragma unroll
          for (int k = 0; k < kV; ++k) e[k] = (xc + k >= 0 && xc + k < p.cols) ? src[k] : (U)0;
          v = transpose_pack<U>(e);
        }
      }
      return v;
    }
  };
  // Issue the tile's loads; nothing waits for them here.
  auto load = [&](auto edge, int64_t r0, int64_t c0) {
    const int64_t xr = r0 + lrow, xc = c0 + (int64_t)q * kV - ph;
    const U *src = p.x + xr * p.ldx + xc;
#pragma unroll
    for (int i = 0; i < kB; ++i) {
      if (i == kL && !halo) break;
      const int64_t r = i < kL ? xr + i * kRowsPerPass : xr - kHalo, at = i < kL ? i * x_pass : -kHalo * p.ldx;
      lo[i] = fetch(edge, src + at, r, xc);
      if (kAnyPitch && q == kCpr - 1 && ph != 0) hi[i] = fetch(edge, src + at + kV, r, xc + kV);
    }
  };
  // kElemX: copy the tile (and the halo rows above it, y not whole) into shared memory, warp w on
  // tile rows kHalo + w + 8 i and halo row w (kHalo = 8 = the warps), lane on columns lane and
  // lane + 32; zeros outside the matrix (edge tiles). Returns with the copies in flight.
  auto copy_elems = [&](auto edge, int64_t r0, int64_t c0) {
    constexpr int kWarps = S::kThreads / 32;
    static_assert(!kElemX || kHalo == kWarps, "one halo row per warp");
    U *tile_w = reinterpret_cast<U *>(tile);
    const U *src = p.x + (r0 + warp) * p.ldx + c0 + lane;
#pragma unroll
    for (int i = -1; i < kTile / kWarps; ++i) {  // i = -1: the halo row
      if (i < 0 && y_whole) continue;
      const int tr = i < 0 ? warp : kHalo + warp + i * kWarps;
      const int64_t xr = r0 + tr - kHalo;
      const U *s = src + (i < 0 ? -(int64_t)kHalo : (int64_t)i * kWarps) * p.ldx;
#pragma unroll
      for (int h = 0; h < kTile / 32; ++h) {
        const int c = lane + 32 * h;
        U *dst = tile_w + tr * kTile + ((c / kV) ^ ((tr / kV) % kSwizzle)) * kV + c % kV;
        if constexpr (!decltype(edge)::value) {
          cp_async4_zfill(dst, s + 32 * h, true);
        } else {
          const bool in = xr >= 0 && xr < p.rows && c0 + c < p.cols;
          cp_async4_zfill(dst, in ? s + 32 * h : p.x, in);
        }
      }
    }
  };
  // Chunk i of the loaded tile, realigned (any pitch): a warp holds whole tile rows (kCpr divides
  // 32), so lane + 1 holds the next chunk of the same row. Every lane of the warp calls it. The
  // realignment reads at most the first 16 - sizeof(U) bytes of the next chunk.
  auto chunk = [&](int i) {
    if (x_whole) return lo[i];
    uint4 h = hi[i];
    const uint32_t nx = __shfl_sync(0xffffffffu, lo[i].x, (lane + 1) % 32), ny = __shfl_sync(0xffffffffu, lo[i].y, (lane + 1) % 32);
    uint32_t nz = 0u, nw = 0u;
    if constexpr (sizeof(U) < 8) nz = __shfl_sync(0xffffffffu, lo[i].z, (lane + 1) % 32);
    if constexpr (sizeof(U) < 4) nw = __shfl_sync(0xffffffffu, lo[i].w, (lane + 1) % 32);
    if (q != kCpr - 1) h = make_uint4(nx, ny, nz, nw);
    return ph == 0 ? lo[i] : chunk_realign<(int)sizeof(U)>(lo[i], h, ph * (int)sizeof(U));
  };
  // Write the tile out: y elements r0 - d + j kV .. of rows c0 + sc + i kColsPerPass, from tile
  // rows kHalo - d + j kV .. (d = 0 without kAnyPitch).
  auto store = [&](auto edge, int64_t r0, int64_t c0) {
    const int64_t yr = c0 + sc, yc = r0 - d + (int64_t)j * kV;
    U *dst = p.y + yr * p.ldy + yc;
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      const int c = sc + i * kColsPerPass;
      U e[kV];
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        const int r = kHalo - d + j * kV + k;
        e[k] = tile_e[r * kTile + ((c / kV) ^ ((r / kV) % kSwizzle)) * kV + c % kV];  // column c of a swizzled tile row
      }
      U *out = dst + i * y_pass;
      if constexpr (!decltype(edge)::value) {
        store_global16(out, transpose_pack<U>(e));
      } else if (yr + i * kColsPerPass < p.cols && yc < p.rows && yc + kV > 0) {
        if (yc >= 0 && yc + kV <= p.rows) {
          store_global16(out, transpose_pack<U>(e));
        } else {
#pragma unroll
          for (int k = 0; k < kV; ++k)
            if (yc + k >= 0 && yc + k < p.rows) out[k] = e[k];
        }
      }
    }
  };
  constexpr std::true_type edge_tile{};
  constexpr std::false_type inner_tile{};

  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t r0, c0;
    const bool inner = origin(t, r0, c0);
    if constexpr (kElemX) {
      if (t != blockIdx.x) __syncthreads();  // every thread has finished reading the previous tile (a capped grid)
      if (inner) copy_elems(inner_tile, r0, c0);
      else copy_elems(edge_tile, r0, c0);
      cp_async_commit();
      cp_async_wait(0);
    } else {
      if (inner) load(inner_tile, r0, c0);
      else load(edge_tile, r0, c0);
      __syncthreads();  // every thread has finished reading the previous tile (a capped grid)
#pragma unroll
      for (int i = 0; i < kB; ++i) {
        if (i == kL && !halo) break;  // warps 0..3 whole, or none: the shuffles see full warps
        const int r = i < kL ? kHalo + lrow + i * kRowsPerPass : lrow;
        tile[r * kCpr + (q ^ ((r / kV) % kSwizzle))] = chunk(i);
      }
    }
    __syncthreads();
    if (inner) store(inner_tile, r0, c0);
    else store(edge_tile, r0, c0);
  }
}

// ---- 6.4 Few rows or few columns: the interleave -------------------------------------------------
// A matrix of a few rows (or columns) and many columns (rows) fills S rows of a 64 x 64 tile
// (3 x 1000000 f32: VECTORIZED's tiles ran at 0.08x copy, NAIVE 0.23x). Its transpose is an
// interleave: with few rows, y (cols x S, pitch S) is one contiguous run whose element l * S + s
// comes from row s of x; with few columns the same the other way (a de-interleave of x). A block
// takes a segment of len positions l of the long side (transpose_thin_plan), staged in shared
// memory in the interleaved order (sm[l * S + s]):
//   the interleaved side (y with few rows, x with few columns) is one contiguous run of n * S
//   elements, moved in 16-byte pieces (element by element where it does not start on one);
//   the other side is S rows of n elements, moved element by element with consecutive lanes on
//   consecutive l: every warp access covers whole sectors of one row; in shared memory lanes are S
//   elements apart: conflict-free for odd S in 4-byte types, but gcd(S * size / 4, 32)-way for a
//   power-of-two S (16 f32: 16-way). For a power-of-two S of 32 bytes and more, the staged run's
//   16-byte pieces are permuted within each 128 bytes (piece c at c ^ (((c >> 3) ^ (c >> 6)) & 7)):
//   4-way at most, and the run's 16-byte accesses stay conflict-free (one line's pieces permuted).
// Needs the interleaved side contiguous (ldy == rows, or ldx == cols): transpose_thin_fits.
// Latency: past kThinBatch rows, the strided side's loads (few rows) are issued kThinBatch rows at
// a time, and the run's (few columns) kThinBatch pieces at a time, before any of them is staged,
// so a thread keeps that many loads in flight instead of one (H200, 16 x 262144 f32: 21.4 -> 12.9
// us, L2 flushed). Up to kThinBatch rows each row's loads go in turn (3 x 1000000 bf16: 8.1 us, and
// 11.2 with the rows batched: 3 loads a round).
// Roofline: the copy bandwidth; a segment holds up to 32 KB, fewer positions when the long side
// would leave SMs idle (transpose_thin_plan).
constexpr int kThinBatch = 8;
// The short sides taken: up to 16 elements and 64 bytes; up to 64 elements and 256 bytes where
// VECTORIZED would take its any-pitch form (x's rows not on 16-byte chunks or y's not on 32-byte
// sectors: 33 x 65537), whose 64 x 64 tiles are then all edge tiles, half empty. Its whole-chunk
// form beats the interleave at short sides of 24-64 (H200, x copy, 64 x 64 tiles / interleave: 48 x
// 65536 f32 0.54x / 0.36x, 65536 x 64 0.65x / 0.35x: an even S puts lanes S elements apart on
// gcd(S, 32) banks); the any-pitch form loses to it (17 x 65537 f32 0.16x / 0.28x, 33 x 65537
// 0.29x / 0.40x, 63 x 65537 0.35x / 0.56x; bf16 alike).
template <class U> __host__ __device__ __forceinline__ bool transpose_thin_side(int64_t s, bool whole) {
  return (s <= 16 && s * (int64_t)sizeof(U) <= 64) || (!whole && s <= 64 && s * (int64_t)sizeof(U) <= 256);
}
template <class U> __host__ __device__ __forceinline__ bool transpose_thin_fits(const U *x, const U *y, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy) {
  const bool whole = transpose_x_whole(x, ldx) && transpose_y_whole(y, ldy);
  return (transpose_thin_side<U>(rows, whole) && ldy == rows) || (transpose_thin_side<U>(cols, whole) && ldx == cols);
}
// How a thin transpose is cut: which side is short, and the segment length len (positions of the
// long side a block stages: a multiple of 32, S * len * size <= 32 KB, and short enough that
// the segments number at least two a SM where the long side allows, down to 256 positions, one a
// thread: a short long side is then spread over more blocks, each waiting on fewer rounds of
// loads).
struct transpose_thin_cut {
  bool few_rows;
  int len;
  int64_t segments;
};
template <class U> inline transpose_thin_cut transpose_thin_plan(const U *x, const U *y, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, int sms) {
  const bool few_rows = transpose_thin_side<U>(rows, transpose_x_whole(x, ldx) && transpose_y_whole(y, ldy)) && ldy == rows;
  const int64_t s = few_rows ? rows : cols, long_side = few_rows ? cols : rows;
  int64_t len = (int64_t)(s <= 8 ? 4096 : 2048) / (int64_t)sizeof(U);
  const int64_t fit = 32768 / (s * (int64_t)sizeof(U)) / 32 * 32, spread = (long_side + 2 * sms - 1) / (2 * sms);
  len = len < fit ? len : fit;
  const int64_t want = (spread + 31) / 32 * 32;
  len = want < len ? (want > 256 ? want : 256 < len ? 256 : len) : len;
  return {few_rows, (int)len, (long_side + len - 1) / len};
}
template <class U, bool kFewRows> __global__ void __launch_bounds__(256) transpose_thin(transpose_args<U> p, int64_t segments, int len) {
  constexpr int kV = 16 / (int)sizeof(U), kB = kThinBatch;
  __shared__ uint4 sm_chunks[32768 / 16];
  U *sm = reinterpret_cast<U *>(sm_chunks);
  const int tid = threadIdx.x;
  const int S = (int)(kFewRows ? p.rows : p.cols);
  const int64_t L = kFewRows ? p.cols : p.rows;
  // The strided side's pitch: S rows of the long dimension (x's with few rows, else y's); the
  // other side is the interleaved run, contiguous.
  const int64_t ld = kFewRows ? p.ldx : p.ldy;
  // Where piece c of the run sits in shared memory, and element i of the run.
  const bool swz = (S & (S - 1)) == 0 && S * (int)sizeof(U) >= 32;
  auto piece = [&](int c) { return swz ? c ^ (((c >> 3) ^ (c >> 6)) & 7) : c; };
  auto at = [&](int i) { return piece(i / kV) * kV + i % kV; };
  for (int64_t seg = blockIdx.x; seg < segments; seg += gridDim.x) {
    const int64_t l0 = seg * len;
    const int n = (int)(L - l0 < len ? L - l0 : len), run = n * S;  // positions of this segment; elements of its run
    if (seg != (int64_t)blockIdx.x) __syncthreads();  // the previous segment's reads of sm are done
    if constexpr (kFewRows) {  // x's rows into sm, element by element
      if (S <= kB) {  // row by row (the compiler batches a row's loads)
        for (int s = 0; s < S; ++s) {
          const U *src = p.x + s * ld + l0;
          for (int l = tid; l < n; l += 256) sm[at(l * S + s)] = src[l];
        }
      } else {  // kB rows a round
        for (int l = tid; l < n; l += 256)
          for (int s0 = 0; s0 < S; s0 += kB) {
            U v[kB];
#pragma unroll
            for (int k = 0; k < kB; ++k)
              if (s0 + k < S) v[k] = __ldg(p.x + (int64_t)(s0 + k) * ld + l0 + l);
#pragma unroll
            for (int k = 0; k < kB; ++k)
              if (s0 + k < S) sm[at(l * S + s0 + k)] = v[k];
          }
      }
    } else {  // x's run into sm, kB pieces (or elements) a thread a round
      const U *src = p.x + l0 * S;
      const bool whole = (uintptr_t)src % 16 == 0;
      const int pieces = whole ? run / kV : 0;
      for (int c0 = tid; c0 < pieces; c0 += 256 * kB) {
        uint4 v[kB];
#pragma unroll
        for (int k = 0; k < kB; ++k)
          if (c0 + k * 256 < pieces) v[k] = __ldg(reinterpret_cast<const uint4 *>(src) + c0 + k * 256);
#pragma unroll
        for (int k = 0; k < kB; ++k)
          if (c0 + k * 256 < pieces) sm_chunks[piece(c0 + k * 256)] = v[k];
      }
      for (int i0 = pieces * kV + tid; i0 < run; i0 += 256 * kB) {
        U v[kB];
#pragma unroll
        for (int k = 0; k < kB; ++k)
          if (i0 + k * 256 < run) v[k] = __ldg(src + i0 + k * 256);
#pragma unroll
        for (int k = 0; k < kB; ++k)
          if (i0 + k * 256 < run) sm[at(i0 + k * 256)] = v[k];
      }
    }
    __syncthreads();
    if constexpr (kFewRows) {  // sm as y's run
      U *dst = p.y + l0 * S;
      if ((uintptr_t)dst % 16 == 0) {
        for (int c = tid; c < run / kV; c += 256) store_global16(reinterpret_cast<uint4 *>(dst) + c, sm_chunks[piece(c)]);
        for (int i = run / kV * kV + tid; i < run; i += 256) dst[i] = sm[at(i)];
      } else {
        for (int i = tid; i < run; i += 256) dst[i] = sm[at(i)];
      }
    } else {  // sm into y's rows, element by element
      for (int s = 0; s < S; ++s) {
        U *dst = p.y + s * ld + l0;
        for (int l = tid; l < n; l += 256) dst[l] = sm[at(l * S + s)];
      }
    }
  }
}

// ---- 6.5 Dispatch policy -----------------------------------------------------------------------
// AUTO: a device-to-device copy when the layouts coincide (one row or one column with unit pitch),
// else SHARED_PADDED up to kTransposeSmall elements, else VECTORIZED: the interleave
// (transpose_thin) for a few rows or columns with the interleaved side contiguous
// (transpose_thin_fits), else its whole-chunk form where x's rows
// start on 16-byte chunks and y's on 32-byte sectors (transpose_x_whole, transpose_y_whole), its
// any-pitch form elsewhere (x copied element by element for 4-byte types whose x rows are not whole
// chunks, realigned in registers otherwise). Tiles: 64 x 64 for VECTORIZED (transpose_vec_shape),
// 32 x 32 for the shared versions.
constexpr int64_t kTransposeSmall = 1 << 18;

}  // namespace gpuops

// ---- 6.6 Launcher and C entry point (implementation only) -------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// Run one transpose (arguments checked) with the asked version; AUTO as gpuops.h says.
template <class U> gpuops_status transpose_typed(const gpuops__tr_args &a) {
  const transpose_args<U> p = {(U *)a.y, (const U *)a.x, a.rows, a.cols, a.ldx, a.ldy};
  const cudaStream_t stream = a.stream;
  gpuops_algo algo = a.algo;
  if (algo == GPUOPS_ALGO_AUTO) {
    if (gpuops__tr_is_copy(&a)) {  // one row or one column with unit pitch: the layouts coincide
      return cuda_call_status(cudaMemcpyAsync(a.y, a.x, (size_t)(a.rows * a.cols) * sizeof(U), cudaMemcpyDeviceToDevice, stream));
    }
    // Small matrices on 32 x 32 tiles: more blocks, each waiting on one round of loads (H200,
    // graph-replayed, us, SHARED_PADDED / VECTORIZED: 128 x 128 f32 1.74 / 2.08, 512 x 512 f32
    // 2.07 / 2.25, 1000 x 3 f32 1.68 / 2.55).
    algo = a.rows * a.cols <= kTransposeSmall ? GPUOPS_ALGO_SHARED_PADDED : GPUOPS_ALGO_VECTORIZED;
  }
  auto cap = [](int64_t v, int64_t most) { return (unsigned)(v < most ? v : most); };
  const dim3 block(32, 8);
  const unsigned gx = cap((a.cols + 31) / 32, 0x7fffffff);
  switch (algo) {
  case GPUOPS_ALGO_NAIVE: transpose_naive<U><<<dim3(gx, cap((a.rows + 7) / 8, 65535)), block, 0, stream>>>(p); break;
  case GPUOPS_ALGO_SHARED_TILED: transpose_shared<U, 0><<<dim3(gx, cap((a.rows + 31) / 32, 65535)), block, 0, stream>>>(p); break;
  case GPUOPS_ALGO_SHARED_PADDED:
    transpose_shared<U, transpose_pad<U>()><<<dim3(gx, cap((a.rows + 31) / 32, 65535)), block, 0, stream>>>(p);
    break;
  case GPUOPS_ALGO_VECTORIZED: {
    if (transpose_thin_fits<U>(p.x, p.y, a.rows, a.cols, a.ldx, a.ldy)) {
      const transpose_thin_cut c = transpose_thin_plan<U>(p.x, p.y, a.rows, a.cols, a.ldx, a.ldy, current_device().sms);
      if (c.few_rows) transpose_thin<U, true><<<tile_grid(c.segments), 256, 0, stream>>>(p, c.segments, c.len);
      else transpose_thin<U, false><<<tile_grid(c.segments), 256, 0, stream>>>(p, c.segments, c.len);
      break;
    }
    const bool y_whole = transpose_y_whole<U>(p.y, p.ldy);
    const int64_t tiles = transpose_vec_tiles<U>(a.rows, a.cols, y_whole);
    const divisor tiles_c((uint64_t)((a.cols + 63) / 64));  // tiles per tile row
    const bool x_whole = transpose_x_whole(p.x, p.ldx);
    if (y_whole && x_whole) transpose_vectorized<U, false><<<tile_grid(tiles), 256, 0, stream>>>(p, tiles, tiles_c);
    else if (sizeof(U) == 4 && !x_whole) transpose_vectorized<U, true, sizeof(U) == 4><<<tile_grid(tiles), 256, 0, stream>>>(p, tiles, tiles_c);
    else transpose_vectorized<U, true><<<tile_grid(tiles), 256, 0, stream>>>(p, tiles, tiles_c);
    break;
  }
  default: return GPUOPS_ERR_UNSUPPORTED;
  }
  return launch_status();
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__tr_launch(const gpuops__tr_args *p) {
  using namespace gpuops;  // a transpose moves bits: the unsigned integer of the element's size
  return dispatch_dtype<dtype_case<GPUOPS__I8, uint8_t>, dtype_case<GPUOPS__F16, uint16_t>, dtype_case<GPUOPS__BF16, uint16_t>,
                        dtype_case<GPUOPS__F32, uint32_t>, dtype_case<GPUOPS__I32, uint32_t>, dtype_case<GPUOPS__I64, uint64_t>>(
      p->dt, [&](auto *t) { return transpose_typed<std::remove_pointer_t<decltype(t)>>(*p); });
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_TRANSPOSE

// ==== 7. Matrix multiply (f32 on CUDA cores) ===================================================
#ifndef GPUOPS_NO_MATMUL
// C = alpha op(A) op(B) + beta C, row-major. Every kernel sees both operands through one view,
// matmul_operand: element (x, p) at ptr[x * sx + p * sk], where x is the row i of op(A) or the
// column j of op(B) and p runs along k. The layouts (A or A^T, B or B^T) are only strides, so one
// compiled kernel serves all four; the tile loaders pick the access pattern that keeps a warp on
// contiguous memory from the strides (a uniform runtime branch outside the inner loop).
//
// Roofline: 2 m n k flops on 4 (m k + k n + m n) bytes; at 4096^3 that is 2.4 GFLOP per MB, far
// past the H100's ~20 flops per byte of DRAM bandwidth, so a good kernel is bound by the FP32 pipe
// (FFMA: ~67 TFLOP/s at boost on an H100 SXM). What stands in the way is the traffic inside the
// SM: every FFMA needs two operands, and shared memory delivers 128 bytes per clock per SM against
// 128 FFMA per clock. The versions below raise the FFMAs per shared-memory byte step by step.
namespace gpuops {

// ---- 7.1 Contract and building blocks ----------------------------------------------------------
struct matmul_operand {
  const float *ptr;
  int64_t sx, sk;    // element strides along x (rows of op(A) / columns of op(B)) and along k
  int64_t extent;    // number of valid x (m for A, n for B)
};

struct matmul_params {
  float *c;
  matmul_operand a, b;
  int64_t m, n, k, ldc;
  float alpha, beta;
  int a_mode, b_mode;  // tile-loader modes (matmul_load_mode)
  int c_vec;           // C rows may be stored as float4 (ldc % 4 == 0, c 16-byte aligned)
  int split;           // WARP_TILED: blocks per tile (a cluster, sm_90), each a 1 / split of k's tiles
};

// The stored value of C(i, j) = alpha acc + beta C(i, j); C is not read when beta == 0.
__device__ __forceinline__ float matmul_out(const matmul_params &p, const float *c, float acc) {
  const float v = p.alpha * acc;
  return p.beta != 0.0f ? fmaf(p.beta, *c, v) : v;
}
__device__ __forceinline__ void matmul_store1(const matmul_params &p, int64_t i, int64_t j, float acc) {
  if (i < p.m && j < p.n) {
    float *c = p.c + i * p.ldc + j;
    *c = matmul_out(p, c, acc);
  }
}
// C(i, j..j+3) from the sums acc, i < m (matmul_out each): columns past n not stored; one 16-byte
// access where c_vec allows.
__device__ __forceinline__ void matmul_store4(const matmul_params &p, int64_t i, int64_t j, float4 acc) {
  float *c = p.c + i * p.ldc + j;
  if (p.c_vec && j + 3 < p.n) {
    float4 v = make_float4(p.alpha * acc.x, p.alpha * acc.y, p.alpha * acc.z, p.alpha * acc.w);
    if (p.beta != 0.0f) {
      const float4 o = *reinterpret_cast<const float4 *>(c);
      v.x = fmaf(p.beta, o.x, v.x), v.y = fmaf(p.beta, o.y, v.y), v.z = fmaf(p.beta, o.z, v.z), v.w = fmaf(p.beta, o.w, v.w);
    }
    *reinterpret_cast<float4 *>(c) = v;
    return;
  }
  const float a[4] = {acc.x, acc.y, acc.z, acc.w};
#pragma unroll
  for (int u = 0; u < 4; ++u)
    if (j + u < p.n) c[u] = matmul_out(p, c + u, a[u]);
}
__device__ __forceinline__ float matmul_at(const matmul_operand &o, int64_t x, int64_t q) { return o.ptr[x * o.sx + q * o.sk]; }

// ---- 7.2 Learning-path kernels -----------------------------------------------------------------
// NAIVE and COALESCED: one thread per element of C.
// (Every kernel here is a template, P = matmul_params, so that a header included by several
// translation units defines each kernel only where it is launched.)
// 32 x 8 threads per block; tile t of a tiles_m x tiles_n grid (grid-stride over tiles, so any
// size fits the grid). 2 k loads per FFMA, all from L1/L2: ~1-2% of the FP32 peak at best.
// NAIVE puts threadIdx.x along m: a warp's 32 loads of A(i, p) are 32 rows apart (32 sectors per
// request for op(A) = A) and its 32 stores to C are ldc apart.
template <class P>
__global__ void __launch_bounds__(256) matmul_naive(P p, int64_t tiles_m, int64_t tiles) {
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t i = (t % tiles_m) * 32 + threadIdx.x, j = (t / tiles_m) * 8 + threadIdx.y;
    if (i >= p.m || j >= p.n) continue;
    float acc = 0.0f;
    for (int64_t q = 0; q < p.k; ++q) acc = fmaf(matmul_at(p.a, i, q), matmul_at(p.b, j, q), acc);
    matmul_store1(p, i, j, acc);
  }
}
// COALESCED puts threadIdx.x along n: a warp reads one A(i, p) (a broadcast) and 32 consecutive
// B(p, j) (one 128-byte line for op(B) = B), and writes 128 contiguous bytes of C.
template <class P>
__global__ void __launch_bounds__(256) matmul_coalesced(P p, int64_t tiles_n, int64_t tiles) {
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t j = (t % tiles_n) * 32 + threadIdx.x, i = (t / tiles_n) * 8 + threadIdx.y;
    if (i >= p.m || j >= p.n) continue;
    float acc = 0.0f;
    for (int64_t q = 0; q < p.k; ++q) acc = fmaf(matmul_at(p.a, i, q), matmul_at(p.b, j, q), acc);
    matmul_store1(p, i, j, acc);
  }
}

// Tile loaders.
// A BK x BX tile of an operand into shared memory laid out k-major: s[q * LD + x] holds element
// (x0 + x, k0 + q), zero outside the matrix (so the compute loop needs no bounds). k-major for
// both operands means a thread reads its row fragment of A and column fragment of B along x.
//
// Scalar form: a warp walks the contiguous direction of global memory (k if sk == 1, else x).
template <int BX, int BK, int LD, int THREADS>
__device__ __forceinline__ void matmul_load_scalar(float *s, const matmul_operand &o, int64_t x0, int64_t k0, int64_t k) {
  const bool kfast = o.sk == 1;
  for (int e = threadIdx.x + threadIdx.y * blockDim.x; e < BX * BK; e += THREADS) {
    const int q = kfast ? e % BK : e / BX, x = kfast ? e / BK : e % BX;
    const int64_t gx = x0 + x, gq = k0 + q;
    s[q * LD + x] = (gx < o.extent && gq < k) ? matmul_at(o, gx, gq) : 0.0f;
  }
}

// Modes of the 128-bit loaders, chosen on the host from the strides and the alignment.
enum matmul_load_mode {
  kMatmulX16 = 0,     // x contiguous (sx == 1), sk % 4 == 0, 16-byte aligned: 4 x-neighbours per access
  kMatmulXScalar = 1, // x contiguous, not aligned for 16 bytes: 4-byte accesses, a warp along x
  kMatmulKScalar = 2, // k contiguous (sk == 1): 4-byte accesses, a warp as 8 k x 4 x
  kMatmulK16 = 3      // k contiguous, sx % 4 == 0, 16-byte aligned: 4 k-neighbours per access (VECTORIZED only)
};

// VECTORIZED's loader: 128-bit global loads where the mode allows; an access that would cross the
// matrix's edge loads its elements one by one (zero outside).
template <int BX, int BK, int LD, int THREADS>
__device__ __forceinline__ void matmul_load_vec(float *s, const matmul_operand &o, int mode, int64_t x0, int64_t k0, int64_t k) {
  const int tid = threadIdx.x;
  if (mode == kMatmulX16) {
    for (int e = tid; e < BX * BK / 4; e += THREADS) {
      const int q = e / (BX / 4), x = (e % (BX / 4)) * 4;
      const int64_t gx = x0 + x, gq = k0 + q;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (gq < k && gx + 3 < o.extent) {
        v = *reinterpret_cast<const float4 *>(o.ptr + gq * o.sk + gx);
      } else if (gq < k) {
        v.x = gx < o.extent ? o.ptr[gq * o.sk + gx] : 0.0f;
        v.y = gx + 1 < o.extent ? o.ptr[gq * o.sk + gx + 1] : 0.0f;
        v.z = gx + 2 < o.extent ? o.ptr[gq * o.sk + gx + 2] : 0.0f;
      }
      *reinterpret_cast<float4 *>(s + q * LD + x) = v;
    }
  } else if (mode == kMatmulK16) {
    for (int e = tid; e < BX * BK / 4; e += THREADS) {
      const int x = e / (BK / 4), q = (e % (BK / 4)) * 4;
      const int64_t gx = x0 + x, gq = k0 + q;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (gx < o.extent && gq + 3 < k) {
        v = *reinterpret_cast<const float4 *>(o.ptr + gx * o.sx + gq);
      } else if (gx < o.extent) {
        v.x = gq < k ? o.ptr[gx * o.sx + gq] : 0.0f;
        v.y = gq + 1 < k ? o.ptr[gx * o.sx + gq + 1] : 0.0f;
        v.z = gq + 2 < k ? o.ptr[gx * o.sx + gq + 2] : 0.0f;
      }
      s[q * LD + x] = v.x, s[(q + 1) * LD + x] = v.y, s[(q + 2) * LD + x] = v.z, s[(q + 3) * LD + x] = v.w;
    }
  } else {
    matmul_load_scalar<BX, BK, LD, THREADS>(s, o, x0, k0, k);
  }
}

// SHARED_TILED: 32 x 32 tiles through shared memory.
// 32 x 32 threads, one C element each. Each element of A and B is loaded from global memory once
// per block instead of once per thread (32x fewer global loads), but every FFMA still takes two
// shared-memory loads: bound by shared-memory bandwidth at ~1/2 to 1/3 of FFMA peak in theory,
// far less in practice (latency, barriers).
template <class P>
__global__ void __launch_bounds__(1024) matmul_shared_tiled(P p, int64_t tiles_n, int64_t tiles) {
  __shared__ float as[32][33], bs[32][33];  // as[i][q], bs[q][j]; +1 column against bank conflicts
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t i0 = (t / tiles_n) * 32, j0 = (t % tiles_n) * 32;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < p.k; k0 += 32) {
      // Lanes along the operand's contiguous direction: i along q for A when sk == 1, else along i.
      {
        const int r = p.a.sk == 1 ? ty : tx, q = p.a.sk == 1 ? tx : ty;
        as[r][q] = (i0 + r < p.m && k0 + q < p.k) ? matmul_at(p.a, i0 + r, k0 + q) : 0.0f;
      }
      {
        const int j = p.b.sk == 1 ? ty : tx, q = p.b.sk == 1 ? tx : ty;
        bs[q][j] = (j0 + j < p.n && k0 + q < p.k) ? matmul_at(p.b, j0 + j, k0 + q) : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int q = 0; q < 32; ++q) acc = fmaf(as[ty][q], bs[q][tx], acc);
      __syncthreads();
    }
    matmul_store1(p, i0 + ty, j0 + tx, acc);
  }
}

// REGISTER_1D: a column of 8 outputs per thread.
// 64 x 64 block tile, BK = 8, 512 threads; thread (col, rows 8r..8r+7). Per k step a thread loads
// one B value and 8 A values (a broadcast across the warp) for 8 FFMA: ~1 shared load per FFMA.
template <class P>
__global__ void __launch_bounds__(512) matmul_register_1d(P p, int64_t tiles_n, int64_t tiles) {
  constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
  __shared__ float as[BK * BM], bs[BK * BN];
  const int tid = threadIdx.x, col = tid % BN, row0 = (tid / BN) * TM;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t i0 = (t / tiles_n) * BM, j0 = (t % tiles_n) * BN;
    float acc[TM] = {};
    for (int64_t k0 = 0; k0 < p.k; k0 += BK) {
      matmul_load_scalar<BM, BK, BM, 512>(as, p.a, i0, k0, p.k);
      matmul_load_scalar<BN, BK, BN, 512>(bs, p.b, j0, k0, p.k);
      __syncthreads();
#pragma unroll
      for (int q = 0; q < BK; ++q) {
        const float bv = bs[q * BN + col];
#pragma unroll
        for (int r = 0; r < TM; ++r) acc[r] = fmaf(as[q * BM + row0 + r], bv, acc[r]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < TM; ++r) matmul_store1(p, i0 + row0 + r, j0 + col, acc[r]);
  }
}

// REGISTER_2D and VECTORIZED: an 8 x 8 block of outputs per thread.
// 128 x 128 block tile, BK = 8, 256 threads as 16 x 16; thread (tr, tc) owns rows 8 tr.. and
// columns 8 tc... Per k step: 8 A + 8 B values for 64 FFMA, 4 FFMA per shared load.
// VECTORIZED loads global memory 128 bits at a time where the layout allows and reads its
// fragments as float4 (2 + 2 LDS.128 for 64 FFMA: 16 FFMA per shared-memory instruction). Its
// float4 reads of B hit 2-way bank conflicts (threads 4 apart in tc share banks), and every
// thread's 8 columns are contiguous, which WARP_TILED rearranges.
template <bool kVec>
__global__ void __launch_bounds__(256) matmul_register_2d(matmul_params p, int64_t tiles_n, int64_t tiles) {
  constexpr int BM = 128, BN = 128, BK = 8, T = 8;
  __shared__ __align__(16) float as[BK * BM];
  __shared__ __align__(16) float bs[BK * BN];
  const int tid = threadIdx.x, tr = tid / 16, tc = tid % 16;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t i0 = (t / tiles_n) * BM, j0 = (t % tiles_n) * BN;
    float acc[T][T] = {};
    for (int64_t k0 = 0; k0 < p.k; k0 += BK) {
      if (kVec) {
        matmul_load_vec<BM, BK, BM, 256>(as, p.a, p.a_mode, i0, k0, p.k);
        matmul_load_vec<BN, BK, BN, 256>(bs, p.b, p.b_mode, j0, k0, p.k);
      } else {
        matmul_load_scalar<BM, BK, BM, 256>(as, p.a, i0, k0, p.k);
        matmul_load_scalar<BN, BK, BN, 256>(bs, p.b, j0, k0, p.k);
      }
      __syncthreads();
#pragma unroll
      for (int q = 0; q < BK; ++q) {
        float a[T], b[T];
        if (kVec) {
          const float4 a0 = *reinterpret_cast<const float4 *>(as + q * BM + tr * T);
          const float4 a1 = *reinterpret_cast<const float4 *>(as + q * BM + tr * T + 4);
          const float4 b0 = *reinterpret_cast<const float4 *>(bs + q * BN + tc * T);
          const float4 b1 = *reinterpret_cast<const float4 *>(bs + q * BN + tc * T + 4);
          a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w, a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
          b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
        } else {
#pragma unroll
          for (int r = 0; r < T; ++r) a[r] = as[q * BM + tr * T + r], b[r] = bs[q * BN + tc * T + r];
        }
#pragma unroll
        for (int r = 0; r < T; ++r)
#pragma unroll
          for (int c = 0; c < T; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < T; ++r)
#pragma unroll
      for (int c = 0; c < T; ++c) matmul_store1(p, i0 + tr * T + r, j0 + tc * T + c, acc[r][c]);
  }
}

// ---- 7.3 Production kernels: WARP_TILED, GEMV, FEW_ROWS, k = 0 ---------------------------------
// WARP_TILED: block tile -> warp tile -> thread tile, shared memory filled by the core's cp.async
// pipeline (section 1.4), so the next STAGES - 1 tiles load while this one is computed.
// A tile configuration. The block's warps form WARPS_M x WARPS_N; a warp's 32 lanes form 8 (m) x 4 (n);
// a thread owns TMS x TNS sub-tiles of 4 x 4, the sub-tiles 32 rows and 16 columns apart. So in each
// k step a warp reads 8 distinct float4 of A (128 contiguous bytes) and 4 of B (64 bytes): one
// shared-memory wavefront each, no bank conflicts, and TMS*TNS*16 FFMA per TMS + TNS LDS.128.
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int TMS_, int TNS_, int STAGES_, int MIN_BLOCKS_>
struct matmul_tile_config {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, TMS = TMS_, TNS = TNS_;
  static constexpr int STAGES = STAGES_, MIN_BLOCKS = MIN_BLOCKS_;
  static constexpr int THREADS = 32 * WARPS_M * WARPS_N, WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int LDA = BM + 4, LDB = BN + 4;  // +4 floats: conflict-free transposing stores
  static constexpr int STAGE_FLOATS = BK * (LDA + LDB);
  static constexpr size_t SMEM_BYTES = sizeof(float) * STAGES * STAGE_FLOATS;
  // The k split's exchange: the block's sums as a BM x LDT tile over the stages (kSplit: it fits).
  static constexpr int LDT = BN + 4;
  static constexpr bool kSplit = BM * LDT <= STAGES * STAGE_FLOATS;
  static_assert(WM == 32 * TMS && WN == 16 * TNS, "warp tile = 8 x 4 lanes of TMS x TNS 4 x 4 sub-tiles");
  static_assert(BK % 8 == 0 && STAGES >= 2, "BK a multiple of 8 (the k-contiguous loader), 2+ stages");
  static_assert((BK * BM / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "whole 16-byte copies per thread");
};

// One operand's BK x BX tile into one stage (s[q * LD + x]), as cp.async copies. In every mode
// copy r of a thread moves tile element (x0 + r dx, q0 + r dq): global offset off + r step from
// the tile's first element, shared offset d + r dstride. The plan is made once per block, so in
// the k-loop a copy costs a 64-bit add, the LDGSTS and (edge tiles only) two compares.
//   X16      a warp copies 512 contiguous bytes of a row (128 floats of x), 16-byte copies
//   XScalar  a warp along 32 consecutive x of one k (sx == 1, unaligned), 4-byte copies
//   KScalar  k contiguous (sk == 1): a warp as 8 k x 4 x, 32-byte runs of global memory, stored
//            transposed; bank (4 q + x) mod 32 with LD = 4 mod 32, so the 32 stores hit 32 banks
struct matmul_wt_plan {
  int64_t off, step;
  int d, dstride, x0, q0, dx, dq;
};
template <int BX, int BK, int LD, int THREADS>
__device__ __forceinline__ matmul_wt_plan matmul_wt_plan_of(const matmul_operand &o, int mode) {
  static_assert(THREADS % BX == 0 && (THREADS / 32) % (BK / 8) == 0, "every mode's copies advance by a fixed step");
  const int tid = threadIdx.x;
  int x0, q0, dx, dq;
  if (mode == kMatmulX16) {
    x0 = (tid % (BX / 4)) * 4, q0 = tid / (BX / 4), dx = 0, dq = THREADS / (BX / 4);
  } else if (mode == kMatmulXScalar) {
    x0 = tid % BX, q0 = tid / BX, dx = 0, dq = THREADS / BX;
  } else {
    const int g = tid >> 5, l = tid & 31;
    x0 = (g / (BK / 8)) * 4 + (l >> 3), q0 = (g % (BK / 8)) * 8 + (l & 7), dx = 4 * (THREADS / 32) / (BK / 8), dq = 0;
  }
  return {x0 * o.sx + q0 * o.sk, dx * o.sx + dq * o.sk, q0 * LD + x0, dq * LD + dx, x0, q0, dx, dq};
}
// base points at the tile's first element (x0, k0); x < xlim and q < qlim are inside the matrix;
// any is a valid address for the zero-filling copies. kFull: the whole tile is inside (interior
// tiles, all but the last k-tile), so nothing is predicated.
template <bool kFull, int BX, int BK, int THREADS>
__device__ __forceinline__ void matmul_wt_load(float *s, const matmul_wt_plan &pl, bool wide, const float *base, const float *any, int xlim, int qlim) {
  const float *src = base + pl.off;
  if (wide) {
    const int left = xlim - pl.x0, vx = left >= 4 ? 4 : (left > 0 ? left : 0);
#pragma unroll
    for (int r = 0; r < BK * BX / 4 / THREADS; ++r, src += pl.step) {
      const int valid = kFull ? 4 : pl.q0 + r * pl.dq < qlim ? vx : 0;
      cp_async16_zfill(s + pl.d + r * pl.dstride, valid ? src : any, valid * 4);
    }
  } else {
#pragma unroll
    for (int r = 0; r < BK * BX / THREADS; ++r, src += pl.step) {
      const bool valid = kFull || (pl.x0 + r * pl.dx < xlim && pl.q0 + r * pl.dq < qlim);
      cp_async4_zfill(s + pl.d + r * pl.dstride, valid ? src : any, valid);
    }
  }
}

// The k split's epilogue (kSplit configurations, split > 1: the launcher's cluster of `split` blocks
// per tile, block `rank` summing k-tiles [ktiles rank / split, ktiles (rank + 1) / split)). Each
// block writes its sums to its stages as a BM x LDT tile (16-byte stores: a quarter-warp's rows are
// 4 apart, 4 LDT = 16 mod 32 banks apart: no conflicts), the cluster meets, and block b
// stores the 16-byte chunks b, b + split, ... of the tile, each the sum of every block's chunk in
// rank order through distributed shared memory (the same bits on every run). Cluster-uniform.
template <class C, int TM, int TN>
__device__ __forceinline__ void matmul_wt_split_store(const matmul_params &p, float *smem, const float (&acc)[TM][TN], int64_t m0, int64_t n0, int arow, int bcol, int split) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cl = cg::this_cluster();
  cp_async_wait(0);
  __syncthreads();  // every thread's last fragment read of the stages is done
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4)
      *reinterpret_cast<float4 *>(smem + (arow + (i / 4) * 32 + i % 4) * C::LDT + bcol + (j / 4) * 16) =
          make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
  cl.sync();  // every block's sums are written
  const int rank = (int)cl.block_rank();
  for (int e = rank + split * (int)threadIdx.x; e < C::BM * C::BN / 4; e += split * C::THREADS) {
    const int r = e / (C::BN / 4), c = 4 * (e % (C::BN / 4));
    float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int b = 0; b < split; ++b) {
      const float4 v = *reinterpret_cast<const float4 *>(cl.map_shared_rank(smem + r * C::LDT + c, b));
      s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    if (m0 + r < p.m) matmul_store4(p, m0 + r, n0 + c, s);
  }
  cl.sync();  // no block refills its stages while another may read them
#else
  (void)p, (void)smem, (void)acc, (void)m0, (void)n0, (void)arow, (void)bcol, (void)split;
  __trap();  // the launcher never asks (it checks the kernel's architecture)
#endif
}

// The kernel. Per tile: STAGES - 1 tiles of k in flight, one barrier per k-tile. Inner loop per
// k: TMS + TNS LDS.128 and 16 TMS TNS FFMA (128 per 6 LDS for 8 x 16: the FFMA pipe, not shared
// memory, is the limit). Roofline: 2 m n k flops at 128 FP32 lanes x 2 x clock per SM (67 TFLOP/s
// on an H100 SXM at 1.98 GHz); cuBLAS's SIMT SGEMM reaches ~77% of that, WARP_TILED ~0.95x cuBLAS
// at 4096^3 (docs/performance.md). Edge tiles run the same code: the loaders zero-fill, the stores
// are predicated; float4 stores of C where ldc and c allow. With p.split > 1 a tile is a cluster of
// p.split blocks, each running its share of the k-tiles, and matmul_wt_split_store adds them.
template <class C>
__global__ void __launch_bounds__(C::THREADS, C::MIN_BLOCKS) matmul_warp_tiled(matmul_params p, int64_t tiles_m, int64_t tiles_n) {
  extern __shared__ float4 matmul_smem4[];
  float *const smem = reinterpret_cast<float *>(matmul_smem4);
  constexpr int BM = C::BM, BN = C::BN, BK = C::BK, S = C::STAGES, TM = 4 * C::TMS, TN = 4 * C::TNS;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp / C::WARPS_N, wn = warp % C::WARPS_N, lm = lane >> 2, ln = lane & 3;
  const int arow = wm * C::WM + lm * 4, bcol = wn * C::WN + ln * 4;  // first row / column of this thread
  const int64_t ktiles = (p.k + BK - 1) / BK, tiles = tiles_m * tiles_n;
  const matmul_wt_plan pa = matmul_wt_plan_of<BM, BK, C::LDA, C::THREADS>(p.a, p.a_mode);
  const matmul_wt_plan pb = matmul_wt_plan_of<BN, BK, C::LDB, C::THREADS>(p.b, p.b_mode);
  const bool a_wide = p.a_mode == kMatmulX16, b_wide = p.b_mode == kMatmulX16;
  const int split = p.split, rank = (int)(blockIdx.x % split);  // the k split: a cluster per tile
  for (int64_t t = blockIdx.x / split; t < tiles; t += gridDim.x / split) {
    int64_t tm, tn;
    grouped_tile(t, tiles_m, tiles_n, tm, tn);
    const int64_t m0 = tm * BM, n0 = tn * BN;
    const int alim = (int)(p.m - m0 < BM ? p.m - m0 : BM), blim = (int)(p.n - n0 < BN ? p.n - n0 : BN);
    const bool full_mn = alim == BM && blim == BN;
    const int64_t kt0 = ktiles * rank / split, nk = ktiles * (rank + 1) / split - kt0;  // this block's k-tiles
    auto load = [&](int64_t kt, int stage) {
      float *sa = smem + stage * C::STAGE_FLOATS, *sb = sa + BK * C::LDA;
      const int64_t k0 = kt * BK;
      const int qlim = (int)(p.k - k0 < BK ? p.k - k0 : BK);
      const float *a0 = p.a.ptr + (m0 * p.a.sx + k0 * p.a.sk), *b0 = p.b.ptr + (n0 * p.b.sx + k0 * p.b.sk);
      if (full_mn && qlim == BK) {
        matmul_wt_load<true, BM, BK, C::THREADS>(sa, pa, a_wide, a0, p.a.ptr, alim, qlim);
        matmul_wt_load<true, BN, BK, C::THREADS>(sb, pb, b_wide, b0, p.b.ptr, blim, qlim);
      } else {
        matmul_wt_load<false, BM, BK, C::THREADS>(sa, pa, a_wide, a0, p.a.ptr, alim, qlim);
        matmul_wt_load<false, BN, BK, C::THREADS>(sb, pb, b_wide, b0, p.b.ptr, blim, qlim);
      }
    };
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < nk) load(kt0 + s, s);
      cp_async_commit();  // an empty group past the end keeps the count uniform
    }
    // Fragments are double-buffered in registers: step q's FFMA run while step q + 1's LDS are in
    // flight, across tiles too. Per tile kt: step 0 refills the stage of tile kt - 1 with tile
    // kt + S - 1; step BK - 2 waits for tile kt + 1 and passes the one barrier of the tile (after
    // its last read of the tile's stage), so step BK - 1 may read fragment 0 of tile kt + 1.
    float fa[2][TM], fb[2][TN];
    auto fragment = [&](int stage, int q, int buf) {
      const float *sa = smem + stage * C::STAGE_FLOATS + q * C::LDA, *sb = smem + stage * C::STAGE_FLOATS + BK * C::LDA + q * C::LDB;
#pragma unroll
      for (int u = 0; u < C::TMS; ++u) {
        const float4 v = *reinterpret_cast<const float4 *>(sa + arow + u * 32);
        fa[buf][4 * u] = v.x, fa[buf][4 * u + 1] = v.y, fa[buf][4 * u + 2] = v.z, fa[buf][4 * u + 3] = v.w;
      }
#pragma unroll
      for (int u = 0; u < C::TNS; ++u) {
        const float4 v = *reinterpret_cast<const float4 *>(sb + bcol + u * 16);
        fb[buf][4 * u] = v.x, fb[buf][4 * u + 1] = v.y, fb[buf][4 * u + 2] = v.z, fb[buf][4 * u + 3] = v.w;
      }
    };
    cp_async_wait(S - 2);  // tile 0 has landed (this thread's copies)
    __syncthreads();          // ... everyone's
    fragment(0, 0, 0);
    int stage = 0;  // kt % S
    for (int64_t kt = 0; kt < nk; ++kt) {
      const int next_stage = stage == S - 1 ? 0 : stage + 1;
#pragma unroll
      for (int q = 0; q < BK; ++q) {
        // Step q + 1's fragment: from this tile, or at q = BK - 1 fragment 0 of tile kt + 1 (which
        // the barrier of step BK - 2 made visible; past the last tile it reads a stale stage, unused).
        if (q < BK - 1) fragment(stage, q + 1, (q + 1) & 1);
        else fragment(next_stage, 0, 0);
        if (q == 0) {  // refill the stage of tile kt - 1 (every thread finished reading it before
                       // the barrier of tile kt - 1's step BK - 2) with tile kt + S - 1
          const int64_t next = kt + S - 1;
          if (next < nk) load(kt0 + next, stage == 0 ? S - 1 : stage - 1);
          cp_async_commit();  // an empty group past the end keeps the count uniform
        }
        if (q == BK - 2) {
          cp_async_wait(S - 2);  // tile kt + 1 has landed (this thread's copies)
          __syncthreads();          // ... everyone's; and every read of tile kt - 1's stage is done
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(fa[q & 1][i], fb[q & 1][j], acc[i][j]);
      }
      stage = next_stage;
    }
    // Epilogue: row i of acc is m0 + arow + (i / 4) * 32 + i % 4; columns j..j+3 (j % 4 == 0) are
    // n0 + bcol + (j / 4) * 16 + 0..3.
    if constexpr (C::kSplit) {
      if (split > 1) {
        matmul_wt_split_store<C>(p, smem, acc, m0, n0, arow, bcol, split);
        continue;  // its cluster barriers free the stages for the next tile
      }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int64_t gi = m0 + arow + (i / 4) * 32 + (i % 4);
      if (gi >= p.m) continue;
#pragma unroll
      for (int j = 0; j < TN; j += 4)
        matmul_store4(p, gi, n0 + bcol + (j / 4) * 16, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
    }
    __syncthreads();  // the next tile's prologue overwrites stages others may still read
  }
}

// GEMV: m = 1 or n = 1 (AUTO only).
// y(o) = alpha sum_q X(o, q) v(q) + beta y(o), o < outputs: memory-bound (each matrix element is
// read once for 2 flops), so the ceiling is DRAM bandwidth. Two shapes by the matrix's layout:
//   matmul_gemv_dot  X contiguous along q: one warp per output, lanes stride q (coalesced), a
//                    shuffle reduction at the end.
//   matmul_gemv_cols X contiguous along o: 32 outputs per block across lanes (coalesced), 32 warps
//                    split q and meet in shared memory.
struct matmul_gemv_params {
  float *y;
  int64_t sy;                 // stride of y
  const float *x, *v;
  int64_t so, sq, sv;         // X(o, q) = x[o so + q sq], v(q) = v[q sv]
  int64_t outputs, k;
  float alpha, beta;
};
__device__ __forceinline__ void matmul_gemv_store(const matmul_gemv_params &g, int64_t o, float acc) {
  float *y = g.y + o * g.sy;
  const float r = g.alpha * acc;
  *y = g.beta != 0.0f ? fmaf(g.beta, *y, r) : r;
}
template <class G>
__global__ void __launch_bounds__(256) matmul_gemv_dot(G g) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * 8;
  for (int64_t o = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5); o < g.outputs; o += warps) {
    const float *x = g.x + o * g.so;  // x[q sq]: sq is 1 but for a single output (a dot product)
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    int64_t q = lane;
    for (; q + 96 < g.k; q += 128) {  // 4 independent loads in flight per lane
      s0 = fmaf(x[q * g.sq], g.v[q * g.sv], s0);
      s1 = fmaf(x[(q + 32) * g.sq], g.v[(q + 32) * g.sv], s1);
      s2 = fmaf(x[(q + 64) * g.sq], g.v[(q + 64) * g.sv], s2);
      s3 = fmaf(x[(q + 96) * g.sq], g.v[(q + 96) * g.sv], s3);
    }
    for (; q < g.k; q += 32) s0 = fmaf(x[q * g.sq], g.v[q * g.sv], s0);
    const float s = warp_reduce((s0 + s1) + (s2 + s3), plus());
    if (lane == 0) matmul_gemv_store(g, o, s);
  }
}
template <class G>
__global__ void __launch_bounds__(1024) matmul_gemv_cols(G g) {
  __shared__ float part[32][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t o0 = (int64_t)blockIdx.x * 32; o0 < g.outputs; o0 += (int64_t)gridDim.x * 32) {
    const int64_t o = o0 + tx;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    if (o < g.outputs) {
      const float *x = g.x + o * g.so;
      int64_t q = ty;
      for (; q + 96 < g.k; q += 128) {  // 4 independent loads in flight per thread, 32 warps per block
        s0 = fmaf(x[q * g.sq], g.v[q * g.sv], s0);
        s1 = fmaf(x[(q + 32) * g.sq], g.v[(q + 32) * g.sv], s1);
        s2 = fmaf(x[(q + 64) * g.sq], g.v[(q + 64) * g.sv], s2);
        s3 = fmaf(x[(q + 96) * g.sq], g.v[(q + 96) * g.sv], s3);
      }
      for (; q < g.k; q += 32) s0 = fmaf(x[q * g.sq], g.v[q * g.sv], s0);
    }
    part[ty][tx] = (s0 + s1) + (s2 + s3);
    __syncthreads();
    if (ty == 0 && o < g.outputs) {
      float s = 0.0f;
#pragma unroll
      for (int r = 0; r < 32; ++r) s += part[r][tx];
      matmul_gemv_store(g, o, s);
    }
    __syncthreads();
  }
}

// FEW_ROWS: 2 <= m <= kMatmulFewRowsMax, or n in that range as the transposed product (AUTO only).
// Y(r, o) = alpha sum_q X(o, q) V(r, q) + beta Y(r, o) for r < rows (few) and o < outputs: X is the
// large operand (op(B) for a few rows of C, op(A) for a few columns), V the few rows. A tile is R
// rows of V by 32 outputs, so an element of X is read once per group of R rows and feeds R FFMAs;
// V (rows x k, small) is read through L1, the warps of a block walking the same q together. The
// row groups of one output chunk are neighbours in the tile order, so they run together and X
// comes from DRAM once, from L2 for the other groups.
// Roofline at 16 x 4096 x 4096: X is 64 MiB (16 us at 4.2 TB/s) against 0.54 GFLOP (8 us at 67
// TFLOP/s): memory-bound while R is below ~40; at 64 rows (4 groups of 16) 2.1 GFLOP, 32 us of FFMA,
// with X read 4 times from L2. Memory-bound means bytes in flight: ~1 us x 4 TB/s is ~30 KB per
// SM. So a tile is split along k over the `split` blocks of a cluster where the tiles alone do not
// fill the device (sm_90; 4096 outputs are only 128 tiles), block b of the cluster taking the
// quads b, b + split, ... of each 128-wide k step; the blocks' sums meet through distributed shared
// memory in rank order (matmul_rows_finish: the same bits on every run). And each thread issues the
// loads of U steps before their FFMAs. Two shapes by X's layout, each 256 threads on 32 outputs:
//   matmul_rows_cols  X contiguous along o (NN): a thread owns 4 neighbouring outputs (one 16-byte
//                     load per q) and a quad of q; 8 lanes span 128 bytes of a row of X, a warp
//                     4 quads, the block 32 quads; quads meet by shuffles, then the 8 warps in
//                     shared memory (fixed order).
//   matmul_rows_dot   X contiguous along q (NT, the linear layer): a warp owns 4 outputs, each
//                     lane one 16-byte quad of q of each (a warp reads 512 contiguous bytes of a
//                     row of X), 16 R FFMA per 4 + R 16-byte loads; the lanes meet by shuffles.
// Every load is a quad: 16 bytes when the layout allows (matmul_quad), else 4 elements, and
// zero past the matrix. Inside the matrix (every quad whole) the kernels take a loop without
// bounds checks, rows past the last clamped to it (their sums are computed and never stored).
struct matmul_rows_params {
  float *y;
  int64_t syr, syo;             // Y(r, o) = y[r syr + o syo]
  const float *x, *v;
  int64_t so, sq, svr, svq;     // X(o, q) = x[o so + q sq], V(r, q) = v[r svr + q svq]
  int64_t rows, outputs, k, groups;  // groups = ceil(rows / R)
  int x16, v16;                 // 16-byte quads of X (along o: cols, along q: dot) and of V (along q)
  int split;                    // blocks per tile (a cluster, sm_90), each a 1 / split of every k step
  float alpha, beta;
};
// p[0], p[s], p[2s], p[3s]; the first `valid` read, the rest zero; one 16-byte load when vec
// (s == 1 and p 16-byte aligned) and all four are valid.
__device__ __forceinline__ float4 matmul_quad(const float *p, int64_t s, int64_t valid, bool vec) {
  if (vec && valid >= 4) return __ldg(reinterpret_cast<const float4 *>(p));
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (valid > 0) v.x = __ldg(p);
  if (valid > 1) v.y = __ldg(p + s);
  if (valid > 2) v.z = __ldg(p + 2 * s);
  if (valid > 3) v.w = __ldg(p + 3 * s);
  return v;
}
// s[u] += a b_u.
__device__ __forceinline__ void matmul_fma4(float a, const float4 &b, float (&s)[4]) {
  s[0] = fmaf(a, b.x, s[0]), s[1] = fmaf(a, b.y, s[1]), s[2] = fmaf(a, b.z, s[2]), s[3] = fmaf(a, b.w, s[3]);
}
__device__ __forceinline__ float matmul_dot4(const float4 &a, const float4 &b, float s) {
  return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, s))));
}
__device__ __forceinline__ void matmul_rows_store(const matmul_rows_params &g, int64_t r, int64_t o, float acc) {
  float *y = g.y + r * g.syr + o * g.syo;
  const float v = g.alpha * acc;
  *y = g.beta != 0.0f ? fmaf(g.beta, *y, v) : v;
}
inline __host__ __device__ int64_t matmul_rows_tiles(const matmul_rows_params &g) { return (g.outputs + 31) / 32 * g.groups; }

// This block's sums tot[r][c] of the tile at rows r0.., outputs o0.. stored, or with split > 1
// first summed over the cluster's blocks in rank order, each block storing every split-th
// element. Cluster-uniform, every thread; the caller's barrier has made tot visible in the block.
// Returns with tot free to be written again (and, in a cluster, read by no other block).
template <int R>
__device__ __forceinline__ void matmul_rows_finish(const matmul_rows_params &g, float (&tot)[R][32], int64_t r0, int64_t o0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (g.split > 1) {
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();  // every block's tot is written
    for (int e = (int)cl.block_rank() + g.split * (int)threadIdx.x; e < 32 * R; e += g.split * (int)blockDim.x) {
      const int r = e >> 5, c = e & 31;
      float s = 0.0f;
      for (int b = 0; b < g.split; ++b) s += *cl.map_shared_rank(&tot[r][c], b);  // rank order everywhere
      if (r0 + r < g.rows && o0 + c < g.outputs) matmul_rows_store(g, r0 + r, o0 + c, s);
    }
    cl.sync();  // no block rewrites or leaves its tot while another may read it
    return;
  }
#else
  if (g.split > 1) __trap();  // the launcher never asks (it checks the kernel's architecture)
#endif
  for (int e = threadIdx.x; e < 32 * R; e += blockDim.x) {
    const int r = e >> 5, c = e & 31;
    if (r0 + r < g.rows && o0 + c < g.outputs) matmul_rows_store(g, r0 + r, o0 + c, tot[r][c]);
  }
  __syncthreads();
}
// The first quad of a thread that is lane_q quads into its block's 128-wide share of a k step
// (the block's rank in its cluster picks the share; a thread's quads are 128 split apart).
__device__ __forceinline__ int64_t matmul_rows_q0(const matmul_rows_params &g, int lane_q) { return 4 * lane_q + 128 * (int64_t)(blockIdx.x % g.split); }

// U quad steps of matmul_rows_cols, dq apart: rows q..q+3 of X at outputs o..o+3, V(r0 + r, q..q+3),
// every load of X issued before the first FFMA. kFast: every quad whole and in the matrix, 16-byte
// loads (rows clamped).
template <int R, int U, bool kFast>
__device__ __forceinline__ void matmul_rows_cols_step(const matmul_rows_params &g, int64_t o, int64_t r0, int64_t q, int64_t dq, float (&acc)[R][4]) {
  float4 xq[U][4];
#pragma unroll
  for (int s = 0; s < U; ++s) {
    const int64_t qs = q + s * dq;
    const float *xp = g.x + o * g.so + qs * g.sq;
#pragma unroll
    for (int u = 0; u < 4; ++u)
      xq[s][u] = kFast ? __ldg(reinterpret_cast<const float4 *>(xp + u * g.sq)) : matmul_quad(xp + u * g.sq, g.so, qs + u < g.k ? g.outputs - o : 0, g.x16);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = kFast ? (r0 + r < g.rows ? r0 + r : g.rows - 1) : r0 + r;
#pragma unroll
    for (int s = 0; s < U; ++s) {
      const float *vp = g.v + row * g.svr + (q + s * dq) * g.svq;
      const float4 v = kFast ? __ldg(reinterpret_cast<const float4 *>(vp)) : matmul_quad(vp, g.svq, row < g.rows ? g.k - q - s * dq : 0, g.v16);
      matmul_fma4(v.x, xq[s][0], acc[r]), matmul_fma4(v.y, xq[s][1], acc[r]), matmul_fma4(v.z, xq[s][2], acc[r]), matmul_fma4(v.w, xq[s][3], acc[r]);
    }
  }
}
template <int R, int U>
__global__ void __launch_bounds__(256, 2) matmul_rows_cols(matmul_rows_params g) {
  __shared__ float part[8][R][33];  // each warp's sums: [warp][row][output]
  __shared__ float tot[R][32];      // the block's
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, og = lane & 7;
  const int64_t tiles = matmul_rows_tiles(g), k4 = g.k & ~(int64_t)3, dq = 128 * (int64_t)g.split;
  for (int64_t t = blockIdx.x / g.split; t < tiles; t += gridDim.x / g.split) {
    const int64_t r0 = (t % g.groups) * R, o0 = (t / g.groups) * 32, o = o0 + 4 * og;
    float acc[R][4] = {};
    int64_t q = matmul_rows_q0(g, tid >> 3);  // this thread's quad
    if (g.x16 && g.v16 && o + 3 < g.outputs) {
      for (; q + (U - 1) * dq < k4; q += U * dq) matmul_rows_cols_step<R, U, true>(g, o, r0, q, dq, acc);
      if (U > 1) for (; q < k4; q += dq) matmul_rows_cols_step<R, 1, true>(g, o, r0, q, dq, acc);
    }
    for (; q < g.k; q += dq) matmul_rows_cols_step<R, 1, false>(g, o, r0, q, dq, acc);
    // The warp's 4 quads (lanes 8 apart), then the 8 warps in order.
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float s = acc[r][c];
        s += __shfl_xor_sync(0xffffffffu, s, 8);
        s += __shfl_xor_sync(0xffffffffu, s, 16);
        if (lane < 8) part[warp][r][4 * og + c] = s;
      }
    __syncthreads();
    for (int e = tid; e < 32 * R; e += 256) {
      const int r = e >> 5, c = e & 31;
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < 8; ++w) s += part[w][r][c];
      tot[r][c] = s;
    }
    __syncthreads();
    matmul_rows_finish<R>(g, tot, r0, o0);  // its barriers also free part for the next tile
  }
}

// U quad steps of matmul_rows_dot, dq apart: X(o0 + u, q..q+3), V(r0 + r, q..q+3). kFast as above
// (outputs and rows clamped).
template <int R, int U, bool kFast>
__device__ __forceinline__ void matmul_rows_dot_step(const matmul_rows_params &g, int64_t o0, int64_t r0, int64_t q, int64_t dq, float (&acc)[R][4]) {
  float4 xq[U][4];
#pragma unroll
  for (int s = 0; s < U; ++s)
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int64_t o = kFast ? (o0 + u < g.outputs ? o0 + u : g.outputs - 1) : o0 + u;
      const float *xp = g.x + o * g.so + (q + s * dq) * g.sq;
      xq[s][u] = kFast ? __ldg(reinterpret_cast<const float4 *>(xp)) : matmul_quad(xp, g.sq, o < g.outputs ? g.k - q - s * dq : 0, g.x16);
    }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = kFast ? (r0 + r < g.rows ? r0 + r : g.rows - 1) : r0 + r;
#pragma unroll
    for (int s = 0; s < U; ++s) {
      const float *vp = g.v + row * g.svr + (q + s * dq) * g.svq;
      const float4 v = kFast ? __ldg(reinterpret_cast<const float4 *>(vp)) : matmul_quad(vp, g.svq, row < g.rows ? g.k - q - s * dq : 0, g.v16);
#pragma unroll
      for (int u = 0; u < 4; ++u) acc[r][u] = matmul_dot4(v, xq[s][u], acc[r][u]);
    }
  }
}
template <int R, int U>
__global__ void __launch_bounds__(256, 2) matmul_rows_dot(matmul_rows_params g) {
  __shared__ float tot[R][32];  // the block's sums: [row][output]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t tiles = matmul_rows_tiles(g), k4 = g.k & ~(int64_t)3, dq = 128 * (int64_t)g.split;
  for (int64_t t = blockIdx.x / g.split; t < tiles; t += gridDim.x / g.split) {
    const int64_t r0 = (t % g.groups) * R, o0 = (t / g.groups) * 32, ow = o0 + 4 * warp;
    float acc[R][4] = {};
    int64_t q = matmul_rows_q0(g, lane);
    if (ow < g.outputs) {  // the whole warp
      if (g.x16 && g.v16) {
        for (; q + (U - 1) * dq < k4; q += U * dq) matmul_rows_dot_step<R, U, true>(g, ow, r0, q, dq, acc);
        if (U > 1) for (; q < k4; q += dq) matmul_rows_dot_step<R, 1, true>(g, ow, r0, q, dq, acc);
      }
      for (; q < g.k; q += dq) matmul_rows_dot_step<R, 1, false>(g, ow, r0, q, dq, acc);
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float s = warp_reduce(acc[r][u], plus());
        if (lane == ((4 * r + u) & 31)) tot[r][4 * warp + u] = s;
      }
    __syncthreads();
    matmul_rows_finish<R>(g, tot, r0, o0);
  }
}

// k = 0: C = beta C.
template <class T>
__global__ void __launch_bounds__(256) matmul_scale_c(T *c, int64_t m, int64_t n, int64_t ldc, float beta) {
  const int64_t total = m * n, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    T *q = c + (e / n) * ldc + e % n;
    *q = beta != 0.0f ? beta * *q : 0.0f;
  }
}

// ---- 7.4 Dispatch policy -----------------------------------------------------------------------
// The configurations compiled in (chosen with tools/tune_matmul.cu). Both large ones give a thread
// 8 x 16 outputs (128 FFMA per 6 LDS.128) and need ~250 registers, so 128 x 256 (256 threads)
// runs one block per SM and 128 x 128 (128 threads) two. 64 x 64 fills the SMs on small problems.
// WARP_TILED picks one by size (matmul_warp_tiled_config); GPUOPS_MATMUL_WT_CONFIG forces one.
using matmul_wt_128x128 = matmul_tile_config<128, 128, 8, 2, 2, 2, 4, 3, 2>;
using matmul_wt_128x256 = matmul_tile_config<128, 256, 16, 2, 4, 2, 4, 3, 1>;
using matmul_wt_64x64 = matmul_tile_config<64, 64, 16, 2, 2, 1, 2, 3, 4>;
// The wave model of WARP_TILED's choice: each configuration's rate at full waves (x cuBLAS SGEMM,
// tools/tune_matmul.cu) times the fraction of its last wave's slots that hold a block (a tile, or
// with the k split a 1 / split of one).
struct matmul_wt_candidate {
  int id, bm, bn, bk, per_sm;
  double rate;
  bool split;  // the configuration's kSplit
};
template <class C> constexpr matmul_wt_candidate matmul_wt_candidate_of(int id, double rate) {
  return {id, C::BM, C::BN, C::BK, C::MIN_BLOCKS, rate, C::kSplit};
}
constexpr matmul_wt_candidate kMatmulWtCandidates[] = {matmul_wt_candidate_of<matmul_wt_128x256>(2, 0.95),
                                                       matmul_wt_candidate_of<matmul_wt_128x128>(1, 0.88),
                                                       matmul_wt_candidate_of<matmul_wt_64x64>(3, 0.75)};
// WARP_TILED's k split (kSplit configurations; clusters, so sm_90): where the tiles leave the
// device's resident blocks (`slots`) idle, blocks per tile doubled while tiles x split still fits
// one wave, up to kMatmulWtSplitMax, and while each block keeps kMatmulWtSplitMinKTiles k-tiles
// (kMatmulWtSplitMinKTilesFew while the blocks would fill at most half the SMs, one each).
// Measured on an H200 (2026-11-28, forced splits 1, 2, 4, 8 side by side): 64 x 4096 x 4096, 64
// tiles, 182 / 98 / 102 / 96 us (this rule: 8, 32 k-tiles a block); 64 x 11008 x 4096, 172
// tiles, 286 / 193 / 197 / 207 (2); 512^3, 64 tiles, 28.5 / 18.8 / 21.4 / 26.9 (2); 256^3, 16
// tiles, 17.0 / 12.7 / 10.4 / 12.2 (4); 1024^3, 256 tiles, 78 / 71 / 84 / 104 (2). It misses at
// 128 x 4096 x 4096 (128 tiles: 4, 171 us, where 2 took 152).
constexpr int kMatmulWtSplitMax = 8;  // the portable cluster size
constexpr int64_t kMatmulWtSplitMinKTiles = 16, kMatmulWtSplitMinKTilesFew = 4;
inline int matmul_wt_split(int64_t tiles, int64_t ktiles, int64_t slots, int64_t sms) {
  int split = 1;
  while (split < kMatmulWtSplitMax && tiles * split * 2 <= slots) {
    const int64_t min_kt = tiles * split * 2 <= sms / 2 ? kMatmulWtSplitMinKTilesFew : kMatmulWtSplitMinKTiles;
    if (ktiles < 2 * split * min_kt) break;
    split *= 2;
  }
  return split;
}
// FEW_ROWS: AUTO sends 2 <= min(m, n) <= kMatmulFewRowsMax to matmul_rows_* (m = 1 or n = 1 to
// GEMV, but the large ones of matmul_gemv_by_rows: R = 1). Rows per pass R: the smallest of
// kMatmulRowsPerPass that holds every row, else the largest (16: 64 accumulators per thread, two
// blocks of 256 threads per SM), in groups of R; the k steps whose loads a thread issues together:
// kMatmulRowsUnroll (same index; 1 at R = 8 and 16, where two pass the 128-register cap of two
// blocks per SM and spill). Blocks per tile (the k split, a cluster on sm_90; R > 1 only): doubled
// while the tiles x split blocks fill less than the device's resident blocks once, up to
// kMatmulRowsSplitMax, and while each block keeps kMatmulRowsSplitMinSteps k steps of 128.
// Past 32 rows WARP_TILED's 64 x 64 tiles with their k split win (H200, x 4096 x 4096, NN / NT:
// 48 rows 147 / 165 -> 102 / 113 us, 64 rows 152 / 175 -> 96 / 106 us; 32 rows stay here, 87 /
// 100 us against 101 / 111; docs/performance.md).
constexpr int64_t kMatmulFewRowsMax = 32;
constexpr int kMatmulRowsPerPass[] = {4, 8, 16};
constexpr int kMatmulRowsUnroll[] = {2, 1, 1};
constexpr int kMatmulRowsSplitMax = 8;  // the portable cluster size
constexpr int64_t kMatmulRowsSplitMinSteps = 4;

}  // namespace gpuops

// ---- 7.5 Launcher and C entry point (implementation only) -------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
#ifndef GPUOPS_MATMUL_WT_CONFIG
#define GPUOPS_MATMUL_WT_CONFIG 0  // WARP_TILED's tile: 0 by problem size, 1 128x128, 2 128x256, 3 64x64
#endif
namespace gpuops {

inline int64_t matmul_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline bool matmul_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

// The 128-bit loader mode of an operand (see matmul_load_mode); k16 allows kMatmulK16.
// One of sx, sk is always 1 (gpuops__mm_strides_of); XScalar is returned only with sx == 1 and
// KScalar only with sk == 1, as matmul_wt_load assumes.
inline int matmul_mode(const matmul_operand &o, bool k16) {
  if (o.sx == 1 && o.sk % 4 == 0 && matmul_aligned16(o.ptr)) return kMatmulX16;
  if (o.sx == 1 && o.sk != 1) return kMatmulXScalar;
  if (k16 && o.sk == 1 && o.sx % 4 == 0 && matmul_aligned16(o.ptr)) return kMatmulK16;
  return o.sk == 1 ? kMatmulKScalar : kMatmulXScalar;
}

inline matmul_params matmul_params_of(const gpuops__mm_args &r) {
  const gpuops__mm_strides s = gpuops__mm_strides_of(&r);
  matmul_params p;
  p.c = r.c;
  p.a = {r.a, s.sai, s.sap, r.m};
  p.b = {r.b, s.sbj, s.sbp, r.n};
  p.m = r.m, p.n = r.n, p.k = r.k, p.ldc = r.ldc, p.alpha = r.alpha, p.beta = r.beta;
  p.a_mode = p.b_mode = kMatmulXScalar;
  p.c_vec = (r.ldc % 4 == 0 && matmul_aligned16(r.c)) ? 1 : 0;
  p.split = 1;
  return p;
}

// WARP_TILED with configuration C; split blocks per tile (0: matmul_wt_split's rule; halved until
// clusters of that size fit here, row_clusters: an sm_90 build on an sm_90 device).
template <class C> gpuops_status matmul_run_warp_tiled(matmul_params p, int split, cudaStream_t stream) {
  static std::atomic<int> known[kMatmulWtSplitMax + 1];
  p.a_mode = matmul_mode(p.a, false);
  p.b_mode = matmul_mode(p.b, false);
  const int64_t tm = matmul_cdiv(p.m, C::BM), tn = matmul_cdiv(p.n, C::BN), tiles = tm * tn;
  auto kernel = matmul_warp_tiled<C>;
  if (C::SMEM_BYTES > 48 * 1024) {  // every call: the attribute is per device, and a failure must not read as OK later
    const gpuops_status set = cuda_call_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM_BYTES));
    if (set != GPUOPS_OK) return set;
  }
  if (!C::kSplit) split = 1;
  else if (split == 0) {
    const int64_t sms = current_device().sms;
    split = matmul_wt_split(tiles, matmul_cdiv(p.k, C::BK), sms * C::MIN_BLOCKS, sms);
  }
  for (; split > 1; split /= 2)
    if (split <= kMatmulWtSplitMax && row_clusters(kernel, C::THREADS, split, known, C::SMEM_BYTES) > 0) break;
  p.split = split > 1 ? split : 1;
  if (p.split == 1) {
    kernel<<<tile_grid(tiles), C::THREADS, C::SMEM_BYTES, stream>>>(p, tm, tn);
    return launch_status();
  }
  cudaLaunchAttribute attr[1];  // a cluster per tile, every tile resident at once (the rule keeps tiles x split to a wave)
  const int64_t clusters = tiles < 0x7fffffff / p.split ? tiles : 0x7fffffff / p.split;
  const cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)(clusters * p.split), C::THREADS, p.split, stream, C::SMEM_BYTES);
  const gpuops_status st = cuda_call_status(cudaLaunchKernelEx(&cfg, kernel, p, tm, tn));
  return st != GPUOPS_OK ? st : launch_status();
}

// WARP_TILED's configuration for a shape: the largest predicted rate, each configuration's rate at
// full waves (above) times its wave efficiency tiles / (waves x slots), slots = blocks per SM x
// SMs. E.g. on 132 SMs: 4096^2 is 512 128 x 256 tiles in 4 waves of 132 (0.97, 128 x 256);
// 4095 x 4097 is 544 such tiles in 5 waves (0.82) but 1056 128 x 128 tiles in 4 waves of 264
// (1.0, 128 x 128); 1024^2 fills a quarter of the slots with either large tile (64 x 64).
// config 1..3 forces one (the bench times each; tests call every one).
inline gpuops_status matmul_warp_tiled_config(const gpuops__mm_args &r, int config) {
  const matmul_params p = matmul_params_of(r);
  if (config == 0) {
    const int64_t sms = current_device().sms;
    double best = -1;
    for (const matmul_wt_candidate &c : kMatmulWtCandidates) {
      const int64_t tiles = matmul_cdiv(r.m, c.bm) * matmul_cdiv(r.n, c.bn), slots = sms * c.per_sm;
      const int64_t blocks = tiles * (c.split ? matmul_wt_split(tiles, matmul_cdiv(r.k, c.bk), slots, sms) : 1);
      const double predicted = c.rate * (double)blocks / (double)(matmul_cdiv(blocks, slots) * slots);
      if (predicted > best) best = predicted, config = c.id;
    }
  }
  switch (config) {
  case 1: return matmul_run_warp_tiled<matmul_wt_128x128>(p, 0, r.stream);
  case 2: return matmul_run_warp_tiled<matmul_wt_128x256>(p, 0, r.stream);
  default: return matmul_run_warp_tiled<matmul_wt_64x64>(p, 0, r.stream);
  }
}

// m = 1 or n = 1 as a matrix-vector product: its operands.
inline matmul_gemv_params matmul_gemv_of(const gpuops__mm_args &r) {
  const gpuops__mm_strides s = gpuops__mm_strides_of(&r);
  matmul_gemv_params g;
  g.alpha = r.alpha, g.beta = r.beta, g.k = r.k;
  if (r.m == 1) {  // y = C row 0 (n outputs), X(o, q) = op(B)(q, o), v = op(A) row 0
    g.y = r.c, g.sy = 1, g.x = r.b, g.so = s.sbj, g.sq = s.sbp, g.v = r.a, g.sv = s.sap, g.outputs = r.n;
  } else {         // y = C column 0 (m outputs), X(o, q) = op(A)(o, q), v = op(B) column 0
    g.y = r.c, g.sy = r.ldc, g.x = r.a, g.so = s.sai, g.sq = s.sap, g.v = r.b, g.sv = s.sbp, g.outputs = r.m;
  }
  return g;
}
// AUTO's GEMVs whose X is contiguous along the outputs in whole 16-byte quads and holds at least
// kMatmulGemvRowsMin elements run as FEW_ROWS with one row (matmul_rows_cols<1, 4>: a thread owns
// 4 outputs and issues 4 k steps of 16-byte loads, 256 bytes, before their FFMAs; one block per 32
// outputs, k not split: a split over clusters of 2-8 measured 3-16% slower), the rest on
// matmul_gemv_cols / matmul_gemv_dot. On an H100 (x cuBLAS SGEMM, L2 flushed; 1 x n x k):
// 2048 x 2048 0.83 -> 1.01, 4096 x 4096 0.88 -> 1.00-1.03, 11008 x 4096 0.85 -> 0.97-1.00, 4096 x
// 11008 0.89 -> 1.01-1.03, 4096 x 14336 0.90 -> 1.02, 16384 x 16384 0.92 -> 0.99-1.00; at 1000 x
// 1000 the GEMV kernel stays ahead (1.78x cuBLAS against 1.46x). X along k (NT: the dot kernel,
// 0.93-1.03x) gained nothing measurable.
constexpr int64_t kMatmulGemvRowsMin = (int64_t)1 << 22;
inline bool matmul_gemv_by_rows(const gpuops__mm_args &r) {
  const matmul_gemv_params g = matmul_gemv_of(r);
  return g.so == 1 && g.outputs > 1 && g.sq % 4 == 0 && matmul_aligned16(g.x) && g.outputs * g.k >= kMatmulGemvRowsMin;
}
inline gpuops_status matmul_gemv(const gpuops__mm_args &r) {
  const matmul_gemv_params g = matmul_gemv_of(r);
  const int sms = current_device().sms;
  if (g.sq == 1 || g.outputs == 1) {
    const int64_t blocks = matmul_cdiv(g.outputs, 8), cap = 32 * (int64_t)sms;
    matmul_gemv_dot<<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, r.stream>>>(g);
  } else {
    const int64_t blocks = matmul_cdiv(g.outputs, 32), cap = 4 * (int64_t)sms;
    matmul_gemv_cols<<<(unsigned)(blocks < cap ? blocks : cap), dim3(32, 32), 0, r.stream>>>(g);
  }
  return launch_status();
}

// FEW_ROWS with R rows per pass, U steps per load batch; dot: X contiguous along q
// (matmul_rows_dot), else along o. The k split by kMatmulRowsSplit*, where clusters of that size
// fit (row_clusters: an sm_90 build on an sm_90 device), else one block per tile.
template <int R, int U> gpuops_status matmul_run_rows(matmul_rows_params g, bool dot, cudaStream_t stream) {
  static std::atomic<int> known[2][kMatmulRowsSplitMax + 1];
  const auto kernel = dot ? matmul_rows_dot<R, U> : matmul_rows_cols<R, U>;
  g.groups = matmul_cdiv(g.rows, R);
  g.split = 1;
  const int64_t tiles = matmul_rows_tiles(g), slots = 2 * (int64_t)current_device().sms;  // __launch_bounds__(256, 2)
  int split = 1;  // R = 1 (a GEMV) never splits: its 4 steps of 16-byte loads already fill DRAM's queue (see matmul_gemv_by_rows)
  while (R > 1 && split < kMatmulRowsSplitMax && tiles * split < slots && g.k >= 2 * split * 128 * kMatmulRowsSplitMinSteps) split *= 2;
  for (; split > 1; split /= 2)
    if (row_clusters(kernel, 256, split, known[dot]) > 0) break;
  if (split == 1) {
    kernel<<<tile_grid(tiles), 256, 0, stream>>>(g);
    return launch_status();
  }
  g.split = split;  // tiles < slots here: one cluster per tile
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)(tiles * split), 256, split, stream);
  const gpuops_status st = cuda_call_status(cudaLaunchKernelEx(&cfg, kernel, g));
  return st != GPUOPS_OK ? st : launch_status();
}

// AUTO's few rows, where V (the few rows) is strided along k: its quads are read through L1 as
// four scalar loads, which the dot kernel (X contiguous along k) cannot hide (H200: 4096 x 16 x 4096
// NN, V = B^T, 357 us against WARP_TILED's 105) and the cols kernel hides up to 16 rows (m x 4096 x
// 4096 TN, V = A^T: 8 rows 54 us against 91, 16 rows 82 against 92, 24 rows 108 against 92).
// Else WARP_TILED.
inline bool matmul_few_rows_fits(const gpuops__mm_args &r) {
  const gpuops__mm_strides s = gpuops__mm_strides_of(&r);
  const bool few_m = r.m <= r.n;
  const int64_t svq = few_m ? s.sap : s.sbp, so = few_m ? s.sbj : s.sai, rows = few_m ? r.m : r.n;
  return svq == 1 || (so == 1 && rows <= 16);
}

// A few rows of C (m <= n), or a few columns as the transposed product C^T = op(B)^T op(A)^T: the
// same kernels with X = op(A), V = op(B)^T and Y's strides swapped.
inline gpuops_status matmul_few_rows(const gpuops__mm_args &r) {
  const gpuops__mm_strides s = gpuops__mm_strides_of(&r);
  matmul_rows_params g;
  g.y = r.c, g.k = r.k, g.alpha = r.alpha, g.beta = r.beta, g.groups = 1;
  if (r.m <= r.n) {  // Y = C: X(o, q) = op(B)(q, o), V = op(A)
    g.syr = r.ldc, g.syo = 1, g.x = r.b, g.so = s.sbj, g.sq = s.sbp, g.v = r.a, g.svr = s.sai, g.svq = s.sap;
    g.rows = r.m, g.outputs = r.n;
  } else {           // Y = C^T: X(o, q) = op(A)(o, q), V(r, q) = op(B)(q, r)
    g.syr = 1, g.syo = r.ldc, g.x = r.a, g.so = s.sai, g.sq = s.sap, g.v = r.b, g.svr = s.sbj, g.svq = s.sbp;
    g.rows = r.n, g.outputs = r.m;
  }
  const bool dot = g.so != 1;  // then sq == 1 (gpuops__mm_strides_of)
  g.x16 = (dot ? g.so % 4 == 0 : g.sq % 4 == 0) && matmul_aligned16(g.x);
  g.v16 = g.svq == 1 && g.svr % 4 == 0 && matmul_aligned16(g.v);
  constexpr int R0 = kMatmulRowsPerPass[0], R1 = kMatmulRowsPerPass[1], R2 = kMatmulRowsPerPass[2];
  constexpr int U0 = kMatmulRowsUnroll[0], U1 = kMatmulRowsUnroll[1], U2 = kMatmulRowsUnroll[2];
  if (g.rows == 1) return matmul_run_rows<1, 4>(g, dot, r.stream);  // a GEMV (matmul_gemv_by_rows)
  if (g.rows <= R0) return matmul_run_rows<R0, U0>(g, dot, r.stream);
  if (g.rows <= R1) return matmul_run_rows<R1, U1>(g, dot, r.stream);
  return matmul_run_rows<R2, U2>(g, dot, r.stream);
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__mm_launch(const gpuops__mm_args *r) {
  using namespace gpuops;
  const cudaStream_t stream = r->stream;
  if (r->k == 0) {  // C = beta C
    const int64_t blocks = matmul_cdiv(r->m * r->n, 256), cap = 1 << 16;
    matmul_scale_c<<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, stream>>>(r->c, r->m, r->n, r->ldc, r->beta);
    return launch_status();
  }
  matmul_params p = matmul_params_of(*r);
  switch (r->algo) {
  case GPUOPS_ALGO_AUTO:
    if (r->m == 1 || r->n == 1) return matmul_gemv_by_rows(*r) ? matmul_few_rows(*r) : matmul_gemv(*r);
    if ((r->m < r->n ? r->m : r->n) <= kMatmulFewRowsMax && matmul_few_rows_fits(*r)) return matmul_few_rows(*r);
    return matmul_warp_tiled_config(*r, GPUOPS_MATMUL_WT_CONFIG);
  case GPUOPS_ALGO_NAIVE: {
    const int64_t tm = matmul_cdiv(p.m, 32), tiles = tm * matmul_cdiv(p.n, 8);
    matmul_naive<<<tile_grid(tiles), dim3(32, 8), 0, stream>>>(p, tm, tiles);
    break;
  }
  case GPUOPS_ALGO_COALESCED: {
    const int64_t tn = matmul_cdiv(p.n, 32), tiles = tn * matmul_cdiv(p.m, 8);
    matmul_coalesced<<<tile_grid(tiles), dim3(32, 8), 0, stream>>>(p, tn, tiles);
    break;
  }
  case GPUOPS_ALGO_SHARED_TILED: {
    const int64_t tn = matmul_cdiv(p.n, 32), tiles = tn * matmul_cdiv(p.m, 32);
    matmul_shared_tiled<<<tile_grid(tiles), dim3(32, 32), 0, stream>>>(p, tn, tiles);
    break;
  }
  case GPUOPS_ALGO_REGISTER_1D: {
    const int64_t tn = matmul_cdiv(p.n, 64), tiles = tn * matmul_cdiv(p.m, 64);
    matmul_register_1d<<<tile_grid(tiles), 512, 0, stream>>>(p, tn, tiles);
    break;
  }
  case GPUOPS_ALGO_REGISTER_2D:
  case GPUOPS_ALGO_VECTORIZED: {
    const int64_t tn = matmul_cdiv(p.n, 128), tiles = tn * matmul_cdiv(p.m, 128);
    if (r->algo == GPUOPS_ALGO_REGISTER_2D) {
      matmul_register_2d<false><<<tile_grid(tiles), 256, 0, stream>>>(p, tn, tiles);
    } else {
      p.a_mode = matmul_mode(p.a, true);
      p.b_mode = matmul_mode(p.b, true);
      matmul_register_2d<true><<<tile_grid(tiles), 256, 0, stream>>>(p, tn, tiles);
    }
    break;
  }
  case GPUOPS_ALGO_WARP_TILED: return matmul_warp_tiled_config(*r, GPUOPS_MATMUL_WT_CONFIG);
  default: return GPUOPS_ERR_UNSUPPORTED;
  }
  return launch_status();
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_MATMUL

// ==== 8. Normalization and rotary embeddings ===================================================
#ifndef GPUOPS_NO_NORM
// LayerNorm, RMSNorm, their residual and GELU forms, forward and backward, and RoPE (gpuops.h
// section 8 has the user's contract). The norms are row ops on the core's row engine (section 1.5:
// a row held by a warp, a group of warps, a block or a cluster; the streaming walk for longer rows)
// with the core's Welford state (section 1.3) and activations (section 1.6).
namespace gpuops {

// ---- 8.1 Contract and building blocks ----------------------------------------------------------
// Roofline: a forward moves 2 x sizeof(T) bytes per element (x read once, y written once; add_*:
// 4, x and residual read, h and y written), the backward 3 (dy and x read, dx written); gamma and
// beta are read once per row from L1. About 10 flops per element (GELU: 20-30): memory-bound, and
// the copy rate is the ceiling when each array crosses DRAM once. f32 at 0.9x of a 3 TB/s copy is
// 0.34e12 elements/s: 1.5 per clock per SM at 1.7 GHz, about 85 instructions per element of issue
// budget (16-bit: about 40; the backward: 55 / 28). The row-on-chip kernels use 15-25.

template <class T> struct norm_params {
  T *y, *h;               // outputs; h: add_* (else NULL)
  float *mean, *rstd;     // the statistics, each NULL when not wanted
  const T *x, *res;       // res: the residual of add_* (else NULL)
  const T *gamma, *beta;  // NULL: 1 and 0
  int64_t rows, cols;
  float eps;
  int act;                // gpuops_activation applied to the output
  bool rms;               // RMSNorm: no shift, no centering
  bool vec;               // 128-bit accesses (every pointer 16-byte aligned, cols % V == 0)
  int cluster;            // blocks per row (the cluster kernels), else 1
};

template <class T> struct norm_bwd_params {
  T *dx;
  float *part;                // gradient partials, part[g * ldp + c] (dgamma), part[(parts + g) * ldp + c] (dbeta)
  const T *dy, *x, *gamma, *beta;
  const float *mean, *rstd;   // mean: NULL for RMSNorm
  int64_t rows, cols, ldp, parts;
  float inv_cols;
  int act;                    // layernorm_gelu: dz = dy * act'(z), z recomputed
  bool rms, vec;
  int cluster;
};

// V values of an affine vector (gamma, beta) at column j; `dflt` where it is absent.
template <int V, class T>
__device__ __forceinline__ void load_affine(const T *p, int64_t j, int64_t cols, bool vec, float dflt, float (&v)[V]) {
  if (p) {
    load_cols<V>(p, j, cols, vec, dflt, v);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = dflt;
  }
}

// The row's input: x, or h = x + residual rounded to the storage type (what add_* stores and
// normalizes). V values at view column j of the row views x and res (load_span), columns outside
// the row 0; or at column j of the rows x and res of cols columns.
template <int V, bool kPhased, bool kOutline = false, class T>
__device__ __forceinline__ void load_input(const T *x, const T *res, int64_t j, row_span s, bool vec, float (&v)[V]) {
  load_span<V, kPhased, kOutline>(x, j, s, vec, 0.0f, v);
  if (res) {
    float b[V];
    load_span<V, kPhased, kOutline>(res, j, s, vec, 0.0f, b);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = to_f32(from_f32<T>(v[k] + b[k]));
  }
}
template <int V, class T>
__device__ __forceinline__ void load_input(const T *x, const T *res, int64_t j, int64_t cols, bool vec, float (&v)[V]) {
  load_input<V, false>(x, res, j, row_span{0, cols}, vec, v);
}

// The shift of a row (its first input element, see gpuops.h: x - shift is exact near it), 0 for
// RMSNorm. Every thread of the row reads it, before any output of the row is stored.
template <class T> __device__ __forceinline__ float row_shift(const norm_params<T> &p, int64_t r) {
  if (p.rms) return 0.0f;
  float v[1];
  load_input<1>(p.x + r * p.cols, p.res ? p.res + r * p.cols : nullptr, 0, 1, false, v);
  return v[0];
}

// A row's statistics from the Welford state of its shifted inputs: the output is
// ((v - shift) - center) * rstd * gamma + beta. LayerNorm: center = the shifted mean, rstd from the
// variance m2 / n; RMSNorm (shift 0): center = 0, rstd from the mean square m2 / n + mean^2 (two
// nonnegative terms: no cancellation).
struct norm_stats {
  float center, rstd;
  __device__ __forceinline__ norm_stats(const welford &w, bool rms, float eps) {
    const float var = w.m2 / w.count;
    center = rms ? 0.0f : w.mean;
    rstd = 1.0f / sqrtf((rms ? fmaf(w.mean, w.mean, var) : var) + eps);
  }
};

// One output element: act(xc * rstd * gamma + beta). kFast: the activations' 16-bit forms.
template <bool kFast> __device__ __forceinline__ float norm_out(float xc, float rstd, float g, float b, int act) {
  return activate_dyn<kFast>(act, fmaf(xc * rstd, g, b));
}

// The statistics' outputs of row r (one thread calls).
template <class T> __device__ __forceinline__ void store_stats(const norm_params<T> &p, int64_t r, float shift, const norm_stats &st) {
  if (p.mean) p.mean[r] = shift + st.center;
  if (p.rstd) p.rstd[r] = st.rstd;
}

// The row's outputs for V inputs at column j of row r (stats known): h (add_*) and y.
// gamma and beta are given (p's, or copies hidden from the compiler by the caller: see norm_fwd_on_chip).
template <int V, class T>
__device__ __forceinline__ void store_outputs(const norm_params<T> &p, int64_t r, int64_t j, const float (&v)[V], float shift,
                                              const norm_stats &st, const T *gamma, const T *beta) {
  constexpr bool kFast = sizeof(T) == 2;
  float g[V], b[V], o[V];
  load_affine<V>(gamma, j, p.cols, p.vec, 1.0f, g);
  load_affine<V>(beta, j, p.cols, p.vec, 0.0f, b);
#pragma unroll
  for (int k = 0; k < V; ++k) o[k] = norm_out<kFast>((v[k] - shift) - st.center, st.rstd, g[k], b[k], p.act);
  if (p.h) store_cols<V>(p.h + r * p.cols, j, p.cols, p.vec, v);
  store_cols<V>(p.y + r * p.cols, j, p.cols, p.vec, o);
}

// The backward's per-element terms, from dy, x and the row's (mean, rstd): xhat, and dz = dy (times
// act'(z), z = xhat * gamma + beta, for layernorm_gelu).
// kFast (16-bit storage): the activations' fast gradients, as the elementwise family's 16-bit backward.
template <bool kFast> __device__ __forceinline__ float norm_dz(float dy, float xhat, float g, float b, int act) {
  return act == GPUOPS_ACT_NONE ? dy : activate_grad_times_dyn<kFast>(act, dy, fmaf(xhat, g, b));
}

// ---- 8.2 Learning-path kernels ---------------------------------------------------------------
// Each reads its inputs from memory in every pass, so its rate is 2 / (passes + 1) of the copy rate
// when the rereads miss L2 (better where rows x the rows in flight fit in L2).

// BLOCK_PER_ROW: a block of 256 threads per row, one element per thread and step, a shared-memory
// tree (sequential addressing) for each sum. Pass 1 the mean of the shifted inputs (RMSNorm: their
// mean square), pass 2 the squared deviations, pass 3 the outputs: x read three times.
template <class T> __global__ void __launch_bounds__(kBlock) norm_block_per_row(norm_params<T> p) {
  __shared__ float tree[kBlock];
  const int tid = threadIdx.x;
  // The block's sum of v: each thread's value into the tree, halved 8 times.
  auto block_sum = [&](float v) {
    tree[tid] = v;
    __syncthreads();
    for (int s = kBlock / 2; s > 0; s >>= 1) {
      if (tid < s) tree[tid] += tree[tid + s];
      __syncthreads();
    }
    const float total = tree[0];
    __syncthreads();  // every thread has read tree[0] before the next sum overwrites it
    return total;
  };
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T *x = p.x + r * p.cols, *res = p.res ? p.res + r * p.cols : nullptr;
    const float shift = row_shift(p, r);
    float s = 0.0f;
    for (int64_t j = tid; j < p.cols; j += kBlock) {
      float v[1];
      load_input<1>(x, res, j, p.cols, false, v);
      s += p.rms ? v[0] * v[0] : v[0] - shift;
    }
    welford w = {(float)p.cols, p.rms ? 0.0f : block_sum(s) / (float)p.cols, 0.0f};
    if (p.rms) {
      w.m2 = block_sum(s);
    } else {
      float d2 = 0.0f;
      for (int64_t j = tid; j < p.cols; j += kBlock) {
        float v[1];
        load_input<1>(x, res, j, p.cols, false, v);
        const float d = (v[0] - shift) - w.mean;
        d2 = fmaf(d, d, d2);
      }
      w.m2 = block_sum(d2);
    }
    const norm_stats st(w, p.rms, p.eps);
    if (tid == 0) store_stats(p, r, shift, st);
    for (int64_t j = tid; j < p.cols; j += kBlock) {
      float v[1];
      load_input<1>(x, res, j, p.cols, false, v);
      store_outputs<1>(p, r, j, v, shift, st, p.gamma, p.beta);
    }
  }
}

// WARP_PER_ROW: a warp per row, 8 rows per block. Pass 1 pushes each element into the lane's
// Welford state (one division per element), the lanes' states merge by shuffles (warp_combine):
// no shared memory, no barrier. Pass 2 the outputs: x read twice.
template <class T> __global__ void __launch_bounds__(kBlock) norm_warp_per_row(norm_params<T> p) {
  constexpr int kWarps = kBlock / 32;
  const int lane = threadIdx.x & 31;
  for (int64_t r = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5); r < p.rows; r += (int64_t)gridDim.x * kWarps) {
    const T *x = p.x + r * p.cols, *res = p.res ? p.res + r * p.cols : nullptr;
    const float shift = row_shift(p, r);
    welford w = {};
    for (int64_t j = lane; j < p.cols; j += 32) {
      float v[1];
      load_input<1>(x, res, j, p.cols, false, v);
      w.push(v[0] - shift);
    }
    const norm_stats st(warp_combine(w), p.rms, p.eps);
    if (lane == 0) store_stats(p, r, shift, st);
    for (int64_t j = lane; j < p.cols; j += 32) {
      float v[1];
      load_input<1>(x, res, j, p.cols, false, v);
      store_outputs<1>(p, r, j, v, shift, st, p.gamma, p.beta);
    }
  }
}

// ONLINE (streaming, any length; AUTO's kernel past the on-chip lengths): a block per row, the
// core's sweep_row2 over x (and the residual) in 16-byte vectors. Pass 1 merges each vector's exact
// (count, mean, m2) into the thread's Welford state (one division per vector, not per element),
// then block_combine; pass 2 the outputs. x read twice: 2/3 of the copy rate where the rereads miss L2.
template <class T> __global__ void __launch_bounds__(1024) norm_fwd_stream(norm_params<T> p) {
  constexpr int V = 16 / sizeof(T), U = stream_u<T>() / 2;  // x and the residual: 16 floats in flight
  __shared__ welford scratch[32];
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T *x = p.x + r * p.cols, *res = p.res ? p.res + r * p.cols : nullptr;
    const float shift = row_shift(p, r);
    welford w = {};
    auto inputs = [&](int64_t j, const float (&a)[V], const float (&b)[V], float (&v)[V]) {
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = res ? to_f32(from_f32<T>(a[k] + b[k])) : a[k];
      (void)j;
    };
    auto stats = [&](int64_t j, int64_t step, const float (&a)[U][V], const float (&b)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t c = j + u * step;
        if (c >= p.cols) continue;
        const int n = p.cols - c < V ? (int)(p.cols - c) : V;
        float v[V], s = 0.0f, m2 = 0.0f;
        inputs(c, a[u], b[u], v);
#pragma unroll
        for (int k = 0; k < V; ++k) s += k < n ? v[k] - shift : 0.0f;
        const float m = s / (float)n;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const float d = (v[k] - shift) - m;
          m2 += k < n ? d * d : 0.0f;
        }
        w.merge({(float)n, m, m2});
      }
    };
    // Without a residual the second array is `none` (no loads).
    if (res) sweep_row2<V, U>(x, res, p.cols, p.vec, 0.0f, stats);
    else sweep_row2<V, U>(x, (const none *)nullptr, p.cols, p.vec, 0.0f, stats);
    const norm_stats st(block_combine(w, scratch), p.rms, p.eps);
    if (threadIdx.x == 0) store_stats(p, r, shift, st);
    auto outputs = [&](int64_t j, int64_t step, const float (&a)[U][V], const float (&b)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < p.cols) {
          float v[V];
          inputs(j + u * step, a[u], b[u], v);
          store_outputs<V>(p, r, j + u * step, v, shift, st, p.gamma, p.beta);
        }
    };
    if (res) sweep_row2<V, U>(x, res, p.cols, p.vec, 0.0f, outputs);
    else sweep_row2<V, U>(x, (const none *)nullptr, p.cols, p.vec, 0.0f, outputs);
  }
}

// UNFUSED's separate elementwise steps over n elements (rows x cols): out = a + b (kMapAdd),
// out = act(a) (kMapAct), and the layernorm_gelu backward's first step, out = a * act'(z) with
// z = (b - mean) * rstd * gamma + beta of b's row and column (kMapDz: a = dy, b = x). 16-byte
// vectors where every pointer is 16-byte aligned (and, for kMapDz, cols % V == 0: a vector in one
// row); the tail, and everything otherwise, element by element.
enum norm_map_op { kMapAdd, kMapAct, kMapDz };
template <class T> struct norm_map_params {
  T *out;
  const T *a, *b, *gamma, *beta;
  const float *mean, *rstd;
  int64_t n;
  divisor cols;
  int op, act;
  bool vec;
};
// The outputs of W inputs va, vb starting at element i, into va.
template <int W, class T> __device__ __forceinline__ void norm_map_apply(const norm_map_params<T> &p, int64_t i, float (&va)[W], const float (&vb)[W]) {
  constexpr bool kFast = sizeof(T) == 2;
  if (p.op == kMapDz) {
    const int64_t r = (int64_t)p.cols.div((uint64_t)i), c = i - r * (int64_t)p.cols.d;
    float g[W], b[W];
    load_affine<W>(p.gamma, c, (int64_t)p.cols.d, p.vec, 1.0f, g);
    load_affine<W>(p.beta, c, (int64_t)p.cols.d, p.vec, 0.0f, b);
#pragma unroll
    for (int k = 0; k < W; ++k) va[k] = norm_dz<sizeof(T) == 2>(va[k], (vb[k] - p.mean[r]) * p.rstd[r], g[k], b[k], p.act);
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) va[k] = p.op == kMapAdd ? va[k] + vb[k] : activate_dyn<kFast>(p.act, va[k]);
  }
}
template <class T> __global__ void __launch_bounds__(kBlock) norm_map(norm_map_params<T> p) {
  constexpr int V = 16 / sizeof(T);
  const int64_t stride = (int64_t)gridDim.x * blockDim.x, nv = p.vec ? p.n / V : 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += stride) {
    float va[V], vb[V];
    load_f32<V>(p.a, i * V, va);
    if (p.b) load_f32<V>(p.b, i * V, vb);
    norm_map_apply<V>(p, i * V, va, vb);
    store_f32<V>(p.out, i * V, va);
  }
  for (int64_t i = nv * V + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += stride) {
    float va[1] = {to_f32(p.a[i])}, vb[1] = {p.b ? to_f32(p.b[i]) : 0.0f};
    norm_map_apply<1>(p, i, va, vb);
    p.out[i] = from_f32<T>(va[0]);
  }
}

// ---- 8.3 Production kernels: the row on chip --------------------------------------------------
// ROW_REGISTERS (AUTO where the row fits): the row is loaded once into registers, TPR threads per
// row with N 16-byte vectors each (E = N x V elements), reduced, and written from the registers:
// each array crosses DRAM once, so the copy rate is the ceiling. Layout as softmax's (section 5.3):
// vector k of thread t holds columns slice + (k * TPR + t) * V ..., so a warp's accesses of one k
// are contiguous; with `cluster` = C > 1 (compute capability 9.0+) a row spans C blocks, each a
// slice of TPR x E columns, their statistics merged through distributed shared memory.
// Forward statistics, the exact two-pass algorithm over the registers with one division per warp:
// each warp sums its shifted elements (shuffles) to its mean, then sums the squared deviations from
// that mean (shuffles); the warps of a row combine their (count, sum, mean, m2) about the row's
// exact mean (row_stats, section 1.5), and cluster blocks by Chan's formula (cluster_merge).
// 16-bit inputs fold the shift into the mean (v - (shift + mean), one subtraction): the rounding
// of shift + mean (2^-24 of the row's magnitude) is far below the spacing of 16-bit values (2^-8 or
// 2^-11 of it), so it moves neither the statistics nor the outputs measurably; f32 keeps
// (v - shift) - mean, exact near the shift. Nsight Compute, bf16 32768 x 4096 on an H100:
// 26 thread instructions per element (warp instructions executed x 32 / elements) and 0.98x copy,
// where Welford merges in every shuffle step (a division each) and per-element selects took 47
// (88% of issue slots busy at 0.79x copy). The row stays as stored (raw registers, pack_raw):
// 16-bit rows two to a register; add_* holds h = x + residual rounded, which it stores with y after
// the reduction.


// V values of gamma or beta at column j (16-byte access) as raw registers, `dflt` where absent.
template <class T> __device__ __forceinline__ uint4 load_affine_raw(const T *a, int64_t j, float dflt) {
  if (a) return load_raw(a, j, j + 1, true);
  float v[16 / sizeof(T)];
#pragma unroll
  for (int k = 0; k < 16 / (int)sizeof(T); ++k) v[k] = dflt;
  return pack_raw<T>(v);
}

// Launch bounds without the activation: at least 768 threads a SM (80 registers; f32 32 x 8 took
// 87, two blocks of 256: H100, add_layernorm f32 rows of 1024 0.89 -> 0.95x copy). With it, no
// minimum (0): capped the same way the GELU builds spill and lost 0.10x copy at rows of 4096, and
// an explicit minimum of 1 block let them grow to 72-77 registers and lose as much.
// The phased forms (kPhased, below) ask for 768 threads with the activation too, and their 16-bit
// forms of 5 vectors a thread for 1024 (64 registers, no spills; at 72, 3 blocks of 256 a SM,
// Nsight Compute found the 16-bit phased kernel bound by issue: bf16 32767 x 4097 0.38 -> 0.41x copy).
// kStage (the launcher's cluster form): this thread's gamma and beta vectors, the same in every row
// of the block, are loaded once into dynamic shared memory (those of the two that exist, gamma
// first: norm_fwd_stage_bytes; each thread reads back only what it wrote: no barrier) instead of
// from L1 in every row's output pass. With a cluster's 8 slices of a row spread over the SMs, an
// SM's blocks need up to 192 KB of f32 gamma and beta; L1 kept 46% of those loads, and the rest came
// from L2 after the cluster exchange, one L2 latency a row on every block's critical path (H100,
// f32 2048 x 65536: 500 us with gamma and beta, 385 us without). Only what exists is staged: the
// shared memory comes out of L1, which also holds the loads in flight (64 KB a block staged with
// neither array to stage: 411 us against 385). In f32 without a residual it also rolls the next
// row in during the output pass (`roll`, below).
// kPhased (rows that are not whole vectors, x, residual, h and y at one phase; no clusters): each
// row is walked as a view (row_span, section 1.5), its interior in 128-bit accesses. gamma and
// beta, at any alignment, are staged whole in dynamic shared memory and read element by element
// at the row's phase, which differs from row to row where cols is not a multiple of V. The stage
// holds each column's (gamma, beta) as one pair of T (1 and 0 where absent), in V planes: column c
// (padded: e = c + V, V columns of padding either side) at plane e % V, slot e / V, planes of
// norm_phased_slots slots. A warp's read of element i of its 32 vectors then takes 32 consecutive
// slots of one plane (or two neighbouring runs): one shared-memory wavefront, where the pairs in
// column order would put the 32 lanes 16 bytes apart, 4 to a bank (4 wavefronts). The launcher
// gives these forms a grid of what is resident, so each block stages once.
template <int TPR, int N> __host__ __device__ constexpr size_t norm_fwd_stage_bytes(int arrays) {
  return (size_t)arrays * N * TPR * 16;
}
template <class T> __host__ __device__ constexpr int64_t norm_phased_slots(int64_t cols) {
  return (cols + 3 * (16 / sizeof(T)) - 1) / (16 / sizeof(T));
}
template <class T> __host__ __device__ constexpr size_t norm_phased_stage_bytes(int64_t cols) {
  return (size_t)norm_phased_slots<T>(cols) * 16 * 2;  // V planes of pairs of T
}
// A column's (gamma, beta) in the phased forms' stage, and its values.
template <class T> using norm_gb = std::conditional_t<sizeof(T) == 4, uint2, uint32_t>;
template <class T> __device__ __forceinline__ norm_gb<T> norm_gb_pack(float g, float b) {
  if constexpr (sizeof(T) == 4) return make_uint2(__float_as_uint(g), __float_as_uint(b));
  else return pair_of<T>::pack(g, b);  // exact: both are values of T
}
template <class T> __device__ __forceinline__ float2 norm_gb_unpack(norm_gb<T> w) {
  if constexpr (sizeof(T) == 4) return make_float2(__uint_as_float(w.x), __uint_as_float(w.y));
  else return pair_of<T>::unpack(w);
}
// Fill the stage (the whole block; the caller's barrier follows), and the stage's index of element i
// of the vector at view column v V in a row of phase lo (column v V + i - lo; v = t + k TPR).
template <class T> __device__ __forceinline__ void norm_phased_stage(norm_gb<T> *gb, const T *gamma, const T *beta, int64_t cols, int slots) {
  constexpr int V = 16 / sizeof(T);
  for (int e = threadIdx.x; e < V * slots; e += blockDim.x) {
    const int64_t c = e - V;
    const bool in = c >= 0 && c < cols;
    gb[e % V * slots + e / V] = norm_gb_pack<T>(in && gamma ? to_f32(gamma[c]) : 1.0f, in && beta ? to_f32(beta[c]) : 0.0f);
  }
}
template <class T> __device__ __forceinline__ int norm_phased_at(int slots, int64_t lo, int v, int i) {
  constexpr int V = 16 / sizeof(T);
  const unsigned d = V - (unsigned)lo + i;
  return (int)(d % V) * slots + (int)(d / V) + v;
}
template <class T, int TPR, int N, bool kAct, bool kStage = false, bool kPhased = false>
__global__ void __launch_bounds__(block_threads<TPR>(), kAct && !kPhased ? 0 : ((kPhased && sizeof(T) == 2 && N <= 5 ? 1024 : 768) + block_threads<TPR>() - 1) / block_threads<TPR>())
    norm_fwd_on_chip(norm_params<T> p) {
  constexpr int V = 16 / sizeof(T), RPB = block_threads<TPR>() / TPR;
  constexpr bool k16 = sizeof(T) == 2, kOutline = kPhased && k16;  // 16-bit: the edge vectors as calls (see load_edge_call)
  static_assert(!kStage || RPB == 1, "staged gamma and beta: one row a block");
  static_assert(!(kStage && kPhased), "the phased forms stage the whole row's gamma and beta");
  extern __shared__ uint4 norm_stage[];  // kStage: [gamma if any, beta if any][N][TPR]; kPhased: see above
  uint4 *const beta_stage = norm_stage + (p.gamma ? N * TPR : 0);
  norm_gb<T> *const gb = reinterpret_cast<norm_gb<T> *>(norm_stage);  // kPhased
  const int slots = kPhased ? (int)norm_phased_slots<T>(p.cols) : 0;
  const bool affine = p.gamma || p.beta;
  p.vec = true;  // the launcher runs these kernels only where every access is a whole 16-byte vector (or phased)
  if (!kAct) p.act = GPUOPS_ACT_NONE;  // the activations' code only where one is asked for
  __shared__ float4 warps[block_threads<TPR>() / 32];
  __shared__ cluster_share<welford> share;
  int nrow = 0;  // rows merged so far (cluster_merge's row)
  const int t = threadIdx.x % TPR, C = row_cluster<TPR>(p.cluster);
  cluster_share_init(share, C);
  const int64_t j0 = (int64_t)(blockIdx.x % C) * TPR * N * V + (int64_t)t * V;  // column of this thread's vector 0
  const int64_t step = (int64_t)(gridDim.x / C) * RPB;
  int nv = 0;  // this thread's vectors inside the row (the same for every row): 0 .. nv - 1
#pragma unroll
  for (int k = 0; k < N; ++k) nv += j0 + (int64_t)k * TPR * V < p.cols;
  // This warp's elements of a row. kPhased counts them in each row instead and never reads nw, but
  // keeps the shuffles: ptxas (nvcc 13, sm_90a) spilled 24-60 bytes in the phased 256 x 8 forms
  // without them.
  const float nw = warp_reduce((float)(nv * V), plus());
  if constexpr (kStage) {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (k < nv) {
        const int64_t j = j0 + (int64_t)k * TPR * V;
        if (p.gamma) norm_stage[k * TPR + t] = load_affine_raw(p.gamma, j, 1.0f);
        if (p.beta) beta_stage[k * TPR + t] = load_affine_raw(p.beta, j, 0.0f);
      }
    }
  }
  if constexpr (kPhased) {
    if (affine) norm_phased_stage<T>(gb, p.gamma, p.beta, p.cols, slots);
    __syncthreads();
  }
  // Groups of warps (TPR = 64 .. 128, several rows to a block) reduce with block-wide barriers, so
  // every group of a block takes the same number of steps: a group past the last row holds nothing
  // and stores nothing. A warp's row, or a whole block's, just ends.
  constexpr bool kGroups = TPR > 32 && RPB > 1;
  // kStage, f32, without a residual rolls into the next row: its vector k is loaded as soon as this
  // row's vector k is stored (the same registers), and its shift before the first, so that the next
  // row's loads are in flight through this row's output pass (with a residual, h = x + res is formed
  // as it is loaded, which would wait there). H100, f32 2048 x 65536: LayerNorm 0.886 -> 0.902x copy,
  // LN+GELU 0.693 -> 0.763x. In bf16 it lost (LayerNorm 0.84 -> 0.69x, RMSNorm 0.90 -> 0.70x; Nsight
  // Compute: DRAM 66% -> 56% busy, 6.1 of 11.5 cycles an instruction on the loads), not yet explained.
  const bool roll = kStage && sizeof(T) == 4 && !p.res;
  uint4 q[N];
  float shift_next = 0.0f;
  if (roll && (int64_t)(blockIdx.x / C) < p.rows) {
    const int64_t r = blockIdx.x / C;
#pragma unroll
    for (int k = 0; k < N; ++k) q[k] = load_raw(p.x + r * p.cols, j0 + (int64_t)k * TPR * V, p.cols, true, 0.0f);
    shift_next = row_shift(p, r);
  }
  for (int64_t r0 = (int64_t)(blockIdx.x / C) * RPB; r0 < p.rows; r0 += step) {
    const int64_t r = r0 + threadIdx.x / TPR;
    if (!kGroups && r >= p.rows) break;
    const bool live = r < p.rows;
    const int64_t rr = live ? r : r0, cols = live ? p.cols : 0;
    // The row's view (kPhased; else its columns as they are): every array of the row at sp.lo.
    const row_span sp = span_of<kPhased>(p.x + rr * p.cols, cols);
    int nl = live ? nv : 0;  // the vectors this thread holds in this row
    float n_w = live ? nw : 0.0f;  // and its warp's elements
    if constexpr (kPhased) {
      nl = 0, n_w = 0.0f;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const int64_t j = j0 + (int64_t)k * TPR * V;
        nl += live && j < sp.n;
        n_w += (float)span_count_warp<V>(j - (int64_t)(threadIdx.x % 32) * V, sp);
      }
    }
    if (!roll) {
      const T *x = p.x + rr * p.cols - sp.lo, *res = p.res ? p.res + rr * p.cols - sp.lo : nullptr;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const int64_t j = j0 + (int64_t)k * TPR * V;
        if (res) {
          float v[V];
          if (k < nl) load_input<V, kPhased, kOutline>(x, res, j, sp, true, v);  // h, rounded: exact in raw registers
          q[k] = k < nl ? pack_raw<T>(v) : make_uint4(0, 0, 0, 0);
        } else {
          q[k] = load_raw<kPhased, kOutline>(x, j, sp, true, 0.0f);
        }
      }
    }
    const float shift = roll ? shift_next : row_shift(p, rr);
    // RMSNorm needs only the sum of squares (no cancellation: every term is >= 0): its warps skip
    // the pass for the mean and its reduction, and enter row_stats with mean 0 and m2 = the sum of
    // squares, which the merges keep as a plain sum (rstd from m2 / n + 0^2).
    float s = 0.0f;
    if (!p.rms) {
#pragma unroll
      for (int k = 0; k < N; ++k) {
        if (k < nl) {
          float v[V];
          unpack_raw<T>(q[k], v);
          span_for<V, kPhased>(j0 + (int64_t)k * TPR * V, sp, [&](int i) { s += v[i] - shift; });
        }
      }
      s = warp_reduce(s, plus());
    }
    const float s_w = s;
    // RMSNorm: 0, without dividing its zero sum, which took the division's slow-path call in every
    // row (63 of a warp's 710 instructions a row, bf16 16384 x 1024, Nsight Compute). Only in the
    // forms that RMSNorm's short rows run: kStage (rows of 16384 and more, where a row's
    // instructions weigh little) and kAct (LayerNorm only) keep the division, whose removal moved
    // their register allocation (H200: f32 staged 72 -> 79, add_rmsnorm f32 2048 x 65536 -7%;
    // bf16 32 x 8 with GELU 64 -> 73, 4 -> 3 blocks a SM, LN + GELU 8192 x 2048 -10%).
    constexpr bool kRmsNoMean = !kStage && !kAct;
    const float mean_w = n_w > 0.0f && !(kRmsNoMean && p.rms) ? s_w / n_w : 0.0f, c_w = k16 ? shift + mean_w : mean_w;
    float m2 = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (k < nl) {
        float v[V];
        if (k16) opaque(q[k]);
        unpack_raw<T>(q[k], v);
        span_for<V, kPhased>(j0 + (int64_t)k * TPR * V, sp, [&](int i) {
          const float d = k16 ? v[i] - c_w : (v[i] - shift) - c_w;
          m2 = fmaf(d, d, m2);
        });
      }
    }
    welford w = row_stats<TPR>(n_w, s_w, mean_w, warp_reduce(m2, plus()), warps);
    w = cluster_merge(w, C, share, nrow, welford{}, [](welford &a, const welford &b) { a.merge(b); });
    ++nrow;
    const norm_stats st(w, p.rms, p.eps);
    if (live && t == 0 && blockIdx.x % C == 0) store_stats(p, r, shift, st);
    const float c = k16 ? shift + st.center : st.center;
    T *y = p.y + rr * p.cols - sp.lo, *h = p.h ? p.h + rr * p.cols - sp.lo : nullptr;
    const int64_t next = r0 + step;  // (roll: one row a block)
    const bool more = roll && next < p.rows;
    if (more) shift_next = row_shift(p, next);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (k < nl) {
        const int64_t j = j0 + (int64_t)k * TPR * V;
        float v[V], g[V], b[V], o[V];
        if (k16) opaque(q[k]);
        unpack_raw<T>(q[k], v);
        if constexpr (kPhased) {
          // Column j - sp.lo + i: padded e = j + (V - sp.lo + i), j = (t + k TPR) V (one block a
          // row); the padding keeps the edges' reads inside the stage.
#pragma unroll
          for (int i = 0; i < V; ++i) {
            const float2 w = affine ? norm_gb_unpack<T>(gb[norm_phased_at<T>(slots, sp.lo, t + k * TPR, i)]) : make_float2(1.0f, 0.0f);
            g[i] = w.x, b[i] = w.y;
          }
        } else {
          unpack_raw<T>(kStage && p.gamma ? norm_stage[k * TPR + t] : load_affine_raw(p.gamma, j, 1.0f), g);
          unpack_raw<T>(kStage && p.beta ? beta_stage[k * TPR + t] : load_affine_raw(p.beta, j, 0.0f), b);
        }
#pragma unroll
        for (int i = 0; i < V; ++i) o[i] = norm_out<k16>(k16 ? v[i] - c : (v[i] - shift) - c, st.rstd, g[i], b[i], p.act);
        if (h) store_raw_span<kPhased, kOutline>(h, j, sp, q[k]);
        store_raw_span<kPhased, kOutline>(y, j, sp, pack_raw<T>(o));
        if (more) q[k] = load_raw(p.x + next * p.cols, j, p.cols, true, 0.0f);
      }
    }
  }
  cluster_done(C);
}

// The backward with dy and x on chip: TPR threads per row, N vectors of each per thread (E = 8
// elements: N = 2 for f32, 1 for 16-bit; 16-bit rows past 8192 without the activation N = 2),
// the two row sums (g, g xhat) in one reduction and, with clusters, one exchange; dz kept in f32
// between the passes (act' once per element). Each thread
// sums dz xhat and dz for its columns over all the rows it visits in registers and writes them
// once, as the row of partials of its group (g = the group's index): part[g][c]. A group visits
// rows g, g + G, ... (G groups launched): the partials, and so dgamma and dbeta, are the same bits
// on every run for a given G.
// kWide (rows past a block of 1024 x kNormBwdE, without the activation; blocks of 1024): the
// partials live in shared memory instead (float4 q of gradient a, 0 dgamma or 1 dbeta, of vector k
// of thread t at ((a N + k) V / 4 + q) x 1024 + t: norm_bwd_acc_bytes a block), which frees the
// registers for the next row's dy and x (kPrefetch).
// kPhased (rows that are not whole vectors, dy, x and dx at one phase; no clusters): each row is
// walked as a view (row_span), its interior in 128-bit accesses, as the forward's kPhased forms do.
// A thread's view columns hold different columns from row to row (the phase moves with each row
// where cols is not a multiple of V), so gamma and beta come from the forward's stage
// (norm_phased_stage: every column's pair, V planes), and the partials of dgamma and dbeta are
// kept per column in shared memory behind it, laid out as the stage (two arrays of V planes a row
// group, a warp's updates 32 consecutive slots of one plane): each row adds its terms in place,
// the row's barriers (a warp's __syncwarp for rows of one warp) ordering one row's updates of a
// column before the next row's, so the partials are the same bits on every run for a given grid.
// Shared memory: norm_bwd_phased_bytes. Without it dy and x were read three times (the ONLINE
// backward: the partials by columns, then the two sums, then dx).
template <class T, int N, bool kWide> __host__ __device__ constexpr size_t norm_bwd_acc_bytes() {
  return kWide ? (size_t)2 * N * (16 / sizeof(T)) * 1024 * 4 : 0;
}
template <class T> __host__ __device__ constexpr size_t norm_bwd_phased_bytes(int64_t cols, int rpb) {
  return norm_phased_stage_bytes<T>(cols) + (size_t)rpb * 2 * (16 / sizeof(T)) * norm_phased_slots<T>(cols) * 4;
}
template <class T, int TPR, int N, bool kAct, bool kWide = false, bool kPhased = false>
__global__ void __launch_bounds__(block_threads<TPR>(), 1024 / block_threads<TPR>()) norm_bwd_on_chip(norm_bwd_params<T> p) {
  static_assert(!kWide || (TPR == 1024 && !kAct), "the wide rows' kernel: blocks of 1024 without the activation");
  static_assert(!(kWide && kPhased), "the phased rows keep their partials by column");
  constexpr int V = 16 / sizeof(T), RPB = block_threads<TPR>() / TPR;
  constexpr bool k16 = sizeof(T) == 2, kPrefetch = !kAct && ((k16 && N == 1) || kWide), kOutline = kPhased && k16;
  extern __shared__ float4 norm_acc[];  // kWide: the partials; kPhased: the stage, then the partials by column
  const int slots = kPhased ? (int)norm_phased_slots<T>(p.cols) : 0;
  norm_gb<T> *const gb = reinterpret_cast<norm_gb<T> *>(norm_acc);
  float *const pacc0 = reinterpret_cast<float *>(norm_acc) + (kPhased ? norm_phased_stage_bytes<T>(p.cols) / 4 : 0);
  float *const pacc = pacc0 + (threadIdx.x / TPR) * 2 * V * slots;  // this group's (dgamma planes, dbeta planes)
  if (!kAct) p.act = GPUOPS_ACT_NONE;
  __shared__ float scratch[64];
  __shared__ cluster_share<float2> share;
  int nrow = 0;  // rows merged so far (cluster_merge's row)
  p.vec = true;  // the launcher runs these kernels only where every access is a whole 16-byte vector
  const int t = threadIdx.x % TPR, C = row_cluster<TPR>(p.cluster);
  cluster_share_init(share, C);
  const int64_t j0 = (int64_t)(blockIdx.x % C) * TPR * N * V + (int64_t)t * V;
  const int64_t group = (int64_t)(blockIdx.x / C) * RPB + threadIdx.x / TPR, groups = (int64_t)(gridDim.x / C) * RPB;
  int nv = 0;  // this thread's vectors inside a row: 0 .. nv - 1
#pragma unroll
  for (int k = 0; k < N; ++k) nv += j0 + (int64_t)k * TPR * V < p.cols;
  float ag[kWide ? 1 : N][V] = {}, ab[kWide ? 1 : N][V] = {};  // this thread's columns' partials (kWide: acc)
  auto acc = [&](int a, int k, int q) -> float4 & { return norm_acc[((a * N + k) * V / 4 + q) * TPR + threadIdx.x]; };
  if constexpr (kWide)
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
      for (int q = 0; q < V / 4; ++q) acc(0, k, q) = acc(1, k, q) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if constexpr (kPhased) {
    norm_phased_stage<T>(gb, p.gamma, p.beta, p.cols, slots);
    for (int e = threadIdx.x; e < RPB * 2 * V * slots; e += blockDim.x) pacc0[e] = 0.0f;
    __syncthreads();
  }
  // Row r's dy and x (raw) and statistics; nothing of a row past the last (its vectors stay unused).
  // kPhased: the row's view (every array at sp.lo) and the vectors of it this thread holds.
  struct row_in {
    uint4 dy[N], x[N];
    float mu, rs;
    row_span sp;
    int nl;
  };
  auto load = [&](int64_t r, row_in &in) {
    const bool live = r < p.rows;
    const int64_t rr = live ? r : 0;
    const T *dy = p.dy + rr * p.cols, *x = p.x + rr * p.cols;
    if constexpr (kPhased) {
      in.sp = span_of<true>(dy, live ? p.cols : 0);
      in.nl = 0;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const int64_t j = j0 + (int64_t)k * TPR * V;
        if (live && j < in.sp.n) {
          in.dy[k] = load_raw<true, kOutline>(dy - in.sp.lo, j, in.sp, true, 0.0f), in.x[k] = load_raw<true, kOutline>(x - in.sp.lo, j, in.sp, true, 0.0f);
          ++in.nl;
        }
      }
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const int64_t j = j0 + (int64_t)k * TPR * V;
        if (live && k < nv) in.dy[k] = load_raw(dy, j, j + 1, true), in.x[k] = load_raw(x, j, j + 1, true);
      }
    }
    in.mu = p.rms || !live ? 0.0f : p.mean[rr], in.rs = live ? p.rstd[rr] : 0.0f;
  };
  // Every group of a block takes the same number of steps (the reductions of groups of warps have
  // block-wide barriers): a group past the last row holds nothing and stores nothing. Without the
  // activation, 16-bit types with one vector a thread and the wide rows load the group's next row
  // before reducing this one (kPrefetch: 8 N more registers), so each thread keeps loads in flight
  // through the reduction's barriers.
  row_in cur, next;
  int64_t r0 = group - threadIdx.x / TPR;
  if (kPrefetch) load(r0 + threadIdx.x / TPR, cur);
  for (; r0 < p.rows; r0 += groups) {
    const int64_t r = r0 + threadIdx.x / TPR;
    if (kPrefetch) load(r + groups, next);
    else load(r, cur);
    const int nl = kPhased ? cur.nl : r < p.rows ? nv : 0;  // the vectors this thread holds in this row
    const float mu = cur.mu, rs = cur.rs;
    float dz[kAct ? N : 1][V], sums[2] = {0.0f, 0.0f};  // dz kept only where act' made it (else dz = dy)
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (k < nl) {
        const int64_t j = j0 + (int64_t)k * TPR * V;
        float g[V], b[V], d[V], xv[V];
        if constexpr (kPhased) {
#pragma unroll
          for (int i = 0; i < V; ++i) {
            const float2 w = norm_gb_unpack<T>(gb[norm_phased_at<T>(slots, cur.sp.lo, t + k * TPR, i)]);
            g[i] = w.x, b[i] = w.y;
          }
        } else {
          unpack_raw<T>(load_affine_raw(p.gamma, j, 1.0f), g);
          if (kAct) unpack_raw<T>(load_affine_raw(p.beta, j, 0.0f), b);
        }
        unpack_raw<T>(cur.dy[k], d);
        unpack_raw<T>(cur.x[k], xv);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const float xhat = (xv[i] - mu) * rs, z = kAct ? norm_dz<k16>(d[i], xhat, g[i], b[i], p.act) : d[i];
          if (kAct) dz[k][i] = z;
          const float gg = z * g[i];
          sums[0] += gg;
          sums[1] = fmaf(gg, xhat, sums[1]);
          if constexpr (kPhased) {  // view columns outside the row add zeros (dy there is 0) to the stage's padding
            if (p.part) {
              float *a = pacc + norm_phased_at<T>(slots, cur.sp.lo, t + k * TPR, i);
              a[0] = fmaf(z, xhat, a[0]), a[V * slots] += z;
            }
          } else if constexpr (!kWide) {
            ag[k][i] = fmaf(z, xhat, ag[k][i]), ab[k][i] += z;
          }
        }
        if constexpr (kWide)
#pragma unroll
          for (int q = 0; q < V / 4; ++q) {
            float4 &g4 = acc(0, k, q), &b4 = acc(1, k, q);
            float4 gv = g4, bv = b4;
            float *gp = &gv.x, *bp = &bv.x;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const float xhat = (xv[4 * q + e] - mu) * rs;
              gp[e] = fmaf(d[4 * q + e], xhat, gp[e]), bp[e] += d[4 * q + e];
            }
            g4 = gv, b4 = bv;
          }
      }
    }
    if (kPhased && TPR == 32) __syncwarp();  // this row's partials before the next row's (other lanes' columns then)
    row_reduce<TPR>(sums, plus(), 0.0f, scratch);
    const float2 tot = cluster_merge(make_float2(sums[0], sums[1]), C, share, nrow, make_float2(0.0f, 0.0f),
                                     [](float2 &a, const float2 &b) { a.x += b.x, a.y += b.y; });
    ++nrow;
    const float ma = p.rms ? 0.0f : tot.x * p.inv_cols, mb = tot.y * p.inv_cols;
    T *dx = p.dx + (nl > 0 ? r : 0) * p.cols - (kPhased ? cur.sp.lo : 0);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (k < nl) {
        const int64_t j = j0 + (int64_t)k * TPR * V;
        float g[V], xv[V], d[V], o[V];
        if constexpr (kPhased) {
#pragma unroll
          for (int i = 0; i < V; ++i) g[i] = norm_gb_unpack<T>(gb[norm_phased_at<T>(slots, cur.sp.lo, t + k * TPR, i)]).x;
        } else {
          unpack_raw<T>(load_affine_raw(p.gamma, j, 1.0f), g);
        }
        if (k16) opaque(cur.x[k]), opaque(cur.dy[k]);
        unpack_raw<T>(cur.x[k], xv);
        if (!kAct) unpack_raw<T>(cur.dy[k], d);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const float xhat = (xv[i] - mu) * rs, z = kAct ? dz[kAct ? k : 0][i] : d[i];
          o[i] = rs * fmaf(-xhat, mb, fmaf(z, g[i], -ma));
        }
        if constexpr (kPhased) store_raw_span<true, kOutline>(dx, j, cur.sp, pack_raw<T>(o));
        else store_global16(dx + j, pack_raw<T>(o));
      }
    }
    if (kPrefetch) cur = next;
  }
  cluster_done(C);
  if (!p.part) return;
  if constexpr (kPhased) {  // the block's rows of partials, column by column out of the planes
    __syncthreads();
    const int64_t cols = p.cols, g0 = (int64_t)blockIdx.x * RPB;
    for (int64_t e = threadIdx.x; e < (int64_t)RPB * 2 * cols; e += blockDim.x) {
      const int64_t gi = e / (2 * cols), a = (e - gi * 2 * cols) >= cols, c = e - gi * 2 * cols - a * cols;
      p.part[(a * p.parts + g0 + gi) * p.ldp + c] = pacc0[(gi * 2 + a) * V * slots + norm_phased_at<T>(slots, 0, 0, (int)c)];
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = j0 + (int64_t)k * TPR * V;  // a multiple of 4: float4 pieces, each inside ldp
#pragma unroll
      for (int q = 0; q < V / 4; ++q)
        if (j + 4 * q < p.cols) {
          float *pg = p.part + group * p.ldp + j + 4 * q, *pb = pg + p.parts * p.ldp;
          if constexpr (kWide) {
            *reinterpret_cast<float4 *>(pg) = acc(0, k, q);
            *reinterpret_cast<float4 *>(pb) = acc(1, k, q);
          } else {
            *reinterpret_cast<float4 *>(pg) = make_float4(ag[k][4 * q], ag[k][4 * q + 1], ag[k][4 * q + 2], ag[k][4 * q + 3]);
            *reinterpret_cast<float4 *>(pb) = make_float4(ab[k][4 * q], ab[k][4 * q + 1], ab[k][4 * q + 2], ab[k][4 * q + 3]);
          }
        }
    }
  }
}

// The backward's terms of V elements at column c of a row with (mean, rstd) = (mu, rs): gg = dz * gamma
// and xhat.
template <int V, class T>
__device__ __forceinline__ void norm_bwd_terms(const norm_bwd_params<T> &p, int64_t c, float mu, float rs, const float (&d)[V],
                                               const float (&xv)[V], float (&gg)[V], float (&xh)[V]) {
  const bool act = p.act != GPUOPS_ACT_NONE;
  float g[V], b[V];
  load_affine<V>(p.gamma, c, p.cols, p.vec, 1.0f, g);
  load_affine<V>(act ? p.beta : nullptr, c, p.cols, p.vec, 0.0f, b);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    xh[i] = (xv[i] - mu) * rs;
    gg[i] = norm_dz<sizeof(T) == 2>(d[i], xh[i], g[i], b[i], p.act) * g[i];
  }
}

// ONLINE backward (rows too long to hold): a block per row, sweep_row2 over dy and x twice (the
// two sums, then dx). dgamma and dbeta come from norm_bwd_columns, run first (dx may overwrite
// dy or x).
template <class T> __global__ void __launch_bounds__(1024) norm_bwd_stream(norm_bwd_params<T> p) {
  constexpr int V = 16 / sizeof(T), U = stream_u<T>() / 2;
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T *dy = p.dy + r * p.cols, *x = p.x + r * p.cols;
    const float mu = p.rms ? 0.0f : p.mean[r], rs = p.rstd[r];
    float sa = 0.0f, sb = 0.0f;
    sweep_row2<V, U>(dy, x, p.cols, p.vec, 0.0f, [&](int64_t j, int64_t step, const float (&d)[U][V], const float (&xv)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < p.cols) {
          float gg[V], xh[V];
          norm_bwd_terms(p, j + u * step, mu, rs, d[u], xv[u], gg, xh);
#pragma unroll
          for (int i = 0; i < V; ++i) sa += gg[i], sb = fmaf(gg[i], xh[i], sb);
        }
    });
    const float ma = p.rms ? 0.0f : block_reduce(sa, plus(), 0.0f, scratch) * p.inv_cols;
    const float mb = block_reduce(sb, plus(), 0.0f, scratch) * p.inv_cols;
    sweep_row2<V, U>(dy, x, p.cols, p.vec, 0.0f, [&](int64_t j, int64_t step, const float (&d)[U][V], const float (&xv)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < p.cols) {
          float gg[V], xh[V], o[V];
          norm_bwd_terms(p, j + u * step, mu, rs, d[u], xv[u], gg, xh);
#pragma unroll
          for (int i = 0; i < V; ++i) o[i] = rs * (gg[i] - ma - xh[i] * mb);
          store_cols<V>(p.dx + r * p.cols, j + u * step, p.cols, p.vec, o);
        }
    });
  }
}

// dgamma and dbeta partials by columns (the ONLINE backward): block (x, y) sums rows
// [y * chunk, (y + 1) * chunk) for 32 x V columns, lane l the V columns at (x * 32 + l) * V, warp w
// the rows w, w + 8, ... of the chunk; the 8 warps' sums added in order through shared memory, into
// part[y][c]. dy and x are read once more: what the on-chip kernels avoid.
template <class T> __global__ void __launch_bounds__(kBlock) norm_bwd_columns(norm_bwd_params<T> p, int64_t chunk) {
  constexpr int V = 16 / sizeof(T), kWarps = kBlock / 32;
  __shared__ float tile[2][kWarps][32 * V];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t c = ((int64_t)blockIdx.x * 32 + lane) * V, r0 = (int64_t)blockIdx.y * chunk;
  const int64_t r1 = r0 + chunk < p.rows ? r0 + chunk : p.rows;
  float ag[V] = {}, ab[V] = {}, g[V], b[V];
  const bool act = p.act != GPUOPS_ACT_NONE;
  if (c < p.cols) {
    load_affine<V>(p.gamma, c, p.cols, p.vec, 1.0f, g);
    load_affine<V>(p.beta, c, p.cols, p.vec, 0.0f, b);
    for (int64_t r = r0 + w; r < r1; r += kWarps) {
      float d[V], xv[V];
      load_cols<V>(p.dy + r * p.cols, c, p.cols, p.vec, 0.0f, d);
      load_cols<V>(p.x + r * p.cols, c, p.cols, p.vec, 0.0f, xv);
      const float mu = p.rms ? 0.0f : p.mean[r], rs = p.rstd[r];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float xhat = (xv[i] - mu) * rs, dz = norm_dz<sizeof(T) == 2>(d[i], xhat, g[i], act ? b[i] : 0.0f, p.act);
        ag[i] = fmaf(dz, xhat, ag[i]);
        ab[i] += dz;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i) tile[0][w][lane * V + i] = ag[i], tile[1][w][lane * V + i] = ab[i];
  __syncthreads();
  // Thread (a, k): gradient a, column k of the block's 32 x V: the warps' sums in order.
  for (int e = threadIdx.x; e < 2 * 32 * V; e += kBlock) {
    const int a = e / (32 * V), k = e % (32 * V);
    const int64_t col = (int64_t)blockIdx.x * 32 * V + k;
    float s = 0.0f;
#pragma unroll
    for (int q = 0; q < kWarps; ++q) s += tile[a][q][k];
    if (col < p.cols) p.part[((int64_t)a * p.parts + blockIdx.y) * p.ldp + col] = s;
  }
}

// The partials' sum in a fixed order: block (x, y, z) adds rows [y * 64, y * 64 + 64) of gradient
// z's partials for 128 columns (lane l: a float4 of columns, warp w: every 8th row), then the 8
// warps' sums in order through shared memory; into `next` (one row per y, when more than one y)
// or, rounded, into the gradient (dg for z = 0 where it exists, else db).
template <class T>
__global__ void __launch_bounds__(kBlock) norm_bwd_finish(T *dg, T *db, float *next, const float *part, int64_t parts, int64_t ldp, int64_t cols) {
  constexpr int kWarps = kBlock / 32;
  __shared__ float4 tile[kWarps][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, z = blockIdx.z + (dg ? 0 : 1);
  const int64_t c = ((int64_t)blockIdx.x * 32 + lane) * 4, p0 = (int64_t)blockIdx.y * GPUOPS__NORM_FINISH_ROWS;
  const int64_t p1 = p0 + GPUOPS__NORM_FINISH_ROWS < parts ? p0 + GPUOPS__NORM_FINISH_ROWS : parts;
  const float *src = part + (int64_t)z * parts * ldp;
  float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (c + 4 <= cols) {
#pragma unroll 8
    for (int64_t q = p0 + w; q < p1; q += kWarps) {
      const float4 v = *reinterpret_cast<const float4 *>(src + q * ldp + c);
      s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
  } else if (c < cols) {  // the last columns: the row's padding up to ldp is never written, so not read
    for (int64_t q = p0 + w; q < p1; q += kWarps) {
      const float *v = src + q * ldp + c;
      s.x += v[0], s.y += c + 1 < cols ? v[1] : 0.0f, s.z += c + 2 < cols ? v[2] : 0.0f;
    }
  }
  tile[w][lane] = s;
  __syncthreads();
  if (w != 0 || c >= cols) return;
  for (int q = 1; q < kWarps; ++q) {
    const float4 v = tile[q][lane];
    s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
  }
  if (gridDim.y > 1) {
    *reinterpret_cast<float4 *>(next + ((int64_t)z * gridDim.y + blockIdx.y) * ldp + c) = s;
  } else {
    T *out = z == 0 ? dg : db;
    const float o[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (c + k < cols) out[c + k] = from_f32<T>(o[k]);
  }
}

// RoPE. Roofline: 2 x sizeof(T) bytes an element (read once, written once) and a cos and sin per
// pair of a token, shared by its heads: DRAM-bound, the copy rate.
template <class T> struct rope_params {
  T *y;
  const T *x;
  const int64_t *pos;
  const float *cs;     // the cos / sin cache, or NULL
  int64_t tokens, heads, head_dim, rot, ldy, ldx;
  double l2b;          // log2(base)
  bool halves, bwd, vec, copy;  // copy: y != x (the dims past rot_dim are copied)
  // AUTO (rope_plan): chunks and passed-through vectors per head, head groups per token, units per
  // token, elements from a unit's head to its next, threads, a thread's step in tokens
  int64_t chunks, pass, groups, per_token, hstep, threads, step;
};

// f_i = base^(-2i / rot) rounded to f32, computed in double as gpuops.h's CPU form does.
__device__ __forceinline__ float rope_freq(int64_t i, int64_t rot, double l2b) { return (float)exp2(-(double)(2 * i) / (double)rot * l2b); }

// cos and sin of pair i at position pos (f: its frequency, when there is no cache); sign of the
// backward's inverse rotation applied to sin. kFast (16-bit outputs): sincos_approx.
template <bool kFast = false, class T> __device__ __forceinline__ void rope_cos_sin(const rope_params<T> &p, int64_t pos, int64_t i, float f, float &c, float &s) {
  if (p.cs) {
    c = __ldg(p.cs + pos * p.rot + i), s = __ldg(p.cs + pos * p.rot + p.rot / 2 + i);
  } else if constexpr (kFast) {
    sincos_approx((float)pos * f, s, c);
  } else {
    sincosf((float)pos * f, &s, &c);
  }
  if (p.bwd) s = -s;
}

// The dims of pair i (i < rot / 2) within a head.
__device__ __forceinline__ int64_t rope_dim_a(bool halves, int64_t i, int64_t rot) { return halves ? i : 2 * i; }
__device__ __forceinline__ int64_t rope_dim_b(bool halves, int64_t i, int64_t rot) { return halves ? i + rot / 2 : 2 * i + 1; }

// NAIVE: one thread per pair (or per passed-through dim) of each (token, head), element accesses,
// the frequency (a double exp2) and the sincos per pair.
template <class T> __global__ void __launch_bounds__(kBlock) rope_naive(rope_params<T> p) {
  const int64_t half = p.rot / 2, per_head = half + (p.copy ? p.head_dim - p.rot : 0), n = p.tokens * p.heads * per_head;
  for (int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += (int64_t)gridDim.x * blockDim.x) {
    const int64_t i = u % per_head, th = u / per_head, h = th % p.heads, t = th / p.heads;
    const T *x = p.x + t * p.ldx + h * p.head_dim;
    T *y = p.y + t * p.ldy + h * p.head_dim;
    if (i >= half) {  // a passed-through dim, copied
      const int64_t d = p.rot + (i - half);
      y[d] = x[d];
      continue;
    }
    const int64_t pos = p.pos ? p.pos[t] : t, da = rope_dim_a(p.halves, i, p.rot), db = rope_dim_b(p.halves, i, p.rot);
    float c, s;
    rope_cos_sin(p, pos, i, p.cs ? 0.0f : rope_freq(i, p.rot, p.l2b), c, s);
    const float a = to_f32(x[da]), b = to_f32(x[db]);
    y[da] = from_f32<T>(a * c - b * s);
    y[db] = from_f32<T>(fmaf(b, c, a * s));
  }
}

// A 16-byte vector of T held as four words; elements k and k + 1 (k even) as f32, and back (16-bit
// types: one word, one conversion instruction each way).
using rope_vec = vec<uint32_t, 4>;
template <class T> __device__ __forceinline__ float2 rope_get(const rope_vec &w, int k) {
  if constexpr (sizeof(T) == 4) return make_float2(__uint_as_float(w.v[k]), __uint_as_float(w.v[k + 1]));
  else return pair_of<T>::unpack(w.v[k / 2]);
}
template <class T> __device__ __forceinline__ void rope_put(rope_vec &w, int k, float a, float b) {
  if constexpr (sizeof(T) == 4) w.v[k] = __float_as_uint(a), w.v[k + 1] = __float_as_uint(b);
  else w.v[k / 2] = pair_of<T>::pack(a, b);
}

// AUTO: a unit is (token t, head group g, chunk c): V pairs of heads g, g + G, ..., g + (H - 1) G
// of token t (G = p.groups), two 16-byte vectors a head. HALVES: pairs c V .. c V + V - 1, dims
// c V and half + c V. ADJACENT with 16-byte accesses: the same dims, each vector V / 2 whole pairs
// (from c V / 2 and half / 2 + c V / 2), so a warp's load or store covers one contiguous span;
// with element accesses (rot any even number): pairs c V .. c V + V - 1, dims 2 c V and
// 2 c V + V. The pairing is a template parameter (kHalves): each build carries only its own index
// math, which 64 registers need. Out of place, a unit (t, g, v) copies passed-through
// vector v of those heads. A thread keeps its (g, c) or (g, v), so its frequencies (a double exp2
// each) are computed once, and walks the tokens p.step apart. Per token it issues its 2 H loads
// first, then computes the cos and sin of each pair once for its H heads (16-bit outputs:
// sincos_approx; f32: sincosf, which the f32 tolerance needs), rotates and stores. Roofline:
// 2 x sizeof(T) bytes an element and ~10 instructions a pair: DRAM-bound, its rate set by the
// bytes in flight per SM. H = 4: 128 bytes of loads a thread, 1024 threads an SM (<= 64
// registers, 4 blocks): 128 KB an SM.
template <class T, int H, bool kVec, bool kHalves> __global__ void __launch_bounds__(kBlock, 4) rope_vectorized(rope_params<T> p) {
  constexpr int V = 16 / sizeof(T);
  constexpr bool kFast = sizeof(T) == 2;
  const int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (u >= p.threads) return;
  const int64_t r = u % p.per_token, g = r / (p.chunks + p.pass), w = r - g * (p.chunks + p.pass), half = p.rot / 2, hstep = p.hstep;
  int nh = (int)((p.heads - g + p.groups - 1) / p.groups);  // heads in the group
  nh = nh < H ? nh : H;
  const T *x0 = p.x + g * p.head_dim;
  T *y0 = p.y + g * p.head_dim;
  if (w >= p.chunks) {  // passed-through vector w - chunks of the group's heads: dims d .. d + V - 1
    const int64_t d = p.rot + (w - p.chunks) * V;
    for (int64_t t = u / p.per_token; t < p.tokens; t += p.step) {
      const T *x = x0 + t * p.ldx + d;
      T *y = y0 + t * p.ldy + d;
      if constexpr (kVec) {
        vec<T, V> a[H];
#pragma unroll
        for (int m = 0; m < H; ++m)
          if (m < nh) a[m] = *reinterpret_cast<const vec<T, V> *>(x + m * hstep);
#pragma unroll
        for (int m = 0; m < H; ++m)
          if (m < nh) store_vec(y + m * hstep, a[m]);
      } else {
        for (int m = 0; m < nh; ++m)
          for (int k = 0; k < V && d + k < p.head_dim; ++k) y[m * hstep + k] = x[m * hstep + k];
      }
    }
    return;
  }
  const int c = (int)w;
  const int64_t da = kHalves || kVec ? c * V : 2 * c * V, db = kHalves || kVec ? half + c * V : 2 * c * V + V;
  // element k of vector a / b lies in the rotated dims (element accesses only)
  auto in_a = [&](int k) { return kHalves ? c * V + k < half : da + k < p.rot; };
  auto in_b = [&](int k) { return kHalves ? c * V + k < half : db + k < p.rot; };
  // The pair of frequency slot j: HALVES c V + j (a[j], b[j]); ADJACENT, j < V / 2: da / 2 + j
  // (a[2 j], a[2 j + 1]), else db / 2 + j - V / 2 (b[2 j - V], b[2 j - V + 1]). With 16-byte
  // accesses every pair is rotated (rot % (2 V) == 0).
  auto pair = [&](int j) { return kHalves ? c * V + j : (int)((j < V / 2 ? da : db - V) / 2) + j; };
  auto rotated = [&](int j) { return kVec || pair(j) < half; };
  __shared__ float fsh[V][kBlock];  // the thread's frequencies (in shared memory: registers are short)
  auto f = [&](int j) { return fsh[j][threadIdx.x]; };
#pragma unroll
  for (int j = 0; j < V; ++j) fsh[j][threadIdx.x] = !p.cs && rotated(j) ? rope_freq(pair(j), p.rot, p.l2b) : 0.0f;
  for (int64_t t = u / p.per_token; t < p.tokens; t += p.step) {
    const T *x = x0 + t * p.ldx;
    T *y = y0 + t * p.ldy;
    rope_vec a[H], b[H];
    if constexpr (kVec) {
#pragma unroll
      for (int m = 0; m < H; ++m)
        if (m < nh) {
          a[m] = *reinterpret_cast<const rope_vec *>(x + m * hstep + da);
          b[m] = *reinterpret_cast<const rope_vec *>(x + m * hstep + db);
        }
    } else {
#pragma unroll
      for (int m = 0; m < H; ++m)
        if (m < nh) {
          const T *xm = x + m * hstep;
#pragma unroll
          for (int k = 0; k < V; k += 2) {
            rope_put<T>(a[m], k, in_a(k) ? to_f32(xm[da + k]) : 0.0f, in_a(k + 1) ? to_f32(xm[da + k + 1]) : 0.0f);
            rope_put<T>(b[m], k, in_b(k) ? to_f32(xm[db + k]) : 0.0f, in_b(k + 1) ? to_f32(xm[db + k + 1]) : 0.0f);
          }
        }
    }
    const int64_t pos = p.pos ? __ldg(p.pos + t) : t;
    // Elements k, k + 1 of each vector: HALVES slots k (a[k], b[k]) and k + 1 (a[k + 1], b[k + 1]);
    // ADJACENT slots k / 2 (a[k], a[k + 1]) and V / 2 + k / 2 (b[k], b[k + 1]).
#pragma unroll
    for (int k = 0; k < V; k += 2) {
      const int j0 = kHalves ? k : k / 2, j1 = kHalves ? k + 1 : V / 2 + k / 2;
      float c0 = 1.0f, s0 = 0.0f, c1 = 1.0f, s1 = 0.0f;
      if (rotated(j0)) rope_cos_sin<kFast>(p, pos, pair(j0), f(j0), c0, s0);
      if (rotated(j1)) rope_cos_sin<kFast>(p, pos, pair(j1), f(j1), c1, s1);
#pragma unroll
      for (int m = 0; m < H; ++m)
        if (m < nh) {  // (unguarded, the 16-bit builds spill at 64 registers)
          const float2 va = rope_get<T>(a[m], k), vb = rope_get<T>(b[m], k);
          if constexpr (kHalves) {
            rope_put<T>(a[m], k, va.x * c0 - vb.x * s0, va.y * c1 - vb.y * s1);
            rope_put<T>(b[m], k, fmaf(vb.x, c0, va.x * s0), fmaf(vb.y, c1, va.y * s1));
          } else {
            rope_put<T>(a[m], k, va.x * c0 - va.y * s0, fmaf(va.y, c0, va.x * s0));
            rope_put<T>(b[m], k, vb.x * c1 - vb.y * s1, fmaf(vb.y, c1, vb.x * s1));
          }
        }
    }
#pragma unroll
    for (int m = 0; m < H; ++m)
      if (m < nh) {
        T *ym = y + m * hstep;
        if constexpr (kVec) {
          store_vec(ym + da, a[m]);
          store_vec(ym + db, b[m]);
        } else {
#pragma unroll
          for (int k = 0; k < V; k += 2) {
            const float2 va = rope_get<T>(a[m], k), vb = rope_get<T>(b[m], k);
            if (in_a(k)) ym[da + k] = from_f32<T>(va.x);
            if (in_a(k + 1)) ym[da + k + 1] = from_f32<T>(va.y);
            if (in_b(k)) ym[db + k] = from_f32<T>(vb.x);
            if (in_b(k + 1)) ym[db + k + 1] = from_f32<T>(vb.y);
          }
        }
      }
  }
}

// ---- 8.4 Dispatch policy -----------------------------------------------------------------------
// Forward (ROW_REGISTERS, AUTO): the smallest (threads per row, vectors per thread) that holds the
// row: a warp with 2, 4 or 8 vectors, 128 threads (two rows to a block) with 4 or 8, a block of 256
// with 8, clusters of up to kNormMaxCluster blocks of 256 x 8 (compute capability 9.0+), else a block
// of 1024 x 4; longer rows, and rows that cannot take 128-bit accesses, stream (ONLINE). Each step
// at most doubles the capacity, so a thread holds more than half its vectors (the loads in flight
// per thread are what sets the rate: a row of 4096 bf16 on 256 x 4 left 2 of the 4 empty; bf16 rows
// of 512 on a warp's 4 measured 0.90x copy, on 2 0.94x: tools/tune_norm.cu, H100). Two rows a block
// of 128 x 8 took the place of one on 256 x 4 (f32 rows of 2049-4096, 16-bit of 4097-8192): the
// same registers a thread, twice the vectors (tools/tune_norm.cu, H200, LayerNorm: f32 32768 x 4096
// 0.911 -> 0.976x copy, bf16 16384 x 8192 0.742 -> 0.918x; at 2^24 and 2^25 elements 10-17%).
// AUTO's rows at a phase (norm_fwd_phased) take a warp, 64 or 128 threads with 5 vectors, 128 x 10,
// then 256 x 8 and 1024 x 4: a row of 2^k + 1 columns spans 2^k + V view columns, which a
// power of two of vectors would hold only half full. Each in two
// builds: with the activations' code (layernorm_gelu) and without (its registers would cost the
// plain norms occupancy). Backward:
// kNormBwdE elements per thread and 32, 64, 128, 256, 512 or 1024 threads per row (each step
// doubles the capacity, so every thread holds a vector); past 1024 x kNormBwdE columns, blocks of
// 1024, one a row or a cluster of up to 8, else streaming. Without the activation these wide rows
// keep the dgamma and dbeta partials in shared memory (norm_bwd_on_chip's kWide: 64 KB a block for
// f32, 128 KB for 16-bit types), which leaves the 64 registers of a 1024-thread block room for the
// next row's dy and x, and 16-bit types take kNormBwdWideE (two vectors a thread): a row of 16384
// on one block instead of a cluster of 2, 65536 on 4 instead of 8, half the barriers and cluster
// exchanges per element. H100, backward x copy: bf16 rows of 16384 0.67 -> 0.82 (two vectors) ->
// 0.88 (kWide), 65536 0.48 -> 0.64 -> 0.68; f32 16384 0.86 -> 0.95, 65536 0.75 -> 0.85. With the
// activation's dz kept between the passes the registers do not fit. Staging the next row in shared
// memory by cp.async instead, the partials still in registers, lost 0.03-0.09x (more spills).
constexpr int kNormMaxCluster = 8;
constexpr int kNormBwdE = 8;
constexpr int kNormBwdWideE = 16;
constexpr int64_t kNormWideStreamCols = 16384;  // streaming: 1024 threads per row from here
constexpr int kRopeHeads = 4;      // RoPE AUTO: heads per unit (loaded together; cos and sin shared by them)
constexpr int kRopeHeadsElem = 2;  // the same with element accesses (each element its own load)

// RoPE AUTO's work split (p's shape, copy and vec set): its fields of rope_params, and the grid.
// Units per token: groups x (chunks + pass); the threads are the largest multiple of that within
// full_blocks (a full device; at least one token's units, at most every unit), so each thread
// keeps its unit of the token and steps p.step tokens.
template <class T, int H> inline int64_t rope_plan(rope_params<T> &p, int64_t full_blocks) {
  constexpr int V = 16 / sizeof(T);
  p.chunks = p.rot > 0 ? (p.rot / 2 + V - 1) / V : 0;
  p.pass = p.copy ? (p.head_dim - p.rot + V - 1) / V : 0;
  p.groups = (p.heads + H - 1) / H;
  p.per_token = std::max<int64_t>(1, p.groups * (p.chunks + p.pass)), p.hstep = p.groups * p.head_dim;
  p.step = std::min(p.tokens, std::max<int64_t>(1, full_blocks * kBlock / p.per_token));
  p.threads = p.chunks + p.pass > 0 ? p.step * p.per_token : 0;  // none: in place with rot_dim 0
  return (p.threads + kBlock - 1) / kBlock;
}

}  // namespace gpuops

// ---- 8.5 Launchers and C entry points (implementation only) ------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// Every pointer of a call 16-byte aligned and cols a multiple of V: 128-bit accesses.
inline bool norm_vec(std::initializer_list<const void *> ptrs, int64_t cols, int V) {
  uintptr_t bits = 0;
  for (const void *q : ptrs) bits |= (uintptr_t)q;
  return bits % 16 == 0 && cols % V == 0;
}

// Why ROW_REGISTERS cannot run a call: only the pointers' alignment (GPUOPS_ERR_MISALIGNED), or the
// row's length (not a multiple of the vector, or longer than the kernels hold).
inline gpuops_status norm_rows_refusal(bool vec, int64_t cols, int V) {
  return !vec && cols % V == 0 ? GPUOPS_ERR_MISALIGNED : GPUOPS_ERR_UNSUPPORTED;
}

// One elementwise step of UNFUSED over rows x cols: out = a + b, act(a), or (kMapDz) dy * act'(z).
template <class T>
gpuops_status norm_map_launch(int op, int act, T *out, const T *a, const T *b, int64_t rows, int64_t cols, cudaStream_t s,
                              const T *gamma = nullptr, const T *beta = nullptr, const float *mean = nullptr, const float *rstd = nullptr) {
  const bool vec = norm_vec({out, a, b, gamma, beta}, op == kMapDz ? cols : 0, 16 / sizeof(T));
  const norm_map_params<T> m = {out, a, b, gamma, beta, mean, rstd, rows * cols, divisor((uint64_t)cols), op, act, vec};
  norm_map<T><<<(unsigned)full_grid<norm_map<T>>(), kBlock, 0, s>>>(m);
  return launch_status();
}

// Whether `kernel` may have `smem` bytes of dynamic shared memory here (set on every call where it
// has any: the attribute is per device). A refusal is an answer: the caller takes another kernel.
template <class K> bool norm_allow_smem(K kernel, size_t smem) {
  if (smem == 0) return true;
  if (current_device().smem_optin < smem) return false;
  const bool ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) == cudaSuccess;
  (void)cudaGetLastError();
  return ok;
}

// The forward on chip (ROW_REGISTERS): false in *fits when no configuration holds the row.
template <class T, bool kAct> gpuops_status norm_fwd_rows(norm_params<T> p, cudaStream_t s, bool *fits) {
  constexpr int V = 16 / sizeof(T);
  static std::atomic<int> known[kNormMaxCluster + 1];
  const int64_t cols = p.cols;
  *fits = p.vec;
  if (!p.vec) return GPUOPS_OK;
  if (cols <= 32 * 2 * V) return launch_rows(norm_fwd_on_chip<T, 32, 2, kAct>, 256, 8, p, s);
  if (cols <= 32 * 4 * V) return launch_rows(norm_fwd_on_chip<T, 32, 4, kAct>, 256, 8, p, s);
  if (cols <= 32 * 8 * V) return launch_rows(norm_fwd_on_chip<T, 32, 8, kAct>, 256, 8, p, s);
  if (cols <= 128 * 4 * V) return launch_rows(norm_fwd_on_chip<T, 128, 4, kAct>, 256, 2, p, s);
  if (cols <= 128 * 8 * V) return launch_rows(norm_fwd_on_chip<T, 128, 8, kAct>, 256, 2, p, s);
  if (cols <= 256 * 8 * V) return launch_rows(norm_fwd_on_chip<T, 256, 8, kAct>, 256, 1, p, s);
  // Clusters of 3 or more: norm_fwd_on_chip's kStage (gamma and beta, where given, staged in shared
  // memory; f32 without a residual rolls the next row in) where the device gives a block that much
  // shared memory, else gamma and beta read in every row. A cluster of 2 leaves an SM's blocks at
  // most two slices of them (128 KB of f32), which L1 holds: H100, f32 8192 x 16384, 391 us with
  // gamma and beta against 388 without; staged there, LayerNorm did not move and LN+GELU lost 0.87
  // -> 0.76x copy.
  const int64_t C = (cols + 256 * 8 * V - 1) / (256 * 8 * V);
  const int arrays = (p.gamma != nullptr) + (p.beta != nullptr);
  const size_t stage = norm_fwd_stage_bytes<256, 8>(arrays);
  const auto staged = norm_fwd_on_chip<T, 256, 8, kAct, true>;
  static std::atomic<int> known_staged[3][kNormMaxCluster + 1];  // by arrays
  int resident = C >= 3 && C <= kNormMaxCluster && norm_allow_smem(staged, norm_fwd_stage_bytes<256, 8>(2))
                     ? row_clusters(staged, 256, (int)C, known_staged[arrays], stage)
                     : 0;
  if (resident > 0) {
    p.cluster = (int)C;
    return launch_rows(staged, 256, 1, p, s, resident, stage);
  }
  resident = C <= kNormMaxCluster ? row_clusters(norm_fwd_on_chip<T, 256, 8, kAct>, 256, (int)C, known) : 0;
  if (resident > 0) {
    p.cluster = (int)C;
    return launch_rows(norm_fwd_on_chip<T, 256, 8, kAct>, 256, 1, p, s, resident);
  }
  if (cols <= 1024 * 4 * V) return launch_rows(norm_fwd_on_chip<T, 1024, 4, kAct>, 1024, 1, p, s);
  *fits = false;
  return GPUOPS_OK;
}

// The forward on chip over row views (norm_fwd_on_chip's kPhased: AUTO's choice where the rows are
// not whole vectors but x, residual, h and y share a phase), sized for ext = cols + V - 1 view
// columns; no clusters (rows past a block of 1024 x 4 vectors stream). A grid of what is resident:
// each block stages gamma and beta once. False in *fits where no form holds the row or the device
// lacks the shared memory.
template <class T, bool kAct> gpuops_status norm_fwd_phased(norm_params<T> p, cudaStream_t s, bool *fits) {
  constexpr int V = 16 / sizeof(T);
  const int64_t ext = p.cols + V - 1;
  const size_t smem = p.gamma || p.beta ? norm_phased_stage_bytes<T>(p.cols) : 0;
  *fits = true;
  auto go = [&](auto kernel, int threads, int rpb) {
    if (smem > 48 * 1024 && !norm_allow_smem(kernel, smem)) {
      *fits = false;
      return GPUOPS_OK;
    }
    const int64_t groups = (p.rows + rpb - 1) / rpb;
    const int64_t blocks = std::min(groups, resident_blocks(kernel, threads, smem));
    kernel<<<(unsigned)blocks, threads, smem, s>>>(p);
    return launch_status();
  };
  if (ext <= 32 * 5 * V) return go(norm_fwd_on_chip<T, 32, 5, kAct, false, true>, 256, 8);
  if (ext <= 64 * 5 * V) return go(norm_fwd_on_chip<T, 64, 5, kAct, false, true>, 256, 4);
  if (ext <= 128 * 5 * V) return go(norm_fwd_on_chip<T, 128, 5, kAct, false, true>, 256, 2);
  if (ext <= 128 * 10 * V) return go(norm_fwd_on_chip<T, 128, 10, kAct, false, true>, 256, 2);
  if (ext <= 256 * 8 * V) return go(norm_fwd_on_chip<T, 256, 8, kAct, false, true>, 256, 1);
  if (ext <= 1024 * 4 * V) return go(norm_fwd_on_chip<T, 1024, 4, kAct, false, true>, 1024, 1);
  *fits = false;
  return GPUOPS_OK;
}

template <class T> gpuops_status norm_fwd_typed(norm_params<T> p, gpuops_algo algo, cudaStream_t s) {
  const unsigned stream_grid = row_grid(p.cols >= kNormWideStreamCols ? 1024 : 256, p.rows);
  switch (algo) {
  case GPUOPS_ALGO_BLOCK_PER_ROW:
    norm_block_per_row<T><<<row_grid(kBlock, p.rows), kBlock, 0, s>>>(p);
    return launch_status();
  case GPUOPS_ALGO_WARP_PER_ROW:
    norm_warp_per_row<T><<<row_grid(kBlock, (p.rows + 7) / 8), kBlock, 0, s>>>(p);
    return launch_status();
  case GPUOPS_ALGO_ONLINE:
    norm_fwd_stream<T><<<stream_grid, p.cols >= kNormWideStreamCols ? 1024 : 256, 0, s>>>(p);
    return launch_status();
  default: {
    bool fits = false;
    const bool act = p.act != GPUOPS_ACT_NONE;
    const bool phased = algo == GPUOPS_ALGO_AUTO && !p.vec && one_phase({p.x, p.res, p.y, p.h});
    const gpuops_status st = phased ? (act ? norm_fwd_phased<T, true>(p, s, &fits) : norm_fwd_phased<T, false>(p, s, &fits))
                                    : (act ? norm_fwd_rows<T, true>(p, s, &fits) : norm_fwd_rows<T, false>(p, s, &fits));
    if (fits || st != GPUOPS_OK) return st;
    if (algo == GPUOPS_ALGO_ROW_REGISTERS) return norm_rows_refusal(p.vec, p.cols, 16 / (int)sizeof(T));
    return norm_fwd_typed(p, GPUOPS_ALGO_ONLINE, s);
  }
  }
}

// The backward on chip: TPR threads per row, G groups (at most the workspace's partials and what is
// resident at once).
// kPhased: GPUOPS_ERR_UNSUPPORTED (nothing launched) where the device lacks the shared memory.
template <class T, int TPR, bool kAct, int N = kNormBwdE * (int)sizeof(T) / 16, bool kWide = false, bool kPhased = false>
gpuops_status norm_bwd_launch_rows(norm_bwd_params<T> p, int64_t max_parts, cudaStream_t s, int64_t *parts, int resident_clusters = 0) {
  constexpr int threads = block_threads<TPR>(), RPB = threads / TPR;
  const size_t smem = kPhased ? norm_bwd_phased_bytes<T>(p.cols, RPB) : norm_bwd_acc_bytes<T, N, kWide>();
  const auto kernel = norm_bwd_on_chip<T, TPR, N, kAct, kWide, kPhased>;
  if (kPhased && smem > 48 * 1024 && !norm_allow_smem(kernel, smem)) return GPUOPS_ERR_UNSUPPORTED;  // as norm_fwd_phased: the attribute only past the default
  int64_t blocks;
  if (p.cluster > 1) {
    blocks = std::min(std::min((int64_t)resident_clusters, max_parts), p.rows) * p.cluster;
  } else {
    blocks = std::min(std::min(resident_blocks(kernel, threads, smem), max_parts / RPB), (p.rows + RPB - 1) / RPB);
    if (blocks < 1) blocks = 1;
  }
  p.parts = *parts = blocks / p.cluster * RPB;
  if (p.cluster == 1) {
    kernel<<<(unsigned)blocks, threads, smem, s>>>(p);
    return launch_status();
  }
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)blocks, threads, p.cluster, s, smem);
  const gpuops_status st = cuda_call_status(cudaLaunchKernelEx(&cfg, kernel, p));
  if (st != GPUOPS_OK) return st;
  return launch_status();
}

// dgamma and dbeta from p.parts rows of partials (levels of 64 rows until one is left).
template <class T> gpuops_status norm_bwd_finish_launch(T *dg, T *db, float *part, int64_t parts, int64_t ldp, int64_t cols, cudaStream_t s) {
  float *next = part + 2 * parts * ldp;  // the level after this one, then the other buffer in turn
  float *bufs[2] = {part, next};
  int b = 0;
  for (;;) {
    const int64_t ys = (parts + GPUOPS__NORM_FINISH_ROWS - 1) / GPUOPS__NORM_FINISH_ROWS;
    const dim3 grid((unsigned)((cols + 127) / 128), (unsigned)ys, (dg && db) ? 2u : 1u);
    norm_bwd_finish<T><<<grid, kBlock, 0, s>>>(dg, db, bufs[1 - b], bufs[b], parts, ldp, cols);
    const gpuops_status st = launch_status();
    if (st != GPUOPS_OK || ys == 1) return st;
    parts = ys, b = 1 - b;
  }
}

// The backward on chip: false in *done when no configuration holds the row.
template <class T, bool kAct> gpuops_status norm_bwd_rows(norm_bwd_params<T> p, int64_t max_parts, cudaStream_t s, int64_t *parts, bool *done) {
  constexpr int V = 16 / sizeof(T), E = kNormBwdE;
  static std::atomic<int> known[kNormMaxCluster + 1];
  const int64_t cols = p.cols;
  *done = true;
  if (cols <= 32 * E) return norm_bwd_launch_rows<T, 32, kAct>(p, max_parts, s, parts);
  if (cols <= 64 * E) return norm_bwd_launch_rows<T, 64, kAct>(p, max_parts, s, parts);
  if (cols <= 128 * E) return norm_bwd_launch_rows<T, 128, kAct>(p, max_parts, s, parts);
  if (cols <= 256 * E) return norm_bwd_launch_rows<T, 256, kAct>(p, max_parts, s, parts);
  if (cols <= 512 * E) return norm_bwd_launch_rows<T, 512, kAct>(p, max_parts, s, parts);
  if (cols <= 1024 * E) return norm_bwd_launch_rows<T, 1024, kAct>(p, max_parts, s, parts);
  // Wider rows: blocks of 1024, one a row or a cluster of C, W vectors a thread (kNormBwdWideE),
  // without the activation kWide (its shared memory allowed first, or, where the device has too
  // little, streaming).
  constexpr bool kWide = !kAct;
  constexpr int W = (sizeof(T) == 2 && !kAct ? kNormBwdWideE : E) / V;
  *done = norm_allow_smem(norm_bwd_on_chip<T, 1024, W, kAct, kWide>, norm_bwd_acc_bytes<T, W, kWide>());
  if (!*done) return GPUOPS_OK;
  const int64_t C = (cols + 1024 * W * V - 1) / (1024 * W * V);
  if (C == 1) return norm_bwd_launch_rows<T, 1024, kAct, W, kWide>(p, max_parts, s, parts);
  const int res = C <= kNormMaxCluster ? row_clusters(norm_bwd_on_chip<T, 1024, W, kAct, kWide>, 1024, (int)C, known, norm_bwd_acc_bytes<T, W, kWide>()) : 0;
  if (res > 0) {
    p.cluster = (int)C;
    return norm_bwd_launch_rows<T, 1024, kAct, W, kWide>(p, max_parts, s, parts, res);
  }
  *done = false;
  return GPUOPS_OK;
}

// The backward on chip over row views (norm_bwd_on_chip's kPhased: AUTO's choice where the rows are
// not whole vectors but dy, x and dx share a phase), sized for ext = cols + V - 1 view columns, up to
// a block of 1024 threads with 16 elements each where the device gives it the shared memory (12
// bytes a column in 16-bit types, 16 in f32: 227 KB holds about 19000 and 14500 columns); false in
// *done past that. A row just past a power of two (4097) would leave half of a block idle and one
// row in flight a SM (a block of 1024); without the activation the steps of 16 elements a thread
// fill such rows with half the threads, twice the blocks a SM. (With the activation 16 elements
// spill: f32 408 bytes at the 64 registers of a thread in a block of 1024.) Those forms spill too
// (f32 512 x 16: 64 bytes); given 128 registers, one block of 512 a SM and no spills, they ran
// slower (H200, f32 32767 x 4097 0.66 -> 0.58x copy, bf16 0.26 -> 0.17x): the second row in flight
// is worth more.
template <class T, bool kAct> gpuops_status norm_bwd_phased(norm_bwd_params<T> p, int64_t max_parts, cudaStream_t s, int64_t *parts, bool *done) {
  constexpr int V = 16 / sizeof(T), E = kNormBwdE, N = E / V, W = kAct ? 1 : 2;  // W: past 256 threads, 16 elements without the activation
  const int64_t ext = p.cols + V - 1;
  gpuops_status st = GPUOPS_ERR_UNSUPPORTED;
  if (ext <= 32 * E) st = norm_bwd_launch_rows<T, 32, kAct, N, false, true>(p, max_parts, s, parts);
  else if (ext <= 64 * E) st = norm_bwd_launch_rows<T, 64, kAct, N, false, true>(p, max_parts, s, parts);
  else if (ext <= 128 * E) st = norm_bwd_launch_rows<T, 128, kAct, N, false, true>(p, max_parts, s, parts);
  else if (ext <= 256 * E) st = norm_bwd_launch_rows<T, 256, kAct, N, false, true>(p, max_parts, s, parts);
  else if (ext <= 256 * W * E) st = norm_bwd_launch_rows<T, 256, kAct, W * N, false, true>(p, max_parts, s, parts);
  else if (ext <= 512 * W * E) st = norm_bwd_launch_rows<T, 512, kAct, W * N, false, true>(p, max_parts, s, parts);
  else if (ext <= 1024 * W * E) st = norm_bwd_launch_rows<T, 1024, kAct, W * N, false, true>(p, max_parts, s, parts);
  *done = st != GPUOPS_ERR_UNSUPPORTED;
  return *done ? st : GPUOPS_OK;
}

template <class T> gpuops_status norm_bwd_typed(norm_bwd_params<T> p, T *dg, T *db, void *ws, gpuops_algo algo, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const int64_t max_parts = gpuops__norm_max_parts(p.rows, p.cols), cols = p.cols;
  if (p.rows == 0) {  // sums over no rows
    gpuops_status st = GPUOPS_OK;
    if (dg) st = cuda_call_status(cudaMemsetAsync(dg, 0, cols * sizeof(T), s));
    if (db && st == GPUOPS_OK) st = cuda_call_status(cudaMemsetAsync(db, 0, cols * sizeof(T), s));
    return st;
  }
  const bool grads = dg || db;
  p.part = grads ? (float *)ws : nullptr;
  gpuops_status st = GPUOPS_OK;
  int64_t parts = 0;
  bool done = false;
  if (algo != GPUOPS_ALGO_ONLINE && (p.vec || (algo == GPUOPS_ALGO_AUTO && one_phase({p.dy, p.x, p.dx})))) {
    const bool act = p.act != GPUOPS_ACT_NONE;
    if (p.vec) st = act ? norm_bwd_rows<T, true>(p, max_parts, s, &parts, &done) : norm_bwd_rows<T, false>(p, max_parts, s, &parts, &done);
    else st = act ? norm_bwd_phased<T, true>(p, max_parts, s, &parts, &done) : norm_bwd_phased<T, false>(p, max_parts, s, &parts, &done);
    if (done) {
      if (st != GPUOPS_OK || !grads) return st;
      return norm_bwd_finish_launch(dg, db, p.part, parts, p.ldp, cols, s);
    }
  }
  if (algo == GPUOPS_ALGO_ROW_REGISTERS) return norm_rows_refusal(p.vec, cols, V);
  // ONLINE: the columns' partials first (dx may overwrite dy or x), then dx.
  if (grads) {
    const int64_t tiles = (cols + 32 * V - 1) / (32 * V);
    int64_t chunks = std::max<int64_t>(1, resident_blocks(norm_bwd_columns<T>, kBlock, 0) * 2 / tiles);
    chunks = std::min(std::min(chunks, max_parts), std::min(p.rows, (int64_t)65535));
    const int64_t chunk = (p.rows + chunks - 1) / chunks;
    chunks = (p.rows + chunk - 1) / chunk;
    p.parts = chunks;
    norm_bwd_columns<T><<<dim3((unsigned)tiles, (unsigned)chunks), kBlock, 0, s>>>(p, chunk);
    st = launch_status();
    if (st == GPUOPS_OK) st = norm_bwd_finish_launch(dg, db, p.part, chunks, p.ldp, cols, s);
    if (st != GPUOPS_OK) return st;
  }
  const int threads = cols >= kNormWideStreamCols ? 1024 : 256;
  norm_bwd_stream<T><<<row_grid(threads, p.rows), threads, 0, s>>>(p);
  return launch_status();
}

template <class T> gpuops_status norm_launch_typed(const gpuops__norm_args &a) {
  constexpr int V = 16 / sizeof(T);
  const gpuops__norm_props pr = gpuops__norm_prop(a.op);
  const cudaStream_t s = a.stream;
  if (!pr.bwd) {
    norm_params<T> p = {};
    p.y = (T *)a.y, p.h = (T *)a.h, p.mean = a.mean, p.rstd = a.rstd, p.x = (const T *)a.x, p.res = (const T *)a.res;
    p.gamma = (const T *)a.gamma, p.beta = pr.rms ? nullptr : (const T *)a.beta;
    p.rows = a.rows, p.cols = a.cols, p.eps = a.eps, p.act = a.act, p.rms = pr.rms != 0, p.cluster = 1;
    p.vec = norm_vec({a.y, a.h, a.x, a.res, a.gamma, a.beta}, a.cols, V);
    if (a.algo != GPUOPS_ALGO_UNFUSED) return norm_fwd_typed(p, a.algo, s);
    // UNFUSED: h = x + residual, then the norm of h; or the layernorm, then GELU in place.
    if (pr.res) {
      const gpuops_status st = norm_map_launch<T>(kMapAdd, 0, p.h, p.x, p.res, p.rows, p.cols, s);
      if (st != GPUOPS_OK) return st;
      p.x = p.h, p.res = nullptr, p.h = nullptr;
      p.vec = norm_vec({p.y, p.x, p.gamma, p.beta}, a.cols, V);
      return norm_fwd_typed(p, GPUOPS_ALGO_AUTO, s);
    }
    const int act = p.act;
    p.act = GPUOPS_ACT_NONE;
    const gpuops_status st = norm_fwd_typed(p, GPUOPS_ALGO_AUTO, s);
    return st != GPUOPS_OK ? st : norm_map_launch<T>(kMapAct, act, p.y, p.y, nullptr, p.rows, p.cols, s);
  }
  norm_bwd_params<T> p = {};
  p.dx = (T *)a.y, p.dy = (const T *)a.dy, p.x = (const T *)a.x, p.gamma = (const T *)a.gamma, p.beta = (const T *)a.beta;
  p.mean = pr.rms ? nullptr : a.mean_in, p.rstd = a.rstd_in;
  p.rows = a.rows, p.cols = a.cols, p.ldp = gpuops__norm_cols4(a.cols), p.inv_cols = 1.0f / (float)a.cols;
  p.act = a.act, p.rms = pr.rms != 0, p.cluster = 1;
  p.vec = norm_vec({a.y, a.dy, a.x, a.gamma, a.beta}, a.cols, V);
  if (a.algo != GPUOPS_ALGO_UNFUSED) return norm_bwd_typed(p, (T *)a.dgamma, (T *)a.dbeta, a.ws, a.algo, s);
  // UNFUSED layernorm_gelu: dz = dy * gelu'(z) into dx (z from x and the row's statistics), then the
  // layernorm backward of dz in place (dx == dy there).
  const gpuops_status st = a.rows > 0 ? norm_map_launch<T>(kMapDz, p.act, p.dx, p.dy, p.x, p.rows, p.cols, s, p.gamma, p.beta, p.mean, p.rstd)
                                      : GPUOPS_OK;
  if (st != GPUOPS_OK) return st;
  p.dy = p.dx, p.act = GPUOPS_ACT_NONE;
  return norm_bwd_typed(p, (T *)a.dgamma, (T *)a.dbeta, a.ws, GPUOPS_ALGO_AUTO, s);
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__norm_launch(const gpuops__norm_args *p) {
  return gpuops::dispatch_float(p->dt, [&](auto *t) { return gpuops::norm_launch_typed<std::remove_pointer_t<decltype(t)>>(*p); });
}

namespace gpuops {

template <class T, int H, bool kVec, bool kHalves> void rope_vectorized_launch(rope_params<T> &p, cudaStream_t s) {
  const int64_t grid = rope_plan<T, H>(p, full_grid<rope_vectorized<T, H, kVec, kHalves>>());
  if (grid > 0) rope_vectorized<T, H, kVec, kHalves><<<(unsigned)grid, kBlock, 0, s>>>(p);
}

template <class T> gpuops_status rope_launch_typed(const gpuops__rope_args &a) {
  constexpr int V = 16 / sizeof(T);
  rope_params<T> p = {};
  p.y = (T *)a.y, p.x = (const T *)a.x, p.pos = a.positions, p.cs = a.cos_sin;
  p.tokens = a.tokens, p.heads = a.heads, p.head_dim = a.head_dim, p.rot = a.rot_dim, p.ldy = a.ldy, p.ldx = a.ldx;
  p.l2b = log2((double)a.base), p.halves = a.pairing == GPUOPS_ROPE_HALVES, p.bwd = a.bwd != 0, p.copy = a.y != a.x;
  const cudaStream_t s = a.stream;
  if (a.algo == GPUOPS_ALGO_NAIVE || a.rot_dim > INT32_MAX) {  // AUTO indexes a head's pairs in int
    rope_naive<T><<<(unsigned)full_grid<rope_naive<T>>(), kBlock, 0, s>>>(p);
    return launch_status();
  }
  p.vec = norm_vec({a.y, a.x}, 0, 1) && p.rot % (2 * V) == 0 && p.head_dim % V == 0 && p.ldx % V == 0 && p.ldy % V == 0;
  if (p.vec) p.halves ? rope_vectorized_launch<T, kRopeHeads, true, true>(p, s) : rope_vectorized_launch<T, kRopeHeads, true, false>(p, s);
  else p.halves ? rope_vectorized_launch<T, kRopeHeadsElem, false, true>(p, s) : rope_vectorized_launch<T, kRopeHeadsElem, false, false>(p, s);
  return launch_status();
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__rope_launch(const gpuops__rope_args *p) {
  return gpuops::dispatch_float(p->dt, [&](auto *t) { return gpuops::rope_launch_typed<std::remove_pointer_t<decltype(t)>>(*p); });
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_NORM

// ==== 9. Tensor-core matrix multiply and linear layers =========================================
#ifndef GPUOPS_NO_GEMM
#include <mma.h>

// C = epilogue(alpha op(A) op(B) + beta C) with f16 / bf16 operands and f32 accumulation on the
// tensor cores (gpuops.h section 9 has the user's contract).
//
// Roofline: 2 m n k flops on 2 (m k + k n) + sizeof(C) m n bytes. At 4096^3 that is 137 GFLOP on
// 96 MiB (over 1300 flops per byte), so a good kernel is bound by the tensor cores, not DRAM: an
// H100 SXM does about 990 dense bf16 TFLOP/s through wgmma, and cuBLAS reaches about 740 here.
// mma.sync, the pre-Hopper instruction, runs on the same units at roughly two thirds of wgmma's
// rate on Hopper. Below a few hundred rows (decode: m = 1..64) the product turns memory-bound on
// B's bytes, and the target becomes the copy ceiling.
namespace gpuops {

// ---- 9.1 Contract and building blocks: the parameters and the epilogue of every GEMM kernel -----
// Every GEMM kernel of this section (WMMA, MMA_SYNC, WGMMA) takes the same two things:
//   gemm_params       what to multiply: op(A) (m x k) times op(B) (k x n), accumulated in f32.
//   gemm_epilogue<TC> what becomes of each accumulator (the core's, 1.7, which convolution's
//                     WGMMA version shares): a kernel hands it every output as pairs of
//                     horizontally adjacent elements, epi(row, col, acc0, acc1) meaning C(row,
//                     col) and C(row, col + 1), with int64 indices. The epilogue predicates row <
//                     m, col < n and col + 1 < n itself (a kernel may pass tile positions past
//                     the edge), applies alpha, beta C (never reading C when beta == 0), bias,
//                     stores the pre-activation where asked, applies the activation and the
//                     residual, rounds once to TC and stores (one 2-element access where the
//                     address is aligned for it, else element by element).
// A kernel is launched only with m, n, k >= 1 (the launcher handles empty products and k = 0),
// must cover every (row, col) of the m x n output exactly once, and never writes C itself.
// T (the operands' type) is __half or __nv_bfloat16; TC (C's type) is T or float.
struct gemm_params {
  const void *a, *b;     // op(A)(i, p) = a[i lda + p] (trans_a 0) or a[p lda + i] (trans_a 1);
  int64_t m, n, k;       // op(B)(p, j) = b[p ldb + j] (trans_b 0) or b[j ldb + p] (trans_b 1)
  int64_t lda, ldb;      // element strides of A's and B's stored rows
  int trans_a, trans_b;  // 1: the operand is stored transposed (GPUOPS_OP_T)
  int a_vec, b_vec;      // 1: 16-byte copies are safe (pointer 16-byte aligned, ld a multiple of 8)
};

// The plain epilogue, C = alpha acc + beta C, for calls without bias, activation, residual or
// preact (gemm_epilogue::plain(); the same bits), for kernels that inline their epilogue once per
// accumulator pair (WGMMA: 64 times per consumer thread in a 128 x 256 tile), where code size is
// speed. Whether the pairs of even columns can move as one access is asked once per call
// (`pairs`: C aligned to a pair, ldc even), not per pair; C's values for beta are read element by
// element (beta != 0 is the rare case). 64 KB of code for the 128 x 256 bf16 kernel; with
// gemm_load_pair / gemm_store_pair's per-pair checks 90 KB, with gemm_epilogue 224 KB.
template <class TC> struct gemm_epilogue_plain {
  TC *c;
  int64_t m, n, ldc;
  float alpha, beta;
  bool pairs;
  explicit gemm_epilogue_plain(const gemm_epilogue<TC> &e)
      : c(e.c), m(e.m), n(e.n), ldc(e.ldc), alpha(e.alpha), beta(e.beta), pairs(((uintptr_t)e.c % (2 * sizeof(TC))) == 0 && e.ldc % 2 == 0) {}
  __device__ __forceinline__ void operator()(int64_t row, int64_t col, float acc0, float acc1) const {
    if (row >= m || col >= n) return;
    const bool two = col + 1 < n;
    TC *cp = c + (row * ldc + col);
    float v0 = alpha * acc0, v1 = alpha * acc1;
    if (beta != 0.0f) {
      v0 = fmaf(beta, to_f32(cp[0]), v0);
      if (two) v1 = fmaf(beta, to_f32(cp[1]), v1);
    }
    if (two && pairs && (col & 1) == 0) {
      if constexpr (std::is_same<TC, float>::value) *reinterpret_cast<float2 *>(cp) = make_float2(v0, v1);
      else *reinterpret_cast<uint32_t *>(cp) = pair_of<TC>::pack(v0, v1);
    } else {
      cp[0] = from_f32<TC>(v0);
      if (two) cp[1] = from_f32<TC>(v1);
    }
  }
};

// Either epilogue of a call whose operands are T, C in T or in f32, chosen at run time (uniformly
// for a launch): WMMA and MMA_SYNC take it, so each is compiled once per operand type and layout,
// not also per C type (the choice costs a branch per output pair, in the epilogue only).
template <class T> struct gemm_epilogue_either {
  gemm_epilogue<T> narrow;  // used when !f32
  gemm_epilogue<float> f32_epi;
  int f32;
  __device__ __forceinline__ void operator()(int64_t row, int64_t col, float acc0, float acc1) const {
    if (f32) f32_epi(row, col, acc0, acc1);
    else narrow(row, col, acc0, acc1);
  }
};

// An operand tile in shared memory: R rows of C 16-bit elements (C a multiple of 8), moved as
// 16-byte chunks. kSwizzle (MMA_SYNC, read by ldmatrix): no padding; chunk c of row r sits where
// swizzle_chunk puts it inside its 128-byte group (swizzle_chunk64 for 64-byte rows), so the 8 rows
// of every 8x8 matrix an ldmatrix reads, and the 16-byte copies that fill the tile, land in 32
// distinct banks. Else (WMMA, whose loads take a plain row stride): each row padded by 8 elements
// (16 bytes), which shifts consecutive rows by 4 banks to the same effect at 1/8 more memory.
template <int R, int C, bool kSwizzle> struct gemm_tile {
  static constexpr int ROWS = R, W = C / 8;            // rows; chunks per row
  static constexpr int STRIDE = kSwizzle ? C : C + 8;  // elements per row
  static constexpr int ELEMS = R * STRIDE;
  static_assert(C % 8 == 0 && (!kSwizzle || W == 4 || W % 8 == 0), "swizzled rows are 64 bytes or a multiple of 128");
  // Element offset of chunk c of row r.
  __device__ __forceinline__ static int offset(int r, int c) {
    if constexpr (!kSwizzle) return r * STRIDE + 8 * c;
    else if constexpr (W == 4) return r * C + 8 * swizzle_chunk64(r, c);
    else return r * C + 8 * ((c & ~7) | swizzle_chunk(r, c & 7));
  }
};

// Rows [0, R) x columns [0, Tile's C) of a row-major matrix (g: its element (0, 0) in the tile, ld:
// its row stride) into the shared tile s, by THREADS threads: thread tid moves chunk tid % W of
// rows tid / W + j THREADS / W. Rows >= rlim and columns >= clim are zero-filled (a tile past the
// matrix's edge, or past K, adds zeros to the products). vec (every row 16-byte aligned): cp.async
// copies, zero-filling ones outside, and element copies for a chunk the edge cuts; else element
// loads into registers and one 16-byte shared store per chunk (synchronous: complete before the
// barrier that publishes the stage). `any`: a valid address for the zero-filling copies.
template <class Tile, int R, int THREADS, class T>
__device__ __forceinline__ void gemm_load_tile(T *s, const T *g, int64_t ld, int rlim, int clim, bool vec, const T *any) {
  constexpr int W = Tile::W, DR = THREADS / W, N = R * W / THREADS, G = N < 4 ? N : 4;
  static_assert(THREADS % W == 0 && (R * W) % THREADS == 0 && N % G == 0, "whole chunks per thread");
  const int tid = threadIdx.x, c = tid % W, r0 = tid / W;
  const int ce = clim - 8 * c, ve = ce >= 8 ? 8 : ce > 0 ? ce : 0;  // valid elements of this column of chunks
  const T *src = g + (int64_t)r0 * ld + 8 * c;
  const uint16_t *any16 = reinterpret_cast<const uint16_t *>(any);
  if (vec) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const int r = r0 + j * DR, v = r < rlim ? ve : 0;
      T *dst = s + Tile::offset(r, c);
      const T *sj = src + (int64_t)(j * DR) * ld;
      if (v == 8 || v == 0) {
        cp_async16_zfill(dst, v ? sj : any, 2 * v);
      } else {  // a chunk the edge cuts (K's tail): element copies
        const uint16_t *sp = reinterpret_cast<const uint16_t *>(sj);
        uint32_t w[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) w[e] = (2 * e < v ? (uint32_t)sp[2 * e] : 0u) | (2 * e + 1 < v ? (uint32_t)sp[2 * e + 1] << 16 : 0u);
        *reinterpret_cast<uint4 *>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
    return;
  }
  // Element copies, G chunks at a time: their 8 G loads are all issued (an element outside reads the
  // operand's first element instead, then masked) before the first is used, so a thread waits for
  // memory N / G times per k-tile, not N times.
#pragma unroll
  for (int j0 = 0; j0 < N; j0 += G) {
    uint32_t h[G][8];
    int v[G];
#pragma unroll
    for (int q = 0; q < G; ++q) {
      const int j = j0 + q, r = r0 + j * DR;
      v[q] = r < rlim ? ve : 0;
      const uint16_t *sp = reinterpret_cast<const uint16_t *>(src + (int64_t)(j * DR) * ld);
#pragma unroll
      for (int e = 0; e < 8; ++e) h[q][e] = __ldg(e < v[q] ? sp + e : any16);
    }
#pragma unroll
    for (int q = 0; q < G; ++q) {
      uint32_t w[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) w[e] = (2 * e < v[q] ? h[q][2 * e] : 0u) | (2 * e + 1 < v[q] ? h[q][2 * e + 1] << 16 : 0u);
      *reinterpret_cast<uint4 *>(s + Tile::offset(r0 + (j0 + q) * DR, c)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// The register-staged loader, for an operand whose rows are not 16-byte aligned (an odd leading
// dimension, an offset pointer), where cp.async cannot copy 16-byte chunks. load() issues a thread's
// chunks of one k-tile as 4-byte loads into registers and returns at once; store() (after the
// warps' mma on an earlier stage) writes them to the shared tile, so the loads' latency hides
// behind the tensor-core work as cp.async's does. A chunk (8 elements) that starts 4-byte aligned
// is 4 words; one that starts at an odd element is read as the 5 aligned words around it and
// shifted by a byte permute. Those 5 words reach one element before and after the chunk, so that
// form is taken only where both lie in the chunk's row; a chunk cut by the edge of the matrix, or
// at either end of a row in the 5-word case, takes element loads at once (synchronous: a few
// chunks per row, on the edge tiles). Rows >= rlim and columns >= clim are zeros.
// Bytes: 4-byte loads move the same lines as 16-byte ones (the 5-word form reads 1/4 more from L1).
template <class Tile, int R, int THREADS> struct gemm_staged {
  static constexpr int W = Tile::W, DR = THREADS / W, N = R * W / THREADS;
  static_assert(THREADS % W == 0 && (R * W) % THREADS == 0 && N <= 32, "whole chunks per thread");
  uint32_t w[N][5];
  uint32_t odd;  // bit j: chunk j was read as 5 words from one element before it

  // g: the tile's element (0, 0); col0: its column in the matrix; cols: the matrix's columns.
  template <class T>
  __device__ __forceinline__ void load(const T *g, int64_t ld, int rlim, int clim, int64_t col0, int64_t cols) {
    const int tid = threadIdx.x, c = tid % W, r0 = tid / W;
    const int ce = clim - 8 * c, ve = ce >= 8 ? 8 : ce > 0 ? ce : 0;
    const bool around = col0 + 8 * c > 0 && cols - col0 - 8 * c > 8;  // an element before and after the chunk
    odd = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const int r = r0 + j * DR, v = r < rlim ? ve : 0;
      const T *src = g + (int64_t)r * ld + 8 * c;
      const bool o = ((uintptr_t)src & 2) != 0;
      if (v == 8 && (!o || around)) {
        const uint32_t *q = reinterpret_cast<const uint32_t *>((uintptr_t)src & ~(uintptr_t)3);
#pragma unroll
        for (int e = 0; e < 4; ++e) w[j][e] = __ldg(q + e);
        w[j][4] = o ? __ldg(q + 4) : 0u;
        odd |= (uint32_t)o << j;
      } else {  // the edge of the matrix: element loads, zeros outside
        const uint16_t *sp = reinterpret_cast<const uint16_t *>(src);
#pragma unroll
        for (int e = 0; e < 4; ++e)
          w[j][e] = (2 * e < v ? (uint32_t)__ldg(sp + 2 * e) : 0u) | (2 * e + 1 < v ? (uint32_t)__ldg(sp + 2 * e + 1) << 16 : 0u);
        w[j][4] = 0u;
      }
    }
  }
  template <class T> __device__ __forceinline__ void store(T *s) const {
    const int tid = threadIdx.x, c = tid % W, r0 = tid / W;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const uint32_t sel = (odd >> j) & 1u ? 0x5432u : 0x3210u;  // the high half of word e, the low of e + 1
      uint32_t x[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) x[e] = __byte_perm(w[j][e], w[j][e + 1], sel);
      *reinterpret_cast<uint4 *>(s + Tile::offset(r0 + j * DR, c)) = make_uint4(x[0], x[1], x[2], x[3]);
    }
  }
};

// The tile rows this block computes: block tile t of tiles_m x tiles_n in grouped order.
struct gemm_block_tile {
  int64_t m0, n0;
  int mlim, nlim;  // rows and columns of the tile inside C
};
template <int BM, int BN>
__device__ __forceinline__ gemm_block_tile gemm_tile_of(const gemm_params &p, int64_t t, int64_t tiles_m, int64_t tiles_n) {
  int64_t tm, tn;
  grouped_tile(t, tiles_m, tiles_n, tm, tn);
  gemm_block_tile b;
  b.m0 = tm * BM, b.n0 = tn * BN;
  b.mlim = (int)(p.m - b.m0 < BM ? p.m - b.m0 : BM), b.nlim = (int)(p.n - b.n0 < BN ? p.n - b.n0 : BN);
  return b;
}

// One k-tile (BK of k) of both operands into one pipeline stage (sa, sb). Each operand's tile is
// k-contiguous (KA, KB: A as stored for op N, B for op T) or x-contiguous (XA, XB), as stored.
template <class KA, class XA, class KB, class XB, int BM, int BN, int BK, int THREADS, class T>
__device__ __forceinline__ void gemm_load_stage(T *sa, T *sb, const gemm_params &p, const gemm_block_tile &bt, int64_t k0) {
  const T *A = static_cast<const T *>(p.a), *B = static_cast<const T *>(p.b);
  const int klim = (int)(p.k - k0 < BK ? p.k - k0 : BK);
  if (p.trans_a) gemm_load_tile<XA, BK, THREADS>(sa, A + (k0 * p.lda + bt.m0), p.lda, klim, bt.mlim, p.a_vec, A);
  else gemm_load_tile<KA, BM, THREADS>(sa, A + (bt.m0 * p.lda + k0), p.lda, bt.mlim, klim, p.a_vec, A);
  if (p.trans_b) gemm_load_tile<KB, BN, THREADS>(sb, B + (bt.n0 * p.ldb + k0), p.ldb, bt.nlim, klim, p.b_vec, B);
  else gemm_load_tile<XB, BK, THREADS>(sb, B + (k0 * p.ldb + bt.n0), p.ldb, klim, bt.nlim, p.b_vec, B);
}

// The block's accumulators, staged in shared memory as a BM x BN f32 tile (row stride BN + 8: the
// float2 stores of a fragment's 8 rows then hit distinct banks), handed to the epilogue: thread t
// takes column pair t % (BN / 2) of rows t / (BN / 2) + i STEP (STEP = THREADS / (BN / 2)), so
// consecutive threads move consecutive pairs of a row (C, bias and residual as whole lines), in
// chunks of kGemmEpiRows rows through gemm_epilogue::rows: straight-line code, C's and the
// residual's loads of a chunk issued together, the activation's switch taken once a chunk. A pair
// that cannot move as one access (the last of an odd n, unaligned C) goes element-wise through
// operator(). The C type's choice (gemm_epilogue_either) is made once a tile. Pair by pair through
// operator() (a switch and a dozen branches each) this epilogue took 16% of MMA_SYNC's time at
// 4096^3 (Nsight Compute's warp samples, H100).
template <int BN> constexpr int kGemmOutStride = BN + 8;
constexpr int kGemmEpiRows = 8;
template <int BM, int BN, int THREADS, class TC>
__device__ __forceinline__ void gemm_block_epilogue(const float *out, const gemm_block_tile &bt, const gemm_epilogue<TC> &epi) {
  constexpr int PAIRS = BN / 2, STEP = THREADS / PAIRS, NR = kGemmEpiRows;
  static_assert(THREADS % PAIRS == 0 && BM % (STEP * NR) == 0, "whole chunks of rows");
  const int c = 2 * ((int)threadIdx.x % PAIRS), r0 = (int)threadIdx.x / PAIRS;
  if (c >= bt.nlim) return;
  const int64_t col = bt.n0 + c;
  const bool whole = epi.whole_pair(col);
  const auto bw = epi.bias_word(col);
#pragma unroll 1
  for (int rb = r0; rb < bt.mlim; rb += STEP * NR) {  // rows past mlim (past m) are read, never stored
    float a0[NR], a1[NR];
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      const float2 v = *reinterpret_cast<const float2 *>(out + (rb + i * STEP) * kGemmOutStride<BN> + c);
      a0[i] = v.x, a1[i] = v.y;
    }
    if (whole) {
      epi.template rows<NR, STEP>(bt.m0 + rb, col, bw, a0, a1);
    } else {
#pragma unroll
      for (int i = 0; i < NR; ++i)
        if (rb + i * STEP < bt.mlim) epi(bt.m0 + rb + i * STEP, col, a0[i], a1[i]);
    }
  }
}
template <int BM, int BN, int THREADS, class T>
__device__ __forceinline__ void gemm_block_epilogue(const float *out, const gemm_block_tile &bt, const gemm_epilogue_either<T> &epi) {
  if (epi.f32) gemm_block_epilogue<BM, BN, THREADS>(out, bt, epi.f32_epi);
  else gemm_block_epilogue<BM, BN, THREADS>(out, bt, epi.narrow);
}

// The fast path of the loader, for the k-tiles that lie wholly inside both operands with 16-byte
// rows (every k-tile of an interior block tile but K's last): no checks and no 64-bit multiplies
// per copy. A thread keeps one pointer per operand, to its first chunk of the next k-tile to copy
// (gemm_copy_start; it advances one k-tile per fill); its shared offsets follow from its index: in
// both tile formats a thread's chunks keep their column and their row modulo 8, so the swizzle is
// the same for all of them and they lie `dr` rows apart.
template <class KT, class XT, int THREADS, class T>
__device__ __forceinline__ const T *gemm_copy_start(const T *base, int64_t ld, bool x_major, int64_t x0) {
  const int tid = threadIdx.x;
  if (x_major) return base + ((int64_t)(tid / XT::W) * ld + x0 + 8 * (tid % XT::W));  // rows are k, chunks run along x
  return base + ((x0 + tid / KT::W) * ld + 8 * (tid % KT::W));                          // rows are x, chunks run along k
}
template <class KT, class XT, int THREADS, class T>
__device__ __forceinline__ void gemm_copy_full(T *tile, const T *&src, int64_t ld, bool x_major) {
  const int tid = threadIdx.x;
  if (x_major) {
    constexpr int W = XT::W, DR = THREADS / W, N = XT::ROWS * W / THREADS;
    T *dst = tile + XT::offset(tid / W, tid % W);
#pragma unroll
    for (int j = 0; j < N; ++j) cp_async16(dst + j * DR * XT::STRIDE, src + j * DR * ld);
    src += XT::ROWS * ld;
  } else {
    constexpr int W = KT::W, DR = THREADS / W, N = KT::ROWS * W / THREADS;
    T *dst = tile + KT::offset(tid / W, tid % W);
#pragma unroll
    for (int j = 0; j < N; ++j) cp_async16(dst + j * DR * KT::STRIDE, src + (int64_t)(j * DR) * ld);
    src += 8 * W;
  }
}

// Which kernels of this section a build holds for an architecture (the bodies compile to nothing
// elsewhere, and the launcher checks the compiled architecture before it picks one).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define GPUOPS__GEMM_SM80 1
#else
#define GPUOPS__GEMM_SM80 0
#endif
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
#define GPUOPS__GEMM_SM70 1
#else
#define GPUOPS__GEMM_SM70 0
#endif

}  // namespace gpuops

// ---- 9.2 Learning-path kernels: WMMA, MMA_SYNC ----------------------------------------------------
namespace gpuops {

// A block tile configuration. WARPS_M x WARPS_N warps, each computing a WM x WN warp tile; STAGES
// pipeline stages of one BK-deep k-tile of A and B each (MMA_SYNC takes the stage count at launch
// and uses this one for sizing only).
// WARPS_K > 1 (MMA_SYNC only) splits each k-tile's 16-deep steps among WARPS_K groups of warps,
// whose partial tiles are summed in shared memory, in order, before the epilogue: more blocks for
// a product with few rows, and more bytes in flight per block.
// kStaged (MMA_SYNC only): an operand whose rows are not 16-byte aligned is loaded through
// registers (gemm_staged) while the warps compute, instead of by element copies that stall the block.
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_, int MIN_BLOCKS_, bool kSwizzle, int WARPS_K_ = 1, bool kStaged = false>
struct gemm_config {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, WARPS_K = WARPS_K_, STAGES = STAGES_;
  static constexpr bool STAGED = kStaged;
  static constexpr int MIN_BLOCKS = MIN_BLOCKS_, THREADS = 32 * WARPS_M * WARPS_N * WARPS_K, WM = BM / WARPS_M, WN = BN / WARPS_N;
  using KA = gemm_tile<BM, BK, kSwizzle>;  // A stored m x k (op N)
  using XA = gemm_tile<BK, BM, kSwizzle>;  // A stored k x m (op T)
  using KB = gemm_tile<BN, BK, kSwizzle>;  // B stored n x k (op T)
  using XB = gemm_tile<BK, BN, kSwizzle>;  // B stored k x n (op N)
  static constexpr int A_ELEMS = KA::ELEMS > XA::ELEMS ? KA::ELEMS : XA::ELEMS;
  static constexpr int B_ELEMS = KB::ELEMS > XB::ELEMS ? KB::ELEMS : XB::ELEMS;
  static constexpr int STAGE_ELEMS = A_ELEMS + B_ELEMS;
  static constexpr size_t stage_bytes = 2 * (size_t)STAGE_ELEMS;
  static constexpr size_t out_bytes = 4 * (size_t)BM * (BN + 8);  // the epilogue's f32 tile (gemm_block_epilogue)
  // Shared bytes with `stages` stages: the pipeline, or the output tile where that is larger.
  static constexpr size_t smem_bytes(int stages) { return stages * stage_bytes > out_bytes ? stages * stage_bytes : out_bytes; }
  static constexpr size_t SMEM_BYTES = smem_bytes(STAGES);
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % (16 * WARPS_K) == 0 && STAGES >= 2, "16 x 16 warp sub-tiles, 16-deep k steps");
};

// One k-tile (kt) of both operands into pipeline stage `stage`: the fast path (gemm_copy_full) where
// the block tile is whole (`whole`: inside C, both operands with 16-byte rows) and the k-tile inside
// K, else the checked loader. The copy pointers advance by one k-tile either way (k-tiles are filled
// in order).
template <class Cfg, bool kTA, bool kTB, class T>
__device__ __forceinline__ void gemm_fill(T *smem, int stage, const gemm_params &p, const gemm_block_tile &bt, bool whole, int64_t kt,
                                          const T *&ca, const T *&cb) {
  constexpr int BK = Cfg::BK;
  T *sa = smem + stage * Cfg::STAGE_ELEMS, *sb = sa + Cfg::A_ELEMS;
  if (whole && (kt + 1) * BK <= p.k) {
    gemm_copy_full<typename Cfg::KA, typename Cfg::XA, Cfg::THREADS>(sa, ca, p.lda, kTA);
    gemm_copy_full<typename Cfg::KB, typename Cfg::XB, Cfg::THREADS>(sb, cb, p.ldb, !kTB);
  } else {
    gemm_load_stage<typename Cfg::KA, typename Cfg::XA, typename Cfg::KB, typename Cfg::XB, Cfg::BM, Cfg::BN, BK, Cfg::THREADS>(sa, sb, p, bt, kt * BK);
    ca += kTA ? BK * p.lda : BK, cb += kTB ? BK : BK * p.ldb;
  }
}

// A staged configuration's k-tile: each operand by cp.async where its rows are 16-byte aligned,
// else into registers (st.load; st.store writes them once the warps are past an earlier stage).
template <class Cfg, class T, bool kTA, bool kTB> struct gemm_staged_pair {
  using TA = typename std::conditional<kTA, typename Cfg::XA, typename Cfg::KA>::type;  // A's tile: k x m or m x k
  using TB = typename std::conditional<kTB, typename Cfg::KB, typename Cfg::XB>::type;  // B's tile: n x k or k x n
  gemm_staged<TA, kTA ? Cfg::BK : Cfg::BM, Cfg::THREADS> a;
  gemm_staged<TB, kTB ? Cfg::BN : Cfg::BK, Cfg::THREADS> b;

  __device__ __forceinline__ void load(T *smem, int stage, const gemm_params &p, const gemm_block_tile &bt, int64_t k0) {
    constexpr int BK = Cfg::BK, RA = kTA ? BK : Cfg::BM, RB = kTB ? Cfg::BN : BK;
    T *sa = smem + stage * Cfg::STAGE_ELEMS, *sb = sa + Cfg::A_ELEMS;
    const T *A = static_cast<const T *>(p.a), *B = static_cast<const T *>(p.b);
    const int klim = (int)(p.k - k0 < BK ? p.k - k0 : BK);
    const T *ga = kTA ? A + (k0 * p.lda + bt.m0) : A + (bt.m0 * p.lda + k0);
    const T *gb = kTB ? B + (bt.n0 * p.ldb + k0) : B + (k0 * p.ldb + bt.n0);
    const int ra = kTA ? klim : bt.mlim, ca = kTA ? bt.mlim : klim, rb = kTB ? bt.nlim : klim, cb = kTB ? klim : bt.nlim;
    if (p.a_vec) gemm_load_tile<TA, RA, Cfg::THREADS>(sa, ga, p.lda, ra, ca, true, A);
    else a.load(ga, p.lda, ra, ca, kTA ? bt.m0 : k0, kTA ? p.m : p.k);
    if (p.b_vec) gemm_load_tile<TB, RB, Cfg::THREADS>(sb, gb, p.ldb, rb, cb, true, B);
    else b.load(gb, p.ldb, rb, cb, kTB ? k0 : bt.n0, kTB ? p.k : p.n);
  }
  __device__ __forceinline__ void store(T *smem, int stage, const gemm_params &p) const {
    T *sa = smem + stage * Cfg::STAGE_ELEMS, *sb = sa + Cfg::A_ELEMS;
    if (!p.a_vec) a.store(sa);
    if (!p.b_vec) b.store(sb);
  }
};

// The k loop of one block tile, shared by WMMA and MMA_SYNC: the first stages - 1 k-tiles are put
// in flight, then per k-tile one wait and one barrier (the k-tile has landed for every thread, and
// every warp is done with the stage the previous k-tile used), the refill of that stage with the
// k-tile stages - 1 ahead, and compute(stage) on the k-tile that landed. It returns with no copy in
// flight and every warp past the last k-tile, so the stages may be reused at once (the epilogue's
// f32 tile lives there).
// A staged configuration (Cfg::STAGED, stages >= 3) issues the register loads where the copies are
// issued and stores them after the next k-tile's barrier, so a whole k-tile's mma and a barrier
// hide their latency; the stage they fill is read two barriers later at the earliest.
template <class Cfg, bool kTA, bool kTB, class T, class F>
__device__ __forceinline__ void gemm_mainloop(T *smem, const gemm_params &p, const gemm_block_tile &bt, int stages, F &&compute) {
  // The wait for the k-tile in hand (stages - 2 groups may stay in flight): an immediate where the
  // launch has the configuration's own stage count, as on the H100, instead of cp_async_wait's
  // switch (an indirect branch each k-tile: 4% of MMA_SYNC's warp samples at 4096^3; measured
  // +0-1.5% on the H100, within the noise of two runs).
  const auto wait_tile = [stages] {
    if (stages == Cfg::STAGES) cp_async_wait(Cfg::STAGES - 2);
    else cp_async_wait(stages - 2);
  };
  if constexpr (Cfg::STAGED) {
    const int64_t ktiles = (p.k + Cfg::BK - 1) / Cfg::BK;
    gemm_staged_pair<Cfg, T, kTA, kTB> st;
    for (int s = 0; s < stages - 1; ++s) {
      if (s < ktiles) st.load(smem, s, p, bt, s * Cfg::BK), st.store(smem, s, p);
      cp_async_commit();
    }
    int rs = 0, ws = stages - 1, pending = -1;  // pending: the stage whose registers await their store
    for (int64_t kt = 0; kt < ktiles; ++kt) {
      wait_tile();
      __syncthreads();
      if (pending >= 0) st.store(smem, pending, p);
      const bool fill = kt + stages - 1 < ktiles;
      if (fill) st.load(smem, ws, p, bt, (kt + stages - 1) * Cfg::BK);
      cp_async_commit();
      pending = fill ? ws : -1;
      compute(rs);
      rs = rs + 1 == stages ? 0 : rs + 1, ws = ws + 1 == stages ? 0 : ws + 1;
    }
    cp_async_wait(0);
    __syncthreads();
    return;
  }
  const bool whole = p.a_vec && p.b_vec && bt.mlim == Cfg::BM && bt.nlim == Cfg::BN;
  const T *ca = gemm_copy_start<typename Cfg::KA, typename Cfg::XA, Cfg::THREADS>(static_cast<const T *>(p.a), p.lda, kTA, bt.m0);
  const T *cb = gemm_copy_start<typename Cfg::KB, typename Cfg::XB, Cfg::THREADS>(static_cast<const T *>(p.b), p.ldb, !kTB, bt.n0);
  const int64_t ktiles = (p.k + Cfg::BK - 1) / Cfg::BK;
  for (int s = 0; s < stages - 1; ++s) {
    if (s < ktiles) gemm_fill<Cfg, kTA, kTB>(smem, s, p, bt, whole, s, ca, cb);
    cp_async_commit();  // empty groups past the end keep the count uniform
  }
  int rs = 0, ws = stages - 1;  // the stage read and the stage refilled in this k-tile
  for (int64_t kt = 0; kt < ktiles; ++kt) {
    wait_tile();
    __syncthreads();
    if (kt + stages - 1 < ktiles) gemm_fill<Cfg, kTA, kTB>(smem, ws, p, bt, whole, kt + stages - 1, ca, cb);
    cp_async_commit();
    compute(rs);
    rs = rs + 1 == stages ? 0 : rs + 1, ws = ws + 1 == stages ? 0 : ws + 1;
  }
  cp_async_wait(0);
  __syncthreads();
}

// WMMA: the CUDA C++ warp matrix API (mma.h). Each warp holds WM/16 x WN/16 accumulator fragments
// of 16 x 16 and per 16-deep k step loads WM/16 A and WN/16 B fragments from shared memory
// (load_matrix_sync; row- or column-major by the operand's layout, a template parameter since the
// fragment types differ). Shared memory is filled by the same cp.async pipeline as MMA_SYNC
// (gemm_mainloop; synchronous copies before sm_80), with padded rows. The fragments' register
// layout is opaque, so the accumulators reach the epilogue through shared memory
// (store_matrix_sync into the block's f32 tile, then gemm_block_epilogue). Taught next to
// MMA_SYNC: the same tensor cores, but fragment loads the compiler cannot see into, no swizzle,
// and no control over which registers hold what.
template <class Cfg, class T, bool kTA, bool kTB>
__device__ __forceinline__ void gemm_wmma_body(const gemm_params &p, const gemm_epilogue_either<T> &epi, int64_t tiles_m, int64_t tiles_n) {
  namespace wmma = nvcuda::wmma;
  using LA = typename std::conditional<kTA, wmma::col_major, wmma::row_major>::type;
  using LB = typename std::conditional<kTB, wmma::col_major, wmma::row_major>::type;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::STAGES, MI = Cfg::WM / 16, NJ = Cfg::WN / 16;
  using KA = typename Cfg::KA; using XA = typename Cfg::XA; using KB = typename Cfg::KB; using XB = typename Cfg::XB;
  extern __shared__ uint4 gemm_smem[];
  T *const smem = reinterpret_cast<T *>(gemm_smem);
  const int warp = threadIdx.x >> 5, wm = warp / Cfg::WARPS_N, wn = warp % Cfg::WARPS_N;
  const int64_t tiles = tiles_m * tiles_n;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const gemm_block_tile bt = gemm_tile_of<BM, BN>(p, t, tiles_m, tiles_n);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[MI][NJ];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    gemm_mainloop<Cfg, kTA, kTB>(smem, p, bt, S, [&](int rs) {
      const T *sa = smem + rs * Cfg::STAGE_ELEMS, *sb = sa + Cfg::A_ELEMS;
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LA> fa[MI];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LB> fb[NJ];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          const int x = wm * Cfg::WM + i * 16;
          if constexpr (kTA) wmma::load_matrix_sync(fa[i], sa + kk * 16 * XA::STRIDE + x, XA::STRIDE);
          else wmma::load_matrix_sync(fa[i], sa + x * KA::STRIDE + kk * 16, KA::STRIDE);
        }
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          const int x = wn * Cfg::WN + j * 16;
          if constexpr (kTB) wmma::load_matrix_sync(fb[j], sb + x * KB::STRIDE + kk * 16, KB::STRIDE);
          else wmma::load_matrix_sync(fb[j], sb + kk * 16 * XB::STRIDE + x, XB::STRIDE);
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NJ; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    });
    float *const out = reinterpret_cast<float *>(gemm_smem);
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
        wmma::store_matrix_sync(out + (wm * Cfg::WM + i * 16) * kGemmOutStride<BN> + wn * Cfg::WN + j * 16, acc[i][j],
                                kGemmOutStride<BN>, wmma::mem_row_major);
    __syncthreads();
    gemm_block_epilogue<BM, BN, Cfg::THREADS>(out, bt, epi);
    __syncthreads();  // before the next tile's copies refill the stages
  }
}

template <class Cfg, class T, bool kTA, bool kTB>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS) gemm_wmma(gemm_params p, gemm_epilogue_either<T> epi, int64_t tiles_m, int64_t tiles_n) {
#if GPUOPS__GEMM_SM80
  gemm_wmma_body<Cfg, T, kTA, kTB>(p, epi, tiles_m, tiles_n);
#elif GPUOPS__GEMM_SM70
  if constexpr (std::is_same<T, __half>::value) gemm_wmma_body<Cfg, T, kTA, kTB>(p, epi, tiles_m, tiles_n);  // bf16 needs sm_80
#endif
}

// MMA_SYNC: mma.sync.m16n8k16 (section 1.4) on fragments loaded by ldmatrix from swizzled shared
// memory. A warp owns a WM x WN tile: WM/16 x WN/8 accumulators of 16 x 8 (4 f32 registers each).
// Per 16-deep k step it loads WM/16 A fragments (one ldmatrix.x4 each) and WN/16 pairs of B
// fragments (one ldmatrix.x4 each) and issues WM/16 x WN/8 mma.sync; the whole k-tile is one
// straight block, so the compiler issues the next step's loads while this step's mma.sync run.
// Operands stored k-contiguous are read with ldmatrix, the others with ldmatrix.trans, which
// transposes 8x8 matrices on the way into the fragment (each layout is its own instantiation;
// each lane's addresses are a table made once plus immediates). Shared memory holds `stages`
// k-tiles filled by cp.async (gemm_mainloop), one barrier per k-tile.
// Why it is fast: 64 x 64 warp tiles do 32 mma per 8 ldmatrix (4096 multiply-adds each), so the
// tensor cores, not shared memory, set the pace; the swizzle leaves every ldmatrix and copy
// conflict-free; stages - 1 k-tiles of copies are in flight behind the math, and a whole k-tile's
// copies are a few instructions (gemm_copy). What it cannot do on Hopper: feed the tensor cores at
// wgmma's rate (mma.sync is issued per warp and its operands pass through registers).
// MMA_SYNC's fragments of k step S (a constant) from the stage at shared address sa / sb, through
// each lane's offset table (in the kernel), and its steps S..KSTEPS - 1.
template <bool kTA, int S, int BM, int BK, int MI, int TA>
__device__ __forceinline__ void gemm_frag_a(uint32_t (&fa)[MI][4], uint32_t sa, const int (&tab)[TA]) {
  static_for<MI>([&](auto I) {
    constexpr int i = decltype(I)::value;
    if constexpr (kTA) ldmatrix_x4_at<true, S * 32 * BM>(fa[i], sa + tab[i]);
    else ldmatrix_x4_at<false, i * 32 * BK>(fa[i], sa + tab[S]);
  });
}
template <bool kXB, int S, int BN, int BK, int NI, int TB>
__device__ __forceinline__ void gemm_frag_b(uint32_t (&fb)[NI][2], uint32_t sb, const int (&tab)[TB]) {
  static_for<NI / 2>([&](auto J) {  // two 16 x 8 fragments per ldmatrix.x4
    constexpr int j = decltype(J)::value;
    uint32_t r[4];
    if constexpr (kXB) ldmatrix_x4_at<true, S * 32 * BN>(r, sb + tab[j]);
    else ldmatrix_x4_at<false, j * 32 * BK>(r, sb + tab[S]);
    fb[2 * j][0] = r[0], fb[2 * j][1] = r[1], fb[2 * j + 1][0] = r[2], fb[2 * j + 1][1] = r[3];
  });
}
template <class T, bool kTA, bool kXB, int S, int KSTEPS, int BM, int BN, int BK, int MI, int NI, int TA, int TB>
__device__ __forceinline__ void gemm_mma_steps(float (&acc)[MI][NI][4], uint32_t sa, uint32_t sb, const int (&tab_a)[TA], const int (&tab_b)[TB]) {
  uint32_t fa[MI][4], fb[NI][2];
  gemm_frag_a<kTA, S, BM, BK>(fa, sa, tab_a);
  gemm_frag_b<kXB, S, BN, BK>(fb, sb, tab_b);
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int jj = (i & 1) ? NI - 1 - j : j;  // serpentine: consecutive mma share a fragment
      mma_m16n8k16<T>(acc[i][jj], fa[i], fb[jj], acc[i][jj]);
    }
  if constexpr (S + 1 < KSTEPS) gemm_mma_steps<T, kTA, kXB, S + 1, KSTEPS, BM, BN, BK>(acc, sa, sb, tab_a, tab_b);
}

template <class Cfg, class T, bool kTA, bool kTB>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS) gemm_mma_sync(gemm_params p, gemm_epilogue_either<T> epi, int64_t tiles_m, int64_t tiles_n, int stages) {
#if GPUOPS__GEMM_SM80
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, WM = Cfg::WM, WN = Cfg::WN, MI = WM / 16, NI = WN / 8;
  constexpr int KSTEPS = BK / 16 / Cfg::WARPS_K;  // 16-deep steps of a k-tile per warp
  constexpr int TA = MI > KSTEPS ? MI : KSTEPS, TB = NI / 2 > KSTEPS ? NI / 2 : KSTEPS;
  using KA = typename Cfg::KA; using XA = typename Cfg::XA; using KB = typename Cfg::KB; using XB = typename Cfg::XB;
  static_assert(WM % 64 == 0 || WM == 16 * MI, "warp tiles");
  extern __shared__ uint4 gemm_smem[];
  T *const smem = reinterpret_cast<T *>(gemm_smem);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wn = warp % Cfg::WARPS_N, wm = warp / Cfg::WARPS_N % Cfg::WARPS_M;
  const int wk = warp / (Cfg::WARPS_N * Cfg::WARPS_M), k_first = wk * KSTEPS;
  constexpr bool ta = kTA, xb = !kTB;  // the operands stored x-contiguous, read with ldmatrix.trans
  // Each lane's ldmatrix byte offsets: A fragment i at step s is at tab_a[i] + s 32 BM (stored
  // k x m, read with ldmatrix.trans) or tab_a[s] + i 32 BK (stored m x k): the swizzle depends on
  // the row only modulo 8, which 16 rows keep. B pair j likewise. The second terms are immediates.
  int tab_a[TA], tab_b[TB];
#pragma unroll
  for (int x = 0; x < TA; ++x)
    tab_a[x] = 2 * (ta ? (x < MI ? XA::offset(16 * k_first + (lane & 7) + ((lane >> 4) << 3), (wm * WM + 16 * x) / 8 + ((lane >> 3) & 1)) : 0)
                       : (x < KSTEPS ? KA::offset(wm * WM + (lane & 15), 2 * (k_first + x) + (lane >> 4)) : 0));
#pragma unroll
  for (int x = 0; x < TB; ++x)
    tab_b[x] = 2 * (xb ? (x < NI / 2 ? XB::offset(16 * k_first + (lane & 7) + (((lane >> 3) & 1) << 3), (wn * WN + 16 * x) / 8 + (lane >> 4)) : 0)
                       : (x < KSTEPS ? KB::offset(wn * WN + (lane & 7) + ((lane >> 4) << 3), 2 * (k_first + x) + ((lane >> 3) & 1)) : 0));
  const uint32_t smem_s = smem_u32(smem);
  const int64_t tiles = tiles_m * tiles_n;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const gemm_block_tile bt = gemm_tile_of<BM, BN>(p, t, tiles_m, tiles_n);
    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    gemm_mainloop<Cfg, kTA, kTB>(smem, p, bt, stages, [&](int rs) {
      const uint32_t sa = smem_s + 2 * rs * Cfg::STAGE_ELEMS, sb = sa + 2 * Cfg::A_ELEMS;
      gemm_mma_steps<T, ta, xb, 0, KSTEPS, BM, BN, BK>(acc, sa, sb, tab_a, tab_b);
    });
    // Accumulator (i, j) holds rows g and g + 8, columns 2t and 2t + 1 of its 16 x 8 block; the
    // stages hold the block's f32 tile now.
    float *const out = reinterpret_cast<float *>(gemm_smem);
    const int r0 = wm * WM + (lane >> 2), c0 = wn * WN + 2 * (lane & 3);
#pragma unroll 1
    for (int part = 0; part < Cfg::WARPS_K; ++part) {  // the k groups' partial tiles, summed in order
      if (wk == part)
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              float2 *o = reinterpret_cast<float2 *>(out + (r0 + i * 16 + 8 * h) * kGemmOutStride<BN> + c0 + j * 8);
              const float2 v = part ? *o : make_float2(0.0f, 0.0f);
              *o = make_float2(v.x + acc[i][j][2 * h], v.y + acc[i][j][2 * h + 1]);
            }
      __syncthreads();
    }
    gemm_block_epilogue<BM, BN, Cfg::THREADS>(out, bt, epi);
    __syncthreads();  // before the next tile's copies refill the stages
  }
#endif
}

}  // namespace gpuops

// ---- 9.3 Production kernels: epilogue alone (k = 0), linear backward, loss, AdamW ------------
namespace gpuops {

// k = 0: every output is the epilogue of a zero accumulator (C = act(beta C + bias) + residual).
template <class TC> __global__ void gemm_epilogue_only(gemm_epilogue<TC> epi) {
  const int64_t half = (epi.n + 1) / 2, pairs = epi.m * half;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < pairs; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = e / half;
    epi(row, 2 * (e - row * half), 0.0f, 0.0f);
  }
}

// Few rows (decode): C = A B^T for m <= 8 MG, A (m x k) stored k-contiguous (op N) and B stored
// n x k (op T), both with 16-byte rows: the decode step's y = x W^T. Each element of W is used m
// times, so the product is bound by reading W once (2 n k bytes); the block-tiled kernels stage it
// through shared memory in 64- or 128-row tiles that are mostly empty rows of A. Here W goes from
// global memory straight into mma.sync fragments, W as the mma's A operand (16 rows) and x as its
// B operand (8 rows of x: 8 columns of the mma's output). Inside each 32-deep step, K's order is
// permuted, the same way for both operands (which leaves the sum unchanged), so that a lane's
// fragments are whole 16-byte loads: lane (g, t) loads elements 8t .. 8t + 7 of W's rows g and
// g + 8 and of x's row g; registers 0 and 1 of each load feed the first mma (as the fragments' k
// pairs 2t and 2t + 8), registers 2 and 3 the second. A block of kGemmDecodeWarps warps owns 16
// rows of W and splits K among its warps, each a contiguous share (gemm_decode_kper: whole chunks
// of kGemmDecodeUnroll steps, 256 bytes of a row); the warps' partial 16 x m tiles are summed in
// shared memory in a fixed order (the same bits every run) and handed to the epilogue as pairs
// along n. Rows of W past n and of x past m read row 0 (a valid address); their sums are never
// handed on. Measured alternatives (docs/performance.md, "The learning-path tiles and few rows"):
// blocks of 4 or 2 warps with longer shares, warps taking turns chunk by chunk, and W's loads
// marked L1::no_allocate (with or without the L2::256B prefetch hint) were all slower.
// Roofline: 2 n k bytes from DRAM (x, 2 m k bytes, is read by every block, from L2), 2 m n k
// flops (the tensor cores mostly idle). A chunk's 3 loads a lane (12 16-byte words) are issued
// before its mma: 4 KB of W in flight per warp, 56 registers, 4 blocks of 8 warps per SM. It
// reaches 0.55x of DRAM bandwidth on W of 11008 x 4096 (Nsight Compute), short of what cuBLAS
// reads; the loads' latency, not the instruction issue, is what the warps wait on.
constexpr int kGemmDecodeWarps = 8, kGemmDecodeUnroll = 4;
// Each warp's share of K: k / kGemmDecodeWarps rounded up to whole chunks.
inline int64_t gemm_decode_kper(int64_t k) {
  constexpr int64_t chunk = 32 * kGemmDecodeUnroll;
  return ((k + kGemmDecodeWarps - 1) / kGemmDecodeWarps + chunk - 1) / chunk * chunk;
}

// Elements k0 .. k0 + 7 of a row as a 16-byte word, those at kend and past it zero.
template <class T> __device__ __forceinline__ uint4 gemm_decode_chunk(const T *row, int64_t k0, int64_t kend) {
  if (k0 + 8 <= kend) return __ldg(reinterpret_cast<const uint4 *>(row + k0));
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  T *e = reinterpret_cast<T *>(&v);
  for (int i = 0; i < 8; ++i)
    if (k0 + i < kend) e[i] = row[k0 + i];
  return v;
}

// One 32-deep step: the two mma of each group of 8 rows of x, on the words loaded for it.
template <class T, int MG>
__device__ __forceinline__ void gemm_decode_mma(float (&acc)[MG][4], const uint4 &w0, const uint4 &w1, const uint4 (&x)[MG]) {
  const uint32_t a0[4] = {w0.x, w1.x, w0.y, w1.y}, a1[4] = {w0.z, w1.z, w0.w, w1.w};
#pragma unroll
  for (int g = 0; g < MG; ++g) {
    const uint32_t b0[2] = {x[g].x, x[g].y}, b1[2] = {x[g].z, x[g].w};
    mma_m16n8k16<T>(acc[g], a0, b0, acc[g]);
    mma_m16n8k16<T>(acc[g], a1, b1, acc[g]);
  }
}

// MG groups of 8 rows of x (m <= 8 MG); the dispatch runs MG = 1. A form of the same kernel with
// one group written without the MG arrays (52 registers against 56) ran 12-14% slower on an H200,
// 17.7 against 15.8 us on W of 4096 x 4096, in one run: this is the form measured fastest.
template <class T, int MG>
__global__ void __launch_bounds__(32 * kGemmDecodeWarps) gemm_decode(gemm_params p, gemm_epilogue_either<T> epi, int64_t kper) {
#if GPUOPS__GEMM_SM80
  constexpr int U = kGemmDecodeUnroll, XR = 8 * MG;
  __shared__ float part[kGemmDecodeWarps][16][XR + 1];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const T *W = static_cast<const T *>(p.b), *X = static_cast<const T *>(p.a);
  for (int64_t tile = blockIdx.x; tile * 16 < p.n; tile += gridDim.x) {
    const int64_t n0 = tile * 16, r0 = n0 + g, r1 = r0 + 8;
    const T *w0 = W + (r0 < p.n ? r0 : 0) * p.ldb, *w1 = W + (r1 < p.n ? r1 : 0) * p.ldb;
    const T *x[MG];
#pragma unroll
    for (int i = 0; i < MG; ++i) x[i] = X + (8 * i + g < p.m ? 8 * i + g : 0) * p.lda;
    float acc[MG][4] = {};
    const int64_t kbeg = warp * kper, kend = kbeg + kper < p.k ? kbeg + kper : p.k;  // this warp's share
    int64_t k0 = kbeg + 8 * t;  // this lane's first element of each step
    for (; k0 - 8 * t + 32 * U <= kend; k0 += 32 * U) {
      uint4 a[U][2], b[U][MG];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        a[u][0] = __ldg(reinterpret_cast<const uint4 *>(w0 + k0 + 32 * u));
        a[u][1] = __ldg(reinterpret_cast<const uint4 *>(w1 + k0 + 32 * u));
#pragma unroll
        for (int i = 0; i < MG; ++i) b[u][i] = __ldg(reinterpret_cast<const uint4 *>(x[i] + k0 + 32 * u));
      }
#pragma unroll
      for (int u = 0; u < U; ++u) gemm_decode_mma<T, MG>(acc, a[u][0], a[u][1], b[u]);
    }
    for (; k0 - 8 * t < kend; k0 += 32) {  // the last steps of the share, checked
      uint4 b[MG];
#pragma unroll
      for (int i = 0; i < MG; ++i) b[i] = gemm_decode_chunk(x[i], k0, kend);
      gemm_decode_mma<T, MG>(acc, gemm_decode_chunk(w0, k0, kend), gemm_decode_chunk(w1, k0, kend), b);
    }
    // acc[i]: rows g and g + 8 of this tile of W, rows 8i + 2t and 8i + 2t + 1 of x.
#pragma unroll
    for (int i = 0; i < MG; ++i) {
      part[warp][g][8 * i + 2 * t] = acc[i][0], part[warp][g][8 * i + 2 * t + 1] = acc[i][1];
      part[warp][g + 8][8 * i + 2 * t] = acc[i][2], part[warp][g + 8][8 * i + 2 * t + 1] = acc[i][3];
    }
    __syncthreads();
    const int rows = p.m < XR ? (int)p.m : XR;
    for (int e = threadIdx.x; e < rows * 8; e += blockDim.x) {  // C(i, n0 + j .. j + 1)
      const int i = e >> 3, j = 2 * (e & 7);
      float v0 = 0.0f, v1 = 0.0f;
#pragma unroll
      for (int w = 0; w < kGemmDecodeWarps; ++w) v0 += part[w][j][i], v1 += part[w][j + 1][i];
      epi(i, n0 + j, v0, v1);
    }
    __syncthreads();  // before the next tile's partial sums
  }
#endif
}

// One row of x (m = 1): y = x W^T as a GEMV on CUDA cores, for the memory pattern gemm_decode's
// fragments cannot have: each warp owns two adjacent rows of W (one epilogue pair) and reads each
// in 512-byte pieces, lane l taking bytes 16 l .. 16 l + 15 of every piece, with x's matching
// piece through L1; f32 products summed per lane, then across the warp by shuffles. Against
// gemm_decode's 8 rows of 64 bytes per load, on an H200: 1 x 11008 x 4096 in 30.3 against 33.9 us
// (0.69x of the copy ceiling on W's bytes; cuBLAS 28.2), 1 x 4096 x 4096 in 15.5 against 15.7 us.
// One row per warp (its pair then split across two warps) measured 27.1 us, a form still to build.
// Roofline: 2 n k bytes from DRAM, 2 n k flops (two FMA per 4 bytes: far under the CUDA cores'
// rate). Launched with 8 blocks of 8 warps per SM, walking the row pairs.
template <class T>
__global__ void __launch_bounds__(256) gemm_gemv(gemm_params p, gemm_epilogue_either<T> epi) {
#if GPUOPS__GEMM_SM80
  const int lane = threadIdx.x & 31;
  const T *W = static_cast<const T *>(p.b), *x = static_cast<const T *>(p.a);
  const int64_t pairs = (p.n + 1) / 2, kwhole = p.k / 256 * 256;  // K in whole 512-byte pieces
  for (int64_t q = blockIdx.x * 8 + (threadIdx.x >> 5); q < pairs; q += (int64_t)gridDim.x * 8) {
    const int64_t r0 = 2 * q, r1 = r0 + 1 < p.n ? r0 + 1 : r0;  // an odd n's last pair: its second row is never handed on
    const T *w0 = W + r0 * p.ldb, *w1 = W + r1 * p.ldb;
    float s0 = 0.0f, s1 = 0.0f;
    auto dot = [&](const uint4 &a, const uint4 &b, const uint4 &v) {
      const uint32_t wa[4] = {a.x, a.y, a.z, a.w}, wb[4] = {b.x, b.y, b.z, b.w}, wv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 fa = pair_of<T>::unpack(wa[i]), fb = pair_of<T>::unpack(wb[i]), fv = pair_of<T>::unpack(wv[i]);
        s0 = fmaf(fa.x, fv.x, fmaf(fa.y, fv.y, s0));
        s1 = fmaf(fb.x, fv.x, fmaf(fb.y, fv.y, s1));
      }
    };
#pragma unroll 4
    for (int64_t c = 8 * lane; c < kwhole; c += 256)
      dot(__ldg(reinterpret_cast<const uint4 *>(w0 + c)), __ldg(reinterpret_cast<const uint4 *>(w1 + c)), __ldg(reinterpret_cast<const uint4 *>(x + c)));
    if (kwhole < p.k) {  // the last piece, checked
      const int64_t c = kwhole + 8 * lane;
      dot(gemm_decode_chunk(w0, c, p.k), gemm_decode_chunk(w1, c, p.k), gemm_decode_chunk(x, c, p.k));
    }
    s0 = warp_reduce(s0, plus()), s1 = warp_reduce(s1, plus());
    if (lane == 0) epi(0, r0, s0, s1);
  }
#endif
}

// The linear backward's first pass over dy (and preact): dh = dy act'(preact), written to dh
// (when dh is not NULL: act is not NONE), and the column sums of dh over each block of rows of
// GPUOPS__LIN_ROWS, written to part[row block][column] (f32, from dh before its rounding). A block
// of 32 x 8 threads covers 64 columns: lane l takes columns 2l and 2l + 1 (pairs: a warp reads
// 128 contiguous bytes of a row), threadIdx.y every 8th row; the 8 partial sums of a column are
// then added in a fixed order, so db has the same bits on every run. Memory-bound: it reads dy
// and preact once and writes dh once.
template <class T>
__global__ void __launch_bounds__(256) linear_bwd_dh(T *dh, float *part, const T *dy, const T *preact, int64_t batch, int64_t out, int act) {
  __shared__ float2 sums[8][32];
  const int64_t col = blockIdx.x * 64 + 2 * threadIdx.x, row_blocks = (batch + GPUOPS__LIN_ROWS - 1) / GPUOPS__LIN_ROWS;
  for (int64_t rb = blockIdx.y; rb < row_blocks; rb += gridDim.y) {
    const int64_t r1 = (rb + 1) * GPUOPS__LIN_ROWS < batch ? (rb + 1) * GPUOPS__LIN_ROWS : batch;
    float2 s = make_float2(0.0f, 0.0f);
    if (col < out) {
      const bool two = col + 1 < out;
      for (int64_t r = rb * GPUOPS__LIN_ROWS + threadIdx.y; r < r1; r += 8) {
        float g0, g1;
        gemm_load_pair(dy + (r * out + col), two, g0, g1);
        if (dh) {
          float h0, h1;
          gemm_load_pair(preact + (r * out + col), two, h0, h1);
          g0 = activate_grad_times_dyn(act, g0, h0), g1 = two ? activate_grad_times_dyn(act, g1, h1) : 0.0f;
          gemm_store_pair(dh + (r * out + col), two, g0, g1);
        }
        s.x += g0, s.y += g1;
      }
    }
    sums[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < out) {
      float2 t = sums[0][threadIdx.x];
      for (int y = 1; y < 8; ++y) t.x += sums[y][threadIdx.x].x, t.y += sums[y][threadIdx.x].y;
      part[rb * out + col] = t.x;
      if (col + 1 < out) part[rb * out + col + 1] = t.y;
    }
    __syncthreads();
  }
}

// The MSE loss (gpuops_mse_loss_*), first pass: block b sums (y - t)^2 over its share of the
// elements (a grid-stride walk; the grid is fixed by n, so the shares are too) and writes dy =
// scale (y - t); its partial goes to part[b]. Second pass: one block adds the partials in order.
// Memory-bound: y and t read once, dy written once.
template <class T> __global__ void __launch_bounds__(256) mse_loss_partial(float *part, T *dy, const T *y, const T *t, int64_t n, float scale) {
  __shared__ float scratch[32];
  float s = 0.0f;
  for (int64_t i = blockIdx.x * 256 + threadIdx.x; i < n; i += (int64_t)gridDim.x * 256) {
    const float d = to_f32(y[i]) - to_f32(t[i]);
    s = fmaf(d, d, s);
    if (dy) dy[i] = from_f32<T>(scale * d);
  }
  s = block_reduce(s, plus(), 0.0f, scratch);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
// (Templates, like every kernel here, so that a header included by several translation units
// defines each kernel only where it is launched.)
template <int = 0> __global__ void __launch_bounds__(256) mse_loss_final(float *loss, const float *part, int parts, float inv_n) {
  __shared__ float scratch[32];
  float s = 0.0f;
  for (int i = threadIdx.x; i < parts; i += 256) s += part[i];
  s = block_reduce(s, plus(), 0.0f, scratch);
  if (threadIdx.x == 0) *loss = s * inv_n;
}

// One AdamW step (gpuops_adamw_step_*), elementwise in f32; bc1 = 1 - b1^t and bc2 = 1 - b2^t come
// from the host. Memory-bound: 16 bytes read and 14 written per weight.
template <class T>
__global__ void __launch_bounds__(256) adamw_step(float *w, float *m, float *v, T *w16, const float *g, int64_t n, float lr, float b1, float b2,
                                                  float eps, float wd, float bc1, float bc2) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float gi = g[i];
    float wi = w[i];
    wi -= lr * wd * wi;
    const float mi = b1 * m[i] + (1.0f - b1) * gi, vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    wi -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    w[i] = wi, m[i] = mi, v[i] = vi;
    if (w16) w16[i] = from_f32<T>(wi);
  }
}

// db[j] = sum over row blocks of part[.][j], in order.
template <int = 0> __global__ void linear_bwd_db(float *db, const float *part, int64_t parts, int64_t out) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < out; j += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int64_t r = 0; r < parts; ++r) s += part[r * out + j];
    db[j] = s;
  }
}

}  // namespace gpuops

// ---- 9.3 Production kernels, continued: Hopper wgmma (sm_90a) -----------------------------------
// The GEMM on the core's Hopper engine (gemm_wgmma, section 1.7): its tensor maps, its launch for
// a gemm_params problem, and the choice of tile configuration.
namespace gpuops {

// ---- launch side (implementation only) ----
#if defined(GPUOPS_IMPLEMENTATION)
// The tensor maps of A and B (as stored) for configuration Cfg; mn_a / mn_b: the operand is
// MN-major (A stored K x M, B stored K x N).
template <class T, class Cfg>
gpuops_status gemm_wgmma_maps(CUtensorMap *ma, CUtensorMap *mb, const void *a, const void *b, int64_t m, int64_t n, int64_t k,
                              int64_t lda, int64_t ldb, bool mn_a, bool mn_b) {
  constexpr CUtensorMapDataType dt = wgmma_tma_dtype<T>();
  const gpuops_status sa = mn_a ? tma_map_2d(ma, a, dt, k, m, lda, 64, 64) : tma_map_2d(ma, a, dt, m, k, lda, 64, Cfg::BM);
  if (sa != GPUOPS_OK) return sa;
  return mn_b ? tma_map_2d(mb, b, dt, k, n, ldb, 64, 64) : tma_map_2d(mb, b, dt, n, k, ldb, 64, Cfg::BN / Cfg::CLUSTER);
}

// gemm_wgmma with configuration Cfg for the problem p (a gemm_params, section 9.1: a, b, m, n, k,
// lda, ldb, trans_a, trans_b) and the epilogue epi (the Epi contract above). group: the raster's
// group height. Returns as launch_gemm_wgmma.
template <class T, class Cfg, class P, class Epi>
gpuops_status launch_gemm_wgmma_config(const P &p, const Epi &epi, cudaStream_t stream, int group = kWgmmaGroup) {
  static_assert(std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value, "gemm_wgmma: f16 or bf16");
  if (current_device().cc != 90) return GPUOPS_ERR_UNSUPPORTED;  // sm_90a code runs on compute capability 9.0 only
  const bool mn_a = p.trans_a != 0, mn_b = p.trans_b == 0;       // MN-major operands: wgmma's transpose bits
  if (p.m > kWgmmaMaxExtent || p.n > kWgmmaMaxExtent || p.k > kWgmmaMaxExtent) return GPUOPS_ERR_UNSUPPORTED;
  if (p.m == 0 || p.n == 0) return GPUOPS_OK;
  const wgmma_shape s = {p.m, p.n, p.k, group > 0 ? group : 1};
  // The layout's kernel; a build without it says UNSUPPORTED whatever the operands, then the TMA's
  // rule on them (MISALIGNED).
  auto run = [&](auto ta, auto tb) -> gpuops_status {
    constexpr bool kA = decltype(ta)::value, kB = decltype(tb)::value;
    if (!gemm_wgmma_built<T, Cfg, kA, kB, Epi>()) return GPUOPS_ERR_UNSUPPORTED;
    CUtensorMap ma, mb;
    const gpuops_status sm = gemm_wgmma_maps<T, Cfg>(&ma, &mb, p.a, p.b, p.m, p.n, p.k, p.lda, p.ldb, kA, kB);
    if (sm != GPUOPS_OK) return sm;
    return gemm_wgmma_launch<T, Cfg, kA, kB>(ma, mb, s, epi, stream);
  };
  const std::false_type no;
  const std::true_type yes;
  if (!mn_a && !mn_b) return run(no, no);
  if (!mn_a && mn_b) return run(no, yes);
  if (mn_a && !mn_b) return run(yes, no);
  return run(yes, yes);
}

// ---- dispatch policy (measured by tools/tune_wgmma.cu; its header has the numbers) ----
// The configurations the dispatch chooses from:
//   large   128 x 256, B multicast to a pair (cluster 2): the most work per byte of shared memory,
//           the best at 4096^3 and up when K is long;
//   small   128 x 128 ping-pong, cluster 2: twice the tiles, and each consumer's epilogue hidden
//           behind the other's main loop: the best when K is short (4095 x 4097 x 1023: 5x cuBLAS)
//           or the large tiles would leave SMs idle;
//   rows    64 x 128, consumers side by side (m <= 64: decode), with K split over a pair of
//           blocks where that still fits the device in one wave.
using wgmma_tile_large = wgmma_tile<128, 256, 4, 2>;
using wgmma_tile_small = wgmma_tile<128, 128, 6, 2, wgmma_mode::pingpong>;
using wgmma_tile_rows = wgmma_tile<64, 128, 8, 1, wgmma_mode::split_n>;
using wgmma_tile_rows_ksplit = wgmma_tile<64, 128, 8, 1, wgmma_mode::split_n, 2>;
constexpr int64_t kWgmmaRows = 64;         // m up to this: the rows configurations
constexpr int64_t kWgmmaShortK = 2048;     // k up to this: the small (ping-pong) configuration
constexpr int64_t kWgmmaSplitMinK = 2048;  // the K split only where each half keeps 16+ K steps

// Whether the rules above give p the large configuration: rows past kWgmmaRows, K past
// kWgmmaShortK, and clusters of large tiles for at least half the SMs.
template <class P> bool gemm_wgmma_large(const P &p) {
  const int64_t pairs = ((p.m + 255) / 256) * ((p.n + 255) / 256);  // the large configuration's clusters of tiles
  return p.m > kWgmmaRows && p.k > kWgmmaShortK && 2 * pairs >= current_device().sms;
}

// The Hopper GEMM for any problem: the configuration by the rules above, then
// launch_gemm_wgmma_config. P and Epi as there.
template <class T, class P, class Epi> gpuops_status gemm_wgmma_run(const P &p, const Epi &epi, cudaStream_t stream) {
  if (p.m <= kWgmmaRows) {
    const int64_t tiles = (p.n + 127) / 128;
    if (2 * tiles <= current_device().sms && p.k >= kWgmmaSplitMinK) return launch_gemm_wgmma_config<T, wgmma_tile_rows_ksplit>(p, epi, stream);
    return launch_gemm_wgmma_config<T, wgmma_tile_rows>(p, epi, stream);
  }
  if (gemm_wgmma_large(p)) return launch_gemm_wgmma_config<T, wgmma_tile_large>(p, epi, stream);
  return launch_gemm_wgmma_config<T, wgmma_tile_small>(p, epi, stream);
}

// launch_gemm_wgmma<T, TC>(p, epi, stream): the Hopper tensor-core GEMM (the WGMMA version), T =
// __half or __nv_bfloat16 operands, TC = C's type; p and epi as section 9.1 defines them. Host
// side, asynchronous on `stream`, nothing allocated or synchronized. Returns GPUOPS_OK (m or n = 0:
// nothing launched; k = 0: epi gets zeros), GPUOPS_ERR_UNSUPPORTED (a device other than compute
// capability 9.0, a build without sm_90a code, a driver without the TMA, a size past 2^31 - 513),
// GPUOPS_ERR_MISALIGNED (a or b not 16-byte aligned, or lda or ldb not a multiple of 8 elements:
// the TMA's rule; nothing launched), GPUOPS_ERR_CUDA. The arguments are the caller's to check.
// A call without bias, activation, residual or preact runs the kernels of gemm_epilogue_plain
// (chosen here, once per call), whose stores are inlined per accumulator pair, except on the large
// configuration: there its consumers store a tile with the tensor cores idle, and the staged
// epilogue of gemm_epilogue (coalesced stores, one copy of the code) measured 0.93x cuBLAS at
// 4096^3 against 0.89x (docs/performance.md, "The fused epilogue, straight-line"). On the ping-pong
// tiles the inlined stores overlap the other consumer's main loop (1024^3: 0.63-0.66x against 0.58x).
#define GPUOPS__GEMM_WGMMA 1
template <class T, class TC> gpuops_status launch_gemm_wgmma(const gemm_params &p, const gemm_epilogue<TC> &epi, cudaStream_t stream) {
  if (epi.plain() && !gemm_wgmma_large(p)) return gemm_wgmma_run<T>(p, gemm_epilogue_plain<TC>(epi), stream);
  return gemm_wgmma_run<T>(p, epi, stream);
}
#endif  // GPUOPS_IMPLEMENTATION

}  // namespace gpuops

// ---- 9.4 Dispatch policy ------------------------------------------------------------------------
namespace gpuops {

// The configurations compiled in. WMMA: 128 x 128 block tiles, 4 warps of 64 x 64 (16 accumulator
// fragments a warp: 8 fragment loads per 16 mma, against 6 per 8 with 8 warps of 64 x 32), 4 stages
// of 32-deep k-tiles (80 KiB, two blocks per SM from sm_80; one on sm_70). tools/tune_mma.cu
// measured 0.27-0.29x cuBLAS at 4096^3 and 8192^3 against 0.20-0.21x for 8 warps of 64 x 32 with 3
// stages (an H200, bf16); 0.29x at 4096^3 on an H100 with the epilogue in straight lines. MMA_SYNC:
// 256 x 128 block tiles, 8 warps of 64 x 64 (128 accumulators a thread, one block per SM), 64-deep
// k-tiles of 48 KiB, as many stages as fit up to 4 (tune_mma on an H200: 0.43x cuBLAS at 4096^3 and
// 0.47x at 8192^3, against 0.40x and 0.44x for 128 x 256, whose kernel also spilled 32 bytes; on an
// H100 with the straight-line epilogue 0.49-0.50x at 4096^3, where 128-deep k-tiles in 2 stages
// gave 0.48-0.50x); and for few rows (m <= kGemmSkinnyRows: decode) or too few big tiles
// to fill the device, 64 x 32 tiles whose 128-deep k-tiles 4 warps split (summed in shared memory
// in order), up to 8 stages: a 4096-wide output already has 128 blocks streaming B, each with 7
// k-tiles of copies in flight, for a product that is memory-bound on B's bytes. Operands whose rows
// are not 16-byte aligned (odd leading dimensions) take the staged form: 128 x 128 tiles, 8 warps of
// 64 x 32 (64 accumulators, room for the staging registers; two blocks per SM), 32-deep k-tiles.
using gemm_wmma_128x128 = gemm_config<128, 128, 32, 2, 2, 4, 2, false>;
using gemm_mma_256x128 = gemm_config<256, 128, 64, 4, 2, 4, 1, true>;
using gemm_mma_skinny = gemm_config<64, 32, 128, 1, 1, 8, 1, true, 4>;
using gemm_mma_staged = gemm_config<128, 128, 32, 2, 4, 4, 2, true, 1, true>;
constexpr int kGemmSkinnyRows = 64;

}  // namespace gpuops

// ---- 9.5 Launcher and C entry points (implementation only) ----------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

inline gemm_params gemm_params_of(const gpuops__gemm_args &r) {
  gemm_params p;
  p.a = r.a, p.b = r.b, p.m = r.m, p.n = r.n, p.k = r.k, p.lda = r.lda, p.ldb = r.ldb;
  p.trans_a = r.op_a == GPUOPS_OP_T, p.trans_b = r.op_b == GPUOPS_OP_T;
  p.a_vec = ((uintptr_t)r.a & 15u) == 0 && r.lda % 8 == 0;
  p.b_vec = ((uintptr_t)r.b & 15u) == 0 && r.ldb % 8 == 0;
  return p;
}
template <class TC> gemm_epilogue<TC> gemm_epilogue_of(const gpuops__gemm_args &r) {
  gemm_epilogue<TC> e;
  e.c = static_cast<TC *>(r.c), e.bias = static_cast<const TC *>(r.epi.bias), e.residual = static_cast<const TC *>(r.epi.residual);
  e.preact = static_cast<TC *>(r.epi.preact);
  e.m = r.m, e.n = r.n, e.ldc = r.ldc, e.ldr = r.epi.ldr, e.ldp = r.epi.ldp, e.alpha = r.alpha, e.beta = r.beta, e.act = (int)r.epi.act;
  return e;
}

// The epilogue of a call as WMMA and MMA_SYNC take it.
template <class T, class TC> gemm_epilogue_either<T> gemm_either(const gemm_epilogue<TC> &e) {
  gemm_epilogue_either<T> x = {};
  if constexpr (std::is_same<TC, float>::value) x.f32_epi = e, x.f32 = 1;
  else x.narrow = e, x.f32 = 0;
  return x;
}

// Launches Kernel over the output tiles with `smem` dynamic shared bytes (raising the block's limit
// when it passes 48 KiB; every call: the attribute is per device), or returns UNSUPPORTED when the
// device lacks the memory or the build the code.
template <auto Kernel, class Cfg, class T, class... X>
gpuops_status gemm_launch(const gemm_params &p, const gemm_epilogue_either<T> &epi, size_t smem, int need_cc, cudaStream_t stream, X... extra) {
  if (!built_for<Kernel>(need_cc) || smem > current_device().smem_optin) return GPUOPS_ERR_UNSUPPORTED;
  if (smem > 48 * 1024) {
    const gpuops_status set = cuda_call_status(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    if (set != GPUOPS_OK) return set;
  }
  const int64_t tm = (p.m + Cfg::BM - 1) / Cfg::BM, tn = (p.n + Cfg::BN - 1) / Cfg::BN;
  Kernel<<<tile_grid(tm * tn), Cfg::THREADS, smem, stream>>>(p, epi, tm, tn, extra...);
  return launch_status();
}

template <class T, class TC> gpuops_status gemm_run_wmma(const gemm_params &p, const gemm_epilogue<TC> &epi_c, cudaStream_t stream) {
  using C = gemm_wmma_128x128;
  const int cc = std::is_same<T, __half>::value ? 70 : 80;
  if (current_device().cc < cc) return GPUOPS_ERR_UNSUPPORTED;
  const gemm_epilogue_either<T> epi = gemm_either<T>(epi_c);
  switch (p.trans_a * 2 + p.trans_b) {
  case 0: return gemm_launch<gemm_wmma<C, T, false, false>, C>(p, epi, C::SMEM_BYTES, cc, stream);
  case 1: return gemm_launch<gemm_wmma<C, T, false, true>, C>(p, epi, C::SMEM_BYTES, cc, stream);
  case 2: return gemm_launch<gemm_wmma<C, T, true, false>, C>(p, epi, C::SMEM_BYTES, cc, stream);
  default: return gemm_launch<gemm_wmma<C, T, true, true>, C>(p, epi, C::SMEM_BYTES, cc, stream);
  }
}

// MMA_SYNC with configuration C, as many stages (2..C::STAGES; a staged one 3..) as the device holds.
template <class C, class T, class TC> gpuops_status gemm_run_mma_config(const gemm_params &p, const gemm_epilogue<TC> &epi_c, cudaStream_t stream) {
  int stages = C::STAGES;
  while (stages > (C::STAGED ? 3 : 2) && C::smem_bytes(stages) > current_device().smem_optin) --stages;
  const size_t smem = C::smem_bytes(stages);
  const gemm_epilogue_either<T> epi = gemm_either<T>(epi_c);
  switch (p.trans_a * 2 + p.trans_b) {
  case 0: return gemm_launch<gemm_mma_sync<C, T, false, false>, C>(p, epi, smem, 80, stream, stages);
  case 1: return gemm_launch<gemm_mma_sync<C, T, false, true>, C>(p, epi, smem, 80, stream, stages);
  case 2: return gemm_launch<gemm_mma_sync<C, T, true, false>, C>(p, epi, smem, 80, stream, stages);
  default: return gemm_launch<gemm_mma_sync<C, T, true, true>, C>(p, epi, smem, 80, stream, stages);
  }
}

// Few rows: gemm_decode for an NT product with m <= kGemmDecodeRows and 16-byte rows (the rule is
// gemm_decode_fits; AUTO's order is gemm_run's), a block per 16 rows of W; for one row
// of x, gemm_gemv (8 blocks of 8 warps per SM at most, walking the row pairs). Returns
// UNSUPPORTED where the build lacks sm_80 code. With 9 to 16 rows, two groups of 8 per block ran
// slower than WGMMA's rows configuration on W of 11008 x 4096 (an H200: 40 against 32 us), so
// the rule stops at 8.
constexpr int64_t kGemmDecodeRows = 8;
inline bool gemm_decode_fits(const gemm_params &p) { return p.m <= kGemmDecodeRows && !p.trans_a && p.trans_b && p.a_vec && p.b_vec; }
template <class T, class TC> gpuops_status gemm_run_decode(const gemm_params &p, const gemm_epilogue<TC> &epi, cudaStream_t stream) {
  if (p.m == 1) {  // one row of x: the GEMV
    if (!built_for<gemm_gemv<T>>(80)) return GPUOPS_ERR_UNSUPPORTED;
    const int64_t warps = (p.n + 1) / 2, cap = 8 * (int64_t)current_device().sms, blocks = (warps + 7) / 8;
    gemm_gemv<T><<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, stream>>>(p, gemm_either<T>(epi));
    return launch_status();
  }
  if (!built_for<gemm_decode<T, 1>>(80)) return GPUOPS_ERR_UNSUPPORTED;
  gemm_decode<T, 1><<<tile_grid((p.n + 15) / 16), 32 * kGemmDecodeWarps, 0, stream>>>(p, gemm_either<T>(epi), gemm_decode_kper(p.k));
  return launch_status();
}

// MMA_SYNC's configuration: `config` 1 (256 x 128), 2 (skinny) or 3 (staged) forces one (the tests
// and the bench call each); 0 picks the skinny one for m <= kGemmSkinnyRows or where the 256 x 128
// tiles would fill less than half the SMs once (1024^3: 32 tiles on 132 SMs), else the staged one
// where an operand's rows are not 16-byte aligned, else 256 x 128.
template <class T, class TC> gpuops_status gemm_run_mma(const gemm_params &p, const gemm_epilogue<TC> &epi, int config, cudaStream_t stream) {
  if (current_device().cc < 80) return GPUOPS_ERR_UNSUPPORTED;
  if (config == 0) {
    const int64_t big = ((p.m + 255) / 256) * ((p.n + 127) / 128);
    config = p.m <= kGemmSkinnyRows || 2 * big < current_device().sms ? 2 : p.a_vec && p.b_vec ? 1 : 3;
  }
  if (config == 1) return gemm_run_mma_config<gemm_mma_256x128, T, TC>(p, epi, stream);
  if (config == 3) return gemm_run_mma_config<gemm_mma_staged, T, TC>(p, epi, stream);
  return gemm_run_mma_config<gemm_mma_skinny, T, TC>(p, epi, stream);
}

// One GEMM: k = 0 runs the epilogue alone; otherwise the version asked for, or for AUTO the
// few-rows kernel where gemm_decode_fits (before WGMMA where it fills at most one wave, else after
// it), else the first of WGMMA, MMA_SYNC, WMMA that this device, build and shape can run.
template <class T, class TC> gpuops_status gemm_run(const gemm_params &p, const gemm_epilogue<TC> &epi, gpuops_algo algo, cudaStream_t stream) {
  if (p.m == 0 || p.n == 0) return GPUOPS_OK;
  if (p.k == 0) {
    const int64_t pairs = p.m * ((p.n + 1) / 2), blocks = (pairs + 255) / 256, cap = 8 * (int64_t)current_device().sms;
    gemm_epilogue_only<TC><<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, stream>>>(epi);
    return launch_status();
  }
  gpuops_status st = GPUOPS_ERR_UNSUPPORTED;
  // The few-rows kernel first where its blocks are all resident at once (or for one row); past one
  // wave WGMMA's rows configuration reads W faster (H100, 8 x 11008 x 4096: 35.9 against 40.4 us,
  // 688 blocks of gemm_decode for 528 places), so it comes second there.
  const bool decode = algo == GPUOPS_ALGO_AUTO && gemm_decode_fits(p) && current_device().cc >= 80;
  const bool decode_first = decode && (p.m == 1 || (p.n + 15) / 16 <= full_grid<gemm_decode<T, 1>>());
  if (decode_first) {
    st = gemm_run_decode<T, TC>(p, epi, stream);
    if (st != GPUOPS_ERR_UNSUPPORTED) return st;
  }
  if (algo == GPUOPS_ALGO_WGMMA || algo == GPUOPS_ALGO_AUTO) {
#ifdef GPUOPS__GEMM_WGMMA
    st = launch_gemm_wgmma<T, TC>(p, epi, stream);
#endif
    // AUTO falls back where the TMA cannot take the operands (MISALIGNED) as where wgmma is absent.
    if (algo == GPUOPS_ALGO_WGMMA || (st != GPUOPS_ERR_UNSUPPORTED && st != GPUOPS_ERR_MISALIGNED)) return st;
  }
  if (decode && !decode_first) {
    st = gemm_run_decode<T, TC>(p, epi, stream);
    if (st != GPUOPS_ERR_UNSUPPORTED) return st;
  }
  if (algo == GPUOPS_ALGO_MMA_SYNC || algo == GPUOPS_ALGO_AUTO) {
    st = gemm_run_mma<T, TC>(p, epi, 0, stream);
    if (algo == GPUOPS_ALGO_MMA_SYNC || st != GPUOPS_ERR_UNSUPPORTED) return st;
  }
  return gemm_run_wmma<T, TC>(p, epi, stream);
}

// The operand type T and C's type TC of a call, then f(T *, TC *).
template <class F> gpuops_status gemm_dispatch(gpuops__dtype ab, gpuops__dtype ct, F &&f) {
  return dispatch_dtype<dtype_case<GPUOPS__F16, __half>, dtype_case<GPUOPS__BF16, __nv_bfloat16>>(ab, [&](auto *t) {
    using T = typename std::remove_pointer<decltype(t)>::type;
    if (ct == GPUOPS__F32) return f(t, static_cast<float *>(nullptr));
    if (ct == ab) return f(t, static_cast<T *>(nullptr));
    return GPUOPS_ERR_INVALID_ARGUMENT;
  });
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__gemm_launch(const gpuops__gemm_args *r) {
  using namespace gpuops;
  return gemm_dispatch(r->ab, r->ct, [&](auto *t, auto *tc) {
    using T = typename std::remove_pointer<decltype(t)>::type;
    using TC = typename std::remove_pointer<decltype(tc)>::type;
    return gemm_run<T, TC>(gemm_params_of(*r), gemm_epilogue_of<TC>(*r), r->algo, r->stream);
  });
}

// The linear backward: the dh / db pass, the ordered sum of db's partials, then dx = dh W and
// dW = dh^T x as GEMMs of the version asked for.
extern "C" gpuops_status gpuops__linbwd_launch(const gpuops__linbwd_args *r) {
  using namespace gpuops;
  return dispatch_dtype<dtype_case<GPUOPS__F16, __half>, dtype_case<GPUOPS__BF16, __nv_bfloat16>>(r->dt, [&](auto *tp) {
    using T = typename std::remove_pointer<decltype(tp)>::type;
    const cudaStream_t stream = r->stream;
    const int64_t B = r->batch, I = r->in, O = r->out, parts = (B + GPUOPS__LIN_ROWS - 1) / GPUOPS__LIN_ROWS;
    const bool act = r->act != GPUOPS_ACT_NONE;
    T *dh = act ? static_cast<T *>(r->workspace) : nullptr;
    const T *g = act ? dh : static_cast<const T *>(r->dy);  // what the GEMMs read as dh
    float *part = reinterpret_cast<float *>(static_cast<char *>(r->workspace) + (act ? (B * O * 2 + 15) / 16 * 16 : 0));
    if (B > 0 && O > 0 && (act || r->db)) {
      const int64_t gy = parts < 65535 ? parts : 65535;
      linear_bwd_dh<T><<<dim3((unsigned)((O + 63) / 64), (unsigned)gy), dim3(32, 8), 0, stream>>>(
          dh, part, static_cast<const T *>(r->dy), static_cast<const T *>(r->preact), B, O, (int)r->act);
      const gpuops_status st = launch_status();
      if (st != GPUOPS_OK) return st;
    }
    if (r->db && O > 0) {
      linear_bwd_db<><<<(unsigned)((O + 255) / 256 < 4096 ? (O + 255) / 256 : 4096), 256, 0, stream>>>(r->db, part, B > 0 ? parts : 0, O);
      const gpuops_status st = launch_status();
      if (st != GPUOPS_OK) return st;
    }
    gemm_epilogue<float> none32 = {};
    gemm_epilogue<T> none16 = {};
    if (r->dx && B > 0 && I > 0) {  // dx (B x I) = dh (B x O) W (O x I)
      gemm_params p = {g, r->w, B, I, O, O < 1 ? 1 : O, I, 0, 0, 0, 0};
      p.a_vec = ((uintptr_t)g & 15u) == 0 && p.lda % 8 == 0, p.b_vec = ((uintptr_t)r->w & 15u) == 0 && p.ldb % 8 == 0;
      gemm_epilogue<T> e = none16;
      e.c = static_cast<T *>(r->dx), e.m = B, e.n = I, e.ldc = I, e.alpha = 1.0f;
      const gpuops_status st = gemm_run<T, T>(p, e, r->algo, stream);
      if (st != GPUOPS_OK) return st;
    }
    if (r->dw && O > 0 && I > 0) {  // dW (O x I) = dh^T (O x B) x (B x I)
      gemm_params p = {g, r->x, O, I, B, O, I, 1, 0, 0, 0};
      p.a_vec = ((uintptr_t)g & 15u) == 0 && p.lda % 8 == 0, p.b_vec = ((uintptr_t)r->x & 15u) == 0 && p.ldb % 8 == 0;
      gemm_epilogue<float> e = none32;
      e.c = r->dw, e.m = O, e.n = I, e.ldc = I, e.alpha = 1.0f;
      const gpuops_status st = gemm_run<T, float>(p, e, r->algo, stream);
      if (st != GPUOPS_OK) return st;
    }
    return GPUOPS_OK;
  });
}

// The MSE loss (two launches) and the AdamW step.
extern "C" gpuops_status gpuops__train_launch(const gpuops__train_args *r) {
  using namespace gpuops;
  return dispatch_dtype<dtype_case<GPUOPS__F16, __half>, dtype_case<GPUOPS__BF16, __nv_bfloat16>>(r->dt, [&](auto *tp) {
    using T = typename std::remove_pointer<decltype(tp)>::type;
    if (r->op == GPUOPS__TRAIN_MSE) {
      const int blocks = (int)(gpuops_mse_loss_workspace_size(r->n) / 4);
      float *part = static_cast<float *>(r->workspace);
      if (blocks > 0) {
        mse_loss_partial<T><<<blocks, 256, 0, r->stream>>>(part, static_cast<T *>(r->o16), static_cast<const T *>(r->a), static_cast<const T *>(r->b), r->n,
                                                          (float)(2.0 / (double)r->n));
        const gpuops_status st = launch_status();
        if (st != GPUOPS_OK) return st;
      }
      mse_loss_final<><<<1, 256, 0, r->stream>>>(r->out, part, blocks, r->n > 0 ? (float)(1.0 / (double)r->n) : 0.0f);
      return launch_status();
    }
    const int64_t blocks = (r->n + 255) / 256, cap = 8 * (int64_t)current_device().sms;
    const float bc1 = (float)(1.0 - pow((double)r->beta1, (double)r->step)), bc2 = (float)(1.0 - pow((double)r->beta2, (double)r->step));
    adamw_step<T><<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, r->stream>>>(r->w, r->m, r->v, static_cast<T *>(r->o16), r->g, r->n, r->lr, r->beta1,
                                                                                 r->beta2, r->eps, r->wd, bc1, bc2);
    return launch_status();
  });
}
#endif  // GPUOPS_IMPLEMENTATION

#endif  // GPUOPS_NO_GEMM

// ==== 10. Attention =============================================================================
#ifndef GPUOPS_NO_ATTENTION
namespace gpuops {

// ---- 10.1 Contract and building blocks ---------------------------------------------------------
// O = softmax(scale Q K^T + mask) V per (batch, query head) (gpuops.h section 10 has the contract).
// Roofline: the forward does 4 Sq Sk D flops per head (two matrix products; causal about half)
// and must move Q, K, V and O once: with Sq = Sk = S the intensity is about S / 2 flops per byte
// (16-bit), so every seqlen past a few hundred is compute-bound on the tensor cores, and the
// question is only how close to the mma.sync peak the inner loop runs. The naive version also
// writes and reads the S x S scores (4 + 4 + 2 + 2 bytes an element per pass: memory-bound).
struct attn_params {
  const void *q, *k, *v;
  void *o;
  float *lse;
  int64_t qs[3], ks[3], vs[3], os[3];  // batch, sequence, head strides (elements)
  int64_t batch, sq, sk, hq, group, d;  // group = heads_q / heads_kv
  int64_t off;                          // sk - sq: causal query i sees key j <= i + off
  float scale, scale_log2;              // scale, scale * log2(e)
  int causal;
  float *ws;                            // FLASH: running O, then (max, sum) pairs; backward: D
  // backward
  const void *dout, *oin;
  const float *lse_in;
  void *dq, *dk, *dv;
};

constexpr float kLn2 = 0.6931471805599453f;

// The sum over the 32 lanes of a warp, in every lane (a butterfly: the same bits in each lane).
__device__ __forceinline__ float attn_warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// The (tile, head) of block t of the tensor-core kernels' grids of heads x tiles (the forward's Q
// tiles of a (batch, head), the backward's key tiles of a (batch, kv head)), chosen so that the
// blocks resident together share a few heads' operands in L2. Without mask the tile runs fastest.
// Causal: heads in groups of hgroup (about one wave of blocks: attn_head_group), within a group the
// tile slowest (the caller makes tile 0 its longest walk, so the longest go first) and the group's
// heads fastest. (The tile slowest over all heads streamed 128 heads' operands at once at seqlen
// 4096: the WGMMA forward's MHA causal ran at 348 TFLOP/s against 509 grouped, its backward at 203
// against 302; H100.)
__device__ __forceinline__ void attn_block_order(int64_t t, int64_t heads, int64_t tiles, bool causal, int64_t hgroup, int64_t &tile, int64_t &head) {
  if (causal) {
    const int64_t grp = t / (hgroup * tiles), first = grp * hgroup, rem = t - grp * hgroup * tiles;
    const int64_t n = heads - first < hgroup ? heads - first : hgroup;  // heads in this (maybe last) group
    tile = rem / n, head = first + rem % n;
  } else {
    tile = t % tiles, head = t / tiles;
  }
}

// E = kD / 32 elements of a row held by one lane (elements lane, lane + 32, ...): coalesced loads,
// zero past head_dim.
template <class T, int E> __device__ __forceinline__ void attn_load_row(float (&r)[E], const T *row, int64_t d) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int e = 0; e < E; ++e) r[e] = lane + 32 * e < d ? to_f32(row[lane + 32 * e]) : 0.0f;
}

// ---- 10.2 Learning-path kernels: FLASH (flash attention 1's loop order) ------------------------
// A block per (batch, query head), 4 warps. K and V tiles of 16 keys are the outer loop, staged
// in shared memory (f32); every row of Q is the inner loop (a warp a row): its scores against the
// tile, the online-softmax update of its running (max, sum), and its running O (f32, in the
// workspace) read, rescaled and written back. Every tile re-reads and re-writes all of O: the
// traffic flash attention 2 removes by swapping the loops. CUDA cores, any storage type.
template <class T, int kD> __global__ void __launch_bounds__(128) attn_flash_fwd(const attn_params p) {
  constexpr int BC = 16, E = kD / 32;
  __shared__ float ks[BC][kD], vs[BC][kD];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t bh = blockIdx.x, b = bh / p.hq, h = bh % p.hq, hk = h / p.group;
  float *acc = p.ws + bh * p.sq * p.d;
  float2 *ml = reinterpret_cast<float2 *>(p.ws + p.batch * p.hq * p.sq * p.d) + bh * p.sq;
  const T *kb = static_cast<const T *>(p.k) + b * p.ks[0] + hk * p.ks[2];
  const T *vb = static_cast<const T *>(p.v) + b * p.vs[0] + hk * p.vs[2];
  for (int64_t i = warp; i < p.sq; i += 4) {
    for (int64_t c = lane; c < p.d; c += 32) acc[i * p.d + c] = 0.0f;
    if (lane == 0) ml[i] = make_float2(-INFINITY, 0.0f);
  }
  for (int64_t kv0 = 0; kv0 < p.sk; kv0 += BC) {
    __syncthreads();  // the previous tile is no longer read
    for (int x = threadIdx.x; x < BC * kD; x += 128) {
      const int r = x / kD, c = x % kD;
      const bool ok = kv0 + r < p.sk && c < p.d;
      ks[r][c] = ok ? to_f32(kb[(kv0 + r) * p.ks[1] + c]) : 0.0f;
      vs[r][c] = ok ? to_f32(vb[(kv0 + r) * p.vs[1] + c]) : 0.0f;
    }
    __syncthreads();
    for (int64_t i = warp; i < p.sq; i += 4) {
      if (p.causal && kv0 > i + p.off) continue;  // the row sees no key of this tile
      float qv[E], s[BC];
      attn_load_row<T, E>(qv, static_cast<const T *>(p.q) + b * p.qs[0] + i * p.qs[1] + h * p.qs[2], p.d);
      float mx = -INFINITY;
#pragma unroll
      for (int c = 0; c < BC; ++c) {
        float part = 0.0f;
#pragma unroll
        for (int e = 0; e < E; ++e) part += qv[e] * ks[c][lane + 32 * e];
        const int64_t j = kv0 + c;
        const float tot = attn_warp_sum(part);  // every lane, every key: the shuffles stay converged
        s[c] = (j < p.sk && (!p.causal || j <= i + p.off)) ? tot * p.scale_log2 : -INFINITY;
        mx = fmaxf(mx, s[c]);
      }
      const float2 st = ml[i];
      const float mn = fmaxf(st.x, mx), mu = mn == -INFINITY ? 0.0f : mn, alpha = exp2f(st.x - mu);
      float sum = st.y * alpha;
#pragma unroll
      for (int c = 0; c < BC; ++c) s[c] = exp2f(s[c] - mu), sum += s[c];
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const int c = lane + 32 * e;
        if (c < p.d) {
          float a = acc[i * p.d + c] * alpha;
#pragma unroll
          for (int r = 0; r < BC; ++r) a += s[r] * vs[r][c];
          acc[i * p.d + c] = a;
        }
      }
      __syncwarp();  // every lane has read ml[i]
      if (lane == 0) ml[i] = make_float2(mn, sum);
    }
  }
  __syncwarp();
  for (int64_t i = warp; i < p.sq; i += 4) {
    const float2 st = ml[i];
    const float inv = st.y == 0.0f ? 0.0f : 1.0f / st.y;
    T *orow = static_cast<T *>(p.o) + b * p.os[0] + i * p.os[1] + h * p.os[2];
    for (int64_t c = lane; c < p.d; c += 32) orow[c] = from_f32<T>(acc[i * p.d + c] * inv);
    if (p.lse && lane == 0) p.lse[bh * p.sq + i] = st.y == 0.0f ? -INFINITY : st.x * kLn2 + logf(st.y);
  }
}

// NAIVE's own steps between the library's GEMM and softmax: the causal mask (-inf) and the row's
// lse on the f32 scores S (sq x sk, tight), a warp a row; then P rounded to 16 bits.
template <class F = float>  // a template: a kernel in a header defined in every unit that includes it
__global__ void __launch_bounds__(256) attn_naive_mask_lse(F *s, float *lse, int64_t sq, int64_t sk, int64_t off, int causal) {
  const int lane = threadIdx.x & 31;
  const int64_t i = blockIdx.x * 8ll + (threadIdx.x >> 5);
  if (i >= sq) return;
  F *row = s + i * sk;
  online_softmax st = online_softmax::identity();
  for (int64_t j = lane; j < sk; j += 32) {
    if (causal && j > i + off) row[j] = -INFINITY;
    st.add(row[j]);
  }
  st = warp_combine(st);
  if (lse && lane == 0) lse[i] = st.s == 0.0f ? -INFINITY : st.m + logf(st.s);
}
template <class T> __global__ void __launch_bounds__(256) attn_naive_round(T *y, const float *x, int64_t n) {
  for (int64_t i = blockIdx.x * 256ll + threadIdx.x; i < n; i += (int64_t)gridDim.x * 256) y[i] = from_f32<T>(x[i]);
}

// ---- 10.3 Production kernels: FLASH2 forward; the backward -------------------------------------
// FLASH2 forward: a block per BM-row tile of Q of one (batch, head), 4 warps of 16 x MT rows each
// (flash attention 2's split: a warp owns whole rows, so the softmax needs no shared memory).
// Q lands once in shared memory (its fragments then stay in registers for head_dim <= 64); K and V
// tiles of BN keys stream through two shared-memory stages by cp.async, the next tile's copy in
// flight while the current one is multiplied. S = Q K^T (16 MT x BN a warp) and O += P V
// (16 MT x kD) run on mma.sync m16n8k16 with f32 accumulators; K's fragments come by ldmatrix, V's
// by ldmatrix .trans (V is stored key-major: the transpose is free), and each K or V fragment
// serves the warp's MT row tiles. Rows are 16-byte chunks XOR-swizzled (swizzle_chunk) so that
// every ldmatrix is conflict-free without padding. The softmax runs on the accumulators in
// registers: scores scaled by scale * log2(e) so each exponential is one ex2, the row maximum by
// two shuffles (4 lanes share a row of the fragment), the running sum kept per lane and reduced
// once at the end, O rescaled only when the maximum grows and divided by the sum once. P goes from
// the S accumulators straight into the A fragments of P V (the C layout of m16n8k16 is the A layout
// of the next product): it never touches shared memory. head_dim below kD (any multiple of 8) is
// zero-filled by the copies and not stored.
// Roofline: per K/V tile a warp does 2 x 16 MT x BN x kD multiply-adds for 2 x BN x kD x 2 bytes of
// ldmatrix reads: one ldmatrix.x4 (512 bytes, 4 cycles of the SM's 128 bytes a cycle) per 2 MT
// mma (about 1.5 cycles each at the mma.sync rate), so MT = 2 (head_dim <= 128) keeps shared memory
// under the tensor cores where MT = 1 did not; the two row tiles are also two independent chains
// for the scheduler while the other's exp2 (BN / 4 a lane per tile and row tile) runs. Causal
// blocks skip the tiles above the diagonal and start with the longest rows. head_dim 256 keeps
// MT = 1 (its O accumulators alone take 128 registers a tile).
template <int kD> struct attn_flash2_cfg {
  static constexpr int MT = kD <= 128 ? 2 : 1, BM = 64 * MT, BN = kD <= 128 ? 64 : 32, THREADS = 128;
  static constexpr bool kQRegs = kD <= 64;  // Q's fragments in registers (MT x kD / 4 registers a lane)
  static constexpr size_t kSmem = (size_t)(BM + 4 * BN) * kD * 2;  // Q, 2 stages of K and of V
};

// A rows x kD tile of 16-bit elements: element (r, c) of row r's 16-byte chunk c / 8, swizzled.
template <int kD, class T> __device__ __forceinline__ T *attn_at(T *tile, int r, int chunk) {
  return tile + r * kD + swizzle_chunk(r, chunk) * 8;
}
// Copies rows [0, R) of a tensor (row r at base + r * rs) into a tile: rows >= nrows and columns
// >= d zero-filled, 16 bytes a copy, all THREADS threads together.
template <int kD, int R, int THREADS, class T>
__device__ __forceinline__ void attn_copy_tile(T *tile, const T *base, int64_t rs, int64_t nrows, int64_t d) {
  constexpr int C = kD / 8;
#pragma unroll
  for (int x = threadIdx.x; x < R * C; x += THREADS) {
    const int r = x / C, c = x % C;
    const bool ok = r < nrows && c * 8 < d;
    cp_async16_zfill(attn_at<kD>(tile, r, c), ok ? base + r * rs + c * 8 : base, ok ? 16 : 0);
  }
}

template <class T, int kD> __global__ void __launch_bounds__(128) attn_flash2_fwd(const attn_params p) {
  using Cfg = attn_flash2_cfg<kD>;
  constexpr int MT = Cfg::MT, BM = Cfg::BM, BN = Cfg::BN, NB = BN / 8, ND = kD / 8, KS = kD / 16;
  extern __shared__ uint4 attn_smem[];
  T *sq = reinterpret_cast<T *>(attn_smem), *sk = sq + BM * kD, *sv = sk + 2 * BN * kD;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
  // Block -> (q tile, batch x head). Without mask the q tile runs fastest, so the blocks resident
  // together are the tiles of a few heads and read the same K and V (from L2 after the first);
  // causal: the q tile slowest and the longest rows first, so the short tiles fill the last wave.
  const int64_t bhs = p.batch * p.hq, tiles = (p.sq + BM - 1) / BM;
  const int64_t tr = p.causal ? blockIdx.x / bhs : blockIdx.x % tiles, bh = p.causal ? blockIdx.x % bhs : blockIdx.x / tiles;
  const int64_t b = bh / p.hq, h = bh % p.hq, hk = h / p.group;
  const int64_t q0 = (p.causal ? tiles - 1 - tr : tr) * BM;
  const int64_t qrows = p.sq - q0 < BM ? p.sq - q0 : BM;
  const T *qb = static_cast<const T *>(p.q) + b * p.qs[0] + q0 * p.qs[1] + h * p.qs[2];
  const T *kb = static_cast<const T *>(p.k) + b * p.ks[0] + hk * p.ks[2];
  const T *vb = static_cast<const T *>(p.v) + b * p.vs[0] + hk * p.vs[2];
  int64_t kv_end = p.sk;  // keys any row of the tile sees
  if (p.causal && q0 + qrows + p.off < kv_end) kv_end = q0 + qrows + p.off;
  const int64_t ntiles = kv_end > 0 ? (kv_end + BN - 1) / BN : 0;

  attn_copy_tile<kD, BM, 128>(sq, qb, p.qs[1], qrows, p.d);
  if (ntiles > 0) {
    const int64_t n0 = p.sk < BN ? p.sk : BN;
    attn_copy_tile<kD, BN, 128>(sk, kb, p.ks[1], n0, p.d);
    attn_copy_tile<kD, BN, 128>(sv, vb, p.vs[1], n0, p.d);
  }
  cp_async_commit();

  float o[MT][ND][4], m[MT][2], l[MT][2];
#pragma unroll
  for (int t = 0; t < MT; ++t) {
    m[t][0] = m[t][1] = -INFINITY, l[t][0] = l[t][1] = 0.0f;
#pragma unroll
    for (int n = 0; n < ND; ++n) o[t][n][0] = o[t][n][1] = o[t][n][2] = o[t][n][3] = 0.0f;
  }
  uint32_t qf[Cfg::kQRegs ? MT : 1][Cfg::kQRegs ? KS : 1][4];
  const int wrow = warp * 16 * MT;
  const int64_t row0 = q0 + wrow + g;  // this lane's rows: row0 + 16 t + 8 r for row tile t

  for (int64_t it = 0; it < ntiles; ++it) {
    const int st = (int)(it & 1);
    if (it + 1 < ntiles) {  // the next tile's copy, in flight during this one
      const int64_t kv1 = (it + 1) * BN, n1 = p.sk - kv1 < BN ? p.sk - kv1 : BN;
      attn_copy_tile<kD, BN, 128>(sk + (st ^ 1) * BN * kD, kb + kv1 * p.ks[1], p.ks[1], n1, p.d);
      attn_copy_tile<kD, BN, 128>(sv + (st ^ 1) * BN * kD, vb + kv1 * p.vs[1], p.vs[1], n1, p.d);
    }
    cp_async_commit();
    cp_async_wait(1);
    __syncthreads();
    const T *ks = sk + st * BN * kD, *vs = sv + st * BN * kD;
    if constexpr (Cfg::kQRegs) {
      if (it == 0) {
#pragma unroll
        for (int t = 0; t < MT; ++t)
#pragma unroll
          for (int kk = 0; kk < KS; ++kk) ldmatrix_x4(qf[t][kk], attn_at<kD>(sq, wrow + 16 * t + (lane & 15), 2 * kk + (lane >> 4)));
      }
    }
    // S = Q K^T: 16 MT x BN for this warp, each K fragment used by the MT row tiles.
    float s[MT][NB][4];
#pragma unroll
    for (int t = 0; t < MT; ++t)
#pragma unroll
      for (int n = 0; n < NB; ++n) s[t][n][0] = s[t][n][1] = s[t][n][2] = s[t][n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int t = 0; t < MT; ++t) {
        if constexpr (Cfg::kQRegs) a[t][0] = qf[t][kk][0], a[t][1] = qf[t][kk][1], a[t][2] = qf[t][kk][2], a[t][3] = qf[t][kk][3];
        else ldmatrix_x4(a[t], attn_at<kD>(sq, wrow + 16 * t + (lane & 15), 2 * kk + (lane >> 4)));
      }
#pragma unroll
      for (int n = 0; n < NB; n += 2) {
        uint32_t r[4];
        ldmatrix_x4(r, attn_at<kD>(ks, n * 8 + (lane >> 4) * 8 + (lane & 7), 2 * kk + ((lane >> 3) & 1)));
        const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
#pragma unroll
        for (int t = 0; t < MT; ++t) {
          mma_m16n8k16<T>(s[t][n], a[t], b0, s[t][n]);
          mma_m16n8k16<T>(s[t][n + 1], a[t], b1, s[t][n + 1]);
        }
      }
    }
    // The online softmax of this lane's 2 MT rows, in the log2 domain: p = exp2(s c - m) with
    // c = scale log2(e) > 0, one FFMA and one ex2 a score, the row maximum of s c being c times
    // that of s. A scale <= 0 (rare) is applied to s first and c = 1. Masked scores (keys past the
    // end, causal keys above the diagonal; edge tiles only) become -inf: p = 0.
    const int64_t kv0 = it * BN;
    const bool edge = kv0 + BN > p.sk || (p.causal && kv0 + BN - 1 > q0 + wrow + p.off);
    const bool prescale = !(p.scale_log2 > 0.0f);
    const float c = prescale ? 1.0f : p.scale_log2;
    if (prescale || edge) {
#pragma unroll
      for (int t = 0; t < MT; ++t)
#pragma unroll
        for (int n = 0; n < NB; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if (prescale) s[t][n][e] *= p.scale_log2;
            const int64_t j = kv0 + n * 8 + 2 * t4 + (e & 1), i = row0 + 16 * t + 8 * (e >> 1);
            if (edge && (j >= p.sk || (p.causal && j > i + p.off))) s[t][n][e] = -INFINITY;
          }
    }
#pragma unroll
    for (int t = 0; t < MT; ++t)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < NB; ++n) mx = fmaxf(mx, fmaxf(s[t][n][2 * r], s[t][n][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float mn = fmaxf(m[t][r], mx * c), mu = mn == -INFINITY ? 0.0f : mn, alpha = exp2_approx(m[t][r] - mu);
        // O is rescaled only where a row of the warp found a larger maximum (elsewhere alpha = 1,
        // so skipping is exact); past the first tiles that is rare.
        if (__any_sync(0xffffffffu, mn > m[t][r])) {
#pragma unroll
          for (int n = 0; n < ND; ++n) o[t][n][2 * r] *= alpha, o[t][n][2 * r + 1] *= alpha;
        }
        m[t][r] = mn;
        float rs = 0.0f;
#pragma unroll
        for (int n = 0; n < NB; ++n) {
          s[t][n][2 * r] = exp2_approx(fmaf(s[t][n][2 * r], c, -mu)), s[t][n][2 * r + 1] = exp2_approx(fmaf(s[t][n][2 * r + 1], c, -mu));
          rs += s[t][n][2 * r] + s[t][n][2 * r + 1];
        }
        l[t][r] = l[t][r] * alpha + rs;
      }
    // O += P V: P's A fragments straight from the S accumulators, each V fragment used MT times.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int t = 0; t < MT; ++t) {
        a[t][0] = pair_of<T>::pack(s[t][2 * kk][0], s[t][2 * kk][1]), a[t][1] = pair_of<T>::pack(s[t][2 * kk][2], s[t][2 * kk][3]);
        a[t][2] = pair_of<T>::pack(s[t][2 * kk + 1][0], s[t][2 * kk + 1][1]), a[t][3] = pair_of<T>::pack(s[t][2 * kk + 1][2], s[t][2 * kk + 1][3]);
      }
#pragma unroll
      for (int n = 0; n < ND; n += 2) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, attn_at<kD>(vs, kk * 16 + (lane & 15), n + (lane >> 4)));
        const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
#pragma unroll
        for (int t = 0; t < MT; ++t) {
          mma_m16n8k16<T>(o[t][n], a[t], b0, o[t][n]);
          mma_m16n8k16<T>(o[t][n + 1], a[t], b1, o[t][n + 1]);
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before the next copy into it
  }
  cp_async_wait(0);
  // O / sum, stored as pairs; lse = max ln 2 + ln(sum).
#pragma unroll
  for (int t = 0; t < MT; ++t)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = l[t][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int64_t i = row0 + 16 * t + 8 * r;
      if (i >= p.sq) continue;
      const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
      T *orow = static_cast<T *>(p.o) + b * p.os[0] + i * p.os[1] + h * p.os[2];
#pragma unroll
      for (int n = 0; n < ND; ++n) {
        const int c = n * 8 + 2 * t4;
        if (c < p.d) *reinterpret_cast<uint32_t *>(orow + c) = pair_of<T>::pack(o[t][n][2 * r] * inv, o[t][n][2 * r + 1] * inv);
      }
      if (p.lse && t4 == 0) p.lse[bh * p.sq + i] = sum == 0.0f ? -INFINITY : m[t][r] * kLn2 + logf(sum);
    }
}

// WGMMA forward (sm_90a): flash attention 2's algorithm on Hopper's warpgroup MMA, warp-specialized
// as the core's GEMM engine (1.7). A block per Q tile of one (batch, head): a producer warpgroup
// and kC consumer warpgroups of 64 rows each (two at head_dim 128: 128-row tiles; at 64 three,
// 192 rows, as flash attention 3 does, more products per K/V tile, except short causal calls):
//   - the producer warpgroup's 128 threads copy Q once, then each 128-key tile of K and of V, with
//     cp.async into the 128-byte swizzle wgmma reads (64-column chunks of BN rows; any strides that
//     are multiples of 8, rows past the end and columns past head_dim zero-filled), into a ring of
//     2 stages, each tile arriving on its own "full" mbarrier (cp_async_mbar_arrive) so that
//     Q K^T starts before V has landed; consumers' warps free a stage on its "empty" barrier;
//   - each consumer warpgroup owns 64 rows: S = Q K^T is 64 x 128 (wgmma m64n128k16, Q and K from
//     shared memory, 64 f32 scores a thread), the online softmax runs on the accumulators in
//     registers (FLASH2's: one FFMA and one ex2 a score, O rescaled only when a row's maximum
//     grows), and O += P V takes P straight from registers (wgmma_m64k16_rs: the scores' layout
//     is the A fragment's) and V from shared memory through wgmma's transpose bit;
//   - within a warpgroup the next tile's Q K^T is issued before this tile's P V, and the softmax
//     of the next scores runs while P V is on the tensor cores (flash attention 3's intra-
//     warpgroup overlap); the warpgroups also overlap each other's softmax and products, and
//     under the causal mask they take turns to issue them (below);
//   - causal tiles run in groups of heads (attn_block_order), so the blocks resident together
//     share K and V in L2 (4096 d128 MHA causal: 348 -> 509 TFLOP/s on an H100).
// Tried and not taken: a persistent grid (a block per SM walking the tiles, the next Q copied
// during the last P V): 1024 d128 +2%, but 4096 d64 -17% and d128 -4% (bench_attention --quick,
// same run, H100).
// Roofline: per K/V tile a block does 4 x BM x 128 x kD flops (8.4 MFLOP at kD = 128) for 2 x 128
// x kD x 2 bytes copied into shared memory (64 KB: 131 flops a byte from L2, whose ~5.5 TB/s on
// the H100 then allows ~700 TFLOP/s); the tensor cores' 989 TFLOP/s dense bf16 (H100 SXM; about
// 4096 flops a clock per SM) is the ceiling, and the softmax's exponentials (MUFU: 16 a clock per
// SM, BM x 128 per tile: 8 BM clocks, as many as the products' at kD = 64 and half at 128) are
// what the overlap hides.
// kC consumer warpgroups of 64 rows (2 or 3; the launcher's rule, attn_wgmma_run). Two stages:
// three (224 KiB at head_dim 128) measured 1-10% slower at every shape (H100, bench_attention
// --quick, same run).
template <int kD, int kC> struct attn_wgmma_cfg {
  static constexpr int CONSUMERS = kC;
  static constexpr int BM = 64 * CONSUMERS, BN = 128, STAGES = 2, THREADS = 128 * (1 + CONSUMERS);
  // Registers a thread (setmaxnreg): 65536 for the block, the producer's few, the rest the consumers'.
  static constexpr int PRODUCER_REGS = CONSUMERS == 3 ? 24 : 40, CONSUMER_REGS = CONSUMERS == 3 ? 160 : 232;
  static_assert(128 * (PRODUCER_REGS + CONSUMERS * CONSUMER_REGS) <= 65536, "attn_wgmma_cfg: registers");
  static constexpr int Q_BYTES = BM * kD * 2, KV_BYTES = BN * kD * 2;
  static constexpr size_t kSmem = (size_t)Q_BYTES + 2 * STAGES * KV_BYTES + 1024;  // + alignment to 1024
  static constexpr int kBarriers = 1 + 4 * STAGES;                                  // the static shared memory's mbarriers
  static_assert(kSmem <= 227 * 1024, "attn_wgmma_cfg: shared memory");
};

// Rows [0, R) of a tensor (row r at base + r * rs) into a tile in the 128-byte swizzle, by the 128
// threads t of a warpgroup: 16-byte piece c of row r lands at chunk c / 8 (R x 128 bytes each),
// row r, position swizzle_chunk(r, c % 8). Rows >= nrows and pieces at or past column d read as
// zeros.
template <int kD, int R, class T>
__device__ __forceinline__ void attn_copy_sw128(unsigned char *tile, const T *base, int64_t rs, int64_t nrows, int64_t d, int t) {
  // Thread t copies piece c = t % C of rows t / C + RS i: one column of pieces and, RS being a
  // multiple of 8, one swizzle position, so each copy is a pointer step (few producer registers).
  constexpr int C = kD / 8, RS = 128 / C;
  const int c = t % C, r0 = t / C;
  const bool col = c * 8 < d;
  unsigned char *dst = tile + (c >> 3) * (R * 128) + r0 * 128 + swizzle_chunk(r0, c & 7) * 16;
  const T *src = base + r0 * rs + c * 8;
#pragma unroll
  for (int i = 0; i < R / RS; ++i, src += RS * rs) {
    const bool ok = col && r0 + i * RS < nrows;
    cp_async16_zfill(dst + i * RS * 128, ok ? src : base, ok ? 16 : 0);
  }
}

// The work of tile t of attn_wgmma_fwd (a BM-row Q tile of one batch and head) in attn_block_order's
// order, so that the tiles in flight read a few heads' K and V; causal, the last Q tile (the longest
// rows) of each head first, the short tiles of one group filling in behind the long ones of the next.
struct attn_wgmma_work {
  int64_t b, h, bh, q0, qrows, ntiles;  // ntiles: the K/V tiles its rows see
};
template <int BM, int BN> __device__ __forceinline__ attn_wgmma_work attn_wgmma_work_of(const attn_params &p, int64_t t, int64_t hgroup) {
  const int64_t tiles = (p.sq + BM - 1) / BM;
  int64_t tr, bh;
  attn_block_order(t, p.batch * p.hq, tiles, p.causal, hgroup, tr, bh);
  attn_wgmma_work w;
  w.bh = bh, w.b = bh / p.hq, w.h = bh % p.hq;
  w.q0 = (p.causal ? tiles - 1 - tr : tr) * BM;
  w.qrows = p.sq - w.q0 < BM ? p.sq - w.q0 : BM;
  int64_t kv_end = p.sk;  // keys any row of the tile sees
  if (p.causal && w.q0 + w.qrows + p.off < kv_end) kv_end = w.q0 + w.qrows + p.off;
  w.ntiles = kv_end > 0 ? (kv_end + BN - 1) / BN : 0;
  return w;
}

template <class T, int kD, int kC, bool kTurns>
__global__ void __launch_bounds__(attn_wgmma_cfg<kD, kC>::THREADS, 1) attn_wgmma_fwd(const attn_params p, const int64_t hgroup) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Cfg = attn_wgmma_cfg<kD, kC>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, ST = Cfg::STAGES;
  __shared__ __align__(8) uint64_t qfull, kfull[ST], vfull[ST], kempty[ST], vempty[ST];
  extern __shared__ unsigned char attn_wgmma_smem[];
  unsigned char *const sq = attn_wgmma_smem + ((1024 - (smem_u32(attn_wgmma_smem) & 1023)) & 1023);
  unsigned char *const sk = sq + Cfg::Q_BYTES, *const sv = sk + ST * Cfg::KV_BYTES;
  const attn_wgmma_work w = attn_wgmma_work_of<BM, BN>(p, blockIdx.x, hgroup);
  const int64_t b = w.b, h = w.h, bh = w.bh, hk = h / p.group, q0 = w.q0, qrows = w.qrows, ntiles = w.ntiles;
  if (threadIdx.x == 0) {
    mbar_init(&qfull, 128);
    for (int i = 0; i < ST; ++i) {
      mbar_init(&kfull[i], 128), mbar_init(&vfull[i], 128);  // every producer thread's copies
      mbar_init(&kempty[i], 4 * Cfg::CONSUMERS), mbar_init(&vempty[i], 4 * Cfg::CONSUMERS);  // every consumer warp
    }
    mbar_fence_init();
  }
  __syncthreads();

  if (threadIdx.x < 128) {  // ---- producer ----
    setmaxnreg_dec<Cfg::PRODUCER_REGS>();
    const int t = threadIdx.x;
    const T *kb = static_cast<const T *>(p.k) + b * p.ks[0] + hk * p.ks[2];
    const T *vb = static_cast<const T *>(p.v) + b * p.vs[0] + hk * p.vs[2];
    attn_copy_sw128<kD, BM>(sq, static_cast<const T *>(p.q) + b * p.qs[0] + q0 * p.qs[1] + h * p.qs[2], p.qs[1], qrows, p.d, t);
    cp_async_mbar_arrive(&qfull);
    for (int64_t it = 0; it < ntiles; ++it) {
      const int s = (int)(it % ST);
      const unsigned ph = (unsigned)((it / ST) & 1);
      const int64_t kv0 = it * BN, n = p.sk - kv0 < BN ? p.sk - kv0 : BN;
      mbar_wait(&kempty[s], ph ^ 1);
      attn_copy_sw128<kD, BN>(sk + s * Cfg::KV_BYTES, kb + kv0 * p.ks[1], p.ks[1], n, p.d, t);
      cp_async_mbar_arrive(&kfull[s]);
      mbar_wait(&vempty[s], ph ^ 1);
      attn_copy_sw128<kD, BN>(sv + s * Cfg::KV_BYTES, vb + kv0 * p.vs[1], p.vs[1], n, p.d, t);
      cp_async_mbar_arrive(&vfull[s]);
    }
    cp_async_wait(0);  // no thread leaves with its copies in flight
  } else {  // ---- consumers ----
    setmaxnreg_inc<Cfg::CONSUMER_REGS>();
    const int c = threadIdx.x / 128 - 1, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane >> 2, t4 = lane & 3;
    const int64_t row0 = q0 + 64 * c + 16 * warp + g;  // this thread's rows: row0 and row0 + 8
    // Descriptors (the 128-byte swizzle, 1.4): Q and K K-major, the k-th step of 16 columns in
    // chunk k / 4 at 32 (k % 4) bytes; V MN-major, 64-column chunks BN x 128 bytes apart, the k-th
    // step of 16 keys 2048 bytes further.
    const uint64_t dq = wgmma_desc_sw128(sq + c * 64 * 128, 16, 1024), dk = wgmma_desc_sw128(sk, 16, 1024);
    const uint64_t dv = wgmma_desc_sw128(sv, BN * 128, 1024);
    const bool prescale = !(p.scale_log2 > 0.0f);  // a scale <= 0 (rare) is applied to s first
    const float cs = prescale ? 1.0f : p.scale_log2;
    float s[BN / 2], o[kD / 2], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, alpha[2];
    uint32_t pa[BN / 16][4];
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) o[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) s[i] = 0.0f;
    auto release = [&](uint64_t *bar) {
      if (lane == 0) mbar_arrive(bar);
    };
    // S = Q K^T for the K tile in stage st (issued, not waited for).
    auto scores = [&](int st) {
      wgmma_fence_operand(s);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk)
        wgmma_m64k16<T, BN, false, false>(s, dq + ((uint64_t)((kk / 4) * BM * 128 + (kk % 4) * 32) >> 4),
                                          dk + ((uint64_t)(st * Cfg::KV_BYTES + (kk / 4) * BN * 128 + (kk % 4) * 32) >> 4), kk > 0 ? 1 : 0);
      wgmma_commit();
    };
    // The online softmax of tile it's scores (in s, retired): masked scores -inf, the new row
    // maxima in m, alpha the factor O must take, s = exp2(s c - m), l the running sums (per lane;
    // reduced over the quad at the end). Returns whether some row of the warp has a larger maximum.
    auto softmax = [&](int64_t it) -> bool {
      const int64_t kv0 = it * BN;
      const bool edge = kv0 + BN > p.sk || (p.causal && kv0 + BN - 1 > q0 + 64 * c + p.off);
      if (prescale || edge) {
        // Column x of the tile exists below kend; row r sees columns up to lim[r] (32-bit: fewer
        // registers than 64-bit keys).
        const int kend = p.sk - kv0 < BN ? (int)(p.sk - kv0) : BN;
        int lim[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int64_t x = row0 + 8 * r + p.off - kv0;
          lim[r] = !p.causal || x >= BN ? BN : x < -1 ? -1 : (int)x;
        }
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if (prescale) s[4 * j + e] *= p.scale_log2;
            const int x = 8 * j + 2 * t4 + (e & 1);
            if (edge && (x >= kend || x > lim[e >> 1])) s[4 * j + e] = -INFINITY;
          }
      }
      bool grew = false;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float mn = fmaxf(m[r], mx * cs), mu = mn == -INFINITY ? 0.0f : mn;
        alpha[r] = exp2_approx(m[r] - mu);
        grew = grew || mn > m[r];
        m[r] = mn;
        float rs = 0.0f;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          s[4 * j + 2 * r] = exp2_approx(fmaf(s[4 * j + 2 * r], cs, -mu));
          s[4 * j + 2 * r + 1] = exp2_approx(fmaf(s[4 * j + 2 * r + 1], cs, -mu));
          rs += s[4 * j + 2 * r] + s[4 * j + 2 * r + 1];
        }
        l[r] = l[r] * alpha[r] + rs;
      }
      return __any_sync(0xffffffffu, grew);
    };
    // O *= alpha where some row grew (elsewhere alpha = 1: skipping is exact); P to 16-bit pairs.
    auto rescale_pack = [&](bool grew) {
      if (grew) {
#pragma unroll
        for (int j = 0; j < kD / 8; ++j) o[4 * j] *= alpha[0], o[4 * j + 1] *= alpha[0], o[4 * j + 2] *= alpha[1], o[4 * j + 3] *= alpha[1];
      }
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        pa[kk][0] = pair_of<T>::pack(s[8 * kk + 0], s[8 * kk + 1]), pa[kk][1] = pair_of<T>::pack(s[8 * kk + 2], s[8 * kk + 3]);
        pa[kk][2] = pair_of<T>::pack(s[8 * kk + 4], s[8 * kk + 5]), pa[kk][3] = pair_of<T>::pack(s[8 * kk + 6], s[8 * kk + 7]);
      }
    };

    // O += P V for the V tile in stage st (issued, not waited for).
    auto values = [&](int st) {
      wgmma_fence_operand(o);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) wgmma_m64k16_rs<T, kD, true>(o, pa[kk], dv + ((uint64_t)(st * Cfg::KV_BYTES + kk * 2048) >> 4), 1);
      wgmma_commit();
    };
    auto values_done = [&](int st) {
      wgmma_wait<0>();
      wgmma_fence_operand(o);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) wgmma_fence_operand(pa[kk]);
      release(&vempty[st]);
    };

    // With kTurns (the launcher's choice for the causal mask) the consumer warpgroups take turns
    // to issue their products (named barrier 1 + c for warpgroup c: it waits for its turn,
    // issues, hands the turn to the next, round robin), so that one's softmax runs while the
    // others' products keep the tensor cores busy (flash attention 3's ping-pong). Warpgroup 0
    // goes first; every turn taken is handed over, and warpgroup 0 takes the one left at the
    // end. Measured on an H100 (bench_attention --quick, same run): causal +2% (seqlen 4096) to
    // +6-10% (1024), without mask -2% to -6%.
    auto my_turn = [&] {
      if constexpr (kTurns) named_barrier(1 + c, 256);
    };
    auto pass_turn = [&] {
      if constexpr (kTurns) named_barrier_arrive(1 + (c + 1) % Cfg::CONSUMERS, 256);
    };
    if (c == Cfg::CONSUMERS - 1) pass_turn();

    mbar_wait(&qfull, 0);
    fence_proxy_async();  // Q came by cp.async (the generic proxy); wgmma reads it
    if (ntiles > 0) {
      mbar_wait(&kfull[0], 0);
      fence_proxy_async();
      my_turn();
      scores(0);
      pass_turn();
      wgmma_wait<0>();
      wgmma_fence_operand(s);
      release(&kempty[0]);
      rescale_pack(softmax(0));
    }
    // Every tile but the last: the next tile's scores are issued first, then this tile's P V; the
    // scores retire first (wgmma groups complete in order) and their softmax runs while P V does.
    // No branch between an issue and its wait: ptxas then keeps the groups asynchronous.
    int64_t it = 0;
    for (; it + 1 < ntiles; ++it) {
      const int st = (int)(it % ST), st1 = (int)((it + 1) % ST);
      mbar_wait(&kfull[st1], (unsigned)(((it + 1) / ST) & 1));
      mbar_wait(&vfull[st], (unsigned)((it / ST) & 1));
      fence_proxy_async();
      my_turn();
      scores(st1);
      values(st);
      pass_turn();
      wgmma_wait<1>();
      wgmma_fence_operand(s);
      release(&kempty[st1]);
      const bool grew = softmax(it + 1);
      values_done(st);
      rescale_pack(grew);
    }
    if (ntiles > 0) {
      const int st = (int)(it % ST);
      mbar_wait(&vfull[st], (unsigned)((it / ST) & 1));
      fence_proxy_async();
      my_turn();
      values(st);
      pass_turn();
      values_done(st);
    }
    if (c == 0) my_turn();  // the last warpgroup's last hand-over
    // O / sum, stored as pairs; lse = max ln 2 + ln(sum).
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = l[r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int64_t i = row0 + 8 * r;
      if (i >= p.sq) continue;
      const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
      T *orow = static_cast<T *>(p.o) + b * p.os[0] + i * p.os[1] + h * p.os[2];
#pragma unroll
      for (int j = 0; j < kD / 8; ++j) {
        const int col = 8 * j + 2 * t4;
        if (col < p.d) *reinterpret_cast<uint32_t *>(orow + col) = pair_of<T>::pack(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
      }
      if (p.lse && t4 == 0) p.lse[bh * p.sq + i] = sum == 0.0f ? -INFINITY : m[r] * kLn2 + logf(sum);
    }
  }
#else
  (void)p, (void)hgroup;
#endif
}

// The backward (flash attention 2's algorithm, on CUDA cores), three launches:
// attn_bwd_pre: D_i = dO_i . O_i, a warp a row.
// attn_bwd_dkdv: a warp a key j of one kv head, walking every query head of its group and every
//   query row that sees j: P_ij = exp(scale q_i . k_j - lse_i) recomputed, dV_j += P_ij dO_i,
//   dS_ij = P_ij (dO_i . v_j - D_i), dK_j += scale dS_ij q_i; k_j, v_j, dK_j, dV_j stay in
//   registers (kD / 32 a lane), each row's q_i and dO_i are read once per key (from L1 / L2).
// attn_bwd_dq: a warp a query row, the same P and dS recomputed over the keys the row sees,
//   dQ_i = scale sum_j dS_ij k_j. dQ by its own pass instead of atomics: deterministic, and no f32
//   dQ in memory, for one more recomputation of S.
// Roofline: 2 Sq Sk D multiply-adds per score for each pass on CUDA cores (the tensor-core form
// is flash attention 2's; this one is the simple, correct baseline).
template <class T> __global__ void __launch_bounds__(256) attn_bwd_pre(const attn_params p) {
  const int lane = threadIdx.x & 31;
  const int64_t row = blockIdx.x * 8ll + (threadIdx.x >> 5);  // (b, h, i)
  if (row >= p.batch * p.hq * p.sq) return;
  const int64_t i = row % p.sq, bh = row / p.sq, b = bh / p.hq, h = bh % p.hq;
  const int64_t oo = b * p.os[0] + i * p.os[1] + h * p.os[2];
  const T *o = static_cast<const T *>(p.oin) + oo, *dout = static_cast<const T *>(p.dout) + oo;
  float acc = 0.0f;
  for (int64_t c = lane; c < p.d; c += 32) acc += to_f32(o[c]) * to_f32(dout[c]);
  acc = attn_warp_sum(acc);
  if (lane == 0) p.ws[row] = acc;
}

template <class T, int kD> __global__ void __launch_bounds__(128) attn_bwd_dkdv(const attn_params p) {
  constexpr int E = kD / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t hkv = p.hq / p.group, bhk = blockIdx.x % (p.batch * hkv), j = (blockIdx.x / (p.batch * hkv)) * 4 + warp;
  if (j >= p.sk) return;
  const int64_t b = bhk / hkv, hk = bhk % hkv;
  const int64_t ko = b * p.ks[0] + j * p.ks[1] + hk * p.ks[2], vo = b * p.vs[0] + j * p.vs[1] + hk * p.vs[2];
  float kr[E], vr[E], dk[E], dv[E];
  attn_load_row<T, E>(kr, static_cast<const T *>(p.k) + ko, p.d);
  attn_load_row<T, E>(vr, static_cast<const T *>(p.v) + vo, p.d);
#pragma unroll
  for (int e = 0; e < E; ++e) dk[e] = dv[e] = 0.0f;
  const int64_t i0 = p.causal && j - p.off > 0 ? j - p.off : 0;
  for (int64_t h = hk * p.group; h < (hk + 1) * p.group; ++h)
    for (int64_t i = i0; i < p.sq; ++i) {
      const int64_t row = (b * p.hq + h) * p.sq + i;
      const float lse = p.lse_in[row];
      if (lse == -INFINITY) continue;
      float qv[E], dov[E], s = 0.0f, dp = 0.0f;
      attn_load_row<T, E>(qv, static_cast<const T *>(p.q) + b * p.qs[0] + i * p.qs[1] + h * p.qs[2], p.d);
      attn_load_row<T, E>(dov, static_cast<const T *>(p.dout) + b * p.os[0] + i * p.os[1] + h * p.os[2], p.d);
#pragma unroll
      for (int e = 0; e < E; ++e) s += qv[e] * kr[e], dp += dov[e] * vr[e];
      s = attn_warp_sum(s), dp = attn_warp_sum(dp);
      const float pij = exp2f((s * p.scale - lse) * kLog2e), ds = pij * (dp - p.ws[row]);
#pragma unroll
      for (int e = 0; e < E; ++e) dv[e] += pij * dov[e], dk[e] += ds * qv[e];
    }
  T *dkr = static_cast<T *>(p.dk) + ko, *dvr = static_cast<T *>(p.dv) + vo;
#pragma unroll
  for (int e = 0; e < E; ++e)
    if (lane + 32 * e < p.d) dkr[lane + 32 * e] = from_f32<T>(dk[e] * p.scale), dvr[lane + 32 * e] = from_f32<T>(dv[e]);
}

template <class T, int kD> __global__ void __launch_bounds__(128) attn_bwd_dq(const attn_params p) {
  constexpr int E = kD / 32;
  const int lane = threadIdx.x & 31;
  const int64_t row = blockIdx.x * 4ll + (threadIdx.x >> 5);
  if (row >= p.batch * p.hq * p.sq) return;
  const int64_t i = row % p.sq, bh = row / p.sq, b = bh / p.hq, h = bh % p.hq, hk = h / p.group;
  const int64_t qo = b * p.qs[0] + i * p.qs[1] + h * p.qs[2];
  float qv[E], dov[E], acc[E];
  attn_load_row<T, E>(qv, static_cast<const T *>(p.q) + qo, p.d);
  attn_load_row<T, E>(dov, static_cast<const T *>(p.dout) + b * p.os[0] + i * p.os[1] + h * p.os[2], p.d);
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] = 0.0f;
  const float lse = p.lse_in[row], di = p.ws[row];
  int64_t jend = p.sk;
  if (p.causal && i + p.off + 1 < jend) jend = i + p.off + 1;
  if (lse == -INFINITY) jend = 0;
  for (int64_t j = 0; j < jend; ++j) {
    float kr[E], vr[E], s = 0.0f, dp = 0.0f;
    attn_load_row<T, E>(kr, static_cast<const T *>(p.k) + b * p.ks[0] + j * p.ks[1] + hk * p.ks[2], p.d);
    attn_load_row<T, E>(vr, static_cast<const T *>(p.v) + b * p.vs[0] + j * p.vs[1] + hk * p.vs[2], p.d);
#pragma unroll
    for (int e = 0; e < E; ++e) s += qv[e] * kr[e], dp += dov[e] * vr[e];
    s = attn_warp_sum(s), dp = attn_warp_sum(dp);
    const float ds = exp2f((s * p.scale - lse) * kLog2e) * (dp - di);
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] += ds * kr[e];
  }
  T *dqr = static_cast<T *>(p.dq) + qo;
#pragma unroll
  for (int e = 0; e < E; ++e)
    if (lane + 32 * e < p.d) dqr[lane + 32 * e] = from_f32<T>(acc[e] * p.scale);
}

// FLASH2 backward (flash attention 2's algorithm on mma.sync): a block per 128-key tile of one
// (batch, kv head), 8 warps of 16 keys each; K and V stay in shared memory, dK and dV in registers
// (f32 accumulators) while the block walks one sequence of 64-row Q tiles: every query head of the
// group, and in each the tiles that see its keys (causal: from qstart). Per Q tile each warp
// computes, in the transposed orientation (keys as the rows of every product, so each lane's
// accumulators stay its own keys'):  S^T = K Q^T,  P^T = exp2(S^T scale log2 e - lse log2 e) (one
// FFMA and one ex2),  dV += P^T dO,  dP^T = V dO^T,  dS^T = P^T (dP^T - D),  dK += dS^T Q;  P^T and
// dS^T feed the next product from registers (the accumulator layout is the A layout). dS^T goes
// through shared memory (16 bits, swizzled) so that the warps can split dQ = dS K as 4 groups of 16
// query rows x 2 halves of head_dim, each summing over the block's 128 keys; dQ is added into an
// f32 workspace by 16-byte vector reductions (red_add_f32x4), and attn_bwd_dq_convert rounds it to
// dQ's type at the end. B operands by ldmatrix: Q and dO as n-major tiles for S^T and dP^T, with
// .trans for dV and dK; K with .trans for dQ, and dS^T with .trans as dQ's A operand. The mask
// (keys past the end, causal pairs above the diagonal) runs on edge tiles only. head_dim <= 128 (dK
// and dV take kD / 2 registers a lane each), below kD zero-filled.
// Pipelining: Q, dO, lse and D have two shared-memory stages. Tile t + 1's copies (cp.async: 16
// bytes for Q and dO, 4 bytes for lse and D) are issued at the start of tile t and land while its
// five products run; lse is turned into log2 units in place by the thread that copied it, after
// its wait and before the barrier. Two barriers a tile: after the wait (tile t's stage complete;
// the previous tile's dQ reads of dS^T done) and after dS^T's stores (the last reads of tile t's
// stage precede it, so tile t + 1 may refill that stage for tile t + 2).
// Roofline: per Q tile 5 products of 64 x 128 x kD (10.5 MFLOP at kD 128) against 32 KB of Q and dO
// read from L2 (every key block of the head reads them) and 32 KB of dQ reductions into L2: 160
// FLOP a byte of L2 traffic. The L2 is what bound the earlier forms: with 64-key blocks and scalar
// atomics (each touching half of a sector) Nsight Compute showed the L2 89% busy and the SM 34%.
template <int kD> struct attn_flash2_bwd_cfg {
  static constexpr int BM = 64, BN = 128, THREADS = 256;
  // K, V; 2 stages of Q and of dO; dS^T; 2 stages of lse and D. kD 128: 148480 bytes (145 KiB, one
  // block of 8 warps an SM on sm_80 and sm_90); kD 64: 82944.
  static constexpr size_t kSmem = (size_t)(2 * BN + 4 * BM) * kD * 2 + (size_t)BN * BM * 2 + 2 * 2 * BM * 4;
};

// The work of block `blk` of the tensor-core backwards (FLASH2, WGMMA): BN keys from kv0 (krows of
// them exist) of one (batch b, kv head hk), and its part's share of the group's query heads from h0,
// in each the BM-row Q tiles from qstart (the first with a query that sees key kv0: i >= kv0 - off):
// ntiles = share x per_head tiles in all. The key tiles of the (batch, kv head)s go in
// attn_block_order's order, so that the blocks in flight share a few heads' Q, dO, lse, D and dQ sums
// in L2 (without mask the key tile fastest: MHA, 4096 x 128, 1.05x; causal, the first key tile,
// the longest walk, first); with splits > 1 the part (a share of the group's query heads) runs
// fastest of all.
struct attn_bwd_work {
  int64_t part, bhk, b, hk, kv0, krows, share, h0, qstart, per_head, ntiles;
};
template <int BM, int BN>
__device__ __forceinline__ attn_bwd_work attn_bwd_work_of(const attn_params &p, int64_t blk, int splits, int64_t hgroup) {
  attn_bwd_work w;
  const int64_t hkv = p.hq / p.group, ktiles = (p.sk + BN - 1) / BN, bhs = p.batch * hkv;
  w.part = blk % splits, blk /= splits;
  int64_t kt;
  attn_block_order(blk, bhs, ktiles, p.causal, hgroup, kt, w.bhk);
  w.b = w.bhk / hkv, w.hk = w.bhk % hkv;
  w.kv0 = kt * BN, w.krows = p.sk - w.kv0 < BN ? p.sk - w.kv0 : BN;
  w.share = p.group / splits, w.h0 = w.hk * p.group + w.part * w.share;
  w.qstart = p.causal && w.kv0 - p.off > 0 ? (w.kv0 - p.off) / BM * BM : 0;
  w.per_head = w.qstart < p.sq ? (p.sq - w.qstart + BM - 1) / BM : 0, w.ntiles = w.share * w.per_head;
  return w;
}

// dQ += scale x (two m16n8 accumulator fragments of a 16-row group: a0 columns n8 .. n8 + 7, a1 the
// 8 after, rows g and g + 8; row r of the group at dq + r ld, rows below `rows` exist) as 16-byte
// reductions (red_add_f32x4): lanes t4 and t4 ^ 1 trade halves so that each holds four consecutive
// columns of one row (the even lane row g, columns n8 + 2 t4 .. + 3; the odd lane row g + 8, columns
// n8 + 2 t4 - 2 .. + 1): one reduction each instead of four scalar atomics on half-used sectors.
// d and n8 are multiples of 8: a vector is all in or all out.
__device__ __forceinline__ void attn_dq_add(float *dq, int64_t ld, int64_t rows, int n8, int64_t d, const float *a0, const float *a1, float scale, int g,
                                            int t4) {
  const bool odd = t4 & 1;
  const int64_t i = g + (odd ? 8 : 0);
  const int c0 = n8 + 2 * t4 - (odd ? 2 : 0), c1 = c0 + 8;
  const float x0 = __shfl_xor_sync(0xffffffffu, odd ? a0[0] : a0[2], 1), y0 = __shfl_xor_sync(0xffffffffu, odd ? a0[1] : a0[3], 1);
  const float x1 = __shfl_xor_sync(0xffffffffu, odd ? a1[0] : a1[2], 1), y1 = __shfl_xor_sync(0xffffffffu, odd ? a1[1] : a1[3], 1);
  if (i >= rows) return;
  float *row = dq + i * ld;
  if (c0 < d) red_add_f32x4(row + c0, (odd ? x0 : a0[0]) * scale, (odd ? y0 : a0[1]) * scale, (odd ? a0[2] : x0) * scale, (odd ? a0[3] : y0) * scale);
  if (c1 < d) red_add_f32x4(row + c1, (odd ? x1 : a1[0]) * scale, (odd ? y1 : a1[1]) * scale, (odd ? a1[2] : x1) * scale, (odd ? a1[3] : y1) * scale);
}

// Key j's dK and dV at columns c, c + 1 (dK already scaled): stored as pairs of k's and v's type;
// with splits > 1 as this part's f32 partial sums ([part][batch x kv head][key][head_dim], dK's then
// dV's; attn_bwd_dkv_reduce adds the parts).
template <class T>
__device__ __forceinline__ void attn_bwd_store(const attn_params &p, const attn_bwd_work &w, float *dkv_acc, int splits, int64_t j, int c, float k0, float k1,
                                               float v0, float v1) {
  if (splits > 1) {
    const int64_t nkv = (int64_t)splits * p.batch * (p.hq / p.group) * p.sk * p.d;
    float *acc = dkv_acc + ((w.part * p.batch * (p.hq / p.group) + w.bhk) * p.sk + j) * p.d;
    *reinterpret_cast<float2 *>(acc + c) = make_float2(k0, k1);
    *reinterpret_cast<float2 *>(acc + nkv + c) = make_float2(v0, v1);
  } else {
    *reinterpret_cast<uint32_t *>(static_cast<T *>(p.dk) + w.b * p.ks[0] + j * p.ks[1] + w.hk * p.ks[2] + c) = pair_of<T>::pack(k0, k1);
    *reinterpret_cast<uint32_t *>(static_cast<T *>(p.dv) + w.b * p.vs[0] + j * p.vs[1] + w.hk * p.vs[2] + c) = pair_of<T>::pack(v0, v1);
  }
}

template <class T, int kD>
__global__ void __launch_bounds__(attn_flash2_bwd_cfg<kD>::THREADS) attn_flash2_bwd(const attn_params p, float *dq_acc, float *dkv_acc, int splits, int64_t hgroup) {
  using Cfg = attn_flash2_bwd_cfg<kD>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, TH = Cfg::THREADS, NQ = BM / 8, ND = kD / 8, KS = kD / 16;
  static_assert(TH == 2 * BN && BN == 2 * BM && ND % 4 == 0, "a warp a 16-key slice; dQ: 4 row groups x 2 column halves");
  static_assert(BN == GPUOPS__ATTN_BWD_KEYS, "gpuops__attn_bwd_splits counts blocks of BN keys");
  extern __shared__ uint4 attn_smem[];
  T *sk = reinterpret_cast<T *>(attn_smem), *sv = sk + BN * kD, *sq = sv + BN * kD, *sdo = sq + 2 * BM * kD, *sds = sdo + 2 * BM * kD;
  float *sld = reinterpret_cast<float *>(sds + BN * BM);  // stage s: lse at sld + 2 BM s, D after it
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3, wk = warp * 16;
  const attn_bwd_work w = attn_bwd_work_of<BM, BN>(p, blockIdx.x, splits, hgroup);
  const int64_t b = w.b, hk = w.hk, kv0 = w.kv0, krows = w.krows;
  const T *kb = static_cast<const T *>(p.k) + b * p.ks[0] + kv0 * p.ks[1] + hk * p.ks[2];
  const T *vb = static_cast<const T *>(p.v) + b * p.vs[0] + kv0 * p.vs[1] + hk * p.vs[2];
  attn_copy_tile<kD, BN, TH>(sk, kb, p.ks[1], krows, p.d);
  attn_copy_tile<kD, BN, TH>(sv, vb, p.vs[1], krows, p.d);
  // Q tile (h, q0)'s copies into stage st: Q, dO, and this thread's lse (threads < BM) or D value.
  auto issue = [&](int st, int64_t h, int64_t q0) {
    const int64_t qrows = p.sq - q0 < BM ? p.sq - q0 : BM, row0 = (b * p.hq + h) * p.sq + q0;
    attn_copy_tile<kD, BM, TH>(sq + st * BM * kD, static_cast<const T *>(p.q) + b * p.qs[0] + q0 * p.qs[1] + h * p.qs[2], p.qs[1], qrows, p.d);
    attn_copy_tile<kD, BM, TH>(sdo + st * BM * kD, static_cast<const T *>(p.dout) + b * p.os[0] + q0 * p.os[1] + h * p.os[2], p.os[1], qrows, p.d);
    if (threadIdx.x < 2 * BM) {
      const int r = threadIdx.x & (BM - 1);
      const float *src = (threadIdx.x < BM ? p.lse_in : p.ws) + row0;
      cp_async4_zfill(sld + st * 2 * BM + threadIdx.x, r < qrows ? src + r : src, r < qrows);
    }
  };
  float dk[ND][4], dv[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.0f;
  // The tiles: this part's heads h0 .. hend - 1 of the group, in each q0 = qstart, qstart + BM, .. < sq.
  const int64_t hend = w.h0 + w.share, qstart = w.qstart;
  int64_t h = w.h0, q0 = qstart;
  if (q0 < p.sq) issue(0, h, q0);
  cp_async_commit();  // K, V and the first tile
  for (int st = 0; q0 < p.sq && h < hend; st ^= 1) {
    int64_t q1 = q0 + BM, h1 = h;  // the next tile
    if (q1 >= p.sq) q1 = qstart, ++h1;
    if (h1 < hend) issue(st ^ 1, h1, q1);  // into the stage the previous tile read: free since its dS^T barrier
    cp_async_commit();                     // an empty group past the end keeps the count uniform
    cp_async_wait(1);                      // this tile's copies (this thread's) have landed
    const int64_t qrows = p.sq - q0 < BM ? p.sq - q0 : BM, row0 = (b * p.hq + h) * p.sq + q0;
    const T *qs = sq + st * BM * kD, *dos = sdo + st * BM * kD;
    float *slse = sld + st * 2 * BM, *sd = slse + BM;
    if (threadIdx.x < BM) {  // lse in log2 units; +inf (P = 0) where the row sees no key or is past the end
      const int r = threadIdx.x;
      const float l = slse[r];
      slse[r] = r < qrows && l != -INFINITY ? l * kLog2e : INFINITY;
    }
    __syncthreads();  // the stage is complete; the previous tile's dQ is done with dS^T
    // S^T = K Q^T and dP^T = V dO^T: 16 keys x 64 queries for this warp.
    float s[NQ][4], dp[NQ][4];
#pragma unroll
    for (int n = 0; n < NQ; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      uint32_t ak[4], av[4];
      ldmatrix_x4(ak, attn_at<kD>(sk, wk + (lane & 15), 2 * kk + (lane >> 4)));
      ldmatrix_x4(av, attn_at<kD>(sv, wk + (lane & 15), 2 * kk + (lane >> 4)));
#pragma unroll
      for (int n = 0; n < NQ; n += 2) {
        uint32_t rq[4], ro[4];
        ldmatrix_x4(rq, attn_at<kD>(qs, n * 8 + (lane >> 4) * 8 + (lane & 7), 2 * kk + ((lane >> 3) & 1)));
        ldmatrix_x4(ro, attn_at<kD>(dos, n * 8 + (lane >> 4) * 8 + (lane & 7), 2 * kk + ((lane >> 3) & 1)));
        const uint32_t q0f[2] = {rq[0], rq[1]}, q1f[2] = {rq[2], rq[3]}, o0f[2] = {ro[0], ro[1]}, o1f[2] = {ro[2], ro[3]};
        mma_m16n8k16<T>(s[n], ak, q0f, s[n]);
        mma_m16n8k16<T>(s[n + 1], ak, q1f, s[n + 1]);
        mma_m16n8k16<T>(dp[n], av, o0f, dp[n]);
        mma_m16n8k16<T>(dp[n + 1], av, o1f, dp[n + 1]);
      }
    }
    // P^T (one FFMA and one ex2 a score), masked on edge tiles (keys past the end; causal: queries
    // before the key) by a select, so an inf there never meets a multiply; dS^T = P^T (dP^T - D).
    const bool edge = krows < BN || (p.causal && kv0 + BN - 1 > q0 + p.off);
#pragma unroll
    for (int n = 0; n < NQ; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = exp2_approx(fmaf(s[n][e], p.scale_log2, -slse[n * 8 + 2 * t4 + (e & 1)]));
    if (edge) {
#pragma unroll
      for (int n = 0; n < NQ; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t j = kv0 + wk + g + 8 * (e >> 1), i = q0 + n * 8 + 2 * t4 + (e & 1);
          if (j >= p.sk || (p.causal && j > i + p.off)) s[n][e] = 0.0f;
        }
    }
#pragma unroll
    for (int n = 0; n < NQ; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[n][e] = s[n][e] * (dp[n][e] - sd[n * 8 + 2 * t4 + (e & 1)]);
    // dV += P^T dO and dK += dS^T Q (the scale applied at the end); dS^T to shared memory.
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      const uint32_t ap[4] = {pair_of<T>::pack(s[2 * kk][0], s[2 * kk][1]), pair_of<T>::pack(s[2 * kk][2], s[2 * kk][3]),
                              pair_of<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]), pair_of<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      const uint32_t as[4] = {pair_of<T>::pack(dp[2 * kk][0], dp[2 * kk][1]), pair_of<T>::pack(dp[2 * kk][2], dp[2 * kk][3]),
                              pair_of<T>::pack(dp[2 * kk + 1][0], dp[2 * kk + 1][1]), pair_of<T>::pack(dp[2 * kk + 1][2], dp[2 * kk + 1][3])};
#pragma unroll
      for (int x = 0; x < 4; ++x) {  // dS^T rows wk + g (+ 8), queries kk * 16 + 2 t4 (+ 8)
        const int r = wk + g + 8 * (x & 1), chunk = 2 * kk + (x >> 1);
        *reinterpret_cast<uint32_t *>(attn_at<BM>(sds, r, chunk) + 2 * t4) = as[x];
      }
#pragma unroll
      for (int n = 0; n < ND; n += 2) {
        uint32_t ro[4], rq[4];
        ldmatrix_x4_trans(ro, attn_at<kD>(dos, kk * 16 + (lane & 15), n + (lane >> 4)));
        ldmatrix_x4_trans(rq, attn_at<kD>(qs, kk * 16 + (lane & 15), n + (lane >> 4)));
        const uint32_t o0f[2] = {ro[0], ro[1]}, o1f[2] = {ro[2], ro[3]}, q0f[2] = {rq[0], rq[1]}, q1f[2] = {rq[2], rq[3]};
        mma_m16n8k16<T>(dv[n], ap, o0f, dv[n]);
        mma_m16n8k16<T>(dv[n + 1], ap, o1f, dv[n + 1]);
        mma_m16n8k16<T>(dk[n], as, q0f, dk[n]);
        mma_m16n8k16<T>(dk[n + 1], as, q1f, dk[n + 1]);
      }
    }
    __syncthreads();  // dS^T complete; this stage's Q, dO, lse and D are no longer read
    // dQ rows q0 + wq .. + 16, columns dc .. + kD / 2 += scale dS K (warps: 4 row groups x 2 column
    // halves): A = dS (dS^T by ldmatrix .trans), B = K (.trans), k over the block's BN keys.
    const int wq = (warp & 3) * 16, n0 = (warp >> 2) * (ND / 2);
    uint32_t ads[BN / 16][4];
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
      ldmatrix_x4_trans(ads[kk], attn_at<BM>(sds, kk * 16 + (lane >> 4) * 8 + (lane & 7), wq / 8 + ((lane >> 3) & 1)));
#pragma unroll
    for (int n = n0; n < n0 + ND / 2; n += 2) {
      float a0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, a1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        uint32_t rk[4];
        ldmatrix_x4_trans(rk, attn_at<kD>(sk, kk * 16 + (lane & 15), n + (lane >> 4)));
        const uint32_t k0f[2] = {rk[0], rk[1]}, k1f[2] = {rk[2], rk[3]};
        mma_m16n8k16<T>(a0, ads[kk], k0f, a0);
        mma_m16n8k16<T>(a1, ads[kk], k1f, a1);
      }
      attn_dq_add(dq_acc + (row0 + wq) * p.d, p.d, qrows - wq, n * 8, p.d, a0, a1, p.scale, g, t4);
    }
    h = h1, q0 = q1;
  }
  cp_async_wait(0);  // the empty last group; K and V's copies, where no query tile ran
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t j = kv0 + wk + g + 8 * r;
    if (j >= p.sk) continue;
#pragma unroll
    for (int n = 0; n < ND; ++n) {
      const int c = n * 8 + 2 * t4;
      if (c < p.d) attn_bwd_store<T>(p, w, dkv_acc, splits, j, c, dk[n][2 * r] * p.scale, dk[n][2 * r + 1] * p.scale, dv[n][2 * r], dv[n][2 * r + 1]);
    }
  }
}

// WGMMA backward (sm_90a): FLASH2's backward (above) on Hopper's warpgroup MMA, warp-specialized as
// the WGMMA forward. FLASH2's blocks, splits and walk (attn_bwd_work_of): a block per 128 keys of one
// (batch, kv head) and its share of the group's query heads, here a producer warpgroup and two
// consumer warpgroups of 64 keys each:
//   - the producer's 128 threads copy K and V once, then for each Q tile its Q and dO rows (cp.async
//     into the 128-byte swizzle wgmma reads) and its lse and D values, through a 2-stage ring of
//     mbarriers ("full": the producer's threads; "empty": every consumer thread, each after its own
//     reads of lse and D, so that the producer's next copies into the stage are ordered after them);
//   - consumer c owns keys 64 c .. 64 c + 63, keys as the rows of every product (FLASH2's transposed
//     orientation): S^T = K_c Q^T and dP^T = V_c dO^T (wgmma m64 x BM, both operands K-major from
//     shared memory; dP^T in flight while P^T = exp2(S^T scale log2 e - lse log2 e) is computed),
//     dS^T = P^T (dP^T - D), then dV += P^T dO and dK += dS^T Q with P^T and dS^T straight from
//     registers (wgmma_m64k16_rs: the scores' layout is the A fragment's) and dO, Q read MN-major
//     through the transpose bit; dK and dV stay in f32 registers for the whole walk;
//   - dS^T goes to shared memory (two buffers, 128-byte swizzle: conflict-free stores) while those
//     two products run; after one named barrier of both consumers, each computes a 64 x 64 block of
//     dQ = dS K over all 128 keys (dS^T and K both MN-major operands), head_dim 128 splitting dQ's
//     columns, head_dim 64 (128-row Q tiles) its rows, added into the f32 workspace by 16-byte
//     reductions (attn_dq_add) as FLASH2's. The two buffers let one barrier a tile suffice: buffer
//     t % 2 is rewritten at tile t + 2, after both consumers passed tile t + 1's barrier, which
//     each reaches only once its dQ product of tile t has retired. The next tile's S^T is issued
//     behind this tile's dQ product, so that the dQ reductions run while it does (head_dim 64
//     0-9% faster, 128 within 3%: H100, bench_attention --quick, same call).
// Causal walks run in head groups (attn_block_order): MHA at seqlen 4096, head_dim 128 203 -> 302
// TFLOP/s (H100, bench_attention --quick, same call). Tried and not taken (each against this code
// in one call; docs/performance.md has the numbers): dV, dK and dQ issued as one batch after the
// barrier (-3-6%); each consumer's dQ over its own keys with no barrier, twice the reductions
// (-12-21%); dQ added by row-sized bulk reductions from shared memory (-2-35%); without mask, walks
// started apart so that no two blocks add into the same dQ rows (within 2%). The dQ reductions'
// volume, not the consumers' lockstep or contention on lines, is what weighs.
// Roofline: per Q tile 5 products of 128 keys x BM x kD (10.5 MFLOP at kD 128 and 64 rows) against
// BM x kD x 2 x 2 bytes of Q and dO from L2 and BM x kD x 4 of dQ reductions into it (64 KB: 160
// flops a byte, FLASH2's); the tensor cores' 989 TFLOP/s (H100 SXM) are the ceiling, the 128 x BM
// exponentials a tile (MUFU) a fifth of the products' clocks at kD 128.
template <int kD> struct attn_wgmma_bwd_cfg {
  static constexpr int BN = 128, BM = kD <= 64 ? 128 : 64, STAGES = 2, THREADS = 384;
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static_assert(128 * (PRODUCER_REGS + 2 * CONSUMER_REGS) <= 65536, "attn_wgmma_bwd_cfg: registers");
  static_assert(BN == GPUOPS__ATTN_BWD_KEYS, "gpuops__attn_bwd_splits counts blocks of BN keys");
  static_assert(kD == 64 || kD == 128, "attn_wgmma_bwd_cfg: head_dim 64 or 128 (dQ in 64 x 64 blocks)");
  static constexpr int KV_BYTES = BN * kD * 2, Q_BYTES = BM * kD * 2, DS_BYTES = BN * BM * 2;
  // K, V; 2 stages of Q and of dO; 2 buffers of dS^T; 2 stages of lse and D (f32); alignment to 1024.
  static constexpr size_t kSmem = 2 * (size_t)KV_BYTES + 2 * STAGES * (size_t)Q_BYTES + 2 * (size_t)DS_BYTES + 2 * STAGES * BM * 4 + 1024;
  static constexpr int kBarriers = 1 + 2 * STAGES;  // the static shared memory's mbarriers
  static_assert(kSmem <= 227 * 1024, "attn_wgmma_bwd_cfg: shared memory");
};

template <class T, int kD>
__global__ void __launch_bounds__(attn_wgmma_bwd_cfg<kD>::THREADS, 1) attn_wgmma_bwd(const attn_params p, float *dq_acc, float *dkv_acc, int splits, int64_t hgroup) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Cfg = attn_wgmma_bwd_cfg<kD>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, ST = Cfg::STAGES;
  __shared__ __align__(8) uint64_t kvfull, full[ST], empty[ST];
  extern __shared__ unsigned char attn_wgmma_bwd_smem[];
  unsigned char *const sk = attn_wgmma_bwd_smem + ((1024 - (smem_u32(attn_wgmma_bwd_smem) & 1023)) & 1023);
  unsigned char *const sv = sk + Cfg::KV_BYTES, *const sq = sv + Cfg::KV_BYTES, *const sdo = sq + ST * Cfg::Q_BYTES, *const sds = sdo + ST * Cfg::Q_BYTES;
  float *const sld = reinterpret_cast<float *>(sds + 2 * Cfg::DS_BYTES);  // stage s: lse at sld + 2 BM s, D after it
  const attn_bwd_work w = attn_bwd_work_of<BM, BN>(p, blockIdx.x, splits, hgroup);
  const int64_t kv0 = w.kv0, ntiles = w.ntiles;
  if (threadIdx.x == 0) {
    mbar_init(&kvfull, 128);
    for (int i = 0; i < ST; ++i) mbar_init(&full[i], 128), mbar_init(&empty[i], 256);  // the producer's threads; the consumers' threads
    mbar_fence_init();
  }
  __syncthreads();
  // Tile it of the walk: query head h, rows q0 .. q0 + qrows - 1, their lse / D rows from row0.
  auto tile = [&](int64_t it, int64_t &q0, int64_t &qrows, int64_t &h) {
    h = w.h0 + it / w.per_head, q0 = w.qstart + it % w.per_head * BM, qrows = p.sq - q0 < BM ? p.sq - q0 : BM;
    return (w.b * p.hq + h) * p.sq + q0;
  };

  if (threadIdx.x < 128) {  // ---- producer ----
    setmaxnreg_dec<Cfg::PRODUCER_REGS>();
    const int t = threadIdx.x;
    attn_copy_sw128<kD, BN>(sk, static_cast<const T *>(p.k) + w.b * p.ks[0] + kv0 * p.ks[1] + w.hk * p.ks[2], p.ks[1], w.krows, p.d, t);
    attn_copy_sw128<kD, BN>(sv, static_cast<const T *>(p.v) + w.b * p.vs[0] + kv0 * p.vs[1] + w.hk * p.vs[2], p.vs[1], w.krows, p.d, t);
    cp_async_mbar_arrive(&kvfull);
    for (int64_t it = 0; it < ntiles; ++it) {
      const int s = (int)(it % ST);
      int64_t q0, qrows, h;
      const int64_t row0 = tile(it, q0, qrows, h);
      mbar_wait(&empty[s], (unsigned)(((it / ST) & 1) ^ 1));
      attn_copy_sw128<kD, BM>(sq + s * Cfg::Q_BYTES, static_cast<const T *>(p.q) + w.b * p.qs[0] + q0 * p.qs[1] + h * p.qs[2], p.qs[1], qrows, p.d, t);
      attn_copy_sw128<kD, BM>(sdo + s * Cfg::Q_BYTES, static_cast<const T *>(p.dout) + w.b * p.os[0] + q0 * p.os[1] + h * p.os[2], p.os[1], qrows, p.d, t);
#pragma unroll
      for (int r = t; r < 2 * BM; r += 128) {  // lse, then D; zero past the last row
        const int x = r % BM;
        const float *src = (r < BM ? p.lse_in : p.ws) + row0;
        cp_async4_zfill(sld + s * 2 * BM + r, x < qrows ? src + x : src, x < qrows);
      }
      cp_async_mbar_arrive(&full[s]);
    }
    cp_async_wait(0);  // no thread leaves with its copies in flight
  } else {  // ---- consumers ----
    setmaxnreg_inc<Cfg::CONSUMER_REGS>();
    const int c = threadIdx.x / 128 - 1, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane >> 2, t4 = lane & 3;
    const int kr0 = 64 * c + 16 * warp + g;  // this thread's keys in the tile: kr0 and kr0 + 8
    // Descriptors (the 128-byte swizzle, 1.4). K-major: K_c and V_c (the A operands of S^T and dP^T),
    // Q and dO (their B operands), the k-th step of 16 columns in chunk k / 4 at 32 (k % 4) bytes.
    // MN-major (64-column chunks R x 128 bytes apart for a tile of R rows, the k-th step of 16 rows
    // 2048 bytes further): dO and Q as the B operands of dV and dK; dS^T (A) and K (B) for dQ.
    const uint64_t dka = wgmma_desc_sw128(sk + c * 64 * 128, 16, 1024), dva = wgmma_desc_sw128(sv + c * 64 * 128, 16, 1024);
    // dQ's 64 x 64 block: rows qr0 (dS^T's 64-query chunk qr0 / 64), columns qc0 (K's chunk qc0 / 64).
    constexpr bool kRows = BM == 128;
    const int qr0 = kRows ? 64 * c : 0, qc0 = kRows ? 0 : 64 * c;
    const uint64_t dkb = wgmma_desc_sw128(sk + qc0 / 64 * BN * 128, BN * 128, 1024);
    float dk[kD / 2], dv[kD / 2];
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) dk[i] = dv[i] = 0.0f;
    if (ntiles > 0) mbar_wait(&kvfull, 0);
    fence_proxy_async();  // K and V came by cp.async (the generic proxy); wgmma reads them
    // Tile it: its stage has landed (landed); its S^T (64 keys x BM queries) issued, not waited for (scores).
    float s[BM / 2];
    auto landed = [&](int64_t it) {
      mbar_wait(&full[it % ST], (unsigned)((it / ST) & 1));
      fence_proxy_async();
    };
    // acc = A B^T over head_dim, A this consumer's 64 rows of K or V, B the BM rows of Q or dO (both
    // K-major; descriptors a, b), issued as one group.
    auto product = [&](float (&acc)[BM / 2], uint64_t a, uint64_t b) {
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk)
        wgmma_m64k16<T, BM, false, false>(acc, a + ((uint64_t)((kk / 4) * BN * 128 + (kk % 4) * 32) >> 4),
                                          b + ((uint64_t)((kk / 4) * BM * 128 + (kk % 4) * 32) >> 4), kk > 0 ? 1 : 0);
      wgmma_commit();
    };
    auto scores = [&](int64_t it) {
      wgmma_fence_operand(s);
      product(s, dka, wgmma_desc_sw128(sq + (it % ST) * Cfg::Q_BYTES, 16, 1024));
    };
    // Tile it, its S^T in flight: dP^T, P^T, dS^T, dV and dK, dQ; with a next tile (kNext) that
    // tile's S^T is issued behind dQ, so that this tile's dQ reductions run under it. No branch
    // between an issue and its wait (ptxas then keeps the groups asynchronous).
    auto tile_work = [&](int64_t it, auto next) {
      constexpr bool kNext = decltype(next)::value;
      const int st = (int)(it % ST), buf = (int)(it & 1);
      int64_t q0, qrows, h;
      const int64_t row0 = tile(it, q0, qrows, h);
      unsigned char *const qs = sq + st * Cfg::Q_BYTES, *const dos = sdo + st * Cfg::Q_BYTES, *const dsb = sds + buf * Cfg::DS_BYTES;
      const float *const slse = sld + st * 2 * BM, *const sd = slse + BM;
      float dp[BM / 2];
      product(dp, dva, wgmma_desc_sw128(dos, 16, 1024));
      wgmma_wait<1>();
      wgmma_fence_operand(s);
      // P^T: element 4 j + e is key kr0 + 8 (e >> 1), query 8 j + 2 t4 + (e & 1) of the tile. A row
      // that sees no key (lse -inf) gets P = 0; on edge tiles keys past the end and, causal, pairs
      // above the diagonal (key - query > dl) are zeroed by a select.
      const bool edge = w.krows < BN || (p.causal && kv0 + BN - 1 > q0 + p.off);
      const int64_t dl64 = q0 + p.off - kv0;
      const int dl = dl64 > BN ? BN : dl64 < -BM - 1 ? -BM - 1 : (int)dl64;
#pragma unroll
      for (int j = 0; j < BM / 8; ++j) {
        const float2 l = *reinterpret_cast<const float2 *>(slse + 8 * j + 2 * t4);
        const float l0 = l.x == -INFINITY ? INFINITY : l.x * kLog2e, l1 = l.y == -INFINITY ? INFINITY : l.y * kLog2e;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = exp2_approx(fmaf(s[4 * j + e], p.scale_log2, -(e & 1 ? l1 : l0)));
          const int kr = kr0 + 8 * (e >> 1), qc = 8 * j + 2 * t4 + (e & 1);
          if (edge && (kr >= w.krows || (p.causal && kr - qc > dl))) x = 0.0f;
          s[4 * j + e] = x;
        }
      }
      uint32_t pa[BM / 16][4], da[BM / 16][4];
#pragma unroll
      for (int kk = 0; kk < BM / 16; ++kk)
#pragma unroll
        for (int x = 0; x < 4; ++x) pa[kk][x] = pair_of<T>::pack(s[8 * kk + 2 * x], s[8 * kk + 2 * x + 1]);
      wgmma_wait<0>();
      wgmma_fence_operand(dp);
#pragma unroll
      for (int j = 0; j < BM / 8; ++j) {
        const float2 dd = *reinterpret_cast<const float2 *>(sd + 8 * j + 2 * t4);
#pragma unroll
        for (int e = 0; e < 4; ++e) dp[4 * j + e] = s[4 * j + e] * (dp[4 * j + e] - (e & 1 ? dd.y : dd.x));
      }
#pragma unroll
      for (int kk = 0; kk < BM / 16; ++kk)
#pragma unroll
        for (int x = 0; x < 4; ++x) da[kk][x] = pair_of<T>::pack(dp[8 * kk + 2 * x], dp[8 * kk + 2 * x + 1]);
      // dV += P^T dO and dK += dS^T Q (the scale applied at the end).
      {
        const uint64_t dom = wgmma_desc_sw128(dos, BM * 128, 1024), dqm = wgmma_desc_sw128(qs, BM * 128, 1024);
        wgmma_fence_operand(dv);
        wgmma_fence_operand(dk);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BM / 16; ++kk) wgmma_m64k16_rs<T, kD, true>(dv, pa[kk], dom + ((uint64_t)(kk * 2048) >> 4), 1);
#pragma unroll
        for (int kk = 0; kk < BM / 16; ++kk) wgmma_m64k16_rs<T, kD, true>(dk, da[kk], dqm + ((uint64_t)(kk * 2048) >> 4), 1);
        wgmma_commit();
      }
      // dS^T to shared memory meanwhile: a[kk][x] holds key kr0 + 8 (x & 1), queries 16 kk + 8 (x >> 1)
      // + 2 t4 (+ 1), at query chunk q / 64, 16-byte piece (q % 64) / 8 swizzled by the key row.
#pragma unroll
      for (int kk = 0; kk < BM / 16; ++kk)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int kr = kr0 + 8 * (x & 1), j = 2 * kk + (x >> 1);
          *reinterpret_cast<uint32_t *>(dsb + (j / 8) * BN * 128 + kr * 128 + swizzle_chunk(kr, j % 8) * 16 + 4 * t4) = da[kk][x];
        }
      fence_proxy_async();  // the stores (generic proxy) before wgmma reads them
      wgmma_wait<0>();
      wgmma_fence_operand(dv);
      wgmma_fence_operand(dk);
#pragma unroll
      for (int kk = 0; kk < BM / 16; ++kk) wgmma_fence_operand(pa[kk]), wgmma_fence_operand(da[kk]);
      mbar_arrive(&empty[st]);  // this thread's reads of the stage (lse, D; Q and dO by its wgmma) are done
      named_barrier(1, 256);                   // both consumers' dS^T are in the buffer
      if constexpr (kNext) landed(it + 1);  // before the dQ product: no branch between an issue and its wait
      // dQ block = dS K over the tile's 128 keys.
      float q[32];
      {
        const uint64_t dsa = wgmma_desc_sw128(dsb + qr0 / 64 * BN * 128, BN * 128, 1024);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk)
          wgmma_m64k16<T, 64, true, true>(q, dsa + ((uint64_t)(kk * 2048) >> 4), dkb + ((uint64_t)(kk * 2048) >> 4), kk > 0 ? 1 : 0);
        wgmma_commit();
      }
      if constexpr (kNext) {
        scores(it + 1);
        wgmma_wait<1>();
      } else {
        wgmma_wait<0>();
      }
      wgmma_fence_operand(q);
      const int wr = qr0 + 16 * warp;  // this warp's 16 rows of the tile
#pragma unroll
      for (int j = 0; j < 8; j += 2) attn_dq_add(dq_acc + (row0 + wr) * p.d, p.d, qrows - wr, qc0 + 8 * j, p.d, q + 4 * j, q + 4 * j + 4, p.scale, g, t4);
      if constexpr (kNext) {
        wgmma_wait<0>();  // the next S^T, within this iteration (a group in flight across the loop's
        wgmma_fence_operand(s);  // back edge makes ptxas serialize every wgmma)
      }
    };
    if (ntiles > 0) {  // every path out of this block has no wgmma in flight
      landed(0), scores(0);
      int64_t it = 0;
      for (; it + 1 < ntiles; ++it) tile_work(it, std::true_type{});
      tile_work(it, std::false_type{});
    }
    // dK (scaled) and dV: keys kv0 + kr0 (+ 8), columns 8 n + 2 t4 (+ 1).
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t j = kv0 + kr0 + 8 * r;
      if (j >= p.sk) continue;
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        const int col = 8 * n + 2 * t4;
        if (col < p.d)
          attn_bwd_store<T>(p, w, dkv_acc, splits, j, col, dk[4 * n + 2 * r] * p.scale, dk[4 * n + 2 * r + 1] * p.scale, dv[4 * n + 2 * r],
                            dv[4 * n + 2 * r + 1]);
      }
    }
  }
#else
  (void)p, (void)dq_acc, (void)dkv_acc, (void)splits, (void)hgroup;
#endif
}

// dK and dV from the split backward's partial sums ([part][batch x kv head][key][head_dim], dK's then
// dV's), the parts added in order (the same bits every run), into k's and v's layouts and type.
template <class T> __global__ void __launch_bounds__(256) attn_bwd_dkv_reduce(const attn_params p, const float *dkv_acc, int splits) {
  const int64_t hkv = p.hq / p.group, n = p.batch * hkv * p.sk * p.d, nkv = splits * n;
  for (int64_t x = blockIdx.x * 256ll + threadIdx.x; x < n; x += (int64_t)gridDim.x * 256) {
    const int64_t c = x % p.d, row = x / p.d, j = row % p.sk, bh = row / p.sk, b = bh / hkv, h = bh % hkv;
    float sk = 0.0f, sv = 0.0f;
    for (int q = 0; q < splits; ++q) sk += dkv_acc[q * n + x], sv += dkv_acc[nkv + q * n + x];
    static_cast<T *>(p.dk)[b * p.ks[0] + j * p.ks[1] + h * p.ks[2] + c] = from_f32<T>(sk);
    static_cast<T *>(p.dv)[b * p.vs[0] + j * p.vs[1] + h * p.vs[2] + c] = from_f32<T>(sv);
  }
}

// dQ from its f32 accumulator (rows (b, h, i) of head_dim values) into q's layout and type.
template <class T> __global__ void __launch_bounds__(256) attn_bwd_dq_convert(const attn_params p, const float *dq_acc) {
  const int64_t n = p.batch * p.hq * p.sq * p.d;
  for (int64_t x = blockIdx.x * 256ll + threadIdx.x; x < n; x += (int64_t)gridDim.x * 256) {
    const int64_t c = x % p.d, row = x / p.d, i = row % p.sq, bh = row / p.sq, b = bh / p.hq, h = bh % p.hq;
    static_cast<T *>(p.dq)[b * p.qs[0] + i * p.qs[1] + h * p.qs[2] + c] = from_f32<T>(dq_acc[x]);
  }
}

// ---- 10.4 Dispatch policy ------------------------------------------------------------------------
// The head_dim templates: 64 and 128 are the fast paths; other multiples of 8 run the next size up
// with the columns past head_dim zero-filled (FLASH2) or skipped (the CUDA-core kernels).
constexpr int kAttnMinCcFlash2 = 80;  // mma.sync with bf16, cp.async
constexpr int kAttnCcWgmma = 90;      // sm_90a code runs on compute capability 9.0 only
template <class F> inline gpuops_status attn_with_dim(int64_t d, F &&f) {
  if (d <= 64) return f(std::integral_constant<int, 64>{});
  if (d <= 128) return f(std::integral_constant<int, 128>{});
  return f(std::integral_constant<int, 256>{});
}
// FLASH2 backward's template for attn_with_dim's: head_dim <= 128 only (dK and dV in registers).
constexpr int attn_bwd_dim(int dim) { return dim < 128 ? dim : 128; }

}  // namespace gpuops

// ---- 10.5 Launcher and C entry point (implementation only) -------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// attn_block_order's causal group: heads enough for about one wave of blocks of `per_head` each.
inline int64_t attn_head_group(int64_t per_head) {
  const int64_t sms = current_device().sms;
  return per_head >= sms ? 1 : (sms + per_head - 1) / per_head;
}

inline attn_params attn_params_of(const gpuops__attn_args &r) {
  attn_params p;
  memset(&p, 0, sizeof p);
  const gpuops_attention_dims &d = r.d;
  p.q = r.q, p.k = r.k, p.v = r.v, p.o = r.o, p.lse = r.lse;
  for (int x = 0; x < 3; ++x) p.qs[x] = d.q_stride[x], p.ks[x] = d.k_stride[x], p.vs[x] = d.v_stride[x], p.os[x] = d.o_stride[x];
  p.batch = d.batch, p.sq = d.seqlen_q, p.sk = d.seqlen_k, p.hq = d.heads_q, p.group = d.heads_q / d.heads_kv, p.d = d.head_dim;
  p.off = d.seqlen_k - d.seqlen_q, p.scale = r.scale, p.scale_log2 = r.scale * kLog2e, p.causal = r.mask == GPUOPS_ATTN_MASK_CAUSAL;
  p.ws = static_cast<float *>(r.workspace);
  p.dout = r.dout, p.oin = r.oin, p.lse_in = r.lse_in, p.dq = r.dq, p.dk = r.dk, p.dv = r.dv;
  return p;
}

// Whether FLASH2 can run this call: 16-bit storage, a device and a build with mma.sync, 16-byte
// rows (pointers 16-byte aligned, every stride a multiple of 8 elements), and for the backward
// head_dim <= 128.
inline gpuops_status attn_flash2_ok(const gpuops__attn_args &r) {
  if (r.dt == GPUOPS__F32 || current_device().cc < kAttnMinCcFlash2) return GPUOPS_ERR_UNSUPPORTED;
  if (r.bwd && r.d.head_dim > 128) return GPUOPS_ERR_UNSUPPORTED;  // dK and dV in registers
  if (r.bwd && attn_with_dim(r.d.head_dim, [](auto dim) {  // head_dim 128: 145 KiB a block (sm_80, sm_90; not sm_86 or sm_89)
        return attn_flash2_bwd_cfg<attn_bwd_dim(decltype(dim)::value)>::kSmem > current_device().smem_optin ? GPUOPS_ERR_UNSUPPORTED : GPUOPS_OK;
      }) != GPUOPS_OK)
    return GPUOPS_ERR_UNSUPPORTED;
  const void *ptrs[6] = {r.q, r.k, r.v, r.bwd ? r.dout : r.o, r.dk, r.dv};
  for (const void *ptr : ptrs)
    if ((uintptr_t)ptr % 16) return GPUOPS_ERR_MISALIGNED;
  const gpuops_attention_dims &d = r.d;
  for (int x = 0; x < 3; ++x)
    if (d.q_stride[x] % 8 || d.k_stride[x] % 8 || d.v_stride[x] % 8 || d.o_stride[x] % 8) return GPUOPS_ERR_MISALIGNED;
  return GPUOPS_OK;
}

template <class T, int kD> inline gpuops_status attn_flash2_launch(const attn_params &p, gpuops_stream stream) {
  using Cfg = attn_flash2_cfg<kD>;
  constexpr auto kernel = attn_flash2_fwd<T, kD>;
  if (!built_for<kernel>(kAttnMinCcFlash2) || Cfg::kSmem > current_device().smem_optin) return GPUOPS_ERR_UNSUPPORTED;
  const int64_t blocks = (p.sq + Cfg::BM - 1) / Cfg::BM * p.batch * p.hq;
  if (blocks > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
  if (Cfg::kSmem > 48 * 1024) {
    const gpuops_status st = cuda_call_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Cfg::kSmem));
    if (st != GPUOPS_OK) return st;
  }
  kernel<<<(unsigned)blocks, Cfg::THREADS, Cfg::kSmem, stream>>>(p);
  return launch_status();
}

// Whether an attention WGMMA kernel (Cfg: its mbarriers and shared memory) runs here: compute
// capability 9.0, the kernel built for sm_90a (its body elsewhere is empty: no static shared
// memory, asked once), its shared memory available.
template <auto Kernel, class Cfg> inline bool attn_wgmma_runs() {
  return current_device().cc == kAttnCcWgmma && built_sm90a<Kernel>(8 * Cfg::kBarriers) && Cfg::kSmem <= current_device().smem_optin;
}

// WGMMA: FLASH2's rules (attn_flash2_ok) and head_dim <= 128, where attn_wgmma_runs.
template <class T, int kD, int kC, bool kTurns> inline gpuops_status attn_wgmma_launch(const attn_params &p, gpuops_stream stream) {
  using Cfg = attn_wgmma_cfg<kD, kC>;
  constexpr auto kernel = attn_wgmma_fwd<T, kD, kC, kTurns>;
  if (!attn_wgmma_runs<kernel, Cfg>()) return GPUOPS_ERR_UNSUPPORTED;
  const int64_t tiles = (p.sq + Cfg::BM - 1) / Cfg::BM, total = tiles * p.batch * p.hq;
  if (total > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
  const gpuops_status st = cuda_call_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Cfg::kSmem));
  if (st != GPUOPS_OK) return st;
  kernel<<<(unsigned)total, Cfg::THREADS, Cfg::kSmem, stream>>>(p, attn_head_group(tiles));
  return launch_status();
}
// The consumers take turns (kTurns) under the causal mask only: measured faster there, slower
// without it (the kernel's comment has the numbers). Three consumers (192-row tiles) at head_dim
// 64, except causal with seqlen_q < kAttnWgmmaThreeMinRows. Measured against two (H100,
// bench_attention --quick, same run, TFLOP/s): seqlen 4096 +5-6% (401-405 -> 422-429), causal
// +9% (341-345 -> 373-377), 1024 +2-3%, but 1024 causal -7% (214-220 -> 200-202: the last of 6
// tiles is a third empty, and the causal tiles' lengths differ more).
constexpr int64_t kAttnWgmmaThreeMinRows = 4096;
template <class T, int kD, bool kTurns> inline gpuops_status attn_wgmma_pick(const attn_params &p, gpuops_stream stream) {
  if constexpr (kD <= 64)
    if (!p.causal || p.sq >= kAttnWgmmaThreeMinRows) return attn_wgmma_launch<T, kD, 3, kTurns>(p, stream);
  return attn_wgmma_launch<T, kD, 2, kTurns>(p, stream);
}
template <class T, int kD> inline gpuops_status attn_wgmma_run(const attn_params &p, gpuops_stream stream) {
  return p.causal ? attn_wgmma_pick<T, kD, true>(p, stream) : attn_wgmma_pick<T, kD, false>(p, stream);
}
template <class T> inline gpuops_status attn_wgmma(const gpuops__attn_args &r, const attn_params &p) {
  const gpuops_status st = attn_flash2_ok(r);
  if (st != GPUOPS_OK) return st;
  if (p.d > 128) return GPUOPS_ERR_UNSUPPORTED;
  return p.d <= 64 ? attn_wgmma_run<T, 64>(p, r.stream) : attn_wgmma_run<T, 128>(p, r.stream);
}

// The WGMMA backward runs where FLASH2's does (attn_flash2_ok: 16-bit storage, head_dim <= 128, the
// alignment rule), on compute capability 9.0 with the kernel built for sm_90a.
template <class T> inline gpuops_status attn_wgmma_bwd_ok(const gpuops__attn_args &r) {
  const gpuops_status st = attn_flash2_ok(r);
  if (st != GPUOPS_OK) return st;
  if constexpr (std::is_same<T, float>::value) return GPUOPS_ERR_UNSUPPORTED;
  else
    return attn_with_dim(r.d.head_dim, [](auto dim) {
      constexpr int kD = attn_bwd_dim(decltype(dim)::value);
      return attn_wgmma_runs<attn_wgmma_bwd<T, kD>, attn_wgmma_bwd_cfg<kD>>() ? GPUOPS_OK : GPUOPS_ERR_UNSUPPORTED;
    });
}

// A tensor-core backward (Kernel: attn_flash2_bwd or attn_wgmma_bwd, Cfg its configuration) after
// attn_bwd_pre: a block per BN keys of a (batch, kv head) and split part, then the split parts' dK
// and dV added in order (attn_bwd_dkv_reduce), then dQ rounded from its f32 sums.
template <class T, class Cfg, auto Kernel> inline gpuops_status attn_bwd_tc(const gpuops__attn_args &r, const attn_params &p, float *dq_acc) {
  const int64_t rows = p.batch * p.hq * p.sq, hkv = p.hq / p.group;
  const int splits = (int)gpuops__attn_bwd_splits(&r.d);
  const int64_t ktiles = (p.sk + Cfg::BN - 1) / Cfg::BN, blocks = ktiles * p.batch * hkv * splits;
  if (blocks > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
  gpuops_status st;
  if (Cfg::kSmem > 48 * 1024 &&
      (st = cuda_call_status(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Cfg::kSmem))) != GPUOPS_OK)
    return st;
  float *dkv_acc = dq_acc + rows * p.d;  // after dQ's f32 rows (a multiple of 4 floats: 16-byte aligned)
  Kernel<<<(unsigned)blocks, Cfg::THREADS, Cfg::kSmem, r.stream>>>(p, dq_acc, dkv_acc, splits, attn_head_group(ktiles * splits));
  if ((st = launch_status()) != GPUOPS_OK) return st;
  if (splits > 1) {
    const int64_t nkv = p.batch * hkv * p.sk * p.d, kb = (nkv + 255) / 256;
    attn_bwd_dkv_reduce<T><<<(unsigned)(kb < 8192 ? kb : 8192), 256, 0, r.stream>>>(p, dkv_acc, splits);
    if ((st = launch_status()) != GPUOPS_OK) return st;
  }
  const int64_t n = rows * p.d, cb = (n + 255) / 256;
  if (n > 0) {
    attn_bwd_dq_convert<T><<<(unsigned)(cb < 8192 ? cb : 8192), 256, 0, r.stream>>>(p, dq_acc);
    if ((st = launch_status()) != GPUOPS_OK) return st;
  }
  return GPUOPS_OK;
}

// NAIVE: per (batch, head), S = scale Q K^T (f32), mask and lse, softmax in place, P V.
template <class T> inline gpuops_status attn_naive(const gpuops__attn_args &r, const attn_params &p) {
#if defined(GPUOPS__ATTENTION_NO_NAIVE)
  (void)r, (void)p;
  return GPUOPS_ERR_UNSUPPORTED;
#else
  const int64_t sq = p.sq, sk = p.sk, d = p.d, n = sq * sk;
  float *s = p.ws;
  T *p16 = reinterpret_cast<T *>(reinterpret_cast<char *>(p.ws) + (n * 4 + 15) / 16 * 16);
  // One row needs no stride: the GEMM's leading dimensions must still cover a row.
  const int64_t lq = sq == 1 && p.qs[1] < d ? d : p.qs[1], lk = sk == 1 && p.ks[1] < d ? d : p.ks[1];
  const int64_t lv = sk == 1 && p.vs[1] < d ? d : p.vs[1], lo = sq == 1 && p.os[1] < d ? d : p.os[1];
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.hq; ++h) {
      const int64_t hk = h / p.group;
      const T *q = static_cast<const T *>(p.q) + b * p.qs[0] + h * p.qs[2];
      const T *k = static_cast<const T *>(p.k) + b * p.ks[0] + hk * p.ks[2];
      const T *v = static_cast<const T *>(p.v) + b * p.vs[0] + hk * p.vs[2];
      T *o = static_cast<T *>(p.o) + b * p.os[0] + h * p.os[2];
      float *lse = p.lse ? p.lse + (b * p.hq + h) * sq : nullptr;
      gpuops_status st;
      if constexpr (std::is_same<T, float>::value)
        st = gpuops_matmul_f32(s, q, k, sq, sk, d, lq, lk, sk, p.scale, 0.0f, GPUOPS_OP_N, GPUOPS_OP_T, GPUOPS_ALGO_AUTO, r.stream);
      else if constexpr (std::is_same<T, __half>::value)
        st = gpuops_gemm_f16_f32(s, reinterpret_cast<const gpuops_f16 *>(q), reinterpret_cast<const gpuops_f16 *>(k), sq, sk, d, lq, lk, sk, p.scale, 0.0f,
                                 GPUOPS_OP_N, GPUOPS_OP_T, nullptr, GPUOPS_ALGO_AUTO, r.stream);
      else
        st = gpuops_gemm_bf16_f32(s, reinterpret_cast<const gpuops_bf16 *>(q), reinterpret_cast<const gpuops_bf16 *>(k), sq, sk, d, lq, lk, sk, p.scale,
                                  0.0f, GPUOPS_OP_N, GPUOPS_OP_T, nullptr, GPUOPS_ALGO_AUTO, r.stream);
      if (st != GPUOPS_OK) return st;
      attn_naive_mask_lse<><<<(unsigned)((sq + 7) / 8), 256, 0, r.stream>>>(s, lse, sq, sk, p.off, p.causal);
      if ((st = launch_status()) != GPUOPS_OK) return st;
      if ((st = gpuops_softmax_fwd_f32(s, s, sq, sk, GPUOPS_ALGO_AUTO, r.stream)) != GPUOPS_OK) return st;
      if constexpr (std::is_same<T, float>::value) {
        st = gpuops_matmul_f32(o, s, v, sq, d, sk, sk, lv, lo, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_ALGO_AUTO, r.stream);
      } else {
        const int64_t blocks = (n + 255) / 256;
        attn_naive_round<T><<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, r.stream>>>(p16, s, n);
        if ((st = launch_status()) != GPUOPS_OK) return st;
        if constexpr (std::is_same<T, __half>::value)
          st = gpuops_gemm_f16(reinterpret_cast<gpuops_f16 *>(o), reinterpret_cast<const gpuops_f16 *>(p16), reinterpret_cast<const gpuops_f16 *>(v), sq, d,
                               sk, sk, lv, lo, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, nullptr, GPUOPS_ALGO_AUTO, r.stream);
        else
          st = gpuops_gemm_bf16(reinterpret_cast<gpuops_bf16 *>(o), reinterpret_cast<const gpuops_bf16 *>(p16), reinterpret_cast<const gpuops_bf16 *>(v), sq,
                                d, sk, sk, lv, lo, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, nullptr, GPUOPS_ALGO_AUTO, r.stream);
      }
      if (st != GPUOPS_OK) return st;
    }
  return GPUOPS_OK;
#endif
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__attn_launch(const gpuops__attn_args *r) {
  using namespace gpuops;
  const attn_params p = attn_params_of(*r);
  return dispatch_float(r->dt, [&](auto *tp) -> gpuops_status {
    using T = typename std::remove_pointer<decltype(tp)>::type;
    gpuops_status st;
    if (r->bwd) {
      gpuops_algo algo = r->algo;
      if (algo == GPUOPS_ALGO_NAIVE) return GPUOPS_ERR_UNSUPPORTED;  // forward only
      if (algo == GPUOPS_ALGO_AUTO)
        algo = attn_wgmma_bwd_ok<T>(*r) == GPUOPS_OK ? GPUOPS_ALGO_WGMMA : attn_flash2_ok(*r) == GPUOPS_OK ? GPUOPS_ALGO_FLASH2 : GPUOPS_ALGO_FLASH;
      if (algo == GPUOPS_ALGO_WGMMA && (st = attn_wgmma_bwd_ok<T>(*r)) != GPUOPS_OK) return st;
      if (algo == GPUOPS_ALGO_FLASH2 && (st = attn_flash2_ok(*r)) != GPUOPS_OK) return st;
      if ((st = gpuops__attn_check_ws(r, algo)) != GPUOPS_OK) return st;
      const bool tc = algo == GPUOPS_ALGO_FLASH2 || algo == GPUOPS_ALGO_WGMMA;  // the tensor-core backwards: dQ by f32 reductions
      const int64_t rows = p.batch * p.hq * p.sq, hkv = p.hq / p.group;
      float *dq_acc = p.ws + (rows + 3) / 4 * 4;
      if ((p.sk + 3) / 4 * p.batch * hkv > 0x7fffffff || (rows + 3) / 4 > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;  // grid sizes
      if (tc && rows > 0 && (st = cuda_call_status(cudaMemsetAsync(dq_acc, 0, (size_t)rows * p.d * 4, r->stream))) != GPUOPS_OK) return st;
      if (rows > 0) {
        attn_bwd_pre<T><<<(unsigned)((rows + 7) / 8), 256, 0, r->stream>>>(p);
        if ((st = launch_status()) != GPUOPS_OK) return st;
      }
      if (tc) {
        if constexpr (std::is_same<T, float>::value) return GPUOPS_ERR_UNSUPPORTED;
        else
          return attn_with_dim(p.d, [&](auto dim) -> gpuops_status {
            constexpr int kD = attn_bwd_dim(decltype(dim)::value);
            if (algo == GPUOPS_ALGO_WGMMA) return attn_bwd_tc<T, attn_wgmma_bwd_cfg<kD>, attn_wgmma_bwd<T, kD>>(*r, p, dq_acc);
            if (!built_for<attn_flash2_bwd<T, kD>>(kAttnMinCcFlash2)) return GPUOPS_ERR_UNSUPPORTED;  // its shared memory: attn_flash2_ok
            return attn_bwd_tc<T, attn_flash2_bwd_cfg<kD>, attn_flash2_bwd<T, kD>>(*r, p, dq_acc);
          });
      }
      return attn_with_dim(p.d, [&](auto dim) -> gpuops_status {  // FLASH: on CUDA cores
        constexpr int kD = decltype(dim)::value;
        gpuops_status s2;
        const int64_t kb = (p.sk + 3) / 4 * p.batch * hkv, qb = (rows + 3) / 4;
        if (kb > 0) {
          attn_bwd_dkdv<T, kD><<<(unsigned)kb, 128, 0, r->stream>>>(p);
          if ((s2 = launch_status()) != GPUOPS_OK) return s2;
        }
        if (qb > 0) {
          attn_bwd_dq<T, kD><<<(unsigned)qb, 128, 0, r->stream>>>(p);
          if ((s2 = launch_status()) != GPUOPS_OK) return s2;
        }
        return GPUOPS_OK;
      });
    }
    gpuops_algo algo = r->algo;
    if (algo == GPUOPS_ALGO_WGMMA || algo == GPUOPS_ALGO_AUTO) {  // AUTO: WGMMA where it runs
      if constexpr (std::is_same<T, float>::value) st = GPUOPS_ERR_UNSUPPORTED;
      else st = attn_wgmma<T>(*r, p);
      if (algo == GPUOPS_ALGO_WGMMA || (st != GPUOPS_ERR_UNSUPPORTED && st != GPUOPS_ERR_MISALIGNED)) return st;
    }
    if (algo == GPUOPS_ALGO_AUTO) algo = attn_flash2_ok(*r) == GPUOPS_OK ? GPUOPS_ALGO_FLASH2 : r->dt == GPUOPS__F32 ? GPUOPS_ALGO_NAIVE : GPUOPS_ALGO_FLASH;
    if (algo == GPUOPS_ALGO_FLASH2) {
      if ((st = attn_flash2_ok(*r)) != GPUOPS_OK) return st;
      if constexpr (std::is_same<T, float>::value) return GPUOPS_ERR_UNSUPPORTED;
      else return attn_with_dim(p.d, [&](auto dim) { return attn_flash2_launch<T, decltype(dim)::value>(p, r->stream); });
    }
    if ((st = gpuops__attn_check_ws(r, algo)) != GPUOPS_OK) return st;
    if (algo == GPUOPS_ALGO_NAIVE) return attn_naive<T>(*r, p);
    if (p.batch * p.hq > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
    return attn_with_dim(p.d, [&](auto dim) -> gpuops_status {
      attn_flash_fwd<T, decltype(dim)::value><<<(unsigned)(p.batch * p.hq), 128, 0, r->stream>>>(p);
      return launch_status();
    });
  });
}
#endif  // GPUOPS_IMPLEMENTATION

#endif  // GPUOPS_NO_ATTENTION

// ==== 11. Convolution ==========================================================================
#ifndef GPUOPS_NO_CONV
namespace gpuops {

// ---- 11.1 Contract and building blocks -------------------------------------------------------
// gpuops.h section 11 states the semantics. Rooflines:
//   conv1d / conv2d_plane: 4 bytes read and 4 written per output, 2 fw (2 fh fw) flops: memory-bound
//   for every filter up to 15 x 15 on a GPU (H100: ~20 flops per byte before the FFMA peak), so the
//   target is the copy bandwidth; the versions differ in how many times each input is fetched from
//   L1/shared memory and how the taps are delivered.
//   conv2d (image models): a GEMM of (N P Q) x K x (C R S), 2 N P Q K C R S flops; ResNet's 3x3
//   layers are compute-bound (arithmetic intensity in the hundreds), the 1x1 layers with few
//   channels near the ridge.
// Even filters: the centre tap is (f - 1) / 2, so an even filter reaches one more element after the
// output's position than before it (PyTorch's padding='same').

// The learning-path filter in constant memory: all lanes of a warp read the same tap, which the
// constant cache serves as one broadcast. One buffer per translation unit (the implementation's):
// the launcher fills it with a device-to-device copy on the op's stream.
static __constant__ float conv_filter_const[GPUOPS__CONV_CONST_TAPS];

// Output tiles of the learning-path kernels: 256 outputs (1D), 32 x 8 outputs (2D), a thread each.
constexpr int kConv1dTile = 256;
constexpr int kConvTileW = 32, kConvTileH = 8;

// ---- 11.2 Learning-path kernels --------------------------------------------------------------
// Each thread computes one output. kConst: taps from conv_filter_const, else from f.

// NAIVE / CONST_FILTER, 1D: each output reads its fw inputs from global memory (neighbouring
// threads re-read the same inputs: L1 absorbs most of it).
template <bool kConst> __global__ void __launch_bounds__(kConv1dTile) conv1d_direct(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ f, int64_t n, int fw) {
  const int64_t i = (int64_t)blockIdx.x * kConv1dTile + threadIdx.x;
  if (i >= n) return;
  const int64_t lo = i - (fw - 1) / 2;
  float acc = 0.0f;
  for (int j = 0; j < fw; ++j) {
    const int64_t t = lo + j;
    const float tap = kConst ? conv_filter_const[j] : f[j];
    if (t >= 0 && t < n) acc = fmaf(x[t], tap, acc);
  }
  y[i] = acc;
}

// SHARED_TILED, 1D: the block loads its 256 inputs and the fw - 1 halo inputs into shared memory
// (zeros outside the signal), then every output reads its window from there: each input leaves
// global memory once per block.
template <int = 0> __global__ void __launch_bounds__(kConv1dTile) conv1d_shared_tiled(float *__restrict__ y, const float *__restrict__ x, int64_t n, int fw) {
  __shared__ float tile[kConv1dTile + GPUOPS__CONV_MAX_F - 1];
  const int64_t base = (int64_t)blockIdx.x * kConv1dTile, lo = base - (fw - 1) / 2;
  for (int t = threadIdx.x; t < kConv1dTile + fw - 1; t += kConv1dTile) {
    const int64_t g = lo + t;
    tile[t] = g >= 0 && g < n ? x[g] : 0.0f;
  }
  __syncthreads();
  const int64_t i = base + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int j = 0; j < fw; ++j) acc = fmaf(tile[threadIdx.x + j], conv_filter_const[j], acc);
  y[i] = acc;
}

// CACHED_HALO, 1D: only the block's own 256 inputs go to shared memory; a window that reaches past
// the tile reads the halo from global memory, which the neighbouring blocks have just brought into
// L1/L2. Simpler loads, no halo threads, a branch in the inner loop.
template <int = 0> __global__ void __launch_bounds__(kConv1dTile) conv1d_cached_halo(float *__restrict__ y, const float *__restrict__ x, int64_t n, int fw) {
  __shared__ float tile[kConv1dTile];
  const int64_t base = (int64_t)blockIdx.x * kConv1dTile, i = base + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i >= n) return;
  const int c = (fw - 1) / 2;
  float acc = 0.0f;
  for (int j = 0; j < fw; ++j) {
    const int t = (int)threadIdx.x + j - c;
    const int64_t g = i + j - c;
    const float v = t >= 0 && t < kConv1dTile ? tile[t] : g >= 0 && g < n ? __ldg(x + g) : 0.0f;
    acc = fmaf(v, conv_filter_const[j], acc);
  }
  y[i] = acc;
}

// The 2D plane: blocks of 32 x 8 threads, one output each; block b covers tile row b / tiles_w,
// tile column b % tiles_w (a 1D grid: any h and w).
template <bool kConst>
__global__ void __launch_bounds__(kConvTileW *kConvTileH) conv2d_plane_direct(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ f, int64_t h, int64_t w, int fh, int fw,
                                                                               int64_t tiles_w) {
  const int64_t i = (int64_t)blockIdx.x / tiles_w * kConvTileH + threadIdx.y, j = (int64_t)blockIdx.x % tiles_w * kConvTileW + threadIdx.x;
  if (i >= h || j >= w) return;
  const int64_t i0 = i - (fh - 1) / 2, j0 = j - (fw - 1) / 2;
  float acc = 0.0f;
  for (int a = 0; a < fh; ++a) {
    const int64_t r = i0 + a;
    if (r < 0 || r >= h) continue;
    for (int b = 0; b < fw; ++b) {
      const int64_t c = j0 + b;
      const float tap = kConst ? conv_filter_const[a * fw + b] : f[a * fw + b];
      if (c >= 0 && c < w) acc = fmaf(x[r * w + c], tap, acc);
    }
  }
  y[i * w + j] = acc;
}

// SHARED_TILED, 2D: the (8 + fh - 1) x (32 + fw - 1) input tile with its halo in shared memory.
template <int = 0> __global__ void __launch_bounds__(kConvTileW *kConvTileH) conv2d_plane_shared_tiled(float *__restrict__ y, const float *__restrict__ x, int64_t h, int64_t w, int fh, int fw, int64_t tiles_w) {
  constexpr int kRow = kConvTileW + GPUOPS__CONV_MAX_F - 1;
  __shared__ float tile[(kConvTileH + GPUOPS__CONV_MAX_F - 1) * kRow];
  const int64_t ti = (int64_t)blockIdx.x / tiles_w * kConvTileH, tj = (int64_t)blockIdx.x % tiles_w * kConvTileW;
  const int64_t i0 = ti - (fh - 1) / 2, j0 = tj - (fw - 1) / 2;
  const int th = kConvTileH + fh - 1, tw = kConvTileW + fw - 1, tid = threadIdx.y * kConvTileW + threadIdx.x;
  for (int t = tid; t < th * tw; t += kConvTileW * kConvTileH) {
    const int a = t / tw, b = t % tw;
    const int64_t r = i0 + a, c = j0 + b;
    tile[a * kRow + b] = r >= 0 && r < h && c >= 0 && c < w ? x[r * w + c] : 0.0f;
  }
  __syncthreads();
  const int64_t i = ti + threadIdx.y, j = tj + threadIdx.x;
  if (i >= h || j >= w) return;
  float acc = 0.0f;
  for (int a = 0; a < fh; ++a)
    for (int b = 0; b < fw; ++b) acc = fmaf(tile[(threadIdx.y + a) * kRow + threadIdx.x + b], conv_filter_const[a * fw + b], acc);
  y[i * w + j] = acc;
}

// CACHED_HALO, 2D: the 8 x 32 tile in shared memory, the halo from global memory (L1/L2).
template <int = 0> __global__ void __launch_bounds__(kConvTileW *kConvTileH) conv2d_plane_cached_halo(float *__restrict__ y, const float *__restrict__ x, int64_t h, int64_t w, int fh, int fw, int64_t tiles_w) {
  __shared__ float tile[kConvTileH][kConvTileW];
  const int64_t ti = (int64_t)blockIdx.x / tiles_w * kConvTileH, tj = (int64_t)blockIdx.x % tiles_w * kConvTileW;
  const int64_t i = ti + threadIdx.y, j = tj + threadIdx.x;
  tile[threadIdx.y][threadIdx.x] = i < h && j < w ? x[i * w + j] : 0.0f;
  __syncthreads();
  if (i >= h || j >= w) return;
  const int ch = (fh - 1) / 2, cw = (fw - 1) / 2;
  float acc = 0.0f;
  for (int a = 0; a < fh; ++a) {
    const int sa = (int)threadIdx.y + a - ch;
    const int64_t r = i + a - ch;
    for (int b = 0; b < fw; ++b) {
      const int sb = (int)threadIdx.x + b - cw;
      const int64_t c = j + b - cw;
      float v;
      if (sa >= 0 && sa < kConvTileH && sb >= 0 && sb < kConvTileW) v = tile[sa][sb];
      else v = r >= 0 && r < h && c >= 0 && c < w ? __ldg(x + r * w + c) : 0.0f;
      acc = fmaf(v, conv_filter_const[a * fw + b], acc);
    }
  }
  y[i * w + j] = acc;
}

// REGISTER_1D / REGISTER_2D: each thread computes a run of 4 neighbouring outputs (1D), or a 4 x 4
// block of them (2D), in registers. The block's input tile and halo reach shared memory by cp.async
// (zero-filled outside the signal: any length, any alignment); a thread then reads each input row
// of its window once, as 16-byte words (conflict-free: lanes 16 bytes apart), and uses every
// element for all the outputs that need it: a load serves up to 4 (1D) or 16 (2D) fused
// multiply-adds where the tiled versions spend one load per tap. FW, the filter's width, is a
// template argument (the launcher instantiates 1..15), so the window and the taps live in
// registers. The taps: 1D from f into registers once; 2D see conv2d_plane_register.
// Roofline: 8 bytes of DRAM per output, 2 fh fw flops. On an H100 (~3.0 TB/s, ~60 TFLOP/s of FFMA
// at the clock it holds under load) an output costs 2.7 ps of DRAM time and fh fw x 0.033 ps of
// FFMA: 1D is memory-bound at every width (measured 0.99-1.00x copy), 2D up to ~80 taps (a 7 x 7
// filter needs 60% of the FFMA rate to keep up with DRAM: 0.85x copy measured; 15 x 15 is
// compute-bound at ~0.35x copy: 0.31x measured, 52 TFLOP/s).
constexpr int kConvReg1dTile = 2048;                 // outputs per block (2 runs of 4 per thread)
constexpr int kConvReg2dW = 128, kConvReg2dH = 32;   // outputs per block: 32 lanes x 4, 8 warps x 4

// A register-version call's launch: its blocks (1D: 2048 outputs each; 2D: 128 x 32 tiles, tiles_w
// of them across) and the alignments its 16-byte paths need (vec: y's rows take 16-byte stores;
// xvec, 2D: x's rows take 16-byte copies).
struct conv_reg_grid {
  int64_t blocks, tiles_w;
  bool vec, xvec;
};
inline conv_reg_grid conv_reg_grid_of(bool two_d, const float *y, const float *x, int64_t h, int64_t w) {
  conv_reg_grid g;
  g.tiles_w = (w + kConvReg2dW - 1) / kConvReg2dW;
  g.blocks = two_d ? g.tiles_w * ((h + kConvReg2dH - 1) / kConvReg2dH) : (w + kConvReg1dTile - 1) / kConvReg1dTile;
  g.vec = reinterpret_cast<uintptr_t>(y) % 16 == 0 && (!two_d || w % 4 == 0);
  g.xvec = two_d && reinterpret_cast<uintptr_t>(x) % 16 == 0 && w % 4 == 0;
  return g;
}

// acc[c] += sum_b win[SH + c + b] * tap[b] for the 4 outputs c of a run, taps in order b = 0 .. FW - 1.
template <int FW, int SH = 0> __device__ __forceinline__ void conv_reg_row(float (&acc)[4], const float (&win)[(FW + SH + 6) / 4 * 4], const float *tap) {
#pragma unroll
  for (int b = 0; b < FW; ++b)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[c] = fmaf(win[SH + c + b], tap[b], acc[c]);
}

// The window of a run of 4 outputs starting at p (16-byte aligned in shared memory).
template <int FW> __device__ __forceinline__ void conv_reg_window(float (&win)[(FW + 6) / 4 * 4], const float *p) {
#pragma unroll
  for (int v = 0; v < (FW + 6) / 4; ++v) {
    const float4 q = *reinterpret_cast<const float4 *>(p + 4 * v);
    win[4 * v] = q.x, win[4 * v + 1] = q.y, win[4 * v + 2] = q.z, win[4 * v + 3] = q.w;
  }
}

// Outputs y[i .. i + 3] (those below n), one 16-byte store where `vec` (y 16-byte aligned, and for
// 2D rows a multiple of 4 long) and all four are in range.
__device__ __forceinline__ void conv_reg_store(float *y, int64_t i, int64_t n, const float (&acc)[4], bool vec) {
  if (vec && i + 4 <= n) {  // store_global16: as an assignment beside the edge path it became four 32-bit stores
    store_global16(y + i, make_uint4(__float_as_uint(acc[0]), __float_as_uint(acc[1]), __float_as_uint(acc[2]), __float_as_uint(acc[3])));
    return;
  }
#pragma unroll
  for (int c = 0; c < 4; ++c)
    if (i + c < n) y[i + c] = acc[c];
}

// REGISTER_1D: a block per 2048 outputs; thread t computes outputs 4t .. 4t + 3 of each half.
template <int FW> __global__ void __launch_bounds__(kBlock) conv1d_register(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ f, int64_t n, bool vec) {
  __shared__ __align__(16) float tile[kConvReg1dTile + 16];
  const int64_t base = (int64_t)blockIdx.x * kConvReg1dTile, lo = base - (FW - 1) / 2;
  for (int t = threadIdx.x; t < kConvReg1dTile + FW - 1; t += kBlock) {
    const int64_t g = lo + t;
    const bool in = g >= 0 && g < n;
    cp_async4_zfill(tile + t, in ? x + g : x, in);
  }
  cp_async_commit();
  float tap[FW];
#pragma unroll
  for (int b = 0; b < FW; ++b) tap[b] = __ldg(f + b);
  cp_async_wait(0);
  __syncthreads();
#pragma unroll
  for (int half = 0; half < kConvReg1dTile / (4 * kBlock); ++half) {
    const int o = half * 4 * kBlock + 4 * threadIdx.x;
    float win[(FW + 6) / 4 * 4], acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    conv_reg_window<FW>(win, tile + o);
    conv_reg_row<FW>(acc, win, tap);
    conv_reg_store(y, base + o, n, acc, vec);
  }
}

// REGISTER_2D: a block per 128 x 32 outputs; warp w's lane l computes rows 4w .. 4w + 3, columns
// 4l .. 4l + 3 of the tile. Input row r of the window feeds output row o with filter row r - o:
// the thread walks its 3 + fh input rows once, each row loaded once for up to 4 output rows.
// FH > 0 (square filters, FH = FW): the height is known too, every loop unrolls, and each tap is
// an FFMA operand read straight from the constant buffer (no load, no row test). FH = 0: any
// height, a row of taps a 16-byte broadcast from shared memory per (input row, output row). On an
// H100 the kernel is bound by instruction issue, not DRAM, at 7 x 7 (Nsight Compute: issue slots
// 82% busy, the FMA pipe 47%): what the square form removes is what it gains.
// `xvec` (x 16-byte aligned, w a multiple of 4): the tile's rows are copied as 16-byte words from
// the aligned column at or before the window's first, SH = (-cw) mod 4 columns early (every word
// then wholly inside or outside the plane), a quarter of the copies; the windows start SH columns
// on. Otherwise 4-byte copies. Only for widths where the shift adds no 16-byte word to a window
// (kCopy16: 1, 2, 6-10, 14, 15): at 3 x 3 the extra window load cost more than the copies saved
// (H100: 0.90x against 0.94x copy; 5 x 5 even, 7 x 7 0.73x -> 0.85x, 15 x 15 0.28x -> 0.31x).
// Measured and not kept (docs/performance.md): a persistent grid whose blocks double-buffer their
// tiles (5 blocks a SM instead of 6-8: slower at every filter size).
constexpr int kConvRegRow = kConvReg2dW + 16;  // a shared row: the tile, the halo, the last window's overrun
template <int FW, int FH>
__global__ void __launch_bounds__(kBlock) conv2d_plane_register(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ f, int64_t h, int64_t w, int fh_run,
                                                                int64_t tiles_w, bool vec, bool xvec) {
  constexpr int FW4 = (FW + 3) / 4 * 4;  // a filter row in shared memory, padded to 16 bytes
  constexpr int SH16 = (4 - (FW - 1) / 2 % 4) % 4;
  constexpr bool kCopy16 = (FW + SH16 + 6) / 4 == (FW + 6) / 4;  // the shift costs no window load
  constexpr int SH = kCopy16 ? SH16 : 0;
  const int fh = FH > 0 ? FH : fh_run;
  __shared__ __align__(16) float tile[(kConvReg2dH + GPUOPS__CONV_MAX_F - 1) * kConvRegRow];
  __shared__ __align__(16) float taps[FH > 0 ? 4 : GPUOPS__CONV_MAX_F * FW4];
  const int64_t ti = (int64_t)blockIdx.x / tiles_w * kConvReg2dH, tj = (int64_t)blockIdx.x % tiles_w * kConvReg2dW;
  const int64_t i0 = ti - (fh - 1) / 2, j0 = tj - (FW - 1) / 2;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int r = warp; r < kConvReg2dH + fh - 1; r += kBlock / 32) {  // a warp per input row: one row address, one row test
    const int64_t gi = i0 + r;
    const bool row_in = gi >= 0 && gi < h;
    const float *src = x + (row_in ? gi : 0) * w;
    float *dst = tile + r * kConvRegRow;
    if (kCopy16 && xvec) {
      for (int c = 4 * lane; c < SH + kConvReg2dW + FW - 1; c += 128) {
        const int64_t gj = j0 - SH + c;  // a multiple of 4
        const bool in = row_in && (uint64_t)gj < (uint64_t)w;
        cp_async16_zfill(dst + c, in ? src + gj : x, in ? 16 : 0);
      }
    } else {
      for (int c = lane; c < kConvReg2dW + FW - 1; c += 32) {
        const int64_t gj = j0 + c;
        const bool in = row_in && (uint64_t)gj < (uint64_t)w;
        cp_async4_zfill(dst + SH + c, in ? src + gj : x, in);
      }
    }
  }
  cp_async_commit();
  if constexpr (FH == 0)
    for (int t = threadIdx.x; t < fh * FW4; t += kBlock) taps[t] = t % FW4 < FW ? __ldg(f + t / FW4 * FW + t % FW4) : 0.0f;
  cp_async_wait(0);
  __syncthreads();
  float acc[4][4] = {};
  const float *row = tile + 4 * warp * kConvRegRow + 4 * lane;
#pragma unroll(FH > 0 ? FH + 3 : 1)
  for (int r = 0; r < fh + 3; ++r, row += kConvRegRow) {
    float win[(FW + SH + 6) / 4 * 4];  // the window from element SH on
    conv_reg_window<FW + SH>(win, row);
#pragma unroll
    for (int o = 0; o < 4; ++o) {
      const int a = r - o;  // the filter row that takes input row r to output row o
      if (a < 0 || a >= fh) continue;
      float tap[FW4];
      if constexpr (FH > 0) {
#pragma unroll
        for (int b = 0; b < FW; ++b) tap[b] = conv_filter_const[a * FW + b];
      } else {
#pragma unroll
        for (int v = 0; v < FW4 / 4; ++v) {
          const float4 q = *reinterpret_cast<const float4 *>(taps + a * FW4 + 4 * v);
          tap[4 * v] = q.x, tap[4 * v + 1] = q.y, tap[4 * v + 2] = q.z, tap[4 * v + 3] = q.w;
        }
      }
      conv_reg_row<FW, SH>(acc[o], win, tap);
    }
  }
  const int64_t j = tj + 4 * lane;
#pragma unroll
  for (int o = 0; o < 4; ++o) {
    const int64_t i = ti + 4 * warp + o;
    if (i < h && j < w) conv_reg_store(y + i * w, j, w, acc[o], vec);
  }
}

// UNFUSED, step 1: im2col. A[m][kk] for m = (n, p, q) and kk in the filter's own order (NCHW:
// (c, r, s); NHWC: (r, s, c)), so that the product is A w^T with w as stored. One element per
// thread, grid-stride; memory-bound, and the unrolled matrix is R S times the input.
struct conv_geom {
  int64_t n, c, h, w, k, r, s, p, q;
  int64_t sh, sw, ph, pw, dh, dw;
};
template <class T, bool kNHWC> __global__ void __launch_bounds__(kBlock) conv_im2col(T *__restrict__ A, const T *__restrict__ x, conv_geom g) {
  const int64_t crs = g.c * g.r * g.s, total = g.n * g.p * g.q * crs;
  for (int64_t e = (int64_t)blockIdx.x * kBlock + threadIdx.x; e < total; e += (int64_t)gridDim.x * kBlock) {
    const int64_t m = e / crs, kk = e % crs;
    const int64_t n = m / (g.p * g.q), pq = m % (g.p * g.q), op = pq / g.q, oq = pq % g.q;
    int64_t c, r, s;
    if (kNHWC) c = kk % g.c, s = kk / g.c % g.s, r = kk / (g.c * g.s);
    else s = kk % g.s, r = kk / g.s % g.r, c = kk / (g.r * g.s);
    const int64_t ih = op * g.sh - g.ph + r * g.dh, iw = oq * g.sw - g.pw + s * g.dw;
    T v = from_f32<T>(0.0f);
    if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) v = x[kNHWC ? ((n * g.h + ih) * g.w + iw) * g.c + c : ((n * g.c + c) * g.h + ih) * g.w + iw];
    A[e] = v;
  }
}

// UNFUSED, step 3: y = act(Cm + bias) permuted from the (N P Q) x K product into y's layout; one
// output per thread in y's order (stores coalesced; NCHW reads Cm with stride K). In NHWC the
// permute is the identity, so f32 y may be Cm itself (each element read, then written, by one
// thread): the epilogue of the f32 1x1 GEMM (conv_gemm_launch).
template <class T, bool kNHWC> __global__ void __launch_bounds__(kBlock) conv_epilogue_permute(T *y, const float *Cm, const T *__restrict__ bias, conv_geom g, int act) {
  const int64_t pq = g.p * g.q, total = g.n * g.k * pq;
  for (int64_t e = (int64_t)blockIdx.x * kBlock + threadIdx.x; e < total; e += (int64_t)gridDim.x * kBlock) {
    int64_t m, k;
    if (kNHWC) m = e / g.k, k = e % g.k;
    else k = e / pq % g.k, m = e / (g.k * pq) * pq + e % pq;
    float v = Cm[m * g.k + k];
    if (bias) v += to_f32(bias[k]);
    y[e] = from_f32<T>(activate_dyn(act, v));
  }
}

// ---- 11.3 Production kernels: implicit GEMMs --------------------------------------------------
// IMPLICIT_GEMM on CUDA cores, forward and data gradient: the product D = A B of rows m (output
// pixels (n, p, q) for the forward, input pixels (n, h, w) for dgrad) by columns (filters k; input
// channels c) over the reduction (r, s, ch) with ch the gathered operand's channel (c; k). A is
// gathered from the activation tensor (x; dy) while it is loaded, B from the filter; the loop runs
// (r, s) outside and channels inside in steps of BK, so a step's spatial test and address are
// computed once per row, not per element. Tiles 128 x 128 x 8, 256 threads with an 8 x 8 block
// of D each (rows tm 4 + {0..3} and 64 + tm 4 + {0..3}, columns likewise: 64 FFMA per 4 shared
// float4 reads, each quarter-warp's float4 reads one contiguous 128 bytes, conflict-free), shared
// memory double-buffered with the next step's global loads in registers. The epilogue adds the bias, applies act and stores straight into the
// output's layout (the permute folded into the store). Roofline: FFMA-bound on large layers.
template <class T> struct conv_igemm_params {
  T *y;
  const T *a, *b, *bias;
  int act;
  int64_t M, NC;            // rows and columns of D
  int64_t CH;               // channels of the gathered operand (the inner reduction)
  int64_t PIX, OW;          // pixels per image of D's rows, and their row width
  int64_t IH, IW;           // spatial size of the gathered operand
  int64_t R, S, sh, sw, ph, pw, dh, dw;
  int64_t b_col, b_rs, b_ch;  // B(ch at (r, s), col) = b[col b_col + (r S + s) b_rs + ch b_ch]
};
constexpr int kIgBM = 128, kIgBN = 128, kIgBK = 8, kIgPad = 4, kIgSlots = 4;  // kIgSlots: A (and B) elements each thread loads per step
// Row (column) of thread tile element i (0..7) of thread index t (0..15) in the block tile.
__device__ __forceinline__ int conv_ig_at(int t, int i) { return (i / 4) * 64 + t * 4 + i % 4; }
// The 8 x 8 outer product of one step: acc += A(:, kk) B(kk, :) for the thread's rows and columns.
__device__ __forceinline__ void conv_ig_fma(float (&acc)[8][8], const float *a_row, const float *b_row, int tm, int tn) {
  const float4 a0 = *reinterpret_cast<const float4 *>(a_row + tm * 4), a1 = *reinterpret_cast<const float4 *>(a_row + 64 + tm * 4);
  const float4 b0 = *reinterpret_cast<const float4 *>(b_row + tn * 4), b1 = *reinterpret_cast<const float4 *>(b_row + 64 + tn * 4);
  const float ar[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w}, br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
}

// The k loop of both CUDA-core implicit GEMMs (forward / dgrad and wgrad): acc zeroed, step 0
// gathered (fetch: into registers) and stashed (stash(buf): into shared buffer buf), then each step's
// FFMAs with the next step's gathers in flight, stashed into the other buffer before the barrier.
template <class Fetch, class Stash>
__device__ __forceinline__ void conv_ig_mainloop(float (&acc)[8][8], const float (&As)[2][kIgBK][kIgBM + kIgPad],
                                                 const float (&Bs)[2][kIgBK][kIgBN + kIgPad], int64_t steps, int tm, int tn,
                                                 Fetch &&fetch, Stash &&stash) {
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  if (steps > 0) {
    fetch();
    stash(0);
  }
  __syncthreads();
  for (int64_t step = 0; step < steps; ++step) {
    const int buf = (int)(step & 1);
    if (step + 1 < steps) fetch();  // in flight during the FFMAs below
#pragma unroll
    for (int kk = 0; kk < kIgBK; ++kk) conv_ig_fma(acc, As[buf][kk], Bs[buf][kk], tm, tn);
    if (step + 1 < steps) stash(buf ^ 1);
    __syncthreads();
  }
}

// kUnit (data gradient at stride 1): y = p - ph + r dh needs no division; the general test
// (th % sh, th / sh on 64-bit values, a library call each) cost more than the step's FFMAs.
// kMinBlocks 2: held to 128 registers (28-84 bytes spilled, sm_90a) so that two blocks share an
// SM, 16 warps to hide the gathers' latency instead of 8 at 147-168 registers. The launcher takes
// it where the grid is more than one block per SM: 1.02-1.35x there (H200, ResNet-50 layers), but
// 0.75-0.91x on grids under one wave, where the second block never comes and the spills remain.
template <class T, bool kNHWC, bool kDgrad, bool kUnit = false, int kMinBlocks = 1>
__global__ void __launch_bounds__(256, kMinBlocks) conv_igemm_cuda(conv_igemm_params<T> p) {
  __shared__ __align__(16) float As[2][kIgBK][kIgBM + kIgPad];
  __shared__ __align__(16) float Bs[2][kIgBK][kIgBN + kIgPad];
  const int t = threadIdx.x;
  const int64_t m0 = (int64_t)blockIdx.x * kIgBM, n0 = (int64_t)blockIdx.y * kIgBN;
  // Load slots: NHWC gathers run along channels (8 consecutive lanes, one row), NCHW along rows.
  int a_row[kIgSlots], a_ch[kIgSlots], b_row[kIgSlots], b_chn[kIgSlots];
  int64_t a_img[kIgSlots], a_y[kIgSlots], a_x[kIgSlots], b_base[kIgSlots];
  bool a_ok[kIgSlots], b_ok[kIgSlots];
#pragma unroll
  for (int i = 0; i < kIgSlots; ++i) {
    if (kNHWC) a_row[i] = t / 8 + 32 * i, a_ch[i] = t % 8;
    else a_row[i] = t % 128, a_ch[i] = t / 128 + 2 * i;
    const int64_t m = m0 + a_row[i];
    a_ok[i] = m < p.M;
    const int64_t mm = a_ok[i] ? m : 0, pix = mm % p.PIX;
    a_img[i] = mm / p.PIX, a_y[i] = pix / p.OW, a_x[i] = pix % p.OW;
    b_row[i] = t / 8 + 32 * i, b_chn[i] = t % 8;
    const int64_t col = n0 + b_row[i];
    b_ok[i] = col < p.NC;
    b_base[i] = b_ok[i] ? col * p.b_col : 0;
  }
  const int64_t chunks = (p.CH + kIgBK - 1) / kIgBK, steps = p.R * p.S * chunks;
  int64_t lr = 0, ls = 0, lc = 0;  // the loader's position: filter tap (lr, ls), channel step lc
  float ra[kIgSlots], rb[kIgSlots];
  auto fetch = [&]() {
    const int64_t rs = lr * p.S + ls;
#pragma unroll
    for (int i = 0; i < kIgSlots; ++i) {
      const int64_t ch = lc + a_ch[i];
      int64_t ih, iw;
      bool v;
      if (kDgrad) {  // input pixel (y, x) receives output (p, q) with y = p sh - ph + r dh
        const int64_t th = a_y[i] + p.ph - lr * p.dh, tw = a_x[i] + p.pw - ls * p.dw;
        if (kUnit) {
          v = th >= 0 && tw >= 0, ih = th, iw = tw;
        } else {
          v = th >= 0 && tw >= 0 && th % p.sh == 0 && tw % p.sw == 0;
          ih = th / p.sh, iw = tw / p.sw;
        }
      } else {
        ih = a_y[i] * p.sh - p.ph + lr * p.dh, iw = a_x[i] * p.sw - p.pw + ls * p.dw;
        v = ih >= 0 && iw >= 0;
      }
      v = v && a_ok[i] && ch < p.CH && ih < p.IH && iw < p.IW;
      ra[i] = v ? to_f32(p.a[kNHWC ? ((a_img[i] * p.IH + ih) * p.IW + iw) * p.CH + ch : (a_img[i] * p.CH + ch) * p.IH * p.IW + ih * p.IW + iw]) : 0.0f;
      const int64_t cb = lc + b_chn[i];
      rb[i] = b_ok[i] && cb < p.CH ? to_f32(p.b[b_base[i] + rs * p.b_rs + cb * p.b_ch]) : 0.0f;
    }
    lc += kIgBK;  // next step: the next channels, then the next tap
    if (lc >= p.CH) {
      lc = 0;
      if (++ls == p.S) ls = 0, ++lr;
    }
  };
  auto stash = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kIgSlots; ++i) As[buf][a_ch[i]][a_row[i]] = ra[i], Bs[buf][b_chn[i]][b_row[i]] = rb[i];
  };
  float acc[8][8];
  const int tm = t % 16, tn = t / 16;
  conv_ig_mainloop(acc, As, Bs, steps, tm, tn, fetch, stash);
  // Epilogue: bias, act, the store in the output's layout.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t m = m0 + conv_ig_at(tm, i);
    if (m >= p.M) continue;
    const int64_t img = m / p.PIX, pix = m % p.PIX;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t col = n0 + conv_ig_at(tn, j);
      if (col >= p.NC) continue;
      float v = acc[i][j];
      if (p.bias) v += to_f32(p.bias[col]);
      p.y[kNHWC ? m * p.NC + col : (img * p.NC + col) * p.PIX + pix] = from_f32<T>(activate_dyn(p.act, v));
    }
  }
}

// IMPLICIT_GEMM, filter gradient (f32): dW = A B with rows k, columns the filter's flat index in
// its own layout (NCHW: (c, r, s); NHWC: (r, s, c)) and the reduction over output pixels
// j = (n, p, q): A(k, j) = dy(n, k, p, q), B(j, col) = x(n, c, p sh - ph + r dh, q sw - pw + s dw).
// The same 128 x 128 x 8 tiles and 8 x 8 thread blocks as conv_igemm_cuda; each load slot walks its
// pixel (n, p, q) forward by 8 per step without a division. Block z of the grid reduces pixels
// [z jper, (z + 1) jper) and writes dw, or with several parts its partial sum at out + z K C R S
// (conv_sum_parts adds them): the K x C R S product is small where the reduction is long (K 64,
// C 64, 3 x 3: 5 tiles over 100352 pixels at batch 32), and one block a tile left 127 SMs idle.
struct conv_pix {
  int64_t n, p, q;
  __device__ void start(int64_t j, int64_t P, int64_t Q) { n = j / (P * Q), p = j % (P * Q) / Q, q = j % Q; }
  __device__ void advance(int d, int64_t P, int64_t Q) {
    q += d;
    while (q >= Q) {
      q -= Q;
      if (++p == P) p = 0, ++n;
    }
  }
};
template <bool kNHWC> __global__ void __launch_bounds__(256) conv_wgrad_cuda(float *__restrict__ out, const float *__restrict__ dy, const float *__restrict__ x, conv_geom g, int64_t jper) {
  __shared__ __align__(16) float As[2][kIgBK][kIgBM + kIgPad];
  __shared__ __align__(16) float Bs[2][kIgBK][kIgBN + kIgPad];
  const int t = threadIdx.x;
  const int64_t m0 = (int64_t)blockIdx.x * kIgBM, n0 = (int64_t)blockIdx.y * kIgBN;
  const int64_t PQ = g.p * g.q, J = g.n * PQ, CRS = g.c * g.r * g.s;
  const int64_t j0 = blockIdx.z * jper < J ? blockIdx.z * jper : J, j1 = j0 + jper < J ? j0 + jper : J;
  float *const dw = out + blockIdx.z * g.k * CRS;
  // A slots (rows k): NHWC dy is contiguous along k, NCHW along pixels. B slots (columns): NHWC x
  // is contiguous along c (the column's fastest part), NCHW along pixels.
  int a_row[kIgSlots], a_j[kIgSlots], b_col[kIgSlots], b_j[kIgSlots];
  conv_pix a_pix[kIgSlots], b_pix[kIgSlots];
  int64_t b_c[kIgSlots], b_r[kIgSlots], b_s[kIgSlots];
  bool a_ok[kIgSlots], b_ok[kIgSlots];
#pragma unroll
  for (int i = 0; i < kIgSlots; ++i) {
    if (kNHWC) a_row[i] = t % 128, a_j[i] = t / 128 + 2 * i, b_col[i] = t % 128, b_j[i] = t / 128 + 2 * i;
    else a_row[i] = t / 8 + 32 * i, a_j[i] = t % 8, b_col[i] = t / 8 + 32 * i, b_j[i] = t % 8;
    a_ok[i] = m0 + a_row[i] < g.k;
    const int64_t col = n0 + b_col[i];
    b_ok[i] = col < CRS;
    const int64_t cc = b_ok[i] ? col : 0;
    if (kNHWC) b_c[i] = cc % g.c, b_s[i] = cc / g.c % g.s, b_r[i] = cc / (g.c * g.s);
    else b_s[i] = cc % g.s, b_r[i] = cc / g.s % g.r, b_c[i] = cc / (g.r * g.s);
    a_pix[i].start(j0 + a_j[i], g.p, g.q), b_pix[i].start(j0 + b_j[i], g.p, g.q);
  }
  const int64_t steps = (j1 - j0 + kIgBK - 1) / kIgBK;
  int64_t lj = j0;  // the loader's first pixel
  float ra[kIgSlots], rb[kIgSlots];
  auto fetch = [&]() {
#pragma unroll
    for (int i = 0; i < kIgSlots; ++i) {
      const conv_pix &pa = a_pix[i];
      const bool va = a_ok[i] && lj + a_j[i] < j1;
      const int64_t k = m0 + a_row[i];
      ra[i] = va ? dy[kNHWC ? ((pa.n * g.p + pa.p) * g.q + pa.q) * g.k + k : ((pa.n * g.k + k) * g.p + pa.p) * g.q + pa.q] : 0.0f;
      const conv_pix &pb = b_pix[i];
      const int64_t ih = pb.p * g.sh - g.ph + b_r[i] * g.dh, iw = pb.q * g.sw - g.pw + b_s[i] * g.dw;
      const bool vb = b_ok[i] && lj + b_j[i] < j1 && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
      rb[i] = vb ? x[kNHWC ? ((pb.n * g.h + ih) * g.w + iw) * g.c + b_c[i] : ((pb.n * g.c + b_c[i]) * g.h + ih) * g.w + iw] : 0.0f;
      a_pix[i].advance(kIgBK, g.p, g.q), b_pix[i].advance(kIgBK, g.p, g.q);
    }
    lj += kIgBK;
  };
  auto stash = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kIgSlots; ++i) As[buf][a_j[i]][a_row[i]] = ra[i], Bs[buf][b_j[i]][b_col[i]] = rb[i];
  };
  float acc[8][8];
  const int tm = t % 16, tn = t / 16;
  conv_ig_mainloop(acc, As, Bs, steps, tm, tn, fetch, stash);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t k = m0 + conv_ig_at(tm, i);
    if (k >= g.k) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t col = n0 + conv_ig_at(tn, j);
      if (col < CRS) dw[k * CRS + col] = acc[i][j];
    }
  }
}

// The data gradient where C is small (C <= kConvDgradDirectMaxC; an RGB input's 3): the implicit
// GEMM's 128 columns would be C channels, 2% of its FFMAs useful, so a thread computes one element
// of dx directly: the taps (r, s) that reach it (h + ph - r dh a multiple of sh below P sh, and w
// likewise; a tap's test, not a MAC's), and for each the K products dy(n, k, p, q) w(k, c, r, s).
// Lanes run along w (NCHW) or c (NHWC): dy's reads are near-contiguous and w's shared by the warp
// (L1). Roofline: two loads a MAC from L1/L2, about K R S / (sh sw) MACs per element.
constexpr int64_t kConvDgradDirectMaxC = 16;
template <bool kNHWC> __global__ void __launch_bounds__(kBlock) conv_dgrad_direct(float *__restrict__ dx, const float *__restrict__ dy, const float *__restrict__ w, conv_geom g) {
  const int64_t total = g.n * g.c * g.h * g.w;
  const int64_t dy_k = kNHWC ? 1 : g.p * g.q, w_k = g.c * g.r * g.s;  // strides along k
  for (int64_t i = blockIdx.x * (int64_t)kBlock + threadIdx.x; i < total; i += (int64_t)gridDim.x * kBlock) {
    int64_t n, c, h, x;
    if (kNHWC) c = i % g.c, x = i / g.c % g.w, h = i / (g.c * g.w) % g.h, n = i / (g.c * g.w * g.h);
    else x = i % g.w, h = i / g.w % g.h, c = i / (g.w * g.h) % g.c, n = i / (g.w * g.h * g.c);
    float acc = 0.0f;
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t th = h + g.ph - r * g.dh;  // falls as r grows
      if (th < 0) break;
      if (th % g.sh != 0 || th / g.sh >= g.p) continue;
      const int64_t p = th / g.sh;
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t tw = x + g.pw - s * g.dw;
        if (tw < 0) break;
        if (tw % g.sw != 0 || tw / g.sw >= g.q) continue;
        const int64_t q = tw / g.sw;
        const float *dyp = dy + (kNHWC ? ((n * g.p + p) * g.q + q) * g.k : (n * g.k * g.p + p) * g.q + q);
        const float *wp = w + (kNHWC ? (r * g.s + s) * g.c + c : (c * g.r + r) * g.s + s);
        for (int64_t k = 0; k < g.k; ++k) acc = fmaf(dyp[k * dy_k], wp[k * w_k], acc);
      }
    }
    dx[i] = acc;
  }
}

// The output pixels each of conv_wgrad_cuda's parts reduces (whole steps of kIgBK).
inline int64_t conv_wgrad_pixels_per_part(const conv_geom &g, int64_t parts) {
  return ((g.n * g.p * g.q + kIgBK - 1) / kIgBK + parts - 1) / parts * kIgBK;
}

// y[i] = the sum of parts[s n + i] over s = 0 .. parts - 1, in that order (the same bits every run).
template <int = 0>  // a template, so that every translation unit that includes this header may define it
__global__ void __launch_bounds__(kBlock) conv_sum_parts(float *__restrict__ y, const float *__restrict__ part, int64_t n, int64_t parts) {
  for (int64_t i = blockIdx.x * (int64_t)kBlock + threadIdx.x; i < n; i += (int64_t)gridDim.x * kBlock) {
    float v = 0.0f;
    for (int64_t s = 0; s < parts; ++s) v += part[s * n + i];
    y[i] = v;
  }
}

// MMA_SYNC: the forward implicit GEMM on tensor cores, f16 / bf16, NHWC. D = (N P Q) x K over
// (r, s, c): block tiles of 128 pixels x BN filters x 32 of the reduction, 8 warps as 2 x 4, each a
// 64 x BN/4 tile of mma.m16n8k16 (conv_mma_stage). Both operands' 32-deep rows are 64 bytes, 4
// chunks of 16 bytes stored with swizzle_chunk64 so ldmatrix reads them without bank conflicts.
// The epilogue (conv_mma_store) adds the bias, applies act and stores column pairs into y, which
// in NHWC is D itself. Two ways to fill a stage:
//   copies (conv_igemm_mma; C % 8 == 0, x and w 16-byte aligned): each step is one tap (r, s) and
//     32 channels; each chunk of 8 channels one cp.async (zero-filled where the tap falls in the
//     padding), kConvMmaStages steps in flight. 48 KB of shared memory: no opt-in. Roofline:
//     tensor-core bound on ResNet's 3x3 layers; the gather costs one address per row per step.
//   gathered (conv_igemm_mma_gathered; any C, for an image's 3 channels): one tap a step would
//     leave 29 of 32 reduction slots zero, so the reduction runs over (r, s, c) flattened, k = (r S
//     + s) C + c, zero past R S C; each element is its own 2-byte load into registers (there is no
//     16-byte run to copy), stored to shared memory as 16-byte chunks.
constexpr int kConvMmaBM = 128, kConvMmaBN = 128, kConvMmaBK = 32, kConvMmaStages = 3, kConvMmaThreads = 256;
constexpr int kConvMmaSmem = kConvMmaStages * (kConvMmaBM + kConvMmaBN) * kConvMmaBK * 2;

template <int BN> struct conv_mma_tile {
  static constexpr int NT = BN / 32;  // n8 tiles of a warp's 64 x BN/4
  float acc[4][NT][4];
};

// acc += the stage's 128 x 32 A tile (sa) times its BN x 32 B tile (sb), for warp (wm, wn).
template <class T, int BN>
__device__ __forceinline__ void conv_mma_stage(conv_mma_tile<BN> &d, const T *sa, const T *sb, int wm, int wn, int lane) {
  constexpr int NT = conv_mma_tile<BN>::NT;
#pragma unroll
  for (int kk = 0; kk < kConvMmaBK; kk += 16) {
    uint32_t af[4][4], bf[NT][2];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      const int row = wm * 64 + mt * 16 + lane % 16, ck = kk / 8 + lane / 16;
      ldmatrix_x4(af[mt], sa + row * kConvMmaBK + swizzle_chunk64(row, ck) * 8);
    }
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      const int row = wn * (BN / 4) + np * 16 + lane % 8 + 8 * (lane / 16), ck = kk / 8 + (lane / 8) % 2;
      uint32_t q[4];
      ldmatrix_x4(q, sb + row * kConvMmaBK + swizzle_chunk64(row, ck) * 8);
      bf[2 * np][0] = q[0], bf[2 * np][1] = q[1], bf[2 * np + 1][0] = q[2], bf[2 * np + 1][1] = q[3];
    }
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mma_m16n8k16<T>(d.acc[mt][nt], af[mt], bf[nt], d.acc[mt][nt]);
  }
}

// The epilogue: D(m, k) = act(acc + bias[k]) into y's element m K + k (NHWC), a column pair per
// access where it is aligned (gemm_store_pair).
template <class T, int BN>
__device__ __forceinline__ void conv_mma_store(const conv_mma_tile<BN> &d, T *y, const T *bias, int64_t M, int64_t K, int64_t m0, int64_t n0, int wm,
                                               int wn, int lane, int act) {
  const int gq = lane / 4, tq = lane % 4;
#pragma unroll
  for (int nt = 0; nt < conv_mma_tile<BN>::NT; ++nt) {
    const int64_t k = n0 + wn * (BN / 4) + nt * 8 + 2 * tq;
    if (k >= K) continue;
    const bool two = k + 1 < K;
    float b0 = 0.0f, b1 = 0.0f;
    if (bias) gemm_load_pair(bias + k, two, b0, b1);
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t m = m0 + wm * 64 + mt * 16 + gq + 8 * h;
        if (m < M)
          gemm_store_pair(y + (m * K + k), two, activate_dyn<true>(act, d.acc[mt][nt][2 * h] + b0), activate_dyn<true>(act, d.acc[mt][nt][2 * h + 1] + b1));
      }
  }
}

template <class T> __global__ void __launch_bounds__(kConvMmaThreads) conv_igemm_mma(T *__restrict__ y, const T *__restrict__ x, const T *__restrict__ wt, const T *__restrict__ bias, conv_geom g, int act) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800  // the body is empty before sm_80 (the launcher checks)
  extern __shared__ uint4 conv_smem[];
  T *sm = reinterpret_cast<T *>(conv_smem);
  constexpr int kStageA = kConvMmaBM * kConvMmaBK, kStage = (kConvMmaBM + kConvMmaBN) * kConvMmaBK;  // elements
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5, wm = warp / 4, wn = warp % 4;
  const int64_t M = g.n * g.p * g.q, PQ = g.p * g.q;
  const int64_t m0 = (int64_t)blockIdx.x * kConvMmaBM, n0 = (int64_t)blockIdx.y * kConvMmaBN;
  // Copy slots: rows t / 4 and t / 4 + 64 of A and of B, chunk t % 4 of each row.
  const int chunk = t % 4;
  int64_t a_img[2], a_y[2], a_x[2];
  bool a_ok[2], b_ok[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t m = m0 + t / 4 + 64 * i, mm = m < M ? m : 0;
    a_ok[i] = m < M;
    a_img[i] = mm / PQ, a_y[i] = mm % PQ / g.q, a_x[i] = mm % g.q;
    b_ok[i] = n0 + t / 4 + 64 * i < g.k;
  }
  const int64_t chunks = (g.c + kConvMmaBK - 1) / kConvMmaBK, steps = g.r * g.s * chunks;
  int64_t lr = 0, ls = 0, lc = 0;  // the loader's tap and channel offset
  auto load = [&](int stage) {
    T *sa = sm + stage * kStage, *sb = sa + kStageA;
    const int64_t c = lc + 8 * chunk;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = t / 4 + 64 * i, at = row * kConvMmaBK + swizzle_chunk64(row, chunk) * 8;
      const int64_t ih = a_y[i] * g.sh - g.ph + lr * g.dh, iw = a_x[i] * g.sw - g.pw + ls * g.dw;
      const bool va = a_ok[i] && c < g.c && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
      cp_async16_zfill(sa + at, va ? x + ((a_img[i] * g.h + ih) * g.w + iw) * g.c + c : x, va ? 16 : 0);
      const bool vb = b_ok[i] && c < g.c;
      cp_async16_zfill(sb + at, vb ? wt + ((n0 + row) * g.r * g.s + lr * g.s + ls) * g.c + c : wt, vb ? 16 : 0);
    }
    lc += kConvMmaBK;
    if (lc >= g.c) {
      lc = 0;
      if (++ls == g.s) ls = 0, ++lr;
    }
  };
  conv_mma_tile<kConvMmaBN> d = {};
#pragma unroll
  for (int s = 0; s < kConvMmaStages - 1; ++s) {
    if (s < steps) load(s);
    cp_async_commit();
  }
  for (int64_t step = 0; step < steps; ++step) {
    cp_async_wait(kConvMmaStages - 2);
    __syncthreads();  // step's tiles visible; every warp done with the stage refilled below
    if (step + kConvMmaStages - 1 < steps) load((int)((step + kConvMmaStages - 1) % kConvMmaStages));
    cp_async_commit();
    const T *sa = sm + (int)(step % kConvMmaStages) * kStage;
    conv_mma_stage(d, sa, sa + kStageA, wm, wn, lane);
  }
  cp_async_wait(0);
  conv_mma_store(d, y, bias, M, g.k, m0, n0, wm, wn, lane, act);
#endif
}

// The gathered form. Thread t gathers elements 16 (t % 2) .. + 15 of each step of A's row t / 2 (the
// window of pixel m0 + t / 2) and elements 8 (t % 4) .. + 7 of B's rows t / 4 + 64 i (w in NHWC is
// the K x (R S C) matrix itself: a row is contiguous); a step's (r, s, c) is found by two divisions,
// then walked by additions; at dilation 1 across (kRun) a tap row's S C elements are one run of x,
// tested against the run's part inside the image, so the walk carries one offset. Two stages in static shared memory: the next step's loads are in
// flight in registers during this step's mma, stored after it. BN = 64 where K <= 64 (the 64
// filters of image models' first layer), else 128. 32-bit geometry (the launcher checks).
// Roofline: the gather's issue bounds it, not the tensor cores: ResNet-50's first layer at batch
// 32 (401408 pixels x 64 filters x 147, 160 with the zeros) is 64 M gathered elements of A for 16
// GFLOP of mma and 51 MB of output. On an H200 the per-element walk ran 166 us (45.6 TFLOP/s),
// where Nsight Compute counted about 50 warp instructions per element (address and bounds
// arithmetic; issue slots 66% busy); the run walk (32-bit offsets, one run a tap row) 140 us
// (53.9 TFLOP/s). A warp's lanes as the step's 32 columns ran 186 us (docs/performance.md).
template <class T, int BN, bool kRun>
__global__ void __launch_bounds__(kConvMmaThreads, 2) conv_igemm_mma_gathered(T *__restrict__ y, const T *__restrict__ x, const T *__restrict__ wt, const T *__restrict__ bias, conv_geom g, int act) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  constexpr int BM = kConvMmaBM, BK = kConvMmaBK, kStageA = BM * BK, kStage = (BM + BN) * BK, BROWS = BN / 64;
  __shared__ alignas(16) T sm[2 * kStage];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5, wm = warp / 4, wn = warp % 4;
  const int64_t M = g.n * g.p * g.q, m0 = (int64_t)blockIdx.x * BM, n0 = (int64_t)blockIdx.y * BN;
  const int C = (int)g.c, S = (int)g.s, R = (int)g.r, H = (int)g.h, W = (int)g.w, SC = S * C, RSC = R * SC, dh = (int)g.dh, dw = (int)g.dw;
  const unsigned short *xs = reinterpret_cast<const unsigned short *>(x), *ws = reinterpret_cast<const unsigned short *>(wt);
  const int arow = t >> 1, ahalf = t & 1;
  int h0 = -1 - R * dh, w0 = 0;  // the window's corner (h0 above every tap: no such pixel)
  int lo = 0, span = 0;          // kRun: the part of a tap row's run inside the image, [lo, lo + span)
  const unsigned short *img = xs;  // the pixel's image
  if (m0 + arow < M) {
    const int64_t m = m0 + arow, pq = g.p * g.q, n = m / pq;
    const int rem = (int)(m - n * pq), oh = rem / (int)g.q, ow = rem - oh * (int)g.q;
    h0 = oh * (int)g.sh - (int)g.ph, w0 = ow * (int)g.sw - (int)g.pw, img = xs + n * H * W * C;
    const int first = w0 < 0 ? -w0 : 0, past = W - w0 < S ? W - w0 : S;  // taps s inside: [first, past)
    lo = first * C, span = past > first ? (past - first) * C : 0;
  }
  uint32_t ra[8], rb[BROWS][4];  // the next step's elements, packed in pairs
  auto fetch = [&](int step) {
    const int k0 = step * BK + 16 * ahalf;
    // Branch-free walks, so that the 16 loads issue back to back (with a branch per wrap between
    // them, each load's packing waited for it: 185 us for the first layer above, against 166).
    // Offsets are 32-bit inside the pixel's image (the launcher checks that they fit).
    if constexpr (kRun) {  // dilation 1 across: a tap row's S C elements are one contiguous run of x
      int r = k0 / SC, kk = k0 - r * SC, ih = h0 + r * dh, idx = (ih * W + w0) * C + kk;
      const int rowstep = dh * W * C - SC;  // from the end of one tap row's run to the start of the next
      bool rok = r < R && (unsigned)ih < (unsigned)H;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const bool ok = rok && (unsigned)(kk - lo) < (unsigned)span;
        const uint32_t v = ok ? __ldg(img + idx) : 0u;
        ra[j / 2] = j % 2 ? ra[j / 2] | v << 16 : v;
        ++kk, ++idx;
        const bool wrap = kk == SC;
        kk = wrap ? 0 : kk, idx += wrap ? rowstep : 0, ih += wrap ? dh : 0, r += wrap;
        rok = r < R && (unsigned)ih < (unsigned)H;
      }
    } else {
      int r = k0 / SC, rem = k0 - r * SC, s = rem / C, c = rem - s * C, ih = h0 + r * dh, iw = w0 + s * dw;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const bool ok = r < R && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
        const uint32_t v = ok ? __ldg(img + ((ih * W + iw) * C + c)) : 0u;
        ra[j / 2] = j % 2 ? ra[j / 2] | v << 16 : v;
        const bool wc = ++c == C;
        c = wc ? 0 : c, s += wc, iw += wc ? dw : 0;
        const bool wsr = s == S;
        s = wsr ? 0 : s, r += wsr, ih += wsr ? dh : 0, iw = wsr ? w0 : iw;
      }
    }
#pragma unroll
    for (int i = 0; i < BROWS; ++i) {
      const int64_t col = n0 + (t >> 2) + 64 * i;
      const int kb = step * BK + 8 * (t & 3);
      const unsigned short *wp = ws + col * RSC + kb;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const uint32_t v = col < g.k && kb + j < RSC ? __ldg(wp + j) : 0u;
        rb[i][j / 2] = j % 2 ? rb[i][j / 2] | v << 16 : v;
      }
    }
  };
  auto stash = [&](int buf) {
    T *sa = sm + buf * kStage, *sb = sa + kStageA;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<uint4 *>(sa + arow * BK + swizzle_chunk64(arow, 2 * ahalf + h) * 8) = make_uint4(ra[4 * h], ra[4 * h + 1], ra[4 * h + 2], ra[4 * h + 3]);
#pragma unroll
    for (int i = 0; i < BROWS; ++i) {
      const int row = (t >> 2) + 64 * i;
      *reinterpret_cast<uint4 *>(sb + row * BK + swizzle_chunk64(row, t & 3) * 8) = make_uint4(rb[i][0], rb[i][1], rb[i][2], rb[i][3]);
    }
  };
  conv_mma_tile<BN> d = {};
  const int steps = (RSC + BK - 1) / BK;
  fetch(0);
  stash(0);
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int buf = step & 1;
    if (step + 1 < steps) fetch(step + 1);  // in flight during the mma below
    conv_mma_stage(d, sm + buf * kStage, sm + buf * kStage + kStageA, wm, wn, lane);
    if (step + 1 < steps) stash(buf ^ 1);  // every warp passed the barrier after reading buf ^ 1
    __syncthreads();
  }
  conv_mma_store(d, y, bias, M, g.k, m0, n0, wm, wn, lane, act);
#endif
}

// WGMMA: the forward implicit GEMM on Hopper's wgmma (sm_90a), f16 / bf16, NHWC, C % 8 == 0: the
// core's GEMM engine (gemm_wgmma, 1.7) with this A source in place of the TMA. D = (N P Q) x K over
// (r, s, c) flattened with c fastest, so a K step of 64 is 8 chunks of 8 channels, each inside one
// tap (C % 8 == 0). B is w, which in NHWC is the K x (R S C) matrix itself: the TMA loads and
// multicasts it as for any GEMM, zero past R S C. The epilogue is the GEMM's (bias, act) on y, the
// (N P Q) x K matrix. The producer warpgroup's 128 threads gather: thread t copies chunk t % 8 of
// rows t / 8 + 16 i (each 8 threads one pixel's 128 contiguous bytes), zero-filled where the tap
// falls in the padding or past R S C. Per tile, each thread writes one row's table entry (the
// window corner's offset in x and its (h, w)), so a step costs a table read, two compares and an
// add per copy, no division; each thread's cursor walks its chunk's (r, s, c) by additions.
// Roofline: as the GEMM (tensor-core bound on ResNet's 3x3 layers, 2 N P Q K C R S flops); x is
// read R S / (stride^2) times from L2, once from DRAM where the tiles in flight share rows.
template <class T> struct conv_wgmma_gather {
  static constexpr bool kGather = true;
  static constexpr unsigned kArrivals = 129;  // 128 gathering threads + the TMA's expect_tx
  struct row {
    int64_t base;  // x's offset of the window corner (h0, w0) of image n: ((n H + h0) W + w0) C
    int h0, w0;    // the corner: p stride - pad, q stride - pad (h0 very negative: no such row)
  };
  struct cursor {
    int r, s, c;  // the tap and channel of this thread's chunk in the current K step (r >= R: past the end)
  };
  const T *x;
  int64_t m, pq;  // rows N P Q; P Q
  int q, c, h, w, r, s, sh, sw, ph, pw, dh, dw;

  __device__ __forceinline__ void rows(row *tab, int64_t m0, int t, int bm) const {
    for (int i = t; i < bm; i += 128) {
      const int64_t mm = m0 + i;
      row e;
      if (mm < m) {
        const int64_t n = mm / pq;
        const int rem = (int)(mm - n * pq), oh = rem / q, ow = rem - oh * q;
        e.h0 = oh * sh - ph, e.w0 = ow * sw - pw;
        e.base = ((n * h + e.h0) * w + e.w0) * c;
      } else {
        e.base = 0, e.h0 = -(1 << 30), e.w0 = 0;  // every tap above the image: zero-filled
      }
      tab[i] = e;
    }
  }
  __device__ __forceinline__ void settle(cursor &u) const {
    while (u.c >= c) {
      u.c -= c;
      if (++u.s == s) u.s = 0, ++u.r;
    }
  }
  __device__ __forceinline__ cursor start(int t, int64_t kb) const {
    const int64_t k = kb * 64 + 8 * (t & 7), rs = k / c;  // once per tile
    cursor u = {(int)(rs / s), (int)(rs % s), (int)(k - rs * c)};
    return u;
  }
  __device__ __forceinline__ void advance(cursor &u) const {
    u.c += 64;
    settle(u);
  }
  template <int BM> __device__ __forceinline__ void load(unsigned char *sa, const row *tab, const cursor &u, int t) const {
    const int j = t & 7, rh = u.r * dh, rw = u.s * dw;
    const bool inside = u.r < r;
    const int64_t delta = ((int64_t)rh * w + rw) * c + u.c;
#pragma unroll
    for (int i = 0; i < BM / 16; ++i) {
      const int rr = (t >> 3) + 16 * i;
      const row e = tab[rr];
      const int ih = e.h0 + rh, iw = e.w0 + rw;
      const bool ok = inside && (unsigned)ih < (unsigned)h && (unsigned)iw < (unsigned)w;
      cp_async16_zfill(sa + rr * 128 + (swizzle_chunk(rr, j) << 4), ok ? x + e.base + delta : x, ok ? 16 : 0);
    }
  }
};

// ---- 11.4 Dispatch policy --------------------------------------------------------------------
// Learning path: AUTO = SHARED_TILED (the halo loaded once per block). Image models: AUTO = for
// 16-bit NHWC with C % 8 == 0 WGMMA where it runs (sm_90a on 9.0), except for 1x1 layers at stride
// 1 without padding (the GEMM form) with more than kConvWgmmaOverGemmMaxK filters; the GEMM form
// then goes to the GEMM or matrix multiply family (conv_gemm_launch; f32 from K = 128 filters: at
// K = 64 the SGEMM ran 0.85x the implicit GEMM, at 128-512 1.31-1.86x, H200, ResNet-50's 1x1
// layers); else for 16-bit NHWC MMA_SYNC on 8.0+ (its copies where C % 8 == 0 and x, w are
// 16-byte aligned, else its gathered form), IMPLICIT_GEMM otherwise; UNFUSED only when asked for
// (it needs a workspace). Grid limits: 2D grids put the columns of D in y (at most 65535 tiles).
constexpr int kConvMmaMinCc = 80;
constexpr int64_t kConvGemmMinKF32 = 128;
// 16-bit 1x1 layers (the GEMM form) with up to this many filters run WGMMA where it can: its tiles
// beat the GEMM family's choice there (256->64 1.15-1.17x, 512->128 1.03-1.13x at batch 64 / 128,
// H100, with WGMMA's earlier 128 x 64 and paired 128 x 128 tiles; the single-block 128 x 128 tiles
// run 0.95-1.05x those), which wins from 256 filters (1024->256 1.08-1.22x, 2048->512 1.17-1.31x).
constexpr int64_t kConvWgmmaOverGemmMaxK = 128;
constexpr int64_t kConvMaxGridY = 65535;

}  // namespace gpuops

// ---- 11.5 Launcher and C entry point (implementation only) ------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

inline conv_geom conv_geom_of(const gpuops_conv2d_shape &s) {
  conv_geom g;
  g.n = s.n, g.c = s.c, g.h = s.h, g.w = s.w, g.k = s.k, g.r = s.r, g.s = s.s;
  g.sh = s.stride_h, g.sw = s.stride_w, g.ph = s.pad_h, g.pw = s.pad_w, g.dh = s.dil_h, g.dw = s.dil_w;
  g.p = gpuops__conv_out_dim(s.h, s.r, s.stride_h, s.pad_h, s.dil_h);
  g.q = gpuops__conv_out_dim(s.w, s.s, s.stride_w, s.pad_w, s.dil_w);
  return g;
}

// Blocks of a grid-stride launch over `total` elements: enough to fill the device several times.
inline unsigned conv_stride_grid(int64_t total) {
  const int64_t want = (total + kBlock - 1) / kBlock, cap = 32 * (int64_t)current_device().sms;
  return (unsigned)(want < 1 ? 1 : want < cap ? want : cap);
}

// The filter's `taps` floats into conv_filter_const: a device-to-device copy on the stream.
inline gpuops_status conv_filter_to_const(const float *f, int taps, cudaStream_t stream) {
  return cuda_call_status(cudaMemcpyToSymbolAsync(conv_filter_const, f, (size_t)taps * sizeof(float), 0, cudaMemcpyDeviceToDevice, stream));
}

// REGISTER_1D / REGISTER_2D with the kernel instantiated for this filter width (FW .. 15 tried).
template <int FW = 1>
inline gpuops_status conv_register_launch(bool two_d, const conv_reg_grid &g, cudaStream_t stream, float *y, const float *x, const float *f, int64_t h, int64_t w, int fh,
                                          int fw) {
  if (fw != FW) {
    if constexpr (FW < GPUOPS__CONV_MAX_F) return conv_register_launch<FW + 1>(two_d, g, stream, y, x, f, h, w, fh, fw);
    return GPUOPS_ERR_INVALID_ARGUMENT;  // not reached: the check keeps fw in 1..15
  }
  const unsigned grid = (unsigned)g.blocks;
  if (!two_d) conv1d_register<FW><<<grid, kBlock, 0, stream>>>(y, x, f, w, g.vec);
  else if (fh != FW) conv2d_plane_register<FW, 0><<<grid, kBlock, 0, stream>>>(y, x, f, h, w, fh, g.tiles_w, g.vec, g.xvec);
  else {  // square: the taps from the constant buffer
    const gpuops_status st = conv_filter_to_const(f, fh * fw, stream);
    if (st != GPUOPS_OK) return st;
    conv2d_plane_register<FW, FW><<<grid, kBlock, 0, stream>>>(y, x, f, h, w, fh, g.tiles_w, g.vec, g.xvec);
  }
  return launch_status();
}

// The learning-path ops (f32, one plane).
inline gpuops_status conv_learning_launch(const gpuops__conv_args *a) {
  const gpuops_conv2d_shape &s = a->sh;
  float *y = static_cast<float *>(a->y);
  const float *x = static_cast<const float *>(a->a), *f = static_cast<const float *>(a->b);
  const bool two_d = a->op != GPUOPS__CONV_1D;
  const gpuops_algo algo = a->algo != GPUOPS_ALGO_AUTO ? a->algo : two_d ? GPUOPS_ALGO_REGISTER_2D : GPUOPS_ALGO_REGISTER_1D;
  const int fh = (int)s.r, fw = (int)s.s;
  if (algo == GPUOPS_ALGO_REGISTER_1D || algo == GPUOPS_ALGO_REGISTER_2D) {  // (the check let through only this op's); FW is 1..15
    const conv_reg_grid g = conv_reg_grid_of(two_d, y, x, s.h, s.w);
    if (g.blocks > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
    return conv_register_launch(two_d, g, a->stream, y, x, f, s.h, s.w, fh, fw);
  }
  if (algo != GPUOPS_ALGO_NAIVE) {
    const gpuops_status st = conv_filter_to_const(f, fh * fw, a->stream);
    if (st != GPUOPS_OK) return st;
  }
  if (!two_d) {
    const int64_t blocks = (s.w + kConv1dTile - 1) / kConv1dTile;
    if (blocks > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
    const unsigned gb = (unsigned)blocks;
    switch (algo) {
    case GPUOPS_ALGO_NAIVE: conv1d_direct<false><<<gb, kConv1dTile, 0, a->stream>>>(y, x, f, s.w, fw); break;
    case GPUOPS_ALGO_CONST_FILTER: conv1d_direct<true><<<gb, kConv1dTile, 0, a->stream>>>(y, x, f, s.w, fw); break;
    case GPUOPS_ALGO_SHARED_TILED: conv1d_shared_tiled<><<<gb, kConv1dTile, 0, a->stream>>>(y, x, s.w, fw); break;
    default: conv1d_cached_halo<><<<gb, kConv1dTile, 0, a->stream>>>(y, x, s.w, fw); break;
    }
    return launch_status();
  }
  const int64_t tiles_w = (s.w + kConvTileW - 1) / kConvTileW, tiles = tiles_w * ((s.h + kConvTileH - 1) / kConvTileH);
  if (tiles > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
  const dim3 block(kConvTileW, kConvTileH);
  switch (algo) {
  case GPUOPS_ALGO_NAIVE: conv2d_plane_direct<false><<<(unsigned)tiles, block, 0, a->stream>>>(y, x, f, s.h, s.w, fh, fw, tiles_w); break;
  case GPUOPS_ALGO_CONST_FILTER: conv2d_plane_direct<true><<<(unsigned)tiles, block, 0, a->stream>>>(y, x, f, s.h, s.w, fh, fw, tiles_w); break;
  case GPUOPS_ALGO_SHARED_TILED: conv2d_plane_shared_tiled<><<<(unsigned)tiles, block, 0, a->stream>>>(y, x, s.h, s.w, fh, fw, tiles_w); break;
  default: conv2d_plane_cached_halo<><<<(unsigned)tiles, block, 0, a->stream>>>(y, x, s.h, s.w, fh, fw, tiles_w); break;
  }
  return launch_status();
}

// The parameters of conv_igemm_cuda for the forward (kDgrad false) or the data gradient.
template <class T> inline conv_igemm_params<T> conv_igemm_params_of(const gpuops__conv_args *a, bool dgrad) {
  const gpuops_conv2d_shape &s = a->sh;
  const conv_geom g = conv_geom_of(s);
  const bool nhwc = s.layout == GPUOPS_LAYOUT_NHWC;
  conv_igemm_params<T> p;
  p.y = static_cast<T *>(a->y), p.a = static_cast<const T *>(a->a), p.b = static_cast<const T *>(a->b);
  p.bias = static_cast<const T *>(a->bias), p.act = (int)a->act;
  p.R = g.r, p.S = g.s, p.sh = g.sh, p.sw = g.sw, p.ph = g.ph, p.pw = g.pw, p.dh = g.dh, p.dw = g.dw;
  const int64_t rs = g.r * g.s;
  if (!dgrad) {  // rows (n, p, q), columns k, channels c of x; w(k, c, r, s)
    p.M = g.n * g.p * g.q, p.NC = g.k, p.CH = g.c, p.PIX = g.p * g.q, p.OW = g.q, p.IH = g.h, p.IW = g.w;
    if (nhwc) p.b_col = rs * g.c, p.b_rs = g.c, p.b_ch = 1;
    else p.b_col = g.c * rs, p.b_rs = 1, p.b_ch = rs;
  } else {  // rows (n, h, w), columns c, channels k of dy; w(k, c, r, s)
    p.M = g.n * g.h * g.w, p.NC = g.c, p.CH = g.k, p.PIX = g.h * g.w, p.OW = g.w, p.IH = g.p, p.IW = g.q;
    if (nhwc) p.b_col = 1, p.b_rs = g.c, p.b_ch = rs * g.c;
    else p.b_col = rs, p.b_rs = 1, p.b_ch = g.c * rs;
  }
  return p;
}

// One build of conv_igemm_cuda or the other (kMinBlocks, see there) by the grid's size.
template <class T, bool kNHWC, bool kDgrad, bool kUnit>
inline void conv_igemm_go(const conv_igemm_params<T> &p, dim3 grid, cudaStream_t s) {
  if ((int64_t)grid.x * grid.y > current_device().sms) conv_igemm_cuda<T, kNHWC, kDgrad, kUnit, 2><<<grid, 256, 0, s>>>(p);
  else conv_igemm_cuda<T, kNHWC, kDgrad, kUnit, 1><<<grid, 256, 0, s>>>(p);
}

template <class T> inline gpuops_status conv_igemm_launch(const gpuops__conv_args *a, bool dgrad) {
  const conv_igemm_params<T> p = conv_igemm_params_of<T>(a, dgrad);
  const int64_t gx = (p.M + kIgBM - 1) / kIgBM, gy = (p.NC + kIgBN - 1) / kIgBN;
  if (gx > 0x7fffffff || gy > kConvMaxGridY) return GPUOPS_ERR_UNSUPPORTED;
  const dim3 grid((unsigned)gx, (unsigned)gy);
  const bool nhwc = a->sh.layout == GPUOPS_LAYOUT_NHWC;
  cudaStream_t s = a->stream;
  if constexpr (std::is_same<T, float>::value) {  // the backward is f32 only
    if (dgrad) {
      const bool unit = p.sh == 1 && p.sw == 1;
      if (nhwc && unit) conv_igemm_go<T, true, true, true>(p, grid, s);
      else if (nhwc) conv_igemm_go<T, true, true, false>(p, grid, s);
      else if (unit) conv_igemm_go<T, false, true, true>(p, grid, s);
      else conv_igemm_go<T, false, true, false>(p, grid, s);
      return launch_status();
    }
  }
  if (nhwc) conv_igemm_go<T, true, false, false>(p, grid, s);
  else conv_igemm_go<T, false, false, false>(p, grid, s);
  return launch_status();
}

// Whether a 16-bit NHWC call can take the 16-byte copies of 8 channels (MMA_SYNC's copies form,
// WGMMA): C % 8 == 0, x and w 16-byte aligned.
inline bool conv_copies_fit(const gpuops__conv_args *a) {
  return a->sh.c % 8 == 0 && (uintptr_t)a->a % 16 == 0 && (uintptr_t)a->b % 16 == 0;
}

// MMA_SYNC: the copies where conv_copies_fit, else the gathered form (UNSUPPORTED where its 32-bit
// geometry would not hold the shape).
template <class T> inline gpuops_status conv_mma_launch(const gpuops__conv_args *a) {
  if constexpr (std::is_same<T, float>::value) {
    return GPUOPS_ERR_UNSUPPORTED;
  } else {
    const conv_geom g = conv_geom_of(a->sh);
    T *y = static_cast<T *>(a->y);
    const T *x = static_cast<const T *>(a->a), *w = static_cast<const T *>(a->b), *bias = static_cast<const T *>(a->bias);
    const int64_t gx = (g.n * g.p * g.q + kConvMmaBM - 1) / kConvMmaBM;
    if (conv_copies_fit(a)) {
      const int64_t gy = (g.k + kConvMmaBN - 1) / kConvMmaBN;
      if (gx > 0x7fffffff || gy > kConvMaxGridY) return GPUOPS_ERR_UNSUPPORTED;
      static const cudaError_t attr = cudaFuncSetAttribute(conv_igemm_mma<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kConvMmaSmem);  // 48 KB: the default limit, set explicitly
      if (attr != cudaSuccess) return cuda_call_status(attr);
      conv_igemm_mma<T><<<dim3((unsigned)gx, (unsigned)gy), kConvMmaThreads, kConvMmaSmem, a->stream>>>(y, x, w, bias, g, (int)a->act);
      return launch_status();
    }
    // h0 + r dh (r walks up to 47 past R in the last step), the step's k, an image's offsets and the
    // like stay inside int.
    constexpr int64_t lim = (int64_t)1 << 30;
    if (g.h >= lim || g.w >= lim || g.c >= lim || g.r >= lim || g.s >= lim || g.ph >= lim || g.pw >= lim || g.sh >= lim || g.sw >= lim ||
        g.dh >= lim || g.dw >= lim || g.p * g.q >= lim || g.c * g.r * g.s >= lim || (g.r + 48) * g.dh >= lim || (g.s + 48) * g.dw >= lim ||
        g.p * g.sh >= lim || g.q * g.sw >= lim)
      return GPUOPS_ERR_UNSUPPORTED;
    const int64_t hspan = g.h + g.ph + (g.r + 48) * g.dh + 1, wspan = g.w + g.pw + (g.s + 1) * g.dw + 1;  // what a walk's offsets reach
    if (hspan >= lim || wspan >= lim || hspan * wspan >= lim || hspan * wspan * g.c >= lim) return GPUOPS_ERR_UNSUPPORTED;
    const bool narrow = g.k <= 64, run = g.dw == 1;
    const int64_t gy = (g.k + (narrow ? 63 : 127)) / (narrow ? 64 : 128);
    if (gx > 0x7fffffff || gy > kConvMaxGridY) return GPUOPS_ERR_UNSUPPORTED;
    const dim3 grid((unsigned)gx, (unsigned)gy);
    const int act = (int)a->act;
    if (narrow && run) conv_igemm_mma_gathered<T, 64, true><<<grid, kConvMmaThreads, 0, a->stream>>>(y, x, w, bias, g, act);
    else if (narrow) conv_igemm_mma_gathered<T, 64, false><<<grid, kConvMmaThreads, 0, a->stream>>>(y, x, w, bias, g, act);
    else if (run) conv_igemm_mma_gathered<T, 128, true><<<grid, kConvMmaThreads, 0, a->stream>>>(y, x, w, bias, g, act);
    else conv_igemm_mma_gathered<T, 128, false><<<grid, kConvMmaThreads, 0, a->stream>>>(y, x, w, bias, g, act);
    return launch_status();
  }
}

// A 1x1 filter at stride 1 without padding, NHWC: x is already the (N H W) x C matrix of the
// product and y its (N H W) x K result, so y = act(x w^T + bias) is one call of the GEMM family's
// AUTO (WGMMA on sm_90a builds) with the bias and the activation in its epilogue: no gather, no
// workspace. f32: the matrix multiply family's AUTO (FFMA, 0.94x cuBLAS SGEMM), which has no
// epilogue, then bias and act in place by conv_epilogue_permute (one more pass over y, skipped
// without either). GPUOPS_ERR_UNSUPPORTED where the family it calls is compiled out.
inline bool conv_is_gemm(const gpuops_conv2d_shape &s) {
  return s.layout == GPUOPS_LAYOUT_NHWC && s.r == 1 && s.s == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
}
template <class T> inline gpuops_status conv_gemm_launch(const gpuops__conv_args *a) {
  const gpuops_conv2d_shape &s = a->sh;
  const int64_t m = s.n * s.h * s.w;
  if constexpr (std::is_same<T, float>::value) {
#ifdef GPUOPS_NO_MATMUL
    return GPUOPS_ERR_UNSUPPORTED;
#else
    float *y = static_cast<float *>(a->y);
    gpuops_status st = gpuops_matmul_f32(y, static_cast<const float *>(a->a), static_cast<const float *>(a->b), m, s.k, s.c, s.c, s.c, s.k, 1.0f, 0.0f,
                                         GPUOPS_OP_N, GPUOPS_OP_T, GPUOPS_ALGO_AUTO, a->stream);
    if (st != GPUOPS_OK || (!a->bias && a->act == GPUOPS_ACT_NONE)) return st;
    const conv_geom g = conv_geom_of(s);
    conv_epilogue_permute<float, true><<<conv_stride_grid(m * s.k), kBlock, 0, a->stream>>>(y, y, static_cast<const float *>(a->bias), g, (int)a->act);
    return launch_status();
#endif
  }
#ifdef GPUOPS_NO_GEMM
  return GPUOPS_ERR_UNSUPPORTED;
#else
  gpuops_epilogue epi = {};
  epi.bias = a->bias, epi.act = a->act;
  if constexpr (std::is_same<T, __half>::value)
    return gpuops_gemm_f16(static_cast<gpuops_f16 *>(a->y), static_cast<const gpuops_f16 *>(a->a), static_cast<const gpuops_f16 *>(a->b), m, s.k, s.c, s.c, s.c,
                           s.k, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_T, &epi, GPUOPS_ALGO_AUTO, a->stream);
  else if constexpr (std::is_same<T, __nv_bfloat16>::value)
    return gpuops_gemm_bf16(static_cast<gpuops_bf16 *>(a->y), static_cast<const gpuops_bf16 *>(a->a), static_cast<const gpuops_bf16 *>(a->b), m, s.k, s.c, s.c,
                            s.c, s.k, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_T, &epi, GPUOPS_ALGO_AUTO, a->stream);
  else
    return GPUOPS_ERR_UNSUPPORTED;
#endif
}

// WGMMA's configurations (the dispatch policy, kept beside the launcher: the engine's tile types
// are implementation-side, like its launch), measured by tools/tune_conv.cu on ResNet-50's 3x3
// layers at batch 64 and 128 (an H100, its header has the numbers) and 32 (an H200):
//   large   128 x 256, both consumers on one tile (split M), where K > 128 and those tiles fill half
//           the GPU or more (14x14x256 at batch 64: 295 TFLOP/s, against 279 for the same tiles
//           in pairs and at most 221 for the others);
//   coop    128 x 128, both consumers on one tile: otherwise, K <= 64 included (1.01-1.04x a 128 x 64
//           ping-pong tile there; past the GEMM's ping-pong 128 x 128 pairs, whose blocks with one
//           tile run one consumer, by 1.04-1.15x where chosen).
//   rows    64 x 128, each consumer 64 of the columns (split N), where the coop tiles would not
//           fill half the GPU (7x7x512 at batch 32: 52 coop tiles at 116 TFLOP/s, 100 of these at
//           167, an H200; at batch 64, 100 coop tiles, coop 224 and rows 179).
// One block a cluster: pairs multicasting w ran 0.93-0.99x (likely because a pair's blocks share
// each stage's barriers, so each waits for the slower of two gathers).
using conv_wgmma_coop = wgmma_tile<128, 128, 6, 1, wgmma_mode::split_m>;
using conv_wgmma_large = wgmma_tile<128, 256, 4, 1>;
using conv_wgmma_rows = wgmma_tile<64, 128, 8, 1, wgmma_mode::split_n>;
inline bool conv_wgmma_use_large(int64_t m, int64_t k, int64_t sms) {
  const int64_t large_tiles = ((m + 127) / 128) * ((k + 255) / 256);
  return k > 128 && 2 * large_tiles >= sms;
}
inline bool conv_wgmma_use_rows(int64_t m, int64_t k, int64_t sms) { return 2 * ((m + 127) / 128) * ((k + 127) / 128) < sms; }

// WGMMA (gemm_wgmma with conv_wgmma_gather) in configuration Cfg: UNSUPPORTED off compute
// capability 9.0, in a build without sm_90a code, or where the loader's 32-bit geometry would not
// hold the shape; MISALIGNED as the TMA's rule on w (16-byte aligned; R S C % 8 == 0 follows from C).
template <class T, class Cfg> inline gpuops_status conv_wgmma_config(const gpuops__conv_args *a) {
  if (current_device().cc != 90) return GPUOPS_ERR_UNSUPPORTED;
  const conv_geom g = conv_geom_of(a->sh);
  constexpr int64_t lim = (int64_t)1 << 30;  // h0 + r dh and the like stay inside int
  if (g.h >= lim || g.w >= lim || g.c >= lim || g.q >= lim || g.r * g.dh >= lim || g.s * g.dw >= lim || g.p * g.sh >= lim || g.q * g.sw >= lim ||
      g.ph >= lim || g.pw >= lim || g.k > kWgmmaMaxExtent || g.c * g.r * g.s > kWgmmaMaxExtent)
    return GPUOPS_ERR_UNSUPPORTED;
  if (!gemm_wgmma_built<T, Cfg, false, false, gemm_epilogue<T>, conv_wgmma_gather<T>>()) return GPUOPS_ERR_UNSUPPORTED;
  const int64_t M = g.n * g.p * g.q, K = g.c * g.r * g.s;
  gemm_epilogue<T> epi = {};
  epi.c = static_cast<T *>(a->y), epi.bias = static_cast<const T *>(a->bias), epi.m = M, epi.n = g.k, epi.ldc = g.k;
  epi.alpha = 1.0f, epi.beta = 0.0f, epi.act = (int)a->act;
  conv_wgmma_gather<T> src;
  src.x = static_cast<const T *>(a->a), src.m = M, src.pq = g.p * g.q;
  src.q = (int)g.q, src.c = (int)g.c, src.h = (int)g.h, src.w = (int)g.w, src.r = (int)g.r, src.s = (int)g.s;
  src.sh = (int)g.sh, src.sw = (int)g.sw, src.ph = (int)g.ph, src.pw = (int)g.pw, src.dh = (int)g.dh, src.dw = (int)g.dw;
  CUtensorMap mb;
  const gpuops_status st = tma_map_2d(&mb, a->b, wgmma_tma_dtype<T>(), g.k, K, K, 64, Cfg::BN / Cfg::CLUSTER);
  if (st != GPUOPS_OK) return st;
  const wgmma_shape sh = {M, g.k, K, kWgmmaGroup};
  return gemm_wgmma_launch<T, Cfg, false, false>(mb, mb, sh, epi, a->stream, src);  // map_a unused
}

// WGMMA with the configuration by conv_wgmma_use_large and conv_wgmma_use_rows.
template <class T> inline gpuops_status conv_wgmma_launch(const gpuops__conv_args *a) {
  if constexpr (std::is_same<T, float>::value) {
    return GPUOPS_ERR_UNSUPPORTED;
  } else {
    const conv_geom g = conv_geom_of(a->sh);
    const int64_t m = g.n * g.p * g.q, sms = current_device().sms;
    if (conv_wgmma_use_large(m, g.k, sms)) return conv_wgmma_config<T, conv_wgmma_large>(a);
    if (conv_wgmma_use_rows(m, g.k, sms)) return conv_wgmma_config<T, conv_wgmma_rows>(a);
    return conv_wgmma_config<T, conv_wgmma_coop>(a);
  }
}

// UNFUSED: im2col, the GEMM family's public entry point, the permute (three launches).
template <class T> inline gpuops_status conv_unfused_launch(const gpuops__conv_args *a) {
  const conv_geom g = conv_geom_of(a->sh);
  const bool nhwc = a->sh.layout == GPUOPS_LAYOUT_NHWC;
  const int64_t M = g.n * g.p * g.q, crs = g.c * g.r * g.s;
  T *A = static_cast<T *>(a->ws);
  float *Cm = reinterpret_cast<float *>(static_cast<char *>(a->ws) + ((size_t)(M * crs) * 4 + 255) / 256 * 256);
  const T *x = static_cast<const T *>(a->a), *w = static_cast<const T *>(a->b);
  gpuops_status st = GPUOPS_ERR_UNSUPPORTED;  // stays so where the GEMM it calls is compiled out
  (void)w;
#if (defined(GPUOPS_NO_MATMUL) && !defined(GPUOPS_NO_GEMM))
  if (std::is_same<T, float>::value) return GPUOPS_ERR_UNSUPPORTED;
#elif (!defined(GPUOPS_NO_MATMUL) && defined(GPUOPS_NO_GEMM))
  if (!std::is_same<T, float>::value) return GPUOPS_ERR_UNSUPPORTED;
#elif defined(GPUOPS_NO_MATMUL) && defined(GPUOPS_NO_GEMM)
  return GPUOPS_ERR_UNSUPPORTED;
#endif
  if (nhwc) conv_im2col<T, true><<<conv_stride_grid(M * crs), kBlock, 0, a->stream>>>(A, x, g);
  else conv_im2col<T, false><<<conv_stride_grid(M * crs), kBlock, 0, a->stream>>>(A, x, g);
  if ((st = launch_status()) != GPUOPS_OK) return st;
  if constexpr (std::is_same<T, float>::value) {
#ifndef GPUOPS_NO_MATMUL
    st = gpuops_matmul_f32(Cm, A, w, M, g.k, crs, crs, crs, g.k, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_T, GPUOPS_ALGO_AUTO, a->stream);
#endif
  } else if constexpr (std::is_same<T, __half>::value) {
#ifndef GPUOPS_NO_GEMM
    st = gpuops_gemm_f16_f32(Cm, reinterpret_cast<const gpuops_f16 *>(A), reinterpret_cast<const gpuops_f16 *>(w), M, g.k, crs, crs, crs, g.k, 1.0f, 0.0f,
                             GPUOPS_OP_N, GPUOPS_OP_T, nullptr, GPUOPS_ALGO_AUTO, a->stream);
#endif
  } else {
#ifndef GPUOPS_NO_GEMM
    st = gpuops_gemm_bf16_f32(Cm, reinterpret_cast<const gpuops_bf16 *>(A), reinterpret_cast<const gpuops_bf16 *>(w), M, g.k, crs, crs, crs, g.k, 1.0f,
                              0.0f, GPUOPS_OP_N, GPUOPS_OP_T, nullptr, GPUOPS_ALGO_AUTO, a->stream);
#endif
  }
  if (st != GPUOPS_OK) return st;
  const T *bias = static_cast<const T *>(a->bias);
  if (nhwc) conv_epilogue_permute<T, true><<<conv_stride_grid(M * g.k), kBlock, 0, a->stream>>>(static_cast<T *>(a->y), Cm, bias, g, (int)a->act);
  else conv_epilogue_permute<T, false><<<conv_stride_grid(M * g.k), kBlock, 0, a->stream>>>(static_cast<T *>(a->y), Cm, bias, g, (int)a->act);
  return launch_status();
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__conv_launch(const gpuops__conv_args *a) {
  using namespace gpuops;
  if (a->op == GPUOPS__CONV_1D || a->op == GPUOPS__CONV_PLANE) return conv_learning_launch(a);
  if (a->op == GPUOPS__CONV_BWD_DATA) {
    if (a->sh.c > kConvDgradDirectMaxC) return conv_igemm_launch<float>(a, true);
    const conv_geom g = conv_geom_of(a->sh);
    float *dx = static_cast<float *>(a->y);
    const float *dy = static_cast<const float *>(a->a), *w = static_cast<const float *>(a->b);
    const unsigned grid = conv_stride_grid(g.n * g.c * g.h * g.w);
    if (a->sh.layout == GPUOPS_LAYOUT_NHWC) conv_dgrad_direct<true><<<grid, kBlock, 0, a->stream>>>(dx, dy, w, g);
    else conv_dgrad_direct<false><<<grid, kBlock, 0, a->stream>>>(dx, dy, w, g);
    return launch_status();
  }
  if (a->op == GPUOPS__CONV_BWD_FILTER) {
    static_assert(kIgBM == GPUOPS__CONV_WGRAD_TILE && kIgBN == GPUOPS__CONV_WGRAD_TILE && kIgBK == 8, "gpuops__conv_wgrad_splits counts these tiles");
    const conv_geom g = conv_geom_of(a->sh);
    const int64_t pq[2] = {g.p, g.q}, parts = gpuops__conv_wgrad_splits(&a->sh, pq), crs = g.c * g.r * g.s;
    const int64_t gx = (g.k + kIgBM - 1) / kIgBM, gy = (crs + kIgBN - 1) / kIgBN;
    const int64_t jper = conv_wgrad_pixels_per_part(g, parts);
    if (gx > 0x7fffffff || gy > kConvMaxGridY || parts > kConvMaxGridY) return GPUOPS_ERR_UNSUPPORTED;
    float *dw = static_cast<float *>(a->y), *out = parts > 1 ? static_cast<float *>(a->ws) : dw;
    const float *dy = static_cast<const float *>(a->a), *x = static_cast<const float *>(a->b);
    const dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)parts);
    if (a->sh.layout == GPUOPS_LAYOUT_NHWC) conv_wgrad_cuda<true><<<grid, 256, 0, a->stream>>>(out, dy, x, g, jper);
    else conv_wgrad_cuda<false><<<grid, 256, 0, a->stream>>>(out, dy, x, g, jper);
    gpuops_status st = launch_status();
    if (st != GPUOPS_OK || parts < 2) return st;
    conv_sum_parts<><<<conv_stride_grid(g.k * crs), kBlock, 0, a->stream>>>(dw, out, g.k * crs, parts);
    return launch_status();
  }
  return dispatch_float(a->dt, [&](auto *tp) {
    using T = typename std::remove_pointer<decltype(tp)>::type;
    const gpuops_algo algo = a->algo;
    const bool auto_ = algo == GPUOPS_ALGO_AUTO;
    const bool mma_ok = !std::is_same<T, float>::value && a->sh.layout == GPUOPS_LAYOUT_NHWC && current_device().cc >= kConvMmaMinCc;
    const bool copies = mma_ok && conv_copies_fit(a);
    const bool as_gemm = conv_is_gemm(a->sh) && (!std::is_same<T, float>::value || a->sh.k >= kConvGemmMinKF32);
    if (auto_ && copies && (!as_gemm || a->sh.k <= kConvWgmmaOverGemmMaxK)) {
      const gpuops_status st = conv_wgmma_launch<T>(a);
      if (st != GPUOPS_ERR_UNSUPPORTED) return st;
    }
    if (auto_ && as_gemm) {
      const gpuops_status st = conv_gemm_launch<T>(a);
      if (st != GPUOPS_ERR_UNSUPPORTED) return st;
    }
    if (algo == GPUOPS_ALGO_WGMMA) return conv_wgmma_launch<T>(a);
    if (algo == GPUOPS_ALGO_MMA_SYNC || (auto_ && mma_ok)) {
      const gpuops_status st = current_device().cc >= kConvMmaMinCc ? conv_mma_launch<T>(a) : GPUOPS_ERR_UNSUPPORTED;
      if (!auto_ || st != GPUOPS_ERR_UNSUPPORTED) return st;
    }
    if (algo == GPUOPS_ALGO_UNFUSED) return conv_unfused_launch<T>(a);
    return conv_igemm_launch<T>(a, false);
  });
}
#endif  // GPUOPS_IMPLEMENTATION

#endif  // GPUOPS_NO_CONV


#endif  // GPUOPS_CUDA_CUH
