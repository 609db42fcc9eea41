#!/usr/bin/env bash
# Reference loss curves (tests/data/reference/): every run recorded there is trained again with the same
# flags on the same number of ranks, and its loss.csv must equal the recorded one bit for bit in every
# column but ms (wall-clock). The recorded files come from an earlier build of shardlab, so this catches
# any refactor that changes a single number of the training arithmetic.
# Prints one `ok - ...` / `FAIL - ... (why)` line per run; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
R=tests/data/reference
strip_ms() { cut -d, -f1-4,6 "$1"; }  # step,loss,grad_norm,lr,val_loss
for dir in "$R"/*/; do
  name=$(basename "$dir")
  read -r np flags <"$dir/run.txt"
  out=$tmp/$name
  # shellcheck disable=SC2086
  if [ "$np" = 1 ]; then
    timeout 120 "$S" train $flags --out "$out" >"$out.log" 2>&1
  else
    timeout 120 bash scripts/mpirun.sh -np "$np" "$S" train $flags --out "$out" >"$out.log" 2>&1
  fi
  rc=$?
  if [ $rc != 0 ]; then fail "$name: trains" "exit $rc: $(last "$out.log")"; continue; fi
  if diff <(strip_ms "$dir/loss.csv") <(strip_ms "$out/loss.csv") >"$out.diff"; then
    ok "$name ($np rank(s)): $(($(wc -l <"$dir/loss.csv") - 1)) steps bit-identical to the recorded curve"
  else
    fail "$name ($np rank(s)): bit-identical to the recorded curve" "$(grep -c '^<' "$out.diff") rows differ, first: $(grep -m1 '^>' "$out.diff")"
  fi
done
[ "$fails" = 0 ]
