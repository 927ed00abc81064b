// SPDX-License-Identifier: MIT
// tools/tune_conv.cu - conv2d's WGMMA version (gpuops_cuda.cuh 11.3: gemm_wgmma with
// conv_wgmma_gather) in every tile configuration worth trying, on ResNet-50's 3x3 layers and the
// bench's N 64, C 256, 56x56, K 256 layer (bf16, NHWC, stride 1, 'same' padding, bias + ReLU), at
// batch 32, 64 and 128, for choosing conv_wgmma_use_large's and conv_wgmma_use_rows' rules. Each
// result is first compared with MMA_SYNC's on the same inputs (bf16 tolerance), then timed
// (bench::timer: median of 25, L2 flushed before each run). TFLOP/s counts 2 N P Q K C R S.
// The batch-32 rows and the first layer on an H200: docs/data/tune_conv_h200.txt.
//   usage: tune_conv   (then image models' first layer: MMA_SYNC's gathered form against
//          IMPLICIT_GEMM, each checked against the other)
//   build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -Itests tools/tune_conv.cu
//          -o build/tune_conv
//
// Measured 2026-11-27 on an H100 80GB HBM3 (132 SMs), every result agreeing with MMA_SYNC; "auto"
// was the first dispatch (narrow for K <= 64, else the GEMM's rule between small and large), TFLOP/s:
//   layer                 mma-sync  auto   small  large  narrow  coop   rows   ksplit2
//   N64  56x56x64           85.0   125.9  113.7   88.6  126.6  127.6   93.3   52.5
//   N64  28x28x128         158.6   214.8  215.1  174.2  144.3  230.2  202.5  117.6
//   N64  14x14x256         143.4   187.1  187.7  276.6  154.7  202.2  218.3  164.3
//   N64  7x7x512           120.2   195.5  196.1  175.7  123.1  213.3  177.5  161.2
//   N64  56x56 256->256    210.1   434.3  313.3  432.1  171.5  303.4  245.3  190.1
//   N128 56x56x64           88.9   133.6  121.0   93.8  133.8  133.5   95.7   53.7
//   N128 28x28x128         177.8   243.7  245.4  187.7  151.3  250.2  212.7  123.7
//   N128 14x14x256         183.5   300.9  269.6  302.5  162.9  282.2  231.0  176.6
//   N128 7x7x512           155.6   220.3  221.3  347.0  169.4  230.5  241.7  220.1
// What the numbers say: the large tiles win wherever they fill half the GPU or more (98 tiles of
// 128 x 256 at 14x14x256 N64 and 7x7x512 N128); below that (7x7x512 N64: 50 tiles) and at K = 128
// (half of a 256-wide tile padding), the cooperative 128 x 128 pair; at K = 64 narrow and coop tie.
// The ping-pong small tiles never lead: with at most a few tiles per block, a block holding one
// runs it on one consumer. The K split loses everywhere (its partial sums take the shared memory
// of two stages; 200 blocks on 132 SMs at 7x7x512 N64). That dispatch (narrow, coop, large, the
// last two in pairs) was kept until the same tiles without clusters were measured (data file
// docs/data/tune_conv_h100.txt, part 4):
//   layer                 coop pair  coop c1  large pair  large c1  narrow
//   N64  56x56x64           127.5     132.4      89.1       71.3    127.0
//   N64  28x28x128          231.3     239.0     175.1      181.1    144.6
//   N64  14x14x256          203.7     209.0     278.6      295.3    155.1
//   N64  7x7x512            215.1     224.2     176.9      188.3    124.3
//   N64  56x56 256->256     303.0     306.7     430.3      450.4    171.1
//   N128 56x56x64           133.3     134.9      94.1       69.6    133.8
//   N128 28x28x128          250.8     255.8     187.3      179.1    151.1
//   N128 14x14x256          280.9     288.7     301.3      318.4    162.5
//   N128 7x7x512            230.0     237.3     345.9      372.0    169.4
// so the dispatch is now coop c1, and large c1 where K > 128 and its tiles fill half the GPU
// (conv_wgmma_use_large): 1.01-1.08x the pairs it replaces, and at K = 64 1.01-1.04x narrow.
#define GPUOPS_ONLY_CONV
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <math.h>

#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"

using namespace gpuops;
using T = __nv_bfloat16;  // the kernels' type
using H = gpuops_bf16;    // the buffers' (the C API's)

// The candidates: the GEMM's small ping-pong pair and large pair, a 128 x 64 ping-pong tile, a
// cooperative 128 x 128 pair, 64-row tiles, 128 x 128 with K split over two blocks, and the
// dispatch's two (coop c1, large c1: one block a cluster).
using cfg_small = wgmma_tile<128, 128, 6, 2, wgmma_mode::pingpong>;
using cfg_large = wgmma_tile<128, 256, 4, 2>;
using cfg_narrow = wgmma_tile<128, 64, 8, 1, wgmma_mode::pingpong>;
using cfg_coop = wgmma_tile<128, 128, 6, 2, wgmma_mode::split_m>;
using cfg_rows = wgmma_tile<64, 128, 8, 1, wgmma_mode::split_n>;
using cfg_ksplit = wgmma_tile<128, 128, 4, 1, wgmma_mode::split_m, 2>;
using cfg_rows_k2 = wgmma_tile<64, 128, 8, 1, wgmma_mode::split_n, 2>;
using cfg_coop1 = conv_wgmma_coop;
using cfg_large1 = conv_wgmma_large;

int main() {
  if (!bench::options(0, nullptr, "").have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  bench::print_device(dev, 1);
  bench::timer timer;
  struct layer {
    const char *name;
    int64_t c, hw, k;
  };
  const layer layers[] = {{"56x56x64", 64, 56, 64}, {"28x28x128", 128, 28, 128}, {"14x14x256", 256, 14, 256}, {"7x7x512", 512, 7, 512}, {"56x56 256->256", 256, 56, 256}};
  const char *names[] = {"auto", "small", "large", "narrow", "coop", "rows", "ksplit2", "coop c1", "large c1", "rows k2"};
  printf("%-22s %8s", "layer", "mma");
  for (const char *n : names) printf(" %9s", n);
  printf("   (TFLOP/s; '-' unsupported, '!' differs from mma-sync)\n");
  int failures = 0;
  for (int64_t n : {32, 64, 128})
    for (const layer &l : layers) {
      if (n == 128 && l.hw == 56 && l.c == 256) continue;
      gpuops_conv2d_shape s = {};
      s.n = n, s.c = l.c, s.h = s.w = l.hw, s.k = l.k, s.r = s.s = 3, s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1, s.pad_h = s.pad_w = 1;
      s.layout = GPUOPS_LAYOUT_NHWC;
      const int64_t nx = n * l.c * l.hw * l.hw, nw = l.k * l.c * 9, ny = n * l.hw * l.hw * l.k;
      H *x, *w, *b, *y;
      CHECK_CUDA(cudaMalloc(&x, nx * 2));
      CHECK_CUDA(cudaMalloc(&w, nw * 2));
      CHECK_CUDA(cudaMalloc(&b, l.k * 2));
      CHECK_CUDA(cudaMalloc(&y, ny * 2));
      bench::fill_uniform(x, nx, 2, -1.0f, 1.0f), bench::fill_uniform(w, nw, 3, -0.1f, 0.1f), bench::fill_uniform(b, l.k, 4, -0.5f, 0.5f);
      gpuops__conv_args a = gpuops__conv_make(GPUOPS__CONV_FWD, GPUOPS__BF16, y, x, w, &s);
      a.bias = b, a.act = GPUOPS_ACT_RELU, a.algo = GPUOPS_ALGO_MMA_SYNC;
      const double flops = 2.0 * n * l.hw * l.hw * l.k * l.c * 9;
      CHECK_OK(gpuops__conv_launch(&a));
      CHECK_CUDA(cudaDeviceSynchronize());
      const std::vector<H> ref = check::to_host(y, ny);
      const double t_mma = timer.median_ms([&] { CHECK_OK(gpuops__conv_launch(&a)); });
      printf("N%-3lld %-17s %8.1f", (long long)n, l.name, flops / (t_mma * 1e9));
      auto one = [&](auto run) {
        CHECK_CUDA(cudaMemset(y, 0xff, ny * 2));
        const gpuops_status st = run();
        CHECK_CUDA(cudaDeviceSynchronize());
        if (st != GPUOPS_OK) return printf(" %9s", "-"), void();
        const std::vector<H> got = check::to_host(y, ny);
        const check::result res = check::compare(got.data(), ref.data(), ny, check::tolerance{1e-3 + 2e-6 * 9 * l.c, 1.6e-2});
        if (!res.ok()) return ++failures, printf(" %9s", "!"), void();
        const double ms = timer.median_ms([&] { CHECK_OK(run()); });
        printf(" %9.1f", flops / (ms * 1e9));
      };
      one([&] {
        gpuops__conv_args c = a;
        c.algo = GPUOPS_ALGO_WGMMA;
        return gpuops__conv_launch(&c);
      });
      one([&] { return conv_wgmma_config<T, cfg_small>(&a); });
      one([&] { return conv_wgmma_config<T, cfg_large>(&a); });
      one([&] { return conv_wgmma_config<T, cfg_narrow>(&a); });
      one([&] { return conv_wgmma_config<T, cfg_coop>(&a); });
      one([&] { return conv_wgmma_config<T, cfg_rows>(&a); });
      one([&] { return conv_wgmma_config<T, cfg_ksplit>(&a); });
      one([&] { return conv_wgmma_config<T, cfg_coop1>(&a); });
      one([&] { return conv_wgmma_config<T, cfg_large1>(&a); });
      one([&] { return conv_wgmma_config<T, cfg_rows_k2>(&a); });
      printf("\n");
      fflush(stdout);
      cudaFree(x), cudaFree(w), cudaFree(b), cudaFree(y);
    }
  // Image models' first layer (3 channels, 7 x 7 at stride 2, 224 x 224 -> 112 x 112, 64 filters):
  // MMA_SYNC's gathered form against IMPLICIT_GEMM on CUDA cores, each checked against the other.
  for (int64_t n : {32, 64}) {
    gpuops_conv2d_shape s = {};
    s.n = n, s.c = 3, s.h = s.w = 224, s.k = 64, s.r = s.s = 7, s.stride_h = s.stride_w = 2, s.pad_h = s.pad_w = 3, s.dil_h = s.dil_w = 1;
    s.layout = GPUOPS_LAYOUT_NHWC;
    const int64_t nx = n * 3 * 224 * 224, nw = 64 * 3 * 49, ny = n * 112 * 112 * 64;
    H *x, *w, *b, *y;
    CHECK_CUDA(cudaMalloc(&x, nx * 2));
    CHECK_CUDA(cudaMalloc(&w, nw * 2));
    CHECK_CUDA(cudaMalloc(&b, 64 * 2));
    CHECK_CUDA(cudaMalloc(&y, ny * 2));
    bench::fill_uniform(x, nx, 2, -1.0f, 1.0f), bench::fill_uniform(w, nw, 3, -0.1f, 0.1f), bench::fill_uniform(b, 64, 4, -0.5f, 0.5f);
    gpuops__conv_args a = gpuops__conv_make(GPUOPS__CONV_FWD, GPUOPS__BF16, y, x, w, &s);
    a.bias = b, a.act = GPUOPS_ACT_RELU, a.algo = GPUOPS_ALGO_IMPLICIT_GEMM;
    const double flops = 2.0 * n * 112 * 112 * 64 * 3 * 49;
    CHECK_OK(gpuops__conv_launch(&a));
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<H> ref = check::to_host(y, ny);
    const double t_ig = timer.median_ms([&] { CHECK_OK(gpuops__conv_launch(&a)); });
    a.algo = GPUOPS_ALGO_MMA_SYNC;
    CHECK_CUDA(cudaMemset(y, 0xff, ny * 2));
    CHECK_OK(gpuops__conv_launch(&a));
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<H> got = check::to_host(y, ny);
    const bool same = check::compare(got.data(), ref.data(), ny, check::tolerance{1e-3 + 2e-6 * 147, 1.6e-2}).ok();
    failures += !same;
    const double t_g = timer.median_ms([&] { CHECK_OK(gpuops__conv_launch(&a)); });
    printf("N%-3lld 224x224x3 -> 64 7x7/2: implicit-gemm %.1f us (%.1f TFLOP/s), mma-sync gathered %.1f us (%.1f TFLOP/s, %.2f TB/s of y)%s\n",
           (long long)n, 1e3 * t_ig, flops / (t_ig * 1e9), 1e3 * t_g, flops / (t_g * 1e9), ny * 2 / (t_g * 1e9), same ? "" : " DIFFERS");
    cudaFree(x), cudaFree(w), cudaFree(b), cudaFree(y);
  }
  printf("%d results differed from mma-sync\n", failures);
  return failures ? 1 : 0;
}
