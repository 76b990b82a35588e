#!/usr/bin/env python3
"""How well a task model tells a server's requests: the figures of the "one request, one task
type" issue, for one trace.

A request is marked by one leaf (the leaf that writes its response, chosen with --marker), and
the load generator's own count says how many requests there were. The request task is the group
type that holds the most markers, one marker per occurrence, among the types whose occurrences
also hold a leaf ending at each --needs operation (what a reader expects a request to span:
Apache's accept as well as the worker's response; a piece of the request would hold as many
markers); the smaller type when two hold as many. Printed:

- the request task's share of the requests (markers inside one of its occurrences, over the
  load generator's count);
- how many of those occurrences are top-level or directly under a session: the nearest group
  above (loops are looked through) touches no connection but the marker's (what one
  connection does: its requests, its lingering close), where a connection's two directions
  count as one;
- how many task types cover 95% of the leaves, each leaf counted once, under its top-level
  type (a leaf in no task counts under its own leaf type);
- the names of the types that hold at least 1% of the leaves (--names-out writes them, one per
  line, sorted; --same-names FILE fails unless they are the names in FILE).

Thresholds (--min-share, --min-top, --max-types) turn the figures into checks: the exit status
is 1 when one is missed. A loop type whose body is a loop type always fails (nested loops over
one body must have collapsed into one loop).

Usage: model-shares.py MODEL_DIR REQUESTS --marker OP[:FRAME] [--needs OP]... [--conn-desc SUBSTR] [...]"""
import argparse
import sys
from collections import Counter
import stored

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("model_dir")
ap.add_argument("requests", type=int, help="requests the load generator counted")
ap.add_argument("--marker", required=True,
                help="OP[:FRAME]: a leaf ending at OP (on a connection), with FRAME among the "
                     "end's frames when given, marks one request")
ap.add_argument("--conn-desc", default="tcp",
                help="the marker's end object's description must contain this (default: tcp)")
ap.add_argument("--needs", action="append", default=[],
                help="OP: the request task's occurrences hold a leaf ending at OP (repeatable)")
ap.add_argument("--name", default="model")
ap.add_argument("--min-share", type=float, default=None)
ap.add_argument("--min-top", type=float, default=None)
ap.add_argument("--max-types", type=int, default=None)
ap.add_argument("--min-in-session", type=float, default=None,
                help="fail unless this share of the request task's occurrences sit in a session")
ap.add_argument("--names-out", default=None)
ap.add_argument("--same-names", default=None)
args = ap.parse_args()

graph = stored.load(args.model_dir, "graph")
model = stored.load(args.model_dir, "model")
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
marker_set = set(markers)

# Markers per occurrence, bottom-up: occurrences are listed with all their leaves.
def occ(ref):
    return types[ref["type"]]["occurrences"][ref["index"]]


_markers_in = {}


def markers_in(ref):
    """The marker leaves of an occurrence (memoized: a session holds thousands of requests)."""
    key = (ref["type"], ref["index"])
    if key not in _markers_in:
        _markers_in[key] = [x for x in occ(ref)["leaves"] if x in marker_set]
    return _markers_in[key]


def chain(leaf):
    """The occurrences above a leaf, innermost first."""
    out = []
    ref = model["leaf_parent"][leaf]
    while ref is not None:
        out.append(ref)
        ref = occ(ref).get("parent")
    return out


def connection(obj):
    """A TCP connection's two directions as one key; None for anything else."""
    if obj is None:
        return None
    desc = objects[obj].get("desc", "")
    if not desc.startswith("tcp ") or "->" not in desc:
        return None
    a, b = desc[4:].split("->", 1)
    return tuple(sorted((a, b)))


_connections_in = {}


def connections_in(ref):
    key = (ref["type"], ref["index"])
    if key not in _connections_in:
        _connections_in[key] = {c for c in (connection(leaves[x].get("end_obj"))
                                            for x in occ(ref)["leaves"]) if c}
    return _connections_in[key]


def spans(t):
    """Whether type t's first occurrence holds a leaf ending at every needed operation."""
    o = types[t]["occurrences"]
    ops = {leaves[x]["end_op"] for x in o[0]["leaves"]} if o else set()
    return all(n in ops for n in args.needs)


holders = Counter()  # type -> markers it holds one per occurrence
chains = {}
for m in markers:
    c = chain(m)
    chains[m] = c
    for ref in c:
        if len(markers_in(ref)) > 1:
            break
        if types[ref["type"]]["kind"] == "group" and spans(ref["type"]):
            holders[ref["type"]] += 1
status = 0
if not holders:
    print(f"{args.name}: FAIL: no task holds a request marker ({len(markers)} markers)")
    sys.exit(1)
req_type, held = max(holders.items(), key=lambda kv: (kv[1], -types[kv[0]]["level"], -kv[0]))
top_or_session = 0
in_session = 0
for m, c in chains.items():
    at = next((i for i, r in enumerate(c) if r["type"] == req_type and len(markers_in(r)) == 1), None)
    if at is None:
        continue
    above = [r for r in c[at + 1:] if types[r["type"]]["kind"] in ("group", "session")]
    if not above or connections_in(above[0]) <= {connection(leaves[m].get("end_obj"))}:
        top_or_session += 1
    if above and types[above[0]["type"]]["kind"] == "session":
        in_session += 1

# Each leaf under its top-level type (a leaf in no task: its leaf type's model type).
leaf_model_type = {t.get("leaf_type"): i for i, t in enumerate(types) if t["kind"] == "leaf"}
cover = Counter()
for leaf, l in enumerate(leaves):
    c = chain(leaf)
    cover[c[-1]["type"] if c else leaf_model_type[l["type"]]] += 1
total = sum(cover.values())
need, acc = 0, 0
covering = []
for t, n in cover.most_common():
    if acc >= 0.95 * total:
        break
    acc += n
    need += 1
    covering.append((t, n))
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
      f"a session ({top_share:.1%}), {in_session} in a session task")
sessions = [t for t in types if t["kind"] == "session"]
print(f"{args.name}: {len(sessions)} session types, "
      f"{sum(t['count'] for t in sessions)} sessions")
print(f"{args.name}: {need} task types cover 95% of {total} leaves; {len(types)} types in all; "
      f"{len(names)} hold at least 1% of the leaves")
for n in names:
    print(f"    {n}")
print(f"{args.name}: the types that cover 95% of the leaves (leaves under each, top-level count):")
for t, n in covering[:20]:
    print(f"  {n:8} {n / total:6.1%}  {types[t]['top_level'] if 'top_level' in types[t] else '-':>6}  "
          f"{types[t]['name']}")
if len(covering) > 20:
    print(f"  … and {len(covering) - 20} more types")
if args.min_share is not None and share < args.min_share:
    print(f"FAIL: the request task covers {share:.1%} of requests, under {args.min_share:.0%}",
          file=sys.stderr)
    status = 1
if args.min_top is not None and top_share < args.min_top:
    print(f"FAIL: {top_share:.1%} of the request task's occurrences are top-level or under a "
          f"session, under {args.min_top:.0%}", file=sys.stderr)
    status = 1
if args.min_in_session is not None and in_session < args.min_in_session * held:
    print(f"FAIL: {in_session} of {held} request occurrences are in a session task, under "
          f"{args.min_in_session:.0%}", file=sys.stderr)
    status = 1
if args.max_types is not None and need > args.max_types:
    print(f"FAIL: {need} task types cover 95% of the leaves, over {args.max_types}", file=sys.stderr)
    status = 1
nested = [t["name"] for t in types if t["kind"] == "loop" and t["children"]
          and types[t["children"][0]["type"]]["kind"] == "loop"]
if nested:
    print(f"FAIL: {len(nested)} loops over a loop, such as '{nested[0]}'", file=sys.stderr)
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
