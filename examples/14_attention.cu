// SPDX-License-Identifier: MIT
// examples/14_attention.cu - step 14 of the learning path: attention, from the naive three-step
// form to flash attention 2.
//
// What it teaches
//   O = softmax(scale Q K^T + mask) V is two matrix products with a softmax between them. Written
//   as such (naive), the seqlen x seqlen scores go to memory and back: at seqlen 4096 that is 64 MiB
//   of f32 per head, four passes over it, and memory-bound. Flash attention never stores them: it
//   streams tiles of K and V past tiles of Q and keeps the softmax "online" (step 7's running max
//   and sum, rescaling what was accumulated when the max grows), so the scores live in registers
//   and the work becomes compute-bound on the tensor cores. The versions:
//   naive    S = scale Q K^T with step 12's GEMM (f32 S), the causal mask, step 7's softmax in
//            place, P rounded to bf16, O = P V with the GEMM; one head at a time, its S in the
//            workspace (the "memory" column shows it).
//   flash    flash attention 1's loop order on CUDA cores: K/V tiles outer, Q rows inner, the
//            running O, max and sum of every row read, rescaled and written back to memory per
//            K/V tile. No seqlen^2 memory, but O's traffic and no tensor cores.
//   flash2   flash attention 2: Q tiles outer (a block per 128 rows, a warp per 32 at head_dim
//            <= 128), K/V tiles double-buffered by cp.async into swizzled shared memory, S and P V
//            on mma.sync with ldmatrix, the softmax in registers (one FFMA and one exp2 a score, O
//            rescaled only when a row's maximum grows), O divided by the row sum once at the end.
//            The yardstick is PyTorch SDPA's flash backend (bench/torch_attention.py, same run).
//   wgmma    the same algorithm on Hopper's warpgroup MMA (sm_90a): a producer warpgroup copies
//            the tiles while two consumer warpgroups of 64 rows multiply, S = Q K^T straight from
//            shared memory and O += P V with P from registers, the next tile's scores overlapping
//            this tile's softmax. The yardstick is SDPA's cuDNN backend.
//   auto     what AUTO picks here (wgmma on compute capability 9.0 with sm_90a code; else flash2
//            on sm_80+).
//   backward flash attention 2's backward: flash on CUDA cores (deterministic), flash2 on mma.sync
//            (dK, dV per key tile in registers, dQ by f32 atomics), wgmma the same blocks on
//            Hopper's warpgroup MMA (a producer warpgroup, two consumers of 64 keys each).
//   The CPU row is the f32 reference (double accumulation) on 32 rows, scaled to all rows.
// The kernels to read: gpuops_cuda.cuh section 1.3 (online_softmax), 1.4 (cp.async, ldmatrix,
// mma.sync, swizzle_chunk; mbarriers, wgmma), then section 10: 10.2 attn_flash_fwd, 10.3
// attn_flash2_fwd, attn_wgmma_fwd and the backwards (attn_flash2_bwd, attn_wgmma_bwd), 10.5 the
// launcher (NAIVE's calls of the GEMM and the softmax).
// Validation: O is poisoned with NaN first; 32 rows (the first and last 8 of the first and last
// head) must match the f32 CPU reference of the same bf16 inputs within 1e-2 + 1e-2 |ref|; the
// "error" column is the largest absolute difference.
// Build: nvcc -O3 -arch=sm_90a -I. examples/14_attention.cu -o attention (the Makefile does this).
// GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_ATTENTION
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <chrono>
#include <string>
#include <vector>

#include "../bench/harness.h"
#include "../tests/attention_ops.h"
#include "../tests/check.h"

using bench::fmt;
using bench::num;
using std::string;
using std::vector;

int main() {
  if (!check::have_gpu()) {
    printf("14_attention needs a CUDA GPU; none was found.\n");
    return 0;
  }
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer timer;
  const int64_t B = 4, S = 2048, Hq = 16, Hkv = 16, D = 128;
  const bool causal = true;
  const gpuops_attention_dims d = gpuops_attention_dims_bshd(B, S, S, Hq, Hkv, D);
  const gpuops_attention_mask mask = causal ? GPUOPS_ATTN_MASK_CAUSAL : GPUOPS_ATTN_MASK_NONE;
  const float scale = gpuops_attention_default_scale(D);
  const int64_t n = B * S * Hq * D, rows = B * Hq * S;
  printf("attention bf16, batch %lld, seqlen %lld, %lld heads, head_dim %lld, causal: %.1f GFLOP forward (causal half counted)\n\n", (long long)B,
         (long long)S, (long long)Hq, (long long)D, attn_flops(d, causal, false) / 1e9);
  // Host data in bf16 and its f32 copy for the reference.
  check::rng r(seed);
  vector<gpuops_bf16> hq(n), hk(n), hv(n);
  for (auto *t : {&hq, &hk, &hv}) check::fill_uniform(*t, r, -1.5, 1.5);
  gpuops_bf16 *q = check::to_device(hq), *k = check::to_device(hk), *v = check::to_device(hv), *o = check::to_device(hq);
  float *lse;
  CHECK_CUDA(cudaMalloc(&lse, rows * 4));
  // The reference: rows [r0, r0 + 8) of heads 0 and Hq - 1, batch 0, in f32 (double inside).
  struct range { int64_t h, r0; };
  const range ranges[4] = {{0, 0}, {0, S - 8}, {Hq - 1, 0}, {Hq - 1, S - 8}};
  vector<vector<float>> want(4);
  double cpu_us = 0.0;
  for (int g = 0; g < 4; ++g) {
    const int64_t sk = causal ? ranges[g].r0 + 8 : S;
    gpuops_attention_dims s = gpuops_attention_dims_bshd(1, 8, sk, 1, 1, D);
    vector<float> fq(8 * D), fk(sk * D), fv(sk * D);
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t e = 0; e < D; ++e) fq[i * D + e] = gpuops_bf16_to_f32(hq[(ranges[g].r0 + i) * d.q_stride[1] + ranges[g].h * D + e]);
    for (int64_t j = 0; j < sk; ++j)
      for (int64_t e = 0; e < D; ++e) {
        fk[j * D + e] = gpuops_bf16_to_f32(hk[j * d.k_stride[1] + ranges[g].h * D + e]);
        fv[j * D + e] = gpuops_bf16_to_f32(hv[j * d.v_stride[1] + ranges[g].h * D + e]);
      }
    want[g].resize(8 * D);
    cpu_us += bench::host_us([&] { return gpuops_cpu_attention_fwd_f32(want[g].data(), nullptr, fq.data(), fk.data(), fv.data(), &s, scale, mask); });
  }
  // The CPU's time for all rows: 32 rows measured, scaled by rows / 32 (causal rows average S / 2 keys; the sample's do too).
  const double cpu_ms = cpu_us / 1e3 * (double)rows / 32.0;
  bench::table t;
  t.head = {"version", "time", "TFLOP/s", "memory", "max error", "check", "x cpu", "x previous"};
  t.add({"cpu f32 (32 rows, scaled)", num(cpu_ms, " ms"), num(attn_flops(d, causal, false) / (cpu_ms * 1e9)), "-", "-", "reference", "1.00", "-"});
  double prev = cpu_ms;
  const size_t io = (size_t)4 * n * 2 + rows * 4;
  for (gpuops_algo al : {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_FLASH, GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA, GPUOPS_ALGO_AUTO}) {
    const size_t wsb = gpuops_attention_fwd_workspace_size(&d, al);
    void *ws = nullptr;
    if (wsb) CHECK_CUDA(cudaMalloc(&ws, wsb));
    check::poison(o, n * 2);
    const gpuops_status st = gpuops_attention_fwd_bf16(o, lse, q, k, v, &d, scale, mask, ws, wsb, al, nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (st != GPUOPS_OK) {
      t.add({gpuops_algo_name(al), "-", "-", "-", "-", gpuops_status_string(st), "-", "-"});
      cudaFree(ws);
      continue;
    }
    const vector<gpuops_bf16> got = check::to_host(o, n);
    double err = 0.0;
    bool ok = true;
    for (int g = 0; g < 4; ++g)
      for (int64_t i = 0; i < 8; ++i)
        for (int64_t e = 0; e < D; ++e) {
          const double gv = gpuops_bf16_to_f32(got[(ranges[g].r0 + i) * d.o_stride[1] + ranges[g].h * D + e]), w = want[g][i * D + e];
          const double diff = fabs(gv - w);
          ok = ok && diff <= 1e-2 + 1e-2 * fabs(w);
          err = diff > err || diff != diff ? diff : err;
        }
    const double ms = timer.median_ms([&] { CHECK_OK(gpuops_attention_fwd_bf16(o, lse, q, k, v, &d, scale, mask, ws, wsb, al, nullptr)); });
    t.add({gpuops_algo_name(al), num(ms, " ms"), num(attn_flops(d, causal, false) / (ms * 1e9)), num((io + wsb) / 1048576.0, " MiB"),
           fmt("%.2e", err), ok ? "ok" : "FAIL", num(cpu_ms / ms), num(prev / ms)});
    prev = ms;
    cudaFree(ws);
  }
  {  // the backward from AUTO's O and lse, each version
    gpuops_bf16 *dout = check::to_device(hv), *dq, *dk, *dv;
    CHECK_CUDA(cudaMalloc(&dq, n * 2)); CHECK_CUDA(cudaMalloc(&dk, n * 2)); CHECK_CUDA(cudaMalloc(&dv, n * 2));
    const size_t fw = gpuops_attention_fwd_workspace_size(&d, GPUOPS_ALGO_AUTO);
    void *fws = nullptr;
    CHECK_CUDA(cudaMalloc(&fws, fw));
    CHECK_OK(gpuops_attention_fwd_bf16(o, lse, q, k, v, &d, scale, mask, fws, fw, GPUOPS_ALGO_AUTO, nullptr));
    for (gpuops_algo al : {GPUOPS_ALGO_FLASH, GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA}) {
      const size_t wsb = gpuops_attention_bwd_workspace_size(&d, al);
      void *ws = nullptr;
      if (wsb) CHECK_CUDA(cudaMalloc(&ws, wsb));
      const gpuops_status st = gpuops_attention_bwd_bf16(dq, dk, dv, dout, q, k, v, o, lse, &d, scale, mask, ws, wsb, al, nullptr);
      CHECK_CUDA(cudaDeviceSynchronize());
      const string name = string("backward ") + gpuops_algo_name(al);
      if (st != GPUOPS_OK) {
        t.add({name, "-", "-", "-", "-", gpuops_status_string(st), "-", "-"});
      } else {
        const double ms =
            timer.median_ms([&] { CHECK_OK(gpuops_attention_bwd_bf16(dq, dk, dv, dout, q, k, v, o, lse, &d, scale, mask, ws, wsb, al, nullptr)); }, 5, 1);
        t.add({name, num(ms, " ms"), num(attn_flops(d, causal, true) / (ms * 1e9)), num((io + 4 * n * 2 + wsb) / 1048576.0, " MiB"), "-", "tests", "-", "-"});
      }
      cudaFree(ws);
    }
    cudaFree(dout), cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(fws);
  }
  t.print();
  printf("\nmemory: q, k, v, o and lse (%.0f MiB) plus the version's workspace. PyTorch's numbers for the same shapes: bench/torch_attention.py.\n",
         io / 1048576.0);
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse);
  return 0;
}
