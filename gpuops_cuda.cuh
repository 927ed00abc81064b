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
// ---- 6.1 Transpose ------------------------------------------------------------------------------
// y = x^T: y[c * ldy + r] = x[r * ldx + c]. A copy, so the kernels move raw bits: the element type U
// is the unsigned integer of the element's size (f16 and bf16 share uint16_t code, f32 uint32_t).
// Roofline: each element read once and written once, no arithmetic: the ceiling is the copy
// bandwidth (read + write bytes). What separates the versions is how whole the memory transactions
// are on both sides and how many bytes each SM keeps in flight.
namespace gpuops {

// The matrices of one transpose.
template <class U> struct transpose_args {
  U *y;
  const U *x;
  int64_t rows, cols, ldx, ldy;  // x is rows x cols (pitch ldx), y is cols x rows (pitch ldy)
};

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

// One 16-byte store to global memory (p 16-byte aligned). Spelled in PTX: written as a uint4
// assignment beside the element-wise edge path that stores the same values, the compiler merges the
// two into four 32-bit stores. No "memory" clobber: the kernels that call it never read what they
// store, so the compiler may move the tile reads of the next chunk above it.
__device__ __forceinline__ void transpose_store16(void *p, uint4 v) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
#else
  *reinterpret_cast<uint4 *>(p) = v;
#endif
}

// VECTORIZED: one 16-byte load and one 16-byte store per kV elements, on a 64 x 64 tile, 256
// threads. Shared layout: chunk ch of tile row r is stored at r * kCpr + (ch ^ ((r / kV) % kSwizzle)).
//   Load side: 8 consecutive lanes store 8 consecutive chunks of one row (two rows for i8), which
//   the XOR keeps in 8 distinct 16-byte bank groups: conflict-free 128-bit stores.
//   Store side: at step k a lane reads element (j * kV + k, c); the warp's lanes differ in c (kWc
//   columns, sharing one chunk position and so differing in bank word or sharing a word) and in j
//   (kJpw chunk rows, whose swizzle j % kSwizzle moves each to its own 16-byte bank group):
//   every read is one wavefront. The gathered kV elements are packed into one 16-byte store.
// Each block walks tiles t = blockIdx.x, + gridDim.x, ... (one resident wave of blocks) and issues
// the next tile's loads right after the current tile reaches shared memory, so a tile's loads are in
// flight while the previous one is written out. Edge tiles are predicated per chunk, and per
// element where a chunk crosses the edge of the matrix (possible only with leading dimensions).
// Needs x, y 16-byte aligned and ldx, ldy multiples of kV. Expected near the copy ceiling
// (0.85-0.9x on an H100 for large matrices: a prediction, not a measurement).
template <class U> __global__ void __launch_bounds__(256) transpose_vectorized(transpose_args<U> p) {
  using S = transpose_vec_shape<U>;
  constexpr int kV = S::kV, kTile = S::kTile, kCpr = S::kCpr, kSwizzle = S::kSwizzle, kJpw = S::kJpw, kJg = S::kJg, kL = S::kL;
  __shared__ uint4 tile[kTile * kCpr];
  const U *tile_e = reinterpret_cast<const U *>(tile);
  const int tid = threadIdx.x;
  const int64_t tiles_c = (p.cols + kTile - 1) / kTile, tiles = tiles_c * ((p.rows + kTile - 1) / kTile);
  const divisor by_tiles_c((uint64_t)tiles_c);
  uint4 buf[kL];
#pragma unroll
  for (int i = 0; i < kL; ++i) buf[i] = make_uint4(0u, 0u, 0u, 0u);

  // The first row and column of tile t (tiles numbered row by row).
  auto origin = [&](int64_t t, int64_t &r0, int64_t &c0) {
    const int64_t tr = (int64_t)by_tiles_c.div((uint64_t)t);
    r0 = tr * kTile;
    c0 = (t - tr * tiles_c) * kTile;
  };
  // The chunks of the tile at (r0, c0) into buf (chunks outside the matrix are left as they are:
  // never stored).
  auto load = [&](int64_t r0, int64_t c0) {
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      const int g = i * S::kThreads + tid;
      const int64_t xr = r0 + g / kCpr, xc = c0 + (int64_t)(g % kCpr) * kV;
      if (xr < p.rows && xc < p.cols) {
        const U *src = p.x + xr * p.ldx + xc;
        if (xc + kV <= p.cols) {
          buf[i] = __ldg(reinterpret_cast<const uint4 *>(src));
        } else {
          U e[kV];
#pragma unroll
          for (int k = 0; k < kV; ++k) {
            e[k] = 0;
            if (xc + k < p.cols) e[k] = src[k];
          }
          buf[i] = transpose_pack<U>(e);
        }
      }
    }
  };

  int64_t t = blockIdx.x, r0 = 0, c0 = 0;
  if (t < tiles) {
    origin(t, r0, c0);
    load(r0, c0);
  }
  for (; t < tiles; t += gridDim.x) {
    __syncthreads();  // every thread has finished reading the previous tile
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      const int g = i * S::kThreads + tid, r = g / kCpr, ch = g % kCpr;
      tile[r * kCpr + (ch ^ ((r / kV) % kSwizzle))] = buf[i];
    }
    __syncthreads();
    int64_t r0_next = 0, c0_next = 0;
    if (t + gridDim.x < tiles) {  // the next tile's loads are in flight while this one is written out
      origin(t + gridDim.x, r0_next, c0_next);
      load(r0_next, c0_next);
    }
    // Store side: output chunk g = i * 256 + tid is tile column c (a row of y), chunk j of it
    // (tile rows j * kV .. j * kV + kV - 1).
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      const int g = i * S::kThreads + tid, m = g / 32, lane = g % 32;
      const int c = (m / kJg) * S::kWc + lane / kJpw, j = (m % kJg) * kJpw + lane % kJpw;
      const int at = ((c / kV) ^ (j % kSwizzle)) * kV + c % kV;  // column c within a swizzled tile row
      U e[kV];
#pragma unroll
      for (int k = 0; k < kV; ++k) e[k] = tile_e[(j * kV + k) * kTile + at];
      const int64_t yr = c0 + c, yc = r0 + (int64_t)j * kV;
      if (yr < p.cols && yc < p.rows) {
        U *dst = p.y + yr * p.ldy + yc;
        if (yc + kV <= p.rows) {
          transpose_store16(dst, transpose_pack<U>(e));
        } else {
#pragma unroll
          for (int k = 0; k < kV; ++k)
            if (yc + k < p.rows) dst[k] = e[k];
        }
      }
    }
    r0 = r0_next, c0 = c0_next;
  }
}

}  // namespace gpuops

#if defined(GPUOPS_IMPLEMENTATION)
namespace gpuops {

// Blocks of the vectorized transpose: one resident wave (SMs x blocks per SM), at most one per tile.
template <class U> inline int64_t transpose_vec_blocks(int64_t tiles) {
  static const int per_sm = [] {
    int b = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, transpose_vectorized<U>, 256, 0) == cudaSuccess && b > 0 ? b : 1;
  }();
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    sms = 1;  // the launch that follows reports the error
  const int64_t full = (int64_t)sms * per_sm;
  return tiles < full ? tiles : full;
}

// Run one transpose (arguments checked) with the asked version; AUTO as gpuops.h says.
template <class U> gpuops_status transpose_typed(const gpuops__tr_args &a) {
  const transpose_args<U> p = {(U *)a.y, (const U *)a.x, a.rows, a.cols, a.ldx, a.ldy};
  const cudaStream_t stream = a.stream;
  gpuops_algo algo = a.algo;
  if (algo == GPUOPS_ALGO_AUTO) {
    if (gpuops__tr_is_copy(&a)) {  // one row or one column with unit pitch: the layouts coincide
      const cudaError_t e = cudaMemcpyAsync(a.y, a.x, (size_t)(a.rows * a.cols) * sizeof(U), cudaMemcpyDeviceToDevice, stream);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        gpuops__last_cuda_error = (int)e;
        return GPUOPS_ERR_CUDA;
      }
      return GPUOPS_OK;
    }
    algo = gpuops__tr_vectorizable(&a) ? GPUOPS_ALGO_VECTORIZED : GPUOPS_ALGO_SHARED_PADDED;
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
    if (!gpuops__tr_vectorizable(&a)) return GPUOPS_ERR_MISALIGNED;
    const int64_t tiles = ((a.rows + 63) / 64) * ((a.cols + 63) / 64);
    transpose_vectorized<U><<<(unsigned)transpose_vec_blocks<U>(tiles), 256, 0, stream>>>(p);
    break;
  }
  default: return GPUOPS_ERR_UNSUPPORTED;
  }
  return launch_status();
}

}  // namespace gpuops

extern "C" gpuops_status gpuops__tr_launch(const gpuops__tr_args *p) {
  switch (gpuops__dtype_size(p->dt)) {
  case 1: return gpuops::transpose_typed<uint8_t>(*p);
  case 2: return gpuops::transpose_typed<uint16_t>(*p);
  case 4: return gpuops::transpose_typed<uint32_t>(*p);
  case 8: return gpuops::transpose_typed<uint64_t>(*p);
  default: break;
  }
  return GPUOPS_ERR_INVALID_ARGUMENT;
}
#endif  // GPUOPS_IMPLEMENTATION



// (issue 4, matmul: device code and launchers go here)
#endif  // GPUOPS_NO_MATMUL



#endif  // GPUOPS_CUDA_CUH
