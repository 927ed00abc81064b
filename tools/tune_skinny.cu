// SPDX-License-Identifier: MIT
// tools/tune_skinny.cu - f32 products with a few rows or columns, and small squares, against cuBLAS
// SGEMM in one run: AUTO, FEW_ROWS called directly, WARP_TILED as its launcher picks (the 64 x 64
// tiles' k split over a cluster where the tiles leave the device idle), and with SPLITS set in the
// environment WARP_TILED 64 x 64 with the split forced to 1, 2, 4 and 8. Layouts NN, NT and (few
// rows) TN. Each result is checked against cuBLAS (max |diff| / max |c|) before it is timed;
// times are bench::timer's medians (L2 flushed before each run). gpuops_cuda.cuh 7.4 has the
// rules this chose (kMatmulFewRowsMax, matmul_few_rows_fits, matmul_wt_split).
//   usage: [SPLITS=1] tune_skinny   (nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/tune_skinny.cu -lcublas)
#define GPUOPS_ONLY_MATMUL
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"
#include "../bench/harness.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <vector>
using namespace gpuops;

int main() {
  bench::timer t;
  cublasHandle_t h;
  cublasCreate(&h);
  struct S { int64_t m, n, k; } shapes[] = {{8, 4096, 4096}, {16, 4096, 4096}, {24, 4096, 4096}, {32, 4096, 4096}, {48, 4096, 4096}, {64, 4096, 4096},
                                            {64, 11008, 4096}, {32, 4096, 11008}, {4096, 64, 4096}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024},
                                            {128, 4096, 4096}, {33, 1000, 3001}, {4096, 16, 4096}, {4096, 32, 4096}, {40, 4096, 4096}, {32, 11008, 4096}};
  for (auto sh : shapes)
    for (int lay = 0; lay < 3; ++lay) {  // NN, NT, TN
      const int nt = lay == 1, ta = lay == 2;
      if (ta && !(sh.m <= 64 && sh.n >= 4096)) continue;
      const int64_t m = sh.m, n = sh.n, k = sh.k;
      float *a, *b, *c, *ref;
      CHECK_CUDA(cudaMalloc(&a, m * k * 4)); CHECK_CUDA(cudaMalloc(&b, n * k * 4)); CHECK_CUDA(cudaMalloc(&c, m * n * 4)); CHECK_CUDA(cudaMalloc(&ref, m * n * 4));
      bench::fill_uniform(a, m * k, 1, -1.f, 1.f), bench::fill_uniform(b, n * k, 2, -1.f, 1.f);
      const float one = 1.f, zero = 0.f;
      const int64_t lda = ta ? m : k, ldb = nt ? k : n;
      // row-major C = op(A) op(B): column-major C^T = op(B)^T op(A)^T
      auto cub = [&] {
        cublasSgemm(h, nt ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)ldb, a, (int)lda, &zero, ref, (int)n);
      };
      cub();
      CHECK_CUDA(cudaDeviceSynchronize());
      std::vector<float> want(m * n), got(m * n);
      CHECK_CUDA(cudaMemcpy(want.data(), ref, m * n * 4, cudaMemcpyDeviceToHost));
      const gpuops__mm_args r = gpuops__mm_make(c, a, b, m, n, k, lda, ldb, n, 1.f, 0.f, ta ? GPUOPS_OP_T : GPUOPS_OP_N, nt ? GPUOPS_OP_T : GPUOPS_OP_N);
      const double tc = t.median_ms(cub);
      const double flops = 2.0 * m * n * k;
      printf("%lld x %lld x %lld %s  cublas %8.2f us (%.1f TFLOP/s)\n", (long long)m, (long long)n, (long long)k, ta ? "TN" : nt ? "NT" : "NN", tc * 1e3, flops / tc / 1e9);
      auto one_case = [&](const char *name, auto fn) {
        CHECK_CUDA(cudaMemset(c, 0xff, m * n * 4));
        gpuops_status st = fn();
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaMemcpy(got.data(), c, m * n * 4, cudaMemcpyDeviceToHost));
        double err = 0, big = 0;
        for (int64_t i = 0; i < m * n; ++i) err = std::max(err, (double)fabsf(got[i] - want[i])), big = std::max(big, (double)fabsf(want[i]));
        err /= big;
        const double ms = t.median_ms([&] { fn(); });
        printf("    %-16s %8.2f us  %5.1f TFLOP/s  %.3fx cublas  st %d  err %.1e %s\n", name, ms * 1e3, flops / ms / 1e9, tc / ms, (int)st, err,
               err < 1e-4 && st == GPUOPS_OK ? "ok" : "FAIL");
      };
      one_case("AUTO", [&] {
        return gpuops_matmul_f32(c, a, b, m, n, k, lda, ldb, n, 1.f, 0.f, ta ? GPUOPS_OP_T : GPUOPS_OP_N, nt ? GPUOPS_OP_T : GPUOPS_OP_N, GPUOPS_ALGO_AUTO, nullptr);
      });
      if ((m < n ? m : n) <= 64) one_case("FEW_ROWS", [&] { return matmul_few_rows(r); });
      one_case("WT auto", [&] { return matmul_warp_tiled_config(r, 0); });
      if (getenv("SPLITS")) for (int sp : {1, 2, 4, 8}) {
        char nm[32];
        snprintf(nm, sizeof nm, "WT64 split %d", sp);
        one_case(nm, [&] { return matmul_run_warp_tiled<matmul_wt_64x64>(matmul_params_of(r), sp, nullptr); });
      }
      cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ref);
    }
  cublasDestroy(h);
  return 0;
}
