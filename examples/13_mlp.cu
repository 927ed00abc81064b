// SPDX-License-Identifier: MIT
// examples/13_mlp.cu - step 13 of the learning path: train a two-layer MLP with the library's ops.
//
// What it teaches
//   A training step is a handful of the ops built so far, chained on one stream with nothing
//   copied back but the loss: the linear layer's forward (one GEMM with the bias and GELU fused into
//   its epilogue, which also writes the pre-activation for the backward), the MSE loss and its
//   gradient, the linear backward (dh = dy * GELU'(preact) and the bias gradient in one pass over
//   dy, then dx = dh W and dW = dh^T x as two GEMMs), and the AdamW update.
//   The mixed-precision recipe: the weights, their gradients and the optimizer's moments are f32
//   (an update of 1e-4 on a weight of 1 would vanish in bf16, whose spacing there is 2^-7); the
//   GEMMs run on bf16 copies of the weights that AdamW rewrites after each step, with f32
//   accumulation; activations are bf16.
//   The task: regress a fixed random "teacher" network t = W2t tanh(W1t x) (64 -> 128 -> 16) with
//   a student 64 -> 256 (GELU) -> 16, 8192 samples, batches of 512, AdamW (lr 2e-3) for 300 steps.
//   The first step's gradients (dW1, db1, dW2, db2) are checked against the CPU implementations
//   (gpuops_cpu_linear_fwd/bwd_bf16, gpuops_cpu_mse_loss_bf16) on the same bf16 weights and data;
//   bf16 rounding of the activations on the two sides leaves a relative error of about 1e-3..1e-2.
//   PREDICTION: the loss falls from about 0.4 (the teacher's output variance) by 10x or more.
//
// The code to read: gpuops_cuda.cuh section 9.1 (the epilogue), 9.3 (linear_bwd_dh, the loss and
// AdamW kernels), 9.5 (gpuops__linbwd_launch: the backward as launches).
// Build: nvcc -O3 -arch=sm_90 -I. examples/13_mlp.cu -o mlp. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_GEMM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <math.h>

#include <string>
#include <vector>

#include "../bench/harness.h"
#include "../tests/check.h"

using bench::fmt;
using std::string;
using std::vector;
using bf16 = gpuops_bf16;

static const int64_t IN = 64, HID = 256, OUT = 16, TEACHER = 128, DATA = 8192, BATCH = 512, STEPS = 300;
static const float LR = 2e-3f, B1 = 0.9f, B2 = 0.999f, EPS = 1e-8f, WD = 0.01f;

// One parameter tensor: f32 master weights and AdamW moments, the bf16 copy the GEMMs read, the f32 gradient.
struct param {
  int64_t n;
  float *w, *m, *v, *g;
  bf16 *w16;
  param(const vector<float> &init) : n((int64_t)init.size()) {
    vector<bf16> h16(n);
    for (int64_t i = 0; i < n; ++i) h16[i] = gpuops_f32_to_bf16(init[i]);
    w = check::to_device(init), w16 = check::to_device(h16);
    for (float **p : {&m, &v, &g}) {
      CHECK_CUDA(cudaMalloc(p, n * 4));
      CHECK_CUDA(cudaMemset(*p, 0, n * 4));
    }
  }
  void step(int64_t t) { CHECK_OK(gpuops_adamw_step_bf16(w, m, v, w16, g, n, LR, B1, B2, EPS, WD, t, nullptr)); }
  ~param() {
    for (void *p : {(void *)w, (void *)m, (void *)v, (void *)g, (void *)w16}) cudaFree(p);
  }
};

// ||got - want|| / ||want|| of a gradient, on the host.
static double rel_err(const vector<float> &got, const vector<float> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) num += (got[i] - want[i]) * (double)(got[i] - want[i]), den += (double)want[i] * want[i];
  return sqrt(num / (den > 0 ? den : 1));
}

int main() {
  if (!check::have_gpu()) {
    printf("13_mlp needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  check::rng rng(seed);
  const bench::device_info dev = bench::device();
  printf("13 mlp: a %lld -> %lld (gelu) -> %lld MLP regressing a %lld -> %lld (tanh) -> %lld teacher; bf16 compute, f32 master weights, AdamW\n",
         (long long)IN, (long long)HID, (long long)OUT, (long long)IN, (long long)TEACHER, (long long)OUT);
  printf("device: %s; %lld samples, batches of %lld, %lld steps; seed %llu (GPUOPS_SEED replays it)\n\n", dev.name, (long long)DATA, (long long)BATCH,
         (long long)STEPS, (unsigned long long)seed);

  // The data: x uniform in [-1, 1], t from the teacher in double, both stored in bf16.
  vector<float> w1t(TEACHER * IN), w2t(OUT * TEACHER);
  for (float &v : w1t) v = (float)rng.uniform(-1.0, 1.0) * sqrtf(12.0f / IN);
  for (float &v : w2t) v = (float)rng.uniform(-1.0, 1.0) * sqrtf(3.0f / TEACHER);
  vector<bf16> xs(DATA * IN), ts(DATA * OUT);
  {
    vector<double> hid(TEACHER);
    for (int64_t s = 0; s < DATA; ++s) {
      for (int64_t i = 0; i < IN; ++i) xs[s * IN + i] = gpuops_f32_to_bf16((float)rng.uniform(-1.0, 1.0));
      for (int64_t j = 0; j < TEACHER; ++j) {
        double a = 0;
        for (int64_t i = 0; i < IN; ++i) a += (double)w1t[j * IN + i] * gpuops_bf16_to_f32(xs[s * IN + i]);
        hid[j] = tanh(a);
      }
      for (int64_t o = 0; o < OUT; ++o) {
        double a = 0;
        for (int64_t j = 0; j < TEACHER; ++j) a += (double)w2t[o * TEACHER + j] * hid[j];
        ts[s * OUT + o] = gpuops_f32_to_bf16((float)a);
      }
    }
  }
  bf16 *d_x = check::to_device(xs), *d_t = check::to_device(ts);

  // The student, initialized as PyTorch's nn.Linear does: uniform in +-1/sqrt(fan_in).
  vector<float> i1(HID * IN), ib1(HID), i2(OUT * HID), ib2(OUT);
  for (float &v : i1) v = (float)rng.uniform(-1.0, 1.0) / sqrtf((float)IN);
  for (float &v : ib1) v = (float)rng.uniform(-1.0, 1.0) / sqrtf((float)IN);
  for (float &v : i2) v = (float)rng.uniform(-1.0, 1.0) / sqrtf((float)HID);
  for (float &v : ib2) v = (float)rng.uniform(-1.0, 1.0) / sqrtf((float)HID);
  param W1(i1), b1(ib1), W2(i2), b2(ib2);

  // Activations and workspaces.
  bf16 *h_pre, *h, *y, *dy, *dh;
  for (auto q : {std::make_pair(&h_pre, BATCH * HID), std::make_pair(&h, BATCH * HID), std::make_pair(&y, BATCH * OUT), std::make_pair(&dy, BATCH * OUT),
                 std::make_pair(&dh, BATCH * HID)})
    CHECK_CUDA(cudaMalloc(q.first, q.second * 2));
  float *d_loss;
  CHECK_CUDA(cudaMalloc(&d_loss, 4));
  const size_t ws_lin = std::max(gpuops_linear_bwd_workspace_size(BATCH, HID, GPUOPS_ACT_GELU_ERF), gpuops_linear_bwd_workspace_size(BATCH, OUT, GPUOPS_ACT_NONE));
  const size_t ws_mse = gpuops_mse_loss_workspace_size(BATCH * OUT), ws_bytes = std::max(ws_lin, ws_mse);
  void *ws;
  CHECK_CUDA(cudaMalloc(&ws, ws_bytes));

  // One step's forward and backward (the gradients land in the params' g); the batch at row `first`.
  auto forward_backward = [&](int64_t first) {
    const bf16 *x = d_x + first * IN, *t = d_t + first * OUT;
    CHECK_OK(gpuops_linear_fwd_bf16(h, h_pre, x, W1.w16, b1.w16, BATCH, IN, HID, GPUOPS_ACT_GELU_ERF, GPUOPS_ALGO_AUTO, nullptr));
    CHECK_OK(gpuops_linear_fwd_bf16(y, nullptr, h, W2.w16, b2.w16, BATCH, HID, OUT, GPUOPS_ACT_NONE, GPUOPS_ALGO_AUTO, nullptr));
    CHECK_OK(gpuops_mse_loss_bf16(d_loss, dy, y, t, BATCH, OUT, ws, ws_bytes, nullptr));
    CHECK_OK(gpuops_linear_bwd_bf16(dh, W2.g, b2.g, dy, nullptr, h, W2.w16, BATCH, HID, OUT, GPUOPS_ACT_NONE, ws, ws_bytes, GPUOPS_ALGO_AUTO, nullptr));
    CHECK_OK(gpuops_linear_bwd_bf16(nullptr, W1.g, b1.g, dh, h_pre, x, W1.w16, BATCH, IN, HID, GPUOPS_ACT_GELU_ERF, ws, ws_bytes, GPUOPS_ALGO_AUTO,
                                    nullptr));
  };

  // Step 1's gradients against the CPU, on the same bf16 weights and batch.
  forward_backward(0);
  CHECK_CUDA(cudaDeviceSynchronize());
  bool grads_ok = true;
  {
    auto host16 = [](const bf16 *d, int64_t n) { return check::to_host(d, (size_t)n); };
    const vector<bf16> w1 = host16(W1.w16, W1.n), c1 = host16(b1.w16, b1.n), w2 = host16(W2.w16, W2.n), c2 = host16(b2.w16, b2.n);
    vector<bf16> hp(BATCH * HID), hh(BATCH * HID), yy(BATCH * OUT), gy(BATCH * OUT), gh(BATCH * HID);
    vector<float> gw1(W1.n), gb1(b1.n), gw2(W2.n), gb2(b2.n);
    float loss_c = 0;
    CHECK_OK(gpuops_cpu_linear_fwd_bf16(hh.data(), hp.data(), xs.data(), w1.data(), c1.data(), BATCH, IN, HID, GPUOPS_ACT_GELU_ERF));
    CHECK_OK(gpuops_cpu_linear_fwd_bf16(yy.data(), nullptr, hh.data(), w2.data(), c2.data(), BATCH, HID, OUT, GPUOPS_ACT_NONE));
    CHECK_OK(gpuops_cpu_mse_loss_bf16(&loss_c, gy.data(), yy.data(), ts.data(), BATCH, OUT));
    CHECK_OK(gpuops_cpu_linear_bwd_bf16(gh.data(), gw2.data(), gb2.data(), gy.data(), nullptr, hh.data(), w2.data(), BATCH, HID, OUT, GPUOPS_ACT_NONE));
    CHECK_OK(gpuops_cpu_linear_bwd_bf16(nullptr, gw1.data(), gb1.data(), gh.data(), hp.data(), xs.data(), w1.data(), BATCH, IN, HID, GPUOPS_ACT_GELU_ERF));
    float loss_g = 0;
    CHECK_CUDA(cudaMemcpy(&loss_g, d_loss, 4, cudaMemcpyDeviceToHost));
    bench::table t;
    t.head = {"first step", "gpu vs cpu (relative norm error)", "check"};
    auto row = [&](const char *name, double e, double tol) {
      const bool ok = e <= tol;
      grads_ok = grads_ok && ok;
      t.add({name, fmt("%.2e", e), ok ? "ok" : fmt("FAIL (tolerance %.0e)", tol)});
    };
    row("loss", fabs(loss_g - loss_c) / fabs(loss_c), 1e-2);
    row("dW2", rel_err(check::to_host(W2.g, W2.n), gw2), 2e-2);
    row("db2", rel_err(check::to_host(b2.g, b2.n), gb2), 2e-2);
    row("dW1", rel_err(check::to_host(W1.g, W1.n), gw1), 3e-2);
    row("db1", rel_err(check::to_host(b1.g, b1.n), gb1), 3e-2);
    t.print();
    printf("\n");
  }

  // Training: the first step's gradients are already in place.
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  CHECK_CUDA(cudaEventRecord(e0, 0));
  vector<float> losses;
  bench::table t;
  t.head = {"step", "loss"};
  for (int64_t s = 1; s <= STEPS; ++s) {
    if (s > 1) forward_backward(((s - 1) * BATCH) % DATA);
    for (param *p : {&W1, &b1, &W2, &b2}) p->step(s);
    float loss = 0;
    CHECK_CUDA(cudaMemcpy(&loss, d_loss, 4, cudaMemcpyDeviceToHost));  // waits for the step
    losses.push_back(loss);
    if (s == 1 || s % 25 == 0) t.add({std::to_string(s), fmt("%.5f", loss)});
  }
  CHECK_CUDA(cudaEventRecord(e1, 0));
  CHECK_CUDA(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  t.print();
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) first += losses[i] / 10, last += losses[losses.size() - 1 - i] / 10;
  const bool falls = isfinite(last) && last < 0.5 * first;
  printf("\nmean loss of the first 10 steps %.5f, of the last 10 %.5f (%.1fx lower); %.3f ms a step (with a loss copy to the host each step)\n",
         first, last, first / last, ms / STEPS);
  printf("result: 13 mlp | adamw bf16 | %.3f ms/step | loss %.4f -> %.4f | grads vs cpu %s | %s\n", ms / STEPS, first, last, grads_ok ? "ok" : "FAIL",
         falls && grads_ok ? "ok" : "FAIL");
  for (void *p : {(void *)d_x, (void *)d_t, (void *)h_pre, (void *)h, (void *)y, (void *)dy, (void *)dh, (void *)d_loss, ws}) CHECK_CUDA(cudaFree(p));
  return falls && grads_ok ? 0 : 1;
}
