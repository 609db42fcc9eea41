# Lab 04's checks (sourced by scripts/lab.sh, helpers in scripts/lab_checks.sh): the ring's steps, written by
# the student in ring_steps.cpp, judged by `shardlab ring` (sums against a closed form, bytes against the
# formula) and by data-parallel training with ZeRO-1 (the curve bit for bit, the ledger's bytes exactly).
LAB_TITLE="the ring all-reduce"
LAB_SEAM=src/comm/ring_steps.cpp
LAB_CHECKS=(
  "sums2|2|all-reduce on 2 ranks: every element is the sum"
  "sums34|2|all-reduce on 3 and 4 ranks, 1001 elements (uneven chunks): every element is the sum"
  "owner|1|the reduce-scatter alone leaves member r with chunk r summed (ZeRO's shard), on 3 ranks"
  "bytes|2|every rank sends and receives the formula's bytes, 2(N-1)/N × payload: 4 ranks even, 3 ranks uneven"
  "curve|2|3 data-parallel ranks with ZeRO-1 train the reference loss curve bit for bit"
  "ledger|1|that run's ring bytes equal the formulas (plan --ledger)"
)
LAB_RUNS=(zero1_dp3)
LAB_RUN_zero1_dp3="3 --zero 1 --global-batch 6"

# ring_run NP ELEMENTS: shardlab ring once per grading; RING: its output.
ring_run() {
  RING=$LAB_WORK/ring_$1_$2.log
  LOG=$RING
  if [ ! -e "$RING.done" ]; then
    mpi "$1" "$BUILD_DIR/shardlab" ring --elements "$2" --dtype f64 --repeat 1
    echo "$WHY" >"$RING.why"
    touch "$RING.done"
  fi
  grep -q '^result:' "$RING" && return 0
  say "$1 ranks: $(cat "$RING.why")"
  return 1
}
ring_sums() {  # NP ELEMENTS
  ring_run "$1" "$2" || return 1
  grep -q '^sums: PASS' "$RING" && return 0
  say "$1 ranks: $(grep -m1 -E '^  rank [0-9]+: element' "$RING" | sed 's/^ *//')"
  return 1
}
check_sums2() { ring_sums 2 1000; }
check_sums34() { ring_sums 3 1001 && ring_sums 4 1001 && say "3 and 4 ranks: every element right"; }
ring_bytes() {  # NP ELEMENTS
  ring_run "$1" "$2" || return 1
  grep -q '^bytes: PASS' "$RING" && return 0
  say "$1 ranks, $2 f64 elements: $(awk '$1 ~ /^[0-9]+$/ && NF >= 6 && ($2 != $3 || $4 != $5) {printf "rank %s sent %s B (formula %s), received %s B (formula %s); ", $1, $2, $3, $4, $5}' "$RING")"
  return 1
}
check_owner() {
  ring_run 3 1001 || return 1
  grep -q '^reduce-scatter: PASS' "$RING" && return 0
  say "3 ranks: $(grep -m1 -E '^  rank [0-9]+: after the reduce-scatter' "$RING" | sed 's/^ *//')"
  return 1
}
check_bytes() { ring_bytes 4 1000 && ring_bytes 3 1001; }
check_curve() { curve_check zero1_dp3; }
check_ledger() { ledger_check zero1_dp3; }
