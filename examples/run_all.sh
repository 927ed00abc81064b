#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/run_all.sh - walks the learning path: runs each example given, in order, shows its
# output, and ends with a table of their `result:` lines. Exits 1 if any example exited non-zero,
# printed no result line, or printed FAIL. `make run` calls it.
# Usage: examples/run_all.sh build/examples/01_vector_add build/examples/02_activations ...
set -u

if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "make run needs an NVIDIA GPU and its driver; none was found here."
  echo "The examples are built in build/examples/. What \`make test\` still checks without a GPU:" \
    "the CPU implementations, argument checking, the C99 consumer built by gcc, and that the library" \
    "compiles for sm_75, sm_80 and sm_90a."
  exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
rows=("step|version|rate|x ceiling|speedup|status")
failed=0
for prog in "$@"; do
  name=$(basename "$prog")
  printf '\n== %s\n' "$name"
  "$prog" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  # "result: 01 vector add | vectorized | 2950 GB/s | 0.92x copy | 150x cpu | ok" -> fields (the rate
  # is GB/s or TFLOP/s, the ceiling the copy bandwidth or the vendor library).
  row=$(grep '^result: ' "$log" | tail -n 1 | sed -e 's/^result: *//' -e 's/ *| */|/g')
  if [ -z "$row" ]; then
    row="$name|-|-|-|-|FAIL (exit $rc, no result line)"
  elif [ "$rc" -ne 0 ] && ! grep -q 'FAIL' <<<"$row"; then
    row="${row%|*}|FAIL (exit $rc)"
  fi
  if [ "$rc" -ne 0 ] || grep -q 'FAIL' "$log" || grep -q 'FAIL' <<<"$row"; then failed=1; fi
  rows+=("$row")
done

printf '\n== summary\n'
# Aligned by util-linux's column; where there is none (or one without -o), by awk.
printf '%s\n' "${rows[@]}" | column -t -s '|' -o ' | ' 2>/dev/null ||
  printf '%s\n' "${rows[@]}" | awk -F '|' '
    { for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } if (NF > nf) nf = NF }
    END { for (r = 1; r <= NR; r++) { line = ""; for (i = 1; i <= nf; i++) line = line (i > 1 ? " | " : "") sprintf("%-*s", w[i], cell[r, i]); sub(/ +$/, "", line); print line } }'
exit "$failed"
