#!/usr/bin/env bash
# Mixture of experts and expert parallelism against the formulas (claim C25; plan/moe_items.h, plan/ep_bytes.h,
# check/moe_check.h):
#  (1) tiny MoE runs — one process dropless, one process with capacity 1.0 (drops), dp 2, ep 2, ep 4 with one sample
#      per micro-batch, ep 2 × pp 2, ep 2 with --mixed bf16, ep 2 with --recompute full, ep 2 with ZeRO-3 and ep 2 ×
#      dp 2 with ZeRO-1 (sharded over dp, the dense shards then all-reduced over ep) — each passes
#      `plan --ledger` exactly (every rank's parameters and expert parameters, MoE records and activation peak, ring
#      totals, and with ep every all-to-all); and, computed here from the flags and the ledger's recorded rows alone:
#      the dropless MoE items (s·b·k rows), each ep rank's counts bytes steps·A·L·(e−1)·(E/e)·4 and its dispatch
#      bytes Σ (n − o)·h·w over forward and backward, and under ZeRO the dp ranks' dense shards (their all-reduces
#      over ep) tiling Ψ_pad minus the expert parameters;
#  (2) tampered ledgers fail (exit 1) naming what differs — one moe_dispatch record's bytes (the call, expected vs
#      got), a recorded row of a dropless run, a rank's expert parameters, a capacity run's slot_out bytes, a ZeRO
#      run's dense_grads all-reduce — and a
#      ledger without layout.ep is refused (exit 2, the world size);
#  (3) `plan --ep 2 --moe-experts 4 …` prints C25's four statements beside the bytes computed here, `plan --preset 7b
#      --ep 8` the Mixtral-8x7B-like model, and --ep without experts is one error, exit 2.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then echo "FAIL - mpirun exists (no OpenMPI: make deps installs it)"; exit 1; fi
mpi() { timeout -k 5 60 bash scripts/mpirun.sh -np "$@" </dev/null; }

# s = 32, b = 2, h = 32, L = 2 MoE blocks of E = 4 experts, top-2, F = 4h; global batch 4.
R=(--layers 2 --hidden 32 --heads 2 --seq 32 --global-batch 4 --micro-batch 2 --moe-experts 4 --moe-top-k 2 --steps 3
   --eval-windows 4 --progress none --data "$tmp/small.txt" --lr-schedule constant)
D=$tmp/runs
mkdir -p "$D"

# moe_run NAME NP DIR WANT FLAGS...: train, then plan --ledger passes with WANT in its result line.
moe_run() {
  local name=$1 np=$2 dir=$3 want=$4 rc
  shift 4
  if [ "$np" = 1 ]; then
    timeout -k 5 60 "$S" train "${R[@]}" "$@" --out "$dir" >"$dir.log" 2>&1 </dev/null
  else
    mpi "$np" "$S" train "${R[@]}" "$@" --out "$dir" >"$dir.log" 2>&1
  fi
  rc=$?
  if [ $rc != 0 ]; then fail "(1) $name: train" "exit $rc: $(last "$dir.log")"; return 1; fi
  "$S" plan --ledger "$dir/ledger.json" >"$dir.plan" 2>&1
  rc=$?
  if [ $rc = 0 ] && grep -q "^result: every rank, category, $want.* matches exactly" "$dir.plan"; then
    ok "(1) $name: plan --ledger passes; activation peak: $(grep -A1 '^  activation peak (training' "$dir.plan" |
      tail -n 1 | sed 's/^ *formula //')"
  else
    fail "(1) $name: plan --ledger" "exit $rc: $(grep -E '^result|error' "$dir.plan" | cut -c1-300 || last "$dir.plan")"
  fi
}

# from_flags NAME DIR E_P: the numbers computed here from the flags and the ledger's recorded rows.
from_flags() {
  python3 - "$2/ledger.json" "$3" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ep = int(sys.argv[2])
s, b, h, E, k, F = 32, d["model"]["activations"]["micro_batch"], 32, 4, 2, 128
w = 8 if d["model"]["dtype"] == "f64" else 4  # the MoE's arrays stay in the compute type, bf16 or not
steps, A = d["layout"]["steps"], d["layout"]["accum"]
bad = []
for r in d["ranks"]:
    items = r["memory"]["items"]
    want = {"block.moe.probs": s * b * E * w, "block.moe.gates": s * b * k * w, "block.moe.slots": 3 * s * b * k * 4,
            "block.moe.counts": (b * E + E + 1) * 4}
    if d["moe"]["capacity"] == 0 and ep == 1:
        want.update({"block.moe.slot_out": s * b * k * h * w, "block.moe.pre": s * b * k * F * w})
    for name, each in want.items():
        if items[name].get("bytes_each") != each:
            bad.append("rank %d %s: %s B each, want %d" % (r["rank"], name, items[name].get("bytes_each"), each))
    if ep > 1:
        L = sum(len(c["layers"]) for c in r["moe"]["forwards"])
        full = d["model"]["activations"]["recompute"] == "full"
        tot = {x["purpose"]: x for x in r["comm"]["totals"] if x["axis"] == "ep" and x["op"] == "all_to_all"}
        counts = steps * A * L * (1 + full) * (ep - 1) * (E // ep) * 4
        # dispatch: forward (twice with full recompute) and backward's output gradients each send (n − o)·h·w
        rows = [f[i:i + 3] for c in r["moe"]["forwards"] for f in c["train"] for i in range(0, len(f), 3)]
        dispatch = (2 + full) * sum((n - o) * h * w for n, m, o in rows)
        got = (tot["moe_counts"]["sent_intra"] + tot["moe_counts"]["sent_inter"],
               tot["moe_dispatch"]["sent_intra"] + tot["moe_dispatch"]["sent_inter"])
        if got != (counts, dispatch):
            bad.append("rank %d: counts, dispatch sent %s, formula %s" % (r["rank"], got, (counts, dispatch)))
sharded = d["layout"]["strategy"] != "dp" and ep > 1
if sharded:  # ZeRO/FSDP with experts: the dp ranks' shards of the dense gradients, all-reduced over ep, tile them
    dense = 0
    for r in d["ranks"]:
        if r["moe"]["ep_rank"] == 0:
            t = [x for x in r["comm"]["totals"] if x["axis"] == "ep" and x.get("purpose") == "dense_grads"]
            dense += t[0]["elements"] // t[0]["calls"] if t else 0
    want = d["layout"]["padded_params"] - d["ranks"][0]["moe"]["expert_params"]
    if dense != want:
        bad.append("dense_grads all-reduces over ep: %d elements per step over the dp ranks, want Ψ_pad − experts = %d"
                   % (dense, want))
if bad:
    sys.exit("; ".join(bad))
print("MoE items as the flags say" + (", counts and dispatch bytes as the rows say" if ep > 1 else "") +
      (", the dense shards' all-reduces over ep tile Ψ_pad − experts" if sharded else ""))
EOF
}

check_run() {  # check_run NAME NP DIR WANT EP FLAGS...
  local name=$1 np=$2 dir=$3 want=$4 ep=$5 why
  shift 5
  moe_run "$name" "$np" "$dir" "$want" "$@" || return
  if why=$(from_flags "$name" "$dir" "$ep" 2>&1); then ok "(1) $name: $why"; else fail "(1) $name: from the flags" "$why"; fi
}

check_run "1 process, dropless" 1 "$D/one" "MoE record and ring total" 1
check_run "1 process, capacity 1.0" 1 "$D/cap" "MoE record and ring total" 1 --moe-capacity 1.0
check_run "dp 2" 2 "$D/dp2" "MoE record and ring total" 1
check_run "ep 2" 2 "$D/ep2" "MoE record, ep all-to-all and ring total" 2 --ep 2
check_run "ep 4, micro-batch 1" 4 "$D/ep4" "MoE record, ep all-to-all and ring total" 4 --ep 4 --micro-batch 1
check_run "ep 2 × pp 2, micro-batch 1" 4 "$D/ep2pp2" "MoE record, ep all-to-all, ring total" 2 --ep 2 --pp 2 \
  --micro-batch 1
check_run "ep 2, --mixed bf16" 2 "$D/bf16" "MoE record, ep all-to-all and ring total" 2 --ep 2 --mixed bf16
check_run "ep 2, --recompute full" 2 "$D/full" "MoE record, ep all-to-all and ring total" 2 --ep 2 --recompute full
check_run "ep 2, ZeRO-3, micro-batch 1" 2 "$D/zero3" "MoE record, ep all-to-all and ring total" 2 --ep 2 --zero 3 \
  --micro-batch 1
check_run "ep 2 × dp 2, ZeRO-1, micro-batch 1" 4 "$D/zero1" "MoE record, ep all-to-all and ring total" 2 --ep 2 \
  --dp 2 --zero 1 --micro-batch 1
if grep -q "drop" "$D/cap.plan" && python3 -c "
import json, sys; d = json.load(open('$D/cap/ledger.json')); sys.exit(0 if d['moe']['dropped'] > 0 else 1)"; then
  ok "(1) capacity 1.0 dropped slots, and the check took n and m from the run's rows"
else
  fail "(1) capacity 1.0 drops and the rows come from the run" "$(grep -m1 'rows of each' "$D/cap.plan")"
fi
grep -A1 '^  rank 0: .*kept call records' "$D/ep2.plan" | tr -s ' \n' ' ' | sed 's/^ */# ep 2, /; s/ *$/\n/'

# ---------------------------------------------------------------- (2) tampered ledgers
# tampered NAME DIR WANT_RC PATTERN PYTHON: DIR's ledger edited by PYTHON (d: the ledger) gives exit WANT_RC and
# output matching PATTERN.
tampered() {
  local name=$1 dir=$2 want=$3 pattern=$4 rc
  python3 - "$dir/ledger.json" "$tmp/bad.json" "$5" <<'EOF' || { fail "(2) $name" "could not edit the ledger"; return; }
import json, sys
d = json.load(open(sys.argv[1]))
def ep_calls(rank, purpose):
    return [x for x in d["ranks"][rank]["comm"]["calls"] if x["axis"] == "ep" and x.get("purpose") == purpose]
def ep_total(rank, purpose):
    return next(x for x in d["ranks"][rank]["comm"]["totals"] if x["axis"] == "ep" and x.get("purpose") == purpose)
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
EOF
  "$S" plan --ledger "$tmp/bad.json" >"$tmp/bad.plan" 2>&1
  rc=$?
  if [ $rc = "$want" ] && grep -Eq -- "$pattern" "$tmp/bad.plan"; then
    ok "(2) $name: exit $want, '$(grep -Eo -- "$pattern" "$tmp/bad.plan" | head -n 1 | cut -c1-150)'"
  else
    fail "(2) $name" "exit $rc: $(grep -E '^result|error' "$tmp/bad.plan" | cut -c1-300 || last "$tmp/bad.plan")"
  fi
}
tampered "one moe_dispatch record 4 B more sent (its total too)" "$D/ep2" 1 \
  "rank 1 ep call moe_dispatch #[0-9]+ \(step [0-9], micro-batch 0, layer [01], (forward|backward)\): expected [0-9,]+ elements of 4 B, [0-9,]+ B sent, [0-9,]+ B received, got [0-9,]+ elements of 4 B, [0-9,]+ B sent" \
  'k = ep_calls(1, "moe_dispatch")[2]; k["sent_intra"] += 4; ep_total(1, "moe_dispatch")["sent_intra"] += 4'
tampered "a moe_combine total 4 B short, its records untouched" "$D/ep4" 1 \
  "rank 3 ep moe_combine over the run \(expected .* B received; got .*\)" \
  'ep_total(3, "moe_combine")["recv_intra"] -= 4'
tampered "a dropless run's recorded row one slot more" "$D/one" 1 \
  "rank 0 moe rows: training forward 1: rows n, m, own = 129, 128, 128, expected s·b·k = 128" \
  'd["ranks"][0]["moe"]["forwards"][0]["train"][1][0] += 1'
tampered "rank 1's expert parameters said to be all E" "$D/ep2" 1 \
  "rank 1 moe.expert_params \(expected 33,408, got 66,816\)" 'd["ranks"][1]["moe"]["expert_params"] *= 2'
tampered "a capacity run's slot_out one row larger over the run" "$D/cap" 1 \
  "rank 0 block.moe.slot_out \(bytes allocated: expected [0-9,]+, got [0-9,]+" \
  'd["ranks"][0]["memory"]["items"]["block.moe.slot_out"]["bytes_allocated"] += 128'
tampered "ZeRO-1 with experts: rank 2's dense_grads all-reduce 8 B more" "$D/zero1" 1 \
  "MISMATCH in rank 2 comm \(over the run, measured \+8 B\)" 'ep_total(2, "dense_grads")["sent_intra"] += 8'
tampered "a ledger without layout.ep" "$D/ep2" 2 \
  "world_size 2 is not layout.dp × pp × cp × ep × tp = 1 × 1 × 1 × 1 × 1 = 1" 'del d["layout"]["ep"]'

# ---------------------------------------------------------------- (3) plan --ep
"$S" plan --layers 2 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --moe-experts 4 --ep 2 --mixed none \
  >"$tmp/ep.plan" 2>&1
rc=$?
# Even load: s·b·k·h·w·(e−1)/e per all-to-all; counts (e−1)·(E/e)·4; 2 MoE layers; parameters from the dims.
read -r one layer step whole rank <<<"$(python3 -c '
s, b, k, h, w, E, e, F, V, L = 32, 2, 2, 32, 4, 4, 2, 128, 256, 2
one = s * b * k * h * w * (e - 1) // e
layer = 4 * one + (e - 1) * (E // e) * 4
expert, attention = 2 * h * F + F + h, 4 * h * h + 8 * h
whole = V * h + s * h + L * (attention + E * h + E * expert) + 2 * h + h * V
rank = whole - L * (E - E // e) * expert
print(*("{:,}".format(x) for x in (one, layer, L * layer, whole, rank)))')"
missing=()
for want in 'C25 "experts live on different ranks"' 'C25 "each MoE layer does two all-to-alls \(dispatch, combine\)"' \
  'C25 "routing is input-dependent, so load imbalance idles ranks"' 'C25 "a load-balancing loss mitigates it"' \
  "forward dispatch: .* $one " "per MoE layer \(4 all-to-alls of rows \+ the counts\) +$layer " \
  "per step: × L_moe = 2 × A = 1 +$step " "the whole model .* $whole " "per rank at e = 2 .* $rank "; do
  grep -Eq -- "$want" "$tmp/ep.plan" || missing+=("$want")
done
if [ $rc = 0 ] && [ ${#missing[@]} = 0 ]; then
  ok "(3) plan --ep 2: C25's four statements beside $one B per all-to-all, $layer B per layer, Ψ $whole, $rank per rank"
else
  fail "(3) plan --ep 2" "exit $rc; missing: $(printf '%s; ' "${missing[@]}")"
fi
"$S" plan --preset 7b --ep 8 >"$tmp/7b.plan" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "Mixtral-8x7B-like" "$tmp/7b.plan" && grep -q "arXiv:2401.04088" "$tmp/7b.plan" &&
  grep -Eq "per rank at e = 8 .* 6,178,807,808 " "$tmp/7b.plan" && grep -Eq "forward dispatch: .* 58,720,256 " "$tmp/7b.plan"; then
  ok "(3) plan --preset 7b --ep 8: Mixtral-like, $(grep -Eo 'the whole model .*' "$tmp/7b.plan" | awk '{print $(NF-3)}') params, 58,720,256 B per all-to-all"
else
  fail "(3) plan --preset 7b --ep 8" "exit $rc: $(grep -E 'Expert|error' "$tmp/7b.plan" | head -n 2)"
fi
"$S" plan --ep 2 >"$tmp/o" 2>"$tmp/e"
rc=$?
if [ $rc = 2 ] && [ "$(wc -l <"$tmp/e")" = 1 ] && grep -q "add --moe-experts" "$tmp/e" && [ ! -s "$tmp/o" ]; then
  ok "(3) plan --ep 2 without experts: one error line, exit 2"
else
  fail "(3) plan --ep 2 without experts: one error line, exit 2" "exit $rc: $(head -c 200 "$tmp/e")"
fi

[ "$fails" = 0 ]
