// SPDX-License-Identifier: MIT
// bench/bench_transpose.cu - speed of the transpose against the copy ceiling and cuBLAS, measured in
// the same run: every version x {f32, bf16} at 1024^2, 4096^2, 16384^2, 4095 x 4097 (odd pitches:
// VECTORIZED's any-pitch form), 16384 x 1024, and 3 x 1000000, 1000000 x 3 and 16 x 262144 (its
// interleave), plus cublasSgeam (C = A^T) for f32. Every version
// is validated bit for bit against the CPU implementation before it is timed.
//   usage: bench_transpose [--csv PATH] [--quick]      (--quick: 4096^2, 16384^2 and 4095 x 4097)
// Bytes counted: rows * cols * element size read plus the same written. The targets for AUTO, f32:
// 0.85x the copy ceiling at 16384 x 16384 and at 4095 x 4097.
#define GPUOPS_ONLY_TRANSPOSE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cublas_v2.h>
#include <float.h>
#include <string.h>

#include <cmath>

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "transpose_ops.h"

using std::string;
using std::vector;

// Random bits on the device: a hash of (seed, i) per 32-bit word.
__global__ void fill_bits(uint32_t *p, int64_t words, uint64_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < words; i += (int64_t)gridDim.x * blockDim.x)
    p[i] = (uint32_t)bench::hash64(seed, i);
}

struct shape {
  int64_t rows, cols;
};

struct row {
  string type, version;
  shape s;
  double us, gbps, x_copy;
};

static string shape_name(shape s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

// cuBLAS is column-major: our row-major x (rows x cols) is its cols x rows matrix A with lda = cols,
// and our y (cols x rows, row-major) its rows x cols matrix C with ldc = rows. C = 1 * A^T + 0 * B
// with B = C (ldb = ldc, no transpose: the in-place form cuBLAS documents; beta = 0 reads nothing).
static cublasStatus_t geam_transpose(cublasHandle_t h, float *y, const float *x, shape s) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)s.rows, (int)s.cols, &one, x, (int)s.cols, &zero, y, (int)s.rows, y, (int)s.rows);
}

static bool same_values(const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])) || (std::fabs(a[i]) < FLT_MIN && std::fabs(b[i]) < FLT_MIN))) return false;
  return true;
}

template <class T>
static void bench_type(bench::timer &t, double copy, const vector<shape> &shapes, uint64_t seed, cublasHandle_t blas, vector<row> &rows,
                       int &failures) {
  int64_t most = 0;
  for (const shape &s : shapes) most = s.rows * s.cols > most ? s.rows * s.cols : most;
  T *x = nullptr, *y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, most * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&y, most * sizeof(T)));
  t.settle();
  fill_bits<<<1024, 256>>>((uint32_t *)x, most * (int64_t)sizeof(T) / 4, seed);
  CHECK_CUDA(cudaGetLastError());
  const char *type = trt::api<T>::name();
  for (const shape &s : shapes) {
    const int64_t n = s.rows * s.cols;
    const double bytes = 2.0 * (double)n * sizeof(T);
    const vector<T> hx = check::to_host(x, n);
    vector<T> want(n), got(n);
    CHECK_OK(trt::api<T>::cpu(want.data(), hx.data(), s.rows, s.cols));
    struct version {
      string name;
      std::function<gpuops_status()> run;
    };
    vector<version> versions;
    for (gpuops_algo a : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_SHARED_PADDED, GPUOPS_ALGO_VECTORIZED})
      versions.push_back({gpuops_algo_name(a), [=] { return trt::api<T>::gpu(y, x, s.rows, s.cols, a, 0); }});
    if (std::is_same<T, float>::value)
      versions.push_back({"cublas-geam", [=] {
                            CHECK_CUBLAS(geam_transpose(blas, (float *)y, (const float *)x, s));
                            return GPUOPS_OK;
                          }});
    for (const version &v : versions) {
      check::poison(y, n * sizeof(T));
      const gpuops_status st = v.run();
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemcpy(got.data(), y, n * sizeof(T), cudaMemcpyDeviceToHost));
      // Ours must move bits exactly. cuBLAS computes 1 * x + 0 * y in arithmetic, which may turn -0
      // into +0, change NaN payloads or flush subnormals (x holds random bits): checked by value.
      const bool same = v.name == "cublas-geam" ? same_values((const float *)got.data(), (const float *)want.data(), n)
                                                : memcmp(got.data(), want.data(), n * sizeof(T)) == 0;
      if (st != GPUOPS_OK || !same) {
        printf("VALIDATION FAILED %s %s %s: %s\n", type, shape_name(s).c_str(), v.name.c_str(),
               st != GPUOPS_OK ? gpuops_status_string(st) : "wrong elements");
        ++failures;
        continue;
      }
      const double ms = t.median_ms([&] { CHECK_OK(v.run()); });
      const double gbps = bytes / (ms * 1e6);
      rows.push_back({type, v.name, s, ms * 1e3, gbps, gbps / copy});
    }
  }
  cudaFree(x);
  cudaFree(y);
}

static const row *find(const vector<row> &rows, const string &type, shape s, const string &version) {
  for (const row &r : rows)
    if (r.type == type && r.s.rows == s.rows && r.s.cols == s.cols && r.version == version) return &r;
  return nullptr;
}

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_transpose");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer t;
  const double copy = bench::copy_ceiling(t);

  const vector<shape> shapes = opt.quick ? vector<shape>{{4096, 4096}, {16384, 16384}, {4095, 4097}}
                                         : vector<shape>{{1024, 1024}, {4096, 4096}, {16384, 16384}, {4095, 4097}, {16384, 1024},
                                                         {3, 1000000}, {1000000, 3}, {16, 262144}};
  cublasHandle_t blas;
  CHECK_CUBLAS(cublasCreate(&blas));
  vector<row> rows;
  int failures = 0;
  bench_type<float>(t, copy, shapes, seed, blas, rows, failures);
  bench_type<gpuops_bf16>(t, copy, shapes, seed, blas, rows, failures);
  cublasDestroy(blas);

  bench::table all;
  all.head = {"family", "op", "dtype", "n", "rows", "cols", "version", "time_us", "gb_per_s", "x_copy", "copy_gb_per_s", "device"};
  for (const row &r : rows)
    all.add({"transpose", "transpose", r.type, std::to_string(r.s.rows * r.s.cols), std::to_string(r.s.rows), std::to_string(r.s.cols), r.version,
             bench::fmt("%.3f", r.us), bench::fmt("%.1f", r.gbps), bench::fmt("%.4f", r.x_copy), bench::fmt("%.1f", copy), dev.name});
  all.write_csv(opt.csv);

  // One table: each shape and type, GB/s of every version, AUTO's fraction of the copy ceiling and
  // its speedup over cuBLAS (f32).
  const char *versions[] = {"naive", "shared-tiled", "shared-padded", "vectorized", "auto", "cublas-geam"};
  bench::table tab;
  tab.head = {"shape", "type"};
  for (const char *v : versions) tab.head.push_back(string(v) + " GB/s");
  tab.head.insert(tab.head.end(), {"auto us", "auto x copy", "auto / cublas"});
  for (const char *type : {"f32", "bf16"})
    for (const shape &s : shapes) {
      vector<string> cells = {shape_name(s), type};
      for (const char *v : versions) {
        const row *r = find(rows, type, s, v);
        cells.push_back(r ? bench::num(r->gbps) : "-");
      }
      const row *a = find(rows, type, s, "auto"), *b = find(rows, type, s, "cublas-geam");
      cells.push_back(a ? bench::num(a->us) : "-");
      cells.push_back(a ? bench::fmt("%.3f", a->x_copy) : "-");
      cells.push_back(a && b ? bench::fmt("%.2fx", b->us / a->us) : "-");
      tab.add(cells);
    }
  printf("Transpose, GB/s counting read + write bytes, against the copy ceiling of %.0f GB/s (%s); '-' where a version has\n"
         "no row (cuBLAS has no bf16 geam):\n",
         copy, dev.name);
  tab.print();

  printf("\n");
  for (shape s : {shape{16384, 16384}, shape{4095, 4097}})
    if (const row *target = find(rows, "f32", s, "auto"))
      printf("auto at %s f32: %.3fx copy (target 0.85x): %s\n", shape_name(s).c_str(), target->x_copy, target->x_copy >= 0.85 ? "met" : "NOT MET");
  printf("wrote %s; %d validation failures\n", opt.csv.c_str(), failures);
  return failures ? 1 : 0;
}
