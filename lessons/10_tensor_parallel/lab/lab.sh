# Lab 10's checks (sourced by scripts/lab.sh, helpers in scripts/lab_checks.sh): Megatron's f and g, written by
# the student in megatron_fg.cpp, judged by `shardlab mlp-split` (one MLP split over the ranks against the
# unsharded one, every element, and its all-reduce bytes) and by tensor-parallel training of the GPT.
LAB_TITLE="Megatron's f and g"
LAB_SEAM=src/parallel/megatron_fg.cpp
LAB_CHECKS=(
  "mlp|3|one MLP split over 2 ranks: outputs and gradients equal the unsharded MLP's, bytes = formula"
  "mlp4|1|the same over 4 ranks"
  "curve|3|the GPT with tensor parallelism over 2 ranks trains the reference curve bit for bit"
  "ledger|1|that run's bytes and memory equal the formulas (plan --ledger)"
)
LAB_RUNS=(tp2)
LAB_RUN_tp2="2 --tp 2 --global-batch 2"

mlp_check() {  # NP
  LOG=$LAB_WORK/mlp_$1.log
  mpi "$1" "$BUILD_DIR/shardlab" mlp-split --dtype f64
  grep -q '^result: the split MLP computes' "$LOG" && return 0
  if grep -q '^result:' "$LOG"; then
    say "$1 ranks — largest difference per tensor: $(grep -A1 'largest difference' "$LOG" | tail -n 1 | tr -s ' ')"
    say "$(grep -m2 -E '^  rank [0-9]+: (Z|dX)\[' "$LOG" | sed 's/^ *//' | tr '\n' ' ')"
    say "$(grep -m1 -oE 'communication.*' "$LOG")"
  else
    say "$1 ranks: $WHY"
  fi
  return 1
}
check_mlp() { mlp_check 2; }
check_mlp4() { mlp_check 4; }
check_curve() { curve_check tp2; }
check_ledger() { ledger_check tp2; }
