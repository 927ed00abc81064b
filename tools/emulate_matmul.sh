#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_matmul.sh [N] - builds and runs tools/emulate_matmul.cpp: the matmul kernels on the
# CPU (see that file). N picks one kernel: 0 shared-tiled, 1 register-1d, 2 register-2d,
# 3 vectorized, 4/5/6 warp-tiled 128x128/128x256/64x64, 7 naive, 8 coalesced, 9 GEMV, 10 few rows (FEW_ROWS); none: 0-8.
# ASYNC=1: the core's cp.async calls of the sm_80+ branch as a deferred-copy model (see the .cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_matmul_emulate
mkdir -p "$out"
# The core's operators and warp_reduce (section 1.3) and cp.async calls (1.4, their pre-sm_80 branch:
# synchronous; ASYNC=1: the emulator's model instead) and the device code of section 7 up to its
# launchers, __shared__ made static.
python3 - "$out/mm_body.inc" <<'PY'
import os, sys
s = open('gpuops_cuda.cuh').read()
def cut(start, end):  # from start up to (not including) the next end
    a = s.index(start)
    return s[a:s.index(end, a)]
core = cut('// ---- 1.3 Collectives', '// block_reduce:')
if os.environ.get('ASYNC') != '1':
    core += cut('// ---- 1.4 Asynchronous copy', '// Tensor cores:')
body = cut('// ==== 7. Matrix multiply', '#if defined(GPUOPS_IMPLEMENTATION)\n#ifndef GPUOPS_MATMUL_WT_CONFIG').replace('#ifndef GPUOPS_NO_MATMUL', '')
body = body.replace('extern __shared__ float4 matmul_smem4[];', 'static float4 matmul_smem4[65536 / 16 * 4];').replace('__shared__', 'static')
open(sys.argv[1], 'w').write('namespace gpuops {\n' + core + '}\n' + body)
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -std=c++20 $([ "${ASYNC:-0}" = 1 ] && echo -DEMU_ASYNC) -I"$CUDA_INC" -I. -I"$out" tools/emulate_matmul.cpp -o "$out/emulate" -lpthread
"$out/emulate" "$@"
