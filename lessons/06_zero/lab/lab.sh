# Lab 06's checks (sourced by scripts/lab.sh, helpers in scripts/lab_checks.sh): the optimizer step of a
# data-parallel rank under DP and ZeRO-1/2/3, written by the student in zero_step.cpp, judged by training on 2
# ranks — each strategy's loss curve bit for bit against the recorded one — and by the ledger's bytes.
LAB_TITLE="the ZeRO optimizer step"
LAB_SEAM=src/parallel/zero_step.cpp
LAB_CHECKS=(
  "dp|1|plain DP (no sharding) trains the reference curve bit for bit"
  "zero1|3|ZeRO-1 trains the reference curve bit for bit"
  "zero2|2|ZeRO-2 trains the reference curve bit for bit"
  "zero3|2|ZeRO-3 trains the reference curve bit for bit"
  "bf16|1|ZeRO-1 with bf16 weights and an fp32 master trains the reference curve bit for bit"
  "bytes|1|ZeRO-1's bytes and model states equal the formulas (plan --ledger)"
)
LAB_RUNS=(dp2 zero1_dp2 zero2_dp2 zero3_dp2 bf16_zero1_dp2)
LAB_RUN_dp2="2 --global-batch 4"
LAB_RUN_zero1_dp2="2 --global-batch 4 --zero 1"
LAB_RUN_zero2_dp2="2 --global-batch 4 --zero 2"
LAB_RUN_zero3_dp2="2 --global-batch 4 --zero 3"
LAB_RUN_bf16_zero1_dp2="2 --global-batch 4 --zero 1 --dtype f32 --mixed bf16"
check_dp() { curve_check dp2; }
check_zero1() { curve_check zero1_dp2; }
check_zero2() { curve_check zero2_dp2; }
check_zero3() { curve_check zero3_dp2; }
check_bf16() { curve_check bf16_zero1_dp2; }
check_bytes() { ledger_check zero1_dp2; }
