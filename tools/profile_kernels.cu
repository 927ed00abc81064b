// SPDX-License-Identifier: MIT
// tools/profile_kernels.cu - a few launches of one op at a given size, nothing else, for Nsight
// Compute (ncu --launch-skip 2 --launch-count 1 ...) on the kernel the bench reports slow.
//   usage: profile_kernels matmul M N K [algo] | scan N [algo] | cubscan N | softmax ROWS COLS [bf16]
//          | quant N | quantpc N | dequant N | dequantpc N | dequant32 N       (16-bit: f16; pc: 4096 channels)
//          | norm ROWS COLS [bf16]    (LayerNorm forward with gamma and beta, AUTO)
//          | attention S D [causal]   (bf16 [B, H, S, D], B = 16384 / S, 32 heads: AUTO's forward once,
//                                      then four AUTO backwards)
//          (algo: gpuops_algo's number)
#define GPUOPS_ONLY_ELEMENTWISE
#define GPUOPS_ONLY_MATMUL
#define GPUOPS_ONLY_TRANSPOSE
#define GPUOPS_ONLY_SCAN
#define GPUOPS_ONLY_SOFTMAX
#define GPUOPS_ONLY_ATTENTION
#define GPUOPS_ONLY_NORM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const bool mm = strcmp(argv[1], "matmul") == 0;
  const int64_t m = atoll(argv[2]), n = mm && argc > 4 ? atoll(argv[3]) : 0, k = mm && argc > 4 ? atoll(argv[4]) : 0;
  const int ai = mm ? 5 : 3;
  const gpuops_algo algo = argc > ai ? (gpuops_algo)atoi(argv[ai]) : GPUOPS_ALGO_AUTO;
  gpuops_status st = GPUOPS_OK;
  if (mm) {
    float *a, *b, *c;
    cudaMalloc(&a, m * k * 4), cudaMalloc(&b, k * n * 4), cudaMalloc(&c, m * n * 4);
    cudaMemset(a, 0, m * k * 4), cudaMemset(b, 0, k * n * 4);
    for (int r = 0; r < 4 && st == GPUOPS_OK; ++r)
      st = gpuops_matmul_f32(c, a, b, m, n, k, k, n, n, 1.0f, 0.0f, GPUOPS_OP_N, GPUOPS_OP_N, algo, 0);
  } else if (strcmp(argv[1], "softmax") == 0) {
    const int64_t cols = argc > 3 ? atoll(argv[3]) : 1024;
    const bool bf16 = argc > 4 && strcmp(argv[4], "bf16") == 0;
    const size_t bytes = (size_t)m * cols * (bf16 ? 2 : 4);
    void *x, *y;
    cudaMalloc(&x, bytes), cudaMalloc(&y, bytes);
    cudaMemset(x, 0, bytes);
    for (int r = 0; r < 4 && st == GPUOPS_OK; ++r)
      st = bf16 ? gpuops_softmax_fwd_bf16((gpuops_bf16 *)y, (const gpuops_bf16 *)x, m, cols, GPUOPS_ALGO_AUTO, 0)
                : gpuops_softmax_fwd_f32((float *)y, (const float *)x, m, cols, GPUOPS_ALGO_AUTO, 0);
  } else if (strcmp(argv[1], "norm") == 0) {
    const int64_t cols = argc > 3 ? atoll(argv[3]) : 1024;
    const bool bf16 = argc > 4 && strcmp(argv[4], "bf16") == 0;
    const size_t es = bf16 ? 2 : 4, bytes = (size_t)m * cols * es;
    void *x, *y, *g, *b;
    float *mean, *rstd;
    cudaMalloc(&x, bytes), cudaMalloc(&y, bytes), cudaMalloc(&g, cols * es), cudaMalloc(&b, cols * es);
    cudaMalloc(&mean, m * 4), cudaMalloc(&rstd, m * 4);
    cudaMemset(x, 0, bytes), cudaMemset(g, 0, cols * es), cudaMemset(b, 0, cols * es);
    for (int r = 0; r < 4 && st == GPUOPS_OK; ++r)
      st = bf16 ? gpuops_layernorm_fwd_bf16((gpuops_bf16 *)y, mean, rstd, (const gpuops_bf16 *)x, (const gpuops_bf16 *)g, (const gpuops_bf16 *)b, m, cols,
                                            1e-5f, GPUOPS_ALGO_AUTO, 0)
                : gpuops_layernorm_fwd_f32((float *)y, mean, rstd, (const float *)x, (const float *)g, (const float *)b, m, cols, 1e-5f, GPUOPS_ALGO_AUTO, 0);
  } else if (strstr(argv[1], "quant")) {
    void *x, *q;
    float *sc;
    int32_t *zp;
    const int64_t ch = 4096;
    cudaMalloc(&x, m * 4), cudaMalloc(&q, m), cudaMalloc(&sc, ch * 4), cudaMalloc(&zp, ch * 4);
    cudaMemset(x, 0, m * 4), cudaMemset(q, 0, m), cudaMemset(zp, 0, ch * 4);
    std::vector<float> ones(ch, 0.5f);
    cudaMemcpy(sc, ones.data(), ch * 4, cudaMemcpyHostToDevice);
    const char *w = argv[1];
    for (int r = 0; r < 4 && st == GPUOPS_OK; ++r) {
      if (!strcmp(w, "quant")) st = gpuops_quantize_f16((int8_t *)q, (const gpuops_f16 *)x, m, 0.5f, 0, nullptr, 0, GPUOPS_ALGO_AUTO, 0);
      else if (!strcmp(w, "quantpc")) st = gpuops_quantize_per_channel_f16((int8_t *)q, (const gpuops_f16 *)x, sc, zp, 1, ch, m / ch, nullptr, 0, GPUOPS_ALGO_AUTO, 0);
      else if (!strcmp(w, "dequant")) st = gpuops_dequantize_f16((gpuops_f16 *)x, (const int8_t *)q, m, 0.5f, 0, GPUOPS_ALGO_AUTO, 0);
      else if (!strcmp(w, "dequantpc")) st = gpuops_dequantize_per_channel_f16((gpuops_f16 *)x, (const int8_t *)q, sc, zp, 1, ch, m / ch, GPUOPS_ALGO_AUTO, 0);
      else st = gpuops_dequantize_f32((float *)x, (const int8_t *)q, m, 0.5f, 0, GPUOPS_ALGO_AUTO, 0);
    }
  } else if (strcmp(argv[1], "attention") == 0) {
    const int64_t d = argc > 3 ? atoll(argv[3]) : 128, b = 16384 / (m > 0 ? m : 1), h = 32, n = b * h * m * d;
    const gpuops_attention_dims dims = gpuops_attention_dims_bhsd(b, m, m, h, h, d);
    const gpuops_attention_mask mask = argc > 4 && atoi(argv[4]) ? GPUOPS_ATTN_MASK_CAUSAL : GPUOPS_ATTN_MASK_NONE;
    const float scale = gpuops_attention_default_scale(d);
    gpuops_bf16 *q, *k, *v, *o, *dout, *dq, *dk, *dv;
    float *lse;
    void *ws;
    gpuops_bf16 **bufs[8] = {&q, &k, &v, &o, &dout, &dq, &dk, &dv};
    for (gpuops_bf16 **p : bufs) cudaMalloc(p, n * 2);
    cudaMalloc(&lse, b * h * m * 4);
    cudaMemset(q, 0x3c, n * 2), cudaMemset(k, 0x3b, n * 2), cudaMemset(v, 0x3c, n * 2), cudaMemset(dout, 0x3a, n * 2);  // bf16 0.01-ish
    st = gpuops_attention_fwd_bf16(o, lse, q, k, v, &dims, scale, mask, nullptr, 0, GPUOPS_ALGO_AUTO, 0);
    const size_t wsb = gpuops_attention_bwd_workspace_size(&dims, GPUOPS_ALGO_AUTO);
    cudaMalloc(&ws, wsb);
    for (int r = 0; r < 4 && st == GPUOPS_OK; ++r)
      st = gpuops_attention_bwd_bf16(dq, dk, dv, dout, q, k, v, o, lse, &dims, scale, mask, ws, wsb, GPUOPS_ALGO_AUTO, 0);
  } else if (strcmp(argv[1], "cubscan") == 0) {
    float *x, *y;
    void *tmp = nullptr;
    size_t tb = 0;
    cudaMalloc(&x, m * 4), cudaMalloc(&y, m * 4);
    cudaMemset(x, 0, m * 4);
    cub::DeviceScan::InclusiveSum(tmp, tb, x, y, (int)m);
    cudaMalloc(&tmp, tb);
    for (int r = 0; r < 4; ++r) cub::DeviceScan::InclusiveSum(tmp, tb, x, y, (int)m);
  } else {
    float *x, *y;
    void *ws;
    const size_t wsb = gpuops_scan_workspace_size(m, algo);
    cudaMalloc(&x, m * 4), cudaMalloc(&y, m * 4), cudaMalloc(&ws, wsb ? wsb : 16);
    cudaMemset(x, 0, m * 4);
    for (int r = 0; r < 4 && st == GPUOPS_OK; ++r)
      st = gpuops_scan_f32(y, x, m, GPUOPS_SCAN_INCLUSIVE, ws, wsb, algo, 0);
  }
  const cudaError_t e = cudaDeviceSynchronize();
  printf("%s: status %d, %s\n", argv[1], (int)st, cudaGetErrorString(e));
  return st != GPUOPS_OK || e != cudaSuccess;
}
