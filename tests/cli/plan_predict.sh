#!/usr/bin/env bash
# `shardlab plan --predict` and `plan --calibrate` (plan/rank_prediction.h; claims C29, C30), against real runs:
#  (1) calibration: a 1-rank run, then `plan --calibrate` under 2 ranks: the rates file holds FLOP rates (naive and
#      flash attention) above 1% of this core's FMA peak and not above it, a finite β > 0 and α ≥ 0, and the update's
#      seconds per parameter: > 0 and below the run's whole step per parameter; the same without a run (rank 0
#      times the trainer's step in-process); the prediction under DP prices the whole update on each rank, under
#      ZeRO-1 half of it;
#  (2) 17 layouts of the small GPT (scripts/predict_table.py: single, dp 2, ZeRO-1/2/3, tp 2, pp 2, cp 2, ep 2,
#      ep 2 + ZeRO-1, dp 2 × tp 2, tp 2 × pp 2, dp 2 × pp 2 × tp 2, tp 2 with sequence parallelism, ZeRO-2 in
#      mixed bf16, dp 2 and cp 2 in the exact mode — the trainer's layouts, under the trainer's rules): on every
#      rank the predicted model states, activation peak and bytes per step on dp, tp, pp and cp (and ep's
#      dense-shard all-reduce under ZeRO) equal the run's ledger.json exactly, and `plan --ledger` passes on each
#      run; under ep the dp bytes and ep's all-reduce
#      are predicted (not left out), the all-to-alls and activation peak at an even load are printed beside the
#      measured ones, within 25 % of them (the lesson's routing at 8 samples: a few percent);
#  (3) a few of those numbers against the chapter's formulas by hand (Ψ of the GPT's dims, 16 B/param, the DP ring's
#      2(N−1)/N and ZeRO-3's gathers);
#  (4) time: every prediction finite and positive; predicted vs measured and the errors printed, never a threshold
#      (a shared 2-core machine's clock: the timed target is `make bench`'s section);
#  (5) bad input: no --np, heads not split by tp, a batch that does not split, an unreadable --rates, --calibrate
#      on one rank, --calibrate --run with a model flag: one line, exit 2.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"

MODEL="--layers 4 --hidden 128 --heads 4 --seq 64 --global-batch 8 --micro-batch 2"
# shellcheck disable=SC2086
"$S" train $MODEL --steps 8 --eval-every 0 --eval-windows 0 --progress none --out "$tmp/one" >"$tmp/one.log" 2>&1 ||
  fail "setup: a 1-rank run" "$(last "$tmp/one.log")"
mpi 2 "$S" plan --calibrate --run "$tmp/one" --out "$tmp/rates.json" >"$tmp/cal.log" 2>&1 ||
  fail "setup: plan --calibrate under 2 ranks" "$(last "$tmp/cal.log")"
sed 's/^/  /' "$tmp/cal.log"
sane_rates() {  # FILE: "" if the rates are sane, else what is not (a missing key or file included)
  python3 - "$1" <<'PY' 2>&1 || echo "the rates file could not be read as expected"
import json, math, sys
r = json.load(open(sys.argv[1]))
f, peak, b, a = r["gpu_flops"], r["how"]["fma_peak_flops"], r["bytes_per_s"], r["latency_s"]
bad = []
for name in ("gpu_flops", "gpu_flops_flash"):
    if not (math.isfinite(r[name]) and 0.01 * peak < r[name] <= peak):
        bad.append("%s %g not in (1%%, 100%%] of the FMA peak %g" % (name, r[name], peak))
u, step = r["update_s_per_param"], r["how"]["step_seconds"]
if not (math.isfinite(u) and 0 < u and r["how"]["update_seconds"] < step):
    bad.append("the update: %g s per parameter, %g s of a %g s step" % (u, r["how"]["update_seconds"], step))
if not (math.isfinite(b) and b > 0): bad.append("β %g" % b)
if not (math.isfinite(a) and a >= 0): bad.append("α %g" % a)
print("; ".join(bad))
PY
}
why=$(sane_rates "$tmp/rates.json")
[ -z "$why" ] && ok "calibration: FLOP rates within the FMA peak, β > 0, α ≥ 0, the update a part of the step" ||
  fail "calibration: sane rates" "$why"
mpi 2 "$S" plan --calibrate --layers 4 --hidden 128 --heads 4 --seq 64 --micro-batch 2 --steps 3 \
  --out "$tmp/rates_inproc.json" >"$tmp/cal2.log" 2>&1 || fail "setup: plan --calibrate without --run" "$(last "$tmp/cal2.log")"
grep -q '^compute: timed in-process' "$tmp/cal2.log" || fail "calibration without --run: says what it timed" "$(head -1 "$tmp/cal2.log")"
why=$(sane_rates "$tmp/rates_inproc.json")
[ -z "$why" ] && ok "calibration without --run (the step timed in-process): sane rates" ||
  fail "calibration without --run: sane rates" "$why"

# The update in a prediction: DP's rank updates all Ψ, ZeRO-1's half (rounded up), at the file's seconds per parameter.
for z in 0 1; do
  # shellcheck disable=SC2086
  "$S" plan --predict --np 2 $MODEL --zero $z --rates "$tmp/rates.json" --json "$tmp/update$z.json" \
    >"$tmp/update$z.log" 2>&1 || fail "setup: plan --predict --zero $z" "$(last "$tmp/update$z.log")"
done
why=$(python3 - "$tmp/update0.json" "$tmp/update1.json" "$tmp/rates.json" 2>&1 <<'PY' || echo "the check could not read the predictions"
import json, sys
dp, z1, r = (json.load(open(f)) for f in sys.argv[1:4])
u, bad = r["update_s_per_param"], []
for name, p, share in (("DP", dp, 1), ("ZeRO-1", z1, 2)):
    for k in p["ranks"]:
        want = -(-k["params"] // share)
        if k["updated_params"] != want or abs(k["seconds"]["update"] - want * u) > 1e-12 * want * u:
            bad.append("%s rank %d: %d parameters, %g s; expected %d, %g s" % (name, k["rank"], k["updated_params"],
                                                                           k["seconds"]["update"], want, want * u))
print("; ".join(bad))
PY
)
[ -z "$why" ] && ok "the update: DP's ranks each price all Ψ, ZeRO-1's half, at the calibrated seconds per parameter" ||
  fail "the update priced per rank" "$why"

python3 scripts/predict_table.py --rates "$tmp/rates.json" --out "$tmp/table" --steps 6 --json "$tmp/table.json" \
  >"$tmp/table.log" 2>&1
rc=$?
cat "$tmp/table.log"
[ -f "$tmp/table.json" ] || fail "setup: predict_table.py wrote its JSON" "$(last "$tmp/table.log")"
[ $rc = 0 ] && ok "every layout: memory and bytes predicted = measured on every rank, plan --ledger passes" ||
  fail "predicted = measured" "exit $rc: $(grep MISMATCH "$tmp/table.log" | head -3 | tr '\n' '|')"

why=$(python3 - "$tmp/table.json" <<'PY'
import json, math, sys
t = {r["layout"]: r for r in json.load(open(sys.argv[1]))["rows"]}
# Ψ of the trainer's GPT by hand (L 4, h 128, V 256, s 64): embeddings, per block 2 LN + QKV + W^O + MLP, final LN, head.
L, h, V, s = 4, 128, 256, 64
psi = V * h + s * h + L * (2 * 2 * h + 3 * h * h + 3 * h + h * h + h + 4 * h * h + 4 * h + 4 * h * h + h) + 2 * h + V * h
bad = []
want = {"single": ("model_states", 16 * psi), "dp2-zero1": ("model_states", 8 * psi + 8 * psi // 2),
        "dp2-zero3": ("model_states", 16 * psi // 2)}
for name, (key, v) in want.items():
    if name in t and t[name][key][0] != v: bad.append("%s %s %d, by hand %d" % (name, key, t[name][key][0], v))
# DP ring all-reduce of 4-byte gradients over 2 ranks: 2(N−1)/N·4Ψ; ZeRO-3 with 2 micro-batches: per micro-batch a
# forward and a backward all-gather of the params and a reduce-scatter of the grads, each (N−1)/N·4Ψ.
for name, v in (("dp2", 4 * psi), ("dp2-zero3", 6 * 2 * psi)):
    if name in t and t[name]["bytes_measured"]["dp"][0] != v: bad.append("%s dp bytes %s, by hand %d" % (name, t[name]["bytes_measured"]["dp"][0], v))
for r in t.values():
    if not (math.isfinite(r["step_predicted_s"]) and r["step_predicted_s"] > 0): bad.append("%s: predicted step %s" % (r["layout"], r["step_predicted_s"]))
if len(t) != 17: bad.append("%d layouts in the table, not 17" % len(t))
# Under ep the exact numbers must be predicted, not skipped: dp bytes (dense over dp·ep) and ZeRO's ep all-reduce.
for name, key in (("ep2", "dp"), ("ep2-zero1", "ep_grad")):
    got = t[name]["bytes"].get(key) if name in t else None
    if (got is None or None in got or got != t[name]["bytes_measured"][key] or not any(got)):
        bad.append("%s %s bytes: predicted %s, measured %s" % (name, key, got, t[name]["bytes_measured"][key]))
for name in ("ep2", "ep2-zero1"):
    for k, (e, m) in enumerate(zip(t[name]["even_load"], t[name]["ep_all_to_all_measured"])):
        if not e or not (m > 0 and abs(e["ep_all_to_all"] - m) <= 0.25 * m):
            bad.append("%s rank %d: the all-to-alls at an even load %s, measured %s B/step" % (name, k, e and e["ep_all_to_all"], m))
print("; ".join(bad))
PY
)
[ -z "$why" ] && ok "by hand: 16·Ψ, ZeRO-1's 12·Ψ and ZeRO-3's 8·Ψ bytes, the dp rings' 4Ψ and 12Ψ; ep's exact bytes predicted, its all-to-alls at an even load within 25 %; every predicted step finite > 0" ||
  fail "by-hand numbers" "$why"

# Bad input: one line, exit 2.
bad_predict() {  # NAME ARGS...
  local name=$1
  shift
  "$S" plan "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/bad.err")
  [ $rc = 2 ] && [ "$lines" = 1 ] && ok "bad input: $name (exit 2, one line)" ||
    fail "bad input: $name" "exit $rc, $lines lines: $(head -c 200 "$tmp/bad.err")"
}
bad_predict "no --np" --predict $MODEL
bad_predict "--tp 3 over 4 heads" --predict --np 3 --tp 3 $MODEL
bad_predict "a batch dp 3 does not split" --predict --np 3 $MODEL
bad_predict "an unreadable --rates" --predict --np 1 --rates "$tmp/none.json" $MODEL
bad_predict "ep 2 × cp 2, which the trainer refuses (experts route whole samples)" --predict --np 4 --ep 2 --cp 2 \
  --moe-experts 4 --attention flash $MODEL
bad_predict "cp 2 with naive attention, which the trainer refuses" --predict --np 2 --cp 2 $MODEL
bad_predict "--mixed bf16 --dtype f64, which the trainer refuses" --predict --np 2 --mixed bf16 --dtype f64 $MODEL
"$S" plan --predict --np 4 --ep 2 --cp 2 --moe-experts 4 --attention flash $MODEL >"$tmp/epcp.out" 2>&1
grep -q "the trainer would refuse this: --cp splits a sample's tokens" "$tmp/epcp.out" &&
  ok "bad input: ep 2 × cp 2 refused in the trainer's own words" || fail "ep 2 × cp 2 in the trainer's words" "$(head -c 200 "$tmp/epcp.out")"
bad_predict "--calibrate on one rank" --calibrate --run "$tmp/one" --out "$tmp/r.json"
mpi 2 "$S" plan --calibrate --run "$tmp/one" --out "$tmp/r.json" --layers 2 >"$tmp/cal_bad.out" 2>&1
rc=$?
if [ $rc = 2 ] && [ "$(grep -c 'error:' "$tmp/cal_bad.out")" = 1 ] && grep -q 'drop --layers' "$tmp/cal_bad.out"; then
  ok "bad input: --calibrate --run with a model flag (exit 2, one error line from rank 0)"
else
  fail "bad input: --calibrate --run with a model flag" "exit $rc: $(grep 'error' "$tmp/cal_bad.out" | head -c 200)"
fi
exit $((fails > 0))
