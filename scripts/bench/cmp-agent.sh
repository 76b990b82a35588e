#!/usr/bin/env bash
# Compares two builds of the agent in one run: the instructions each adds per iteration of
# agent-bench.c (callgrind, stacks off; the difference between 40,000 and 20,000 iterations, so
# start-up cancels out), then the time each adds per iteration, alternating plain, old and new
# in each of 7 repetitions (medians). Needs valgrind.
#
# Both run under `scalpel record` (SCALPEL, default target/release/scalpel), which hands the agent
# its files (an agent from before the broker finds SCALPEL_DIR there and opens its own).
#
# Usage: scripts/bench/cmp-agent.sh OLD/libscalpel_agent.so NEW/libscalpel_agent.so
#        WORK_DIR=/dev/shm scripts/bench/cmp-agent.sh OLD NEW   (the traces on another file system)
set -euo pipefail
OLD=$1; NEW=$2
SCALPEL=${SCALPEL:-$(cd "$(dirname "$0")/../.." && pwd)/target/release/scalpel}
# rec AGENT STACKS CMD...: CMD recorded with that agent; the summary (stderr) dropped.
rec() { local a=$1 st=$2; shift 2; SCALPEL_AGENT=$a "$SCALPEL" record -o "$W/t" --stacks "$st" -- "$@"; }
W=$(mktemp -d "${WORK_DIR:-/tmp}/cmp-agent.XXXXXX"); trap 'rm -rf "$W"' EXIT
B=$W/bench; cc -O2 -fomit-frame-pointer -pthread -o "$B" "$(dirname "$0")/agent-bench.c"
count() { rm -rf "$W/t"; "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
cg="valgrind --tool=callgrind --callgrind-out-file=/dev/null"
for mode in mutex pipe; do
  b1=$(count $cg "$B" $mode 1 20000); b2=$(count $cg "$B" $mode 1 40000)
  for name in OLD NEW; do
    A=${!name}
    for st in off; do
      a1=$(BENCH_DEPTH=16 count rec "$A" $st $cg "$B" $mode 1 20000)
      a2=$(BENCH_DEPTH=16 count rec "$A" $st $cg "$B" $mode 1 40000)
      awk -v n=$name -v m=$mode -v s=$st -v a1=$a1 -v a2=$a2 -v b1=$b1 -v b2=$b2 'BEGIN{printf "instr/event %-4s %-6s stacks=%-22s %.1f\n", n, m, s, ((a2-a1)-(b2-b1))/20000}'
    done
  done
done
# Timings, alternated: base, old, new per repetition.
ITERS=400000
for mode in mutex pipe; do
  for st in off all; do
  declare -a o=() n=()
  for r in 1 2 3 4 5 6 7; do
    t0=$("$B" $mode 1 $ITERS | awk "{print \$3}")
    rm -rf $W/t; t1=$(rec "$OLD" $st "$B" $mode 1 $ITERS 2>/dev/null | awk "{print \$3}")
    rm -rf $W/t; t2=$(rec "$NEW" $st "$B" $mode 1 $ITERS 2>/dev/null | awk "{print \$3}")
    o+=($(awk -v a=$t1 -v b=$t0 -v n=$ITERS 'BEGIN{print (a-b)/n}')); n+=($(awk -v a=$t2 -v b=$t0 -v n=$ITERS 'BEGIN{print (a-b)/n}'))
  done
  mo=$(printf '%s\n' "${o[@]}" | sort -g | sed -n 4p); mn=$(printf '%s\n' "${n[@]}" | sort -g | sed -n 4p)
  echo "added ns/iteration $mode (stacks $st, median of 7, alternated): old $mo new $mn"
  done
done
