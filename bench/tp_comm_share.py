# Share of rank 0's step time spent in tensor-parallel collectives, from a run's trace.json (make bench).
import json
import sys

events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X" and e.get("pid") == 0]
tp = sum(e["dur"] for e in events if e.get("cat") == "comm" and " tp " in e.get("name", ""))
steps = sum(e["dur"] for e in events if e.get("cat") == "step")
print("%.1f" % (100 * tp / steps if steps else 0))
