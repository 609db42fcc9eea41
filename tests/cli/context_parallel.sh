#!/usr/bin/env bash
# Context parallelism through the CLI and scripts/mpirun.sh (f64, dropout 0.1, --attention flash):
#  (1) layouts: --cp 2 and --cp 4, zigzag and contiguous, reproduce the single process (compare, f64
#      tolerance: ring attention adds the blocks' partial softmaxes in another order); so do cp 2 × tp 2 with
#      --sequence-parallel, cp 2 × dp 2 with --zero 3, cp 2 × pp 2, the 4D run dp 2 × cp 2 × tp 2 on 8 ranks, and
#      cp 2 × dp 2 with --fsdp hybrid on nodes of 2 ranks (sharded over the gradient group's node part; plan
#      --ledger matches it);
#  (2) checkpoints hold whole tensors: a cp-2 run saved at step 3 resumes at cp 4 and on one process, each
#      continuing the uninterrupted single process's curve (steps 4..6);
#  (4) the work per rank (the FLOP counter's attention share in ledger.json): zigzag gives every cp rank the
#      same attention FLOPs exactly; contiguous gives rank r r whole chunks plus its diagonal one: equal steps
#      between ranks, the last doing c…2c−1 times the first's work (→ 2c−1 for long chunks, C24);
#  (3) bad input: --seq not divisible by 2c (zigzag) or c (contiguous), a world that cp × tp does not divide,
#      dp × cp ≠ world, --cp with --attention naive (refused: ring attention is the online softmax's), --cp 0:
#      exit 2 within 60 s, one error line from rank 0, no crash dump.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs, steps_are, bad (over the flags R below)

R=(--layers 2 --hidden 32 --heads 2 --seq 64 --eval-windows 2 --eval-every 3 --progress none --data "$tmp/small.txt"
   --dtype f64 --dropout 0.1 --attention flash --lr-schedule constant --warmup 2 --global-batch 4 --micro-batch 2)

# ---------------------------------------------------------------- (1) layouts
L=$tmp/layouts
mkdir -p "$L"
run "setup: 1 process, 6 steps" 1 "$L/one" --steps 6 || exit 1
layout() {  # layout NAME NP FLAGS...: trains 6 steps and compares with the single process
  local name=$1 np=$2
  shift 2
  run "(1) $name" "$np" "$L/$name" --steps 6 "$@" &&
    compare_runs "(1) -np $np $* vs 1 process: compare passes" "$L/one" "$L/$name"
}
layout cp2 2 --cp 2
layout cp2_contiguous 2 --cp 2 --cp-split contiguous
layout cp4 4 --cp 4
layout cp4_contiguous 4 --cp 4 --cp-split contiguous
layout cp2_tp2_sp 4 --cp 2 --tp 2 --sequence-parallel
layout cp2_dp2_zero3 4 --cp 2 --zero 3
layout cp2_pp2 4 --cp 2 --pp 2
layout 4d 8 --dp 2 --cp 2 --tp 2 --zero 1
# FSDP hybrid over the gradient group dp × cp: shards inside a node of 2 ranks (a cp pair), replicas across.
if layout cp2_dp2_hybrid 4 --cp 2 --fsdp hybrid --ranks-per-node 2; then
  if "$S" plan --ledger "$L/cp2_dp2_hybrid/ledger.json" >"$L/hybrid.plan" 2>&1; then
    ok "(1) cp 2 × dp 2 --fsdp hybrid: plan --ledger matches ($(grep -m1 '^result' "$L/hybrid.plan"))"
  else
    fail "(1) cp 2 × dp 2 --fsdp hybrid: plan --ledger matches" "$(grep -m1 '^result' "$L/hybrid.plan" || last "$L/hybrid.plan")"
  fi
fi
if grep -q "context parallel over 2 (zigzag split, ring attention)" "$L/cp2.log"; then
  ok "(1) the cp-2 run says its layout"
else
  fail "(1) the cp-2 run says its layout" "$(grep -m1 '^layout' "$L/cp2.log")"
fi

# ---------------------------------------------------------------- (2) resume across cp sizes
K=$tmp/resume
mkdir -p "$K"
if run "(2) -np 2 --cp 2, 3 steps, --save" 2 "$K/cp2_3" --cp 2 --steps 3 --save "$K/ck"; then
  for np in 4 1; do
    cp=$np
    if run "(2) the cp-2 checkpoint resumed at cp $cp" "$np" "$K/to_cp$cp" --cp "$cp" --resume "$K/ck" --steps 6; then
      steps_are "(2) cp 2 -> cp $cp" "$K/to_cp$cp" 4 6
      compare_runs "(2) cp 2 -> cp $cp vs the uninterrupted single process, steps 4..6" "$L/one" "$K/to_cp$cp"
    fi
  done
fi

# ---------------------------------------------------------------- (4) the work per rank
# attention_flops DIR: every rank's attention FLOPs, rank order, space-separated.
attention_flops() {
  python3 -c 'import json, sys; print(" ".join("%d" % r["flops"]["attention"] for r in json.load(open(sys.argv[1]))["ranks"]))' "$1/ledger.json"
}
for c in 2 4; do
  z=$(attention_flops "$L/cp$c") k=$(attention_flops "$L/cp${c}_contiguous")
  if awk -v z="$z" 'BEGIN { n = split(z, a, " "); for (i = 2; i <= n; ++i) if (a[i] != a[1]) exit 1; exit !(n > 1 && a[1] > 0) }'; then
    ok "(4) cp $c zigzag: every rank's attention FLOPs equal ($z)"
  else
    fail "(4) cp $c zigzag: every rank's attention FLOPs equal" "measured $z"
  fi
  # Rank r attends to r whole earlier chunks and its own diagonal one: FLOPs r·F + D, with D ≤ F (the diagonal
  # tiles stop at the diagonal: D → F/2 as chunks grow past flash's 64-row query blocks), so the steps between
  # ranks are equal and the last rank does c…2c−1 times the first's work.
  if awk -v k="$k" -v c=$c 'BEGIN { n = split(k, a, " "); if (n != c || a[1] <= 0) exit 1
      for (i = 3; i <= n; ++i) if (a[i] - a[i-1] != a[2] - a[1]) exit 1
      r = a[n] / a[1]; exit !(r >= c && r < 2 * c - 1) }'; then
    ok "(4) cp $c contiguous: rank r does r whole chunks + its diagonal, the last $(awk -v k="$k" 'BEGIN { n = split(k, a, " "); printf "%.2f", a[n] / a[1] }')× the first ($k)"
  else
    fail "(4) cp $c contiguous: rank r does r whole chunks + its diagonal (equal steps, last/first in [c, 2c−1))" "measured $k"
  fi
done

# ---------------------------------------------------------------- (3) bad input
bad "--seq not divisible by 2c (zigzag)" 2 'cp 2 cuts --seq 66 into 4 zigzag chunks' --cp 2 --seq 66
bad "--seq not divisible by c (contiguous)" 4 'cp 4 cuts --seq 66 into 4 chunks' --cp 4 --seq 66 --cp-split contiguous
bad "cp × tp not dividing the world" 3 'cp 2 does not divide the world of 3' --cp 2
bad "cp × tp not dividing the world" 6 'cp 2 × tp 2 = 4 does not divide the world of 6' --cp 2 --tp 2
bad "dp × cp ≠ world" 4 'world has 4 ranks' --dp 1 --cp 2
bad "--cp with --attention naive" 2 'add --attention flash' --cp 2 --attention naive
bad "--cp 0" 2 'cp must be at least 1' --cp 0
bad "--cp-split unknown" 2 'cp-split' --cp 2 --cp-split diagonal

[ "$fails" = 0 ]
