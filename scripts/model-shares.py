#!/usr/bin/env python3
"""How well a task model tells a server's requests: the figures of the "one request, one task
type" issue, for one trace.

A request is marked by one leaf (the leaf that writes its response, chosen with --marker), and
the load generator's own count says how many requests there were. For each marker leaf, its
request occurrence is the largest occurrence above it that holds no other marker. The request
task is the group type that is the request occurrence of the most markers. Printed:

- the request task's share of the requests (markers whose request occurrence is of that type,
  over the load generator's count);
- how many of those are top-level or directly under a session: the nearest group above them
  (loops are looked through) holds two or more markers, all written to one connection;
- how many task types cover 95% of the leaves, each leaf counted once, under its top-level
  type (a leaf in no task counts under its own leaf type);
- the names of the types that hold at least 1% of the leaves (--names-out writes them, one per
  line, sorted; --same-names FILE fails unless they are the names in FILE).

Thresholds (--min-share, --min-top, --max-types) turn the figures into checks: the exit status
is 1 when one is missed.

Usage: model-shares.py MODEL_DIR REQUESTS --marker OP[:FRAME] [--conn-desc SUBSTR] [...]"""
import argparse
import json
import sys
from collections import Counter

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("model_dir")
ap.add_argument("requests", type=int, help="requests the load generator counted")
ap.add_argument("--marker", required=True,
                help="OP[:FRAME]: a leaf ending at OP (on a connection), with FRAME among the "
                     "end's frames when given, marks one request")
ap.add_argument("--conn-desc", default="tcp",
                help="the marker's end object's description must contain this (default: tcp)")
ap.add_argument("--name", default="model")
ap.add_argument("--min-share", type=float, default=None)
ap.add_argument("--min-top", type=float, default=None)
ap.add_argument("--max-types", type=int, default=None)
ap.add_argument("--names-out", default=None)
ap.add_argument("--same-names", default=None)
args = ap.parse_args()

graph = json.load(open(f"{args.model_dir}/graph.json"))
model = json.load(open(f"{args.model_dir}/model.json"))
leaves, ltypes, objects = graph["leaves"], graph["types"], graph["objects"]
types = model["types"]
op, _, frame = args.marker.partition(":")


def is_marker(l):
    if l["end_op"] != op:
        return False
    obj = l.get("end_obj")
    if obj is None or args.conn_desc not in objects[obj].get("desc", ""):
        return False
    return not frame or frame in " ".join(ltypes[l["type"]]["end"]["frames"])


markers = [i for i, l in enumerate(leaves) if is_marker(l)]
conn = {m: leaves[m]["end_obj"] for m in markers}
marker_set = set(markers)

# Markers per occurrence, bottom-up: occurrences are listed with all their leaves.
def occ(ref):
    return types[ref["type"]]["occurrences"][ref["index"]]


def markers_in(ref):
    return [x for x in occ(ref)["leaves"] if x in marker_set]


def chain(leaf):
    """The occurrences above a leaf, innermost first."""
    out = []
    ref = model["leaf_parent"][leaf]
    while ref is not None:
        out.append(ref)
        ref = occ(ref).get("parent")
    return out


request_of = {}  # marker -> (chain index, chain)
for m in markers:
    c = chain(m)
    best = None
    for i, ref in enumerate(c):
        if len(markers_in(ref)) > 1:
            break
        if types[ref["type"]]["kind"] == "group":
            best = i
    if best is not None:
        request_of[m] = (best, c)

by_type = Counter(c[i]["type"] for i, c in request_of.values())
status = 0
if not by_type:
    print(f"{args.name}: FAIL: no task holds a request marker ({len(markers)} markers)")
    sys.exit(1)
req_type, held = by_type.most_common(1)[0]
top_or_session = 0
for m, (i, c) in request_of.items():
    if c[i]["type"] != req_type:
        continue
    above = [r for r in c[i + 1:] if types[r["type"]]["kind"] == "group"]
    if not above:
        top_or_session += 1
        continue
    inside = markers_in(above[0])
    if len(inside) > 1 and len({conn[x] for x in inside}) == 1:
        top_or_session += 1

# Each leaf under its top-level type (a leaf in no task: its leaf type's model type).
leaf_model_type = {t.get("leaf_type"): i for i, t in enumerate(types) if t["kind"] == "leaf"}
cover = Counter()
for leaf, l in enumerate(leaves):
    c = chain(leaf)
    cover[c[-1]["type"] if c else leaf_model_type[l["type"]]] += 1
total = sum(cover.values())
need, acc = 0, 0
for _, n in cover.most_common():
    if acc >= 0.95 * total:
        break
    acc += n
    need += 1
# Every type's leaves (nested ones too), for the names that matter.
held_leaves = Counter()
for i, t in enumerate(types):
    if t["kind"] == "leaf":
        held_leaves[i] = t["count"]
    else:
        held_leaves[i] = sum(len(o["leaves"]) for o in t["occurrences"])
names = sorted({types[i]["name"] for i, n in held_leaves.items() if n >= 0.01 * total})

share = held / args.requests if args.requests else 0.0
top_share = top_or_session / held if held else 0.0
print(f"{args.name}: request task '{types[req_type]['name']}': {held} of {args.requests} requests "
      f"({share:.1%}; {len(markers)} marker leaves), {top_or_session} of them top-level or under "
      f"a session ({top_share:.1%})")
print(f"{args.name}: {need} task types cover 95% of {total} leaves; {len(types)} types in all; "
      f"{len(names)} hold at least 1% of the leaves")
for n in names:
    print(f"    {n}")
if args.min_share is not None and share < args.min_share:
    print(f"FAIL: the request task covers {share:.1%} of requests, under {args.min_share:.0%}",
          file=sys.stderr)
    status = 1
if args.min_top is not None and top_share < args.min_top:
    print(f"FAIL: {top_share:.1%} of the request task's occurrences are top-level or under a "
          f"session, under {args.min_top:.0%}", file=sys.stderr)
    status = 1
if args.max_types is not None and need > args.max_types:
    print(f"FAIL: {need} task types cover 95% of the leaves, over {args.max_types}", file=sys.stderr)
    status = 1
if args.names_out:
    open(args.names_out, "w").write("".join(n + "\n" for n in names))
if args.same_names:
    before = [x.rstrip("\n") for x in open(args.same_names)]
    if before != names:
        gone = sorted(set(before) - set(names))
        new = sorted(set(names) - set(before))
        print(f"FAIL: names changed between recordings: gone {gone}, new {new}", file=sys.stderr)
        status = 1
    else:
        print(f"{args.name}: the {len(names)} names are those of the other recording")
sys.exit(status)
