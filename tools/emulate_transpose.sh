#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_transpose.sh [N] [address|thread] - builds and runs tools/emulate_transpose.cpp: the
# transpose kernels on the CPU (see that file) under AddressSanitizer (default) or ThreadSanitizer
# (races on the shared tile: a missing __syncthreads shows as a data race). N picks one kernel:
# 0 naive, 1 shared-tiled, 2 shared-padded, 3 vectorized; none: all (minutes; thread: tens of minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_transpose_emulate
mkdir -p "$out"
# The divisor of section 1 and the device code of section 6.1 up to its launchers, __shared__ made static.
python3 - "$out/tr_body.inc" <<'PY'
import sys
s = open('gpuops_cuda.cuh').read()
div = s[s.index('struct divisor {'):s.index('// ---- Warp and block reductions')]
a = s.index('// ---- 6.1 Transpose')
body = s[a:s.index('#if defined(GPUOPS_IMPLEMENTATION)', a)].replace('__shared__', 'static')
open(sys.argv[1], 'w').write('namespace gpuops {\n' + div + '}\n' + body)
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -std=c++20 -g -fsanitize="${2:-address}" -I"$CUDA_INC" -I. -I"$out" tools/emulate_transpose.cpp -o "$out/emulate" -lpthread
"$out/emulate" "${1:--1}"
