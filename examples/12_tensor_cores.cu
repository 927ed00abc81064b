// SPDX-License-Identifier: MIT
// examples/12_tensor_cores.cu - step 12 of the learning path: matrix multiply on the tensor cores.
//
// What it teaches
//   Step 9 fed the FP32 pipe (FFMA: ~67 TFLOP/s on an H100 SXM). The tensor cores multiply small
//   matrices of 16-bit values in one instruction, f32 accumulation, at over 10x that rate: bf16
//   C = A B at 4096^3 is the same 137 GFLOP, now on 96 MiB of data (2 bytes an element). Each
//   version hands the tensor cores their operands a better way:
//   cuda-core      step 9's best f32 kernel (warp-tiled FFMA), on the same values in f32: the
//                  ceiling this step leaves behind.
//   wmma           the CUDA C++ WMMA API: a warp loads 16 x 16 fragments from shared memory
//                  (load_matrix_sync), multiplies them (mma_sync) and stores the accumulators.
//                  The fragments' register layout is opaque, shared memory is padded rather than
//                  swizzled, and the epilogue goes through shared memory. Runs from sm_70.
//                  Prediction: ~0.45x cuBLAS.
//   mma-sync       the PTX instruction under WMMA, mma.sync.m16n8k16, on fragments that ldmatrix
//                  loads straight from XOR-swizzled shared memory (conflict-free, no padding), with
//                  64 x 64 warp tiles (32 mma per 8 ldmatrix per k step), fragments double-
//                  buffered in registers, and a 4-stage cp.async pipeline. On Hopper it issues per
//                  warp and stages operands through registers, so it tops out well below wgmma.
//                  Prediction: ~0.7x cuBLAS.
//   wgmma          Hopper's warpgroup MMA: 4 warps issue one asynchronous 64 x N x 16 product whose
//                  operands the tensor memory accelerator (TMA) copies into shared memory,
//                  producer and consumer warpgroups, a persistent tile scheduler. Prediction:
//                  ~0.9-1.0x cuBLAS (unsupported where the build or device lacks it).
//   auto           the fastest this device runs (wgmma, else mma-sync, else wmma).
//   cublas         cublasGemmEx, bf16 in and out, f32 compute: the yardstick.
//   The CPU row is the honest baseline: the packed-panel SIMD kernel of step 9 (f32) built with
//   OpenMP and the host's vector instructions (-fopenmp -march=native), on every core, measured
//   on 1024^3; "x cpu" compares rates.
//
// The kernels to read: gpuops_cuda.cuh section 1.4 (cp.async, ldmatrix, mma.sync, the swizzles),
// then section 9: 9.1 the tile, its loader and the epilogue every GEMM ends in, 9.2 gemm_wmma and
// gemm_mma_sync, 9.3 the Hopper version, 9.4-9.5 how AUTO picks.
// Validation: C is poisoned with NaN first and must be written whole; 32 sampled rows must match
// the CPU reference (double) within (k + 2) 2^-23 sum_p |A(i,p) B(p,j)| + one bf16 rounding.
// Build: nvcc -O3 -arch=sm_90a -I. examples/12_tensor_cores.cu -o tensor_cores -lcublas
//        -Xcompiler -fopenmp,-march=native   (the Makefile does this). GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_GEMM
#define GPUOPS_ONLY_MATMUL
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cublas_v2.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../bench/harness.h"
#include "../tests/check.h"

using bench::fmt;
using std::string;
using std::vector;

static const int64_t N = 4096;  // M = N = K
static const int kRows = 32;    // rows of C checked against the CPU reference

int main() {
  if (!check::have_gpu()) {
    printf("12_tensor_cores needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  check::rng rng(seed);
  printf("12 tensor cores: C = A B, bf16 operands, f32 accumulation, bf16 C, %lld^3, row-major; seed %llu (GPUOPS_SEED replays it)\n",
         (long long)N, (unsigned long long)seed);
  printf("device: %s, %d SMs, compute capability %d.%d\n\n", dev.name, dev.sms, dev.cc_major, dev.cc_minor);

  // The CPU baseline: f32 SIMD on every core at 1024^3.
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  double cpu_gflops;
  {
    const int64_t s = 1024;
    vector<float> a(s * s), b(s * s), c(s * s);
    check::fill_uniform(a, rng, -1.0, 1.0);
    check::fill_uniform(b, rng, -1.0, 1.0);
    CHECK_OK(gpuops_cpu_matmul_baseline_f32(c.data(), a.data(), b.data(), s, s, s, s, s, s, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_CPU_GEMM_SIMD));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_OK(gpuops_cpu_matmul_baseline_f32(c.data(), a.data(), b.data(), s, s, s, s, s, s, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_CPU_GEMM_SIMD));
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu_gflops = 2.0 * (double)s * s * s / (sec * 1e9);
  }
  printf("CPU baseline: packed-panel SIMD (f32), %d thread%s on %u hardware threads, %s: %.1f GFLOP/s at 1024^3\n", threads, threads == 1 ? "" : "s",
         std::thread::hardware_concurrency(),
#ifdef _OPENMP
         "OpenMP"
#else
         "no OpenMP (build with -Xcompiler -fopenmp for every core)"
#endif
         , cpu_gflops);

  vector<gpuops_bf16> a(N * N), b(N * N);
  vector<float> af(N * N), bf(N * N);
  for (int64_t i = 0; i < N * N; ++i) {
    a[i] = gpuops_f32_to_bf16((float)rng.uniform(-1.0, 1.0)), b[i] = gpuops_f32_to_bf16((float)rng.uniform(-1.0, 1.0));
    af[i] = gpuops_bf16_to_f32(a[i]), bf[i] = gpuops_bf16_to_f32(b[i]);
  }
  gpuops_bf16 *d_a = check::to_device(a), *d_b = check::to_device(b), *d_c = nullptr;
  float *d_af = check::to_device(af), *d_bf = check::to_device(bf), *d_cf = nullptr;
  CHECK_CUDA(cudaMalloc(&d_c, (size_t)(N * N) * 2));
  CHECK_CUDA(cudaMalloc(&d_cf, (size_t)(N * N) * 4));

  // Reference rows of C and their error bounds, on the CPU (row i of C = row i of A times B).
  vector<int64_t> rows(kRows);
  for (int r = 0; r < kRows; ++r) rows[r] = r == 0 ? 0 : r == kRows - 1 ? N - 1 : (int64_t)rng.below(N);
  vector<float> want(kRows * N);
  vector<double> bound(kRows * N, 0.0);
  for (int r = 0; r < kRows; ++r) {
    CHECK_OK(gpuops_cpu_gemm_bf16_f32(want.data() + r * N, a.data() + rows[r] * N, b.data(), 1, N, N, N, N, N, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, nullptr));
    for (int64_t q = 0; q < N; ++q)
      for (int64_t j = 0; j < N; ++j) bound[r * N + j] += fabs((double)af[rows[r] * N + q] * bf[q * N + j]);
  }
  auto validate = [&](bool f32) -> string {
    vector<float> got(N * N);
    if (f32) {
      got = check::to_host(d_cf, (size_t)(N * N));
    } else {
      const vector<gpuops_bf16> g = check::to_host(d_c, (size_t)(N * N));
      for (int64_t e = 0; e < N * N; ++e) got[e] = gpuops_bf16_to_f32(g[e]);
    }
    for (int64_t e = 0; e < N * N; ++e)
      if (!isfinite(got[e])) return fmt("FAIL C[%lld] not written (%g)", (long long)e, got[e]);
    const double rel = (double)(N + 2) * 0x1p-23;
    for (int r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < N; ++j) {
        const double g = got[rows[r] * N + j], w = want[r * N + j];
        if (!(fabs(g - w) <= rel * bound[r * N + j] + (f32 ? 0.0 : 0x1p-7 * fabs(w))))
          return fmt("FAIL C(%lld,%lld) = %g, want %g", (long long)rows[r], (long long)j, g, w);
      }
    return "ok";
  };
  const double flops = 2.0 * (double)N * N * N;
  auto time_ms = [&](const std::function<void()> &run) { return timer.median_ms(run, 20, 2); };

  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    printf("cuBLAS could not start\n");
    return 2;
  }
  const float one = 1.0f, zero = 0.0f;
  auto run_cublas = [&] {  // row-major C = A B is column-major C^T = B^T A^T
    if (cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)N, (int)N, &one, d_b, CUDA_R_16BF, (int)N, d_a, CUDA_R_16BF, (int)N, &zero, d_c,
                     CUDA_R_16BF, (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
      printf("cublasGemmEx failed\n");
      exit(2);
    }
  };
  check::poison(d_c, (size_t)(N * N) * 2);
  run_cublas();
  CHECK_CUDA(cudaDeviceSynchronize());
  const string cublas_check = validate(false);
  const double cublas_ms = time_ms(run_cublas), cublas_tflops = flops / (cublas_ms * 1e9);

  bench::table t;
  t.head = {"version", "time (ms)", "TFLOP/s", "x cuBLAS", "x cpu", "x prev", "check"};
  t.add({fmt("cpu simd f32 (%d threads, 1024^3)", threads), "-", fmt("%.4f", cpu_gflops / 1e3), fmt("%.5f", cpu_gflops / 1e3 / cublas_tflops), "1x", "-",
         "reference"});
  bool ok = cublas_check == "ok";
  string best_name;
  double best_tflops = 0, prev_ms = NAN;
  struct version {
    const char *name;
    bool f32;
    std::function<gpuops_status()> run;
  };
  const version versions[] = {
      {"cuda-core (warp-tiled f32)", true,
       [&] { return gpuops_matmul_f32(d_cf, d_af, d_bf, N, N, N, N, N, N, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, GPUOPS_ALGO_AUTO, nullptr); }},
      {"wmma", false, [&] { return gpuops_gemm_bf16(d_c, d_a, d_b, N, N, N, N, N, N, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, nullptr, GPUOPS_ALGO_WMMA, nullptr); }},
      {"mma-sync", false,
       [&] { return gpuops_gemm_bf16(d_c, d_a, d_b, N, N, N, N, N, N, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, nullptr, GPUOPS_ALGO_MMA_SYNC, nullptr); }},
      {"wgmma", false, [&] { return gpuops_gemm_bf16(d_c, d_a, d_b, N, N, N, N, N, N, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, nullptr, GPUOPS_ALGO_WGMMA, nullptr); }},
      {"auto", false, [&] { return gpuops_gemm_bf16(d_c, d_a, d_b, N, N, N, N, N, N, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, nullptr, GPUOPS_ALGO_AUTO, nullptr); }},
  };
  for (const version &v : versions) {
    if (v.f32) check::poison(d_cf, (size_t)(N * N) * 4);
    else check::poison(d_c, (size_t)(N * N) * 2);
    const gpuops_status st = v.run();
    CHECK_CUDA(cudaDeviceSynchronize());
    if (st == GPUOPS_ERR_UNSUPPORTED) {
      t.add({v.name, "-", "-", "-", "-", "-", "unsupported on this device or build"});
      continue;
    }
    const string verdict = st == GPUOPS_OK ? validate(v.f32) : string("FAIL ") + gpuops_status_string(st);
    double ms = NAN;
    if (verdict == "ok") ms = time_ms([&] { CHECK_OK(v.run()); });
    ok = ok && verdict == "ok";
    const double tf = flops / (ms * 1e9);
    t.add({v.name, bench::num(ms), fmt("%.1f", tf), fmt("%.3f", tf / cublas_tflops), fmt("%.0fx", tf * 1e3 / cpu_gflops),
           isnan(prev_ms) ? "-" : fmt("%.2fx", prev_ms / ms), verdict});
    if (tf > best_tflops) best_tflops = tf, best_name = v.name;
    if (!isnan(ms)) prev_ms = ms;
  }
  t.add({"cublasGemmEx bf16", bench::num(cublas_ms), fmt("%.1f", cublas_tflops), "1.000", fmt("%.0fx", cublas_tflops * 1e3 / cpu_gflops), "-", cublas_check});
  t.print();
  printf("\nx cpu = TFLOP/s over the CPU baseline's rate (%.1f GFLOP/s, f32, %d threads, measured at 1024^3).\n", cpu_gflops, threads);
  printf("result: 12 tensor cores | %s | %.1f TFLOP/s | %.2fx cuBLAS | %.0fx cpu | %s\n", best_name.c_str(), best_tflops, best_tflops / cublas_tflops,
         best_tflops * 1e3 / cpu_gflops, ok ? "ok" : "FAIL");
  cublasDestroy(handle);
  for (void *p : {(void *)d_a, (void *)d_b, (void *)d_c, (void *)d_af, (void *)d_bf, (void *)d_cf}) CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}
