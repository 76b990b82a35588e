#!/usr/bin/env python3
"""Draws a `scalpel timeline` file as an SVG picture, for documents where Perfetto's UI cannot be
shown: a lane per thread (grouped by process, named as in the file), each leaf slice as a bar, the
calls inside it as bars below it coloured by kind (lock red, cond blue, read green, poll teal,
sleep grey, io brown), flow arrows as thin lines from sender to receiver.

Usage: scripts/timeline-svg.py TIMELINE.json OUT.svg [--width PX] [--title TEXT] [--from US] [--to US]
(the window in microseconds of the file's clock; default: all of it)
"""
import argparse
import json
import sys
from xml.sax.saxutils import escape

COLOURS = {"lock": "#d62728", "cond": "#1f77b4", "sem": "#1f77b4", "futex": "#1f77b4",
           "read": "#2ca02c", "write": "#98df8a", "poll": "#17becf", "sleep": "#999999",
           "io": "#8c564b", "join": "#9467bd"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("timeline")
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--title")
    ap.add_argument("--from", dest="start", type=float)
    ap.add_argument("--to", dest="end", type=float)
    a = ap.parse_args()
    try:
        events = json.load(open(a.timeline))["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"timeline-svg: cannot read {a.timeline}: {e}")
    names, procs, slices, flows = {}, {}, [], {}
    for e in events:
        ph = e.get("ph")
        if ph == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif ph == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif ph == "X":
            slices.append(e)
        elif ph in ("s", "f"):
            flows.setdefault(e["id"], {})[ph] = e
    if not slices:
        sys.exit("timeline-svg: no slices in the file")
    t0 = a.start if a.start is not None else min(s["ts"] for s in slices)
    t1 = a.end if a.end is not None else max(s["ts"] + s["dur"] for s in slices)
    lanes = sorted({(s["pid"], s["tid"]) for s in slices})
    label_w, lane_h, top = 180, 34, 30
    plot_w = a.width - label_w - 10
    x = lambda t: label_w + (min(max(t, t0), t1) - t0) / max(t1 - t0, 1e-9) * plot_w
    y = {lane: top + i * lane_h for i, lane in enumerate(lanes)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{a.width}" '
           f'height="{top + len(lanes) * lane_h + 30}" font-family="Helvetica" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{label_w}" y="18">{escape(a.title or a.timeline)}: {t1 - t0:.0f} us</text>']
    for lane in lanes:
        pid, tid = lane
        label = f"{names.get(lane, tid)} ({tid})"
        out.append(f'<text x="4" y="{y[lane] + 14}">{escape(label)}</text>')
        out.append(f'<line x1="{label_w}" x2="{a.width - 10}" y1="{y[lane] + 28}" '
                   f'y2="{y[lane] + 28}" stroke="#eee"/>')
    for s in slices:
        if s["ts"] > t1 or s["ts"] + s["dur"] < t0:
            continue
        lane = (s["pid"], s["tid"])
        x0, x1 = x(s["ts"]), x(s["ts"] + s["dur"])
        w = max(x1 - x0, 0.5)
        if "leaf" in s.get("args", {}):
            out.append(f'<rect x="{x0:.1f}" y="{y[lane] + 2}" width="{w:.1f}" height="12" '
                       f'fill="#c6dbef" stroke="#6baed6" stroke-width="0.3">'
                       f'<title>{escape(s["name"])}</title></rect>')
        else:
            kind = s.get("args", {}).get("kind", "")
            out.append(f'<rect x="{x0:.1f}" y="{y[lane] + 15}" width="{w:.1f}" height="10" '
                       f'fill="{COLOURS.get(kind, "#bbbbbb")}"><title>{escape(s["name"])} '
                       f'[{escape(kind)}]</title></rect>')
    for f in flows.values():
        if "s" in f and "f" in f and t0 <= f["s"]["ts"] <= t1 and t0 <= f["f"]["ts"] <= t1:
            a_, b_ = f["s"], f["f"]
            out.append(f'<line x1="{x(a_["ts"]):.1f}" y1="{y[(a_["pid"], a_["tid"])] + 20}" '
                       f'x2="{x(b_["ts"]):.1f}" y2="{y[(b_["pid"], b_["tid"])] + 8}" '
                       f'stroke="#555" stroke-width="0.6" opacity="0.7"/>')
    legend = " ".join(f'<tspan fill="{c}">■ {k}</tspan>' for k, c in COLOURS.items())
    out.append(f'<text x="{label_w}" y="{top + len(lanes) * lane_h + 18}">{legend}</text>')
    out.append("</svg>")
    open(a.out, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
