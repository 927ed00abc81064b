// SPDX-License-Identifier: MIT
// tools/tune_engine.cu - the elementwise engine's launch shape (gpuops_cuda.cuh 2.3), measured
// against the copy in one run: the library's AUTO, then map_tiles (below) in several shapes: one
// block per tile of B x U vectors, thread t taking vectors t, t + B, ... ("flat", no loop), or a
// persistent grid of full_grid blocks looping over the same tiles ("persist", the library's shape
// until this tool); for per-channel ops also "sbind": the channel bound once per tile by thread 0
// and shared through shared memory instead of once per thread.
// Every variant's output is compared on the device with the library's AUTO output before it is
// timed (bench::timer: median of 25 after 3 warm-ups, L2 flushed). n = 2^28, pointers 256-byte
// aligned; per-channel: weights [4096, n / 4096], as the bench.
// Measured on an NVIDIA H100 80GB HBM3 on 2026-11-22 (build/tune_engine, x copy, f32 / f16 / bf16;
// recorded in docs/performance.md): persistent B 256 U 2 ->
// flat B 256 U 2: add 0.961 -> 1.014 / 0.967 -> 1.011 / 0.962 -> 1.023; relu 0.945 -> 1.002 /
// 0.947 -> 0.997 / 0.948 -> 0.995; GELU-erf 0.937 -> 1.001 / 0.932 -> 0.996 / 0.932 -> 0.995;
// quantize 0.967 -> 1.019 / 0.924 -> 1.000 / 0.919 -> 0.992; dequantize (4 or 8 int8 per load,
// no shared memory) 0.896 -> 0.966 / 0.917 -> 0.970 / 0.916 -> 0.969, above the library's
// map_widen then (0.916 / 0.926 / 0.926). Per channel, 16-bit: flat U 2 0.88 (quantize) and 0.93
// (dequantize), U 4 0.95 and 0.97; sbind never better (a barrier per tile). Quantize with one NaN
// test per element in place of four range tests (now the library's quantize_f32): 16-bit per
// channel at U 4 0.948 -> 0.967, per tensor unchanged.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_engine.cu -o build/tune_engine
#define GPUOPS_ONLY_ELEMENTWISE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <cstdio>
#include <cstring>
#include <vector>

using namespace gpuops;

static bench::timer *g_t;
static double g_copy_gbps;
static const int64_t kN = (int64_t)1 << 28, kChannels = 4096;
template <class F, bool kPerChannel> struct bound_of {
  using type = F;
};
template <class F> struct bound_of<F, true> {
  using type = decltype(std::declval<F>().bind(0));
};

// The tiled engine. Tile b = vectors [b B U, (b + 1) B U); thread t of its block takes b B U + u B + t,
// u < U (each u one coalesced row of the block). kSharedBind: a per-channel op binds its channel once
// per tile in thread 0 when the tile lies in one channel run. A grid smaller than the tile count
// loops (persistent, tile order).
template <int V, int U, int B, bool kSharedBind, class P> __global__ void __launch_bounds__(B) map_tiles(P p, int64_t nvec) {
  constexpr bool kRun = decltype(p.f)::per_channel;
  using Bound = typename bound_of<typename std::decay<decltype(p.f)>::type, kRun>::type;
  __shared__ Bound s_f;
  __shared__ int s_one;
  for (int64_t tile = blockIdx.x; tile * (B * U) < nvec; tile += gridDim.x) {
    const int64_t v0 = tile * (B * U) + threadIdx.x;
    float a[U][V], b[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * B < nvec) {
        load_f32<V>(p.a, (v0 + u * B) * V, a[u]);
        load_f32<V>(p.b, (v0 + u * B) * V, b[u]);
      }
    if constexpr (kRun && kSharedBind) {
      if (threadIdx.x == 0) {
        const channel_pos pos = channel_at(tile * (B * U) * V, p.channels, p.inner);
        s_one = pos.r + (int64_t)B * U * V <= (int64_t)p.inner.d && (tile + 1) * (B * U) <= nvec;
        if (s_one) s_f = p.f.bind(pos.c);
      }
      __syncthreads();
      if (s_one) {
        const Bound f = s_f;
#pragma unroll
        for (int u = 0; u < U; ++u) apply_store<V>(p, (v0 + u * B) * V, f, a[u], b[u]);
      } else {
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (v0 + u * B < nvec) map_store<V>(p, (v0 + u * B) * V, a[u], b[u]);
      }
      __syncthreads();  // s_f is read before the next tile's thread 0 writes it
    } else if constexpr (kRun) {
      if (v0 + (U - 1) * B < nvec) {
        const channel_pos pos = channel_at(v0 * V, p.channels, p.inner);
        if (pos.r + ((U - 1) * B + 1) * V <= (int64_t)p.inner.d) {
          const auto f = p.f.bind(pos.c);
#pragma unroll
          for (int u = 0; u < U; ++u) apply_store<V>(p, (v0 + u * B) * V, f, a[u], b[u]);
          continue;
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (v0 + u * B < nvec) map_store<V>(p, (v0 + u * B) * V, a[u], b[u]);
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (v0 + u * B < nvec) apply_store<V>(p, (v0 + u * B) * V, p.f, a[u], b[u]);
    }
  }
}

static void report(const char *op, const char *tn, const char *shape, int regs, unsigned grid, double ms, size_t bytes,
                                      unsigned long long diff) {
  const double gbs = (double)bytes / ms / 1e6;
  printf("  %-22s %-5s %-26s regs %3d grid %8u %8.4f ms %7.0f GB/s %6.3fx copy %s\n", op, tn, shape, regs, grid, ms, gbs, gbs / g_copy_gbps,
         diff == 0 ? "=AUTO" : (diff == ~0ull ? "ERROR" : "DIFFERS"));
}

// One map_tiles shape: flat (one block per tile) when persistent is false.
template <int V, int U, int B, bool kSB, class F, class TY, class TA, class TB>
void try_tiles(const char *op, const char *tn, F f, TY *y, const TA *a, const TB *b, const void *ref, bool persistent) {
  using P = map_params<F, TY, TA, TB>;
  const P p = {y, a, b, kN, f, divisor((uint64_t)kChannels), divisor((uint64_t)(kN / kChannels))};
  const int64_t nvec = kN / V, tiles = (nvec + B * U - 1) / (B * U);
  int per_sm = 0, dev = 0, sms = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, map_tiles<V, U, B, kSB, P>, B, 0);
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const unsigned grid = (unsigned)(persistent ? std::min<int64_t>(tiles, (int64_t)per_sm * sms) : tiles);
  const size_t ybytes = (size_t)kN * sizeof(TY);
  cudaMemset(y, 0x7f, ybytes);
  map_tiles<V, U, B, kSB, P><<<grid, B>>>(p, nvec);
  const unsigned long long diff = cudaDeviceSynchronize() == cudaSuccess ? bench::differing_bytes(y, ref, ybytes) : ~0ull;
  cudaFuncAttributes fa;
  cudaFuncGetAttributes(&fa, map_tiles<V, U, B, kSB, P>);
  const double ms = g_t->median_ms([&] { map_tiles<V, U, B, kSB, P><<<grid, B>>>(p, nvec); });
  char shape[64];
  snprintf(shape, sizeof shape, "%s B %d U %d%s", persistent ? "tiles-persist" : "tiles-flat", B, U, kSB ? " sbind" : "");
  report(op, tn, shape, fa.numRegs, grid, ms, (size_t)kN * (sizeof(TY) + sizeof(TA) + (std::is_same<TB, none>::value ? 0 : sizeof(TB))),
            diff);
}

// The shapes every op is timed in.
template <int V, class F, class TY, class TA, class TB>
void shapes(const char *op, const char *tn, F f, TY *y, const TA *a, const TB *b, const void *ref) {
  try_tiles<V, 1, 128, false>(op, tn, f, y, a, b, ref, false);
  try_tiles<V, 2, 128, false>(op, tn, f, y, a, b, ref, false);
  try_tiles<V, 1, 256, false>(op, tn, f, y, a, b, ref, false);
  try_tiles<V, 2, 256, false>(op, tn, f, y, a, b, ref, false);
  try_tiles<V, 4, 256, false>(op, tn, f, y, a, b, ref, false);
  try_tiles<V, 2, 512, false>(op, tn, f, y, a, b, ref, false);
  try_tiles<V, 2, 256, false>(op, tn, f, y, a, b, ref, true);
  if constexpr (F::per_channel) {
    try_tiles<V, 1, 256, true>(op, tn, f, y, a, b, ref, false);
    try_tiles<V, 2, 256, true>(op, tn, f, y, a, b, ref, false);
    try_tiles<V, 2, 128, true>(op, tn, f, y, a, b, ref, false);
    try_tiles<V, 4, 256, true>(op, tn, f, y, a, b, ref, false);
  }
}

template <class T> void fill(T *d, int64_t n, uint64_t seed, float lo, float hi) {
  std::vector<T> h(n);
  uint64_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const float f = lo + ((float)(s >> 40) / 16777216.0f) * (hi - lo);
    if constexpr (sizeof(T) == 1) h[i] = (T)(int8_t)(s >> 7);
    else if constexpr (sizeof(T) == 4) h[i] = f;
    else if constexpr (std::is_same<T, __half>::value) h[i] = __float2half(f);
    else h[i] = __float2bfloat16(f);
  }
  cudaMemcpy(d, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
}

// quant_only: the quantizers alone, with inputs in [-range, range] and per-tensor scale `scale`
// (the bench's data: 3 and 0.02; the default: 6 and 0.05).
template <class T> void run_type(const char *tn, gpuops__dtype dt, bool quant_only = false, float range = 6.0f, float qscale = 0.05f) {
  T *x, *z, *y, *ref;
  int8_t *q;
  float *scale;
  int32_t *zp;
  cudaMalloc(&x, kN * sizeof(T)), cudaMalloc(&z, kN * sizeof(T)), cudaMalloc(&y, kN * sizeof(T)), cudaMalloc(&ref, kN * sizeof(T));
  cudaMalloc(&q, kN), cudaMalloc(&scale, kChannels * 4), cudaMalloc(&zp, kChannels * 4);
  std::vector<float> hs(kChannels);
  std::vector<int32_t> hz(kChannels);
  for (int c = 0; c < kChannels; ++c) hs[c] = 0.01f + 0.001f * (c % 97), hz[c] = c % 7 - 3;
  cudaMemcpy(scale, hs.data(), kChannels * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(zp, hz.data(), kChannels * 4, cudaMemcpyHostToDevice);
  fill(x, kN, 0x9e3779b97f4a7c15ull, -range, range);
  fill(z, kN, 0x123456789abcdefull, -3.0f, 3.0f);
  fill(q, kN, 0x5555aaaa3333ccccull, 0, 0);
  constexpr int V = 16 / sizeof(T);
  constexpr bool kFast = sizeof(T) == 2;
  auto lib = [&](int op, bool pc, void *out, const void *in, const void *in2) {
    gpuops__ew_args a = {};
    a.op = (gpuops__ew_op)op, a.dt = dt, a.y = out, a.a = in, a.b = in2, a.n = kN, a.algo = GPUOPS_ALGO_AUTO, a.s = qscale, a.zero_point = 3;
    a.per_channel = pc, a.scale_c = scale, a.zero_point_c = zp, a.channels = pc ? kChannels : 1, a.inner = pc ? kN / kChannels : 1;
    return gpuops__ew_launch(&a);
  };
  auto time_lib = [&](const char *op, int o, bool pc, void *out, const void *in, const void *in2, size_t bytes) {
    lib(o, pc, ref, in, in2);  // the reference every variant of this op is compared with
    const double ms = g_t->median_ms([&] { lib(o, pc, out, in, in2); });
    report(op, tn, "library AUTO", 0, 0, ms, bytes, 0);
  };
  const size_t s = sizeof(T);
  const none *nb = nullptr;
  int8_t *qy = reinterpret_cast<int8_t *>(y);
  const tensor_qparams tq = {qscale, 3.0f, quantize_reciprocal(qscale)};
  const channel_qparams cq = {scale, zp};

  if (quant_only) {
    printf("quantize, inputs in [-%g, %g], scale %g:\n", range, range, qscale);
    time_lib("quantize", GPUOPS__EW_QUANTIZE, false, qy, x, nullptr, kN * (s + 1));
    try_tiles<V, 2, 256, false>("quantize", tn, quantize_op<tensor_qparams>{tq}, qy, (const T *)x, nb, ref, false);
    try_tiles<V, 4, 256, false>("quantize", tn, quantize_op<tensor_qparams>{tq}, qy, (const T *)x, nb, ref, false);
    try_tiles<V, 2, 128, false>("quantize", tn, quantize_op<tensor_qparams>{tq}, qy, (const T *)x, nb, ref, false);
    time_lib("quantize_per_channel", GPUOPS__EW_QUANTIZE, true, qy, x, nullptr, kN * (s + 1));
    cudaFree(x), cudaFree(z), cudaFree(y), cudaFree(ref), cudaFree(q), cudaFree(scale), cudaFree(zp);
    return;
  }
  time_lib("add", GPUOPS__EW_ADD, false, y, x, z, kN * 3 * s);
  shapes<V>("add", tn, add_op<T>{}, y, (const T *)x, (const T *)z, ref);
  time_lib("relu_fwd", GPUOPS__EW_RELU_FWD, false, y, x, nullptr, kN * 2 * s);
  shapes<V>("relu_fwd", tn, relu_fwd_op<T>{}, y, (const T *)x, nb, ref);
  time_lib("gelu_erf_fwd", GPUOPS__EW_GELU_FWD, false, y, x, nullptr, kN * 2 * s);
  shapes<V>("gelu_erf_fwd", tn, gelu_fwd_op<T, false>{}, y, (const T *)x, nb, ref);
  time_lib("quantize", GPUOPS__EW_QUANTIZE, false, qy, x, nullptr, kN * (s + 1));
  shapes<V>("quantize", tn, quantize_op<tensor_qparams>{tq}, qy, (const T *)x, nb, ref);
  time_lib("quantize_per_channel", GPUOPS__EW_QUANTIZE, true, qy, x, nullptr, kN * (s + 1));
  shapes<V>("quantize_per_channel", tn, quantize_op<channel_qparams>{cq}, qy, (const T *)x, nb, ref);
  time_lib("dequantize", GPUOPS__EW_DEQUANTIZE, false, y, q, nullptr, kN * (s + 1));
  shapes<V>("dequantize", tn, dequantize_op<tensor_qparams>{tq}, y, (const int8_t *)q, nb, ref);
  time_lib("dequantize_per_channel", GPUOPS__EW_DEQUANTIZE, true, y, q, nullptr, kN * (s + 1));
  shapes<V>("dequantize_per_channel", tn, dequantize_op<channel_qparams>{cq}, y, (const int8_t *)q, nb, ref);
  cudaFree(x), cudaFree(z), cudaFree(y), cudaFree(ref), cudaFree(q), cudaFree(scale), cudaFree(zp);
}

int main(int argc, char **argv) {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  bench::timer t;
  g_t = &t;
  g_copy_gbps = bench::copy_ceiling(t);
  printf("device: %s; n = 2^28; GB/s counts bytes read + written\n", p.name);
  t.settle();
  const char *only = argc > 1 ? argv[1] : "all";
  if (!strcmp(only, "all") || !strcmp(only, "f32")) run_type<float>("f32", GPUOPS__F32);
  if (!strcmp(only, "all") || !strcmp(only, "f16")) run_type<__half>("f16", GPUOPS__F16);
  if (!strcmp(only, "all") || !strcmp(only, "bf16")) run_type<__nv_bfloat16>("bf16", GPUOPS__BF16);
  if (!strcmp(only, "quant")) {  // the bench's data (on the H100 the speed did not depend on it)
    run_type<__half>("f16", GPUOPS__F16, true, 3.0f, 0.02f);
    run_type<__nv_bfloat16>("bf16", GPUOPS__BF16, true, 3.0f, 0.02f);
    run_type<float>("f32", GPUOPS__F32, true, 3.0f, 0.02f);
  }
  printf("copy again: ");
  bench::copy_ceiling(t);
  return 0;
}
