// SPDX-License-Identifier: MIT
// bench/bench_attention.cu - attention, O = softmax(scale Q K^T + mask) V, bf16 (f32 accumulation),
// every version on the shapes of bench/torch_attention.py (PyTorch SDPA's flash, memory-efficient
// and cuDNN backends, run by bench/run.sh beside this program and compared through the CSVs):
//   forward: seqlen 512 .. 16384 with batch = 16384 / seqlen (16k tokens: the GPU filled), 32 query
//   heads over 32, 8 and 1 kv heads (MHA, GQA, MQA), head_dim 64 and 128, causal and not, [B,H,S,D];
//   FLASH2 and WGMMA (AUTO's pick on compute capability 9.0 with sm_90a code; FLASH2 elsewhere on
//   sm_80+) everywhere, the learning-path versions NAIVE and FLASH at
//   seqlen <= 1024 (MHA, head_dim 128; NAIVE's S is one head's seqlen^2 f32 + bf16);
//   backward: FLASH2 and WGMMA (tensor cores; AUTO's pick on compute capability 9.0 with sm_90a code)
//   on every shape, FLASH (CUDA cores) where NAIVE and FLASH run (--full: everywhere).
// TFLOP/s as flash attention's papers count: 4 B H Sq Sk D for the forward, half of it causal, the
// backward 2.5x the forward. Each version is checked before it is timed against the CPU reference
// (gpuops_cpu_attention_*) on 4 rows at each end of the first and the last head; the backward by
// tests/test_attention.cu (its check column reads "tests"), WGMMA's also against FLASH2's gradients
// of the same call (the first 2^20 elements of dQ, dK and dV). Timing as
// bench/harness.h (L2 flushed before each run, median of 25 after warm-up; 5 runs for a call
// slower than 50 ms). Writes every row as CSV.
//   usage: bench_attention [--csv PATH] [--quick] [--full]   (--quick: seqlen 1024 and 4096 only)
#define GPUOPS_ONLY_ATTENTION
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string.h>

#include <string>
#include <vector>

#include "../bench/harness.h"
#include "attention_ops.h"
#include "check.h"

using std::string;
using std::vector;
using bf16 = gpuops_bf16;
using bench::fmt;
using bench::num;

// "ok" or why: rows [r0, r0 + 4) of query head h (batch 0) of the device output o against the CPU.
static string check_rows(const gpuops_attention_dims &d, bool causal, float scale, const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *o) {
  const gpuops_attention_mask mask = causal ? GPUOPS_ATTN_MASK_CAUSAL : GPUOPS_ATTN_MASK_NONE;
  const int64_t group = d.heads_q / d.heads_kv;
  for (int64_t h : {(int64_t)0, d.heads_q - 1})
    for (int64_t r0 : {(int64_t)0, d.seqlen_q - 4}) {
      gpuops_attention_dims s = gpuops_attention_dims_bshd(1, 4, causal ? r0 + 4 + d.seqlen_k - d.seqlen_q : d.seqlen_k, 1, 1, d.head_dim);
      const int64_t D = d.head_dim, sk = s.seqlen_k;
      vector<bf16> hq(4 * D), hk(sk * D), hv(sk * D), ho(4 * D), want(4 * D);
      auto rows_of = [&](bf16 *dst, const bf16 *src, int64_t stride, int64_t n) {
        CHECK_CUDA(cudaMemcpy2D(dst, D * 2, src, stride * 2, D * 2, n, cudaMemcpyDeviceToHost));
      };
      rows_of(hq.data(), q + r0 * d.q_stride[1] + h * d.q_stride[2], d.q_stride[1], 4);
      rows_of(ho.data(), o + r0 * d.o_stride[1] + h * d.o_stride[2], d.o_stride[1], 4);
      rows_of(hk.data(), k + (h / group) * d.k_stride[2], d.k_stride[1], sk);
      rows_of(hv.data(), v + (h / group) * d.v_stride[2], d.v_stride[1], sk);
      CHECK_OK(gpuops_cpu_attention_fwd_bf16(want.data(), nullptr, hq.data(), hk.data(), hv.data(), &s, scale, mask));
      const check::result res = check::compare(ho.data(), want.data(), 4 * D, {1e-2, 1e-2});
      if (!res.ok()) return check::verdict(res);
    }
  return "ok";
}

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_attention");
  bool full = false;
  for (int i = 1; i < argc; ++i) full = full || !strcmp(argv[i], "--full");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer timer;
  printf("attention, bf16, f32 accumulation, [B, H, S, D], batch x seqlen = 16384 tokens, 32 query heads\n\n");
  bench::table t;
  t.head = {"dir", "seqlen", "batch", "heads_q", "heads_kv", "head_dim", "causal", "version", "time_us", "tflops", "check", "device"};
  const vector<int64_t> seqlens = opt.quick ? vector<int64_t>{1024, 4096} : vector<int64_t>{512, 1024, 2048, 4096, 8192, 16384};
  for (int64_t S : seqlens)
    for (int64_t D : {64, 128})
      for (int64_t Hkv : {32, 8, 1})
        for (int causal = 0; causal < 2; ++causal) {
          const int64_t B = 16384 / S > 0 ? 16384 / S : 1, Hq = 32;
          const gpuops_attention_dims d = gpuops_attention_dims_bhsd(B, S, S, Hq, Hkv, D);
          const gpuops_attention_mask mask = causal ? GPUOPS_ATTN_MASK_CAUSAL : GPUOPS_ATTN_MASK_NONE;
          const float scale = gpuops_attention_default_scale(D);
          const int64_t nq = B * Hq * S * D, nk = B * Hkv * S * D, rows = B * Hq * S;
          bf16 *q, *k, *v, *o, *dout, *dq, *dk, *dv;
          float *lse;
          CHECK_CUDA(cudaMalloc(&q, nq * 2)); CHECK_CUDA(cudaMalloc(&k, nk * 2)); CHECK_CUDA(cudaMalloc(&v, nk * 2)); CHECK_CUDA(cudaMalloc(&o, nq * 2));
          CHECK_CUDA(cudaMalloc(&lse, rows * 4));
          bench::fill_uniform(q, nq, seed, -1.5f, 1.5f), bench::fill_uniform(k, nk, seed + 1, -1.5f, 1.5f), bench::fill_uniform(v, nk, seed + 2, -1.0f, 1.0f);
          const bool learning = S <= 1024 && D == 128 && Hkv == 32;
          vector<gpuops_algo> versions = {GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA};
          if (learning) versions.insert(versions.begin(), {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_FLASH});
          for (gpuops_algo al : versions) {
            const size_t wsb = gpuops_attention_fwd_workspace_size(&d, al);
            void *ws = nullptr;
            if (wsb) CHECK_CUDA(cudaMalloc(&ws, wsb));
            auto run = [&] { CHECK_OK(gpuops_attention_fwd_bf16(o, lse, q, k, v, &d, scale, mask, ws, wsb, al, nullptr)); };
            check::poison(o, nq * 2);
            const gpuops_status st = gpuops_attention_fwd_bf16(o, lse, q, k, v, &d, scale, mask, ws, wsb, al, nullptr);
            CHECK_CUDA(cudaDeviceSynchronize());
            string verdict = st == GPUOPS_OK ? check_rows(d, causal, scale, q, k, v, o) : gpuops_status_string(st);
            double ms = NAN;
            if (st == GPUOPS_OK) {
              const double once = timer.median_ms(run, 1, 0);
              ms = timer.median_ms(run, once > 50.0 ? 5 : 25, once > 50.0 ? 0 : 3);
            }
            const double tf = attn_flops(d, causal, false) / (ms * 1e9);
            t.add({"fwd", fmt("%lld", (long long)S), fmt("%lld", (long long)B), "32", fmt("%lld", (long long)Hkv), fmt("%lld", (long long)D),
                   causal ? "1" : "0", gpuops_algo_name(al), num(ms * 1e3), num(tf), verdict, dev.name});
            printf("fwd S %5lld D %3lld Hkv %2lld causal %d %-6s %10s us %8s TFLOP/s  %s\n", (long long)S, (long long)D, (long long)Hkv, causal,
                   gpuops_algo_name(al), num(ms * 1e3).c_str(), num(tf).c_str(), verdict.c_str());
            cudaFree(ws);
          }
          {  // the backward from FLASH2's O and lse: FLASH2 everywhere, FLASH (CUDA cores) where the forward's learning versions run
            CHECK_OK(gpuops_attention_fwd_bf16(o, lse, q, k, v, &d, scale, mask, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr));
            CHECK_CUDA(cudaMalloc(&dout, nq * 2)); CHECK_CUDA(cudaMalloc(&dq, nq * 2)); CHECK_CUDA(cudaMalloc(&dk, nk * 2)); CHECK_CUDA(cudaMalloc(&dv, nk * 2));
            bench::fill_uniform(dout, nq, seed + 3, -1.0f, 1.0f);
            vector<gpuops_algo> bwd_versions = {GPUOPS_ALGO_FLASH2, GPUOPS_ALGO_WGMMA};
            if (learning || full) bwd_versions.insert(bwd_versions.begin(), GPUOPS_ALGO_FLASH);
            // WGMMA's gradients against FLASH2's of the same call: the first 2^20 elements of dQ, dK
            // and dV, the largest difference relative to FLASH2's largest magnitude.
            const size_t ns[3] = {(size_t)std::min<int64_t>(nq, 1 << 20), (size_t)std::min<int64_t>(nk, 1 << 20), (size_t)std::min<int64_t>(nk, 1 << 20)};
            vector<bf16> ref[3];
            for (gpuops_algo al : bwd_versions) {
              const size_t wsb = gpuops_attention_bwd_workspace_size(&d, al);
              void *ws = nullptr;
              if (wsb) CHECK_CUDA(cudaMalloc(&ws, wsb));
              const gpuops_status st = gpuops_attention_bwd_bf16(dq, dk, dv, dout, q, k, v, o, lse, &d, scale, mask, ws, wsb, al, nullptr);
              CHECK_CUDA(cudaDeviceSynchronize());
              string verdict = st == GPUOPS_OK ? "tests" : gpuops_status_string(st);
              if (st == GPUOPS_OK && (al == GPUOPS_ALGO_FLASH2 || al == GPUOPS_ALGO_WGMMA)) {
                bf16 *const got_d[3] = {dq, dk, dv};
                double worst = 0.0;
                for (int x = 0; x < 3; ++x) {
                  vector<bf16> got(ns[x]);
                  CHECK_CUDA(cudaMemcpy(got.data(), got_d[x], ns[x] * 2, cudaMemcpyDeviceToHost));
                  if (al == GPUOPS_ALGO_FLASH2) {
                    ref[x] = got;
                    continue;
                  }
                  if (ref[x].empty()) break;
                  double mx = 0.0, diff = 0.0;
                  for (size_t e = 0; e < ns[x]; ++e) {
                    const double a = check::to_float(ref[x][e]), b = check::to_float(got[e]);
                    mx = std::max(mx, fabs(a)), diff = std::isnan(b) ? INFINITY : std::max(diff, fabs(a - b));
                  }
                  worst = std::max(worst, diff / (mx > 0.0 ? mx : 1.0));
                }
                if (al == GPUOPS_ALGO_WGMMA && !ref[0].empty()) verdict = worst <= 2e-2 ? fmt("ok (vs flash2 %.1e)", worst) : fmt("MISMATCH (vs flash2 %.1e)", worst);
              }
              double ms = NAN;
              if (st == GPUOPS_OK) {
                auto run = [&] { CHECK_OK(gpuops_attention_bwd_bf16(dq, dk, dv, dout, q, k, v, o, lse, &d, scale, mask, ws, wsb, al, nullptr)); };
                const double once = timer.median_ms(run, 1, 0);
                ms = timer.median_ms(run, once > 50.0 ? 5 : 25, once > 50.0 ? 0 : 3);
              }
              const double tf = attn_flops(d, causal, true) / (ms * 1e9);
              t.add({"bwd", fmt("%lld", (long long)S), fmt("%lld", (long long)B), "32", fmt("%lld", (long long)Hkv), fmt("%lld", (long long)D),
                     causal ? "1" : "0", gpuops_algo_name(al), num(ms * 1e3), num(tf), verdict, dev.name});
              printf("bwd S %5lld D %3lld Hkv %2lld causal %d %-6s %10s us %8s TFLOP/s  %s\n", (long long)S, (long long)D, (long long)Hkv, causal,
                     gpuops_algo_name(al), num(ms * 1e3).c_str(), num(tf).c_str(), verdict.c_str());
              cudaFree(ws);
            }
            cudaFree(dout), cudaFree(dq), cudaFree(dk), cudaFree(dv);
          }
          cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse);
        }
  printf("\n");
  t.print();
  t.write_csv(opt.csv);
  return 0;
}
