// SPDX-License-Identifier: MIT
// examples/03_kernel_fusion.cu - step 3 of the learning path: kernel fusion.
//
// What it teaches
//   A memory-bound op costs the time its bytes take at copy bandwidth, whatever it computes. So a
//   chain of such ops run one kernel each pays for every intermediate array twice (written by one
//   pass, read back by the next), and fusing the chain into one kernel saves exactly those round
//   trips. The byte counts predict the speedup:
//     y = exp((x + z) * 2)   fused: read x, z, write y = 3 accesses. Unfused: add (2 reads, 1
//                            write), scale (1, 1), exp (1, 1) = 7 accesses: 7/3 = 2.33x.
//     int8 quantize of f32   per tensor or per channel. Fused: read x (4 B), write q (1 B) = 5 B.
//                            Unfused, through an f32 workspace t: x -> t (4 + 4), t -> t (4 + 4),
//                            t -> q (4 + 1) = 21 B: 4.2x.
//     int8 dequantize to f32 fused: 1 + 4 = 5 B. Unfused: q -> y (1 + 4), then two passes over y
//                            (4 + 4 each) = 21 B: 4.2x.
//   The math is a few flops per element either way; the roofline of every row is the copy bandwidth.
//   GB/s counts the fused op's minimal bytes on both rows, so the unfused row shows the effective
//   bandwidth a user gets; B/elem is what that version really moves.
//   Fusion also changes the numbers: the unfused 16-bit chain rounds both intermediates to bf16,
//   the fused one rounds once (compare the rel err column of the two bf16 rows). The quantizer's
//   unfused steps round exactly as the fused form does, so both versions of quantize and
//   dequantize match the CPU bit for bit.
//
// The kernels to read: gpuops_cuda.cuh, sections 2.2-2.3 (map_naive, map_grid_stride,
// map_vectorized: one engine runs every pass), section 2.1 (add_mul_exp_op and quantize_op beside
// the step functors of the unfused versions: add_op, mul_scalar_op, exp_op, divide_scale_op,
// add_zero_point_op, clamp_op, copy_op, sub_zero_point_op, mul_scale_op) and section 2.5 (the
// UNFUSED branches of ew_add_mul_exp, ew_quantize and ew_dequantize).
// Every GPU row is checked against the CPU implementation (gpuops_cpu_*) before it is timed.
// Build: nvcc -O3 -arch=sm_90 -I. examples/03_kernel_fusion.cu -o kernel_fusion. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_ELEMENTWISE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <chrono>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using bench::fmt;
using std::string;
using std::vector;

static const int64_t n = (int64_t(1) << 26) + 3;

// This program's device arrays, freed together when it ends.
struct device_memory {
  vector<void *> blocks;
  ~device_memory() {
    for (void *p : blocks) cudaFree(p);
  }
  template <class T> T *keep(T *p) {
    blocks.push_back(p);
    return p;
  }
  template <class T> T *alloc(int64_t count) {
    T *d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, (size_t)count * sizeof(T)));
    return keep(d);
  }
  template <class T> T *upload(const vector<T> &h) { return keep(check::to_device(h)); }
  template <class T> T *random(vector<T> &h, check::rng &rng, double lo, double hi) {
    check::fill_uniform(h, rng, lo, hi);
    return upload(h);
  }
};


// Bytes per element that each version of an op moves.
struct traffic {
  double fused, unfused;
};

// The table. GB/s and % copy count the fused op's bytes on every row (effective bandwidth);
// x unfused is the fused row's speedup over the unfused row, predicted is unfused / fused bytes.
struct report {
  double copy_gbps;
  bench::table table;
  bool ok = true;
  explicit report(double copy) : copy_gbps(copy) {
    table.head = {"op", "version", "time (us)", "B/elem", "GB/s", "% copy", "x cpu", "x unfused", "predicted",
                  "rel err", "check"};
  }
  static double gbps(double bytes, int64_t count, double us) { return bytes * (double)count / (us * 1e3); }
};

// One fused op's three rows: cpu, unfused, fused. cpu(want) fills the reference; gpu(algo) runs
// the op into d_out. Returns the fused row's time, and the unfused one's through unfused_us.
template <class T, class Cpu, class Gpu>
static double fusion_rows(report &rep, bench::timer &timer, const string &op, int64_t count, traffic bytes, T *d_out,
                          check::tolerance tol, Cpu cpu, Gpu gpu, double *unfused_us = nullptr) {
  vector<T> want(count);
  const double cpu_t = bench::host_us([&] { return cpu(want.data()); });
  auto row = [&](const char *ver, double us, double moved, double vs_unfused, double predicted, const string &rel,
                 const string &chk) {
    const double g = report::gbps(bytes.fused, count, us);
    rep.table.add({op, ver, bench::num(us), fmt("%.0f", moved), bench::num(g), bench::num(100.0 * g / rep.copy_gbps, "%"),
                   bench::num(cpu_t / us, "x"), bench::num(vs_unfused, "x"), bench::num(predicted, "x"), rel, chk});
  };
  row("cpu", cpu_t, bytes.fused, NAN, NAN, "-", "reference");

  double us[2] = {NAN, NAN};  // unfused, fused
  const gpuops_algo algos[2] = {GPUOPS_ALGO_UNFUSED, GPUOPS_ALGO_AUTO};
  for (int k = 0; k < 2; ++k) {
    const bool fused = k == 1;
    const char *ver = fused ? "fused" : "unfused";
    const double moved = fused ? bytes.fused : bytes.unfused;
    check::poison(d_out, (size_t)count * sizeof(T));
    const gpuops_status st = gpu(algos[k]);
    if (st != GPUOPS_OK) {
      row(ver, NAN, moved, NAN, NAN, "-", string("FAIL ") + gpuops_status_string(st));
      rep.ok = false;
      continue;
    }
    const vector<T> got = check::to_host(d_out, count);
    const check::result r = check::compare(got.data(), want.data(), count, tol);
    us[k] = 1e3 * timer.median_ms([&] { CHECK_OK(gpu(algos[k])); });
    row(ver, us[k], moved, fused ? us[0] / us[1] : NAN, fused ? bytes.unfused / bytes.fused : NAN,
        fmt("%.1e", r.rel_norm), check::verdict(r));
    rep.ok = rep.ok && r.ok();
  }
  if (unfused_us) *unfused_us = us[0];
  return us[1];
}

int main() {
  if (!check::have_gpu()) {
    printf("03_kernel_fusion needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  report rep(timer.copy_gbps(size_t(1) << 30));
  printf("03 kernel fusion: n = %lld elements, seed %llu (GPUOPS_SEED replays it)\n", (long long)n,
         (unsigned long long)seed);
  printf("device: %s, %d SMs\n", dev.name, dev.sms);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written)\n\n", rep.copy_gbps);
  fflush(stdout);
  check::rng rng(seed);
  device_memory mem;

  // y = exp((x + z) * s), x and z in [-0.5, 0.5], in f32 and bf16.
  const float s = 2.0f;
  vector<float> x32(n), z32(n);
  vector<gpuops_bf16> x16(n), z16(n);
  float *d_x32 = mem.random(x32, rng, -0.5, 0.5), *d_z32 = mem.random(z32, rng, -0.5, 0.5),
        *d_y32 = mem.alloc<float>(n);
  gpuops_bf16 *d_x16 = mem.random(x16, rng, -0.5, 0.5), *d_z16 = mem.random(z16, rng, -0.5, 0.5);
  gpuops_bf16 *d_y16 = mem.alloc<gpuops_bf16>(n);
  const traffic chain32 = {3 * 4, 7 * 4}, chain16 = {3 * 2, 7 * 2};  // 3 or 7 accesses of the storage type
  double chain_unfused_us = NAN;
  const double chain_us = fusion_rows(
      rep, timer, "add_mul_exp f32", n, chain32, d_y32, check::default_tolerance<float>(),
      [&](float *w) { return gpuops_cpu_add_mul_exp_f32(w, x32.data(), z32.data(), n, s); },
      [&](gpuops_algo al) { return gpuops_add_mul_exp_f32(d_y32, d_x32, d_z32, n, s, al, nullptr); },
      &chain_unfused_us);
  fusion_rows(
      rep, timer, "add_mul_exp bf16", n, chain16, d_y16, check::default_tolerance<gpuops_bf16>(),
      [&](gpuops_bf16 *w) { return gpuops_cpu_add_mul_exp_bf16(w, x16.data(), z16.data(), n, s); },
      [&](gpuops_algo al) { return gpuops_add_mul_exp_bf16(d_y16, d_x16, d_z16, n, s, al, nullptr); });

  // int8 quantization of x in [-3, 3]: per tensor (scale 0.02, zero point 3), and per output row
  // of a weight matrix [4096, inner] (scales in [0.01, 0.05], zero points in [-20, 20]). UNFUSED
  // needs an f32 workspace of n elements; the fused form needs none.
  const float scale = 0.02f;
  const int32_t zero_point = 3;
  const int64_t channels = 4096, inner = n / channels, n_pc = channels * inner;
  vector<float> xq(n), scale_c(channels);
  vector<int32_t> zero_point_c(channels);
  float *d_xq = mem.random(xq, rng, -3.0, 3.0), *d_scale_c = mem.random(scale_c, rng, 0.01, 0.05);
  for (int32_t &z : zero_point_c) z = (int32_t)rng.below(41) - 20;
  int32_t *d_zero_point_c = mem.upload(zero_point_c);
  int8_t *d_q = mem.alloc<int8_t>(n), *d_q_pc = mem.alloc<int8_t>(n_pc);
  const size_t ws_bytes = gpuops_quantize_workspace_size(n, GPUOPS_ALGO_UNFUSED);
  void *d_ws = mem.alloc<char>((int64_t)ws_bytes);
  const traffic quantize_bytes = {4 + 1, (4 + 4) + (4 + 4) + (4 + 1)};  // f32 in, int8 out, f32 workspace
  fusion_rows(
      rep, timer, "quantize f32", n, quantize_bytes, d_q, check::default_tolerance<int8_t>(),
      [&](int8_t *w) { return gpuops_cpu_quantize_f32(w, xq.data(), n, scale, zero_point); },
      [&](gpuops_algo al) {
        return gpuops_quantize_f32(d_q, d_xq, n, scale, zero_point, d_ws, ws_bytes, al, nullptr);
      });
  fusion_rows(
      rep, timer, fmt("quantize_per_channel f32 [%lld, %lld]", (long long)channels, (long long)inner), n_pc,
      quantize_bytes, d_q_pc, check::default_tolerance<int8_t>(),
      [&](int8_t *w) {
        return gpuops_cpu_quantize_per_channel_f32(w, xq.data(), scale_c.data(), zero_point_c.data(), 1, channels,
                                                   inner);
      },
      [&](gpuops_algo al) {
        return gpuops_quantize_per_channel_f32(d_q_pc, d_xq, d_scale_c, d_zero_point_c, 1, channels, inner, d_ws,
                                               ws_bytes, al, nullptr);
      });

  // Dequantize the per-tensor result back to f32 (a round trip); exact, like the CPU's.
  const vector<int8_t> q = check::to_host(d_q, n);
  const traffic dequantize_bytes = {1 + 4, (1 + 4) + (4 + 4) + (4 + 4)};  // int8 in, f32 out, then twice over y
  fusion_rows(
      rep, timer, "dequantize f32", n, dequantize_bytes, d_y32, check::exact,
      [&](float *w) { return gpuops_cpu_dequantize_f32(w, q.data(), n, scale, zero_point); },
      [&](gpuops_algo al) { return gpuops_dequantize_f32(d_y32, d_q, n, scale, zero_point, al, nullptr); });
  rep.table.print();

  const double gbps = report::gbps(3 * 4, n, chain_us);
  printf("result: 03 kernel fusion | fused add_mul_exp f32 | %.0f GB/s | %.2fx copy | %.1fx unfused | %s\n", gbps,
         gbps / rep.copy_gbps, chain_unfused_us / chain_us, rep.ok ? "ok" : "FAIL");

  return rep.ok ? 0 : 1;
}
