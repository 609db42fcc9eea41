#!/usr/bin/env bash
# Runs every lessons/NN_*/run in order; prints one line per lesson and a closing count.
# Exits non-zero if any lesson fails. LESSONS="01 03" runs a subset.
set -uo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
passed=0; failed=0; failures=()
for dir in lessons/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  if [ -n "${LESSONS:-}" ] && ! grep -qw "${name:0:2}" <<<"$LESSONS"; then continue; fi
  log="build/lessons/$name.log"
  mkdir -p build/lessons
  start=$(date +%s)
  if "$dir/run" >"$log" 2>&1; then
    passed=$((passed + 1)); echo "lesson $name: PASS ($(( $(date +%s) - start ))s)"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "lesson $name: FAIL ($(( $(date +%s) - start ))s) — last lines of $log:"
    tail -n 25 "$log" | sed 's/^/    /'
  fi
done
echo "lessons: $passed passed, $failed failed"
[ "$failed" = 0 ]
