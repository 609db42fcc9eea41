#!/usr/bin/env bash
# A mixture of experts in place of the MLP (--moe-experts, claim C25) through the CLI (f64, dropout 0.1):
#  (1) routing is per sample, so every layout that splits the batch by samples routes exactly as one process:
#      the same global batch as 2 × 2 and 4 × 1 micro-batches, dp 2 (with ZeRO-3 too), pp 2 (1F1B), tp 2 (whole
#      experts on every tp rank), --recompute full and a capacity that drops slots reproduce the single process
#      (compare, f64 tolerance, the router's columns aux_loss, z_loss, imbalance and dropped included); so does
#      expert parallelism — ep 2, ep 4, ep 2 × dp 2, ep 2 × pp 2, ep 2 × tp 2 (whole experts on every tp rank),
#      ep 2 with full recompute, ep 2 with ZeRO-2 and accumulation, ep 2 × dp 2 with FSDP — each rank holding E/ep
#      of the experts (ledger.json's params);
#  (2) the outputs: loss.csv's MoE columns, moe_load.csv (every step × MoE block, the slots of the global batch:
#      seq × global batch × k per block, before capacity), moe_load.svg; --moe-every 2 makes only even blocks
#      MoE; the load-balancing loss at α = 0 lets the load drift further from even than at α = 0.1;
#  (3) checkpoints: a MoE run saved at step 3 resumes on dp 2, an ep-2 run at ep 4, on one process and at ep 2
#      with ZeRO-2, and an ep 2 × dp 2 ZeRO-3 run on one process, each continuing the single process's curve;
#  (4) bad input: k > E, k < 1, negative capacity, NaN coefficients, --moe-every beyond the layers, experts
#      with --cp or --sequence-parallel, --ep without experts, E not divisible by ep, a world ep does not divide,
#      --ep 0, --ep with FSDP hybrid: exit 2, one error line from rank 0.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs, steps_are, bad (over the flags R below)

R=(--layers 2 --hidden 32 --heads 2 --seq 32 --eval-windows 2 --eval-every 3 --progress none --data "$tmp/small.txt"
   --dtype f64 --dropout 0.1 --lr-schedule constant --warmup 2 --global-batch 4 --micro-batch 2
   --moe-experts 4 --moe-top-k 2 --moe-z-loss 0.001)

# column DIR NAME: the loss.csv column NAME, one value per line.
column() {
  awk -F, -v n="$2" 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == n) c = i; next } c { print $c }' "$1/loss.csv"
}

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
layout micro1 1 --micro-batch 1
layout micro4 1 --micro-batch 4
layout dp2 2
layout dp2_zero3 2 --zero 3
layout pp2 2 --pp 2
layout tp2 2 --tp 2
layout recompute 1 --recompute full
# compare checks the router's columns too; the counts are integers: equal, whatever the layout.
for c in imbalance dropped; do
  if [ "$(column "$L/one" $c)" = "$(column "$L/dp2" $c)" ] && [ "$(column "$L/one" $c)" = "$(column "$L/tp2" $c)" ] &&
    [ -n "$(column "$L/one" $c)" ]; then
    ok "(1) dp 2 and tp 2: loss.csv's $c equals the single process's, step for step"
  else
    fail "(1) dp 2 and tp 2: loss.csv's $c equals the single process's" \
      "1 process $(column "$L/one" $c | tr '\n' ' '); dp 2 $(column "$L/dp2" $c | tr '\n' ' ')"
  fi
done
if grep -q 'aux_loss' "$L/dp2.cmp" && grep -q 'z_loss' "$L/dp2.cmp"; then
  ok "(1) compare checked aux_loss and z_loss ($(grep -o 'aux_loss [^,]*' "$L/dp2.cmp"), $(grep -o 'z_loss [^,]*' "$L/dp2.cmp"))"
else
  fail "(1) compare checks the router's columns" "$(tail -n 2 "$L/dp2.cmp")"
fi
if run "setup: 1 process, capacity 1.0" 1 "$L/cap_one" --steps 4 --moe-capacity 1.0 &&
  run "(1) dp 2, capacity 1.0" 2 "$L/cap_dp2" --steps 4 --moe-capacity 1.0; then
  compare_runs "(1) capacity 1.0: dp 2 vs 1 process" "$L/cap_one" "$L/cap_dp2"
  dropped=$(column "$L/cap_one" dropped | tr '\n' ' ')
  if awk -v d="$dropped" 'BEGIN { n = split(d, a, " "); for (i = 1; i <= n; ++i) if (a[i] > 0) exit 0; exit 1 }' &&
    [ "$(column "$L/cap_one" dropped)" = "$(column "$L/cap_dp2" dropped)" ]; then
    ok "(1) capacity 1.0 drops slots ($dropped per step), the same on dp 2"
  else
    fail "(1) capacity 1.0 drops slots, the same on dp 2" "1 process: $dropped; dp 2: $(column "$L/cap_dp2" dropped | tr '\n' ' ')"
  fi
fi

# Expert parallelism: the experts spread over ep ranks, each rank its own samples; the fixed combine order
# keeps the single process's sums (compare within the f64 tolerance; bit for bit only where the BLAS kernel gives
# an expert's rows the same bits whatever the row count: Haswell's does here, the AVX-512 ones need not).
layout ep2 2 --ep 2
layout ep4 4 --ep 4 --micro-batch 1
layout ep2_dp2 4 --ep 2 --dp 2 --micro-batch 1
layout ep2_pp2 4 --ep 2 --pp 2
layout ep2_recompute 2 --ep 2 --recompute full
layout ep2_tp2 4 --ep 2 --tp 2
# ZeRO/FSDP shard over the ranks that hold the same experts (dp), the dense shards then all-reduced over ep.
layout ep2_zero2 2 --ep 2 --zero 2 --micro-batch 1
layout ep2_dp2_fsdp 4 --ep 2 --dp 2 --fsdp full --micro-batch 1
# The parameters per rank: the dense ones whole, E/ep of each MoE block's experts.
params() { python3 -c 'import json, sys; print(" ".join(str(r["params"]) for r in json.load(open(sys.argv[1]))["ranks"]))' "$1/ledger.json"; }
whole=$(params "$L/one") per_ep2=$(params "$L/ep2") per_ep4=$(params "$L/ep4")
# Each MoE block's experts: E·(2·C·F + F + C) = 4·(2·32·128 + 128 + 32) parameters; 2 blocks.
experts=$((2 * 4 * (2 * 32 * 128 + 128 + 32)))
if [ "$per_ep2" = "$((whole - experts / 2)) $((whole - experts / 2))" ] &&
  [ "$per_ep4" = "$(for i in 1 2 3 4; do printf '%s ' $((whole - 3 * experts / 4)); done | sed 's/ $//')" ]; then
  ok "(1) parameters per rank: $whole whole, $per_ep2 at ep 2, $per_ep4 at ep 4 (E/ep of the $experts expert parameters each)"
else
  fail "(1) parameters per rank hold E/ep of the experts" "whole $whole, ep 2: $per_ep2, ep 4: $per_ep4 (experts $experts)"
fi

# ---------------------------------------------------------------- (2) the outputs
# moe_load.csv: 6 steps × 2 MoE blocks, each row's slots = seq · global batch · k = 32 · 4 · 2.
bad_rows=$(awk -F, 'NR > 1 { s = 0; for (i = 4; i <= NF; ++i) s += $i; if (s != 256 || NF != 7) print "step " $1 " layer " $2 ": " s " slots in " NF " cells" }' "$L/one/moe_load.csv" | head -n 2)
rows=$(($(wc -l <"$L/one/moe_load.csv") - 1))
if [ "$rows" = 12 ] && [ -z "$bad_rows" ] && grep -q '<svg' "$L/one/moe_load.svg"; then
  ok "(2) moe_load.csv: 12 rows (6 steps × 2 MoE blocks) of 4 experts' slots summing to 32·4·2 = 256; moe_load.svg drawn"
else
  fail "(2) moe_load.csv rows and moe_load.svg" "$rows rows; $bad_rows"
fi
if run "(2) --moe-every 2" 1 "$L/every2" --steps 1 --moe-every 2 &&
  [ "$(tail -n +2 "$L/every2/moe_load.csv" | cut -d, -f2 | tr '\n' ' ')" = "0 " ]; then
  ok "(2) --moe-every 2 on 2 layers: block 0 alone has experts"
else
  fail "(2) --moe-every 2: block 0 alone has experts" "$(tail -n +2 "$L/every2/moe_load.csv" 2>/dev/null | cut -d, -f2 | tr '\n' ' ')"
fi
# The load-balancing loss pulls the load toward even: 30 steps with α = 0 and α = 0.1 from the same start.
if run "(2) α = 0" 1 "$L/alpha0" --steps 30 --moe-aux-loss 0 --lr 3e-3 --eval-windows 0 &&
  run "(2) α = 0.1" 1 "$L/alpha1" --steps 30 --moe-aux-loss 0.1 --lr 3e-3 --eval-windows 0; then
  mean_last() { column "$1" imbalance | tail -n 10 | awk '{ s += $1 } END { printf "%.4f", s / NR }'; }
  a0=$(mean_last "$L/alpha0") a1=$(mean_last "$L/alpha1")
  if awk -v a="$a0" -v b="$a1" 'BEGIN { exit !(b < a) }'; then
    ok "(2) max/mean load over the last 10 of 30 steps: $a1 with α = 0.1 < $a0 with α = 0"
  else
    fail "(2) the load-balancing loss evens the load" "max/mean $a1 with α = 0.1, $a0 with α = 0"
  fi
fi

# ---------------------------------------------------------------- (3) resume
K=$tmp/resume
mkdir -p "$K"
if run "(3) 1 process, 3 steps, --save" 1 "$K/one_3" --steps 3 --save "$K/ck" &&
  run "(3) the checkpoint resumed on dp 2" 2 "$K/to_dp2" --resume "$K/ck" --steps 6; then
  steps_are "(3) 1 process -> dp 2" "$K/to_dp2" 4 6
  compare_runs "(3) 1 process -> dp 2 vs the uninterrupted single process, steps 4..6" "$L/one" "$K/to_dp2"
fi
# Checkpoints hold whole experts: an ep-2 run resumes at ep 4, on one process and sharded (ep 2 with ZeRO-2), and a
# sharded one (ep 2 × dp 2 with ZeRO-3: shards gathered over dp, then the ep ranks' experts) on one process.
if run "(3) ep 2, 3 steps, --save" 2 "$K/ep2_3" --ep 2 --steps 3 --save "$K/ck_ep2"; then
  for to in "4 --ep 4 --micro-batch 1" "1" "2 --ep 2 --zero 2 --micro-batch 1"; do
    read -r np flags <<<"$to"
    where="$np ranks $flags"
    [ "$np" = 1 ] && where="one process"
    # shellcheck disable=SC2086  # flags: words
    run "(3) the ep-2 checkpoint resumed on $where" "$np" "$K/ep2_to_$np" $flags --resume "$K/ck_ep2" --steps 6 &&
      compare_runs "(3) ep 2 -> $where vs the uninterrupted single process, steps 4..6" "$L/one" "$K/ep2_to_$np"
  done
fi
if run "(3) ep 2 × dp 2 with ZeRO-3, 3 steps, --save" 4 "$K/z3_3" --ep 2 --dp 2 --zero 3 --micro-batch 1 --steps 3 \
  --save "$K/ck_z3"; then
  run "(3) the ZeRO-3 × ep-2 checkpoint resumed on one process" 1 "$K/z3_to_1" --resume "$K/ck_z3" --steps 6 &&
    compare_runs "(3) ep 2 × dp 2 ZeRO-3 -> 1 process vs the uninterrupted single process, steps 4..6" "$L/one" \
      "$K/z3_to_1"
fi

# ---------------------------------------------------------------- (4) bad input
bad "--moe-top-k above E" 0 'moe-top-k 5 must be between 1 and --moe-experts 4' --moe-top-k 5
bad "--moe-top-k 0" 0 'moe-top-k 0 must be between 1' --moe-top-k 0
bad "negative capacity" 0 'moe-capacity must be a finite factor' --moe-capacity -1
bad "NaN aux coefficient" 0 'moe-aux-loss' --moe-aux-loss nan
bad "--moe-every beyond the layers" 0 'moe-every 3 must be between 1 and --layers 2' --moe-every 3
bad "experts with --cp" 2 'routes each sample' --cp 2 --attention flash
bad "experts with --sequence-parallel" 2 'routes each sample' --tp 2 --sequence-parallel
bad "--ep without experts" 2 'add --moe-experts' --ep 2 --moe-experts 0
bad "E not divisible by ep" 3 'moe-experts 4 is not divisible by --ep 3' --ep 3
bad "ep not dividing the world" 3 'ep 2 does not divide the world of 3' --ep 2
bad "--ep 0" 2 'ep must be at least 1' --ep 0
bad "--ep with --fsdp hybrid" 2 'use --fsdp full or shard_grad_op' --ep 2 --fsdp hybrid --ranks-per-node 1

[ "$fails" = 0 ]
