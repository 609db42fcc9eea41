#!/usr/bin/env bash
# Hostile and unusual input to the pipeline, tensor-parallel and 3D features, each family on several members:
#  (1) the pipeline grids show every forward and backward: `schedule` with a backward shorter than a cell
#      (--backward-cost 0.5, 0.0001) and `trace` of a measured step whose first forward is short; the
#      schedule's --svg title keeps a fractional backward cost, and its refusals name --svg, not --out;
#  (2) `trace` of a pp run whose ledger.json pipeline section was edited (removed to a string, null, {},
#      stages 0 / -3 / 10^9, micro_batches 0 / 2·10^9, virtual_stages 0, an unknown schedule, a slot that is
#      not the schedule's, out of order, cut short, a stage row missing, measured_step a string): exit 1
#      within 20 s with one line naming ledger.json, never a hang, a raw JSON exception or a grid of garbage;
#      the untouched section still prints every stage;
#  (3) `plan --ledger` of an edited pp/tp ledger: sizes no run can have (layers 10^9, accum 10^9, heads 0,
#      hidden 0, heads not dividing hidden) and a pipeline section that is not the layout's schedule (removed,
#      its bubble, stash or micro-batches edited) are one line and exit 2 within 20 s (never a hang); a stage's
#      parameter count changed is a MISMATCH (exit 1); the 8-rank 3D ledger (recompute full, flash, ZeRO-3)
#      matches;
#  (4) `plan --pp` keeps the trainer's pipeline rules: more stages (× virtual stages) than layers, interleaved
#      with layers not divisible by p·v, interleaved with --micro-batches not a multiple of p, --fsdp hybrid
#      with --pp: exit 2;
#  (5) `mlp-split` on one process (t = 1): no all-reduce is needed and none is counted — exit 0;
#  (6) schedule.svg is one of a run's outputs: a person's schedule.svg in --out is refused and kept; a run
#      replacing another with --overwrite, or resuming its own traced pp run at pp 1 into its --out, leaves
#      no schedule.svg or trace.json of before beside its new ledger.json;
#  (7) --pp × --virtual-stages past 2^31 (and --pp, --tp, --dp at 2^31 − 1) refused with the true numbers;
#  (8) already right, and tested nowhere else: malformed --pp-layers (empty item, negative, zero, trailing
#      comma, 10^20, letters, too many, too few), --tp/--pp/--virtual-stages 0, --fsdp hybrid with --pp,
#      --ranks-per-node not dividing the world; `schedule` and `plan` flag bounds (0, negative, huge,
#      non-numeric); eval and sample of an interleaved tp 2 × pp 2 checkpoint, on 1 rank and under mpirun,
#      and its resume onto pp 4, onto pp 2 --pp-layers 3,1 with gpipe and onto 1 process;
#  (9) --config values with a comma, unquoted (pp-layers = 3,1, a data path): the reader would keep one part
#      ('1'), so they are refused with the quoted form; quoted they run, and a --pp-layers run's config.toml
#      trains it again bit for bit.
# Every refusal: the expected exit code, exactly one error line (from rank 0 under mpirun: --tag-output
# says which rank wrote it), no crash dump. Prints one `ok - ...` / `FAIL - ... (why)` line per check;
# exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then echo "FAIL - mpirun exists (no OpenMPI: make deps installs it)"; exit 1; fi
W=$tmp/w
mkdir -p "$W"
R=(--layers 4 --hidden 32 --heads 2 --seq 32 --eval-windows 0 --progress none --data "$tmp/small.txt"
   --global-batch 2 --micro-batch 1 --steps 2)
crash_re='terminate called|what\(\)|Assertion|Aborted|core dumped|Segmentation|bad_alloc|json\.exception|MPI_ABORT'
mpi() { timeout -k 5 60 bash scripts/mpirun.sh --tag-output -np "$@" </dev/null; }

# refused NAME CODES PATTERN CMD...: one process; an exit code among CODES within 20 s, exactly one stderr
# line, a shardlab error matching PATTERN, no crash dump.
refused() {
  local name=$1 codes=$2 pattern=$3 rc line why=()
  shift 3
  timeout -k 5 20 "$@" >"$tmp/r.out" 2>"$tmp/r.err" </dev/null
  rc=$?
  line=$(head -n 1 "$tmp/r.err")
  if [ $rc = 124 ] || [ $rc = 137 ]; then why+=("no exit within 20 s")
  elif [[ " $codes " != *" $rc "* ]]; then why+=("exit $rc, expected ${codes// / or }"); fi
  [ "$(wc -l <"$tmp/r.err")" = 1 ] || why+=("$(wc -l <"$tmp/r.err") stderr lines: $(head -c 300 "$tmp/r.err" | tr '\n' '|')")
  [[ "$line" == shardlab* && "$line" == *error* ]] || why+=("not a shardlab error line: '${line:0:200}'")
  grep -Eq -- "$pattern" "$tmp/r.err" || why+=("no /$pattern/ in '${line:0:300}'")
  if grep -Eq "$crash_re" "$tmp/r.err" "$tmp/r.out"; then why+=("crash dump or raw exception"); fi
  if [ ${#why[@]} = 0 ]; then ok "$name"; else fail "$name" "$(printf '%s; ' "${why[@]}" | sed 's/; $//')"; fi
}
# mpi_refused NAME NP CODE PATTERN CMD...: under mpirun -np NP, exit CODE, exactly one line naming shardlab —
# rank 0's error matching PATTERN — and no crash dump (OpenMPI's own banner after it is expected).
mpi_refused() {
  local name=$1 np=$2 code=$3 pattern=$4 rc lines why=()
  shift 4
  mpi "$np" "$@" >"$tmp/m.out" 2>&1
  rc=$?
  [ "$rc" = "$code" ] || why+=("exit $rc, expected $code$([ "$rc" = 124 ] || [ "$rc" = 137 ] && echo ': no exit within 60 s')")
  lines=$(grep shardlab "$tmp/m.out")
  if [ "$(grep -c shardlab "$tmp/m.out")" != 1 ]; then
    why+=("$(grep -c shardlab "$tmp/m.out") lines name shardlab: $(head -n 3 <<<"$lines" | tr '\n' '|')")
  else
    grep -q '^\[[0-9]*,0\]<stderr>:shardlab [a-z-]*: error' <<<"$lines" || why+=("not rank 0's error: '$lines'")
    grep -Eq -- "$pattern" <<<"$lines" || why+=("error does not match /$pattern/: '$lines'")
  fi
  if grep -Eq "$crash_re" "$tmp/m.out"; then why+=("crash dump: $(grep -Eh "$crash_re" "$tmp/m.out" | head -n 2 | tr '\n' '|')"); fi
  if [ ${#why[@]} = 0 ]; then ok "$name"; else fail "$name" "$(printf '%s; ' "${why[@]}" | sed 's/; $//')"; fi
}
runs() {  # runs NAME [-np N] CMD...: exit 0 within 60 s (under mpirun with -np N), no crash dump
  local name=$1 rc
  shift
  if [ "$1" = -np ]; then mpi "$2" "${@:3}" >"$tmp/ok.log" 2>&1; else timeout -k 5 60 "$@" >"$tmp/ok.log" 2>&1 </dev/null; fi
  rc=$?
  if [ $rc = 0 ] && ! grep -Eq "$crash_re" "$tmp/ok.log"; then ok "$name"; else fail "$name" "exit $rc: $(last "$tmp/ok.log")"; fi
}
# every_slot NAME FILE M V: every "stage N |" row of FILE shows each of the M·V forwards and backwards.
every_slot() {
  local name=$1 file=$2 m=$3 v=$4 missing
  missing=$(python3 - "$file" "$m" "$v" <<'EOF'
import re, sys
f, m, v = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [l for l in open(f) if re.match(r"\s*stage \d+ \|", l)]
want = [a + str(i) + ("abcdefgh"[c] if v > 1 else "") for a in "FB" for i in range(m) for c in range(v)]
bad = [l.split("|")[0].strip() + " lacks " + w for l in rows for w in want if w not in l.split("|")[1].split()]
print("; ".join(bad[:3]) if rows else "no grid")
EOF
)
  if [ -z "$missing" ]; then ok "$name"; else fail "$name" "$missing"; fi
}

# ---------------------------------------------------------------- setup: a traced pp run with a checkpoint
mpi 2 "$S" train "${R[@]}" --pp 2 --trace on --out "$W/pp" >"$tmp/setup.log" 2>&1 ||
  fail "setup: -np 2 --pp 2 --trace on --out pp" "$(last "$tmp/setup.log")"
mpi 4 "$S" train "${R[@]}" --global-batch 4 --steps 3 --pp 2 --tp 2 --schedule interleaved --virtual-stages 2 \
  --save "$W/ck" >"$tmp/setup.log" 2>&1 || fail "setup: -np 4 tp 2 × pp 2 interleaved --save ck" "$(last "$tmp/setup.log")"

# ---------------------------------------------------------------- (1) every slot in the grids
for b in 0.5 0.0001 2 7; do
  "$S" schedule --pp 2 --micro-batches 2 --backward-cost $b >"$tmp/g.txt" 2>&1
  every_slot "(1) schedule --pp 2 --micro-batches 2 --backward-cost $b: every stage shows F0 F1 B0 B1" "$tmp/g.txt" 2 1
done
"$S" schedule --pp 3 --micro-batches 3 --schedule interleaved --virtual-stages 2 --backward-cost 0.25 >"$tmp/g.txt" 2>&1
every_slot "(1) schedule interleaved p 3 m 3 v 2, --backward-cost 0.25: every chunk's slots on every stage" "$tmp/g.txt" 3 2
# A measured step whose first forward took a fifth of the others (one cell = the median forward).
cp -r "$W/pp" "$W/short"
python3 - "$W/short/ledger.json" <<'EOF'
import json, sys
p = sys.argv[1]; j = json.load(open(p))
j["pipeline"]["slots_ms"] = [[[1, 0, 0, 0.0, 0.2], [1, 1, 0, 0.2, 1.2], [0, 0, 0, 2.4, 4.4], [0, 1, 0, 5.2, 7.2]],
                             [[1, 0, 0, 0.2, 1.2], [0, 0, 0, 1.2, 3.2], [1, 1, 0, 3.2, 4.2], [0, 1, 0, 4.2, 6.2]]]
json.dump(j, open(p, "w"))
EOF
"$S" trace "$W/short" >"$tmp/g.txt" 2>&1
every_slot "(1) trace of a measured step with a short first forward: both grids show every slot" "$tmp/g.txt" 2 1
"$S" trace "$W/pp" >"$tmp/g.txt" 2>&1
every_slot "(1) trace of the real pp 2 run: both grids show every slot" "$tmp/g.txt" 2 1
if "$S" schedule --pp 2 --micro-batches 2 --backward-cost 0.5 --svg "$W/half.svg" >/dev/null 2>&1 &&
   grep -q "a backward 0.5" "$W/half.svg"; then
  ok "(1) schedule --backward-cost 0.5 --svg: the picture's title says 'a backward 0.5'"
else
  fail "(1) schedule --svg title keeps the cost" "$(grep -o 'a backward [0-9.]*' "$W/half.svg" 2>/dev/null | head -n 1)"
fi
echo "my drawing" >"$W/mine.svg"
refused "(1) schedule --svg over a person's file: refused, naming --svg" 2 "never replaces it: give another --svg\$" \
  "$S" schedule --svg "$W/mine.svg"
refused "(1) schedule --svg a directory: refused, naming --svg" 2 "is not a regular file \(a directory\); shardlab never replaces it: give another --svg\$" \
  "$S" schedule --svg "$W"
[ "$(cat "$W/mine.svg")" = "my drawing" ] && ok "(1) ... and the person's file is unchanged" || fail "(1) mine.svg unchanged" "$(head -c 80 "$W/mine.svg")"

# ---------------------------------------------------------------- (2) trace of an edited pipeline section
edited() {  # edited NAME PATTERN PYTHON (on j, the ledger): trace of a copy of pp so edited refuses
  local d=$W/ed_$1
  cp -r "$W/pp" "$d"
  python3 - "$d/ledger.json" "$3" <<'EOF'
import json, sys
p = sys.argv[1]; j = json.load(open(p)); P = j["pipeline"]; S = P["slots_ms"]
exec(sys.argv[2]); json.dump(j, open(p, "w"))
EOF
  refused "(2) trace of a ledger whose pipeline section has $1: exit 1, one line" 1 "ledger.json does not hold a pipeline section a run wrote: (pipeline\.)?$2" \
    "$S" trace "$d"
}
edited "pipeline a string" "pipeline is not an object" 'j["pipeline"] = "garbage"'
edited "pipeline null" "pipeline is not an object" 'j["pipeline"] = None'
edited "pipeline {}" "pipeline.schedule" 'j["pipeline"] = {}'
edited "stages 0" "pipeline.stages = 0 is not in" 'P["stages"] = 0'
edited "stages -3" "pipeline.stages = -3 is not in" 'P["stages"] = -3'
edited "stages 10^9" "pipeline.stages = 1000000000 is not in" 'P["stages"] = 10**9'
edited "micro_batches 0" "pipeline.micro_batches = 0 is not in" 'P["micro_batches"] = 0'
edited "micro_batches 2e9" "pipeline.micro_batches = 2000000000 is not in" 'P["micro_batches"] = 2 * 10**9'
edited "virtual_stages 0" "pipeline.virtual_stages = 0" 'P["virtual_stages"] = 0'
edited "schedule zigzag" "pipeline.schedule is not gpipe, 1f1b or interleaved" 'P["schedule"] = "zigzag"'
edited "a slot's micro-batch 99999" "slots_ms\[0\]\[0\] is not the schedule's F0" 'S[0][0][1] = 99999'
edited "a slot ending at 1e15" "slots_ms\[0\]\[1\] is not the schedule's F1" 'S[0][0][4] = 1e15'
edited "a slot cut to two numbers" "slots_ms\[0\]\[0\] is not \[forward\?" 'S[0][0] = [1, 0]'
edited "a stage row missing" "slots_ms must hold one row per stage \(2\)" 'del S[1]'
edited "no slots_ms" "pipeline.slots_ms is missing" 'del P["slots_ms"]'
edited "measured_step 'two'" "pipeline.measured_step" 'P["measured_step"] = "two"'

# ---------------------------------------------------------------- (3) plan --ledger of edited pp/tp ledgers
if mpi 8 "$S" train "${R[@]}" --global-batch 4 --dp 2 --tp 2 --pp 2 --zero 3 --recompute full --attention flash \
  --out "$W/d3" >"$tmp/d3.log" 2>&1; then
  if "$S" plan --ledger "$W/d3/ledger.json" >"$tmp/plan.log" 2>&1 && grep -q "pipeline stage matches exactly" "$tmp/plan.log"; then
    ok "(3) plan --ledger of the 8-rank dp 2 × tp 2 × pp 2 ZeRO-3 run (recompute full, flash): every rank matches"
  else
    fail "(3) plan --ledger of the 8-rank 3D run" "$(last "$tmp/plan.log")"
  fi
else
  fail "(3) -np 8 --dp 2 --tp 2 --pp 2 --zero 3 --recompute full --attention flash" "$(last "$tmp/d3.log")"
fi
plan_edited() {  # plan_edited NAME CODE PATTERN PYTHON (on j): plan --ledger of a copy of d3's ledger so edited
  mkdir -p "$W/pl_$1"
  python3 - "$W/d3/ledger.json" "$W/pl_$1/ledger.json" "$4" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1])); A = j["model"]["activations"]; L = j["layout"]
exec(sys.argv[3]); json.dump(j, open(sys.argv[2], "w"))
EOF
  if [ "$2" = 1 ]; then
    timeout -k 5 20 "$S" plan --ledger "$W/pl_$1/ledger.json" >"$tmp/pl.out" 2>&1
    local rc=$?
    if [ $rc = 1 ] && grep -Eq -- "$3" "$tmp/pl.out"; then ok "(3) plan --ledger, $1: exit 1, $(grep -Eo -- "$3" "$tmp/pl.out" | head -n 1)"
    else fail "(3) plan --ledger, $1" "exit $rc: $(tail -n 1 "$tmp/pl.out" | cut -c1-200)"; fi
  else
    refused "(3) plan --ledger, $1: exit 2 within 20 s, one line" 2 "$3" "$S" plan --ledger "$W/pl_$1/ledger.json"
  fi
}
plan_edited "model.activations.layers 10^9 (pp 1, dp 4)" 2 "model.activations.layers = 1000000000 is not in \[1, 65536\]" \
  'A["layers"] = 10**9; L["pp"] = 1; L["dp"] = 4'
plan_edited "model.activations.layers 10^9" 2 "layers = 1000000000 is not in" 'A["layers"] = 10**9'
plan_edited "layout.accum 10^9" 2 "layout.accum = 1000000000 .* is more than the 8192 a run can have" 'L["accum"] = 10**9'
plan_edited "layout.accum 10^12" 2 "layout.accum = 1000000000000 " 'L["accum"] = 10**12'
plan_edited "pipeline section removed" 2 'a pipeline ledger \(layout.pp 2\) has no "pipeline"' 'del j["pipeline"]'
plan_edited "pipeline.bubble_schedule + 0.01" 2 "bubbles are not its schedule's" 'j["pipeline"]["bubble_schedule"] += 0.01'
plan_edited "pipeline.stash_schedule edited" 2 "stash_schedule is not the schedule's" 'j["pipeline"]["stash_schedule"][0] += 1'
plan_edited "pipeline.micro_batches + 1" 2 "describes another schedule" 'j["pipeline"]["micro_batches"] += 1'
plan_edited "heads 0" 2 "model.activations.heads = 0 is not in" 'A["heads"] = 0'
plan_edited "hidden 0" 2 "model.activations.hidden = 0 is not in" 'A["hidden"] = 0'
plan_edited "hidden 33 (heads 2)" 2 "heads 2 does not divide hidden 33" 'A["hidden"] = 33'
plan_edited "layout.virtual_stages 10^9" 2 "virtual" 'L["virtual_stages"] = 10**9'
plan_edited "rank 2's params + 1" 1 "MISMATCH in rank 2 params" 'j["ranks"][2]["params"] += 1'

# ---------------------------------------------------------------- (4) plan --pp keeps the trainer's rules
refused "(4) plan --preset 7b --pp 33 (32 layers)" 2 "pp 33 = 33 model chunks, but the model has 32 layers" \
  "$S" plan --preset 7b --pp 33
refused "(4) plan --layers 4 --pp 8" 2 "pp 8 = 8 model chunks, but the model has 4 layers" \
  "$S" plan --layers 4 --hidden 32 --heads 2 --seq 32 --pp 8
refused "(4) plan --preset 7b --pp 5 --virtual-stages 8 (40 chunks)" 2 "= 40 model chunks, but the model has 32" \
  "$S" plan --preset 7b --pp 5 --virtual-stages 8 --micro-batches 5
refused "(4) plan --preset 7b --pp 3 --virtual-stages 2 (32 layers, 6 chunks)" 2 "divisible by pp × virtual-stages = 6" \
  "$S" plan --preset 7b --pp 3 --virtual-stages 2 --micro-batches 6
refused "(4) plan --preset 7b --pp 4 --virtual-stages 2 --micro-batches 6" 2 "micro-batches 6 is not a multiple" \
  "$S" plan --preset 7b --pp 4 --virtual-stages 2 --micro-batches 6
refused "(4) plan --preset 7b --fsdp hybrid --dp 16 --pp 2 (the trainer refuses hybrid with --pp)" 2 \
  "fsdp hybrid shards inside a node, and pipeline stages" "$S" plan --preset 7b --fsdp hybrid --dp 16 --pp 2
runs "(4) control: plan --preset 70b --tp 8 --pp 8 --dp 8 --micro-batches 16" "$S" plan --preset 70b --tp 8 --pp 8 --dp 8 --micro-batches 16
runs "(4) control: plan --preset 7b --pp 4 --virtual-stages 2 --micro-batches 8" \
  "$S" plan --preset 7b --pp 4 --virtual-stages 2 --micro-batches 8

# ---------------------------------------------------------------- (5) mlp-split on one process
if "$S" mlp-split --hidden 32 >"$tmp/mlp.log" 2>&1 && grep -q "0 all-reduces .*exact on every rank" "$tmp/mlp.log"; then
  ok "(5) mlp-split on one process: exit 0, no all-reduce counted and none expected"
else
  fail "(5) mlp-split on one process" "$(grep -E 'communication|result' "$tmp/mlp.log" | tr '\n' '|' | cut -c1-300)"
fi
runs "(5) control: mlp-split under mpirun -np 2" -np 2 "$S" mlp-split --hidden 32

# ---------------------------------------------------------------- (6) schedule.svg is a run output
mkdir -p "$W/user" && echo "my picture" >"$W/user/schedule.svg"
mpi_refused "(6) -np 2 --pp 2 --out DIR holding a person's schedule.svg: refused" 2 2 "schedule.svg' was not written by shardlab" \
  "$S" train "${R[@]}" --pp 2 --out "$W/user"
[ "$(cat "$W/user/schedule.svg")" = "my picture" ] && ok "(6) ... and the person's schedule.svg is unchanged" ||
  fail "(6) the person's schedule.svg is unchanged" "$(head -c 80 "$W/user/schedule.svg")"
cp -r "$W/pp" "$W/over"
if "$S" train "${R[@]}" --out "$W/over" --overwrite >"$tmp/over.log" 2>&1; then
  if [ ! -e "$W/over/schedule.svg" ] && [ ! -e "$W/over/trace.json" ] && [ -e "$W/over/ledger.json" ]; then
    ok "(6) a 1-process run with --overwrite over a traced pp run: no schedule.svg or trace.json of that run is left"
  else
    fail "(6) --overwrite leaves no stale outputs" "$(ls "$W/over" | tr '\n' ' ')"
  fi
  refused "(6) ... so trace of it says there is no trace.json" 1 "trace.json does not exist" "$S" trace "$W/over"
else
  fail "(6) train --overwrite over a pp run" "$(last "$tmp/over.log")"
fi
if mpi 2 "$S" train "${R[@]}" --pp 2 --trace on --out "$W/own" --save "$W/own_ck" >"$tmp/own.log" 2>&1 &&
   "$S" train --resume "$W/own_ck" --steps 4 --out "$W/own" --save "$W/own_ck" --progress none >>"$tmp/own.log" 2>&1; then
  if [ ! -e "$W/own/schedule.svg" ] && [ ! -e "$W/own/trace.json" ] &&
     [ "$(tail -n +2 "$W/own/loss.csv" | cut -d, -f1 | tr '\n' ' ')" = "1 2 3 4 " ]; then
    ok "(6) a traced pp 2 run resumed at pp 1 into its own --out: steps 1..4, and no schedule.svg or trace.json of its pp part"
  else
    fail "(6) resumed at pp 1: no stale outputs" "$(ls "$W/own" | tr '\n' ' ')"
  fi
else
  fail "(6) a traced pp 2 run resumed at pp 1 into its own --out" "$(last "$tmp/own.log")"
fi
ln -s "$W/user/schedule.svg" "$W/linked" 2>/dev/null; mkdir -p "$W/lk" && mv "$W/linked" "$W/lk/schedule.svg"
mpi_refused "(6) -np 2 --pp 2 --out holding schedule.svg as a symlink: refused" 2 2 "schedule.svg' is not a regular file" \
  "$S" train "${R[@]}" --pp 2 --out "$W/lk"
if timeout 60 "$S" train "${R[@]}" --out "$W/lk" >"$tmp/lk.log" 2>&1 </dev/null && [ -L "$W/lk/schedule.svg" ] &&
  [ "$(cat "$W/user/schedule.svg")" = "my picture" ]; then
  ok "(6) a run without --pp into that --out: runs, and leaves the symlink and its target alone (not its file to write)"
else
  fail "(6) a run without --pp beside a symlinked schedule.svg" "$(last "$tmp/lk.log"); $(ls -l "$W/lk" | tr '\n' ' ')"
fi

# ---------------------------------------------------------------- (7) 32-bit overflow of the pipeline sizes
mpi_refused "(7) --pp 2 --virtual-stages 2147483647: 4294967294 chunks, said truly" 2 2 "= 4294967294 model chunks, but the model has 4 layers" \
  "$S" train "${R[@]}" --pp 2 --schedule interleaved --virtual-stages 2147483647
refused "(7) --virtual-stages 2147483647 on one process" 2 "interleaved needs --pp 2 or more" \
  "$S" train "${R[@]}" --schedule interleaved --virtual-stages 2147483647
mpi_refused "(7) --pp 2147483647" 2 2 "pp 2147483647 (= 2147483647 model chunks|does not divide)" "$S" train "${R[@]}" --pp 2147483647
mpi_refused "(7) --tp 2147483647" 2 2 "not divisible by --tp 2147483647" "$S" train "${R[@]}" --tp 2147483647
mpi_refused "(7) --dp 2147483647" 2 2 "world has 2 ranks" "$S" train "${R[@]}" --dp 2147483647

# ---------------------------------------------------------------- (8) already right, tested nowhere else
for l in "2,,2" "5,-1" "4,0" "2,2," "99999999999999999999,1" "a,b" ",4"; do
  refused "(8) --pp-layers '$l'" 2 "pp-layers expects positive layer counts separated by commas.*got '$l'" \
    "$S" train "${R[@]}" --pp-layers "$l"
done
mpi_refused "(8) -np 2 --pp 2 --pp-layers 1,1,1,1 (too many)" 2 2 "gives 4 stages and 4 layers; --pp 2 and --layers 4 need 2 counts" \
  "$S" train "${R[@]}" --pp 2 --pp-layers 1,1,1,1
refused "(8) --pp-layers 2,2 without --pp (1 stage)" 2 "gives 2 stages and 4 layers; --pp 1 and --layers 4 need 1 count adding" \
  "$S" train "${R[@]}" --pp-layers 2,2
for f in "--tp 0" "--tp -2" "--pp 0" "--virtual-stages 0"; do
  # shellcheck disable=SC2086
  refused "(8) train $f" 2 "must be at least 1" "$S" train "${R[@]}" $f
done
mpi_refused "(8) -np 4 --pp 2 --dp 2 --fsdp hybrid" 4 2 "fsdp hybrid shards inside a node.*--pp" \
  "$S" train "${R[@]}" --global-batch 4 --pp 2 --dp 2 --fsdp hybrid --ranks-per-node 2
mpi_refused "(8) -np 4 --pp 2 --ranks-per-node 3" 4 2 "ranks-per-node 3 does not divide the world size 4" \
  "$S" train "${R[@]}" --global-batch 4 --pp 2 --dp 2 --ranks-per-node 3
for a in "--pp 0" "--pp -1" "--pp abc" "--pp 1000000" "--pp 2.5" "--micro-batches 0" "--micro-batches 100000000" \
         "--virtual-stages 0" "--schedule interleaved --virtual-stages 1000000" "--schedule bogus" "--schedule ''" \
         "--backward-cost 0" "--backward-cost nan" "--backward-cost 1e300" "--virtual-stages 2" "--tp 2"; do
  eval "refused \"(8) schedule $a\" 2 'schedule: error: ' \"\$S\" schedule $a"
done
refused "(8) schedule interleaved --pp 4 --micro-batches 6" 2 "micro-batches 6 is not a multiple" \
  "$S" schedule --pp 4 --micro-batches 6 --schedule interleaved --virtual-stages 2
for a in "--pp 0" "--pp 65" "--pp -1" "--micro-batches 0" "--micro-batches 100000" "--tp 0" "--tp 3" \
         "--tp 2 --sequence-parallel --seq 2049" "--sequence-parallel" "--micro-batches 8 --pp 1 --virtual-stages 9"; do
  # shellcheck disable=SC2086
  refused "(8) plan --preset 7b $a" 2 "plan: error: " "$S" plan --preset 7b $a
done
refused "(8) plan --micro-batches 8 without --pp" 2 "micro-batches needs --pp" "$S" plan --preset 7b --micro-batches 8
ev() { "$@" 2>&1 | grep -Eo 'mean loss [0-9.]+' | head -n 1; }
one=$(ev "$S" eval --load "$W/ck" --data "$tmp/small.txt" --max-windows 3 --progress none)
two=$(ev mpi 2 "$S" eval --load "$W/ck" --data "$tmp/small.txt" --max-windows 3 --progress none)
if [ -n "$one" ] && [ "$one" = "$two" ]; then ok "(8) eval of the tp 2 × pp 2 interleaved checkpoint: 1 rank and -np 2 agree ($one)"
else fail "(8) eval of the tp 2 × pp 2 checkpoint" "1 rank '$one', -np 2 '$two'"; fi
runs "(8) sample of the tp 2 × pp 2 interleaved checkpoint" "$S" sample --load "$W/ck" --tokens 5
runs "(8) ... and --tokens 0" "$S" sample --load "$W/ck" --tokens 0
runs "(8) its resume onto -np 4 --pp 4" -np 4 "$S" train --resume "$W/ck" --steps 4 --pp 4 --progress none
runs "(8) its resume onto -np 2 --pp 2 --pp-layers 3,1 --schedule gpipe" \
  -np 2 "$S" train --resume "$W/ck" --steps 4 --pp 2 --pp-layers 3,1 --schedule gpipe --progress none
runs "(8) its resume onto 1 process" "$S" train --resume "$W/ck" --steps 4 --progress none
mpi_refused "(8) its resume with --layers 6: the model shape differs" 2 2 "model shape .* differs from the checkpoint" \
  "$S" train --resume "$W/ck" --steps 4 --pp 2 --layers 6 --progress none

# ---------------------------------------------------------------- (9) comma values in --config
printf 'pp = 2\npp-layers = 3,1\n' >"$W/c_pl.toml"
mpi_refused "(9) --config with pp-layers = 3,1 unquoted: refused with the quoted form" 2 2 \
  "line 2: 'pp-layers' = 3,1 would be read as several values: quote it \(pp-layers = \"3,1\"\)" \
  "$S" train "${R[@]}" --config "$W/c_pl.toml"
cp "$tmp/small.txt" "$W/sm,all.txt"
printf 'data = %s\n' "$W/sm,all.txt" >"$W/c_data.toml"
refused "(9) --config with an unquoted data path holding a comma: refused" 2 "'data' = .*sm,all.txt would be read as several values" \
  "$S" train --config "$W/c_data.toml" --layers 1 --hidden 32 --heads 2 --seq 32 --steps 1 --progress none
printf 'data = "%s"\n' "$W/sm,all.txt" >"$W/c_dataq.toml"
runs "(9) ... quoted, it trains" "$S" train --config "$W/c_dataq.toml" --layers 1 --hidden 32 --heads 2 --seq 32 --steps 1 \
  --micro-batch 2 --global-batch 2 --eval-windows 0 --progress none
if mpi 2 "$S" train "${R[@]}" --pp 2 --pp-layers 3,1 --out "$W/pl" >"$tmp/pl.log" 2>&1 &&
   mpi 2 "$S" train --config "$W/pl/config.toml" --out "$W/pl2" >"$tmp/pl2.log" 2>&1 &&
   "$S" compare "$W/pl" "$W/pl2" --rtol 0 >"$tmp/pl.cmp" 2>&1; then
  ok "(9) a --pp-layers 3,1 run's config.toml (pp-layers = \"3,1\") trains it again bit for bit"
else
  fail "(9) a --pp-layers run's config.toml replays" "$(last "$tmp/pl2.log") $(tail -n 1 "$tmp/pl.cmp" 2>/dev/null)"
fi

[ "$fails" = 0 ]
