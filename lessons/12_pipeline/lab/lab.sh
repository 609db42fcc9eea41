# Lab 12's checks (sourced by scripts/lab.sh, helpers in scripts/lab_checks.sh): the order of each stage's
# forwards and backwards under 1F1B (and, a stretch, interleaved 1F1B), written by the student in
# stage_order.cpp. `shardlab schedule` plays the lists out — it refuses a list that deadlocks or skips a
# micro-batch — and measures the bubble and the stash; the pipeline executor trains with them.
LAB_TITLE="the 1F1B schedule"
LAB_SEAM=src/parallel/stage_order.cpp
LAB_BASE=(--layers 4 --hidden 32 --heads 2 --seq 32 --dtype f64 --dropout 0.1 --steps 4 --micro-batch 2
  --eval-windows 0 --progress none)
LAB_CHECKS=(
  "valid|2|1F1B runs on 4 stages with 8 micro-batches and with 2 (fewer than stages): no deadlock, all done"
  "bubble|2|1F1B's measured bubble equals the formula (p−1)/(m+p−1)"
  "stash|2|1F1B keeps p − s micro-batches' activations on stage s, no more (its point)"
  "curve|3|2 pipeline stages with 1F1B train the reference curve bit for bit"
  "interleaved|2|stretch: interleaved 1F1B (v = 2) is valid, its bubble is (p−1)/(v·m+p−1), and it trains the reference curve"
)
LAB_RUNS=(pp2_1f1b pp2_interleaved)
LAB_RUN_pp2_1f1b="2 --pp 2 --schedule 1f1b --global-batch 8"
LAB_RUN_pp2_interleaved="2 --pp 2 --schedule interleaved --virtual-stages 2 --global-batch 8"

schedule_run() {  # KIND P M [V]: shardlab schedule once; SCHED: its output
  SCHED=$LAB_WORK/schedule_$1_$2_$3_${4:-1}.log
  LOG=$SCHED
  [ -e "$SCHED.ok" ] && return 0
  if mpi 1 "$BUILD_DIR/shardlab" schedule --schedule "$1" --pp "$2" --micro-batches "$3" --virtual-stages "${4:-1}"; then
    touch "$SCHED.ok"
    return 0
  fi
  say "$1 on $2 stages, $3 micro-batches: $WHY"
  return 1
}
bubble_equal() {  # the measured bubble and the formula's, as printed
  local got want
  got=$(grep -m1 -oE 'bubble: [0-9.]+%' "$SCHED" | grep -oE '[0-9.]+%')
  want=$(grep -m1 -oE 'the formula: .* = [0-9.]+%' "$SCHED" | grep -oE '[0-9.]+%$')
  [ -n "$got" ] && [ "$got" = "$want" ] && return 0
  say "$(grep -m1 -oE 'bubble: .*' "$SCHED"): measured $got, formula $want"
  return 1
}
check_valid() { schedule_run 1f1b 4 8 && schedule_run 1f1b 4 2 && say "valid with m = 8 and m = 2"; }
check_bubble() { schedule_run 1f1b 4 8 && bubble_equal; }
check_stash() {
  schedule_run 1f1b 4 8 || return 1
  local got
  got=$(grep -m1 '^ *stash' "$SCHED" | grep -oE 'stage( [0-9]+)+' | cut -d' ' -f2-)
  [ "$got" = "4 3 2 1" ] && return 0
  say "micro-batches alive at once per stage: $got; 1F1B's p − s on 4 stages: 4 3 2 1"
  return 1
}
check_curve() { curve_check pp2_1f1b; }
check_interleaved() { schedule_run interleaved 2 4 2 && bubble_equal && curve_check pp2_interleaved; }
