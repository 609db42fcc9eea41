#!/usr/bin/env bash
# Bad input to the CLI: every case must exit non-zero (2 for bad flags or config, 1 or 2 for bad
# files; never a signal), print exactly one stderr line that starts with "shardlab" and says
# "error", print no crash dump, and leave every existing file untouched (the whole work directory
# is hashed before and after each case). Also: a failed run never overwrites a previous run's
# --out files, a damaged checkpoint is refused with a checksum message and left byte-identical,
# and under MPI the error is printed once (rank 0) and the job ends instead of hanging.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"

W=$tmp/w      # everything the cases may (wrongly) touch
C=$tmp/cap    # captured stdout/stderr, outside W
mkdir -p "$W" "$C"


M=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 2 --eval-windows 4 --progress none)

# Directory list plus sha256 of every file under W.
snapshot() { (cd "$W" && find . -type d | sort && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }

# expect_error NAME CODES [PATTERN] -- CMD...   CODES: allowed exit codes, e.g. "2" or "1 2".
# PATTERN (optional, extended regex) must occur in the error line.
expect_error() {
  local name=$1 codes=$2 pattern="" why=()
  shift 2
  if [ "$1" != "--" ]; then pattern=$1; shift; fi
  shift
  local before after rc
  before=$(snapshot)
  "$@" >"$C/out" 2>"$C/err" </dev/null
  rc=$?
  after=$(snapshot)
  if [ "$rc" = 0 ]; then why+=("exit 0")
  elif [ "$rc" -ge 128 ]; then why+=("exit $rc: killed by a signal")
  elif [[ " $codes " != *" $rc "* ]]; then why+=("exit $rc, expected ${codes// / or }")
  fi
  local nerr first
  nerr=$(wc -l <"$C/err")
  first=$(head -n 1 "$C/err")
  [ "$nerr" = 1 ] || why+=("$nerr stderr lines, expected 1: $(head -c 300 "$C/err" | tr '\n' '|')")
  [[ "$first" == shardlab* && "$first" == *error* ]] || why+=("stderr line does not start with 'shardlab' and say 'error': '$first'")
  if [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$C/err"; then why+=("error does not match /$pattern/: '$first'"); fi
  if grep -Eiq 'terminate called|what\(\)|aborted|segmentation|core dumped|backtrace|sanitizer|stack trace' "$C/err" "$C/out"; then
    why+=("crash dump in output")
  fi
  [ "$before" = "$after" ] || why+=("files changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -n 3 | tr '\n' '|')")
  if [ ${#why[@]} = 0 ]; then ok "$name (exit $rc)"; else fail "$name" "$(printf '%s; ' "${why[@]}" | sed 's/; $//')"; fi
}

# Data files.
head -c 20000 data/corpus.txt >"$W/small.txt"
: >"$W/empty.txt"
head -c 300 data/corpus.txt >"$W/short.txt"   # --seq 32 needs at least 340 bytes
echo "not a directory" >"$W/afile"

# A real run R (the files a failed run must not overwrite) and real checkpoints.
if "$S" train "${M[@]}" --data "$W/small.txt" --steps 2 --out "$W/R" >"$C/out" 2>&1 && [ -f "$W/R/loss.csv" ]; then
  ok "setup: real run with --out R"
else
  fail "setup: real run with --out R" "$(tail -n 3 "$C/out" | tr '\n' '|')"
fi
for ck in good corrupt trunc; do
  "$S" train "${M[@]}" --data "$W/small.txt" --steps 2 --save "$W/ck_$ck" >"$C/out" 2>&1 ||
    fail "setup: 2-step train --save ck_$ck" "$(tail -n 3 "$C/out" | tr '\n' '|')"
done

# Flip one byte in the middle of model.safetensors; cut 10 bytes off optimizer.safetensors.
flip_byte() {  # flip_byte FILE OFFSET
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
mf=$W/ck_corrupt/step_000002/model.safetensors
if [ -f "$mf" ]; then
  h0=$(sha256sum <"$mf")
  flip_byte "$mf" $(($(stat -c %s "$mf") / 2))
  [ "$(sha256sum <"$mf")" != "$h0" ] || fail "setup: corrupt model.safetensors" "the byte flip changed nothing"
fi
of=$W/ck_trunc/step_000002/optimizer.safetensors
[ -f "$of" ] && truncate -s -10 "$of"
ck_sums=$tmp/ck.sha256
(cd "$W" && find ck_corrupt ck_trunc -type f -print0 | sort -z | xargs -0 -r sha256sum) >"$ck_sums"
r_sum=$(sha256sum <"$W/R/loss.csv" 2>/dev/null)

T=("$S" train "${M[@]}" --data "$W/small.txt" --steps 2 --out "$W/R")

# A failed run never overwrites a previous run's files.
"${T[@]}" --hidden 30 --heads 4 >/dev/null 2>&1
rc=$?
if [ "$rc" != 0 ] && [ -n "$r_sum" ] && [ "$(sha256sum <"$W/R/loss.csv")" = "$r_sum" ]; then
  ok "a bad-config run with --out R leaves R/loss.csv unchanged"
else
  fail "a bad-config run with --out R leaves R/loss.csv unchanged" "exit $rc, loss.csv sha256 $(sha256sum <"$W/R/loss.csv" | cut -c1-12) was ${r_sum:0:12}"
fi

# --- bad files
expect_error "train: nonexistent data file" "1 2" -- "$S" train "${M[@]}" --data "$W/nope.txt" --steps 2 --out "$W/R"
expect_error "train: empty data file" "1 2" -- "$S" train "${M[@]}" --data "$W/empty.txt" --steps 2 --out "$W/R"
expect_error "train: data too short for --seq" "1 2" -- "$S" train "${M[@]}" --data "$W/short.txt" --steps 2 --out "$W/R"
# --- bad config
expect_error "train: --hidden 30 not divisible by --heads 4" 2 -- "${T[@]}" --hidden 30 --heads 4
expect_error "train: --global-batch 3 not a multiple of --micro-batch 2" 2 -- "${T[@]}" --global-batch 3
for bad in "--layers 0" "--hidden -8" "--micro-batch 0" "--steps 0" "--seq 0"; do
  # shellcheck disable=SC2086
  expect_error "train: $bad" 2 -- "${T[@]}" $bad
done
expect_error "train: unknown flag --bogus" 2 -- "${T[@]}" --bogus 1
expect_error "train: flag missing its value (--steps at the end)" 2 -- "${T[@]}" --steps
expect_error "train: non-numeric value --lr abc" 2 -- "${T[@]}" --lr abc
expect_error "train: bad choice --optimizer adam" 2 -- "${T[@]}" --optimizer adam
expect_error "train: --mixed bf16 --dtype f64" 2 -- "${T[@]}" --mixed bf16 --dtype f64
expect_error "train: non-finite value --dropout nan" 2 -- "${T[@]}" --dropout nan
expect_error "train: non-finite value --lr inf" 2 -- "${T[@]}" --lr inf
expect_error "train: --out names a regular file" "1 2" -- "$S" train "${M[@]}" --data "$W/small.txt" --steps 2 --out "$W/afile"
expect_error "train: --save names a regular file (and --out R is left alone)" "1 2" -- "${T[@]}" --save "$W/afile"

# --- checkpoints
expect_error "train: --resume of a nonexistent directory" "1 2" -- "${T[@]}" --resume "$W/nockpt"
expect_error "train: --resume of a corrupted checkpoint" "1 2" "checksum" -- "${T[@]}" --resume "$W/ck_corrupt" --steps 4
expect_error "eval: --load of a corrupted checkpoint" "1 2" "checksum" -- "$S" eval --load "$W/ck_corrupt" --data "$W/small.txt"
expect_error "sample: --load of a corrupted checkpoint" "1 2" "checksum" -- "$S" sample --load "$W/ck_corrupt" --tokens 5
expect_error "train: --resume of a truncated checkpoint" "1 2" "truncat|size|checksum" -- "${T[@]}" --resume "$W/ck_trunc" --steps 4
if (cd "$W" && sha256sum --quiet -c "$ck_sums" >/dev/null 2>&1); then
  ok "damaged checkpoints are byte-identical after the failed loads"
else
  fail "damaged checkpoints are byte-identical after the failed loads" "sha256sum -c: $(cd "$W" && sha256sum --quiet -c "$ck_sums" 2>&1 | head -n 2 | tr '\n' '|')"
fi
expect_error "train: --resume with --steps 2, not beyond the checkpoint's step 2" 2 -- "${T[@]}" --resume "$W/ck_good" --steps 2
expect_error "train: --resume with --steps 1, before the checkpoint's step 2" 2 -- "${T[@]}" --resume "$W/ck_good" --steps 1
expect_error "train: --resume with a different --hidden" 2 -- "${T[@]}" --resume "$W/ck_good" --steps 4 --hidden 64

# --- other subcommands
expect_error "eval: no --load" 2 -- "$S" eval --data "$W/small.txt"
expect_error "sample: --load of a nonexistent directory" "1 2" -- "$S" sample --load "$W/nockpt" --tokens 5
expect_error "sample: --load of a run directory that is not a checkpoint" "1 2" -- "$S" sample --load "$W/R" --tokens 5
expect_error "compare: missing run directory" "1 2" -- "$S" compare "$W/R" "$W/norun"
expect_error "compare: one argument" 2 -- "$S" compare "$W/R"
expect_error "unknown subcommand" 2 -- "$S" frobnicate

# --- under MPI: the error once (rank 0), a non-zero exit, no hang
if command -v mpirun >/dev/null 2>&1; then
  mpi_case() {  # mpi_case NAME CMD...
    local name=$1 rc n
    shift
    timeout 60 bash scripts/mpirun.sh -np 2 "$@" >"$C/out" 2>"$C/err" </dev/null
    rc=$?
    n=$(cat "$C/out" "$C/err" | grep -c '^shardlab.*error')
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then fail "$name" "no exit within 60 s"
    elif [ "$rc" = 0 ]; then fail "$name" "exit 0"
    elif [ "$n" != 1 ]; then fail "$name" "$n shardlab error lines, expected 1: $(grep '^shardlab' "$C/err" | head -n 3 | tr '\n' '|')"
    else ok "$name (exit $rc)"
    fi
  }
  mpi_case "mpirun -np 2 train --hidden 30 --heads 4: one error, non-zero exit" \
    "$S" train "${M[@]}" --data "$W/small.txt" --steps 2 --hidden 30 --heads 4
  mpi_case "mpirun -np 2 eval --load of a nonexistent directory: one error, non-zero exit" \
    "$S" eval --load "$W/nockpt" --data "$W/small.txt"
else
  fail "MPI cases" "no mpirun (no OpenMPI: make deps installs it)"
fi

[ "$fails" = 0 ]
