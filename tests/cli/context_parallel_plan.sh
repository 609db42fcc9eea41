#!/usr/bin/env bash
# Context parallelism against the formulas (claim C24; plan/cp_bytes.h, check/cp_check.h):
#  (1) tiny cp runs — cp 2 zigzag (f64, dropout 0.1), cp 2 contiguous with --recompute full, cp 2 with --mixed bf16,
#      cp 2 × tp 2 with --sequence-parallel, cp 2 × dp 2 with --zero 3, cp 2 × pp 2 — each passes
#      `plan --ledger` exactly (every rank's cp messages, dp rings over dp × cp, activation items), and each
#      rank's cp bytes in the ledger equal the chapter's formula computed here from the flags alone:
#      steps · L · A · ((c−1)·(1 + full recompute) + (2c−1)) · 2·b·(s/c)·(h/t) · e;
#  (2) tampered ledgers fail (exit 1) naming what differs: one cp send total 8 B off, one kept send record one
#      element long, the ring's comm_buffer one message short, block.lse sized for all s tokens, the shard
#      group of the dp × cp run said to be dp alone; a ledger without layout.cp is refused (exit 2, world size);
#  (3) `plan --cp 4 --preset 7b` prints C24's four statements beside the bytes computed here, and
#      `plan --cp 2 --attention naive` is one error, exit 2.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then echo "FAIL - mpirun exists (no OpenMPI: make deps installs it)"; exit 1; fi
mpi() { timeout -k 5 60 bash scripts/mpirun.sh -np "$@" </dev/null; }

# s = 64, b = 2, h = 32, a = 4, L = 2; global batch 4 → A = 2 micro-batches per step without dp.
R=(--layers 2 --hidden 32 --heads 4 --seq 64 --micro-batch 2 --global-batch 4 --steps 2 --eval-windows 0
   --progress none --data "$tmp/small.txt" --attention flash --lr-schedule constant)
D=$tmp/runs
mkdir -p "$D"

# expect_cp NAME DIR C T A E FULL: every rank's cp sends and receives over the run equal the formula.
expect_cp() {
  python3 - "$2/ledger.json" "$3" "$4" "$5" "$6" "$7" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c, t, A, e, full = (int(x) for x in sys.argv[2:7])
s, b, h, L, steps = 64, 2, 32, 2, 2
L //= int(d["layout"]["pp"])  # the blocks of each stage
message = 2 * b * (s // c) * (h // t) * e
want = steps * L * A * ((c - 1) * (1 + full) + (2 * c - 1)) * message
bad = []
for r in d["ranks"]:
    got = {op: sum(x["sent_intra"] + x["sent_inter"] if op == "send" else x["recv_intra"] + x["recv_inter"]
                   for x in r["comm"]["totals"] if x["axis"] == "cp" and x["op"] == op) for op in ("send", "recv")}
    if got != {"send": want, "recv": want}:
        bad.append("rank %d: %s, formula %d" % (r["rank"], got, want))
if len(d["ranks"]) != d["world_size"] or bad:
    sys.exit("; ".join(bad) or "ranks missing")
print(want)
EOF
}

# cp_run NAME NP DIR C T A E FULL FLAGS...: train, plan --ledger passes with the cp table, bytes = formula.
cp_run() {
  local name=$1 np=$2 dir=$3 c=$4 t=$5 A=$6 e=$7 full=$8 rc want
  shift 8
  mpi "$np" "$S" train "${R[@]}" "$@" --out "$dir" >"$dir.log" 2>&1
  rc=$?
  if [ $rc != 0 ]; then fail "(1) $name: train" "exit $rc: $(last "$dir.log")"; return; fi
  "$S" plan --ledger "$dir/ledger.json" >"$dir.plan" 2>&1
  rc=$?
  if [ $rc = 0 ] && grep -q "^result: .*cp message.* matches exactly" "$dir.plan" &&
    [ "$(sed -n '/^Ring attention over/,/^  rank 0 per step/p' "$dir.plan" | grep -c ' yes$')" = "$np" ]; then
    ok "(1) $name: plan --ledger: every rank's cp messages, rings and activation items equal the formulas"
  else
    fail "(1) $name: plan --ledger" "exit $rc: $(grep -E '^result|error' "$dir.plan" || last "$dir.plan")"
  fi
  if want=$(expect_cp "$name" "$dir" "$c" "$t" "$A" "$e" "$full" 2>&1); then
    ok "(1) $name: each rank sent and received $want B on axis cp = the formula from the flags"
  else
    fail "(1) $name: cp bytes = formula from the flags" "$want"
  fi
}

cp_run "cp 2 zigzag, f64, dropout 0.1" 2 "$D/zigzag" 2 1 2 8 0 --cp 2 --dtype f64 --dropout 0.1
cp_run "cp 2 contiguous, --recompute full" 2 "$D/full" 2 1 2 8 1 --cp 2 --cp-split contiguous --dtype f64 \
  --recompute full
cp_run "cp 2, --mixed bf16 (4-byte messages)" 2 "$D/bf16" 2 1 2 4 0 --cp 2 --mixed bf16
cp_run "cp 2 × tp 2 --sequence-parallel" 4 "$D/tpsp" 2 2 2 8 0 --cp 2 --tp 2 --sequence-parallel --dtype f64
cp_run "cp 2 × dp 2 --zero 3" 4 "$D/zero3" 2 1 1 8 0 --cp 2 --dp 2 --zero 3 --dtype f64
cp_run "cp 2 × pp 2" 4 "$D/pp" 2 1 2 8 0 --cp 2 --pp 2 --dtype f64
if grep -q "shard group G = 4" "$D/zero3.plan"; then
  ok "(1) cp 2 × dp 2 --zero 3: ZeRO shards over the gradient group dp × cp = 4"
else
  fail "(1) cp 2 × dp 2 --zero 3: ZeRO shards over dp × cp = 4" "$(grep -m1 'layout:' "$D/zero3.plan")"
fi

# ---------------------------------------------------------------- (2) tampered ledgers
# tampered NAME DIR WANT_RC PATTERN PYTHON: DIR's ledger edited by PYTHON (d: the ledger) gives exit WANT_RC and
# output matching PATTERN.
tampered() {
  local name=$1 dir=$2 want=$3 pattern=$4 rc
  python3 - "$dir/ledger.json" "$tmp/bad.json" "$5" <<'EOF' || { fail "(2) $name" "could not edit the ledger"; return; }
import json, sys
d = json.load(open(sys.argv[1]))
def cp_total(rank, op):
    return next(x for x in d["ranks"][rank]["comm"]["totals"] if x["axis"] == "cp" and x["op"] == op)
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
EOF
  "$S" plan --ledger "$tmp/bad.json" >"$tmp/bad.plan" 2>&1
  rc=$?
  if [ $rc = "$want" ] && grep -Eq -- "$pattern" "$tmp/bad.plan"; then
    ok "(2) $name: exit $want, '$(grep -Eo -- "$pattern" "$tmp/bad.plan" | head -n 1 | cut -c1-80)'"
  else
    fail "(2) $name" "exit $rc: $(grep -E '^result|error' "$tmp/bad.plan" || last "$tmp/bad.plan")"
  fi
}
Z=$D/zigzag
tampered "rank 1's cp send total 8 B short" "$Z" 1 "^result: MISMATCH.*rank 1 cp comm \(over the run, measured sent -8 B" \
  'cp_total(1, "send")["sent_intra"] -= 8'
tampered "one kept cp send record one element long" "$Z" 1 "rank 0 cp record send #[0-9]+: 4097 elements" \
  'k = next(x for x in d["ranks"][0]["comm"]["calls"] if x["axis"] == "cp" and x["op"] == "send")
k["elements"] += 1; k["sent_intra"] += 8'
tampered "the ring's comm_buffer one message short" "$Z" 1 "rank 0 cp comm_buffer \(measured -32,768 B\)" \
  'd["ranks"][0]["memory"]["comm_buffer"]["current"] -= 32768'
tampered "block.lse sized for all s tokens (not s/c)" "$Z" 1 "rank 1 block.lse \(measured \+2,048 B" \
  'it = d["ranks"][1]["memory"]["items"]["block.lse"]
it["bytes_each"] *= 2; it["bytes_allocated"] *= 2'
tampered "a recv total one message short" "$Z" 1 "rank 0 cp comm .*received -32,768 B" \
  'x = cp_total(0, "recv"); x["recv_intra"] -= 32768; x["calls"] -= 1; x["elements"] -= 4096'
tampered "the dp × cp run's shard group said to be dp alone" "$D/zero3" 1 "layout.shard_group \(ledger -2\)" \
  'd["layout"]["shard_group"] = 2'
tampered "a ledger without layout.cp" "$Z" 2 "world_size 2 is not layout.dp × pp × cp × ep × tp = 1 × 1 × 1 × 1 × 1 = 1" \
  'del d["layout"]["cp"]; d["model"]["activations"]["cp"] = 1'

# ---------------------------------------------------------------- (3) plan --cp
"$S" plan --cp 4 --preset 7b >"$tmp/7b.plan" 2>&1
rc=$?
# The chapter's 7B: s = 2048, b = 1, h = 4096, L = 32; mixed bf16 computes in f32 (e = 4).
read -r msg fwd bwd step <<<"$(python3 -c '
m = 2 * 1 * (2048 // 4) * 4096 * 4
print(*("{:,}".format(x) for x in (m, 3 * m, 7 * m, 32 * 10 * m)))')"
missing=()
for want in 'C24 "shard tokens"' 'C24 "ring attention circulates K/V blocks"' \
  'C24 "merges partial results exactly with online softmax"' 'C24 "overlaps K/V transfer with compute"' \
  "= $msg B" "forward: K/V around the ring +3 .* $fwd " "backward: K/V again, dK/dV home +7 .* $bwd " \
  "per step: × L = 32 × A = 1 +320 +$step " "\(s/c\)×s per" "34·\(s/c\)·b·h"; do
  grep -Eq -- "$want" "$tmp/7b.plan" || missing+=("$want")
done
if [ $rc = 0 ] && [ ${#missing[@]} = 0 ]; then
  ok "(3) plan --cp 4 --preset 7b: C24's four statements beside $fwd B forward, $bwd B backward per layer"
else
  fail "(3) plan --cp 4 --preset 7b" "exit $rc; missing: $(printf '%s; ' "${missing[@]}")"
fi
"$S" plan --cp 2 --attention naive >"$tmp/o" 2>"$tmp/e"
rc=$?
if [ $rc = 2 ] && [ "$(wc -l <"$tmp/e")" = 1 ] && grep -q "attention flash" "$tmp/e" && [ ! -s "$tmp/o" ]; then
  ok "(3) plan --cp 2 --attention naive: one error line, exit 2"
else
  fail "(3) plan --cp 2 --attention naive: one error line, exit 2" "exit $rc: $(head -c 200 "$tmp/e")"
fi

[ "$fails" = 0 ]
