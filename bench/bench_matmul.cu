// SPDX-License-Identifier: MIT
// bench/bench_matmul.cu - f32 matrix multiply on CUDA cores against cuBLAS SGEMM, in the same run:
// every version at 1024^2..8192^2 squares and at 4095x4097x1023, 1x4096x4096 and 4096x1x4096,
// each WARP_TILED tile configuration on its own, AUTO in the four layouts at 4096^3, AUTO and
// WARP_TILED on skinny products m x 4096 x 4096 (m = 1, 2, 8, 16, 32, 64; NN and NT: GEMV and the
// few-rows kernels, memory-bound on B, so also GB/s of B's bytes and x the copy ceiling), and
// cublasSgemm last (row-major through C^T = op(B)^T op(A)^T in column-major; math mode
// CUBLAS_DEFAULT_MATH, which never uses TF32 for cublasSgemm unless NVIDIA_TF32_OVERRIDE=1 is
// set, which this program refuses). NAIVE is skipped past 2048; slow versions run fewer reps.
// Every version is validated against cuBLAS before it is timed, with the rigorous bound
// |ours - cublas| <= 2 (k + 2) 2^-23 (|A| |B|)(i, j), where |A| |B| is computed by cuBLAS too.
// TFLOP/s counts 2 m n k flops (beta = 0). Writes every row as CSV.
//   usage: bench_matmul [--csv PATH] [--quick]   (--quick: 1024 and 4096 squares, the odd shapes,
//   skinny m = 1, 16, 64)
#define GPUOPS_ONLY_MATMUL
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cublas_v2.h>
#include <string.h>

#include <functional>
#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"

using std::string;
using std::vector;

// y = |x|, for the error bound's |A| |B|.
__global__ void mm_abs(float *y, const float *x, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) y[i] = fabsf(x[i]);
}

// Row-major C = alpha op(A) op(B) + beta C with cuBLAS (column-major): C^T = op(B)^T op(A)^T.
static void cublas_rowmajor(cublasHandle_t h, float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k, int64_t lda,
                            int64_t ldb, int64_t ldc, gpuops_op oa, gpuops_op ob) {
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(cublasSgemm(h, ob == GPUOPS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, oa == GPUOPS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, (int)n, (int)m,
                           (int)k, &one, b, (int)ldb, a, (int)lda, &zero, c, (int)ldc));
}

struct row {
  string shape, layout, version;
  int64_t m, n, k;
  double us, tflops, x_cublas;
  string check;
  double b_gbps;  // B's bytes (4 k n, 1e9 per second): the roofline of a skinny product
};

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_matmul");
  if (!opt.have_gpu()) return 0;
  const char *tf32 = getenv("NVIDIA_TF32_OVERRIDE");
  if (tf32 && strcmp(tf32, "0") != 0) {
    printf("NVIDIA_TF32_OVERRIDE=%s would let cuBLAS use TF32; unset it.\n", tf32);
    return 1;
  }
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer timer;
  const double copy = bench::copy_ceiling(timer);
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));  // FP32 FFMA; no TF32 tensor cores
  printf("f32 matmul, row-major, beta = 0, against cublasSgemm (CUBLAS_DEFAULT_MATH, no TF32) in the same run\n\n");

  struct shape { int64_t m, n, k; };
  vector<shape> shapes = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                          {4095, 4097, 1023}, {1, 4096, 4096}, {4096, 1, 4096}};
  if (opt.quick) shapes = {{1024, 1024, 1024}, {4096, 4096, 4096}, {4095, 4097, 1023}, {1, 4096, 4096}, {4096, 1, 4096}};
  vector<int64_t> skinny = {1, 2, 8, 16, 32, 64};
  if (opt.quick) skinny = {1, 16, 64};
  int64_t most = 0;
  for (const shape &s : shapes) most = std::max(most, std::max(s.m * s.k, std::max(s.k * s.n, s.m * s.n)));
  for (int64_t m : skinny) most = std::max(most, std::max(m * 4096, (int64_t)4096 * 4096));
  float *a, *b, *c, *ref, *abs_a, *abs_b, *bound;
  for (float **p : {&a, &b, &c, &ref, &abs_a, &abs_b, &bound}) CHECK_CUDA(cudaMalloc(p, (size_t)most * sizeof(float)));
  timer.settle();
  bench::fill_uniform(a, most, seed, -1.0f, 1.0f);
  bench::fill_uniform(b, most, seed + 1, -1.0f, 1.0f);
  mm_abs<<<1024, 256>>>(abs_a, a, most);
  mm_abs<<<1024, 256>>>(abs_b, b, most);
  CHECK_CUDA(cudaDeviceSynchronize());

  vector<row> rows;
  int failures = 0;
  auto run_shape = [&](const shape &s, gpuops_op oa, gpuops_op ob, bool all_versions, bool with_warp_tiled = false) {
    const int64_t m = s.m, n = s.n, k = s.k, lda = oa == GPUOPS_OP_N ? k : m, ldb = ob == GPUOPS_OP_N ? n : k, ldc = n;
    const double flops = 2.0 * (double)m * (double)n * (double)k;
    const string sh = bench::fmt("%lldx%lldx%lld", (long long)m, (long long)n, (long long)k);
    const char *layout = oa == GPUOPS_OP_N ? (ob == GPUOPS_OP_N ? "NN" : "NT") : (ob == GPUOPS_OP_N ? "TN" : "TT");
    cublas_rowmajor(handle, ref, a, b, m, n, k, lda, ldb, ldc, oa, ob);
    cublas_rowmajor(handle, bound, abs_a, abs_b, m, n, k, lda, ldb, ldc, oa, ob);
    CHECK_CUDA(cudaDeviceSynchronize());
    const vector<float> want = check::to_host(ref, (size_t)(m * n)), bnd = check::to_host(bound, (size_t)(m * n));
    // Times run() with reps chosen so that slow versions take about a second.
    auto time_it = [&](const std::function<void()> &run) {
      bench::timer &t = timer;
      const double once = t.median_ms(run, 1, 1);
      const int reps = once > 200 ? 3 : once > 40 ? 5 : 25;
      return t.median_ms(run, reps, 1);
    };
    const double cublas_ms = time_it([&] { cublas_rowmajor(handle, c, a, b, m, n, k, lda, ldb, ldc, oa, ob); });
    struct version {
      string name;
      std::function<gpuops_status()> run;
    };
    vector<version> versions;
    auto api = [&](gpuops_algo al) {
      return [=] { return gpuops_matmul_f32(c, a, b, m, n, k, lda, ldb, ldc, 1.0f, 0.0f, oa, ob, al, nullptr); };
    };
    versions.push_back({"auto", api(GPUOPS_ALGO_AUTO)});
    if (with_warp_tiled && !all_versions) versions.push_back({gpuops_algo_name(GPUOPS_ALGO_WARP_TILED), api(GPUOPS_ALGO_WARP_TILED)});
    if (all_versions) {
      if (std::max(m, std::max(n, k)) <= 2048) versions.push_back({"naive", api(GPUOPS_ALGO_NAIVE)});
      for (gpuops_algo al : {GPUOPS_ALGO_COALESCED, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_REGISTER_1D, GPUOPS_ALGO_REGISTER_2D,
                             GPUOPS_ALGO_VECTORIZED, GPUOPS_ALGO_WARP_TILED})
        versions.push_back({gpuops_algo_name(al), api(al)});
      const char *configs[] = {"", "warp-tiled 128x128", "warp-tiled 128x256", "warp-tiled 64x64"};
      for (int cfg = 1; cfg <= 3; ++cfg)
        versions.push_back({configs[cfg], [=] {
                              gpuops__mm_args r = gpuops__mm_make(c, a, b, m, n, k, lda, ldb, ldc, 1.0f, 0.0f, oa, ob);
                              r.algo = GPUOPS_ALGO_WARP_TILED;
                              return gpuops::matmul_warp_tiled_config(r, cfg);
                            }});
    }
    const double rel = 2.0 * (double)(k + 2) * 1.1920929e-7;
    for (const version &v : versions) {
      check::poison(c, (size_t)(m * n) * sizeof(float));
      const gpuops_status st = v.run();
      CHECK_CUDA(cudaDeviceSynchronize());
      string verdict = "ok";
      if (st != GPUOPS_OK) {
        verdict = string("FAIL ") + gpuops_status_string(st);
      } else {
        const vector<float> got = check::to_host(c, (size_t)(m * n));
        int64_t bad = 0, first = -1;
        for (int64_t e = 0; e < m * n; ++e)
          if (!(fabs((double)got[e] - want[e]) <= rel * bnd[e])) bad += 1, first = first < 0 ? e : first;
        if (bad) verdict = bench::fmt("FAIL %lld wrong, first C[%lld] = %g, want %g", (long long)bad, (long long)first, got[first], want[first]);
      }
      double ms = NAN;
      if (verdict == "ok") ms = time_it([&] { CHECK_OK(v.run()); });
      else ++failures, printf("VALIDATION FAILED %s %s %s: %s\n", sh.c_str(), layout, v.name.c_str(), verdict.c_str());
      rows.push_back({sh, layout, v.name, m, n, k, 1e3 * ms, flops / (ms * 1e9), cublas_ms / ms, verdict, 4e-6 * (double)(k * n) / ms});
    }
    rows.push_back({sh, layout, "cublas", m, n, k, 1e3 * cublas_ms, flops / (cublas_ms * 1e9), 1.0, "reference", 4e-6 * (double)(k * n) / cublas_ms});
  };
  for (const shape &s : shapes) run_shape(s, GPUOPS_OP_N, GPUOPS_OP_N, true);
  for (gpuops_op oa : {GPUOPS_OP_N, GPUOPS_OP_T})
    for (gpuops_op ob : {GPUOPS_OP_N, GPUOPS_OP_T})
      if (oa == GPUOPS_OP_T || ob == GPUOPS_OP_T) run_shape({4096, 4096, 4096}, oa, ob, false);
  for (gpuops_op ob : {GPUOPS_OP_N, GPUOPS_OP_T})
    for (int64_t m : skinny) run_shape({m, 4096, 4096}, GPUOPS_OP_N, ob, false, true);

  bench::table t;
  t.head = {"shape", "layout", "version", "time (us)", "TFLOP/s", "x cuBLAS", "B GB/s", "B x copy", "check"};
  auto is_skinny = [](const row &r) { return r.m <= 64 && r.m < r.n; };
  for (const row &r : rows)
    t.add({r.shape, r.layout, r.version, bench::num(r.us), bench::fmt("%.2f", r.tflops), bench::fmt("%.3f", r.x_cublas),
           is_skinny(r) ? bench::fmt("%.0f", r.b_gbps) : "-", is_skinny(r) ? bench::fmt("%.3f", r.b_gbps / copy) : "-", r.check});
  t.print();

  bench::table all;
  all.head = {"family", "op", "m", "n", "k", "layout", "version", "time_us", "tflops", "x_cublas", "b_gbps", "b_x_copy", "check", "device"};
  for (const row &r : rows)
    all.add({"matmul", "sgemm", std::to_string(r.m), std::to_string(r.n), std::to_string(r.k), r.layout, r.version, bench::fmt("%.3f", r.us),
             bench::fmt("%.3f", r.tflops), bench::fmt("%.4f", r.x_cublas), bench::fmt("%.1f", r.b_gbps), bench::fmt("%.4f", r.b_gbps / copy), r.check,
             dev.name});
  all.write_csv(opt.csv);

  // The targets: best version >= 0.90x cuBLAS at 4096^3, >= 0.80x at 4095x4097x1023; AUTO >= 0.90x
  // cuBLAS at 1x4096x4096 (GEMV), and on the few-rows products >= 1.0x cuBLAS and (memory-bound
  // ones, m <= 16) >= 0.80x the copy ceiling on B's bytes.
  auto best = [&](const string &sh) {
    const row *b = nullptr;
    for (const row &r : rows)
      if (r.shape == sh && r.layout == "NN" && r.version != "cublas" && r.check == "ok" && (!b || r.x_cublas > b->x_cublas)) b = &r;
    return b;
  };
  printf("\n");
  for (auto target : {std::make_pair(string("4096x4096x4096"), 0.90), std::make_pair(string("4095x4097x1023"), 0.80)}) {
    const row *b = best(target.first);
    if (b) printf("best at %s: %s, %.2f TFLOP/s = %.3fx cuBLAS (target %.2fx: %s)\n", target.first.c_str(), b->version.c_str(), b->tflops,
                  b->x_cublas, target.second, b->x_cublas >= target.second ? "met" : "NOT met");
  }
  for (const row &r : rows) {
    if (r.version != "auto" || r.n != 4096 || r.k != 4096 || r.m > 64) continue;
    const double want_cublas = r.m == 1 ? 0.90 : 1.0, want_copy = r.m > 1 && r.m <= 16 ? 0.80 : 0.0;
    const bool met = r.check == "ok" && r.x_cublas >= want_cublas && r.b_gbps / copy >= want_copy;
    printf("auto at %s %s: %.1f us, %.3fx cuBLAS (target %.2fx), B %.0f GB/s = %.3fx copy (target %.2fx): %s\n", r.shape.c_str(),
           r.layout.c_str(), r.us, r.x_cublas, want_cublas, r.b_gbps, r.b_gbps / copy, want_copy, met ? "met" : "NOT met");
  }
  printf("wrote %s; %d validation failures\n", opt.csv.c_str(), failures);
  CHECK_CUBLAS(cublasDestroy(handle));
  for (float *p : {a, b, c, ref, abs_a, abs_b, bound}) CHECK_CUDA(cudaFree(p));
  return failures ? 1 : 0;
}
