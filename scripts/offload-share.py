#!/usr/bin/env python3
"""Figures of an event loop that offloads work to a thread pool and learns of completions
through an eventfd (nginx's `aio threads`): how many eventfd writes reach a leaf of another
thread (a `ready` or `eventfd` edge) rather than the eventfd's external sink, and how many
offloads one task type holds. An offload is the pool leaf that ends at the eventfd write, the
leaf that handed it the job (a `cond` edge into it when the pool thread waited, a `queue` edge when it found the job queued) and the leaf its
completion woke; the task type that holds an offload is the smallest occurrence holding all of
its leaves. Fails when under 95% of the completions reach a worker leaf, or when one task type
holds under 95% of the offloads (the offload is one task).

Usage: offload-share.py MODEL_DIR NAME   (MODEL_DIR holds graph.json and model.json)"""
import sys
from collections import Counter, defaultdict
import stored

out, name = sys.argv[1], sys.argv[2]
graph = stored.load(out, "graph")
model = stored.load(out, "model")
objects, leaves = graph["objects"], graph["leaves"]
nleaves = len(leaves)


def is_eventfd(o):
    return o is not None and "eventfd" in objects[o].get("desc", "")


writes = [i for i, l in enumerate(leaves) if l["end_op"] == "write" and is_eventfd(l.get("end_obj"))]
into = defaultdict(list)  # leaf -> [(kind, from)]
out_of = defaultdict(list)  # leaf -> [(kind, to)]
for e in graph["edges"]:
    into[e["to"]].append((e["kind"], e["from"]))
    out_of[e["from"]].append((e["kind"], e["to"]))
reached = 0
offloads = []
for w in writes:
    woken = [to for k, to in out_of[w] if k in ("ready", "eventfd") and to < nleaves]
    if woken:
        reached += 1
        handed = [f for k, f in into[w] if k in ("cond", "queue") and f < nleaves]
        offloads.append((w, woken[0], handed[0] if handed else None))
share = reached / len(writes) if writes else 0.0
print(f"{name}: eventfd completions reaching a leaf of another thread: {reached} of {len(writes)} "
      f"({share:.1%})")

# Smallest occurrence per leaf set: index every group/loop occurrence by its leaves.
occ_of = defaultdict(list)  # leaf -> [(size, type)]
for ti, t in enumerate(model["types"]):
    if t["kind"] == "leaf":
        continue
    for occ in t["occurrences"]:
        ls = occ["leaves"]
        for l in ls:
            occ_of[l].append((len(ls), ti, id(occ)))
sets = {}
for t in model["types"]:
    for occ in t["occurrences"]:
        sets[id(occ)] = set(occ["leaves"])
holders = Counter()
with_hand = 0
for w, woken, handed in offloads:
    need = {w, woken} | ({handed} if handed is not None else set())
    with_hand += handed is not None
    best = min((c for c in occ_of[w] if need <= sets[c[2]]), default=None)
    holders[best[1] if best else None] += 1
if offloads:
    top, n = max(((t, n) for t, n in holders.items() if t is not None), key=lambda x: x[1],
                 default=(None, 0))
    label = model["types"][top]["name"] if top is not None else "-"
    print(f"{name}: offloads: {len(offloads)} ({with_hand} with the hand-off to the pool seen); "
          f"held by {len([t for t in holders if t is not None])} task types, none for "
          f"{holders[None]}; the most: {n} ({n / len(offloads):.1%}) in '{label}'")
status = 0
if share < 0.95:
    print(f"FAIL: under 95% of the eventfd completions reach a worker leaf", file=sys.stderr)
    status = 1
if offloads and n < 0.95 * len(offloads):
    print(f"FAIL: one task type holds {n / len(offloads):.1%} of the offloads, under 95%",
          file=sys.stderr)
    status = 1
sys.exit(status)
