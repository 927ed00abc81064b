// SPDX-License-Identifier: MIT
// tools/tune_conv_plane.cu - conv2d_plane's REGISTER_2D kernel (gpuops_cuda.cuh 11.2) in its four
// forms on an 8192 x 8192 f32 plane: any height (FH = 0, taps from shared memory) or square (FH =
// FW, unrolled, taps from the constant buffer), each with 4-byte copies (xvec false) and with
// 16-byte copies (xvec true; widths where the kernel's kCopy16 is false copy 4 bytes either way).
// Every result is compared bit for bit with the first form's (the same sums in the same order),
// then timed: best of 3 runs of 20 launches (cudaEvent), GB/s counting 8 bytes an output against
// a 1 GiB device-to-device copy timed the same way.
//   usage: tune_conv_plane
//   build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -Itests tools/tune_conv_plane.cu
//          -o build/tune_conv_plane
#define GPUOPS_ONLY_CONV
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"
#include <stdio.h>
#include <vector>
using namespace gpuops;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)
template <int FW> int run(float *y, float *y2, const float *x, const float *f, int64_t side, double copy) {
  const conv_reg_grid g = conv_reg_grid_of(true, y, x, side, side);  // its alignments set per form below
  const int64_t tiles_w = g.tiles_w, blocks = g.blocks;
  CK(cudaMemcpyToSymbol(conv_filter_const, f, FW * FW * 4, 0, cudaMemcpyDeviceToDevice));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  auto launch = [&](int v, float *out) {
    switch (v) {
    case 0: conv2d_plane_register<FW, 0><<<(unsigned)blocks, kBlock>>>(out, x, f, side, side, FW, tiles_w, true, false); break;
    case 1: conv2d_plane_register<FW, 0><<<(unsigned)blocks, kBlock>>>(out, x, f, side, side, FW, tiles_w, true, true); break;
    case 2: conv2d_plane_register<FW, FW><<<(unsigned)blocks, kBlock>>>(out, x, f, side, side, FW, tiles_w, true, false); break;
    default: conv2d_plane_register<FW, FW><<<(unsigned)blocks, kBlock>>>(out, x, f, side, side, FW, tiles_w, true, true); break;
    }
  };
  const char *names[4] = {"any height, 4-byte copies", "any height, 16-byte copies", "square, 4-byte copies", "square, 16-byte copies"};
  const size_t n = (size_t)side * side;
  std::vector<float> a(n), b(n);
  launch(0, y);
  CK(cudaMemcpy(a.data(), y, n * 4, cudaMemcpyDeviceToHost));
  for (int v = 0; v < 4; ++v) {
    CK(cudaMemset(y2, 0xff, n * 4));
    launch(v, y2);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(b.data(), y2, n * 4, cudaMemcpyDeviceToHost));
    size_t diff = 0;
    for (size_t i = 0; i < n; ++i) diff += memcmp(&a[i], &b[i], 4) != 0;
    float best = 1e30f;
    for (int rep = 0; rep < 3; ++rep) {
      cudaEventRecord(e0);
      for (int it = 0; it < 20; ++it) launch(v, y2);
      cudaEventRecord(e1);
      CK(cudaEventSynchronize(e1));
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      best = ms / 20 < best ? ms / 20 : best;
    }
    const double gbps = 8.0 * n / (best * 1e6);
    printf("%dx%d f%dx%d  %-28s %8.2f us  %7.1f GB/s  %.3f x copy  %6.1f TFLOP/s  bits differing from the first: %zu\n", (int)side, (int)side, FW, FW, names[v], best * 1e3, gbps,
           gbps / copy, 2.0 * FW * FW * n / (best * 1e9), diff);
  }
  return 0;
}
int main() {
  const int64_t side = 8192, n = side * side;
  float *x, *y, *y2, *f, *big;
  CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&y2, n * 4)); CK(cudaMalloc(&f, 256 * 4));
  std::vector<float> hx(n), hf(256);
  for (int64_t i = 0; i < n; ++i) hx[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  for (int i = 0; i < 256; ++i) hf[i] = (float)((i * 40503u) % 1000) / 500.0f - 1.0f;
  CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(f, hf.data(), 256 * 4, cudaMemcpyHostToDevice));
  const size_t cb = (size_t)1 << 30;
  CK(cudaMalloc(&big, 2 * cb));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0);
    cudaMemcpy(big + cb / 4, big, cb, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    best = ms < best ? ms : best;
  }
  const double copy = 2.0 * cb / (best * 1e6);
  printf("copy ceiling %.0f GB/s\n", copy);
  if (run<3>(y, y2, x, f, side, copy) || run<7>(y, y2, x, f, side, copy) || run<15>(y, y2, x, f, side, copy) || run<5>(y, y2, x, f, side, copy)) return 1;
  return 0;
}
