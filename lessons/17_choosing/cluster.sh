# Lesson 17, sections 3 and 4 (sourced by ./run, which gives $S, $W and lessons/lib.sh's checks): `plan --search`
# on the chapter's 70B over 512 GPUs of 80 GB beside the rule of thumb, then the choice moving with the machine — the
# link between nodes and the memory per GPU (C29).
echo; echo "## 3. Asking the planner about a cluster: the chapter's 70B on 512 GPUs of 80 GB"
echo "  shardlab plan --search --gpus 512 --gpu-mem 80 --preset 70b --top 5"
$S plan --search --gpus 512 --gpu-mem 80 --preset 70b --top 5 --json "$W/search.json" > "$W/search.txt"
sed -n '/^layouts:/,$p' "$W/search.txt" | sed 's/^/  /'
check python3 - "$W/search.json" "$W/search.txt" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
rows, rule = d["rows"], d["rule_of_thumb"]
best = rows[0]
key = lambda x: (x["dp"], x["tp"], x["sequence_parallel"], x["pp"], x["cp"], x["ep"], x["zero"], x["micro_batch"], x["micro_batches"], x["recompute"], x["attention"])
bad = []
if (rule["dp"], rule["tp"], rule["pp"], rule["cp"], rule["zero"]) != (16, 8, 4, 1, 1):
    bad.append("the rule of thumb: expected the chapter's dp 16 × tp 8 × pp 4, ZeRO-1 (lesson 13), measured dp %d tp %d pp %d cp %d ZeRO-%d" %
               (rule["dp"], rule["tp"], rule["pp"], rule["cp"], rule["zero"]))
if not rule["fits"] or not (1 <= rule["rank"] <= len(rows)) or key(rows[rule["rank"] - 1]) != key(rule):
    bad.append("the rule of thumb: expected to fit and to stand in the ranking at its rank %s, measured row %s" %
               (rule["rank"], rows[rule["rank"] - 1] if 1 <= rule["rank"] <= len(rows) else "none"))
over = [r["rank"] for r in rows if r["memory_bytes"]["total"] > d["gpu_memory_bytes"]]
if over:
    bad.append("rows over %g GB: %s" % (d["gpu_memory_bytes"] / 1e9, over[:5]))
wrong = [r["rank"] for r in rows if r["dp"] * r["tp"] * r["pp"] * r["cp"] * r["ep"] != d["gpus"]]
if wrong:
    bad.append("rows whose dp·tp·pp·cp·ep is not %d: %s" % (d["gpus"], wrong[:5]))
if any(a["seconds"]["step"] > b["seconds"]["step"] for a, b in zip(rows, rows[1:])):
    bad.append("the ranking is not ordered by step time")
if best["seconds"]["step"] > rule["seconds"]["step"]:
    bad.append("the best's step %.1f ms is slower than the rule's %.1f ms" % (1e3 * best["seconds"]["step"], 1e3 * rule["seconds"]["step"]))
for r in (best, rule):  # as step_time.h says: step = compute + update + exposed comm + bubble, bubble = (p−1)/m × compute
    s = r["seconds"]
    parts = s["compute"] + s["update"] + s["dp"] + s["tp"] + s["pp"] + s["cp"] + s["ep"] + s["bubble"]
    if abs(parts - s["step"]) > 1e-9 * s["step"] or abs(s["bubble"] - (r["pp"] - 1) / r["micro_batches"] * s["compute"]) > 1e-9 * s["step"]:
        bad.append("rank %d: step %.6f s, expected the sum of its terms %.6f s and bubble (p−1)/m × compute" % (r["rank"], s["step"], parts))
why = re.search(r"^why: the best is ([0-9.]+)% faster.*using ([0-9.]+) GB per GPU instead of ([0-9.]+) GB", text, re.M)
pct = 100 * (rule["seconds"]["step"] - best["seconds"]["step"]) / rule["seconds"]["step"]
want = ("%.1f" % pct, "%.2f" % (best["memory_bytes"]["total"] / 1e9), "%.2f" % (rule["memory_bytes"]["total"] / 1e9))
if not why or why.groups() != want:
    bad.append("the why line: expected %s%% faster, %s GB instead of %s GB (from the ranking), measured %s" % (want + (why.groups() if why else "nothing",)))
for b in bad:
    print("  FAIL: " + b)
if bad:
    sys.exit(1)
ms = lambda x: 1e3 * x
bs, rs = best["seconds"], rule["seconds"]
print("  checked: every row fits %g GB and splits %d GPUs; ranked by step time, each the sum of its terms; the rule of" % (d["gpu_memory_bytes"] / 1e9, d["gpus"]))
print("  thumb is the chapter's dp 16 × tp 8 × pp 4 + ZeRO-1, ranked %d of %d; the best is %.1f%% faster, as the why line says." %
      (rule["rank"], len(rows), pct))
print()
print("  Why the best differs, term by term (ms per step; what hides behind compute is not counted):")
print("    %-8s" % "" + "".join("%9s" % k for k in ("compute", "update", "dp", "tp", "pp", "cp", "bubble", "step")))
for name, x in (("rule", rs), ("best", bs)):
    print("    %-8s" % name + "".join("%9.0f" % ms(x[k]) for k in ("compute", "update", "dp", "tp", "pp", "cp", "bubble", "step")))
how = ["tp %d%s: %.0f ms of exposed tp messages, against the rule's %.0f" %
       (best["tp"], " with SP" if best["sequence_parallel"] else "", ms(bs["tp"]), ms(rs["tp"]))]
how.append("no pipeline, so no bubble" if best["pp"] == 1 else
           "pp %d with m = %d micro-batches, a bubble of (p−1)/m × compute = %.0f ms" % (best["pp"], best["micro_batches"], ms(bs["bubble"])))
if best["sequence_parallel"]:
    how.append("SP over its tp %d (C23): every activation of a layer in 1/%d, for 1.25× the bytes on tp" % (best["tp"], best["tp"]))
if best["zero"] >= 2:
    how.append("ZeRO-%d over dp %d, its gathers and reduce-scatters behind compute but for the last bucket" % (best["zero"], best["dp"]))
if best["cp"] > 1:
    how.append("cp %d beside tp (%.0f ms of K/V, exposed)" % (best["cp"], ms(bs["cp"])))
print("  The rule pays tp 8's all-reduces in every layer of every micro-batch and the bubble of pp 4. The best has")
for h in how:
    print("    - " + h)
print("  Memory: %.2f GB per GPU against the rule's %.2f. The cost moved (C29); the compute term is the same %.0f ms in both%s." %
      (best["memory_bytes"]["total"] / 1e9, rule["memory_bytes"]["total"] / 1e9, ms(bs["compute"]),
       "" if abs(bs["compute"] - rs["compute"]) < 1e-12 else " up to recompute and the kernel"))
print("  What the model leaves out (src/plan/step_time.h): memory bandwidth (flash's real gain is fewer HBM reads, which a FLOP")
print("  count cannot see), kernel efficiency beyond one rate (a micro-batch of 1 sequence and tp %d's thinner GEMMs run at" % best["tp"])
print("  the same 312 TFLOPS as big ones), stragglers, congestion between axes sharing a link, and an uneven expert load. So the")
print("  ranking says where the cost goes under its assumptions; a few percent between rows is not a measured speed.")
EOF

echo; echo "## 4. Move the machine, watch the choice move (C29)"
echo "  The same question with a slower and a faster inter-node link (--inter-gbps, 25 GB/s above) and 12 GB per GPU:"
$S plan --search --gpus 512 --gpu-mem 80 --preset 70b --inter-gbps 5 --top 1 --json "$W/search_5.json" > "$W/search_5.txt"
$S plan --search --gpus 512 --gpu-mem 80 --preset 70b --inter-gbps 100 --top 1 --json "$W/search_100.json" > "$W/search_100.txt"
$S plan --search --gpus 512 --gpu-mem 12 --preset 70b --top 1 --json "$W/search_12.json" > "$W/search_12.txt"
check python3 - "$W" <<'EOF'
import json, sys
W = sys.argv[1]
runs = [("80 GB, 25 GB/s (above)", "search"), ("80 GB, 5 GB/s", "search_5"), ("80 GB, 100 GB/s", "search_100"),
        ("12 GB, 25 GB/s", "search_12")]
D = {f: json.load(open("%s/%s.json" % (W, f))) for _, f in runs}
lay = lambda x: "dp %d tp %d%s pp %d cp %d ZeRO-%d %dx%d %s %s" % (x["dp"], x["tp"], " SP" if x["sequence_parallel"] else "", x["pp"],
                                                                   x["cp"], x["zero"], x["micro_batch"], x["micro_batches"], x["recompute"], x["attention"])
key = lambda x: (x["dp"], x["tp"], x["sequence_parallel"], x["pp"], x["cp"], x["ep"], x["zero"], x["micro_batch"], x["micro_batches"], x["recompute"], x["attention"])
print("  %-24s %-48s %8s %8s %7s %7s %7s %7s %8s %s" % ("GPU memory, inter-node", "best layout", "step ms", "compute", "dp", "tp",
      "cp", "bubble", "mem GB", "rule's rank"))
for what, f in runs:
    b = D[f]["rows"][0]; s = b["seconds"]
    print("  %-24s %-48s %8.1f %8.1f %7.1f %7.1f %7.1f %7.1f %8.2f %d of %d" % (what, lay(b), 1e3 * s["step"], 1e3 * s["compute"],
          1e3 * s["dp"], 1e3 * s["tp"], 1e3 * s["cp"], 1e3 * s["bubble"], b["memory_bytes"]["total"] / 1e9,
          D[f]["rule_of_thumb"]["rank"], len(D[f]["rows"])))
base = D["search"]["rows"][0]
bad = []
for what, f in runs[1:]:
    if key(D[f]["rows"][0]) == key(base):
        bad.append("%s: expected another best layout than at 80 GB, 25 GB/s, measured the same: %s" % (what, lay(base)))
slow, fast, small = D["search_5"]["rows"][0], D["search_100"]["rows"][0], D["search_12"]["rows"][0]
K = D["search_5"]["rates"]["ranks_per_node"]
if slow["tp"] != K:
    bad.append("5 GB/s: expected the best to fill the node with tp %d (the rule's TP inside a node), measured tp %d" % (K, slow["tp"]))
if fast["pp"] != 1 or fast["zero"] != 3:
    bad.append("100 GB/s: expected the best without a pipeline, on ZeRO-3, measured pp %d ZeRO-%d" % (fast["pp"], fast["zero"]))
saves = lambda x: x["sequence_parallel"] or x["recompute"] != "none"  # what cuts a layer's activations (C23, C27)
if base["memory_bytes"]["total"] <= D["search_12"]["gpu_memory_bytes"] or not saves(small) or small["memory_bytes"]["total"] > D["search_12"]["gpu_memory_bytes"]:
    bad.append("12 GB: expected the 80 GB best not to fit and the best to cut activations with SP or recompute within 12 GB, measured SP %s, recompute %s, %.2f GB" %
               (small["sequence_parallel"], small["recompute"], small["memory_bytes"]["total"] / 1e9))
for b in bad:
    print("  FAIL: " + b)
if bad:
    sys.exit(1)
old = [r for r in D["search_5"]["rows"] if key(r) == key(base)]
if not old or not slow["bytes_sent_per_gpu"]["dp"] < base["bytes_sent_per_gpu"]["dp"]:
    print("  FAIL: 5 GB/s: expected the 25 GB/s best in the ranking and the new best's gradient ring to carry less per GPU, measured %s and %.3g < %.3g B" %
          (old[0]["rank"] if old else "absent", slow["bytes_sent_per_gpu"]["dp"], base["bytes_sent_per_gpu"]["dp"]))
    sys.exit(1)
old = old[0]
print("  - 5 GB/s: the 25 GB/s best now exposes %.0f ms of dp (its gradient ring over dp·cp = %d GPUs crosses nodes with" %
      (1e3 * old["seconds"]["dp"], old["dp"] * old["cp"]))
print("    %.2f GB per GPU) and ranks %d. The new best fills the node with tp %d and pipelines over pp %d: its gradient" %
      (old["bytes_sent_per_gpu"]["dp"] / 1e9, old["rank"], slow["tp"], slow["pp"]))
print("    ring carries %.2f GB (%.0f ms exposed), paid with %.0f ms of tp inside the node: the rule's TP inside a node is back." %
      (slow["bytes_sent_per_gpu"]["dp"] / 1e9, 1e3 * slow["seconds"]["dp"], 1e3 * slow["seconds"]["tp"]))
print("  - 100 GB/s: the inter-node link is cheap enough for ZeRO-3 over %d replicas (dp %.1f ms exposed): no pipeline, no" %
      (fast["dp"], 1e3 * fast["seconds"]["dp"]))
print("    bubble, tp %d only; the rule of thumb falls to rank %d." % (fast["tp"], D["search_100"]["rule_of_thumb"]["rank"]))
cut = ("SP over tp %d (C23: activations in 1/t for 1.25× the bytes on tp)" % small["tp"] if small["sequence_parallel"] else "") + \
      (" and " if small["sequence_parallel"] and small["recompute"] != "none" else "") + \
      ("%s recompute (C27: %.0f ms more compute)" % (small["recompute"], 1e3 * (small["seconds"]["compute"] - base["seconds"]["compute"]))
       if small["recompute"] != "none" else "")
print("  - 12 GB: the 80 GB best (%.2f GB) no longer fits; the best (%.2f GB) cuts its activations with\n    %s." %
      (base["memory_bytes"]["total"] / 1e9, small["memory_bytes"]["total"] / 1e9, cut))
print("  checked: each best differs from the 80 GB, 25 GB/s one, in the direction these lines say.")
EOF
for f in "5 GB/s:search_5" "100 GB/s:search_100" "12 GB:search_12"; do
  found -m1 '^why' "$W/${f#*:}.txt" | sed "s|^why|  ${f%%:*}, why|"
done
