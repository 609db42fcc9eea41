# Lab 15's checks (sourced by scripts/lab.sh, helpers in scripts/lab_checks.sh): expert parallelism's dispatch and
# combine — the list's rows gathered from the tokens, the rows per rank, arrival order ↔ the experts' order, the
# combine in slot order, each backward — written by the student in moe_dispatch.cpp, judged by `shardlab moe-layer`
# (one MoE layer with its experts over 2 and 4 ranks against one process, and one process against a plain loop over
# tokens: the rows each expert computes on, output, d_x and the weight gradients, f64; again with a capacity that
# drops slots) and by training with --ep 2: bit for bit against the recorded curve, and its all-to-all bytes per rank
# (the comm ledger) against rows·C·8 B, the rows from the run's routing.
LAB_TITLE="expert parallelism's dispatch and combine"
LAB_SEAM=src/model/moe_dispatch.cpp
LAB_CHECKS=(
  "tokens|2|each expert computes on its tokens' rows, source rank by source rank, at ep 2 and ep 4 (shardlab moe-layer)"
  "ep2|2|the MoE layer over 2 ranks: output, d_x and the weight gradients equal one process's, and one process a plain loop (f64, 1e-12)"
  "ep4|2|the same over 4 ranks"
  "capacity|1|the same over 2 ranks with a capacity that drops slots (--capacity 1)"
  "curve|2|the GPT with --moe-experts 4 --moe-top-k 3 --ep 2 trains the reference curve bit for bit"
  "bytes|1|that run's all-to-all bytes per rank (moe_dispatch, moe_combine, the comm ledger) equal rows·C·8 B"
)
# k = 3: a token's three slots add in an order (two terms add alike either way: a + b = b + a exactly).
LAB_RUNS=(ep2)
LAB_RUN_ep2="2 --moe-experts 4 --moe-top-k 3 --ep 2 --global-batch 4"

# moe_layer NP [FLAGS…]: `shardlab moe-layer` on NP ranks (E = 8 experts, k = 2, 32 rows per rank in groups of 16,
# f64) into LOG; WHAT names it. Its exit status.
moe_layer() {
  local np=$1
  shift
  WHAT="$np ranks${*:+, $(sed 's/--//g; s/-/ /g' <<<"$*")}"
  LOG=$LAB_WORK/moe_$np$(tr -d ' .-' <<<"$*").log
  [ -e "$LOG.rc" ] || { mpi "$np" "$BUILD_DIR/shardlab" moe-layer "$@"; echo "$? $WHY" >"$LOG.rc"; }
  read -r RC WHY <"$LOG.rc"
  return "$RC"
}

# tokens_at NP: the rows each expert received, per source rank, are what one process's routing says, and each is
# its token's row of x, in source-rank and token order.
tokens_at() {
  moe_layer "$1"
  if ! grep -q '^tokens per expert' "$LOG"; then
    say "$WHAT: $WHY"
    return 1
  fi
  grep -q '^tokens per expert .*: ok$' "$LOG" && grep -q '^each expert computes on .*: ok$' "$LOG" && return 0
  say "$WHAT: $(grep -E '^(tokens per expert|each expert computes on)' "$LOG" | grep 'FAIL$' | sed 's/:.*//' | paste -sd';'): FAIL"
  say "$WHAT — $(grep -m1 -E '^  rank [0-9]+: expert [0-9]+' "$LOG" | sed 's/^ *//')"
  return 1
}
check_tokens() { tokens_at 2 && tokens_at 4 && say "2 and 4 ranks: every expert computes on its tokens' rows"; }

# layer_check NP [FLAGS…]: moe-layer passes whole: the tokens, the bytes, the seven tensors within 1e-12 (ranks
# against one process, one process against the plain loop). On a mismatch, each tensor's larger difference and the
# first element past the tolerance.
layer_check() {
  if moe_layer "$@"; then
    say "$WHAT: $(grep -m1 '^result' "$LOG" | sed 's/^result: //')"
    return 0
  fi
  if grep -q '^result: MISMATCH' "$LOG"; then
    say "$WHAT: $(awk '/^(output|d_)/ && ($NF == "PASS" || $NF == "FAIL") { m = $3 + 0 > $4 + 0 ? $3 : $4;
      printf "%s%s %s %s", n++ ? ", " : "", $1, m, $NF == "PASS" ? "ok" : "FAIL" }' "$LOG")"
    say "$WHAT — $(grep -m1 -E "first element past|^  rank [0-9]+: expert [0-9]+'s row|^result" "$LOG" | sed 's/^ *//')"
  else
    say "$WHAT: $WHY"
  fi
  return 1
}
check_ep2() { layer_check 2; }
check_ep4() { layer_check 4; }
check_capacity() {
  layer_check 2 --capacity 1 || return 1
  local dropped
  dropped=$(sed -nE 's/^  slots dropped by capacity: ([0-9]+) of .*/\1/p' "$LOG")
  [ "${dropped:-0}" -gt 0 ] || { say "$WHAT: no slot was dropped: the check would prove nothing"; return 1; }
  say "$WHAT: $dropped slots dropped, the same as one process"
}
check_curve() { curve_check ep2; }

# ep_bytes LEDGER [formula]: one line per rank and all-to-all purpose, the bytes it sent and received on the ep axis
# over the run — from the comm ledger (every message as Communicator booked it), or with "formula" from the rows the
# exchange moved as the routing decided (ledger.json's moe section): rows to or from other ranks · C · 8 B.
ep_bytes() {
  python3 - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
row = j["model"]["activations"]["width"] * j["model"]["activations"]["hidden"]  # C · 8 B
for r in j["ranks"]:
    m, got = r["moe"], {}
    for t in r["comm"]["totals"]:
        if t["axis"] == "ep" and t.get("purpose") in ("moe_dispatch", "moe_combine"):
            s, v = got.get(t["purpose"], (0, 0))
            got[t["purpose"]] = (s + t["sent_intra"] + t["sent_inter"], v + t["recv_intra"] + t["recv_inter"])
    others = lambda rows: sum(n for i, n in enumerate(rows) if i != m["ep_rank"]) * row
    formula = {"moe_dispatch": (others(m["dispatch_rows_sent"]), others(m["dispatch_rows_received"])),
               "moe_combine": (others(m["combine_rows_sent"]), others(m["combine_rows_received"]))}
    for p in ("moe_dispatch", "moe_combine"):
        s, v = formula[p] if len(sys.argv) > 2 else got.get(p, (0, 0))
        print(f"rank {r['rank']} {p}: sent {s:.0f} B, received {v:.0f} B")
PY
}
check_bytes() {
  local got=$LAB_WORK/ep2.bytes formula=$LAB_WORK/ep2.formula
  run_named ep2 || { say "$WHY"; return 1; }
  ep_bytes "$LAB_WORK/ep2/ledger.json" >"$got" 2>&1 && ep_bytes "$LAB_WORK/ep2/ledger.json" formula >"$formula" 2>&1 ||
    { say "the run's ledger.json could not be read: $(tail -n 1 "$got")"; return 1; }
  if ! cmp -s "$formula" "$got"; then
    say "measured ≠ rows·C·8 B: $(diff "$formula" "$got" | grep -m1 '^>' | sed 's/^> //') (formula: $(diff "$formula" "$got" | grep -m1 '^<' | sed 's/^< //'))"
    return 1
  fi
  say "every rank's moe_dispatch and moe_combine bytes equal rows·C·8 B ($(head -n 1 "$got"))"
}
