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
// Options: the same macros as gpuops.h (GPUOPS_ONLY_<FAMILY>, GPUOPS_NO_<FAMILY>).
//
// Contents
//   1. Basics: storage conversions, vectors, division by a constant, warp and block reductions,
//      launch helpers
//   2. Elementwise and activations: math helpers, the elementwise engine (naive, grid-stride,
//      vectorized), the ops, and the launcher
//   3. Reductions and histogram
//   4. Prefix scan
//   5. Softmax
//   6. Transpose and matrix multiply
//
// Version 0.1.0 (gpuops.h holds the version macros)
#ifndef GPUOPS_CUDA_CUH
#define GPUOPS_CUDA_CUH

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include <type_traits>

#include "gpuops.h"

namespace gpuops {

// ==== 1. Basics ==============================================================================

// Threads per block of the memory-bound kernels: 8 warps, enough blocks per SM to fill it.
constexpr int kBlock = 256;

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
  static __device__ __forceinline__ float2 unpack(uint32_t w) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&w));
  }
};

// N elements of T moved as one access of sizeof(T) * N bytes (16 bytes: one 128-bit LDG/STG).
template <class T, int N> struct alignas(sizeof(T) * N) vec { T v[N]; };

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

// Round N f32 values to T and store them at p[i] as one access (the same three ways).
template <int N, class T> __device__ __forceinline__ void store_f32(T *p, int64_t i, const float (&in)[N]) {
  if constexpr (std::is_same<T, int8_t>::value && N % 4 == 0) {
    vec<uint32_t, N / 4> v;
#pragma unroll
    for (int w = 0; w < N / 4; ++w) {
      const uint32_t lo = __byte_perm(int8_bits(in[4 * w]), int8_bits(in[4 * w + 1]), 0x0040);
      const uint32_t hi = __byte_perm(int8_bits(in[4 * w + 2]), int8_bits(in[4 * w + 3]), 0x0040);
      v.v[w] = __byte_perm(lo, hi, 0x5410);
    }
    *reinterpret_cast<vec<uint32_t, N / 4> *>(p + i) = v;
  } else if constexpr (pair_of<T>::exists && N % 2 == 0) {
    vec<uint32_t, N / 2> v;
#pragma unroll
    for (int k = 0; k < N / 2; ++k) v.v[k] = pair_of<T>::pack(in[2 * k], in[2 * k + 1]);
    *reinterpret_cast<vec<uint32_t, N / 2> *>(p + i) = v;
  } else {
    vec<T, N> v;
#pragma unroll
    for (int k = 0; k < N; ++k) v.v[k] = from_f32<T>(in[k]);
    *reinterpret_cast<vec<T, N> *>(p + i) = v;
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

// ---- Warp and block reductions ----------------------------------------------------------------
// The combining operators. maximum/minimum follow fmaxf/fminf: a NaN operand loses to a number.
struct plus {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct maximum {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; }
};
struct minimum {
  __device__ __forceinline__ float operator()(float a, float b) const { return fminf(a, b); }
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};

// warp_reduce: all 32 lanes of a warp call it together (none exited, none diverged away); every
// lane gets op over the 32 values. Butterfly of 5 __shfl_xor_sync steps, no shared memory. The
// order of combination is fixed, so the result is the same bits on every run.
template <class T, class Op> __device__ __forceinline__ T warp_reduce(T v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
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

#if defined(GPUOPS_IMPLEMENTATION)
// Launch helpers for the extern "C" launchers (one translation unit only).

// After a launch: GPUOPS_OK, or GPUOPS_ERR_CUDA with the error kept for gpuops_cuda_error().
inline gpuops_status launch_status() {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return GPUOPS_OK;
  gpuops__last_cuda_error = (int)e;
  return GPUOPS_ERR_CUDA;
}

// Blocks that fill the current device once: SMs x resident blocks of `kernel` per SM.
template <class K> inline int64_t full_grid(K kernel) {
  static const int per_sm = [&] {
    int b = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kBlock, 0) == cudaSuccess && b > 0 ? b : 1;
  }();
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    sms = 1;  // the launch that follows reports the error
  return (int64_t)sms * per_sm;
}
#endif

}  // namespace gpuops

// ==== 2. Elementwise and activations ========================================================
#ifndef GPUOPS_NO_ELEMENTWISE
namespace gpuops {

// ---- 2.1 Math helpers (f32 in, f32 out; the fusable building blocks) ------------------------

constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2/pi), GELU tanh form
constexpr float kGeluKappa = 0.044715f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;   // 1/sqrt(2 pi), the normal density
constexpr float kInvSqrt2 = 0.7071067811865476f;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// GELU, exact form, PyTorch's formula (approximate='none'): x Phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt 2)).
// Accuracy: below x = -4 the sum 1 + erf cancels and Phi keeps only an absolute accuracy of about
// 6e-8, as in PyTorch; the erfc form would fix the tail but costs over twice the math, and a
// branch to it diverges across a warp on real data (measured: 0.39x copy instead of 0.8x in bf16).
__device__ __forceinline__ float normal_cdf(float x) { return 0.5f * (1.0f + erff(x * kInvSqrt2)); }
__device__ __forceinline__ float gelu_erf(float x) { return x * normal_cdf(x); }
__device__ __forceinline__ float gelu_erf_grad(float x) { return normal_cdf(x) + x * kInvSqrt2Pi * expf(-0.5f * x * x); }

// GELU, tanh form: 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
__device__ __forceinline__ float gelu_tanh(float x) {
  const float u = kSqrt2OverPi * (x + kGeluKappa * x * x * x);
  return x / (1.0f + expf(-2.0f * u));
}
// d/dx x s(2u) = s + 2 x s (1 - s) u'. Where s saturates the second term is exactly 0; the select
// keeps it from turning into 0 * inf for huge |x|.
__device__ __forceinline__ float gelu_tanh_grad(float x) {
  const float u = kSqrt2OverPi * (x + kGeluKappa * x * x * x);
  const float s = 1.0f / (1.0f + expf(-2.0f * u));
  const float k = 2.0f * s * (1.0f - s);
  return s + (k == 0.0f ? 0.0f : x * k * kSqrt2OverPi * (1.0f + 3.0f * kGeluKappa * x * x));
}

// SiLU (Swish): x * sigmoid(x).
__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float silu_grad(float x) {
  const float s = sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}

// ReLU with PyTorch's NaN and gradient conventions.
__device__ __forceinline__ float relu(float x) { return x < 0.0f ? 0.0f : x; }
__device__ __forceinline__ float relu_grad_times(float dy, float x) { return x <= 0.0f ? 0.0f : dy; }

// x / s rounded to nearest even, given r = 1 / s rounded (r = 0 where 1 / s is not a normal
// number). q = x r is within an ulp of x / s, the residual x - q s is exact in one fma, and one
// correction step rounds correctly (Markstein's theorem; checked against IEEE division on 1.6e8
// samples). Where that argument needs care (|x| < 2^-100, |q| >= 2^100 or < 2^-100, inf, NaN, r = 0)
// it takes the IEEE division itself, so the result always equals __fdiv_rn(x, s). Saves the
// reciprocal (MUFU.RCP, quarter rate) and the range check of a division per element.
__device__ __forceinline__ float div_rn_by_reciprocal(float x, float s, float r) {
  const float q = x * r, t = fmaf(fmaf(-q, s, x), r, q), aq = fabsf(q);
  const bool plain = (aq < 0x1p100f && aq >= 0x1p-100f && fabsf(x) >= 0x1p-100f) || x == 0.0f;
  return plain && r != 0.0f ? t : __fdiv_rn(x, s);
}
// 1 / s rounded, or 0 where it is not a normal number (then div_rn_by_reciprocal divides).
__device__ __host__ __forceinline__ float reciprocal_or_zero(float s) {
#ifdef __CUDA_ARCH__
  const float r = __frcp_rn(s);
#else
  const float r = 1.0f / s;
#endif
  return (r >= 0x1p-125f && r <= 0x1p125f) ? r : 0.0f;
}

// Affine int8 quantization in f32, the IEEE operations spelled out so that no compiler flag
// (--use_fast_math) changes them: x / scale + zero_point, clamped to [-128, 127] (NaN goes to
// -128). The result is rounded half to even by the int8 store (from_f32<int8_t>); rounding after
// the clamp is the same as before it, because the bounds are integers.
__device__ __forceinline__ float quantize_f32(float x, float scale, float rcp_scale, float zero_point) {
  const float t = __fadd_rn(div_rn_by_reciprocal(x, scale, rcp_scale), zero_point);
  return fminf(fmaxf(t, -128.0f), 127.0f);
}
__device__ __forceinline__ float dequantize_f32(float q, float scale, float zero_point) {
  return __fmul_rn(q - zero_point, scale);  // q - zero_point is an exact small integer
}

// ---- 2.2 The elementwise engine -------------------------------------------------------------
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
//                    such vectors per input in flight: fewer instructions per byte and more
//                    bytes in flight per thread. A scalar head aligns all pointers to 16 bytes
//                    (possible when they sit at the same offset modulo 16), a scalar tail
//                    finishes the last n % V elements.

// Functors derive from this: f(a, b) on f32 values. A per-channel functor instead sets
// per_channel = true and has bind(c), which returns the plain functor of channel c.
struct elementwise_op {
  static constexpr bool per_channel = false;
};

template <class F, class TY, class TA, class TB> struct map_params {
  TY *y;
  const TA *a;
  const TB *b;
  int64_t n;
  F f;
  divisor channels, inner;  // per-channel layout [outer, channels, inner] (F::per_channel only)
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
template <int N, class P>
__device__ __forceinline__ void map_store(const P &p, int64_t i, const float (&a)[N], const float (&b)[N]) {
  float r[N];
  if constexpr (decltype(p.f)::per_channel) {
    channel_pos pos = channel_at(i, p.channels, p.inner);
    if (pos.r + N <= (int64_t)p.inner.d) {
      const auto f = p.f.bind(pos.c);
#pragma unroll
      for (int k = 0; k < N; ++k) r[k] = f(a[k], b[k]);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) {
        r[k] = p.f.bind(pos.c)(a[k], b[k]);
        channel_next(pos, p.channels, p.inner);
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) r[k] = p.f(a[k], b[k]);
  }
  store_f32<N>(p.y, i, r);
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

// V elements per vector, U vectors in flight per thread; elements [head, head + nvec * V) are
// vector-aligned for every pointer.
template <int V, int U, class P> __global__ void __launch_bounds__(kBlock) map_vectorized(P p, int64_t head) {
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t nvec = (p.n - head) / V, tail = head + nvec * V;
  if (t < head) map_one(p, t);
  if (t < p.n - tail) map_one(p, tail + t);
  for (int64_t v0 = t; v0 < nvec; v0 += U * stride) {
    float a[U][V], b[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {  // issue every load before the first use
      const int64_t v = v0 + u * stride;
      if (v < nvec) {
        load_f32<V>(p.a, head + v * V, a[u]);
        load_f32<V>(p.b, head + v * V, b[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = v0 + u * stride;
      if (v < nvec) map_store<V>(p, head + v * V, a[u], b[u]);
    }
  }
}

// ---- 2.3 The ops --------------------------------------------------------------------------
// Each is f(a, b) on f32 values; b is 0 for one-input ops.

struct add_op : elementwise_op {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct add_scalar_op : elementwise_op {
  float s;
  __device__ float operator()(float a, float) const { return a + s; }
};
struct mul_scalar_op : elementwise_op {
  float s;
  __device__ float operator()(float a, float) const { return a * s; }
};
struct axpy_op : elementwise_op {  // a = x, b = y
  float alpha;
  __device__ float operator()(float x, float y) const { return fmaf(alpha, x, y); }
};
struct exp_op : elementwise_op {
  __device__ float operator()(float a, float) const { return expf(a); }
};
struct add_mul_exp_op : elementwise_op {
  float s;
  __device__ float operator()(float x, float z) const { return expf((x + z) * s); }
};

template <bool kTanh> struct gelu_fwd_op : elementwise_op {
  __device__ float operator()(float x, float) const { return kTanh ? gelu_tanh(x) : gelu_erf(x); }
};
template <bool kTanh> struct gelu_bwd_op : elementwise_op {  // a = dy, b = x
  __device__ float operator()(float dy, float x) const { return dy * (kTanh ? gelu_tanh_grad(x) : gelu_erf_grad(x)); }
};
struct silu_fwd_op : elementwise_op {
  __device__ float operator()(float x, float) const { return silu(x); }
};
struct silu_bwd_op : elementwise_op {
  __device__ float operator()(float dy, float x) const { return dy * silu_grad(x); }
};
struct relu_fwd_op : elementwise_op {
  __device__ float operator()(float x, float) const { return relu(x); }
};
struct relu_bwd_op : elementwise_op {
  __device__ float operator()(float dy, float x) const { return relu_grad_times(dy, x); }
};

// Quantization parameters: one pair for the tensor, or one pair per channel (device arrays).
// Each quantization functor below is written once for both: with channel_qparams, bind(c) gives
// the tensor_qparams functor of channel c.
struct tensor_qparams {
  static constexpr bool per_channel = false;
  float scale, zero_point, rcp_scale;  // rcp_scale = reciprocal_or_zero(scale)
};
struct channel_qparams {
  static constexpr bool per_channel = true;
  const float *scale;
  const int32_t *zero_point;
  __device__ tensor_qparams at(int64_t c) const {
    const float s = __ldg(scale + c);
    return {s, (float)__ldg(zero_point + c), reciprocal_or_zero(s)};
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

}  // namespace gpuops

// ---- 2.4 Launcher (implementation only) --------------------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// Run one elementwise map with the asked version. AUTO is vectorized when every pointer sits at
// the same offset modulo the vector, else grid-stride.
template <class F, class TY, class TA, class TB>
gpuops_status launch_map(const gpuops__ew_args &args, gpuops_algo algo, F f, TY *y, const TA *a, const TB *b) {
  using P = map_params<F, TY, TA, TB>;
  constexpr int V = vec_width<TY, TA, TB>(), U = 2;
  const P p = {y, a, b, args.n, f, divisor((uint64_t)args.channels), divisor((uint64_t)args.inner)};
  const cudaStream_t stream = args.stream;
  if (algo == GPUOPS_ALGO_AUTO || algo == GPUOPS_ALGO_VECTORIZED) {
    auto offset = [](const void *q, int size) { return (int)(((uintptr_t)q / (uintptr_t)size) % V); };
    const int m = offset(y, sizeof(TY));
    if (offset(a, sizeof(TA)) == m && (b == nullptr || offset(b, elem_size<TB>::value) == m)) {
      const int64_t head = (V - m) % V < args.n ? (V - m) % V : args.n;
      const int64_t work = (args.n - head) / V / U + 1;  // vector pairs, plus the head/tail
      auto kernel = map_vectorized<V, U, P>;
      const int64_t blocks = (work + kBlock - 1) / kBlock, full = full_grid(kernel);
      kernel<<<(unsigned)(blocks < full ? blocks : full), kBlock, 0, stream>>>(p, head);
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
    auto kernel = map_grid_stride<P>;
    const int64_t full = full_grid(kernel);
    kernel<<<(unsigned)(blocks < full ? blocks : full), kBlock, 0, stream>>>(p);
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
  return run(tensor_qparams{args.s, (float)args.zero_point, reciprocal_or_zero(args.s)});
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
  return run(tensor_qparams{args.s, (float)args.zero_point, reciprocal_or_zero(args.s)});
}

template <class T> gpuops_status ew_launch_typed(const gpuops__ew_args &args) {
  T *y = (T *)args.y;
  const T *a = (const T *)args.a, *b = (const T *)args.b;
  const none *no_b = nullptr;
  const gpuops_algo algo = args.algo;
  switch (args.op) {
  case GPUOPS__EW_ADD: return launch_map(args, algo, add_op{}, y, a, b);
  case GPUOPS__EW_ADD_SCALAR: return launch_map(args, algo, add_scalar_op{{}, args.s}, y, a, no_b);
  case GPUOPS__EW_AXPY: return launch_map(args, algo, axpy_op{{}, args.s}, y, a, b);
  case GPUOPS__EW_GELU_FWD:
    return args.gelu_tanh ? launch_map(args, algo, gelu_fwd_op<true>{}, y, a, no_b) : launch_map(args, algo, gelu_fwd_op<false>{}, y, a, no_b);
  case GPUOPS__EW_GELU_BWD:
    return args.gelu_tanh ? launch_map(args, algo, gelu_bwd_op<true>{}, y, a, b) : launch_map(args, algo, gelu_bwd_op<false>{}, y, a, b);
  case GPUOPS__EW_SILU_FWD: return launch_map(args, algo, silu_fwd_op{}, y, a, no_b);
  case GPUOPS__EW_SILU_BWD: return launch_map(args, algo, silu_bwd_op{}, y, a, b);
  case GPUOPS__EW_RELU_FWD: return launch_map(args, algo, relu_fwd_op{}, y, a, no_b);
  case GPUOPS__EW_RELU_BWD: return launch_map(args, algo, relu_bwd_op{}, y, a, b);
  case GPUOPS__EW_ADD_MUL_EXP: {
    if (algo != GPUOPS_ALGO_UNFUSED) return launch_map(args, algo, add_mul_exp_op{{}, args.s}, y, a, b);
    gpuops_status st = launch_map(args, GPUOPS_ALGO_AUTO, add_op{}, y, a, b);
    if (st == GPUOPS_OK) st = launch_map(args, GPUOPS_ALGO_AUTO, mul_scalar_op{{}, args.s}, y, (const T *)y, no_b);
    if (st == GPUOPS_OK) st = launch_map(args, GPUOPS_ALGO_AUTO, exp_op{}, y, (const T *)y, no_b);
    return st;
  }
  case GPUOPS__EW_QUANTIZE: return ew_quantize<T>(args, a, (int8_t *)args.y);
  case GPUOPS__EW_DEQUANTIZE: return ew_dequantize<T>(args, y, (const int8_t *)args.a);
  }
  return GPUOPS_ERR_INVALID_ARGUMENT;
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__ew_launch(const gpuops__ew_args *p) {
  switch (p->dt) {
  case GPUOPS__F32: return gpuops::ew_launch_typed<float>(*p);
  case GPUOPS__F16: return gpuops::ew_launch_typed<__half>(*p);
  case GPUOPS__BF16: return gpuops::ew_launch_typed<__nv_bfloat16>(*p);
  default: break;
  }
  return GPUOPS_ERR_INVALID_ARGUMENT;
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_ELEMENTWISE

// ==== 3. Reductions and histogram ============================================================
#ifndef GPUOPS_NO_REDUCE
// (issue 3, reduce and histogram: device code and launchers go here)
#endif  // GPUOPS_NO_REDUCE



// ==== 4. Prefix scan =========================================================================
#ifndef GPUOPS_NO_SCAN
// (issue 3, scan: device code and launchers go here)
#endif  // GPUOPS_NO_SCAN



// ==== 5. Softmax =============================================================================
#ifndef GPUOPS_NO_SOFTMAX
// (issue 3, softmax: device code and launchers go here)
#endif  // GPUOPS_NO_SOFTMAX



// ==== 6. Transpose and matrix multiply =======================================================
#ifndef GPUOPS_NO_MATMUL
// (issue 4, transpose: device code and launchers go here)



// ---- 6.2 Matrix multiply (f32 on CUDA cores) -------------------------------------------------
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
__device__ __forceinline__ float matmul_at(const matmul_operand &o, int64_t x, int64_t q) { return o.ptr[x * o.sx + q * o.sk]; }

// ---- NAIVE and COALESCED: one thread per element of C -----------------------------------------
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

// ---- Tile loaders -------------------------------------------------------------------------------
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

// ---- SHARED_TILED: 32 x 32 tiles through shared memory ------------------------------------------
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

// ---- REGISTER_1D: a column of 8 outputs per thread ----------------------------------------------
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

// ---- REGISTER_2D and VECTORIZED: an 8 x 8 block of outputs per thread -----------------------------
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

// ---- WARP_TILED: block tile -> warp tile -> thread tile, cp.async pipeline ------------------------
// cp.async (sm_80+) copies global memory straight into shared memory without passing through
// registers, so the next STAGES - 1 tiles load while this one is computed. Before sm_80 the same
// calls are ordinary loads and stores (correct, synchronous). valid_bytes < size zero-fills.
__device__ __forceinline__ void matmul_cp4(float *dst, const float *src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 4 : 0) : "memory");
#else
  *dst = valid ? *src : 0.0f;
#endif
}
__device__ __forceinline__ void matmul_cp16(float *dst, const float *src, int valid) {  // valid: 0..4 leading floats
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid * 4) : "memory");
#else
  if (valid == 4) {
    *reinterpret_cast<float4 *>(dst) = *reinterpret_cast<const float4 *>(src);
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) dst[q] = q < valid ? src[q] : 0.0f;
  }
#endif
}
__device__ __forceinline__ void matmul_cp_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void matmul_cp_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

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
  static_assert(WM == 32 * TMS && WN == 16 * TNS, "warp tile = 8 x 4 lanes of TMS x TNS 4 x 4 sub-tiles");
  static_assert(BK % 8 == 0 && STAGES >= 2, "BK a multiple of 8 (the k-contiguous loader), 2+ stages");
  static_assert((BK * BM / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "whole 16-byte copies per thread");
};
// The configurations compiled in. 128 x 128 is the workhorse (8 x 8 per thread, 2 blocks per SM);
// 128 x 256 has 8 x 16 per thread (more FFMA per shared load, one block per SM); 64 x 64 fills the
// SMs on small problems. Pick one for WARP_TILED with GPUOPS_MATMUL_WT_CONFIG (1, 2, 3; 0 = by size).
using matmul_wt_128x128 = matmul_tile_config<128, 128, 8, 2, 4, 2, 2, 3, 2>;
using matmul_wt_128x256 = matmul_tile_config<128, 256, 8, 2, 4, 2, 4, 3, 1>;
using matmul_wt_64x64 = matmul_tile_config<64, 64, 16, 2, 2, 1, 2, 3, 4>;

// One operand's BK x BX tile into one stage (s[q * LD + x]), as cp.async copies; see the modes.
// base points at the tile's first element (x0, k0); x < xlim and q < qlim are inside the matrix.
// The per-thread offsets x sx + q sk do not change from one k-tile to the next (the compiler keeps
// them), so a copy costs an add, two compares and the LDGSTS. XScalar needs sx == 1, KScalar
// sk == 1 (matmul_mode guarantees it: one of the two strides is always 1).
template <int BX, int BK, int LD, int THREADS>
__device__ __forceinline__ void matmul_wt_load(float *s, const matmul_operand &o, int mode, const float *base, int xlim, int qlim) {
  const int tid = threadIdx.x;
  if (mode == kMatmulX16) {  // a warp copies 512 contiguous bytes of a row (128 floats of x)
#pragma unroll
    for (int r = 0; r < BK * BX / 4 / THREADS; ++r) {
      const int e = tid + r * THREADS, q = e / (BX / 4), x = (e % (BX / 4)) * 4;
      const int left = xlim - x, valid = q < qlim ? (left >= 4 ? 4 : (left > 0 ? left : 0)) : 0;
      matmul_cp16(s + q * LD + x, valid ? base + (q * o.sk + x) : o.ptr, valid);
    }
  } else if (mode == kMatmulXScalar) {  // a warp along 32 consecutive x of one k
#pragma unroll
    for (int r = 0; r < BK * BX / THREADS; ++r) {
      const int e = tid + r * THREADS, q = e / BX, x = e % BX;
      const bool valid = x < xlim && q < qlim;
      matmul_cp4(s + q * LD + x, valid ? base + (x + q * o.sk) : o.ptr, valid);
    }
  } else {  // k contiguous: a warp as 8 k x 4 x, 32-byte runs of global memory; stored transposed,
            // bank (4 q + x) mod 32 with LD = 4 mod 32: the 32 stores hit 32 banks
#pragma unroll
    for (int r = 0; r < BK * BX / THREADS; ++r) {
      const int e = tid + r * THREADS, g = e >> 5, l = e & 31;
      const int q = (g % (BK / 8)) * 8 + (l & 7), x = (g / (BK / 8)) * 4 + (l >> 3);
      const bool valid = x < xlim && q < qlim;
      matmul_cp4(s + q * LD + x, valid ? base + (x * o.sx + q) : o.ptr, valid);
    }
  }
}

// Tiles are visited in groups of 8 tile rows (column by column inside a group) so that blocks
// running together share A and B panels in L2.
__device__ __forceinline__ void matmul_swizzle(int64_t t, int64_t tiles_m, int64_t tiles_n, int64_t &tm, int64_t &tn) {
  constexpr int64_t G = 8;
  const int64_t width = G * tiles_n, group = t / width, first = group * G;
  const int64_t rows = tiles_m - first < G ? tiles_m - first : G, r = t - group * width;
  tm = first + r % rows;
  tn = r / rows;
}

// The kernel. Per tile: STAGES - 1 tiles of k in flight; each step waits for the oldest, one
// barrier, issues the next copy into the stage freed by the previous step, and computes. Inner
// loop per k: TMS + TNS LDS.128 and 16 TMS TNS FFMA (64 for 128 x 128: the FFMA pipe, not shared
// memory, is the limit). Edge tiles run the same code: the loaders zero-fill, the stores are
// predicated; float4 stores of C where ldc and c allow.
template <class C>
__global__ void __launch_bounds__(C::THREADS, C::MIN_BLOCKS) matmul_warp_tiled(matmul_params p, int64_t tiles_m, int64_t tiles_n) {
  extern __shared__ float4 matmul_smem4[];
  float *const smem = reinterpret_cast<float *>(matmul_smem4);
  constexpr int BM = C::BM, BN = C::BN, BK = C::BK, S = C::STAGES, TM = 4 * C::TMS, TN = 4 * C::TNS;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp / C::WARPS_N, wn = warp % C::WARPS_N, lm = lane >> 2, ln = lane & 3;
  const int arow = wm * C::WM + lm * 4, bcol = wn * C::WN + ln * 4;  // first row / column of this thread
  const int64_t ktiles = (p.k + BK - 1) / BK, tiles = tiles_m * tiles_n;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t tm, tn;
    matmul_swizzle(t, tiles_m, tiles_n, tm, tn);
    const int64_t m0 = tm * BM, n0 = tn * BN;
    const int alim = (int)(p.m - m0 < BM ? p.m - m0 : BM), blim = (int)(p.n - n0 < BN ? p.n - n0 : BN);
    auto load = [&](int64_t kt, int stage) {
      float *sa = smem + stage * C::STAGE_FLOATS, *sb = sa + BK * C::LDA;
      const int64_t k0 = kt * BK;
      const int qlim = (int)(p.k - k0 < BK ? p.k - k0 : BK);
      matmul_wt_load<BM, BK, C::LDA, C::THREADS>(sa, p.a, p.a_mode, p.a.ptr + (m0 * p.a.sx + k0 * p.a.sk), alim, qlim);
      matmul_wt_load<BN, BK, C::LDB, C::THREADS>(sb, p.b, p.b_mode, p.b.ptr + (n0 * p.b.sx + k0 * p.b.sk), blim, qlim);
    };
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < ktiles) load(s, s);
      matmul_cp_commit();  // an empty group past the end keeps the count uniform
    }
    int stage = 0;
    for (int64_t kt = 0; kt < ktiles; ++kt) {
      matmul_cp_wait<S - 2>();  // tile kt has landed (this thread's copies)
      __syncthreads();          // ... everyone's; and everyone is done with tile kt - 1's stage
      {
        const int64_t next = kt + S - 1;
        const int ns = stage == 0 ? S - 1 : stage - 1;  // (kt + S - 1) % S: the stage of tile kt - 1
        if (next < ktiles) load(next, ns);
        matmul_cp_commit();
      }
      const float *sa = smem + stage * C::STAGE_FLOATS, *sb = sa + BK * C::LDA;
#pragma unroll
      for (int q = 0; q < BK; ++q) {
        float a[TM], b[TN];
#pragma unroll
        for (int u = 0; u < C::TMS; ++u) {
          const float4 v = *reinterpret_cast<const float4 *>(sa + q * C::LDA + arow + u * 32);
          a[4 * u] = v.x, a[4 * u + 1] = v.y, a[4 * u + 2] = v.z, a[4 * u + 3] = v.w;
        }
#pragma unroll
        for (int u = 0; u < C::TNS; ++u) {
          const float4 v = *reinterpret_cast<const float4 *>(sb + q * C::LDB + bcol + u * 16);
          b[4 * u] = v.x, b[4 * u + 1] = v.y, b[4 * u + 2] = v.z, b[4 * u + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      stage = stage == S - 1 ? 0 : stage + 1;
    }
    // Epilogue: row i of acc is m0 + arow + (i / 4) * 32 + i % 4; columns j..j+3 (j % 4 == 0) are
    // n0 + bcol + (j / 4) * 16 + 0..3.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int64_t gi = m0 + arow + (i / 4) * 32 + (i % 4);
      if (gi >= p.m) continue;
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const int64_t gj = n0 + bcol + (j / 4) * 16;
        float *c = p.c + gi * p.ldc + gj;
        if (p.c_vec && gj + 3 < p.n) {
          float4 v = make_float4(p.alpha * acc[i][j], p.alpha * acc[i][j + 1], p.alpha * acc[i][j + 2], p.alpha * acc[i][j + 3]);
          if (p.beta != 0.0f) {
            const float4 o = *reinterpret_cast<const float4 *>(c);
            v.x = fmaf(p.beta, o.x, v.x), v.y = fmaf(p.beta, o.y, v.y), v.z = fmaf(p.beta, o.z, v.z), v.w = fmaf(p.beta, o.w, v.w);
          }
          *reinterpret_cast<float4 *>(c) = v;
        } else {
#pragma unroll
          for (int u = 0; u < 4; ++u)
            if (gj + u < p.n) c[u] = matmul_out(p, c + u, acc[i][j + u]);
        }
      }
    }
    __syncthreads();  // the next tile's prologue overwrites stages others may still read
  }
}

// ---- GEMV: m = 1 or n = 1 (AUTO only) -----------------------------------------------------------
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

// ---- k = 0: C = beta C ------------------------------------------------------------------------
template <class T>
__global__ void __launch_bounds__(256) matmul_scale_c(T *c, int64_t m, int64_t n, int64_t ldc, float beta) {
  const int64_t total = m * n, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    T *q = c + (e / n) * ldc + e % n;
    *q = beta != 0.0f ? beta * *q : 0.0f;
  }
}

}  // namespace gpuops

#if defined(GPUOPS_IMPLEMENTATION)
#ifndef GPUOPS_MATMUL_WT_CONFIG
#define GPUOPS_MATMUL_WT_CONFIG 0  // WARP_TILED's tile: 0 by problem size, 1 128x128, 2 128x256, 3 64x64
#endif
namespace gpuops {

inline int64_t matmul_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline unsigned matmul_grid(int64_t tiles) { return (unsigned)(tiles < 0x7fffffff ? tiles : 0x7fffffff); }

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
  return p;
}

inline int matmul_sm_count() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) sms = 1;
  return sms;
}

// WARP_TILED with configuration C.
template <class C> gpuops_status matmul_run_warp_tiled(matmul_params p, cudaStream_t stream) {
  p.a_mode = matmul_mode(p.a, false);
  p.b_mode = matmul_mode(p.b, false);
  const int64_t tm = matmul_cdiv(p.m, C::BM), tn = matmul_cdiv(p.n, C::BN);
  auto kernel = matmul_warp_tiled<C>;
  if (C::SMEM_BYTES > 48 * 1024) {
    static const cudaError_t set = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM_BYTES);
    if (set != cudaSuccess) return launch_status();
  }
  kernel<<<matmul_grid(tm * tn), C::THREADS, C::SMEM_BYTES, stream>>>(p, tm, tn);
  return launch_status();
}

// WARP_TILED's configuration for a shape: 128 x 128 when it gives at least one block per SM (two
// fit on an SM: 2048^2 is 256 tiles for 264 slots on an H100), else 64 x 64 (4x the blocks).
// config 1..3 forces one (the bench times each; tests call every one).
inline gpuops_status matmul_warp_tiled_config(const gpuops__mm_args &r, int config) {
  const matmul_params p = matmul_params_of(r);
  if (config == 0) config = matmul_cdiv(r.m, 128) * matmul_cdiv(r.n, 128) >= (int64_t)matmul_sm_count() ? 1 : 3;
  switch (config) {
  case 1: return matmul_run_warp_tiled<matmul_wt_128x128>(p, r.stream);
  case 2: return matmul_run_warp_tiled<matmul_wt_128x256>(p, r.stream);
  default: return matmul_run_warp_tiled<matmul_wt_64x64>(p, r.stream);
  }
}

// m = 1 or n = 1 as a matrix-vector product.
inline gpuops_status matmul_gemv(const gpuops__mm_args &r) {
  const gpuops__mm_strides s = gpuops__mm_strides_of(&r);
  matmul_gemv_params g;
  g.alpha = r.alpha, g.beta = r.beta, g.k = r.k;
  if (r.m == 1) {  // y = C row 0 (n outputs), X(o, q) = op(B)(q, o), v = op(A) row 0
    g.y = r.c, g.sy = 1, g.x = r.b, g.so = s.sbj, g.sq = s.sbp, g.v = r.a, g.sv = s.sap, g.outputs = r.n;
  } else {         // y = C column 0 (m outputs), X(o, q) = op(A)(o, q), v = op(B) column 0
    g.y = r.c, g.sy = r.ldc, g.x = r.a, g.so = s.sai, g.sq = s.sap, g.v = r.b, g.sv = s.sbp, g.outputs = r.m;
  }
  const int sms = matmul_sm_count();
  if (g.sq == 1 || g.outputs == 1) {
    const int64_t blocks = matmul_cdiv(g.outputs, 8), cap = 32 * (int64_t)sms;
    matmul_gemv_dot<<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, r.stream>>>(g);
  } else {
    const int64_t blocks = matmul_cdiv(g.outputs, 32), cap = 4 * (int64_t)sms;
    matmul_gemv_cols<<<(unsigned)(blocks < cap ? blocks : cap), dim3(32, 32), 0, r.stream>>>(g);
  }
  return launch_status();
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
    if (r->m == 1 || r->n == 1) return matmul_gemv(*r);
    return matmul_warp_tiled_config(*r, GPUOPS_MATMUL_WT_CONFIG);
  case GPUOPS_ALGO_NAIVE: {
    const int64_t tm = matmul_cdiv(p.m, 32), tiles = tm * matmul_cdiv(p.n, 8);
    matmul_naive<<<matmul_grid(tiles), dim3(32, 8), 0, stream>>>(p, tm, tiles);
    break;
  }
  case GPUOPS_ALGO_COALESCED: {
    const int64_t tn = matmul_cdiv(p.n, 32), tiles = tn * matmul_cdiv(p.m, 8);
    matmul_coalesced<<<matmul_grid(tiles), dim3(32, 8), 0, stream>>>(p, tn, tiles);
    break;
  }
  case GPUOPS_ALGO_SHARED_TILED: {
    const int64_t tn = matmul_cdiv(p.n, 32), tiles = tn * matmul_cdiv(p.m, 32);
    matmul_shared_tiled<<<matmul_grid(tiles), dim3(32, 32), 0, stream>>>(p, tn, tiles);
    break;
  }
  case GPUOPS_ALGO_REGISTER_1D: {
    const int64_t tn = matmul_cdiv(p.n, 64), tiles = tn * matmul_cdiv(p.m, 64);
    matmul_register_1d<<<matmul_grid(tiles), 512, 0, stream>>>(p, tn, tiles);
    break;
  }
  case GPUOPS_ALGO_REGISTER_2D:
  case GPUOPS_ALGO_VECTORIZED: {
    const int64_t tn = matmul_cdiv(p.n, 128), tiles = tn * matmul_cdiv(p.m, 128);
    if (r->algo == GPUOPS_ALGO_REGISTER_2D) {
      matmul_register_2d<false><<<matmul_grid(tiles), 256, 0, stream>>>(p, tn, tiles);
    } else {
      p.a_mode = matmul_mode(p.a, true);
      p.b_mode = matmul_mode(p.b, true);
      matmul_register_2d<true><<<matmul_grid(tiles), 256, 0, stream>>>(p, tn, tiles);
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



#endif  // GPUOPS_CUDA_CUH
