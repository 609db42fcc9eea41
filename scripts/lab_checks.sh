#!/usr/bin/env bash
# The helpers a lab's checks are written with (sourced by scripts/lab.sh; a lab's lab.sh uses them):
#   limited SECS LOG CMD…   run CMD with a time limit, output into LOG; on failure WHY says what happened —
#                           "not written yet: …", shardlab's own error (the watchdog names a collective that
#                           never completed), a rank's signal, or the time limit
#   mpi NP CMD…             CMD on NP ranks (scripts/mpirun.sh), limited
#   run_named NAME          the lab's run NAME (LAB_RUN_NAME="NP FLAGS…") with the lab's build, into $LAB_WORK
#   curve_check NAME        run NAME, then its loss curve against the recorded one: bit for bit
#   ledger_check NAME       run NAME's measured bytes and memory against plan's formulas, exactly
#   say TEXT                a check's diagnostic (its last lines are the score table's and results.json's)
# Every process a check starts carries SHARDLAB_LAB_JOB in its environment; end_leftovers ends whatever of
# them is still alive when the check returns.
LAB_JOB=${LAB_JOB_PREFIX:-lab}-$$-$RANDOM  # a prefix lets a caller find its own gradings' processes
export SHARDLAB_LAB_JOB=$LAB_JOB
export SHARDLAB_COMM_TIMEOUT=${LAB_COMM_TIMEOUT:-10}  # a wrong collective is named by the watchdog in 10 s
LAB_TIME_LIMIT=${LAB_TIME_LIMIT:-60}                  # seconds any one command of a check may take
LAB_FILE_LIMIT_KB=${LAB_FILE_LIMIT_KB:-8192}          # kB any one file a check writes may hold (its log too)
# The verdicts — curves compared, ledgers against the formulas — come from shardlab's own build (build/shardlab,
# built from this tree), never from the build that holds the solution: that one only runs.
JUDGE=build/shardlab
JUDGE_SUM=""  # its checksum once built (scripts/lab.sh): a judge changed since is refused, never run
judge() {
  if [ "$(sha256sum <"$JUDGE" 2>/dev/null)" != "$JUDGE_SUM" ]; then
    say "the judge ($JUDGE) changed during the grade: no verdict (a solution must not touch the grader)"
    return 3
  fi
  "$JUDGE" "$@"
}
# Bit for bit holds for the build and GEMM kernel the expected outputs were recorded with (the "any machine"
# rules: the avx2-fma build on OpenBLAS's Haswell kernel, pinned as tests/cli/reference_curves.sh does).
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
PINNED="compute: avx2-fma build; OpenBLAS Haswell kernel"
LAB_BASE=(--layers 2 --hidden 32 --heads 2 --seq 32 --dtype f64 --dropout 0.1 --steps 4 --micro-batch 2
  --eval-windows 0 --progress none)

say() { echo "$*"; }

end_leftovers() {
  local f p
  for f in $(grep -lzx "SHARDLAB_LAB_JOB=$LAB_JOB" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}
    p=${p%/environ}
    [ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] || kill -KILL "$p" 2>/dev/null
  done
  return 0
}

# why_failed LOG RC SECS: one line, the most telling first.
why_failed() {
  local log=$1 rc=$2 secs=$3 line
  if [ -e "$log.too_long" ] || [ "$rc" = 153 ]; then
    echo "wrote more than $LAB_FILE_LIMIT_KB kB into one file (the limit of a check's output): ended"
  elif line=$(grep -m1 -E '^not written yet: ' "$log"); then echo "$line"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "did not finish within $secs s (a hang or an endless loop): ended"
  elif line=$(grep -m1 -E '^shardlab[a-z -]*: error' "$log"); then sed -E 's/^shardlab[a-z -]*: //' <<<"$line"
  elif line=$(grep -m1 -oE 'process rank [0-9]+ .* exited on signal [0-9]+ \([^)]*\)' "$log"); then
    echo "crashed: $(sed -E 's/ with PID [0-9]+ on node [^ ]+//' <<<"$line")"
  elif [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then echo "crashed: SIG$(kill -l $((rc - 128)) 2>/dev/null)"
  else echo "exit $rc: $(grep -v '^ *$' "$log" | tail -n 1)"
  fi
}

limited() {
  local secs=$1 log=$2 rc=0 pid
  shift 2
  rm -f "$log.too_long"
  timeout -k 5 "$secs" "$@" >"$log" 2>&1 &
  pid=$!
  # A command whose output passes the cap is ended (the file-size limit the grader sets stops each writer, but
  # an MPI job whose launcher can no longer write may linger): the log is watched while it runs.
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(stat -c %s "$log" 2>/dev/null || echo 0)" -ge $((LAB_FILE_LIMIT_KB * 1024 - 65536)) ]; then
      touch "$log.too_long"
      kill -TERM "$pid" 2>/dev/null
      break
    fi
    sleep 0.05
  done
  wait "$pid" || rc=$?
  WHY=""
  [ $rc = 0 ] || WHY=$(why_failed "$log" $rc "$secs")
  return $rc
}

mpi() {
  local np=$1
  shift
  if [ "$np" = 1 ]; then
    limited "$LAB_TIME_LIMIT" "$LOG" "$@"
  else
    limited "$LAB_TIME_LIMIT" "$LOG" bash scripts/mpirun.sh -np "$np" "$@"
  fi
}

# run_named NAME: trains once per grading (later checks of the same run reuse it); COMPUTE: its compute line.
run_named() {
  local name=$1 spec np out=$LAB_WORK/$1
  spec=LAB_RUN_$name
  read -r np flags <<<"${!spec}"
  LOG=$out.log
  if [ ! -e "$out.done" ]; then
    rm -rf "$out"
    # shellcheck disable=SC2086
    mpi "$np" "$BUILD_DIR/shardlab" train "${LAB_BASE[@]}" $flags --out "$out" || echo "$WHY" >"$out.failed"
    touch "$out.done"
  fi
  COMPUTE=$(grep -m1 '^compute:' "$LOG" | cut -d'(' -f1 | sed 's/ *$//')
  if [ -e "$out.failed" ]; then
    WHY="the run ($np ranks: ${flags}) failed: $(cat "$out.failed")"
    return 1
  fi
}

curve_check() {
  local name=$1 exp=$LAB_DIR/expected/$1 rtol=0 note="" cmp
  [ -e "$exp/loss.csv" ] || { say "no recorded curve $exp (scripts/lab.sh record $LAB)"; return 1; }
  run_named "$name" || { say "$WHY"; return 1; }
  if [ "$COMPUTE" != "$(cat "$LAB_DIR/expected/compute.txt")" ]; then
    rtol=1e-9 note=" (the recorded curve is the $(cat "$LAB_DIR/expected/compute.txt" | cut -d' ' -f2-); this is ${COMPUTE#compute: }: compared within 1e-9)"
  fi
  cmp=$LAB_WORK/$name.compare
  if judge compare "$exp" "$LAB_WORK/$name" --rtol $rtol --all >"$cmp" 2>&1; then
    say "the loss curve equals the recorded one$note: $(tail -n 1 "$cmp")"
    return 0
  fi
  local first
  first=$(awk '/FAIL/ && $1 ~ /^[0-9]+$/ {f = substr($0, index($0, "FAIL")); sub(/^FAIL:? */, "", f);
    if (f == "") f = "loss, rel diff " $4; print "step " $1 " (" f "): loss expected " $2 ", got " $3; exit}' "$cmp")
  say "the loss curve differs from the recorded one$note — first at ${first:-$(tail -n 1 "$cmp")}"
  return 1
}

# within_rounding REF RUN LABEL_REF LABEL_RUN: the runs named REF and RUN (run_named) agree within f64 rounding
# (compare --rtol 1e-12); else says the largest difference and the first step past it, each run's loss by label.
within_rounding() {
  local ref=$1 run=$2 cmp=$LAB_WORK/$1_$2.compare
  run_named "$ref" || { say "the $3 run: $WHY"; return 1; }
  run_named "$run" || { say "$WHY"; return 1; }
  if judge compare "$LAB_WORK/$ref" "$LAB_WORK/$run" --rtol 1e-12 --all >"$cmp" 2>&1; then
    say "$(tail -n 1 "$cmp")"
    return 0
  fi
  say "$4 vs $3: $(grep -m1 -oE 'max rel diff .*' "$cmp"); first step past 1e-12: $(awk -v a="$3" -v b="$4" \
    '/FAIL/ && $1 ~ /^[0-9]+$/ {print $1 " (" a " " $2 ", " b " " $3 ")"; exit}' "$cmp")"
  return 1
}

ledger_check() {
  local name=$1 out=$LAB_WORK/$1.ledger
  run_named "$name" || { say "$WHY"; return 1; }
  if judge plan --ledger "$LAB_WORK/$name/ledger.json" >"$out" 2>&1; then
    say "$(grep -m1 -E '^result' "$out")"
    return 0
  fi
  say "measured ≠ formula: $(grep -m1 -E '^result' "$out" | sed -E 's/^result: //' | cut -c1-300)"
  return 1
}
