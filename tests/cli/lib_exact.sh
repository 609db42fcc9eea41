# Shared by the exact mode's suites (tests/cli/exact.sh, exact_cp.sh, exact_experts.sh; sourced after lib.sh and
# lib_layouts.sh, not run): the runs' directory $D, and `exact`, an --exact run that must equal a reference bit for bit.
D=$tmp/runs
mkdir -p "$D"

# exact NAME NP REF FLAGS...: an --exact run into $D/NAME (the caller's flags R, then FLAGS) that must equal $D/REF
# bit for bit (compare --rtol 0).
exact() {
  local name=$1 np=$2 ref=$3
  shift 3
  run "(1) $name" "$np" "$D/$name" --exact "$@" && compare_runs "(1) $name: bit for bit" "$D/$ref" "$D/$name" --rtol 0
}
