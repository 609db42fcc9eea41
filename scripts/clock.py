#!/usr/bin/env python3
"""Honest clocks for the lessons: whether this machine can show a timing claim, and what it showed.

A wall clock teaches only when every rank has a core of its own and nothing else competes for them, and
only a difference larger than the run-to-run spread means anything. So a lesson that times something:
  1. asks `clock.py can-time RANKS` first: it exits 1 after printing one line saying why not (more ranks
     than cores; or other processes took more than a third of a core while we watched /proc/stat for
     half a second); the lesson then prints that line instead of any number;
  2. runs each setting several times, alternating (A B A B …, so a drift of the machine's speed hits
     both), writes one line "SETTING VALUE" per run into a file, and
  3. asks `clock.py compare` (two settings) or `clock.py series` (a setting swept) for the verdict:
     the medians with their run-to-run range, then ONE line —
       shows:        the expected direction, the two ranges apart;
       can't tell:   the ranges overlap (the effect is smaller than this machine's noise), said so;
       contradicts:  the opposite direction, the ranges apart AND by more than 10% — exit 1.
Leaves out: anything statistical beyond ranges; few runs are enough for the effects the lessons show.
"""
import argparse
import os
import statistics
import sys
import time


def cpu_times():
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = [int(x) for x in parts]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals), idle


def can_time(ranks):
    cores = os.cpu_count() or 1
    if ranks > cores:
        return ("not timed: %d ranks on %d cores — a wall clock would count the waits for a free core, "
                "not the work" % (ranks, cores))
    try:
        t0, i0 = cpu_times()
        time.sleep(0.5)
        t1, i1 = cpu_times()
    except OSError:
        return None  # no /proc/stat: nothing to say against it
    busy_cores = cores * (1 - (i1 - i0) / max(1, t1 - t0))
    if busy_cores > 0.33:
        return ("not timed: other processes kept %.1f of this machine's %d cores busy — its clock would "
                "measure them too" % (busy_cores, cores))
    return None


def read_runs(path):
    runs = {}
    order = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            name, value = line.split()
            if name not in runs:
                runs[name] = []
                order.append(name)
            runs[name].append(float(value))
    return runs, order


def summary(name, values, unit, width):
    med = statistics.median(values)
    return med, min(values), max(values), "  %-*s %9.2f %s  (%d runs: %.2f to %.2f)" % (
        width, name, med, unit, len(values), min(values), max(values))


def verdict(lower, higher, lower_name, higher_name, what, claim=True):
    """lower/higher: (median, min, max) of the setting expected lower and the one expected higher.
    Without a claim the direction is only reported."""
    if not claim:
        if lower[2] < higher[1] or lower[1] > higher[2]:
            return 0, "measured: %s — %s %.1f%% %s %s, beyond the run-to-run spread" % (
                what, higher_name, 100 * abs(lower[0] - higher[0]) / lower[0],
                "above" if lower[0] < higher[0] else "below", lower_name)
        return 0, "measured: %s — within this machine's run-to-run spread (%.2f apart)" % (
            what, abs(higher[0] - lower[0]))
    if lower[2] < higher[1]:
        return 0, "shows: %s — %s %.1f%% above %s, beyond the run-to-run spread" % (
            what, higher_name, 100 * (higher[0] - lower[0]) / lower[0], lower_name)
    if lower[1] > higher[2] and lower[0] > 1.1 * higher[0]:
        return 1, "FAIL: contradicts: %s — %s %.1f%% above %s, beyond the run-to-run spread" % (
            what, lower_name, 100 * (lower[0] - higher[0]) / higher[0], higher_name)
    return 0, ("can't tell: %s — the difference (%.2f) is within this machine's run-to-run spread" %
               (what, abs(higher[0] - lower[0])))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("can-time", help="exit 1, printing why, if RANKS ranks cannot be timed here")
    c.add_argument("ranks", type=int)
    c = sub.add_parser("compare", help="FILE holds 'SETTING VALUE' lines of two settings")
    c.add_argument("file")
    c.add_argument("--lower", required=True, help="the setting the claim expects lower")
    c.add_argument("--higher", required=True, help="the other setting")
    c.add_argument("--what", required=True, help="the claim, as a phrase")
    c.add_argument("--unit", default="ms")
    c.add_argument("--no-claim", action="store_true", help="report the direction, expect none")
    c = sub.add_parser("series", help="FILE holds 'X VALUE' lines; the claim: VALUE falls as X grows")
    c.add_argument("file")
    c.add_argument("--what", required=True)
    c.add_argument("--unit", default="")
    c.add_argument("--label", default="x", help="the name of X in the table")
    a = p.parse_args()

    if a.cmd == "can-time":
        why = can_time(a.ranks)
        if why:
            print("  " + why)
            return 1
        return 0

    runs, order = read_runs(a.file)
    if a.cmd == "compare":
        for name in (a.lower, a.higher):
            if name not in runs:
                print("FAIL: no runs of '%s' in %s" % (name, a.file))
                return 1
        width = max(len(a.lower), len(a.higher))
        stats = {}
        for name in (a.lower, a.higher):
            med, lo, hi, line = summary(name, runs[name], a.unit, width)
            stats[name] = (med, lo, hi)
            print(line)
        rc, line = verdict(stats[a.lower], stats[a.higher], a.lower, a.higher, a.what, not a.no_claim)
        print("  " + line)
        return rc

    # series: adjacent settings in the order given must fall; the first against the last decides a contradiction
    stats = []
    for name in order:
        med, lo, hi, line = summary("%s = %s" % (a.label, name), runs[name], a.unit, 0)
        stats.append((name, (med, lo, hi)))
        print(line)
    steps = [verdict(cur, prev, "%s = %s" % (a.label, n1), "%s = %s" % (a.label, n0), "")
             for (n0, prev), (n1, cur) in zip(stats, stats[1:])]
    shown = sum(1 for rc, line in steps if line.startswith("shows"))
    rc, line = verdict(stats[-1][1], stats[0][1], "%s = %s" % (a.label, stats[-1][0]),
                       "%s = %s" % (a.label, stats[0][0]), a.what)
    if rc:
        print("  " + line)
        return 1
    falls = " → ".join("%.2f" % s[1][0] for s in stats)
    if shown == len(steps):
        print("  shows: %s — %s, every step beyond the run-to-run spread" % (a.what, falls))
    elif line.startswith("shows"):
        print("  shows: %s — %s from first to last; %d of %d steps between neighbours within this machine's "
              "run-to-run spread" % (a.what, falls, len(steps) - shown, len(steps)))
    else:
        print("  can't tell: %s — %s lies within this machine's run-to-run spread" % (a.what, falls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
