#!/usr/bin/env bash
# The command line itself: every command's --help, train's grouped help with defaults, the --config
# round trip (a run's config.toml reproduces it bit for bit; flags given override it; a bad config
# file is one clear error), compare of a resumed run against the uninterrupted one, eval's splits (the
# validation split by default, the trainer's own), the pictures of plot and schedule
# (tests/cli/support/svg_check.py: a legend below the plot and inside the width; cell labels that fit),
# bench in f64, and `make run`'s layout (every core, a divisor of the default global batch).
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"

# ---------------------------------------------------------------- help
"$S" --help >"$tmp/help" 2>&1
rc=$?
missing=""
for c in train eval sample compare plan plot trace ring mlp-split ring-attention moe-layer schedule bench swamping; do
  grep -qE "^  $c " "$tmp/help" || missing="$missing $c"
done
if [ $rc = 0 ] && [ -z "$missing" ]; then ok "shardlab --help lists every command"; else fail "shardlab --help lists every command" "exit $rc, missing:$missing"; fi
for c in train eval sample compare plan plot trace ring mlp-split ring-attention moe-layer schedule bench swamping; do
  "$S" $c --help >"$tmp/h_$c" 2>"$tmp/h_$c.err"
  rc=$?
  if [ $rc = 0 ] && grep -q "^Usage: shardlab $c" "$tmp/h_$c" && [ ! -s "$tmp/h_$c.err" ]; then
    ok "shardlab $c --help: usage on stdout, exit 0"
  else
    fail "shardlab $c --help: usage on stdout, exit 0" "exit $rc: $(head -n 2 "$tmp/h_$c" "$tmp/h_$c.err" | tr '\n' '|')"
  fi
done
groups=$(grep -E '^[A-Z][a-z]+:$' "$tmp/h_train" | tr -d ':' | tr '\n' ' ')
if [ "$groups" = "Options Model Batch Optimizer Precision Activations Layout Run Outputs " ]; then
  ok "train --help groups its flags: $groups"
else
  fail "train --help groups its flags (model, batch, optimizer, precision, activations, layout, run, outputs)" "groups: $groups"
fi
if grep -qE -- '--layers INT=4 ' "$tmp/h_train" && grep -qE -- '--lr NUMBER=0.004 ' "$tmp/h_train" &&
   grep -qE -- '--optimizer adamw\|sgd=adamw' "$tmp/h_train" && grep -q -- '--config FILE' "$tmp/h_train"; then
  ok "train --help shows defaults and --config"
else
  fail "train --help shows defaults and --config" "$(grep -E -- '--layers|--lr |--config' "$tmp/h_train" | tr '\n' '|')"
fi

# ---------------------------------------------------------------- --config round trip
M=(--layers 2 --hidden 64 --heads 4 --seq 32 --micro-batch 2 --global-batch 4 --eval-every 3 --eval-windows 4
   --progress none --data "$tmp/small.txt")
strip_ms() { cut -d, -f1-4,6 "$1"; }
"$S" train "${M[@]}" --steps 6 --lr 0.00123456789012345 --dropout 0.1 --seed 77 --weight-decay 0.03 --out "$tmp/A" >"$tmp/A.log" 2>&1
if [ -f "$tmp/A/config.toml" ] && grep -q '^lr = 0.00123456789012345$' "$tmp/A/config.toml" &&
   grep -q '^# out = ' "$tmp/A/config.toml"; then
  ok "a run writes DIR/config.toml: every flag, exact numbers, the output location commented out"
else
  fail "a run writes DIR/config.toml" "$(last "$tmp/A.log") $(grep -E '^lr|out' "$tmp/A/config.toml" 2>/dev/null | tr '\n' '|')"
fi
"$S" train --config "$tmp/A/config.toml" --out "$tmp/B" >"$tmp/B.log" 2>&1
if [ -f "$tmp/B/loss.csv" ] && diff <(strip_ms "$tmp/A/loss.csv") <(strip_ms "$tmp/B/loss.csv") >/dev/null; then
  ok "train --config A/config.toml reproduces A's loss.csv bit for bit ($(($(wc -l <"$tmp/B/loss.csv") - 1)) steps)"
else
  fail "train --config A/config.toml reproduces A's loss.csv bit for bit" "$(last "$tmp/B.log")"
fi
"$S" train --config "$tmp/A/config.toml" --steps 3 --out "$tmp/C" >"$tmp/C.log" 2>&1
if [ "$(($(wc -l <"$tmp/C/loss.csv" 2>/dev/null || echo 0) - 1))" = 3 ] && grep -q '^steps = 3$' "$tmp/C/config.toml"; then
  ok "flags on the command line override the config file (--steps 3)"
else
  fail "flags on the command line override the config file (--steps 3)" "$(last "$tmp/C.log")"
fi
bad_config() {  # bad_config NAME PATTERN FILE
  "$S" train --config "$3" --out "$tmp/never" >"$tmp/bc.out" 2>"$tmp/bc.err"
  local rc=$?
  if [ $rc = 2 ] && [ "$(wc -l <"$tmp/bc.err")" = 1 ] && grep -Eq "$2" "$tmp/bc.err" && [ ! -e "$tmp/never" ]; then
    ok "train --config $1: one error line, exit 2"
  else
    fail "train --config $1: one error line, exit 2" "exit $rc: $(head -c 300 "$tmp/bc.err" | tr '\n' '|')"
  fi
}
printf 'layers = 2\nbogus = 3\n' >"$tmp/unknown.toml"
printf 'layers = two\n' >"$tmp/nonint.toml"
printf 'lr = nan\n' >"$tmp/nan.toml"
bad_config "with an unknown key" "bogus" "$tmp/unknown.toml"
bad_config "with a non-integer --layers" "layers" "$tmp/nonint.toml"
bad_config "with lr = nan" "lr.*finite" "$tmp/nan.toml"
bad_config "of a missing file" "does not exist" "$tmp/nope.toml"
bad_config "of a directory" "is a directory" "$tmp"
bad_config "of /dev/zero" "not a regular file" /dev/zero

# ---------------------------------------------------------------- compare a resumed run
"$S" train "${M[@]}" --steps 6 --save "$tmp/ck" --save-every 3 --out "$tmp/full" >"$tmp/full.log" 2>&1
"$S" train --resume "$tmp/ck/step_000003" --steps 6 --progress none --out "$tmp/resumed" >"$tmp/res.log" 2>&1
"$S" compare "$tmp/full" "$tmp/resumed" --rtol 0 >"$tmp/cmp" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "comparing the 3 steps both runs logged (4..6)" "$tmp/cmp" && grep -q "bit-identical" "$tmp/cmp"; then
  ok "compare of a resumed run with the uninterrupted one: the 3 shared steps, bit-identical"
else
  fail "compare of a resumed run with the uninterrupted one" "exit $rc: $(tr '\n' '|' <"$tmp/cmp" | head -c 300)"
fi
mkdir -p "$tmp/other"
printf 'step,loss,grad_norm,lr,ms,val_loss\n9,1,1,1,1,\n' >"$tmp/other/loss.csv"
"$S" compare "$tmp/full" "$tmp/other" >"$tmp/cmp2" 2>&1
rc=$?
if [ $rc = 2 ] && grep -q "share no step" "$tmp/cmp2"; then ok "compare of runs that share no step: an error"; else fail "compare of runs that share no step: an error" "exit $rc: $(tr '\n' '|' <"$tmp/cmp2")"; fi

# ---------------------------------------------------------------- eval's splits
ev() { "$S" eval --load "$tmp/ck" --data "$tmp/small.txt" --progress none "$@" 2>&1 | grep '^mean loss'; }
windows() { sed -n 's/.* over \([0-9]*\) windows\{0,1\} .*/\1/p' <<<"$1"; }
val=$(ev) train=$(ev --split train) all=$(ev --split all)
nv=$(windows "$val") nt=$(windows "$train") na=$(windows "$all")
if grep -q "of the validation split of $tmp/small.txt" <<<"$val" && grep -q "of the train split" <<<"$train" &&
  grep -q "of all of" <<<"$all" && [ -n "$nv" ] && [ -n "$nt" ] && [ -n "$na" ] && [ "$nv" -lt "$na" ] &&
  [ "$nt" -lt "$na" ] && [ $((nv + nt)) -le "$na" ]; then
  ok "eval scores the validation split by default ($nv windows; --split train $nt, --split all $na), saying which"
else
  fail "eval scores the validation split by default, saying which and how many windows" "'$val' | '$train' | '$all'"
fi
# The trainer's split: the default's first 4 windows are the run's validation loss at its last step.
ev4=$(ev --max-windows 4 | awk '{print $3}') run_val=$(awk -F, 'END {print $6}' "$tmp/full/loss.csv")
if python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 1e-6 * abs(b) + 5e-7 else 1)' \
  "$ev4" "$run_val" 2>/dev/null; then
  ok "eval --max-windows 4 of the run's checkpoint ($ev4) = the run's val_loss at step 6 ($run_val): the same split"
else
  fail "eval --max-windows 4 = the run's val_loss at step 6 (the trainer's split)" "eval '$ev4', run '$run_val'"
fi

# ---------------------------------------------------------------- pictures
svg_check() {  # svg_check NAME KIND ARGS...: tests/cli/support/svg_check.py KIND ARGS passes
  local name=$1 out
  shift
  if out=$(python3 tests/cli/support/svg_check.py "$@" 2>&1); then ok "$name"; else fail "$name" "$out"; fi
}
long=$tmp/a_run_directory_named_at_length_by_someone_who_likes_long_names_pp4_interleaved_v2_seed7
cp -r "$tmp/A" "$long"
if "$S" plot "$tmp/A" "$tmp/B" "$long" --out "$tmp/plot.svg" >"$tmp/plot.log" 2>&1; then
  svg_check "plot of 3 runs (one with a 90-character name): the legend below the plot area, inside the width" \
    legend "$tmp/plot.svg"
else
  fail "plot of 3 runs" "$(last "$tmp/plot.log")"
fi
for s in "--virtual-stages 2" "--virtual-stages 4 --micro-batches 16"; do
  if "$S" schedule --schedule interleaved $s --svg "$tmp/sched.svg" >"$tmp/sched.log" 2>&1 </dev/null; then
    svg_check "schedule --schedule interleaved $s --svg: every cell's label fits its cell, none overlap" \
      cells "$tmp/sched.svg"
  else
    fail "schedule --schedule interleaved $s --svg" "$(last "$tmp/sched.log")"
  fi
  rm -f "$tmp/sched.svg"
done

# ---------------------------------------------------------------- bench in f64
"$S" bench --layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --steps 1 --dtype f64 >"$tmp/bench" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "model states 32 B/param" "$tmp/bench" && grep -q "dgemm" "$tmp/bench"; then
  ok "bench --dtype f64 trains in double (32 B/param of AdamW states, against dgemm)"
else
  fail "bench --dtype f64 trains in double" "exit $rc: $(tr '\n' '|' <"$tmp/bench")"
fi

# ---------------------------------------------------------------- make run's layout
cores=$(getconf _NPROCESSORS_ONLN)  # not nproc: it follows OMP_NUM_THREADS, which is 1 here
want=$(n=$cores; while [ $((32 % n)) -ne 0 ]; do n=$((n - 1)); done; echo $n)
make -n run >"$tmp/make_run" 2>/dev/null  # into a file: grep -q would close the pipe on make (pipefail)
if grep -q "mpirun.sh -np $want build/shardlab train --micro-batch \$((32 / $want))" "$tmp/make_run"; then
  ok "make run trains data parallel on $want ranks ($cores cores; a divisor of the global batch 32)"
else
  fail "make run trains data parallel on every core" "$(grep -m1 train "$tmp/make_run")"
fi

[ "$fails" = 0 ]
