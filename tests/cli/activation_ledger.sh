#!/usr/bin/env bash
# `plan --ledger` checks every saved activation item of a run against the itemised formula
# (plan/activation_items.h): an untouched ledger passes for naive and flash attention and each recompute
# mode; a ledger whose items were edited — a size, an allocation count, an item missing or unknown, the
# peak — fails with exit 1 and a result line naming the item; an unknown --recompute, --attention or
# recorded recompute mode is one clear error (exit 2).
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"

M=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 4 --eval-windows 0 --steps 1
   --progress none --data "$tmp/small.txt")
for run in "naive none" "naive selective" "flash full"; do
  set -- $run
  "$S" train "${M[@]}" --attention "$1" --recompute "$2" --out "$tmp/$1_$2" >"$tmp/log" 2>&1 ||
    fail "train --attention $1 --recompute $2" "$(last "$tmp/log")"
  if "$S" plan --ledger "$tmp/$1_$2/ledger.json" >"$tmp/plan" 2>&1 && grep -q "^  block.qkv " "$tmp/plan"; then
    ok "plan --ledger: every activation item of --attention $1 --recompute $2 equals the formula"
  else
    fail "plan --ledger: every activation item of --attention $1 --recompute $2 equals the formula" "$(last "$tmp/plan")"
  fi
done

LJ=$tmp/naive_none/ledger.json
# edited NAME PYTHON-EDIT PATTERN: the ledger with the edit applied fails plan --ledger (exit 1) with a
# result line matching PATTERN.
edited() {
  local name=$1 edit=$2 pattern=$3 rc
  python3 - "$LJ" "$tmp/bad.json" "$edit" <<'EOF' || { fail "$name" "could not edit the ledger"; return; }
import json, sys
d = json.load(open(sys.argv[1]))
items = d["ranks"][0]["memory"]["items"]
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
EOF
  "$S" plan --ledger "$tmp/bad.json" >"$tmp/plan_bad" 2>&1
  rc=$?
  if [ $rc = 1 ] && grep -Eq "^result: MISMATCH.*$pattern" "$tmp/plan_bad"; then
    ok "$name"
  else
    fail "$name" "exit $rc: $(grep '^result' "$tmp/plan_bad" || last "$tmp/plan_bad")"
  fi
}
edited "an item's size +4 B is caught and named" 'items["block.probs"]["bytes_each"] += 4' "block.probs"
edited "an item allocated once more than the formula says is caught" 'items["block.fc"]["allocations"] += 1' "block.fc"
edited "an item missing from the ledger is caught" 'del items["block.qkv"]' "block.qkv.*missing"
edited "an item the formula does not know is caught" \
  'items["block.extra"] = dict(allocations=1, bytes_allocated=8, bytes_each=8, current=0, peak=8)' "block.extra"
edited "a measured activation peak 256 B above the formula is caught" \
  'd["ranks"][0]["memory"]["activation"]["peak"] += 256' "peak"

python3 - "$LJ" "$tmp/bogus.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["model"]["activations"]["recompute"] = "bogus"
json.dump(d, open(sys.argv[2], "w"))
EOF
"$S" plan --ledger "$tmp/bogus.json" >"$tmp/o" 2>"$tmp/e"
rc=$?
if [ $rc = 2 ] && [ "$(wc -l <"$tmp/e")" = 1 ] && grep -q "recompute" "$tmp/e"; then
  ok "a ledger recording an unknown recompute mode: one error line, exit 2"
else
  fail "a ledger recording an unknown recompute mode: one error line, exit 2" "exit $rc: $(head -c 200 "$tmp/e")"
fi
for bad in "--recompute partial" "--attention sparse"; do
  "$S" train "${M[@]}" $bad >"$tmp/o" 2>"$tmp/e"
  rc=$?
  if [ $rc = 2 ] && [ "$(wc -l <"$tmp/e")" = 1 ] && grep -q -- "${bad%% *}" "$tmp/e"; then
    ok "train $bad: one error line naming the flag, exit 2"
  else
    fail "train $bad: one error line naming the flag, exit 2" "exit $rc: $(head -c 200 "$tmp/e")"
  fi
done
exit $((fails > 0))
