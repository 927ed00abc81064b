// SPDX-License-Identifier: MIT
// examples/15_convolution.cu - step 15 of the learning path: convolution in 1D and 2D.
//
// What it teaches
//   y[i] = sum_j x[i + j - (F - 1) / 2] f[j] (and its 2D form) with zero padding: every output
//   reads F (F x F) inputs and F taps, but neighbouring outputs share all but one of them. With
//   filters up to 15 x 15 it stays memory-bound (8 bytes per output against at most 450 flops), so
//   the ceiling is the copy bandwidth, and the versions differ in where the repeated reads are
//   served from (gpuops_cuda.cuh 11.2):
//   naive          x and f from global memory; L1 catches the reuse, but every tap is a load.
//   const-filter   the taps in constant memory: all 32 lanes read the same tap, one broadcast
//                  from the constant cache, no load slot spent on f.
//   shared-tiled   the block's inputs and their halo (the F - 1 neighbours its edge outputs need)
//                  staged in shared memory once; each input is fetched from DRAM/L2 once per block.
//   cached-halo    only the block's own inputs in shared memory; the halo is read from global
//                  memory, where the neighbouring blocks' loads left it in L1/L2: a simpler load,
//                  a branch in the inner loop. Which wins depends on F and the cache: measured here.
//   register-1d/2d each thread computes 4 neighbouring outputs (1D) or a 4 x 4 block (2D) in
//                  registers: it reads each input row of its window from shared memory once, as
//                  16-byte words, and every value it reads feeds all the outputs that need it, so
//                  a load serves up to 4 (16) multiply-adds where the versions above spend one load
//                  per tap. The filter's width is a template argument: the window is registers;
//                  a square filter's kernel unrolls completely and reads each tap as an operand
//                  straight from constant memory.
// PREDICTION for an H100 (not a measurement; bench_conv and docs/performance.md hold the numbers):
//   all four first versions near the copy ceiling for 1D with small F; for 2D with a large filter
//   the tiled versions ahead of naive by 2-4x, because naive's F x F loads per output saturate L1.
//   Measured, the loads per tap bound all four past 3 taps; the register versions, with a load per
//   4-16 multiply-adds, should reach the copy ceiling up to 7 x 7 (~0.85x copy). Measured on an
//   H100: 1D 0.99x copy, 2D 0.94x at 3 x 3 and 0.85x at 7 x 7 on the bench's 8192 x 8192 plane.
//
// Every GPU version is checked against the CPU implementation (double sums) before it is timed.
// Build: nvcc -O3 -arch=sm_90 -I. examples/15_convolution.cu -o convolution. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_CONV
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using std::string;
using std::vector;

int main() {
  if (!check::have_gpu()) {
    printf("15_convolution needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  const double copy = timer.copy_gbps(size_t(1) << 30);
  printf("15 convolution: f32, zero padding, 'same' output, seed %llu (GPUOPS_SEED replays it)\n", (unsigned long long)seed);
  printf("device: %s, %d SMs\n", dev.name, dev.sms);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written)\n\n", copy);
  fflush(stdout);

  struct problem {
    const char *name;
    int64_t h, w;
    int fh, fw;
  };
  const problem problems[] = {{"conv1d 2^25, F = 7", 1, (int64_t)1 << 25, 1, 7}, {"conv2d 4096 x 4096, 3 x 3", 4096, 4096, 3, 3},
                              {"conv2d 4096 x 4096, 7 x 7", 4096, 4096, 7, 7}};
  check::rng rng(seed);
  bench::table table;
  table.head = {"problem", "version", "time (us)", "GB/s", "x copy", "x cpu", "x prev", "check"};
  bool ok = true;
  string best;
  double best_gbps = 0, best_x_cpu = 0;
  for (const problem &p : problems) {
    const int64_t n = p.h * p.w;
    const bool two_d = p.h > 1;
    vector<float> x(n), f((size_t)p.fh * p.fw), want(n), got(n);
    check::fill_uniform(x, rng, -1.0, 1.0);
    check::fill_uniform(f, rng, -1.0, 1.0);
    const double cpu_us = bench::host_us([&] {
      return two_d ? gpuops_cpu_conv2d_plane_f32(want.data(), x.data(), f.data(), p.h, p.w, p.fh, p.fw) : gpuops_cpu_conv1d_f32(want.data(), x.data(), f.data(), n, p.fw);
    });
    float *dx = check::to_device(x), *df = check::to_device(f), *dy = nullptr;
    CHECK_CUDA(cudaMalloc(&dy, n * sizeof(float)));
    const double bytes = 8.0 * (double)n;
    table.add({p.name, "cpu (double sums)", bench::num(cpu_us), bench::num(bytes / (cpu_us * 1e3)), "-", "1.00x", "-", "reference"});
    double prev = cpu_us;
    for (gpuops_algo a : {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_CONST_FILTER, GPUOPS_ALGO_SHARED_TILED, GPUOPS_ALGO_CACHED_HALO,
                          two_d ? GPUOPS_ALGO_REGISTER_2D : GPUOPS_ALGO_REGISTER_1D}) {
      auto run = [&] {
        return two_d ? gpuops_conv2d_plane_f32(dy, dx, df, p.h, p.w, p.fh, p.fw, a, nullptr) : gpuops_conv1d_f32(dy, dx, df, n, p.fw, a, nullptr);
      };
      check::poison(dy, n * sizeof(float));
      const gpuops_status st = run();
      CHECK_CUDA(cudaDeviceSynchronize());
      string verdict = "ok";
      double us = NAN;
      if (st != GPUOPS_OK) {
        verdict = string("FAIL ") + gpuops_status_string(st);
      } else {
        CHECK_CUDA(cudaMemcpy(got.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
        const check::result r = check::compare(got.data(), want.data(), n, check::tolerance{1e-6 * p.fh * p.fw, 1e-5});
        verdict = check::verdict(r);
        if (r.ok()) us = 1e3 * timer.median_ms([&] { CHECK_OK(run()); });
      }
      ok = ok && verdict == "ok";
      const double gbps = bytes / (us * 1e3);
      table.add({p.name, gpuops_algo_name(a), bench::num(us), bench::num(gbps), bench::num(gbps / copy, "x"), bench::num(cpu_us / us, "x"), bench::num(prev / us, "x"), verdict});
      if (us == us && gbps > best_gbps) best_gbps = gbps, best = string(gpuops_algo_name(a)) + " (" + p.name + ")", best_x_cpu = cpu_us / us;
      prev = us;
    }
    for (float *q : {dx, df, dy}) CHECK_CUDA(cudaFree(q));
  }
  table.print();
  printf("result: 15 convolution | %s | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", best.empty() ? "-" : best.c_str(), best_gbps, best_gbps / copy, best_x_cpu,
         ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}
