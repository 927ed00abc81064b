// SPDX-License-Identifier: MIT
// bench/bench_softmax.cu - speed of the softmax family against the copy ceiling, measured in the
// same run: softmax, log_softmax and the backward, every version x {f32, bf16} on the large
// shapes (32768 x 4096, 131072 x 1024, 4096 x 65536, 256 x 2^20; a few long rows: 16 x 2^20 and
// 256 x 65536, where AUTO splits rows over clusters), the short rows at 2^24 elements
// (16777216 x 1, 5592405 x 3, 524288 x 32, 131072 x 128: AUTO only, since a block per row of
// THREE_PASS and ONLINE takes milliseconds there), odd lengths (4095 x 4097, 2048 x 50257: rows at
// every 16-byte phase) and small ones (L2-resident, short rows). Each
// (op, version, type, shape) is validated against the CPU implementation on sample rows (first,
// middle, last) before it is timed. Writes every measurement as CSV.
//   usage: bench_softmax [--csv PATH] [--quick] [--type f32|bf16]
//   --quick: the six large shapes, the four short-row shapes and the two odd lengths.
// Bytes counted: forward 2 x rows x cols x sizeof(T) (x read once, y written once), backward 3 x
// (dy and y read once, dx written once). THREE_PASS and ONLINE are charged the same bytes, so their
// GB/s is the effective rate. The backward's THREE_PASS is the same streaming kernel as ONLINE and
// is not timed twice.
#define GPUOPS_ONLY_SOFTMAX
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "softmax_ops.h"

using std::string;
using std::vector;


struct shape {
  int64_t rows, cols;
};

struct row {
  string op, type, version;
  shape s;
  double us, gbps, x_copy;
};

// The op on sample rows of the GPU's inputs and output against the CPU; "" or why not.
template <class T> string validate(sm_op o, const T *out, const T *a, const T *b, shape s) {
  for (int64_t r : {(int64_t)0, s.rows / 2, s.rows - 1}) {
    const int64_t c = s.cols;
    vector<T> ha(c), hb(c), got(c), want(c);
    CHECK_CUDA(cudaMemcpy(ha.data(), a + r * c, c * sizeof(T), cudaMemcpyDeviceToHost));
    if (o == BWD) CHECK_CUDA(cudaMemcpy(hb.data(), b + r * c, c * sizeof(T), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(got.data(), out + r * c, c * sizeof(T), cudaMemcpyDeviceToHost));
    CHECK_OK(api<T>::cpu(o, want.data(), ha.data(), hb.data(), 1, c));
    // The tests hold the tight tolerances; here a loose check that catches a wrong kernel (the
    // backward's absolute error scales with y * max|dy|: 1e-3 absolute covers it for dy in [-1, 1]).
    check::tolerance tol = check::default_tolerance<T>();
    tol.rtol = sizeof(T) == 4 ? 1e-4 : tol.rtol;
    tol.atol = o == BWD ? 1e-3 * (sizeof(T) == 4 ? 0.01 : 1.0) : o == LOG_FWD ? 1e-3 : 1e-9;
    const check::result res = check::compare(got.data(), want.data(), c, tol);
    if (!res.ok()) return bench::fmt("row %lld: ", (long long)r) + check::verdict(res);
  }
  return "";
}

// The short-row shapes at 2^24 elements: AUTO only.
static bool auto_only(shape s) { return s.cols <= 128 && s.rows * s.cols >= (1 << 24) - 2; }

template <class T> void bench_type(bench::timer &t, double copy, const vector<shape> &shapes, uint64_t seed, vector<row> &rows, int &failures) {
  int64_t nmax = 0;
  for (const shape &s : shapes) nmax = std::max(nmax, s.rows * s.cols);
  T *x = nullptr, *y = nullptr, *dy = nullptr, *dx = nullptr;
  CHECK_CUDA(cudaMalloc(&x, nmax * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&y, nmax * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&dy, nmax * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&dx, nmax * sizeof(T)));
  t.settle();
  for (const shape &s : shapes) {
    const int64_t n = s.rows * s.cols;
    bench::fill_uniform(x, n, seed, -8.0f, 8.0f);
    bench::fill_uniform(dy, n, seed + 1, -1.0f, 1.0f);
    for (sm_op o : {FWD, LOG_FWD, BWD}) {
      vector<gpuops_algo> algos = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_THREE_PASS, GPUOPS_ALGO_ONLINE};
      if (o == BWD) algos = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_ONLINE};
      if (auto_only(s)) algos = {GPUOPS_ALGO_AUTO};
      if (o == BWD) {
        CHECK_OK(api<T>::gpu(FWD, y, x, nullptr, s.rows, s.cols, GPUOPS_ALGO_AUTO));  // y = softmax(x) for the backward
      }
      T *out = o == BWD ? dx : y;
      const T *a = o == BWD ? dy : x, *b = o == BWD ? y : nullptr;
      for (gpuops_algo al : algos) {
        check::poison(out, n * sizeof(T));
        const gpuops_status st = api<T>::gpu(o, out, a, b, s.rows, s.cols, al);
        CHECK_CUDA(cudaDeviceSynchronize());
        const string why = st != GPUOPS_OK ? string(gpuops_status_string(st)) : validate<T>(o, out, a, b, s);
        if (!why.empty()) {
          printf("VALIDATION FAILED %s %s %s %lldx%lld: %s\n", op_name(o), check::dtype_name<T>(), gpuops_algo_name(al), (long long)s.rows,
                 (long long)s.cols, why.c_str());
          ++failures;
          continue;
        }
        const double ms = t.median_ms([&] { CHECK_OK(api<T>::gpu(o, out, a, b, s.rows, s.cols, al)); });
        const double bytes = (o == BWD ? 3.0 : 2.0) * (double)n * sizeof(T);
        const double gbps = bytes / (ms * 1e6);
        rows.push_back({op_name(o), check::dtype_name<T>(), gpuops_algo_name(al), s, ms * 1e3, gbps, gbps / copy});
      }
    }
  }
  for (T *p : {x, y, dy, dx}) cudaFree(p);
}

static const row *find(const vector<row> &rows, const string &op, const string &type, shape s, const string &version) {
  for (const row &r : rows)
    if (r.op == op && r.type == type && r.s.rows == s.rows && r.s.cols == s.cols && r.version == version) return &r;
  return nullptr;
}

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_softmax");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer t;
  const double copy = bench::copy_ceiling(t);

  // The headline shapes (with their targets for AUTO's forward), then small ones.
  const vector<shape> big = {{32768, 4096}, {131072, 1024}, {4096, 65536}, {256, 1 << 20}, {16, 1 << 20}, {256, 65536}};
  const double target[] = {0.90, 0.90, 0.80, 0.0, 0.0, 0.0};
  vector<shape> shapes = big;
  for (shape s : vector<shape>{{16777216, 1}, {5592405, 3}, {524288, 32}, {131072, 128}}) shapes.push_back(s);
  for (shape s : vector<shape>{{4095, 4097}, {2048, 50257}}) shapes.push_back(s);  // odd lengths: rows at every 16-byte phase
  if (!opt.quick)
    for (shape s : vector<shape>{{1 << 20, 32}, {1 << 18, 128}, {65536, 512}, {1024, 1024}, {16384, 8192}, {8192, 16384}, {2048, 32768}})
      shapes.push_back(s);
  vector<row> rows;
  int failures = 0;
  const string &type = opt.type;
  if (type.empty() || type == "f32") bench_type<float>(t, copy, shapes, seed, rows, failures);
  if (type.empty() || type == "bf16") bench_type<gpuops_bf16>(t, copy, shapes, seed, rows, failures);

  bench::table all;
  all.head = {"family", "op", "dtype", "rows", "cols", "version", "time_us", "gb_per_s", "x_copy", "copy_gb_per_s", "device"};
  for (const row &r : rows)
    all.add({"softmax", r.op, r.type, std::to_string(r.s.rows), std::to_string(r.s.cols), r.version, bench::fmt("%.3f", r.us),
             bench::fmt("%.1f", r.gbps), bench::fmt("%.4f", r.x_copy), bench::fmt("%.1f", copy), dev.name});
  all.write_csv(opt.csv);

  int missed = 0;
  for (sm_op o : {FWD, LOG_FWD, BWD}) {
    bench::table tb;
    tb.head = {"shape", "type"};
    const vector<string> versions = o == BWD ? vector<string>{"online", "auto"} : vector<string>{"three-pass", "online", "auto"};
    for (const string &v : versions) tb.head.push_back(v + " x copy");
    tb.head.push_back("auto us");
    tb.head.push_back("auto GB/s");
    if (o == FWD) tb.head.push_back("target");
    for (const char *ty : {"f32", "bf16"})
      for (size_t k = 0; k < shapes.size(); ++k) {
        const shape s = shapes[k];
        const row *a = find(rows, op_name(o), ty, s, "auto");
        if (!a) continue;
        vector<string> line = {bench::fmt("%lld x %lld", (long long)s.rows, (long long)s.cols), ty};
        for (const string &v : versions) {
          const row *r = find(rows, op_name(o), ty, s, v);
          line.push_back(r ? bench::fmt("%.3f", r->x_copy) : "-");
        }
        line.push_back(bench::fmt("%.1f", a->us));
        line.push_back(bench::fmt("%.0f", a->gbps));
        if (o == FWD) {
          const double tg = k < big.size() ? target[k] : 0.0;
          const bool met = a->x_copy >= tg;
          missed += tg > 0 && !met;
          line.push_back(tg > 0 ? bench::fmt(">= %.2f: %s", tg, met ? "yes" : "NO") : "-");
        }
        tb.add(line);
      }
    printf("%s, as a fraction of the copy ceiling (%.0f GB/s, %s):\n", op_name(o), copy, dev.name);
    tb.print();
    printf("\n");
  }
  printf("wrote %s; %d validation failures, %d forward targets missed\n", opt.csv.c_str(), failures, missed);
  return failures ? 1 : 0;
}
