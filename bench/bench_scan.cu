// SPDX-License-Identifier: MIT
// bench/bench_scan.cu - speed of the prefix scans against CUB (cub::DeviceScan::InclusiveSum and
// ExclusiveSum) and against the copy ceiling, measured in the same run: every version x {f32, i32,
// i64} x {inclusive, exclusive} at 2^20 .. 2^28 elements, plus the row scan on four shapes. Each
// version is validated against the CPU implementation before it is timed. Writes every
// measurement as CSV.
//   usage: bench_scan [--csv PATH] [--quick] [--type f32|i32|i64]
//   --quick: sizes 2^24 and 2^28 only.
// Bytes counted per element: the input read once and the output written once (2 x the element
// size), for every version and for CUB alike, so GB/s is the effective rate and "x copy" compares
// with a device-to-device copy of the same bytes. The workspace traffic (a few bytes per tile) is
// not counted. The timed call includes everything a user's call does (the look-back's workspace
// clear, CUB's temporary storage being preallocated as a user would).
#define GPUOPS_ONLY_SCAN
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cub/cub.cuh>
#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "scan_ops.h"

using std::string;
using std::vector;

// Random device data without a host round trip: f32 in [-1, 1], integers in [-1000, 1000].
template <class T> __global__ void fill_kernel(T *p, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const uint64_t z = bench::hash64(seed, i);
    if constexpr (std::is_same<T, float>::value) p[i] = (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
    else p[i] = (T)(z % 2001) - 1000;
  }
}

struct row {
  string type, kind, version;
  int64_t n;
  double us, gbps, x_copy, x_cub;
};

template <class T> struct cub_scan {
  void *temp = nullptr;
  size_t temp_bytes = 0;
  explicit cub_scan(int64_t nmax) {
    size_t a = 0, b = 0;
    CHECK_CUDA(cub::DeviceScan::InclusiveSum(nullptr, a, (const T *)nullptr, (T *)nullptr, (int)nmax));
    CHECK_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, b, (const T *)nullptr, (T *)nullptr, (int)nmax));
    temp_bytes = a > b ? a : b;
    CHECK_CUDA(cudaMalloc(&temp, temp_bytes));
  }
  ~cub_scan() { cudaFree(temp); }
  void run(T *y, const T *x, int64_t n, gpuops_scan_kind k) {
    size_t tb = temp_bytes;
    if (k == GPUOPS_SCAN_INCLUSIVE) CHECK_CUDA(cub::DeviceScan::InclusiveSum(temp, tb, x, y, (int)n, 0));
    else CHECK_CUDA(cub::DeviceScan::ExclusiveSum(temp, tb, x, y, (int)n, 0));
  }
};

// The GPU result for the first n elements against the CPU; "" or why not.
template <class T> string validate(T *y, const T *x, int64_t n, gpuops_scan_kind k, gpuops_algo algo, void *ws, size_t wsb) {
  const vector<T> hx = check::to_host(x, n);
  vector<T> want(n);
  CHECK_OK(sct::api<T>::cpu(want.data(), hx.data(), n, k));
  check::poison(y, n * sizeof(T));
  const gpuops_status st = sct::api<T>::gpu(y, x, n, k, ws, wsb, algo, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (st != GPUOPS_OK) return gpuops_status_string(st);
  const vector<T> got = check::to_host(y, n);
  double absum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (k == GPUOPS_SCAN_INCLUSIVE) absum += fabs((double)hx[i]);
    const bool ok = std::is_same<T, float>::value ? fabs((double)got[i] - (double)want[i]) <= 1e-5 * absum + 1e-6 : got[i] == want[i];
    if (!ok) return bench::fmt("first wrong at %lld: %g, want %g", (long long)i, (double)got[i], (double)want[i]);
    if (k == GPUOPS_SCAN_EXCLUSIVE) absum += fabs((double)hx[i]);
  }
  return "";
}

template <class T>
void bench_type(bench::timer &t, double copy, const vector<int64_t> &sizes, uint64_t seed, vector<row> &rows, int &failures) {
  const char *dt = sct::api<T>::name();
  const int64_t nmax = sizes.back();
  T *x = nullptr, *y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, nmax * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&y, nmax * sizeof(T)));
  fill_kernel<<<2048, 256>>>(x, nmax, seed);
  CHECK_CUDA(cudaGetLastError());
  size_t wsb = 0;
  for (gpuops_algo a : sct::kVersions) wsb = std::max(wsb, gpuops_scan_workspace_size(nmax, a));
  void *ws = nullptr;
  CHECK_CUDA(cudaMalloc(&ws, wsb));
  t.settle();
  cub_scan<T> cub(nmax);
  const double bytes_per = 2.0 * sizeof(T);
  for (gpuops_scan_kind k : {GPUOPS_SCAN_INCLUSIVE, GPUOPS_SCAN_EXCLUSIVE}) {
    for (gpuops_algo a : sct::kVersions) {
      const string why = validate(y, x, (1 << 20) + 3, k, a, ws, wsb);
      if (!why.empty()) printf("VALIDATION FAILED %s %s %s: %s\n", dt, sct::kind_name(k), gpuops_algo_name(a), why.c_str()), ++failures;
    }
    for (int64_t n : sizes) {
      const double cub_ms = t.median_ms([&] { cub.run(y, x, n, k); });
      const double cub_gbps = bytes_per * n / (cub_ms * 1e6);
      rows.push_back({dt, sct::kind_name(k), "cub", n, cub_ms * 1e3, cub_gbps, cub_gbps / copy, 1.0});
      for (gpuops_algo a : sct::kVersions) {
        const double ms = t.median_ms([&] { CHECK_OK(sct::api<T>::gpu(y, x, n, k, ws, wsb, a, 0)); });
        const double g = bytes_per * n / (ms * 1e6);
        rows.push_back({dt, sct::kind_name(k), gpuops_algo_name(a), n, ms * 1e3, g, g / copy, cub_ms / ms});
      }
    }
  }
  // Row scans (AUTO) on the largest size: many short rows (a warp each) and few long ones (a block
  // each; on compute capability 9.0+ a cluster each: split rows), and a few long rows at 2^24
  // elements, 16 x 2^20 and 256 x 65536 (split rows).
  const int64_t shapes[4][2] = {{nmax / 64, 64}, {64, nmax / 64}, {16, 1 << 20}, {256, 65536}};
  for (const auto &s : shapes) {
    const int64_t n = s[0] * s[1];
    const double ms = t.median_ms([&] { CHECK_OK(sct::api<T>::rows(y, x, s[0], s[1], GPUOPS_SCAN_INCLUSIVE, GPUOPS_ALGO_AUTO, 0)); });
    const double g = bytes_per * n / (ms * 1e6);
    rows.push_back({dt, "inclusive", bench::fmt("rows %lldx%lld", (long long)s[0], (long long)s[1]), n, ms * 1e3, g, g / copy, NAN});
  }
  cudaFree(x);
  cudaFree(y);
  cudaFree(ws);
}

static const row *find(const vector<row> &rows, const string &type, const string &kind, int64_t n, const string &version) {
  for (const row &r : rows)
    if (r.type == type && r.kind == kind && r.n == n && r.version == version) return &r;
  return nullptr;
}

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_scan");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer t;
  const double copy = bench::copy_ceiling(t);

  const vector<int64_t> sizes = opt.quick ? vector<int64_t>{1 << 24, 1 << 28} : vector<int64_t>{1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28};
  vector<row> rows;
  int failures = 0;
  const string &type = opt.type;
  if (type.empty() || type == "f32") bench_type<float>(t, copy, sizes, seed, rows, failures);
  if (type.empty() || type == "i32") bench_type<int32_t>(t, copy, sizes, seed, rows, failures);
  if (type.empty() || type == "i64") bench_type<int64_t>(t, copy, sizes, seed, rows, failures);

  bench::table all;
  all.head = {"family", "op", "dtype", "n", "version", "time_us", "gb_per_s", "x_copy", "x_cub", "copy_gb_per_s", "device"};
  for (const row &r : rows)
    all.add({"scan", string("scan_") + r.kind, r.type, std::to_string(r.n), r.version, bench::fmt("%.3f", r.us), bench::fmt("%.1f", r.gbps),
             bench::fmt("%.4f", r.x_copy), r.x_cub == r.x_cub ? bench::fmt("%.4f", r.x_cub) : "", bench::fmt("%.1f", copy), dev.name});
  all.write_csv(opt.csv);

  // Table 1: every version at the largest size; the target is the look-back at >= 1.0x CUB.
  const int64_t big = sizes.back();
  int missed = 0;
  bench::table t1;
  t1.head = {"type", "kind", "hillis-steele GB/s", "blelloch GB/s", "reduce-then-scan GB/s", "look-back GB/s", "cub GB/s", "look-back x cub",
             "look-back x copy", "cub x copy", ">= 1.0x cub"};
  for (const char *ty : {"f32", "i32", "i64"})
    for (const char *k : {"inclusive", "exclusive"}) {
      const row *hs = find(rows, ty, k, big, "hillis-steele"), *bl = find(rows, ty, k, big, "blelloch"),
                *rts = find(rows, ty, k, big, "reduce-then-scan"), *lb = find(rows, ty, k, big, "decoupled-lookback"),
                *cb = find(rows, ty, k, big, "cub");
      if (!lb || !cb || !hs || !bl || !rts) continue;
      const bool met = lb->x_cub >= 1.0;
      missed += !met;
      t1.add({ty, k, bench::fmt("%.0f", hs->gbps), bench::fmt("%.0f", bl->gbps), bench::fmt("%.0f", rts->gbps), bench::fmt("%.0f", lb->gbps),
              bench::fmt("%.0f", cb->gbps), bench::fmt("%.3f", lb->x_cub), bench::fmt("%.3f", lb->x_copy), bench::fmt("%.3f", cb->x_copy),
              met ? "yes" : "NO"});
    }
  printf("Every version at n = 2^%d against CUB and the copy ceiling of %.0f GB/s (%s):\n", __builtin_ctzll(big), copy, dev.name);
  t1.print();

  // Table 2: the look-back and CUB by size (launch latency and L2 at the small end).
  bench::table t2;
  t2.head = {"type", "kind", "version"};
  for (int64_t n : sizes) t2.head.push_back(bench::fmt("2^%d x copy", __builtin_ctzll(n)));
  for (const char *ty : {"f32", "i32", "i64"})
    for (const char *k : {"inclusive", "exclusive"})
      for (const char *v : {"decoupled-lookback", "cub"}) {
        vector<string> r = {ty, k, v};
        bool any = false;
        for (int64_t n : sizes) {
          const row *p = find(rows, ty, k, n, v);
          r.push_back(p ? bench::fmt("%.3f", p->x_copy) : "-");
          any = any || p;
        }
        if (any) t2.add(r);
      }
  printf("\nThe look-back and CUB by size, as a fraction of the copy ceiling (L2 flushed before each run):\n");
  t2.print();

  bench::table t3;
  t3.head = {"type", "shape", "us", "GB/s", "x copy"};
  for (const row &r : rows)
    if (r.version.rfind("rows", 0) == 0) t3.add({r.type, r.version, bench::fmt("%.1f", r.us), bench::fmt("%.0f", r.gbps), bench::fmt("%.3f", r.x_copy)});
  printf("\nRow scans (AUTO, inclusive):\n");
  t3.print();

  printf("\nwrote %s; %d validation failures, %d (type, kind) where the look-back is under 1.0x CUB\n", opt.csv.c_str(), failures, missed);
  return failures ? 1 : 0;
}
