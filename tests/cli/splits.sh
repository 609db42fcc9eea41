#!/usr/bin/env bash
# The same global batch, split otherwise, is the same step (DESIGN.md "Loss normalisation"): one micro-batch of
# 8, four of 2, eight of 1 — on one process and on 2 data-parallel ranks — give the same loss, gradient norm and
# validation loss to the f64 tolerance (compare checks all three). The loss is normalised once, by the global
# batch's tokens: scaling a micro-batch by its own tokens would make the gradient 4× or 8× too large, which the
# gradient norm shows even where clipping hides it from the loss. The control: another global batch differs.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # run, compare_runs

R=(--layers 2 --hidden 32 --heads 2 --seq 32 --dtype f64 --dropout 0.1 --steps 6 --global-batch 8 --eval-every 3
   --eval-windows 4 --progress none --data "$tmp/small.txt")
D=$tmp/runs
mkdir -p "$D"
run "one micro-batch of 8" 1 "$D/b8" --micro-batch 8 || exit 1
for b in 2 1; do
  run "$((8 / b)) micro-batches of $b" 1 "$D/b$b" --micro-batch $b &&
    compare_runs "$((8 / b)) × $b vs 1 × 8 on one process: loss, grad_norm, val_loss within f64 tolerance" "$D/b8" "$D/b$b"
done
for b in 4 1; do
  run "2 ranks, micro-batches of $b" 2 "$D/dp_b$b" --micro-batch $b &&
    compare_runs "2 ranks × $((4 / b)) × $b vs 1 × 8 on one process: within f64 tolerance" "$D/b8" "$D/dp_b$b"
done
if grep -q '^[0-9]' "$D/b8/loss.csv" && awk -F, 'NR > 1 && $4 != "" && $6 != "" { n++ } END { exit !(n > 0) }' "$D/b8/loss.csv"; then
  ok "the runs logged gradient norms and validation losses to compare"
else
  fail "the runs logged gradient norms and validation losses" "$(head -n 3 "$D/b8/loss.csv" | tr '\n' '|')"
fi
run "control: a global batch of 6" 1 "$D/g6" --micro-batch 2 --global-batch 6 &&
  if "$S" compare "$D/b8" "$D/g6" >"$D/g6.cmp" 2>&1; then
    fail "control: compare tells a global batch of 6 from 8" "it passed"
  else
    ok "control: compare tells a global batch of 6 from 8 ($(grep -o 'max rel diff [^;]*' "$D/g6.cmp"))"
  fi
[ "$fails" = 0 ]
