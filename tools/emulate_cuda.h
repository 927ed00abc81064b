// SPDX-License-Identifier: MIT
// tools/emulate_cuda.h - the CUDA execution model on the CPU, shared by tools/emulate_*.cpp (C++20).
// Models: one std::thread per CUDA thread; threadIdx/blockIdx (thread_local), blockDim/gridDim;
// __syncthreads as a std::barrier per block; warps of 32 consecutive linear thread ids with a
// barrier each, through which __shfl_sync/__shfl_up_sync/__shfl_xor_sync/__ballot_sync/__any_sync/
// __syncwarp exchange values (all 32 lanes must call, as the kernels promise); __shared__ either as
// static arrays (the extraction script rewrites `__shared__` to `static`: right only when blocks run
// one at a time) or as per-block storage from emu_shared (filled with 0xA5 garbage); a grid run
// block by block, or with several blocks resident at once dispatched in blockIdx order (so spin
// waits on earlier blocks really wait); optional random sleeps (emu_delay_mode) at block start,
// barriers, fences and atomics, so blocks finish out of order; __threadfence, atomicAdd, __ldg,
// __umulhi, __clz, __int_as_float, __float_as_uint, __uint_as_float, __byte_perm, __trap; the qualifier macros (__global__, __device__, ...) made empty.
// Thread-block clusters (emu_launch_cluster): C consecutive blocks run at once, a barrier of all
// their threads (cooperative_groups::this_cluster().sync()) and map_shared_rank to the same
// emu_shared bytes of another block of the cluster (distributed shared memory).
// Does not model: memory ordering (x86 is far stronger ordered than a GPU: this finds logic errors,
// not missing fences), timing, occupancy, coalescing or bank conflicts, divergence within a warp,
// cp.async's asynchrony (matmul's ASYNC mode models that itself), or anything else a real GPU adds.
// Include it after <vector_types.h> / gpuops.h (their qualifier macros are replaced here).
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <atomic>
#include <barrier>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __forceinline__
#define __forceinline__ inline
#undef __noinline__
#define __noinline__ inline
#undef __restrict__
#define __restrict__
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __align__
#define __align__(n) __attribute__((aligned(n)))

struct dim3e {
  unsigned x, y, z;
  dim3e(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
inline thread_local dim3e threadIdx(0, 0, 0), blockIdx(0, 0, 0);
inline dim3e blockDim, gridDim;

struct WarpCtx { std::barrier<> bar{32}; uint64_t buf[32]; };
struct BlockCtx {
  std::barrier<> bar;
  std::vector<WarpCtx *> warps;
  std::mutex mu;
  std::map<void *, std::vector<unsigned char>> sh;  // emu_shared storage, by key
  explicit BlockCtx(int threads) : bar(threads) {
    for (int w = 0; w < (threads + 31) / 32; ++w) warps.push_back(new WarpCtx);
  }
  ~BlockCtx() { for (auto *w : warps) delete w; }
};
inline thread_local BlockCtx *cur_block;
struct ClusterCtx {
  std::barrier<> bar;
  std::vector<BlockCtx *> blocks;  // by rank
  explicit ClusterCtx(int threads) : bar(threads) {}
};
inline thread_local ClusterCtx *cur_cluster;

// Random sleeps (off unless emu_delay_mode is set), from a per-thread generator seeded per launch.
inline std::atomic<int> emu_delay_mode{0};
inline thread_local std::mt19937 trng;
inline void maybe_delay(int scale) {
  if (!emu_delay_mode) return;
  if (trng() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(trng() % (scale * 50 + 1)));
}

// Per-block __shared__ storage: the first call in a block with a key allocates it, later calls
// (other threads of the block) get the same bytes.
inline void *emu_shared(void *key, size_t bytes) {
  std::lock_guard<std::mutex> g(cur_block->mu);
  auto &v = cur_block->sh[key];
  if (v.empty()) { v.resize(bytes); memset(v.data(), 0xA5, bytes); }  // shared memory starts as garbage
  return v.data();
}

// Distributed shared memory: the address in block `rank` of this cluster of what p is in this block.
inline void *emu_map_shared(void *p, unsigned rank) {
  if (!cur_cluster || rank >= cur_cluster->blocks.size()) abort();
  void *key = nullptr;
  size_t off = 0, bytes = 0;
  {
    std::lock_guard<std::mutex> g(cur_block->mu);
    for (auto &kv : cur_block->sh) {
      unsigned char *b = kv.second.data();
      if ((unsigned char *)p >= b && (unsigned char *)p < b + kv.second.size()) key = kv.first, off = (unsigned char *)p - b, bytes = kv.second.size();
    }
  }
  if (!key) abort();  // not shared memory
  BlockCtx *o = cur_cluster->blocks[rank];
  std::lock_guard<std::mutex> g(o->mu);
  auto &v = o->sh[key];
  if (v.empty()) { v.resize(bytes); memset(v.data(), 0xA5, bytes); }
  return v.data() + off;
}
namespace cooperative_groups {
struct cluster_group {
  void sync() const {
    if (!cur_cluster) abort();
    cur_cluster->bar.arrive_and_wait();
  }
  template <class T> T *map_shared_rank(T *p, unsigned rank) const { return (T *)emu_map_shared((void *)p, rank); }
};
inline cluster_group this_cluster() { return {}; }
}  // namespace cooperative_groups

// gpuops_cuda.cuh's cluster_merge in host form: there the blocks exchange through st.async and
// mbarriers (PTX); here the same contract through a cluster barrier: thread 0 puts the block's
// state in its slot `mine` (emu_shared memory, slots by row parity), and every thread reads every
// block's copy in rank order.
template <class S, class Merge> S emu_cluster_merge(S b, int cluster, uint32_t *mine, S empty, Merge merge, int ranks) {
  if (cluster > 1) {
    cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
    if (threadIdx.x == 0) memcpy(mine, &b, sizeof(S));
    cl.sync();
    S all = empty;
    const int upto = ranks < 0 ? cluster : ranks;
    for (int r = 0; r < upto; ++r) {
      S o;
      memcpy(&o, cl.map_shared_rank(mine, (unsigned)r), sizeof(S));
      merge(all, o);
    }
    return all;
  }
  return ranks == 0 ? empty : b;
}

inline void __syncthreads() { maybe_delay(20); cur_block->bar.arrive_and_wait(); }
inline int emu_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline WarpCtx &emu_warp() { return *cur_block->warps[emu_tid() / 32]; }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_warp().bar.arrive_and_wait(); }
template <class T> inline T emu_xchg(T v, int src) {
  static_assert(sizeof(T) <= 8, "one 64-bit word per lane");
  WarpCtx &w = emu_warp();
  uint64_t b = 0; memcpy(&b, &v, sizeof(T)); w.buf[emu_tid() & 31] = b;
  w.bar.arrive_and_wait();
  uint64_t r = w.buf[src]; w.bar.arrive_and_wait();
  T o; memcpy(&o, &r, sizeof(T)); return o;
}
template <class T> inline T __shfl_sync(unsigned, T v, int src) { return emu_xchg(v, src & 31); }
template <class T> inline T __shfl_up_sync(unsigned, T v, int d) { int l = emu_tid() & 31; return emu_xchg(v, l - d >= 0 ? l - d : l); }
template <class T> inline T __shfl_xor_sync(unsigned, T v, int d) { return emu_xchg(v, (emu_tid() & 31) ^ d); }
inline unsigned __ballot_sync(unsigned, int p) {
  WarpCtx &w = emu_warp(); w.buf[emu_tid() & 31] = p != 0; w.bar.arrive_and_wait();
  unsigned m = 0; for (int l = 0; l < 32; ++l) m |= (unsigned)w.buf[l] << l; w.bar.arrive_and_wait(); return m;
}
inline int __any_sync(unsigned m, int p) { unsigned b = __ballot_sync(m, p); if (b) std::this_thread::yield(); return b != 0; }

inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = ((uint64_t)y << 32) | x;
  unsigned r = 0;
  for (int k = 0; k < 4; ++k) r |= (unsigned)((v >> (8 * ((s >> (4 * k)) & 7))) & 0xff) << (8 * k);
  return r;
}
inline void __trap() { abort(); }  // a kernel's "cannot happen" branch
template <class T> inline T __ldg(const T *p) { return *p; }
inline void __threadfence() { maybe_delay(5); std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned atomicAdd(unsigned *p, unsigned v) { maybe_delay(100); return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float atomicAdd(float *p, float v) { maybe_delay(100); return std::atomic_ref<float>(*p).fetch_add(v); }

// Blocks resident at once in emu_launch (1: one after another, which static __shared__ needs).
inline int emu_resident = 1;
// Called by every emulated thread after its kernel returns (matmul's ASYNC mode checks its copies).
inline void (*emu_thread_end)() = nullptr;

// Runs k() as a grid x block launch: blocks taken in blockIdx order (x fastest) by emu_resident
// workers, the threads of a block concurrently.
template <class K> void emu_launch(dim3e grid, dim3e block, K k, int resident = emu_resident) {
  gridDim = grid; blockDim = block;
  const unsigned nb = grid.x * grid.y * grid.z, nt = block.x * block.y * block.z;
  std::atomic<unsigned> next{0};
  static std::atomic<int> seedc{1};
  auto worker = [&](int seed) {
    for (;;) {
      const unsigned b = next++;
      if (b >= nb) return;
      BlockCtx bc(nt);
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < nt; ++t)
        ts.emplace_back([&, t, b] {
          trng.seed(seed * 7919 + b * 131 + t);
          threadIdx = dim3e(t % block.x, t / block.x % block.y, t / (block.x * block.y));
          blockIdx = dim3e(b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y));
          cur_block = &bc;
          maybe_delay(200);
          k();
          if (emu_thread_end) emu_thread_end();
        });
      for (auto &t : ts) t.join();
    }
  };
  if (resident <= 1) { worker(seedc++); return; }
  std::vector<std::thread> ws;
  for (int s = 0; s < resident; ++s) ws.emplace_back(worker, seedc++);
  for (auto &w : ws) w.join();
}
// Runs k() as a grid x block launch in clusters of C consecutive blocks (grid.x a multiple of C):
// the clusters one after another (or `resident` at once), all C blocks of one concurrently.
template <class K> void emu_launch_cluster(dim3e grid, dim3e block, unsigned C, K k, int resident = 1) {
  if (grid.y != 1 || grid.z != 1 || grid.x % C) abort();
  gridDim = grid; blockDim = block;
  const unsigned nc = grid.x / C, nt = block.x * block.y * block.z;
  std::atomic<unsigned> next{0};
  static std::atomic<int> seedc{1};
  auto worker = [&](int seed) {
    for (;;) {
      const unsigned c = next++;
      if (c >= nc) return;
      ClusterCtx cc((int)(C * nt));
      std::vector<BlockCtx *> bcs;
      for (unsigned r = 0; r < C; ++r) bcs.push_back(new BlockCtx((int)nt));
      cc.blocks = bcs;
      std::vector<std::thread> ts;
      for (unsigned r = 0; r < C; ++r)
        for (unsigned t = 0; t < nt; ++t)
          ts.emplace_back([&, t, r, c] {
            const unsigned b = c * C + r;
            trng.seed(seed * 7919 + b * 131 + t);
            threadIdx = dim3e(t % block.x, t / block.x % block.y, t / (block.x * block.y));
            blockIdx = dim3e(b, 0, 0);
            cur_block = bcs[r];
            cur_cluster = &cc;
            maybe_delay(200);
            k();
            if (emu_thread_end) emu_thread_end();
            cur_cluster = nullptr;
          });
      for (auto &t : ts) t.join();
      for (auto *b : bcs) delete b;
    }
  };
  if (resident <= 1) { worker(seedc++); return; }
  std::vector<std::thread> ws;
  for (int s = 0; s < resident; ++s) ws.emplace_back(worker, seedc++);
  for (auto &w : ws) w.join();
}
