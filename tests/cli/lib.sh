# Shared set-up of tests/cli/*.sh (sourced, not run): the repository root as working directory,
# one BLAS thread, $S = the binary, $tmp = a fresh directory removed on exit (a script with its own
# EXIT trap calls rm itself), ok/fail/last reporting (a failed "setup: …" ends the suite), and
# $tmp/small.txt, 20 kB of the corpus.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 LC_ALL=C
S=$PWD/build/shardlab
if [ ! -x "$S" ]; then echo "FAIL - build/shardlab exists (run make first)"; exit 1; fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
# A failed setup (a name starting "setup:") ends the suite: the checks after it need what it should have made
# and would all fail for that one cause, burying it.
fail() {
  echo "FAIL - $1 ($2)"
  fails=$((fails + 1))
  if [[ $1 == setup:* ]]; then
    echo "(the checks after this setup need it: not run)"
    exit 1
  fi
}
last() { tail -n 3 "$1" | tr '\n' '|'; }
# descendants PID: every process below PID (its children, theirs, …), one pid a line — a job's ranks under
# scripts/mpirun.sh, which runs mpirun as its child.
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
# job_rank JOB RANK: the pid of world rank RANK among the processes of $S below JOB (scripts/mpirun.sh's pid), read
# from each one's environment; empty when it is not (yet, or any more) there. A process is $S by its executable, not
# its name (a rank that restarts itself with another GEMM kernel is named "exe").
S_EXE=$(readlink -f "$S")
job_rank() {
  local p r
  for p in $(descendants "$1"); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$S_EXE" ] || continue
    r=$({ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ "$r" = "$2" ] && { echo "$p"; return; }
  done
}
# await_rank JOB RANK SECONDS [CMD...]: polls (every 0.1 s) until rank RANK of the job exists and CMD (e.g. "training
# has begun") succeeds. Sets rank_pid (empty if not found) and rank_wait: how the wait ended ("found after 2.3 s",
# "mpirun ended after 0.4 s", "not found in 20 s", "found, but CMD still false after 20 s").
await_rank() {
  local job=$1 rank=$2 limit=$3 i polls; shift 3
  polls=$((limit * 10)); rank_pid=""; rank_wait=""
  for ((i = 1; i <= polls; i++)); do
    [ -n "$rank_pid" ] && kill -0 "$rank_pid" 2>/dev/null || rank_pid=$(job_rank "$job" "$rank")
    if [ -n "$rank_pid" ] && { [ $# = 0 ] || "$@"; }; then rank_wait="found after $((i / 10)).$((i % 10)) s"; return; fi
    if ! kill -0 "$job" 2>/dev/null; then rank_wait="mpirun ended after $((i / 10)).$((i % 10)) s"; rank_pid=""; return; fi
    sleep 0.1
  done
  [ -n "$rank_pid" ] && rank_wait="found, but '$*' still false after $limit s" || rank_wait="not found in $limit s"
  rank_pid=""
}
head -c 20000 data/corpus.txt >"$tmp/small.txt"
