#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_scan.sh [MODE [RESIDENT_BLOCKS [DELAYS]]] - builds and runs tools/emulate_scan.cpp:
# the scan kernels on the CPU (see that file). MODE: quick (default: look-back fold, spine, NaN),
# lookback, spine, small, tiles, rows, nan, rts (more tiles than blocks), lbmany (40 look-back tiles),
# all (everything but rts and lbmany; about 10 minutes on 2 cores). RESIDENT_BLOCKS (default 4):
# blocks run at once. DELAYS 1: random sleeps so that tiles finish out of order.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_scan_emulate
mkdir -p "$out"
# Section 4 of gpuops_cuda.cuh up to its extern "C" launcher, plus what it uses of the core: vec,
# divisor and the aligned walk (1.1, 1.2), the operators, reductions and warp scans (1.3), the
# cp.async calls (1.4, their pre-sm_80 branch: synchronous), kRowWarpMaxCols and split rows (1.5);
# __shared__ becomes per-block storage and <<<...>>> a call of emu_launch.
python3 - "$out/scan_body.inc" <<'PY'
import re, sys
s = open('gpuops_cuda.cuh').read()
def cut(start, end):  # from start up to (not including) the next end
    a = s.index(start)
    return s[a:s.index(end, a)]
helpers = cut('template <class T, int N> struct alignas', '\n') + '\n'
helpers += cut('// Division by a value fixed', '// ---- 1.3')
helpers += cut('// ---- 1.3 Collectives', '// The online softmax state')
helpers += cut('// ---- 1.4 Asynchronous copy', '// Tensor cores:')
helpers += cut('constexpr int64_t kRowWarpMaxCols', '\n') + '\n'
# Split rows (1.5): the cluster exchange in host form (tools/emulate_cuda.h models clusters) and the
# slices' row loop.
helpers += cut('constexpr int kClusterShareMax', 'template <class S> __device__ __forceinline__ void cluster_share_init')
helpers += '''template <class S> void cluster_share_init(cluster_share<S> &, int) {}
template <class S, class Merge> S cluster_merge(S b, int cluster, cluster_share<S> &sh, int row, S empty, Merge merge, int ranks = -1) {
  return emu_cluster_merge(b, cluster, sh.w[row & 1][0], empty, merge, ranks);
}
inline void cluster_done(int cluster) {
  if (cluster > 1) cooperative_groups::this_cluster().sync();
}
'''
helpers += cut('// Split rows: a few rows too long', '}  // namespace gpuops\n\n// ---- 1.6')
body = cut('// ==== 4. Prefix scan', 'extern "C" gpuops_status gpuops__scan_launch')
for d in ('#ifndef GPUOPS_NO_SCAN', '#if defined(GPUOPS_IMPLEMENTATION)', '#endif  // GPUOPS_IMPLEMENTATION', '#endif  // GPUOPS_NO_SCAN'):
    body = body.replace(d, '')
def sh(m):
    ty, name, dim = m.group(1), m.group(2), m.group(3)
    if dim:
        return 'static char key_%s; %s (&%s)%s = *(%s(*)%s)emu_shared(&key_%s, sizeof(%s%s));' % (name, ty, name, dim, ty, dim, name, ty, dim)
    return 'static char key_%s; %s &%s = *(%s*)emu_shared(&key_%s, sizeof(%s));' % (name, ty, name, ty, name, ty)
# The staged look-back's dynamic shared memory: per-block storage of the launch's size (emu_dyn_smem).
body = body.replace('extern __shared__ uint4 s_stage[];',
                    'static char key_s_stage; uint4 *s_stage = (uint4 *)emu_shared(&key_s_stage, emu_dyn_smem);')
body = re.sub(r'__shared__ ([\w:]+(?:<\w+>)?) (\w+)((?:\[[^\]]+\])*);', sh, body)
# The 8-byte tile states' acquire / release (inline PTX) as the C++ builtins of the same order.
body = body.replace('asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag + t), "r"(f) : "memory");',
                    '__atomic_store_n(flag + t, f, __ATOMIC_RELEASE);')
body = body.replace('asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(flag + t) : "memory");',
                    'f = __atomic_load_n(flag + t, __ATOMIC_ACQUIRE);')
def ln(m):
    cfg = [p.strip() for p in m.group(2).split(',')]
    dyn = 'emu_dyn_smem = %s, ' % cfg[2] if len(cfg) > 2 else ''  # one statement (it may follow an if)
    return '%semu_launch(%s, %s, [&] { %s(%s); });' % (dyn, cfg[0], cfg[1], m.group(1), m.group(3))
body = re.sub(r'([\w:]+(?:<[^<>;]*>)?)<<<([^>]*)>>>\(([^;]*)\);', ln, body)
open(sys.argv[1], 'w').write('namespace gpuops {\n' + helpers + '\n}\n' + body)
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -std=c++20 -I"$CUDA_INC" -I. -I"$out" tools/emulate_scan.cpp -o "$out/emulate" -lpthread
"$out/emulate" "$@"
