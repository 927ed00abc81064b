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
namespace gpuops {

// Roofline. A reduction reads each input byte once and writes almost nothing: 1 flop per element
// against 2 or 4 bytes, so its ceiling is the device's read bandwidth (here: the copy bandwidth
// of the same run; a reduction's rate counts bytes read only). A histogram also reads 4 bytes per
// element; its limits are the atomics: how many land on the same address at the same time.

// ---- 3.1 Reduction operators and thread/warp/block helpers -----------------------------------
// The combining operators of this section, on f32. Unlike section 1's maximum/minimum (fmaxf:
// a NaN loses), these propagate NaN as PyTorch's max/min/sum do. identity() is what an empty
// input reduces to.
struct sum_nan_op {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  static __device__ __forceinline__ float identity() { return 0.0f; }
};
struct max_nan_op {
  __device__ __forceinline__ float operator()(float a, float b) const { return (a > b || a != a) ? a : b; }
  static __device__ __forceinline__ float identity() { return __int_as_float(0xff800000); }  // -inf
};
struct min_nan_op {
  __device__ __forceinline__ float operator()(float a, float b) const { return (a < b || a != a) ? a : b; }
  static __device__ __forceinline__ float identity() { return __int_as_float(0x7f800000); }  // +inf
};

// 16 bytes at p + i (aligned to 16) as V = 16 / sizeof(T) f32 values, through the read-only
// path (LDG.E.128.CONSTANT): x is only read while a reduction runs. 16-bit types convert in pairs.
template <int V, class T> __device__ __forceinline__ void load16_f32_readonly(const T *p, int64_t i, float (&out)[V]) {
  static_assert(V * sizeof(T) == 16, "one 16-byte vector");
  const uint4 w = __ldg(reinterpret_cast<const uint4 *>(p + i));
  const uint32_t word[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if constexpr (sizeof(T) == 4) {
      out[k] = __uint_as_float(word[k]);
    } else {
      const float2 f = pair_of<T>::unpack(word[k]);
      out[2 * k] = f.x, out[2 * k + 1] = f.y;
    }
  }
}

// thread_reduce_strided: `threads` >= 8 cooperating threads (any group: a warp, a block, a grid;
// the scalar head and tail give one element to each of the first threads), the caller numbering
// itself t in [0, threads), each call with the same p and count; thread t
// returns op over its share of p[0 .. count) combined into `acc` (the caller then combines the
// threads' values, e.g. with warp_reduce or block_reduce). p must be aligned to sizeof(T), not to
// 16: a scalar head of up to V - 1 elements reaches the first 16-byte boundary, then each thread
// takes every `threads`-th 128-bit vector (V = 16 / sizeof(T) elements), U of them in flight, and
// a scalar tail ends it. Each thread's share and order depend only on (p, count, t, threads), so
// the result is the same bits on every run. No shared memory, no barrier. p is read through the
// read-only data path: nothing may write it while the kernel runs.
template <int U, class T, class Op>
__device__ __forceinline__ float thread_reduce_strided(const T *p, int64_t count, int64_t t, int64_t threads, Op op, float acc) {
  constexpr int V = 16 / (int)sizeof(T);
  const int64_t mis = (int64_t)(((uintptr_t)p / sizeof(T)) % V);
  const int64_t head = (V - mis) % V < count ? (V - mis) % V : count;
  const int64_t nvec = (count - head) / V, tail = head + nvec * V;
  if (t < head) acc = op(acc, to_f32(p[t]));
  if (t < count - tail) acc = op(acc, to_f32(p[tail + t]));
  float part[U];
#pragma unroll
  for (int u = 0; u < U; ++u) part[u] = Op::identity();
  for (int64_t v0 = t; v0 < nvec; v0 += U * threads) {
    float a[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {  // every load issued before the first use
      const int64_t v = v0 + u * threads;
      if (v < nvec) load16_f32_readonly<V>(p, head + v * V, a[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * threads < nvec) {  // a vector pairwise (shorter chains: more ILP, less rounding)
#pragma unroll
        for (int w = 1; w < V; w *= 2)
#pragma unroll
          for (int k = 0; k < V; k += 2 * w) a[u][k] = op(a[u][k], a[u][k + w]);
        part[u] = op(part[u], a[u][0]);
      }
  }
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

// ---- 3.2 Vector reductions: the learning path -------------------------------------------------
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

// ---- 3.3 Row reductions -------------------------------------------------------------------
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

template <class T, class Op>
__global__ void __launch_bounds__(kBlock) reduce_rows_block(float *out, const T *x, int64_t rows, int64_t cols, Op op) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float v = row_reduce_block(x + r * cols, cols, op, scratch);
    if (threadIdx.x == 0) out[r] = v;
  }
}

// ---- 3.4 Histogram -------------------------------------------------------------------------
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

// Calls f(v) for this thread's share of x[0 .. n): every `threads`-th 16-byte vector after a
// scalar head that reaches 16-byte alignment, and a scalar tail.
template <int U, class F> __device__ __forceinline__ void for_each_i32(const int32_t *x, int64_t n, int64_t t, int64_t threads, F &f) {
  const int64_t mis = (int64_t)(((uintptr_t)x / 4) % 4), head = (4 - mis) % 4 < n ? (4 - mis) % 4 : n;
  const int64_t nvec = (n - head) / 4, tail = head + nvec * 4;
  const int4 *xv = reinterpret_cast<const int4 *>(x + head);
  if (t < head) f(x[t]);
  if (t < n - tail) f(x[tail + t]);
  for (int64_t v0 = t; v0 < nvec; v0 += U * threads) {
    int4 a[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * threads < nvec) a[u] = __ldg(xv + v0 + u * threads);  // read-only path
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * threads < nvec) f(a[u].x), f(a[u].y), f(a[u].z), f(a[u].w);
  }
}

constexpr int kHistLoads = 2;  // 16-byte loads in flight per thread

// GLOBAL_ATOMIC (kRuns false), and RUN_AGGREGATE past the shared ranges (kRuns true): counters
// straight in global memory. Bytes: 4 per element read; atomics: one per element (per run), on
// L2: fine for many bins and spread data, slow when many hit one bin.
template <bool kRuns>
__global__ void __launch_bounds__(kBlock) histogram_global(unsigned long long *counts, const int32_t *x, int64_t n, int32_t bins) {
  bin_counter<kRuns, unsigned long long> c{counts, 0u, (uint32_t)bins};
  for_each_i32<kHistLoads>(x, n, (int64_t)blockIdx.x * blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x, c);
  c.flush();
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

}  // namespace gpuops

// ---- 3.5 Launchers (implementation only) ---------------------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

static_assert(kBlock == GPUOPS__REDUCE_BLOCK, "gpuops.h sizes the reduction workspace for kBlock threads");

// A failed runtime call (not a launch): GPUOPS_ERR_CUDA with the error kept, CUDA's last error cleared.
inline gpuops_status cuda_call_status(cudaError_t e) {
  if (e == cudaSuccess) return GPUOPS_OK;
  (void)cudaGetLastError();
  gpuops__last_cuda_error = (int)e;
  return GPUOPS_ERR_CUDA;
}

// Blocks of `kernel` (kBlock threads, `smem` dynamic shared bytes) resident on the device at once.
template <class K> inline int64_t resident_blocks(K kernel, size_t smem) {
  int b = 0, dev = 0, sms = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kBlock, smem) != cudaSuccess || b < 1) b = 1;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) sms = 1;
  return (int64_t)b * sms;
}

// One WARP_REDUCE pass: op over x[0 .. n) into `blocks` partials (returned in *parts); never more
// than gpuops__reduce_fast_blocks(n), which the workspace holds.
template <class T, class Op> gpuops_status reduce_fast_pass(float *partials, const T *x, int64_t n, Op op, cudaStream_t s, int64_t *parts) {
  constexpr int64_t V = 16 / sizeof(T), U = 4;
  auto kernel = reduce_warp<T, Op>;
  int64_t blocks = (n / V + kBlock * U - 1) / (kBlock * U);
  const int64_t full = full_grid(kernel), cap = gpuops__reduce_fast_blocks(n);
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

template <class T, class Op> gpuops_status reduce_rows(const gpuops__red_args &a, Op op) {
  float *out = (float *)a.out;
  const T *x = (const T *)a.x;
  const int64_t limit = 0x7fffffff;
  if (a.algo == GPUOPS_ALGO_WARP_REDUCE || a.cols <= GPUOPS__ROWS_WARP_MAX_COLS) {
    const int64_t blocks = (a.rows + kBlock / 32 - 1) / (kBlock / 32);
    reduce_rows_warp<T, Op><<<(unsigned)(blocks < limit ? blocks : limit), kBlock, 0, a.stream>>>(out, x, a.rows, a.cols, op);
  } else {
    reduce_rows_block<T, Op><<<(unsigned)(a.rows < limit ? a.rows : limit), kBlock, 0, a.stream>>>(out, x, a.rows, a.cols, op);
  }
  return launch_status();
}

template <class T> gpuops_status reduce_typed(const gpuops__red_args &a) {
  switch (a.op) {
  case GPUOPS_REDUCE_SUM: return a.kind == GPUOPS__RED_ROWS ? reduce_rows<T>(a, sum_nan_op{}) : reduce_vector<T>(a, sum_nan_op{});
  case GPUOPS_REDUCE_MAX: return a.kind == GPUOPS__RED_ROWS ? reduce_rows<T>(a, max_nan_op{}) : reduce_vector<T>(a, max_nan_op{});
  case GPUOPS_REDUCE_MIN: return a.kind == GPUOPS__RED_ROWS ? reduce_rows<T>(a, min_nan_op{}) : reduce_vector<T>(a, min_nan_op{});
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
    kernel<<<grid_x(resident_blocks(kernel, 0)), kBlock, 0, s>>>(counts, x, n, (int32_t)bins);
    return launch_status();
  }
  const bool runs = algo == GPUOPS_ALGO_RUN_AGGREGATE;
  const int copies = runs && bins <= GPUOPS__HIST_WARP_BINS ? kBlock / 32 : 1;
  const int32_t range_bins = (int32_t)(bins < GPUOPS__HIST_SHARED_BINS ? bins : GPUOPS__HIST_SHARED_BINS);
  const size_t smem = (size_t)copies * (size_t)range_bins * sizeof(uint32_t);  // <= 48 KB: no opt-in
  auto kernel = runs ? histogram_shared<true> : histogram_shared<false>;
  const dim3 grid(grid_x(resident_blocks(kernel, smem)), (unsigned)ranges);  // ranges <= 65535: checked on the host
  kernel<<<grid, kBlock, smem, s>>>(counts, x, n, (int32_t)bins, range_bins, copies);
  return launch_status();
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__red_launch(const gpuops__red_args *p) {
  if (p->kind == GPUOPS__RED_HISTOGRAM) return gpuops::histogram_launch(*p);
  switch (p->dt) {
  case GPUOPS__F32: return gpuops::reduce_typed<float>(*p);
  case GPUOPS__F16: return gpuops::reduce_typed<__half>(*p);
  case GPUOPS__BF16: return gpuops::reduce_typed<__nv_bfloat16>(*p);
  default: break;
  }
  return GPUOPS_ERR_INVALID_ARGUMENT;
}
#endif  // GPUOPS_IMPLEMENTATION
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



// (issue 4, matmul: device code and launchers go here)
#endif  // GPUOPS_NO_MATMUL



#endif  // GPUOPS_CUDA_CUH
