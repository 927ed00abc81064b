// SPDX-License-Identifier: MIT
// tools/emulate_conv.cpp - the convolution kernels of gpuops_cuda.cuh (section 11) run on the CPU,
// for checking their index arithmetic, halos, gathers, fragment layouts, swizzles and epilogues
// where there is no GPU. Built on tools/emulate_cuda.h (a thread per CUDA thread, blocks one at a
// time) and tools/emulate_mma.h (ldmatrix, mma.sync). Every kernel is launched with the grid its
// launcher (11.5) computes and compared with the library's CPU reference; the elements past the
// output must stay untouched. UNFUSED runs its im2col and permute kernels around the CPU GEMM.
// cp.async runs its synchronous (pre-sm_80) branch, so the pipeline's group counting is not
// checked here. Not part of `make test` (C++20, minutes of CPU): tools/emulate_conv.sh [substring].
#define GPUOPS_ONLY_CONV
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <vector_types.h>
#include <vector_functions.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string>
#include <type_traits>
#include <vector>
#include "emulate_cuda.h"
#include "emulate_mma.h"

#include "conv_body.inc"
using namespace gpuops;

static uint64_t s_ = 12345;
static float rnd() { s_ = s_ * 6364136223846793005ull + 1442695040888963407ull; return (float)((s_ >> 40) / 16777216.0 * 2 - 1); }
static int fails = 0, runs = 0;
static const char *filter = nullptr;

template <class T> struct host_of { using type = float; };
template <> struct host_of<__half> { using type = gpuops_f16; };
template <> struct host_of<__nv_bfloat16> { using type = gpuops_bf16; };
static float hto(float f) { return f; }
static float hto(gpuops_f16 h) { return gpuops_f16_to_f32(h); }
static float hto(gpuops_bf16 h) { return gpuops_bf16_to_f32(h); }
template <class H> H hfrom(float v);
template <> float hfrom<float>(float v) { return v; }
template <> gpuops_f16 hfrom<gpuops_f16>(float v) { return gpuops_f32_to_f16(v); }
template <> gpuops_bf16 hfrom<gpuops_bf16>(float v) { return gpuops_f32_to_bf16(v); }

static const int kGuard = 16;  // elements past the output that must stay untouched
// got has n + kGuard elements: the first n against want, the rest still `poison`.
template <class H> static void judge(const char *name, const std::vector<H> &got, const std::vector<H> &want, int64_t n, double rtol, double atol, float poison) {
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = hto(got[i]), w = hto(want[i]);
    if (!(fabs(g - w) <= atol + rtol * fabs(w)) && bad++ < 3) printf("  %s: [%lld] = %g, want %g\n", name, (long long)i, g, w);
  }
  for (int64_t i = n; i < n + kGuard; ++i)
    if (!(hto(got[i]) == poison || (isnan(poison) && isnan(hto(got[i])))) && bad++ < 3) printf("  %s: [%lld] past the end written\n", name, (long long)i);
  if (bad) ++fails, printf("FAIL %s (%d wrong)\n", name, bad);
}

// ---- the learning path -------------------------------------------------------------------------
// The register kernels' body for filter width fw (the launcher's FW dispatch, as a plain call).
template <int FW = 1>
static void conv_register_launch_body(bool two_d, const conv_reg_grid &g, float *y, const float *x, const float *f, int64_t h, int64_t w, int fh, int fw) {
  if (fw != FW) {
    if constexpr (FW < GPUOPS__CONV_MAX_F) conv_register_launch_body<FW + 1>(two_d, g, y, x, f, h, w, fh, fw);
    return;
  }
  if (two_d && fh == FW) conv2d_plane_register<FW, FW>(y, x, f, h, w, fh, g.tiles_w, g.vec, g.xvec);
  else if (two_d) conv2d_plane_register<FW, 0>(y, x, f, h, w, fh, g.tiles_w, g.vec, g.xvec);
  else conv1d_register<FW>(y, x, f, w, g.vec);
}
static void learning(int two_d, int64_t h, int64_t w, int fh, int fw, gpuops_algo algo) {
  char name[160];
  snprintf(name, sizeof name, "%s %s %lldx%lld f %dx%d", two_d ? "plane" : "conv1d", gpuops_algo_name(algo), (long long)h, (long long)w, fh, fw);
  if (filter && !strstr(name, filter)) return;
  ++runs;
  const int64_t n = h * w;
  std::vector<float> x(n), f(fh * fw), y(n + kGuard, NAN), ref(n);
  for (auto &v : x) v = rnd();
  for (auto &v : f) v = rnd();
  if (two_d) gpuops_cpu_conv2d_plane_f32(ref.data(), x.data(), f.data(), h, w, fh, fw);
  else gpuops_cpu_conv1d_f32(ref.data(), x.data(), f.data(), w, fw);
  memcpy(conv_filter_const, f.data(), f.size() * 4);
  float *Y = y.data();
  const float *X = x.data(), *F = f.data();
  if (algo == GPUOPS_ALGO_REGISTER_1D || algo == GPUOPS_ALGO_REGISTER_2D) {  // the launcher's grid and alignments
    const conv_reg_grid g = conv_reg_grid_of(two_d, Y, X, h, w);
    emu_launch(dim3e((unsigned)g.blocks), dim3e(kBlock), [&] { conv_register_launch_body(two_d, g, Y, X, F, h, w, fh, fw); });
  } else if (!two_d) {
    const unsigned gb = (unsigned)((w + kConv1dTile - 1) / kConv1dTile);
    emu_launch(dim3e(gb), dim3e(kConv1dTile), [&] {
      switch (algo) {
      case GPUOPS_ALGO_NAIVE: conv1d_direct<false>(Y, X, F, w, fw); break;
      case GPUOPS_ALGO_CONST_FILTER: conv1d_direct<true>(Y, X, F, w, fw); break;
      case GPUOPS_ALGO_SHARED_TILED: conv1d_shared_tiled<>(Y, X, w, fw); break;
      default: conv1d_cached_halo<>(Y, X, w, fw); break;
      }
    });
  } else {
    const int64_t tiles_w = (w + kConvTileW - 1) / kConvTileW, tiles = tiles_w * ((h + kConvTileH - 1) / kConvTileH);
    emu_launch(dim3e((unsigned)tiles), dim3e(kConvTileW, kConvTileH), [&] {
      switch (algo) {
      case GPUOPS_ALGO_NAIVE: conv2d_plane_direct<false>(Y, X, F, h, w, fh, fw, tiles_w); break;
      case GPUOPS_ALGO_CONST_FILTER: conv2d_plane_direct<true>(Y, X, F, h, w, fh, fw, tiles_w); break;
      case GPUOPS_ALGO_SHARED_TILED: conv2d_plane_shared_tiled<>(Y, X, h, w, fh, fw, tiles_w); break;
      default: conv2d_plane_cached_halo<>(Y, X, h, w, fh, fw, tiles_w); break;
      }
    });
  }
  judge(name, y, ref, n, 1e-5, 1e-5, NAN);
}

// ---- image models ------------------------------------------------------------------------------
struct shape_case {
  int64_t n, c, h, w, k, r, s, st, pad, dil;
};
static gpuops_conv2d_shape make_shape(const shape_case &c, gpuops_layout layout) {
  gpuops_conv2d_shape s = {};
  s.n = c.n, s.c = c.c, s.h = c.h, s.w = c.w, s.k = c.k, s.r = c.r, s.s = c.s;
  s.stride_h = c.st, s.stride_w = c.st == 3 ? 1 : c.st, s.pad_h = c.pad, s.pad_w = c.pad == 0 ? 1 : c.pad, s.dil_h = c.dil, s.dil_w = c.dil;
  s.layout = layout;
  return s;
}
static std::string shape_name(const char *what, const gpuops_conv2d_shape &s) {
  char b[256];
  snprintf(b, sizeof b, "%s %s n%lld c%lld %lldx%lld k%lld %lldx%lld st %lld/%lld pad %lld/%lld dil %lld", what, s.layout ? "nhwc" : "nchw", (long long)s.n,
           (long long)s.c, (long long)s.h, (long long)s.w, (long long)s.k, (long long)s.r, (long long)s.s, (long long)s.stride_h, (long long)s.stride_w,
           (long long)s.pad_h, (long long)s.pad_w, (long long)s.dil_h);
  return b;
}

// kind: 0 IMPLICIT_GEMM, 1 UNFUSED (kernels around the CPU GEMM), 2 MMA_SYNC
template <class T> static void forward(const gpuops_conv2d_shape &s, int kind, bool bias, int act) {
  using H = typename host_of<T>::type;
  const char *kn[] = {"fwd implicit-gemm", "fwd unfused", "fwd mma-sync"};
  std::string name = shape_name(kn[kind], s) + (bias ? " bias" : "") + (act ? " act" : "") +
                     (std::is_same<T, float>::value ? " f32" : std::is_same<T, __half>::value ? " f16" : " bf16");
  if (filter && !strstr(name.c_str(), filter)) return;
  ++runs;
  int64_t P, Q;
  if (gpuops_conv2d_out_size(&s, &P, &Q) != GPUOPS_OK) { ++fails; printf("FAIL %s: shape refused\n", name.c_str()); return; }
  const int64_t nx = s.n * s.c * s.h * s.w, nw = s.k * s.c * s.r * s.s, ny = s.n * s.k * P * Q;
  std::vector<H> x(nx), w(nw), b(s.k), y(ny + kGuard, hfrom<H>(NAN)), ref(ny);
  for (auto &v : x) v = hfrom<H>(rnd());
  for (auto &v : w) v = hfrom<H>(rnd());
  for (auto &v : b) v = hfrom<H>(rnd());
  gpuops_status st;
  if constexpr (std::is_same<T, float>::value) st = gpuops_cpu_conv2d_f32(ref.data(), x.data(), w.data(), bias ? b.data() : nullptr, &s, (gpuops_activation)act);
  else if constexpr (std::is_same<T, __half>::value) st = gpuops_cpu_conv2d_f16(ref.data(), x.data(), w.data(), bias ? b.data() : nullptr, &s, (gpuops_activation)act);
  else st = gpuops_cpu_conv2d_bf16(ref.data(), x.data(), w.data(), bias ? b.data() : nullptr, &s, (gpuops_activation)act);
  if (st != GPUOPS_OK) { ++fails; printf("FAIL %s: cpu refused\n", name.c_str()); return; }
  gpuops__conv_args a = gpuops__conv_make(GPUOPS__CONV_FWD, std::is_same<T, float>::value ? GPUOPS__F32 : std::is_same<T, __half>::value ? GPUOPS__F16 : GPUOPS__BF16,
                                          y.data(), x.data(), w.data(), &s);
  a.bias = bias ? b.data() : nullptr, a.act = (gpuops_activation)act;
  const bool nhwc = s.layout == GPUOPS_LAYOUT_NHWC;
  const conv_geom g = conv_geom_of(s);
  if (kind == 0) {
    const conv_igemm_params<T> p = conv_igemm_params_of<T>(&a, false);
    emu_launch(dim3e((unsigned)((p.M + kIgBM - 1) / kIgBM), (unsigned)((p.NC + kIgBN - 1) / kIgBN)), dim3e(256), [&] {
      if (nhwc) conv_igemm_cuda<T, true, false>(p);
      else conv_igemm_cuda<T, false, false>(p);
    });
  } else if (kind == 1) {
    const int64_t M = g.n * g.p * g.q, crs = g.c * g.r * g.s;
    std::vector<H> A(M * crs);
    std::vector<float> Cm(M * g.k);
    emu_launch(dim3e(2), dim3e(kBlock), [&] {
      if (nhwc) conv_im2col<T, true>((T *)A.data(), (const T *)x.data(), g);
      else conv_im2col<T, false>((T *)A.data(), (const T *)x.data(), g);
    });
    if constexpr (std::is_same<T, float>::value) gpuops_cpu_matmul_f32(Cm.data(), A.data(), w.data(), M, g.k, crs, crs, crs, g.k, 1, 0, GPUOPS_OP_N, GPUOPS_OP_T);
    else if constexpr (std::is_same<T, __half>::value) gpuops_cpu_gemm_f16_f32(Cm.data(), A.data(), w.data(), M, g.k, crs, crs, crs, g.k, 1, 0, GPUOPS_OP_N, GPUOPS_OP_T, nullptr);
    else gpuops_cpu_gemm_bf16_f32(Cm.data(), A.data(), w.data(), M, g.k, crs, crs, crs, g.k, 1, 0, GPUOPS_OP_N, GPUOPS_OP_T, nullptr);
    emu_launch(dim3e(2), dim3e(kBlock), [&] {
      if (nhwc) conv_epilogue_permute<T, true>((T *)y.data(), Cm.data(), bias ? (const T *)b.data() : nullptr, g, act);
      else conv_epilogue_permute<T, false>((T *)y.data(), Cm.data(), bias ? (const T *)b.data() : nullptr, g, act);
    });
  } else {
    if constexpr (!std::is_same<T, float>::value) {
      const int64_t gx = (g.n * g.p * g.q + kConvMmaBM - 1) / kConvMmaBM, gy = (g.k + kConvMmaBN - 1) / kConvMmaBN;
      emu_launch(dim3e((unsigned)gx, (unsigned)gy), dim3e(kConvMmaThreads), [&] {
        conv_igemm_mma<T>((T *)y.data(), (const T *)x.data(), (const T *)w.data(), bias ? (const T *)b.data() : nullptr, g, act);
      });
    }
  }
  const double rt = std::is_same<T, float>::value ? 1e-5 : std::is_same<T, __half>::value ? 2e-3 : 1.6e-2;
  const double at = std::is_same<T, float>::value ? 1e-5 * sqrt((double)(s.c * s.r * s.s)) : 2e-3;
  judge(name.c_str(), y, ref, ny, rt, at, NAN);
}

static void backward(const gpuops_conv2d_shape &s, bool filter_grad) {
  std::string name = shape_name(filter_grad ? "bwd filter" : "bwd data", s);
  if (filter && !strstr(name.c_str(), filter)) return;
  ++runs;
  int64_t P, Q;
  gpuops_conv2d_out_size(&s, &P, &Q);
  const int64_t nx = s.n * s.c * s.h * s.w, nw = s.k * s.c * s.r * s.s, ny = s.n * s.k * P * Q;
  std::vector<float> x(nx), w(nw), dy(ny);
  for (auto &v : x) v = rnd();
  for (auto &v : w) v = rnd();
  for (auto &v : dy) v = rnd();
  const int64_t nout = filter_grad ? nw : nx;
  std::vector<float> got(nout + kGuard, NAN), ref(nout);
  const conv_geom g = conv_geom_of(s);
  const bool nhwc = s.layout == GPUOPS_LAYOUT_NHWC;
  if (filter_grad) {
    gpuops_cpu_conv2d_bwd_filter_f32(ref.data(), dy.data(), x.data(), &s);
    // As the launcher: the reduction split into parts (their partial sums, then conv_sum_parts).
    const int64_t pq[2] = {P, Q}, parts = gpuops__conv_wgrad_splits(&s, pq);
    const int64_t jper = conv_wgrad_pixels_per_part(g, parts);
    std::vector<float> part(parts > 1 ? parts * nw : 0, NAN);
    float *out = parts > 1 ? part.data() : got.data();
    emu_launch(dim3e((unsigned)((g.k + kIgBM - 1) / kIgBM), (unsigned)((g.c * g.r * g.s + kIgBN - 1) / kIgBN), (unsigned)parts), dim3e(256), [&] {
      if (nhwc) conv_wgrad_cuda<true>(out, dy.data(), x.data(), g, jper);
      else conv_wgrad_cuda<false>(out, dy.data(), x.data(), g, jper);
    });
    if (parts > 1) emu_launch(dim3e(3), dim3e(kBlock), [&] { conv_sum_parts<>(got.data(), part.data(), nw, parts); });
    if (parts > 1) printf("  (filter gradient in %lld parts)\n", (long long)parts);
  } else {
    gpuops_cpu_conv2d_bwd_data_f32(ref.data(), dy.data(), w.data(), &s);
    if (s.c <= kConvDgradDirectMaxC) {  // as the launcher: small C computes directly
      emu_launch(dim3e(3), dim3e(kBlock), [&] {
        if (nhwc) conv_dgrad_direct<true>(got.data(), dy.data(), w.data(), g);
        else conv_dgrad_direct<false>(got.data(), dy.data(), w.data(), g);
      });
      judge(name.c_str(), got, ref, nout, 1e-5, 1e-5 * sqrt((double)(s.k * s.r * s.s + s.n * P * Q)), NAN);
      return;
    }
    gpuops__conv_args a = gpuops__conv_make(GPUOPS__CONV_BWD_DATA, GPUOPS__F32, got.data(), dy.data(), w.data(), &s);
    const conv_igemm_params<float> p = conv_igemm_params_of<float>(&a, true);
    emu_launch(dim3e((unsigned)((p.M + kIgBM - 1) / kIgBM), (unsigned)((p.NC + kIgBN - 1) / kIgBN)), dim3e(256), [&] {
      const bool unit = p.sh == 1 && p.sw == 1;  // as the launcher
      if (nhwc && unit) conv_igemm_cuda<float, true, true, true>(p);
      else if (nhwc) conv_igemm_cuda<float, true, true>(p);
      else if (unit) conv_igemm_cuda<float, false, true, true>(p);
      else conv_igemm_cuda<float, false, true>(p);
    });
  }
  judge(name.c_str(), got, ref, nout, 1e-5, 1e-5 * sqrt((double)(s.k * s.r * s.s + s.n * P * Q)), NAN);
}

int main(int argc, char **argv) {
  filter = argc > 1 ? argv[1] : nullptr;
  const gpuops_algo la[] = {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_CONST_FILTER, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_CACHED_HALO, GPUOPS_ALGO_REGISTER_1D};
  for (gpuops_algo algo : la) {
    for (int64_t n : {1, 7, 300, 530, 2049, 4100})
      for (int fw : {1, 2, 3, 4, 8, 15}) learning(0, 1, n, 1, fw, algo);
    const int64_t hw[][2] = {{1, 1}, {7, 33}, {19, 70}, {35, 132}, {33, 260}};
    const int ff[][2] = {{1, 1}, {3, 3}, {2, 4}, {5, 15}, {15, 2}, {7, 7}};
    for (auto &d : hw)
      for (auto &f : ff) learning(1, d[0], d[1], f[0], f[1], algo == GPUOPS_ALGO_REGISTER_1D ? GPUOPS_ALGO_REGISTER_2D : algo);
  }
  // n, c, h, w, k, r, s, stride (3: 3 x 1), pad (0: 0 x 1), dil
  const shape_case cases[] = {
      {2, 3, 7, 7, 5, 3, 3, 1, 1, 1},   {1, 1, 1, 1, 1, 1, 1, 1, 0, 1},   {2, 17, 9, 11, 3, 3, 3, 2, 1, 1}, {1, 3, 33, 7, 17, 3, 2, 1, 2, 2},
      {1, 5, 7, 33, 70, 1, 1, 1, 0, 1}, {2, 9, 8, 8, 66, 5, 5, 3, 2, 1}, {1, 20, 6, 5, 9, 2, 3, 2, 0, 2}, {3, 4, 5, 9, 65, 3, 3, 1, 1, 3},
      {1, 6, 5, 6, 140, 3, 3, 1, 1, 1}, {1, 130, 4, 4, 3, 1, 1, 1, 0, 1},  // two tiles of 128 along K, along C
  };
  for (const auto &c : cases)
    for (gpuops_layout L : {GPUOPS_LAYOUT_NCHW, GPUOPS_LAYOUT_NHWC}) {
      const gpuops_conv2d_shape s = make_shape(c, L);
      forward<float>(s, 0, true, GPUOPS_ACT_RELU);
      forward<float>(s, 0, false, GPUOPS_ACT_NONE);
      forward<float>(s, 1, true, GPUOPS_ACT_RELU);
      forward<__nv_bfloat16>(s, 0, true, GPUOPS_ACT_NONE);
      forward<__half>(s, 1, true, GPUOPS_ACT_RELU);
      backward(s, false);
      backward(s, true);
    }
  // Filter gradients split over blocks: 17 parts (a short last one); 8 with strides and dilation.
  for (gpuops_layout L : {GPUOPS_LAYOUT_NCHW, GPUOPS_LAYOUT_NHWC}) {
    backward(make_shape({8, 3, 33, 33, 17, 3, 3, 1, 1, 1}, L), true);
    backward(make_shape({20, 5, 31, 29, 7, 3, 2, 2, 1, 2}, L), true);
  }
  // Tensor cores: NHWC, C % 8 == 0.
  const shape_case mma_cases[] = {
      {1, 8, 7, 7, 5, 3, 3, 1, 1, 1},    {2, 16, 9, 9, 130, 3, 3, 2, 1, 1}, {1, 40, 6, 7, 17, 3, 3, 1, 2, 2},
      {1, 64, 4, 4, 64, 1, 1, 1, 0, 1},  {1, 8, 12, 12, 8, 5, 3, 3, 2, 1},  {2, 24, 9, 10, 140, 2, 2, 1, 0, 1},
  };
  for (const auto &c : mma_cases) {
    const gpuops_conv2d_shape s = make_shape(c, GPUOPS_LAYOUT_NHWC);
    forward<__nv_bfloat16>(s, 2, true, GPUOPS_ACT_RELU);
    forward<__half>(s, 2, false, GPUOPS_ACT_NONE);
  }
  printf("%d runs, %d failed, %ld instruction errors\n", runs, fails, (long)emu_errors);
  return fails || emu_errors ? 1 : 0;
}
