# Shared by the suites of hostile input (sourced after lib.sh, not run): snapshot DIR… (every entry's type, path,
# link target and every regular file's sha256), crash_re, refused NAME CODES PATTERN [KEEP_DIR…] -- CMD… (a
# refusal: one shardlab error line, the files kept), mpi_refused (the same under scripts/mpirun.sh -np 2, OpenMPI's
# exit banner aside) and runs NAME CMD… (exit 0 within 60 s).
# Every entry's type, path and symlink target, and every regular file's sha256 (never reads a FIFO or a device).
snapshot() {
  local d
  for d in "$@"; do
    (cd "$d" 2>/dev/null && find . -printf '%y %p %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
  done
}
crash_re='terminate called|what\(\)|Assertion|Aborted|core dumped|Segmentation|bad_alloc'
# refused NAME CODES PATTERN [KEEP_DIR...] -- CMD...: an exit code among CODES within 20 s, exactly one stderr
# line that starts with "shardlab", says "error" and matches PATTERN, no crash dump, KEEP_DIRs unchanged.
refused() {
  local name=$1 codes=$2 pattern=$3 keep=() before rc line why=()
  shift 3
  while [ "$1" != -- ]; do keep+=("$1"); shift; done
  shift
  before=$(snapshot ${keep[@]+"${keep[@]}"})
  timeout 20 "$@" >"$tmp/r.out" 2>"$tmp/r.err" </dev/null
  rc=$?
  line=$(head -n 1 "$tmp/r.err")
  if [ $rc = 124 ]; then why+=("no exit within 20 s")
  elif [[ " $codes " != *" $rc "* ]]; then why+=("exit $rc, expected ${codes// / or }"); fi
  [ "$(wc -l <"$tmp/r.err")" = 1 ] || why+=("$(wc -l <"$tmp/r.err") stderr lines: $(head -c 300 "$tmp/r.err" | tr '\n' '|')")
  [[ "$line" == shardlab* && "$line" == *error* ]] || why+=("not a shardlab error line: '${line:0:200}'")
  grep -Eq -- "$pattern" "$tmp/r.err" || why+=("no /$pattern/ in '${line:0:300}'")
  if grep -Eq "$crash_re" "$tmp/r.err" "$tmp/r.out"; then why+=("crash dump or raw exception"); fi
  [ "$before" = "$(snapshot ${keep[@]+"${keep[@]}"})" ] ||
    why+=("FILES CHANGED: $(diff <(echo "$before") <(snapshot ${keep[@]+"${keep[@]}"}) | grep '^[<>]' | head -n 3 | tr '\n' '|')")
  if [ ${#why[@]} = 0 ]; then ok "$name"; else fail "$name" "$(printf '%s; ' "${why[@]}" | sed 's/; $//')"; fi
}
runs() {  # runs NAME CMD...: exit 0 within 60 s
  local name=$1
  shift
  if timeout 60 "$@" >"$tmp/ok.log" 2>&1 </dev/null; then ok "$name"; else fail "$name" "exit $?: $(last "$tmp/ok.log")"; fi
}
# mpi_refused NAME CODES PATTERN [KEEP_DIR...] -- CMD...: under mpirun -np 2, an exit code among CODES within 30 s
# and exactly one line saying "error" in all of the job's output (OpenMPI's own exit banner says none).
mpi_refused() {
  local name=$1 codes=$2 pattern=$3 keep=() before rc n banner why=()
  shift 3
  while [ "$1" != -- ]; do keep+=("$1"); shift; done
  shift
  before=$(snapshot ${keep[@]+"${keep[@]}"})
  timeout 30 bash scripts/mpirun.sh -np 2 "$@" >"$tmp/m.out" 2>"$tmp/m.err" </dev/null
  rc=$?
  n=$(cat "$tmp/m.out" "$tmp/m.err" | grep -ci error)
  banner=$(cat "$tmp/m.out" "$tmp/m.err" | grep -cv '^shardlab')
  if [ $rc = 124 ]; then why+=("no exit within 30 s")
  elif [[ " $codes " != *" $rc "* ]]; then why+=("exit $rc, expected ${codes// / or }"); fi
  [ "$n" = 1 ] || why+=("$n lines say error: $(grep -hi error "$tmp/m.out" "$tmp/m.err" | head -n 3 | tr '\n' '|')")
  grep -Eq -- "$pattern" "$tmp/m.err" || why+=("no /$pattern/ in: $(grep -hi error "$tmp/m.err" | head -c 300)")
  if grep -Eq "$crash_re" "$tmp/m.err" "$tmp/m.out"; then why+=("crash dump or raw exception"); fi
  [ "$before" = "$(snapshot ${keep[@]+"${keep[@]}"})" ] || why+=("FILES CHANGED")
  if [ ${#why[@]} = 0 ]; then ok "$name (exit $rc; plus $banner lines of OpenMPI's exit banner)"
  else fail "$name" "$(printf '%s; ' "${why[@]}" | sed 's/; $//')"; fi
}
