#!/usr/bin/env python3
"""Predicted versus measured, layout by layout (claims C29, C30): for each layout of the trainer's small GPT,
`shardlab plan --predict` (before the run) and then the real run under scripts/mpirun.sh, side by side.

  memory   every rank's model states (param + grad + master + adam_m + adam_v + momentum, current bytes) and, for
           dense models, its activation peak: the prediction must equal ledger.json exactly
  bytes    every rank's bytes sent per step on dp (ring reduce_scatter / all_gather / all_reduce), tp (ring
           collectives), pp (sends), cp (sends) and, with experts under ZeRO, ep's all-reduce of the dense shard:
           exactly (with experts over ep too: dense runs over dp·ep, expert runs over dp)
  even     with experts over ep, the all-to-alls' bytes and the activation peak follow the router: predicted at an
           even load and printed beside the measured ones with their difference, not checked
  time     the predicted step (the slowest rank's) against the median step wall time of loss.csv (column ms, the
           first step left out; with --repeat R the median of R runs, layouts alternating), and the error
           (predicted − measured) / measured — only where every rank has a core of its own (ranks ≤ cores); beyond
           that ranks queue for a core and the clock measures the queue. The 1-rank layout is the one the FLOP rate
           is calibrated on: shown, left out of the mean and worst error
           scripts/clock.py's rule: when other processes keep the cores busy (before or after the runs) the errors
           are printed with that line beside them, and JSON "summary.clock" says so
  check    `shardlab plan --ledger` on the run as well (the run against the formulas, independently of the prediction)

Usage: predict_table.py --rates RATES.json --out DIR [--steps N] [--repeat R] [--json FILE] [--only NAME,...]
Prints the table and the mean and worst time error; exit 1 if any memory or bytes differ or a ledger check fails.
The layouts and model are LAYOUTS and MODEL below. Leaves out: statistics beyond medians (noisy machine).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "shardlab")
MODEL = ["--layers", "4", "--hidden", "128", "--heads", "4", "--seq", "64", "--global-batch", "8",
         "--micro-batch", "2"]
# name, ranks, layout flags (given to the prediction and to the run alike)
LAYOUTS = [
    ("single", 1, []),
    ("dp2", 2, ["--dp", "2"]),
    ("dp2-zero1", 2, ["--dp", "2", "--zero", "1"]),
    ("dp2-zero2", 2, ["--dp", "2", "--zero", "2"]),
    ("dp2-zero3", 2, ["--dp", "2", "--zero", "3"]),
    ("tp2", 2, ["--tp", "2"]),
    ("pp2", 2, ["--pp", "2"]),
    ("cp2", 2, ["--cp", "2", "--attention", "flash"]),
    ("ep2", 2, ["--ep", "2", "--moe-experts", "4"]),
    ("ep2-zero1", 2, ["--ep", "2", "--moe-experts", "4", "--zero", "1"]),
    ("dp2-tp2", 4, ["--dp", "2", "--tp", "2"]),
    ("tp2-pp2", 4, ["--tp", "2", "--pp", "2"]),
    ("dp2-pp2-tp2", 8, ["--dp", "2", "--pp", "2", "--tp", "2"]),
    ("tp2-sp", 2, ["--tp", "2", "--sequence-parallel"]),  # the trainer's rules, and its layouts, in the prediction
    ("dp2-zero2-bf16", 2, ["--dp", "2", "--zero", "2", "--mixed", "bf16"]),  # the chapter's recipe (plan --search's)
    ("dp2-exact", 2, ["--dp", "2", "--exact"]),
    ("cp2-exact", 2, ["--cp", "2", "--exact"]),
]
STATES = ["param", "grad", "master", "adam_m", "adam_v", "momentum"]
AXES = ["dp", "tp", "pp", "cp"]


def run(cmd, log):
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.exit("predict_table: %s failed (exit %d), see %s" % (" ".join(cmd[:6]), r.returncode, log))


def measured(run_dir):
    ledger = json.load(open(os.path.join(run_dir, "ledger.json")))
    steps = ledger["layout"]["steps"]
    ranks = []
    for r in sorted(ledger["ranks"], key=lambda r: r["rank"]):
        mem = r["memory"]
        sent = {a: 0 for a in AXES + ["ep_grad", "ep_a2a"]}
        for t in r["comm"]["totals"]:
            b = t["sent_intra"] + t["sent_inter"]
            if t["axis"] in ("dp", "tp") and t["impl"] == "ring" and t["op"] in (
                    "reduce_scatter", "all_gather", "all_reduce"):
                sent[t["axis"]] += b
            elif t["axis"] in ("pp", "cp") and t["op"] == "send":
                sent[t["axis"]] += b
            elif t["axis"] == "cp" and t["op"] == "all_to_all" and t.get("purpose") == "exact_rows":
                sent["cp"] += b  # the exact mode's cp: whole samples' rows, no ring (plan/exact_cp_bytes.h)
            elif t["axis"] == "ep" and t["op"] == "all_reduce" and t.get("purpose") == "dense_grads":
                sent["ep_grad"] += b
            elif t["axis"] == "ep" and t["op"] == "all_to_all":
                sent["ep_a2a"] += b
        ranks.append({"model_states": sum(mem.get(c, {}).get("current", 0) for c in STATES),
                      "activation_peak": mem["activation"]["peak"],
                      "bytes": {a: sent[a] / steps for a in sent}})
    with open(os.path.join(run_dir, "loss.csv")) as f:
        ms = [float(row["ms"]) for row in csv.DictReader(f)][1:]
    return ranks, statistics.median(ms) / 1e3


def compare(pred, meas):
    """The rows that differ, as text ("" if memory and bytes all match)."""
    bad = []
    for p, m in zip(pred["ranks"], meas):
        k = p["rank"]
        if p["model_states"] != m["model_states"]:
            bad.append("rank %d model states %d ≠ %d" % (k, p["model_states"], m["model_states"]))
        if p["activation_peak"] is not None and p["activation_peak"] != m["activation_peak"]:
            bad.append("rank %d activation peak %d ≠ %d" % (k, p["activation_peak"], m["activation_peak"]))
        for a in AXES + ["ep_grad"]:
            if p["bytes_per_step"][a] is not None and p["bytes_per_step"][a] != m["bytes"][a]:
                bad.append("rank %d %s bytes %s ≠ %s" % (k, a, p["bytes_per_step"][a], m["bytes"][a]))
    if len(pred["ranks"]) != len(meas):
        bad.append("%d ranks predicted, %d in the ledger" % (len(pred["ranks"]), len(meas)))
    return "; ".join(bad)


def busy(ranks):
    """scripts/clock.py's verdict: "" if a wall clock of `ranks` ranks may be trusted now, else its one line why not."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "clock.py"), "can-time", str(ranks)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return "" if r.returncode == 0 else r.stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cores = os.cpu_count() or 1
    only = [n for n in a.only.split(",") if n]
    rows, failed = [], False
    chosen = [x for x in LAYOUTS if not only or x[0] in only]
    preds, times, meas = {}, {}, {}
    for name, np_, flags in chosen:
        pj = os.path.join(a.out, name + ".predict.json")
        run([BIN, "plan", "--predict", "--np", str(np_), "--rates", a.rates, "--json", pj] + MODEL + flags,
            os.path.join(a.out, name + ".predict.log"))
        preds[name] = json.load(open(pj))
    clock = busy(min(cores, max(x[1] for x in chosen)))  # before the runs and after: either spoils the clock
    for rep in range(a.repeat):  # A B C … A B C …: a drift of the machine's speed hits every layout alike
        for name, np_, flags in chosen:
            d = os.path.join(a.out, "%s.run%d" % (name, rep))
            run([os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(np_), BIN, "train", "--steps", str(a.steps),
                 "--eval-every", "0", "--eval-windows", "0", "--progress", "none", "--out", d, "--overwrite"] +
                MODEL + flags, d + ".log")
            m, t = measured(d)
            meas.setdefault(name, []).append(m)
            times.setdefault(name, []).append(t)
    clock = clock or busy(min(cores, max(x[1] for x in chosen)))
    for name, np_, flags in chosen:
        pred, d = preds[name], os.path.join(a.out, "%s.run%d" % (name, a.repeat - 1))
        ledger_ok = subprocess.run([BIN, "plan", "--ledger", os.path.join(d, "ledger.json")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        bad = "; ".join(sorted({compare(pred, m) for m in meas[name]} - {""}))  # every repeat
        if not ledger_ok:
            bad = (bad + "; " if bad else "") + "plan --ledger fails on the run"
        failed |= bool(bad)
        t_meas, t_pred = statistics.median(times[name]), pred["step_seconds"]
        # single: the calibration's own layout, not a prediction; --exact: its order-free sums' slower step is not
        # what the time model prices (its memory and bytes are)
        timed = np_ <= cores and name != "single" and "--exact" not in flags
        rows.append({"layout": name, "ranks": np_,
                     "model_states": [p["model_states"] for p in pred["ranks"]],
                     "model_states_measured": [m["model_states"] for m in meas[name][-1]],
                     "activation_peak": [p["activation_peak"] for p in pred["ranks"]],
                     "activation_peak_measured": [m["activation_peak"] for m in meas[name][-1]],
                     "bytes": {x: [p["bytes_per_step"][x] for p in pred["ranks"]] for x in AXES + ["ep_grad"]},
                     "bytes_measured": {x: [m["bytes"][x] for m in meas[name][-1]] for x in AXES + ["ep_grad"]},
                     "even_load": [p["even_load"] for p in pred["ranks"]],
                     "ep_all_to_all_measured": [m["bytes"]["ep_a2a"] for m in meas[name][-1]],
                     "exact": not bad, "mismatch": bad, "ledger_check": ledger_ok,
                     "step_predicted_s": t_pred, "step_measured_s": t_meas, "step_runs_s": times[name], "timed": timed,
                     "error": (t_pred - t_meas) / t_meas if timed else None})
    print_table(rows, cores)
    timed = [abs(r["error"]) for r in rows if r["timed"]]
    summary = {"mean_abs_error": statistics.mean(timed) if timed else None, "worst_abs_error": max(timed, default=None),
               "clock": clock or "quiet"}
    if clock:
        print("the time errors are not the model's: the machine was busy (scripts/clock.py: %s)" % clock.strip())
    if timed:
        worst = max((r for r in rows if r["timed"]), key=lambda r: abs(r["error"]))
        print("time error over the %d timed layouts (ranks ≤ %d cores): mean |error| %.0f%%, worst %.0f%% (%s)" %
              (len(timed), cores, 100 * summary["mean_abs_error"], 100 * summary["worst_abs_error"], worst["layout"]))
    if a.json:
        with open(a.json, "w") as f:
            rates = json.load(open(a.rates))
            json.dump({"rows": rows, "summary": summary, "rates": rates, "cores": cores}, f, indent=1)
    return 1 if failed else 0


def fmt_list(xs):
    xs = ["-" if x is None else "%d" % x for x in xs]
    return "/".join(dict.fromkeys(xs))  # the distinct values, in rank order


def print_table(rows, cores):
    print("%-12s %5s  %-24s %-22s %-34s %9s %9s %7s" % ("layout", "ranks", "model states B (pred=meas)",
          "act. peak B", "bytes/step dp tp pp cp (rank 0)", "pred ms", "meas ms", "error"))
    for r in rows:
        states = fmt_list(r["model_states"]) + (" =" if r["model_states"] == r["model_states_measured"] else " ≠")
        act = fmt_list(r["activation_peak"]) + (" =" if r["exact"] else "")
        b = " ".join("-" if r["bytes"][x][0] is None else "%d" % r["bytes"][x][0] for x in AXES)
        b += " =" if r["exact"] else " ≠"
        err = ("%+.0f%%" % (100 * r["error"]) if r["timed"] else "calib." if r["layout"] == "single" else
               "exact" if r["layout"].endswith("exact") else "untimed")
        print("%-12s %5d  %-24s %-22s %-34s %9.2f %9.2f %7s" % (r["layout"], r["ranks"], states, act, b,
              1e3 * r["step_predicted_s"], 1e3 * r["step_measured_s"], err))
        if r["mismatch"]:
            print("  MISMATCH: " + r["mismatch"])
        for k, (e, a2a, act) in enumerate(zip(r["even_load"], r["ep_all_to_all_measured"], r["activation_peak_measured"])):
            if e:
                print("  rank %d at an even load: ep all-to-alls %d B/step, measured %d (%+.1f%%); activation peak %s, "
                      "measured %d%s" % (k, e["ep_all_to_all"], a2a, 100 * (e["ep_all_to_all"] - a2a) / a2a,
                                        "-" if e["activation_peak"] is None else "%d" % e["activation_peak"], act,
                                        "" if e["activation_peak"] is None else
                                        " (%+.1f%%)" % (100 * (e["activation_peak"] - act) / act)))
    print("(= : the prediction equals the run's ledger on every rank, each value per rank; calib.: the layout the FLOP "
          "rate was calibrated on (its error is run-to-run noise); exact: the exact mode, whose slower step the time "
          "model does not price (its memory and bytes it does); untimed: more ranks than the %d cores — ranks wait "
          "for a core, so the wall clock is not the model's step; even load: the router sends each token where it "
          "chooses, so the all-to-alls and expert rows of a run are uneven and change every step — estimates, not "
          "checked)" % cores)


if __name__ == "__main__":
    sys.exit(main())
