# Lab 11's checks (sourced by scripts/lab.sh, helpers in scripts/lab_checks.sh): sequence parallelism's two
# conjugate pieces (all-gather along s entering a region, reduce-scatter along s leaving it, and their
# backwards), written by the student in megatron_fg.cpp, judged by training with tp 2 + SP: the loss curve
# bit for bit, the bytes and the activation memory against the formulas.
LAB_TITLE="sequence parallelism's gather and scatter"
LAB_SEAM=src/parallel/megatron_fg.cpp
LAB_CHECKS=(
  "curve|4|tensor + sequence parallel over 2 ranks trains the reference curve bit for bit"
  "ledger|2|that run's bytes and activation memory equal the formulas (plan --ledger)"
)
LAB_RUNS=(tp2_sp)
LAB_RUN_tp2_sp="2 --tp 2 --sequence-parallel --global-batch 2"
check_curve() { curve_check tp2_sp; }
check_ledger() { ledger_check tp2_sp; }
