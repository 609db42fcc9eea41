#!/usr/bin/env bash
# Seams (docs/architecture.md): a textbook piece alone in one file, replaced by a build flag, nothing in src/
# edited. `make seam SEAM=src/comm/ring_steps.cpp WITH=FILE` links shardlab and its tests with another
# implementation of the ring's steps:
#   - tests/seams/ring_steps_traced.cpp (the steps derived by following the chunks, not by the closed forms):
#     the ring's MPI tests pass on 3 and 4 ranks, and 3 data-parallel ranks with ZeRO-1 train the same curve as
#     shardlab's own build, bit for bit (compare --rtol 0);
#   - the control, tests/seams/ring_steps_broken.cpp (the all-gather receives the wrong chunk): the ring's
#     MPI tests fail and so does training's comparison — proof the build really runs the replacement.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # mpi, run, compare_runs

R=(--layers 2 --hidden 32 --heads 2 --seq 32 --dtype f64 --dropout 0.1 --steps 4 --micro-batch 2 --global-batch 6
   --eval-windows 0 --progress none --data "$tmp/small.txt")
D=$tmp/runs
mkdir -p "$D"
run "setup: shardlab's own build, 3 ranks, ZeRO-1" 3 "$D/own" --zero 1

for impl in traced broken; do
  if ! make -s seam SEAM=src/comm/ring_steps.cpp WITH=tests/seams/ring_steps_$impl.cpp >"$D/$impl.build" 2>&1; then
    fail "setup: make seam builds ring_steps_$impl" "$(grep -m1 -E 'error|Error' "$D/$impl.build")"
  fi
  B=build/seams/ring_steps_$impl
  for np in 3 4; do
    # A wrong ring leaves the ranks in different collectives: the watchdog ends that in seconds, not minutes.
    SHARDLAB_COMM_TIMEOUT=10 mpi "$np" "$B/mpi_tests" --use-colour no "[ring]~[large]" >"$D/$impl.ring$np" 2>&1
    rc=$?
    case "$impl:$rc" in
      traced:0) ok "ring_steps_traced: the ring's MPI tests pass on $np ranks" ;;
      traced:*) fail "ring_steps_traced: the ring's MPI tests pass on $np ranks" "exit $rc: $(grep -m1 -E 'FAILED|error' "$D/$impl.ring$np")" ;;
      broken:0) fail "control: ring_steps_broken fails the ring's MPI tests on $np ranks" "they passed" ;;
      *) ok "control: ring_steps_broken fails the ring's MPI tests on $np ranks ($(grep -m1 -oE 'FAILED|deadlock' "$D/$impl.ring$np" || echo "exit $rc"))" ;;
    esac
  done
  mpi 3 "$B/shardlab" train "${R[@]}" --zero 1 --out "$D/$impl" >"$D/$impl.log" 2>&1
  if [ "$impl" = traced ]; then
    compare_runs "ring_steps_traced trains shardlab's curve bit for bit (3 ranks, ZeRO-1)" "$D/own" "$D/$impl" --rtol 0
  elif "$S" compare "$D/own" "$D/$impl" --rtol 0 >"$D/$impl.cmp" 2>&1; then
    fail "control: training with ring_steps_broken differs from shardlab's own" "compare passed"
  else
    ok "control: training with ring_steps_broken differs from shardlab's own ($(grep -m1 -oE 'max rel diff [^;]*|error.*' "$D/$impl.cmp" || tail -n 1 "$D/$impl.log"))"
  fi
done
[ "$fails" = 0 ]
