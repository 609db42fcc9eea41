#!/usr/bin/env bash
# Two hosts for real (scripts/two_hosts.sh: two network namespaces, a veth pair, OpenMPI over TCP only,
# started from a hostfile with an rsh agent): dp 2 × tp 2 on 4 ranks, 2 per host — tp inside a host, dp
# across, as the chapter places them —
#  (1) reproduces the same layout on one host bit for bit (the transport moves bytes, never changes a sum)
#      and the single process within f64 tolerance;
#  (2) crosses the network with exactly the dp bytes: on every rank the inter-node bytes of training equal
#      its dp bytes, the dp ring's are all inter-node, the tp all-reduces' all intra-node — measured by
#      the comm ledger from the nodes MPI reports, not from --ranks-per-node — and plan --ledger agrees.
# Where network namespaces are not permitted (not root, a container without CAP_NET_ADMIN) it says so in
# one line and checks nothing.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_layouts.sh"  # run, compare_runs

R=(--dp 2 --tp 2 --layers 2 --hidden 64 --heads 4 --seq 32 --micro-batch 2 --global-batch 8 --steps 6 --dtype f64
   --dropout 0.1 --eval-windows 0 --progress none --data "$tmp/small.txt")
timeout -k 5 90 bash scripts/two_hosts.sh -np 4 "$S" train "${R[@]}" --out "$tmp/two" >"$tmp/two.log" 2>&1 </dev/null
rc=$?
if [ $rc = 77 ]; then
  echo "skip - $(grep -m1 'two hosts: not possible here' "$tmp/two.log" | sed 's/^two hosts: //')"
  exit 0
fi
if [ $rc != 0 ]; then fail "(1) dp 2 × tp 2 on two hosts trains" "exit $rc: $(last "$tmp/two.log")"; exit 1; fi
ok "(1) dp 2 × tp 2 on two hosts over TCP: $(grep -m1 '^communication' "$tmp/two.log")"

# (1) the curves
R1=("${R[@]:4}")  # the same flags without --dp 2 --tp 2
run "(1) the same layout on one host" 4 "$tmp/one_host" || exit 1
compare_runs "(1) two hosts vs one host, same layout: bit-identical" "$tmp/one_host" "$tmp/two" --rtol 0
R=("${R1[@]}")
run "(1) one process" 1 "$tmp/single" || exit 1
grep -q '^layout: 1 rank, one process' "$tmp/single.log" || fail "(1) the reference is one process" "$(grep -m1 '^layout' "$tmp/single.log")"
compare_runs "(1) two hosts vs one process: within f64 tolerance" "$tmp/single" "$tmp/two"

# (2) what crossed the network
python3 - "$tmp/two/ledger.json" >"$tmp/bytes.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
for r in d["ranks"]:
    t = r["comm"]["totals"]
    inter = sum(x["sent_inter"] for x in t)
    dp = sum(x["sent_inter"] + x["sent_intra"] for x in t if x["axis"] == "dp")
    dp_intra = sum(x["sent_intra"] for x in t if x["axis"] == "dp")
    tp_inter = sum(x["sent_inter"] for x in t if x["axis"] == "tp")
    print("rank %d: %d B inter-node, %d B on dp (%d of them intra-node), %d tp B inter-node" % (
        r["rank"], inter, dp, dp_intra, tp_inter))
    if not (inter == dp > 0 and dp_intra == 0 and tp_inter == 0):
        bad.append(r["rank"])
print("bad ranks:", bad)
sys.exit(1 if bad else 0)
EOF
if [ $? = 0 ]; then ok "(2) inter-node bytes = dp bytes on every rank: $(head -n 1 "$tmp/bytes.txt")"
else fail "(2) inter-node bytes = dp bytes on every rank" "$(tr '\n' '|' <"$tmp/bytes.txt")"; fi
if "$S" plan --ledger "$tmp/two/ledger.json" >"$tmp/plan.txt" 2>&1; then
  ok "(2) plan --ledger: every rank's bytes per axis equal the formulas"
else
  fail "(2) plan --ledger: every rank's bytes per axis equal the formulas" "$(grep -m3 -iE 'no$|differ|error' "$tmp/plan.txt" | tr '\n' '|')"
fi
[ "$fails" = 0 ]
