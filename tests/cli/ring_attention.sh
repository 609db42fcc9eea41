#!/usr/bin/env bash
# `shardlab ring-attention` (claim C24): ring attention over c = 1…4 ranks, zigzag and contiguous, equals flash
# attention on the whole sequence in all five tensors (output, log-sum-exp, dQ, dK, dV) in f64 within 1e-12 (and f32
# within 1e-5 at c = 4), with dropout and with scores in the thousands; the schedule it prints is the ring's
# (rank r holds rank r − s's block at step s); the FLOP counter's work per rank is equal under zigzag and grows
# ~(2c−1)× from the first to the last rank under contiguous; --rtol 0 fails on the reorder noise (so the verdicts
# can fail) and names each rank's first element; bad flags are one line from rank 0, exit 2.
# A wrong merge is caught by lab 14's controls (tests/cli/labs_kernels.sh).
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then echo "FAIL - mpirun exists (no OpenMPI: make deps installs it)"; exit 1; fi
mpi() { timeout -k 5 60 bash scripts/mpirun.sh -np "$@" </dev/null; }
verdicts() { grep -E 'max rel diff' "$1" | awk '{printf "%s %s %s; ", $1, $(NF-1), $NF}'; }

# ---------------------------------------------------------------- the five tensors
for c in 1 2 3 4; do
  for split in zigzag contiguous; do
    log=$tmp/ra_${c}_$split.log
    if mpi "$c" "$S" ring-attention --split "$split" >"$log" 2>&1 && [ "$(grep -c 'PASS$' "$log")" = 5 ] &&
      grep -q "^result: ring attention over $c rank" "$log"; then
      ok "c = $c, $split, f64: the five tensors within 1e-12 ($(verdicts "$log"))"
    else
      fail "c = $c, $split, f64: the five tensors within 1e-12" "$(verdicts "$log")$(last "$log")"
    fi
  done
done
log=$tmp/ra_f32.log
if mpi 4 "$S" ring-attention --dtype f32 --split contiguous >"$log" 2>&1 && [ "$(grep -c 'PASS$' "$log")" = 5 ] &&
  grep -q 'tolerance 1e-05' "$log"; then
  ok "c = 4, contiguous, f32: the five tensors within 1e-5 ($(verdicts "$log"))"
else
  fail "c = 4, contiguous, f32: the five tensors within 1e-5" "$(verdicts "$log")$(last "$log")"
fi
log=$tmp/ra_logit.log
if mpi 2 "$S" ring-attention --logit-scale 1000 --seq 640 >"$log" 2>&1 && [ "$(grep -c 'PASS$' "$log")" = 5 ]; then
  ok "c = 2, scores in the thousands (--logit-scale 1000): the five tensors within 1e-12"
else
  fail "c = 2, --logit-scale 1000: the five tensors within 1e-12" "$(verdicts "$log")$(last "$log")"
fi

# ---------------------------------------------------------------- the schedule and the work per rank
log=$tmp/ra_4_zigzag.log
row=$(grep -E '^ +2  block' "$log" | tr -s ' ')
if [ "$row" = " 2 block 2: 2/0/2 block 3: 2/0/2 block 0: 2/0/2 block 1: 2/0/2" ] &&
  grep -q 'rank 3 holds positions \[960, 1280) ∪ \[1280, 1600)' "$log"; then
  ok "c = 4, zigzag: at step 2 rank r holds rank r − 2's block, 2 whole and 2 skipped pairs; rank 3 holds chunks 3 and 4"
else
  fail "c = 4, zigzag: the schedule's step 2 and rank 3's tokens" "step 2: '$row'; $(grep 'rank 3 holds' "$log")"
fi
ratios() { grep -oE '[0-9.]+× rank 0' "$1" | sed 's/×.*//' | tr '\n' ' '; }
z=$(ratios "$tmp/ra_4_zigzag.log") k=$(ratios "$tmp/ra_4_contiguous.log")
read -r k0 k1 k2 k3 <<<"$k"
if [ "$z" = "1.00 1.00 1.00 1.00 " ] && awk -v a="$k1" -v b="$k2" -v d="$k3" 'BEGIN { exit !(1 < a && a < b && b < d && d > 6 && d <= 7) }'; then
  ok "attention FLOPs per rank (the FLOP counter), c = 4: zigzag equal ($z), contiguous growing to ~2c − 1 = 7 ($k)"
else
  fail "attention FLOPs: zigzag equal, contiguous last ~7× the first" "zigzag: $z; contiguous: $k"
fi

# ---------------------------------------------------------------- bit for bit is not asked: the reorder noise fails
log=$tmp/ra_tight.log
mpi 2 "$S" ring-attention --rtol 0 --seq 640 >"$log" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q '^result: MISMATCH .* in output, log-sum-exp, dQ, dK, dV' "$log" &&
  grep -qE "^  rank 1: dV's first element past the tolerance: sample 0, head [01], position [0-9]+, column [0-9]+: expected -?[0-9]" "$log"; then
  ok "--rtol 0 (the blocks add in another order than one process): exit 1, every tensor FAIL, first elements named"
else
  fail "--rtol 0: exit 1 naming the first elements" "exit $rc; $(verdicts "$log")$(grep -m1 'rank 1: dV' "$log")"
fi

# ---------------------------------------------------------------- bad flags
bad() {  # bad NAME NP PATTERN FLAGS...: exit 2, one line naming shardlab, matching PATTERN
  local name=$1 np=$2 pattern=$3 rc
  shift 3
  mpi "$np" "$S" ring-attention "$@" >"$tmp/bad.out" 2>&1
  rc=$?
  if [ $rc = 2 ] && [ "$(grep -c shardlab "$tmp/bad.out")" = 1 ] && grep -qE -- "$pattern" "$tmp/bad.out"; then
    ok "$name: exit 2, one line ($(grep shardlab "$tmp/bad.out"))"
  else
    fail "$name: exit 2, one line" "exit $rc: $(grep shardlab "$tmp/bad.out" | head -n 3 | tr '\n' '|')"
  fi
}
bad "-np 4 --seq 1004 (not divisible by 2c = 8)" 4 "--seq 1004 is cut into 8 zigzag chunks over 4 ranks: it must be divisible by 8" --seq 1004
bad "-np 3 --split contiguous --seq 1000" 3 "cut into 3 chunks over 3 ranks: it must be divisible by 3" --split contiguous --seq 1000
bad "--logit-scale 0" 2 "--logit-scale must be greater than 0" --logit-scale 0
bad "--dropout 1" 1 "--dropout must be in \[0, 1\)" --dropout 1
bad "--split diagonal" 2 "--split .*zigzag\|contiguous" --split diagonal
bad "--seq 1048576 --batch 1024 (terabytes)" 1 "needs [0-9.]+ TB, but .* is available" --seq 1048576 --batch 1024
[ "$fails" = 0 ]
