// SPDX-License-Identifier: MIT
// tools/tune_wgmma.cu - the Hopper wgmma GEMM (gpuops_cuda.cuh 9.3): every tile configuration
// checked, then timed beside cuBLAS bf16 in the same run, for choosing the dispatch's
// configurations (gemm_wgmma_run: wgmma_tile_large / _small / _rows / _rows_ksplit, kWgmmaGroup).
//   1. small shapes (1 .. 1000 rows and columns, K = 1 .. 300) against a CPU double reference, both
//      input types, the four layouts, beta = 0 over a NaN-poisoned C and beta = 0.5, padded
//      leading dimensions; every element outside the m x n output must keep its poison;
//   2. odd and decode shapes against cuBLAS's f32 result (f32 outputs within 1e-5 max|C| +
//      1e-4 |c|; 16-bit outputs within their rounding);
//   3. timing (bench::timer: median of 25 runs, L2 flushed before each), bf16 in and out, f32
//      accumulation, cublasGemmEx with CUBLAS_COMPUTE_32F on the same buffers, each result
//      checked against cuBLAS's.
//   usage: tune_wgmma [--quick] [--check] [--time] [--decode] [--variant I] [--exclude I,J] [--list]
//          (check and time when neither is given; --quick: part 1 only, small shapes, for
//          compute-sanitizer; --decode: time the decode rows only; --variant: one configuration
//          of --list; --exclude: leave some out)
//   build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. tools/tune_wgmma.cu
//          -o build/tune_wgmma -lcublas
//
// Measured 2026-11-25 on an H100 80GB HBM3 (132 SMs, copy ceiling 3006 GB/s), `tune_wgmma
// --check --variant I` for each configuration, then `tune_wgmma --time`: 1260 checks passed (13
// configurations x 84, 168 for the dispatch with f16), the 243 timed results matched cuBLAS's,
// compute-sanitizer memcheck found nothing on --quick (the dispatch and both ping-pong
// configurations). bf16, group 8, TFLOP/s (x cuBLAS),
// "pair" = a cluster of 2, c1 / c4 = clusters of 1 / 4, pp = ping-pong:
//   shape (layout)               cuBLAS   128x256 pair   128x256 c1    128x256 c4    128x128 pp pair
//   4096^3 (NT)                  788      695 (0.88)     698 (0.89)    543 (0.69)    623 (0.79)
//   4096^3 (NN)                  797      700 (0.88)     688 (0.86)    557 (0.70)    617 (0.77)
//   8192^3 (NT)                  797      669 (0.84)     610 (0.77)    691 (0.87)    621 (0.78)
//     (the dispatch, the same 128x256 pair timed first after cuBLAS: 718, 0.90)
//   16384 x 4096 x 4096 (NT)     788      615 (0.78)     586 (0.74)    655 (0.83)    624 (0.79)
//   16384 x 11008 x 4096 (NT)    803      665 (0.83)     593 (0.74)    630 (0.78)    463 (0.58)
//   16384 x 4096 x 11008 (NT)    743      683 (0.92)     641 (0.86)    663 (0.89)    425 (0.57)
//   4095 x 4097 x 1023 (NT)      91       391 (4.3)      394 (4.3)     365 (4.0)     463 (5.1)
//     (leading dimensions padded to multiples of 8, as the TMA needs; cuBLAS with the tight ones:
//     127 TFLOP/s, against which 463 is 3.6x)
//   Decode rows, x copy ceiling on A + B + C:   cuBLAS   64x128 rows   rows, K over 2   over 4
//   16 x 4096 x 4096 (NT)                       0.49     0.44          0.46 (0.93x)     0.33
//   64 x 4096 x 4096 (NT)                       0.52     0.45          0.46 (0.88x)     0.33
// What the numbers say:
//   - The first run had every stage release (mbarrier.arrive.release.cluster, to the pair's two
//     blocks) compile to MEMBAR.ALL.GPU: 345 TFLOP/s at 4096^3. A plain arrive (the consumers
//     only say "done reading") doubled it to 695.
//   - 128 x 256 tiles (one m64n256k16 per consumer and K step) beat 128 x 128 whenever K is long;
//     with K = 1023 the epilogue weighs more and the ping-pong 128 x 128 pair, which hides each
//     consumer's stores behind the other's main loop, wins (5.1x cuBLAS).
//   - Clusters of 4 help at 8192^3 and 16384 x 4096 x 4096 (B's L2 traffic quartered) but leave a
//     partial wave at 4096^3 (30 clusters of 4 fit at once: 120 blocks for 128 cluster tiles).
//   - Split K over 4 blocks is slower than over 2 for decode rows: only 30 clusters of 4 fit (the
//     stages and the partial sums fill shared memory), so 32 tiles take two rounds.
//   - Group 8 and 16 differ by less than the run-to-run spread except at 8192^3.
//   - Short of cuBLAS by 8-20% on the large shapes: the consumers' stores are not overlapped with
//     the tensor cores in the cooperative (split M) schedule, and the epilogue's one-pair-per-call
//     interface rules out a TMA store; the next step is a ping-pong schedule with 128 x 256 per
//     consumer pair or an epilogue staged through shared memory.

#define GPUOPS_ONLY_GEMM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include "../bench/harness.h"
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace gpuops;

// ---- The problem and the epilogue (the library's plain one: C = alpha * acc + beta * C) ----
// problem: the fields of section 9.1's gemm_params that the kernel reads (trans_x = 1: the operand
// is stored transposed, op = T), so that this tool builds without the rest of the family.
struct problem {
  const void *a, *b;
  int64_t m, n, k, lda, ldb;
  int trans_a, trans_b;
};
static problem make_problem(const void *a, const void *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, gpuops_op oa, gpuops_op ob) {
  return {a, b, m, n, k, lda, ldb, oa == GPUOPS_OP_T ? 1 : 0, ob == GPUOPS_OP_T ? 1 : 0};
}

template <class TC> static gemm_epilogue_plain<TC> plain_epi(void *c, int64_t ldc, const problem &p, float alpha, float beta) {
  gemm_epilogue<TC> e = {};
  e.c = (TC *)c, e.m = p.m, e.n = p.n, e.ldc = ldc, e.alpha = alpha, e.beta = beta;
  return gemm_epilogue_plain<TC>(e);
}

// ---- Configurations under test ----
using W = wgmma_mode;
using C_L = wgmma_tile_large;  // the dispatch's configurations
using C_S = wgmma_tile_small;
using C_R = wgmma_tile_rows;
using C_RK = wgmma_tile_rows_ksplit;
using C_128x128ppc1 = wgmma_tile<128, 128, 6, 1, W::pingpong>;
using C_64x128k4 = wgmma_tile<64, 128, 8, 1, W::split_n, 4>;
using C_128x256c1 = wgmma_tile<128, 256, 4, 1>;
using C_128x256c4 = wgmma_tile<128, 256, 4, 4>;
using C_256x128c2 = wgmma_tile<256, 128, 4, 2>;
using C_256x128c1 = wgmma_tile<256, 128, 4, 1>;
using C_128x128c1 = wgmma_tile<128, 128, 6, 1>;
using C_64x128s6k4 = wgmma_tile<64, 128, 6, 1, W::split_n, 4>;
using C_64x256k8 = wgmma_tile<64, 256, 4, 1, W::split_n, 8>;
using C_64x128s4k4 = wgmma_tile<64, 128, 4, 1, W::split_n, 4>;  // decode rows: two blocks a SM, every cluster of 4 resident
using C_64x128s3k8 = wgmma_tile<64, 128, 3, 1, W::split_n, 8>;

template <class C> std::string cname() {
  char s[64];
  snprintf(s, sizeof s, "%dx%d s%d c%d%s%s", C::BM, C::BN, C::STAGES, C::CLUSTER,
           C::MODE == W::pingpong ? " pp" : C::MODE == W::split_n ? " sn" : "", C::KSPLIT > 1 ? (" k" + std::to_string(C::KSPLIT)).c_str() : "");
  return s;
}

// A configuration as the checks and the timing call it: with f32 output (production
// configurations: the tightest check) and with output in the input type (every configuration).
struct variant {
  std::string name;
  std::function<gpuops_status(const problem &, void *, int64_t, float, float, int)> run_f32, run_16;
  std::function<int()> resident;
};

// Clusters of C (its NT kernel) resident at once on this device: the persistent grid's size.
template <class T, class C> int resident_clusters() {
  auto kernel = gemm_wgmma<T, C, false, false, gemm_epilogue_plain<T>>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM_BYTES) != cudaSuccess) return -1;
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg = cluster_config(attr, (unsigned)C::CTAS, C::THREADS, C::CTAS, 0);
  cfg.dynamicSmemBytes = C::SMEM_BYTES;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) n = -1;
  cudaGetLastError();
  return n;
}

template <class T, class C, bool kF32> variant make_variant() {
  variant v;
  v.name = cname<C>();
  v.resident = [] { return resident_clusters<T, C>(); };
  if constexpr (kF32)
    v.run_f32 = [](const problem &p, void *c, int64_t ldc, float alpha, float beta, int group) {
      return launch_gemm_wgmma_config<T, C>(p, plain_epi<float>(c, ldc, p, alpha, beta), 0, group);
    };
  v.run_16 = [](const problem &p, void *c, int64_t ldc, float alpha, float beta, int group) {
    return launch_gemm_wgmma_config<T, C>(p, plain_epi<T>(c, ldc, p, alpha, beta), 0, group);
  };
  return v;
}
// The dispatch (gemm_wgmma_run) with the plain epilogue on every configuration (the library's
// launch_gemm_wgmma gives calls without bias, activation, residual or preact the staged epilogue
// instead where the large configuration runs).
template <class T> variant make_auto() {
  variant v;
  v.name = "dispatch";
  v.run_f32 = [](const problem &p, void *c, int64_t ldc, float alpha, float beta, int) {
    return gemm_wgmma_run<T>(p, plain_epi<float>(c, ldc, p, alpha, beta), 0);
  };
  if constexpr (std::is_same<T, __nv_bfloat16>::value)
    v.run_16 = [](const problem &p, void *c, int64_t ldc, float alpha, float beta, int) {
      return gemm_wgmma_run<T>(p, plain_epi<T>(c, ldc, p, alpha, beta), 0);
    };
  return v;
}

// f16: the dispatch (its configurations) with f32 output. bf16: every configuration.
template <class T> std::vector<variant> variants() {
  if constexpr (std::is_same<T, __half>::value) return {make_auto<T>()};
  else
    return {make_auto<T>(),
            make_variant<T, C_L, true>(),
            make_variant<T, C_S, true>(),
            make_variant<T, C_R, true>(),
            make_variant<T, C_RK, true>(),
            make_variant<T, C_128x128ppc1, false>(),
            make_variant<T, C_128x256c1, false>(),
            make_variant<T, C_256x128c2, false>(),
            make_variant<T, C_256x128c1, false>(),
            make_variant<T, C_128x128c1, false>(),
            make_variant<T, C_64x128k4, false>(),
            make_variant<T, C_128x256c4, false>(),
            make_variant<T, C_64x128s6k4, false>(),
            make_variant<T, C_64x256k8, false>(),
            make_variant<T, C_64x128s4k4, false>(),
            make_variant<T, C_64x128s3k8, false>()};
}

static int g_pass = 0, g_fail = 0;
// --variant I: only variant I of the bf16 list (0 = the dispatch; f16 only with 0); --exclude I,J:
// leave those out of the timing.
static int g_only = -1;
static bool g_decode = false;  // --decode: time the decode rows only (m = 16 .. 64)
static std::vector<int> g_exclude;
template <class T> std::vector<variant> selected() {
  std::vector<variant> all = variants<T>(), out;
  for (size_t i = 0; i < all.size(); ++i)
    if ((g_only < 0 || (int)i == g_only) && std::find(g_exclude.begin(), g_exclude.end(), (int)i) == g_exclude.end()) out.push_back(all[i]);
  return out;
}
static float to16(uint16_t x, const char *tn) { return tn[0] == 'f' ? gpuops_f16_to_f32(gpuops_f16{x}) : gpuops_bf16_to_f32(gpuops_bf16{x}); }
static const char *opname(gpuops_op o) { return o == GPUOPS_OP_N ? "N" : "T"; }

// Stored shape of op(X) = rows x cols as stored: (op N) rows x cols, (op T) cols x rows.
static int64_t pad8(int64_t x) { return (x + 7) / 8 * 8; }

// ---- 1. Small shapes against the CPU (double) ----
template <class T> void check_small(check::rng &rng, bool quick) {
  using H = typename std::conditional<std::is_same<T, __half>::value, gpuops_f16, gpuops_bf16>::type;
  const char *tn = std::is_same<T, __half>::value ? "f16" : "bf16";
  struct shp { int64_t m, n, k; };
  std::vector<shp> shapes = {{1, 1, 1}, {17, 33, 65}, {64, 64, 64}, {130, 260, 100}, {255, 513, 129}, {300, 257, 1}, {520, 136, 300}, {3, 1000, 40}};
  if (quick) shapes = {{17, 33, 65}, {130, 260, 100}, {1664, 1408, 200}};  // the last: more 128 x 128 tiles than SMs
  std::vector<variant> vs = selected<T>();
  for (const shp &s : shapes)
    for (int la = 0; la < 2; ++la)
      for (int lb = 0; lb < 2; ++lb) {
        const gpuops_op oa = la ? GPUOPS_OP_T : GPUOPS_OP_N, ob = lb ? GPUOPS_OP_T : GPUOPS_OP_N;
        const int64_t ar = oa == GPUOPS_OP_N ? s.m : s.k, ac = oa == GPUOPS_OP_N ? s.k : s.m;
        const int64_t br = ob == GPUOPS_OP_N ? s.k : s.n, bc = ob == GPUOPS_OP_N ? s.n : s.k;
        const int64_t lda = pad8(ac) + 8 * (int64_t)rng.below(2), ldb = pad8(bc) + 8 * (int64_t)rng.below(2), ldc = s.n + 3;
        std::vector<H> ha(ar * lda), hb(br * ldb);
        check::fill_uniform(ha, rng, -1.0, 1.0);
        check::fill_uniform(hb, rng, -1.0, 1.0);
        std::vector<float> hc0((s.m + 1) * ldc);
        for (auto &x : hc0) x = (float)rng.uniform(-1, 1);
        // reference in double
        std::vector<double> ref(s.m * s.n);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) {
            double acc = 0;
            for (int64_t p = 0; p < s.k; ++p) {
              const double x = check::to_float(oa == GPUOPS_OP_N ? ha[i * lda + p] : ha[p * lda + i]);
              const double y = check::to_float(ob == GPUOPS_OP_N ? hb[p * ldb + j] : hb[j * ldb + p]);
              acc += x * y;
            }
            ref[i * s.n + j] = acc;
          }
        T *da = (T *)check::to_device(ha), *db = (T *)check::to_device(hb);
        void *dc = nullptr;
        CHECK_CUDA(cudaMalloc(&dc, hc0.size() * sizeof(float)));
        const problem p = make_problem(da, db, s.m, s.n, s.k, lda, ldb, oa, ob);
        for (const variant &v : vs)
          for (int bi = 0; bi < 2; ++bi) {
            // f32 output where the variant has it, else output in the input type (then C's
            // values are rounded to it first, and the tolerance is the output's rounding).
            const bool f32 = (bool)v.run_f32;
            const size_t es = f32 ? 4 : 2;
            std::vector<float> c0 = hc0;
            std::vector<H> c16(hc0.size());
            if (!f32)
              for (size_t i = 0; i < c0.size(); ++i) c16[i] = check::from_float<H>(c0[i]), c0[i] = check::to_float(c16[i]);
            const float alpha = 1.5f, beta = bi ? 0.5f : 0.0f;
            if (bi) CHECK_CUDA(cudaMemcpy(dc, f32 ? (const void *)c0.data() : (const void *)c16.data(), c0.size() * es, cudaMemcpyHostToDevice));
            else check::poison(dc, c0.size() * es);  // NaN: beta = 0 must not read C
            const gpuops_status st = f32 ? v.run_f32(p, dc, ldc, alpha, beta, 8) : v.run_16(p, dc, ldc, alpha, beta, 8);
            const cudaError_t e = cudaDeviceSynchronize();
            std::vector<float> hc(c0.size());
            if (f32) hc = check::to_host((float *)dc, c0.size());
            else {
              std::vector<H> h16 = check::to_host((H *)dc, c0.size());
              for (size_t i = 0; i < hc.size(); ++i) hc[i] = check::to_float(h16[i]);
            }
            int64_t bad = 0, first = -1, guard = 0;
            double maxerr = 0;
            for (int64_t i = 0; i <= s.m; ++i)
              for (int64_t j = 0; j < ldc; ++j) {
                const float g = hc[i * ldc + j];
                if (i >= s.m || j >= s.n) {  // outside the output: untouched
                  if (bi ? !(g == c0[i * ldc + j]) : !std::isnan(g)) ++guard;
                  continue;
                }
                const double w = alpha * ref[i * s.n + j] + (bi ? beta * (double)c0[i * ldc + j] : 0.0);
                // f32 accumulation of k exact products; then the output's rounding
                const double tol = 1e-5 + 1e-6 * std::sqrt((double)s.k + 1) * (std::sqrt((double)s.k) + 1.0) + (f32 ? 0.0 : 8e-3 * std::fabs(w));
                const double d = std::fabs(g - w);
                if (!(d <= tol))
                  if (bad++ == 0) first = i * s.n + j;
                if (d > maxerr || d != d) maxerr = d;
              }
            const bool ok = st == GPUOPS_OK && e == cudaSuccess && bad == 0 && guard == 0;
            ok ? ++g_pass : ++g_fail;
            if (!ok)
              printf("FAIL small %s %-18s %s%s m=%lld n=%lld k=%lld beta=%.1f %s out: status %s, %s, %lld wrong (first %lld), %lld guard, max err %.3g\n",
                     tn, v.name.c_str(), opname(oa), opname(ob), (long long)s.m, (long long)s.n, (long long)s.k, beta, f32 ? "f32" : tn,
                     gpuops_status_string(st), cudaGetErrorString(e), (long long)bad, (long long)first, (long long)guard, maxerr);
            if (e != cudaSuccess) exit(1);
          }
        CHECK_CUDA(cudaFree(da));
        CHECK_CUDA(cudaFree(db));
        CHECK_CUDA(cudaFree(dc));
      }
  printf("small shapes vs CPU (%s): %d passed, %d failed so far\n", tn, g_pass, g_fail);
}

// ---- cuBLAS on row-major operands: C^T = op(B)^T op(A)^T in column-major terms ----
static cublasStatus_t cublas_gemm(cublasHandle_t h, const problem &p, void *c, int64_t ldc, cudaDataType ab, cudaDataType ct, float alpha,
                                  float beta) {
  return cublasGemmEx(h, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)p.n,
                      (int)p.m, (int)p.k, &alpha, p.b, ab, (int)p.ldb, p.a, ab, (int)p.lda, &beta, c, ct, (int)ldc, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT);
}

struct bufs {
  void *a = nullptr, *b = nullptr, *c = nullptr, *r = nullptr;
  size_t abytes = 0, bbytes = 0, cbytes = 0;
};
static void ensure(void **p, size_t &have, size_t want) {
  if (have >= want) return;
  if (*p) CHECK_CUDA(cudaFree(*p));
  CHECK_CUDA(cudaMalloc(p, want));
  have = want;
}

// ---- 2. Odd and decode shapes against cuBLAS ----
template <class T> void check_cublas(cublasHandle_t h, bufs &B, uint64_t seed) {
  const cudaDataType ab = std::is_same<T, __half>::value ? CUDA_R_16F : CUDA_R_16BF;
  const char *tn = std::is_same<T, __half>::value ? "f16" : "bf16";
  struct shp { int64_t m, n, k; };
  const shp shapes[] = {{4095, 4097, 1023}, {16, 4096, 4096}, {1, 4096, 1000}, {777, 1025, 2049}, {2048, 2048, 4096}};
  std::vector<variant> vs = selected<T>();
  size_t rbytes = 0;
  for (const shp &s : shapes)
    for (int la = 0; la < 2; ++la)
      for (int lb = 0; lb < 2; ++lb) {
        const gpuops_op oa = la ? GPUOPS_OP_T : GPUOPS_OP_N, ob = lb ? GPUOPS_OP_T : GPUOPS_OP_N;
        const int64_t ar = oa == GPUOPS_OP_N ? s.m : s.k, ac = oa == GPUOPS_OP_N ? s.k : s.m;
        const int64_t br = ob == GPUOPS_OP_N ? s.k : s.n, bc = ob == GPUOPS_OP_N ? s.n : s.k;
        const int64_t lda = pad8(ac), ldb = pad8(bc), ldc = s.n;
        ensure(&B.a, B.abytes, ar * lda * 2);
        ensure(&B.b, B.bbytes, br * ldb * 2);
        ensure(&B.c, B.cbytes, s.m * ldc * 4);
        ensure(&B.r, rbytes, s.m * ldc * 4);
        bench::fill_uniform((typename std::conditional<std::is_same<T, __half>::value, gpuops_f16, gpuops_bf16>::type *)B.a, ar * lda, seed + 1, -1, 1);
        bench::fill_uniform((typename std::conditional<std::is_same<T, __half>::value, gpuops_f16, gpuops_bf16>::type *)B.b, br * ldb, seed + 2, -1, 1);
        const problem p = make_problem(B.a, B.b, s.m, s.n, s.k, lda, ldb, oa, ob);
        CHECK_CUBLAS(cublas_gemm(h, p, B.r, ldc, ab, CUDA_R_32F, 1.0f, 0.0f));
        std::vector<float> want = check::to_host((float *)B.r, s.m * ldc);
        double wmax = 0;
        for (float x : want) wmax = std::max(wmax, (double)std::fabs(x));
        // 16-bit outputs against cuBLAS's f32 result, within their rounding (cuBLAS's own
        // 16-bit output is not always the rounded f32 sum: split-K partials, seen at 777 x 1025 x
        // 2049 with op_a = T)
        for (const variant &v : vs) {
          const bool f32 = (bool)v.run_f32;
          check::poison(B.c, s.m * ldc * 4);
          const gpuops_status st = f32 ? v.run_f32(p, B.c, ldc, 1.0f, 0.0f, 8) : v.run_16(p, B.c, ldc, 1.0f, 0.0f, 8);
          const cudaError_t e = cudaDeviceSynchronize();
          std::vector<float> got(s.m * ldc);
          if (f32) got = check::to_host((float *)B.c, s.m * ldc);
          else {
            std::vector<uint16_t> g16 = check::to_host((uint16_t *)B.c, s.m * ldc);
            for (size_t i = 0; i < got.size(); ++i) got[i] = to16(g16[i], tn);
          }
          int64_t bad = 0;
          double maxerr = 0;
          for (size_t i = 0; i < got.size(); ++i) {
            const double w = (double)want[i];
            const double d = std::fabs((double)got[i] - w);
            if (!(d <= 1e-5 * wmax + (f32 ? 1e-4 : 8e-3) * std::fabs(w))) ++bad;
            if (d > maxerr || d != d) maxerr = d;
          }
          const bool ok = st == GPUOPS_OK && e == cudaSuccess && bad == 0;
          ok ? ++g_pass : ++g_fail;
          printf("%s cublas %s %-18s %s%s %5lld x %5lld x %5lld %s out: %s, max |diff| / max |c| = %.2e%s\n", ok ? "ok  " : "FAIL", tn, v.name.c_str(),
                 opname(oa), opname(ob), (long long)s.m, (long long)s.n, (long long)s.k, f32 ? "f32" : tn, gpuops_status_string(st),
                 maxerr / (wmax > 0 ? wmax : 1), bad ? (" " + std::to_string(bad) + " wrong").c_str() : "");
          if (e != cudaSuccess) exit(1);
        }
      }
  CHECK_CUDA(cudaFree(B.r));
  B.r = nullptr;
}

// Elements of the m x n bf16 matrices (row stride ld) at x and y farther apart than bf16 rounding.
__global__ void count_far_kernel(const __nv_bfloat16 *x, const __nv_bfloat16 *y, int64_t m, int64_t n, int64_t ld, unsigned long long *out) {
  unsigned long long c = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * n; i += (int64_t)gridDim.x * blockDim.x) {
    const float a = __bfloat162float(x[(i / n) * ld + i % n]), b = __bfloat162float(y[(i / n) * ld + i % n]);
    c += !(fabsf(a - b) <= 1.6e-2f * fabsf(b) + 0.05f);
  }
  if (c) atomicAdd(out, c);
}
static long long count_far(const void *x, const void *y, int64_t m, int64_t n, int64_t ld) {
  unsigned long long *d = nullptr, h = 0;
  CHECK_CUDA(cudaMalloc(&d, sizeof h));
  CHECK_CUDA(cudaMemset(d, 0, sizeof h));
  count_far_kernel<<<1024, 256>>>((const __nv_bfloat16 *)x, (const __nv_bfloat16 *)y, m, n, ld, d);
  CHECK_CUDA(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d));
  return (long long)h;
}

// ---- 3. Timing, bf16 ----
static void time_all(cublasHandle_t h, bufs &B, uint64_t seed) {
  using T = __nv_bfloat16;
  bench::timer timer;
  struct shp { int64_t m, n, k; gpuops_op oa, ob; const char *what; };
  const shp shapes[] = {
      {4096, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "square"},       {4096, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_N, "square"},
      {8192, 8192, 8192, GPUOPS_OP_N, GPUOPS_OP_T, "square"},       {16384, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "tokens x 4096 -> 4096"},
      {16384, 11008, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "-> 11008"},   {16384, 4096, 11008, GPUOPS_OP_N, GPUOPS_OP_T, "11008 -> 4096"},
      {4095, 4097, 1023, GPUOPS_OP_N, GPUOPS_OP_T, "odd (ld % 8 = 0)"}, {16, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "decode M = 16"},
      {64, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "decode M = 64"},
  };
  std::vector<variant> vs = selected<T>();
  const double copy = bench::copy_ceiling(timer);
  const shp decode[] = {{16, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "decode M = 16"},   {64, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "decode M = 64"},
                        {16, 11008, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "decode M = 16"},  {64, 11008, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "decode M = 64"},
                        {16, 4096, 11008, GPUOPS_OP_N, GPUOPS_OP_T, "decode M = 16"}, {32, 4096, 4096, GPUOPS_OP_N, GPUOPS_OP_T, "decode M = 32"}};
  bench::table tab;
  tab.head = {"shape", "layout", "version", "group", "ms", "TFLOP/s", "x cuBLAS", "x copy (A+B+C)", "check"};
  const shp *first = g_decode ? decode : shapes, *last = g_decode ? decode + sizeof decode / sizeof *decode : shapes + sizeof shapes / sizeof *shapes;
  for (const shp *sp = first; sp != last; ++sp) {
    const shp &s = *sp;
    const int64_t ar = s.oa == GPUOPS_OP_N ? s.m : s.k, ac = s.oa == GPUOPS_OP_N ? s.k : s.m;
    const int64_t br = s.ob == GPUOPS_OP_N ? s.k : s.n, bc = s.ob == GPUOPS_OP_N ? s.n : s.k;
    const int64_t lda = pad8(ac), ldb = pad8(bc), ldc = pad8(s.n);
    ensure(&B.a, B.abytes, ar * lda * 2);
    ensure(&B.b, B.bbytes, br * ldb * 2);
    ensure(&B.c, B.cbytes, s.m * ldc * 2 * 2);  // C, then cuBLAS's C for the check
    bench::fill_uniform((gpuops_bf16 *)B.a, ar * lda, seed + 3, -1, 1);
    bench::fill_uniform((gpuops_bf16 *)B.b, br * ldb, seed + 4, -1, 1);
    void *cref = (char *)B.c + s.m * ldc * 2;
    const problem p = make_problem(B.a, B.b, s.m, s.n, s.k, lda, ldb, s.oa, s.ob);
    const double flops = 2.0 * s.m * s.n * s.k, bytes = 2.0 * (s.m * s.k + s.k * s.n + s.m * s.n);
    CHECK_CUBLAS(cublas_gemm(h, p, cref, ldc, CUDA_R_16BF, CUDA_R_16BF, 1.0f, 0.0f));
    const double cub = timer.median_ms([&] { CHECK_CUBLAS(cublas_gemm(h, p, cref, ldc, CUDA_R_16BF, CUDA_R_16BF, 1.0f, 0.0f)); });
    char shape[64], lay[8];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld %s", (long long)s.m, (long long)s.n, (long long)s.k, s.what);
    snprintf(lay, sizeof lay, "%s%s", opname(s.oa), opname(s.ob));
    tab.add({shape, lay, "cuBLAS", "-", bench::num(cub), bench::num(flops / cub / 1e9), "1.00", bench::fmt("%.2f", bytes / cub / 1e6 / copy), "-"});
    if (s.m == 4095) {  // cuBLAS on the tight leading dimensions this kernel cannot take (TMA: 16-byte rows)
      void *a2 = nullptr, *b2 = nullptr, *c2 = nullptr;
      CHECK_CUDA(cudaMalloc(&a2, ar * ac * 2));
      CHECK_CUDA(cudaMalloc(&b2, br * bc * 2));
      CHECK_CUDA(cudaMalloc(&c2, s.m * s.n * 2));
      bench::fill_uniform((gpuops_bf16 *)a2, ar * ac, seed + 5, -1, 1);
      bench::fill_uniform((gpuops_bf16 *)b2, br * bc, seed + 6, -1, 1);
      const problem q = make_problem(a2, b2, s.m, s.n, s.k, ac, bc, s.oa, s.ob);
      const double t2 = timer.median_ms([&] { CHECK_CUBLAS(cublas_gemm(h, q, c2, s.n, CUDA_R_16BF, CUDA_R_16BF, 1.0f, 0.0f)); });
      tab.add({shape, lay, "cuBLAS tight ld", "-", bench::num(t2), bench::num(flops / t2 / 1e9), bench::fmt("%.3f", cub / t2), bench::fmt("%.2f", bytes / t2 / 1e6 / copy), "-"});
      CHECK_CUDA(cudaFree(a2));
      CHECK_CUDA(cudaFree(b2));
      CHECK_CUDA(cudaFree(c2));
    }
    for (const variant &v : vs)
      for (int group : {8, 16}) {
        if (v.name == "dispatch" && group != 8) continue;
        check::poison(B.c, s.m * ldc * 2);
        const gpuops_status st = v.run_16(p, B.c, ldc, 1.0f, 0.0f, group);
        CHECK_CUDA(cudaDeviceSynchronize());
        if (st != GPUOPS_OK) {
          tab.add({shape, lay, v.name, std::to_string(group), "-", "-", "-", "-", gpuops_status_string(st)});
          continue;
        }
        // check: every element within bf16 rounding of cuBLAS's (summation order and rounding)
        const unsigned long long differ = bench::differing_bytes(B.c, cref, s.m * ldc * 2);
        const long long bad = count_far(B.c, cref, s.m, s.n, ldc);
        const double ms = timer.median_ms([&] { v.run_16(p, B.c, ldc, 1.0f, 0.0f, group); });
        bad ? ++g_fail : ++g_pass;
        tab.add({shape, lay, v.name, std::to_string(group), bench::num(ms), bench::num(flops / ms / 1e9), bench::fmt("%.3f", cub / ms),
                 bench::fmt("%.2f", bytes / ms / 1e6 / copy), bad ? bench::fmt("FAIL %lld", bad) : bench::fmt("ok (%llu B differ)", differ)});
        printf("  %s %s %s group %d: %.3f ms, %.3fx cuBLAS%s\n", shape, lay, v.name.c_str(), group, ms, cub / ms, bad ? " FAIL" : "");
      }
  }
  tab.print();
  tab.write_csv("build/tune_wgmma.csv");
}

int main(int argc, char **argv) {
  bool quick = false, chk = false, tim = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--check")) chk = true;
    else if (!strcmp(argv[i], "--time")) tim = true;
    else if (!strcmp(argv[i], "--decode")) tim = g_decode = true;
    else if (!strcmp(argv[i], "--variant") && i + 1 < argc) g_only = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--exclude") && i + 1 < argc)
      for (char *t = strtok(argv[++i], ","); t; t = strtok(nullptr, ",")) g_exclude.push_back(atoi(t));
    else if (!strcmp(argv[i], "--list")) {
      std::vector<variant> v = variants<__nv_bfloat16>();
      const bool gpu = check::have_gpu();
      for (size_t j = 0; j < v.size(); ++j)
        printf("%zu %s%s\n", j, v[j].name.c_str(), gpu && v[j].resident ? bench::fmt(" (%d clusters resident)", v[j].resident()).c_str() : "");
      return 0;
    }
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line: a log cut short still shows where
  if (!chk && !tim) chk = tim = !quick;
  if (!check::have_gpu()) {
    printf("tune_wgmma needs a CUDA GPU; none was found.\n");
    return 0;
  }
  const bench::device_info d = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(d, seed);
  check::rng rng(seed);
  if (chk || quick) {
    check_small<__nv_bfloat16>(rng, quick);
    if (g_only <= 0) check_small<__half>(rng, quick);
  }
  if (quick) {
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
  }
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  bufs B;
  if (chk) {
    check_cublas<__nv_bfloat16>(h, B, seed);
    if (g_only <= 0) check_cublas<__half>(h, B, seed + 10);
  }
  if (tim) time_all(h, B, seed);
  cublasDestroy(h);
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
