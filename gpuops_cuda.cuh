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
#include <cooperative_groups.h>

#include <atomic>

namespace gpuops {

// ---- 5.1 The online softmax state: the fusable building block ----------------------------------
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
constexpr float kLog2e = 1.4426950408889634f;

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

// ---- 5.2 Row access -----------------------------------------------------------------------------
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
template <int V, class T> __device__ __forceinline__ void store_cols(T *row, int64_t j, int64_t cols, bool vec, const float (&v)[V]) {
  if (vec) {
    store_f32<V>(row, j, v);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (j + k < cols) row[j + k] = from_f32<T>(v[k]);
  }
}

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

// ---- 5.3 Streaming versions: a block per row, x read from memory in every pass ----------------
// Roofline: softmax moves 2 x sizeof(T) bytes per element (x read once, y written once) and does
// a few flops and one exponential: memory-bound. These versions read x three times (THREE_PASS) or
// twice (ONLINE): at best 2/4 and 2/3 of the copy ceiling when the rereads miss L2, better where
// a row (cols x sizeof(T)) times the rows in flight fits in L2. AUTO uses ONLINE for rows too
// long to keep on chip. U vectors per thread (16 elements) are loaded before the first is used.
template <class T> __host__ __device__ constexpr int stream_u() { return sizeof(T) == 4 ? 4 : 2; }

// The row's columns this thread visits, U vectors at a time: f(j, step, v) gets v[U][V], vector u
// starting at column j + u * step (step = blockDim.x * V); vectors past the row's end hold `pad`
// (the caller skips storing them). Threads past the row's end call f never. No barrier inside.
template <int V, class T, class F> __device__ __forceinline__ void sweep_row(const T *row, int64_t cols, bool vec, float pad, F f) {
  constexpr int U = stream_u<T>();
  const int64_t step = (int64_t)blockDim.x * V;
  for (int64_t j = (int64_t)threadIdx.x * V; j < cols; j += U * step) {
    float v[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (j + u * step < cols) {
        load_cols<V>(row, j + u * step, cols, vec, pad, v[u]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) v[u][k] = pad;
      }
    }
    f(j, step, v);
  }
}

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
    const int64_t step = (int64_t)blockDim.x * V;
    float dot = 0.0f;
    for (int64_t j = (int64_t)threadIdx.x * V; j < p.cols; j += U * step) {
      float g[U][V], w[U][V];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < p.cols) {
          load_cols<V>(dy, j + u * step, p.cols, p.vec, 0.0f, g[u]);
          load_cols<V>(y, j + u * step, p.cols, p.vec, 0.0f, w[u]);
        }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < p.cols)
#pragma unroll
          for (int k = 0; k < V; ++k) dot = fmaf(g[u][k], w[u][k], dot);
    }
    dot = block_reduce(dot, plus(), 0.0f, scratch);
    for (int64_t j = (int64_t)threadIdx.x * V; j < p.cols; j += U * step) {
      float g[U][V], w[U][V];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < p.cols) {
          load_cols<V>(dy, j + u * step, p.cols, p.vec, 0.0f, g[u]);
          load_cols<V>(y, j + u * step, p.cols, p.vec, 0.0f, w[u]);
        }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (j + u * step < p.cols) {
          float o[V];
#pragma unroll
          for (int k = 0; k < V; ++k) o[k] = w[u][k] * (g[u][k] - dot);
          store_cols<V>(dx, j + u * step, p.cols, p.vec, o);
        }
    }
  }
}

// ---- 5.4 AUTO: the row on chip ------------------------------------------------------------------
// The row is loaded once into registers (E elements per thread, TPR threads per row), reduced,
// and written from the registers: x is read from memory once, so the ceiling is the copy rate.
// TPR = 32: a warp per row (8 rows per block of 256), shuffles only. TPR = 256 or 1024: a block
// per row. With `cluster` = C > 1 (compute capability 9.0+, TPR = 256) a row is split over a
// cluster of C blocks, each holding a slice of TPR * E columns; the blocks swap their (max, sum)
// through distributed shared memory, one cluster barrier pair per row.
// Register layout: vector k of thread t holds columns slice + (k * TPR + t) * V ... + V - 1, so a
// warp's 32 accesses of one k are contiguous (coalesced 512-byte rows of 128-bit accesses).
// Forward: pass over registers for the max, then exponentials (kept in registers, softmax) and
// their sum, then the outputs: one exponential per element.

template <int TPR> __device__ __forceinline__ float row_max(float m, float *fscratch) {
  if constexpr (TPR == 32) return warp_reduce(m, maximum());
  else return block_reduce(m, maximum(), -INFINITY, fscratch);
}
template <int TPR> __device__ __forceinline__ float row_sum(float s, float *fscratch) {
  if constexpr (TPR == 32) return warp_reduce(s, plus());
  else return block_reduce(s, plus(), 0.0f, fscratch);
}

// The (max, sum) of a whole row from this thread's part: over the warp (TPR == 32) or the block,
// then over the cluster. `m` is the group's maximum before the call (already reduced), `s` this
// thread's sum of exp(x - m). Returns the row's state; *scale gets exp(m - row max), the factor
// that turns this group's exponentials into the row's.
template <int TPR>
__device__ __forceinline__ online_softmax row_state(float m, float s, int cluster, float *fscratch, float2 *share, float *scale) {
  s = row_sum<TPR>(s, fscratch);
  online_softmax st = {m, s};
  *scale = 1.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (TPR != 32 && cluster > 1) {
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    if (threadIdx.x == 0) *share = make_float2(m, s);
    cl.sync();  // every block's pair is written
    online_softmax all = online_softmax::identity();
    for (int r = 0; r < cluster; ++r) {  // the same order in every block: the same bits
      const float2 q = *cl.map_shared_rank(share, r);
      all.merge({q.x, q.y});
    }
    cl.sync();  // every block has read every pair before any block writes its next one or exits
    *scale = m == -INFINITY ? 0.0f : exp_shifted(m, all.m);  // this block held only -inf: e's are 0
    st = all;
  }
#else
  if (cluster > 1) __trap();  // the launcher never asks (it checks the kernel's architecture)
  (void)share;
#endif
  return st;
}

template <int TPR> __host__ __device__ constexpr int block_threads() { return TPR < kBlock ? kBlock : TPR; }

template <class T, int TPR, int E> __global__ void __launch_bounds__(block_threads<TPR>()) softmax_fwd_on_chip(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), N = E / V, RPB = block_threads<TPR>() / TPR;
  static_assert(E % V == 0, "E must be a multiple of the vector width");
  __shared__ float fscratch[32];
  __shared__ float2 share;
  const int t = threadIdx.x % TPR, C = p.cluster;
  const int64_t slice = (int64_t)(blockIdx.x % C) * TPR * E;  // this block's first column
  const int64_t step = (int64_t)(gridDim.x / C) * RPB;
  for (int64_t r = (int64_t)(blockIdx.x / C) * RPB + threadIdx.x / TPR; r < p.rows; r += step) {
    const T *x = p.a + r * p.cols;
    T *y = p.out + r * p.cols;
    float v[N][V];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = slice + ((int64_t)k * TPR + t) * V;
      if (j < p.cols) {
        load_cols<V>(x, j, p.cols, p.vec, -INFINITY, v[k]);
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i) v[k][i] = -INFINITY;
      }
#pragma unroll
      for (int i = 0; i < V; ++i) m = fmaxf(m, v[k][i]);
    }
    m = row_max<TPR>(m, fscratch);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float e = exp_shifted(v[k][i], m);
        s += e;
        if (!p.log) v[k][i] = e;
      }
    float scale;
    const online_softmax st = row_state<TPR>(m, s, C, fscratch, &share, &scale);
    const float f = st.inv_sum() * scale, ls = logf(st.s);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = slice + ((int64_t)k * TPR + t) * V;
      if (j < p.cols) {
        float o[V];
#pragma unroll
        for (int i = 0; i < V; ++i) o[i] = p.log ? (st.s == 0.0f ? -INFINITY : (v[k][i] - st.m) - ls) : v[k][i] * f;
        store_cols<V>(y, j, p.cols, p.vec, o);
      }
    }
  }
}

// Backward on chip: dy and y in registers (2E floats per thread), dot reduced over the row
// (cluster sum in rank order), dx = y * (dy - dot). Reads dy and y once, writes dx once.
template <class T, int TPR, int E> __global__ void __launch_bounds__(block_threads<TPR>()) softmax_bwd_on_chip(softmax_params<T> p) {
  constexpr int V = 16 / sizeof(T), N = E / V, RPB = block_threads<TPR>() / TPR;
  static_assert(E % V == 0, "E must be a multiple of the vector width");
  __shared__ float fscratch[32];
  __shared__ float share;
  const int t = threadIdx.x % TPR, C = p.cluster;
  const int64_t slice = (int64_t)(blockIdx.x % C) * TPR * E;
  const int64_t step = (int64_t)(gridDim.x / C) * RPB;
  for (int64_t r = (int64_t)(blockIdx.x / C) * RPB + threadIdx.x / TPR; r < p.rows; r += step) {
    const T *dy = p.a + r * p.cols, *y = p.b + r * p.cols;
    T *dx = p.out + r * p.cols;
    float g[N][V], w[N][V];
    float dot = 0.0f;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = slice + ((int64_t)k * TPR + t) * V;
      if (j < p.cols) {
        load_cols<V>(dy, j, p.cols, p.vec, 0.0f, g[k]);
        load_cols<V>(y, j, p.cols, p.vec, 0.0f, w[k]);
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
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (TPR != 32 && C > 1) {
      namespace cg = cooperative_groups;
      cg::cluster_group cl = cg::this_cluster();
      if (threadIdx.x == 0) share = dot;
      cl.sync();
      float all = 0.0f;
      for (int q = 0; q < C; ++q) all += *cl.map_shared_rank(&share, q);  // rank order everywhere
      cl.sync();
      dot = all;
    }
#else
    if (C > 1) __trap();  // the launcher never asks (it checks the kernel's architecture)
    (void)share;
#endif
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t j = slice + ((int64_t)k * TPR + t) * V;
      if (j < p.cols) {
        float o[V];
#pragma unroll
        for (int i = 0; i < V; ++i) o[i] = w[k][i] * (g[k][i] - dot);
        store_cols<V>(dx, j, p.cols, p.vec, o);
      }
    }
  }
}

}  // namespace gpuops

// ---- 5.5 Launcher (implementation only) ---------------------------------------------------------
#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// Blocks for a row-looping kernel: one per group of rows, at most 8 x what fills the device
// (each block loops over rows), far inside the grid's x limit.
inline unsigned softmax_grid(int threads, int64_t groups) {
  int dev = 0, sms = 1;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) sms = 1;
  const int64_t cap = (int64_t)sms * (2048 / threads) * 8;
  return (unsigned)(groups < cap ? groups : cap);
}

inline cudaLaunchConfig_t cluster_config(cudaLaunchAttribute *attr, unsigned blocks, int threads, int C, cudaStream_t stream) {
  cudaLaunchConfig_t cfg = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.gridDim = dim3(blocks, 1, 1);
  cfg.blockDim = dim3((unsigned)threads, 1, 1);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

// A row-on-chip kernel, plain, or as clusters of p.cluster blocks per row: then a persistent grid
// of whole clusters (as many as can be resident at once, `resident`), each looping over rows; the
// loop is uniform within a cluster.
template <class T, class K> gpuops_status softmax_launch_on_chip(K kernel, int threads, int rows_per_block, const softmax_params<T> &p,
                                                                 cudaStream_t stream, int resident = 0) {
  const int64_t groups = (p.rows + rows_per_block - 1) / rows_per_block;
  if (p.cluster == 1) {
    kernel<<<softmax_grid(threads, groups), threads, 0, stream>>>(p);
    return launch_status();
  }
  const int64_t clusters = groups < resident ? groups : resident;
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)(clusters * p.cluster), threads, p.cluster, stream);
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    gpuops__last_cuda_error = (int)e;
    return GPUOPS_ERR_CUDA;
  }
  return launch_status();
}

// How many clusters of C blocks of `kernel` can be resident at once here, 0 where none can: the
// kernel must be built for compute capability 9.0+ (its cluster code exists: PTX of an older
// target, compiled on this device, would lack it) and the occupancy calculator must find room.
// Remembered per C in `known` (0 unknown, -1 none, else the count) for the first device asked,
// like full_grid.
template <class K> int softmax_clusters(K kernel, int threads, int C, std::atomic<int> *known) {
  const int k = known[C].load(std::memory_order_relaxed);
  if (k != 0) return k > 0 ? k : 0;
  int n = 0;
  cudaFuncAttributes fa;
  if (cudaFuncGetAttributes(&fa, kernel) == cudaSuccess && fa.ptxVersion >= 90 && fa.binaryVersion >= 90) {
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)C, threads, C, 0);
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) n = 0;
  }
  (void)cudaGetLastError();  // a refusal here is an answer, not an error to report later
  known[C].store(n > 0 ? n : -1, std::memory_order_relaxed);
  return n > 0 ? n : 0;
}

template <class T> gpuops_status softmax_stream(const softmax_params<T> &p, gpuops_algo algo, bool bwd, cudaStream_t stream) {
  const int threads = p.cols >= 16384 ? 1024 : 256;
  const unsigned grid = softmax_grid(threads, p.rows);
  if (bwd) softmax_bwd_stream<T><<<grid, threads, 0, stream>>>(p);
  else if (algo == GPUOPS_ALGO_THREE_PASS) softmax_three_pass<T><<<grid, threads, 0, stream>>>(p);
  else softmax_online<T><<<grid, threads, 0, stream>>>(p);
  return launch_status();
}

// Test hook: true makes AUTO behave as on a device without clusters (the 1024-thread kernels and
// the streaming fallback run instead), so that one device tests both. Not for production use.
inline std::atomic<bool> &softmax_clusters_disabled() {
  static std::atomic<bool> v(false);
  return v;
}

// AUTO picks the smallest on-chip configuration that holds the row. E elements per thread: 32 in
// the forward, 16 per array in the backward (it holds dy and y), 8 for short rows.
template <class T> gpuops_status softmax_launch_typed(const gpuops__softmax_args &args) {
  constexpr int V = 16 / sizeof(T);
  static std::atomic<int> fwd_known[9], bwd_known[9];
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
  const cudaStream_t stream = args.stream;
  const int64_t cols = args.cols;
  const bool bwd = args.op == GPUOPS__SM_BWD;
  if (args.algo != GPUOPS_ALGO_AUTO) return softmax_stream(p, args.algo, bwd, stream);
  if (!bwd) {
    if (cols <= 32 * 8) return softmax_launch_on_chip(softmax_fwd_on_chip<T, 32, 8>, 256, 8, p, stream);
    if (cols <= 32 * 32) return softmax_launch_on_chip(softmax_fwd_on_chip<T, 32, 32>, 256, 8, p, stream);
    if (cols <= 256 * 16) return softmax_launch_on_chip(softmax_fwd_on_chip<T, 256, 16>, 256, 1, p, stream);
    if (cols <= 256 * 32) return softmax_launch_on_chip(softmax_fwd_on_chip<T, 256, 32>, 256, 1, p, stream);
    const int64_t C = (cols + 256 * 32 - 1) / (256 * 32);
    const int resident = C <= 8 && !softmax_clusters_disabled() ? softmax_clusters(softmax_fwd_on_chip<T, 256, 32>, 256, (int)C, fwd_known) : 0;
    if (resident > 0) {
      p.cluster = (int)C;
      return softmax_launch_on_chip(softmax_fwd_on_chip<T, 256, 32>, 256, 1, p, stream, resident);
    }
    if (cols <= 1024 * 32) return softmax_launch_on_chip(softmax_fwd_on_chip<T, 1024, 32>, 1024, 1, p, stream);
    return softmax_stream(p, GPUOPS_ALGO_ONLINE, false, stream);
  }
  if (cols <= 32 * 8) return softmax_launch_on_chip(softmax_bwd_on_chip<T, 32, 8>, 256, 8, p, stream);
  if (cols <= 32 * 16) return softmax_launch_on_chip(softmax_bwd_on_chip<T, 32, 16>, 256, 8, p, stream);
  if (cols <= 256 * 8) return softmax_launch_on_chip(softmax_bwd_on_chip<T, 256, 8>, 256, 1, p, stream);
  if (cols <= 256 * 16) return softmax_launch_on_chip(softmax_bwd_on_chip<T, 256, 16>, 256, 1, p, stream);
  const int64_t C = (cols + 256 * 16 - 1) / (256 * 16);
  const int resident = C <= 8 && !softmax_clusters_disabled() ? softmax_clusters(softmax_bwd_on_chip<T, 256, 16>, 256, (int)C, bwd_known) : 0;
  if (resident > 0) {
    p.cluster = (int)C;
    return softmax_launch_on_chip(softmax_bwd_on_chip<T, 256, 16>, 256, 1, p, stream, resident);
  }
  if (cols <= 1024 * 16) return softmax_launch_on_chip(softmax_bwd_on_chip<T, 1024, 16>, 1024, 1, p, stream);
  return softmax_stream(p, GPUOPS_ALGO_ONLINE, true, stream);
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__softmax_launch(const gpuops__softmax_args *p) {
  switch (p->dt) {
  case GPUOPS__F32: return gpuops::softmax_launch_typed<float>(*p);
  case GPUOPS__F16: return gpuops::softmax_launch_typed<__half>(*p);
  case GPUOPS__BF16: return gpuops::softmax_launch_typed<__nv_bfloat16>(*p);
  default: break;
  }
  return GPUOPS_ERR_INVALID_ARGUMENT;
}
#endif  // GPUOPS_IMPLEMENTATION
#endif  // GPUOPS_NO_SOFTMAX



// ==== 6. Transpose and matrix multiply =======================================================
#ifndef GPUOPS_NO_MATMUL
// (issue 4, transpose: device code and launchers go here)



// (issue 4, matmul: device code and launchers go here)
#endif  // GPUOPS_NO_MATMUL



#endif  // GPUOPS_CUDA_CUH
