# Lab 08's checks (sourced by scripts/lab.sh, helpers in scripts/lab_checks.sh): flash attention's online
# softmax — one key block merged into the running (max, sum, output) of a block of query rows — written by
# the student in flash_merge.cpp, judged by training with --attention flash: against the naive attention
# (the same function, another order of additions: within f64 rounding), against the recorded flash curve
# (bit for bit), with full recompute, and by the activation memory against the formula.
LAB_TITLE="flash attention's online softmax"
LAB_SEAM=src/model/flash_merge.cpp
# 320 tokens: flash's key blocks hold 256 (src/model/flash_blocks.h), so later query rows merge two blocks.
LAB_BASE=(--layers 2 --hidden 32 --heads 2 --seq 320 --dtype f64 --dropout 0.1 --steps 4 --micro-batch 2
  --eval-windows 0 --progress none)
LAB_CHECKS=(
  "naive|3|flash attention trains the naive attention's curve within f64 rounding (rtol 1e-12)"
  "curve|3|flash attention trains the reference flash curve bit for bit"
  "recompute|1|flash with full recompute trains the reference curve bit for bit"
  "memory|1|the flash run's activations and bytes equal the formulas: no s × s term (plan --ledger)"
)
LAB_RUNS=(flash naive flash_recompute)
LAB_RUN_flash="1 --attention flash --global-batch 2"
LAB_RUN_naive="1 --attention naive --global-batch 2"
LAB_RUN_flash_recompute="1 --attention flash --recompute full --global-batch 2"
check_naive() { within_rounding naive flash naive flash; }
check_curve() { curve_check flash; }
check_recompute() { curve_check flash_recompute; }
check_memory() { ledger_check flash; }
