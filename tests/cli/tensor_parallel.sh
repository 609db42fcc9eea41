#!/usr/bin/env bash
# Tensor and sequence parallelism through the CLI and scripts/mpirun.sh (f64, dropout 0.1):
#  (1) layouts: -np 2 --tp 2 --sequence-parallel and --tp 2 reproduce the single process (compare, f64
#      tolerance: TP/SP vs one process is equal within tolerance, not bit for bit — the
#      row-parallel sums and the replicated gradients are added in another order);
#  (2) checkpoints hold whole tensors, so a run resumes on any layout. A tp-2 + SP run saved at step 6:
#      resumed at tp 2 + SP it is bit-identical to the uninterrupted tp-2 + SP run (compare --rtol 0);
#      resumed on one process (tp 1) and at dp 2 it continues the single-process curve (compare against the
#      uninterrupted single process on steps 7..10, f64 tolerance: its step-6 weights carry tp's reorder
#      noise, ~1e-16, so bit-identity across layouts cannot be asked) and its loss.csv holds exactly 7..10;
#      a tp-1 checkpoint resumes at tp 2 (with and without SP) the same way;
#  (3) bad input: heads not divisible by --tp, --vocab not divisible by --tp, --sequence-parallel with
#      t = 1, --seq not divisible by --tp under SP, dp × tp ≠ world, --tp not dividing the world, --ranks-per-node splitting tp partners: exit 2
#      within 60 s, exactly one line naming shardlab (the error, from rank 0: mpirun --tag-output says which
#      rank wrote it), no crash dump; OpenMPI's own banner after it is expected and not counted.
#  (4) the vocabulary-parallel head's tp bytes (purpose "vocab") and Ψ_t pass `plan --ledger` exactly at tp 2
#      and tp 2 + SP; a ledger missing one of the parallel cross-entropy's all-reduces per micro-batch (what
#      a formula counting 2 instead of 3 would predict), or 8 B off, fails it naming the vocab bytes.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs, steps_are, bad (over the flags R below)

# Constant lr after a 2-step warmup, so --steps does not change the schedule of the steps both runs have.
R=(--layers 1 --hidden 32 --heads 2 --seq 32 --eval-windows 0 --progress none --data "$tmp/small.txt"
   --dtype f64 --dropout 0.1 --lr-schedule constant --warmup 2 --global-batch 2 --micro-batch 1)

# ---------------------------------------------------------------- (1) layouts
L=$tmp/layouts
mkdir -p "$L"
run "(1) 1 process, 10 steps" 1 "$L/one" --steps 10
run "(1) -np 2 --tp 2 --sequence-parallel, 10 steps" 2 "$L/sp" --tp 2 --sequence-parallel --steps 10 &&
  compare_runs "(1) -np 2 --tp 2 --sequence-parallel vs 1 process: compare passes" "$L/one" "$L/sp"
run "(1) -np 2 --tp 2, 10 steps" 2 "$L/tp" --tp 2 --steps 10 &&
  compare_runs "(1) -np 2 --tp 2 vs 1 process: compare passes" "$L/one" "$L/tp"
if grep -q "tensor parallel over 2 with sequence parallelism" "$L/sp.log"; then
  ok "(1) the tp-2 + SP run says its layout"
else
  fail "(1) the tp-2 + SP run says its layout" "$(grep -m1 '^layout' "$L/sp.log")"
fi

# ---------------------------------------------------------------- (2) resume across tp sizes
K=$tmp/resume
mkdir -p "$K"
if run "(2) -np 2 --tp 2 --sequence-parallel, 6 steps, --save" 2 "$K/sp6" --tp 2 --sequence-parallel --steps 6 --save "$K/ck_sp"; then
  run "(2) the tp-2 + SP checkpoint resumed at tp 2 + SP" 2 "$K/sp_sp" --tp 2 --sequence-parallel --resume "$K/ck_sp" --steps 10 &&
    compare_runs "(2) tp 2 + SP -> tp 2 + SP vs the uninterrupted tp-2 + SP run: bit-identical (compare --rtol 0)" \
      "$L/sp" "$K/sp_sp" --rtol 0
  if run "(2) the tp-2 + SP checkpoint resumed on 1 process (tp 1)" 1 "$K/sp_one" --resume "$K/ck_sp" --steps 10; then
    steps_are "(2) tp 2 + SP -> tp 1" "$K/sp_one" 7 10
    compare_runs "(2) tp 2 + SP -> tp 1 vs the uninterrupted single process, steps 7..10" "$L/one" "$K/sp_one"
  fi
  if run "(2) the tp-2 + SP checkpoint resumed at -np 2 --dp 2" 2 "$K/sp_dp" --dp 2 --resume "$K/ck_sp" --steps 10; then
    steps_are "(2) tp 2 + SP -> dp 2" "$K/sp_dp" 7 10
    compare_runs "(2) tp 2 + SP -> dp 2 vs the uninterrupted single process, steps 7..10" "$L/one" "$K/sp_dp"
  fi
fi
if run "(2) 1 process, 6 steps, --save" 1 "$K/one6" --steps 6 --save "$K/ck_one"; then
  for sp in "" --sequence-parallel; do
    name="tp 1 -> tp 2${sp:+ + SP}"
    if run "(2) the tp-1 checkpoint resumed at -np 2 --tp 2 $sp" 2 "$K/one_tp${sp:+_sp}" --tp 2 $sp --resume "$K/ck_one" --steps 10; then
      steps_are "(2) $name" "$K/one_tp${sp:+_sp}" 7 10
      compare_runs "(2) $name vs the uninterrupted single process, steps 7..10" "$L/one" "$K/one_tp${sp:+_sp}"
    fi
  done
fi

# ---------------------------------------------------------------- (3) bad input
C=$tmp/bad
mkdir -p "$C"
bad "heads not divisible by --tp" 2 'heads 3 is not divisible by --tp 2' --heads 3 --hidden 33 --tp 2
bad "heads not divisible by --tp" 4 'heads 2 is not divisible by --tp 4' --tp 4
bad "--vocab not divisible by --tp" 2 'vocab 255 is not divisible by --tp 2' --vocab 255 --tp 2
bad "--sequence-parallel with t = 1" 2 'sequence-parallel' --sequence-parallel
bad "--sequence-parallel with t = 1" 0 'sequence-parallel' --sequence-parallel
bad "--sequence-parallel with t = 1" 2 'sequence-parallel' --tp 1 --dp 2 --sequence-parallel
bad "--seq not divisible by --tp under SP" 2 'seq 33' --tp 2 --sequence-parallel --seq 33
bad "dp × tp ≠ world" 2 'world has 2 ranks' --dp 2 --tp 2
bad "dp × tp ≠ world" 4 'world has 4 ranks' --dp 1 --tp 2
bad "--tp not dividing the world" 3 'tp 2 does not divide the world of 3' --tp 2
bad "--ranks-per-node splitting tp partners" 4 'ranks-per-node' --tp 2 --ranks-per-node 1
# The control: the same base flags with a valid tp layout train.
if mpi 2 "$S" train "${R[@]}" --steps 2 --tp 2 --sequence-parallel --out "$C/control" >"$C/control.log" 2>&1; then
  ok "(3) control: -np 2 --tp 2 --sequence-parallel on the same flags trains"
else
  fail "(3) control: -np 2 --tp 2 --sequence-parallel on the same flags trains" "exit $?: $(last "$C/control.log")"
fi

# ---------------------------------------------------------------- (4) the vocab-parallel head's bytes
# vocab_edit DIR NAME PYTHON: DIR's ledger with rank 0's "vocab" all-reduce total edited fails plan --ledger,
# naming rank 0's vocab bytes.
vocab_edit() {
  local dir=$1 name=$2 rc
  python3 - "$dir/ledger.json" "$tmp/vocab_bad.json" "$3" <<'EOF' || { fail "$name" "could not edit the ledger"; return; }
import json, sys
d = json.load(open(sys.argv[1]))
a, l = d["model"]["activations"], d["layout"]
t, steps, A = l["tp"], l["steps"], l["accum"]
one = 2 * (t - 1) * a["micro_batch"] * a["seq"] // t * 8  # one all-reduce of b·s f64 values, per rank
e = next(x for x in d["ranks"][0]["comm"]["totals"] if x.get("purpose") == "vocab" and x["op"] == "all_reduce")
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
EOF
  "$S" plan --ledger "$tmp/vocab_bad.json" >"$tmp/vocab_bad.plan" 2>&1
  rc=$?
  if [ $rc = 1 ] && grep -Eq "^result: MISMATCH.*rank 0 tp comm.*vocab -" "$tmp/vocab_bad.plan"; then
    ok "$name"
  else
    fail "$name" "exit $rc: $(grep '^result' "$tmp/vocab_bad.plan" || last "$tmp/vocab_bad.plan")"
  fi
}
for run_dir in "$L/tp" "$L/sp"; do
  what="(4) $(basename "$run_dir")"
  if "$S" plan --ledger "$run_dir/ledger.json" >"$run_dir.plan" 2>&1 && grep -q "vocab formula" "$run_dir.plan"; then
    ok "$what: plan --ledger: the \"vocab\" tp bytes and Ψ_t equal the formulas exactly"
  else
    fail "$what: plan --ledger" "$(grep '^result' "$run_dir.plan" || last "$run_dir.plan")"
  fi
  vocab_edit "$run_dir" "$what: 2 cross-entropy all-reduces per micro-batch instead of 3 fail plan --ledger" \
    'e["sent_intra"] -= steps * A * one'
  vocab_edit "$run_dir" "$what: vocab bytes 8 B off fail plan --ledger" 'e["sent_intra"] -= 8'
done

[ "$fails" = 0 ]
