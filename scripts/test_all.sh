#!/usr/bin/env bash
# `make test`: unit tests, command-line tests (bad input, checkpoints), MPI checks, every lesson.
# Prints each suite's result and closes with "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
passed=0; failed=0
suite() {  # suite NAME COMMAND...
  local name=$1; shift
  echo "=== $name"
  local start=$(date +%s)
  if "$@"; then passed=$((passed + 1)); echo "=== $name: PASS ($(( $(date +%s) - start ))s)"
  else failed=$((failed + 1)); echo "=== $name: FAIL ($(( $(date +%s) - start ))s)"; fi
}
suite "unit tests" build/unit_tests
for t in tests/cli/*.sh; do
  case "$(basename "$t")" in lib*.sh) continue ;; esac  # sourced helpers, not suites
  suite "cli $(basename "$t" .sh)" bash "$t"
done
suite "mpi tests (no mpirun; np 1, 2, 3, 4, 8)" bash scripts/mpi_tests.sh build/mpi_tests
suite "lessons" bash scripts/run_lessons.sh
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
