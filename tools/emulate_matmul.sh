#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_matmul.sh [N] - builds and runs tools/emulate_matmul.cpp: the matmul kernels on the
# CPU (see that file). N picks one kernel: 0 shared-tiled, 1 register-1d, 2 register-2d,
# 3 vectorized, 4/5/6 warp-tiled 128x128/128x256/64x64, 7 naive, 8 coalesced, 9 GEMV; none: 0-8.
# ASYNC=1: the cp.async helpers of the sm_80+ branch as a deferred-copy model (see the .cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_matmul_emulate
mkdir -p "$out"
# Section 1's reductions and the device code of section 6.2 up to its launchers, __shared__ made static.
python3 - "$out/mm_body.inc" <<'PY'
import os, sys
s = open('gpuops_cuda.cuh').read()
body = s[s.index('// ---- 6.2 Matrix multiply'):s.index('#if defined(GPUOPS_IMPLEMENTATION)\n#ifndef GPUOPS_MATMUL_WT_CONFIG')]
if os.environ.get('ASYNC') == '1':  # the cp.async helpers come from the emulator's model instead
    body = body[:body.index('__device__ __forceinline__ void matmul_cp4(')] + body[body.index('// A tile configuration.'):]
body = body.replace('extern __shared__ float4 matmul_smem4[];', 'static float4 matmul_smem4[65536 / 16 * 4];').replace('__shared__', 'static')
red = s[s.index('// ---- Warp and block reductions'):s.index('// block_reduce:')]
open(sys.argv[1], 'w').write('namespace gpuops {\n' + red + '}\n' + body)
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -std=c++20 $([ "${ASYNC:-0}" = 1 ] && echo -DEMU_ASYNC) -I"$CUDA_INC" -I. -I"$out" tools/emulate_matmul.cpp -o "$out/emulate" -lpthread
"$out/emulate" "$@"
