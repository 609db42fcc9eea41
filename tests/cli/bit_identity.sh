#!/usr/bin/env bash
# The bit-identity promises of DESIGN.md ("How equal is equal"), end to end and small enough to run under every
# GEMM kernel (make test-kernels runs this script once per OpenBLAS kernel the CPU can run): whatever kernel
# computes the products, each pair below must agree to the last bit (shardlab compare --rtol 0):
#  (1) the same configuration twice (f32, dropout);
#  (2) a run saved at step 3 and resumed, against the uninterrupted run (f32, dropout, AdamW's state);
#  (3) recompute full and selective against none (f32, naive attention), and full against none with flash;
#  (4) GPipe, 1F1B and interleaved pipelines on 2 ranks against the single process (4 micro-batches);
#  (5) ZeRO-1, -2, -3 against DP on 2 ranks, one micro-batch per rank; ZeRO-1 also with 2 micro-batches each;
#  (6) the control: data parallel adds in another order than one process, so --rtol 0 must fail there
#      (f64) while the tolerance check passes — the checks above can fail.
# The run header must name the kernel OPENBLAS_CORETYPE asked for, when it asks for one.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs

R=(--layers 4 --hidden 32 --heads 2 --seq 32 --eval-windows 0 --progress none --data "$tmp/small.txt"
   --dropout 0.1 --lr-schedule constant --warmup 2 --steps 6 --global-batch 4 --micro-batch 1)
D=$tmp/runs
mkdir -p "$D"

run "one process" 1 "$D/one" || exit 1
kernel=$(grep -m1 '^compute:' "$D/one.log")
if [ -n "${OPENBLAS_CORETYPE:-}" ] && [[ $kernel != *"OpenBLAS ${OPENBLAS_CORETYPE} kernel"* ]]; then
  fail "the run uses the kernel OPENBLAS_CORETYPE names" "asked for $OPENBLAS_CORETYPE: '$kernel'"
fi
echo "# ${kernel#compute: }"
same() {  # same NAME REF RUN: bit for bit
  compare_runs "$1: bit-identical (compare --rtol 0)" "$2" "$3" --rtol 0
}

# (1) twice
run "(1) the same run again" 1 "$D/again" && same "(1) the same configuration twice" "$D/one" "$D/again"

# (2) resume
run "(2) 3 steps, saved" 1 "$D/first" --steps 3 --save "$D/ck" &&
  run "(2) resumed to step 6" 1 "$D/resumed" --resume "$D/ck" &&
  same "(2) resumed after step 3 vs uninterrupted" "$D/one" "$D/resumed"

# (3) recompute
for rc in full selective; do
  run "(3) --recompute $rc" 1 "$D/rc_$rc" --recompute $rc && same "(3) --recompute $rc vs none" "$D/one" "$D/rc_$rc"
done
run "(3) flash" 1 "$D/flash" --attention flash &&
  run "(3) flash, --recompute full" 1 "$D/flash_full" --attention flash --recompute full &&
  same "(3) flash: --recompute full vs none" "$D/flash" "$D/flash_full"

# (4) pipelines
for sch in gpipe 1f1b; do
  run "(4) pp 2 $sch" 2 "$D/pp_$sch" --pp 2 --schedule $sch && same "(4) pp 2 $sch vs one process" "$D/one" "$D/pp_$sch"
done
run "(4) pp 2 interleaved" 2 "$D/pp_int" --pp 2 --schedule interleaved --virtual-stages 2 &&
  same "(4) pp 2 interleaved (v = 2) vs one process" "$D/one" "$D/pp_int"

# (5) ZeRO against DP, 2 ranks
run "(5) dp 2" 2 "$D/dp" --global-batch 2 && for z in 1 2 3; do
  run "(5) dp 2 --zero $z" 2 "$D/zero$z" --global-batch 2 --zero $z &&
    same "(5) ZeRO-$z vs DP (one micro-batch per rank)" "$D/dp" "$D/zero$z"
done
run "(5) dp 2, 2 micro-batches each" 2 "$D/dp_acc" &&
  run "(5) dp 2 --zero 1, 2 micro-batches each" 2 "$D/zero1_acc" --zero 1 &&
  same "(5) ZeRO-1 vs DP with gradient accumulation" "$D/dp_acc" "$D/zero1_acc"

# (6) the control
if run "(6) one process, f64" 1 "$D/one64" --dtype f64 && run "(6) dp 2, f64" 2 "$D/dp64" --dtype f64; then
  compare_runs "(6) dp 2 vs one process: within f64 tolerance" "$D/one64" "$D/dp64"
  if "$S" compare "$D/one64" "$D/dp64" --rtol 0 >"$D/dp64.cmp0" 2>&1; then
    fail "(6) control: compare --rtol 0 tells dp 2 (another order of additions) from one process" "it passed"
  else
    ok "(6) control: compare --rtol 0 tells dp 2 (another order of additions) from one process ($(grep -o 'max rel diff [^;]*' "$D/dp64.cmp0"))"
  fi
fi
[ "$fails" = 0 ]
