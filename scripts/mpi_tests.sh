#!/usr/bin/env bash
# The MPI test suite: runs the Catch2 binary (arg 1, default build/mpi_tests) without mpirun (a world of
# one that must never touch MPI), under mpirun -np 1 2 3 4 8, at -np 3 and 4 with 64-byte ring segments,
# then checks that the watchdog turns a stuck peer into a clean abort. One line per run; exits non-zero if any run fails.
# Extra arguments go to Catch2 (e.g. a tag filter: scripts/mpi_tests.sh build/mpi_tests "[ledger]").
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/mpi_tests}
shift || true
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
[ -x "$bin" ] || { echo "mpi_tests: $bin not found (make build/mpi_tests)"; exit 1; }
log_dir=build/mpi_tests_logs
mkdir -p "$log_dir"
failed=0

run() {  # run LABEL COMMAND...: prints "LABEL: PASS|FAIL (Ns, summary)", keeps the log
  local label=$1; shift
  local log="$log_dir/${label// /_}.log" start=$(date +%s.%N)
  if timeout 120 "$@" >"$log" 2>&1; then status=PASS; else status=FAIL; failed=$((failed + 1)); fi
  local secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  local summary=$(grep -E "All tests passed|test cases:" "$log" | tail -n 1 | sed 's/^ *//')
  echo "mpi tests $label: $status (${secs}s, $summary)"
  if [ $status = FAIL ]; then tail -n 30 "$log" | sed 's/^/    /'; fi
}

run "no-mpirun" "$bin" --use-colour no "$@"
for np in 1 2 3 4 8; do
  run "np $np" bash scripts/mpirun.sh -np "$np" "$bin" --use-colour no "$@"
done
# Tiny ring segments (64 bytes): every chunk of the tests travels as many segments through the rotating
# receive slots (the [large] test would send ~10^5 messages: skipped unless asked for).
for np in 3 4; do
  SHARDLAB_RING_SEGMENT=64 run "np $np segments-64B" bash scripts/mpirun.sh -np "$np" -x SHARDLAB_RING_SEGMENT \
    "$bin" --use-colour no "${@:-~[large]~[.]}"
done

# Watchdog: member 1 skips a collective and goes on to the next one (the verdict's world communicator);
# after 2 s the ranks must find that they wait in different places, say so once, and end the job (non-zero).
log="$log_dir/watchdog.log"
start=$(date +%s)
SHARDLAB_COMM_TIMEOUT=2 timeout 60 bash scripts/mpirun.sh -np 2 -x SHARDLAB_COMM_TIMEOUT "$bin" "[watchdog]" >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "shardlab: error: every rank is waiting and none can go on (a deadlock: each waits for a message or collective another rank is not in): rank 0 in all_reduce on world (collective #[0-9]* of its group) for rank 1; rank 1 in setting up the world communicator" "$log"; then
  echo "mpi tests watchdog: PASS ($(( $(date +%s) - start ))s, stuck peer -> exit $rc)"
else
  echo "mpi tests watchdog: FAIL (exit $rc; expected an abort with the watchdog message)"; tail -n 20 "$log" | sed 's/^/    /'
  failed=$((failed + 1))
fi

[ "$failed" = 0 ]
