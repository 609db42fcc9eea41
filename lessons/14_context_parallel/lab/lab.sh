# Lab 14's checks (sourced by scripts/lab.sh, helpers in scripts/lab_checks.sh): ring attention's merge — one
# visiting K/V block's partial softmax (max, sum, output) folded into a block of query rows' running one —
# written by the student in ring_merge.cpp, judged by `shardlab ring-attention` (ring attention over 2 and 4 ranks
# against flash attention on the whole sequence: output, log-sum-exp, dQ, dK, dV, every element, f64; again with
# scores in the thousands, where e^score overflows) and by training with --cp 2: bit for bit against the recorded
# curve, and within f64 rounding of the single process.
LAB_TITLE="ring attention's merge"
LAB_SEAM=src/model/ring_merge.cpp
# 128 tokens over --cp 2 (zigzag): 4 chunks of 32, every rank's late chunk merges blocks from both ranks.
LAB_BASE=(--layers 2 --hidden 32 --heads 2 --seq 128 --dtype f64 --dropout 0.1 --steps 4 --micro-batch 2
  --attention flash --eval-windows 0 --progress none)
LAB_CHECKS=(
  "ring2|3|ring attention over 2 ranks, zigzag and contiguous: output, log-sum-exp, dQ, dK, dV equal one process's (f64, 1e-12)"
  "ring4|2|the same over 4 ranks"
  "logit|2|the same over 2 ranks with scores in the thousands (--logit-scale 1000): nothing overflows"
  "curve|2|the GPT with --cp 2 trains the reference curve bit for bit"
  "single|1|that curve equals the single process's within f64 rounding (rtol 1e-12)"
)
LAB_RUNS=(cp2)
LAB_RUN_cp2="2 --cp 2 --global-batch 2"
LAB_RUN_single="1 --global-batch 2"

# ring_attention NP SPLIT [FLAGS…]: `shardlab ring-attention` on NP ranks in f64; on a mismatch, the five verdicts
# and the first element past the tolerance. 128·NP tokens: every zigzag chunk 64 tokens, one block of query rows;
# the merge under test folds the ranks' blocks into each other, which happens at any length.
ring_attention() {
  local np=$1 split=$2 what
  shift 2
  what="$np ranks, $split${*:+, $(sed 's/--//g; s/-/ /g' <<<"$*")}"
  LOG=$LAB_WORK/ring_${np}_$split$(tr -d ' -' <<<"$*").log
  mpi "$np" "$BUILD_DIR/shardlab" ring-attention --split "$split" --dtype f64 --seq $((128 * np)) "$@" && return 0
  if grep -q '^result: MISMATCH' "$LOG"; then
    say "$what: $(awk '/max rel diff/ {printf "%s%s %s %s", n++ ? ", " : "", $1, $(NF-1), $NF == "PASS" ? "ok" : "FAIL"}' "$LOG")"
    say "$what — $(grep -m1 -E '^ +rank [0-9]+: .* first element past' "$LOG" | sed 's/^ *//')"
  else
    say "$what: $WHY"
  fi
  return 1
}
ring_check() {  # NP: both splits, each element within 1e-12 of the single process's
  ring_attention "$1" zigzag && ring_attention "$1" contiguous || return 1
  say "$1 ranks, zigzag and contiguous: $(grep -m1 '^result' "$LOG" | sed 's/^result: //')"
}
check_ring2() { ring_check 2; }
check_ring4() { ring_check 4; }
check_logit() {
  ring_attention 2 zigzag --logit-scale 1000 || return 1
  say "scores in the thousands: $(grep -m1 '^result' "$LOG" | sed 's/^result: //')"
}
check_curve() { curve_check cp2; }
check_single() { within_rounding single cp2 "one process" "cp 2"; }
