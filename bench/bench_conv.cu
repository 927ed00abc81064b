// SPDX-License-Identifier: MIT
// bench/bench_conv.cu - convolution (gpuops.h section 11), every version in one run:
//   1. the learning path, memory-bound: conv1d on 2^28 floats and conv2d_plane on 8192 x 8192 with
//      small and large filters, GB/s (4 bytes read + 4 written per output) and x the copy ceiling;
//   2. image models: conv2d on the ResNet-50 layers (56x56x64, 28x28x128, 14x14x256, 7x7x512 with
//      3x3 filters, K = C; their 1x1 reductions 256->64, 512->128, 1024->256, 2048->512), batch 64
//      and 128, and N 64, C 256, 56x56, K 256, 3x3; stride 1, 'same' padding, bias + ReLU. f32:
//      IMPLICIT_GEMM (NCHW, NHWC) and UNFUSED (NCHW); bf16 NHWC: WGMMA, MMA_SYNC, IMPLICIT_GEMM, UNFUSED.
//      TFLOP/s counts 2 N P Q K C R S. Each version is validated first on 256 sampled outputs
//      against a double-precision sum on the host.
//   3. the backward (f32 NCHW, IMPLICIT_GEMM): dgrad and wgrad on the 3x3 layers at batch 64.
// cuDNN is timed by bench/torch_conv.py (PyTorch's conv2d) on the same device, in the same
// `make bench` run; it reads this program's CSV and prints the ratios.
//   usage: bench_conv [--csv PATH] [--quick] [--only learning]   (--quick: batch 64 only; --only
//   learning: conv1d and conv2d_plane alone)
#define GPUOPS_ONLY_CONV
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string.h>

#include <functional>
#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"

using std::string;
using std::vector;

struct layer {
  const char *name;
  int64_t n, c, hw, k, f;
};

template <class T> static double host_val(T v) { return check::to_float(v); }

// Samples of y checked against a double sum on the host (x, w, b: host copies of the inputs).
template <class T> static string validate(const gpuops_conv2d_shape &s, const vector<T> &x, const vector<T> &w, const vector<T> &b, const T *dy, uint64_t seed) {
  int64_t P, Q;
  CHECK_OK(gpuops_conv2d_out_size(&s, &P, &Q));
  const bool nhwc = s.layout == GPUOPS_LAYOUT_NHWC;
  check::rng r(seed);
  int bad = 0;
  for (int t = 0; t < 256; ++t) {
    const int64_t n = r.below(s.n), k = r.below(s.k), p = r.below(P), q = r.below(Q);
    double acc = host_val(b[k]);
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < s.r; ++i)
        for (int64_t j = 0; j < s.s; ++j) {
          const int64_t h = p * s.stride_h - s.pad_h + i * s.dil_h, v = q * s.stride_w - s.pad_w + j * s.dil_w;
          if (h < 0 || h >= s.h || v < 0 || v >= s.w) continue;
          const int64_t xi = nhwc ? ((n * s.h + h) * s.w + v) * s.c + c : ((n * s.c + c) * s.h + h) * s.w + v;
          const int64_t wi = nhwc ? ((k * s.r + i) * s.s + j) * s.c + c : ((k * s.c + c) * s.r + i) * s.s + j;
          acc += host_val(x[xi]) * host_val(w[wi]);
        }
    const double want = acc > 0 ? acc : 0;  // ReLU
    const int64_t yi = nhwc ? ((n * P + p) * Q + q) * s.k + k : ((n * s.k + k) * P + p) * Q + q;
    T got;
    CHECK_CUDA(cudaMemcpy(&got, dy + yi, sizeof(T), cudaMemcpyDeviceToHost));
    const double tol = sizeof(T) == 4 ? 1e-4 * (1 + fabs(want)) : 2e-2 * fabs(want) + 5e-3;
    bad += !(fabs(host_val(got) - want) <= tol);
  }
  return bad ? bench::fmt("FAIL %d/256", bad) : "ok";
}

template <class T> struct dt_name;
template <> struct dt_name<float> { static constexpr const char *s = "f32"; };
template <> struct dt_name<gpuops_bf16> { static constexpr const char *s = "bf16"; };
static gpuops_status conv(float *y, const float *x, const float *w, const float *b, const gpuops_conv2d_shape *s, void *ws, size_t wb, gpuops_algo a) {
  return gpuops_conv2d_f32(y, x, w, b, s, GPUOPS_ACT_RELU, ws, wb, a, nullptr);
}
static gpuops_status conv(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *b, const gpuops_conv2d_shape *s, void *ws, size_t wb,
                          gpuops_algo a) {
  return gpuops_conv2d_bf16(y, x, w, b, s, GPUOPS_ACT_RELU, ws, wb, a, nullptr);
}

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_conv");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer timer;
  const double copy = bench::copy_ceiling(timer);
  bench::table tab;
  tab.head = {"op", "dtype", "layout", "shape", "version", "time_us", "tflops", "gb_per_s", "x_copy", "check"};
  int failures = 0;
  auto time_it = [&](const std::function<void()> &run) {
    const double once = timer.median_ms(run, 1, 1);
    return timer.median_ms(run, once > 200 ? 3 : once > 40 ? 5 : 25, 1);
  };

  // 1. The learning path.
  {
    const int64_t n = (int64_t)1 << 28, side = 8192;
    float *x, *y, *f;
    CHECK_CUDA(cudaMalloc(&x, (size_t)n * 4));
    CHECK_CUDA(cudaMalloc(&y, (size_t)n * 4));
    CHECK_CUDA(cudaMalloc(&f, 15 * 15 * 4));
    bench::fill_uniform(x, n, seed, -1.0f, 1.0f);
    bench::fill_uniform(f, 225, seed + 1, -1.0f, 1.0f);
    timer.settle();
    const gpuops_algo algos[] = {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_CONST_FILTER, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_CACHED_HALO, GPUOPS_ALGO_REGISTER_1D};
    for (int two_d = 0; two_d < 2; ++two_d)
      for (int fw : {3, 7, 15})
        for (gpuops_algo a : algos) {
          if (two_d && a == GPUOPS_ALGO_REGISTER_1D) a = GPUOPS_ALGO_REGISTER_2D;
          auto run = [&] {
            if (two_d) CHECK_OK(gpuops_conv2d_plane_f32(y, x, f, side, side, fw, fw, a, nullptr));
            else CHECK_OK(gpuops_conv1d_f32(y, x, f, n, fw, a, nullptr));
          };
          const double ms = time_it(run);
          const double outputs = two_d ? (double)side * side : (double)n;  // 4 bytes read and 4 written each
          const double gbps = 8.0 * outputs / (ms * 1e6);
          const int64_t fl = two_d ? (int64_t)fw * fw : fw;
          tab.add({two_d ? "conv2d_plane" : "conv1d", "f32", "-", two_d ? bench::fmt("8192x8192 f%dx%d", fw, fw) : bench::fmt("2^28 f%d", fw), gpuops_algo_name(a),
                   bench::fmt("%.2f", ms * 1e3), bench::fmt("%.3f", 2.0 * fl * outputs / (ms * 1e9)), bench::fmt("%.1f", gbps), bench::fmt("%.3f", gbps / copy), "-"});
        }
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(y));
    CHECK_CUDA(cudaFree(f));
  }

  if (opt.only == "learning") {  // --only learning: the learning path's table alone
    tab.print();
    tab.write_csv(opt.csv);
    return failures ? 1 : 0;
  }

  // 2. Image models.
  const layer layers[] = {{"56x56x64 3x3", 0, 64, 56, 64, 3},     {"28x28x128 3x3", 0, 128, 28, 128, 3}, {"14x14x256 3x3", 0, 256, 14, 256, 3},
                          {"7x7x512 3x3", 0, 512, 7, 512, 3},      {"56x56 1x1 256->64", 0, 256, 56, 64, 1}, {"28x28 1x1 512->128", 0, 512, 28, 128, 1},
                          {"14x14 1x1 1024->256", 0, 1024, 14, 256, 1}, {"7x7 1x1 2048->512", 0, 2048, 7, 512, 1}};
  struct job {
    string name;
    int64_t n, c, hw, k, f;
  };
  vector<job> jobs;
  for (int64_t batch : {64, 128}) {
    if (opt.quick && batch == 128) continue;
    for (const layer &l : layers) jobs.push_back({bench::fmt("N%lld %s", (long long)batch, l.name), batch, l.c, l.hw, l.k, l.f});
  }
  jobs.push_back({"N64 56x56 256->256 3x3", 64, 256, 56, 256, 3});
  size_t most_x = 0, most_w = 0, most_ws = 0;
  for (const job &j : jobs) {
    gpuops_conv2d_shape s = {};
    s.n = j.n, s.c = j.c, s.h = s.w = j.hw, s.k = j.k, s.r = s.s = j.f, s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1, s.pad_h = s.pad_w = j.f / 2;
    most_x = std::max(most_x, (size_t)(j.n * std::max(j.c, j.k) * j.hw * j.hw));
    most_w = std::max(most_w, (size_t)(j.k * j.c * j.f * j.f));
    most_ws = std::max(most_ws, gpuops_conv2d_workspace_size(&s, GPUOPS_ALGO_UNFUSED));
    most_ws = std::max(most_ws, gpuops_conv2d_bwd_filter_workspace_size(&s, GPUOPS_ALGO_AUTO));
  }
  void *bx, *by, *bw, *bb, *ws;
  CHECK_CUDA(cudaMalloc(&bx, most_x * 4));
  CHECK_CUDA(cudaMalloc(&by, most_x * 4));
  CHECK_CUDA(cudaMalloc(&bw, most_w * 4));
  CHECK_CUDA(cudaMalloc(&bb, 4096 * 4));
  CHECK_CUDA(cudaMalloc(&ws, most_ws));
  timer.settle();
  auto run_type = [&](auto *tp) {
    using T = typename std::remove_pointer<decltype(tp)>::type;
    const bool f32 = sizeof(T) == 4;
    T *x = (T *)bx, *y = (T *)by, *w = (T *)bw, *b = (T *)bb;
    bench::fill_uniform(x, (int64_t)most_x, seed + 2, -1.0f, 1.0f);
    bench::fill_uniform(w, (int64_t)most_w, seed + 3, -0.1f, 0.1f);
    bench::fill_uniform(b, 4096, seed + 4, -0.5f, 0.5f);
    const vector<T> hx = check::to_host(x, most_x), hw = check::to_host(w, most_w), hb = check::to_host(b, 4096);  // every job reads a prefix
    for (const job &j : jobs) {
      struct variant {
        gpuops_layout layout;
        gpuops_algo algo;
      };
      vector<variant> vs;
      if (f32) vs = {{GPUOPS_LAYOUT_NCHW, GPUOPS_ALGO_AUTO}, {GPUOPS_LAYOUT_NHWC, GPUOPS_ALGO_AUTO}, {GPUOPS_LAYOUT_NCHW, GPUOPS_ALGO_UNFUSED}};
      else
        vs = {{GPUOPS_LAYOUT_NHWC, GPUOPS_ALGO_AUTO},
              {GPUOPS_LAYOUT_NHWC, GPUOPS_ALGO_WGMMA},
              {GPUOPS_LAYOUT_NHWC, GPUOPS_ALGO_MMA_SYNC},
              {GPUOPS_LAYOUT_NHWC, GPUOPS_ALGO_IMPLICIT_GEMM},
              {GPUOPS_LAYOUT_NHWC, GPUOPS_ALGO_UNFUSED}};
      for (const variant &v : vs) {
        gpuops_conv2d_shape s = {};
        s.n = j.n, s.c = j.c, s.h = s.w = j.hw, s.k = j.k, s.r = s.s = j.f, s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1, s.pad_h = s.pad_w = j.f / 2;
        s.layout = v.layout;
        const size_t wsb = gpuops_conv2d_workspace_size(&s, v.algo);
        const gpuops_status st = conv(y, x, w, b, &s, ws, wsb, v.algo);
        CHECK_CUDA(cudaDeviceSynchronize());
        const string name = v.algo == GPUOPS_ALGO_AUTO ? "auto" : gpuops_algo_name(v.algo);
        if (st != GPUOPS_OK) {
          tab.add({"conv2d", dt_name<T>::s, v.layout ? "nhwc" : "nchw", j.name, name, "-", "-", "-", "-", gpuops_status_string(st)});
          continue;
        }
        const string chk = validate<T>(s, hx, hw, hb, y, seed + 5);
        failures += chk != "ok";
        const double ms = time_it([&] { CHECK_OK(conv(y, x, w, b, &s, ws, wsb, v.algo)); });
        const double flops = 2.0 * j.n * j.hw * j.hw * j.k * j.c * j.f * j.f;
        tab.add({"conv2d", dt_name<T>::s, v.layout ? "nhwc" : "nchw", j.name, name, bench::fmt("%.2f", ms * 1e3), bench::fmt("%.3f", flops / (ms * 1e9)), "-", "-", chk});
      }
    }
  };
  run_type((float *)nullptr);
  run_type((gpuops_bf16 *)nullptr);

  // 3. Backward, f32 NCHW, the 3x3 layers at batch 64.
  for (const layer &l : layers) {
    if (l.f != 3) continue;
    gpuops_conv2d_shape s = {};
    s.n = 64, s.c = l.c, s.h = s.w = l.hw, s.k = l.k, s.r = s.s = 3, s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1, s.pad_h = s.pad_w = 1;
    const double flops = 2.0 * s.n * l.hw * l.hw * l.k * l.c * 9;
    float *x = (float *)bx, *dy = (float *)by, *w = (float *)bw;
    const double md = time_it([&] { CHECK_OK(gpuops_conv2d_bwd_data_f32(x, dy, w, &s, GPUOPS_ALGO_AUTO, nullptr)); });
    tab.add({"conv2d_bwd_data", "f32", "nchw", bench::fmt("N64 %s", l.name), "implicit-gemm", bench::fmt("%.2f", md * 1e3), bench::fmt("%.3f", flops / (md * 1e9)), "-", "-", "-"});
    const size_t wsb = gpuops_conv2d_bwd_filter_workspace_size(&s, GPUOPS_ALGO_AUTO);
    const double mw = time_it([&] { CHECK_OK(gpuops_conv2d_bwd_filter_f32(w, dy, x, &s, ws, wsb, GPUOPS_ALGO_AUTO, nullptr)); });
    tab.add({"conv2d_bwd_filter", "f32", "nchw", bench::fmt("N64 %s", l.name), "implicit-gemm", bench::fmt("%.2f", mw * 1e3), bench::fmt("%.3f", flops / (mw * 1e9)), "-", "-", "-"});
  }
  for (void *p : {bx, by, bw, bb, ws}) CHECK_CUDA(cudaFree(p));
  tab.print();
  tab.write_csv(opt.csv);
  printf("\ncuDNN on the same layers: bench/torch_conv.py (run by `make bench` after this program).\n");
  return failures ? 1 : 0;
}
