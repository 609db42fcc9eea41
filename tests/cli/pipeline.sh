#!/usr/bin/env bash
# Pipeline parallelism through the CLI and scripts/mpirun.sh (f64, dropout 0.1, 4 layers, 4 micro-batches of
# one sample per step):
#  (1) layouts: pp 2 gpipe, pp 2 1f1b, pp 2 interleaved (--virtual-stages 2), pp 4 1f1b and pp 2 with
#      --pp-layers 1,3 reproduce the single-process loss curve BIT FOR BIT (compare --rtol 0: every schedule
#      runs each chunk's backwards in micro-batch order, so every gradient is summed as one process sums it);
#      pp 2 × dp 2 with --zero 1 within f64 tolerance (the dp sum adds in another order), and — the control
#      that compare --rtol 0 can fail — not bit for bit;
#  (2) checkpoints hold whole tensors: a pp-2 run saved at step 6 resumes at pp 1 and at pp 4 and continues
#      the uninterrupted single process bit for bit (compare --rtol 0, steps 7..10), its loss.csv holding
#      exactly 7..10;
#  (3) bad input: --pp 8 with 4 layers, interleaved with layers not divisible by p·v, interleaved with m not
#      a multiple of p (also with dp 2), --virtual-stages 2 with 1f1b, interleaved without --virtual-stages,
#      --pp-layers 1,1 with 4 layers, dp × tp × pp ≠ world size, --pp not dividing the world (also a world of
#      one): exit 2 within 60 s, exactly one line naming shardlab (the error, from rank 0: mpirun
#      --tag-output says which rank wrote it), no crash dump; OpenMPI's own banner after it is expected;
#  (4) evaluation through a pipeline of more validation micro-batches than the message tags of one pass
#      can tell apart (11252 windows): the single process's validation loss;
#  (5) what a pipeline run says: the header gives the model's params (the single process's) and rank 0's
#      stage's; fewer micro-batches than stages (m < p) get one warning with m, p, the bubble and the flags
#      that raise m, m ≥ p none; schedule.svg's measured panel has a time axis in ms, and the note
#      "N ranks on M cores: idle time includes waiting for a CPU" exactly when the ranks outnumber the cores.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs, steps_are, bad (over the flags R below)

# Constant lr after a 2-step warmup, so --steps does not change the schedule of the steps both runs have.
R=(--layers 4 --hidden 32 --heads 2 --seq 32 --eval-windows 0 --progress none --data "$tmp/small.txt"
   --dtype f64 --dropout 0.1 --lr-schedule constant --warmup 2 --global-batch 4 --micro-batch 1)

# ---------------------------------------------------------------- (1) layouts
L=$tmp/layouts
mkdir -p "$L"
run "(1) 1 process, 10 steps" 1 "$L/one" --steps 10
# The reference must have learnt something, or bit-identity would say little.
if awk -F, 'NR == 2 { a = $2 } END { exit !(a - $2 > 0.5) }' "$L/one/loss.csv" 2>/dev/null; then
  ok "(1) the single process's loss falls by more than 0.5 over 10 steps"
else
  fail "(1) the single process's loss falls by more than 0.5 over 10 steps" "$(cut -d, -f2 "$L/one/loss.csv" | tr '\n' ' ')"
fi
layout() {  # layout NAME NP FLAGS...: the run reproduces the single process bit for bit
  local name=$1 np=$2
  shift 2
  run "(1) -np $np $*, 10 steps" "$np" "$L/$name" --steps 10 "$@" &&
    compare_runs "(1) -np $np $* vs 1 process: bit-identical (compare --rtol 0)" "$L/one" "$L/$name" --rtol 0
}
layout gpipe 2 --pp 2 --schedule gpipe
layout 1f1b 2 --pp 2 --schedule 1f1b
layout interleaved 2 --pp 2 --schedule interleaved --virtual-stages 2
layout pp4 4 --pp 4 --schedule 1f1b
layout layers13 2 --pp 2 --pp-layers 1,3
if run "(1) -np 4 --pp 2 --dp 2 --zero 1, 10 steps" 4 "$L/ppdp" --steps 10 --pp 2 --dp 2 --zero 1; then
  compare_runs "(1) -np 4 --pp 2 --dp 2 --zero 1 vs 1 process: within f64 tolerance" "$L/one" "$L/ppdp"
  # The control: --rtol 0 sees the dp sum's reorder noise (~1e-16), so the bit-identical checks can fail.
  if "$S" compare "$L/one" "$L/ppdp" --rtol 0 >"$L/ppdp.cmp0" 2>&1; then
    fail "(1) control: compare --rtol 0 tells pp 2 × dp 2 (reorder noise) from 1 process" "it passed"
  else
    ok "(1) control: compare --rtol 0 tells pp 2 × dp 2 (reorder noise) from 1 process ($(grep -o 'max rel diff [^;]*' "$L/ppdp.cmp0"))"
  fi
fi

# ---------------------------------------------------------------- (2) resume across pp sizes
K=$tmp/resume
mkdir -p "$K"
if run "(2) -np 2 --pp 2, 6 steps, --save" 2 "$K/pp6" --pp 2 --steps 6 --save "$K/ck_pp"; then
  compare_runs "(2) the pp-2 run's first 6 steps vs 1 process: bit-identical" "$L/one" "$K/pp6" --rtol 0
  if run "(2) the pp-2 checkpoint resumed on 1 process (pp 1)" 1 "$K/pp_one" --resume "$K/ck_pp" --steps 10; then
    steps_are "(2) pp 2 -> pp 1" "$K/pp_one" 7 10
    compare_runs "(2) pp 2 -> pp 1 vs the uninterrupted single process, steps 7..10: bit-identical" \
      "$L/one" "$K/pp_one" --rtol 0
  fi
  if run "(2) the pp-2 checkpoint resumed at -np 4 --pp 4" 4 "$K/pp_four" --pp 4 --resume "$K/ck_pp" --steps 10; then
    steps_are "(2) pp 2 -> pp 4" "$K/pp_four" 7 10
    compare_runs "(2) pp 2 -> pp 4 vs the uninterrupted single process, steps 7..10: bit-identical" \
      "$L/one" "$K/pp_four" --rtol 0
  fi
fi

# ---------------------------------------------------------------- (3) bad input
C=$tmp/bad
mkdir -p "$C"
bad "--pp 8 with 4 layers" 2 'pp 8 .*4 layers' --pp 8
bad "--pp 8 with 4 layers" 0 'pp 8 .*4 layers' --pp 8
bad "interleaved, layers not divisible by p·v" 2 'divisible by pp × virtual-stages = 4 \(the model has 6\)' \
  --pp 2 --schedule interleaved --virtual-stages 2 --layers 6
bad "interleaved, m not a multiple of p" 2 '3 micro-batches per step .* not a multiple of --pp 2' \
  --pp 2 --schedule interleaved --virtual-stages 2 --global-batch 3
bad "interleaved, m not a multiple of p" 4 '3 micro-batches per step .* not a multiple of --pp 2' \
  --pp 2 --dp 2 --schedule interleaved --virtual-stages 2 --global-batch 6
bad "--virtual-stages 2 with 1f1b" 2 'virtual-stages 2 needs --schedule interleaved' --pp 2 --virtual-stages 2
bad "interleaved without --virtual-stages" 2 'add --virtual-stages 2' --pp 2 --schedule interleaved
bad "--pp-layers 1,1 with 4 layers" 2 'pp-layers 1,1 .*--layers 4' --pp 2 --pp-layers 1,1
bad "dp × tp × pp ≠ world" 4 'pp 2 .* = 2, but the world has 4 ranks' --pp 2 --dp 1
bad "dp × tp × pp ≠ world" 2 'pp 2 .* = 4, but the world has 2 ranks' --pp 2 --dp 2
bad "--pp not dividing the world" 4 'pp 3 does not divide the world of 4' --pp 3 --layers 6
bad "--pp not dividing the world" 0 'pp 2 does not divide the world of 1' --pp 2
# The control: the same base flags with a valid pipeline layout train.
if mpi 2 "$S" train "${R[@]}" --steps 2 --pp 2 --schedule interleaved --virtual-stages 2 --out "$C/control" \
  >"$C/control.log" 2>&1; then
  ok "(3) control: -np 2 --pp 2 --schedule interleaved --virtual-stages 2 on the same flags trains"
else
  fail "(3) control: -np 2 --pp 2 --schedule interleaved --virtual-stages 2 on the same flags trains" \
    "exit $?: $(last "$C/control.log")"
fi

# ---------------------------------------------------------------- (4) evaluation in passes
# A message's tag tells its micro-batch apart among one pass's 2·p·v·m; evaluating more windows than that
# runs in passes (train/evaluate.cpp) — it once aborted the job after training. The default data's 11252
# validation windows of 16 tokens, one per micro-batch, over 4 chunks: 6 passes, one process's val_loss.
E=$tmp/eval
mkdir -p "$E"
EV=(--layers 4 --hidden 32 --heads 2 --seq 16 --micro-batch 1 --global-batch 2 --steps 1 --progress none
    --dtype f64 --eval-windows 20000)
timeout -k 5 120 "$S" train "${EV[@]}" --out "$E/one" >"$E/one.log" 2>&1 </dev/null
if mpi 2 "$S" train "${EV[@]}" --pp 2 --schedule interleaved --virtual-stages 2 --out "$E/pp" >"$E/pp.log" 2>&1 &&
  [ -n "$(cut -d, -f6 "$E/one/loss.csv" | tail -n 1)" ]; then
  a=$(cut -d, -f6 "$E/one/loss.csv" | tail -n 1) b=$(cut -d, -f6 "$E/pp/loss.csv" | tail -n 1)
  if awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-12 * a) }'; then
    ok "(4) every validation window (11252, in 6 passes of 2048 micro-batches) through pp 2 interleaved: val_loss $b = one process's $a"
  else
    fail "(4) 20000 validation windows through pp 2 interleaved" "val_loss $b vs one process $a"
  fi
else
  fail "(4) 20000 validation windows through pp 2 interleaved" "exit $?: $(last "$E/pp.log")"
fi

# ---------------------------------------------------------------- (5) what a pipeline run says
whole=$(awk '/^training / { print $2; exit }' "$L/one.log")
head=$(grep -m1 '^training ' "$L/1f1b.log")
if [[ $head =~ ^training\ ([0-9,]+)\ params\ \(([0-9,]+)\ on\ rank\ 0:\ its\ pp\ stage\) ]] &&
  [ "${BASH_REMATCH[1]}" = "$whole" ] && [ "${BASH_REMATCH[2]//,/}" -lt "${whole//,/}" ]; then
  ok "(5) -np 2 --pp 2 says the model's $whole params (the single process's) and rank 0's ${BASH_REMATCH[2]}"
else
  fail "(5) -np 2 --pp 2 says the model's params and rank 0's part" "'$head'; the single process: $whole"
fi
W5=$tmp/warn
mkdir -p "$W5"
if mpi 2 "$S" train "${R[@]}" --steps 1 --pp 2 --global-batch 1 --out "$W5/m1" >"$W5/m1.log" 2>&1; then
  warn=$(grep 'warning' "$W5/m1.log")
  if [ "$(grep -c 'warning' "$W5/m1.log")" = 1 ] &&
    grep -q -- "--pp 2 with 1 micro-batch per step .* < p = 2: .* leaves 50.0% of every stage idle; .*--global-batch 2" \
      <<<"$warn" && ! grep -q 'warning' "$L/1f1b.log"; then
    ok "(5) m = 1 < p = 2: one warning ('$(cut -c1-80 <<<"$warn")…'); m = 4: none"
  else
    fail "(5) m = 1 < p = 2: one warning naming m, p, the bubble and the flags; m = 4: none" \
      "m1: '$warn'; m4: '$(grep warning "$L/1f1b.log")'"
  fi
else
  fail "(5) -np 2 --pp 2 --global-batch 1 trains (with a warning)" "$(last "$W5/m1.log")"
fi
cores=$(getconf _NPROCESSORS_ONLN)
for entry in 1f1b:2 pp4:4; do
  name=${entry%:*} np=${entry#*:} note=0
  [ "$np" -gt "$cores" ] && note=1
  what=$([ $note = 1 ] && echo "with the note" || echo "without a note")
  if out=$(python3 tests/cli/support/svg_check.py axis "$L/$name/schedule.svg" $note 2>&1); then
    ok "(5) -np $np ($cores cores): schedule.svg's measured panel has a time axis in ms, $what on sharing CPUs"
  else
    fail "(5) -np $np ($cores cores): schedule.svg's measured panel has a time axis in ms, $what on sharing CPUs" "$out"
  fi
done

[ "$fails" = 0 ]
