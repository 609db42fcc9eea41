#!/usr/bin/env bash
# What shardlab promises never to lose or hang on, each family of failure tried on several members:
#  (1) a run writes only where its own command line says, never over another run's files (--out, --save),
#      never over its own inputs, never twice at once (locks), finds a bad output location before step 1,
#      keeps a loadable checkpoint at every instant, and prunes with --keep-last;
#  (2) impossible sizes are refused before anything is allocated, with both numbers;
#  (3) inputs that are not what they claim (devices, FIFOs, directories, checkpoints whose metadata lies
#      or whose weights are not finite, NaN/Inf in any float flag of any command) get one sentence;
#  (4) long or stuck work says what it is doing: eval shows progress; a stopped rank is named.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
started=()
cleanup() {
  local p
  for p in ${started[@]+"${started[@]}"}; do kill -9 "$p" 2>/dev/null; done
  for p in $(pgrep -f "$tmp/" 2>/dev/null); do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

M=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 2 --eval-windows 2 --progress none
   --data "$tmp/small.txt")
snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }
# refused NAME PATTERN DIR_TO_KEEP -- CMD...: exit 2 (bad flags or configuration) or 1 (a bad file), one
# error line matching PATTERN, DIR_TO_KEEP unchanged.
refused() {
  local name=$1 pattern=$2 keep=$3 before rc
  shift 4
  before=$(snapshot "$keep" 2>/dev/null)
  timeout 60 "$@" >"$tmp/r.out" 2>"$tmp/r.err" </dev/null
  rc=$?
  if { [ $rc = 2 ] || [ $rc = 1 ]; } && [ "$(wc -l <"$tmp/r.err")" = 1 ] && grep -Eq "$pattern" "$tmp/r.err" &&
     [ "$before" = "$(snapshot "$keep" 2>/dev/null)" ]; then
    ok "$name"
  else
    fail "$name" "exit $rc: $(head -c 300 "$tmp/r.err" | tr '\n' '|')$([ "$before" = "$(snapshot "$keep" 2>/dev/null)" ] || echo ' FILES CHANGED')"
  fi
}
runs() {  # runs NAME CMD...: exit 0
  local name=$1
  shift
  if timeout 60 "$@" >"$tmp/ok.log" 2>&1 </dev/null; then ok "$name"; else fail "$name" "exit $?: $(last "$tmp/ok.log")"; fi
}

# ---------------------------------------------------------------- (1) never overwrite or lose
"$S" train "${M[@]}" --steps 4 --save-every 2 --out "$tmp/A" --save "$tmp/A/ck" >/dev/null 2>&1 ||
  fail "setup: run A" "$(last "$tmp/A.log")"
a_before=$(snapshot "$tmp/A")
runs "(1) --resume without --out or --save trains" "$S" train --resume "$tmp/A/ck/step_000002" --steps 4 --progress none
if [ "$a_before" = "$(snapshot "$tmp/A")" ]; then
  ok "(1) ... and writes nothing: the checkpoint's run directory A and its checkpoints are byte-identical"
else
  fail "(1) --resume without --out writes nothing" "A changed: $(diff <(echo "$a_before") <(snapshot "$tmp/A") | head -n 2 | tr '\n' '|')"
fi
refused "(1) --out holding another run's files: refused (new directory or --overwrite)" "new directory.*--overwrite" "$tmp/A" -- \
  "$S" train "${M[@]}" --steps 2 --out "$tmp/A"
refused "(1) --out holding another run's files, with a different seed: refused" "another|holds" "$tmp/A" -- \
  "$S" train "${M[@]}" --steps 2 --seed 9 --out "$tmp/A"
refused "(1) --save holding another run's checkpoints: refused" "checkpoints of another run.*--overwrite" "$tmp/A" -- \
  "$S" train "${M[@]}" --steps 2 --seed 9 --save "$tmp/A/ck"
refused "(1) a resume from step 2 into its own --save that holds step 4: refused (would replace step 4)" \
  "after the step this resume starts from \(2\)" "$tmp/A" -- \
  "$S" train --resume "$tmp/A/ck/step_000002" --steps 6 --save "$tmp/A/ck"
refused "(1) a resume from step 2 into its own --out that logged step 4: refused" "after the step this resume" "$tmp/A" -- \
  "$S" train --resume "$tmp/A/ck/step_000002" --steps 6 --out "$tmp/A"
runs "(1) a resume from the latest step into its own --out and --save continues the run" \
  "$S" train --resume "$tmp/A/ck" --steps 6 --out "$tmp/A" --save "$tmp/A/ck"
steps=$(tail -n +2 "$tmp/A/loss.csv" | cut -d, -f1 | tr '\n' ' ')
[ "$steps" = "1 2 3 4 5 6 " ] && [ "$(cat "$tmp/A/ck/latest")" = step_000006 ] &&
  ok "(1) ... its loss.csv holds steps 1..6 once, its latest names step 6" || fail "(1) continued run" "steps: $steps"
cp -r "$tmp/A" "$tmp/A_copy"
runs "(1) --overwrite replaces another run's files" "$S" train "${M[@]}" --steps 2 --seed 9 --out "$tmp/A_copy" --overwrite
[ "$(tail -n +2 "$tmp/A_copy/loss.csv" | wc -l)" = 2 ] && ok "(1) ... with a loss.csv of its own 2 steps" ||
  fail "(1) --overwrite" "$(cat "$tmp/A_copy/loss.csv" | tr '\n' '|')"
mkdir -p "$tmp/foreign" && echo "my notes" >"$tmp/foreign/loss.csv"
refused "(1) a loss.csv shardlab did not write is never replaced, even with --overwrite" "not written by shardlab" "$tmp/foreign" -- \
  "$S" train "${M[@]}" --steps 2 --out "$tmp/foreign" --overwrite
refused "(1) --data that is one of the run's own outputs: refused" "input of this run" "$tmp/A" -- \
  "$S" train "${M[@]}" --steps 2 --data "$tmp/A/loss.csv" --out "$tmp/A" --overwrite
refused "(1) --config that --out would replace: refused" "input of this run" "$tmp/A_copy" -- \
  "$S" train --config "$tmp/A_copy/config.toml" --out "$tmp/A_copy" --overwrite
echo "a file" >"$tmp/afile"
t0=$(date +%s)
refused "(1) an --save that cannot be created is found before step 1" "cannot create directory" "$tmp/A" -- \
  "$S" train "${M[@]}" --steps 200 --save "$tmp/afile/ck"
[ $(($(date +%s) - t0)) -le 5 ] && ! grep -q "^step" "$tmp/r.out" && ok "(1) ... without training a step" ||
  fail "(1) --save checked before step 1" "$(head -n 3 "$tmp/r.out" | tr '\n' '|')"
# Two runs into one directory at the same time: the second is refused while the first holds the lock.
"$S" train "${M[@]}" --steps 100000 --out "$tmp/L" >"$tmp/L.log" 2>&1 &
started+=($!)
for _ in $(seq 50); do [ -s "$tmp/L/loss.csv" ] && break; sleep 0.1; done
refused "(1) a second run into a directory another run is writing: refused (lock)" "another shardlab run is writing" "$tmp/A" -- \
  "$S" train "${M[@]}" --steps 2 --out "$tmp/L" --overwrite
kill -9 "${started[-1]}" 2>/dev/null
wait "${started[-1]}" 2>/dev/null
runs "(1) ... and after that run was killed (the kernel drops its lock) the directory is usable again" \
  "$S" train "${M[@]}" --steps 2 --out "$tmp/L" --overwrite
# plot --out: never an input, never a file it did not draw.
refused "(1) plot --out one of its inputs: refused" "inputs" "$tmp/A" -- "$S" plot "$tmp/A" --out "$tmp/A/loss.csv"
refused "(1) plot --out a file it did not draw: refused" "not a picture it drew" "$tmp/A" -- "$S" plot "$tmp/A" --out "$tmp/A/config.json"
runs "(1) plot --out a picture it drew before replaces it" "$S" plot "$tmp/A" "$tmp/A_copy" --out "$tmp/A/loss.svg"
# A re-save interrupted between its two renames: latest names step N, only step_N.old exists. Still loadable.
cp -r "$tmp/A/ck" "$tmp/half"
mv "$tmp/half/step_000006" "$tmp/half/step_000006.old"
runs "(1) a checkpoint whose re-save was cut between its renames still loads (eval)" "$S" eval --load "$tmp/half" --data "$tmp/small.txt" --progress none
runs "(1) ... and resumes" "$S" train --resume "$tmp/half" --steps 7 --progress none
runs "(1) --keep-last 2 with --save-every 1" "$S" train "${M[@]}" --steps 5 --save-every 1 --keep-last 2 --save "$tmp/K"
kept=$(cd "$tmp/K" && ls -d step_* | tr '\n' ' ')
[ "$kept" = "step_000004 step_000005 " ] && [ "$(cat "$tmp/K/latest")" = step_000005 ] &&
  ok "(1) ... keeps the 2 newest checkpoints: $kept" || fail "(1) --keep-last 2" "kept: $kept"

# ---------------------------------------------------------------- (2) impossible sizes
for bad in "--micro-batch 1000000 --global-batch 1000000" "--layers 100000" "--seq 100000" "--hidden 100000"; do
  t0=$(date +%s)
  # shellcheck disable=SC2086
  refused "(2) $bad: refused before allocating, with both numbers" "needs .* per rank.*available.*--force-memory" "$tmp/A" -- \
    "$S" train --steps 2 --progress none $bad
  [ $(($(date +%s) - t0)) -le 5 ] || fail "(2) $bad refused within 5 s" "took $(($(date +%s) - t0)) s"
done
# The estimate is the planner's; the run's ledger measures the same bytes.
"$S" train "${M[@]}" --steps 2 --out "$tmp/E" >"$tmp/E.log" 2>&1
est=$(sed -n 's/^memory: ~\([0-9.]*\) \(kB\|MB\).*/\1 \2/p' "$tmp/E.log")
peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"][0]["memory"]["total"]["peak"])' "$tmp/E/ledger.json" 2>/dev/null)
if python3 - "$est" "$peak" <<'EOF'; then ok "(2) the estimate ($est) is within 25% of the ledger's measured peak ($peak B)"; else fail "(2) estimate vs measured peak" "estimate '$est', peak '$peak'"; fi
import sys
v, unit = sys.argv[1].split(); est = float(v) * {"kB": 1e3, "MB": 1e6}[unit]; peak = float(sys.argv[2])
sys.exit(0 if abs(est - peak) <= 0.25 * peak else 1)
EOF

# ---------------------------------------------------------------- (3) inputs that are not what they claim
mkfifo "$tmp/fifo"
for d in /dev/zero "$tmp/fifo" "$tmp"; do
  refused "(3) --data $(basename "$d"): one sentence, no hang" "not a regular file|directory" "$tmp/A" -- \
    "$S" train "${M[@]}" --steps 2 --data "$d"
done
"$S" train "${M[@]}" --steps 2 --save "$tmp/C" >/dev/null 2>&1
edit_step() {  # edit_step CKPT_COPY PYTHON_EDIT: rewrites step_000002/meta.json
  python3 - "$1/step_000002/meta.json" "$2" <<'EOF'
import json, sys
p, edit = sys.argv[1], sys.argv[2]
m = json.load(open(p)); exec(edit); json.dump(m, open(p, "w"))
EOF
}
lying() {  # lying NAME PATTERN DIR: resume, eval and sample all refuse DIR
  refused "(3) $1: refused by --resume" "$2" "$3" -- "$S" train --resume "$3" --steps 4 --progress none
  refused "(3) $1: refused by eval" "$2" "$3" -- "$S" eval --load "$3" --data "$tmp/small.txt" --progress none
  refused "(3) $1: refused by sample" "$2" "$3" -- "$S" sample --load "$3" --tokens 3
}
cp -r "$tmp/C" "$tmp/C1" && edit_step "$tmp/C1" 'm["step"] = 3'
lying "meta.json step 3 in step_000002" "says step 3 but its directory is step_000002" "$tmp/C1"
cp -r "$tmp/C" "$tmp/C2" && edit_step "$tmp/C2" 'm["step"] = -2'
lying "a negative step" "non-negative integer" "$tmp/C2"
# A step directory renamed and its meta.json edited to match: the files' own metadata still says step 2.
cp -r "$tmp/C" "$tmp/C3" && mv "$tmp/C3/step_000002" "$tmp/C3/step_000005" && echo step_000005 >"$tmp/C3/latest"
python3 - "$tmp/C3/step_000005/meta.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1])); m["step"] = 5; json.dump(m, open(sys.argv[1], "w"))
EOF
lying "files of step 2 under a meta.json of step 5" "file of step 2" "$tmp/C3"
# A NaN weight, with meta.json's checksum updated to match (a diverged run saved by another tool).
cp -r "$tmp/C" "$tmp/C4"
python3 - "$tmp/C4/step_000002" <<'EOF'
import hashlib, json, os, struct, sys
d = sys.argv[1]; p = os.path.join(d, "model.safetensors"); b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); lo = h["lm_head.weight"]["data_offsets"][0]
b[8 + n + lo:8 + n + lo + 4] = struct.pack("<f", float("nan")); open(p, "wb").write(b)
m = json.load(open(os.path.join(d, "meta.json")))
m["files"]["model.safetensors"] = {"sha256": hashlib.sha256(b).hexdigest(), "bytes": len(b)}
json.dump(m, open(os.path.join(d, "meta.json"), "w"))
EOF
lying "a NaN weight (checksums consistent)" "NaN or Inf" "$tmp/C4"
# NaN and Inf in every float flag of every command (read from each command's --help).
for c in train eval sample compare plan plot trace ring bench swamping; do
  pos=()  # the positional arguments a command requires, so that parsing reaches the value
  case $c in compare) pos=("$tmp/A" "$tmp/A") ;; plot | trace) pos=("$tmp/A") ;; esac
  for f in $("$S" $c --help | grep -oE -- '--[a-z0-9-]+ NUMBER' | cut -d' ' -f1); do
    for v in nan inf; do
      "$S" $c ${pos[@]+"${pos[@]}"} $f $v >"$tmp/nan.out" 2>"$tmp/nan.err" </dev/null
      rc=$?
      if [ $rc = 2 ] && grep -q -- "$f" "$tmp/nan.err" && grep -q "finite" "$tmp/nan.err"; then nan_ok=$((${nan_ok:-0} + 1))
      else fail "(3) $c $f $v: refused naming the flag" "exit $rc: $(head -c 200 "$tmp/nan.err")"; fi
    done
  done
done
ok "(3) NaN and Inf refused, naming the flag, in all ${nan_ok:-0} float-flag cases of every command"

# ---------------------------------------------------------------- (4) long or stuck work
for i in 1 2 3 4 5 6 7 8; do cat data/corpus.txt; done >"$tmp/big.txt"
"$S" eval --load "$tmp/C" --data "$tmp/big.txt" --max-windows 4000 --batch 64 --progress lines >"$tmp/ev" 2>&1
rc=$?
if [ $rc = 0 ] && [ "$(grep -c '^batch ' "$tmp/ev")" -ge 5 ] && grep -q "over 4000 windows" "$tmp/ev"; then
  ok "(4) eval of a 14 MB file shows progress ($(grep -c '^batch ' "$tmp/ev") lines) and stops at --max-windows 4000"
else
  fail "(4) eval shows progress and honours --max-windows" "exit $rc: $(tail -n 3 "$tmp/ev" | tr '\n' '|')"
fi
# A stopped rank: SIGSTOP world rank 2 of 4 mid-step; the job must end within --comm-timeout + 5 s, naming it.
bash scripts/mpirun.sh -np 4 "$S" train "${M[@]}" --global-batch 4 --micro-batch 1 --steps 100000 --comm-timeout 5 \
  --progress lines --out "$tmp/stuck" >"$tmp/stuck.log" 2>&1 &
job=$!
started+=($job)
three_steps() { [ "$(tail -n +2 "$tmp/stuck/loss.csv" 2>/dev/null | wc -l)" -ge 3 ]; }
await_rank "$job" 2 30 three_steps
victim=$rank_pid
if [ -z "$victim" ]; then
  fail "(4) SIGSTOP one rank of 4" "rank 2's process: $rank_wait; $(last "$tmp/stuck.log")"
else
  kill -STOP "$victim"
  t0=$(date +%s)
  for _ in $(seq 200); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  took=$(($(date +%s) - t0))
  wait "$job" 2>/dev/null
  rc=$?
  kill -0 "$victim" 2>/dev/null && { kill -CONT "$victim"; kill -9 "$victim"; }
  lines=$(grep -c '^shardlab: error' "$tmp/stuck.log")
  if [ $rc != 0 ] && [ $took -le 10 ] && [ "$lines" = 1 ] && grep -q "^shardlab: error: rank 2 never arrived: ranks 0, 1 and 3 waited 5 s" "$tmp/stuck.log"; then
    ok "(4) SIGSTOP of rank 2 of 4: the job ended ${took} s later (timeout 5 s), one message names rank 2: $(grep '^shardlab: error' "$tmp/stuck.log" | cut -c1-110)…"
  else
    fail "(4) SIGSTOP of rank 2 of 4: ends within timeout + 5 s naming it" "rc $rc after ${took} s, $lines error lines: $(grep -E 'shardlab|error' "$tmp/stuck.log" | head -n 3 | tr '\n' '|')"
  fi
fi

[ "$fails" = 0 ]
