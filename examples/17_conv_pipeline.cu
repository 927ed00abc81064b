// SPDX-License-Identifier: MIT
// examples/17_conv_pipeline.cu - step 17 of the learning path: a streamed batch pipeline, the host
// side of an inference job.
//
// What it teaches
//   A batch of 10000 images (3 x 32 x 32, f32, NCHW) in host memory goes through one layer,
//   y = ReLU(conv2d(x, w) + bias) with 16 filters of 3 x 3 ('same' padding), and back to the host.
//   The kernel is short; the copies are what cost. Two ways:
//   serial pageable   the batch in ordinary (malloc) memory, one stream, chunk after chunk: copy in,
//                     convolve, copy out, each waiting for the last. A pageable copy is staged by
//                     the driver through a pinned bounce buffer, so it also runs slower.
//   pipelined pinned  the batch in page-locked memory (cudaHostAlloc: the copy engines read it
//                     directly, and cudaMemcpyAsync returns at once), chunks dealt round-robin to
//                     kStreams streams with their own device buffers: chunk i's host-to-device copy,
//                     chunk i-1's convolution and chunk i-2's device-to-host copy run at the same
//                     time (the H2D and D2H copy engines and the SMs are three separate resources).
//   It prints the copy bandwidth of pageable and pinned memory, images/s of both ways, the overlap
//   achieved (the pipelined time against the sum of its stages run one by one) and the event
//   timeline of the first chunks, where the stages of neighbouring chunks overlap.
//   Why an example, not an API: the pipeline is a few dozen lines of stream and event calls around
//   one library op; its choices (chunk size, stream count, where the batch lives, what the model
//   is) belong to the application, and the library never allocates or synchronizes.
// PREDICTION for an H100 on PCIe 5 (not a measurement): pinned ~2x pageable bandwidth, and the
//   pipeline >= 1.6x the serial pageable images/s, bounded by the H2D + D2H copy engines.
//
// Checked: the first and last images of each run against the CPU implementation.
// Build: nvcc -O3 -arch=sm_90 -I. examples/17_conv_pipeline.cu -o conv_pipeline. GPUOPS_SEED=N replays.
#define GPUOPS_ONLY_CONV
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string.h>

#include <chrono>
#include <string>
#include <vector>

#include "../tests/check.h"
#include "../bench/harness.h"

using std::string;
using std::vector;

static const int64_t kImages = 10000, kChunk = 500;
static const int kStreams = 3;

// Host-to-device or device-to-host bandwidth of `bytes` from/to host memory h, in GB/s.
static double copy_gbps(void *h, void *d, size_t bytes, bool to_device) {
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    CHECK_CUDA(cudaEventRecord(e0, 0));
    if (to_device) CHECK_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    else CHECK_CUDA(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaEventRecord(e1, 0));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    best = ms < best ? ms : best;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return (double)bytes / (best * 1e6);
}

int main() {
  if (!check::have_gpu()) {
    printf("17_conv_pipeline needs a CUDA GPU; none was found, so there is nothing to run here.\n");
    return 0;
  }
  const uint64_t seed = check::seed();
  const bench::device_info dev = bench::device();
  gpuops_conv2d_shape s = {};
  s.n = kChunk, s.c = 3, s.h = s.w = 32, s.k = 16, s.r = s.s = 3, s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1, s.pad_h = s.pad_w = 1;
  s.layout = GPUOPS_LAYOUT_NCHW;
  const int64_t in_img = 3 * 32 * 32, out_img = 16 * 32 * 32, chunks = kImages / kChunk;
  const size_t in_bytes = (size_t)(kImages * in_img) * 4, out_bytes = (size_t)(kImages * out_img) * 4;
  printf("17 conv pipeline: %lld images of 3 x 32 x 32 f32 -> conv2d 3x3, 16 filters, bias, ReLU; chunks of %lld; seed %llu\n", (long long)kImages,
         (long long)kChunk, (unsigned long long)seed);
  printf("device: %s, %d SMs; %.0f MB in, %.0f MB out\n\n", dev.name, dev.sms, in_bytes / 1e6, out_bytes / 1e6);
  fflush(stdout);

  check::rng rng(seed);
  vector<float> w(16 * 27), bias(16);
  check::fill_uniform(w, rng, -0.3, 0.3), check::fill_uniform(bias, rng, -0.1, 0.1);
  float *dw = check::to_device(w), *db = check::to_device(bias);
  // The batch, pageable and pinned (the same values).
  float *x_page = (float *)malloc(in_bytes), *y_page = (float *)malloc(out_bytes), *x_pin = nullptr, *y_pin = nullptr;
  if (!x_page || !y_page) {
    fprintf(stderr, "out of host memory\n");
    return 2;
  }
  CHECK_CUDA(cudaHostAlloc(&x_pin, in_bytes, cudaHostAllocDefault));
  CHECK_CUDA(cudaHostAlloc(&y_pin, out_bytes, cudaHostAllocDefault));
  for (int64_t i = 0; i < kImages * in_img; ++i) x_page[i] = (float)rng.uniform(-1.0, 1.0);
  memcpy(x_pin, x_page, in_bytes);
  memset(y_page, 0xFF, out_bytes);
  memset(y_pin, 0xFF, out_bytes);

  // Copy bandwidth: pageable and pinned, both directions, the size of the output batch.
  void *dbig = nullptr;
  CHECK_CUDA(cudaMalloc(&dbig, out_bytes));
  const double h2d_page = copy_gbps(y_page, dbig, out_bytes, true), h2d_pin = copy_gbps(y_pin, dbig, out_bytes, true);
  const double d2h_page = copy_gbps(y_page, dbig, out_bytes, false), d2h_pin = copy_gbps(y_pin, dbig, out_bytes, false);
  CHECK_CUDA(cudaFree(dbig));
  printf("copy bandwidth (%.0f MB): host-to-device pageable %.1f GB/s, pinned %.1f GB/s; device-to-host pageable %.1f GB/s, pinned %.1f GB/s\n\n",
         out_bytes / 1e6, h2d_page, h2d_pin, d2h_page, d2h_pin);

  // Per-stream device buffers and events.
  float *dx[kStreams], *dy[kStreams];
  cudaStream_t st[kStreams];
  for (int i = 0; i < kStreams; ++i) {
    CHECK_CUDA(cudaMalloc(&dx[i], kChunk * in_img * 4));
    CHECK_CUDA(cudaMalloc(&dy[i], kChunk * out_img * 4));
    CHECK_CUDA(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
  }
  vector<cudaEvent_t> ev(4 * chunks);  // per chunk: start, after H2D, after compute, after D2H
  for (auto &e : ev) CHECK_CUDA(cudaEventCreate(&e));
  auto seconds = [](auto t0) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  // 1. Serial, pageable: blocking copies, one stream.
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < chunks; ++c) {
    CHECK_CUDA(cudaMemcpy(dx[0], x_page + c * kChunk * in_img, kChunk * in_img * 4, cudaMemcpyHostToDevice));
    CHECK_OK(gpuops_conv2d_f32(dy[0], dx[0], dw, db, &s, GPUOPS_ACT_RELU, nullptr, 0, GPUOPS_ALGO_AUTO, nullptr));
    CHECK_CUDA(cudaMemcpy(y_page + c * kChunk * out_img, dy[0], kChunk * out_img * 4, cudaMemcpyDeviceToHost));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  const double serial_s = seconds(t0);

  // 2. The stages one by one on pinned memory (one stream, events between): the no-overlap sum.
  double stage_ms[3] = {0, 0, 0};
  for (int64_t c = 0; c < chunks; ++c) {
    cudaEvent_t *e = &ev[4 * c];
    CHECK_CUDA(cudaEventRecord(e[0], st[0]));
    CHECK_CUDA(cudaMemcpyAsync(dx[0], x_pin + c * kChunk * in_img, kChunk * in_img * 4, cudaMemcpyHostToDevice, st[0]));
    CHECK_CUDA(cudaEventRecord(e[1], st[0]));
    CHECK_OK(gpuops_conv2d_f32(dy[0], dx[0], dw, db, &s, GPUOPS_ACT_RELU, nullptr, 0, GPUOPS_ALGO_AUTO, st[0]));
    CHECK_CUDA(cudaEventRecord(e[2], st[0]));
    CHECK_CUDA(cudaMemcpyAsync(y_pin + c * kChunk * out_img, dy[0], kChunk * out_img * 4, cudaMemcpyDeviceToHost, st[0]));
    CHECK_CUDA(cudaEventRecord(e[3], st[0]));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int64_t c = 0; c < chunks; ++c)
    for (int k = 0; k < 3; ++k) {
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, ev[4 * c + k], ev[4 * c + k + 1]));
      stage_ms[k] += ms;
    }
  const double sum_s = (stage_ms[0] + stage_ms[1] + stage_ms[2]) / 1e3;

  // 3. Pipelined, pinned: chunk c on stream c % kStreams; events mark each stage for the timeline.
  memset(y_pin, 0xFF, out_bytes);
  cudaEvent_t origin;
  CHECK_CUDA(cudaEventCreate(&origin));
  CHECK_CUDA(cudaDeviceSynchronize());
  t0 = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaEventRecord(origin, st[0]));
  for (int64_t c = 0; c < chunks; ++c) {
    const int i = (int)(c % kStreams);
    cudaEvent_t *e = &ev[4 * c];
    CHECK_CUDA(cudaEventRecord(e[0], st[i]));
    CHECK_CUDA(cudaMemcpyAsync(dx[i], x_pin + c * kChunk * in_img, kChunk * in_img * 4, cudaMemcpyHostToDevice, st[i]));
    CHECK_CUDA(cudaEventRecord(e[1], st[i]));
    CHECK_OK(gpuops_conv2d_f32(dy[i], dx[i], dw, db, &s, GPUOPS_ACT_RELU, nullptr, 0, GPUOPS_ALGO_AUTO, st[i]));
    CHECK_CUDA(cudaEventRecord(e[2], st[i]));
    CHECK_CUDA(cudaMemcpyAsync(y_pin + c * kChunk * out_img, dy[i], kChunk * out_img * 4, cudaMemcpyDeviceToHost, st[i]));
    CHECK_CUDA(cudaEventRecord(e[3], st[i]));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  const double pipe_s = seconds(t0);

  // Check the first and last image of both runs against the CPU.
  gpuops_conv2d_shape one = s;
  one.n = 1;
  vector<float> want(out_img);
  bool ok = true;
  for (int64_t img : {(int64_t)0, kImages - 1}) {
    CHECK_OK(gpuops_cpu_conv2d_f32(want.data(), x_page + img * in_img, w.data(), bias.data(), &one, GPUOPS_ACT_RELU));
    const check::result a = check::compare(y_page + img * out_img, want.data(), out_img, check::tolerance{1e-5, 1e-5});
    const check::result b = check::compare(y_pin + img * out_img, want.data(), out_img, check::tolerance{1e-5, 1e-5});
    if (!a.ok() || !b.ok()) printf("image %lld: serial %s, pipelined %s\n", (long long)img, check::verdict(a).c_str(), check::verdict(b).c_str());
    ok = ok && a.ok() && b.ok();
  }

  bench::table table;
  table.head = {"run", "time (ms)", "images/s", "x serial pageable", "check"};
  table.add({"serial, pageable", bench::num(serial_s * 1e3), bench::num(kImages / serial_s), "1.00x", ok ? "ok" : "FAIL"});
  table.add({bench::fmt("stages one by one, pinned (H2D %.1f + conv %.1f + D2H %.1f ms)", stage_ms[0], stage_ms[1], stage_ms[2]), bench::num(sum_s * 1e3),
             bench::num(kImages / sum_s), bench::num(serial_s / sum_s, "x"), "-"});
  table.add({bench::fmt("pipelined, pinned, %d streams", kStreams), bench::num(pipe_s * 1e3), bench::num(kImages / pipe_s), bench::num(serial_s / pipe_s, "x"),
             ok ? "ok" : "FAIL"});
  table.print();
  printf("\noverlap achieved: the stages sum to %.1f ms, the pipeline took %.1f ms: %.2fx (1.00x = no overlap; the longest stage, %.1f ms, bounds it)\n",
         sum_s * 1e3, pipe_s * 1e3, sum_s / pipe_s, std::max(stage_ms[0], std::max(stage_ms[1], stage_ms[2])));
  printf("\nevent timeline of the pipeline's first 6 chunks (ms from its start; H2D | conv | D2H):\n");
  for (int64_t c = 0; c < 6 && c < chunks; ++c) {
    float t[4];
    for (int k = 0; k < 4; ++k) CHECK_CUDA(cudaEventElapsedTime(&t[k], origin, ev[4 * c + k]));
    printf("  chunk %lld (stream %lld): H2D %6.3f-%6.3f | conv %6.3f-%6.3f | D2H %6.3f-%6.3f\n", (long long)c, (long long)(c % kStreams), t[0], t[1], t[1], t[2],
           t[2], t[3]);
  }
  printf("result: 17 conv pipeline | pipelined pinned | %.0f images/s | %.2fx serial pageable | %.2fx overlap | %s\n", kImages / pipe_s, serial_s / pipe_s,
         sum_s / pipe_s, ok ? "ok" : "FAIL");
  for (auto &e : ev) cudaEventDestroy(e);
  cudaEventDestroy(origin);
  for (int i = 0; i < kStreams; ++i) {
    CHECK_CUDA(cudaFree(dx[i]));
    CHECK_CUDA(cudaFree(dy[i]));
    CHECK_CUDA(cudaStreamDestroy(st[i]));
  }
  CHECK_CUDA(cudaFreeHost(x_pin));
  CHECK_CUDA(cudaFreeHost(y_pin));
  free(x_page);
  free(y_page);
  CHECK_CUDA(cudaFree(dw));
  CHECK_CUDA(cudaFree(db));
  return ok ? 0 : 1;
}
