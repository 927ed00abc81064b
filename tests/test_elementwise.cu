// SPDX-License-Identifier: MIT
// tests/test_elementwise.cu - the core's host side (gpuops.h section 1) and the elementwise family.
//   Everywhere: status strings, half conversions (against CUDA's own host conversions), the CPU
//   implementations against known values and finite differences, and argument checking of the
//   CPU and GPU entry points (the checks run before any launch, so they need no device).
//   With a GPU: every op x storage type x version on odd sizes and offset pointers against the
//   CPU implementation, outputs poisoned and guard zones checked; special values; bad input
//   leaves device memory untouched; the 64-bit channel index; and one op past 2^31 elements.
// GPUOPS_TEST_QUICK=1 drops the largest sizes and the 2^31 case (for compute-sanitizer).
// GPUOPS_SEED=N replays a run.
#define GPUOPS_ONLY_ELEMENTWISE
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <string.h>

#include <string>
#include <vector>

#include "check.h"
#include "elementwise_ops.h"
#include "harness.h"

using check::guarded;
using check::quick;
using check::rng;
using std::string;
using std::vector;


static string name_of(const char *a, const char *b = "", const char *c = "") { return string(a) + b + c; }

// ---- core (gpuops.h section 1) -----------------------------------------------------------------

static void test_status_and_names() {
  const gpuops_status all[] = {GPUOPS_OK, GPUOPS_ERR_INVALID_ARGUMENT, GPUOPS_ERR_UNSUPPORTED, GPUOPS_ERR_MISALIGNED,
                               GPUOPS_ERR_WORKSPACE, GPUOPS_ERR_CUDA, GPUOPS_ERR_NO_CUDA};
  bool ok = true;
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i)
    for (size_t j = 0; j < i; ++j) ok = ok && strcmp(gpuops_status_string(all[i]), gpuops_status_string(all[j])) != 0;
  th_case(ok, "status strings are distinct", "two statuses share a name");
  th_case(gpuops_status_string((gpuops_status)99) != nullptr, "status string of an unknown value", "NULL");
  th_case(strcmp(gpuops_algo_name(GPUOPS_ALGO_VECTORIZED), "vectorized") == 0 && strcmp(gpuops_algo_name((gpuops_algo)-1), "?") == 0,
          "algorithm names", "%s", gpuops_algo_name(GPUOPS_ALGO_VECTORIZED));
  th_case(gpuops_cuda_error() == 0, "no CUDA error before any call", "%d", gpuops_cuda_error());
}

static bool same_float(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0; }

// f16/bf16 -> f32 for all 65536 patterns; f32 -> f16/bf16 for every 4093rd f32 pattern, random
// ones and the neighbourhoods of the rounding boundaries, against cuda_fp16.h's host functions.
static void test_half_conversions(rng &r) {
  int64_t bad16 = 0, badb = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    gpuops_f16 h = {(uint16_t)b};
    gpuops_bf16 g = {(uint16_t)b};
    __half_raw hr;
    hr.x = (unsigned short)b;
    __nv_bfloat16_raw gr;
    gr.x = (unsigned short)b;
    bad16 += !same_float(gpuops_f16_to_f32(h), __half2float(__half(hr)));
    badb += !same_float(gpuops_bf16_to_f32(g), __bfloat162float(__nv_bfloat16(gr)));
  }
  th_case(bad16 == 0, "f16 -> f32, all 65536 values", "%lld differ", (long long)bad16);
  th_case(badb == 0, "bf16 -> f32, all 65536 values", "%lld differ", (long long)badb);

  vector<uint32_t> pats;
  for (uint64_t u = 0; u < (1ull << 32); u += 4093) pats.push_back((uint32_t)u);
  for (int i = 0; i < 1000000; ++i) pats.push_back((uint32_t)r.next());
  const float edges[] = {65504.0f, 65520.0f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f, 1.0f, 3.3895314e38f};
  for (float e : edges) {
    uint32_t u;
    memcpy(&u, &e, 4);
    for (int d = -4096; d <= 4096; ++d) pats.push_back(u + d), pats.push_back((u + d) | 0x80000000u);
  }
  bad16 = badb = 0;
  uint32_t first16 = 0, firstb = 0;
  for (uint32_t u : pats) {
    float f;
    memcpy(&f, &u, 4);
    const __half_raw hr = __half_raw(__float2half_rn(f));
    const __nv_bfloat16_raw gr = __nv_bfloat16_raw(__float2bfloat16_rn(f));
    const uint16_t h = gpuops_f32_to_f16(f).bits, g = gpuops_f32_to_bf16(f).bits;
    const bool nan = isnan(f);
    // NaN: both must be NaN (payloads may differ).
    const bool ok16 = nan ? ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) : h == hr.x;
    const bool okb = nan ? ((g & 0x7f80) == 0x7f80 && (g & 0x7f)) : g == gr.x;
    if (!ok16 && bad16++ == 0) first16 = u;
    if (!okb && badb++ == 0) firstb = u;
  }
  th_case(bad16 == 0, "f32 -> f16 rounding (sampled patterns and boundaries)", "%lld differ, first 0x%08x", (long long)bad16, first16);
  th_case(badb == 0, "f32 -> bf16 rounding (sampled patterns and boundaries)", "%lld differ, first 0x%08x", (long long)badb, firstb);
}

// ---- CPU implementations -------------------------------------------------------------------

static bool near(double got, double want, double tol) { return fabs(got - want) <= tol * (1.0 + fabs(want)); }

static void test_cpu_known_values() {
  const float x[3] = {1.0f, -2.0f, 0.5f}, dy[3] = {1.0f, 1.0f, 1.0f};
  float y[3];
  struct row {
    const char *name;
    double want[3];
  };
  // Reference values from Python's math module (erfc, tanh, exp) in double.
  const row rows[] = {
      {"cpu gelu erf", {0.8413447460685429, -0.04550026389635844, 0.34573123063700656}},
      {"cpu gelu erf grad", {1.0833154705876864, -0.0852318010781969, 0.8674951246561629}},
      {"cpu gelu tanh", {0.8411919906082768, -0.04540230591222494, 0.34571400982514394}},
      {"cpu gelu tanh grad", {1.0829640838457826, -0.08609925662361825, 0.8673699035346424}},
      {"cpu silu", {0.7310585786300049, -0.2384058440442351, 0.3112296656009273}},
      {"cpu silu grad", {0.9276705118714869, -0.09078424878489547, 0.7399611873026519}},
      {"cpu sigmoid", {0.7310585786300049, 0.11920292202211755, 0.6224593312018546}},
      {"cpu sigmoid grad", {0.19661193324148185, 0.1049935854035065, 0.2350037122015945}},
      {"cpu tanh", {0.7615941559557649, -0.9640275800758169, 0.46211715726000974}},
      {"cpu tanh grad", {0.41997434161402614, 0.07065082485316443, 0.7864477329659274}},
  };
  for (int k = 0; k < (int)(sizeof rows / sizeof rows[0]); ++k) {
    gpuops_status st = GPUOPS_OK;
    switch (k) {
    case 0: st = gpuops_cpu_gelu_fwd_f32(y, x, 3, GPUOPS_GELU_ERF); break;
    case 1: st = gpuops_cpu_gelu_bwd_f32(y, dy, x, 3, GPUOPS_GELU_ERF); break;
    case 2: st = gpuops_cpu_gelu_fwd_f32(y, x, 3, GPUOPS_GELU_TANH); break;
    case 3: st = gpuops_cpu_gelu_bwd_f32(y, dy, x, 3, GPUOPS_GELU_TANH); break;
    case 4: st = gpuops_cpu_silu_fwd_f32(y, x, 3); break;
    case 5: st = gpuops_cpu_silu_bwd_f32(y, dy, x, 3); break;
    case 6: st = gpuops_cpu_sigmoid_fwd_f32(y, x, 3); break;
    case 7: st = gpuops_cpu_sigmoid_bwd_f32(y, dy, x, 3); break;
    case 8: st = gpuops_cpu_tanh_fwd_f32(y, x, 3); break;
    case 9: st = gpuops_cpu_tanh_bwd_f32(y, dy, x, 3); break;
    }
    bool ok = st == GPUOPS_OK;
    for (int i = 0; i < 3; ++i) ok = ok && near(y[i], rows[k].want[i], 1e-7);
    th_case(ok, rows[k].name, "got %.9g %.9g %.9g", y[0], y[1], y[2]);
  }

  const float rx[4] = {-1.0f, 0.0f, 2.0f, NAN}, rdy[4] = {5.0f, 5.0f, 5.0f, 5.0f};
  float ry[4], rdx[4];
  gpuops_cpu_relu_fwd_f32(ry, rx, 4);
  gpuops_cpu_relu_bwd_f32(rdx, rdy, rx, 4);
  th_case(ry[0] == 0 && ry[1] == 0 && ry[2] == 2 && isnan(ry[3]) && rdx[0] == 0 && rdx[1] == 0 && rdx[2] == 5 && rdx[3] == 5,
          "cpu relu and its gradient (PyTorch conventions)", "relu %g %g %g %g, grad %g %g %g %g", ry[0], ry[1], ry[2], ry[3],
          rdx[0], rdx[1], rdx[2], rdx[3]);

  const float a[2] = {0.25f, 1.0f}, z[2] = {0.25f, -1.0f};
  float e[2], c[2], v[2] = {1.0f, 2.0f};
  gpuops_cpu_add_mul_exp_f32(e, a, z, 2, 2.0f);
  gpuops_cpu_add_f32(c, a, z, 2);
  gpuops_cpu_axpy_f32(v, a, 2, 4.0f);
  th_case(near(e[0], 2.718281828459045, 1e-7) && e[1] == 1.0f && c[0] == 0.5f && c[1] == 0.0f && v[0] == 2.0f && v[1] == 6.0f,
          "cpu add, axpy, add_mul_exp", "exp %g %g add %g %g axpy %g %g", e[0], e[1], c[0], c[1], v[0], v[1]);

  // Quantization: ties to even, saturation, NaN and infinities.
  const float qx[9] = {2.5f, 3.5f, -2.5f, -3.5f, 200.0f, -200.0f, NAN, INFINITY, -INFINITY};
  const int8_t qwant[9] = {2, 4, -2, -4, 127, -128, -128, 127, -128};
  int8_t q[9];
  gpuops_status st = gpuops_cpu_quantize_f32(q, qx, 9, 1.0f, 0);
  th_case(st == GPUOPS_OK && memcmp(q, qwant, 9) == 0, "cpu quantize: ties to even, saturation, NaN, inf", "%d %d %d %d %d %d %d %d %d",
          q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8]);
  const float hx[3] = {0.05f, -0.05f, 0.0f};
  gpuops_cpu_quantize_f32(q, hx, 3, 0.1f, 10);  // 0.05 / 0.1 = 0.5 -> 10.5 -> 10; -0.5 + 10 = 9.5 -> 10
  th_case(q[0] == 10 && q[1] == 10 && q[2] == 10, "cpu quantize with a zero point", "%d %d %d", q[0], q[1], q[2]);

  // Per channel on [outer=2, channels=3, inner=2]: channel c of element i is (i / 2) % 3.
  const float sc[3] = {1.0f, 0.5f, 0.25f};
  const int32_t zp[3] = {0, 1, -1};
  float px[12];
  int8_t pq[12], want_pq[12];
  float back[12], want_back[12];
  for (int i = 0; i < 12; ++i) {
    const int ch = (i / 2) % 3;
    px[i] = (float)(i - 6);
    want_pq[i] = (int8_t)(nearbyintf(px[i] / sc[ch]) + zp[ch]);
    want_back[i] = (float)(want_pq[i] - zp[ch]) * sc[ch];
  }
  st = gpuops_cpu_quantize_per_channel_f32(pq, px, sc, zp, 2, 3, 2);
  gpuops_status st2 = gpuops_cpu_dequantize_per_channel_f32(back, pq, sc, zp, 2, 3, 2);
  th_case(st == GPUOPS_OK && st2 == GPUOPS_OK && memcmp(pq, want_pq, 12) == 0 && memcmp(back, want_back, sizeof back) == 0,
          "cpu per-channel quantize and dequantize on [2, 3, 2]", "status %d %d", st, st2);
}

// The backward ops against central differences of the forward ops (both CPU, f32).
static void test_cpu_gradients() {
  const int n = 64;
  vector<float> x(n), xp(n), xm(n), yp(n), ym(n), dx(n), ones(n, 1.0f);
  const float h = 1e-2f;
  for (int i = 0; i < n; ++i) x[i] = -4.0f + 8.0f * (float)i / (n - 1), xp[i] = x[i] + h, xm[i] = x[i] - h;
  for (int k = 0; k < 6; ++k) {
    const gpuops_gelu_approx ap = k == 1 ? GPUOPS_GELU_TANH : GPUOPS_GELU_ERF;
    const char *nm = k == 0 ? "gelu erf" : k == 1 ? "gelu tanh" : k == 2 ? "silu" : k == 3 ? "relu" : k == 4 ? "sigmoid" : "tanh";
    if (k == 4) {
      gpuops_cpu_sigmoid_fwd_f32(yp.data(), xp.data(), n);
      gpuops_cpu_sigmoid_fwd_f32(ym.data(), xm.data(), n);
      gpuops_cpu_sigmoid_bwd_f32(dx.data(), ones.data(), x.data(), n);
    } else if (k == 5) {
      gpuops_cpu_tanh_fwd_f32(yp.data(), xp.data(), n);
      gpuops_cpu_tanh_fwd_f32(ym.data(), xm.data(), n);
      gpuops_cpu_tanh_bwd_f32(dx.data(), ones.data(), x.data(), n);
    } else if (k < 2) {
      gpuops_cpu_gelu_fwd_f32(yp.data(), xp.data(), n, ap);
      gpuops_cpu_gelu_fwd_f32(ym.data(), xm.data(), n, ap);
      gpuops_cpu_gelu_bwd_f32(dx.data(), ones.data(), x.data(), n, ap);
    } else if (k == 2) {
      gpuops_cpu_silu_fwd_f32(yp.data(), xp.data(), n);
      gpuops_cpu_silu_fwd_f32(ym.data(), xm.data(), n);
      gpuops_cpu_silu_bwd_f32(dx.data(), ones.data(), x.data(), n);
    } else {
      gpuops_cpu_relu_fwd_f32(yp.data(), xp.data(), n);
      gpuops_cpu_relu_fwd_f32(ym.data(), xm.data(), n);
      gpuops_cpu_relu_bwd_f32(dx.data(), ones.data(), x.data(), n);
    }
    double worst = 0.0;
    for (int i = 0; i < n; ++i) {
      if (k == 3 && fabsf(x[i]) <= h) continue;  // the kink
      worst = fmax(worst, fabs((yp[i] - ym[i]) / (2.0 * h) - dx[i]));
    }
    th_case(worst < 2e-4, name_of("cpu ", nm, " gradient matches finite differences").c_str(), "max error %g", worst);
  }
}

// ---- argument checking ------------------------------------------------------------------------
// Every failure must return its status and leave the output untouched. The GPU entry points check
// on the host before any launch, so these run without a device (the pointers are never touched).

static void test_arguments() {
  float a[8], b[8], y[8], ws[8];
  int8_t q[8];
  const float sc[2] = {1.0f, 0.0f};
  const int32_t zp[2] = {0, 0}, zp_bad[1] = {300};
  for (int i = 0; i < 8; ++i) a[i] = b[i] = (float)i;
  memset(y, 0x5a, sizeof y);
  memset(q, 0x5a, sizeof q);
  const unsigned char *yb = (const unsigned char *)y;
  auto untouched = [&] {
    for (size_t i = 0; i < sizeof y; ++i)
      if (yb[i] != 0x5a || ((const unsigned char *)q)[i % 8] != 0x5a) return false;
    return true;
  };
  struct expect {
    const char *name;
    gpuops_status got, want;
  };
  const gpuops_algo bad_algo = (gpuops_algo)99;
  float *mis = (float *)((char *)y + 1);
  const expect cases[] = {
      {"negative n", gpuops_add_f32(y, a, b, -1, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu negative n", gpuops_cpu_add_f32(y, a, b, -1), GPUOPS_ERR_INVALID_ARGUMENT},
      {"NULL output", gpuops_add_f32(nullptr, a, b, 8, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"NULL second input", gpuops_add_f32(y, a, nullptr, 8, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu NULL input", gpuops_cpu_gelu_fwd_f32(y, nullptr, 8, GPUOPS_GELU_ERF), GPUOPS_ERR_INVALID_ARGUMENT},
      {"n == 0 with NULL pointers", gpuops_add_f32(nullptr, nullptr, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_OK},
      {"cpu n == 0 with NULL pointers", gpuops_cpu_silu_fwd_f32(nullptr, nullptr, 0), GPUOPS_OK},
      {"algorithm out of range", gpuops_add_f32(y, a, b, 8, bad_algo, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"UNFUSED on an op that is not fused", gpuops_silu_fwd_f32(y, a, 8, GPUOPS_ALGO_UNFUSED, 0), GPUOPS_ERR_UNSUPPORTED},
      {"GELU approximation out of range", gpuops_gelu_fwd_f32(y, a, 8, (gpuops_gelu_approx)7, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu GELU approximation out of range", gpuops_cpu_gelu_bwd_f32(y, a, b, 8, (gpuops_gelu_approx)-1), GPUOPS_ERR_INVALID_ARGUMENT},
      {"misaligned f32 pointer", gpuops_relu_fwd_f32(mis, a, 4, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_MISALIGNED},
      {"cpu misaligned f32 pointer", gpuops_cpu_relu_fwd_f32(mis, a, 4), GPUOPS_ERR_MISALIGNED},
      {"partial overlap", gpuops_add_f32(y + 1, y, b, 4, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu partial overlap", gpuops_cpu_add_scalar_f32(y, y + 2, 4, 1.0f), GPUOPS_ERR_INVALID_ARGUMENT},
      {"quantize scale 0", gpuops_quantize_f32(q, a, 8, 0.0f, 0, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"quantize scale < 0", gpuops_quantize_f32(q, a, 8, -1.0f, 0, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"quantize scale inf", gpuops_quantize_f32(q, a, 8, INFINITY, 0, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"quantize scale NaN", gpuops_quantize_f32(q, a, 8, NAN, 0, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"quantize scale 0 with n == 0", gpuops_quantize_f32(q, a, 0, 0.0f, 0, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"quantize zero point 128", gpuops_quantize_f32(q, a, 8, 1.0f, 128, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"dequantize zero point -129", gpuops_dequantize_f32(y, q, 8, 1.0f, -129, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu dequantize scale NaN", gpuops_cpu_dequantize_f32(y, q, 8, NAN, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"unfused quantize without workspace", gpuops_quantize_f32(q, a, 8, 1.0f, 0, nullptr, 0, GPUOPS_ALGO_UNFUSED, 0), GPUOPS_ERR_WORKSPACE},
      {"unfused quantize, workspace too small", gpuops_quantize_f32(q, a, 8, 1.0f, 0, ws, 31, GPUOPS_ALGO_UNFUSED, 0), GPUOPS_ERR_WORKSPACE},
      {"unfused quantize, misaligned workspace", gpuops_quantize_f32(q, a, 7, 1.0f, 0, (char *)ws + 2, 28, GPUOPS_ALGO_UNFUSED, 0), GPUOPS_ERR_MISALIGNED},
      {"per-channel negative channels", gpuops_quantize_per_channel_f32(q, a, sc, zp, 1, -2, 4, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"per-channel size overflow", gpuops_dequantize_per_channel_f32(y, q, sc, zp, INT64_MAX / 2, 2, 3, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"per-channel NULL scales", gpuops_quantize_per_channel_f32(q, a, nullptr, zp, 2, 2, 2, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_ERR_INVALID_ARGUMENT},
      {"per-channel empty, NULL scales", gpuops_quantize_per_channel_f32(q, a, nullptr, nullptr, 0, 2, 2, nullptr, 0, GPUOPS_ALGO_AUTO, 0), GPUOPS_OK},
      {"cpu per-channel scale 0 (host can check)", gpuops_cpu_quantize_per_channel_f32(q, a, sc, zp, 2, 2, 2), GPUOPS_ERR_INVALID_ARGUMENT},
      {"cpu per-channel zero point out of range", gpuops_cpu_dequantize_per_channel_f32(y, q, sc + 0, zp_bad, 1, 1, 8), GPUOPS_ERR_INVALID_ARGUMENT},
  };
  for (const expect &c : cases)
    th_case(c.got == c.want && untouched(), name_of("argument check: ", c.name).c_str(), "returned '%s', wanted '%s'%s",
            gpuops_status_string(c.got), gpuops_status_string(c.want), untouched() ? "" : ", and the output was written");
  th_case(gpuops_quantize_workspace_size(1000, GPUOPS_ALGO_UNFUSED) == 4000 && gpuops_quantize_workspace_size(1000, GPUOPS_ALGO_AUTO) == 0 &&
              gpuops_quantize_workspace_size(-5, GPUOPS_ALGO_UNFUSED) == 0,
          "quantize workspace size", "%zu", gpuops_quantize_workspace_size(1000, GPUOPS_ALGO_UNFUSED));
  // In place is allowed (output == input).
  float inplace[4] = {1, -2, 3, -4};
  th_case(gpuops_cpu_relu_fwd_f32(inplace, inplace, 4) == GPUOPS_OK && inplace[1] == 0 && inplace[2] == 3, "cpu in place", "");
}

// ---- GPU: every op x type x version ------------------------------------------------------------

// A device allocation with guard zones: the data starts `guard + offset` elements in; everything
// else keeps the poison, which guards_hold() verifies (check::guarded).
// Host data of one case: inputs a, b (floating point) or qa (int8), per-channel parameters, and
// the CPU reference output.
template <class T> struct host_case {
  vector<T> a, b, ref;
  vector<int8_t> qa, qref;
  vector<float> scale_c;
  vector<int32_t> zp_c;
  ewt::call c;
};

template <class T> static host_case<T> make_case(ewt::op o, int64_t n, int64_t outer, int64_t channels, int64_t inner, rng &r) {
  const ewt::info &d = ewt::describe(o);
  host_case<T> h;
  h.a.resize(n);
  h.b.resize(n);
  check::fill_uniform(h.a, r, d.lo, d.hi);
  check::fill_uniform(h.b, r, d.lo, d.hi);
  if (d.int8_in) {
    h.qa.resize(n);
    for (auto &v : h.qa) v = (int8_t)(r.next() & 0xff);
  }
  h.c.n = n;
  h.c.outer = outer;
  h.c.channels = channels;
  h.c.inner = inner;
  h.c.s = o == ewt::AXPY ? 1.5f : 2.0f;
  h.c.zero_point = (int32_t)r.below(41) - 20;
  if (d.per_channel) {
    h.scale_c.resize(channels);
    h.zp_c.resize(channels);
    for (int64_t k = 0; k < channels; ++k) h.scale_c[k] = (float)r.uniform(0.01, 0.05), h.zp_c[k] = (int32_t)r.below(41) - 20;
  }
  // CPU reference on host pointers.
  ewt::call hc = h.c;
  hc.a = d.int8_in ? (const void *)h.qa.data() : (const void *)h.a.data();
  hc.b = h.b.data();
  hc.scale_c = h.scale_c.data();
  hc.zero_point_c = h.zp_c.data();
  if (d.int8_out) {
    h.qref.resize(n);
    hc.y = h.qref.data();
  } else {
    h.ref = o == ewt::AXPY ? h.b : vector<T>(n);  // axpy updates y = b in place
    hc.y = h.ref.data();
    if (o == ewt::AXPY) hc.b = nullptr;
  }
  CHECK_OK(ewt::api<T>::cpu(o, hc));
  return h;
}

struct offsets {
  int64_t y, a, b;
};

// Runs one case on the GPU with one version and one set of pointer offsets; returns "" or why not.
template <class T>
static string run_case(ewt::op o, const host_case<T> &h, gpuops_algo algo, offsets off, unsigned char poison_byte) {
  const ewt::info &d = ewt::describe(o);
  const int64_t n = h.c.n;
  const size_t ysz = d.int8_out ? 1 : sizeof(T);
  guarded y(n, off.y, ysz), a(n, off.a, d.int8_in ? 1 : sizeof(T)), b(n, off.b, sizeof(T));
  y.fill(poison_byte);
  if (o == ewt::AXPY) y.upload(h.b.data());
  a.upload(d.int8_in ? (const void *)h.qa.data() : (const void *)h.a.data());
  if (!h.b.empty()) b.upload(h.b.data());
  float *scale_c = nullptr, *ws = nullptr;
  int32_t *zp_c = nullptr;
  ewt::call c = h.c;
  if (d.per_channel) {
    scale_c = check::to_device(h.scale_c);
    zp_c = check::to_device(h.zp_c);
  }
  if (algo == GPUOPS_ALGO_UNFUSED && d.int8_out) {
    c.workspace_bytes = gpuops_quantize_workspace_size(n, algo);
    CHECK_CUDA(cudaMalloc(&ws, c.workspace_bytes + 4));
    c.workspace = ws;
  }
  c.y = y.data();
  c.a = a.data();
  c.b = b.data();
  c.scale_c = scale_c;
  c.zero_point_c = zp_c;
  const gpuops_status st = ewt::api<T>::gpu(o, c, algo, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaFree(scale_c);
  cudaFree(zp_c);
  cudaFree(ws);

  if (st == GPUOPS_ERR_MISALIGNED && algo == GPUOPS_ALGO_VECTORIZED) return "misaligned";  // the caller decides
  if (st != GPUOPS_OK) return string("status ") + gpuops_status_string(st);
  if (!y.guards_hold(poison_byte)) return "wrote outside the output";
  char buf[256];
  if (d.int8_out) {
    vector<int8_t> got(n);
    y.download(got.data());
    const check::result r = check::compare(got.data(), h.qref.data(), n, check::exact);
    if (!r.ok()) {
      snprintf(buf, sizeof buf, "%lld bad, first at %lld: got %g want %g", (long long)r.bad, (long long)r.first_bad, r.got, r.want);
      return buf;
    }
  } else {
    vector<T> got(n);
    y.download(got.data());
    const check::tolerance tol = d.int8_in ? check::exact : check::default_tolerance<T>();
    // GELU-erf backward: dy * Phi'(x) with Phi absolute-accurate in the far tail (see gpuops.h):
    // the absolute tolerance scales with |dy|.
    vector<float> dy_scale;
    if (o == ewt::GELU_ERF_BWD)
      for (const T &v : h.a) dy_scale.push_back(check::to_float(v));
    const check::result r = check::compare(got.data(), h.ref.data(), n, tol, dy_scale.empty() ? nullptr : dy_scale.data());
    if (!r.ok()) {
      snprintf(buf, sizeof buf, "%lld bad, first at %lld: got %.8g want %.8g (rel norm %.2e)", (long long)r.bad, (long long)r.first_bad,
               r.got, r.want, r.rel_norm);
      return buf;
    }
  }
  return "";
}

template <class T> static void test_gpu_op(ewt::op o, rng &r) {
  const ewt::info &d = ewt::describe(o);
  const string name = string("gpu ") + d.name + " " + check::dtype_name<T>() + ": every version, odd sizes, offset pointers";
  vector<gpuops_algo> algos = {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_GRID_STRIDE, GPUOPS_ALGO_VECTORIZED};
  if (d.fused) algos.push_back(GPUOPS_ALGO_UNFUSED);
  struct shape {
    int64_t outer, channels, inner;
  };
  vector<shape> shapes;
  if (d.per_channel) {
    shapes = {{1, 1, 1}, {1, 1, 17}, {3, 5, 7}, {2, 64, 1}, {7, 3, 1000}, {1, 1000, 3}, {4097, 3, 1}, {2, 3, 8}};
    if (!quick()) shapes.push_back({5, 7, 30011});
    shapes.push_back({3, 5, 140009});  // past the small maps (section 2.4): the default shape
  } else {
    // GPUOPS_TEST_QUICK (the sanitizers, which slow every launch a hundredfold): the sizes around
    // the vector width and the tile, the maps past the small ones, and three offset patterns
    // (aligned, shifted together, apart).
    for (int64_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 255, 256, 257, 1000, 4097, 65537})
      if (!quick() || n == 1 || n == 7 || n == 9 || n == 17 || n == 33 || n == 257 || n == 4097 || n == 65537) shapes.push_back({1, 1, n});
    // The launch shapes of section 2.4 on an H100/H200: up to 65537 the small maps, 2^20 + 5 one
    // vector a thread, 2^22 + 5 the default (on any GPU of up to 256 SMs).
    shapes.push_back({1, 1, (1 << 20) + 5});
    shapes.push_back({1, 1, (1 << 22) + 5});
  }
  const offsets all_offs[] = {{0, 0, 0}, {1, 1, 1}, {2, 0, 1}, {5, 5, 5}, {3, 3, 3}, {0, 1, 0}};
  const std::vector<offsets> offs(all_offs, all_offs + (quick() ? 3 : 6));
  string why;
  int cases = 0;
  for (const shape &s : shapes) {
    const int64_t n = s.outer * s.channels * s.inner;
    const host_case<T> h = make_case<T>(o, n, s.outer, s.channels, s.inner, r);
    for (gpuops_algo algo : algos)
      for (const offsets &off : offs) {
        // The vectorized version runs when every pointer sits at the same element offset modulo
        // its vector of 16 / sizeof(T) elements (the int8 side moves as many elements, fewer
        // bytes), and must answer GPUOPS_ERR_MISALIGNED otherwise.
        const int64_t width = 16 / (int64_t)sizeof(T);
        const bool has_b = d.inputs == 2 && o != ewt::AXPY;  // axpy's second input is y itself
        const bool aligned_together = (off.y % width) == (off.a % width) && (!has_b || (off.b % width) == (off.y % width));
        for (unsigned char pb : {(unsigned char)0xff, (unsigned char)0x5a}) {
          if (pb != 0xff && !d.int8_out) break;  // int8 outputs: a second poison, since -1 is a value
          string got = run_case<T>(o, h, algo, off, pb);
          ++cases;
          if (got == "misaligned" && !aligned_together) got = "";  // the promised answer
          else if (got == "" && algo == GPUOPS_ALGO_VECTORIZED && !aligned_together) got = "vectorized ran on pointers at different offsets";
          if (!got.empty() && why.empty())
            why = got + " (n=" + std::to_string(n) + " shape " + std::to_string(s.outer) + "x" + std::to_string(s.channels) + "x" +
                  std::to_string(s.inner) + ", " + gpuops_algo_name(algo) + ", offsets " + std::to_string(off.y) + "/" +
                  std::to_string(off.a) + "/" + std::to_string(off.b) + ")";
        }
      }
  }
  th_case(why.empty(), name.c_str(), "%s [%d cases]", why.c_str(), cases);
}

// Special values: zeros of both signs, infinities, NaN, the largest finite value of the type, a
// subnormal; two-input ops see every pair. GPU (every version but UNFUSED) against the CPU.
template <class T> static float largest();
template <> float largest<float>() { return 3.4028235e38f; }
template <> float largest<gpuops_f16>() { return 65504.0f; }
template <> float largest<gpuops_bf16>() { return 3.3895314e38f; }

template <class T> static void test_gpu_specials(ewt::op o) {
  const ewt::info &d = ewt::describe(o);
  if (d.int8_in) return;  // dequantize: all 256 int8 inputs, below
  const float vals[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.5f, INFINITY, -INFINITY, NAN, largest<T>(), -largest<T>(), 1e-40f, -7.0f, 30.0f};
  host_case<T> h;
  for (float va : vals)
    for (float vb : vals) h.a.push_back(check::from_float<T>(va)), h.b.push_back(check::from_float<T>(vb));
  h.c.n = (int64_t)h.a.size();  // 196 = 49 x 4 x 1 for the per-channel ops
  h.c.outer = 49, h.c.channels = 4, h.c.inner = 1;
  h.c.s = 2.0f, h.c.scale = 0.5f, h.c.zero_point = -3;
  h.scale_c = {0.5f, 0.01f, 3.0f, 1.0f};
  h.zp_c = {-3, 0, 7, 127};
  ewt::call hc = h.c;
  hc.a = h.a.data();
  hc.b = o == ewt::AXPY ? nullptr : h.b.data();
  hc.scale_c = h.scale_c.data();
  hc.zero_point_c = h.zp_c.data();
  if (d.int8_out) {
    h.qref.resize(h.c.n);
    hc.y = h.qref.data();
  } else {
    h.ref = o == ewt::AXPY ? h.b : vector<T>(h.c.n);
    hc.y = h.ref.data();
  }
  CHECK_OK(ewt::api<T>::cpu(o, hc));
  string why;
  for (gpuops_algo algo : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_GRID_STRIDE})
    if (why.empty()) why = run_case<T>(o, h, algo, {0, 0, 0}, 0xff);
  th_case(why.empty(), (string("gpu ") + d.name + " " + check::dtype_name<T>() + ": special values").c_str(), "%s", why.c_str());
}

// Dequantization of every int8 value, per tensor and per channel, bit-exact against the CPU.
template <class T> static void test_gpu_dequantize_all_values() {
  host_case<T> h;
  for (int v = -128; v < 128; ++v) h.qa.push_back((int8_t)v);
  h.c.n = 256;
  h.c.scale = 0.037f;
  h.c.zero_point = 11;
  ewt::call hc = h.c;
  hc.a = h.qa.data();
  h.ref.resize(256);
  hc.y = h.ref.data();
  CHECK_OK(ewt::api<T>::cpu(ewt::DEQUANTIZE, hc));
  string why = run_case<T>(ewt::DEQUANTIZE, h, GPUOPS_ALGO_AUTO, {0, 0, 0}, 0xff);
  th_case(why.empty(), (string("gpu dequantize ") + check::dtype_name<T>() + ": all 256 int8 values").c_str(), "%s", why.c_str());
}

// Quantization where the division by a reciprocal needs care (gpuops_cuda.cuh quantize_f32): scales
// from the smallest subnormal to the largest float, across the [2^-60, 2^60] range where the
// reciprocal is used; inputs at and next to every half-integer multiple of the scale (the ties),
// tiny, huge, infinite and NaN; four zero points. Per tensor (every version; UNFUSED is the IEEE
// steps) and per channel (one channel per scale), bit for bit against the CPU.
static void test_gpu_quantize_extremes(rng &r) {
  const float scales[] = {1e-45f,  1e-40f,     0x1p-126f, 0x1p-100f, 0x1.fffffep-61f, 0x1p-60f,   0x1.000002p-60f, 1e-10f, 0.02f,
                          0.1f,    1.0f,       3.0f,      7.5e5f,    0x1p59f,         0x1p60f,    0x1.000002p60f,  0x1p61f, 1e30f,
                          3.4e38f, 0x1p-90f,   0.3333333f};
  const int nscales = (int)(sizeof scales / sizeof scales[0]);
  const int32_t zps[] = {0, -3, 127, -128};
  vector<float> base;  // in units of the scale
  for (int k = -131; k <= 131; ++k) base.push_back(k + 0.5f), base.push_back((float)k);
  const float absolute[] = {0.0f,      -0.0f,    1e-45f,   -1e-45f,  1e-40f,   -1e-40f,   0x1p-100f, -0x1p-101f, 0x1p-126f, 3e38f,
                            -3.4e38f,  INFINITY, -INFINITY, NAN,     0x1p100f, -0x1p99f,  1.0f,      -2.5f,      0.5f,      1e-30f};
  const int per_scale = (int)base.size() * 3 + (int)(sizeof absolute / sizeof absolute[0]) + 64;
  vector<float> x;
  for (int c = 0; c < nscales; ++c) {
    const float s = scales[c];
    for (float b : base) {
      const float v = b * s;  // a tie when the product is exact
      x.push_back(v), x.push_back(nextafterf(v, INFINITY)), x.push_back(nextafterf(v, -INFINITY));
    }
    for (float v : absolute) x.push_back(v);
    for (int k = 0; k < 64; ++k) x.push_back((float)r.uniform(-200.0, 200.0) * s);
  }
  const int64_t n = (int64_t)x.size();
  float *dx = check::to_device(x), *dscale = check::to_device(vector<float>(scales, scales + nscales));
  int8_t *dq = nullptr;
  void *ws = nullptr;
  CHECK_CUDA(cudaMalloc(&dq, n));
  CHECK_CUDA(cudaMalloc(&ws, n * sizeof(float)));
  vector<int8_t> want(n);
  string why;
  for (int32_t zp : zps) {
    // per tensor: each scale over the whole input
    for (int c = 0; c < nscales && why.empty(); ++c) {
      CHECK_OK(gpuops_cpu_quantize_f32(want.data(), x.data(), n, scales[c], zp));
      for (gpuops_algo algo : {GPUOPS_ALGO_AUTO, GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_GRID_STRIDE, GPUOPS_ALGO_VECTORIZED, GPUOPS_ALGO_UNFUSED}) {
        check::poison(dq, n);
        const gpuops_status st = gpuops_quantize_f32(dq, dx, n, scales[c], zp, ws, n * sizeof(float), algo, 0);
        const vector<int8_t> got = check::to_host(dq, n);
        for (int64_t i = 0; i < n && why.empty(); ++i)
          if (st != GPUOPS_OK || got[i] != want[i]) {
            char b[200];
            snprintf(b, sizeof b, "%s, scale %a, zero point %d: x = %a gives %d, CPU %d (status %s)", gpuops_algo_name(algo), scales[c], zp, x[i],
                     got[i], want[i], gpuops_status_string(st));
            why = b;
          }
        if (!why.empty()) break;
      }
    }
    // per channel: [1, nscales, per_scale], channel c's inputs built for scale c
    vector<int32_t> zpc(nscales, zp);
    int32_t *dzp = check::to_device(zpc);
    CHECK_OK(gpuops_cpu_quantize_per_channel_f32(want.data(), x.data(), scales, zpc.data(), 1, nscales, per_scale));
    check::poison(dq, n);
    const gpuops_status st = gpuops_quantize_per_channel_f32(dq, dx, dscale, dzp, 1, nscales, per_scale, nullptr, 0, GPUOPS_ALGO_AUTO, 0);
    const vector<int8_t> got = check::to_host(dq, n);
    for (int64_t i = 0; i < n && why.empty(); ++i)
      if (st != GPUOPS_OK || got[i] != want[i]) {
        char b[200];
        snprintf(b, sizeof b, "per channel, scale %a, zero point %d: x = %a gives %d, CPU %d", scales[i / per_scale], zp, x[i], got[i], want[i]);
        why = b;
      }
    cudaFree(dzp);
  }
  cudaFree(dx), cudaFree(dscale), cudaFree(dq), cudaFree(ws);
  th_case(why.empty(), "gpu quantize f32: extreme scales, ties, tiny and huge inputs", "%s [%lld inputs x %d scales x 4 zero points]",
          why.c_str(), (long long)n, nscales);
}

// A failed check on the GPU path leaves device memory untouched.
static void test_gpu_bad_input_writes_nothing() {
  guarded y(1000, 0, 4), q(1000, 0, 1), x(1000, 0, 4);
  const gpuops_status s1 = gpuops_quantize_f32((int8_t *)q.data(), (const float *)x.data(), 1000, 0.0f, 0, nullptr, 0, GPUOPS_ALGO_AUTO, 0);
  const gpuops_status s2 = gpuops_add_f32((float *)y.data(), (const float *)x.data(), nullptr, 1000, GPUOPS_ALGO_AUTO, 0);
  const gpuops_status s3 = gpuops_add_f32((float *)y.data(), (const float *)y.data() + 1, (const float *)x.data(), 999, GPUOPS_ALGO_AUTO, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  th_case(s1 == GPUOPS_ERR_INVALID_ARGUMENT && s2 == GPUOPS_ERR_INVALID_ARGUMENT && s3 == GPUOPS_ERR_INVALID_ARGUMENT &&
              y.guards_hold(0xff) && q.guards_hold(0xff),
          "gpu: rejected calls write nothing", "statuses %d %d %d", s1, s2, s3);
  // Bad pointers reach the device: the error comes back as GPUOPS_ERR_CUDA with its code.
  // (Not tested: a faulting kernel poisons the whole context for the rest of the program.)
}

// The per-channel index helper (the multiply-high divisor below 2^32, the 64-bit divide above),
// against the host, on random positions up to 2^62 and on small ones.
__global__ void channel_at_kernel(const int64_t *i, int64_t channels, int64_t inner, int64_t *out, int n) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) {
    const gpuops::channel_pos p = gpuops::channel_at(i[k], gpuops::divisor(channels), gpuops::divisor(inner));
    out[2 * k] = p.c;
    out[2 * k + 1] = p.r;
  }
}

static void test_gpu_channel_index(rng &r) {
  const int n = 4096;
  const int64_t shapes[][2] = {{3, 1},   {1000, 7},          {65537, 3}, {5, 4294967311ll}, {4294967311ll, 1},
                               {7, 1},   {4294967295ll, 2},  {1, 1},     {641, 6700417},    {3, 2147483648ll}};
  bool ok = true;
  for (auto &s : shapes) {
    vector<int64_t> idx(n);
    for (int k = 0; k < n; ++k) idx[k] = k % 2 ? (int64_t)(r.next() >> 2) : (int64_t)(r.next() & 0xffffffffu);
    idx[0] = 0;
    idx[1] = 4294967295ll;
    idx[2] = 4294967296ll;
    int64_t *di = check::to_device(idx), *dout = nullptr;
    CHECK_CUDA(cudaMalloc(&dout, 2 * n * sizeof(int64_t)));
    channel_at_kernel<<<(n + 255) / 256, 256>>>(di, s[0], s[1], dout, n);
    CHECK_CUDA(cudaGetLastError());
    const vector<int64_t> out = check::to_host(dout, 2 * n);
    for (int k = 0; k < n; ++k) ok = ok && out[2 * k] == (idx[k] / s[1]) % s[0] && out[2 * k + 1] == idx[k] % s[1];
    cudaFree(di);
    cudaFree(dout);
  }
  th_case(ok, "gpu channel index on 64-bit positions", "a channel or position differs from the host's");
}

// One op past 2^31 elements, every version. The input repeats a table of 4093 (prime) values, so
// an index that wraps at 2^31 or 2^32 lands on a different value and fails.
static void test_gpu_past_2_31(rng &r) {
  const char *name = "gpu add_scalar bf16 on 2^31 + 4099 elements, every version";
  if (quick()) return th_skip(name, "GPUOPS_TEST_QUICK is set");
  const int64_t n = (1ll << 31) + 4099, period = 4093;
  size_t free_b = 0, total_b = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < (size_t)(2 * n * 2 + (1 << 30))) return th_skip(name, "needs 9 GB of free device memory");
  vector<gpuops_bf16> table(period), want(period);
  check::fill_uniform(table, r, -100, 100);
  CHECK_OK(gpuops_cpu_add_scalar_bf16(want.data(), table.data(), period, 0.75f));
  vector<gpuops_bf16> hx(n), hy(n);
  for (int64_t i = 0; i < n; ++i) hx[i] = table[i % period];
  gpuops_bf16 *x = check::to_device(hx), *y = nullptr;
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(gpuops_bf16)));
  string why;
  for (gpuops_algo algo : {GPUOPS_ALGO_NAIVE, GPUOPS_ALGO_GRID_STRIDE, GPUOPS_ALGO_VECTORIZED}) {
    check::poison(y, n * sizeof(gpuops_bf16));
    const gpuops_status st = gpuops_add_scalar_bf16(y, x, n, 0.75f, algo, 0);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(hy.data(), y, n * sizeof(gpuops_bf16), cudaMemcpyDeviceToHost));
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (hy[i].bits != want[i % period].bits && bad++ == 0) first = i;
    if (st != GPUOPS_OK || bad) {
      why = string(gpuops_algo_name(algo)) + ": status " + gpuops_status_string(st) + ", " + std::to_string(bad) + " wrong, first at " +
            std::to_string(first);
      break;
    }
  }
  cudaFree(x);
  cudaFree(y);
  th_case(why.empty(), name, "%s", why.c_str());
}

template <class T> static void test_gpu_type(rng &r) {
  for (int o = 0; o < ewt::OP_COUNT; ++o) {
    test_gpu_op<T>((ewt::op)o, r);
    test_gpu_specials<T>((ewt::op)o);
  }
  test_gpu_dequantize_all_values<T>();
}

int main() {
  const uint64_t seed = check::seed();
  printf("test_elementwise: seed %llu (GPUOPS_SEED=%llu replays it)%s\n", (unsigned long long)seed, (unsigned long long)seed,
         quick() ? ", quick" : "");
  rng r(seed);
  test_status_and_names();
  test_half_conversions(r);
  test_cpu_known_values();
  test_cpu_gradients();
  test_arguments();
  if (!check::have_gpu()) {
    const char *why = "no CUDA device";
    for (const char *t : {"f32", "f16", "bf16"})
      for (int o = 0; o < ewt::OP_COUNT; ++o) th_skip((string("gpu ") + ewt::describe((ewt::op)o).name + " " + t).c_str(), why);
    for (const char *g : {"gpu special values", "gpu dequantize all values", "gpu quantize extremes", "gpu rejected calls write nothing",
                          "gpu channel index", "gpu past 2^31 elements"})
      th_skip(g, why);
  } else {
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
    printf("device: %s (compute capability %d.%d)\n", p.name, p.major, p.minor);
    test_gpu_type<float>(r);
    test_gpu_type<gpuops_f16>(r);
    test_gpu_type<gpuops_bf16>(r);
    test_gpu_quantize_extremes(r);
    test_gpu_bad_input_writes_nothing();
    test_gpu_channel_index(r);
    test_gpu_past_2_31(r);
  }
  return th_summary();
}
