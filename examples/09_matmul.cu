// SPDX-License-Identifier: MIT
// examples/09_matmul.cu - step 9 of the learning path: f32 matrix multiply on CUDA cores.
//
// What it teaches
//   C = A B for 4096 x 4096 matrices is 2 * 4096^3 = 137 GFLOP on 192 MiB of data: some 700
//   flops per byte, so unlike every step before it the op is bound by arithmetic, not by DRAM.
//   The ceiling is the FP32 pipe (an H100 SXM issues 128 FFMA per clock per SM: ~67 TFLOP/s at
//   boost), and the measured yardstick is cuBLAS SGEMM in the same run (CUBLAS_DEFAULT_MATH: FFMA,
//   no TF32 tensor cores). The versions climb by feeding that pipe better:
//   naive          one thread per C element, threadIdx.x along m. A warp's loads of A(i, p) are a
//                  row apart, so each load instruction touches 32 cache lines. Prediction: ~0.01x cuBLAS.
//   coalesced      the same with threadIdx.x along n: a warp reads one A value (a broadcast) and 32
//                  consecutive B values (one line), and writes one line of C. Prediction: ~0.05x.
//   shared-tiled   32 x 32 tiles of A and B staged in shared memory: each global element is loaded
//                  once per block instead of once per thread, but every FFMA still needs two shared
//                  loads, and shared memory serves 32 words per clock against 128 FFMA. ~0.1x.
//   register-1d    each thread computes 8 outputs of a column: one B value from shared memory is
//                  reused from a register 8 times (about 1 shared load per FFMA). ~0.35x.
//   register-2d    each thread an 8 x 8 block: 16 shared loads for 64 FFMA. ~0.6x.
//   vectorized     128-bit global loads, and the A tile stored transposed so that the 16 values a
//                  thread needs per k step come as 4 LDS.128: 16 FFMA per shared instruction. ~0.7x.
//   warp-tiled     warps own 64 x 32 sub-tiles and each lane 4 x 4 blocks 32 rows / 16 columns
//                  apart, so a warp's float4 reads are conflict-free broadcasts; shared memory is
//                  filled by cp.async three k-tiles ahead (the copy engine loads while the FFMAs
//                  run) and tails are zero-filled copies, not branches. Prediction: ~0.85x cuBLAS.
//   auto           warp-tiled with the tile size chosen for the problem (a GEMV for m or n = 1).
//   These predictions come from the kernels' instruction mix, not from a measurement: the
//   table below is the measurement.
//
// The kernels to read: gpuops_cuda.cuh, sections 7.2 (matmul_naive ... matmul_register_2d) and 7.3
// (matmul_warp_tiled), and 1.4 for the cp.async interface.
// The CPU baselines (gpuops_cpu_matmul_baseline_f32) are measured in GFLOP/s on smaller problems
// (the naive loop at 512^3, blocked and SIMD at 1024^3; one thread unless built with -fopenmp),
// because they would take minutes at 4096^3; "x cpu" is therefore the ratio of rates (TFLOP/s
// over the best baseline's GFLOP/s), not of times of the same problem.
// Validation: the whole C must be written (it is poisoned with NaN first) and 64 sampled rows
// must match the double-precision CPU reference within (k + 2) 2^-23 sum_p |A(i,p) B(p,j)|.
// Build: nvcc -O3 -arch=sm_90 -I. examples/09_matmul.cu -o matmul -lcublas -Xcompiler -fopenmp,-march=native -lgomp (the
// Makefile does this: the CPU baselines run on every core with the host's vector instructions). GPUOPS_SEED=N replays.
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

#include "../tests/check.h"
#include "../bench/harness.h"

using bench::fmt;
using std::string;
using std::vector;

static const int64_t N = 4096;  // M = N = K
static const int kRows = 64;    // rows of C checked against the CPU reference

// GFLOP/s of one CPU baseline on an s x s x s problem.
static double cpu_gflops(gpuops_cpu_gemm_kind kind, int64_t s, check::rng &r) {
  vector<float> a(s * s), b(s * s), c(s * s);
  check::fill_uniform(a, r, -1.0, 1.0);
  check::fill_uniform(b, r, -1.0, 1.0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(gpuops_cpu_matmul_baseline_f32(c.data(), a.data(), b.data(), s, s, s, s, s, s, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, kind));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * (double)s * s * s / (sec * 1e9);
}

int main() {
  if (!check::have_gpu()) {
    printf("09_matmul needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  check::rng rng(seed);
  printf("09 matmul: C = A B, f32, %lld x %lld x %lld, row-major; seed %llu (GPUOPS_SEED replays it)\n", (long long)N, (long long)N,
         (long long)N, (unsigned long long)seed);
  printf("device: %s, %d SMs\n\n", dev.name, dev.sms);
  fflush(stdout);

  // CPU baselines first (seconds each).
  struct cpu_row { const char *name; int64_t size; double gflops; };
  vector<cpu_row> cpu = {{"cpu naive (i-j-k)", 512, 0}, {"cpu blocked", 1024, 0}, {"cpu simd (packed panel)", 1024, 0}};
  double best_cpu = 0;
  for (int i = 0; i < 3; ++i) {
    cpu[i].gflops = cpu_gflops((gpuops_cpu_gemm_kind)i, cpu[i].size, rng);
    best_cpu = std::max(best_cpu, cpu[i].gflops);
    printf("%-26s %4lld^3: %7.2f GFLOP/s\n", cpu[i].name, (long long)cpu[i].size, cpu[i].gflops);
  }
#ifdef _OPENMP
  printf("(built with OpenMP and the host's vector instructions: the simd baseline runs %d threads on %u hardware threads)\n",
         omp_get_max_threads(), std::thread::hardware_concurrency());
#else
  printf("(one thread: build with -Xcompiler -fopenmp to spread the simd baseline over every core)\n");
#endif
  printf("\n");

  vector<float> a(N * N), b(N * N);
  check::fill_uniform(a, rng, -1.0, 1.0);
  check::fill_uniform(b, rng, -1.0, 1.0);
  float *d_a = check::to_device(a), *d_b = check::to_device(b), *d_c = nullptr;
  CHECK_CUDA(cudaMalloc(&d_c, (size_t)(N * N) * sizeof(float)));

  // The reference rows and their error bounds, from the CPU (row i of C = row i of A times B).
  vector<int64_t> rows(kRows);
  for (int r = 0; r < kRows; ++r) rows[r] = r == 0 ? 0 : r == kRows - 1 ? N - 1 : (int64_t)rng.below(N);
  vector<float> want(kRows * N);
  vector<double> bound(kRows * N, 0.0);
  for (int r = 0; r < kRows; ++r) {
    const float *ar = a.data() + rows[r] * N;
    CHECK_OK(gpuops_cpu_matmul_f32(want.data() + r * N, ar, b.data(), 1, N, N, N, N, N, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N));
    for (int64_t q = 0; q < N; ++q)
      for (int64_t j = 0; j < N; ++j) bound[r * N + j] += fabs((double)ar[q] * b[q * N + j]);
  }
  auto validate = [&]() -> string {
    const vector<float> got = check::to_host(d_c, (size_t)(N * N));
    for (int64_t e = 0; e < N * N; ++e)
      if (!isfinite(got[e])) return fmt("FAIL C[%lld] not written (%g)", (long long)e, got[e]);
    const double rel = (double)(N + 2) * 1.1920929e-7;
    for (int r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < N; ++j) {
        const double g = got[rows[r] * N + j], w = want[r * N + j];
        if (!(fabs(g - w) <= rel * bound[r * N + j])) return fmt("FAIL C(%lld,%lld) = %g, want %g", (long long)rows[r], (long long)j, g, w);
      }
    return "ok";
  };
  // Median time; slow versions get fewer repetitions.
  auto time_ms = [&](const std::function<void()> &run) {
    const double once = timer.median_ms(run, 1, 1);
    return timer.median_ms(run, once > 200 ? 3 : once > 40 ? 5 : 20, 1);
  };
  const double flops = 2.0 * (double)N * N * N;

  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS || cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
    printf("cuBLAS could not start\n");
    return 2;
  }
  const float one = 1.0f, zero = 0.0f;
  auto run_cublas = [&] {  // row-major C = A B is column-major C^T = B^T A^T
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)N, (int)N, &one, d_b, (int)N, d_a, (int)N, &zero, d_c, (int)N) !=
        CUBLAS_STATUS_SUCCESS) {
      printf("cublasSgemm failed\n");
      exit(2);
    }
  };
  check::poison(d_c, (size_t)(N * N) * sizeof(float));
  run_cublas();
  const string cublas_check = validate();
  const double cublas_ms = time_ms(run_cublas);
  const double cublas_tflops = flops / (cublas_ms * 1e9);

  bench::table t;
  t.head = {"version", "time (ms)", "TFLOP/s", "x cuBLAS", "x cpu", "x prev", "check"};
  for (const cpu_row &c : cpu)
    t.add({fmt("%s (%lld^3)", c.name, (long long)c.size), "-", fmt("%.4f", c.gflops / 1e3), fmt("%.5f", c.gflops / 1e3 / cublas_tflops),
           fmt("%.2fx", c.gflops / best_cpu), "-", "reference"});
  bool ok = cublas_check == "ok";
  string best_name;
  double best_tflops = 0, prev_ms = NAN;
  for (gpuops_algo algo : {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_COALESCED, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_REGISTER_1D,
                           GPUOPS_ALGO_REGISTER_2D, GPUOPS_ALGO_VECTORIZED, GPUOPS_ALGO_WARP_TILED, GPUOPS_ALGO_AUTO}) {
    auto run = [&] { return gpuops_matmul_f32(d_c, d_a, d_b, N, N, N, N, N, N, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, algo, nullptr); };
    check::poison(d_c, (size_t)(N * N) * sizeof(float));
    const gpuops_status st = run();
    CHECK_CUDA(cudaDeviceSynchronize());
    const string verdict = st == GPUOPS_OK ? validate() : string("FAIL ") + gpuops_status_string(st);
    double ms = NAN;
    if (verdict == "ok") ms = time_ms([&] { CHECK_OK(run()); });
    ok = ok && verdict == "ok";
    const double tf = flops / (ms * 1e9);
    t.add({gpuops_algo_name(algo), bench::num(ms), fmt("%.2f", tf), fmt("%.3f", tf / cublas_tflops), fmt("%.0fx", tf * 1e3 / best_cpu),
           isnan(prev_ms) ? "-" : fmt("%.2fx", prev_ms / ms), verdict});
    if (tf > best_tflops) best_tflops = tf, best_name = gpuops_algo_name(algo);
    prev_ms = ms;
  }
  t.add({"cublasSgemm", bench::num(cublas_ms), fmt("%.2f", cublas_tflops), "1.000", fmt("%.0fx", cublas_tflops * 1e3 / best_cpu), "-", cublas_check});
  t.print();
  printf("\nx cpu = TFLOP/s over the best CPU baseline's rate (%.2f GFLOP/s, measured on a smaller problem).\n", best_cpu);
  printf("result: 09 matmul | %s | %.1f TFLOP/s | %.2fx cuBLAS | %.0fx cpu | %s\n", best_name.c_str(), best_tflops,
         best_tflops / cublas_tflops, best_tflops * 1e3 / best_cpu, ok ? "ok" : "FAIL");
  cublasDestroy(handle);
  for (float *p : {d_a, d_b, d_c}) CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}
