#!/usr/bin/env bash
# Starting MPI jobs (scripts/mpirun.sh): every job a session directory of its own, so that no job fails because of
# another's files (OpenMPI 4 shares ompi.HOST.UID/ in the temp directory between every job of a user):
#  (1) with a file in the way of that shared directory, a job through the script runs, while a plain mpirun fails
#      (the control: the file is really in the way);
#  (2) when OpenMPI still cannot start (a file in the way of a session directory the caller chose, a temp directory
#      that cannot be written): one shardlab line after OpenMPI's report, saying what is in the way and what to do;
#  (3) nothing is left behind: every job's directory is removed when it ends — also when the script is killed (its
#      SIGTERM reaches mpirun and the ranks);
#  (4) many jobs at once (the race behind "orte_session_dir failed"): all run;
#  (5) crash reports: OpenMPI's stack trace ("Process received signal") never reaches the user — mpirun's own crash as
#      it ends a job (played by a stand-in mpirun) is one shardlab line, none when a rank has already said why (also
#      under --tag-output); a rank that segfaults is named by mpirun's banner alone.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then echo "FAIL - mpirun exists (no OpenMPI: make deps installs it)"; exit 1; fi

mine=$tmp/temp  # this suite's temp directory, the shared one's stand-in
mkdir -p "$mine"
for host in "$(hostname)" "$(hostname -s 2>/dev/null)"; do echo "in the way" >"$mine/ompi.$host.$(id -u)"; done
root_flags=()
[ "$(id -u)" = 0 ] && root_flags=(--allow-run-as-root)
T=(train --layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 1 --global-batch 2 --steps 2 --progress none
   --eval-windows 0 --data "$tmp/small.txt")
left() { find "$mine" -maxdepth 1 -name 'shardlab-mpi.*' | wc -l; }

# ---------------------------------------------------------------- (1) a file in the way of the shared directory
if TMPDIR=$mine timeout 60 bash scripts/mpirun.sh -np 2 "$S" "${T[@]}" >"$tmp/a.out" 2>&1; then
  ok "(1) a file in the way of $(basename "$mine")/ompi.HOST.UID: a 2-rank job through scripts/mpirun.sh runs"
else
  fail "(1) a job through scripts/mpirun.sh beside a file in the way" "exit $?: $(last "$tmp/a.out")"
fi
TMPDIR=$mine timeout 60 mpirun "${root_flags[@]}" --oversubscribe -np 2 true >"$tmp/b.out" 2>&1
rc=$?
if [ $rc != 0 ] && grep -q "orte_session_dir failed" "$tmp/b.out"; then
  ok "(1) control: a plain mpirun with the same temp directory fails (exit $rc, orte_session_dir failed)"
else
  fail "(1) control: a plain mpirun fails beside the file" "exit $rc: $(last "$tmp/b.out")"
fi

# ---------------------------------------------------------------- (2) OpenMPI cannot start: one line
mkdir -p "$tmp/chosen" && for host in "$(hostname)" "$(hostname -s 2>/dev/null)"; do
  echo "in the way" >"$tmp/chosen/ompi.$host.$(id -u)"
done
OMPI_MCA_orte_tmpdir_base=$tmp/chosen timeout 60 bash scripts/mpirun.sh -np 2 "$S" "${T[@]}" >"$tmp/c.out" 2>"$tmp/c.err"
rc=$?
n=$(grep -c '^shardlab' "$tmp/c.err")
line=$(grep '^shardlab' "$tmp/c.err")
if [ $rc != 0 ] && [ "$n" = 1 ] && [[ $line == *"could not make its session directory $tmp/chosen/ompi."*"Not a directory"*"remove what is in its way"* ]]; then
  ok "(2) a file in the way of the caller's OMPI_MCA_orte_tmpdir_base: exit $rc, one line: ${line#shardlab: error: }"
else
  fail "(2) one line naming the session directory in the way" "exit $rc, $n shardlab lines: '${line:0:300}'"
fi
TMPDIR=$tmp/no/such/dir timeout 60 bash scripts/mpirun.sh -np 2 "$S" "${T[@]}" >"$tmp/d.out" 2>"$tmp/d.err"
rc=$?
line=$(cat "$tmp/d.err")
if [ $rc != 0 ] && [ "$(wc -l <"$tmp/d.err")" = 1 ] && [[ $line == "shardlab: error: cannot make a directory for OpenMPI's session files in $tmp/no/such/dir"*"set TMPDIR"* ]]; then
  ok "(2) a TMPDIR that does not exist: exit $rc, one line naming it and TMPDIR"
else
  fail "(2) one line for an unusable TMPDIR" "exit $rc: '${line:0:300}'"
fi

# ---------------------------------------------------------------- (3) nothing left behind
[ "$(left)" = 0 ] && ok "(3) after the jobs: no session directory of theirs is left in the temp directory" ||
  fail "(3) no session directory left" "$(left) left: $(ls "$mine")"
TMPDIR=$mine bash scripts/mpirun.sh -np 2 "$S" train --layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 1 \
  --global-batch 2 --steps 100000 --progress none --eval-windows 0 --data "$tmp/small.txt" >"$tmp/e.out" 2>&1 </dev/null &
job=$!
ranks=""
for _ in $(seq 100); do
  ranks=$(for p in $(descendants "$job"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = shardlab ] && echo "$p"; done)
  [ "$(echo "$ranks" | grep -c .)" = 2 ] && break
  sleep 0.1
done
kill -TERM "$job"
for _ in $(seq 100); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
for _ in $(seq 50); do  # mpirun ends first; its ranks end within a moment (OpenMPI's SIGTERM, then SIGKILL)
  alive=$(for p in $job $ranks; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
  [ -z "$alive" ] && break
  sleep 0.1
done
if [ "$(echo "$ranks" | grep -c .)" = 2 ] && [ -z "$alive" ] && [ "$(left)" = 0 ]; then
  ok "(3) SIGTERM to scripts/mpirun.sh: mpirun and both ranks end within 5 s, the job's directory is removed"
else
  fail "(3) SIGTERM ends the job and removes its directory" "ranks '$(echo $ranks)', alive '$(echo $alive)', $(left) directories left"
  for p in $alive; do kill -9 "$p" 2>/dev/null; done
fi
wait "$job" 2>/dev/null

# ---------------------------------------------------------------- (4) many jobs at once
pids=()
for i in 1 2 3 4 5 6; do
  TMPDIR=$mine timeout 120 bash scripts/mpirun.sh -np 2 "$S" "${T[@]}" --seed "$i" >"$tmp/f$i.out" 2>&1 &
  pids+=($!)
done
bad=0
for i in "${!pids[@]}"; do wait "${pids[$i]}" || { bad=$((bad + 1)); fail "(4) job $((i + 1)) of 6 at once" "$(last "$tmp/f$((i + 1)).out")"; }; done
[ $bad = 0 ] && ok "(4) 6 jobs started at once beside the file in the way: all ran, $(left) directories left"

# ---------------------------------------------------------------- (5) mpirun's own crash report
mkdir -p "$tmp/fake"
cat >"$tmp/fake/mpirun" <<'EOF2'
#!/usr/bin/env bash
# A stand-in mpirun: a line of a rank ($FAKE_SAID), OpenMPI's exit banner, then its own crash as it ends the job: the
# stack trace where OpenMPI's opal_stacktrace_output says ("file:PATH": PATH.VPID.PID, else stderr), exit 139.
[ -z "${FAKE_SAID:-}" ] || echo "$FAKE_SAID" >&2
echo "mpirun noticed that process rank 1 with PID 0 on node $(hostname) exited on signal 11 (Segmentation fault)." >&2
to=/dev/stderr
[[ ${OMPI_MCA_opal_stacktrace_output:-} == file:* ]] && to=${OMPI_MCA_opal_stacktrace_output#file:}.0.$$
for l in "*** Process received signal ***" "Signal: Segmentation fault (11)" "Signal code: Address not mapped (1)" \
  "[ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f]" "[ 1] libpmix.so.2(PMIx_server_finalize+0x5a)[0x7f]" \
  "*** End of error message ***"; do echo "[$(hostname):$$] $l"; done >>"$to"
exit 139
EOF2
chmod +x "$tmp/fake/mpirun"
crash() {  # crash NAME FAKE_SAID WANT_LINES PATTERN
  PATH="$tmp/fake:$PATH" FAKE_SAID=$2 timeout 30 bash scripts/mpirun.sh -np 2 true >"$tmp/c.out" 2>"$tmp/c.err"
  local rc=$? n
  n=$(grep -c '^shardlab' "$tmp/c.err")
  if [ $rc = 139 ] && ! grep -q "PMIx_server_finalize\|Signal code\|\] Signal: " "$tmp/c.err" && [ "$n" = "$3" ] &&
    grep -q "$4" "$tmp/c.err" && grep -q "exited on signal 11" "$tmp/c.err"; then
    ok "$1: exit 139, no crash report, $n shardlab line(s)${2:+ (a rank spoke first)}: $(grep -m1 '^shardlab' "$tmp/c.err" | cut -c1-110)"
  else
    fail "$1" "exit $rc, $n shardlab lines (want $3), stderr: $(tr '\n' '|' <"$tmp/c.err" | cut -c1-400)"
  fi
}
crash "(5) mpirun crashes as the job ends, no rank spoke" "" 1 "^shardlab: error: mpirun itself crashed (Segmentation fault (11))"
crash "(5) mpirun crashes after a rank named the cause" "shardlab: error: rank 1 never arrived: rank 0 waited 5 s" 1 \
  "^shardlab: error: rank 1 never arrived"
crash "(5) ... also when the rank's line is tagged (--tag-output)" "[1,0]<stderr>:shardlab: error: rank 1 never arrived" 0 \
  "^\[1,0\]<stderr>:shardlab: error: rank 1 never arrived"
# A real crash: a rank that segfaults. OpenMPI's stack trace never reaches the terminal; its banner names the rank.
cat >"$tmp/segv.c" <<'EOF2'
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 1) *(volatile int*)0 = 1;
  MPI_Finalize();
  return 0;
}
EOF2
if mpicc "$tmp/segv.c" -o "$tmp/segv" 2>"$tmp/cc.err"; then
  timeout 30 bash scripts/mpirun.sh -np 2 "$tmp/segv" >"$tmp/segv.out" 2>&1
  rc=$?
  if [ $rc != 0 ] && ! grep -q "Process received signal\|Signal code" "$tmp/segv.out" &&
    grep -q "rank 1 .*exited on signal 11" "$tmp/segv.out"; then
    ok "(5) a rank that segfaults: exit $rc, no stack trace, '$(grep -o 'process rank 1 .*exited on signal 11' "$tmp/segv.out" | sed 's/ with PID [0-9]* on node [^ ]*//')'"
  else
    fail "(5) a rank that segfaults: no stack trace, the rank named" "exit $rc: $(tr '\n' '|' <"$tmp/segv.out" | cut -c1-400)"
  fi
else
  fail "(5) a rank that segfaults" "mpicc could not build the test program: $(head -c 200 "$tmp/cc.err")"
fi
exit $((fails > 0))
