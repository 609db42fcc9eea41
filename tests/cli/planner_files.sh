#!/usr/bin/env bash
# The planner's files as safe as the trainer's, each family through its one mechanism:
#  (1) outputs: `plan --predict --json`, `plan --search --json` and `plan --calibrate --out` go through the owned-files
#      rules (io/owned_files.h output_file_problem): never a file shardlab did not write (the corpus, a person's file),
#      never one another command wrote (a run's ledger.json, another command's JSON), never one of the command's own
#      inputs (--rates, the --run directory's files), never a symlink, FIFO or device (/dev/full stays a device);
#      the command's own earlier output is replaced;
#  (2) inputs: the rates file and `plan --calibrate --run`'s files through core/paths.h (a FIFO, /dev/zero, a 3 GB
#      sparse file, a NUL byte followed by garbage: refused at once, nothing read whole);
#  (3) rates within one set of bounds (plan/rates_file.h): a rates file or a flag of 1e-300 or 1e300 FLOP/s, a
#      --gpu-mem of 1e300, each refused naming the range — never a "-nan" or a 300-digit time;
#  (4) `plan --calibrate --run DIR` refuses what it cannot time: a step time of −50, 0, nan or 1e300 ms, 0 steps, a
#      configuration the trainer would not start (a micro-batch of −4, an unknown attention kernel), a model larger
#      than the machine (naming --force-memory, which it takes), a number no double holds (1e400: the file and the
#      key named) — and writes nothing;
#  (5) loss.csv: a write that fails half-way (a file-size limit standing in for a full disk) leaves whole rows, which
#      compare and plot read; a file that ends inside a row is read up to it, the reader naming the row.
# Every refusal: the exit code within 20 s, exactly one stderr line, no crash dump, the files unchanged.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_refused.sh"

W=$tmp/w
mkdir -p "$W"
T=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 4 --progress none --eval-windows 0
   --data "$tmp/small.txt")
P=(--predict --np 2 --layers 2 --hidden 64 --heads 4 --seq 32 --global-batch 4 --micro-batch 2)
"$S" train "${T[@]}" --steps 6 --out "$W/run" >"$tmp/setup.log" 2>&1 || fail "setup: a 1-rank run" "$(last "$tmp/setup.log")"
printf '{"gpu_flops": 2e10, "bytes_per_s": 5e9, "latency_s": 2e-6}\n' >"$W/rates.json"
cp data/corpus.txt "$W/corpus.txt"
echo "my notes" >"$W/notes.json"

# ---------------------------------------------------------------- (1) outputs
refused "(1) plan --predict --json over the corpus: refused, the corpus kept" 2 "corpus.txt' was not written by shardlab" \
  "$W" -- "$S" plan "${P[@]}" --json "$W/corpus.txt"
refused "(1) plan --search --json over a person's file" 2 "notes.json' was not written by shardlab" "$W" -- \
  "$S" plan --search --gpus 8 --json "$W/notes.json"
refused "(1) plan --predict --json over its own --rates input" 2 "is one of the command's inputs" "$W" -- \
  "$S" plan "${P[@]}" --rates "$W/rates.json" --json "$W/rates.json"
refused "(1) plan --predict --json over a run's ledger.json" 2 "ledger.json' was written by a run of shardlab" "$W" -- \
  "$S" plan "${P[@]}" --json "$W/run/ledger.json"
ln -s notes.json "$W/link.json"
refused "(1) plan --predict --json to a symlink: refused, the link kept" 2 "link.json' is not a regular file \(a symbolic link\)" \
  "$W" -- "$S" plan "${P[@]}" --json "$W/link.json"
mkfifo "$W/out.fifo"
refused "(1) plan --predict --json to a FIFO: refused at once" 2 "out.fifo' is not a regular file \(a FIFO\)" "$W" -- \
  "$S" plan "${P[@]}" --json "$W/out.fifo"
refused "(1) plan --predict --json /dev/full: refused" 2 "/dev/full' is not a regular file \(a device\)" -- \
  "$S" plan "${P[@]}" --json /dev/full
[ -c /dev/full ] && ok "(1) ... and /dev/full is still a device" || fail "(1) /dev/full is still a device" "$(ls -l /dev/full)"
runs "(1) plan --predict --json a new file: written" "$S" plan "${P[@]}" --json "$W/p.json"
runs "(1) plan --predict --json over its own earlier output: replaced" "$S" plan "${P[@]}" --tp 2 --json "$W/p.json"
grep -q '"tp": 1' "$W/p.json" && ok "(1) ... with the new prediction (tp 2)" || fail "(1) the new prediction written" "$(head -c 200 "$W/p.json")"
refused "(1) plan --search --json over plan --predict's output: refused, another command's" 2 \
  "p.json' was written by \`plan --predict --json\`, not by \`plan --search --json\`" "$W" -- \
  "$S" plan --search --gpus 8 --json "$W/p.json"
echo " " >>"$W/p.json"
refused "(1) plan --predict --json over its output changed since: refused" 2 "p.json' was changed since shardlab wrote it" \
  "$W" -- "$S" plan "${P[@]}" --json "$W/p.json"
mpi_refused "(1) plan --calibrate --out over the --run's loss.csv: refused, the run kept" 2 "is one of the command's inputs" \
  "$W" -- "$S" plan --calibrate --run "$W/run" --out "$W/run/loss.csv"
"$S" plan "${P[@]}" --json "$W/p2.json" >/dev/null 2>&1 || fail "setup: a prediction p2.json" "exit $?"
mpi_refused "(1) plan --calibrate --out over plan --predict's output: refused" 2 "was written by \`plan --predict --json\`" \
  "$W" -- "$S" plan --calibrate --run "$W/run" --out "$W/p2.json"

# ---------------------------------------------------------------- (2) inputs through core/paths.h
mkfifo "$W/rates.fifo"
refused "(2) --rates a FIFO: refused at once, never blocks" 2 "rates.fifo' is not a regular file \(a FIFO\)" -- \
  "$S" plan "${P[@]}" --rates "$W/rates.fifo"
refused "(2) --rates /dev/zero: refused, never read" 2 "/dev/zero' is not a regular file \(a device\)" -- \
  "$S" plan "${P[@]}" --rates /dev/zero
truncate -s 3G "$W/huge.json"
refused "(2) --rates a 3 GB sparse file: refused by its size, not read whole" 2 "huge.json" -- \
  "$S" plan "${P[@]}" --rates "$W/huge.json"
rm -f "$W/huge.json"
printf '{"gpu_flops": 2e10, "bytes_per_s": 5e9, "latency_s": 2e-6}\0garbage' >"$W/nul.json"
refused "(2) --rates with a NUL byte and garbage after the JSON: refused" 2 "NUL byte" -- \
  "$S" plan --search --gpus 8 --rates "$W/nul.json"
cp -r "$W/run" "$W/fiforun" && rm "$W/fiforun/loss.csv" && mkfifo "$W/fiforun/loss.csv"
mpi_refused "(2) plan --calibrate --run whose loss.csv is a FIFO: refused at once" 2 "loss.csv' is not a regular file \(a FIFO\)" \
  -- "$S" plan --calibrate --run "$W/fiforun" --out "$W/r.json"
cp -r "$W/run" "$W/nulrun" && printf '{"world_size": 1\0}' >"$W/nulrun/ledger.json"
mpi_refused "(2) plan --calibrate --run whose ledger.json holds a NUL byte: refused" 2 "NUL byte" -- \
  "$S" plan --calibrate --run "$W/nulrun" --out "$W/r.json"

# ---------------------------------------------------------------- (3) rates within bounds
for v in 1e-300 1e300 -1; do
  printf '{"gpu_flops": %s, "bytes_per_s": 5e9, "latency_s": 2e-6}\n' "$v" >"$W/bad_rates.json"
  refused "(3) a rates file of gpu_flops $v: refused, naming the range" 2 "gpu_flops = .* is not in \[1e\+06, 1e\+18\] FLOP/s" \
    -- "$S" plan "${P[@]}" --rates "$W/bad_rates.json"
done
refused "(3) plan --search --gpu-tflops 1e-300: refused, naming the range" 2 "--gpu-tflops = 1e-300 is not in \[1e-06, 1e\+06\] TFLOPS" \
  -- "$S" plan --search --gpus 8 --gpu-tflops 1e-300
refused "(3) plan --search --latency-us 1e300: refused" 2 "--latency-us = 1e\+300 is not in" -- \
  "$S" plan --search --gpus 8 --latency-us 1e300
refused "(3) plan --search --gpu-mem 1e300: refused, naming the range (not 'a positive number')" 2 \
  "--gpu-mem expects a number of GB above 0 and at most 1e9, got 1e\+300" -- "$S" plan --search --gpus 8 --gpu-mem 1e300
"$S" plan --search --gpus 8 --gpu-tflops 1e-6 --intra-gbps 1e-6 --inter-gbps 1e-6 >"$tmp/slow.out" 2>&1
if grep -Eq 'nan|inf|[0-9]{40}' "$tmp/slow.out"; then fail "(3) the slowest rates allowed: plain numbers" "$(grep -Em1 'nan|inf|[0-9]{40}' "$tmp/slow.out" | cut -c1-160)"
else ok "(3) the slowest rates allowed print plain numbers (no nan, no 40-digit times)"; fi

# ---------------------------------------------------------------- (4) calibrate --run: what it cannot time
bad_run() {  # bad_run NAME PATTERN EDIT: a copy of the run, edited by EDIT (run in the copy), refused, nothing written
  local d=$W/bad$((++nbad))
  cp -r "$W/run" "$d"
  (cd "$d" && eval "$3")
  mpi_refused "(4) --run with $1: refused, no rates written" 2 "$2" "$d" -- "$S" plan --calibrate --run "$d" \
    --out "$W/rates_$nbad.json"
  [ -e "$W/rates_$nbad.json" ] && fail "(4) --run with $1: no rates file" "$W/rates_$nbad.json written"
}
nbad=0
for ms in -50 0 nan 1e300; do
  bad_run "a step time of $ms ms" "step 3's ms is .*not the milliseconds a step took" \
    "python3 -c 'import sys; l = open(\"loss.csv\").read().split(\"\\n\"); c = l[0].split(\",\").index(\"ms\"); r = l[3].split(\",\"); r[c] = \"$ms\"; l[3] = \",\".join(r); open(\"loss.csv\", \"w\").write(\"\\n\".join(l))'"
done
bad_run "0 steps in its ledger" "layout.steps is 0, outside \[1, " "sed -i 's/\"steps\": [0-9]*/\"steps\": 0/' ledger.json"
bad_run "a micro-batch of -4 in its config" "config.json" "sed -i 's/\"micro-batch\": [0-9]*/\"micro-batch\": -4/' config.json"
bad_run "an unknown attention kernel in its config" "config.json is not a configuration of train: --attention" "sed -i 's/\"attention\": \"naive\"/\"attention\": \"fancy\"/' config.json"
bad_run "a model of hidden 1,000,000" "force-memory" "sed -i 's/\"hidden\": [0-9]*/\"hidden\": 1000000/; s/\"heads\": [0-9]*/\"heads\": 1/' config.json"
# Numbers no double holds, in either file: the file and the key named, never the JSON library's own text.
bad_run "\"block_forward\": 1e400 in its ledger" \
  "ledger.json' is damaged: number overflow parsing '1e400', at \"ranks\[0\]\.flops\.block_forward\"" \
  "sed -i '0,/\"block_forward\": [-0-9.e+]*/s//\"block_forward\": 1e400/' ledger.json"
bad_run "a seed of -1e999 in its config" "config.json' is damaged: number overflow parsing '-1e999', at \"seed\"" \
  "sed -i 's/\"seed\": [0-9]*/\"seed\": -1e999/' config.json"

# ---------------------------------------------------------------- (5) loss.csv cut short
(trap '' XFSZ; ulimit -f 4; exec "$S" train "${T[@]}" --steps 300 --out "$W/full") >"$tmp/full.out" 2>"$tmp/full.err"
rc=$?
line=$(grep -m1 'loss.csv' "$tmp/full.err")
if [ $rc != 0 ] && [[ $line == *"cannot write"*"are kept, whole"* ]] && [ "$(tail -c 1 "$W/full/loss.csv" | od -An -c | tr -d ' ')" = '\n' ]; then
  ok "(5) a loss.csv write that fails (a 4 kB file limit): exit $rc, the file cut back to whole rows ($(($(wc -l <"$W/full/loss.csv") - 1)) rows)"
else
  fail "(5) a failed write leaves whole rows" "exit $rc; '$line'; the file ends in '$(tail -c 20 "$W/full/loss.csv" | tr '\n' '|')'"
fi
if "$S" compare "$W/full" "$W/full" --rtol 0 >"$tmp/c.out" 2>"$tmp/c.err" && ! grep -q warning "$tmp/c.err" &&
  "$S" plot "$W/full" --out "$W/full.svg" >/dev/null 2>&1; then
  ok "(5) ... and compare and plot read it, with no warning"
else
  fail "(5) compare and plot read the cut-back file" "$(head -c 300 "$tmp/c.err")"
fi
mkdir -p "$W/torn" && cp "$W/run/loss.csv" "$W/torn/" && cp "$W/run/config.json" "$W/torn/"
printf '7,2.03156935,1.1192704,0.00392159495239' >>"$W/torn/loss.csv"
if "$S" compare "$W/run" "$W/torn" >"$tmp/t.out" 2>"$tmp/t.err" &&
  grep -q "loss.csv' line 8 (\"7,2.03156935,1.1192704,0.0039215949523.\") ends inside its row.*read the 6 whole rows before it" "$tmp/t.err"; then
  ok "(5) a loss.csv that ends inside a row: compare reads its whole rows and names the torn one"
else
  fail "(5) compare names the torn row" "exit $?: $(head -c 300 "$tmp/t.err")"
fi
if "$S" plot "$W/torn" --out "$W/torn.svg" >/dev/null 2>"$tmp/p.err" && grep -q "line 8.*ends inside its row" "$tmp/p.err"; then
  ok "(5) ... and plot draws it, naming the torn row"
else
  fail "(5) plot names the torn row" "$(head -c 300 "$tmp/p.err")"
fi
exit $((fails > 0))
