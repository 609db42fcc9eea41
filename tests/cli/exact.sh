#!/usr/bin/env bash
# The exact mode (--exact, parallel/exact_grads.cpp, core/exact_sum.h): every layout reproduces the single process
# bit for bit — `compare --rtol 0` — because each product runs one sample at a time and every sum across samples,
# micro-batches, ranks and shards is order-free and rounded once:
#  (1) f64, dropout 0.1, 4 steps with evaluations: the same global batch of 16 as 1×16, 4×4 and 16×1 micro-batches;
#      a global batch of 12 on dp 2, 3 and 4, ZeRO-1, ZeRO-2 and ZeRO-3 with accumulation, FSDP hybrid (2 nodes of
#      2), pp 2 under GPipe, 1F1B and interleaved, dp 2 × pp 2 with ZeRO-1, tp 2 and 4 (the row-parallel sums and the
#      vocabulary-parallel head's sums order-free over fixed chunks every tp size divides), dp 2 × tp 2 with ZeRO-2,
#      tp 2 and 4 with sequence parallelism (the tensors whole on every tp rank take each row's gradient order-free),
#      and a 3D run, dp 2 × tp 2 × pp 2 — each against the single process;
#  (2) the control: the same dp 3 and 4×4 without --exact differ from their single process at rtol 0 (the order of
#      additions; within compare's f64 tolerance), and the exact curve is within that tolerance of the normal one;
#  (3) f32 and --mixed bf16: dp 4 with ZeRO-2 and one sample per micro-batch against one micro-batch of 12;
#  (4) cp and experts have their own suites (tests/cli/exact_cp.sh, exact_experts.sh);
#  (5) `plan --ledger` on the exact runs: their 32-byte rings equal the formula exactly; `plan --exact` prints them
#      beside the normal mode's bytes;
#  (6) --resume of an exact checkpoint stays exact (a resume carries the mode): bit-identical to one process, and
#      --exact=false resumes in the normal mode.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs, bad (over the flags R below)

R=(--layers 2 --hidden 32 --heads 4 --seq 32 --eval-windows 3 --eval-every 2 --progress none --data "$tmp/small.txt"
   --dtype f64 --dropout 0.1 --lr-schedule constant --warmup 2 --steps 4)
source "$(dirname "$0")/lib_exact.sh"  # $D, exact

# ---------------------------------------------------------------- (1) layouts, f64
run "setup: one micro-batch of 16" 1 "$D/one16" --exact --global-batch 16 --micro-batch 16
run "setup: one micro-batch of 12" 1 "$D/one12" --exact --global-batch 12 --micro-batch 12
exact "4×4 micro-batches" 1 one16 --global-batch 16 --micro-batch 4
exact "16×1 micro-batches" 1 one16 --global-batch 16 --micro-batch 1
exact "dp 2" 2 one12 --global-batch 12 --micro-batch 6
exact "dp 3, 2 micro-batches" 3 one12 --global-batch 12 --micro-batch 2
exact "dp 4" 4 one12 --global-batch 12 --micro-batch 3
exact "ZeRO-1, dp 2, 3 micro-batches" 2 one12 --global-batch 12 --micro-batch 2 --zero 1
exact "ZeRO-2, dp 2, 6 micro-batches" 2 one12 --global-batch 12 --micro-batch 1 --zero 2
exact "ZeRO-3, dp 4, 3 micro-batches" 4 one12 --global-batch 12 --micro-batch 1 --zero 3
exact "FSDP hybrid, 2 nodes of 2" 4 one12 --global-batch 12 --micro-batch 1 --fsdp hybrid --ranks-per-node 2
exact "pp 2 GPipe" 2 one12 --global-batch 12 --micro-batch 3 --pp 2 --schedule gpipe
exact "pp 2 1F1B" 2 one12 --global-batch 12 --micro-batch 2 --pp 2
run "setup: 4 layers, one micro-batch of 12" 1 "$D/one12_l4" --exact --global-batch 12 --micro-batch 12 --layers 4
exact "pp 2 interleaved, 4 layers" 2 one12_l4 --global-batch 12 --micro-batch 3 --pp 2 --schedule interleaved \
  --virtual-stages 2 --layers 4
exact "dp 2 × pp 2, ZeRO-1" 4 one12 --global-batch 12 --micro-batch 2 --pp 2 --zero 1
exact "tp 2" 2 one12 --global-batch 12 --micro-batch 3 --tp 2
run "setup: 2 heads, one micro-batch of 12" 1 "$D/one12_h2" --exact --global-batch 12 --micro-batch 12 --heads 2 \
  --attention flash
exact "tp 2, a head per rank, flash attention" 2 one12_h2 --global-batch 12 --micro-batch 6 --tp 2 --heads 2 \
  --attention flash
exact "tp 4" 4 one12 --global-batch 12 --micro-batch 4 --tp 4
exact "dp 2 × tp 2, ZeRO-2" 4 one12 --global-batch 12 --micro-batch 2 --tp 2 --zero 2
exact "tp 2 with sequence parallelism" 2 one12 --global-batch 12 --micro-batch 6 --tp 2 --sequence-parallel
exact "tp 4 with sequence parallelism, ZeRO-1" 4 one12 --global-batch 12 --micro-batch 4 --tp 4 --sequence-parallel \
  --zero 1
exact "3D: dp 2 × tp 2 × pp 2" 8 one12_l4 --global-batch 12 --micro-batch 3 --tp 2 --pp 2 --layers 4

# ---------------------------------------------------------------- (2) the control: without --exact
run "setup: normal mode, one micro-batch of 12" 1 "$D/n_one12" --global-batch 12 --micro-batch 12
run "setup: normal mode, one micro-batch of 16" 1 "$D/n_one16" --global-batch 16 --micro-batch 16
run "(2) normal mode, dp 3" 3 "$D/n_dp3" --global-batch 12 --micro-batch 2
run "(2) normal mode, 4×4" 1 "$D/n_4x4" --global-batch 16 --micro-batch 4
for pair in "n_one12 n_dp3 dp 3" "n_one16 n_4x4 4×4 micro-batches"; do
  read -r ref got what <<<"$pair"
  if "$S" compare "$D/$ref" "$D/$got" --rtol 0 >"$D/$got.rtol0" 2>&1; then
    fail "(2) without --exact, $what differs from one process at rtol 0" "compare passed: the control shows nothing"
  elif "$S" compare "$D/$ref" "$D/$got" >"$D/$got.cmp" 2>&1; then
    ok "(2) without --exact, $what differs from one process at rtol 0, within f64 tolerance ($(grep -o 'max rel diff [^;]*' "$D/$got.cmp"))"
  else
    fail "(2) without --exact, $what within f64 tolerance" "$(tail -n 1 "$D/$got.cmp")"
  fi
done
compare_runs "(2) the exact curve vs the normal one: a better-rounded sum, within f64 tolerance" "$D/n_one12" "$D/one12"

# ---------------------------------------------------------------- (3) f32 and mixed bf16
for recipe in "f32 --dtype f32" "bf16 --dtype f32 --mixed bf16"; do
  read -r name flags <<<"$recipe"
  # shellcheck disable=SC2086  # flags: words
  run "setup: $name, one micro-batch of 12" 1 "$D/${name}_one" --exact --global-batch 12 --micro-batch 12 $flags
  # shellcheck disable=SC2086
  exact "$name: ZeRO-2, dp 4, 3 micro-batches" 4 "${name}_one" --global-batch 12 --micro-batch 1 --zero 2 $flags
done

# ---------------------------------------------------------------- (5) the bytes: plan --ledger, plan --exact
for name in "dp 3, 2 micro-batches" "ZeRO-2, dp 2, 6 micro-batches" "ZeRO-3, dp 4, 3 micro-batches" \
  "FSDP hybrid, 2 nodes of 2" "dp 2 × pp 2, ZeRO-1" "tp 4" "tp 4 with sequence parallelism, ZeRO-1" \
  "3D: dp 2 × tp 2 × pp 2"; do
  if "$S" plan --ledger "$D/$name/ledger.json" >"$D/$name.plan" 2>&1; then
    ok "(5) $name: plan --ledger: the 32-byte exact sums' rings match the formula exactly ($(grep -c 'exact' "$D/$name/ledger.json") exact records)"
  else
    fail "(5) $name: plan --ledger" "$(grep -E '^result|error' "$D/$name.plan" | cut -c1-300)"
  fi
done
if "$S" plan --dp 4 --zero 2 --accum 3 --exact --mixed none --layers 2 --hidden 32 --heads 2 --seq 32 >"$tmp/p" 2>&1 &&
  grep -q 'reduce-scatter exact grads .* 32 ' "$tmp/p" && grep -q 'the normal mode' "$tmp/p"; then
  ok "(5) plan --exact: $(grep -o '[0-9.]* × the normal mode.*' "$tmp/p")"
else
  fail "(5) plan --dp 4 --zero 2 --exact prints the exact bytes beside the normal ones" "$(tail -n 3 "$tmp/p")"
fi

# ---------------------------------------------------------------- (6) --resume of an exact checkpoint stays exact
# The exact mode is the curve's numerics, not its layout: a resume carries it (unless told --exact=false), so the
# resumed curve goes on bit for bit — here saved on ZeRO-2 over dp 2 and resumed on dp 3 without naming --exact.
mpi 2 "$S" train "${R[@]}" --exact --global-batch 12 --micro-batch 2 --zero 2 --steps 2 --save "$D/rck" --out "$D/r1" \
  >"$tmp/r.log" 2>&1 || fail "setup: an exact run saved at step 2" "$(last "$tmp/r.log")"
mpi 3 "$S" train --resume "$D/rck" --global-batch 12 --micro-batch 2 --steps 4 --out "$D/r2" >"$tmp/r2.log" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q '^exact = true' "$D/r2/config.toml" && grep -q 'in the exact mode' "$tmp/r2.log" &&
  "$S" compare "$D/one12" "$D/r2" --rtol 0 >"$tmp/r.cmp" 2>&1; then
  ok "(6) an exact checkpoint resumed on dp 3 without --exact: exact = true, the header says so, bit-identical to one process"
else
  fail "(6) an exact checkpoint resumed stays exact" "exit $rc: $(last "$tmp/r2.log") $(grep -E 'max rel|error' "$tmp/r.cmp" 2>/dev/null | head -n 1)"
fi
"$S" train --resume "$D/rck" --global-batch 12 --micro-batch 2 --steps 3 --exact=false --out "$D/r3" >"$tmp/r3.log" 2>&1
grep -q '^exact = false' "$D/r3/config.toml" 2>/dev/null && ! grep -q 'in the exact mode' "$tmp/r3.log" &&
  ok "(6) ... and --exact=false resumes it in the normal mode" || fail "(6) --exact=false resumes in the normal mode" "$(last "$tmp/r3.log")"

exit $((fails > 0))
