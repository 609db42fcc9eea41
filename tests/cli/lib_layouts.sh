# Shared by the layout tests (tests/cli/pipeline.sh, tensor_parallel.sh; sourced after lib.sh, not run):
# mpirun must exist, and helpers that train the caller's base flags R (an array) on N ranks and compare.
if ! command -v mpirun >/dev/null 2>&1; then echo "FAIL - mpirun exists (no OpenMPI: make deps installs it)"; exit 1; fi
mpi() { timeout -k 5 60 bash scripts/mpirun.sh -np "$@" </dev/null; }  # mpi N CMD...: 124/137 = hung

# run NAME NP DIR FLAGS...: train on NP ranks (1: no mpirun) with --out DIR; FAIL and return 1 unless exit 0.
run() {
  local name=$1 np=$2 dir=$3 rc
  shift 3
  if [ "$np" = 1 ]; then
    timeout -k 5 60 "$S" train "${R[@]}" "$@" --out "$dir" >"$dir.log" 2>&1 </dev/null
  else
    mpi "$np" "$S" train "${R[@]}" "$@" --out "$dir" >"$dir.log" 2>&1
  fi
  rc=$?
  if [ "$rc" != 0 ]; then fail "$name" "exit $rc: $(last "$dir.log")"; return 1; fi
  return 0
}

# compare_runs NAME REF RUN [--rtol X]: shardlab compare passes (steps matched by number).
compare_runs() {
  local name=$1 ref=$2 run=$3
  shift 3
  if "$S" compare "$ref" "$run" "$@" >"$run.cmp" 2>&1; then
    ok "$name ($(grep -o 'max rel diff .*' "$run.cmp"))"
  else
    fail "$name" "$(grep -E 'max rel|error|FAIL' "$run.cmp" | tail -n 1)"
  fi
}

# steps_are NAME DIR FIRST LAST: DIR/loss.csv holds exactly steps FIRST..LAST, each once, finite losses.
steps_are() {
  local name=$1 dir=$2 steps bad
  steps=$(tail -n +2 "$dir/loss.csv" 2>/dev/null | cut -d, -f1 | tr '\n' ' ')
  bad=$(awk -F, 'NR > 1 && $2 !~ /^[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?$/ { print "step " $1 ": " $2 }' "$dir/loss.csv" | head -n 2)
  if [ "$steps" = "$(seq "$3" "$4" | tr '\n' ' ')" ] && [ -z "$bad" ]; then
    ok "$name: loss.csv holds steps $3..$4, finite"
  else
    fail "$name: loss.csv holds steps $3..$4, finite" "steps: $steps; $bad"
  fi
}
