// SPDX-License-Identifier: MIT
// examples/11_rope.cu - step 11 of the learning path: rotary position embeddings (RoPE) on the queries
// of an attention layer, [tokens, heads, head_dim].
//
// What it teaches
//   RoPE rotates each pair of a head's dims by an angle p * f_i that grows with the token's position
//   p (f_i = base^(-2i / rot_dim)), so that q . k depends on the positions' difference only. It
//   reads x once and writes y once: a copy with a little arithmetic per element, and a sincos per
//   pair. The lessons:
//   1. The layout of a pair. GPT-J (and the paper) pairs adjacent dims (2i, 2i + 1); GPT-NeoX and
//      Llama pair the halves (i, i + rot_dim / 2). Both are handled by 16-byte loads: a thread takes
//      one vector from each half, or two neighbouring vectors, and has V whole pairs either way.
//   2. The math is shared. cos and sin depend on (position, i), not on the head: the naive version
//      computes a frequency (a double exp2) and a sincos for every pair of every head; the fast one
//      computes the frequencies once per thread and cos / sin once per token for 8 heads.
//   3. A cache of cos and sin (vLLM's cos_sin_cache) replaces the math by a load of 8 bytes per pair
//      and token, shared by the heads again: no faster here, because the math was already hidden
//      under the memory traffic.
//   PREDICTION for an H100, written before it ran (measured: docs/learning-path.md, step 11), at
//   16384 tokens x 32 heads x 128 bf16: naive ~0.3x copy (2-byte accesses, math per pair), AUTO
//   ~0.9x in both pairings, with or without the cache.
//
// The kernels to read: gpuops_cuda.cuh section 8.2-8.3: rope_naive, rope_vectorized (its units of
// work, the frequencies per chunk, the heads of a unit), and rope_launch_typed in 8.5.
// Every version is checked against the CPU implementation (gpuops_cpu_rope_fwd_bf16) before it is
// timed. Build: nvcc -O3 -std=c++17 -arch=sm_90 -I. examples/11_rope.cu -o rope. GPUOPS_SEED=N replays.
// Run time on an H100 host: about 10 s, nearly all of it on the CPU (six references of 2^26
// elements, 0.3 to 1.5 s each, and each version's results compared on the host).
#define GPUOPS_ONLY_NORM
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
    printf("11_rope needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  bench::timer timer;
  const double copy = timer.copy_gbps(size_t(1) << 30);
  printf("11 rope, bf16 q of 16384 tokens x 32 heads x 128; seed %llu (GPUOPS_SEED replays it)\n", (unsigned long long)seed);
  printf("device: %s, %d SMs, %.0f MB L2\n", dev.name, dev.sms, dev.l2_bytes / 1e6);
  printf("copy ceiling: %.0f GB/s (device-to-device copy of 1 GiB, bytes read + written)\n", copy);
  fflush(stdout);

  setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line, also into a pipe: a time limit shows where it stopped
  check::rng rng(seed);
  const int64_t tokens = 16384, heads = 32, hd = 128, ld = heads * hd, n = tokens * ld, max_pos = 32768;
  vector<gpuops_bf16> x(n), want(n);
  check::fill_uniform(x, rng, -2.0, 2.0);
  vector<int64_t> pos(tokens);
  for (auto &p : pos) p = rng.below(max_pos);  // a batch of sequences at mixed positions
  vector<float> cs(max_pos * hd);
  for (int64_t p = 0; p < max_pos; ++p)
    for (int64_t i = 0; i < hd / 2; ++i) {
      const double ang = (double)(float)((float)p * (float)exp2(-(double)(2 * i) / hd * log2(10000.0)));
      cs[p * hd + i] = (float)cos(ang), cs[p * hd + hd / 2 + i] = (float)sin(ang);
    }
  gpuops_bf16 *d_x = check::to_device(x), *d_y = nullptr;
  int64_t *d_pos = check::to_device(pos);
  float *d_cs = check::to_device(cs);
  CHECK_CUDA(cudaMalloc(&d_y, n * 2));

  const double bytes = 2.0 * (double)n * 2;
  bench::table t;
  t.head = {"pairing", "angles", "version", "time (us)", "GB/s", "x copy", "x cpu", "x naive", "check"};
  bool ok = true;
  double best_us = NAN, cpu_best = NAN, naive_us = NAN;
  string best;
  for (int pairing = 0; pairing < 2; ++pairing)
    for (int cache = 0; cache < 2; ++cache) {
      const gpuops_rope_pairing pr = (gpuops_rope_pairing)pairing;
      const char *pname = pairing ? "halves (NeoX, Llama)" : "adjacent (GPT-J)";
      const double cpu_us = bench::host_us([&] {
        return gpuops_cpu_rope_fwd_bf16(want.data(), x.data(), pos.data(), cache ? cs.data() : nullptr, tokens, heads, hd, hd, ld, ld, 10000.0f, pr);
      });
      if (!cache) t.add({pname, "on the fly", "cpu", bench::num(cpu_us), bench::num(bytes / (cpu_us * 1e3)), bench::num(bytes / (cpu_us * 1e3) / copy, "x"), "1.00x", "-", "reference"});
      for (gpuops_algo al : {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_AUTO}) {
        auto run = [&] { return gpuops_rope_fwd_bf16(d_y, d_x, d_pos, cache ? d_cs : nullptr, tokens, heads, hd, hd, ld, ld, 10000.0f, pr, al, nullptr); };
        check::poison(d_y, n * 2);
        const gpuops_status st = run();
        CHECK_CUDA(cudaDeviceSynchronize());
        string chk;
        double us = NAN;
        if (st != GPUOPS_OK) {
          chk = string("FAIL ") + gpuops_status_string(st);
        } else {
          const vector<gpuops_bf16> got = check::to_host(d_y, n);
          chk = check::verdict(check::compare(got.data(), want.data(), n, {2e-2, 1.6e-2}));
          us = 1e3 * timer.median_ms([&] { CHECK_OK(run()); });
        }
        ok = ok && chk == "ok";
        if (al == GPUOPS_ALGO_NAIVE) naive_us = us;
        const double g = bytes / (us * 1e3);
        t.add({pname, cache ? "cos/sin cache" : "on the fly", gpuops_algo_name(al), bench::num(us), bench::num(g), bench::num(g / copy, "x"),
               bench::num(cpu_us / us, "x"), bench::num(naive_us / us, "x"), chk});
        if (al == GPUOPS_ALGO_AUTO && !isnan(us) && (isnan(best_us) || us < best_us))
          best_us = us, cpu_best = cpu_us, best = string(pairing ? "halves" : "adjacent") + (cache ? ", cache" : "");
      }
    }
  // Partial rotation (rot_dim 64 of 128, GPT-NeoX's rotary_pct = 0.5) in place, and the backward.
  for (int mode = 0; mode < 2; ++mode) {
    const bool bwd = mode == 1;
    const int64_t rot = bwd ? hd : 64;
    if (bwd) CHECK_OK(gpuops_cpu_rope_bwd_bf16(want.data(), x.data(), pos.data(), nullptr, tokens, heads, hd, rot, ld, ld, 10000.0f, GPUOPS_ROPE_HALVES));
    else CHECK_OK(gpuops_cpu_rope_fwd_bf16(want.data(), x.data(), pos.data(), nullptr, tokens, heads, hd, rot, ld, ld, 10000.0f, GPUOPS_ROPE_HALVES));
    auto run = [&] {
      return bwd ? gpuops_rope_bwd_bf16(d_y, d_x, d_pos, nullptr, tokens, heads, hd, rot, ld, ld, 10000.0f, GPUOPS_ROPE_HALVES, GPUOPS_ALGO_AUTO, nullptr)
                 : gpuops_rope_fwd_bf16(d_y, d_y, d_pos, nullptr, tokens, heads, hd, rot, ld, ld, 10000.0f, GPUOPS_ROPE_HALVES, GPUOPS_ALGO_AUTO, nullptr);
    };
    CHECK_CUDA(cudaMemcpy(d_y, d_x, n * 2, cudaMemcpyDeviceToDevice));
    const gpuops_status st = run();
    CHECK_CUDA(cudaDeviceSynchronize());
    const vector<gpuops_bf16> got = check::to_host(d_y, n);
    const string chk = st != GPUOPS_OK ? string("FAIL ") + gpuops_status_string(st) : check::verdict(check::compare(got.data(), want.data(), n, {2e-2, 1.6e-2}));
    ok = ok && chk == "ok";
    const double us = 1e3 * timer.median_ms([&] { CHECK_OK(run()); });  // in place: rotates again each run (same traffic)
    const double g = bytes / (us * 1e3);
    t.add({"halves", bwd ? "backward" : "rot_dim 64, in place", "auto", bench::num(us), bench::num(g), bench::num(g / copy, "x"), "-", "-", chk});
  }
  t.print();
  const double g = bytes / (best_us * 1e3);
  printf("\nresult: 11 rope | auto (%s) | %.0f GB/s | %.2fx copy | %.0fx cpu | %s\n", best.c_str(), g, g / copy, cpu_best / best_us, ok ? "ok" : "FAIL");
  for (void *p : {(void *)d_x, (void *)d_y, (void *)d_pos, (void *)d_cs}) CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}
