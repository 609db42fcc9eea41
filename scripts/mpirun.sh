#!/usr/bin/env bash
# mpirun with what this project always needs: one BLAS thread per rank, oversubscription (2 cores
# stand in for many GPUs), the run-as-root flags when running as root (CI does), whether our stdout is
# a terminal, and a session directory of the job's own.
# Usage: scripts/mpirun.sh -np N build/shardlab train ...
#
# The session directory: OpenMPI 4 keeps a job's files (contact file, PMIx stores, sockets) under
# ompi.HOST.UID/ in the temp directory, one directory shared by every job of the user. A job that starts
# while another removes it fails at start-up ("orte_session_dir failed"), and every job fails while a
# file is in its way. So each job here gets a fresh directory (orte_tmpdir_base), removed when it ends;
# a caller's own OMPI_MCA_orte_tmpdir_base is kept. When OpenMPI still cannot start the job, one line
# after its report says what happened and what to do.
#
# mpirun runs as a child, not in this shell's place, so that the directory can be removed after it:
# SIGTERM, SIGHUP and SIGQUIT sent to this script (kill, timeout) are passed on to mpirun; a terminal's
# Ctrl-C reaches mpirun by itself (the same process group), so SIGINT is not passed on a second time.
# Exit status: mpirun's.
set -euo pipefail
flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1 --mca btl_vader_single_copy_mechanism none)
# On one host: OpenMPI's own point-to-point layer over shared memory (pml ob1, btl self,vader). Left to
# itself, OpenMPI first probes UCX, which doubles every launch (0.47 s against 0.26 s for 2 ranks). An
# --mca pml/btl of the caller (e.g. btl tcp,self across hosts: scripts/two_hosts.sh) takes precedence.
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
# The BLAS kernel a caller pinned (tests, make test-kernels) reaches every rank; else each rank chooses.
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then flags+=(-x OPENBLAS_CORETYPE); fi
if [ "$(id -u)" = 0 ]; then flags+=(--allow-run-as-root); fi
# Ranks' stdout is a pseudo-terminal under mpirun; tell them whether ours really is (progress bar or lines).
if [ -t 1 ]; then export SHARDLAB_STDOUT_TTY=1; else export SHARDLAB_STDOUT_TTY=0; fi
flags+=(-x SHARDLAB_STDOUT_TTY)

temp=${TMPDIR:-/tmp}
if ! own=$(mktemp -d "$temp/shardlab-mpi.XXXXXX" 2>/dev/null); then
  echo "shardlab: error: cannot make a directory for OpenMPI's session files in $temp (is it a writable" \
    "directory with free space?): set TMPDIR to one" >&2
  exit 1
fi
trap 'rm -rf "$own"' EXIT
export OMPI_MCA_orte_tmpdir_base=${OMPI_MCA_orte_tmpdir_base:-$own}
# Where each rank notes that it has started, before MPI start-up: a rank that never arrives there is then
# named by the others (src/comm/roll_call.h).
export SHARDLAB_JOB_DIR=$own/ranks
mkdir -p "$SHARDLAB_JOB_DIR"
flags+=(-x SHARDLAB_JOB_DIR)

# mpirun's stderr passes through unchanged, as it comes (tee; Ctrl-C ends mpirun, not it). A copy of its start
# (256 kB) is kept to recognise a failed start, and every line of shardlab's, to know whether a rank has spoken.
spoke='^(\[[0-9]+,[0-9]+\]<std(err|out)>:)?shardlab'  # a line of shardlab's, also under --tag-output
exec 3> >(exec tee -i -p >(exec head -c 262144 >"$own/mpirun.stderr") \
  >(exec grep --line-buffered -aE "$spoke" >"$own/spoken.lines") >&2)
# OpenMPI's own crash reports (its signal handler's stack trace: mpirun can crash as it tears down a job a rank has
# ended) go to files here, never onto the terminal; mpirun's crash becomes one line below. A rank's crash is named
# by mpirun's own banner ("exited on signal 11").
export OMPI_MCA_opal_stacktrace_output=${OMPI_MCA_opal_stacktrace_output:-file:$own/stacktrace}
copier=$!
job=
pass_on() {  # the signal to mpirun; before mpirun has started, the end of this script
  if [ -n "$job" ]; then kill -s "$1" "$job" 2>/dev/null || true; else exit $((128 + $2)); fi
}
trap 'pass_on TERM 15' TERM
trap 'pass_on HUP 1' HUP
trap 'pass_on QUIT 3' QUIT
trap ':' INT
mpirun "${flags[@]}" "$@" <&0 2>&3 &
job=$!
rc=
while [ -z "$rc" ]; do
  s=0
  wait "$job" 2>/dev/null || s=$?  # (bash's own "Segmentation fault" notice about mpirun silenced)
  # A status above 128 with mpirun still there: a signal interrupted the wait (and was passed on).
  if [ "$s" -gt 128 ] && kill -0 "$job" 2>/dev/null; then continue; fi
  rc=$s
done
exec 3>&-
# The copy ends when the last writer closes it: mpirun, and any process of the job that outlived it (not
# waited for beyond 2 s).
for _ in $(seq 20); do kill -0 "$copier" 2>/dev/null || break; sleep 0.1; done

# mpirun's own crash (its stack trace is stacktrace.*.PID): one line, unless a rank of shardlab has already said
# why the job ended (then mpirun only failed to tear it down cleanly).
crash=$(ls "$own"/stacktrace.*."$job" 2>/dev/null | head -n 1 || true)
if [ -n "$crash" ] && [ ! -s "$own/spoken.lines" ]; then
  sig=$(sed -n 's/^.*Signal: //p' "$crash" | head -n 1)
  echo "shardlab: error: mpirun itself crashed${sig:+ (${sig})} while ending the job (exit $rc); its crash" \
    "report is not shown, and the job's own output is above" >&2
fi
# OpenMPI's own start-up failures (its report is above): one line naming the cause and what to do.
# Only when nothing of shardlab spoke: a rank that started and reported its own error (OpenMPI may then add an
# ORTE_ERROR_LOG line of its abort) needs no second line.
if [ "$rc" != 0 ] && [ ! -s "$own/spoken.lines" ]; then
  report=$own/mpirun.stderr
  said() { grep -q -- "$1" "$report" 2>/dev/null; }
  if said "orte_session_dir failed" || said "session_dir.c"; then
    dir=$(sed -n 's/^ *Directory: *//p' "$report" | head -n 1)
    why=$(sed -n 's/^ *Error: *//p' "$report" | head -n 1)
    if [ "$OMPI_MCA_orte_tmpdir_base" = "$own" ]; then
      todo="set TMPDIR to a writable directory with free space"
    else
      todo="remove what is in its way, or unset OMPI_MCA_orte_tmpdir_base (then each job gets a fresh one)"
    fi
    echo "shardlab: error: OpenMPI could not start the job: it could not make its session directory" \
      "${dir:-under $OMPI_MCA_orte_tmpdir_base}${why:+ ($why)}; $todo" >&2
  elif said "orte_init failed\|opal_init failed\|ompi_rte_init failed"; then
    echo "shardlab: error: OpenMPI could not start the job (its report is above); nothing of shardlab ran." \
      "Check that OpenMPI is installed whole (make deps) and that TMPDIR (${temp}) is writable" >&2
  elif said "was unable to find the specified executable\|was unable to launch the specified application"; then
    echo "shardlab: error: mpirun could not start the program it was given (its report is above): check its" \
      "path (make builds build/shardlab)" >&2
  fi
fi
exit "$rc"
