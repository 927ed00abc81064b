// SPDX-License-Identifier: MIT
// tests/test_conv.cu - convolution (gpuops.h section 11).
//   Everywhere: the CPU references against hand-computed results (odd and even 1D filters, a 2D
//   plane, NCHW against NHWC), the backward references against the forward by the adjoint identity
//   <conv(x, w), dy> = <x, dgrad(dy, w)> = <w, wgrad(dy, x)> (the convolution is linear in x and in
//   w, so this is its finite difference, exact), and argument checking of the GPU and CPU entry
//   points (the checks run before any launch, so they need no device): NULL pointers and shape,
//   negative sizes, zero stride or dilation, negative padding, padding / stride / dilation that
//   leave no output, bad layout, activation and algo values, a version of another op, MMA_SYNC
//   and WGMMA where they cannot run, misalignment, overlap, a short workspace; a refused CPU call
//   writes nothing.
//   With a GPU: every learning-path version on 1D and 2D inputs of sizes 1, odd and large with
//   filters 1..15 (odd and even); every image-model version (IMPLICIT_GEMM, UNFUSED, MMA_SYNC,
//   WGMMA, AUTO) x dtype x layout on H, W = 1, 7, 33 and C, K = 1, 3, 17, every stride / padding /
//   dilation combination up to 3 (those without output refused), bias and ReLU; the tensor-core
//   versions on C multiple of 8 up to 256 channels, MMA_SYNC's gathered form on C = 1, 3, 5, 12,
//   17 (and, not with GPUOPS_TEST_QUICK, WGMMA's large tiles against MMA_SYNC on a 130 x 130 x
//   232 layer); the backward (dgrad, wgrad) on the same shapes; outputs poisoned with NaN inside
//   guard zones that must stay untouched; and (not with GPUOPS_TEST_QUICK) a conv1d and an NHWC
//   bf16 conv2d past 2^31 elements, checked on samples.
// Tolerance: f32 |got - ref| <= 1e-5 |ref| + 1e-6 (terms of the sum); 16-bit outputs the storage
// type's rounding plus the same f32 accumulation term. GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_CONV
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "harness.h"

using bench::fmt;
using check::guarded;
using check::quick;
using check::rng;
using std::string;
using std::vector;


static gpuops_conv2d_shape shape_of(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s, int64_t st, int64_t pad, int64_t dil,
                                    gpuops_layout layout) {
  gpuops_conv2d_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.n = n, sh.c = c, sh.h = h, sh.w = w, sh.k = k, sh.r = r, sh.s = s;
  sh.stride_h = sh.stride_w = st, sh.pad_h = sh.pad_w = pad, sh.dil_h = sh.dil_w = dil;
  sh.layout = layout;
  return sh;
}
static string describe(const char *what, const gpuops_conv2d_shape &s) {
  return fmt("%s %s n%lld c%lld %lldx%lld k%lld f%lldx%lld stride %lld/%lld pad %lld/%lld dil %lld/%lld", what, s.layout == GPUOPS_LAYOUT_NHWC ? "nhwc" : "nchw",
             (long long)s.n, (long long)s.c, (long long)s.h, (long long)s.w, (long long)s.k, (long long)s.r, (long long)s.s, (long long)s.stride_h,
             (long long)s.stride_w, (long long)s.pad_h, (long long)s.pad_w, (long long)s.dil_h, (long long)s.dil_w);
}
static int64_t out_count(const gpuops_conv2d_shape &s) {
  int64_t p = 0, q = 0;
  return gpuops_conv2d_out_size(&s, &p, &q) == GPUOPS_OK ? s.n * s.k * p * q : -1;
}

// ---- CPU references: hand cases, layouts, the adjoint identity ---------------------------------
static void test_cpu_references(rng &r) {
  {  // 1D: odd filter centred, even filter one more tap after
    const float x[3] = {1, 2, 3}, f3[3] = {1, 1, 1}, f2[2] = {1, 2};
    float y[3];
    CHECK_OK(gpuops_cpu_conv1d_f32(y, x, f3, 3, 3));
    th_case(y[0] == 3 && y[1] == 6 && y[2] == 5, "cpu conv1d odd filter", "got %g %g %g", y[0], y[1], y[2]);
    CHECK_OK(gpuops_cpu_conv1d_f32(y, x, f2, 3, 2));
    th_case(y[0] == 5 && y[1] == 8 && y[2] == 3, "cpu conv1d even filter", "got %g %g %g", y[0], y[1], y[2]);
  }
  {  // plane 2 x 2, 3 x 3 box filter: every output sums the whole plane
    const float x[4] = {1, 2, 3, 4}, f[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    float y[4];
    CHECK_OK(gpuops_cpu_conv2d_plane_f32(y, x, f, 2, 2, 3, 3));
    th_case(y[0] == 10 && y[1] == 10 && y[2] == 10 && y[3] == 10, "cpu conv2d plane box", "got %g %g %g %g", y[0], y[1], y[2], y[3]);
  }
  {  // conv2d: one image, one channel, 2 x 2 filter, stride 2, bias, ReLU
    const float x[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, w[4] = {1, 0, 0, -1}, b = 0.5f;
    gpuops_conv2d_shape s = shape_of(1, 1, 4, 4, 1, 2, 2, 2, 0, 1, GPUOPS_LAYOUT_NCHW);
    float y[4];
    CHECK_OK(gpuops_cpu_conv2d_f32(y, x, w, &b, &s, GPUOPS_ACT_NONE));
    th_case(y[0] == -4.5f && y[1] == -4.5f && y[2] == -4.5f && y[3] == -4.5f, "cpu conv2d hand", "got %g %g %g %g", y[0], y[1], y[2], y[3]);
    CHECK_OK(gpuops_cpu_conv2d_f32(y, x, w, &b, &s, GPUOPS_ACT_RELU));
    th_case(y[0] == 0 && y[3] == 0, "cpu conv2d relu", "got %g %g", y[0], y[3]);
  }
  {  // NCHW and NHWC give the same numbers
    gpuops_conv2d_shape a = shape_of(2, 3, 5, 6, 4, 3, 2, 2, 1, 2, GPUOPS_LAYOUT_NCHW), b = a;
    b.layout = GPUOPS_LAYOUT_NHWC;
    int64_t P, Q;
    CHECK_OK(gpuops_conv2d_out_size(&a, &P, &Q));
    vector<float> x(2 * 3 * 5 * 6), w(4 * 3 * 3 * 2), bias(4), xh(x.size()), wh(w.size()), y(2 * 4 * P * Q), yh(y.size());
    check::fill_uniform(x, r, -1, 1), check::fill_uniform(w, r, -1, 1), check::fill_uniform(bias, r, -1, 1);
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 3; ++c)
        for (int h = 0; h < 5; ++h)
          for (int v = 0; v < 6; ++v) xh[((n * 5 + h) * 6 + v) * 3 + c] = x[((n * 3 + c) * 5 + h) * 6 + v];
    for (int k = 0; k < 4; ++k)
      for (int c = 0; c < 3; ++c)
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 2; ++j) wh[((k * 3 + i) * 2 + j) * 3 + c] = w[((k * 3 + c) * 3 + i) * 2 + j];
    CHECK_OK(gpuops_cpu_conv2d_f32(y.data(), x.data(), w.data(), bias.data(), &a, GPUOPS_ACT_NONE));
    CHECK_OK(gpuops_cpu_conv2d_f32(yh.data(), xh.data(), wh.data(), bias.data(), &b, GPUOPS_ACT_NONE));
    int bad = 0;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 4; ++k)
        for (int64_t p = 0; p < P; ++p)
          for (int64_t q = 0; q < Q; ++q) bad += y[((n * 4 + k) * P + p) * Q + q] != yh[((n * P + p) * Q + q) * 4 + k];
    th_case(bad == 0, "cpu conv2d nchw == nhwc", "%d differ", bad);
  }
  // The adjoint identity on shapes with strides, padding and dilation, both layouts.
  const int64_t shapes[][10] = {{2, 3, 7, 6, 4, 3, 3, 1, 1, 1}, {1, 2, 9, 8, 3, 3, 2, 2, 1, 2}, {2, 4, 5, 7, 2, 2, 3, 3, 2, 1}, {1, 1, 1, 1, 2, 1, 1, 1, 0, 1}};
  for (auto &d : shapes)
    for (gpuops_layout L : {GPUOPS_LAYOUT_NCHW, GPUOPS_LAYOUT_NHWC}) {
      const gpuops_conv2d_shape s = shape_of(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], L);
      const int64_t ny = out_count(s), nx = s.n * s.c * s.h * s.w, nw = s.k * s.c * s.r * s.s;
      vector<float> x(nx), w(nw), dy(ny), y(ny), dx(nx), dw(nw);
      check::fill_uniform(x, r, -1, 1), check::fill_uniform(w, r, -1, 1), check::fill_uniform(dy, r, -1, 1);
      CHECK_OK(gpuops_cpu_conv2d_f32(y.data(), x.data(), w.data(), nullptr, &s, GPUOPS_ACT_NONE));
      CHECK_OK(gpuops_cpu_conv2d_bwd_data_f32(dx.data(), dy.data(), w.data(), &s));
      CHECK_OK(gpuops_cpu_conv2d_bwd_filter_f32(dw.data(), dy.data(), x.data(), &s));
      double l = 0, lx = 0, lw = 0, scale = 0;
      for (int64_t i = 0; i < ny; ++i) l += (double)y[i] * dy[i], scale += fabs((double)y[i] * dy[i]);
      for (int64_t i = 0; i < nx; ++i) lx += (double)x[i] * dx[i];
      for (int64_t i = 0; i < nw; ++i) lw += (double)w[i] * dw[i];
      const double tol = 1e-5 * (scale + 1);
      th_case(fabs(l - lx) <= tol && fabs(l - lw) <= tol, describe("cpu backward adjoint", s).c_str(), "<y,dy> %g <x,dx> %g <w,dw> %g", l, lx, lw);
    }
}

// ---- argument checks ------------------------------------------------------------------------------
static void test_argument_checks() {
  static float buf[4096];
  float *y = buf, *x = buf + 1024, *w = buf + 2048, *b = buf + 3072;
  auto expect = [](gpuops_status got, gpuops_status want, const string &name) {
    th_case(got == want, name.c_str(), "got %s, want %s", gpuops_status_string(got), gpuops_status_string(want));
  };
  const gpuops_conv2d_shape good = shape_of(1, 2, 5, 5, 3, 3, 3, 1, 1, 1, GPUOPS_LAYOUT_NCHW);
  struct bad_shape {
    const char *name;
    void (*edit)(gpuops_conv2d_shape &);
  };
  const bad_shape bads[] = {
      {"n < 0", [](gpuops_conv2d_shape &s) { s.n = -1; }},
      {"c = 0", [](gpuops_conv2d_shape &s) { s.c = 0; }},
      {"h = 0", [](gpuops_conv2d_shape &s) { s.h = 0; }},
      {"k < 0", [](gpuops_conv2d_shape &s) { s.k = -3; }},
      {"r = 0", [](gpuops_conv2d_shape &s) { s.r = 0; }},
      {"stride 0", [](gpuops_conv2d_shape &s) { s.stride_w = 0; }},
      {"dilation 0", [](gpuops_conv2d_shape &s) { s.dil_h = 0; }},
      {"padding < 0", [](gpuops_conv2d_shape &s) { s.pad_w = -1; }},
      {"no output (filter past the padded input)", [](gpuops_conv2d_shape &s) { s.r = 9; }},
      {"no output (dilation)", [](gpuops_conv2d_shape &s) { s.pad_h = 0, s.dil_h = 3; }},
      {"layout 7", [](gpuops_conv2d_shape &s) { s.layout = (gpuops_layout)7; }},
  };
  for (const auto &bs : bads) {
    gpuops_conv2d_shape s = good;
    bs.edit(s);
    for (int i = 0; i < 64; ++i) y[i] = 7.0f;
    expect(gpuops_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, fmt("conv2d %s", bs.name));
    expect(gpuops_conv2d_bf16((gpuops_bf16 *)y, (gpuops_bf16 *)x, (gpuops_bf16 *)w, nullptr, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr),
           GPUOPS_ERR_INVALID_ARGUMENT, fmt("conv2d bf16 %s", bs.name));
    expect(gpuops_conv2d_bwd_data_f32(y, x, w, &s, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, fmt("bwd data %s", bs.name));
    expect(gpuops_conv2d_bwd_filter_f32(y, x, w, &s, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, fmt("bwd filter %s", bs.name));
    expect(gpuops_cpu_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE), GPUOPS_ERR_INVALID_ARGUMENT, fmt("cpu conv2d %s", bs.name));
    int written = 0;
    for (int i = 0; i < 64; ++i) written += y[i] != 7.0f;
    th_case(written == 0, fmt("cpu conv2d %s: nothing written", bs.name).c_str(), "%d written", written);
    expect(gpuops_conv2d_out_size(&s, nullptr, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, fmt("out_size %s", bs.name));
    th_case(gpuops_conv2d_workspace_size(&s, GPUOPS_ALGO_UNFUSED) == 0 && gpuops_conv2d_bwd_filter_workspace_size(&s, GPUOPS_ALGO_AUTO) == 0,
            fmt("workspace_size %s", bs.name).c_str(), "not 0");
  }
  const gpuops_conv2d_shape s = good;
  expect(gpuops_conv2d_f32(y, x, w, b, nullptr, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d NULL shape");
  expect(gpuops_conv2d_f32(nullptr, x, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d NULL y");
  expect(gpuops_conv2d_f32(y, nullptr, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d NULL x");
  expect(gpuops_conv2d_f32(y, x, nullptr, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d NULL w");
  expect(gpuops_conv2d_f32(y, x, w, b, &s, (gpuops_activation)9, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d bad activation");
  expect(gpuops_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, (gpuops_algo)99, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d algo 99");
  expect(gpuops_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_NAIVE, nullptr), GPUOPS_ERR_UNSUPPORTED, "conv2d naive (a learning-path version)");
  expect(gpuops_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_MMA_SYNC, nullptr), GPUOPS_ERR_UNSUPPORTED, "conv2d f32 mma-sync");
  expect(gpuops_conv2d_bf16((gpuops_bf16 *)y, (gpuops_bf16 *)x, (gpuops_bf16 *)w, nullptr, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_MMA_SYNC, nullptr),
         GPUOPS_ERR_UNSUPPORTED, "conv2d bf16 mma-sync nchw");
  {
    gpuops_conv2d_shape h = s;
    h.layout = GPUOPS_LAYOUT_NHWC;
    h.c = 8;  // MMA_SYNC's copies (C % 8 != 0 takes its gathered form, which has no such rule)
    expect(gpuops_conv2d_f16((gpuops_f16 *)y, (gpuops_f16 *)(x + 1), (gpuops_f16 *)w, nullptr, &h, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_MMA_SYNC, nullptr),
           GPUOPS_ERR_MISALIGNED, "conv2d f16 mma-sync x not 16-byte aligned");
    expect(gpuops_conv2d_f16((gpuops_f16 *)y, (gpuops_f16 *)(x + 1), (gpuops_f16 *)w, nullptr, &h, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_WGMMA, nullptr),
           GPUOPS_ERR_MISALIGNED, "conv2d f16 wgmma x not 16-byte aligned");
    h.c = 12;
    expect(gpuops_conv2d_bf16((gpuops_bf16 *)y, (gpuops_bf16 *)x, (gpuops_bf16 *)w, nullptr, &h, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_WGMMA, nullptr),
           GPUOPS_ERR_UNSUPPORTED, "conv2d bf16 wgmma c % 8 != 0");
  }
  expect(gpuops_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_WGMMA, nullptr), GPUOPS_ERR_UNSUPPORTED, "conv2d f32 wgmma");
  expect(gpuops_conv2d_f32(y, (const float *)((const char *)x + 2), w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_MISALIGNED,
         "conv2d misaligned x");
  expect(gpuops_conv2d_f32(y, y + 10, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d y overlaps x");
  expect(gpuops_conv2d_f32(y, x, w, y + 3, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d y overlaps bias");
  expect(gpuops_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_UNFUSED, nullptr), GPUOPS_ERR_WORKSPACE, "conv2d unfused no workspace");
  {
    const size_t need = gpuops_conv2d_workspace_size(&s, GPUOPS_ALGO_UNFUSED);
    th_case(need > 0 && gpuops_conv2d_workspace_size(&s, GPUOPS_ALGO_IMPLICIT_GEMM) == 0 && gpuops_conv2d_workspace_size(&s, GPUOPS_ALGO_AUTO) == 0,
            "conv2d workspace sizes", "unfused %zu", need);
    static float ws[8192];
    expect(gpuops_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE, ws, need - 1, GPUOPS_ALGO_UNFUSED, nullptr), GPUOPS_ERR_WORKSPACE, "conv2d unfused short workspace");
    expect(gpuops_conv2d_f32(y, x, w, b, &s, GPUOPS_ACT_NONE, buf, need, GPUOPS_ALGO_UNFUSED, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv2d workspace overlaps y");
  }
  expect(gpuops_conv2d_bwd_data_f32(y, x, w, &s, GPUOPS_ALGO_UNFUSED, nullptr), GPUOPS_ERR_UNSUPPORTED, "bwd data unfused");
  expect(gpuops_conv2d_bwd_filter_f32(nullptr, x, w, &s, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "bwd filter NULL dw");
  {  // the filter gradient's workspace: none for a small reduction; a long one split (the shape's rule)
    gpuops_conv2d_shape l = s;
    l.n = 64, l.h = l.w = 56, l.c = l.k = 64;
    const size_t need = gpuops_conv2d_bwd_filter_workspace_size(&l, GPUOPS_ALGO_AUTO);
    th_case(gpuops_conv2d_bwd_filter_workspace_size(&s, GPUOPS_ALGO_AUTO) == 0 && need == (size_t)(512 / 5) * 64 * 64 * 9 * 4 &&
                gpuops_conv2d_bwd_filter_workspace_size(&l, GPUOPS_ALGO_UNFUSED) == 0,
            "bwd filter workspace sizes", "%zu", need);
    l.k = 256, l.c = 512;  // 2 x 36 tiles: 7 parts
    th_case(gpuops_conv2d_bwd_filter_workspace_size(&l, GPUOPS_ALGO_AUTO) == (size_t)7 * 256 * 512 * 9 * 4, "bwd filter workspace, 72 tiles", "%zu",
            gpuops_conv2d_bwd_filter_workspace_size(&l, GPUOPS_ALGO_AUTO));
    l.k = 512, l.c = 512;  // 4 x 36 tiles: 3 parts
    th_case(gpuops_conv2d_bwd_filter_workspace_size(&l, GPUOPS_ALGO_AUTO) == (size_t)3 * 512 * 512 * 9 * 4, "bwd filter workspace, 144 tiles", "%zu",
            gpuops_conv2d_bwd_filter_workspace_size(&l, GPUOPS_ALGO_AUTO));
    l.k = 1024;  // 288 tiles: no split
    th_case(gpuops_conv2d_bwd_filter_workspace_size(&l, GPUOPS_ALGO_AUTO) == 0, "bwd filter workspace, 288 tiles", "not 0");
    l.k = l.c = 64;  // NULL pointers of the right extent are never read: checks only
    static float dwb[64 * 64 * 9];
    const float *dyp = (const float *)(uintptr_t)0x100000, *xp = (const float *)(uintptr_t)0x40000000;
    expect(gpuops_conv2d_bwd_filter_f32(dwb, dyp, xp, &l, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_WORKSPACE, "bwd filter split, no workspace");
  }
  expect(gpuops_conv2d_bwd_data_f32(x, x, w, &s, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "bwd data dx overlaps dy");
  // Empty calls: nothing to do, NULL pointers allowed.
  {
    gpuops_conv2d_shape e = s;
    e.n = 0;
    expect(gpuops_conv2d_f32(nullptr, nullptr, nullptr, nullptr, &e, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_OK, "conv2d n = 0");
    e = s, e.k = 0;
    expect(gpuops_conv2d_f32(nullptr, nullptr, nullptr, nullptr, &e, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_UNFUSED, nullptr), GPUOPS_OK, "conv2d k = 0");
  }
  // The learning path.
  expect(gpuops_conv1d_f32(y, x, w, 10, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv1d fw = 0");
  expect(gpuops_conv1d_f32(y, x, w, 10, 16, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv1d fw = 16");
  expect(gpuops_conv1d_f32(y, x, w, -1, 3, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv1d n < 0");
  expect(gpuops_conv1d_f32(nullptr, x, w, 10, 3, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv1d NULL y");
  expect(gpuops_conv1d_f32(y, x, nullptr, 10, 3, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv1d NULL filter");
  expect(gpuops_conv1d_f32(y, y + 5, w, 10, 3, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "conv1d y overlaps x");
  expect(gpuops_conv1d_f32(y, x, w, 10, 3, GPUOPS_ALGO_IMPLICIT_GEMM, nullptr), GPUOPS_ERR_UNSUPPORTED, "conv1d implicit-gemm");
  expect(gpuops_conv1d_f32(y, x, w, 10, 3, GPUOPS_ALGO_REGISTER_2D, nullptr), GPUOPS_ERR_UNSUPPORTED, "conv1d register-2d");
  expect(gpuops_conv2d_plane_f32(y, x, w, 4, 4, 3, 3, GPUOPS_ALGO_REGISTER_1D, nullptr), GPUOPS_ERR_UNSUPPORTED, "plane register-1d");
  expect(gpuops_conv1d_f32(y, x, w, 0, 3, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_OK, "conv1d n = 0");
  expect(gpuops_conv2d_plane_f32(y, x, w, 4, 4, 3, 0, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "plane fw = 0");
  expect(gpuops_conv2d_plane_f32(y, x, w, 4, 4, 16, 3, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "plane fh = 16");
  expect(gpuops_conv2d_plane_f32(y, x, w, 4, -4, 3, 3, GPUOPS_ALGO_AUTO, nullptr), GPUOPS_ERR_INVALID_ARGUMENT, "plane w < 0");
  expect(gpuops_conv2d_plane_f32(y, (const float *)((const char *)x + 1), w, 4, 4, 3, 3, GPUOPS_ALGO_NAIVE, nullptr), GPUOPS_ERR_MISALIGNED, "plane misaligned x");
  for (int i = 0; i < 64; ++i) y[i] = 7.0f;
  expect(gpuops_cpu_conv1d_f32(y, x, w, 10, 16), GPUOPS_ERR_INVALID_ARGUMENT, "cpu conv1d fw = 16");
  int written = 0;
  for (int i = 0; i < 64; ++i) written += y[i] != 7.0f;
  th_case(written == 0, "cpu conv1d refused: nothing written", "%d written", written);
}

// ---- GPU: the learning path ------------------------------------------------------------------------
// Each op's versions; the register versions also run with x and y 16-byte aligned (their 16-byte
// copies and stores).
static const gpuops_algo kLearn[] = {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_CONST_FILTER, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_CACHED_HALO, GPUOPS_ALGO_AUTO, GPUOPS_ALGO_REGISTER_1D};

static void learning_case(rng &r, bool gpu, int64_t h, int64_t w, int fh, int fw, bool two_d) {
  const int64_t n = h * w;
  vector<float> x(n), f((size_t)fh * fw), ref(n), got(n);
  check::fill_uniform(x, r, -1, 1), check::fill_uniform(f, r, -1, 1);
  if (two_d) CHECK_OK(gpuops_cpu_conv2d_plane_f32(ref.data(), x.data(), f.data(), h, w, fh, fw));
  else CHECK_OK(gpuops_cpu_conv1d_f32(ref.data(), x.data(), f.data(), n, fw));
  for (int run = 0; run < (int)(sizeof kLearn / sizeof kLearn[0]) + 1; ++run) {
    const bool last = run == (int)(sizeof kLearn / sizeof kLearn[0]);
    gpuops_algo algo = last ? kLearn[run - 1] : kLearn[run];
    if (algo == GPUOPS_ALGO_REGISTER_1D && two_d) algo = GPUOPS_ALGO_REGISTER_2D;
    const int y_off = last ? 0 : 2;  // elements past a 256-byte boundary (x: 0 or 1)
    const string name = two_d ? fmt("plane %s %lldx%lld filter %dx%d%s", gpuops_algo_name(algo), (long long)h, (long long)w, fh, fw, last ? " aligned x, y" : "")
                              : fmt("conv1d %s n %lld filter %d%s", gpuops_algo_name(algo), (long long)n, fw, last ? " aligned x, y" : "");
    if (!gpu) {
      th_skip(name.c_str(), "no CUDA device");
      continue;
    }
    guarded dx(n, last ? 0 : 1, 4), df((int64_t)f.size(), 3, 4), dy(n, y_off, 4);
    dx.upload(x.data()), df.upload(f.data());
    const gpuops_status st = two_d ? gpuops_conv2d_plane_f32((float *)dy.data(), (const float *)dx.data(), (const float *)df.data(), h, w, fh, fw, algo, nullptr)
                                   : gpuops_conv1d_f32((float *)dy.data(), (const float *)dx.data(), (const float *)df.data(), n, fw, algo, nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (!th_case(st == GPUOPS_OK, name.c_str(), "status %s (cuda error %d)", gpuops_status_string(st), gpuops_cuda_error())) continue;
    dy.download(got.data());
    const check::result res = check::compare(got.data(), ref.data(), n, check::tolerance{1e-6 * fh * fw, 1e-5});
    th_case(res.ok() && dy.guards_hold(), name.c_str(), "%s%s", check::verdict(res).c_str(), dy.guards_hold() ? "" : ", wrote outside y");
  }
}

static void test_gpu_learning(rng &r, bool gpu) {
  for (int64_t n : {1, 7, 255, 257, 2049, 1000003})
    for (int fw : {1, 2, 3, 4, 8, 15}) learning_case(r, gpu, 1, n, 1, fw, false);
  const int64_t hw[][2] = {{1, 1}, {7, 33}, {33, 7}, {9, 1000}, {517, 389}, {70, 260}};
  const int ff[][2] = {{1, 1}, {3, 3}, {2, 4}, {15, 15}, {5, 14}, {1, 7}};
  for (auto &d : hw)
    for (auto &f : ff) learning_case(r, gpu, d[0], d[1], f[0], f[1], true);
}

// ---- GPU: image models ----------------------------------------------------------------------------
template <class H> struct dtype_of;
template <> struct dtype_of<float> { static constexpr const char *name = "f32"; };
template <> struct dtype_of<gpuops_f16> { static constexpr const char *name = "f16"; };
template <> struct dtype_of<gpuops_bf16> { static constexpr const char *name = "bf16"; };

static gpuops_status conv_call(float *y, const float *x, const float *w, const float *b, const gpuops_conv2d_shape *s, gpuops_activation act, void *ws, size_t wb,
                               gpuops_algo algo) {
  return gpuops_conv2d_f32(y, x, w, b, s, act, ws, wb, algo, nullptr);
}
static gpuops_status conv_call(gpuops_f16 *y, const gpuops_f16 *x, const gpuops_f16 *w, const gpuops_f16 *b, const gpuops_conv2d_shape *s, gpuops_activation act,
                               void *ws, size_t wb, gpuops_algo algo) {
  return gpuops_conv2d_f16(y, x, w, b, s, act, ws, wb, algo, nullptr);
}
static gpuops_status conv_call(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *b, const gpuops_conv2d_shape *s,
                               gpuops_activation act, void *ws, size_t wb, gpuops_algo algo) {
  return gpuops_conv2d_bf16(y, x, w, b, s, act, ws, wb, algo, nullptr);
}
static gpuops_status cpu_call(float *y, const float *x, const float *w, const float *b, const gpuops_conv2d_shape *s, gpuops_activation act) {
  return gpuops_cpu_conv2d_f32(y, x, w, b, s, act);
}
static gpuops_status cpu_call(gpuops_f16 *y, const gpuops_f16 *x, const gpuops_f16 *w, const gpuops_f16 *b, const gpuops_conv2d_shape *s, gpuops_activation act) {
  return gpuops_cpu_conv2d_f16(y, x, w, b, s, act);
}
static gpuops_status cpu_call(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *b, const gpuops_conv2d_shape *s, gpuops_activation act) {
  return gpuops_cpu_conv2d_bf16(y, x, w, b, s, act);
}

// One shape, one dtype, the given versions against the CPU reference.
template <class H> static void forward_case(rng &r, bool gpu, const gpuops_conv2d_shape &s, bool bias, gpuops_activation act, std::initializer_list<gpuops_algo> algos) {
  const int64_t ny = out_count(s), nx = s.n * s.c * s.h * s.w, nw = s.k * s.c * s.r * s.s;
  const bool f32 = sizeof(H) == 4;
  if (ny < 0) {  // a shape without output: refused
    vector<H> dummy(16);
    const gpuops_status st = conv_call(dummy.data(), dummy.data() + 4, dummy.data() + 8, nullptr, &s, act, nullptr, 0, GPUOPS_ALGO_AUTO);
    th_case(st == GPUOPS_ERR_INVALID_ARGUMENT, describe("refused (no output)", s).c_str(), "status %s", gpuops_status_string(st));
    return;
  }
  vector<H> x(nx), w(nw), b(s.k), ref(ny), got(ny);
  check::fill_uniform(x, r, -1, 1), check::fill_uniform(w, r, -1, 1), check::fill_uniform(b, r, -1, 1);
  CHECK_OK(cpu_call(ref.data(), x.data(), w.data(), bias ? b.data() : nullptr, &s, act));
  const double terms = (double)(s.c * s.r * s.s);
  const check::tolerance tol = f32 ? check::tolerance{1e-6 * terms, 1e-5} : check::tolerance{1e-3 + 2e-6 * terms, sizeof(H) == 2 && dtype_of<H>::name[0] == 'b' ? 1.6e-2 : 2e-3};
  for (gpuops_algo algo : algos) {
    const string name = describe(fmt("conv2d %s %s%s%s", dtype_of<H>::name, gpuops_algo_name(algo), bias ? " bias" : "", act == GPUOPS_ACT_RELU ? " relu" : "").c_str(), s);
    if (!gpu) {
      th_skip(name.c_str(), "no CUDA device");
      continue;
    }
    guarded dx(nx, 8, sizeof(H)), dw(nw, 8, sizeof(H)), db(s.k, 1, sizeof(H)), dy(ny, 3, sizeof(H));
    dx.upload(x.data()), dw.upload(w.data()), db.upload(b.data());
    const size_t wsb = gpuops_conv2d_workspace_size(&s, algo);
    void *ws = nullptr;
    if (wsb) CHECK_CUDA(cudaMalloc(&ws, wsb));
    const gpuops_status st = conv_call((H *)dy.data(), (const H *)dx.data(), (const H *)dw.data(), bias ? (const H *)db.data() : nullptr, &s, act, ws, wsb, algo);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (ws) CHECK_CUDA(cudaFree(ws));
    if (st == GPUOPS_ERR_UNSUPPORTED && (algo == GPUOPS_ALGO_MMA_SYNC || algo == GPUOPS_ALGO_WGMMA)) {
      th_skip(name.c_str(), algo == GPUOPS_ALGO_MMA_SYNC ? "mma-sync: needs compute capability 8.0" : "wgmma: needs an sm_90a build on compute capability 9.0");
      continue;
    }
    if (!th_case(st == GPUOPS_OK, name.c_str(), "status %s (cuda error %d)", gpuops_status_string(st), gpuops_cuda_error())) continue;
    dy.download(got.data());
    const check::result res = check::compare(got.data(), ref.data(), ny, tol);
    const bool guards = dy.guards_hold();
    th_case(res.ok() && guards, name.c_str(), "%s%s", check::verdict(res).c_str(), guards ? "" : ", wrote outside y");
  }
}

static void backward_case(rng &r, bool gpu, const gpuops_conv2d_shape &s) {
  const int64_t ny = out_count(s), nx = s.n * s.c * s.h * s.w, nw = s.k * s.c * s.r * s.s;
  if (ny < 0) return;
  vector<float> x(nx), w(nw), dy(ny), dx_ref(nx), dw_ref(nw), got_x(nx), got_w(nw);
  check::fill_uniform(x, r, -1, 1), check::fill_uniform(w, r, -1, 1), check::fill_uniform(dy, r, -1, 1);
  CHECK_OK(gpuops_cpu_conv2d_bwd_data_f32(dx_ref.data(), dy.data(), w.data(), &s));
  CHECK_OK(gpuops_cpu_conv2d_bwd_filter_f32(dw_ref.data(), dy.data(), x.data(), &s));
  int64_t P, Q;
  CHECK_OK(gpuops_conv2d_out_size(&s, &P, &Q));
  for (int which = 0; which < 2; ++which) {
    const string name = describe(which ? "bwd filter implicit-gemm" : "bwd data implicit-gemm", s);
    if (!gpu) {
      th_skip(name.c_str(), "no CUDA device");
      continue;
    }
    guarded gx(nx, 5, 4), gw(nw, 2, 4), gy(ny, 1, 4), out(which ? nw : nx, 3, 4);
    gx.upload(x.data()), gw.upload(w.data()), gy.upload(dy.data());
    const size_t wsb = which ? gpuops_conv2d_bwd_filter_workspace_size(&s, GPUOPS_ALGO_AUTO) : 0;
    guarded ws((int64_t)(wsb / 4), 0, 4);  // the filter gradient's split parts (none: empty)
    auto run = [&] {
      return which ? gpuops_conv2d_bwd_filter_f32((float *)out.data(), (const float *)gy.data(), (const float *)gx.data(), &s, wsb ? ws.data() : nullptr, wsb,
                                                  GPUOPS_ALGO_AUTO, nullptr)
                   : gpuops_conv2d_bwd_data_f32((float *)out.data(), (const float *)gy.data(), (const float *)gw.data(), &s, GPUOPS_ALGO_IMPLICIT_GEMM, nullptr);
    };
    const gpuops_status st = run();
    CHECK_CUDA(cudaDeviceSynchronize());
    if (!th_case(st == GPUOPS_OK, name.c_str(), "status %s (cuda error %d)", gpuops_status_string(st), gpuops_cuda_error())) continue;
    vector<float> &got = which ? got_w : got_x;
    out.download(got.data());
    if (wsb) {  // split over blocks: the parts added in a fixed order, the same bits on a second run
      vector<float> again(nw);
      CHECK_OK(run());
      out.download(again.data());
      th_case(memcmp(again.data(), got.data(), (size_t)nw * 4) == 0 && ws.guards_hold(), (name + ", split: same bits twice").c_str(), "differ");
    }
    const double terms = which ? (double)(s.n * P * Q) : (double)(s.k * s.r * s.s);
    const check::result res = check::compare(got.data(), which ? dw_ref.data() : dx_ref.data(), which ? nw : nx, check::tolerance{1e-6 * terms, 1e-5});
    const bool guards = out.guards_hold();
    th_case(res.ok() && guards, name.c_str(), "%s%s", check::verdict(res).c_str(), guards ? "" : ", wrote outside");
  }
}

// WGMMA against MMA_SYNC on one bf16 shape (bias, ReLU): both f32 accumulations of the same
// products, rounded once to bf16, so within bf16's tolerance of each other.
static void wgmma_against_mma(rng &r, bool gpu, const gpuops_conv2d_shape &s) {
  const string name = describe("conv2d bf16 wgmma against mma-sync", s);
  if (!gpu) {
    th_skip(name.c_str(), "no CUDA device");
    return;
  }
  const int64_t ny = out_count(s), nx = s.n * s.c * s.h * s.w, nw = s.k * s.c * s.r * s.s;
  vector<gpuops_bf16> x(nx), w(nw), b(s.k), ref(ny), got(ny);
  check::fill_uniform(x, r, -1, 1), check::fill_uniform(w, r, -1, 1), check::fill_uniform(b, r, -1, 1);
  guarded dx(nx, 8, 2), dw(nw, 8, 2), db(s.k, 1, 2), dy(ny, 3, 2);
  dx.upload(x.data()), dw.upload(w.data()), db.upload(b.data());
  gpuops_status st[2];
  for (int i = 0; i < 2; ++i) {
    st[i] = conv_call((gpuops_bf16 *)dy.data(), (const gpuops_bf16 *)dx.data(), (const gpuops_bf16 *)dw.data(), (const gpuops_bf16 *)db.data(), &s,
                      GPUOPS_ACT_RELU, nullptr, 0, i ? GPUOPS_ALGO_WGMMA : GPUOPS_ALGO_MMA_SYNC);
    CHECK_CUDA(cudaDeviceSynchronize());
    dy.download(i ? got.data() : ref.data());
  }
  if (st[1] == GPUOPS_ERR_UNSUPPORTED) {
    th_skip(name.c_str(), "wgmma: needs an sm_90a build on compute capability 9.0");
    return;
  }
  if (!th_case(st[0] == GPUOPS_OK && st[1] == GPUOPS_OK, name.c_str(), "status %s / %s", gpuops_status_string(st[0]), gpuops_status_string(st[1]))) return;
  const check::result res = check::compare(got.data(), ref.data(), ny, check::tolerance{1e-3 + 2e-6 * (double)(s.c * s.r * s.s), 1.6e-2});
  th_case(res.ok() && dy.guards_hold(), name.c_str(), "%s", check::verdict(res).c_str());
}

static void test_gpu_image(rng &r, bool gpu) {
  const gpuops_algo F = GPUOPS_ALGO_IMPLICIT_GEMM, U = GPUOPS_ALGO_UNFUSED, A = GPUOPS_ALGO_AUTO, M = GPUOPS_ALGO_MMA_SYNC, G = GPUOPS_ALGO_WGMMA;
  // Every stride / padding / dilation up to 3 on a small 3x3 problem, both layouts.
  for (gpuops_layout L : {GPUOPS_LAYOUT_NCHW, GPUOPS_LAYOUT_NHWC})
    for (int st = 1; st <= 3; ++st)
      for (int pad = 0; pad <= 3; ++pad)
        for (int dil = 1; dil <= 3; ++dil) {
          const gpuops_conv2d_shape s = shape_of(2, 3, 7, 8, 5, 3, 3, st, pad, dil, L);
          forward_case<float>(r, gpu, s, true, GPUOPS_ACT_RELU, {F, U, A});
          if (L == GPUOPS_LAYOUT_NHWC) forward_case<gpuops_bf16>(r, gpu, s, true, GPUOPS_ACT_RELU, {M});  // C = 3: the gathered form
          backward_case(r, gpu, s);
        }
  // Odd sizes: H, W in {1, 7, 33}, C, K in {1, 3, 17}, filters 1x1, 3x3, 2x3.
  const int64_t hw[][2] = {{1, 1}, {7, 33}, {33, 7}};
  const int64_t ck[][2] = {{1, 1}, {3, 17}, {17, 3}};
  const int64_t rs[][2] = {{1, 1}, {3, 3}, {2, 3}};
  for (gpuops_layout L : {GPUOPS_LAYOUT_NCHW, GPUOPS_LAYOUT_NHWC})
    for (auto &d : hw)
      for (auto &c : ck)
        for (auto &f : rs) {
          const gpuops_conv2d_shape s = shape_of(2, c[0], d[0], d[1], c[1], f[0], f[1], 1, f[0] / 2, 1, L);
          forward_case<float>(r, gpu, s, f[0] == 3, f[0] == 3 ? GPUOPS_ACT_RELU : GPUOPS_ACT_NONE, {F, U, A});
          forward_case<gpuops_bf16>(r, gpu, s, true, GPUOPS_ACT_NONE, {F, A});
          forward_case<gpuops_f16>(r, gpu, s, false, GPUOPS_ACT_RELU, {U});
          if (L == GPUOPS_LAYOUT_NHWC) {  // MMA_SYNC (NHWC only): C = 1, 3, 17 take its gathered form
            forward_case<gpuops_bf16>(r, gpu, s, true, GPUOPS_ACT_NONE, {M});
            forward_case<gpuops_f16>(r, gpu, s, false, GPUOPS_ACT_RELU, {M});
          }
          backward_case(r, gpu, s);
        }
  // Filter gradients long enough to split their reduction over blocks (17 and 8 parts, a short
  // last one), both layouts, strides and dilation.
  for (gpuops_layout L : {GPUOPS_LAYOUT_NCHW, GPUOPS_LAYOUT_NHWC}) {
    backward_case(r, gpu, shape_of(8, 3, 33, 33, 17, 3, 3, 1, 1, 1, L));
    backward_case(r, gpu, shape_of(20, 5, 31, 29, 7, 3, 2, 2, 1, 2, L));
  }
  // Tensor cores (NHWC, C % 8 == 0): tails of the 128 x 128 tile, strides, dilation, 1x1 and 5x5;
  // a K step of 64 that spans taps (C = 8, 24, 40); for WGMMA also more tiles than SMs (its blocks
  // walk several, the gather's row table alternating; K = 128 and K = 64, its two ping-pong
  // consumers) and a 256-wide filter count.
  const int64_t tc[][10] = {{2, 8, 7, 7, 5, 3, 3, 1, 1, 1},       {4, 64, 14, 14, 64, 3, 3, 1, 1, 1}, {2, 16, 9, 11, 130, 3, 3, 2, 1, 1},
                            {1, 40, 6, 7, 17, 3, 3, 1, 2, 2},     {3, 256, 7, 7, 256, 1, 1, 1, 0, 1}, {1, 24, 12, 13, 9, 5, 5, 3, 2, 1},
                            {2, 128, 15, 15, 200, 3, 3, 2, 1, 1}, {20, 64, 30, 30, 128, 3, 3, 1, 1, 1}, {2, 72, 19, 17, 256, 3, 3, 1, 1, 1},
                            {20, 32, 30, 30, 64, 3, 3, 1, 1, 1}};
  for (auto &d : tc) {
    const gpuops_conv2d_shape s = shape_of(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], GPUOPS_LAYOUT_NHWC);
    forward_case<gpuops_bf16>(r, gpu, s, true, GPUOPS_ACT_RELU, {M, G, A});
    forward_case<gpuops_f16>(r, gpu, s, true, GPUOPS_ACT_NONE, {M, G, U, A});
  }
  // MMA_SYNC's gathered form (C % 8 != 0; AUTO takes it): an image model's first layer (3
  // channels, 7 x 7 at stride 2, 64 filters: the 64-wide tiles), a reduction of 5 x 5 x 5 = 125 over
  // 4 steps with dilation, 130 filters (128-wide tiles and a tail), C = 12 and 1.
  const int64_t gc[][10] = {{2, 3, 45, 39, 64, 7, 7, 2, 3, 1}, {3, 5, 20, 21, 130, 5, 5, 1, 2, 2}, {1, 12, 9, 10, 65, 3, 3, 2, 1, 1},
                            {2, 1, 17, 16, 7, 4, 2, 1, 1, 1}};
  for (auto &d : gc) {
    const gpuops_conv2d_shape s = shape_of(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], GPUOPS_LAYOUT_NHWC);
    forward_case<gpuops_bf16>(r, gpu, s, true, GPUOPS_ACT_RELU, {M, A});
    forward_case<gpuops_f16>(r, gpu, s, true, GPUOPS_ACT_NONE, {M, A});
  }
  // WGMMA's large tiles (128 x 256, chosen where R S C > 2048 and the tiles fill the GPU twice):
  // a layer too large for the CPU reference, checked against MMA_SYNC (itself checked above).
  if (!quick()) wgmma_against_mma(r, gpu, shape_of(1, 232, 130, 130, 256, 3, 3, 1, 1, 1, GPUOPS_LAYOUT_NHWC));
  // 1x1, stride 1, no padding, NHWC: AUTO is one GEMM (any C, a tail of its tiles): 16-bit types
  // with the epilogue fused, f32 (from K = 128) with it in place after the matrix multiply, or none;
  // 16-bit with C % 8 == 0 and up to 128 filters WGMMA where it runs (C = 32, K = 64).
  for (int64_t c : {17, 64, 32}) {
    const gpuops_conv2d_shape s = shape_of(2, c, 9, 11, c == 17 ? 33 : c == 64 ? 130 : 64, 1, 1, 1, 0, 1, GPUOPS_LAYOUT_NHWC);
    forward_case<gpuops_bf16>(r, gpu, s, true, GPUOPS_ACT_RELU, {A});
    forward_case<gpuops_f16>(r, gpu, s, true, GPUOPS_ACT_NONE, {A});
    forward_case<float>(r, gpu, s, true, GPUOPS_ACT_RELU, {A});
    forward_case<float>(r, gpu, s, false, GPUOPS_ACT_NONE, {A});
  }
}

// ---- GPU: past 2^31 elements, checked on samples ---------------------------------------------------
// x is a constant (cudaMemset bytes) with random windows written around the samples.
static void test_gpu_past_2_31(rng &r, bool gpu) {
  const char *n1 = "conv1d shared-tiled n 2^31 + 77, filter 8 (samples)", *n2 = "conv2d bf16 auto nhwc n1 c8 16400x16400 k8 3x3 (samples)";
  if (quick() || !gpu) {
    th_skip(n1, quick() ? "GPUOPS_TEST_QUICK" : "no CUDA device");
    th_skip(n2, quick() ? "GPUOPS_TEST_QUICK" : "no CUDA device");
    return;
  }
  size_t free_b = 0, total_b = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
  {  // conv1d: 2 x 8.6 GB
    const int64_t n = ((int64_t)1 << 31) + 77;
    const int fw = 8;
    if (free_b < (size_t)n * 8 + ((size_t)1 << 30)) {
      th_skip(n1, "not enough device memory");
    } else {
      float *x = nullptr, *y = nullptr, *f = nullptr;
      CHECK_CUDA(cudaMalloc(&x, (size_t)n * 4));
      CHECK_CUDA(cudaMalloc(&y, (size_t)n * 4));
      CHECK_CUDA(cudaMalloc(&f, 64));
      CHECK_CUDA(cudaMemset(x, 0x3F, (size_t)n * 4));  // 0x3F3F3F3F = 0.7470...
      float cval;
      const unsigned cbits = 0x3F3F3F3Fu;
      memcpy(&cval, &cbits, 4);
      vector<float> hf(fw);
      check::fill_uniform(hf, r, -1, 1);
      CHECK_CUDA(cudaMemcpy(f, hf.data(), fw * 4, cudaMemcpyHostToDevice));
      const int64_t centres[] = {0, ((int64_t)1 << 31) - 300, ((int64_t)1 << 31) + 5, n - 40};
      const int64_t win = 512;
      vector<vector<float>> wins;
      for (int64_t c : centres) {
        vector<float> v(win);
        check::fill_uniform(v, r, -1, 1);
        CHECK_CUDA(cudaMemcpy(x + c, v.data(), (size_t)std::min(win, n - c) * 4, cudaMemcpyHostToDevice));
        wins.push_back(v);
      }
      auto xat = [&](int64_t i) -> double {
        if (i < 0 || i >= n) return 0.0;
        for (int k = 3; k >= 0; --k)  // a later window overwrote an earlier one where they overlap
          if (i >= centres[k] && i < centres[k] + win) return wins[k][i - centres[k]];
        return cval;
      };
      const gpuops_status st = gpuops_conv1d_f32(y, x, f, n, fw, GPUOPS_ALGO_SHARED_TILED, nullptr);
      CHECK_CUDA(cudaDeviceSynchronize());
      int64_t bad = 0;
      if (st == GPUOPS_OK)
        for (int64_t c : centres) {
          const int64_t m = std::min(win, n - c);
          vector<float> got(m);
          CHECK_CUDA(cudaMemcpy(got.data(), y + c, m * 4, cudaMemcpyDeviceToHost));
          for (int64_t i = 0; i < m; ++i) {
            double want = 0;
            for (int j = 0; j < fw; ++j) want += xat(c + i + j - (fw - 1) / 2) * hf[j];
            bad += !(fabs(got[i] - want) <= 1e-5 * (1 + fabs(want)));
          }
        }
      th_case(st == GPUOPS_OK && bad == 0, n1, "status %s, %lld wrong", gpuops_status_string(st), (long long)bad);
      CHECK_CUDA(cudaFree(x));
      CHECK_CUDA(cudaFree(y));
      CHECK_CUDA(cudaFree(f));
    }
  }
  {  // conv2d NHWC bf16: x and y 2.15e9 elements each (4.3 GB)
    const gpuops_conv2d_shape s = shape_of(1, 8, 16400, 16400, 8, 3, 3, 1, 1, 1, GPUOPS_LAYOUT_NHWC);
    const int64_t nx = s.n * s.c * s.h * s.w, nw = s.k * s.c * 9;
    if (free_b < (size_t)nx * 4 + ((size_t)1 << 30)) {
      th_skip(n2, "not enough device memory");
      return;
    }
    gpuops_bf16 *x = nullptr, *y = nullptr, *w = nullptr;
    CHECK_CUDA(cudaMalloc(&x, (size_t)nx * 2));
    CHECK_CUDA(cudaMalloc(&y, (size_t)nx * 2));
    CHECK_CUDA(cudaMalloc(&w, (size_t)nw * 2));
    CHECK_CUDA(cudaMemset(x, 0x3F, (size_t)nx * 2));  // bf16 0x3F3F = 0.7461
    const double cval = gpuops_bf16_to_f32(gpuops_bf16{0x3F3F});
    vector<gpuops_bf16> hw(nw);
    check::fill_uniform(hw, r, -1, 1);
    CHECK_CUDA(cudaMemcpy(w, hw.data(), nw * 2, cudaMemcpyHostToDevice));
    // Random rows (3 image rows each) around element 2^31 (in image row 16368) and at the last rows.
    const int64_t rows[] = {16366, 16397};
    const int64_t row_elems = s.w * s.c;
    vector<vector<gpuops_bf16>> wins;
    for (int64_t r0 : rows) {
      vector<gpuops_bf16> v(3 * row_elems);
      check::fill_uniform(v, r, -1, 1);
      CHECK_CUDA(cudaMemcpy(x + r0 * row_elems, v.data(), v.size() * 2, cudaMemcpyHostToDevice));
      wins.push_back(v);
    }
    auto xat = [&](int64_t h, int64_t ww, int64_t c) -> double {
      if (h < 0 || h >= s.h || ww < 0 || ww >= s.w) return 0.0;
      for (size_t k = 0; k < 2; ++k)
        if (h >= rows[k] && h < rows[k] + 3) return gpuops_bf16_to_f32(wins[k][((h - rows[k]) * s.w + ww) * s.c + c]);
      return cval;
    };
    const gpuops_status st = gpuops_conv2d_bf16(y, x, w, nullptr, &s, GPUOPS_ACT_NONE, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    int64_t bad = 0;
    if (st == GPUOPS_OK)
      for (int64_t oh : {rows[0] + 1, rows[1] + 1, s.h - 1}) {
        vector<gpuops_bf16> got(row_elems);
        CHECK_CUDA(cudaMemcpy(got.data(), y + oh * row_elems, row_elems * 2, cudaMemcpyDeviceToHost));
        for (int64_t ow = 0; ow < s.w; ow += 37)
          for (int64_t k = 0; k < s.k; ++k) {
            double want = 0;
            for (int i = 0; i < 3; ++i)
              for (int j = 0; j < 3; ++j)
                for (int64_t c = 0; c < s.c; ++c) want += xat(oh + i - 1, ow + j - 1, c) * gpuops_bf16_to_f32(hw[((k * 3 + i) * 3 + j) * s.c + c]);
            const double g = gpuops_bf16_to_f32(got[ow * s.k + k]);
            bad += !(fabs(g - want) <= 1e-3 + 1.6e-2 * fabs(want));
          }
      }
    th_case(st == GPUOPS_OK && bad == 0, n2, "status %s, %lld wrong", gpuops_status_string(st), (long long)bad);
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(y));
    CHECK_CUDA(cudaFree(w));
  }
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_conv: seed %llu (GPUOPS_SEED replays it)\n", (unsigned long long)seed);
  rng r(seed);
  const bool gpu = check::have_gpu();
  test_cpu_references(r);
  test_argument_checks();
  test_gpu_learning(r, gpu);
  test_gpu_image(r, gpu);
  test_gpu_past_2_31(r, gpu);
  return th_summary();
}
