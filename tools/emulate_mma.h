// SPDX-License-Identifier: MIT
// tools/emulate_mma.h - the warp-wide tensor-core instructions on the CPU, for the emulators of
// kernels built on gpuops_cuda.cuh 1.4 (tools/emulate_gemm.cpp, ...). Include after
// tools/emulate_cuda.h. Modelled from the PTX ISA's fragment tables:
//   ldmatrix .x4/.x2 [.trans]: each lane's row address is exchanged through the warp, lane l gets
//     row l / 4 (with .trans: column l / 4) of each 8x8 matrix, elements 2 (l % 4) and 2 (l % 4) + 1;
//     a row address that is not 16-byte aligned is counted as an error (emu_errors).
//   mma.sync.m16n8k16: every lane's A, B, C registers are exchanged, each lane computes its four
//     outputs (sums in f32, k ascending).
//   WMMA (nvcuda::wmma): a fragment holds the whole 16 x 16 matrix in every lane (the real layout
//     is opaque, so the kernel cannot depend on it); loads, mma and stores act on whole matrices.
// Dynamic shared memory: emu_shared_aligned(key, bytes) gives the block's 128-byte aligned buffer;
// smem_u32 addresses are offsets from the last one handed out (every shared pointer of a kernel
// using smem_u32 must derive from it).
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <string.h>
#include <type_traits>

static int emu_smem_key, emu_sums_key;
// Dynamic shared memory starts 128-byte aligned on the GPU (WMMA needs 32).
inline thread_local char *emu_smem_base_ = nullptr;
inline void *emu_shared_aligned(void *key, size_t bytes) {
  return emu_smem_base_ = (char *)(((uintptr_t)emu_shared(key, bytes + 128) + 127) & ~(uintptr_t)127);
}
static std::atomic<long> emu_errors{0};

// ---- warp-wide instructions -------------------------------------------------------------------
struct emu_warp_x {
  const void *addr[32];
  uint32_t a[32][4], b[32][2];
  float c[32][4];
};
inline emu_warp_x &emu_x() {
  static std::mutex mu;
  static std::map<WarpCtx *, emu_warp_x> m;
  std::lock_guard<std::mutex> g(mu);
  return m[&emu_warp()];
}
inline int emu_lane() { return emu_tid() & 31; }

template <int N> inline void emu_ldmatrix(uint32_t *r, const void *p, bool trans) {
  emu_warp_x &x = emu_x();
  const int l = emu_lane(), g = l >> 2, t = l & 3;
  if ((uintptr_t)p % 16 && emu_errors++ < 5) printf("ldmatrix row address %p not 16-byte aligned\n", p);
  x.addr[l] = p;
  __syncwarp();
  for (int i = 0; i < N; ++i) {
    if (!trans) {
      const uint16_t *row = (const uint16_t *)x.addr[8 * i + g];
      r[i] = row[2 * t] | ((uint32_t)row[2 * t + 1] << 16);
    } else {
      const uint16_t *r0 = (const uint16_t *)x.addr[8 * i + 2 * t], *r1 = (const uint16_t *)x.addr[8 * i + 2 * t + 1];
      r[i] = r0[g] | ((uint32_t)r1[g] << 16);
    }
  }
  __syncwarp();
}

namespace gpuops {
inline void ldmatrix_x4(uint32_t (&r)[4], const void *p) { emu_ldmatrix<4>(r, p, false); }
inline void ldmatrix_x2(uint32_t (&r)[2], const void *p) { emu_ldmatrix<2>(r, p, false); }
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void *p) { emu_ldmatrix<4>(r, p, true); }
inline void ldmatrix_x2_trans(uint32_t (&r)[2], const void *p) { emu_ldmatrix<2>(r, p, true); }
// Shared-space addresses: offsets from the block's dynamic shared memory (every shared pointer of
// section 9's kernels derives from it).
#define emu_smem_base emu_smem_base_
inline uint32_t smem_u32(const void *p) { return (uint32_t)((const char *)p - emu_smem_base); }
template <bool kTrans, int kOff> inline void ldmatrix_x4_at(uint32_t (&r)[4], uint32_t addr) { emu_ldmatrix<4>(r, emu_smem_base + addr + kOff, kTrans); }

template <class T> inline float emu_half(uint32_t w, int hi) {
  const uint16_t b = (uint16_t)(hi ? w >> 16 : w);
  T h;
  memcpy(&h, &b, 2);
  return (float)h;
}
template <class T> inline void emu_mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  emu_warp_x &x = emu_x();
  const int l = emu_lane(), g = l >> 2, t = l & 3;
  for (int i = 0; i < 4; ++i) x.a[l][i] = a[i], x.c[l][i] = c[i];
  x.b[l][0] = b[0], x.b[l][1] = b[1];
  __syncwarp();
  auto A = [&](int r, int k) { return emu_half<T>(x.a[(r % 8) * 4 + (k % 8) / 2][(r >= 8) + 2 * (k >= 8)], k & 1); };
  auto B = [&](int k, int n) { return emu_half<T>(x.b[n * 4 + (k % 8) / 2][k >= 8], k & 1); };
  float out[4];
  for (int e = 0; e < 4; ++e) {
    const int r = g + 8 * (e >> 1), n = 2 * t + (e & 1);
    float s = x.c[l][e];
    for (int k = 0; k < 16; ++k) s += A(r, k) * B(k, n);
    out[e] = s;
  }
  __syncwarp();
  for (int e = 0; e < 4; ++e) d[e] = out[e];
}
inline void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) { emu_mma<__half>(d, a, b, c); }
inline void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) { emu_mma<__nv_bfloat16>(d, a, b, c); }
}  // namespace gpuops

namespace nvcuda {
namespace wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class L = void> struct fragment { float x[256]; };
template <class F> inline void fill_fragment(F &f, float v) { for (float &e : f.x) e = v; }
template <class Use, class T, class L> inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const T *p, unsigned ldm) {
  if ((uintptr_t)p % 32 && emu_errors++ < 5) printf("wmma load from %p: not 256-bit aligned\n", (const void *)p);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.x[r * 16 + c] = (float)(std::is_same<L, row_major>::value ? p[r * ldm + c] : p[r + c * ldm]);
  __syncwarp();
}
template <class T, class LA, class LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d, const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, T, LB> &b, const fragment<accumulator, 16, 16, 16, float> &c) {
  float o[256];
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float s = c.x[r * 16 + n];
      for (int k = 0; k < 16; ++k) s += a.x[r * 16 + k] * b.x[k * 16 + n];
      o[r * 16 + n] = s;
    }
  memcpy(d.x, o, sizeof o);
  __syncwarp();
}
inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f, unsigned ldm, layout_t layout) {
  __syncwarp();
  if (emu_lane() == 0)
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 16; ++c) (layout == mem_row_major ? p[r * ldm + c] : p[r + c * ldm]) = f.x[r * 16 + c];
  __syncwarp();
}
}  // namespace wmma
}  // namespace nvcuda

