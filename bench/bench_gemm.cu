// SPDX-License-Identifier: MIT
// bench/bench_gemm.cu - tensor-core matrix multiply (bf16 operands, f32 accumulation, bf16 C)
// against cuBLAS and cuBLASLt in the same run:
//   squares 1024^3 .. 8192^3 (NN) with every version and every MMA_SYNC configuration forced;
//   the four layouts at 4096^3 (AUTO);
//   transformer layers y = x W^T (NT: x tokens x in, W out x in) for tokens 4096, 8192, 16384 and
//   4096 -> 4096, 4096 -> 11008, 11008 -> 4096, plain and with the fused bias + GELU epilogue
//   (tanh form, beside cuBLASLt's CUBLASLT_EPILOGUE_GELU_BIAS, which computes the tanh form too;
//   and our exact erf form, which cuBLASLt lacks);
//   odd shapes 4095 x 4097 x 1023 (NN: odd leading dimensions, 2-byte copies) and 4095^3 (NT), where
//   WGMMA, whose TMA needs rows of whole 16 bytes, reads "unsupported here (misaligned)";
//   decode-style rows m = 1, 8, 16, 32, 64 of y = x W^T with W 4096 x 4096 and 11008 x 4096,
//   as bandwidth on W's bytes against the copy ceiling.
// cuBLAS is cublasGemmEx (CUDA_R_16BF in and out, CUBLAS_COMPUTE_32F, default algorithm) in
// row-major form (C^T = op(B)^T op(A)^T); cuBLASLt runs the fused rows with its heuristic's first
// algorithm and a 32 MiB workspace. Every version is validated against cuBLAS before it is timed:
// |ours - cublas| <= 2 (k + 2) 2^-23 (|A| |B|)(i, j) + 2^-7 |cublas| (+ 2^-6 |x| for the GELU
// rows: the two libraries' GELU evaluations), |A| |B| computed by cuBLAS too. Timing as
// bench/harness.h: L2 flushed before each run, median of 25 after warm-up. TFLOP/s counts 2 m n k.
// Writes every row as CSV.
//   usage: bench_gemm [--csv PATH] [--quick] [--only GROUP]   (--quick: 4096^3, one transformer shape, odd,
//          decode; --only: the shapes of one group: square, layout, transformer, odd, decode)
#define GPUOPS_ONLY_GEMM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <string.h>

#include <functional>
#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "gemm_ops.h"

using std::string;
using std::vector;
using bf16 = gpuops_bf16;

__global__ void abs_bf16(__nv_bfloat16 *y, const __nv_bfloat16 *x, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) y[i] = __habs(x[i]);
}

// Row-major C = op(A) op(B) through cuBLAS (column-major): C^T = op(B)^T op(A)^T.
template <class TC>
static void cublas_rowmajor(cublasHandle_t h, TC *c, const bf16 *a, const bf16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                            int64_t ldc, gpuops_op oa, gpuops_op ob) {
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType ct = std::is_same<TC, float>::value ? CUDA_R_32F : CUDA_R_16BF;
  CHECK_CUBLAS(cublasGemmEx(h, ob == GPUOPS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, oa == GPUOPS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, (int)n, (int)m,
                            (int)k, &one, b, CUDA_R_16BF, (int)ldb, a, CUDA_R_16BF, (int)lda, &zero, c, ct, (int)ldc, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
}

// cuBLASLt y = gelu_tanh(x W^T + bias), row-major (x: m x k, W: n x k, y: m x n), bf16: as
// column-major y^T (n x m) = W (op T of its k x n storage) x^T, the bias per row of y^T.
struct lt_gelu {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo;
  void *ws;
  size_t ws_bytes;
  bool ok = false;
  lt_gelu(cublasLtHandle_t h_, void *ws_, size_t wsb, int64_t m, int64_t n, int64_t k, const bf16 *bias) : h(h_), ws(ws_), ws_bytes(wsb) {
    const cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
    const cudaDataType bt = CUDA_R_16BF;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, (uint64_t)k, (uint64_t)n, (int64_t)k));  // W as stored: k x n col-major
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, (int64_t)k));  // x^T: k x m col-major
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, (uint64_t)n, (uint64_t)m, (int64_t)n));  // y^T: n x m col-major
    cublasLtMatmulPreference_t pref;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    ok = cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, 1, &res, &found) == CUBLAS_STATUS_SUCCESS && found > 0;
    if (ok) algo = res.algo;
    cublasLtMatmulPreferenceDestroy(pref);
  }
  void run(bf16 *y, const bf16 *x, const bf16 *w) const {
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasLtMatmul(h, desc, &one, w, la, x, lb, &zero, y, lc, y, lc, &algo, ws, ws_bytes, 0));
  }
  ~lt_gelu() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

struct row {
  string group, shape, layout, version;
  int64_t m, n, k;
  double us, tflops, x_ref, gbps, x_copy;
  string ref, check;
};

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_gemm");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer timer;
  const double copy = bench::copy_ceiling(timer);
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  cublasLtHandle_t lt;
  CHECK_CUBLAS(cublasLtCreate(&lt));
  printf("bf16 GEMM, f32 accumulation, bf16 C, row-major, beta = 0, against cublasGemmEx / cuBLASLt in the same run\n\n");

  struct shape { const char *group; int64_t m, n, k; gpuops_op oa, ob; bool all, fused; };
  vector<shape> shapes;
  const gpuops_op N_ = GPUOPS_OP_N, T_ = GPUOPS_OP_T;
  if (!opt.quick) {
    for (int64_t s : {1024, 2048, 4096, 8192}) shapes.push_back({"square", s, s, s, N_, N_, true, false});
    for (int o = 1; o < 4; ++o) shapes.push_back({"layout", 4096, 4096, 4096, (gpuops_op)(o >> 1), (gpuops_op)(o & 1), false, false});
    for (int64_t t : {4096, 8192, 16384})
      for (auto io : {std::make_pair(4096, 4096), std::make_pair(4096, 11008), std::make_pair(11008, 4096)})
        shapes.push_back({"transformer", t, io.second, io.first, N_, T_, t == 4096, true});
  } else {
    shapes.push_back({"square", 4096, 4096, 4096, N_, N_, true, false});
    shapes.push_back({"transformer", 8192, 11008, 4096, N_, T_, true, true});
  }
  shapes.push_back({"odd", 4095, 4097, 1023, N_, N_, true, false});
  shapes.push_back({"odd", 4095, 4095, 4095, N_, T_, true, false});
  for (int64_t m : {1, 8, 16, 32, 64}) {
    shapes.push_back({"decode", m, 4096, 4096, N_, T_, m == 16, false});
    shapes.push_back({"decode", m, 11008, 4096, N_, T_, false, false});
  }
  if (!opt.only.empty())  // --only GROUP: that group's shapes alone
    shapes.erase(std::remove_if(shapes.begin(), shapes.end(), [&](const shape &s) { return opt.only != s.group; }), shapes.end());
  int64_t most_a = 0, most_b = 0, most_c = 0;
  for (const shape &s : shapes) most_a = std::max(most_a, s.m * s.k), most_b = std::max(most_b, s.k * s.n), most_c = std::max(most_c, s.m * s.n);
  bf16 *a, *b, *c, *ref, *abs_a, *abs_b, *bias;
  float *bound;
  for (bf16 **p : {&a, &abs_a}) CHECK_CUDA(cudaMalloc(p, most_a * 2));
  for (bf16 **p : {&b, &abs_b}) CHECK_CUDA(cudaMalloc(p, most_b * 2));
  for (bf16 **p : {&c, &ref}) CHECK_CUDA(cudaMalloc(p, most_c * 2));
  CHECK_CUDA(cudaMalloc(&bound, most_c * 4));
  CHECK_CUDA(cudaMalloc(&bias, 16384 * 2));
  const size_t lt_ws_bytes = 32u << 20;
  void *lt_ws;
  CHECK_CUDA(cudaMalloc(&lt_ws, lt_ws_bytes));
  timer.settle();
  bench::fill_uniform(a, most_a, seed, -1.0f, 1.0f);
  bench::fill_uniform(b, most_b, seed + 1, -1.0f, 1.0f);
  bench::fill_uniform(bias, 16384, seed + 2, -1.0f, 1.0f);
  abs_bf16<<<1024, 256>>>((__nv_bfloat16 *)abs_a, (const __nv_bfloat16 *)a, most_a);
  abs_bf16<<<1024, 256>>>((__nv_bfloat16 *)abs_b, (const __nv_bfloat16 *)b, most_b);
  CHECK_CUDA(cudaDeviceSynchronize());

  vector<row> rows;
  int failures = 0;
  for (const shape &s : shapes) {
    const int64_t m = s.m, n = s.n, k = s.k, lda = s.oa == N_ ? k : m, ldb = s.ob == N_ ? n : k, ldc = n;
    const double flops = 2.0 * (double)m * n * k, wbytes = 2.0 * (double)n * k;
    const string sh = bench::fmt("%lldx%lldx%lld", (long long)m, (long long)n, (long long)k);
    const char *layout = s.oa == N_ ? (s.ob == N_ ? "NN" : "NT") : (s.ob == N_ ? "TN" : "TT");
    cublas_rowmajor(handle, bound, abs_a, abs_b, m, n, k, lda, ldb, ldc, s.oa, s.ob);
    cublas_rowmajor(handle, ref, a, b, m, n, k, lda, ldb, ldc, s.oa, s.ob);
    CHECK_CUDA(cudaDeviceSynchronize());
    const vector<bf16> want = check::to_host(ref, (size_t)(m * n));
    const vector<float> bnd = check::to_host(bound, (size_t)(m * n));
    auto validate = [&](const bf16 *got_d, const vector<bf16> &w, double gelu_slack) -> string {
      const vector<bf16> got = check::to_host(got_d, (size_t)(m * n));
      const double rel = 2.0 * (double)(k + 2) * 0x1p-23;
      int64_t bad = 0, first = -1;
      for (int64_t e = 0; e < m * n; ++e) {
        const double g = check::to_float(got[e]), x = check::to_float(w[e]);
        if (!(fabs(g - x) <= rel * bnd[e] + 0x1p-7 * fabs(x) + gelu_slack * (bnd[e] + 1.0))) bad += 1, first = first < 0 ? e : first;
      }
      if (!bad) return "ok";
      return bench::fmt("FAIL %lld wrong, first [%lld] = %g, want %g", (long long)bad, (long long)first, check::to_float(got[first]),
                        check::to_float(w[first]));
    };
    auto time_it = [&](const std::function<void()> &run) { return timer.median_ms(run, 25, 3); };
    const double cublas_ms = time_it([&] { cublas_rowmajor(handle, c, a, b, m, n, k, lda, ldb, ldc, s.oa, s.ob); });
    struct version {
      string name;
      std::function<gpuops_status()> run;
      bool tma = false;  // WGMMA: operands the TMA cannot take are refused (misaligned), not a failure
    };
    vector<version> versions;
    auto api = [&](gpuops_algo al) {
      return [=] { return gpuops_gemm_bf16(c, a, b, m, n, k, lda, ldb, ldc, 1.0f, 0.0f, s.oa, s.ob, nullptr, al, nullptr); };
    };
    versions.push_back({"auto", api(GPUOPS_ALGO_AUTO)});
    if (s.all) {
      for (gpuops_algo al : {GPUOPS_ALGO_WMMA, GPUOPS_ALGO_MMA_SYNC, GPUOPS_ALGO_WGMMA}) versions.push_back({gpuops_algo_name(al), api(al), al == GPUOPS_ALGO_WGMMA});
      const char *configs[] = {"", "mma-sync 256x128", "mma-sync skinny", "mma-sync staged"};
      for (int cfg = 1; cfg <= 3; ++cfg)
        versions.push_back({configs[cfg], [=] {
                              gpuops__gemm_args r = gpuops__gemm_make(GPUOPS__BF16, GPUOPS__BF16, c, a, b, m, n, k, lda, ldb, ldc, 1.0f, 0.0f, s.oa, s.ob, nullptr);
                              return gpuops::gemm_run_mma<__nv_bfloat16, __nv_bfloat16>(gpuops::gemm_params_of(r), gpuops::gemm_epilogue_of<__nv_bfloat16>(r), cfg, nullptr);
                            }});
    }
    auto add_row = [&](const string &version, double ms, double ref_ms, const string &refname, const string &verdict) {
      rows.push_back({s.group, sh, layout, version, m, n, k, 1e3 * ms, flops / (ms * 1e9), ref_ms / ms, wbytes / (ms * 1e6), wbytes / (ms * 1e6) / copy,
                      refname, verdict});
    };
    for (const version &v : versions) {
      check::poison(c, (size_t)(m * n) * 2);
      const gpuops_status st = v.run();
      CHECK_CUDA(cudaDeviceSynchronize());
      if (st == GPUOPS_ERR_UNSUPPORTED || (v.tma && st == GPUOPS_ERR_MISALIGNED)) {
        add_row(v.name, NAN, cublas_ms, "cublas", st == GPUOPS_ERR_UNSUPPORTED ? "unsupported here" : "unsupported here (misaligned)");
        continue;
      }
      const string verdict = st != GPUOPS_OK ? string("FAIL ") + gpuops_status_string(st) : validate(c, want, 0.0);
      double ms = NAN;
      if (verdict == "ok") ms = time_it([&] { CHECK_OK(v.run()); });
      else ++failures, printf("VALIDATION FAILED %s %s %s: %s\n", sh.c_str(), layout, v.name.c_str(), verdict.c_str());
      add_row(v.name, ms, cublas_ms, "cublas", verdict);
    }
    add_row("cublas", cublas_ms, cublas_ms, "cublas", "reference");
    if (s.fused) {  // y = gelu(x W^T + bias): cuBLASLt's fused epilogue against ours
      lt_gelu g(lt, lt_ws, lt_ws_bytes, m, n, k, bias);
      if (!g.ok) {
        add_row("cublaslt bias+gelu", NAN, NAN, "cublaslt", "no cuBLASLt algorithm");
        continue;
      }
      g.run(ref, a, b);
      CHECK_CUDA(cudaDeviceSynchronize());
      const vector<bf16> want_g = check::to_host(ref, (size_t)(m * n));
      const double lt_ms = time_it([&] { g.run(c, a, b); });
      add_row("cublaslt bias+gelu", lt_ms, lt_ms, "cublaslt", "reference");
      for (gpuops_activation act : {GPUOPS_ACT_GELU_TANH, GPUOPS_ACT_GELU_ERF}) {
        gpuops_epilogue e = {bias, nullptr, nullptr, 0, 0, act};
        auto run = [&] { return gpuops_gemm_bf16(c, a, b, m, n, k, lda, ldb, ldc, 1.0f, 0.0f, s.oa, s.ob, &e, GPUOPS_ALGO_AUTO, nullptr); };
        check::poison(c, (size_t)(m * n) * 2);
        const gpuops_status st = run();
        CHECK_CUDA(cudaDeviceSynchronize());
        // The erf form differs from the tanh form by up to about 2e-4 x |x| (plus bf16 roundings).
        const string verdict = st != GPUOPS_OK ? string("FAIL ") + gpuops_status_string(st) : validate(c, want_g, act == GPUOPS_ACT_GELU_TANH ? 0x1p-6 : 0x1p-5);
        double ms = NAN;
        if (verdict == "ok") ms = time_it([&] { CHECK_OK(run()); });
        else ++failures, printf("VALIDATION FAILED %s fused %s: %s\n", sh.c_str(), gemm_act_name(act), verdict.c_str());
        add_row(act == GPUOPS_ACT_GELU_TANH ? "auto bias+gelu-tanh" : "auto bias+gelu-erf", ms, lt_ms, "cublaslt", verdict);
      }
    }
    printf("%s %s done\n", sh.c_str(), layout);
    fflush(stdout);
  }

  bench::table t;
  t.head = {"group", "shape", "layout", "version", "time (us)", "TFLOP/s", "x ref", "ref", "W GB/s", "x copy", "check"};
  for (const row &r : rows)
    t.add({r.group, r.shape, r.layout, r.version, bench::num(r.us), bench::fmt("%.1f", r.tflops), bench::fmt("%.3f", r.x_ref), r.ref,
           r.group == "decode" ? bench::num(r.gbps) : "-", r.group == "decode" ? bench::fmt("%.3f", r.x_copy) : "-", r.check});
  t.print();
  bench::table all;
  all.head = {"family", "group", "m", "n", "k", "layout", "version", "time_us", "tflops", "x_ref", "ref", "w_gb_per_s", "x_copy", "check", "device"};
  for (const row &r : rows)
    all.add({"gemm", r.group, std::to_string(r.m), std::to_string(r.n), std::to_string(r.k), r.layout, r.version, bench::fmt("%.3f", r.us),
             bench::fmt("%.3f", r.tflops), bench::fmt("%.4f", r.x_ref), r.ref, bench::fmt("%.1f", r.gbps), bench::fmt("%.4f", r.x_copy), r.check, dev.name});
  all.write_csv(opt.csv);

  // The targets of the tensor-core step.
  auto find = [&](const string &sh, const string &layout, const string &version) -> const row * {
    for (const row &r : rows)
      if (r.shape == sh && r.layout == layout && r.version == version && r.check == "ok") return &r;
    return nullptr;
  };
  printf("\ntargets (bf16, x cuBLAS unless noted):\n");
  auto target = [&](const char *what, const row *r, double want, bool copy_ratio = false) {
    if (!r) return (void)printf("  %-44s -\n", what);
    const double v = copy_ratio ? r->x_copy : r->x_ref;
    printf("  %-44s %.3f%s (target %.2f: %s)\n", what, v, copy_ratio ? "x copy" : "x", want, v >= want ? "met" : "NOT met");
  };
  target("wmma 4096^3", find("4096x4096x4096", "NN", "wmma"), 0.40);
  target("mma-sync 4096^3", find("4096x4096x4096", "NN", "mma-sync"), 0.70);
  target("wgmma 4096^3", find("4096x4096x4096", "NN", "wgmma"), 0.90);
  target("wgmma 8192^3", find("8192x8192x8192", "NN", "wgmma"), 0.90);
  target("auto 4095x4097x1023", find("4095x4097x1023", "NN", "auto"), 1.0);
  for (const char *sh : {"8192x11008x4096", "16384x4096x11008"}) {
    target((string("auto ") + sh).c_str(), find(sh, "NT", "auto"), 0.90);
    target((string("fused bias+gelu-tanh vs cuBLASLt ") + sh).c_str(), find(sh, "NT", "auto bias+gelu-tanh"), 1.0);
  }
  for (const char *sh : {"1x4096x4096", "16x4096x4096", "64x11008x4096"}) target((string("decode auto ") + sh + " (W bytes)").c_str(), find(sh, "NT", "auto"), 0.80, true);
  printf("wrote %s; %d validation failures\n", opt.csv.c_str(), failures);
  CHECK_CUBLAS(cublasLtDestroy(lt));
  CHECK_CUBLAS(cublasDestroy(handle));
  for (void *p : {(void *)a, (void *)b, (void *)c, (void *)ref, (void *)abs_a, (void *)abs_b, (void *)bias, (void *)bound, lt_ws}) CHECK_CUDA(cudaFree(p));
  return failures ? 1 : 0;
}
