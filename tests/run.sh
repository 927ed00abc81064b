#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run.sh - runs each test command given as an argument, shows its output, and ends with the
# total: "N passed, N failed, N skipped". A command that prints the harness's summary line
# contributes its counts; one that does not (a compile check) counts as one case, passed when it
# exits 0. A program that fails without reporting a failed case (a crash) counts as one failure.
set -u
passed=0 failed=0 skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for cmd in "$@"; do
  printf '== %s\n' "$cmd"
  bash -c "$cmd" > "$log" 2>&1
  rc=$?
  sed -E '/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/d' "$log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $cmd: exit status $rc"; fi
    continue
  fi
  set -- $line
  passed=$((passed + $1)); failed=$((failed + $3)); skipped=$((skipped + $5))
  if [ "$rc" -ne 0 ] && [ "$3" -eq 0 ]; then failed=$((failed + 1)); echo "FAIL $cmd: exit status $rc"; fi
  printf '   %s\n' "$line"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
