#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_softmax.sh - builds and runs tools/emulate_softmax.cpp: the short-row kernels of
# gpuops_cuda.cuh (softmax forward and backward on groups of 1 to 16 lanes and on packed rows,
# section 5.3, and reduce_rows_group / reduce_rows_packed, section 3.3) and the split-row kernels
# (softmax_fwd_split / softmax_bwd_split, reduce_rows_split, and the on-chip cluster kernels:
# clusters and distributed shared memory as tools/emulate_cuda.h models them) on the CPU, under
# AddressSanitizer, against the CPU forms.
#   tools/emulate_softmax.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_softmax_emulate
mkdir -p "$out"
# The core (sections 1.1 - 1.3 and 1.5; PTX replaced by host forms; the cluster exchange as a cluster barrier),
# softmax's sections 5.1 - 5.4 and reduce_rows_group / _packed / _split; __shared__ becomes
# per-block storage (emu_shared).
python3 - "$out/softmax_body.inc" <<'PY'
import re, sys
s = open('gpuops_cuda.cuh').read()
def cut(start, end):  # from start up to (not including) the next end
    a = s.index(start)
    return s[a:s.index(end, a)]
core = cut('// ---- 1.1 Storage types', '// ---- 1.4 Asynchronous copy') + cut('// ---- 1.5 The row engine', '}  // namespace gpuops\n\n// ---- 1.6')
for a, b in (('asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));', 'r = exp2f(x);'),
             ('asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));', 'r = 1.0f / x;'),
             ('asm("mov.u32 %0, %%laneid;" : "=r"(lane));', 'lane = threadIdx.x & 31;')):
    assert a in core, a
    core = core.replace(a, b)
# The cluster exchange in host form (tools/emulate_cuda.h models clusters and distributed shared memory).
a = core.index('template <class S> __device__ __forceinline__ void cluster_share_init')
b = core.index('template <int TPR> __host__ __device__ constexpr int block_threads')
keep = core[core.index('__device__ __forceinline__ online_softmax cluster_state', a):core.index('__device__ __forceinline__ void cluster_done', a)]
core = core[:a] + '''template <class S> void cluster_share_init(cluster_share<S> &, int) {}
template <class S, class Merge> S cluster_merge(S b, int cluster, cluster_share<S> &sh, int row, S empty, Merge merge, int ranks = -1) {
  return emu_cluster_merge(b, cluster, sh.w[row & 1][0], empty, merge, ranks);
}
''' + keep + '''inline void cluster_done(int cluster) {
  if (cluster > 1) cooperative_groups::this_cluster().sync();
}

''' + core[b:]
body = cut('// ==== 5. Softmax', '// ---- 5.5 Launcher')
body = body.replace('#ifndef GPUOPS_NO_SOFTMAX', '').replace('}  // namespace gpuops\n', '').replace('namespace gpuops {\n', '')
red = cut('// thread_reduce_strided: thread t', '// row_reduce_warp:') + cut('// Short rows (cols <= TPR * V): a group', 'template <class T, class Op>\n__global__ void __launch_bounds__(kBlock) reduce_rows_block')
def sh(m):
    ty, name, dim = m.group(1), m.group(2), m.group(3)
    return 'static char key_%s; %s (&%s)%s = *(%s(*)%s)emu_shared(&key_%s, sizeof(%s%s));' % (name, ty, name, dim, ty, dim, name, ty, dim)
out = re.sub(r'__shared__ ([\w:]+) (\w+)((?:\[[^\]]+\])+);', sh, core + body + red)
out = re.sub(r'__shared__ ([\w:]+(?:<\w+>)?) (\w+);', lambda m: 'static char key_%s; %s &%s = *(%s *)emu_shared(&key_%s, sizeof(%s));' % ((m.group(2), m.group(1), m.group(2), m.group(1), m.group(2), m.group(1))), out)
open(sys.argv[1], 'w').write('namespace gpuops {\n' + out + '\n}  // namespace gpuops\n')
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -g -std=c++20 -fsanitize=address -D_GNU_SOURCE -I"$CUDA_INC" -I. -Itests -I"$out" tools/emulate_softmax.cpp -o "$out/emulate" -lpthread
"$out/emulate" "$@"
