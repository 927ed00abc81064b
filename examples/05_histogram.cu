// SPDX-License-Identifier: MIT
// examples/05_histogram.cu - step 5 of the learning path: histogram, and the cost of contention.
//
// What it teaches
//   A histogram of n int32 values into 256 bins reads 4n bytes and does one increment per value.
//   The increments collide: many threads add to the same counter at once, so they must be atomic,
//   and atomics on one address execute one after another. How fast a histogram runs depends on how
//   many threads meet on the same address at the same time, which depends on the data: the table
//   runs every version on uniform data and on skewed data (90% of the values are one value), the
//   case that serializes a naive histogram. Counts are 64-bit, exact past 2^31 values. The
//   versions (gpuops_cuda.cuh sections 3.2 and 3.3):
//     global-atomic   one 64-bit atomicAdd in global memory (done in L2) per value. Uniform: 256
//                     addresses absorb the stream slowly; skewed: 90% of all atomics queue on one
//                     address. Prediction: 0.1x copy uniform, under 0.01x skewed.
//     shared-atomic   each block counts into its own histogram in shared memory (32-bit counters,
//                     fast on-chip atomics), then adds its 256 counts to global memory: n atomics
//                     in shared memory, 256 per block in L2. Uniform: near the read bandwidth;
//                     skewed: within a warp ~29 of 32 lanes hit the hot counter and serialize.
//                     Prediction: 0.8x copy uniform, 0.2x skewed.
//     run-aggregate   (AUTO) each thread remembers the last value it saw and how often it repeated,
//                     and adds a run with one atomic when the value changes; each warp has its own
//                     sub-histogram, so warps never contend with each other. Skewed data now sends
//                     ~6 atomics per 32 values to shared memory, ~3 on the hot counter.
//                     Prediction: 0.85x copy uniform, 0.8x skewed; about 1.0x CUB on both.
//   Roofline: 4 bytes read per value, against the read rate (the copy ceiling of the same run);
//   the atomics' throughput and collisions are what keep a version from it. The last row of each
//   table is cub::DeviceHistogram::HistogramEven (int32 samples, 257 levels 0..256, int counters).
//
// The kernels to read: gpuops_cuda.cuh, section 3.1 (bin_counter, for_each_i32), 3.2
// (histogram_global), 3.3 (histogram_shared) and 3.5 (histogram_launch).
// Build: nvcc -O3 -arch=sm_90 -I. examples/05_histogram.cu -o histogram. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_REDUCE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cub/cub.cuh>

#include <functional>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using bench::fmt;
using std::string;
using std::vector;

static const int64_t n = (int64_t(1) << 26) + 5;
static const int32_t bins = 256;

int main() {
  if (!check::have_gpu()) {
    printf("05_histogram needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  const double copy = timer.copy_gbps(size_t(1) << 30);
  printf("05 histogram: n = %lld int32 values into %d bins, seed %llu (GPUOPS_SEED replays it)\n", (long long)n, bins,
         (unsigned long long)seed);
  printf("device: %s, %d SMs\n", dev.name, dev.sms);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written); a histogram only reads\n", copy);
  fflush(stdout);

  check::rng rng(seed);
  int32_t *d_x = nullptr;
  int64_t *d_counts = nullptr;
  int *d_cub_counts = nullptr;
  CHECK_CUDA(cudaMalloc(&d_x, n * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&d_counts, bins * sizeof(int64_t)));
  CHECK_CUDA(cudaMalloc(&d_cub_counts, bins * sizeof(int)));
  size_t cub_bytes = 0;
  CHECK_CUDA(cub::DeviceHistogram::HistogramEven(nullptr, cub_bytes, d_x, d_cub_counts, bins + 1, 0, bins, n));
  void *d_cub = nullptr;
  CHECK_CUDA(cudaMalloc(&d_cub, cub_bytes));

  const gpuops_algo algos[] = {GPUOPS_ALGO_GLOBAL_ATOMIC, GPUOPS_ALGO_SHARED_ATOMIC, GPUOPS_ALGO_RUN_AGGREGATE, GPUOPS_ALGO_AUTO};
  const double bytes = 4.0 * (double)n;
  bool ok = true;
  string best_name;
  double best_us = NAN, best_cpu_us = NAN, best_cub_us = NAN;
  for (int skewed = 0; skewed < 2; ++skewed) {
    vector<int32_t> x(n);
    const int32_t hot = (int32_t)rng.below(bins);
    for (auto &v : x) v = skewed && rng.below(10) < 9 ? hot : (int32_t)rng.below(bins);
    CHECK_CUDA(cudaMemcpy(d_x, x.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice));
    vector<int64_t> want(bins);
    const double cpu_us = bench::host_us([&] { return gpuops_cpu_histogram_i32(want.data(), x.data(), n, bins); });

    bench::table table;
    table.head = {"version", "time (us)", "GB/s read", "x copy", "x cpu", "x prev", "check"};
    table.add({"cpu", bench::num(cpu_us), bench::num(bytes / (cpu_us * 1e3)), fmt("%.3f", bytes / (cpu_us * 1e3) / copy), "1.00x", "-",
               "reference"});
    double prev = cpu_us, cub_us = NAN, sk_best = NAN;
    string sk_name;
    auto row = [&](const string &name, std::function<void()> run, std::function<string()> validate, int reps) {
      run();
      CHECK_CUDA(cudaDeviceSynchronize());
      const string chk = validate();
      const double us = chk == "ok" ? 1e3 * timer.median_ms(run, reps, 1) : NAN;
      const double gbps = bytes / (us * 1e3);
      table.add({name, bench::num(us), bench::num(gbps), fmt("%.3f", gbps / copy), bench::num(cpu_us / us, "x"), bench::num(prev / us, "x"), chk});
      prev = us;
      return us;
    };
    for (gpuops_algo a : algos) {
      // One global atomic per value on one hot address is slow: fewer repetitions there.
      const int reps = a == GPUOPS_ALGO_GLOBAL_ATOMIC ? 5 : 25;
      const double us = row(
          gpuops_algo_name(a), [&] { CHECK_OK(gpuops_histogram_i32(d_counts, d_x, n, bins, a, nullptr)); },
          [&] {
            const vector<int64_t> got = check::to_host(d_counts, bins);
            for (int32_t b = 0; b < bins; ++b)
              if (got[b] != want[b]) return fmt("FAIL bin %d: %lld, want %lld", b, (long long)got[b], (long long)want[b]);
            return string("ok");
          },
          reps);
      ok = ok && !isnan(us);
      if (us < sk_best || isnan(sk_best)) sk_best = us, sk_name = gpuops_algo_name(a);
    }
    cub_us = row(
        "cub::DeviceHistogram::HistogramEven",
        [&] {
          size_t b = cub_bytes;
          CHECK_CUDA(cub::DeviceHistogram::HistogramEven(d_cub, b, d_x, d_cub_counts, bins + 1, 0, bins, n));
        },
        [&] {
          const vector<int> got = check::to_host(d_cub_counts, bins);
          for (int32_t b = 0; b < bins; ++b)
            if (got[b] != want[b]) return fmt("differs at bin %d", b);  // CUB is the comparison, not the reference
          return string("ok");
        },
        25);
    printf("\n%s data%s:\n", skewed ? "skewed" : "uniform", skewed ? " (90% of the values are one value)" : "");
    table.print();
    printf("best: %s at %.3fx cub\n", sk_name.c_str(), cub_us / sk_best);
    if (skewed) best_name = sk_name, best_us = sk_best, best_cpu_us = cpu_us, best_cub_us = cub_us;
  }

  // The result line reports the skewed data, the case contention decides.
  const double gbps = bytes / (best_us * 1e3);
  printf("\nskewed data, best version: %s, %.3fx cub\n", best_name.c_str(), best_cub_us / best_us);
  printf("result: 05 histogram | %s | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", best_name.c_str(), gbps, gbps / copy, best_cpu_us / best_us,
         ok ? "ok" : "FAIL");
  for (void *p : {(void *)d_x, (void *)d_counts, (void *)d_cub_counts, d_cub}) CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}
