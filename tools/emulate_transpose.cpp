// SPDX-License-Identifier: MIT
// tools/emulate_transpose.cpp - the transpose kernels of gpuops_cuda.cuh (section 6) run on the CPU,
// for checking their index arithmetic, edge predication, persistent tile loop and barriers where
// there is no GPU, on tools/emulate_cuda.h (blocks one at a time, static arrays for shared
// memory), with the host branch of the core's store_global16 (section 1.1). Each kernel x element
// size x shape (tails, pitches past the sizes, offset pointers) x grid (1 and 3 blocks per
// dimension, so blocks loop over tiles, and the full grid) is compared with the defining formula;
// bytes outside y must stay untouched. Built by tools/emulate_transpose.sh under a sanitizer
// (out-of-bounds reads of x, or races on the shared tile). It does not check timing, coalescing or
// anything a real GPU adds.
#include <vector_types.h>
#include <vector_functions.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include "emulate_cuda.h"
#include "tr_body.inc"
using namespace gpuops;

static uint64_t s_ = 12345;
static uint64_t rnd() { return (s_ = s_ * 6364136223846793005ull + 1442695040888963407ull) >> 11; }
static int fails = 0, runs = 0;
static int emu_sms = 1;  // the SM count the thin plan sees: alternates between 1 and 66 (short segments)

// x exactly allocated (the sanitizer sees reads past its end); y with 64 bytes of slack compared too.
template <class U> static void test(int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, int offx, int offy, int which, unsigned gcap) {
  const int64_t nx = (rows - 1) * ldx + cols, ny = (cols - 1) * ldy + rows;
  const size_t ybytes = (ny + offy) * sizeof(U) + 64;
  void *bx = nullptr, *by = nullptr;
  if (posix_memalign(&bx, 16, (nx + offx) * sizeof(U)) || posix_memalign(&by, 16, ybytes)) abort();
  U *x = (U *)bx + offx, *y = (U *)by + offy;
  for (int64_t i = 0; i < nx; ++i) x[i] = (U)rnd();
  memset(by, 0xA5, ybytes);
  std::vector<unsigned char> want(ybytes, 0xA5);
  U *w = (U *)want.data() + offy;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) w[c * ldy + r] = x[r * ldx + c];
  const transpose_args<U> p = {y, x, rows, cols, ldx, ldy};
  auto cap = [](int64_t v, int64_t m) { return (unsigned)(v < m ? v : m); };
  const char *name = "";
  switch (which) {
  case 0: name = "naive"; emu_launch({cap((cols + 31) / 32, gcap), cap((rows + 7) / 8, gcap)}, {32, 8}, [&] { transpose_naive<U>(p); }); break;
  case 1: name = "tiled"; emu_launch({cap((cols + 31) / 32, gcap), cap((rows + 31) / 32, gcap)}, {32, 8}, [&] { transpose_shared<U, 0>(p); }); break;
  case 2:
    name = "padded";
    emu_launch({cap((cols + 31) / 32, gcap), cap((rows + 31) / 32, gcap)}, {32, 8}, [&] { transpose_shared<U, transpose_pad<U>()>(p); });
    break;
  case 3: {
    if (transpose_thin_fits<U>(x, y, rows, cols, ldx, ldy)) {
      const transpose_thin_cut c = transpose_thin_plan<U>(x, y, rows, cols, ldx, ldy, emu_sms);
      name = c.few_rows ? "vectorized (few rows)" : "vectorized (few columns)";
      if (c.few_rows) emu_launch({cap(c.segments, gcap), 1}, {256, 1}, [&] { transpose_thin<U, true>(p, c.segments, c.len); });
      else emu_launch({cap(c.segments, gcap), 1}, {256, 1}, [&] { transpose_thin<U, false>(p, c.segments, c.len); });
      break;
    }
    const bool y_whole = transpose_y_whole<U>(y, ldy), whole = y_whole && transpose_x_whole<U>(x, ldx);
    name = whole ? "vectorized" : "vectorized (any pitch)";
    const int64_t tiles = transpose_vec_tiles<U>(rows, cols, y_whole);
    const divisor tiles_c((uint64_t)((cols + 63) / 64));
    if (whole) emu_launch({cap(tiles, gcap), 1}, {256, 1}, [&] { transpose_vectorized<U, false>(p, tiles, tiles_c); });
    else if (sizeof(U) == 4 && !transpose_x_whole<U>(x, ldx))
      emu_launch({cap(tiles, gcap), 1}, {256, 1}, [&] { transpose_vectorized<U, true, sizeof(U) == 4>(p, tiles, tiles_c); });
    else emu_launch({cap(tiles, gcap), 1}, {256, 1}, [&] { transpose_vectorized<U, true>(p, tiles, tiles_c); });
    break;
  }
  }
  ++runs;
  if (memcmp(want.data(), by, ybytes) != 0) {
    size_t e = 0;
    while (((unsigned char *)by)[e] == want[e]) ++e;
    printf("FAIL %s %zu-byte %lldx%lld ld %lld/%lld offsets %d/%d grid cap %u: byte %zu\n", name, sizeof(U), (long long)rows, (long long)cols,
           (long long)ldx, (long long)ldy, offx, offy, gcap, e);
    ++fails;
  }
  free(bx);
  free(by);
}

template <class U> static void all(int only, bool thin_only) {
  const int64_t V = 16 / sizeof(U);
  struct S {
    int64_t r, c;
  } shapes[] = {{1, 1}, {1, 70}, {70, 1}, {31, 33}, {64, 64}, {65, 129}, {3 * V, 5 * V}, {64 + V, 2 * V}, {130, 67}, {200, 130}, {127, 129}, {200, 300},
                {3, 300}, {300, 3}, {16, 1000}, {1000, 16}, {5, 9000}, {9000, 5}, {9, 2100}, {2100, 9},
                {8, 2100}, {2100, 8}, {4, 3000}, {3000, 4}, {2, 3000}, {33, 700}, {700, 33}, {64, 400}};
  for (auto s : shapes) {
    if (thin_only && !((s.r <= 64 || s.c <= 64) && (s.r >= 300 || s.c >= 300))) continue;
    for (int ldm = 0; ldm < 3; ++ldm)
      for (unsigned gcap : {1u, 3u, 1000u}) {
        int64_t ldx = s.c, ldy = s.r;  // ldm 0: plain; 1: odd pitches; 2: pitches in whole vectors past the sizes
        if (ldm == 1) ldx = s.c + 3, ldy = s.r + 5;
        if (ldm == 2) ldx = ((s.c + V - 1) / V + 1) * V, ldy = ((s.r + V - 1) / V) * V;
        for (int k = 0; k < 4; ++k) {
          if ((only >= 0 && k != only) || (k != 3 && gcap == 1000u && s.r * s.c > 5000)) continue;  // thread-per-thread is slow
          emu_sms = emu_sms == 1 ? 66 : 1;
          test<U>(s.r, s.c, ldx, ldy, 0, 0, k, gcap);
          test<U>(s.r, s.c, ldx, ldy, 1, 3, k, gcap);
          if (k == 3) {  // whole-chunk offsets; x whole with y not, and the reverse
            test<U>(s.r, s.c, ldx, ldy, (int)V, 2 * (int)V, k, gcap);
            test<U>(s.r, s.c, ldx, ldy, (int)V, (int)V, k, gcap);  // y on 16 bytes, not 32
            test<U>(s.r, s.c, ldx, ldy, 0, (int)V - 1, k, gcap);
            test<U>(s.r, s.c, ldx, ldy, (int)V - 1, 0, k, gcap);
          }
        }
      }
  }
}

int main(int argc, char **argv) {
  const int only = argc > 1 ? atoi(argv[1]) : -1;
  const bool thin_only = getenv("EMULATE_THIN_ONLY") != nullptr;  // the few-rows shapes alone (minutes, not an hour)
  all<uint8_t>(only, thin_only);
  all<uint16_t>(only, thin_only);
  all<uint32_t>(only, thin_only);
  all<uint64_t>(only, thin_only);
  printf("%d runs, %d failures\n", runs, fails);
  return fails != 0;
}
