#!/usr/bin/env bash
# The exact mode with context parallelism (--exact --cp c, parallel/exact_context_parallel.h): the residual stream
# split over the cp ranks by tokens, each sample's products run whole on one cp rank, so every cp layout reproduces
# the single process with --exact bit for bit — `compare --rtol 0` — the same single-process runs exact.sh compares
# every other layout with (f64, dropout 0.1, naive attention, 4 steps with evaluations):
#  (1) cp 2 zigzag, cp 2 contiguous with 3 micro-batches, cp 4 zigzag and contiguous, full and selective recompute,
#      flash attention (against the flash single process), cp 2 × dp 2 with ZeRO-2, cp 2 × tp 2, cp 2 × pp 2 and the
#      dp 2 × cp 2 × tp 2 on 8 ranks; the evaluations' last micro-batch of 3 windows is dealt out 1 + 2;
#  (2) f32 and --mixed bf16: cp 2 against one micro-batch of 12 in the same recipe;
#  (3) the control: cp 2 without --exact (ring attention) is not bit for bit its single process;
#  (4) bad input: a micro-batch that c does not divide (train and plan), --sequence-parallel with --exact --cp: exit 2,
#      one line;
#  (5) `plan --ledger` on the exact cp runs: the cp all-to-alls (purpose exact_rows) equal the formula exactly; and
#      `plan --cp 2 --exact` prints the per-step bytes the cp 2 run measured.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs, bad (over the flags R below)

R=(--layers 2 --hidden 32 --heads 4 --seq 32 --eval-windows 3 --eval-every 2 --progress none --data "$tmp/small.txt"
   --dtype f64 --dropout 0.1 --lr-schedule constant --warmup 2 --steps 4)
source "$(dirname "$0")/lib_exact.sh"  # $D, exact

# ---------------------------------------------------------------- (1) layouts, f64
run "setup: one micro-batch of 12" 1 "$D/one12" --exact --global-batch 12 --micro-batch 12
run "setup: 4 layers, one micro-batch of 12" 1 "$D/one12_l4" --exact --global-batch 12 --micro-batch 12 --layers 4
run "setup: flash attention, one micro-batch of 12" 1 "$D/one12_flash" --exact --global-batch 12 --micro-batch 12 \
  --attention flash
exact "cp 2 zigzag" 2 one12 --global-batch 12 --micro-batch 6 --cp 2
exact "cp 2 contiguous, 3 micro-batches" 2 one12 --global-batch 12 --micro-batch 4 --cp 2 --cp-split contiguous
exact "cp 4 zigzag" 4 one12 --global-batch 12 --micro-batch 4 --cp 4
exact "cp 4 contiguous, 3 micro-batches" 4 one12 --global-batch 12 --micro-batch 4 --cp 4 --cp-split contiguous
exact "cp 2, full recompute" 2 one12 --global-batch 12 --micro-batch 6 --cp 2 --recompute full
exact "cp 2, selective recompute" 2 one12 --global-batch 12 --micro-batch 6 --cp 2 --recompute selective
exact "cp 2, flash attention" 2 one12_flash --global-batch 12 --micro-batch 6 --cp 2 --attention flash
exact "cp 2 × dp 2, ZeRO-2" 4 one12 --global-batch 12 --micro-batch 2 --cp 2 --zero 2
exact "cp 2 × tp 2" 4 one12 --global-batch 12 --micro-batch 6 --cp 2 --tp 2
exact "cp 2 × pp 2" 4 one12 --global-batch 12 --micro-batch 2 --cp 2 --pp 2
exact "dp 2 × cp 2 × tp 2, ZeRO-1" 8 one12 --global-batch 12 --micro-batch 2 --dp 2 \
  --cp 2 --tp 2 --zero 1

# ---------------------------------------------------------------- (2) f32 and mixed bf16
for recipe in "f32 --dtype f32" "bf16 --dtype f32 --mixed bf16"; do
  read -r name flags <<<"$recipe"
  # shellcheck disable=SC2086  # flags: words
  run "setup: $name, one micro-batch of 12" 1 "$D/${name}_one" --exact --global-batch 12 --micro-batch 12 $flags
  # shellcheck disable=SC2086
  exact "$name: cp 2 zigzag, 2 micro-batches" 2 "${name}_one" --global-batch 12 --micro-batch 6 --cp 2 $flags
done

# ---------------------------------------------------------------- (3) the control: without --exact
run "setup: normal mode, flash attention, one micro-batch of 12" 1 "$D/n_one12" --global-batch 12 --micro-batch 12 \
  --attention flash
run "(3) normal mode, cp 2, flash attention" 2 "$D/n_cp2" --global-batch 12 --micro-batch 12 --cp 2 --attention flash
if "$S" compare "$D/n_one12" "$D/n_cp2" --rtol 0 >"$D/n_cp2.rtol0" 2>&1; then
  fail "(3) without --exact, cp 2 (ring attention) differs from one process at rtol 0" "compare passed: the control shows nothing"
elif "$S" compare "$D/n_one12" "$D/n_cp2" >"$D/n_cp2.cmp" 2>&1; then
  ok "(3) without --exact, cp 2 differs from one process at rtol 0, within f64 tolerance ($(grep -o 'max rel diff [^;]*' "$D/n_cp2.cmp"))"
else
  fail "(3) without --exact, cp 2 within f64 tolerance" "$(tail -n 1 "$D/n_cp2.cmp")"
fi

# ---------------------------------------------------------------- (4) bad input
bad "(4) --exact --cp 2 with a micro-batch of 3" 2 'micro-batch 3 is not a multiple of 2' --exact --cp 2 \
  --global-batch 6 --micro-batch 3
bad "(4) --exact --cp 2 with --sequence-parallel" 4 'drop --sequence-parallel' --exact --cp 2 --tp 2 \
  --sequence-parallel --global-batch 4 --micro-batch 2

"$S" plan --dp 1 --exact --cp 2 --layers 2 --hidden 32 --heads 4 --seq 32 --micro-batch 3 >"$D/plan_mb3" 2>&1
rc=$?
if [ "$rc" = 2 ] && [ "$(wc -l <"$D/plan_mb3")" = 1 ] && grep -q 'micro-batch 3 is not a multiple of 2' "$D/plan_mb3"; then
  ok "(4) plan --exact --cp 2 with a micro-batch of 3: the trainer's rule, one line, exit 2"
else
  fail "(4) plan --exact --cp 2 with a micro-batch of 3: one line, exit 2" "exit $rc: $(head -c 300 "$D/plan_mb3")"
fi

# ---------------------------------------------------------------- (5) the bytes: plan --ledger
for name in "cp 2 zigzag" "cp 4 zigzag" "cp 2, full recompute" "cp 2 × dp 2, ZeRO-2" "cp 2 × tp 2" "cp 2 × pp 2" \
  "dp 2 × cp 2 × tp 2, ZeRO-1" "bf16: cp 2 zigzag, 2 micro-batches"; do
  if "$S" plan --ledger "$D/$name/ledger.json" >"$D/$name.plan" 2>&1; then
    ok "(5) $name: plan --ledger: the exact_rows all-to-alls and the 32-byte sums match the formulas exactly"
  else
    fail "(5) $name: plan --ledger" "$(grep -E '^result|error|MISMATCH|differs' "$D/$name.plan" | head -n 3 | cut -c1-300)"
  fi
done
# plan --exact --cp prints the per-step bytes of the exact_rows all-to-alls; the cp 2 zigzag run (2 micro-batches of
# 6) measured them.
measured=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(t["sent_intra"] + t["sent_inter"] for t in d["ranks"][0]["comm"]["totals"]
          if t["axis"] == "cp" and t.get("purpose") == "exact_rows") // d["layout"]["steps"])' "$D/cp 2 zigzag/ledger.json")
"$S" plan --dp 1 --accum 2 --exact --cp 2 --dtype f64 --mixed none --layers 2 --hidden 32 --heads 4 --seq 32 --micro-batch 6 \
  >"$D/plan_cp2" 2>&1
printed=$(grep -o '[0-9,]* B per step (last stage)' "$D/plan_cp2" | head -n 1 | tr -d ',' | cut -d' ' -f1)
if [ -n "$printed" ] && [ "$printed" = "$measured" ]; then
  ok "(5) plan --dp 1 --cp 2 --exact prints the exact_rows bytes per step the cp 2 run measured ($printed B)"
else
  fail "(5) plan --cp 2 --exact: printed bytes per step vs the cp 2 run's measured" "printed ${printed:-nothing}, measured $measured"
fi

exit $((fails > 0))
