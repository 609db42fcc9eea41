#!/usr/bin/env bash
# The exact mode (--exact) with a mixture of experts (--moe-experts, claim C25) and expert parallelism (--ep): the
# router runs one sample at a time, every expert product one row at a time (an expert's rows come from many samples,
# grouped as the layout decides), each row's expert gradients go straight into order-free sums, and the router's two
# losses are order-free sums too — so every layout reproduces the single process bit for bit (`compare --rtol 0`,
# the columns aux_loss, z_loss, imbalance and dropped included):
#  (1) f64, dropout 0.1, 4 steps with evaluations: 4×2 micro-batches, dp 2, ep 2, ep 4, ep 2 × dp 2 with ZeRO-2, ep 2
#      with ZeRO-3, ep 2 × tp 2, ep 2 × pp 2, a capacity that drops slots on ep 2, and a 4D run — dp 2 × ep 2 × tp 2 ×
#      pp 2 on 16 ranks with ZeRO-1 — each against the single process;
#  (2) the control: the same ep 4 without --exact differs from its single process at rtol 0 (within f64 tolerance);
#  (3) f32 and --mixed bf16: ep 2 × dp 2 with ZeRO-2 and one sample per micro-batch against one micro-batch of 8;
#  (4) `plan --ledger` on the exact runs: every 32-byte sum over dp and ep (gradients, norm, the three losses) equals
#      the formula exactly, beside the experts' all-to-alls.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs (over the flags R below)

R=(--layers 2 --hidden 32 --heads 4 --seq 32 --eval-windows 2 --eval-every 2 --progress none --data "$tmp/small.txt"
   --dtype f64 --dropout 0.1 --lr-schedule constant --warmup 2 --steps 4 --moe-experts 4 --moe-top-k 2
   --moe-z-loss 0.001)
source "$(dirname "$0")/lib_exact.sh"  # $D, exact

# ---------------------------------------------------------------- (1) layouts, f64
run "setup: one micro-batch of 8" 1 "$D/one" --exact --global-batch 8 --micro-batch 8
exact "4×2 micro-batches" 1 one --global-batch 8 --micro-batch 2
exact "dp 2" 2 one --global-batch 8 --micro-batch 2
exact "ep 2" 2 one --global-batch 8 --micro-batch 4 --ep 2
exact "ep 4" 4 one --global-batch 8 --micro-batch 2 --ep 4
exact "ep 2 × dp 2, ZeRO-2" 4 one --global-batch 8 --micro-batch 1 --ep 2 --zero 2
exact "ep 2, ZeRO-3" 2 one --global-batch 8 --micro-batch 2 --ep 2 --zero 3
exact "ep 2 × tp 2" 4 one --global-batch 8 --micro-batch 2 --ep 2 --tp 2
exact "ep 2 × pp 2" 4 one --global-batch 8 --micro-batch 2 --ep 2 --pp 2
run "setup: capacity 1.0, one micro-batch of 8" 1 "$D/cap_one" --exact --global-batch 8 --micro-batch 8 \
  --moe-capacity 1.0
exact "ep 2, capacity 1.0" 2 cap_one --global-batch 8 --micro-batch 2 --ep 2 --moe-capacity 1.0
dropped=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "dropped") c = i; next } { s += $c } END { print s + 0 }' \
  "$D/cap_one/loss.csv")
if [ "${dropped:-0}" -gt 0 ]; then ok "(1) capacity 1.0 drops slots ($dropped over the run)"; else
  fail "(1) capacity 1.0 drops slots" "dropped: $dropped"; fi
run "setup: 4 layers, one micro-batch of 8" 1 "$D/one_l4" --exact --global-batch 8 --micro-batch 8 --layers 4
exact "4D: dp 2 × ep 2 × tp 2 × pp 2, ZeRO-1" 16 one_l4 --global-batch 8 --micro-batch 1 --ep 2 --tp 2 --pp 2 \
  --zero 1 --layers 4

# ---------------------------------------------------------------- (2) the control: without --exact
run "setup: normal mode, one micro-batch of 8" 1 "$D/n_one" --global-batch 8 --micro-batch 8
run "(2) normal mode, ep 4" 4 "$D/n_ep4" --global-batch 8 --micro-batch 2 --ep 4
if "$S" compare "$D/n_one" "$D/n_ep4" --rtol 0 >"$D/n_ep4.rtol0" 2>&1; then
  fail "(2) without --exact, ep 4 differs from one process at rtol 0" "compare passed: the control shows nothing"
elif "$S" compare "$D/n_one" "$D/n_ep4" >"$D/n_ep4.cmp" 2>&1; then
  ok "(2) without --exact, ep 4 differs from one process at rtol 0, within f64 tolerance ($(grep -o 'max rel diff [^;]*' "$D/n_ep4.cmp"))"
else
  fail "(2) without --exact, ep 4 within f64 tolerance" "$(tail -n 1 "$D/n_ep4.cmp")"
fi

# ---------------------------------------------------------------- (3) f32 and mixed bf16
for recipe in "f32 --dtype f32" "bf16 --dtype f32 --mixed bf16"; do
  read -r name flags <<<"$recipe"
  # shellcheck disable=SC2086  # flags: words
  run "setup: $name, one micro-batch of 8" 1 "$D/${name}_one" --exact --global-batch 8 --micro-batch 8 $flags
  # shellcheck disable=SC2086
  exact "$name: ep 2 × dp 2, ZeRO-2" 4 "${name}_one" --global-batch 8 --micro-batch 1 --ep 2 --zero 2 $flags
done

# ---------------------------------------------------------------- (4) the bytes: plan --ledger
for name in "dp 2" "ep 4" "ep 2 × dp 2, ZeRO-2" "ep 2, ZeRO-3" "ep 2 × tp 2" "4D: dp 2 × ep 2 × tp 2 × pp 2, ZeRO-1"; do
  if "$S" plan --ledger "$D/$name/ledger.json" >"$D/$name.plan" 2>&1; then
    ok "(4) $name: plan --ledger: the 32-byte sums over dp and ep match the formula exactly"
  else
    fail "(4) $name: plan --ledger" "$(grep -E '^result|error' "$D/$name.plan" | cut -c1-300)"
  fi
done
# A ledger whose ep-axis exact gradient sums moved 32 bytes more than they did must fail, naming the rank.
python3 - "$D/ep 2 × dp 2, ZeRO-2/ledger.json" "$D/tampered.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for t in j["ranks"][1]["comm"]["totals"]:
    if t.get("axis") == "ep" and t.get("purpose") == "exact_grads":
        t["sent_intra"] += 32
        break
else:
    sys.exit("no ep exact_grads total on rank 1")
json.dump(j, open(sys.argv[2], "w"))
PY
if "$S" plan --ledger "$D/tampered.json" >"$D/tampered.plan" 2>&1; then
  fail "(4) a ledger with 32 B more of ep exact sums on rank 1 fails" "plan --ledger passed it"
elif grep -q '^result: MISMATCH in rank 1 comm' "$D/tampered.plan"; then
  ok "(4) a ledger with 32 B more of ep exact sums on rank 1 fails: $(grep -o 'rank 1 comm ([^)]*)' "$D/tampered.plan")"
else
  fail "(4) a ledger with 32 B more of ep exact sums on rank 1 fails, naming rank 1" "$(grep '^result' "$D/tampered.plan")"
fi

exit $((fails > 0))
