// SPDX-License-Identifier: MIT
// bench/harness.h - how gpuops measures speed (docs/performance.md, "How it is measured"),
// shared by the bench and the examples:
// CUDA events around each run, warm-up first, the median of many runs, the L2 cache flushed
// before every timed run, the copy ceiling measured in the same run, and tables printed aligned
// and written as CSV. Also what every bench program's main() shares: its command line, its first
// lines of output, and random data made on the device. Include it after gpuops.h (with
// GPUOPS_IMPLEMENTATION, under nvcc), as the bench programs and the examples do.
#ifndef GPUOPS_BENCH_HARNESS_H
#define GPUOPS_BENCH_HARNESS_H

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "../tests/check.h"

// For programs that include cublas_v2.h: exits (2) with the call and its status where it fails.
#define CHECK_CUBLAS(call)                                                                  \
  do {                                                                                      \
    cublasStatus_t s_ = (call);                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, (int)s_); \
      exit(2);                                                                              \
    }                                                                                       \
  } while (0)

namespace bench {

struct device_info {
  char name[256];
  int sms, cc_major, cc_minor;
  size_t l2_bytes, mem_bytes;
};

inline device_info device() {
  device_info d{};
  int dev = 0;
  cudaDeviceProp p;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaGetDeviceProperties(&p, dev));
  snprintf(d.name, sizeof d.name, "%s", p.name);
  d.sms = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.l2_bytes = (size_t)p.l2CacheSize;
  d.mem_bytes = p.totalGlobalMem;
  return d;
}

// Reads n 16-byte words and stores nothing (the buffer holds zeros, so their xor is never the
// sentinel): the L2 flush of timer::median_ms.
static __global__ void l2_flush_read(const uint4 *p, size_t n, unsigned *sink) {
  unsigned x = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint4 v = p[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u) *sink = x;
}

// Times work enqueued on the default stream. Each timed run is preceded (outside its events) by a
// read of twice the L2 size, which evicts whatever the previous run left in L2 (its dirty lines are
// written back during the flush) and leaves L2 holding clean lines. A flush by writing (a memset)
// leaves L2 full of dirty lines instead, and the timed run pays for their write-back: cuBLAS's
// 1 x 11008 x 4096 bf16 product (88 MB of weights) took 34.8 us after a write and 27.3 us after a
// read, on an H200 (docs/performance.md, "How it is measured").
class timer {
 public:
  timer() {
    l2_flush_bytes_ = std::max<size_t>(2 * device().l2_bytes, 16u << 20);
    CHECK_CUDA(cudaMalloc(&l2_flush_, l2_flush_bytes_ + 16));
    CHECK_CUDA(cudaMemset(l2_flush_, 0, l2_flush_bytes_ + 16));
  }
  ~timer() { cudaFree(l2_flush_); }
  timer(const timer &) = delete;
  timer &operator=(const timer &) = delete;

  // The flush: l2_flush_read over the buffer, on the default stream.
  void flush_l2() {
    l2_flush_read<<<4 * device_sms(), 512>>>(static_cast<const uint4 *>(l2_flush_), l2_flush_bytes_ / 16,
                                            reinterpret_cast<unsigned *>(static_cast<char *>(l2_flush_) + l2_flush_bytes_));
    CHECK_CUDA(cudaGetLastError());
  }

  // Median milliseconds of run() over `reps` runs after `warmup` untimed ones.
  template <class F> double median_ms(F &&run, int reps = 25, int warmup = 3) {
    for (int i = 0; i < warmup; ++i) run();
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev) CHECK_CUDA(cudaEventCreate(&e));
    for (int i = 0; i < reps; ++i) {
      flush_l2();
      CHECK_CUDA(cudaEventRecord(ev[2 * i], 0));
      run();
      CHECK_CUDA(cudaEventRecord(ev[2 * i + 1], 0));
    }
    CHECK_CUDA(cudaEventSynchronize(ev.back()));
    CHECK_CUDA(cudaGetLastError());
    std::vector<float> ms(reps);
    for (int i = 0; i < reps; ++i) CHECK_CUDA(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
    for (auto &e : ev) cudaEventDestroy(e);
    std::sort(ms.begin(), ms.end());
    return reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
  }

  // About 20 ms of discarded device work (reads of the flush buffer). Measured on the H100: the
  // first kernel timed after a bench frees its previous type's buffers (GBs) and allocates new
  // ones ran 6-13% slow for a few ms (softmax bf16 at 32768 x 4096: 0.82x copy first, 0.95x
  // later or alone), so a bench settles after its allocations before timing.
  void settle() {
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    CHECK_CUDA(cudaEventRecord(e0, 0));
    float ms = 0.0f;
    while (ms < 20.0f) {
      for (int i = 0; i < 16; ++i) flush_l2();
      CHECK_CUDA(cudaEventRecord(e1, 0));
      CHECK_CUDA(cudaEventSynchronize(e1));
      CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }

  // The copy ceiling: a device-to-device cudaMemcpyAsync of `bytes`, counted as bytes read plus
  // bytes written, in GB/s (1e9 bytes).
  double copy_gbps(size_t bytes) {
    void *src = nullptr, *dst = nullptr;
    CHECK_CUDA(cudaMalloc(&src, bytes));
    CHECK_CUDA(cudaMalloc(&dst, bytes));
    CHECK_CUDA(cudaMemset(src, 0x3c, bytes));
    const double ms = median_ms([&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0)); });
    CHECK_CUDA(cudaFree(src));
    CHECK_CUDA(cudaFree(dst));
    return 2.0 * (double)bytes / (ms * 1e6);
  }

  // Write-only rate of a cudaMemsetAsync of `bytes`, in GB/s: context for write-heavy ops.
  double write_gbps(size_t bytes) {
    void *dst = nullptr;
    CHECK_CUDA(cudaMalloc(&dst, bytes));
    const double ms = median_ms([&] { CHECK_CUDA(cudaMemsetAsync(dst, 0x3c, bytes, 0)); });
    CHECK_CUDA(cudaFree(dst));
    return (double)bytes / (ms * 1e6);
  }

 private:
  static int device_sms() {
    static const int sms = device().sms;
    return sms;
  }
  void *l2_flush_ = nullptr;
  size_t l2_flush_bytes_ = 0;
};

inline std::string fmt(const char *f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// A table cell: about three significant digits whatever the size, "-" where there is no number.
inline std::string num(double v, const char *unit = "") {
  if (v != v) return "-";
  return fmt(v < 10 ? "%.2f%s" : v < 100 ? "%.1f%s" : "%.0f%s", v, unit);
}

// Microseconds of one host call (the CPU implementations run once: they also make the reference).
template <class F> double host_us(F &&call) {
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(call());
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// Rows of strings printed as an aligned table, and written as CSV.
struct table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;

  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }

  void print(FILE *f = stdout) const {
    std::vector<size_t> w(head.size());
    for (size_t c = 0; c < head.size(); ++c) w[c] = head[c].size();
    for (auto &r : rows)
      for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
    auto line = [&](const std::vector<std::string> &r) {
      for (size_t c = 0; c < w.size(); ++c) fprintf(f, c ? "  %*s" : "%-*s", (int)w[c], c < r.size() ? r[c].c_str() : "");
      fprintf(f, "\n");
    };
    line(head);
    size_t total = 0;
    for (size_t c = 0; c < w.size(); ++c) total += w[c] + (c ? 2 : 0);
    fprintf(f, "%s\n", std::string(total, '-').c_str());
    for (auto &r : rows) line(r);
  }

  // Appends to `path` (the header only when the file is new); false if it cannot be written.
  bool append_csv(const char *path) const {
    FILE *probe = fopen(path, "r");
    const bool fresh = probe == nullptr;
    if (probe) fclose(probe);
    FILE *f = fopen(path, "a");
    if (!f) return false;
    auto line = [&](const std::vector<std::string> &r) {
      for (size_t c = 0; c < r.size(); ++c) fprintf(f, "%s%s", c ? "," : "", r[c].c_str());
      fprintf(f, "\n");
    };
    if (fresh) line(head);
    for (auto &r : rows) line(r);
    fclose(f);
    return true;
  }

  // Replaces `path` with the table (header and rows); says so where it cannot be written.
  void write_csv(const std::string &path) const {
    remove(path.c_str());
    if (!append_csv(path.c_str())) printf("could not write %s\n", path.c_str());
  }
};

// ---- What every bench program's main() shares ----

// The command line of every bench program: [--csv PATH] [--quick] [--only OP] [--type T], the CSV
// at build/bench/<name>.csv unless given. A program ignores the options it has no use for, as it
// ignores any other word.
struct options {
  const char *name;
  std::string csv, only, type;
  bool quick = false;

  options(int argc, char **argv, const char *program) : name(program), csv(std::string("build/bench/") + program + ".csv") {
    for (int i = 1; i < argc; ++i) {
      if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
      else if (!strcmp(argv[i], "--quick")) quick = true;
      else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
      else if (!strcmp(argv[i], "--type") && i + 1 < argc) type = argv[++i];
    }
  }

  // Whether there is a GPU to measure; where there is none, says so (main() then returns 0).
  bool have_gpu() const {
    if (check::have_gpu()) return true;
    printf("%s needs a CUDA GPU; none was found.\n", name);
    return false;
  }
};

// The first line of every bench program's output.
inline void print_device(const device_info &d, uint64_t seed) {
  printf("device: %s, %d SMs, %.0f MB L2; seed %llu\n", d.name, d.sms, d.l2_bytes / 1e6, (unsigned long long)seed);
}

// The copy ceiling of 1 GiB (timer::copy_gbps), printed as one line that `end` ends (by default,
// a blank line follows).
inline double copy_ceiling(timer &t, const char *end = "\n") {
  const double copy = t.copy_gbps((size_t)1 << 30);
  printf("copy ceiling (cudaMemcpy device to device, 1 GiB, read + write): %.0f GB/s%s\n", copy, end);
  return copy;
}

// Random data made on the device, without a host round trip: splitmix64's mix of (seed, i), the
// same bits for a seed on every GPU.
__device__ inline uint64_t hash64(uint64_t seed, int64_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The device type of a storage type (gpuops_f16 is __half on the device, gpuops_bf16 __nv_bfloat16).
template <class T> struct device_type { using type = T; };
template <> struct device_type<gpuops_f16> { using type = __half; };
template <> struct device_type<gpuops_bf16> { using type = __nv_bfloat16; };

template <class D> __global__ void fill_uniform_kernel(D *p, int64_t n, uint64_t seed, float lo, float hi) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float u = (float)(hash64(seed, i) >> 40) * (1.0f / 16777216.0f);
    p[i] = gpuops::from_f32<D>(lo + (hi - lo) * u);
  }
}

// p[0, n) uniform in [lo, hi] on the device (T: float, gpuops_f16, gpuops_bf16, or int8_t, which
// rounds half to even); enqueued on the default stream.
template <class T> void fill_uniform(T *p, int64_t n, uint64_t seed, float lo, float hi) {
  fill_uniform_kernel<<<1024, 256>>>((typename device_type<T>::type *)p, n, seed, lo, hi);
  CHECK_CUDA(cudaGetLastError());
}

template <class B> __global__ void count_differing_kernel(const B *a, const B *b, size_t n, unsigned long long *out) {
  unsigned long long c = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) c += a[i] != b[i];
  if (c) atomicAdd(out, c);
}

// How many of the n bytes at a and b (device memory) differ; synchronizes. For comparing a kernel
// variant's output with the library's without copying it to the host.
inline unsigned long long differing_bytes(const void *a, const void *b, size_t n) {
  unsigned long long *d = nullptr, h = 0;
  CHECK_CUDA(cudaMalloc(&d, sizeof h));
  CHECK_CUDA(cudaMemset(d, 0, sizeof h));
  count_differing_kernel<<<1024, 256>>>((const uint8_t *)a, (const uint8_t *)b, n, d);
  CHECK_CUDA(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d));
  return h;
}

}  // namespace bench

#endif
