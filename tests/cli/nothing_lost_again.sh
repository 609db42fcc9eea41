#!/usr/bin/env bash
# Nothing lost, second pass: the families of failure an adversarial pass found past nothing_lost.sh, each with
# the cases found and others of the same family:
#  (1) a file shardlab did not write — or wrote and somebody changed since — is never replaced or removed,
#      --overwrite or not (io/owned_files.h); shardlab's own stale files are;
#  (2) a diverged step is never saved: --keep-last and `latest` keep the last good checkpoint (1 process,
#      pp 2, ZeRO-3 on 2 ranks);
#  (3) a resume trains on the checkpoint's data or says so: the same path holding other bytes is refused,
#      other data named with --data is trained on with a warning;
#  (4) a rank stopped during start-up (inside MPI_Init too, of 2 or 4) is named within the comm timeout in exactly
#      one line, never a hang, never a launcher crash report;
#  (5) a NUL byte in a text input (--config, loss.csv, ledger.json) is refused, never read as the end of a value;
#  (6) `shardlab trace` refuses spans no run writes and damaged files; (7) its per-step numbers stay inside the
#      steps;
#  (8) numbers in a ledger are range-checked before they are narrowed, and an activation item's totals must
#      agree with its size and count;
#  (9) running out of memory is one sentence from one rank; mlp-split checks memory before allocating;
#  (10) flash attention's curve is within tolerance of naive's, not bit for bit (as the README now says);
#  (11) beside a live run: a second run into its --out or --save is told another run is writing there (the lock
#      is taken before the files are judged), creating nothing; eval, sample and --resume of its checkpoints
#      while its --keep-last 1 prunes them every step all load (io/checkpoint.h CheckpointHold);
#  and lists of numbers (--pp-layers, --sizes-mb) take digits only, a bad step in loss.csv is quoted as written.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
started=()
cleanup() {
  local p
  for p in ${started[@]+"${started[@]}"}; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
W=$tmp/w
mkdir -p "$W"
T=(--layers 4 --hidden 64 --heads 4 --seq 32 --micro-batch 2 --global-batch 16 --progress none --eval-windows 0
   --data "$tmp/small.txt")
sums() { (cd "$1" && sha256sum "${@:2}" 2>&1); }
# outcome NAME WANT_RC PATTERN CMD...: the exit code, one error line matching PATTERN (when given), no crash dump.
outcome() {
  local name=$1 want=$2 pattern=$3 rc why=()
  shift 3
  timeout -k 5 90 "$@" >"$tmp/o.out" 2>"$tmp/o.err" </dev/null
  rc=$?
  [ "$rc" = "$want" ] || why+=("exit $rc, expected $want")
  if [ -n "$pattern" ]; then
    [ "$(grep -c 'shardlab' "$tmp/o.err")" = 1 ] || why+=("$(grep -c shardlab "$tmp/o.err") lines name shardlab, expected 1")
    grep -Eq -- "$pattern" "$tmp/o.err" || why+=("no /$pattern/ in '$(head -c 300 "$tmp/o.err" | tr '\n' '|')'")
  fi
  if grep -Eiq 'bad_alloc|segmentation|core dumped|terminate called' "$tmp/o.err"; then why+=("a crash dump"); fi
  if [ ${#why[@]} = 0 ]; then ok "$name"; else fail "$name" "$(printf '%s; ' "${why[@]}")"; fi
}
MPI=(bash scripts/mpirun.sh)

# ---------------------------------------------------------------- (1) files shardlab did not write
"$S" train "${T[@]}" --steps 4 --out "$W/D" --save "$W/D.ck" >"$tmp/setup.log" 2>&1 || fail "setup: D" "$(last "$tmp/setup.log")"
echo "my picture" >"$W/D/schedule.svg"
echo "my trace" >"$W/D/trace.json"
before=$(sums "$W/D" schedule.svg trace.json)
outcome "(1) a resume into D beside a person's schedule.svg and trace.json: runs (it writes neither)" 0 "" \
  "$S" train --resume "$W/D.ck" --steps 6 --out "$W/D"
[ "$before" = "$(sums "$W/D" schedule.svg trace.json)" ] && ok "(1) ... and both are kept, byte for byte" ||
  fail "(1) the person's files kept after a resume" "$(ls "$W/D" | tr '\n' ' ')"
outcome "(1) --overwrite into D without --pp or --trace: runs" 0 "" "$S" train "${T[@]}" --steps 2 --out "$W/D" --overwrite
[ "$before" = "$(sums "$W/D" schedule.svg trace.json)" ] && ok "(1) ... and both are kept" ||
  fail "(1) the person's files kept after --overwrite" "$(ls "$W/D" | tr '\n' ' ')"
outcome "(1) -np 2 --pp 2 --trace on --overwrite into D: refused, it would replace them" 2 "was not written by shardlab" \
  "${MPI[@]}" -np 2 "$S" train "${T[@]}" --steps 2 --pp 2 --trace on --overwrite --out "$W/D"
[ "$before" = "$(sums "$W/D" schedule.svg trace.json)" ] && ok "(1) ... and both are kept" ||
  fail "(1) the person's files kept after the refused run" "$(ls "$W/D" | tr '\n' ' ')"
cp "$W/D/ledger.json" "$W/D.ledger.json"  # intact, for (8)
echo '{"edited": true}' >"$W/D/ledger.json"
outcome "(1) a ledger.json changed after shardlab wrote it: --overwrite refused" 2 "ledger.json' was changed since shardlab wrote it" \
  "$S" train "${T[@]}" --steps 2 --overwrite --out "$W/D"
grep -q edited "$W/D/ledger.json" && ok "(1) ... and the edited ledger.json is kept" || fail "(1) edited ledger.json kept" "gone"
mkdir -p "$W/E" && echo "layers = 9" >"$W/E/config.toml"
outcome "(1) a person's config.toml in a new --out: refused" 2 "config.toml' was not written by shardlab" \
  "$S" train "${T[@]}" --steps 2 --out "$W/E"
mkdir -p "$W/F" && echo "my list" >"$W/F/shardlab-files.json"
outcome "(1) a shardlab-files.json that is not shardlab's: refused" 2 "is not shardlab's record of its files" \
  "$S" train "${T[@]}" --steps 2 --out "$W/F"
grep -q "my list" "$W/F/shardlab-files.json" && ok "(1) ... and kept" || fail "(1) the person's shardlab-files.json kept" "changed"
"$S" train "${T[@]}" --steps 2 --out "$W/G" >"$tmp/setup.log" 2>&1 || fail "setup: G" "$(last "$tmp/setup.log")"
echo "my note" >>"$W/G/loss.csv"
outcome "(1) a note appended to loss.csv: --overwrite refused" 2 "loss.csv' was changed since shardlab wrote it" \
  "$S" train "${T[@]}" --steps 2 --overwrite --out "$W/G"
outcome "(1) plot --out over a file shardlab wrote that is no picture (ledger.json): refused" 2 "not a picture it drew" \
  "$S" plot "$W/G" --out "$W/G/ledger.json"
outcome "(1) plot --out a new picture: drawn" 0 "" "$S" plot "$W/D" --out "$W/G/curves.svg"
outcome "(1) plot --out over its own picture: replaced" 0 "" "$S" plot "$W/D" --out "$W/G/curves.svg"
echo "<svg>mine</svg>" >"$W/G/mine.svg"
outcome "(1) schedule --svg over a person's picture: refused" 2 "mine.svg' was not written by shardlab" \
  "$S" schedule --svg "$W/G/mine.svg"

# ---------------------------------------------------------------- (2) a diverged step is never saved
diverge() {  # diverge NAME NP DIR FLAGS...: 3 good steps saved, then --lr 1e308 with --keep-last 1
  local name=$1 np=$2 dir=$3
  shift 3
  local run=("$S")
  [ "$np" -gt 1 ] && run=(bash scripts/mpirun.sh -np "$np" "$S")
  "${run[@]}" train "${T[@]}" "$@" --steps 3 --save "$dir" --save-every 1 --keep-last 1 >"$tmp/setup.log" 2>&1 ||
    { fail "setup: $name" "$(last "$tmp/setup.log")"; return; }
  timeout -k 5 90 "${run[@]}" train --resume "$dir" "$@" --steps 10 --lr 1e308 --save "$dir" --save-every 1 --keep-last 1 \
    --progress none >"$tmp/o.out" 2>"$tmp/o.err" </dev/null
  local rc=$? line
  line=$(grep -m1 'shardlab' "$tmp/o.err")
  if [ $rc = 1 ] && [[ $line == *"became NaN or Inf in step 4"*"step 4 is not saved"*"step_000003, is kept"* ]] &&
    [ "$(cat "$dir/latest")" = step_000003 ] && [ "$(ls "$dir" | grep -c '^step_')" = 1 ] &&
    "$S" eval --load "$dir" --data "$tmp/small.txt" >/dev/null 2>&1; then
    ok "(2) $name: exit 1, step 4 not saved, latest and --keep-last keep step 3, which loads"
  else
    fail "(2) $name: the last good step kept" "exit $rc; '$line'; latest $(cat "$dir/latest"); $(ls "$dir" | tr '\n' ' ')"
  fi
}
diverge "one process" 1 "$W/C1"
diverge "pp 2" 2 "$W/C2" --pp 2
diverge "ZeRO-3 on 2 ranks" 2 "$W/C3" --zero 3

# ---------------------------------------------------------------- (3) the data a resume trains on
mkdir -p "$W/a/data" "$W/b/data" "$W/c"
head -c 40000 data/corpus.txt >"$W/a/data/corpus.txt"
tail -c 40000 data/corpus.txt >"$W/b/data/corpus.txt"
cp "$W/a/data/corpus.txt" "$W/c/same.txt"
R3=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 2 --progress none --eval-windows 0)
(cd "$W/a" && "$S" train "${R3[@]}" --steps 2 --save "$W/ck3" >/dev/null 2>&1) || fail "setup: data a" "did not train"
(cd "$W/b" && outcome "(3) a resume from another directory whose data/corpus.txt holds other bytes: refused" 2 \
  "is not the one the checkpoint trained on" "$S" train --resume "$W/ck3" --steps 4)
(cd "$W/b" && timeout 60 "$S" train --resume "$W/ck3" --steps 4 --data "$W/b/data/corpus.txt" >"$tmp/o.out" 2>"$tmp/o.err")
rc=$?
[ $rc = 0 ] && grep -q "warning: training on '$W/b/data/corpus.txt'.*not on the checkpoint's data" "$tmp/o.err" &&
  ok "(3) other data named with --data: trained on, with one warning naming both files" ||
  fail "(3) other data named with --data" "exit $rc: $(tr '\n' '|' <"$tmp/o.err")"
timeout 60 "$S" train --resume "$W/ck3" --steps 4 --data "$W/c/same.txt" >"$tmp/o.out" 2>"$tmp/o.err"
rc=$?
[ $rc = 0 ] && ! grep -q warning "$tmp/o.err" && ok "(3) the same bytes under another path: trained on, no warning" ||
  fail "(3) the same bytes under another path" "exit $rc: $(tr '\n' '|' <"$tmp/o.err")"
(cd "$W/c" && outcome "(3) the checkpoint's data path missing here: one error naming the data it trained on" 1 \
  "does not exist \(the checkpoint trained on '" "$S" train --resume "$W/ck3" --steps 4)
grep -q '"sha256"' "$W/ck3/step_000002/meta.json" && ok "(3) meta.json records the data's path, size and SHA-256" ||
  fail "(3) meta.json records the data" "$(grep -A3 '"data"' "$W/ck3/step_000002/meta.json" | head -n 4 | tr '\n' ' ')"

# ---------------------------------------------------------------- (4) a rank stopped during start-up
stop_at_start() {  # stop_at_start RANK SECONDS NP: SIGSTOP that rank of NP SECONDS after its process started
  local rank=$1 after=$2 np=$3 pid="" start rc found="" polls=0
  bash scripts/mpirun.sh -np "$np" "$S" train "${T[@]}" --steps 100000 --pp 2 --dp $((np / 2)) --comm-timeout 2 \
    >"$tmp/s.out" 2>&1 </dev/null &
  local job=$!
  started+=("$job")
  while [ -z "$pid" ] && [ $polls -lt 500 ]; do  # the rank's process, once it exists (a busy machine starts it late)
    polls=$((polls + 1))
    pid=$(job_rank "$job" "$rank")  # this job's ranks only: other suites run beside this one
    [ -n "$pid" ] || kill -0 "$job" 2>/dev/null || break
    [ -n "$pid" ] || sleep 0.01
  done
  found="after $polls polls"
  [ "$after" = 0 ] || sleep "$after"
  [ -n "$pid" ] && kill -STOP "$pid" && started+=("$pid")
  start=$(date +%s)
  for _ in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$job" 2>/dev/null && { kill -9 $(descendants "$job") "$job" 2>/dev/null; }  # never waits for ever
  wait "$job" 2>/dev/null
  rc=$?
  local took=$(($(date +%s) - start)) line lines
  line=$(grep -m1 '^shardlab' "$tmp/s.out")
  lines=$(grep -c '^shardlab' "$tmp/s.out")
  [ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
  started=()  # all ended: a pid kept for later could name another suite's process by then
  local name="(4) rank $rank of $np stopped ${after} s after it started, --comm-timeout 2"
  if [ -z "$pid" ]; then
    fail "$name" "no rank $rank to stop ($found; mpirun $(kill -0 "$job" 2>/dev/null && echo running || echo ended))"
  elif [ "$rc" != 0 ] && [ "$took" -le 10 ] && [ "$lines" = 1 ] && [[ $line == "shardlab: error: rank $rank never arrived"* ]] &&
    ! grep -q "Process received signal\|Segmentation fault" "$tmp/s.out"; then
    ok "$name: ended in ${took} s, one line: ${line#*error*: }"
  else
    fail "$name" "exit $rc after ${took} s, $lines shardlab lines (want 1, 'shardlab: error: rank $rank never arrived …'): $(grep -v '^ *$' "$tmp/s.out" | head -n 6 | tr '\n' '|' | cut -c1-600)"
  fi
}
stop_at_start 1 0 2     # inside MPI start-up: named by the roll call (src/comm/roll_call.h)
stop_at_start 2 0 4
stop_at_start 0 0 4
stop_at_start 1 0.1 2
stop_at_start 0 0.1 2
stop_at_start 0 0.15 2
stop_at_start 1 0.3 2   # training: named by the watchdog

# ---------------------------------------------------------------- (5) NUL bytes in text inputs
printf 'steps = 3\0 000\n' >"$W/nul1.toml"
outcome "(5) --config with 'steps = 3<NUL> 000': refused" 2 "holds a NUL byte \(line 1" "$S" train --config "$W/nul1.toml"
printf 'layers = 4\npp = 2\09\n' >"$W/nul2.toml"
outcome "(5) --config with 'pp = 2<NUL>9': refused" 2 "holds a NUL byte \(line 2" "$S" train --config "$W/nul2.toml"
mkdir -p "$W/nulrun" && printf 'step,loss,grad_norm,lr,ms,val_loss\n1,5.5\0,1,1,1,\n' >"$W/nulrun/loss.csv"
outcome "(5) compare of a loss.csv with a NUL byte: refused" 1 "holds a NUL byte" "$S" compare "$W/nulrun" "$W/G"
printf '{"model": 1\0}' >"$W/nul.json"
outcome "(5) plan --ledger of a ledger.json with a NUL byte: refused" 2 "holds a NUL byte" "$S" plan --ledger "$W/nul.json"

# ---------------------------------------------------------------- (6) trace: impossible or damaged files
"${MPI[@]}" -np 2 "$S" train "${T[@]}" --steps 3 --pp 2 --trace on --eval-windows 4 --eval-every 2 --out "$W/tr" >"$tmp/setup.log" 2>&1 ||
  fail "setup: traced pp 2" "$(last "$tmp/setup.log")"
cp "$W/tr/trace.json" "$W/trace.orig"
cp "$W/tr/ledger.json" "$W/ledger.orig"
edited() {  # edited NAME PATTERN SED_EXPR: trace.json edited so
  sed "$3" "$W/trace.orig" >"$W/tr/trace.json"
  outcome "(6) trace with $1: refused" 1 "$2" "$S" trace "$W/tr"
}
edited "a dur of 1e308" "lasts 1e\+308 µs: no run's span does" 's/"dur":[0-9.e+-]*/"dur":1e308/'
edited "a negative dur" "lasts -[0-9.]+ µs: no run's span does" 's/"dur":\([0-9.]*\)/"dur":-\1/'
edited "pid 2147483647" "is on rank 2147483647: no run has it" 's/"pid":1,/"pid":2147483647,/g'
edited "ranks 0 and 3" "spans of 2 ranks numbered up to 3" 's/"pid":1,/"pid":3,/g'
head -c 3000 "$W/trace.orig" >"$W/tr/trace.json"
outcome "(6) a truncated trace.json: damaged, cut short" 1 "trace.json' is damaged: it ends before its JSON does" "$S" trace "$W/tr"
cp "$W/trace.orig" "$W/tr/trace.json"
head -c 2000 "$W/ledger.orig" >"$W/tr/ledger.json"
outcome "(6) a truncated ledger.json beside it: damaged, not read as 'no pipeline'" 1 "ledger.json' is damaged" "$S" trace "$W/tr"
printf '\x89PNG\r\n\x1a\n\0\0' >"$W/tr/ledger.json"
outcome "(6) a binary ledger.json: refused" 1 "ledger.json' (holds a NUL byte|is damaged)" "$S" trace "$W/tr"
cp "$W/ledger.orig" "$W/tr/ledger.json"

# ---------------------------------------------------------------- (7) trace's per-step numbers
"${MPI[@]}" -np 4 "$S" train "${T[@]}" --steps 3 --dp 2 --pp 2 --zero 1 --trace on --eval-windows 8 --eval-every 3 --out "$W/t3" \
  >"$tmp/setup.log" 2>&1 || fail "setup: traced dp 2 × pp 2" "$(last "$tmp/setup.log")"
"$S" trace "$W/t3" >"$tmp/t3.txt" 2>&1
if awk '$1 ~ /^[0-9]+$/ && NF == 6 { n++; if ($4 > $2 + 1e-9 || $5 > $2 + 1e-9 || $3 > $2 + 1e-9) bad = bad " rank " $1 }
        END { exit !(n == 4 && bad == "") }' "$tmp/t3.txt" && grep -q "outside the steps" "$tmp/t3.txt"; then
  ok "(7) dp 2 × pp 2 with evaluation: every rank's compute, comm and exposed per step within its step; the rest said apart"
else
  fail "(7) per-step numbers within the step" "$(tr '\n' '|' <"$tmp/t3.txt" | cut -c1-400)"
fi

# ---------------------------------------------------------------- (8) ledger numbers
ledger_edit() {  # ledger_edit NAME PATTERN PYTHON_EXPR(d)
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); $3; json.dump(d, open(sys.argv[2], 'w'))" \
    "$W/D.ledger.json" "$W/edited.json"
  outcome "(8) plan --ledger with $1: refused" 2 "$2" "$S" plan --ledger "$W/edited.json"
}
outcome "(8) control: plan --ledger of the run as written passes" 0 "" "$S" plan --ledger "$W/D.ledger.json"
ledger_edit "world_size 10^12" "world_size is 1000000000000, outside \[1, 2147483647\]" "d['world_size'] = 10**12"
ledger_edit "layout.pp 2^32 + 2" "layout.pp is 4294967298, outside \[1, 4096\]" "d['layout']['pp'] = 2**32 + 2"
ledger_edit "an item's peak of 10^15" "peak 1000000000000000 is not a whole number of records" \
  "d['ranks'][0]['memory']['items']['block.fc']['peak'] = 10**15"
ledger_edit "an item still held at the end" "still held at the end of the run" \
  "d['ranks'][0]['memory']['items']['block.fc']['current'] = d['ranks'][0]['memory']['items']['block.fc']['bytes_each']"
ledger_edit "bytes_allocated ≠ bytes_each × allocations" "bytes_allocated [0-9]+ is not bytes_each" \
  "d['ranks'][0]['memory']['items']['block.fc']['bytes_allocated'] += 4"

# ---------------------------------------------------------------- (9) out of memory
(ulimit -v 3000000; outcome "(9) --force-memory past the memory there is, 1 process: one sentence, no bad_alloc" 1 \
  "out of memory: the machine did not give [0-9]+ bytes of" \
  "$S" train --layers 4 --hidden 2048 --heads 4 --seq 64 --micro-batch 8 --global-batch 8 --steps 2 --force-memory --progress none)
(ulimit -v 3000000; outcome "(9) the same on 2 ranks: one sentence from one rank" 1 "out of memory" \
  "${MPI[@]}" -np 2 "$S" train --layers 4 --hidden 2048 --heads 4 --seq 64 --micro-batch 8 --global-batch 16 --steps 2 --force-memory --progress none)
outcome "(9) mlp-split --hidden 4096 --tokens 65536: refused before allocating, with both numbers" 2 \
  "needs [0-9.]+ GB, but [0-9.]+ [GM]B is available" "$S" mlp-split --hidden 4096 --tokens 65536
(ulimit -v 3000000; outcome "(9) mlp-split past a 3 GB limit: one sentence" 1 "out of memory" \
  "$S" mlp-split --hidden 2048 --tokens 8192)

# ---------------------------------------------------------------- (10) flash's curve
F=(--layers 2 --hidden 64 --heads 4 --seq 160 --micro-batch 4 --global-batch 8 --steps 6 --progress none --eval-windows 0
   --data "$tmp/small.txt")
"$S" train "${F[@]}" --attention naive --out "$W/naive" >/dev/null 2>&1 && "$S" train "${F[@]}" --attention flash --out "$W/flash" >/dev/null 2>&1
if "$S" compare "$W/naive" "$W/flash" >/dev/null 2>&1 && ! "$S" compare "$W/naive" "$W/flash" --rtol 0 >/dev/null 2>&1 &&
  ! grep -q "All of them give the same loss curve as the run without, bit for bit" README.md; then
  ok "(10) flash vs naive (f32, s = 160, 3 key blocks): within tolerance, not bit for bit — and the README says so"
else
  fail "(10) flash vs naive as the README says" "$("$S" compare "$W/naive" "$W/flash" --rtol 0 | tail -n 1)"
fi

# ---------------------------------------------------------------- (11) beside a live run
L=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 2 --progress none --eval-windows 0
   --data "$tmp/small.txt")
"$S" train "${L[@]}" --steps 100000000 --out "$W/live" --save "$W/live.ck" --save-every 1 --keep-last 1 \
  >"$tmp/live.log" 2>&1 </dev/null &
live=$!
started+=("$live")
for _ in $(seq 200); do [ -e "$W/live.ck/latest" ] && break; sleep 0.05; done
[ -e "$W/live.ck/latest" ] || fail "setup: a live run saving every step" "$(last "$tmp/live.log")"
busy="another shardlab run is writing into '[^']*' right now"
outcome "(11) a second run into the live run's --out: another run is writing there" 2 "$busy" \
  "$S" train "${L[@]}" --steps 2 --out "$W/live"
outcome "(11) ... also with --overwrite" 2 "$busy" "$S" train "${L[@]}" --steps 2 --out "$W/live" --overwrite
outcome "(11) a second run into the live run's --save: another run is writing there" 2 "$busy" \
  "$S" train "${L[@]}" --steps 2 --save "$W/live.ck"
outcome "(11) a new --out with the live run's --save: refused" 2 "$busy" \
  "$S" train "${L[@]}" --steps 2 --out "$W/new/out" --save "$W/live.ck"
[ ! -e "$W/new" ] && ok "(11) ... and the --out it would have made is not left behind" || fail "(11) nothing created" "$(ls -R "$W/new")"
first=$(cat "$W/live.ck/latest")
bad=()
for i in $(seq 30); do
  "$S" eval --load "$W/live.ck" --data "$tmp/small.txt" --max-windows 1 --progress none >/dev/null 2>"$tmp/l.err" ||
    bad+=("eval: $(head -c 160 "$tmp/l.err")")
  "$S" sample --load "$W/live.ck" --tokens 1 >/dev/null 2>"$tmp/l.err" || bad+=("sample: $(head -c 160 "$tmp/l.err")")
done
rows() { cat "$1" 2>/dev/null | wc -l; }
for i in 1 2 3 4; do  # each resume loads, then trains a step of its own (a row in its loss.csv), then is ended
  "$S" train --resume "$W/live.ck" --steps 100000000 --out "$W/resumed$i" >/dev/null 2>"$tmp/r$i.err" </dev/null &
  r=$!
  for _ in $(seq 200); do [ "$(rows "$W/resumed$i/loss.csv")" -ge 2 ] && break; kill -0 "$r" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$r" 2>/dev/null && [ "$(rows "$W/resumed$i/loss.csv")" -ge 2 ] || bad+=("resume $i: $(head -c 160 "$tmp/r$i.err")")
  kill "$r" 2>/dev/null
  wait "$r" 2>/dev/null
done
moved=$(( $(cat "$W/live.ck/latest" | tr -dc 0-9 | sed 's/^0*//') - $(echo "$first" | tr -dc 0-9 | sed 's/^0*//') ))
kill -0 "$live" 2>/dev/null && live_ok=1 || live_ok=0
kill "$live" 2>/dev/null
wait "$live" 2>/dev/null
if [ ${#bad[@]} = 0 ] && [ "$live_ok" = 1 ] && [ "$moved" -ge 20 ]; then
  ok "(11) 30 evals, 30 samples and 4 resumes of the live run's checkpoints while it saved and pruned $moved steps: all loaded"
else
  fail "(11) every load beside the live run's --keep-last 1" \
    "${#bad[@]} failed: $(printf '%s|' "${bad[@]:0:3}"); live run alive: $live_ok, steps saved meanwhile: $moved"
fi
step_dirs=$(ls "$W/live.ck" | grep -c '^step_[0-9]*$')
[ "$step_dirs" -le 2 ] && ok "(11) ... and once the loads ended, its --keep-last 1 had pruned down to $step_dirs step(s)" ||
  fail "(11) the held steps pruned later" "$(ls "$W/live.ck" | tr '\n' ' ')"

# ---------------------------------------------------------------- and lists of numbers
outcome "--pp-layers '+2,2': refused" 2 "pp-layers expects positive layer counts" \
  "${MPI[@]}" -np 2 "$S" train "${T[@]}" --steps 1 --pp 2 --pp-layers "+2,2"
outcome "--pp-layers ' 2,2': refused" 2 "pp-layers expects positive layer counts" \
  "${MPI[@]}" -np 2 "$S" train "${T[@]}" --steps 1 --pp 2 --pp-layers " 2,2"
outcome "ring --sizes-mb '+1': refused" 2 "sizes-mb expects sizes" "$S" ring --sizes-mb "+1"
outcome "ring --sizes-mb '0x10': refused" 2 "sizes-mb expects sizes" "$S" ring --sizes-mb "0x10"
mkdir -p "$W/neg" && printf 'step,loss,grad_norm,lr,ms,val_loss\n-2,5.5,1,1,1,\n' >"$W/neg/loss.csv"
outcome "compare of a loss.csv with step -2: the step quoted as written" 1 "step '-2' is not a positive integer" \
  "$S" compare "$W/neg" "$W/G"
[ "$fails" = 0 ]
