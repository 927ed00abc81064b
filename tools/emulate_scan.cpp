// SPDX-License-Identifier: MIT
// tools/emulate_scan.cpp - the scan kernels of gpuops_cuda.cuh (section 4, with its launcher
// scan_launch_typed) run on the CPU, for checking their logic where there is no GPU, on
// tools/emulate_cuda.h: several blocks resident at once (dispatched in blockIdx order, as the
// hardware does, so the look-back's spin waits really wait), per-block storage for __shared__
// (filled with garbage), and optional random sleeps at block start, barriers, fences and the
// tile counter (so tiles finish out of order). Checks: the f32 look-back fold against the left fold,
// bit for bit, on hand-built tile states (prefix out of reach, late aggregates, late prefixes);
// the spine; every version x dtype x kind x placement (aligned, equal and unequal offsets, in
// place) against the CPU form, with guard bytes; rows; NaN propagation. x86 is far stronger
// ordered than a GPU: this finds logic errors, not memory-ordering ones. Not part of `make test`
// (C++20, minutes of CPU): tools/emulate_scan.sh [mode [resident blocks [delays 0/1]]].
#define GPUOPS_ONLY_SCAN
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>
#include <math.h>
#include "emulate_cuda.h"
typedef struct CUstream_st *cudaStream_t;
typedef int cudaError_t;
enum { cudaSuccess = 0 };
static std::atomic<long> memset_bytes{0};
inline cudaError_t cudaMemsetAsync(void *p, int v, size_t b, cudaStream_t) { memset(p, v, b); memset_bytes += b; return 0; }
inline cudaError_t cudaGetLastError() { return 0; }
// The staged look-back's queries: a device that grants 227 KB of shared memory per block (the
// staged default runs), and the dynamic shared memory of the launch that emu_launch runs next.
enum { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
template <class K> cudaError_t cudaFuncSetAttribute(K, int, int) { return 0; }
inline size_t emu_dyn_smem = 0;
struct alignas(16) uint4 { unsigned x, y, z, w; };
static int gpuops__last_cuda_error = 0;
namespace gpuops {
template <class W> inline void store_vec(void *p, const W &v) { memcpy(p, &v, sizeof v); }
inline gpuops_status launch_status() { return GPUOPS_OK; }
inline gpuops_status cuda_call_status(cudaError_t e) { return e == cudaSuccess ? GPUOPS_OK : GPUOPS_ERR_CUDA; }
template <auto K> inline int64_t full_grid() { return 2; }
struct device_props { size_t smem_optin = 227 * 1024; int sms = 2; };
inline const device_props &current_device() { static const device_props d; return d; }
// Split rows: the cluster size the emulated device grants (0: none, so a block per row), and
// launch_rows as clusters of that many blocks (2 clusters resident: the row loop runs again).
inline int emu_split = 0;
template <class K> int split_cluster(K, int, int64_t, int64_t, int64_t, int64_t, int, std::atomic<int> *, int *resident) {
  *resident = 2;
  return emu_split;
}
template <class P, class K> gpuops_status launch_rows(K kernel, int threads, int, const P &p, cudaStream_t, int resident) {
  const int64_t clusters = p.rows < resident ? p.rows : resident;
  emu_launch_cluster(dim3e((unsigned)(clusters * p.cluster)), dim3e(threads), p.cluster, [&] { kernel(p); });
  return GPUOPS_OK;
}
}
#include "scan_body.inc"
using namespace gpuops;
static uint64_t rs = 88172645463325252ull;
static uint64_t rnd() { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static int fails = 0;
// Runs lookback<T> for `tile` on warp 0 (32 threads) while `driver` mutates the states.
template <class T> T run_lb(tile_states<T> st, int64_t tile, std::function<void()> driver) {
  BlockCtx bc(32);
  gridDim = dim3e(1); blockDim = dim3e(32);
  std::vector<T> res(32);
  std::vector<std::thread> ts;
  for (int t = 0; t < 32; ++t)
    ts.emplace_back([&, t] { threadIdx = dim3e(t, 0, 0); blockIdx = dim3e(0, 0, 0); cur_block = &bc;
      static char k; T *s_fold = (T *)emu_shared(&k, sizeof(T) * 32 * kLookbackWindows);
      res[t] = lookback<T>(st, tile, s_fold); });
  std::thread d(driver);
  for (auto &t : ts) t.join();
  d.join();
  for (int t = 1; t < 32; ++t) if (memcmp(&res[t], &res[0], sizeof(T))) { printf("lanes disagree\n"); ++fails; }
  return res[0];
}
template <class T> void scenario(const char *name, int64_t tile, int64_t pfx_below, std::vector<int64_t> late_pfx, std::vector<int64_t> late_agg) {
  const int64_t tiles = tile + 1;
  std::vector<T> A(tiles), P(tiles);
  for (auto &a : A) { if constexpr (std::is_same<T, float>::value) a = (float)((rnd() >> 40) / 16777216.0 * 1000); else a = (T)rnd(); }
  P[0] = A[0];
  for (int64_t t = 1; t < tiles; ++t) P[t] = P[t - 1] + A[t];
  std::vector<unsigned char> mem(tile_states<T>::bytes(tiles) + 64, 0);
  tile_states<T> st = tile_states<T>::at(mem.data(), tiles);
  std::vector<bool> late(tiles, false);
  for (int64_t t : late_agg) late[t] = true;
  for (int64_t t = 0; t < tile; ++t) {
    if (late[t]) continue;
    if (t < pfx_below) st.publish(t, kTilePrefix, P[t]); else st.publish(t, kTileAggregate, A[t]);
  }
  auto driver = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    for (int64_t t : late_agg) st.publish(t, kTileAggregate, A[t]);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    for (int64_t t : late_pfx) { st.publish(t, kTilePrefix, P[t]); std::this_thread::sleep_for(std::chrono::milliseconds(5)); }
  };
  const T got = run_lb<T>(st, tile, driver);
  const bool ok = memcmp(&got, &P[tile - 1], sizeof(T)) == 0;
  if (!ok) ++fails;
  printf("%s %s: %s (got %.17g want %.17g)\n", ok ? "ok  " : "FAIL", name, sizeof(T) == 8 ? "i64" : std::is_same<T, float>::value ? "f32" : "i32",
         (double)got, (double)P[tile - 1]);
}
template <class T> void all() {
  scenario<T>("tile 1, tile 0 prefix", 1, 1, {}, {});
  scenario<T>("tile 5, tile 0 late", 5, 0, {0}, {});
  scenario<T>("prefix just behind", 2000, 1999, {}, {});
  scenario<T>("prefix 512 back (last window, lane 0)", 2000, 2000 - 512 + 1, {}, {});
  scenario<T>("prefix 513 back: out of f32 reach, then tile 1600 publishes", 2000, 2000 - 513 + 1, {1600}, {});
  scenario<T>("prefix far back, empty tiles fill late, then 1990 publishes", 2000, 100, {1990}, {1999, 1700, 1500});
  scenario<T>("prefix 40 back, some empties", 2000, 1960, {}, {1999, 1970, 1961});
  scenario<T>("prefix 33 back (window 1 lane 31)", 2000, 1968, {}, {});
  scenario<T>("prefix 32 back (window 0 lane 0)", 2000, 1969, {}, {});
  scenario<T>("tile 40, all agg except 0", 40, 1, {}, {});
  scenario<T>("tile 700, only tile 0 prefix; late pfx 300 then 699", 700, 1, {300, 699}, {});
}
static void lookback_tests() { all<float>(); all<uint32_t>(); all<uint64_t>(); }
static void spine_tests() {
  for (int64_t count : {1ll, 5ll, 1024ll, 8191ll, 8192ll, 8193ll, 2 * 8192ll + 700}) {
    std::vector<uint32_t> s(count), w(count);
    uint32_t acc = 0;
    for (int64_t i = 0; i < count; ++i) { s[i] = (uint32_t)(i * 2654435761u); w[i] = acc; acc += s[i]; }
    uint32_t *p = s.data();
    emu_launch(1, 1024, [&] { scan_spine<uint32_t>(p, count); });
    bool ok = s == w; fails += !ok;
    printf("spine count %lld: %s\n", (long long)count, ok ? "ok" : "FAIL");
  }
  // add offsets
  {
    int64_t n = 5000; std::vector<uint32_t> y(n, 1), off = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90};
    uint32_t *yp = y.data(), *op = off.data();
    emu_launch(2, 256, [&] { scan_add_tile_offsets<uint32_t>(yp, n, op, 9); });
    bool ok = true; for (int64_t i = 0; i < n; ++i) ok = ok && y[i] == 1 + off[i >> 9];
    fails += !ok; printf("add offsets: %s\n", ok ? "ok" : "FAIL");
  }
}
static int runs = 0;
static int64_t nan_at = -1;
template <class T> void fillv(std::vector<T> &v) {
  for (auto &e : v) { if constexpr (std::is_same<T, float>::value) e = (float)((rnd() >> 40) / 16777216.0 * 2 - 1); else e = (T)rnd(); }
}
template <class T> gpuops__dtype dtof() { return std::is_same<T, float>::value ? GPUOPS__F32 : sizeof(T) == 4 ? GPUOPS__I32 : GPUOPS__I64; }
template <class T> using ST = typename std::conditional<std::is_same<T, float>::value, float, typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type>::type;

// One emulated GPU call (poisoned workspace, guard bytes) against the CPU form.
template <class T> bool run1(const char *tag, int64_t rows, int64_t cols, bool seg, int kind, gpuops_algo algo, int ox, int oy, bool inplace,
                             std::vector<T> *outp = nullptr) {
  const int64_t n = rows * cols, G = 40;
  std::vector<T> hx(n); fillv(hx);
  if constexpr (std::is_same<T, float>::value) if (nan_at >= 0 && nan_at < n) hx[nan_at] = NAN;
  std::vector<T> want(n);
  gpuops__scan_args pc = gpuops__scan_make(dtof<T>(), want.data(), hx.data(), rows, cols, seg, (gpuops_scan_kind)kind);
  if (gpuops__scan_cpu(&pc) != GPUOPS_OK) { printf("cpu failed\n"); exit(1); }
  auto al = [](unsigned char *p) { return (unsigned char *)(((uintptr_t)p + 255) & ~(uintptr_t)255); };
  std::vector<unsigned char> bx2((n + 2 * G) * sizeof(T) + 512, 0xFF), by2((n + 2 * G) * sizeof(T) + 512, 0xFF);
  unsigned char *baseX = al(bx2.data()), *baseY = al(by2.data());
  T *x = (T *)baseX + ox, *y = inplace ? x : (T *)baseY + oy;
  memcpy(x, hx.data(), n * sizeof(T));
  size_t wsb = seg ? 0 : gpuops_scan_workspace_size(n, algo);
  std::vector<unsigned char> wsv(wsb + 32, 0xFF);
  void *ws = wsb ? (void *)(((uintptr_t)wsv.data() + 15) & ~(uintptr_t)15) : nullptr;
  gpuops__scan_args p = gpuops__scan_make(dtof<T>(), y, x, rows, cols, seg, (gpuops_scan_kind)kind);
  p.workspace = ws; p.workspace_bytes = wsb; p.algo = algo;
  gpuops_status st = gpuops__scan_check(&p);
  if (st == GPUOPS_OK) st = scan_launch_typed<ST<T>>(p);
  ++runs;
  bool ok = st == GPUOPS_OK;
  int64_t bad = -1;
  double absum = 0;
  for (int64_t i = 0; i < n && ok; ++i) {
    if constexpr (std::is_same<T, float>::value) {
      if (i % cols == 0) absum = 0;
      if (kind == 0 && !std::isnan(hx[i])) absum += fabs(hx[i]);
      if (std::isnan(want[i])) { if (!std::isnan(y[i])) { ok = false; bad = i; } continue; }
      if (!(fabs((double)y[i] - want[i]) <= 1e-5 * absum + 1e-6)) { ok = false; bad = i; }
      if (kind == 1 && !std::isnan(hx[i])) absum += fabs(hx[i]);
    } else if (y[i] != want[i]) { ok = false; bad = i; }
  }
  // guards
  auto guard_ok = [&](std::vector<unsigned char> &buf, T *arr) {
    for (size_t i = 0; i < buf.size(); ++i) {
      unsigned char *q = buf.data() + i;
      if (q >= (unsigned char *)arr && q < (unsigned char *)(arr + n)) continue;
      if (*q != 0xFF) return false;
    }
    return true;
  };
  if (ok && !guard_ok(bx2, x)) { ok = false; printf("  x guard broken\n"); }
  if (ok && !inplace && !guard_ok(by2, y)) { ok = false; printf("  y guard broken\n"); }
  if (!ok) {
    ++fails;
    printf("FAIL %s %s rows %lld cols %lld seg %d kind %d algo %s ox %d oy %d inplace %d: status %d bad %lld", tag, sizeof(T) == 8 ? "i64" : std::is_same<T, float>::value ? "f32" : "i32",
           (long long)rows, (long long)cols, seg, kind, gpuops_algo_name(algo), ox, oy, inplace, st, (long long)bad);
    if (bad >= 0) printf(" got %.17g want %.17g", (double)y[bad], (double)want[bad]);
    printf("\n");
  }
  if (outp) outp->assign(y, y + n);
  return ok;
}

template <class T> void flat(std::vector<int64_t> sizes, std::vector<gpuops_algo> algos) {
  struct PL { int ox, oy; bool ip; } pls[] = {{0, 0, false}, {1, 1, false}, {1, 2, false}, {3, 3, true}, {2, 0, true}};
  for (int64_t n : sizes) for (gpuops_algo a : algos) for (int k = 0; k < 2; ++k) for (auto pl : pls) run1<T>("flat", 1, n, false, k, a, pl.ox, pl.oy, pl.ip);
  fflush(stdout);
}
template <class T> void rowsv(std::vector<std::pair<int64_t, int64_t>> shapes) {
  for (auto s : shapes) for (int k = 0; k < 2; ++k) for (int ip = 0; ip < 2; ++ip) run1<T>("rows", s.first, s.second, true, k, GPUOPS_ALGO_AUTO, 1, 0, ip);
  fflush(stdout);
}
int main(int argc, char **argv) {
  std::string what = argc > 1 ? argv[1] : "quick";
  emu_resident = argc > 2 ? atoi(argv[2]) : 4;
  if (argc > 3) emu_delay_mode = atoi(argv[3]);
  const gpuops_algo HS = GPUOPS_ALGO_HILLIS_STEELE, BL = GPUOPS_ALGO_BLELLOCH, RTS = GPUOPS_ALGO_REDUCE_THEN_SCAN, LB = GPUOPS_ALGO_DECOUPLED_LOOKBACK;
  if (what == "lookback" || what == "all" || what == "quick") lookback_tests();
  if (what == "spine" || what == "all" || what == "quick") spine_tests();
  if (what == "small" || what == "all") {
    std::vector<int64_t> s = {1, 2, 3, 5, 33, 511, 512, 513, 1025};
    flat<float>(s, {HS, BL, RTS, LB}); flat<uint32_t>(s, {HS, BL, RTS, LB}); flat<uint64_t>(s, {HS, BL, RTS, LB});
  }
  if (what == "tiles" || what == "all") {
    flat<float>({4095, 4096, 4097, 3 * 4096 + 5}, {RTS}); flat<uint32_t>({4097, 2 * 4096 + 7}, {RTS});
    flat<uint64_t>({2047, 2048, 2049, 3 * 2048 + 1}, {RTS});
    // The look-back's edges at its own tile (scan_lookback_default's; 24576 f32 / i32, 12288 i64).
    const int64_t t4 = scan_lookback_default<float>::tile<float>::kItems, t8 = scan_lookback_default<uint64_t>::tile<uint64_t>::kItems;
    flat<float>({t4 - 1, t4, t4 + 1, 3 * t4 + 5}, {LB}); flat<uint32_t>({t4 + 1, 2 * t4 + 7}, {LB});
    flat<uint64_t>({t8 - 1, t8, t8 + 1, 3 * t8 + 1}, {LB});
    flat<float>({2 * 1024 + 3, 5000}, {HS, BL}); flat<uint64_t>({3000}, {HS, BL});
  }
  if (what == "rts") {  // more tiles than blocks
    run1<uint32_t>("rts", 1, 1030 * 4096 + 17, false, 1, RTS, 3, 3, true);
    run1<float>("rts", 1, 1030 * 4096 + 17, false, 0, RTS, 1, 2, false);
  }
  if (what == "rows" || what == "all") {
    rowsv<float>({{1, 1}, {5, 1}, {300, 1}, {77, 3}, {3, 7}, {17, 127}, {9, 1000}, {4, 1023}, {5, 1024}, {3, 2047}, {2, 2048}, {2, 5001}, {4000, 8}});
    rowsv<uint32_t>({{77, 3}, {17, 129}, {3, 2047}, {2, 3000}, {1030, 5}});
    rowsv<uint64_t>({{77, 3}, {17, 129}, {3, 1500}, {2, 3000}});
    // Split rows (scan_rows_split) on clusters of 2 to 4: slices of one width (multiples of 64), the
    // last short or empty; rows past the 2 resident clusters; odd lengths.
    for (int c : {2, 3, 4}) {
      emu_split = c;
      rowsv<float>({{1, 2100}, {3, 5001}, {5, 4096}});
      rowsv<uint32_t>({{2, 3001}, {1, 2049}});
      rowsv<uint64_t>({{3, 2500}});
    }
    emu_split = 0;
  }
  if (what == "nan" || what == "all" || what == "quick") {
    nan_at = 4096 + 100;
    for (auto a : {HS, BL, RTS, LB}) for (int k = 0; k < 2; ++k) run1<float>("nan", 1, 3 * 4096 + 77, false, k, a, 1, 1, false);
    for (int64_t c : {5, 300, 3000}) { nan_at = 3 * c + c / 2; for (int k = 0; k < 2; ++k) run1<float>("nanrows", 7, c, true, k, GPUOPS_ALGO_AUTO, 0, 1, false); }
    nan_at = -1;
  }
  if (what == "lbmany") {  // many tiles in flight (7 of the default's 24576 f32 / 12288 i64)
    flat<float>({40 * 4096 + 9}, {LB});
    flat<uint64_t>({40 * 2048 + 9}, {LB});
    flat<uint32_t>({40 * 4096 + 9}, {LB});
  }
  printf("%d runs, %d failures\n", runs, fails);
  return fails != 0;
}
