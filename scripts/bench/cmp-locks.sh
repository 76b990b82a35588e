#!/usr/bin/env bash
# Compares two builds of the agent on the lock-heavy samples, alternating them in each repetition:
# how long the recorded program ran, the trace's events and bytes, and what the lock rollups
# made of it (graph.json's lock table summed over mutexes: acquisitions, contended ones, their
# summed and largest wait; and the share `top` gives to lock waits on the first top-level
# task's critical path). Written for issue 25's HELD records, to show what the rollups lose.
#
# Usage: scripts/bench/cmp-locks.sh OLD/libscalpel_agent.so NEW/libscalpel_agent.so
#        REPEAT=5 SAMPLES="lowlock workqueue" scripts/bench/cmp-locks.sh OLD NEW
set -euo pipefail
OLD=$1; NEW=$2
REPEAT=${REPEAT:-3}
SAMPLES=${SAMPLES:-lowlock workqueue threadpool}
cd "$(dirname "$0")/../.."
cargo build --release -q -p scalpel -p scalpel-samples
SCALPEL=$PWD/target/release/scalpel
W=$(mktemp -d /tmp/cmp-locks.XXXXXX); trap 'rm -rf "$W"' EXIT

# One run: prints "agent sample wall_s events bytes acquisitions contended wait_ms max_wait_ms lock%".
one() {
    local name=$1 agent=$2 sample=$3
    rm -rf "$W/t"
    local t0 t1
    t0=$(date +%s.%N)
    SCALPEL_AGENT=$agent "$SCALPEL" record -o "$W/t" -- "target/release/$sample" >/dev/null 2>"$W/rec.txt"
    t1=$(date +%s.%N)
    "$SCALPEL" infer "$W/t" >/dev/null 2>&1
    local lockshare
    lockshare=$("$SCALPEL" top "$W/t" 2>/dev/null | awk '/^task /{getline; if (match($0, /lock [0-9.]+%/)) print substr($0, RSTART + 5, RLENGTH - 6); else print 0; exit}')
    python3 - "$name" "$sample" "$t0" "$t1" "$W/rec.txt" "$W/t/model/graph.json" "${lockshare:-0}" <<'EOF'
import json, re, sys
name, sample, t0, t1, rec, graph, share = sys.argv[1:]
text = open(rec).read()
events = int(re.search(r"events:\s+(\d+)", text).group(1))
size = re.search(r"bytes:\s+([\d.]+) (\w+)", text)
scale = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[size.group(2)]
locks = json.load(open(graph))["locks"]
acq = sum(l["acquisitions"] for l in locks)
cont = sum(l["contended"] for l in locks)
wait = sum(l["wait_ns"] for l in locks) / 1e6
mx = max((l["max_wait_ns"] for l in locks), default=0) / 1e6
print(f"{name:4} {sample:11} {float(t1) - float(t0):7.2f} {events:9} {float(size.group(1)) * scale / events:6.2f} "
      f"{acq:9} {cont:8} {wait:9.1f} {mx:7.2f} {share:>6}")
EOF
}

printf '%-4s %-11s %7s %9s %6s %9s %8s %9s %7s %6s\n' agent sample wall_s events B/ev acquired contended wait_ms max_ms lock%
for sample in $SAMPLES; do
    for ((r = 0; r < REPEAT; r++)); do
        one old "$OLD" "$sample"
        one new "$NEW" "$sample"
    done
done
