// SPDX-License-Identifier: MIT
// tools/tune_matmul.cu - WARP_TILED tile configurations side by side with cuBLAS SGEMM in one run,
// for choosing the compiled-in configurations (gpuops_cuda.cuh section 7.4). Each candidate is
// checked against cuBLAS (max |diff| / max |c|) before it is timed; times are bench::timer's medians
// (25 runs, L2 flushed before each; the logs of 2026-11-21 were taken with 15 runs, no flush).
// Each runs with one block per tile (no k split): the rate at full waves of the wave model.
//   usage: tune_matmul        (nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_matmul.cu -lcublas)
#define GPUOPS_ONLY_MATMUL
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdio>
#include <cublas_v2.h>
#include <vector>

using namespace gpuops;
template <class C> const char *cname() {
  static char s[96];
  snprintf(s, sizeof s, "%dx%dx%d w%dx%d t%dx%d s%d b%d", C::BM, C::BN, C::BK, C::WARPS_M, C::WARPS_N, 4 * C::TMS, 4 * C::TNS,
           C::STAGES, C::MIN_BLOCKS);
  return s;
}
struct shape { int64_t m, n, k; gpuops_op oa, ob; };

// The bench's timer (bench/harness.h): median of 25 runs after 3 warm-ups, L2 flushed before each.
static float median_ms(const std::function<void()> &f) {
  static bench::timer t;
  return (float)t.median_ms(f);
}

struct ctx {
  shape s;
  float *a, *b, *c, *ref;
  double flops;
  float cublas_ms;
  std::vector<float> hc, hr;
};

template <class C> void try_config(ctx &x) {
  const gpuops__mm_args r = gpuops__mm_make(x.c, x.a, x.b, x.s.m, x.s.n, x.s.k, x.s.oa == GPUOPS_OP_N ? x.s.k : x.s.m,
                                            x.s.ob == GPUOPS_OP_N ? x.s.n : x.s.k, x.s.n, 1.0f, 0.0f, x.s.oa, x.s.ob);
  const matmul_params p = matmul_params_of(r);
  cudaMemset(x.c, 0, x.s.m * x.s.n * 4);
  gpuops_status st = matmul_run_warp_tiled<C>(p, 1, 0);
  cudaError_t e = cudaDeviceSynchronize();
  cudaFuncAttributes fa;
  cudaFuncGetAttributes(&fa, matmul_warp_tiled<C>);
  if (st != GPUOPS_OK || e != cudaSuccess) {
    printf("  %-32s failed: status %d, %s\n", cname<C>(), (int)st, cudaGetErrorString(e));
    cudaGetLastError();
    return;
  }
  cudaMemcpy(x.hc.data(), x.c, x.hc.size() * 4, cudaMemcpyDeviceToHost);
  double md = 0, mx = 0;
  for (size_t i = 0; i < x.hc.size(); ++i) md = std::max(md, (double)fabsf(x.hc[i] - x.hr[i])), mx = std::max(mx, (double)fabsf(x.hr[i]));
  const float ms = median_ms([&] { matmul_run_warp_tiled<C>(p, 1, 0); });
  printf("  %-32s regs %3d local %4d B  %8.3f ms  %6.2f TFLOP/s  %.3fx cublas  err %.1e\n", cname<C>(), fa.numRegs,
         (int)fa.localSizeBytes, ms, x.flops / ms / 1e9, x.cublas_ms / ms, md / (mx > 0 ? mx : 1));
}

template <class... Cs> void run_all(ctx &x) { (try_config<Cs>(x), ...); }

using T1 = matmul_tile_config<128, 128, 8, 2, 4, 2, 2, 3, 2>;
using T2 = matmul_tile_config<128, 128, 8, 2, 4, 2, 2, 4, 2>;
using T3 = matmul_tile_config<128, 128, 16, 2, 4, 2, 2, 4, 1>;
using T4 = matmul_tile_config<128, 128, 8, 2, 2, 2, 4, 4, 2>;
using T5 = matmul_tile_config<128, 128, 8, 2, 2, 2, 4, 3, 2>;
using T6 = matmul_tile_config<128, 256, 8, 2, 4, 2, 4, 3, 1>;
using T7 = matmul_tile_config<128, 256, 8, 2, 4, 2, 4, 4, 1>;
using T8 = matmul_tile_config<256, 128, 8, 4, 2, 2, 4, 4, 1>;
using T9 = matmul_tile_config<256, 128, 8, 4, 2, 2, 4, 3, 1>;
using T10 = matmul_tile_config<64, 64, 16, 2, 2, 1, 2, 3, 4>;
using T11 = matmul_tile_config<128, 128, 16, 2, 2, 2, 4, 3, 2>;
using T12 = matmul_tile_config<128, 256, 16, 2, 4, 2, 4, 3, 1>;
using T13 = matmul_tile_config<64, 64, 8, 2, 2, 1, 2, 4, 4>;

int main() {
  cublasHandle_t h;
  cublasCreate(&h);
  const shape shapes[] = {{4096, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_N}, {4095, 4097, 1023, GPUOPS_OP_N, GPUOPS_OP_N},
                          {4096, 4096, 4096, GPUOPS_OP_T, GPUOPS_OP_N}, {2048, 2048, 2048, GPUOPS_OP_N, GPUOPS_OP_N}};
  for (const shape &s : shapes) {
    ctx x;
    x.s = s;
    x.flops = 2.0 * s.m * s.n * s.k;
    cudaMalloc(&x.a, s.m * s.k * 4), cudaMalloc(&x.b, s.k * s.n * 4), cudaMalloc(&x.c, s.m * s.n * 4), cudaMalloc(&x.ref, s.m * s.n * 4);
    std::vector<float> ha(s.m * s.k), hb(s.k * s.n);
    uint32_t st = 12345;
    for (auto &v : ha) st = st * 1664525u + 1013904223u, v = (float)(st >> 8) / 16777216.0f - 0.5f;
    for (auto &v : hb) st = st * 1664525u + 1013904223u, v = (float)(st >> 8) / 16777216.0f - 0.5f;
    cudaMemcpy(x.a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice), cudaMemcpy(x.b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice);
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
    const float one = 1, zero = 0;
    const int lda = s.oa == GPUOPS_OP_N ? (int)s.k : (int)s.m, ldb = s.ob == GPUOPS_OP_N ? (int)s.n : (int)s.k;
    auto sgemm = [&] {
      cublasSgemm(h, s.ob == GPUOPS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, s.oa == GPUOPS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, (int)s.n,
                  (int)s.m, (int)s.k, &one, x.b, ldb, x.a, lda, &zero, x.ref, (int)s.n);
    };
    x.cublas_ms = median_ms(sgemm);
    x.hc.resize(s.m * s.n), x.hr.resize(s.m * s.n);
    cudaMemcpy(x.hr.data(), x.ref, x.hr.size() * 4, cudaMemcpyDeviceToHost);
    printf("%lldx%lldx%lld %c%c: cublas %.3f ms %.2f TFLOP/s\n", (long long)s.m, (long long)s.n, (long long)s.k,
           s.oa == GPUOPS_OP_N ? 'N' : 'T', s.ob == GPUOPS_OP_N ? 'N' : 'T', x.cublas_ms, x.flops / x.cublas_ms / 1e9);
    run_all<T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13>(x);
    cudaFree(x.a), cudaFree(x.b), cudaFree(x.c), cudaFree(x.ref);
  }
  return 0;
}
