#!/usr/bin/env bash
# Hostile inputs: each family of lying, special or malformed input tried on several members.
#  (1) a checkpoint directory's `latest` that lies (names a missing step, garbage, an empty file) or is not
#      a file (a FIFO, a symlink to /dev/zero, a directory, a dangling symlink): --resume and eval refuse;
#      so do they and sample when meta.json's config is no model (heads 0, seq 0, hidden 0, vocab 300), when
#      meta.json holds a NUL byte, or says a parameter count its model file does not hold;
#  (2) files a person put in --save (look-alikes of scratch and steps, a symlink to their own directory)
#      survive many saves with --keep-last 1 while real scratch is cleared; a step directory holding an
#      extra file (or a file named like a step) is refused up front, so --keep-last never deletes it;
#  (3) a --save directory holding only step_N.old (a checkpoint moved aside) counts as holding checkpoints;
#  (4) FIFOs, devices and directories where a file is read: --data, --config, plan --ledger, a checkpoint's
#      files, compare's and plot's loss.csv, trace's trace.json;
#  (5) output paths that are not regular files: --out's loss.csv, config.json, trace.json, loss.svg,
#      ledger.json and the lock file (a symlink there is never followed), plot --out;
#  (6) SHARDLAB_COMM_TIMEOUT and --comm-timeout: 0 or at least 1 second, anything else refused (also when only
#      rank 1 has the bad value: its own line, naming it); what rank 1 alone is given or reads (a bad flag, another
#      command line, another --config file, a missing data file): one line from rank 1, the job never hangs;
#  (7) impossible sizes refused before allocating, naming both numbers: eval and sample of a checkpoint that
#      claims a huge model, bench, ring (also under mpirun), a data file larger than the machine's memory; and
#      ring's flags that would change nothing (--elements 0, --elements or --dtype beside --sizes-mb);
#  (8) damaged checkpoints under mpirun -np 2 (checksum, truncation, meta.json not JSON, NaN with matching
#      checksums): exit 1, the error printed once;
#  (9) the smallest checkpoint (--steps 0 is refused; step 1) holds the run's own weights: eval of it is
#      the fresh run's validation loss at step 1, and the run resumed from it logs the fresh run's losses;
# (10) --config files are strict (arrays, sections, a switch given 3, two values on a line, a '#' in a
#      value, a byte-order mark); a key or flag given again takes the later value — a switch too, and lines
#      apart as next to each other; a run's config.toml reproduces it, also continuing from its checkpoint at
#      the next step;
# (11) compare on malformed loss.csv (inf/nan loss, non-integer or decreasing or repeated steps, missing
#      cells, no header); CRLF line endings are accepted (io/loss_log.cpp) and compare bit-identical;
# (12) unknown flags: exit 2, one line naming them as typed;
# (13) swamping ranges that overflow bf16/float (|w| + steps·|u| ≥ 1e38);
# (14) settings that make a run diverge (--weight-decay, --moe-aux-loss, --moe-z-loss, --lr, --eps): exit 1, one
#      line naming what went first (the gradients, or the weights an update made) and the implausible setting —
#      never "try a lower --lr" for another one's fault (train/divergence.h) — also at a save and under mpirun;
# (15) a 100 kB value (a path, a flag's word, a command's name) is quoted by its two ends around "…" in a short
#      line, whichever flag or command it reached; a path the file system cannot look at is a sentence naming
#      the flag, never the library's own text.
# Every refusal: the expected exit code within 20 s (never a hang), exactly one stderr line, no crash dump,
# and the files involved unchanged. Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff
# all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_refused.sh"

W=$tmp/w  # every file the cases use
mkdir -p "$W"
M=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 2 --eval-windows 2 --progress none
   --data "$tmp/small.txt" --lr-schedule constant --warmup 4)

step_losses() { tail -n +2 "$1" | cut -d, -f1,2 | tr '\n' ' '; }  # "1,5.54 2,5.51 "

# ---------------------------------------------------------------- setup: a run, its checkpoint, a traced run
"$S" train "${M[@]}" --steps 2 --save "$W/ck" --out "$W/run" >"$tmp/setup.log" 2>&1 ||
  fail "setup: train --save ck --out run" "$(last "$tmp/setup.log")"
"$S" train "${M[@]}" --steps 2 --trace on --out "$W/traced" >"$tmp/setup.log" 2>&1 ||
  fail "setup: train --trace on --out traced" "$(last "$tmp/setup.log")"
mkfifo "$W/fifo"
mkdir "$W/adir"

# ---------------------------------------------------------------- (1) `latest` that lies or is not a file
latest_case() {  # latest_case NAME PATTERN MAKE: MAKE replaces $d/latest in a copy of ck
  local d=$W/latest_$1
  cp -r "$W/ck" "$d" && rm "$d/latest" && eval "$3"
  refused "(1) latest $1: train --resume refuses, exit 1" 1 "$2" "$d" -- "$S" train --resume "$d" --steps 4 --progress none
  refused "(1) latest $1: eval --load refuses, exit 1" 1 "$2" "$d" -- \
    "$S" eval --load "$d" --data "$tmp/small.txt" --progress none
}
latest_case missing_step "latest: names step_000099, but .*step_000099 does not exist" 'echo step_000099 >"$d/latest"'
latest_case garbage "latest: does not name a step directory \('garbage\?\? x'\)" "printf 'garbage\\377\\0 x\\n' >\"\$d/latest\""
latest_case step_2 "latest: does not name a step directory \('step_2'\)" 'echo step_2 >"$d/latest"'
latest_case empty "latest: does not name a step directory \(''\)" ': >"$d/latest"'
latest_case fifo "latest.*is not a regular file \(a FIFO\)" 'mkfifo "$d/latest"'
latest_case dev_zero_symlink "latest.*is not a regular file \(a device\)" 'ln -s /dev/zero "$d/latest"'
latest_case directory "latest.*is a directory, not a file" 'mkdir "$d/latest"'
latest_case dangling_symlink "latest.*does not exist" 'ln -s "$W/nothing_here" "$d/latest"'
# A meta.json whose config is no model shardlab can build (it sizes every buffer of eval and sample).
for e in heads=0 seq=0 hidden=0 seq=-5 vocab=300; do
  d=$W/config_${e/=/_}
  cp -r "$W/ck" "$d"
  python3 - "$d/step_000002/meta.json" "$e" <<'EOF'
import json, sys
p, (k, v) = sys.argv[1], sys.argv[2].split("="); m = json.load(open(p)); m["config"][k] = int(v); json.dump(m, open(p, "w"))
EOF
  pat="config is not a model shardlab can build \\(--(layers|vocab)"
  refused "(1) meta.json's config says $e: eval refuses, exit 1" 1 "$pat" "$d" -- \
    "$S" eval --load "$d" --data "$tmp/small.txt" --progress none
  refused "(1) meta.json's config says $e: sample refuses, exit 1" 1 "$pat" "$d" -- "$S" sample --load "$d" --tokens 2
  refused "(1) meta.json's config says $e: train --resume refuses, exit 1" 1 "$pat" "$d" -- \
    "$S" train --resume "$d" --steps 4 --progress none
done
# meta.json itself: a NUL byte (never in the JSON shardlab writes), a parameter count off by one.
d=$W/meta_nul && cp -r "$W/ck" "$d" && printf '\0' >>"$d/step_000002/meta.json"
refused "(1) meta.json with a NUL byte after the JSON: eval refuses, exit 1" 1 "meta.json.*NUL byte" "$d" -- \
  "$S" eval --load "$d" --data "$tmp/small.txt" --progress none
d=$W/meta_params && cp -r "$W/ck" "$d"
python3 -c 'import json, sys; p = sys.argv[1]; m = json.load(open(p)); m["params"] += 1; json.dump(m, open(p, "w"))' \
  "$d/step_000002/meta.json"
refused "(1) meta.json's params off by one: eval refuses, naming both counts" 1 "meta.json says [0-9]+ parameters, but its model.safetensors holds [0-9]+" \
  "$d" -- "$S" eval --load "$d" --data "$tmp/small.txt" --progress none
refused "(1) meta.json's params off by one: train --resume refuses" 1 "meta.json says [0-9]+ parameters" "$d" -- \
  "$S" train --resume "$d" --steps 4 --progress none
refused "(1) latest a FIFO in a new run's --save: refused before step 1, exit 2" 2 "--save .*latest.*a FIFO" "$W/latest_fifo" -- \
  "$S" train "${M[@]}" --steps 2 --save "$W/latest_fifo"

# ---------------------------------------------------------------- (2) user files in --save are never touched
S2=$W/save2 U=$W/userdir
mkdir -p "$S2" "$U/sub"
echo precious >"$U/a.txt"
echo '{"files": {}}' >"$U/meta.json"
head -c 1000 /dev/urandom >"$U/sub/model.safetensors"
echo "my notes on step 3" >"$S2/step_000003.tmp"
echo notes >"$S2/notes.txt"
printf 'step_000001\n' >"$S2/latest.tmp"
ln -s "$U" "$S2/step_000009.tmp-abcdef"            # a scratch-like name, but a symlink: someone's directory
ln -s "$U/a.txt" "$S2/latest.tmp-Zz9zz9"
mkdir "$S2/step_000002.tmp" && echo '{"half": ' >"$S2/step_000002.tmp/meta.json"
mkdir "$S2/step_000001.prune-abcdef" && echo mine >"$S2/step_000001.prune-abcdef/mine.txt"
echo data >"$S2/step_000005.tmp-qqqqqq"            # a regular file with a scratch-like name
mkdir "$S2/step_000007.tmp-Ab12Cd"                 # real scratch of a killed save: cleared by the next save
head -c 1000 /dev/urandom >"$S2/step_000007.tmp-Ab12Cd/model.safetensors"
user_entries=(step_000003.tmp notes.txt latest.tmp step_000009.tmp-abcdef latest.tmp-Zz9zz9 step_000002.tmp
              step_000001.prune-abcdef step_000005.tmp-qqqqqq)
user_snapshot() { (cd "$S2" && find "${user_entries[@]}" -printf '%y %p %l\n' 2>&1 | sort &&
                   find "${user_entries[@]}" -type f -print0 2>/dev/null | sort -z | xargs -0 -r sha256sum); }
u_before=$(user_snapshot)
t_before=$(snapshot "$U")
runs "(2) train --steps 4 --save-every 1 --keep-last 1 into a --save holding a person's files" \
  "$S" train "${M[@]}" --steps 4 --save-every 1 --keep-last 1 --save "$S2"
runs "(2) ... resumed to step 6 into the same --save (6 saves, 5 prunes in all)" \
  "$S" train --resume "$S2" --steps 6 --save-every 1 --keep-last 1 --save "$S2" --progress none
steps_left=$(cd "$S2" && find . -maxdepth 1 -name 'step_??????' | sort | tr '\n' ' ')
if [ "$steps_left" = "./step_000006 " ] && [ "$(cat "$S2/latest" 2>/dev/null)" = step_000006 ] && [ ! -e "$S2/step_000007.tmp-Ab12Cd" ]; then
  ok "(2) --keep-last 1 pruned down to step_000006 and the killed save's scratch was cleared"
else
  fail "(2) --keep-last 1 pruned and scratch cleared" "left: $steps_left; $(ls "$S2" | tr '\n' ' ')"
fi
if [ "$u_before" = "$(user_snapshot)" ]; then
  ok "(2) ... and all ${#user_entries[@]} of the person's entries are byte-identical (step_000003.tmp, notes.txt, latest.tmp, the symlink step_000009.tmp-abcdef, ...)"
else
  fail "(2) the person's entries in --save are untouched" "$(diff <(echo "$u_before") <(user_snapshot) | grep '^[<>]' | head -n 3 | tr '\n' '|')"
fi
if [ "$t_before" = "$(snapshot "$U")" ]; then ok "(2) ... and the directory the symlink points to is byte-identical"
else fail "(2) the symlink's target directory is untouched" "$(diff <(echo "$t_before") <(snapshot "$U") | head -n 3 | tr '\n' '|')"; fi
"$S" train "${M[@]}" --steps 2 --save-every 1 --save "$W/K" >"$tmp/setup.log" 2>&1 || fail "setup: K" "$(last "$tmp/setup.log")"
cp -r "$W/K" "$W/K2" && cp -r "$W/K" "$W/K3"
echo mine >"$W/K/step_000001/notes.txt"
refused "(2) --keep-last 1 would prune step_000001, which holds a person's file: refused up front" "1 2" \
  "holds step_000001, which is not \(only\) a shardlab checkpoint" "$W/K" -- \
  "$S" train --resume "$W/K" --steps 4 --save-every 1 --keep-last 1 --save "$W/K" --progress none
echo mine >"$W/K2/step_000002/notes.txt"
refused "(2) step_000002 holds a person's file: a new run with --overwrite is refused, nothing changed" "1 2" \
  "holds step_000002, which is not \(only\) a shardlab checkpoint" "$W/K2" -- \
  "$S" train "${M[@]}" --steps 2 --seed 9 --save "$W/K2" --overwrite
echo "not a checkpoint" >"$W/K3/step_000003"
refused "(2) a regular file named step_000003 in --save: refused, even with --overwrite" "1 2" \
  "holds step_000003, which is not \(only\) a shardlab checkpoint" "$W/K3" -- \
  "$S" train --resume "$W/K3" --steps 4 --save-every 1 --save "$W/K3" --overwrite --progress none

# ---------------------------------------------------------------- (3) a step kept only as step_N.old
"$S" train "${M[@]}" --steps 4 --save "$W/O" >"$tmp/setup.log" 2>&1 || fail "setup: O" "$(last "$tmp/setup.log")"
mv "$W/O/step_000004" "$W/O/step_000004.old"
cp -r "$W/O" "$W/O_latest"
rm "$W/O/latest"
refused "(3) --save holding only step_000004.old (no latest): another run is refused" 2 \
  "--save .* holds the checkpoints of another run.*--overwrite" "$W/O" -- "$S" train "${M[@]}" --steps 2 --seed 9 --save "$W/O"
refused "(3) ... also a run with the same flags (every run is another run)" 2 "checkpoints of another run" "$W/O" -- \
  "$S" train "${M[@]}" --steps 6 --save-every 1 --save "$W/O"
refused "(3) step_000004.old with latest naming step_000004 (a re-save cut between its renames): refused" 2 \
  "checkpoints of another run" "$W/O_latest" -- "$S" train "${M[@]}" --steps 2 --seed 9 --save "$W/O_latest"
runs "(3) ... and with --overwrite the new run saves there" "$S" train "${M[@]}" --steps 2 --seed 9 --save "$W/O" --overwrite
[ "$(cat "$W/O/latest" 2>/dev/null)" = step_000002 ] && ok "(3) ... its latest names its own step_000002" ||
  fail "(3) --overwrite saved" "latest: $(cat "$W/O/latest" 2>&1)"

# ---------------------------------------------------------------- (4) FIFOs, devices, directories read as files
for d in /dev/zero "$W/fifo" "$W/adir"; do
  k=$(case $d in /dev/zero) echo /dev/zero ;; */fifo) echo "a FIFO" ;; *) echo "a directory" ;; esac)
  kind="a device|a FIFO|is a directory"
  refused "(4) train --data $k" 1 "--data: .*($kind)" "$W" -- "$S" train "${M[@]}" --steps 2 --data "$d"
  refused "(4) eval --data $k" 1 "--data: .*($kind)" "$W" -- "$S" eval --load "$W/ck" --data "$d" --progress none
  refused "(4) train --config $k" 2 "--config: .*($kind)" "$W" -- "$S" train --config "$d" --steps 2
  refused "(4) plan --ledger $k" "1 2" "--ledger .*($kind)" "$W" -- "$S" plan --ledger "$d"
done
cp -r "$W/traced" "$W/loss_fifo" && rm "$W/loss_fifo/loss.csv" && mkfifo "$W/loss_fifo/loss.csv"
refused "(4) compare RUN DIR whose loss.csv is a FIFO" 1 "loss.csv' is not a regular file \(a FIFO\)" "$W/traced" -- \
  "$S" compare "$W/traced" "$W/loss_fifo"
refused "(4) compare DIR RUN, the FIFO first" 1 "loss.csv' is not a regular file \(a FIFO\)" "$W/traced" -- \
  "$S" compare "$W/loss_fifo" "$W/traced"
refused "(4) plot of a run whose loss.csv is a FIFO" 1 "a FIFO" "$W/traced" -- "$S" plot "$W/loss_fifo" --out "$W/p.svg"
for k in fifo dev_zero directory; do
  t=$W/trace_$k/trace.json
  cp -r "$W/traced" "$W/trace_$k" && rm "$t"
  case $k in
    fifo) mkfifo "$t" && what="a FIFO" ;;
    dev_zero) ln -s /dev/zero "$t" && what="a symlink to /dev/zero" ;;
    directory) mkdir "$t" && what="a directory" ;;
  esac
  refused "(4) trace of a run whose trace.json is $what" 1 "trace.json.*(a FIFO|a device|is a directory)" "$W/trace_$k" -- \
    "$S" trace "$W/trace_$k"
done
cp -r "$W/ck" "$W/ck_fifo" && rm "$W/ck_fifo/step_000002/model.safetensors" && mkfifo "$W/ck_fifo/step_000002/model.safetensors"
cp -r "$W/ck" "$W/ck_zero" && rm "$W/ck_zero/step_000002/meta.json" && ln -s /dev/zero "$W/ck_zero/step_000002/meta.json"
refused "(4) --resume of a checkpoint whose model.safetensors is a FIFO" 1 "model.safetensors.*a FIFO" "$W/ck_fifo" -- \
  "$S" train --resume "$W/ck_fifo" --steps 4 --progress none
refused "(4) eval of a checkpoint whose meta.json is a symlink to /dev/zero" 1 "meta.json.*a device" "$W/ck_zero" -- \
  "$S" eval --load "$W/ck_zero" --data "$tmp/small.txt" --progress none

# ---------------------------------------------------------------- (5) output paths that are not regular files
out_n=0
out_case() {  # out_case FILE WHAT MAKE [FLAGS...]: MAKE puts a non-regular FILE into a fresh --out $d
  local f=$1 name=$2 d=$W/out_$((out_n += 1))
  mkdir -p "$d" && eval "$3"
  shift 3
  refused "(5) --out DIR where DIR/$f is $name: refused" 2 "$f.* not a regular file" "$d" -- \
    "$S" train "${M[@]}" --steps 2 --out "$d" "$@"
}
out_case loss.csv "a FIFO" 'mkfifo "$d/loss.csv"'
out_case config.json "a FIFO" 'mkfifo "$d/config.json"'
out_case trace.json "a FIFO (--trace on)" 'mkfifo "$d/trace.json"' --trace on
out_case loss.svg "a symlink to /dev/null" 'ln -s /dev/null "$d/loss.svg"'
out_case ledger.json "a directory" 'mkdir "$d/ledger.json"'
out_case shardlab.lock "a FIFO" 'mkfifo "$d/shardlab.lock"'
out_case shardlab.lock "a symlink to /dev/zero" 'ln -s /dev/zero "$d/shardlab.lock"'
out_case shardlab.lock "a dangling symlink" 'ln -s "$W/lock_target" "$d/shardlab.lock"'
mkdir -p "$W/save_lock" && ln -s "$W/lock_target2" "$W/save_lock/shardlab.lock"
refused "(5) --save DIR where DIR/shardlab.lock is a dangling symlink: refused" 2 "shardlab.lock' is not a regular file" "$W/save_lock" -- \
  "$S" train "${M[@]}" --steps 2 --save "$W/save_lock"
if [ ! -e "$W/lock_target" ] && [ ! -e "$W/lock_target2" ]; then ok "(5) ... and the lock symlinks were not followed: their targets do not exist"
else fail "(5) a lock symlink is never followed" "$(ls -la "$W"/lock_target* 2>&1 | tr '\n' '|')"; fi
ln -s "$W/fifo" "$W/fifo_link.svg"
refused "(5) plot --out ''" 2 "--out needs a file name" "$W/traced" -- "$S" plot "$W/traced" --out ''
refused "(5) plot --out a FIFO" 2 "fifo' is not a regular file" "$W/traced" -- "$S" plot "$W/traced" --out "$W/fifo"
refused "(5) plot --out a symlink to a FIFO" 2 "fifo_link.svg' is not a regular file" "$W/traced" -- \
  "$S" plot "$W/traced" --out "$W/fifo_link.svg"
refused "(5) plot --out /dev/null" 2 "/dev/null' is not a regular file" "$W/traced" -- "$S" plot "$W/traced" --out /dev/null
refused "(5) plot --out a directory" 2 "adir' is not a regular file" "$W/traced" -- "$S" plot "$W/traced" --out "$W/adir"
[ -p "$W/fifo" ] && [ -d "$W/adir" ] && ok "(5) ... the FIFO and the directory are still what they were" ||
  fail "(5) plot left the FIFO and the directory alone" "$(ls -la "$W/fifo" "$W/adir" 2>&1 | tr '\n' '|')"

# ---------------------------------------------------------------- (6) comm timeouts
for v in abc -1 0.5 '' nan 1e999; do
  refused "(6) SHARDLAB_COMM_TIMEOUT='$v': refused, exit 2" 2 "SHARDLAB_COMM_TIMEOUT must be 0 \(never\) or at least 1 second, got '$v'" "$W" -- \
    env SHARDLAB_COMM_TIMEOUT="$v" "$S" train "${M[@]}" --steps 1
done
runs "(6) SHARDLAB_COMM_TIMEOUT=0 (never) is accepted" env SHARDLAB_COMM_TIMEOUT=0 "$S" train "${M[@]}" --steps 1
runs "(6) SHARDLAB_COMM_TIMEOUT=1 is accepted" env SHARDLAB_COMM_TIMEOUT=1 "$S" train "${M[@]}" --steps 1
for v in 1e-9 0.5 -1; do
  refused "(6) --comm-timeout $v: refused, exit 2" 2 "--comm-timeout must be 0 .* or at least 1 second" "$W" -- \
    "$S" train "${M[@]}" --steps 1 --comm-timeout "$v"
done
runs "(6) --comm-timeout 0 is accepted" "$S" train "${M[@]}" --steps 1 --comm-timeout 0
mpi_refused "(6) SHARDLAB_COMM_TIMEOUT=abc under mpirun -np 2: exit 2, said once" 2 "SHARDLAB_COMM_TIMEOUT" "$W" -- \
  env SHARDLAB_COMM_TIMEOUT=abc "$S" train "${M[@]}" --steps 1 --micro-batch 1
# Set on rank 1 alone (rank 0 starts fine and waits for it): rank 1's own line, naming it.
cat >"$W/on_rank1.sh" <<'EOF2'
#!/usr/bin/env bash
[ "${OMPI_COMM_WORLD_RANK:-}" != 1 ] || export SHARDLAB_COMM_TIMEOUT=abc
exec "$@"
EOF2
mpi_refused "(6) SHARDLAB_COMM_TIMEOUT=abc on rank 1 only: exit 2, said once, naming rank 1" 2 \
  "error \(rank 1\): SHARDLAB_COMM_TIMEOUT must be 0 \(never\) or at least 1 second, got 'abc'" "$W" -- \
  bash "$W/on_rank1.sh" "$S" train "${M[@]}" --steps 1 --micro-batch 1
# What one rank alone is given or reads — its flags, its command line, its --config file, its data — refused on
# that rank is the job's one line, naming the rank and the value; the others never wait for it (cli/command.h
# refuse_together). A wrapper gives rank 1 its own extra flags ($RANK1_ADDS) and working directory ($RANK1_IN).
mkdir -p "$W/r0" "$W/r1"
head -c 20000 data/corpus.txt >"$W/r0/c.txt" && cp "$W/r0/c.txt" "$W/r1/c.txt"
printf 'steps = 2\n' >"$W/r0/c.toml" && printf 'steps = 3\n' >"$W/r1/c.toml"
cat >"$W/rank1_own.sh" <<'EOF2'
#!/usr/bin/env bash
if [ "${OMPI_COMM_WORLD_RANK:-}" = 1 ]; then
  cd "${RANK1_IN:-.}" || exit 1
  if [ -n "${RANK1_COMMAND:-}" ]; then bin=$1 && shift 2 && exec "$bin" $RANK1_COMMAND "$@" ${RANK1_ADDS:-}; fi
  exec "$@" ${RANK1_ADDS:-}
fi
cd "${OTHERS_IN:-.}" && exec "$@"
EOF2
R1=(bash "$W/rank1_own.sh" "$S" train "${M[@]}" --micro-batch 1)
RANK1_ADDS="--steps abc" mpi_refused "(6) --steps abc on rank 1 only: one line from rank 1 naming it" 2 \
  "^shardlab train: error \(rank 1\): --steps expects an integer, got 'abc'" "$W" -- "${R1[@]}" --steps 1
RANK1_ADDS="--steps 9" mpi_refused "(6) another command line on rank 1: one line from rank 1, where it differs" 2 \
  "error \(rank 1\): its command line differs from rank 0's at argument [0-9]+: '--steps 9' \(rank 0: nothing\)" \
  "$W" -- "${R1[@]}" --steps 1
OTHERS_IN=$W/r0 RANK1_IN=$W/r1 mpi_refused "(6) rank 1's --config file says steps = 3, rank 0's 2: refused, naming both" 2 \
  "error \(rank 1\): its settings differ from rank 0's: steps is 3 here, 2 on rank 0" "$W" -- \
  "${R1[@]}" --config c.toml --data c.txt
RANK1_COMMAND=bench mpi_refused "(6) another command on rank 1 (bench, rank 0 train): one line from rank 1" 2 \
  "^shardlab: error \(rank 1\): its command line differs from rank 0's at argument 1: 'bench' \(rank 0: 'train'\)" \
  "$W" -- "${R1[@]}" --steps 1
RANK1_COMMAND=--help mpi_refused "(6) --help on rank 1 alone: one line from rank 1, no hang" 2 \
  "error \(rank 1\): its command line differs from rank 0's at argument 1: '--help' \(rank 0: 'train'\)" "$W" -- \
  "${R1[@]}" --steps 1
rm "$W/r1/c.txt"
OTHERS_IN=$W/r0 RANK1_IN=$W/r1 mpi_refused "(6) the data file missing on rank 1 only: one line from rank 1, exit 1" 1 \
  "error \(rank 1\): --data: 'c.txt' does not exist" "$W" -- "${R1[@]}" --steps 1 --data c.txt

# ---------------------------------------------------------------- (7) impossible sizes
timed_refusal() {  # timed_refusal NAME CODES PATTERN CMD...: refused, and within 5 s
  local t0=$SECONDS name=$1 codes=$2 pattern=$3
  shift 3
  refused "$name" "$codes" "$pattern" "$W/ck" -- "$@"
  [ $((SECONDS - t0)) -le 5 ] || fail "$name: within 5 s" "took $((SECONDS - t0)) s"
}
cp -r "$W/ck" "$W/huge"
python3 - "$W/huge/step_000002/meta.json" <<'EOF'
import json, sys
p = sys.argv[1]; m = json.load(open(p)); m["config"].update(hidden=65536, layers=64, heads=64); json.dump(m, open(p, "w"))
EOF
need_re="needs [0-9.]+ [kMGTP]?B per rank .*, but [0-9.]+ [kMGTP]?B is available.*--force-memory"
timed_refusal "(7) eval of a checkpoint claiming --hidden 65536 --layers 64: refused with both numbers" 2 "$need_re" \
  "$S" eval --load "$W/huge" --data "$tmp/small.txt" --progress none
timed_refusal "(7) sample of the same checkpoint: refused with both numbers" 2 "$need_re" "$S" sample --load "$W/huge" --tokens 3
timed_refusal "(7) bench --hidden 65536 --layers 64: refused with both numbers" 2 "$need_re" \
  "$S" bench --hidden 65536 --layers 64 --heads 64
timed_refusal "(7) bench --micro-batch 1000000 --seq 4096 (activations): refused with both numbers" 2 "$need_re.*" \
  "$S" bench --micro-batch 1000000 --seq 4096
ring_re="a payload of [0-9.]+ TB on [0-9]+ ranks? needs [0-9.]+ TB, but [0-9.]+ [kMGTP]?B is available"
timed_refusal "(7) ring --elements 1e12: refused with both numbers" 2 "$ring_re" "$S" ring --elements 1e12
timed_refusal "(7) ring --elements 5e11 --dtype f64: refused with both numbers" 2 "$ring_re" "$S" ring --elements 5e11 --dtype f64
mpi_refused "(7) ring --elements 1e12 under mpirun -np 2: refused once" 2 "$ring_re" "$W/ck" -- "$S" ring --elements 1e12
refused "(7) ring --elements 0: refused (no 'PASS' of nothing)" 2 "--elements expects at least 1 element" -- "$S" ring --elements 0
refused "(7) ring --sizes-mb with --elements: refused, never silently dropped" 2 "--sizes-mb sweeps .*: drop --elements" -- \
  "$S" ring --sizes-mb 1,4 --elements 1000
refused "(7) ring --sizes-mb with --dtype: refused" 2 "drop --dtype" -- "$S" ring --sizes-mb 1 --dtype f64
for c in eval bench sample; do
  "$S" $c --help >"$tmp/help_$c" 2>&1; grep -q -- '--force-memory' "$tmp/help_$c" && ok "(7) $c has --force-memory" || fail "(7) $c has --force-memory" "not in $c --help"
done
if truncate -s 1T "$tmp/terabyte.txt" 2>/dev/null; then  # sparse: no disk used
  mem_re="terabyte.txt' has 1099511627776 bytes, but only [0-9]+ bytes of memory are available"
  timed_refusal "(7) train --data a 1 TiB file: refused before reading, with both numbers" 1 "$mem_re" \
    "$S" train "${M[@]}" --steps 1 --data "$tmp/terabyte.txt"
  timed_refusal "(7) eval --data a 1 TiB file: refused before reading, with both numbers" 1 "$mem_re" \
    "$S" eval --load "$W/ck" --data "$tmp/terabyte.txt" --progress none
  rm -f "$tmp/terabyte.txt"
else
  echo "# (7) a 1 TiB sparse data file: skipped (this file system cannot hold one)"
fi

# ---------------------------------------------------------------- (8) damaged checkpoints under mpirun -np 2
for k in nan_bytes truncated meta_not_json nan_checksummed; do cp -r "$W/ck" "$W/mpi_$k"; done
python3 - "$W" <<'EOF'
import hashlib, json, os, struct, sys
w = sys.argv[1]
def middle(b):  # a float-aligned offset in the middle of the data section
    n = struct.unpack("<Q", b[:8])[0]; mid = 8 + n + (len(b) - 8 - n) // 2
    return mid - (mid - 8 - n) % 4
for k, f, fix in [("nan_bytes", "model.safetensors", False), ("nan_checksummed", "optimizer.safetensors", True)]:
    d = os.path.join(w, "mpi_" + k, "step_000002"); p = os.path.join(d, f); b = bytearray(open(p, "rb").read())
    at = middle(b); b[at:at + 16] = b"\xff\xff\xc0\x7f" * 4; open(p, "wb").write(b)
    if fix:  # another tool's diverged run: meta.json's checksum matches the NaN
        m = json.load(open(os.path.join(d, "meta.json")))
        m["files"][f] = {"sha256": hashlib.sha256(b).hexdigest(), "bytes": len(b)}
        json.dump(m, open(os.path.join(d, "meta.json"), "w"))
EOF
truncate -s -100 "$W/mpi_truncated/step_000002/model.safetensors"
echo '{"format_version": 1, "step": 2, ' >"$W/mpi_meta_not_json/step_000002/meta.json"
mpi_resume() {  # mpi_resume NAME PATTERN DIR
  mpi_refused "(8) mpirun -np 2 train --resume of $1: exit 1, the error once" 1 "$2" "$3" -- \
    "$S" train --resume "$3" --steps 4 --micro-batch 1 --progress none
}
mpi_resume "a model.safetensors overwritten with NaN bytes" "model.safetensors: checksum mismatch" "$W/mpi_nan_bytes"
mpi_resume "a truncated model.safetensors" "model.safetensors: size [0-9]+ bytes, meta.json says [0-9]+" "$W/mpi_truncated"
mpi_resume "a meta.json that is not JSON" "meta.json is damaged" "$W/mpi_meta_not_json"
mpi_resume "NaN in optimizer.safetensors with matching checksums" "tensor adam_[mv]\..* holds NaN or Inf" "$W/mpi_nan_checksummed"
cp -r "$W/ck" "$W/mpi_good"
runs "(8) ... while the undamaged copy resumes under mpirun -np 2" \
  timeout 30 bash scripts/mpirun.sh -np 2 "$S" train --resume "$W/mpi_good" --steps 3 --micro-batch 1 --progress none

# ---------------------------------------------------------------- (9) the smallest checkpoint holds the run's weights
N9=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 2 --eval-windows 4 --progress none
    --data "$tmp/small.txt" --lr-schedule constant --warmup 4)
refused "(9) train --steps 0 --save: refused (the smallest checkpoint is step 1), nothing created" 2 "--steps must be positive" "$W" -- \
  "$S" train "${N9[@]}" --steps 0 --save "$W/ck0"
[ ! -e "$W/ck0" ] || fail "(9) --steps 0 creates nothing" "$(ls -la "$W/ck0" | tr '\n' '|')"
"$S" train "${N9[@]}" --steps 3 --eval-every 1 --out "$W/fresh" >"$tmp/setup.log" 2>&1 || fail "setup: fresh 3 steps" "$(last "$tmp/setup.log")"
"$S" train "${N9[@]}" --steps 1 --save "$W/ck1" --out "$W/one" >"$tmp/setup.log" 2>&1 || fail "setup: 1 step --save" "$(last "$tmp/setup.log")"
runs "(9) the step-1 checkpoint resumes to step 3" "$S" train --resume "$W/ck1" --steps 3 --out "$W/one" --progress none
# eval's default split is the trainer's validation part of the same file (the last 10%).
ev=$("$S" eval --load "$W/ck1" --data "$tmp/small.txt" --max-windows 4 --batch 2 --progress none 2>&1 | awk '/^mean loss/ {print $3}')
fresh_val=$(awk -F, 'NR == 2 {print $6}' "$W/fresh/loss.csv")
if python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 1e-6 * abs(b) + 5e-7 else 1)' "$ev" "$fresh_val" 2>/dev/null; then
  ok "(9) eval of the step-1 checkpoint on the validation windows ($ev) = the fresh run's val_loss at step 1 ($fresh_val)"
else
  fail "(9) eval of the step-1 checkpoint = the fresh run's val_loss at step 1" "eval '$ev', fresh '$fresh_val'"
fi
fresh=$(step_losses "$W/fresh/loss.csv")
if [ "$(step_losses "$W/one/loss.csv")" = "$fresh" ] && [ "$(echo "$fresh" | wc -w)" = 3 ]; then
  ok "(9) the run resumed from step 1 logs steps 1..3 with the fresh run's losses, bit for bit: $fresh"
else
  fail "(9) resumed from step 1 = fresh" "resumed: $(step_losses "$W/one/loss.csv") fresh: $fresh"
fi

# ---------------------------------------------------------------- (10) --config files
cfg_refused() {  # cfg_refused NAME PATTERN TEXT
  printf "$3" >"$W/bad.toml"
  refused "(10) --config with $1: refused, exit 2" 2 "$2" "$W" -- "$S" train --config "$W/bad.toml" --data "$tmp/small.txt" --steps 1
}
# One rule for a repeated flag, in a config file as on the command line: the later one wins.
printf 'layers = 1\nlayers = 2\nsteps = 1\n' >"$W/dup.toml"
if timeout 60 "$S" train --config "$W/dup.toml" --layers 3 --layers 2 --hidden 32 --heads 2 --seq 32 --data "$tmp/small.txt" \
  --progress none --eval-windows 0 --out "$W/dup" >"$tmp/dup.log" 2>&1 && grep -q '^layers = 2$' "$W/dup/config.toml" &&
  timeout 60 "$S" train --config "$W/dup.toml" --hidden 32 --heads 2 --seq 32 --data "$tmp/small.txt" --progress none \
    --eval-windows 0 --out "$W/dup2" >>"$tmp/dup.log" 2>&1 && grep -q '^layers = 2$' "$W/dup2/config.toml"; then
  ok "(10) a key given twice in --config, a flag given twice on the command line: the later one wins in both (config.toml says 2)"
else
  fail "(10) repeated keys and flags: the later one wins" "$(last "$tmp/dup.log")"
fi
# ... switches too (CLI11 alone: "too many inputs for a flag"), and lines apart (CLI11 alone: the first one).
printf 'exact = true\nexact = false\nsteps = 1\n' >"$W/dup_switch.toml"
printf 'exact = false\nlayers = 2\nexact = true\nsteps = 1\nlayers = 1\n' >"$W/dup_apart.toml"
later_wins() {  # later_wins NAME WANT CMD...: runs, and its config.toml holds every line of WANT ("exact = true|...")
  local name=$1 want=$2 out=$W/later_$((later_n += 1)) line missing=""
  shift 2
  timeout 60 "$@" --hidden 32 --heads 2 --seq 32 --data "$tmp/small.txt" --progress none --eval-windows 0 --steps 1 \
    --out "$out" >"$tmp/later.log" 2>&1 </dev/null || { fail "(10) $name" "exit $?: $(last "$tmp/later.log")"; return; }
  IFS='|' read -ra lines <<<"$want"
  for line in "${lines[@]}"; do grep -qx "$line" "$out/config.toml" || missing+=" '$line'"; done
  if [ -z "$missing" ]; then ok "(10) $name: the later value wins (${want//|/, })"
  else fail "(10) $name: the later value wins" "config.toml lacks$missing: $(grep -E '^(exact|layers) =' "$out/config.toml" | tr '\n' ' ')"; fi
}
later_n=0
later_wins "exact = true, then exact = false on the next line" "exact = false" \
  "$S" train --config "$W/dup_switch.toml" --layers 1
later_wins "exact and layers each given twice, lines apart" "exact = true|layers = 1" "$S" train --config "$W/dup_apart.toml"
later_wins "--exact --exact=false on the command line" "exact = false" "$S" train --layers 1 --exact --exact=false
later_wins "--exact=false --exact on the command line" "exact = true" "$S" train --layers 1 --exact=false --exact
later_wins "--exact on the command line over the config's repeated exact" "exact = true" \
  "$S" train --config "$W/dup_switch.toml" --layers 1 --exact
cfg_refused "an array" "bad.toml line 1: 'layers' needs exactly one value, got '\[1, 2\]'" 'layers = [1, 2]\n'
cfg_refused "a [section]" "bad.toml line 2: config files hold flags only, no \[sections\]" 'layers = 1\n[model]\nhidden = 32\n'
cfg_refused "overwrite = 3" "bad.toml line 1: 'overwrite' is a switch: true or false, got '3'" 'overwrite = 3\n'
cfg_refused "overwrite = \"true\"" "'overwrite' is a switch: true or false" 'overwrite = "true"\n'
cfg_refused "two values on a line" "bad.toml line 1: 'layers' needs exactly one value, got '1 2'" 'layers = 1 2\n'
cfg_refused "two keys on a line" "bad.toml line 2: 'hidden' needs exactly one value" 'layers = 1\nhidden = 32 heads = 2\n'
cfg_refused "a key without a value" "bad.toml line 1: expected key = value" 'layers\n'
cfg_refused "an unknown key" "bogus" 'bogus = 1\n'
cfg_refused "a '#' inside a quoted value (read back as '\"a')" "bad.toml line 1: 'data' has a '#' in its value" 'data = "a#b"\n'
cfg_refused "a comment after the value" "bad.toml line 2: 'hidden' has a '#' in its value" 'layers = 1\nhidden = 32 # wide\n'
cfg_refused "a byte-order mark" "bad.toml starts with a byte-order mark" '\357\273\277layers = 1\n'
"$S" train "${M[@]}" --steps 2 --save "$W/ckX" --out "$W/X" >"$tmp/setup.log" 2>&1 || fail "setup: X" "$(last "$tmp/setup.log")"
"$S" train "${M[@]}" --steps 4 --out "$W/Y" >"$tmp/setup.log" 2>&1 || fail "setup: Y (4 straight steps)" "$(last "$tmp/setup.log")"
cp "$W/X/config.toml" "$W/x.toml"
runs "(10) train --config X/config.toml --out X2 runs" "$S" train --config "$W/X/config.toml" --out "$W/X2"
if [ -n "$(step_losses "$W/X/loss.csv")" ] && [ "$(step_losses "$W/X2/loss.csv")" = "$(step_losses "$W/X/loss.csv")" ]; then
  ok "(10) ... and reproduces X's losses bit for bit"
else
  fail "(10) config.toml reproduces the run" "X: $(step_losses "$W/X/loss.csv") X2: $(step_losses "$W/X2/loss.csv")"
fi
runs "(10) train --config (X's config.toml) --resume ckX --steps 4 continues X in place" \
  "$S" train --config "$W/x.toml" --resume "$W/ckX" --steps 4 --out "$W/X" --save "$W/ckX"
if [ "$(tail -n +2 "$W/X/loss.csv" | cut -d, -f1 | tr '\n' ' ')" = "1 2 3 4 " ] && [ "$(cat "$W/ckX/latest")" = step_000004 ] &&
   "$S" compare "$W/Y" "$W/X" --rtol 0 >"$tmp/cmp" 2>&1; then
  ok "(10) ... at step 3: X/loss.csv holds steps 1..4, bit-identical to 4 straight steps (compare --rtol 0)"
else
  fail "(10) continued at the next step" "steps $(tail -n +2 "$W/X/loss.csv" | cut -d, -f1 | tr '\n' ' '): $(tail -n 1 "$tmp/cmp")"
fi
runs "(10) the resumed run's own config.toml (resume = its step_000002) runs again into X3" \
  "$S" train --config "$W/X/config.toml" --out "$W/X3"
if [ "$(step_losses "$W/X3/loss.csv")" = "$(step_losses "$W/X/loss.csv" | cut -d' ' -f3-)" ]; then
  ok "(10) ... continuing from step 2's checkpoint: X3 logs exactly X's steps 3 and 4 ($(step_losses "$W/X3/loss.csv"))"
else
  fail "(10) a resumed run's config.toml resumes" "X3: $(step_losses "$W/X3/loss.csv") X: $(step_losses "$W/X/loss.csv")"
fi

# ---------------------------------------------------------------- (11) compare on malformed loss.csv
bad_csv() {  # bad_csv NAME PATTERN PYTHON_EDIT (of `rows`, the lines of loss.csv)
  local d=$W/csv_$1
  cp -r "$W/run" "$d"
  python3 - "$d/loss.csv" "$3" <<'EOF'
import sys
p = sys.argv[1]; rows = open(p, newline="").read().split("\n")
def cell(r, i, v):  # row r (0: the header), column i := v
    c = rows[r].split(","); c[i] = v; rows[r] = ",".join(c)
exec(sys.argv[2]); open(p, "w", newline="").write("\n".join(rows))
EOF
  refused "(11) compare on a loss.csv with $1: refused" 1 "$2" "$d" "$W/run" -- "$S" compare "$W/run" "$d"
}
bad_csv "an inf loss" "loss.csv' line 2: the loss is not a finite number" "cell(1, 1, 'inf')"
bad_csv "a nan loss" "loss.csv' line 3: the loss is not a finite number" "cell(2, 1, 'nan')"
bad_csv "an empty loss cell" "loss.csv' line 2: the loss is not a finite number" "cell(1, 1, '')"
bad_csv "step 1.5" "loss.csv' line 2: step '1.5[0-9]*' is not a positive integer" "cell(1, 0, '1.5')"
bad_csv "step 0" "loss.csv' line 2: step '0[.0-9]*' is not a positive integer" "cell(1, 0, '0')"
bad_csv "decreasing steps" "loss.csv' line 3: step 1 does not follow the previous one" 'rows[1], rows[2] = rows[2], rows[1]'
bad_csv "a repeated step" "loss.csv' line 3: step 1 does not follow the previous one" 'rows[2] = rows[1]'
bad_csv "missing cells" "loss.csv' line 2: 3 cells for 6 columns" 'rows[1] = ",".join(rows[1].split(",")[:3])'
bad_csv "a loss '5.5x'" "loss.csv' line 3: '5.5x' is not a number" "cell(2, 1, '5.5x')"
bad_csv "no header" "is not a loss.csv \(no step,loss header\)" 'rows = rows[1:]'
cp -r "$W/run" "$W/csv_crlf" && sed -i 's/$/\r/' "$W/csv_crlf/loss.csv"
if grep -q $'\r$' "$W/csv_crlf/loss.csv" && "$S" compare "$W/run" "$W/csv_crlf" --rtol 0 >"$tmp/cmp" 2>&1 &&
   grep -q "over 2 steps.*PASS (bit-identical)" "$tmp/cmp"; then
  ok "(11) a loss.csv with CRLF line endings is read (as io/loss_log.cpp does): compare --rtol 0 passes over its 2 steps"
else
  fail "(11) CRLF loss.csv accepted" "$(tail -n 2 "$tmp/cmp" | tr '\n' '|')"
fi

# ---------------------------------------------------------------- (12) unknown flags
refused "(12) bench --out x (bench has no --out)" 2 "not expected: --out x\$" "$W" -- "$S" bench --out x
refused "(12) train --bogus" 2 "not expected: --bogus\$" "$W" -- "$S" train --bogus
refused "(12) train --bogus a --bogus2 b: named in the order typed" 2 "not expected: --bogus a --bogus2 b\$" "$W" -- \
  "$S" train --bogus a --bogus2 b
refused "(12) eval --load ck --bogus 1" 2 "not expected: --bogus 1\$" "$W" -- "$S" eval --load "$W/ck" --bogus 1
refused "(12) sample --steps 3 (sample has no --steps)" 2 "not expected: --steps 3\$" "$W" -- "$S" sample --load "$W/ck" --steps 3
refused "(12) ring --out x" 2 "not expected: --out x\$" "$W" -- "$S" ring --out x
refused "(12) plot RUN --zork" 2 "not expected: --zork\$" "$W" -- "$S" plot "$W/run" --zork

# ---------------------------------------------------------------- (13) swamping ranges that overflow
for a in "--weight 1e38" "--weight -3e38" "--update 1e31 --steps 10000000" "--update -2e30 --steps 100000000" \
         "--weight 5e37 --update 5e37 --steps 1" "--weight 1e308"; do
  # shellcheck disable=SC2086
  refused "(13) swamping $a: refused" 2 "must stay below 1e38" "$W" -- "$S" swamping $a
done
if out=$("$S" swamping --weight 9e37 --update 1e28 --steps 1 2>&1) && grep -q "^result: exact=9e+37" <<<"$out"; then
  ok "(13) ... while --weight 9e37 --update 1e28 --steps 1, just below, runs"
else
  fail "(13) swamping just below the limit runs" "$(tail -n 2 <<<"$out" | tr '\n' '|')"
fi

# ---------------------------------------------------------------- (14) settings that make a run diverge
D14=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 1 --global-batch 2 --eval-windows 0 --progress none
     --data "$tmp/small.txt" --steps 3)
diverges() {  # diverges NAME PATTERN FLAGS...: exit 1 with one line matching PATTERN that does not blame --lr
  local name=$1 pattern=$2
  shift 2
  refused "(14) $name: exit 1, named" 1 "$pattern" "$W" -- "$S" train "${D14[@]}" "$@"
  ! grep -q "try a lower --lr" "$tmp/r.err" || fail "(14) $name: named, not the generic advice to lower --lr" "$(head -c 300 "$tmp/r.err")"
}
update="the loss became NaN at step 2: the update of step 1 made the weights too large or non-finite"
diverges "--weight-decay 1e300" \
  "$update.*; --weight-decay 1e\+300 is implausible \(each update multiplies a decayed weight by 1 − lr·wd = -4e\+297" \
  --weight-decay 1e300
diverges "--optimizer sgd --weight-decay 1e300" "--weight-decay 1e\+300 is implausible" --optimizer sgd --weight-decay 1e300
diverges "--moe-aux-loss 1e300" \
  "the gradients became (NaN|[+-]Inf) in step 1, whose loss .* was finite.*--moe-aux-loss 1e\+300 is implausible" \
  --moe-experts 2 --moe-aux-loss 1e300
diverges "--moe-z-loss 1e300" "the gradients became (NaN|[+-]Inf) in step 1.*--moe-z-loss 1e\+300 is implausible" \
  --moe-experts 2 --moe-z-loss 1e300
diverges "--lr 1e300" "$update.*; --lr 1e\+300 is implausible" --lr 1e300
! grep -q "weight-decay.*implausible" "$tmp/r.err" || fail "(14) --lr 1e300: the default --weight-decay not blamed" "$(head -c 300 "$tmp/r.err")"
diverges "--eps 1e-300 --beta2 0 (0 in f32)" "--eps 1e-300 is implausible \(it is 0 in f32" --eps 1e-300 --beta2 0
diverges "--weight-decay 1e300 --save-every 1: the save refuses step 1 and says why" \
  "step 1 is not saved; --weight-decay 1e\+300 is implausible" --weight-decay 1e300 --save "$tmp/ck14" --save-every 1
[ ! -e "$tmp/ck14/latest" ] || fail "(14) the diverged step 1 is not saved" "$(ls "$tmp/ck14")"
mpi_refused "(14) --moe-aux-loss 1e300 under mpirun -np 2: every rank stops at the gradients, said once" 1 \
  "gradients became .* in step 1.*--moe-aux-loss 1e\+300 is implausible" "$W" -- \
  "$S" train "${D14[@]}" --moe-experts 2 --moe-aux-loss 1e300
# A divergence no setting explains by its rules (--lr 1, no warmup, no clipping): the settings listed, --lr advised.
refused "(14) --lr 1 with no warmup and no clipping: the settings listed, none implausible, try a lower --lr" 1 \
  "the gradients became NaN in step [0-9]+, .*: --lr 1, none implausible: try a lower --lr" "$W" -- \
  "$S" train "${D14[@]}" --micro-batch 2 --steps 60 --lr 1 --warmup 0 --lr-schedule constant --clip 0 \
  --weight-decay 0 --beta2 0.01 --eps 1e-30

# ---------------------------------------------------------------- (15) long values in messages
# A 100 kB value, wherever a message quotes it: its two ends around "…", the line short (core/error_line.h).
long=$W/$(head -c 100000 /dev/zero | tr '\0' a)-end.txt
long_word=$(head -c 100000 /dev/zero | tr '\0' x)-end
shortened() {  # shortened NAME CODES CMD...: refused in one line under 400 bytes, shortened with "…", its end kept
  local name=$1 codes=$2
  shift 2
  refused "(15) $name: one line" "$codes" "…[a-z]*-end" "$W" -- "$@"
  [ "$(wc -c <"$tmp/r.err")" -lt 400 ] || fail "(15) $name: shortened" "$(wc -c <"$tmp/r.err") bytes: $(head -c 200 "$tmp/r.err")"
}
shortened "train --data a 100 kB path" 1 "$S" train "${M[@]}" --steps 1 --data "$long"
shortened "train --config a 100 kB path" 2 "$S" train --config "$long"
shortened "train --lr 100 kB of digits" 2 "$S" train --lr "1$long_word"
shortened "train --optimizer a 100 kB word" 2 "$S" train --optimizer "$long_word"
shortened "train --bogus and a 100 kB word" 2 "$S" train --bogus "$long_word"
shortened "eval --load a 100 kB path" 1 "$S" eval --load "$long"
shortened "compare of a 100 kB path" 1 "$S" compare "$long" "$W/run"
shortened "plot of a 100 kB path" 1 "$S" plot "$long"
shortened "plan --ledger a 100 kB path" "1 2" "$S" plan --ledger "$long"
shortened "a 100 kB command name" 2 "$S" "$long_word"
# ... and a path the file system cannot look at: a sentence naming the flag, not the library's own text.
refused "(15) train --out a name too long for the file system: the flag and the reason" 2 \
  "--out: cannot create directory '[^']*…[^']*' \(File name too long\)" "$W" -- "$S" train "${M[@]}" --steps 1 --out "$long"
refused "(15) train --save under a regular file: the flag and the reason" 2 "--save: cannot create directory '.*' \(Not a directory\)" \
  "$W" -- "$S" train "${M[@]}" --steps 1 --save "$W/run/loss.csv/ck"
! grep -q "filesystem error" "$tmp/r.err" || fail "(15) no library text" "$(cat "$tmp/r.err")"

[ "$fails" = 0 ]
