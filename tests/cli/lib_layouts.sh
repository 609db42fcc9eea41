# Shared by the layout tests (tests/cli/pipeline.sh, tensor_parallel.sh; sourced after lib.sh, not run):
# mpirun must exist, and helpers that train the caller's base flags R (an array) on N ranks, compare
# runs, and check that bad flags are refused.
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

# bad NAME NP PATTERN FLAGS...: exit 2, exactly one stderr/stdout line naming shardlab — the error, from
# rank 0, matching PATTERN (extended regex) — and no crash dump. NP 0: the binary alone, without mpirun.
# Its files: $tmp/bad/.
bad() {
  local name=$1 np=$2 pattern=$3 rc why=() lines
  shift 3
  mkdir -p "$tmp/bad"
  if [ "$np" = 0 ]; then
    timeout -k 5 60 "$S" train "${R[@]}" --steps 2 "$@" --out "$tmp/bad/run" >"$tmp/bad/out" 2>&1 </dev/null
  else
    timeout -k 5 60 bash scripts/mpirun.sh --tag-output -np "$np" "$S" train "${R[@]}" --steps 2 "$@" --out "$tmp/bad/run" \
      >"$tmp/bad/out" 2>&1 </dev/null
  fi
  rc=$?
  [ "$rc" = 2 ] || why+=("exit $rc, expected 2$([ "$rc" = 124 ] || [ "$rc" = 137 ] && echo ': no exit within 60 s')")
  lines=$(grep 'shardlab' "$tmp/bad/out")
  if [ "$(grep -c 'shardlab' "$tmp/bad/out")" != 1 ]; then
    why+=("$(grep -c 'shardlab' "$tmp/bad/out") lines name shardlab, expected 1: $(echo "$lines" | head -n 4 | tr '\n' '|')")
  else
    grep -q 'error' <<<"$lines" || why+=("the line is no error: '$lines'")
    grep -Eq -- "$pattern" <<<"$lines" || why+=("error does not match /$pattern/: '$lines'")
    if [ "$np" != 0 ] && ! grep -q '^\[[0-9]*,0\]<stderr>:shardlab train: error' <<<"$lines"; then
      why+=("not rank 0's stderr: '$lines'")
    fi
  fi
  if grep -Eiq 'MPI_ABORT|segmentation|core dumped|terminate called' "$tmp/bad/out"; then
    why+=("crash dump: $(grep -Eih 'MPI_ABORT|segmentation|core dumped|terminate called' "$tmp/bad/out" | head -n 2 | tr '\n' '|')")
  fi
  local where="-np $np"
  [ "$np" = 0 ] && where="no mpirun"
  if [ ${#why[@]} = 0 ]; then
    ok "(3) $name ($where $*): exit 2, one error from rank 0: '$(sed 's/^\[[0-9,]*\]<stderr>://' <<<"$lines" | cut -c1-90)'"
  else
    fail "(3) $name ($where $*)" "$(printf '%s; ' "${why[@]}" | sed 's/; $//')"
  fi
}
