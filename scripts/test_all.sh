#!/usr/bin/env bash
# `make test`: unit tests, command-line tests (bad input, checkpoints, layouts, …), MPI checks, every lesson.
# The command-line suites run one per core at a time (each is mostly waiting for short processes); each
# suite's output is printed whole when it ends. The MPI suite and the lessons run alone: the lessons read
# the wall clock. Prints each suite's result and closes with "N passed, N failed"; exits non-zero on any
# failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# Everything built before any suite starts: a lesson's own `make` must never relink a binary a suite is running.
MAKEFLAGS= make -s build/shardlab build/unit_tests build/mpi_tests >/dev/null || exit 1
passed=0; failed=0
suite() {  # suite NAME COMMAND...
  local name=$1; shift
  echo "=== $name"
  local start=$(date +%s)
  if "$@"; then passed=$((passed + 1)); echo "=== $name: PASS ($(( $(date +%s) - start ))s)"
  else failed=$((failed + 1)); echo "=== $name: FAIL ($(( $(date +%s) - start ))s)"; fi
}
suite "unit tests" build/unit_tests

logs=build/test_logs; rm -rf "$logs"; mkdir -p "$logs"
lanes=${TEST_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
cli_suite() {  # runs in the background: the suite's output, then its verdict line, into $logs/NAME.log
  local name=$1 start=$(date +%s)
  if bash "tests/cli/$name.sh" >"$logs/$name.out" 2>&1; then v=PASS; else v=FAIL; fi
  { echo "=== cli $name"; cat "$logs/$name.out"; echo "=== cli $name: $v ($(( $(date +%s) - start ))s)"; } >"$logs/$name.log"
}
report() {  # prints every finished suite's log once
  for log in "$logs"/*.log; do
    [ -e "$log" ] && [ ! -e "$log.shown" ] || continue
    cat "$log"; touch "$log.shown"
    if tail -n 1 "$log" | grep -q ': PASS ('; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
}
# Longest first (so that no long suite starts last and runs alone at the end), then the rest by name.
longest="labs_others labs_ring nothing_lost_again hostile_inputs parallel_hostile pipeline parallel context_parallel"
for name in $longest $(ls tests/cli/*.sh | xargs -n1 basename | sed 's/\.sh$//'); do
  case "$name" in lib*) continue ;; esac  # sourced helpers, not suites
  [ -e "tests/cli/$name.sh" ] && [ ! -e "$logs/$name.started" ] || continue
  touch "$logs/$name.started"
  while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n; report; done
  cli_suite "$name" &
done
wait; report

suite "mpi tests (no mpirun; np 1, 2, 3, 4, 8)" bash scripts/mpi_tests.sh build/mpi_tests
suite "lessons" bash scripts/run_lessons.sh
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
