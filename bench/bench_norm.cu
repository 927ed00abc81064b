// SPDX-License-Identifier: MIT
// bench/bench_norm.cu - speed of the normalization family against the copy ceiling, measured in the
// same run: LayerNorm and RMSNorm forward (every version) and backward (dx, dgamma and dbeta
// together), the residual forms and LayerNorm + GELU (fused against UNFUSED), and RoPE, in f32 and
// bf16, at the target shapes (32768 x 4096, 131072 x 1024, rows of 16384 and 65536) and a
// few short-row ones. Each (op, version, type, shape) is validated against the CPU implementation
// on sample rows (first, middle, last) before it is timed. Writes every measurement as CSV.
//   usage: bench_norm [--csv PATH] [--quick] [--type f32|bf16] [--only OP]
//   --quick: the target shapes only.
// Bytes counted (what the op must move): forward 2 x n x sizeof(T) (x read, y written), add_* 4
// (x and residual read, h and y written), backward 3 (dy and x read, dx written; gamma, the
// statistics and dgamma / dbeta are under 0.1% here and not counted), RoPE 2. Slower versions are
// charged the same bytes, so their GB/s is the effective rate.
#define GPUOPS_ONLY_NORM
#define GPUOPS_IMPLEMENTATION
#include "gpuops.h"

#include <string>
#include <vector>

#include "../bench/harness.h"
#include "check.h"
#include "norm_ops.h"

using std::string;
using std::vector;

struct shape {
  int64_t rows, cols;
};

struct row {
  string op, type, version;
  shape s;
  double us, gbps, x_copy;
};

// Device arrays of one type, for the largest shape.
template <class T> struct buffers {
  T *x, *res, *y, *h, *dy, *dx, *gamma, *beta, *dg, *db;
  float *mean, *rstd;
  void *ws;
  size_t ws_bytes;
};

// Sample rows of the GPU's output against the CPU (loose: the tests hold the tight tolerances); ""
// or why not.
template <class T> string validate_rows(norm_op o, const buffers<T> &b, shape s) {
  const norm_op_info in = norm_info(o);
  const int64_t c = s.cols;
  vector<T> g(c), be(c);
  CHECK_CUDA(cudaMemcpy(g.data(), b.gamma, c * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(be.data(), b.beta, c * sizeof(T), cudaMemcpyDeviceToHost));
  for (int64_t r : {(int64_t)0, s.rows / 2, s.rows - 1}) {
    vector<T> x(c), res(c), dy(c), got(c), want(c), h(c);
    float mean = 0, rstd = 0;
    CHECK_CUDA(cudaMemcpy(x.data(), b.x + r * c, c * sizeof(T), cudaMemcpyDeviceToHost));
    norm_io a;
    a.rows = 1, a.cols = c, a.eps = 1e-5f, a.approx = GPUOPS_GELU_TANH, a.gamma = g.data(), a.beta = in.rms ? nullptr : be.data(), a.x = x.data(), a.y = want.data();
    if (in.bwd) {
      CHECK_CUDA(cudaMemcpy(dy.data(), b.dy + r * c, c * sizeof(T), cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(&mean, b.mean + r, 4, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(&rstd, b.rstd + r, 4, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(got.data(), b.dx + r * c, c * sizeof(T), cudaMemcpyDeviceToHost));
      a.dy = dy.data(), a.mean_in = &mean, a.rstd_in = &rstd;
    } else {
      if (in.res) {
        CHECK_CUDA(cudaMemcpy(res.data(), b.res + r * c, c * sizeof(T), cudaMemcpyDeviceToHost));
        a.res = res.data(), a.h = h.data();
      }
      CHECK_CUDA(cudaMemcpy(got.data(), b.y + r * c, c * sizeof(T), cudaMemcpyDeviceToHost));
    }
    CHECK_OK(norm_api<T>::cpu(o, a));
    check::tolerance tol = check::default_tolerance<T>();
    tol.rtol = sizeof(T) == 4 ? 1e-4 : tol.rtol;
    tol.atol = sizeof(T) == 4 ? 1e-4 : 2e-2;
    const check::result res_ = check::compare(got.data(), want.data(), c, tol);
    if (!res_.ok()) return bench::fmt("row %lld: ", (long long)r) + check::verdict(res_);
  }
  return "";
}

template <class T>
void bench_type(bench::timer &t, double copy, const vector<shape> &shapes, uint64_t seed, const string &only, vector<row> &rows, int &failures) {
  int64_t nmax = 0, cmax = 0, rmax = 0;
  for (const shape &s : shapes) nmax = std::max(nmax, s.rows * s.cols), cmax = std::max(cmax, s.cols), rmax = std::max(rmax, s.rows);
  buffers<T> b;
  T **big[] = {&b.x, &b.res, &b.y, &b.h, &b.dy, &b.dx}, **small[] = {&b.gamma, &b.beta, &b.dg, &b.db};
  for (T **p : big) CHECK_CUDA(cudaMalloc(p, nmax * sizeof(T)));
  for (T **p : small) CHECK_CUDA(cudaMalloc(p, cmax * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&b.mean, rmax * 4));
  CHECK_CUDA(cudaMalloc(&b.rstd, rmax * 4));
  b.ws_bytes = 0;
  for (const shape &s : shapes) b.ws_bytes = std::max(b.ws_bytes, gpuops_norm_bwd_workspace_size(s.rows, s.cols));
  CHECK_CUDA(cudaMalloc(&b.ws, b.ws_bytes));
  t.settle();
  struct job {
    norm_op op;
    vector<gpuops_algo> algos;
  };
  const gpuops_algo A = GPUOPS_ALGO_AUTO;
  const vector<job> jobs = {
      {N_LN_FWD, {GPUOPS_ALGO_BLOCK_PER_ROW, GPUOPS_ALGO_WARP_PER_ROW, GPUOPS_ALGO_ONLINE, GPUOPS_ALGO_ROW_REGISTERS, A}},
      {N_RMS_FWD, {GPUOPS_ALGO_ONLINE, A}},
      {N_LN_BWD, {GPUOPS_ALGO_ONLINE, A}},
      {N_RMS_BWD, {GPUOPS_ALGO_ONLINE, A}},
      {N_ADD_LN_FWD, {GPUOPS_ALGO_UNFUSED, A}},
      {N_ADD_RMS_FWD, {GPUOPS_ALGO_UNFUSED, A}},
      {N_LN_GELU_FWD, {GPUOPS_ALGO_UNFUSED, A}},
      {N_LN_GELU_BWD, {GPUOPS_ALGO_UNFUSED, A}},
  };
  for (const shape &s : shapes) {
    const int64_t n = s.rows * s.cols;
    bench::fill_uniform(b.x, n, seed, -3.0f, 3.0f);
    bench::fill_uniform(b.res, n, seed + 1, -3.0f, 3.0f);
    bench::fill_uniform(b.dy, n, seed + 2, -1.0f, 1.0f);
    bench::fill_uniform(b.gamma, s.cols, seed + 3, 0.5f, 1.5f);
    bench::fill_uniform(b.beta, s.cols, seed + 4, -1.0f, 1.0f);
    for (const job &jb : jobs) {
      const norm_op_info in = norm_info(jb.op);
      if (!only.empty() && only != in.name) continue;
      norm_io a;
      a.rows = s.rows, a.cols = s.cols, a.eps = 1e-5f, a.approx = GPUOPS_GELU_TANH, a.gamma = b.gamma, a.beta = in.rms ? nullptr : b.beta, a.x = b.x;
      if (in.bwd) {  // mean and rstd from the forward
        norm_io f = a;
        f.y = b.y, f.mean = in.rms ? nullptr : b.mean, f.rstd = b.rstd;
        CHECK_OK(norm_api<T>::gpu(jb.op == N_RMS_BWD ? N_RMS_FWD : jb.op == N_LN_BWD ? N_LN_FWD : N_LN_GELU_FWD, f, A));
        a.y = b.dx, a.dy = b.dy, a.mean_in = b.mean, a.rstd_in = b.rstd, a.dgamma = b.dg, a.dbeta = in.rms ? nullptr : b.db, a.ws = b.ws, a.ws_bytes = b.ws_bytes;
      } else {
        a.y = b.y, a.mean = in.rms ? nullptr : b.mean, a.rstd = b.rstd;
        if (in.res) a.res = b.res, a.h = b.h;
      }
      for (gpuops_algo al : jb.algos) {
        check::poison(a.y, n * sizeof(T));
        const gpuops_status st = norm_api<T>::gpu(jb.op, a, al);
        CHECK_CUDA(cudaDeviceSynchronize());
        if (st == GPUOPS_ERR_UNSUPPORTED && al == GPUOPS_ALGO_ROW_REGISTERS) continue;  // rows past its lengths
        const string why = st != GPUOPS_OK ? string(gpuops_status_string(st)) : validate_rows<T>(jb.op, b, s);
        if (!why.empty()) {
          printf("VALIDATION FAILED %s %s %s %lldx%lld: %s\n", in.name, check::dtype_name<T>(), gpuops_algo_name(al), (long long)s.rows,
                 (long long)s.cols, why.c_str());
          ++failures;
          continue;
        }
        const double ms = t.median_ms([&] { CHECK_OK(norm_api<T>::gpu(jb.op, a, al)); });
        const double bytes = (in.bwd ? 3.0 : in.res ? 4.0 : 2.0) * (double)n * sizeof(T), gbps = bytes / (ms * 1e6);
        rows.push_back({in.name, check::dtype_name<T>(), gpuops_algo_name(al), s, ms * 1e3, gbps, gbps / copy});
      }
    }
  }
  // RoPE: 16384 tokens x 32 heads x 128 (q of a Llama-7B step), both pairings, angles on the fly or
  // from a cos/sin cache, AUTO and NAIVE.
  if (only.empty() || only == "rope") {
    const int64_t tokens = 16384, heads = 32, hd = 128, n = tokens * heads * hd, max_pos = 16384;
    vector<int64_t> hpos(tokens);
    for (int64_t i = 0; i < tokens; ++i) hpos[i] = (i * 7919) % max_pos;
    vector<float> hcs(max_pos * hd);
    for (int64_t p = 0; p < max_pos; ++p)
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double ang = (double)p * pow(10000.0, -2.0 * i / hd);
        hcs[p * hd + i] = (float)cos(ang), hcs[p * hd + hd / 2 + i] = (float)sin(ang);
      }
    int64_t *pos = check::to_device(hpos);
    float *cs = check::to_device(hcs);
    bench::fill_uniform(b.x, n, seed + 5, -2.0f, 2.0f);
    for (int pairing = 0; pairing < 2; ++pairing)
      for (int cache = 0; cache < 2; ++cache)
        for (gpuops_algo al : {GPUOPS_ALGO_NAIVE, A}) {
          const gpuops_rope_pairing pr = (gpuops_rope_pairing)pairing;
          auto run = [&] { return norm_api<T>::rope(false, b.y, b.x, pos, cache ? cs : nullptr, tokens, heads, hd, hd, heads * hd, heads * hd, 10000.0f, pr, al); };
          check::poison(b.y, n * sizeof(T));
          CHECK_OK(run());
          CHECK_CUDA(cudaDeviceSynchronize());
          // Validate tokens 0, the middle and the last.
          string why;
          for (int64_t tk : {(int64_t)0, tokens / 2, tokens - 1}) {
            vector<T> hx(heads * hd), got(heads * hd), want(heads * hd);
            CHECK_CUDA(cudaMemcpy(hx.data(), b.x + tk * heads * hd, heads * hd * sizeof(T), cudaMemcpyDeviceToHost));
            CHECK_CUDA(cudaMemcpy(got.data(), b.y + tk * heads * hd, heads * hd * sizeof(T), cudaMemcpyDeviceToHost));
            CHECK_OK(norm_api<T>::cpu_rope(false, want.data(), hx.data(), &hpos[tk], cache ? hcs.data() : nullptr, 1, heads, hd, hd, heads * hd, heads * hd, 10000.0f, pr));
            const check::result rs = check::compare(got.data(), want.data(), heads * hd, {sizeof(T) == 4 ? 1e-5 : 2e-2, check::default_tolerance<T>().rtol});
            if (!rs.ok() && why.empty()) why = bench::fmt("token %lld: ", (long long)tk) + check::verdict(rs);
          }
          const string name = string("rope_") + (pairing ? "halves" : "adjacent") + (cache ? "_cache" : "");
          if (!why.empty()) {
            printf("VALIDATION FAILED %s %s %s: %s\n", name.c_str(), check::dtype_name<T>(), gpuops_algo_name(al), why.c_str());
            ++failures;
            continue;
          }
          const double ms = t.median_ms([&] { CHECK_OK(run()); });
          const double gbps = 2.0 * (double)n * sizeof(T) / (ms * 1e6);
          rows.push_back({name, check::dtype_name<T>(), gpuops_algo_name(al), {tokens, heads * hd}, ms * 1e3, gbps, gbps / copy});
        }
    cudaFree(pos);
    cudaFree(cs);
  }
  for (T **p : big) cudaFree(*p);
  for (T **p : small) cudaFree(*p);
  cudaFree(b.mean);
  cudaFree(b.rstd);
  cudaFree(b.ws);
}

static const row *find(const vector<row> &rows, const string &op, const string &type, shape s, const string &version) {
  for (const row &r : rows)
    if (r.op == op && r.type == type && r.s.rows == s.rows && r.s.cols == s.cols && r.version == version) return &r;
  return nullptr;
}

int main(int argc, char **argv) {
  const bench::options opt(argc, argv, "bench_norm");
  if (!opt.have_gpu()) return 0;
  const bench::device_info dev = bench::device();
  const uint64_t seed = check::seed();
  bench::print_device(dev, seed);
  bench::timer t;
  const double copy = bench::copy_ceiling(t);

  // The target shapes, 2^27 elements each, rows that are not whole 16-byte vectors (every phase:
  // AUTO's row views), then short rows.
  const vector<shape> big = {{32768, 4096}, {131072, 1024}, {8192, 16384}, {2048, 65536}, {32767, 4097}, {10922, 12289}};
  vector<shape> shapes = big;
  if (!opt.quick)
    for (shape s : vector<shape>{{1 << 20, 128}, {262144, 512}, {16384, 8192}}) shapes.push_back(s);
  vector<row> rows;
  int failures = 0;
  if (opt.type.empty() || opt.type == "f32") bench_type<float>(t, copy, shapes, seed, opt.only, rows, failures);
  if (opt.type.empty() || opt.type == "bf16") bench_type<gpuops_bf16>(t, copy, shapes, seed, opt.only, rows, failures);

  bench::table all;
  all.head = {"family", "op", "dtype", "rows", "cols", "version", "time_us", "gb_per_s", "x_copy", "copy_gb_per_s", "device"};
  for (const row &r : rows)
    all.add({"norm", r.op, r.type, std::to_string(r.s.rows), std::to_string(r.s.cols), r.version, bench::fmt("%.3f", r.us), bench::fmt("%.1f", r.gbps),
             bench::fmt("%.4f", r.x_copy), bench::fmt("%.1f", copy), dev.name});
  all.write_csv(opt.csv);

  // One table per op: AUTO's fraction of the copy ceiling beside the other versions, and the target.
  int missed = 0;
  const vector<string> ops = {"layernorm_fwd", "rmsnorm_fwd", "layernorm_bwd", "rmsnorm_bwd", "add_layernorm_fwd", "add_rmsnorm_fwd",
                              "layernorm_gelu_fwd", "layernorm_gelu_bwd"};
  for (const string &op : ops) {
    vector<string> versions;
    for (const row &r : rows)
      if (r.op == op && std::find(versions.begin(), versions.end(), r.version) == versions.end()) versions.push_back(r.version);
    if (versions.empty()) continue;
    bench::table tb;
    tb.head = {"shape", "type"};
    for (const string &v : versions) tb.head.push_back(v + " x copy");
    tb.head.push_back("auto us");
    tb.head.push_back("target");
    const bool fwd = op == "layernorm_fwd" || op == "rmsnorm_fwd", bwd = op == "layernorm_bwd" || op == "rmsnorm_bwd";
    for (const char *ty : {"f32", "bf16"})
      for (size_t k = 0; k < shapes.size(); ++k) {
        const shape s = shapes[k];
        const row *a = find(rows, op, ty, s, "auto");
        if (!a) continue;
        vector<string> line = {bench::fmt("%lld x %lld", (long long)s.rows, (long long)s.cols), ty};
        for (const string &v : versions) {
          const row *r = find(rows, op, ty, s, v);
          line.push_back(r ? bench::fmt("%.3f", r->x_copy) : "-");
        }
        line.push_back(bench::fmt("%.1f", a->us));
        double tg = 0.0;
        if (k < big.size() && fwd) tg = k < 2 ? 0.90 : 0.80;
        if (k < big.size() && bwd) tg = 0.80;
        const row *u = find(rows, op, ty, s, "unfused");
        string cell = tg > 0 ? bench::fmt(">= %.2f: %s", tg, a->x_copy >= tg ? "yes" : "NO") : "-";
        if (u) cell = bench::fmt("%.2fx unfused", u->us / a->us);
        missed += tg > 0 && a->x_copy < tg;
        line.push_back(cell);
        tb.add(line);
      }
    printf("%s, as a fraction of the copy ceiling (%.0f GB/s, %s):\n", op.c_str(), copy, dev.name);
    tb.print();
    printf("\n");
  }
  bench::table rt;
  rt.head = {"rope (16384 x 32 x 128)", "type", "naive x copy", "auto x copy", "auto us", "target"};
  for (const char *ty : {"f32", "bf16"})
    for (const char *name : {"rope_adjacent", "rope_halves", "rope_adjacent_cache", "rope_halves_cache"}) {
      const row *a = find(rows, name, ty, {16384, 4096}, "auto"), *nv = find(rows, name, ty, {16384, 4096}, "naive");
      if (!a) continue;
      missed += a->x_copy < 0.90;
      rt.add({name, ty, nv ? bench::fmt("%.3f", nv->x_copy) : "-", bench::fmt("%.3f", a->x_copy), bench::fmt("%.1f", a->us),
              bench::fmt(">= 0.90: %s", a->x_copy >= 0.90 ? "yes" : "NO")});
    }
  if (!rt.rows.empty()) {
    printf("RoPE, as a fraction of the copy ceiling:\n");
    rt.print();
    printf("\n");
  }
  printf("wrote %s; %d validation failures, %d copy targets missed\n", opt.csv.c_str(), failures, missed);
  return failures ? 1 : 0;
}
