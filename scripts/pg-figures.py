#!/usr/bin/env python3
"""Figures of a PostgreSQL recording (scripts/trace-postgres.sh) from its graph.json: the WAL
flushes on the commit path as storage waits (fdatasync calls inside leaves, with XLogFlush in
their stacks), the titles the processes gave themselves, and the backends' sleeps in ProcSleep
(row lock waits, woken by a signal to their latch): lock time inside their statements, and a
waker for those that cut one.

Usage: pg-figures.py MODEL_DIR   (MODEL_DIR holds graph.json)"""
import sys
from collections import Counter
import stored

out = sys.argv[1]
g = stored.load(out, "graph")
leaves, types, sites = g["leaves"], g["types"], g["sites"]
status = 0

# 1. WAL flushes: fdatasync (or fsync) inside leaves, with XLogFlush in the call stack.
syncs = [w for w in g["inner_waits"] if w["op"] in ("fdatasync", "fsync", "sync_file_range")]
by_op = Counter(w["op"] for w in syncs)
def frames(w):
    return sites[w["site"]]["frames"]
wal = [w for w in syncs if any("XLogFlush" in f for f in frames(w))]
wal_ns = sum(w["ns"] for w in wal)
print(f"postgres: storage waits: {dict(sorted(by_op.items()))}; with XLogFlush in the stack: "
      f"{len(wal)} ({wal_ns / 1e6:.1f} ms)")
if not wal:
    print("FAIL: no WAL flush (fdatasync under XLogFlush) is a storage wait", file=sys.stderr)
    status = 1

# 2. Titles.
titles = Counter()
for p in g["processes"]:
    t = p.get("title")
    if t:
        # A backend's title ends with its current activity; group by the part before it.
        role = t.split(" 127.0.0.1")[0] if "127.0.0.1" in t else t
        titles[role] += 1
print(f"postgres: processes: {len(g['processes'])}, with a title: {sum(titles.values())}")
for role, n in sorted(titles.items()):
    print(f"  {n:>3} x {role}")
wanted = ["walwriter", "checkpointer", "background writer"]
missing = [w for w in wanted if not any(w in r for r in titles)]
if missing:
    print(f"FAIL: no process titled {missing}", file=sys.stderr)
    status = 1

# 3. ProcSleep (a row or transaction lock wait, woken by the releasing backend's signal to its
# latch). Most are latch wake-ups (crates/graph/src/latches.rs): lock time inside the
# statement, an inner wait with ProcSleep in its stack. The rest cut their statement: the leaf
# after such a wait (started by its return) must have its waker, a signal edge (or another
# cross-thread edge) into it.
def in_proc_sleep(fs):
    return any("ProcSleep" in f for f in fs)
inside = [w for w in g["inner_waits"] if w["op"].startswith("epoll") and in_proc_sleep(frames(w))]
inside_ns = sum(w["ns"] for w in inside)
into = Counter()
for e in g["edges"]:
    if e["kind"] not in ("program", "program_weak"):
        into[e["to"]] += 1
sleeps = woken = 0
for i, l in enumerate(leaves[:-1]):
    if not in_proc_sleep(types[l["type"]]["end"].get("frames", [])):
        continue
    if leaves[i + 1]["thread"] != l["thread"]:
        continue
    sleeps += 1
    woken += into[i + 1] > 0
print(f"postgres: waits in ProcSleep: {len(inside)} inside their statement as lock time "
      f"({inside_ns / 1e6:.1f} ms); {sleeps} cut their statement, {woken} of those with their waker")
if sleeps and woken < sleeps * 0.9:
    print("FAIL: under 90% of the ProcSleep waits that cut have a waker", file=sys.stderr)
    status = 1
if len(inside) < 9 * sleeps:
    print("FAIL: under 90% of the ProcSleep waits are lock time inside their statement",
          file=sys.stderr)
    status = 1
sys.exit(status)
