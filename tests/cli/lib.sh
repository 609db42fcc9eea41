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
head -c 20000 data/corpus.txt >"$tmp/small.txt"
