// SPDX-License-Identifier: MIT
// tools/tune_elementwise.cu - map_vectorized<V, U> shapes (gpuops_cuda.cuh 2.2) for the int8 ops the
// bench reports short of 0.92x copy, side by side with a device-to-device copy in one run. V: elements
// per thread access (16 bytes of the wider type, the library's); U: vectors in flight per thread.
// Plus dequant_wide, the experiment behind the library's map_widen (16-byte int8 loads, parked in
// shared memory, stored in coalesced rounds), and "library AUTO" lines timing the library itself.
// n = 2^28, every pointer 256-byte aligned; each variant's output is compared bit for bit with
// the library's AUTO output before it is timed (bench::timer: median of 25 after 3 warm-ups, L2
// flushed). Per-channel: weights [4096, n / 4096], as the bench.
// Measured on H100s (notes/gpu_run6): per-channel U = 2 beats U = 4 in all six (now the library's);
// dequant_wide 0.909-0.914x copy f32 (map_vectorized 0.886-0.889), 0.921-0.927x f16 / bf16
// (0.912-0.917): now map_widen, except per-channel f32 (0.912 against 0.919 for map_vectorized at
// U = 2). V = 16 from the narrow type without the
// shared-memory step (each thread's stores 64 bytes apart): 0.41-0.73x; streaming stores (.cs,
// below) +0.8% for f32 dequantize, nothing for 16-bit; int8 loads with .L2::256B: -0.3% (f32), and
// with .L1::no_allocate and .cs stores: -3%. GELU-erf 16-bit with a degree-5 fit (gelu5_op) against
// the library's degree 7: 0.937 / 0.939x against 0.931 / 0.929x (f16 / bf16), at 3x the error (2.7e-5
// relative): not taken.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_elementwise.cu -o build/tune_elementwise
//   (-DGPUOPS__ST16='"st.global.cs.v4.u32"' times the same with streaming stores)
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

template <int V, int U, class F, class TY, class TA> void try_shape(const char *op, const char *tn, F f, TY *y, const TA *a, const void *ref) {
  using P = map_params<F, TY, TA, none>;
  const P p = {y, a, nullptr, kN, f, divisor((uint64_t)kChannels), divisor((uint64_t)(kN / kChannels))};
  const int64_t work = kN / V / U + 1, blocks = (work + kBlock - 1) / kBlock, full = full_grid<map_vectorized<V, U, P>>();
  const unsigned grid = (unsigned)(blocks < full ? blocks : full);
  const size_t ybytes = (size_t)kN * sizeof(TY);
  cudaMemset(y, 0x7f, ybytes);
  map_vectorized<V, U, P><<<grid, kBlock>>>(p, 0);
  cudaError_t e = cudaDeviceSynchronize();
  std::vector<unsigned char> got(ybytes), want(ybytes);
  cudaMemcpy(got.data(), y, ybytes, cudaMemcpyDeviceToHost);
  cudaMemcpy(want.data(), ref, ybytes, cudaMemcpyDeviceToHost);
  const bool same = e == cudaSuccess && memcmp(got.data(), want.data(), ybytes) == 0;
  int64_t ndiff = 0;  // elements that differ, for variants that compute differently
  for (size_t b = 0; b < ybytes; b += sizeof(TY)) ndiff += memcmp(&got[b], &want[b], sizeof(TY)) != 0;
  cudaFuncAttributes fa;
  cudaFuncGetAttributes(&fa, map_vectorized<V, U, P>);
  const double ms = g_t->median_ms([&] { map_vectorized<V, U, P><<<grid, kBlock>>>(p, 0); });
  const double gbs = (double)kN * (sizeof(TY) + sizeof(TA)) / ms / 1e6;
  printf("  %-24s %-5s V %2d U %d regs %3d grid %6u %8.4f ms %7.0f GB/s %6.3fx copy %s %lld\n", op, tn, V, U, fa.numRegs, grid, ms, gbs,
         gbs / g_copy_gbps, same ? "=AUTO" : "DIFFERS", (long long)ndiff);
}

// Experiment: dequantize with 16-byte int8 loads. A warp loads U chunks of 512 int8 (16 per lane,
// one LDG.128), parks them in shared memory, and stores each chunk in 16 / VS coalesced rounds of
// one 16-byte vector per lane (VS = 16 / sizeof(TY) elements), so loads and stores are both
// 512 contiguous bytes per warp instruction. Per tensor, n a multiple of 512 U, pointers aligned.
template <class TY, int U> __global__ void __launch_bounds__(kBlock) dequant_wide(TY *y, const int8_t *q, int64_t n, tensor_qparams qp) {
  constexpr int VS = 16 / sizeof(TY), R = 16 / VS;
  __shared__ uint4 s[kBlock / 32][U][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t gw = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5, nw = ((int64_t)gridDim.x * blockDim.x) >> 5;
  const int64_t chunks = n / 512;
  for (int64_t c0 = gw * U; c0 < chunks; c0 += nw * U) {
    uint4 w[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (c0 + u < chunks) w[u] = *reinterpret_cast<const uint4 *>(q + (c0 + u) * 512 + lane * 16);
#pragma unroll
    for (int u = 0; u < U; ++u) s[warp][u][lane] = w[u];
    __syncwarp();
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c0 + u >= chunks) break;
      const int8_t *sb = reinterpret_cast<const int8_t *>(&s[warp][u][0]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int e = (r * 32 + lane) * VS;  // element of the chunk
        float v[VS];
        load_f32<VS>(sb, e, v);  // from shared memory: VS int8, 4 per word
#pragma unroll
        for (int k = 0; k < VS; ++k) v[k] = dequantize_f32(v[k], qp.scale, qp.zero_point);
        store_f32<VS>(y, (c0 + u) * 512 + e, v);
      }
    }
    __syncwarp();
  }
}
template <class TY, int U> void try_wide(const char *tn, TY *y, const int8_t *q, const void *ref, tensor_qparams tq) {
  const unsigned grid = (unsigned)full_grid<dequant_wide<TY, U>>();
  const size_t ybytes = (size_t)kN * sizeof(TY);
  cudaMemset(y, 0x7f, ybytes);
  dequant_wide<TY, U><<<grid, kBlock>>>(y, q, kN, tq);
  cudaError_t e = cudaDeviceSynchronize();
  std::vector<unsigned char> got(ybytes), want(ybytes);
  cudaMemcpy(got.data(), y, ybytes, cudaMemcpyDeviceToHost);
  cudaMemcpy(want.data(), ref, ybytes, cudaMemcpyDeviceToHost);
  const bool same = e == cudaSuccess && memcmp(got.data(), want.data(), ybytes) == 0;
  const double ms = g_t->median_ms([&] { dequant_wide<TY, U><<<grid, kBlock>>>(y, q, kN, tq); });
  const double gbs = (double)kN * (sizeof(TY) + 1) / ms / 1e6;
  printf("  %-24s %-5s wide U %d grid %6u %8.4f ms %7.0f GB/s %6.3fx copy %s\n", "dequantize", tn, U, grid, ms, gbs, gbs / g_copy_gbps,
         same ? "=AUTO" : "DIFFERS");
}

// Experiment: the fast normal CDF with a degree-5 polynomial (tools/fit_erfc 5 0.46 1: relative
// error 2.7e-5 against 9.4e-6 for the library's degree 7), two FMAs fewer per element.
struct gelu5_op : elementwise_op {
  __device__ float operator()(float x, float) const {
    constexpr float k = 0.325269133f, C = -0.5f * kLog2e;
    constexpr float c0 = 1.297658682e-01f, c1 = 1.295171529e-01f, c2 = 1.202621013e-01f, c3 = 6.272526830e-02f,
                    c4 = 1.209008396e-01f, c5 = -6.317605823e-02f;
    const float u = rcp_approx(fmaf(k, fabsf(x), 1.0f));
    float r = fmaf(c5, u, c4);
    r = fmaf(r, u, c3), r = fmaf(r, u, c2), r = fmaf(r, u, c1), r = fmaf(r, u, c0);
    const float h = (u * r) * exp2_approx(C * (x * x));
    return x * (x < 0.0f ? h : 1.0f - h);
  }
};

template <class T> void run_type(const char *tn, gpuops__dtype dt) {
  T *x, *y, *ref;
  int8_t *q;
  float *scale;
  int32_t *zp;
  cudaMalloc(&x, kN * sizeof(T)), cudaMalloc(&y, kN * sizeof(T)), cudaMalloc(&ref, kN * sizeof(T)), cudaMalloc(&q, kN);
  cudaMalloc(&scale, kChannels * 4), cudaMalloc(&zp, kChannels * 4);
  std::vector<float> hs(kChannels);
  std::vector<int32_t> hz(kChannels);
  for (int c = 0; c < kChannels; ++c) hs[c] = 0.01f + 0.001f * (c % 97), hz[c] = c % 7 - 3;
  cudaMemcpy(scale, hs.data(), kChannels * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(zp, hz.data(), kChannels * 4, cudaMemcpyHostToDevice);
  std::vector<T> hx(kN);
  std::vector<int8_t> hq(kN);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int64_t i = 0; i < kN; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const float f = ((float)(s >> 40) / 16777216.0f) * 12.0f - 6.0f;
    if constexpr (sizeof(T) == 4) hx[i] = f;
    else if constexpr (std::is_same<T, __half>::value) hx[i] = __float2half(f);
    else hx[i] = __float2bfloat16(f);
    hq[i] = (int8_t)(s >> 7);
  }
  cudaMemcpy(x, hx.data(), kN * sizeof(T), cudaMemcpyHostToDevice);
  cudaMemcpy(q, hq.data(), kN, cudaMemcpyHostToDevice);
  constexpr int VW = 16 / sizeof(T);  // the library's V for T <-> int8; "wide": 16
  const tensor_qparams tq = {0.05f, 3.0f, reciprocal_or_zero(0.05f)};
  const channel_qparams cq = {scale, zp};
  auto lib = [&](int op, bool pc, void *out, const void *in) {
    gpuops__ew_args a = {};
    a.op = (gpuops__ew_op)op, a.dt = dt, a.y = out, a.a = in, a.n = kN, a.algo = GPUOPS_ALGO_AUTO, a.s = 0.05f, a.zero_point = 3;
    a.per_channel = pc, a.scale_c = scale, a.zero_point_c = zp, a.channels = pc ? kChannels : 1, a.inner = pc ? kN / kChannels : 1;
    return gpuops__ew_launch(&a);
  };
  auto time_lib = [&](const char *op, int o, bool pc, void *out, const void *in, size_t bytes) {
    const double ms = g_t->median_ms([&] { lib(o, pc, out, in); });
    const double gbs = (double)bytes / ms / 1e6;
    printf("  %-24s %-5s library AUTO            %8.4f ms %7.0f GB/s %6.3fx copy\n", op, tn, ms, gbs, gbs / g_copy_gbps);
  };
  time_lib("dequantize", GPUOPS__EW_DEQUANTIZE, false, y, q, (size_t)kN * (sizeof(T) + 1));
  time_lib("dequantize_per_channel", GPUOPS__EW_DEQUANTIZE, true, y, q, (size_t)kN * (sizeof(T) + 1));
  // dequantize, per tensor and per channel (map_vectorized's shapes first)
  lib(GPUOPS__EW_DEQUANTIZE, false, ref, q);
  try_shape<VW, 2>("dequantize", tn, dequantize_op<tensor_qparams>{tq}, y, q, ref);
  try_shape<VW, 1>("dequantize", tn, dequantize_op<tensor_qparams>{tq}, y, q, ref);
  try_wide<T, 1>(tn, y, q, ref, tq);
  try_wide<T, 2>(tn, y, q, ref, tq);
  lib(GPUOPS__EW_DEQUANTIZE, true, ref, q);
  try_shape<VW, 4>("dequantize_per_channel", tn, dequantize_op<channel_qparams>{cq}, y, q, ref);
  try_shape<VW, 2>("dequantize_per_channel", tn, dequantize_op<channel_qparams>{cq}, y, q, ref);
  // quantize per channel (and per tensor, the control)
  int8_t *qy = reinterpret_cast<int8_t *>(y), *qref = reinterpret_cast<int8_t *>(ref);
  lib(GPUOPS__EW_QUANTIZE, false, qref, x);
  try_shape<VW, 2>("quantize", tn, quantize_op<tensor_qparams>{tq}, qy, x, qref);
  lib(GPUOPS__EW_QUANTIZE, true, qref, x);
  try_shape<VW, 4>("quantize_per_channel", tn, quantize_op<channel_qparams>{cq}, qy, x, qref);
  try_shape<VW, 2>("quantize_per_channel", tn, quantize_op<channel_qparams>{cq}, qy, x, qref);
  if constexpr (sizeof(T) == 2) {  // GELU-erf forward: the library's fast CDF (degree 7), then degree 5
    auto lib_gelu = [&] {
      gpuops__ew_args a = {};
      a.op = GPUOPS__EW_GELU_FWD, a.dt = dt, a.y = ref, a.a = x, a.n = kN, a.algo = GPUOPS_ALGO_AUTO, a.channels = 1, a.inner = 1;
      return gpuops__ew_launch(&a);
    };
    lib_gelu();
    try_shape<VW, 2>("gelu_erf_fwd", tn, gelu_fwd_op<false, true>{}, y, x, ref);
    try_shape<VW, 2>("gelu_erf_fwd deg5", tn, gelu5_op{}, y, x, ref);
  }
  cudaFree(x), cudaFree(y), cudaFree(ref), cudaFree(q), cudaFree(scale), cudaFree(zp);
}

int main() {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  bench::timer t;
  g_t = &t;
  g_copy_gbps = bench::copy_ceiling(t);
  printf("device: %s; n = 2^28; GB/s counts bytes read + written; 16-byte stores: %s\n", p.name, GPUOPS__ST16);
  t.settle();
  run_type<float>("f32", GPUOPS__F32);
  run_type<__half>("f16", GPUOPS__F16);
  run_type<__nv_bfloat16>("bf16", GPUOPS__BF16);
  return 0;
}
