#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_transpose.sh [N] [address|thread] - builds and runs tools/emulate_transpose.cpp: the
# transpose kernels on the CPU (see that file) under AddressSanitizer (default) or ThreadSanitizer
# (races on the shared tile: a missing __syncthreads shows as a data race). N picks one kernel:
# 0 naive, 1 shared-tiled, 2 shared-padded, 3 vectorized; none: all (tens of minutes; thread: longer).
# EMULATE_THIN_ONLY=1 keeps the shapes of a few rows or columns (VECTORIZED's interleave).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_transpose_emulate
mkdir -p "$out"
# The core's store_global16 and divisor (section 1.1), its 4-byte cp.async (1.4: a synchronous copy
# here) and the device code of section 6 up to its launchers, __shared__ made static.
python3 - "$out/tr_body.inc" <<'PY'
import sys
s = open('gpuops_cuda.cuh').read()
def cut(start, end):  # from start up to (not including) the next end
    a = s.index(start)
    return s[a:s.index(end, a)]
core = (cut('// One 16-byte store to global memory', '// One vector stored at p') + cut('struct divisor {', '// Threads an SM holds')
        + cut('// 4 bytes, or 4 zero bytes when !valid', '// Tile order of a matrix product'))
body = cut('// ==== 6. Transpose', '#if defined(GPUOPS_IMPLEMENTATION)').replace('#ifndef GPUOPS_NO_TRANSPOSE', '').replace('__shared__', 'static')
open(sys.argv[1], 'w').write('namespace gpuops {\n' + core + '}\n' + body)
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -std=c++20 -g -fsanitize="${2:-address}" -I"$CUDA_INC" -I. -I"$out" tools/emulate_transpose.cpp -o "$out/emulate" -lpthread
"$out/emulate" "${1:--1}"
