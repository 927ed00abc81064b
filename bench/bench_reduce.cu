// SPDX-License-Identifier: MIT
// bench/bench_reduce.cu - speed of the reductions and the histogram against CUB and the copy
// ceiling, measured in the same run:
//   sum and max of f32 and bf16 vectors, 2^20 .. 2^28 elements, every version, against
//   cub::DeviceReduce::Sum / Max (bf16: DeviceReduce::Reduce with an f32 result and accumulator, as ours);
//   row sums of 32768 x 4096 and 262144 x 256 matrices, a few long rows (16 x 2^20 and 256 x
//   65536, f32 and bf16: split rows), and the short rows at 2^24 elements
//   (16777216 x 1, 5592405 x 3, 524288 x 32, 131072 x 128; AUTO's groups of lanes, WARP_REDUCE's
//   warp per row), against cub::DeviceSegmentedReduce (an f32 sum);
//   histograms of 2^28 int32 values, 256 bins (uniform, and skewed: 90% one value), 4096 and
//   65536 bins (uniform), every version, against cub::DeviceHistogramEven (int counters).
// Every version is validated against the CPU implementation before it is timed.
// Rates count bytes read only (a reduction writes almost nothing): "x copy" is that read rate over
// the copy ceiling's rate (cudaMemcpy device to device, read + write bytes over time).
// Short rows write a float per row: 16777216 x 1 f32 writes as many bytes as it reads, so its
// "x copy" (reads only) tops out near 0.5.
//   usage: bench_reduce [--csv PATH] [--quick]     (--quick: 2^24 and 2^28 only)
#define GPUOPS_ONLY_REDUCE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cub/cub.cuh>

#include <string>
#include <type_traits>
#include <vector>

#include "../bench/harness.h"
#include "check.h"

using std::string;
using std::vector;

// Histogram data: uniform over [0, bins), or with probability 0.9 the value `hot`.
__global__ void fill_bins_kernel(int32_t *p, int64_t n, uint64_t seed, int32_t bins, int skewed, int32_t hot) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const uint64_t h = bench::hash64(seed, i);
    p[i] = skewed && (h >> 32) % 10 < 9 ? hot : (int32_t)((h & 0xffffffffu) % (uint32_t)bins);
  }
}

template <class T> gpuops_status reduce(float *o, const T *x, int64_t n, gpuops_reduce_op op, void *ws, size_t wb, gpuops_algo a);
template <> gpuops_status reduce<float>(float *o, const float *x, int64_t n, gpuops_reduce_op op, void *ws, size_t wb, gpuops_algo a) {
  return gpuops_reduce_f32(o, x, n, op, ws, wb, a, 0);
}
template <> gpuops_status reduce<gpuops_bf16>(float *o, const gpuops_bf16 *x, int64_t n, gpuops_reduce_op op, void *ws, size_t wb, gpuops_algo a) {
  return gpuops_reduce_bf16(o, x, n, op, ws, wb, a, 0);
}
template <class T> gpuops_status cpu_reduce(float *o, const T *x, int64_t n, gpuops_reduce_op op);
template <> gpuops_status cpu_reduce<float>(float *o, const float *x, int64_t n, gpuops_reduce_op op) { return gpuops_cpu_reduce_f32(o, x, n, op); }
template <> gpuops_status cpu_reduce<gpuops_bf16>(float *o, const gpuops_bf16 *x, int64_t n, gpuops_reduce_op op) {
  return gpuops_cpu_reduce_bf16(o, x, n, op);
}
template <class T> gpuops_status reduce_rows(float *o, const T *x, int64_t r, int64_t c, gpuops_algo a);
template <> gpuops_status reduce_rows<float>(float *o, const float *x, int64_t r, int64_t c, gpuops_algo a) {
  return gpuops_reduce_rows_f32(o, x, r, c, GPUOPS_REDUCE_SUM, a, 0);
}
template <> gpuops_status reduce_rows<gpuops_bf16>(float *o, const gpuops_bf16 *x, int64_t r, int64_t c, gpuops_algo a) {
  return gpuops_reduce_rows_bf16(o, x, r, c, GPUOPS_REDUCE_SUM, a, 0);
}
template <class T> gpuops_status cpu_rows(float *o, const T *x, int64_t r, int64_t c);
template <> gpuops_status cpu_rows<float>(float *o, const float *x, int64_t r, int64_t c) { return gpuops_cpu_reduce_rows_f32(o, x, r, c, GPUOPS_REDUCE_SUM); }
template <> gpuops_status cpu_rows<gpuops_bf16>(float *o, const gpuops_bf16 *x, int64_t r, int64_t c) {
  return gpuops_cpu_reduce_rows_bf16(o, x, r, c, GPUOPS_REDUCE_SUM);
}

// CUB on bf16 input with an f32 result and f32 accumulation (as ours): DeviceReduce::Reduce with an
// operator for every pair of bf16 and f32 (float + __nv_bfloat16 alone is ambiguous in C++).
template <bool kMax> struct cub_f32_op {
  static __host__ __device__ float f(float x) { return x; }
  static __host__ __device__ float f(__nv_bfloat16 x) { return __bfloat162float(x); }
  template <class A, class B> __host__ __device__ float operator()(A a, B b) const {
    const float x = f(a), y = f(b);
    return kMax ? (x > y ? x : y) : x + y;
  }
};
template <class D> cudaError_t cub_reduce(void *tp, size_t &bytes, const D *x, float *out, int64_t n, bool max) {
  if constexpr (std::is_same<D, float>::value) {
    return max ? cub::DeviceReduce::Max(tp, bytes, x, out, n) : cub::DeviceReduce::Sum(tp, bytes, x, out, n);
  } else {
    return max ? cub::DeviceReduce::Reduce(tp, bytes, x, out, n, cub_f32_op<true>{}, -INFINITY)
               : cub::DeviceReduce::Reduce(tp, bytes, x, out, n, cub_f32_op<false>{}, 0.0f);
  }
}

// CUB's temporary storage, grown as needed and kept.
struct cub_temp {
  void *p = nullptr;
  size_t bytes = 0;
  void *get(size_t want) {
    if (want > bytes) {
      cudaFree(p);
      CHECK_CUDA(cudaMalloc(&p, want));
      bytes = want;
    }
    return p;
  }
  ~cub_temp() { cudaFree(p); }
};

struct row {
  string family, op, type, version;
  int64_t n;
  double us, gbps, x_copy, x_cub;
};

static const row *find(const vector<row> &rows, const string &op, const string &type, int64_t n, const string &version) {
  for (const row &r : rows)
    if (r.op == op && r.type == type && r.n == n && r.version == version) return &r;
  return nullptr;
}

static const gpuops_algo kVectorAlgos[] = {GPUOPS_ALGO_AUTO,      GPUOPS_ALGO_INTERLEAVED,  GPUOPS_ALGO_SEQUENTIAL,
                                           GPUOPS_ALGO_FIRST_ADD, GPUOPS_ALGO_WARP_SHUFFLE, GPUOPS_ALGO_WARP_REDUCE};

// Vector reductions of one storage type: validation at 2^24 + 3, then every size and version.
template <class T>
void bench_vector(bench::timer &t, double copy, const vector<int64_t> &sizes, uint64_t seed, cub_temp &tmp, vector<row> &rows, int &failures) {
  using D = typename bench::device_type<T>::type;
  const int64_t nmax = sizes.back(), nval = (1 << 24) + 3;
  T *x = nullptr;
  float *out = nullptr;
  void *ws = nullptr;
  size_t wsb = 0;
  for (gpuops_algo a : kVectorAlgos) wsb = std::max(wsb, gpuops_reduce_workspace_size(nmax, a));
  CHECK_CUDA(cudaMalloc(&x, nmax * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&out, sizeof(float)));
  CHECK_CUDA(cudaMalloc(&ws, wsb));
  t.settle();
  bench::fill_uniform(x, nmax, seed, -1.0f, 1.0f);
  const vector<T> hx = check::to_host(x, nval);
  double asum = 0;
  for (const T &v : hx) asum += fabs((double)check::to_float(v));
  const char *type = check::dtype_name<T>();
  for (gpuops_reduce_op op : {GPUOPS_REDUCE_SUM, GPUOPS_REDUCE_MAX}) {
    const char *opn = op == GPUOPS_REDUCE_SUM ? "sum" : "max";
    float want = 0;
    CHECK_OK(cpu_reduce<T>(&want, hx.data(), nval, op));
    for (gpuops_algo a : kVectorAlgos) {
      check::poison(out, 4);
      CHECK_OK(reduce<T>(out, x, nval, op, ws, wsb, a));
      float got = 0;
      CHECK_CUDA(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
      const bool ok = op == GPUOPS_REDUCE_SUM ? fabs((double)got - want) <= 1e-5 * asum : got == want;
      if (!ok) printf("VALIDATION FAILED %s %s %s: %.9g vs %.9g\n", opn, type, gpuops_algo_name(a), got, want), ++failures;
    }
    for (int64_t n : sizes) {
      const double bytes = (double)n * sizeof(T);
      // CUB first: the ratios need its time.
      size_t need = 0;
      const bool mx = op == GPUOPS_REDUCE_MAX;
      CHECK_CUDA(cub_reduce(nullptr, need, (const D *)x, out, n, mx));
      void *tp = tmp.get(need);
      const double cub_ms = t.median_ms([&] {
        size_t b = need;
        CHECK_CUDA(cub_reduce(tp, b, (const D *)x, out, n, mx));
      });
      rows.push_back({"reduce", opn, type, "cub", n, cub_ms * 1e3, bytes / (cub_ms * 1e6), bytes / (cub_ms * 1e6) / copy, 1.0});
      for (gpuops_algo a : kVectorAlgos) {
        const double ms = t.median_ms([&] { CHECK_OK(reduce<T>(out, x, n, op, ws, wsb, a)); });
        rows.push_back({"reduce", opn, type, gpuops_algo_name(a), n, ms * 1e3, bytes / (ms * 1e6), bytes / (ms * 1e6) / copy, cub_ms / ms});
      }
    }
  }
  cudaFree(x);
  cudaFree(out);
  cudaFree(ws);
}

// Row sums: AUTO and WARP_REDUCE against CUB's segmented reduction (offsets r * cols).
template <class T>
void bench_rows(bench::timer &t, double copy, int64_t rows_n, int64_t cols, uint64_t seed, cub_temp &tmp, vector<row> &rows, int &failures) {
  using D = typename bench::device_type<T>::type;
  const int64_t n = rows_n * cols;
  T *x = nullptr;
  float *out = nullptr;
  int64_t *offsets = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&out, rows_n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&offsets, (rows_n + 1) * sizeof(int64_t)));
  t.settle();
  vector<int64_t> ho(rows_n + 1);
  for (int64_t r = 0; r <= rows_n; ++r) ho[r] = r * cols;
  CHECK_CUDA(cudaMemcpy(offsets, ho.data(), ho.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  bench::fill_uniform(x, n, seed, -1.0f, 1.0f);
  const vector<T> hx = check::to_host(x, n);
  vector<float> want(rows_n);
  CHECK_OK(cpu_rows<T>(want.data(), hx.data(), rows_n, cols));
  const char *type = check::dtype_name<T>();
  const string shape = bench::fmt("%lldx%lld", (long long)rows_n, (long long)cols);
  for (gpuops_algo a : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_WARP_REDUCE}) {
    check::poison(out, rows_n * sizeof(float));
    CHECK_OK(reduce_rows<T>(out, x, rows_n, cols, a));
    const vector<float> got = check::to_host(out, rows_n);
    int64_t bad = 0;
    for (int64_t r = 0; r < rows_n; ++r) bad += !(fabs((double)got[r] - want[r]) <= 1e-5 * (double)cols);
    if (bad) printf("VALIDATION FAILED rows %s %s %s: %lld rows wrong\n", shape.c_str(), type, gpuops_algo_name(a), (long long)bad), ++failures;
  }
  const double bytes = (double)n * sizeof(T);
  size_t need = 0;
  auto seg = [&](void *tp, size_t &b) {
    return cub::DeviceSegmentedReduce::Reduce(tp, b, (const D *)x, out, rows_n, offsets, offsets + 1, cub_f32_op<false>{}, 0.0f);
  };
  CHECK_CUDA(seg(nullptr, need));
  void *tp = tmp.get(need);
  const double cub_ms = t.median_ms([&] {
    size_t b = need;
    CHECK_CUDA(seg(tp, b));
  });
  const string op = "rows_sum " + shape;
  rows.push_back({"reduce", op, type, "cub", n, cub_ms * 1e3, bytes / (cub_ms * 1e6), bytes / (cub_ms * 1e6) / copy, 1.0});
  for (gpuops_algo a : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_WARP_REDUCE}) {
    const double ms = t.median_ms([&] { CHECK_OK(reduce_rows<T>(out, x, rows_n, cols, a)); });
    rows.push_back({"reduce", op, type, gpuops_algo_name(a), n, ms * 1e3, bytes / (ms * 1e6), bytes / (ms * 1e6) / copy, cub_ms / ms});
  }
  cudaFree(x);
  cudaFree(out);
  cudaFree(offsets);
}

// Histogram of n int32 values into `bins`, uniform or skewed, every version against CUB.
void bench_histogram(bench::timer &t, double copy, int64_t n, int32_t bins, bool skewed, uint64_t seed, cub_temp &tmp, vector<row> &rows,
                     int &failures, int32_t *x, int64_t *counts, int *cub_counts) {
  fill_bins_kernel<<<2048, 256>>>(x, n, seed, bins, skewed ? 1 : 0, bins / 3);
  CHECK_CUDA(cudaGetLastError());
  const vector<int32_t> hx = check::to_host(x, n);
  vector<int64_t> want(bins);
  CHECK_OK(gpuops_cpu_histogram_i32(want.data(), hx.data(), n, bins));
  const string op = bench::fmt("histogram %d bins %s", bins, skewed ? "skewed" : "uniform");
  const double bytes = (double)n * sizeof(int32_t);
  size_t need = 0;
  CHECK_CUDA(cub::DeviceHistogram::HistogramEven(nullptr, need, x, cub_counts, bins + 1, 0, bins, n));
  void *tp = tmp.get(need);
  auto run_cub = [&] {
    size_t b = need;
    CHECK_CUDA(cub::DeviceHistogram::HistogramEven(tp, b, x, cub_counts, bins + 1, 0, bins, n));
  };
  run_cub();
  const vector<int> cub_got = check::to_host(cub_counts, bins);
  int64_t cub_bad = 0;
  for (int32_t b = 0; b < bins; ++b) cub_bad += cub_got[b] != want[b];
  if (cub_bad) printf("note: CUB's histogram differs from the CPU's in %lld bins (%s)\n", (long long)cub_bad, op.c_str());
  const double cub_ms = t.median_ms(run_cub);
  rows.push_back({"histogram", op, "i32", "cub", n, cub_ms * 1e3, bytes / (cub_ms * 1e6), bytes / (cub_ms * 1e6) / copy, 1.0});
  for (gpuops_algo a : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_GLOBAL_ATOMIC, GPUOPS_ALGO_SHARED_ATOMIC, GPUOPS_ALGO_RUN_AGGREGATE}) {
    check::poison(counts, bins * sizeof(int64_t));
    CHECK_OK(gpuops_histogram_i32(counts, x, n, bins, a, 0));
    const vector<int64_t> got = check::to_host(counts, bins);
    int64_t bad = 0;
    for (int32_t b = 0; b < bins; ++b) bad += got[b] != want[b];
    if (bad) printf("VALIDATION FAILED %s %s: %lld bins wrong\n", op.c_str(), gpuops_algo_name(a), (long long)bad), ++failures;
    // One global atomic per element on one hot address serializes: fewer repetitions there.
    const int reps = a == GPUOPS_ALGO_GLOBAL_ATOMIC && skewed ? 5 : 25;
    const double ms = t.median_ms([&] { CHECK_OK(gpuops_histogram_i32(counts, x, n, bins, a, 0)); }, reps, 1);
    rows.push_back({"histogram", op, "i32", gpuops_algo_name(a), n, ms * 1e3, bytes / (ms * 1e6), bytes / (ms * 1e6) / copy, cub_ms / ms});
  }
}

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_reduce");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer t;
  const double copy = bench::copy_ceiling(t, "; reductions count bytes read only\n");

  const vector<int64_t> sizes = opt.quick ? vector<int64_t>{1 << 24, 1 << 28} : vector<int64_t>{1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28};
  vector<row> rows;
  int failures = 0;
  cub_temp tmp;
  bench_vector<float>(t, copy, sizes, seed, tmp, rows, failures);
  bench_vector<gpuops_bf16>(t, copy, sizes, seed + 1, tmp, rows, failures);
  bench_rows<float>(t, copy, 32768, 4096, seed + 2, tmp, rows, failures);
  bench_rows<gpuops_bf16>(t, copy, 32768, 4096, seed + 3, tmp, rows, failures);
  bench_rows<float>(t, copy, 262144, 256, seed + 4, tmp, rows, failures);
  // A few long rows (AUTO: split rows, a cluster of blocks per row on compute capability 9.0+).
  bench_rows<float>(t, copy, 16, 1 << 20, seed + 30, tmp, rows, failures);
  bench_rows<gpuops_bf16>(t, copy, 16, 1 << 20, seed + 31, tmp, rows, failures);
  bench_rows<float>(t, copy, 256, 65536, seed + 32, tmp, rows, failures);
  bench_rows<gpuops_bf16>(t, copy, 256, 65536, seed + 33, tmp, rows, failures);
  for (int64_t c : {1, 3, 32, 128}) bench_rows<float>(t, copy, ((int64_t)1 << 24) / c, c, seed + 9 + c, tmp, rows, failures);
  for (int64_t c : {1, 128}) bench_rows<gpuops_bf16>(t, copy, ((int64_t)1 << 24) / c, c, seed + 10 + c, tmp, rows, failures);

  const int64_t hn = (int64_t)1 << 28;
  int32_t *hx = nullptr;
  int64_t *counts = nullptr;
  int *cub_counts = nullptr;
  CHECK_CUDA(cudaMalloc(&hx, hn * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&counts, 65536 * sizeof(int64_t)));
  CHECK_CUDA(cudaMalloc(&cub_counts, 65536 * sizeof(int)));
  bench_histogram(t, copy, hn, 256, false, seed + 5, tmp, rows, failures, hx, counts, cub_counts);
  bench_histogram(t, copy, hn, 256, true, seed + 6, tmp, rows, failures, hx, counts, cub_counts);
  bench_histogram(t, copy, hn, 4096, false, seed + 7, tmp, rows, failures, hx, counts, cub_counts);
  bench_histogram(t, copy, hn, 65536, false, seed + 8, tmp, rows, failures, hx, counts, cub_counts);
  cudaFree(hx);
  cudaFree(counts);
  cudaFree(cub_counts);

  bench::table all;
  all.head = {"family", "op", "dtype", "n", "version", "time_us", "gb_per_s", "x_copy", "x_cub", "copy_gb_per_s", "device"};
  for (const row &r : rows)
    all.add({r.family, r.op, r.type, std::to_string(r.n), r.version, bench::fmt("%.3f", r.us), bench::fmt("%.1f", r.gbps),
             bench::fmt("%.4f", r.x_copy), bench::fmt("%.4f", r.x_cub), bench::fmt("%.1f", copy), dev.name});
  all.write_csv(opt.csv);

  // Table 1: every version at the largest size.
  const int64_t big = sizes.back();
  bench::table t1;
  t1.head = {"op", "type", "version", "time (us)", "GB/s read", "x copy", "x cub"};
  for (const char *type : {"f32", "bf16"})
    for (const char *op : {"sum", "max"})
      for (const char *v : {"interleaved", "sequential", "first-add", "warp-shuffle", "warp-reduce", "auto", "cub"}) {
        const row *r = find(rows, op, type, big, v);
        t1.add({op, type, v, bench::num(r->us), bench::num(r->gbps), bench::fmt("%.3f", r->x_copy), bench::fmt("%.3f", r->x_cub)});
      }
  printf("Reductions at n = 2^%d (%s, copy %.0f GB/s):\n", __builtin_ctzll(big), dev.name, copy);
  t1.print();

  // Table 2: AUTO against CUB by size.
  bench::table t2;
  t2.head = {"op", "type"};
  for (int64_t n : sizes) t2.head.push_back(bench::fmt("2^%d x cub", __builtin_ctzll(n)));
  for (const char *type : {"f32", "bf16"})
    for (const char *op : {"sum", "max"}) {
      vector<string> r = {op, type};
      for (int64_t n : sizes) r.push_back(bench::fmt("%.3f", find(rows, op, type, n, "auto")->x_cub));
      t2.add(r);
    }
  printf("\nAUTO against CUB by size (L2 flushed before each run):\n");
  t2.print();

  // Table 3: rows and histograms, each version against CUB.
  bench::table t3;
  t3.head = {"op", "type", "version", "time (us)", "GB/s read", "x copy", "x cub"};
  for (const row &r : rows)
    if (r.family == "histogram" || r.op.rfind("rows_sum", 0) == 0)
      t3.add({r.op, r.type, r.version, bench::num(r.us), bench::num(r.gbps), bench::fmt("%.3f", r.x_copy), bench::fmt("%.3f", r.x_cub)});
  printf("\nRow sums and histograms:\n");
  t3.print();

  // The targets: sum f32 at 2^28 >= 0.95x CUB; histogram 256 bins >= 1.0x CUB, uniform and skewed.
  const row *s = find(rows, "sum", "f32", big, "auto");
  const row *hu = find(rows, "histogram 256 bins uniform", "i32", hn, "auto");
  const row *hs = find(rows, "histogram 256 bins skewed", "i32", hn, "auto");
  printf("\ntargets: sum f32 2^%d %.3fx cub (>= 0.95: %s); histogram 256 uniform %.3fx cub, skewed %.3fx cub (>= 1.0: %s)\n",
         __builtin_ctzll(big), s->x_cub, s->x_cub >= 0.95 ? "yes" : "NO", hu->x_cub, hs->x_cub, hu->x_cub >= 1.0 && hs->x_cub >= 1.0 ? "yes" : "NO");
  printf("wrote %s; %d validation failures\n", opt.csv.c_str(), failures);
  return failures ? 1 : 0;
}
