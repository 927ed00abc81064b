#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_norm.sh - builds and runs tools/emulate_norm.cpp: the normalization and RoPE kernels
# of gpuops_cuda.cuh (section 8) on the CPU, under AddressSanitizer, against the CPU forms.
#   tools/emulate_norm.sh              the kernels' logic: every kernel, f32 and bf16, small cases
#   tools/emulate_norm.sh clusters     only the cluster kernels
#   tools/emulate_norm.sh rope         only RoPE (both kernels, 16-byte and element accesses)
#   tools/emulate_norm.sh replay SEED [OP[/TYPE[/COLS[/ROWS]]] ...]
#                                      test_norm's GPU cases of a seed (GPUOPS_SEED), with the test's
#                                      tolerances: the cases matching any filter through the kernels
#                                      AUTO, ROW_REGISTERS, ONLINE and UNFUSED run (GPUOPS_TEST_QUICK=1
#                                      for a quick run's seed; GPUOPS_REPLAY_ALGO=auto: that version alone),
#                                      e.g. replay 1795578638 layernorm_bwd/f16/8
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_norm_emulate
mkdir -p "$out"
# The core (sections 1.1 - 1.6 without 1.4, the asynchronous copies and tensor-core fragments the
# norms do not use; PTX replaced by host forms) and section 8 up to its launchers; __shared__
# becomes per-block storage (emu_shared).
python3 - "$out/norm_body.inc" <<'PY'
import re, sys
s = open('gpuops_cuda.cuh').read()
def cut(start, end):  # from start up to (not including) the next end
    a = s.index(start)
    return s[a:s.index(end, a)]
core = cut('// ---- 1.1 Storage types', '// ---- 1.4 Asynchronous copy') + cut('// ---- 1.5 The row engine', '// ---- 1.7 The Hopper GEMM engine')
for a, b in (('asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));', 'r = exp2f(x);'),
             ('asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));', 'r = 1.0f / x;'),
             ('asm("mov.u32 %0, %%laneid;" : "=r"(lane));', 'lane = threadIdx.x & 31;'),
             ('asm("sin.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(r));', 's = sinf(r);'), ('asm("cos.approx.ftz.f32 %0, %1;" : "=f"(c) : "f"(r));', 'c = cosf(r);'),
             ('}  // namespace gpuops\n\n// ---- 1.6', '\n// ---- 1.6'), ('namespace gpuops {\n\nconstexpr float kSqrt2OverPi', 'constexpr float kSqrt2OverPi')):
    assert a in core, a
    core = core.replace(a, b)
# Clusters: the blocks of a cluster run at once (the launch passes resident = cluster size); their
# barrier is emu_cluster_sync, and a block's state in slot s is read from emu_cluster_slot (one copy
# per rank and slot, as distributed shared memory holds one per block).
a = core.index('template <class S> __device__ __forceinline__ void cluster_share_init')
b = core.index('template <int TPR> __host__ __device__ constexpr int block_threads')
keep = core[core.index('__device__ __forceinline__ online_softmax cluster_state', a):core.index('__device__ __forceinline__ void cluster_done', a)]
core = core[:a] + '''template <class S> void cluster_share_init(cluster_share<S> &, int) {}
template <class S, class Merge> S cluster_merge(S b, int cluster, cluster_share<S> &, int row, S empty, Merge merge, int = -1) {
  if (cluster > 1) {
    if (threadIdx.x == 0) memcpy(emu_cluster_slot[row & 1][blockIdx.x % cluster], &b, sizeof(S));
    emu_cluster_sync();
    S all = empty;
    for (int r = 0; r < cluster; ++r) {
      S o;
      memcpy(&o, emu_cluster_slot[row & 1][r], sizeof(S));
      merge(all, o);
    }
    return all;
  }
  return b;
}
''' + keep + '''inline void cluster_done(int cluster) {
  if (cluster > 1) emu_cluster_sync();
}

''' + core[b:]
body = cut('// ==== 8. Normalization and rotary embeddings', '// ---- 8.5 Launchers')
body = body.replace('#ifndef GPUOPS_NO_NORM', '').replace('}  // namespace gpuops\n', '')
body = body.replace('extern __shared__ float4 norm_acc[];', 'static char key_norm_acc; float4 *norm_acc = (float4 *)emu_shared(&key_norm_acc, 128 * 1024);')
body = body.replace('extern __shared__ uint4 norm_stage[];', 'static char key_norm_stage; uint4 *norm_stage = (uint4 *)emu_shared(&key_norm_stage, 192 * 1024);')
def sh(m):
    ty, name, dim = m.group(1), m.group(2), m.group(3)
    return 'static char key_%s; %s (&%s)%s = *(%s(*)%s)emu_shared(&key_%s, sizeof(%s%s));' % (name, ty, name, dim, ty, dim, name, ty, dim)
out = re.sub(r'__shared__ ([\w:]+) (\w+)((?:\[[^\]]+\])+);', sh, core + body)
out = re.sub(r'__shared__ (cluster_share<\w+>) (\w+);', lambda m: 'static char key_%s; %s &%s = *(%s *)emu_shared(&key_%s, sizeof(%s));' % (m.group(2), m.group(1), m.group(2), m.group(1), m.group(2), m.group(1)), out)
open(sys.argv[1], 'w').write('namespace gpuops {\n' + out + '\n}  // namespace gpuops\n')
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -g -std=c++20 -fsanitize=address -D_GNU_SOURCE -I"$CUDA_INC" -I. -Itests -I"$out" tools/emulate_norm.cpp -o "$out/emulate" -lpthread
"$out/emulate" "$@"
