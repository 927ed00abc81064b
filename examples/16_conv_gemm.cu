// SPDX-License-Identifier: MIT
// examples/16_conv_gemm.cu - step 16 of the learning path: convolution as a matrix product.
//
// What it teaches
//   An image model's conv2d (N images of C channels, K filters of C x R x S) is a GEMM: rows are
//   the N P Q output pixels, columns the K filters, and the reduction runs over the C R S inputs
//   under each filter window. The versions (gpuops_cuda.cuh 11.2 and 11.3):
//   unfused         three kernels: im2col writes the (N P Q) x (C R S) matrix to memory (R S times
//                   the input's bytes), the library's GEMM multiplies it by the filters, a third
//                   kernel adds the bias, applies ReLU and permutes into the output's layout. The
//                   GEMM is fast; the unrolled matrix's round trip through DRAM is the price.
//   implicit-gemm   one kernel: each tile of the unrolled matrix is gathered from the input while it
//                   is loaded into shared memory, and the epilogue writes straight into the output
//                   layout. No extra bytes; f32 on CUDA cores (FFMA-bound).
//   mma-sync        the implicit GEMM on tensor cores (bf16 / f16, NHWC): 16-byte cp.async copies
//                   of 8 channels of one pixel (C a multiple of 8), zero-filled in the padding, into
//                   swizzled shared memory, ldmatrix, mma.sync m16n8k16, three stages in flight; any
//                   other C gathers element by element into the same tiles.
//   wgmma           Hopper (sm_90a): the GEMM family's warp-specialized wgmma kernel, its A operand
//                   gathered by a producer warpgroup with the same 16-byte cp.async copies, written
//                   in the 128-byte swizzle wgmma reads from shared memory and signalled through
//                   mbarriers; the filters come by the TMA as the GEMM's B. AUTO's choice there.
//   cuDNN, the vendor's convolution, is timed on the same layers by bench/torch_conv.py (PyTorch's
//   conv2d) in `make bench`; this example does not link it.
// PREDICTION for an H100 (not a measurement; bench_conv and docs/performance.md hold the numbers):
//   implicit-gemm ahead of unfused in f32 (the unrolled matrix is 9x the input here), mma-sync
//   an order of magnitude above the f32 versions, and wgmma about twice mma-sync.
//
// Each version is validated first on 512 sampled outputs against a double-precision sum on the
// host. The CPU column times the CPU implementation on one image and scales it by N.
// Build: nvcc -O3 -arch=sm_90 -I. examples/16_conv_gemm.cu -o conv_gemm. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_CONV
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using std::string;
using std::vector;

// 512 sampled outputs of y against double sums of the host copies x, w, b (ReLU applied).
template <class T> static string validate(const gpuops_conv2d_shape &s, const vector<T> &x, const vector<T> &w, const vector<T> &b, const T *dy, check::rng &r) {
  int64_t P, Q;
  CHECK_OK(gpuops_conv2d_out_size(&s, &P, &Q));
  const bool nhwc = s.layout == GPUOPS_LAYOUT_NHWC;
  int bad = 0;
  for (int t = 0; t < 512; ++t) {
    const int64_t n = r.below(s.n), k = r.below(s.k), p = r.below(P), q = r.below(Q);
    double acc = check::to_float(b[k]);
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < s.r; ++i)
        for (int64_t j = 0; j < s.s; ++j) {
          const int64_t h = p - s.pad_h + i, v = q - s.pad_w + j;
          if (h < 0 || h >= s.h || v < 0 || v >= s.w) continue;
          acc += (double)check::to_float(x[nhwc ? ((n * s.h + h) * s.w + v) * s.c + c : ((n * s.c + c) * s.h + h) * s.w + v]) *
                 check::to_float(w[nhwc ? ((k * s.r + i) * s.s + j) * s.c + c : ((k * s.c + c) * s.r + i) * s.s + j]);
        }
    const double want = acc > 0 ? acc : 0;
    T got;
    CHECK_CUDA(cudaMemcpy(&got, dy + (nhwc ? ((n * P + p) * Q + q) * s.k + k : ((n * s.k + k) * P + p) * Q + q), sizeof(T), cudaMemcpyDeviceToHost));
    bad += !(fabs(check::to_float(got) - want) <= (sizeof(T) == 4 ? 1e-4 * (1 + fabs(want)) : 2e-2 * fabs(want) + 5e-3));
  }
  return bad ? bench::fmt("FAIL %d/512", bad) : "ok";
}

static gpuops_status conv(float *y, const float *x, const float *w, const float *b, const gpuops_conv2d_shape *s, void *ws, size_t wb, gpuops_algo a) {
  return gpuops_conv2d_f32(y, x, w, b, s, GPUOPS_ACT_RELU, ws, wb, a, nullptr);
}
static gpuops_status conv(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *b, const gpuops_conv2d_shape *s, void *ws, size_t wb,
                          gpuops_algo a) {
  return gpuops_conv2d_bf16(y, x, w, b, s, GPUOPS_ACT_RELU, ws, wb, a, nullptr);
}
static gpuops_status cpu_conv(float *y, const float *x, const float *w, const float *b, const gpuops_conv2d_shape *s) {
  return gpuops_cpu_conv2d_f32(y, x, w, b, s, GPUOPS_ACT_RELU);
}
static gpuops_status cpu_conv(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *b, const gpuops_conv2d_shape *s) {
  return gpuops_cpu_conv2d_bf16(y, x, w, b, s, GPUOPS_ACT_RELU);
}

int main() {
  if (!check::have_gpu()) {
    printf("16_conv_gemm needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  // ResNet-50's 28 x 28 x 128 3x3 layer at batch 64.
  gpuops_conv2d_shape s = {};
  s.n = 64, s.c = 128, s.h = s.w = 28, s.k = 128, s.r = s.s = 3, s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1, s.pad_h = s.pad_w = 1;
  const double flops = 2.0 * s.n * 28 * 28 * s.k * s.c * 9;
  printf("16 conv as GEMM: N %lld, %lld x %lld x %lld -> %lld, 3x3, bias + ReLU, seed %llu (GPUOPS_SEED replays it)\n", (long long)s.n, (long long)s.h,
         (long long)s.w, (long long)s.c, (long long)s.k, (unsigned long long)seed);
  printf("device: %s, %d SMs; %.1f GFLOP per call\n\n", dev.name, dev.sms, flops / 1e9);
  fflush(stdout);
  check::rng rng(seed);
  bench::table table;
  table.head = {"dtype", "layout", "version", "time (us)", "TFLOP/s", "x cpu", "x unfused", "check"};
  bool ok = true;
  string best;
  double best_tf = 0, best_x_cpu = 0;
  auto run_type = [&](auto *tp, gpuops_layout layout, std::initializer_list<gpuops_algo> algos) {
    using T = typename std::remove_pointer<decltype(tp)>::type;
    const char *dt = sizeof(T) == 4 ? "f32" : "bf16";
    s.layout = layout;
    const int64_t nx = s.n * s.c * s.h * s.w, nw = s.k * s.c * 9, ny = s.n * s.k * s.h * s.w;
    vector<T> x(nx), w(nw), b(s.k);
    check::fill_uniform(x, rng, -1.0, 1.0), check::fill_uniform(w, rng, -0.1, 0.1), check::fill_uniform(b, rng, -0.5, 0.5);
    gpuops_conv2d_shape one = s;
    one.n = 1;
    vector<T> y1(s.k * s.h * s.w);
    const double cpu_us = s.n * bench::host_us([&] { return cpu_conv(y1.data(), x.data(), w.data(), b.data(), &one); });
    T *dx = check::to_device(x), *dw = check::to_device(w), *db = check::to_device(b), *dy = nullptr;
    CHECK_CUDA(cudaMalloc(&dy, ny * sizeof(T)));
    const size_t wsb = gpuops_conv2d_workspace_size(&s, GPUOPS_ALGO_UNFUSED);
    void *ws = nullptr;
    CHECK_CUDA(cudaMalloc(&ws, wsb));
    table.add({dt, layout ? "nhwc" : "nchw", "cpu (one image, x N)", bench::num(cpu_us), bench::num(flops / (cpu_us * 1e6)), "1.00x", "-", "reference"});
    double unfused_us = NAN;
    for (gpuops_algo a : algos) {
      check::poison(dy, ny * sizeof(T));
      const gpuops_status st = conv(dy, dx, dw, db, &s, ws, wsb, a);
      CHECK_CUDA(cudaDeviceSynchronize());
      if (st == GPUOPS_ERR_UNSUPPORTED && a == GPUOPS_ALGO_WGMMA) {  // not a Hopper GPU, or a build without sm_90a
        table.add({dt, layout ? "nhwc" : "nchw", gpuops_algo_name(a), "-", "-", "-", "-", "needs sm_90a"});
        continue;
      }
      string verdict = st == GPUOPS_OK ? validate<T>(s, x, w, b, dy, rng) : string("FAIL ") + gpuops_status_string(st);
      double us = NAN;
      if (verdict == "ok") us = 1e3 * timer.median_ms([&] { CHECK_OK(conv(dy, dx, dw, db, &s, ws, wsb, a)); });
      ok = ok && verdict == "ok";
      if (a == GPUOPS_ALGO_UNFUSED) unfused_us = us;
      const double tf = flops / (us * 1e6);
      table.add({dt, layout ? "nhwc" : "nchw", gpuops_algo_name(a), bench::num(us), bench::num(tf), bench::num(cpu_us / us, "x"), bench::num(unfused_us / us, "x"), verdict});
      if (us == us && tf > best_tf) best_tf = tf, best = bench::fmt("%s %s", gpuops_algo_name(a), dt), best_x_cpu = cpu_us / us;
    }
    for (void *q : {(void *)dx, (void *)dw, (void *)db, (void *)dy, ws}) CHECK_CUDA(cudaFree(q));
  };
  run_type((float *)nullptr, GPUOPS_LAYOUT_NCHW, {GPUOPS_ALGO_UNFUSED, GPUOPS_ALGO_IMPLICIT_GEMM});
  run_type((float *)nullptr, GPUOPS_LAYOUT_NHWC, {GPUOPS_ALGO_UNFUSED, GPUOPS_ALGO_IMPLICIT_GEMM});
  run_type((gpuops_bf16 *)nullptr, GPUOPS_LAYOUT_NHWC, {GPUOPS_ALGO_UNFUSED, GPUOPS_ALGO_IMPLICIT_GEMM, GPUOPS_ALGO_MMA_SYNC, GPUOPS_ALGO_WGMMA});
  table.print();
  printf("\ncuDNN on this layer: python3 bench/torch_conv.py (make bench), same device.\n");
  printf("result: 16 conv as GEMM | %s | %.1f TFLOP/s | - | %.0fx cpu | %s\n", best.empty() ? "-" : best.c_str(), best_tf, best_x_cpu, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}
