// SPDX-License-Identifier: MIT
// tools/tune_mma.cu - the learning-path tensor-core GEMMs (gpuops_cuda.cuh 9.2, WMMA and MMA_SYNC):
// block-tile configurations timed beside cuBLAS bf16 in the same run, each result checked against
// cuBLAS's, with the registers and local memory (spills) of each kernel, for choosing the
// configurations of section 9.4 (gemm_wmma_128x128, gemm_mma_256x128).
//   usage: tune_mma [--quick | --decode | --peak]   (--quick: 4096^3 NN only; --decode: the few rows
//          only; --peak: the instructions' own rates, below, beside cuBLAS at 4096^3)
// Then the few-rows kernels (gemm_decode, m <= 8; gemm_gemv, m = 1) for m = 1..64 rows of x against
// W of 4096 x 4096 and 11008 x 4096, beside cuBLAS, the tiled WGMMA path and AUTO, as bandwidth
// on W's bytes against the copy ceiling.
//   build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -Itests tools/tune_mma.cu
//          -o build/tune_mma -lcublas
// Timing as bench/harness.h (median of 25, L2 flushed before each run). The check: every element
// within 2^-7 |c| + 2^-4 of cuBLAS's (bf16 output rounding plus summation order; entries are
// about 20 in size at K = 4096 with inputs uniform in [-1, 1]).
// Measured on an H200 (2026-11-26; docs/performance.md, "The learning-path tiles and few rows",
// raw output in docs/data/tune_mma_h200.txt): WMMA 0.20x -> 0.27-0.29x cuBLAS with the 64 x 64
// warp tiles, MMA_SYNC 0.40-0.44x -> 0.43-0.47x with 256 x 128 tiles; gemm_decode 15.4 us at
// 1 x 4096 x 4096 (cuBLAS 15.5, WGMMA rows 20.2) and 32.4 us at 1 x 11008 x 4096 (26.1, 35.8);
// gemm_gemv 30.3 us at 1 x 11008 x 4096 in a later run (cuBLAS 28.2, gemm_decode 33.9).
// --peak on an H100 (2026-11-27, docs/data/tune_mma_peak_h100.txt): mma.sync 621-647 TFLOP/s, WMMA
// 604-623, cuBLAS 793 at 4096^3 in the same run. --quick on an H100 after the block epilogue moved
// to straight-line rows (docs/data/tune_mma_h100_epilogue_ab.txt): MMA_SYNC 0.434x -> 0.49-0.50x,
// WMMA 0.271x -> 0.29x; 128-deep k-tiles in 2 stages 0.48-0.50x (40 bytes spilled).
#define GPUOPS_ONLY_GEMM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <cublas_v2.h>

#include <functional>
#include <string>
#include <vector>

using namespace gpuops;
using T = __nv_bfloat16;

// Elements of x farther from y than the check allows (m x n, row-major, ld n).
__global__ void count_far_kernel(const T *x, const T *y, int64_t count, unsigned long long *bad) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
    const float a = __bfloat162float(x[i]), b = __bfloat162float(y[i]);
    if (!(fabsf(a - b) <= 0x1p-7f * fabsf(b) + 0x1p-4f)) ++local;
  }
  if (local) atomicAdd(bad, local);
}

// The instructions' own rates (--peak): every warp runs kChains independent chains of mma.sync
// m16n8k16 (or WMMA 16 x 16 x 16) on operands held in registers, nothing from memory, so that the
// rate is the tensor pipe's for that instruction. The sums are stored only if they hit a value they
// cannot reach, so the work is kept and nothing is written.
template <int kChains> __global__ void mma_peak_kernel(float *out, int iters) {
  const uint32_t lane = threadIdx.x & 31;
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (lane + i);  // bf16 pairs near 0.0078
  b[0] = 0x3c003c00u ^ lane, b[1] = 0x3c003c00u ^ (lane << 1);
  float acc[kChains][4] = {};
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < kChains; ++c) mma_m16n8k16<T>(acc[c], a, b, acc[c]);
  float sum = 0.0f;
  for (int c = 0; c < kChains; ++c) sum += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (sum == -1.0f) out[0] = sum;
}
template <int kChains> __global__ void wmma_peak_kernel(float *out, int iters) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, T, nvcuda::wmma::row_major> fa;
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, T, nvcuda::wmma::col_major> fb;
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc[kChains];
  nvcuda::wmma::fill_fragment(fa, __float2bfloat16(0.0078f)), nvcuda::wmma::fill_fragment(fb, __float2bfloat16(0.0078f));
  for (int c = 0; c < kChains; ++c) nvcuda::wmma::fill_fragment(acc[c], 0.0f);
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < kChains; ++c) nvcuda::wmma::mma_sync(acc[c], fa, fb, acc[c]);
  float sum = 0.0f;
  for (int c = 0; c < kChains; ++c)
    for (int i = 0; i < acc[c].num_elements; ++i) sum += acc[c].x[i];  // every element: each half of the 16 columns is its own mma
  if (sum == -1.0f) out[0] = sum;
}

struct variant {
  std::string name;
  std::function<gpuops_status(const gemm_params &, const gemm_epilogue_either<T> &)> run;
  cudaFuncAttributes attr;
};

// WMMA with configuration C (its stage count fixed), and MMA_SYNC with C at C::STAGES stages.
template <class C> variant wmma_variant(const char *name) {
  variant v;
  v.name = name;
  v.run = [](const gemm_params &p, const gemm_epilogue_either<T> &e) {
    if (p.trans_a || p.trans_b != 0) {
      if (!p.trans_a && p.trans_b) return gemm_launch<gemm_wmma<C, T, false, true>, C>(p, e, C::SMEM_BYTES, 80, nullptr);
      return GPUOPS_ERR_UNSUPPORTED;
    }
    return gemm_launch<gemm_wmma<C, T, false, false>, C>(p, e, C::SMEM_BYTES, 80, nullptr);
  };
  CHECK_CUDA(cudaFuncGetAttributes(&v.attr, gemm_wmma<C, T, false, false>));
  return v;
}
template <class C> variant mma_variant(const char *name) {
  variant v;
  v.name = name;
  v.run = [](const gemm_params &p, const gemm_epilogue_either<T> &e) {
    const size_t smem = C::smem_bytes(C::STAGES);
    if (p.trans_a || p.trans_b != 0) {
      if (!p.trans_a && p.trans_b) return gemm_launch<gemm_mma_sync<C, T, false, true>, C>(p, e, smem, 80, nullptr, C::STAGES);
      return GPUOPS_ERR_UNSUPPORTED;
    }
    return gemm_launch<gemm_mma_sync<C, T, false, false>, C>(p, e, smem, 80, nullptr, C::STAGES);
  };
  CHECK_CUDA(cudaFuncGetAttributes(&v.attr, gemm_mma_sync<C, T, false, false>));
  return v;
}

// gemm_config<BM, BN, BK, WARPS_M, WARPS_N, STAGES, MIN_BLOCKS, swizzle>
using W_now = gemm_wmma_128x128;
using W_128x128_w32_k32_s3 = gemm_config<128, 128, 32, 2, 4, 3, 1, false>;  // the configuration before
using W_128x128_w64_k64_s3 = gemm_config<128, 128, 64, 2, 2, 3, 2, false>;
using W_128x256_w64_k32_s4 = gemm_config<128, 256, 32, 2, 4, 4, 1, false>;
using W_128x256_w64_k64_s3 = gemm_config<128, 256, 64, 2, 4, 3, 1, false>;
using M_now = gemm_mma_256x128;
using M_128x256_w64_k64_s4 = gemm_config<128, 256, 64, 2, 4, 4, 1, true>;  // the configuration before
using M_128x128_w64_k32_s4 = gemm_config<128, 128, 32, 2, 2, 4, 2, true>;
using M_128x128_w64_k64_s3 = gemm_config<128, 128, 64, 2, 2, 3, 2, true>;
using M_128x256_w64_k32_s6 = gemm_config<128, 256, 32, 2, 4, 6, 1, true>;
using M_256x128_w64_k128_s2 = gemm_config<256, 128, 128, 4, 2, 2, 1, true>;

int main(int argc, char **argv) {
  const bool quick = argc > 1 && !strcmp(argv[1], "--quick"), decode_only = argc > 1 && !strcmp(argv[1], "--decode");
  const bool peak = argc > 1 && !strcmp(argv[1], "--peak");
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (!check::have_gpu()) {
    printf("tune_mma needs a CUDA GPU; none was found.\n");
    return 0;
  }
  const bench::device_info d = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(d, seed);
  std::vector<variant> vs = {
      wmma_variant<W_128x128_w32_k32_s3>("wmma 128x128 k32 s3, 8 warps of 64x32 (before)"),
      wmma_variant<W_now>("wmma 128x128 k32 s4, 4 warps of 64x64, 2 blocks/SM (now)"),
      wmma_variant<W_128x128_w64_k64_s3>("wmma 128x128 k64 s3, 4 warps of 64x64, 2 blocks/SM"),
      wmma_variant<W_128x256_w64_k32_s4>("wmma 128x256 k32 s4, 8 warps of 64x64"),
      wmma_variant<W_128x256_w64_k64_s3>("wmma 128x256 k64 s3, 8 warps of 64x64"),
      mma_variant<M_128x256_w64_k64_s4>("mma-sync 128x256 k64 s4, 8 warps of 64x64 (before)"),
      mma_variant<M_now>("mma-sync 256x128 k64 s4, 8 warps of 64x64 (now)"),
      mma_variant<M_128x128_w64_k32_s4>("mma-sync 128x128 k32 s4, 4 warps of 64x64, 2 blocks/SM"),
      mma_variant<M_128x128_w64_k64_s3>("mma-sync 128x128 k64 s3, 4 warps of 64x64, 2 blocks/SM"),
      mma_variant<M_128x256_w64_k32_s6>("mma-sync 128x256 k32 s6, 8 warps of 64x64"),
      mma_variant<M_256x128_w64_k128_s2>("mma-sync 256x128 k128 s2, 8 warps of 64x64"),
  };
  for (const variant &v : vs) printf("%-58s %3d registers, %4zu bytes local\n", v.name.c_str(), v.attr.numRegs, v.attr.localSizeBytes);
  {
    cudaFuncAttributes fa;
    CHECK_CUDA(cudaFuncGetAttributes(&fa, gemm_decode<T, 1>));
    printf("gemm_decode: %d registers, %zu bytes local\n", fa.numRegs, fa.localSizeBytes);
  }

  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  bench::timer timer;
  struct shp { int64_t m, n, k; int tb; };
  std::vector<shp> shapes = {{4096, 4096, 4096, 0}};
  if (!quick) shapes.push_back({4096, 4096, 4096, 1}), shapes.push_back({8192, 8192, 8192, 0});
  if (decode_only || peak) shapes.clear();
  const int64_t most = 8192 * 8192;
  T *a, *b, *c, *ref;
  unsigned long long *bad;
  for (T **p : {&a, &b, &c, &ref}) CHECK_CUDA(cudaMalloc(p, most * 2));
  CHECK_CUDA(cudaMalloc(&bad, sizeof *bad));
  bench::fill_uniform((gpuops_bf16 *)a, most, seed, -1, 1);
  bench::fill_uniform((gpuops_bf16 *)b, most, seed + 1, -1, 1);
  bench::table tab;
  tab.head = {"shape", "layout", "version", "registers", "local B", "us", "TFLOP/s", "x cuBLAS", "check"};
  int failures = 0;
  for (const shp &s : shapes) {
    const int64_t m = s.m, n = s.n, k = s.k, ldb = s.tb ? k : n;
    const float one = 1.0f, zero = 0.0f;
    // Row-major C = A op(B) as column-major C^T = op(B)^T A^T.
    auto cublas = [&] {
      CHECK_CUBLAS(cublasGemmEx(h, s.tb ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, CUDA_R_16BF, (int)ldb, a,
                                CUDA_R_16BF, (int)k, &zero, ref, CUDA_R_16BF, (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    cublas();
    const double cub = timer.median_ms(cublas);
    const double flops = 2.0 * m * n * k;
    const std::string shape = bench::fmt("%lldx%lldx%lld", (long long)m, (long long)n, (long long)k), lay = s.tb ? "NT" : "NN";
    tab.add({shape, lay, "cuBLAS", "-", "-", bench::num(1e3 * cub), bench::num(flops / cub / 1e9), "1.000", "-"});
    gemm_params p = {};
    p.a = a, p.b = b, p.m = m, p.n = n, p.k = k, p.lda = k, p.ldb = ldb, p.trans_a = 0, p.trans_b = s.tb, p.a_vec = 1, p.b_vec = 1;
    gemm_epilogue<T> e = {};
    e.c = c, e.m = m, e.n = n, e.ldc = n, e.alpha = 1.0f, e.beta = 0.0f;
    gemm_epilogue_either<T> epi = {};
    epi.narrow = e, epi.f32 = 0;
    for (const variant &v : vs) {
      check::poison(c, (size_t)(m * n) * 2);
      const gpuops_status st = v.run(p, epi);
      CHECK_CUDA(cudaDeviceSynchronize());
      if (st != GPUOPS_OK) {
        tab.add({shape, lay, v.name, std::to_string(v.attr.numRegs), std::to_string(v.attr.localSizeBytes), "-", "-", "-", gpuops_status_string(st)});
        continue;
      }
      CHECK_CUDA(cudaMemset(bad, 0, sizeof *bad));
      count_far_kernel<<<1024, 256>>>(c, ref, m * n, bad);
      unsigned long long nbad = 0;
      CHECK_CUDA(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
      const double ms = timer.median_ms([&] { v.run(p, epi); });
      failures += nbad != 0;
      tab.add({shape, lay, v.name, std::to_string(v.attr.numRegs), std::to_string(v.attr.localSizeBytes), bench::num(1e3 * ms),
               bench::num(flops / ms / 1e9), bench::fmt("%.3f", cub / ms), nbad ? bench::fmt("FAIL %llu", nbad) : "ok"});
      printf("  %s %s %s: %.1f us, %.3fx cuBLAS%s\n", shape.c_str(), lay.c_str(), v.name.c_str(), 1e3 * ms, cub / ms, nbad ? " FAIL" : "");
    }
  }
  tab.print();
  if (peak) {
    // cuBLAS at 4096^3 NN, then each instruction's rate for 8 to 32 warps an SM, 4 or 8 chains.
    const int64_t m = 4096;
    const float one = 1.0f, zero = 0.0f;
    auto cublas = [&] {
      CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, (int)m, (int)m, &one, b, CUDA_R_16BF, (int)m, a, CUDA_R_16BF, (int)m, &zero, ref,
                                CUDA_R_16BF, (int)m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    cublas();
    const double cub = 2.0 * m * m * m / timer.median_ms(cublas) / 1e9;
    int sms = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    bench::table pt;
    pt.head = {"instruction", "warps/SM", "chains", "TFLOP/s", "x cuBLAS 4096^3"};
    pt.add({"cuBLAS 4096^3 bf16", "-", "-", bench::num(cub), "1.000"});
    const int iters = 4096;
    auto rate = [&](const char *name, int warps, int chains, double flop_per_op, const std::function<void(unsigned, unsigned)> &launch) {
      const unsigned blocks = (unsigned)sms * (unsigned)(warps / 8);  // 256-thread blocks
      launch(blocks, 256);
      CHECK_CUDA(cudaDeviceSynchronize());
      const double ms = timer.median_ms([&] { launch(blocks, 256); });
      const double tf = (double)blocks * 8 * iters * chains * flop_per_op / ms / 1e9;
      pt.add({name, std::to_string(warps), std::to_string(chains), bench::num(tf), bench::fmt("%.3f", tf / cub)});
    };
    float *sink = reinterpret_cast<float *>(c);
    for (int warps : {8, 16, 32}) {
      rate("mma.sync m16n8k16", warps, 4, 4096.0, [&](unsigned g, unsigned t) { mma_peak_kernel<4><<<g, t>>>(sink, iters); });
      rate("mma.sync m16n8k16", warps, 8, 4096.0, [&](unsigned g, unsigned t) { mma_peak_kernel<8><<<g, t>>>(sink, iters); });
      rate("wmma 16x16x16", warps, 4, 8192.0, [&](unsigned g, unsigned t) { wmma_peak_kernel<4><<<g, t>>>(sink, iters); });
    }
    pt.print();
    return 0;
  }

  // Few rows (decode): y = x W^T, W n x k, against cuBLAS and the copy ceiling on W's bytes.
  const double copy = bench::copy_ceiling(timer);
  bench::table dt;
  dt.head = {"shape", "version", "us", "W GB/s", "x copy", "x cuBLAS", "check"};
  for (int64_t n : {4096, 8192, 11008, 14336})
    for (int64_t m : {1, 4, 8, 16, 64}) {
      const int64_t k = 4096;
      const float one = 1.0f, zero = 0.0f;
      auto cublas = [&] {
        CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, CUDA_R_16BF, (int)k, a, CUDA_R_16BF, (int)k, &zero,
                                  ref, CUDA_R_16BF, (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      };
      cublas();
      const double cub = timer.median_ms(cublas), wb = 2.0 * n * k;
      const std::string shape = bench::fmt("%lldx%lldx%lld", (long long)m, (long long)n, (long long)k);
      dt.add({shape, "cuBLAS", bench::num(1e3 * cub), bench::num(wb / cub / 1e6), bench::fmt("%.3f", wb / cub / 1e6 / copy), "1.000", "-"});
      gemm_params p = {};
      p.a = a, p.b = b, p.m = m, p.n = n, p.k = k, p.lda = k, p.ldb = k, p.trans_a = 0, p.trans_b = 1, p.a_vec = 1, p.b_vec = 1;
      gemm_epilogue<T> e = {};
      e.c = c, e.m = m, e.n = n, e.ldc = n, e.alpha = 1.0f, e.beta = 0.0f;
      gemm_epilogue_either<T> epi = {};
      epi.narrow = e, epi.f32 = 0;
      auto one_run = [&](const std::string &name, const std::function<void()> &run) {
        check::poison(c, (size_t)(m * n) * 2);
        run();
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaMemset(bad, 0, sizeof *bad));
        count_far_kernel<<<1024, 256>>>(c, ref, m * n, bad);
        unsigned long long nbad = 0;
        CHECK_CUDA(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
        const double ms = timer.median_ms(run);
        failures += nbad != 0;
        dt.add({shape, name, bench::num(1e3 * ms), bench::num(wb / ms / 1e6), bench::fmt("%.3f", wb / ms / 1e6 / copy), bench::fmt("%.3f", cub / ms),
                nbad ? bench::fmt("FAIL %llu", nbad) : "ok"});
      };
      if (m <= 8) one_run("decode", [&] { gemm_decode<T, 1><<<tile_grid((n + 15) / 16), 32 * kGemmDecodeWarps>>>(p, epi, gemm_decode_kper(k)); });
      if (m == 1) {
        int sms = 0;
        CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        const int64_t blocks = ((n + 1) / 2 + 7) / 8;
        one_run("gemv", [&] { gemm_gemv<T><<<(unsigned)(blocks < 8 * sms ? blocks : 8 * sms), 256>>>(p, epi); });
      }
      one_run("wgmma (the tiled path)", [&] { CHECK_OK(gpuops_gemm_bf16((gpuops_bf16 *)c, (const gpuops_bf16 *)a, (const gpuops_bf16 *)b, m, n, k, k, k, n, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_T, nullptr, GPUOPS_ALGO_WGMMA, nullptr)); });
      one_run("auto", [&] { CHECK_OK(gpuops_gemm_bf16((gpuops_bf16 *)c, (const gpuops_bf16 *)a, (const gpuops_bf16 *)b, m, n, k, k, k, n, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_T, nullptr, GPUOPS_ALGO_AUTO, nullptr)); });
    }
  dt.print();
  for (void *q : {(void *)a, (void *)b, (void *)c, (void *)ref, (void *)bad}) CHECK_CUDA(cudaFree(q));
  cublasDestroy(h);
  printf("%d variants failed the check\n", failures);
  return failures ? 1 : 0;
}
