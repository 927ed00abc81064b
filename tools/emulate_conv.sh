#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/emulate_conv.sh [FILTER] - builds and runs tools/emulate_conv.cpp: the convolution kernels of
# gpuops_cuda.cuh (section 11) on the CPU, ldmatrix and mma.sync modelled per warp
# (tools/emulate_mma.h). FILTER: a substring of the case names to run (default all).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TMPDIR:-/tmp}/gpuops_conv_emulate
mkdir -p "$out"
# The core's storage types (1.1, the MUFU approximations made host functions), the cp.async calls
# (1.4, their synchronous pre-sm_80 branch), the swizzles and the mma dispatch, the activations
# (1.6), and section 11 up to its launchers: static __shared__ arrays become statics (blocks run
# one at a time), the dynamic shared memory per-block storage, the constant filter a plain array;
# and the launcher's conv_geom_of and conv_igemm_params_of.
python3 - "$out/conv_body.inc" <<'PY'
import sys
s = open('gpuops_cuda.cuh').read()
def cut(start, end):  # from start up to (not including) the next end
    a = s.index(start)
    return s[a:s.index(end, a)]
core = cut('// ---- 1.1 Storage types', '// ---- 1.2 The aligned')
core = core.replace('asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));', 'r = exp2f(x);')
core = core.replace('asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));', 'r = 1.0f / x;')
core += cut('// ---- 1.4 Asynchronous copy', '// Tensor cores:')
core += cut('// The same for a storage type', '// Hopper (sm_90): mbarriers')
act = cut('// ---- 1.6 Activations', '// ---- 1.7 The Hopper GEMM engine')
body = cut('// ==== 11. Convolution', '// ---- 11.5 Launcher')
body = body.replace('#ifndef GPUOPS_NO_CONV', '')
body = body.replace('static __constant__ float', 'static float')
body = body.replace('extern __shared__ uint4 conv_smem[];', 'uint4 *conv_smem = (uint4 *)emu_shared_aligned((void *)&emu_smem_key, kConvMmaSmem);')
body = body.replace('__shared__', 'static')
# The launcher's host helpers that turn a call's arguments into kernel parameters.
body += 'namespace gpuops {\n' + cut('inline conv_geom conv_geom_of', '// Blocks of a grid-stride')
body += cut('// The parameters of conv_igemm_cuda', '// One build of conv_igemm_cuda') + '}\n'
open(sys.argv[1], 'w').write('namespace gpuops {\n' + core + '}\n' + act + body)
PY
CUDA_INC=${CUDA_INC:-$(dirname "$(readlink -f "$(command -v nvcc)")")/../include}
g++ -O1 -std=c++20 -I"$CUDA_INC" -I. -I"$out" tools/emulate_conv.cpp -o "$out/emulate" -lpthread
"$out/emulate" "$@"
