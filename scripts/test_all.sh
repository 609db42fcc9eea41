#!/usr/bin/env bash
# `make test`: unit tests, command-line tests (bad input, checkpoints, layouts, …), MPI checks, every lesson.
# After the unit tests, everything else runs in lanes, one more than the cores (TEST_JOBS overrides): a suite
# waits on short processes, launches and timeouts about half its time, so a core per suite leaves them idle.
# The lessons are one lane, in order; a lesson reads the wall clock only where scripts/clock.py says the
# machine can show it, and says why not when other lanes are busy. Longest first, so that no long suite starts
# last and runs alone. Each suite's output is printed whole when it ends. Closes with "N passed, N failed";
# exits non-zero on any failure.
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
lanes=${TEST_JOBS:-$(($(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2) + 1))}
lane() {  # lane TITLE NAME COMMAND…: runs in the background; its output, then its verdict line, into $logs/NAME.log
  local title=$1 name=$2 start=$(date +%s)
  shift 2
  if "$@" >"$logs/$name.out" 2>&1; then v=PASS; else v=FAIL; fi
  { echo "=== $title"; cat "$logs/$name.out"; echo "=== $title: $v ($(( $(date +%s) - start ))s)"; } >"$logs/$name.log"
}
report() {  # prints every finished suite's log once
  for log in "$logs"/*.log; do
    [ -e "$log" ] && [ ! -e "$log.shown" ] || continue
    cat "$log"; touch "$log.shown"
    if tail -n 1 "$log" | grep -q ': PASS ('; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
}
# Longest first, then the rest by name.
longest="lessons labs_others labs_ring nothing_lost_again hostile_inputs parallel_hostile pipeline parallel mpi"
for name in $longest $(ls tests/cli/*.sh | xargs -n1 basename | sed 's/\.sh$//'); do
  case "$name" in lib*) continue ;; esac  # sourced helpers, not suites
  [ ! -e "$logs/$name.started" ] || continue
  touch "$logs/$name.started"
  while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n; report; done
  case "$name" in
    lessons) lane "lessons" lessons bash scripts/run_lessons.sh & ;;
    mpi) lane "mpi tests (no mpirun; np 1, 2, 3, 4, 8)" mpi bash scripts/mpi_tests.sh build/mpi_tests & ;;
    *) lane "cli $name" "$name" bash "tests/cli/$name.sh" & ;;
  esac
done
wait; report
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
