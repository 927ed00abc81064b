// SPDX-License-Identifier: MIT
// bench/bench_elementwise.cu - speed of the elementwise family against the copy ceiling, measured
// in the same run: every op x storage type x version at sizes from L2-resident (2^18 elements) to
// 2^28, plus each fused op against its unfused version. Each (op, type) is validated against the
// CPU implementation before it is timed. Writes every measurement as CSV.
//   usage: bench_elementwise [--csv PATH] [--quick] [--only OP] [--type f32|f16|bf16]
//   --quick: sizes 2^24 and 2^28 only; --only, --type: one op or type (for a profiler), no summary.
// Bytes counted per element: each input read once, the output written once (ewt::bytes_per_element);
// the unfused versions are charged the same bytes, so their GB/s is the effective rate.
#define GPUOPS_ONLY_ELEMENTWISE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "elementwise_ops.h"

using std::string;
using std::vector;

// Per-channel ops: weights [4096, n / 4096] quantized per output row (outer 1, channels 4096,
// inner n / 4096); the channels-last rows use [n / 4096, 4096, 1], a new channel every element.
constexpr int64_t kChannels = 4096;

template <class T> struct buffers {
  T *a = nullptr, *b = nullptr, *y = nullptr;
  int8_t *q = nullptr;
  float *ws = nullptr, *scale_c = nullptr;
  int32_t *zp_c = nullptr;

  explicit buffers(int64_t n, uint64_t seed) {
    CHECK_CUDA(cudaMalloc(&a, n * sizeof(T)));
    CHECK_CUDA(cudaMalloc(&b, n * sizeof(T)));
    CHECK_CUDA(cudaMalloc(&y, n * sizeof(T)));
    CHECK_CUDA(cudaMalloc(&q, n));
    CHECK_CUDA(cudaMalloc(&ws, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&scale_c, kChannels * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&zp_c, kChannels * sizeof(int32_t)));
    // Inputs in [-3, 3], like pre-activations: a range narrow enough data would keep every lane
    // of erff in one branch and flatter the GELU rows.
    bench::fill_uniform(a, n, seed, -3.0f, 3.0f);
    bench::fill_uniform(b, n, seed + 1, -3.0f, 3.0f);
    bench::fill_uniform(y, n, seed + 2, -3.0f, 3.0f);
    bench::fill_uniform(q, n, seed + 3, -128.0f, 127.0f);
    bench::fill_uniform(scale_c, kChannels, seed + 4, 0.01f, 0.05f);
    vector<int32_t> zp(kChannels);
    for (int64_t c = 0; c < kChannels; ++c) zp[c] = (int32_t)(c % 41) - 20;
    CHECK_CUDA(cudaMemcpy(zp_c, zp.data(), kChannels * sizeof(int32_t), cudaMemcpyHostToDevice));
  }
  ~buffers() {
    for (void *p : {(void *)a, (void *)b, (void *)y, (void *)q, (void *)ws, (void *)scale_c, (void *)zp_c}) cudaFree(p);
  }

  // The call on the first n elements (n a multiple of kChannels for the per-channel ops).
  ewt::call call(ewt::op o, int64_t n, bool channels_last = false) const {
    const ewt::info &d = ewt::describe(o);
    ewt::call c;
    c.n = n;
    c.outer = channels_last ? n / kChannels : 1, c.channels = kChannels, c.inner = channels_last ? 1 : n / kChannels;
    c.s = o == ewt::AXPY ? 1.0f / 1024 : o == ewt::ADD_MUL_EXP ? 0.5f : 2.0f;  // bounded: axpy runs in place many times
    c.y = d.int8_out ? (void *)q : (void *)y;
    c.a = d.int8_in ? (const void *)q : (const void *)a;
    c.b = b;
    c.scale_c = scale_c;
    c.zero_point_c = zp_c;
    c.workspace = ws;
    c.workspace_bytes = (size_t)n * sizeof(float);
    return c;
  }
};

// Runs the op on the GPU for the first n elements and on the CPU for the same inputs; "" or why not.
template <class T> string validate(ewt::op o, const buffers<T> &B, int64_t n, gpuops_algo algo, bool channels_last = false) {
  const ewt::info &d = ewt::describe(o);
  ewt::call g = B.call(o, n, channels_last);
  const vector<T> a = check::to_host(B.a, n), b = check::to_host(B.b, n), y0 = check::to_host(B.y, n);
  const vector<int8_t> q = check::to_host(B.q, n);
  const vector<float> sc = check::to_host(B.scale_c, kChannels);
  const vector<int32_t> zp = check::to_host(B.zp_c, kChannels);
  if (!d.int8_out && o != ewt::AXPY) check::poison(B.y, n * sizeof(T));
  const gpuops_status st = ewt::api<T>::gpu(o, g, algo, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (st != GPUOPS_OK) return gpuops_status_string(st);
  vector<T> ref = o == ewt::AXPY ? y0 : vector<T>(n);
  vector<int8_t> qref(n);
  ewt::call h = g;
  h.a = d.int8_in ? (const void *)q.data() : (const void *)a.data();
  h.b = b.data();
  h.y = d.int8_out ? (void *)qref.data() : (void *)ref.data();
  h.scale_c = sc.data();
  h.zero_point_c = zp.data();
  CHECK_OK(ewt::api<T>::cpu(o, h));
  const check::result r = d.int8_out ? check::compare(check::to_host(B.q, n).data(), qref.data(), n, check::exact)
                                     : check::compare(check::to_host(B.y, n).data(), ref.data(), n,
                                                      d.int8_in ? check::exact : check::default_tolerance<T>());
  if (o == ewt::AXPY) CHECK_CUDA(cudaMemcpy(B.y, y0.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  if (d.int8_out) CHECK_CUDA(cudaMemcpy(B.q, q.data(), n, cudaMemcpyHostToDevice));  // keep dequantize's input random
  return r.ok() ? "" : bench::fmt("%lld wrong, first at %lld: %g vs %g", (long long)r.bad, (long long)r.first_bad, r.got, r.want);
}

struct row {
  string op, type, version;
  int64_t n;
  double us, gbps, x_copy;
};

static const char *short_algo(gpuops_algo a) { return gpuops_algo_name(a); }

template <class T>
void bench_type(bench::timer &t, double copy, const vector<int64_t> &sizes, uint64_t seed, const string &only, vector<row> &rows,
                int &failures) {
  const int64_t nmax = sizes.back();
  buffers<T> B(nmax, seed);
  t.settle();
  for (int o = 0; o < ewt::OP_COUNT; ++o) {
    const ewt::op op = (ewt::op)o;
    const ewt::info &d = ewt::describe(op);
    if (!only.empty() && only != d.name) continue;
    vector<gpuops_algo> algos = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_GRID_STRIDE, GPUOPS_ALGO_VECTORIZED};
    if (d.fused) algos.push_back(GPUOPS_ALGO_UNFUSED);
    for (gpuops_algo al : algos) {
      const string why = validate<T>(op, B, (1 << 20) + 3 * kChannels, al);
      if (!why.empty()) {
        printf("VALIDATION FAILED %s %s %s: %s\n", d.name, check::dtype_name<T>(), short_algo(al), why.c_str());
        ++failures;
      }
    }
    auto time = [&](int64_t n, gpuops_algo al, bool channels_last, const char *version) {
      const ewt::call c = B.call(op, n, channels_last);
      const double ms = t.median_ms([&] { CHECK_OK(ewt::api<T>::gpu(op, c, al, 0)); });
      const double gbps = ewt::bytes_per_element(op, sizeof(T)) * (double)n / (ms * 1e6);
      rows.push_back({d.name, check::dtype_name<T>(), version, n, ms * 1e3, gbps, gbps / copy});
    };
    for (int64_t n : sizes)
      for (gpuops_algo al : algos) time(n, al, false, short_algo(al));
    if (d.per_channel) {
      const string why = validate<T>(op, B, (1 << 20) + 3 * kChannels, GPUOPS_ALGO_AUTO, true);
      if (!why.empty()) printf("VALIDATION FAILED %s %s channels-last: %s\n", d.name, check::dtype_name<T>(), why.c_str()), ++failures;
      time(nmax, GPUOPS_ALGO_AUTO, true, "auto-channels-last");
    }
  }
}

static const row *find(const vector<row> &rows, const string &op, const string &type, int64_t n, const string &version) {
  for (const row &r : rows)
    if (r.op == op && r.type == type && r.n == n && r.version == version) return &r;
  return nullptr;
}

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_elementwise");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer t;
  const double copy = bench::copy_ceiling(t, ""), write = t.write_gbps((size_t)1 << 30);
  printf("write-only rate, for context (cudaMemset of 1 GiB): %.0f GB/s = %.3fx copy\n\n", write, write / copy);

  const vector<int64_t> sizes = opt.quick ? vector<int64_t>{1 << 24, 1 << 28}
                                          : vector<int64_t>{1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28};
  vector<row> rows;
  int failures = 0;
  const string &only = opt.only, &type = opt.type;
  if (type.empty() || type == "f32") bench_type<float>(t, copy, sizes, seed, only, rows, failures);
  if (type.empty() || type == "f16") bench_type<gpuops_f16>(t, copy, sizes, seed, only, rows, failures);
  if (type.empty() || type == "bf16") bench_type<gpuops_bf16>(t, copy, sizes, seed, only, rows, failures);

  // CSV: every measurement.
  bench::table all;
  all.head = {"family", "op", "dtype", "n", "version", "time_us", "gb_per_s", "x_copy", "copy_gb_per_s", "device"};
  for (const row &r : rows)
    all.add({"elementwise", r.op, r.type, std::to_string(r.n), r.version, bench::fmt("%.3f", r.us), bench::fmt("%.1f", r.gbps),
             bench::fmt("%.4f", r.x_copy), bench::fmt("%.1f", copy), dev.name});
  all.write_csv(opt.csv);
  if (!only.empty() || !type.empty()) {
    all.print();
    return failures ? 1 : 0;
  }

  // Table 1: every op and type at the largest size; the target is 0.92x copy for AUTO.
  const int64_t big = sizes.back();
  const double target = 0.92;
  int missed = 0;
  bench::table t1;
  t1.head = {"op", "type", "naive GB/s", "grid-stride GB/s", "vectorized GB/s", "auto us", "auto GB/s", "x copy", ">= 0.92x"};
  for (const char *type : {"f32", "f16", "bf16"})
    for (int o = 0; o < ewt::OP_COUNT; ++o) {
      const string op = ewt::describe((ewt::op)o).name;
      const row *a = find(rows, op, type, big, "auto"), *nv = find(rows, op, type, big, "naive"),
                *gs = find(rows, op, type, big, "grid-stride"), *ve = find(rows, op, type, big, "vectorized");
      const bool met = a->x_copy >= target;
      missed += !met;
      t1.add({op, type, bench::fmt("%.0f", nv->gbps), bench::fmt("%.0f", gs->gbps), bench::fmt("%.0f", ve->gbps), bench::fmt("%.1f", a->us),
              bench::fmt("%.0f", a->gbps), bench::fmt("%.3f", a->x_copy), met ? "yes" : "NO"});
    }
  printf("Every op at n = 2^%d, against the copy ceiling of %.0f GB/s (%s):\n", __builtin_ctzll(big), copy, dev.name);
  t1.print();

  // Table 2: fused against unfused at the largest size; the target is 2x.
  bench::table t2;
  t2.head = {"op", "type", "unfused us", "fused us", "speedup", ">= 2x"};
  int slow_fusion = 0;
  for (const char *type : {"f32", "f16", "bf16"})
    for (int o = 0; o < ewt::OP_COUNT; ++o) {
      const ewt::info &d = ewt::describe((ewt::op)o);
      if (!d.fused) continue;
      const row *f = find(rows, d.name, type, big, "auto"), *u = find(rows, d.name, type, big, "unfused");
      const double s = u->us / f->us;
      slow_fusion += s < 2.0;
      t2.add({d.name, type, bench::fmt("%.1f", u->us), bench::fmt("%.1f", f->us), bench::fmt("%.2fx", s), s >= 2.0 ? "yes" : "NO"});
    }
  printf("\nFused against unfused at n = 2^%d:\n", __builtin_ctzll(big));
  t2.print();

  // Table 3: how AUTO's rate grows with size (launch latency and L2 at the small end).
  bench::table t3;
  t3.head = {"op", "type"};
  for (int64_t n : sizes) t3.head.push_back(bench::fmt("2^%d", __builtin_ctzll(n)));
  for (const char *type : {"f32", "bf16"})
    for (const char *op : {"add", "gelu_erf_fwd", "gelu_erf_bwd", "quantize"}) {
      vector<string> r = {op, type};
      for (int64_t n : sizes) r.push_back(bench::fmt("%.2f", find(rows, op, type, n, "auto")->x_copy));
      t3.add(r);
    }
  printf("\nAUTO's rate as a fraction of the copy ceiling, by size (L2 flushed before each run):\n");
  t3.print();

  // Table 4: per-channel ops on channels-last data (a new channel every element).
  bench::table t4;
  t4.head = {"op", "type", "weights layout x copy", "channels-last x copy"};
  for (const char *type : {"f32", "f16", "bf16"})
    for (const char *op : {"quantize_per_channel", "dequantize_per_channel"})
      t4.add({op, type, bench::fmt("%.3f", find(rows, op, type, big, "auto")->x_copy),
              bench::fmt("%.3f", find(rows, op, type, big, "auto-channels-last")->x_copy)});
  printf("\nPer-channel ops at n = 2^%d: weights [4096, n/4096] against channels-last [n/4096, 4096]:\n", __builtin_ctzll(big));
  t4.print();

  printf("\nwrote %s; %d validation failures, %d ops under %.2fx copy, %d fused ops under 2x\n", opt.csv.c_str(), failures, missed, target,
         slow_fusion);
  return failures ? 1 : 0;
}
