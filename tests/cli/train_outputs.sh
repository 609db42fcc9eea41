#!/usr/bin/env bash
# What `train --out DIR` writes, and what compare and --progress make of it:
#  loss.csv: header exactly step,loss,grad_norm,lr,ms,val_loss; one row per step; val_loss exactly
#    on eval steps (--eval-every 3 over 7 steps: 3, 6, 7); f64 numbers round-trip through %.17g.
#  ledger.json: world_size, model.params, ranks[0].memory with every category (current, peak),
#    and model-state bytes per parameter as the precision implies (f32 AdamW 4+4+4+4; mixed bf16
#    2+2 with fp32 master, m, v: 16 in all, claim C1). config.json exists.
#  loss.svg (tests/cli/support/svg_check.py): the validation curve in a colour of its own, dashed, a marker
#    at each of the 3 evaluations; the legend names both curves, below the plot area, inside the width.
#  compare: the same config twice is bit-identical (--rtol 0 passes); another --seed fails (exit 1).
#  --progress lines: lines with step, loss, tok/s and ETA; a validation loss only on the lines of the
#    steps that computed it (3, 6, 7); the summary names params and tokens/s.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"

M=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 2 --eval-windows 4
   --data "$tmp/small.txt" --steps 7 --eval-every 3)

run() {  # run NAME FLAGS... : train into $tmp/NAME, log in $tmp/NAME.log
  local name=$1
  shift
  if "$S" train "${M[@]}" --progress none --out "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1; then return 0; fi
  fail "train --out $name $*" "$(last "$tmp/$name.log")"
  return 1
}

JSON=""
if command -v python3 >/dev/null 2>&1 && python3 -c "import json" >/dev/null 2>&1; then JSON=python3
elif command -v jq >/dev/null 2>&1; then JSON=jq; fi

# ---------------------------------------------------------------- loss.csv
check_loss_csv() {  # check_loss_csv NAME
  local f=$tmp/$1/loss.csv header rows steps vals
  if [ ! -f "$f" ]; then fail "$1: loss.csv exists" "no $f"; return; fi
  header=$(head -n 1 "$f")
  if [ "$header" = "step,loss,grad_norm,lr,ms,val_loss" ]; then ok "$1: loss.csv header is step,loss,grad_norm,lr,ms,val_loss"
  else fail "$1: loss.csv header is step,loss,grad_norm,lr,ms,val_loss" "got '$header'"; fi
  steps=$(tail -n +2 "$f" | cut -d, -f1 | tr '\n' ' ')
  if [ "$steps" = "1 2 3 4 5 6 7 " ]; then ok "$1: one row per step, 1..7"; else fail "$1: one row per step, 1..7" "steps: $steps"; fi
  vals=$(tail -n +2 "$f" | awk -F, '$6 != "" { printf "%s ", $1 }')
  if [ "$vals" = "3 6 7 " ]; then ok "$1: val_loss filled exactly on steps 3, 6, 7"
  else fail "$1: val_loss filled exactly on steps 3, 6, 7" "filled on: $vals"; fi
  rows=$(tail -n +2 "$f" | awk -F, '
    function num(x) { return x ~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/ }
    NF != 6 || !num($1) || !num($2) || !num($3) || !num($4) || !num($5) || ($6 != "" && !num($6)) { bad = bad NR+1 " " }
    END { printf "%s", bad }')
  if [ -z "$rows" ]; then ok "$1: every row has 6 fields of finite numbers"
  else fail "$1: every row has 6 fields of finite numbers" "bad lines: $rows"; fi
}

run f32 || true
check_loss_csv f32
run f64 --dtype f64 || true
check_loss_csv f64

# f64 numbers: each loss, grad_norm and val_loss string is what %.17g prints for its value, so it
# round-trips exactly; and the losses need (and have) 17 significant digits.
if [ -f "$tmp/f64/loss.csv" ]; then
  bad=$(tail -n +2 "$tmp/f64/loss.csv" | awk -F, '{ for (i = 2; i <= 6; i += (i == 3 ? 3 : 1)) if ($i != "") {
           s = sprintf("%.17g", $i + 0); if (s != $i) printf "%s -> %s; ", $i, s } }')
  loss=$(sed -n 2p "$tmp/f64/loss.csv" | cut -d, -f2)
  digits=$(printf '%s' "${loss%%[eE]*}" | tr -cd '0-9' | sed 's/^0*//')
  if [ -z "$bad" ] && [ "${#digits}" = 17 ]; then
    ok "f64: numbers round-trip through %.17g (step 1 loss $loss has 17 significant digits)"
  else
    fail "f64: numbers round-trip through %.17g (loss with 17 significant digits)" "${bad}step 1 loss '$loss' has ${#digits} digits"
  fi
fi

# ---------------------------------------------------------------- ledger.json, config.json
run bf16 --mixed bf16 || true
ledger_check() {  # ledger_check NAME BYTES_PER_PARAM: "param grad master adam_m adam_v" bytes per param
  local name=$1 bpp=$2 f=$tmp/$1/ledger.json out params
  params=$(awk '/^training [0-9,]+ params/ { gsub(",", "", $2); print $2; exit }' "$tmp/$name.log")
  if [ ! -f "$f" ]; then fail "$name: ledger.json exists" "no $f"; return; fi
  if [ -z "$JSON" ]; then fail "$name: ledger.json checks" "no python3 or jq (make deps installs python3)"; return; fi
  if [ "$JSON" = python3 ]; then
    out=$(python3 - "$f" "$params" "$bpp" 2>&1 <<'EOF'
import json, sys
j = json.load(open(sys.argv[1])); printed = int(sys.argv[2] or -1); bpp = [int(x) for x in sys.argv[3].split()]
bad = []
if not isinstance(j.get("world_size"), int): bad.append("no world_size")
P = j.get("model", {}).get("params")
if P != printed: bad.append("model.params %r, the run printed %r" % (P, printed))
mem = j["ranks"][0]["memory"]
cats = ["param", "grad", "master", "adam_m", "adam_v", "momentum", "activation", "comm_buffer", "workspace"]
for c in cats:
    e = mem.get(c)
    if not isinstance(e, dict) or not isinstance(e.get("current"), int) or not isinstance(e.get("peak"), int):
        bad.append(c + " lacks current/peak"); continue
    if e["peak"] < e["current"]: bad.append(c + " peak < current")
if not bad:
    for c, b in zip(cats, bpp):
        if mem[c]["current"] != b * P: bad.append("%s %d bytes, expected %d x %d params" % (c, mem[c]["current"], b, P))
print("; ".join(bad)); sys.exit(1 if bad else 0)
EOF
    ) || { fail "$name: ledger.json world_size, model.params, every memory category with current and peak, $bpp bytes/param" "$out"; return; }
  else
    local q='.ranks[0].memory as $m | [(.world_size|type=="number"), (.model.params==($p|tonumber)),
      (["param","grad","master","adam_m","adam_v","momentum","activation","comm_buffer","workspace"]
       | all(. as $c | ($m[$c].current|type=="number") and ($m[$c].peak >= $m[$c].current)))] | all'
    out=$(jq --arg p "${params:--1}" "$q" "$f" 2>&1)
    if [ "$out" != true ]; then fail "$name: ledger.json world_size, model.params, every memory category with current and peak" "jq: $out"; return; fi
    ok "$name: ledger.json world_size, model.params, every memory category with current and peak (bytes/param: needs python3)"
    return
  fi
  ok "$name: ledger.json world_size, model.params, every memory category with current and peak, $bpp bytes/param"
}
ledger_check f32 "4 4 0 4 4 0"
ledger_check bf16 "2 2 4 4 4 0"
for n in f32 f64 bf16; do
  if [ -s "$tmp/$n/config.json" ] && grep -q '"steps": 7' "$tmp/$n/config.json"; then ok "$n: config.json written"
  else fail "$n: config.json written" "missing, empty or without \"steps\": 7"; fi
done

# ---------------------------------------------------------------- loss.svg
svg_check() {  # svg_check NAME KIND ARGS...: tests/cli/support/svg_check.py KIND ARGS passes
  local name=$1 out
  shift
  if ! command -v python3 >/dev/null 2>&1; then fail "$name" "no python3 (make deps installs it)"; return; fi
  if out=$(python3 tests/cli/support/svg_check.py "$@" 2>&1); then ok "$name"; else fail "$name" "$out"; fi
}
svg_check "f32: loss.svg draws the validation loss in its own colour, dashed, a marker at each of its 3 evaluations" \
  loss "$tmp/f32/loss.svg" 3
svg_check "f32: loss.svg's legend names both curves, below the plot area and inside the picture's width" \
  legend "$tmp/f32/loss.svg"

# ---------------------------------------------------------------- compare
run f32_again || true
run f32_seed --seed 99 || true
"$S" compare "$tmp/f32" "$tmp/f32_again" --rtol 0 >"$tmp/cmp1" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q "bit-identical" "$tmp/cmp1"; then ok "the same config twice: compare --rtol 0 passes (bit-identical)"
else fail "the same config twice: compare --rtol 0 passes (bit-identical)" "exit $rc: $(last "$tmp/cmp1")"; fi
"$S" compare "$tmp/f32" "$tmp/f32_seed" --rtol 0 >"$tmp/cmp2" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q "FAIL" "$tmp/cmp2"; then ok "another --seed: compare --rtol 0 exits 1"
else fail "another --seed: compare --rtol 0 exits 1" "exit $rc: $(last "$tmp/cmp2")"; fi

# ---------------------------------------------------------------- --progress lines
"$S" train "${M[@]}" --progress lines >"$tmp/lines.out" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -E 'step' "$tmp/lines.out" | grep -E 'loss' | grep -E 'tok/s' | grep -qE 'ETA'; then
  ok "--progress lines: lines with step, loss, tok/s and ETA"
else
  fail "--progress lines: lines with step, loss, tok/s and ETA" "exit $rc: $(head -n 3 "$tmp/lines.out" | tr '\n' '|')"
fi
if grep -q 'params' "$tmp/lines.out" && grep -q 'tokens/s' "$tmp/lines.out"; then
  ok "--progress lines: the closing summary mentions params and tokens/s"
else
  fail "--progress lines: the closing summary mentions params and tokens/s" "$(last "$tmp/lines.out")"
fi
# A validation loss on the line of the step that computed it, and on no other (every step has a line here).
vals=$(awk '/^step / { split($2, s, "/"); all = all s[1] " "; if (/ val /) v = v s[1] " " } END { print v "|" all }' "$tmp/lines.out")
if [ "$vals" = "3 6 7 |1 2 3 4 5 6 7 " ]; then
  ok "--progress lines: a validation loss only on the lines of steps 3, 6 and 7, which computed it"
else
  fail "--progress lines: a validation loss only on the lines of steps 3, 6 and 7" "val on | lines for: $vals"
fi
if ! grep -q $'\r' "$tmp/lines.out"; then ok "--progress lines: no carriage returns (no bar)"
else fail "--progress lines: no carriage returns (no bar)" "found \\r"; fi

[ "$fails" = 0 ]
