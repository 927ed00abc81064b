// SPDX-License-Identifier: MIT
// examples/01_vector_add.cu - step 1 of the learning path: vector add and scalar ops.
//
// What it teaches
//   c = a + b in f32 is 1 flop per element and 12 bytes of memory traffic (read a and b, write c).
//   An H100 does some 20 f32 flops in the time it moves one byte, so the arithmetic is free and the op
//   runs at whatever speed memory allows: its roofline is the device-to-device copy bandwidth
//   (bytes read + bytes written), measured below in the same run. The two scalar ops are just as
//   memory-bound: y = x + s with y == x (an array increment) moves 8 bytes per element, and
//   y = a*x + y (one fma) moves 12 (x and y read, y written).
//
// The kernels to read: gpuops_cuda.cuh, sections 2.2 (map_naive, map_grid_stride) and 2.3
// (map_vectorized), and launch_map in 2.5, which picks among them (the policy: 2.4):
//   map_naive        one element per thread, ceil(n / 256) blocks. The index is built in 64 bits,
//                    (int64_t)blockIdx.x * blockDim.x + threadIdx.x: in 32 bits it would wrap past
//                    2^31 elements, a size real programs reach.
//   map_grid_stride  just enough blocks to fill every SM once; each thread walks the array with a
//                    stride of the whole grid, so the launch no longer grows with n. Expect it about
//                    as fast as naive: both issue 4-byte accesses, a couple per thread at a time,
//                    and the bytes in flight are what limits a memory-bound kernel.
//   map_vectorized   every access moves 16 bytes (4 floats, one 128-bit load or store) and each
//                    thread keeps two vectors per input in flight: 8x the bytes in flight per
//                    thread, and a quarter of the instructions per byte. A scalar head runs until
//                    the pointers reach a 16-byte boundary, a scalar tail finishes the last n % 4
//                    (n = 2^26 + 3 here, so it runs). The launch is naive's again: one block per
//                    tile of 2 x 256 vectors, no loop (a grid-stride loop over the same tiles
//                    measured 3-7% slower: tools/tune_engine.cu on an H100 80GB HBM3,
//                    2026-11-22); maps too small to fill the GPU at that shape take one vector a
//                    thread instead, or half a vector (the policy, 2.4; not this example's size).
//                    This needs all pointers at the same offset
//                    modulo 16 bytes: the last add row shifts a by one float, AUTO falls back to
//                    grid-stride there, and asking for VECTORIZED is refused with
//                    GPUOPS_ERR_MISALIGNED.
//
// Every GPU version is checked against the CPU implementation (gpuops_cpu_*) before it is timed.
// Build: nvcc -O3 -arch=sm_90 -I. examples/01_vector_add.cu -o vector_add. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_ELEMENTWISE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using bench::fmt;
using std::string;
using std::vector;

static const int64_t n = (int64_t(1) << 26) + 3;

template <class T> static T *device_array(int64_t count) {
  T *d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, (size_t)count * sizeof(T)));
  return d;
}

static void upload(float *d, const vector<float> &h) {
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
}

// A copy of device array d that starts one float past a 16-byte boundary (cudaMalloc aligns to 256).
static float *copy_offset_by_one(const float *d, int64_t count) {
  float *base = device_array<float>(count + 1);
  CHECK_CUDA(cudaMemcpy(base + 1, d, (size_t)count * sizeof(float), cudaMemcpyDeviceToDevice));
  return base + 1;
}


// One op: its bytes per element, its output, and how to run it. prepare() runs before the
// validation run: it poisons the output, or, for an op in place, restores the input (there the
// output is the input, and the input differs from the result, so an unwritten element still fails).
struct version {
  string name;
  std::function<gpuops_status()> run;
};
struct op_case {
  const char *name;
  double bytes;  // per element: each input read once, the output written once
  const float *out;
  std::function<void()> prepare;
  vector<float> want;  // starts as the in-place input, the CPU turns it into the result
  std::function<gpuops_status(float *want)> cpu;
  vector<version> versions;
};

// The timed row of one GPU version, after its validation run.
struct measured {
  double us = NAN;
  string check;
};

static measured measure(bench::timer &timer, const op_case &c, const version &v) {
  c.prepare();
  const gpuops_status st = v.run();
  if (st != GPUOPS_OK) return {NAN, string("FAIL ") + gpuops_status_string(st)};
  const vector<float> got = check::to_host(c.out, n);
  const check::result r = check::compare(got.data(), c.want.data(), n, check::default_tolerance<float>());
  return {1e3 * timer.median_ms([&] { CHECK_OK(v.run()); }), check::verdict(r)};
}

// The table: GB/s counts the bytes the op must move, % copy compares with the measured ceiling.
struct report {
  double copy_gbps;
  bench::table table;
  bool ok = true;
  explicit report(double copy) : copy_gbps(copy) {
    table.head = {"op", "version", "time (us)", "GB/s", "% copy", "x cpu", "x prev", "check"};
  }
  double gbps(double bytes, double us) const { return bytes * (double)n / (us * 1e3); }
  void row(const char *op, const string &ver, double us, double bytes, double cpu_us, double prev_us, const string &chk) {
    const double g = gbps(bytes, us);
    table.add({op, ver, bench::num(us), bench::num(g), bench::num(100.0 * g / copy_gbps, "%"), bench::num(cpu_us / us, "x"), bench::num(prev_us / us, "x"),
               chk});
  }
};

// The fastest GPU version of an op, for the summary line.
struct best_of {
  string name;
  double us = NAN, cpu_us = NAN;
};

// One op's rows: the CPU reference, then each GPU version, each against the row above.
static best_of run_case(report &rep, bench::timer &timer, op_case &c) {
  best_of best;
  best.cpu_us = bench::host_us([&] { return c.cpu(c.want.data()); });
  rep.row(c.name, "cpu", best.cpu_us, c.bytes, best.cpu_us, NAN, "reference");
  double prev = best.cpu_us;
  for (const version &v : c.versions) {
    const measured m = measure(timer, c, v);
    rep.row(c.name, v.name, m.us, c.bytes, best.cpu_us, prev, m.check);
    rep.ok = rep.ok && m.check == "ok";
    if (m.us < best.us || (isnan(best.us) && !isnan(m.us))) best.name = v.name, best.us = m.us;
    prev = m.us;
  }
  return best;
}

int main() {
  if (!check::have_gpu()) {
    printf("01_vector_add needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  report rep(timer.copy_gbps(size_t(1) << 30));
  printf("01 vector add and scalar ops: n = %lld f32 elements, seed %llu (GPUOPS_SEED replays it)\n", (long long)n,
         (unsigned long long)seed);
  printf("device: %s, %d SMs\n", dev.name, dev.sms);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written)\n\n", rep.copy_gbps);
  fflush(stdout);

  check::rng rng(seed);
  vector<float> a(n), b(n);
  check::fill_uniform(a, rng, -10.0, 10.0);
  check::fill_uniform(b, rng, -10.0, 10.0);
  float *d_a = check::to_device(a), *d_b = check::to_device(b), *d_c = device_array<float>(n);
  float *d_y = device_array<float>(n);       // the in-place array of add_scalar and axpy
  float *d_a1 = copy_offset_by_one(d_a, n);  // a again, one float off the 16-byte grid
  const float s = 1.5f, alpha = 2.0f;

  auto poison_c = [&] { check::poison(d_c, n * sizeof(float)); };
  // The three versions of an op, run through one call that takes the version.
  auto versions = [](std::function<gpuops_status(gpuops_algo)> run) {
    vector<version> v;
    for (gpuops_algo algo : {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_GRID_STRIDE, GPUOPS_ALGO_VECTORIZED})
      v.push_back({gpuops_algo_name(algo), [run, algo] { return run(algo); }});
    return v;
  };

  // Each op: name, bytes per element, output, before the validation run, the CPU's starting
  // value and call, and the GPU call that takes the version.
  vector<op_case> cases = {
      {"add", 12, d_c, poison_c,
       vector<float>(n), [&](float *w) { return gpuops_cpu_add_f32(w, a.data(), b.data(), n); },
       versions([&](gpuops_algo al) { return gpuops_add_f32(d_c, d_a, d_b, n, al, nullptr); })},
      {"add_scalar (in place)", 8, d_y, [&] { upload(d_y, a); },
       a, [&](float *w) { return gpuops_cpu_add_scalar_f32(w, w, n, s); },
       versions([&](gpuops_algo al) { return gpuops_add_scalar_f32(d_y, d_y, n, s, al, nullptr); })},
      {"axpy", 12, d_y, [&] { upload(d_y, b); },
       b, [&](float *w) { return gpuops_cpu_axpy_f32(w, a.data(), n, alpha); },
       versions([&](gpuops_algo al) { return gpuops_axpy_f32(d_y, d_a, n, alpha, al, nullptr); })},
  };
  cases[0].versions.push_back(
      {"auto, a offset by 1 element", [&] { return gpuops_add_f32(d_c, d_a1, d_b, n, GPUOPS_ALGO_AUTO, nullptr); }});

  vector<best_of> best;
  for (op_case &c : cases) best.push_back(run_case(rep, timer, c));
  rep.table.print();

  // The same misaligned pointers, asking for the 16-byte version by name: refused before any launch.
  const gpuops_status st = gpuops_add_f32(d_c, d_a1, d_b, n, GPUOPS_ALGO_VECTORIZED, nullptr);
  const bool refused = st == GPUOPS_ERR_MISALIGNED;
  printf("\nadd, vectorized asked for with a offset by 1 element: %s (%s)\n", gpuops_status_string(st),
         refused ? "expected: a sits 4 bytes past a 16-byte boundary, b and c do not"
                 : "FAIL: expected GPUOPS_ERR_MISALIGNED");
  rep.ok = rep.ok && refused;

  const best_of &add = best[0];
  const double gbps = rep.gbps(cases[0].bytes, add.us);
  printf("result: 01 vector add | %s | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", add.name.c_str(), gbps,
         gbps / rep.copy_gbps, add.cpu_us / add.us, rep.ok ? "ok" : "FAIL");

  for (float *p : {d_a, d_b, d_c, d_y, d_a1 - 1}) CHECK_CUDA(cudaFree(p));
  return rep.ok ? 0 : 1;
}
