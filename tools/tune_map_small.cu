// SPDX-License-Identifier: MIT
// tools/tune_map_small.cu - the elementwise engine's launch shape on maps of 2^14 to 2^22 elements,
// timed as bench/sweep.py times them: calls captured into a CUDA graph, the inputs rotating among
// copies until a replay touches twice the L2 (at most 16), the median of 15 replays divided by the
// calls. In that range a map is a few microseconds and its grid, not DRAM, sets the time: with the
// default tile (U = 2 vectors of 16 bytes x 256 threads) a 2^14-element bf16 map has 4 blocks.
// Each shape map_vectorized<V, U, B> (V elements a vector, U vectors a thread, B threads a block)
// is checked against the default shape's output (same bits) before it is timed. "empty" is an
// empty kernel in the same graph: the floor every shape pays.
// Measured on an NVIDIA H200 on 2026-11-29 (docs/data/map_small_tune_h200.txt; the choices it led
// to: gpuops_cuda.cuh 2.4, docs/performance.md): V / 2, U 1, B 128 fastest or within 7% of the
// fastest in every op up to 2^18 elements but the f32 per-channel ops at 2^18 (6-10% behind one
// full vector a thread); past that the full vector.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_map_small.cu -o build/tune_map_small
//   usage: tune_map_small [log2 n ...]   (default 14 16 18 20 22)
#define GPUOPS_ONLY_ELEMENTWISE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace gpuops;

static const int64_t kChannels = 1024;  // per-channel ops: [n / 1024, 1024], channel = last dim
static size_t g_l2 = 0;

template <class T> __global__ void empty_kernel(T) {}

// Times fn(k) (one launch on copy k of the inputs) as a graph of `calls` launches; us per call.
template <class Fn> double graph_us(Fn fn, int nsets) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int calls = 64;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int j = 0; j < calls; ++j) fn(j % nsets, s);
  CHECK_CUDA(cudaStreamEndCapture(s, &g));
  CHECK_CUDA(cudaGraphInstantiate(&ge, g, 0));
  CHECK_CUDA(cudaGraphLaunch(ge, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < 15; ++r) {
    cudaEventRecord(e0, s);
    cudaGraphLaunch(ge, s);
    cudaEventRecord(e1, s);
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  cudaGraphExecDestroy(ge), cudaGraphDestroy(g), cudaStreamDestroy(s);
  return t[t.size() / 2] * 1e3 / calls;
}

// nsets copies of each array, each copy 256-byte aligned.
template <class TY, class TA, class TB> struct arrays {
  int64_t n, stride;
  int nsets;
  TY *y;
  TA *a;
  TB *b;
  arrays(int64_t n_, size_t bytes_per_el) : n(n_), stride((n_ + 127) / 128 * 128) {
    const size_t foot = (size_t)n * bytes_per_el;
    nsets = (int)std::max<size_t>(1, std::min<size_t>(16, (2 * g_l2 + foot - 1) / foot));
    CHECK_CUDA(cudaMalloc(&y, stride * nsets * sizeof(TY)));
    CHECK_CUDA(cudaMalloc(&a, stride * nsets * sizeof(TA)));
    if constexpr (!std::is_same<TB, none>::value) {
      CHECK_CUDA(cudaMalloc(&b, stride * nsets * sizeof(TB)));
      bench::fill_uniform(b, stride * nsets, 7, -3.0f, 3.0f);
    } else {
      b = nullptr;
    }
    if constexpr (std::is_same<TA, int8_t>::value) bench::fill_uniform(a, stride * nsets, 5, -128.0f, 127.0f);
    else bench::fill_uniform(a, stride * nsets, 5, -3.0f, 3.0f);
  }
  ~arrays() { cudaFree(y), cudaFree(a), cudaFree(b); }
};

// One shape: checked against ref (the default shape's output; empty: this is the default, and its
// output becomes ref), then timed; us a call.
template <int V, int U, int B, class P, class A>
double shape(const char *op, const char *tn, const P &p0, A &arr, std::vector<uint8_t> &ref, double base_us) {
  auto launch = [&](int k, cudaStream_t s) {
    P p = p0;
    p.y = arr.y + k * arr.stride, p.a = arr.a + k * arr.stride;
    if (arr.b) p.b = arr.b + k * arr.stride;
    const int64_t tiles = (p.n / V + U * B - 1) / (U * B);
    map_vectorized<V, U, B, P><<<tile_grid(tiles), B, 0, s>>>(p);
  };
  const size_t yb = (size_t)arr.n * sizeof(*arr.y);
  CHECK_CUDA(cudaMemset(arr.y, 0x7f, yb));
  launch(0, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<uint8_t> out(yb);
  CHECK_CUDA(cudaMemcpy(out.data(), arr.y, yb, cudaMemcpyDeviceToHost));
  const bool same = ref.empty() || out == ref;
  if (ref.empty()) ref = out;
  const double us = graph_us(launch, arr.nsets);
  const int64_t tiles = (arr.n / V + U * B - 1) / (U * B);
  cudaFuncAttributes fa;
  cudaFuncGetAttributes(&fa, map_vectorized<V, U, B, P>);
  printf("  %-22s %-5s n 2^%-2d V %2d U %d B %3d  grid %6lld regs %3d  %7.3f us  %5.2fx default %s\n", op, tn,
         63 - __builtin_clzll((unsigned long long)arr.n), V, U, B, (long long)tiles, fa.numRegs, us, base_us > 0 ? base_us / us : 1.0,
         same ? "" : "DIFFERS");
  return us;
}

// Every shape for one op, the library's default first (its output is the reference).
template <int V, int U0, class F, class TY, class TA, class TB> void op_shapes(const char *op, const char *tn, F f, int64_t n) {
  using P = map_params<F, TY, TA, TB>;
  constexpr bool two = !std::is_same<TB, none>::value;
  arrays<TY, TA, TB> arr(n, sizeof(TY) + sizeof(TA) + (two ? sizeof(TB) : 0));
  const P p0 = {arr.y, arr.a, arr.b, n, f, divisor((uint64_t)kChannels), divisor((uint64_t)1)};
  std::vector<uint8_t> ref;
  const double base = shape<V, U0, kBlock>(op, tn, p0, arr, ref, 0.0);
  shape<V, 1, 256>(op, tn, p0, arr, ref, base);
  shape<V, 2, 128>(op, tn, p0, arr, ref, base);
  shape<V, 1, 128>(op, tn, p0, arr, ref, base);
  shape<V, 1, 64>(op, tn, p0, arr, ref, base);
  shape<V / 2, 1, 128>(op, tn, p0, arr, ref, base);
  shape<V / 2, 1, 64>(op, tn, p0, arr, ref, base);
  shape<V / 2, 2, 128>(op, tn, p0, arr, ref, base);
}

template <class T> void ops(const char *tn, int64_t n) {
  constexpr int V = 16 / sizeof(T);
  op_shapes<V, kMapUnroll, add_op<T>, T, T, T>("add", tn, add_op<T>{}, n);
  op_shapes<V, kMapUnroll, silu_bwd_op<T>, T, T, T>("silu_bwd", tn, silu_bwd_op<T>{}, n);
  op_shapes<V, kMapUnroll, gelu_bwd_op<T, true>, T, T, T>("gelu_tanh_bwd", tn, gelu_bwd_op<T, true>{}, n);
  op_shapes<V, kMapUnroll, sigmoid_fwd_op<T>, T, T, none>("sigmoid", tn, sigmoid_fwd_op<T>{}, n);
  op_shapes<V, kMapUnroll, gelu_fwd_op<T, true>, T, T, none>("gelu_tanh", tn, gelu_fwd_op<T, true>{}, n);
  static float *scale = nullptr;
  static int32_t *zp = nullptr;
  if (!scale) {
    CHECK_CUDA(cudaMalloc(&scale, kChannels * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&zp, kChannels * sizeof(int32_t)));
    bench::fill_uniform(scale, kChannels, 3, 0.01f, 0.05f);
    std::vector<int32_t> h(kChannels);
    for (int64_t c = 0; c < kChannels; ++c) h[c] = (int32_t)(c % 41) - 20;
    CHECK_CUDA(cudaMemcpy(zp, h.data(), kChannels * sizeof(int32_t), cudaMemcpyHostToDevice));
  }
  const channel_qparams qp{scale, zp};
  op_shapes<V, kMapUnrollPerChannel, quantize_op<channel_qparams>, int8_t, T, none>("quantize_per_channel", tn, quantize_op<channel_qparams>{qp}, n);
  op_shapes<V, kMapUnrollPerChannel, dequantize_op<channel_qparams>, T, int8_t, none>("dequantize_per_channel", tn,
                                                                                       dequantize_op<channel_qparams>{qp}, n);
}

int main(int argc, char **argv) {
  std::vector<int> logs;
  for (int i = 1; i < argc; ++i) logs.push_back(atoi(argv[i]));
  if (logs.empty()) logs = {14, 16, 18, 20, 22};
  int dev = 0, l2 = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  g_l2 = (size_t)l2;
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, dev);
  printf("tune_map_small on %s (%d SMs, L2 %d MB)\n", prop.name, sms, l2 >> 20);
  printf("  empty kernel in a graph: %.3f us a call\n", graph_us([](int, cudaStream_t s) { empty_kernel<int><<<1, 32, 0, s>>>(0); }, 1));
  for (int lg : logs) {
    const int64_t n = (int64_t)1 << lg;
    ops<float>("f32", n);
    ops<__nv_bfloat16>("bf16", n);
  }
  return 0;
}
