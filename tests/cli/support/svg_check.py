#!/usr/bin/env python3
"""Checks of the pictures shardlab draws, for tests/cli/*.sh: prints what is wrong and exits 1, or exits 0.

Text widths are estimated as src/report/plot.h label_width does: 0.62 em a character in a sans-serif font
(DejaVu Sans: lower case about 0.6 em, digits 0.64 em).

  svg_check.py loss SVG EVALS   loss.svg of one run: the validation curve has a colour of its own, is dashed,
                                has EVALS markers in its colour, and both curves have a legend entry
  svg_check.py legend SVG       every legend entry lies below the plot area and inside the picture's width
  svg_check.py cells SVG        every label of a schedule picture fits inside its cell; no two overlap
  svg_check.py axis SVG NOTE    the first panel has a time axis (ticks from 0, rising, 'time in ms'), and
                                its CPU-sharing note is there iff NOTE is 1
"""
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
EM = 0.62


def width(text, font):
    return EM * font * len(text)


def load(path):
    root = ET.parse(path).getroot()
    return root, float(root.get("width")), float(root.get("font-size", "12"))


def legend_entries(root):
    """The legend's texts: each follows its swatch, a line of stroke-width 2 (and maybe the swatch's marker)."""
    entries, swatch = [], False
    for e in root.iter():
        if e.tag == NS + "line":
            swatch = e.get("stroke-width") == "2"
        elif e.tag == NS + "text":
            if swatch:
                entries.append(e)
            swatch = False
        elif e.tag != NS + "circle" and e.tag != NS + "g":
            swatch = False
    return entries


def check_loss(path, evals):
    root, _, _ = load(path)
    bad = []
    lines = root.findall(NS + "polyline")
    if len(lines) != 2:
        return ["%d curves, expected 2 (training, validation)" % len(lines)]
    train, val = lines
    if train.get("stroke") == val.get("stroke"):
        bad.append("the validation curve has the training curve's colour %s" % train.get("stroke"))
    if not val.get("stroke-dasharray"):
        bad.append("the validation curve is not dashed")
    markers = [c for c in root.findall(NS + "circle") if c.get("stroke") == val.get("stroke")]  # not the legend's
    if len(markers) != evals:
        bad.append("%d markers in the validation colour, expected one per evaluation (%d)" % (len(markers), evals))
    texts = [t.text or "" for t in legend_entries(root)]
    if not any(t.startswith("training loss") for t in texts) or not any(t.startswith("validation loss") for t in texts):
        bad.append("legend entries %r lack 'training loss' or 'validation loss'" % texts)
    return bad


def check_legend(path):
    root, W, font = load(path)
    frames = [r for r in root.findall(NS + "rect") if r.get("fill") == "none" and r.get("stroke")]
    if not frames:
        return ["no plot area (a rect with fill none and a stroke)"]
    bottom = float(frames[0].get("y")) + float(frames[0].get("height"))
    bad = []
    texts = legend_entries(root)
    if not texts:
        bad.append("no legend")
    for t in texts:
        x, y = float(t.get("x")), float(t.get("y"))
        right = x + width(t.text or "", font)
        if y - font <= bottom:
            bad.append("'%s' at y %.0f is not below the plot area (bottom %.0f)" % (t.text, y, bottom))
        if x < 0 or right > W:
            bad.append("'%s' spans x %.0f..%.0f, outside the width %.0f" % (t.text, x, right, W))
    return bad


def check_cells(path):
    root, _, font = load(path)
    rects = [r for r in root.findall(NS + "rect") if r.get("stroke") == "white"]  # the cells
    bad, spans = [], []

    def cell_of(x, y):
        for r in rects:
            rx, ry = float(r.get("x")), float(r.get("y"))
            if rx <= x <= rx + float(r.get("width")) and ry <= y <= ry + float(r.get("height")):
                return r
        return None

    for t in root.findall(NS + "text"):
        x, y = float(t.get("x")), float(t.get("y"))
        cell = cell_of(x, y) if t.get("text-anchor") == "middle" else None
        if cell is None:
            continue  # not a cell's label (titles, axis, captions)
        w = width(t.text or "", float(t.get("font-size", font)))
        if w + 2 > float(cell.get("width")) + 1e-9:
            bad.append("label '%s' (%.1f px wide) does not fit its cell of %.1f px" % (t.text, w, float(cell.get("width"))))
        spans.append((y, x - w / 2, x + w / 2, t.text))
    if not spans:
        return ["no cell labels"]
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        if a[0] == b[0] and b[1] < a[2] - 1e-9:
            bad.append("labels '%s' and '%s' overlap" % (a[3], b[3]))
    return bad[:4] + (["… %d problems in all" % len(bad)] if len(bad) > 4 else [])


def check_axis(path, note):
    root, _, _ = load(path)
    texts = root.findall(NS + "text")
    bad = []
    captions = [i for i, t in enumerate(texts) if (t.text or "").startswith("time in ")]
    if not captions:
        return ["no 'time in …' caption under a panel"]
    first = captions[0]
    if not texts[first].text.startswith("time in ms"):
        bad.append("the first panel's caption is '%s', not 'time in ms…'" % texts[first].text)
    ticks = []  # the tick labels: the numbers on one baseline just before the caption (a cell's label may be a number)
    baseline = texts[first - 1].get("y") if first > 0 else None
    for t in reversed(texts[:first]):
        if t.get("font-size") != "10" or t.get("y") != baseline or not re.fullmatch(r"[0-9.e+-]+", t.text or ""):
            break
        ticks.insert(0, float(t.text))
    if len(ticks) < 3 or ticks[0] != 0 or any(b <= a for a, b in zip(ticks, ticks[1:])):
        bad.append("the time axis ticks are %r: not 3 or more rising from 0" % ticks)
    notes = [t.text for t in texts if t.get("class") == "note"]
    has = any(re.fullmatch(r"\d+ ranks on \d+ cores?: idle time includes waiting for a CPU", n or "") for n in notes)
    if has != (note == "1"):
        bad.append("CPU-sharing note %s, expected %s: %r" % ("present" if has else "absent",
                                                               "present" if note == "1" else "absent", notes))
    return bad


def main():
    kind, path = sys.argv[1], sys.argv[2]
    try:
        bad = {"loss": lambda: check_loss(path, int(sys.argv[3])), "legend": lambda: check_legend(path),
               "cells": lambda: check_cells(path), "axis": lambda: check_axis(path, sys.argv[3])}[kind]()
    except (ET.ParseError, OSError, IndexError, KeyError, ValueError, TypeError, AttributeError) as e:
        bad = ["cannot check %s: %s" % (path, e)]
    if bad:
        print("; ".join(bad))
        sys.exit(1)


if __name__ == "__main__":
    main()
