#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu_check.sh [OUTDIR] - one pass over everything that needs a GPU, for a machine held for a
# few minutes: build every program, run each GPU test program, the benches, the examples, the
# sanitizers, and (asked for by name) a SASS summary and Nsight Compute profiles of elementwise
# kernels. Each stage has a time limit; logs go to OUTDIR (default build/gpu_check), one per stage.
#   GPU_CHECK_STAGES="build test bench run sanitize"  (the default; also: checks sass profile)
#   "checks" runs every test program at once, then their memcheck and racecheck runs four at a time (correctness only,
#   so sharing the GPU is harmless), for when GPU time is short; the bench always runs alone.
# Stages other than build run the programs already in build/ (built here or carried from a
# machine with the same nvcc), never make, so carried programs are not rebuilt.
#   GPU_CHECK_TESTS="test_reduce test_scan"           (default: every tests/test_*.cu)
#   GPU_CHECK_BENCHES="bench_reduce"                  (default: every bench/bench_*.cu)
# With little GPU time the stages can run over several calls (GPU_CHECK_STAGES=build, then the
# others): the programs built stay in build/ between calls on the same machine.
# The PyTorch side (asked for by name): "lib" builds build/libgpuops.so, "pytest" runs python/tests,
# "sweep" runs bench/sweep.py (SWEEP_BUDGET seconds, default 220) and draws its plots in OUTDIR/sweep.
set -u
out=${1:-build/gpu_check}
mkdir -p "$out"
stages=${GPU_CHECK_STAGES:-build test bench run sanitize}
tests=${GPU_CHECK_TESTS:-$(cd tests && ls test_*.cu | sed 's/\.cu$//')}
benches=${GPU_CHECK_BENCHES:-$(cd bench && ls bench_*.cu | sed 's/\.cu$//')}
start=$(date +%s)
jobs=$(nproc 2> /dev/null || echo 4)
summary="$out/summary.txt"
: > "$summary"

stage() { # name limit_seconds command...
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  printf '%-10s rc=%-3s %4ss  %s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$(tail -n 1 "$out/$name.log")" | tee -a "$summary"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
for s in $stages; do
  case $s in
  build) stage build 400 make -j"$jobs" programs ;;
  test) for t in $tests; do stage "$t" 300 "build/$t"; done
        stage readme_example 30 build/readme_example ;;
  bench) stage bench 540 bench/run.sh build/bench $benches ;;
  run) stage run 400 examples/run_all.sh build/examples/[0-9][0-9]_* ;;
  checks)
    # The test programs at once, then the sanitizer runs GPU_CHECK_JOBS at a time (default 4):
    # thirteen sanitizer processes at once starve each other past their limits on 16 cores.
    for t in $tests; do stage "$t" 300 "build/$t" & done
    stage readme_example 30 build/readme_example &
    stage link_test 30 build/link_test &
    wait
    running=0
    for t in $tests; do
      for tool in memcheck racecheck; do
        stage "${tool}_$t" "${GPU_CHECK_SANITIZE_LIMIT:-400}" env GPUOPS_TEST_QUICK=1 compute-sanitizer --tool $tool --error-exitcode 1 "build/$t" &
        running=$((running + 1))
        if [ "$running" -ge "${GPU_CHECK_JOBS:-4}" ]; then wait -n; running=$((running - 1)); fi
      done
    done
    wait ;;
  sanitize)
    for t in $tests; do
      stage "memcheck_$t" 200 env GPUOPS_TEST_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 1 "build/$t"
      stage "racecheck_$t" 200 env GPUOPS_TEST_QUICK=1 compute-sanitizer --tool racecheck --error-exitcode 1 "build/$t"
    done ;;
  sass) stage sass 60 bash -c "cuobjdump -sass build/bench/bench_elementwise | python3 tools/sass_summary.py" ;;
  profile) # Nsight Compute on single kernels (one timed launch each at 2^24); clocks left alone.
    for spec in ${GPU_CHECK_PROFILE:-quantize:f32:quantize_op<gpuops::tensor gelu_erf_fwd:bf16:gelu_fwd_op<__nv_bfloat16, false> quantize_per_channel:f16:quantize_op<gpuops::channel}; do
      IFS=: read -r op type kernel <<< "$spec"
      stage "ncu_${op}_$type" 90 ncu --clock-control none --kernel-name-base demangled -k "regex:map_vectorized.*$kernel" \
        --launch-skip 2 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
        --section WarpStateStats --section SchedulerStats --section LaunchStats \
        build/bench/bench_elementwise --quick --only "$op" --type "$type" --csv "$out/ncu_$op.csv"
    done ;;
  lib) stage lib 300 make -j"$jobs" lib ;;
  pytest) stage pytest "${PYTEST_LIMIT:-200}" env PYTHONPATH=python PYTHONUNBUFFERED=1 python3 -m pytest -q -rfE \
            --durations=12 -p no:cacheprovider python/tests ;;
  sweep) stage sweep $((${SWEEP_BUDGET:-220} + 90)) env PYTHONUNBUFFERED=1 python3 bench/sweep.py --csv "$out/sweep.csv" \
           --budget "${SWEEP_BUDGET:-220}"
         stage plot 90 python3 bench/plot_sweep.py "$out/sweep.csv" --out "$out/sweep" ;;
  esac
done
cp build/bench/*.csv "$out/" 2> /dev/null
echo "total $(($(date +%s) - start)) s" | tee -a "$summary"
