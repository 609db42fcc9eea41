#!/usr/bin/env bash
# Training on several ranks, end to end through the CLI and scripts/mpirun.sh:
#  (1) bad layouts under MPI: a non-zero exit within 60 s, the error printed once (rank 0) on
#      stderr, and no crash dump (MPI_ABORT, segfault, core dump, uncaught exception);
#  (2) --zero 1 on one process runs and warns once;
#  (3) a rank killed with SIGKILL ends the job (no hang) with a non-zero exit and OpenMPI naming
#      the dead process, and leaves nothing running;
#  (4) layouts reproduce each other (f64): 1 process vs DP on 2, ZeRO-3 vs DP (bit-identical),
#      --comm mpi vs ring, FSDP hybrid vs DP;
#  (5) a ZeRO-3 checkpoint resumes under ZeRO-1 bit-identically to a straight ZeRO-1 run, and
#      resumes / evaluates on a single process (checkpoints hold whole tensors);
#  (6) ledger.json of a 4-rank ZeRO-2 run holds every rank and passes `plan --ledger`, and a
#      one-number edit of rank 2's memory makes it fail;
#  (7) --trace on: trace.json, and `shardlab trace` reports every rank and the all_gathers;
#  (8) evaluation's and checkpoint saving's gathers stay out of the training ledger.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then echo "FAIL - mpirun exists (no OpenMPI: make deps installs it)"; exit 1; fi

started=()  # mpirun and rank processes of the dead-rank case: killed on exit if still alive
cleanup() {  # only processes whose command line names our own $tmp/dead*, so never a reused pid
  local p
  for p in ${started[@]+"${started[@]}"} $(pgrep -f "$tmp/dead"); do
    tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -qF "$tmp/dead" && kill -9 "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
mpi() { timeout -k 5 60 bash scripts/mpirun.sh -np "$@" </dev/null; }  # mpi N CMD...: 124/137 = hung

PY=""
command -v python3 >/dev/null 2>&1 && python3 -c "import json" >/dev/null 2>&1 && PY=python3

TINY=(--layers 1 --hidden 32 --heads 2 --seq 32 --eval-windows 0 --progress none --data "$tmp/small.txt")

# train_run NAME NP DIR [STRATEGY] -- FLAGS...: train on NP ranks (1: no mpirun) with --out DIR,
# expect exit 0 and, when given, ledger.json's layout strategy. Returns 1 (after a FAIL) otherwise.
train_run() {
  local name=$1 np=$2 dir=$3 strategy="" rc
  shift 3
  if [ "$1" != "--" ]; then strategy=$1; shift; fi
  shift
  if [ "$np" = 1 ]; then
    timeout -k 5 60 "$S" train "$@" --out "$dir" >"$dir.log" 2>&1 </dev/null
  else
    mpi "$np" "$S" train "$@" --out "$dir" >"$dir.log" 2>&1
  fi
  rc=$?
  if [ "$rc" != 0 ]; then fail "$name" "exit $rc: $(last "$dir.log")"; return 1; fi
  if [ -n "$strategy" ] && ! grep -q "\"strategy\": \"$strategy\"" "$dir/ledger.json" 2>/dev/null; then
    fail "$name" "ledger.json does not say strategy $strategy: $(grep -o '"strategy": "[a-z0-9_]*"' "$dir/ledger.json" 2>/dev/null)"
    return 1
  fi
  return 0
}

# compare_runs NAME REF RUN [--rtol X]
compare_runs() {
  local name=$1 ref=$2 run=$3
  shift 3
  if "$S" compare "$ref" "$run" "$@" >"$run.cmp" 2>&1; then
    ok "$name ($(grep -o 'max rel diff [^ ]*' "$run.cmp"))"
  else
    fail "$name" "$(grep -E 'max rel|error|FAIL' "$run.cmp" | tail -n 1)"
  fi
}

# ---------------------------------------------------------------- (1) bad layouts under MPI
C=$tmp/cap
mkdir -p "$C"
# Valid on 2 and 4 ranks; every case below breaks exactly one thing.
E=("${TINY[@]}" --dtype f64 --global-batch 4 --micro-batch 1 --steps 2)
mpi_error() {  # mpi_error NAME NP PATTERN FLAGS...   PATTERN: extended regex the error line must match
  local name=$1 np=$2 pattern=$3 rc why=()
  shift 3
  mpi "$np" "$S" train "${E[@]}" "$@" >"$C/out" 2>"$C/err"
  rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then why+=("exit $rc: no exit within 60 s, or a rank was killed")
  elif [ "$rc" = 0 ]; then why+=("exit 0")
  fi
  local lines n
  lines=$(grep '^shardlab' "$C/err")
  n=$(grep -c '^shardlab.*error' "$C/err")
  if [ "$n" != 1 ] || [ "$(grep -c '^shardlab' "$C/err")" != 1 ]; then
    why+=("$n stderr lines '^shardlab.*error', expected exactly 1: $(echo "$lines" | head -n 4 | tr '\n' '|')")
  elif ! grep -Eq -- "$pattern" <<<"$lines"; then
    why+=("error does not match /$pattern/: '$lines'")
  fi
  if grep -q '^shardlab.*error' "$C/out"; then why+=("error on stdout too: $(grep '^shardlab.*error' "$C/out" | head -n 2 | tr '\n' '|')"); fi
  if grep -Eiq 'MPI_ABORT|segmentation|core dumped|terminate called' "$C/out" "$C/err"; then
    why+=("crash dump: $(grep -Eih 'MPI_ABORT|segmentation|core dumped|terminate called' "$C/out" "$C/err" | head -n 2 | tr '\n' '|')")
  fi
  if [ ${#why[@]} = 0 ]; then ok "(1) -np $np $*: one error, exit $rc"; else fail "(1) -np $np $*: $name" "$(printf '%s; ' "${why[@]}" | sed 's/; $//')"; fi
}
mpi_error "dp × tp × pp × cp × ep ≠ world" 2 'world|--dp' --dp 4
mpi_error "global batch not divisible by dp × micro" 4 'divisible' --global-batch 6 --micro-batch 1
mpi_error "global batch not divisible by dp × micro" 2 'divisible' --global-batch 4 --micro-batch 4
mpi_error "hybrid without --ranks-per-node" 4 'hybrid' --fsdp hybrid
mpi_error "hybrid on one node" 4 'hybrid' --fsdp hybrid --ranks-per-node 4
mpi_error "--ranks-per-node not dividing the world" 4 'ranks-per-node' --ranks-per-node 3
mpi_error "hybrid with --ranks-per-node not dividing the world" 4 'hybrid|ranks-per-node' --fsdp hybrid --ranks-per-node 3
mpi_error "--zero 4" 2 'zero' --zero 4
mpi_error "--zero with --fsdp" 2 'zero.*fsdp|fsdp.*zero' --zero 2 --fsdp full
mpi_error "--bucket-mb 0" 2 'bucket' --bucket-mb 0
mpi_error "--trace on without --out" 2 'trace' --trace on
mpi_error "--comm nccl" 2 'comm' --comm nccl
# The control: the same base config with a valid hybrid layout trains.
if mpi 4 "$S" train "${E[@]}" --fsdp hybrid --ranks-per-node 2 >"$C/out" 2>&1; then
  ok "(1) control: -np 4 --fsdp hybrid --ranks-per-node 2 on the same config trains"
else
  fail "(1) control: -np 4 --fsdp hybrid --ranks-per-node 2 on the same config trains" "exit $?: $(last "$C/out")"
fi

# ---------------------------------------------------------------- (2) --zero 1 on one process
timeout -k 5 60 "$S" train "${E[@]}" --zero 1 >"$C/out" 2>"$C/err" </dev/null
rc=$?
nw=$(grep -c warning "$C/err")
if [ "$rc" = 0 ] && [ "$nw" = 1 ]; then
  ok "(2) --zero 1 on one process: exit 0, one warning ($(grep warning "$C/err" | cut -c1-80))"
else
  fail "(2) --zero 1 on one process: exit 0, one warning" "exit $rc, $nw warning lines: $(head -c 300 "$C/err" | tr '\n' '|')"
fi

# ---------------------------------------------------------------- (3) a rank dies
# dead_rank NAME WHICH: WHICH = the rank (OMPI_COMM_WORLD_RANK) to kill -9 once training runs.
dead_rank() {
  local name=$1 which=$2 d=$tmp/dead$2 mp ranks=() victim="" p i rc left
  mkdir -p "$d"
  bash scripts/mpirun.sh -np 2 "$S" train "${TINY[@]}" --global-batch 2 --micro-batch 1 --steps 100000 \
    --out "$d/run" >"$d/out" 2>"$d/err" </dev/null &
  mp=$!
  started+=("$mp")
  # The rank, found among the job's own processes, once training has begun.
  began() { [ "$(cat "$d/run/loss.csv" 2>/dev/null | wc -l)" -ge 2 ]; }
  await_rank "$mp" "$which" 30 began
  victim=$rank_pid
  mapfile -t ranks < <(descendants "$mp")
  started+=(${ranks[@]+"${ranks[@]}"})
  if [ -z "$victim" ]; then
    fail "$name" "rank $which's process: $rank_wait; $(last "$d/err")"
    kill "$mp" 2>/dev/null
    return
  fi
  kill -9 "$victim"
  for i in $(seq 1 120); do kill -0 "$mp" 2>/dev/null || break; sleep 0.5; done
  local waited=$((i / 2))
  if kill -0 "$mp" 2>/dev/null; then
    fail "$name" "mpirun still running 60 s after rank $which was killed"
    kill "$mp" 2>/dev/null
    sleep 2
    for p in "$mp" "${ranks[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait "$mp" 2>/dev/null
    return
  fi
  wait "$mp"
  rc=$?
  for i in $(seq 1 25); do
    left=$(pgrep -f "^$S train .*$d/run" | tr '\n' ' ')
    [ -z "$left" ] && break
    sleep 0.2
  done
  local why=()
  [ "$rc" != 0 ] || why+=("exit 0")
  grep -Eiq 'signal 9|killed' "$d/out" "$d/err" || why+=("no message naming the dead process: $(cat "$d/out" "$d/err" | grep -v '^-*$' | tail -n 3 | tr '\n' '|')")
  [ -z "$left" ] || why+=("still running afterwards: pids $left")
  if [ ${#why[@]} = 0 ]; then
    ok "$name: exit $rc within $waited s, '$(grep -Eih 'signal 9|killed' "$d/out" "$d/err" | head -n 1 | sed 's/^ *//' | cut -c1-90)'"
  else
    fail "$name" "$(printf '%s; ' "${why[@]}" | sed 's/; $//')"
  fi
}
dead_rank "(3) -np 2, rank 1 killed with SIGKILL mid-training: the job ends, non-zero" 1
dead_rank "(3) -np 2, rank 0 killed with SIGKILL mid-training: the job ends, non-zero" 0

# ---------------------------------------------------------------- (4) layouts reproduce each other
L=$tmp/layouts
mkdir -p "$L"
F=("${TINY[@]}" --dtype f64 --steps 8 --global-batch 2 --micro-batch 1)
train_run "(4) 1 process" 1 "$L/single" -- "${F[@]}" &&
  train_run "(4) -np 2 DP" 2 "$L/dp" dp -- "${F[@]}" &&
  compare_runs "(4) 1 process vs -np 2 DP: compare passes" "$L/single" "$L/dp"
if [ -f "$L/dp/loss.csv" ]; then
  train_run "(4) -np 2 --zero 3" 2 "$L/z3" zero3 -- "${F[@]}" --zero 3 &&
    compare_runs "(4) -np 2 --zero 3 vs DP: bit-identical (compare --rtol 0)" "$L/dp" "$L/z3" --rtol 0
  train_run "(4) -np 2 --comm mpi" 2 "$L/mpi" dp -- "${F[@]}" --comm mpi &&
    if grep -q '"comm": "mpi"' "$L/mpi/ledger.json"; then
      compare_runs "(4) --comm mpi vs ring DP: compare passes" "$L/dp" "$L/mpi"
    else
      fail "(4) --comm mpi vs ring DP" "ledger.json does not say comm mpi"
    fi
  train_run "(4) -np 2 --fsdp hybrid --ranks-per-node 1" 2 "$L/hybrid" hybrid -- "${F[@]}" --fsdp hybrid --ranks-per-node 1 &&
    compare_runs "(4) -np 2 --fsdp hybrid --ranks-per-node 1 vs DP: compare passes" "$L/dp" "$L/hybrid"
fi

# ---------------------------------------------------------------- (5) checkpoints across layouts
K=$tmp/ckpt
mkdir -p "$K"
R=("${TINY[@]}" --dtype f64 --lr-schedule constant --warmup 2 --global-batch 2 --micro-batch 1)
train_run "(5) reference: -np 2 --zero 1, 10 steps" 2 "$K/ref" zero1 -- "${R[@]}" --zero 1 --steps 10
if train_run "(5) -np 2 --zero 3, 6 steps, --save" 2 "$K/run" zero3 -- "${R[@]}" --zero 3 --steps 6 --save "$K/ck"; then
  cp "$K/run/loss.csv" "$K/six.csv"
  cp "$K/run/config.json" "$K/six.json"  # the run's identity: a copy of its --out is still its own,
  cp "$K/run/shardlab-files.json" "$K/six.files"  # with the record of the bytes shardlab wrote
  # Resumed runs save where their own command line says (here: elsewhere, to keep ck as it is).
  train_run "(5) -np 2 --zero 1 --resume of the ZeRO-3 checkpoint to 10 steps" 2 "$K/run" zero1 -- \
    "${R[@]}" --zero 1 --resume "$K/ck" --steps 10 --save "$K/ck_z1" &&
    compare_runs "(5) ZeRO-3 checkpoint resumed under ZeRO-1 vs straight ZeRO-1: bit-identical (compare --rtol 0)" \
      "$K/ref" "$K/run" --rtol 0
  # The same checkpoint on one process: trains (loss finite), and matches the reference to the
  # f64 tolerance (one process vs DP on 2, as in (4)).
  mkdir -p "$K/one" && cp "$K/six.csv" "$K/one/loss.csv" && cp "$K/six.json" "$K/one/config.json" &&
    cp "$K/six.files" "$K/one/shardlab-files.json"
  if train_run "(5) 1 process --resume of the ZeRO-3 checkpoint" 1 "$K/one" -- \
    --resume "$K/ck" --global-batch 2 --micro-batch 1 --steps 10 --save "$K/ck_one"; then
    bad=$(awk -F, 'NR > 7 && $2 !~ /^[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?$/ { print "step " $1 ": " $2 }' "$K/one/loss.csv" | head -n 2)
    steps=$(tail -n +2 "$K/one/loss.csv" | cut -d, -f1 | tr '\n' ' ')
    if [ -z "$bad" ] && [ "$steps" = "$(seq 1 10 | tr '\n' ' ')" ]; then
      ok "(5) 1 process --resume of the ZeRO-3 checkpoint: exit 0, steps 7..10 with finite losses"
    else
      fail "(5) 1 process --resume of the ZeRO-3 checkpoint: finite losses" "steps: $steps; $bad"
    fi
    compare_runs "(5) 1 process resumed from the ZeRO-3 checkpoint vs the reference: compare passes" "$K/ref" "$K/one"
  fi
  latest=$(cat "$K/ck/latest" 2>/dev/null)
  [ "$latest" = step_000006 ] || fail "(5) ck/latest is still the ZeRO-3 run's step_000006" "latest: '$latest'"
  if timeout 60 "$S" eval --load "$K/ck" --data "$tmp/small.txt" >"$K/eval" 2>&1 </dev/null &&
    grep -Eq '[0-9]\.[0-9]' "$K/eval" && ! grep -Eiq 'nan|inf' "$K/eval"; then
    ok "(5) eval --load of the ZeRO-3 checkpoint: $(grep -E '[0-9]\.[0-9]' "$K/eval" | tail -n 1 | cut -c1-70)"
  else
    fail "(5) eval --load of the ZeRO-3 checkpoint" "$(last "$K/eval")"
  fi
fi

# ---------------------------------------------------------------- (6) ledger.json of 4 ranks
G=$tmp/ledger
mkdir -p "$G"
if train_run "(6) -np 4 --zero 2" 4 "$G/z2" zero2 -- "${TINY[@]}" --dtype f64 --global-batch 4 --micro-batch 1 --steps 3 --zero 2; then
  LJ=$G/z2/ledger.json
  ws=$(grep -o '"world_size": *[0-9]*' "$LJ" | grep -o '[0-9]*$')
  if [ -n "$PY" ]; then
    nr=$($PY -c 'import json, sys; d = json.load(open(sys.argv[1])); print(sorted(r["rank"] for r in d["ranks"]))' "$LJ" 2>&1)
    want="[0, 1, 2, 3]"
  else
    nr=$(grep -c '"rank": *[0-9]' "$LJ")
    want=4
  fi
  if [ "$ws" = 4 ] && [ "$nr" = "$want" ]; then
    ok "(6) ledger.json: world_size 4, ranks $nr"
  else
    fail "(6) ledger.json: world_size 4, 4 ranks" "world_size '$ws', ranks '$nr'"
  fi
  if "$S" plan --ledger "$LJ" >"$G/plan" 2>&1; then
    ok "(6) plan --ledger of the -np 4 --zero 2 run: exit 0"
  else
    fail "(6) plan --ledger of the -np 4 --zero 2 run: exit 0" "exit $?: $(grep -E '!|differ|error' "$G/plan" | head -n 2 | tr '\n' '|')"
  fi
  if [ -z "$PY" ]; then
    fail "(6) plan --ledger after an edit of rank 2's memory" "no python3 (make deps installs it)"
  else
    $PY - "$LJ" "$G/bad.json" <<'EOF' >"$G/edit" 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
r = next(r for r in d["ranks"] if r["rank"] == 2)
r["memory"]["param"]["current"] += 8   # one parameter's worth of bytes more on rank 2 only
json.dump(d, open(sys.argv[2], "w"), indent=1)
EOF
    if [ -s "$G/bad.json" ]; then
      "$S" plan --ledger "$G/bad.json" >"$G/plan_bad" 2>&1
      rc=$?
      if [ "$rc" = 1 ]; then
        ok "(6) plan --ledger after rank 2's param bytes +8: exit 1"
      else
        fail "(6) plan --ledger after rank 2's param bytes +8: exit 1" "exit $rc: $(last "$G/plan_bad")"
      fi
    else
      fail "(6) edit rank 2's memory in ledger.json" "$(last "$G/edit")"
    fi
  fi
fi

# ---------------------------------------------------------------- (7) --trace on
P=$tmp/trace
mkdir -p "$P"
if train_run "(7) -np 2 --zero 3 --trace on" 2 "$P/z3" zero3 -- "${TINY[@]}" --dtype f64 --global-batch 2 --micro-batch 1 --steps 3 --zero 3 --trace on; then
  if [ -s "$P/z3/trace.json" ]; then ok "(7) trace.json written"; else fail "(7) trace.json written" "$(ls "$P/z3" | tr '\n' ' ')"; fi
  if "$S" trace "$P/z3" >"$P/summary" 2>&1 &&
    grep -Eq '^ *0 ' "$P/summary" && grep -Eq '^ *1 ' "$P/summary" && grep -q 'all_gather' "$P/summary"; then
    ok "(7) shardlab trace: a row for ranks 0 and 1 and an all_gather line"
  else
    fail "(7) shardlab trace: a row for ranks 0 and 1 and an all_gather line" "$(head -n 6 "$P/summary" | tr '\n' '|')"
  fi
fi

# ---------------------------------------------------------------- (8) ledgers keep training's traffic apart
# Evaluation's gathers (ZeRO-3) and the gathers that save a sharded checkpoint are booked under
# comm_eval / comm_checkpoint, so a run that does both still matches the per-step formulas.
P=$tmp/apart
mkdir -p "$P"
if train_run "(8) -np 2 --zero 3 with eval and saves" 2 "$P/z3" zero3 -- "${TINY[@]}" --dtype f64 --global-batch 2 --micro-batch 1 --steps 4 --zero 3 --eval-every 2 --eval-windows 4 --save "$P/ck" --save-every 2; then
  if "$S" plan --ledger "$P/z3/ledger.json" >"$P/plan" 2>&1; then
    ok "(8) plan --ledger matches a ZeRO-3 run that evaluated and saved"
  else
    fail "(8) plan --ledger matches a ZeRO-3 run that evaluated and saved" "$(tail -n 3 "$P/plan" | tr '\n' '|')"
  fi
fi

[ "$fails" = 0 ]
