#!/usr/bin/env bash
# `make test`: unit tests, command-line tests (bad input, checkpoints, layouts, …), MPI checks, every lesson.
# The command-line suites, and the lessons that read no clock, run side by side, one more at a time than there
# are cores (measured: with one per core the cores stood idle a third of the time, the suites waiting for their
# short processes to start and end); TEST_JOBS=N sets how many. Each suite's output is printed whole when it
# ends. The MPI suite and the lessons that time something (scripts/clock.py) run alone afterwards: their
# clock must see a quiet machine. Prints each suite's result and closes with "N passed, N failed"; exits
# non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# Every suite's temporary files in one directory of this run's, removed at the end (a suite killed half-way
# leaves nothing behind). In it, a file where OpenMPI keeps the session files every job of this user shares
# (ompi.HOST.UID): any mpirun not started through scripts/mpirun.sh, which gives each job a directory of its
# own, fails at once — and every suite must pass with it there.
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/shardlab-test.XXXXXX") || exit 1
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
for host in "$(hostname)" "$(hostname -s 2>/dev/null)"; do
  echo "in the way of a shared OpenMPI session directory (scripts/test_all.sh)" >"$TMPDIR/ompi.$host.$(id -u)"
done
# python3 as the interpreter it names, resolved once: the suites and lessons start it hundreds of times, and a
# version manager's shim in its place (pyenv's) costs a shell script and a lookup, 0.3 s, every time.
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ]; then
  mkdir -p "$TMPDIR/bin" && ln -s "$py" "$TMPDIR/bin/python3" && export PATH="$TMPDIR/bin:$PATH"
fi
# shardlab built before any suite starts: a lesson's own `make` must never relink a binary a suite is running.
MAKEFLAGS= make -s build/shardlab >/dev/null || exit 1
passed=0; failed=0
began=$(date +%s)
suite() {  # suite NAME COMMAND...
  local name=$1; shift
  echo "=== $name"
  local start=$(date +%s)
  if "$@"; then passed=$((passed + 1)); v=PASS; else failed=$((failed + 1)); v=FAIL; fi
  echo "=== $name: $v ($(( $(date +%s) - start ))s)" | tee -a "$logs/serial.lanes"
}

logs=build/test_logs; rm -rf "$logs"; mkdir -p "$logs"
lanes=${TEST_JOBS:-$(( $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2) + 2 ))}
# The test binaries (unit_tests, mpi_tests: a minute of compiling on 2 cores) are built in the pool, beside the
# first suites, which leave a core idle while they wait; then the unit tests run. A suite that runs the binaries
# itself (blas_kernel) waits until that build has ended, and the MPI suite runs after the whole pool.
unit_tests() {
  MAKEFLAGS= make -s build/unit_tests build/mpi_tests >/dev/null
  local rc=$?
  touch "$logs/test_binaries.ended"
  [ $rc = 0 ] && build/unit_tests
}
after_test_binaries() { while [ ! -e "$logs/test_binaries.ended" ]; do sleep 1; done; "$@"; }
pooled() {  # pooled LABEL NAME COMMAND...: in the background, the output and then its verdict line into $logs/NAME.log
  local label=$1 name=$2 start=$(date +%s); shift 2
  if "$@" >"$logs/$name.out" 2>&1; then v=PASS; else v=FAIL; fi
  { echo "=== $label"; cat "$logs/$name.out"; echo "=== $label: $v ($(( $(date +%s) - start ))s)"; } >"$logs/$name.log"
}
# The lessons that read the wall clock (scripts/clock.py) run alone at the end; the others join the pool.
clocked=""; quiet=""
for dir in lessons/[0-9][0-9]_*/; do
  if grep -qs "clock.py" "$dir"run "$dir"*.sh; then clocked+=" $(basename "$dir" | cut -c1-2)"
  else quiet+=" $(basename "$dir")"; fi
done
report() {  # prints every finished suite's log once
  for log in "$logs"/*.log; do
    [ -e "$log" ] && [ ! -e "$log.shown" ] || continue
    cat "$log"; touch "$log.shown"
    if tail -n 1 "$log" | grep -q ': PASS ('; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
}
# Longest first (so that no long suite starts last and runs alone at the end), then the rest by name.
longest="labs_parallel labs_kernels labs_ring nothing_lost_again hostile_inputs parallel_hostile pipeline parallel context_parallel"
for name in unit $longest format $(ls tests/cli/*.sh | xargs -n1 basename | sed 's/\.sh$//') $quiet; do
  case "$name" in lib*) continue ;; esac  # sourced helpers, not suites
  [ "$name" = unit ] || [ "$name" = format ] || [ -e "tests/cli/$name.sh" ] || [ -d "lessons/$name" ] || continue
  [ ! -e "$logs/$name.started" ] || continue
  touch "$logs/$name.started"
  while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n; report; done
  if [ "$name" = unit ]; then pooled "unit tests (once unit_tests and mpi_tests are built)" unit unit_tests &
  elif [ "$name" = format ]; then pooled "format (clang-format drift)" format bash scripts/format.sh --check &
  elif [ -d "lessons/$name" ]; then pooled "lesson $name" "$name" env LESSONS="${name:0:2}" bash scripts/run_lessons.sh &
  elif [ "$name" = blas_kernel ]; then pooled "cli $name" "$name" after_test_binaries bash "tests/cli/$name.sh" &
  else pooled "cli $name" "$name" bash "tests/cli/$name.sh" &
  fi
done
wait; report

suite "mpi tests (no mpirun; np 1, 2, 3, 4, 8)" bash scripts/mpi_tests.sh build/mpi_tests
[ -z "$clocked" ] || suite "lessons that time something (alone:$clocked)" env LESSONS="$clocked" bash scripts/run_lessons.sh
# The whole time and the five slowest lanes, to see where a change made the suite slower.
echo "$passed passed, $failed failed; the suites took $(( $(date +%s) - began )) s; the slowest lanes:" \
  "$(sed -n 's/^=== \(.*\): \(PASS\|FAIL\) (\([0-9]*\)s)$/\3 s \1/p' "$logs"/*.log "$logs/serial.lanes" | sort -rn | head -n 5 |
    sed 's/ (once unit_tests and mpi_tests are built)//' | paste -sd ';' | sed 's/;/; /g')"
[ "$failed" = 0 ]
