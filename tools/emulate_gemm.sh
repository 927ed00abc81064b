#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_gemm.sh [FILTER] - builds and runs tools/emulate_gemm.cpp: the tensor-core GEMM
# kernels of gpuops_cuda.cuh (section 9) on the CPU, with ldmatrix, mma.sync and the WMMA API
# modelled per warp (see that file). FILTER: a substring of the case names to run (default all).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_gemm_emulate
mkdir -p "$out"
# The core's storage types (1.1, the MUFU approximations made host functions), collectives (1.3), the cp.async calls
# (1.4, their synchronous pre-sm_80 branch) and tile order, the swizzles and the mma dispatch, the
# activations (1.6), and section 9 up to its launchers, extern __shared__ made per-block storage.
python3 - "$out/gemm_body.inc" <<'PY'
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
act = cut('// ---- 1.6 Activations', '// ---- 1.7 The Hopper GEMM engine')
# From 1.7 the epilogue every GEMM shares (gemm_pair, gemm_load_pair, gemm_store_pair, gemm_epilogue), not the
# wgmma kernel.
act += 'namespace gpuops {\n' + cut('// Two adjacent elements of TC as one access', '// gemm_wgmma: C = epi(op(A) @ op(B))') + '}  // namespace gpuops\n'
# Section 9 without the Hopper block (9.3, continued: TMA, wgmma, its launch side), which the
# emulator does not model.
body = cut('// ==== 9. Tensor-core', '// ---- 9.3 Production kernels, continued: Hopper wgmma')
body += cut('// ---- 9.4 Dispatch policy', '// ---- 9.5 Launcher')
body = body.replace('#ifndef GPUOPS_NO_GEMM', '').replace('#include <mma.h>', '')
body = body.replace('extern __shared__ uint4 gemm_smem[];', 'uint4 *gemm_smem = (uint4 *)emu_shared_aligned((void *)&emu_smem_key, 240 * 1024);')
body = body.replace('__shared__ float scratch[32];', 'float *scratch = (float *)emu_shared((void *)&emu_sums_key, 128);')
body = body.replace('__shared__ float2 sums[8][32];', 'float2 (*sums)[32] = (float2 (*)[32])emu_shared((void *)&emu_sums_key, sizeof(float2) * 256);')
body = body.replace('__shared__ float part[kGemmDecodeWarps][16][XR + 1];',
                    'float (*part)[16][XR + 1] = (float (*)[16][XR + 1])emu_shared((void *)&emu_sums_key, sizeof(float) * kGemmDecodeWarps * 16 * (XR + 1));')
open(sys.argv[1], 'w').write('namespace gpuops {\n' + core + '}\n' + act + body)
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -std=c++20 -I"$CUDA_INC" -I. -I"$out" tools/emulate_gemm.cpp -o "$out/emulate" -lpthread
"$out/emulate" "$@"
