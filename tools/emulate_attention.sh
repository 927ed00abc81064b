#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_attention.sh [FILTER] - builds and runs tools/emulate_attention.cpp: the attention
# kernels of gpuops_cuda.cuh (section 10) on the CPU, with ldmatrix and mma.sync modelled per warp
# (tools/emulate_mma.h). FILTER: a substring of the case names to run (default all).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_attention_emulate
mkdir -p "$out"
# The core's storage types (1.1, the MUFU approximations made host functions), collectives (1.3),
# the cp.async calls (1.4, their synchronous pre-sm_80 branch), the swizzles and the mma dispatch,
# and section 10 up to its launchers, extern __shared__ made per-block storage.
python3 - "$out/attention_body.inc" <<'PY'
import sys
s = open('gpuops_cuda.cuh').read()
def cut(start, end):  # from start up to (not including) the next end
    a = s.index(start)
    return s[a:s.index(end, a)]
core = cut('// ---- 1.1 Storage types', '// ---- 1.2 The aligned') + cut('// ---- 1.3 Collectives', '// ---- 1.4 Asynchronous')
core = core.replace('asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));', 'r = exp2f(x);')
core = core.replace('asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));', 'r = 1.0f / x;')
core += cut('// ---- 1.4 Asynchronous copy', '// Tensor cores:')
core += cut('// The same for a storage type', '// Hopper (sm_90): mbarriers')
body = cut('// ==== 10. Attention', '// ---- 10.5 Launcher')
body = body.replace('#ifndef GPUOPS_NO_ATTENTION', '')
body = body.replace('extern __shared__ uint4 attn_smem[];', 'uint4 *attn_smem = (uint4 *)emu_shared_aligned((void *)&emu_smem_key, 200 * 1024);')
body = body.replace('__shared__ float ks[BC][kD], vs[BC][kD];',
                    'float (*ks)[kD] = (float (*)[kD])emu_shared((void *)&emu_sums_key, sizeof(float) * BC * kD);\n'
                    '  float (*vs)[kD] = (float (*)[kD])emu_shared((void *)&emu_vs_key, sizeof(float) * BC * kD);')
open(sys.argv[1], 'w').write('namespace gpuops {\n' + core + '}\n' + body)
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -std=c++20 -I"$CUDA_INC" -I. -I"$out" tools/emulate_attention.cpp -o "$out/emulate" -lpthread
"$out/emulate" "$@"
