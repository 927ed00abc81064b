#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run.sh DIR NAME... - runs each bench program (DIR/NAME writes DIR/NAME.csv), then, where
# PyTorch with CUDA is installed, the PyTorch comparison on the same device in the same run.
set -u
dir=$1
shift
status=0
for b in "$@"; do
  "$dir/$b" --csv "$dir/$b.csv" || status=1
done
if python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  for b in "$@"; do # bench/torch_<family>.py, where there is one, beside bench/bench_<family>
    f=${b#bench_}
    [ -f "bench/torch_$f.py" ] || continue
    python3 "bench/torch_$f.py" --csv "$dir/torch_$f.csv" --gpuops "$dir/$b.csv" || status=1
  done
else
  echo "PyTorch with CUDA not found: the PyTorch comparison is skipped."
fi
exit $status
