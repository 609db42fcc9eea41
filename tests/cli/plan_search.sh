#!/usr/bin/env bash
# `shardlab plan --search` (plan/layout_search.h, plan/step_time.h, plan/search_ranking.h; claims C26, C29):
#  (1) 7B on 64 GPUs and 70B on 512 GPUs of 80 GB: at least one row, every row's memory ≤ 80 GB and = states + act,
#      rows sorted by step time, each row's step = compute + update + exposed dp, tp, pp, cp, ep + bubble (from the printed
#      columns, within rounding), the rule-of-thumb line with its rank; for 70B/512 the rule is the chapter's
#      D16 × T8 × P4 (C26);
#  (2) one 3D row of the JSON against the ordinary `plan` for the same layout: its model states against plan's
#      "with ZeRO-1 over the D replicas" line, its activations per layer against plan's Megatron table; an SP row's
#      activations per layer against plan --sequence-parallel's "tensor + sequence" rows;
#  (3) --inter-gbps 100× lower: no layout gets faster, layouts with no inter-node link keep their time, the best
#      changes to one sending no more bytes between nodes; --gpu-mem 40 and --global-batch 128 move the best too;
#  (4) --help; a --gpu-mem nothing fits: one line, exit 1 (no solution, as a failed `plan --ledger` check); bad input (0 GPUs,
#      negative memory, a GPU count no layout can split the model over, an unknown preset, no --gpus): one line,
#      exit 2;
#  (5) a MoE (C25): layouts with ep > 1, every row within the memory and its step the sum of its terms, ep's time
#      > 0 exactly where ep > 1, one row's model states and parameters as `plan --ep e --moe-experts E` prints them
#      for the same layout, the Mixtral-like preset's Ψ as plan's; bad MoE input: one line, exit 2.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"

# check_table NAME FILE GB: the printed ranking's invariants (python3 prints "" or why not).
check_table() {
  local why
  why=$(python3 - "$2" "$3" <<'EOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
limit = float(sys.argv[2])
try:
    start = next(i for i, l in enumerate(lines) if l.startswith("rank by step time")) + 3
except StopIteration:
    print("no ranking"); sys.exit()
rows = []
for l in lines[start:]:
    if l.startswith("rule of thumb"): break
    rows.append(l.split())
bad = []
if not rows: bad.append("no rows")
prev = None
for f in rows:
    if len(f) != 24: bad.append("row has %d fields: %s" % (len(f), f)); continue
    states, act, mem = float(f[11]), float(f[12]), float(f[13])
    compute, update, dp, tp, pp, cp, ep, bubble, step = (float(x) for x in f[14:23])
    if mem > limit: bad.append("rank %s: %s GB over %s" % (f[0], mem, limit))
    if abs(states + act - mem) > 0.011: bad.append("rank %s: states + act %.2f != mem %.2f" % (f[0], states + act, mem))
    terms = compute + update + dp + tp + pp + cp + ep + bubble
    if abs(terms - step) > 0.46: bad.append("rank %s: terms add to %.1f, step %.1f" % (f[0], terms, step))
    if prev is not None and step < prev: bad.append("rank %s: step %.1f after %.1f" % (f[0], step, prev))
    prev = step
rule = [l for l in lines if l.startswith("rule of thumb rank: ")]
if len(rule) != 1 or not any(l.startswith("why: ") for l in lines): bad.append("no rule-of-thumb rank and why line")
print("; ".join(bad[:3]))
EOF
)
  if [ -z "$why" ]; then ok "$1"; else fail "$1" "$why"; fi
}

# best FILE: the first row's layout (dp tp sp pp cp ep zero bxm recompute attn).
best() { awk '/^rank by step time/ {on = NR + 3} on && NR == on {print $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}' "$1"; }

$S plan --search --gpus 64 --gpu-mem 80 --preset 7b >"$tmp/7b.txt" 2>"$tmp/7b.err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$tmp/7b.err" ]; then ok "7B on 64 GPUs: exit 0"; else fail "7B on 64 GPUs: exit 0" "rc $rc, $(last "$tmp/7b.err")"; fi
check_table "7B on 64 GPUs: rows ≤ 80 GB, sorted, step = compute + update + comm + bubble, rule of thumb ranked" "$tmp/7b.txt" 80
if grep -q "^rule of thumb (.*): dp 8 tp 8 pp 1 " "$tmp/7b.txt"; then ok "7B/64: the rule of thumb is tp 8 (a node), pp 1 (14 GB per replica fits), dp 8"
else fail "7B/64: the rule of thumb is tp 8, pp 1, dp 8" "$(grep '^rule of thumb (' "$tmp/7b.txt")"; fi

$S plan --search --gpus 512 --gpu-mem 80 --preset 70b --json "$tmp/70b.json" >"$tmp/70b.txt" 2>"$tmp/70b.err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$tmp/70b.err" ]; then ok "70B on 512 GPUs: exit 0"; else fail "70B on 512 GPUs: exit 0" "rc $rc, $(last "$tmp/70b.err")"; fi
check_table "70B on 512 GPUs: rows ≤ 80 GB, sorted, step = compute + update + comm + bubble, rule of thumb ranked" "$tmp/70b.txt" 80
if grep -q "^rule of thumb (.*): dp 16 tp 8 pp 4 cp 1 ep 1 ZeRO-1 " "$tmp/70b.txt"; then
  ok "70B/512: the rule of thumb is the chapter's D16 × T8 × P4 with ZeRO-1 (C26)"
else fail "70B/512: the rule of thumb is D16 × T8 × P4" "$(grep '^rule of thumb (' "$tmp/70b.txt")"; fi
fit=$(sed -n 's/^layouts: .* over 80 GB, \([0-9,]*\) fit$/\1/p' "$tmp/70b.txt" | tr -d ,)
rows=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["rows"]), d["counts"]["fit"])' "$tmp/70b.json" 2>&1)
if [ -n "$fit" ] && [ "$rows" = "$fit $fit" ]; then ok "--json holds every fitting row ($fit)"; else fail "--json holds every fitting row" "printed '$fit', json '$rows'"; fi

# (2) A 3D row (dp, tp, pp > 1, ZeRO-1, cp 1) against the ordinary plan for the same layout.
read -r D T P A R STATES PER < <(python3 - "$tmp/70b.json" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["zero"] == 1 and r["cp"] == 1 and not r["sequence_parallel"] and min(r["dp"], r["tp"], r["pp"]) > 1:
        m = r["memory_bytes"]
        print(r["dp"], r["tp"], r["pp"], r["attention"], r["recompute"], m["model_states"], m["activation_per_layer"])
        break
EOF
)
if [ -z "${D:-}" ]; then fail "setup: a 3D ZeRO-1 row in the 70B ranking" "none"; fi
$S plan --preset 70b --dp "$D" --zero 1 --tp "$T" --pp "$P" --attention "$A" --recompute "$R" >"$tmp/plan.txt" 2>&1
line=$(grep "with ZeRO-1 over the $D replicas:" "$tmp/plan.txt")
plan_gb=$(sed -n 's/.*replicas: \([0-9.]*\) GB per GPU.*/\1/p' <<<"$line")
if [ -n "$plan_gb" ] && python3 -c "import sys; sys.exit(abs($STATES/1e9 - $plan_gb) > 0.0051)"; then
  ok "model states of dp $D tp $T pp $P ZeRO-1: $plan_gb GB, as plan's 3D line"
else fail "model states of dp $D tp $T pp $P ZeRO-1 equal plan's 3D line" "search $STATES B, plan '$line'"; fi
case "$R/$A" in  # the row of plan's Megatron table (flash keeps no s² term: selective's row)
  full/*) label="full recompute" ;;
  none/naive) label="tensor parallel" ;;
  *) label="tensor parallel, selective recompute" ;;
esac
plan_per=$(awk -v l="  $label  " 'index($0, l) == 1 {gsub(",", "", $(NF-1)); print $(NF-1)}' "$tmp/plan.txt")
if [ -n "$plan_per" ] && [ "$plan_per" = "$PER" ]; then ok "activations per layer ($R, $A, t = $T): $PER B, plan's '$label' row"
else fail "activations per layer equal plan's '$label' row" "search $PER, plan '$plan_per'"; fi

# (2b) An SP row's activations per layer against plan's "tensor + sequence" rows for the same tp.
read -r T B A R PER < <(python3 - "$tmp/70b.json" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["sequence_parallel"] and r["cp"] == 1 and r["recompute"] != "full":
        print(r["tp"], r["micro_batch"], r["attention"], r["recompute"], r["memory_bytes"]["activation_per_layer"])
        break
EOF
)
if [ -z "${T:-}" ]; then fail "setup: an SP row in the 70B ranking" "none"
else
  $S plan --preset 70b --tp "$T" --micro-batch "$B" --sequence-parallel --attention "$A" --recompute "$R" \
    >"$tmp/plan_sp.txt" 2>&1
  case "$R/$A" in none/naive) label="tensor + sequence parallel" ;; *) label="tensor + sequence, selective" ;; esac
  plan_per=$(awk -v l="  $label  " 'index($0, l) == 1 {gsub(",", "", $(NF-1)); print $(NF-1)}' "$tmp/plan_sp.txt")
  if [ -n "$plan_per" ] && [ "$plan_per" = "$PER" ]; then ok "SP: activations per layer ($R, $A, t = $T, b = $B): $PER B, plan's '$label' row"
  else fail "SP: activations per layer equal plan's '$label' row" "search $PER, plan '$plan_per'"; fi
fi

# (3) The inter-node link 100× slower.
$S plan --search --gpus 512 --gpu-mem 80 --preset 70b --inter-gbps 0.25 --json "$tmp/slow.json" >"$tmp/slow.txt" 2>&1
why=$(python3 - "$tmp/70b.json" "$tmp/slow.json" <<'EOF'
import json, sys
fast, slow = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: (r["dp"], r["tp"], r["sequence_parallel"], r["pp"], r["cp"], r["ep"], r["zero"], r["micro_batch"], r["recompute"], r["attention"])
inter = lambda r: sum(r["bytes_sent_per_gpu"][a] for a in ("dp", "tp", "pp", "cp") if r["links"][a] == "inter")
f = {key(r): r for r in fast["rows"]}
bad = []
for r in slow["rows"]:
    g = f.get(key(r))
    if g is None: bad.append("layout %s only in the slow ranking" % (key(r),)); continue
    if r["seconds"]["step"] < g["seconds"]["step"] * (1 - 1e-12): bad.append("%s got faster" % (key(r),))
    if inter(r) == 0 and r["seconds"]["step"] != g["seconds"]["step"]: bad.append("%s: no inter-node bytes, time moved" % (key(r),))
if len(slow["rows"]) != len(fast["rows"]): bad.append("row counts differ")
if key(slow["rows"][0]) == key(fast["rows"][0]): bad.append("the best did not change: %s" % (key(fast["rows"][0]),))
elif inter(slow["rows"][0]) > inter(fast["rows"][0]): bad.append("the new best sends more between nodes")
print("; ".join(bad[:3]))
EOF
)
if [ -z "$why" ]; then ok "--inter-gbps 0.25: no layout faster, the best moves to one with less inter-node traffic"
else fail "--inter-gbps 100× lower is monotone and moves the best" "$why"; fi
check_table "--inter-gbps 0.25: the table's invariants" "$tmp/slow.txt" 80

$S plan --search --gpus 64 --gpu-mem 40 --preset 7b >"$tmp/7b40.txt" 2>&1
check_table "--gpu-mem 40: rows ≤ 40 GB" "$tmp/7b40.txt" 40
if [ -n "$(best "$tmp/7b40.txt")" ] && [ "$(best "$tmp/7b40.txt")" != "$(best "$tmp/7b.txt")" ]; then
  ok "--gpu-mem 40 moves the best (80 GB: $(best "$tmp/7b.txt"); 40 GB: $(best "$tmp/7b40.txt"))"
else fail "--gpu-mem 40 moves the best" "80: '$(best "$tmp/7b.txt")', 40: '$(best "$tmp/7b40.txt")'"; fi

$S plan --search --gpus 512 --gpu-mem 80 --preset 70b --global-batch 128 >"$tmp/b128.txt" 2>&1
check_table "--global-batch 128: the table's invariants" "$tmp/b128.txt" 80
if grep -q "B = 128 sequences × s = 2048 (default) = 262,144 tokens" "$tmp/b128.txt" &&
  [ -n "$(best "$tmp/b128.txt")" ] && [ "$(best "$tmp/b128.txt")" != "$(best "$tmp/70b.txt")" ]; then
  ok "--global-batch 128 moves the best (1024: $(best "$tmp/70b.txt"); 128: $(best "$tmp/b128.txt"))"
else fail "--global-batch 128 moves the best" "1024: '$(best "$tmp/70b.txt")', 128: '$(best "$tmp/b128.txt")'"; fi

# (4) Help, no solution, and bad input.
$S plan --search --help >"$tmp/help.out" 2>"$tmp/help.err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^Usage: shardlab plan --search" "$tmp/help.out" && grep -q -- "--inter-gbps" "$tmp/help.out" &&
  [ ! -s "$tmp/help.err" ]; then ok "plan --search --help: usage on stdout, exit 0"
else fail "plan --search --help: usage on stdout, exit 0" "rc $rc, $(last "$tmp/help.err")"; fi
$S plan --search --gpus 8 --gpu-mem 1 --preset 70b >"$tmp/none.out" 2>"$tmp/none.err"
rc=$?
if [ $rc -eq 1 ] && [ ! -s "$tmp/none.out" ] && [ "$(wc -l <"$tmp/none.err")" -eq 1 ] && grep -q "no layout fits 1 GB" "$tmp/none.err"; then
  ok "70B on 8 GPUs of 1 GB: one line, exit 1"
else fail "70B on 8 GPUs of 1 GB: one line, exit 1" "rc $rc, $(last "$tmp/none.err")"; fi
bad() {  # bad NAME WORDS ARGS...: one error line containing WORDS, exit 2
  local name=$1 words=$2; shift 2
  $S plan "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$?
  if [ $rc -eq 2 ] && [ ! -s "$tmp/bad.out" ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] && grep -q -- "$words" "$tmp/bad.err"; then ok "$name: one line, exit 2"
  else fail "$name: one line naming '$words', exit 2" "rc $rc, $(last "$tmp/bad.err")"; fi
}
bad "--gpus 0" "--gpus expects" --search --gpus 0 --gpu-mem 80 --preset 7b
bad "--gpu-mem -5" "--gpu-mem expects" --search --gpus 8 --gpu-mem -5 --preset 7b
bad "67 GPUs for 7B (prime: no tp, pp, cp or dp divides)" "no layout splits" --search --gpus 67 --ranks-per-node 67 --gpu-mem 80 --preset 7b
bad "--preset 13b" "13b" --search --gpus 8 --gpu-mem 80 --preset 13b
bad "no --gpus" "needs --gpus" --search --gpu-mem 80 --preset 7b
bad "12 GPUs on nodes of 8" "whole number of nodes" --search --gpus 12 --gpu-mem 80 --preset 7b
bad "an ordinary plan flag with --search" "--dp" --search --gpus 8 --gpu-mem 80 --preset 7b --dp 8

# --rates FILE (plan --calibrate's): the search runs at the file's rates and says so in its header and JSON.
printf '{"gpu_flops": 6.8e10, "bytes_per_s": 5.9e9, "latency_s": 1.3e-6}\n' >"$tmp/rates.json"
$S plan --search --gpus 2 --gpu-mem 1 --global-batch 8 --rates "$tmp/rates.json" --json "$tmp/rates_search.json" \
  >"$tmp/rates.out" 2>&1
rc=$?
got=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["rates"]
print(r["gpu_flops"], r["intra_bytes_per_s"], r["inter_bytes_per_s"], r["latency_s"])' "$tmp/rates_search.json" 2>&1)
if [ $rc -eq 0 ] && [ "$got" = "68000000000.0 5900000000.0 5900000000.0 1.3e-06" ] &&
  grep -q "measured on this machine by plan --calibrate" "$tmp/rates.out"; then
  ok "--rates FILE: the search runs at the file's rates ($got) and names them"
else fail "--rates FILE: the search at the file's rates" "rc $rc, rates $got"; fi
bad "--rates with --gpu-tflops" "drop --gpu-tflops" --search --gpus 2 --gpu-mem 1 --rates "$tmp/rates.json" --gpu-tflops 3
echo '{}' >"$tmp/empty_rates.json"
bad "--rates FILE without gpu_flops" "not a rates file" --search --gpus 2 --gpu-mem 1 --rates "$tmp/empty_rates.json"

# (5) Experts (C25).
MOE="--layers 4 --hidden 128 --heads 4 --seq 64 --moe-experts 8 --moe-top-k 2"
# shellcheck disable=SC2086
$S plan --search --gpus 8 --gpu-mem 1 --global-batch 16 $MOE --top 40 --json "$tmp/moe.json" >"$tmp/moe.txt" 2>"$tmp/moe.err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$tmp/moe.err" ]; then ok "MoE E 8 top-2 on 8 GPUs of 1 GB: exit 0"; else fail "MoE search: exit 0" "rc $rc, $(last "$tmp/moe.err")"; fi
check_table "MoE: rows ≤ 1 GB, sorted, step = compute + update + comm + bubble" "$tmp/moe.txt" 1000
if grep -q "experts: E=8 top-2 F=512" "$tmp/moe.txt" && grep -q "^memory: .*" "$tmp/moe.txt" &&
  grep -q "^        experts: a rank holds the dense part and E/ep experts" "$tmp/moe.txt" &&
  grep -q "^         tp (SP: [^)]*), cp, ep (4 all-to-alls" "$tmp/moe.txt"; then ok "MoE: the header names the experts, their memory and ep's time"
else fail "MoE: the header names the experts" "$(grep -E '^(model|memory|overlap):' "$tmp/moe.txt" | tr '\n' ' ')"; fi
why=$(python3 - "$tmp/moe.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
bad, eps = [], set()
for r in d["rows"]:
    s, m = r["seconds"], r["memory_bytes"]
    eps.add(r["ep"])
    if m["total"] > 1e9: bad.append("rank %d: %d B over 1 GB" % (r["rank"], m["total"]))
    terms = sum(s[k] for k in ("compute", "update", "dp", "tp", "pp", "cp", "ep", "bubble"))
    if abs(terms - s["step"]) > 1e-9 * s["step"]: bad.append("rank %d: terms %g, step %g" % (r["rank"], terms, s["step"]))
    if (s["ep"] > 0) != (r["ep"] > 1) or (r["bytes_sent_per_gpu"]["ep"] > 0) != (r["ep"] > 1):
        bad.append("rank %d: ep %d with ep time %g" % (r["rank"], r["ep"], s["ep"]))
    if r["ep"] > 1 and r["cp"] > 1: bad.append("rank %d: ep with cp" % r["rank"])
if not any(e > 1 for e in eps): bad.append("no layout with ep > 1 (ep: %s)" % sorted(eps))
if d["model"]["experts"] != 8 or d["model"]["top_k"] != 2: bad.append("model %s" % d["model"])
print("; ".join(bad[:3]))
EOF2
)
if [ -z "$why" ]; then ok "MoE JSON: ep > 1 listed, every row ≤ 1 GB, step = Σ terms, ep time > 0 exactly where ep > 1"
else fail "MoE JSON invariants" "$why"; fi

# One row with ep > 1, tp 1, pp 1 (dp > 1 and ZeRO when there is one) against plan --ep for the same layout.
read -r D E Z PSI STATES < <(python3 - "$tmp/moe.json" <<'EOF2'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["ep"] > 1 and r["tp"] == 1 and r["pp"] == 1]
rows.sort(key=lambda r: (r["zero"] == 0, r["dp"] == 1))
if rows:
    r = rows[0]
    print(r["dp"], r["ep"], r["zero"], r["memory_bytes"]["psi_slice"], r["memory_bytes"]["model_states"])
EOF2
)
if [ -z "${E:-}" ]; then fail "setup: a row with ep > 1, tp 1, pp 1" "none"; else
  # shellcheck disable=SC2086
  $S plan $MOE --ep "$E" --dp "$D" --zero "$Z" >"$tmp/plan_ep.txt" 2>&1
  read -r PLAN_PSI PLAN_STATES < <(python3 - "$tmp/plan_ep.txt" "$Z" <<'EOF2'
import re, sys
text = open(sys.argv[1]).read()
row = next((l for l in text.splitlines() if "per rank at e = " in l), "")
nums = [t.replace(",", "") for t in row.split("expert)")[-1].split() if re.fullmatch(r"[\d,]+", t)]
psi, states = (nums[0], nums[1]) if len(nums) >= 2 else ("-", "-")
if sys.argv[2] != "0":
    m = re.search(r"experts\): ([\d,]+) B of model states per rank", text)
    states = m.group(1).replace(",", "") if m else "-"
print(psi, states)
EOF2
)
  if [ "$PSI" = "$PLAN_PSI" ] && [ "$STATES" = "$PLAN_STATES" ]; then
    ok "dp $D ep $E ZeRO-$Z: Ψ per rank $PSI and model states $STATES B, as plan --ep $E prints them"
  else fail "dp $D ep $E ZeRO-$Z: model states as plan --ep" "search Ψ $PSI states $STATES, plan Ψ $PLAN_PSI states $PLAN_STATES"; fi
fi

# The Mixtral-like preset: plan --preset 7b --ep's model, its ep rows, its Ψ as plan's "the whole model" row.
$S plan --search --gpus 64 --gpu-mem 80 --preset mixtral --json "$tmp/mix.json" >"$tmp/mix.txt" 2>"$tmp/mix.err"
rc=$?
$S plan --preset 7b --ep 8 >"$tmp/plan_mix.txt" 2>&1
plan_psi=$(awk '/the whole model/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9,]+$/ && length($i) > 5) {gsub(",", "", $i); print $i; exit}}' "$tmp/plan_mix.txt")
got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["model"]["psi"], max(r["ep"] for r in d["rows"]))' "$tmp/mix.json" 2>&1)
if [ $rc -eq 0 ] && [ -n "$plan_psi" ] && [ "$got" = "$plan_psi 8" ]; then
  ok "--preset mixtral on 64 GPUs: Ψ $plan_psi as plan --preset 7b --ep 8's, layouts up to ep 8"
else fail "--preset mixtral: Ψ as plan's, ep up to 8" "rc $rc, search '$got', plan '$plan_psi', $(last "$tmp/mix.err")"; fi

bad "--moe-top-k 9 of 8 experts" "--moe-top-k 9 must be between 1 and --moe-experts 8" --search --gpus 8 --gpu-mem 1 --moe-experts 8 --moe-top-k 9
# 7 experts on 8 GPUs: no ep > 1 holds E/ep whole experts, so every layout keeps the experts whole (ep 1).
$S plan --search --gpus 8 --gpu-mem 1 --moe-experts 7 --json "$tmp/e7.json" >"$tmp/e7.out" 2>&1
rc=$?
e7=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["rows"]; print(len(r), sorted({x["ep"] for x in r}))' \
  "$tmp/e7.json" 2>&1)
if [ $rc = 0 ] && [ "${e7#* }" = "[1]" ] && [ "${e7%% *}" -gt 0 ]; then
  ok "--moe-experts 7 on 8 GPUs: ${e7%% *} layouts, every one with ep 1"
else fail "--moe-experts 7 on 8 GPUs: layouts with ep 1 only" "rc $rc, rows and ep values: $e7"; fi
bad "--moe-top-k without --moe-experts" "--moe-top-k needs --moe-experts" --search --gpus 8 --gpu-mem 1 --moe-top-k 2
bad "--moe-every 9 of 4 layers" "--moe-every 9 must be between 1 and --layers 4" --search --gpus 8 --gpu-mem 1 --moe-experts 8 --moe-every 9
bad "--preset 7b with --moe-experts" "drop --moe-experts" --search --gpus 8 --gpu-mem 80 --preset 7b --moe-experts 8

[ $fails -eq 0 ]
