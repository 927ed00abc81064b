#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench_compare.sh A_DIR B_DIR OUT_DIR [ROUNDS] - runs the bench programs of two builds of
# gpuops (A_DIR/bench_<family> and B_DIR/bench_<family>, e.g. the last release's and this tree's
# build/bench) on the same GPU in one run, alternating A, B, A, B ... for ROUNDS rounds (default 2),
# each with --quick, and writes OUT_DIR/<a|b><round>_<family>.csv. Two runs of the same build give
# the run-to-run noise; tools/bench_compare.py turns the CSVs into a table of B / A per row.
#   BENCHES="bench_reduce bench_scan" picks the programs (default: every bench in B_DIR);
#   BENCH_LIMIT=120 caps each program's run in seconds.
set -u
a=$1 b=$2 out=$3 rounds=${4:-2}
mkdir -p "$out"
benches=${BENCHES:-$(cd "$b" && ls bench_* | grep -v '\.csv$')}
for r in $(seq 1 "$rounds"); do
  for prog in $benches; do
    fam=${prog#bench_}
    for side in a b; do
      dir=$a
      [ "$side" = b ] && dir=$b
      t0=$(date +%s)
      timeout "${BENCH_LIMIT:-120}" "$dir/$prog" --quick --csv "$out/$side${r}_$fam.csv" > "$out/$side${r}_$fam.log" 2>&1
      echo "round $r $side $prog rc=$? $(($(date +%s) - t0)) s"
    done
  done
done
