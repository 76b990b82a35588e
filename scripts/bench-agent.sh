#!/usr/bin/env bash
# Benchmarks the agent's added cost per intercepted event against the same loop without the
# agent, and against a naive recorder (one global mutex around a map of per-thread files, the
# baseline of the Scalpel paper), for 1, 2, 4 and 8 threads; then the trace bytes per event.
#
# Costs are core-nanoseconds per event: wall time x min(threads, cores) / events, so they stay
# comparable when threads outnumber cores. Each configuration runs REPEAT times (default 5) and
# the fastest run counts, which filters out the noise of a shared machine.
#
# Usage: scripts/bench-agent.sh            (ITERS=200000 REPEAT=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."

ITERS=${ITERS:-200000}
REPEAT=${REPEAT:-5}
cargo build --release -q -p scalpel-agent -p scalpel-inferencer
AGENT=$PWD/target/release/libscalpel_agent.so
SCALPEL=$PWD/target/release/scalpel
WORK=$(mktemp -d /tmp/scalpel-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
BENCH=$WORK/agent-bench
cc -O2 -pthread -o "$BENCH" scripts/bench/agent-bench.c
CORES=$(nproc)

# best MODE THREADS KIND -> fastest wall ns of REPEAT runs
best() {
    local mode=$1 threads=$2 kind=$3 min=""
    for _ in $(seq 1 "$REPEAT"); do
        rm -rf "$WORK/t" && mkdir -p "$WORK/t"
        case $kind in
            base)  out=$("$BENCH" "$mode" "$threads" "$ITERS") ;;
            agent) out=$(SCALPEL_DIR=$WORK/t SCALPEL_AGENT=$AGENT LD_PRELOAD=$AGENT "$BENCH" "$mode" "$threads" "$ITERS") ;;
            naive) out=$("$BENCH" "$mode" "$threads" "$ITERS" naive "$WORK/t") ;;
        esac
        ns=$(echo "$out" | awk '{print $3}')
        if [ -z "$min" ] || [ "$ns" -lt "$min" ]; then min=$ns; fi
    done
    echo "$min"
}

printf '%-6s %7s %10s %10s %10s %10s %10s %12s\n' mode threads "base ns/ev" "agent +ns" "agent x" "naive +ns" "naive x" "naive/agent"
for mode in mutex pipe; do
    for threads in 1 2 4 8; do
        used=$(( threads < CORES ? threads : CORES ))
        events=$(( threads * ITERS * 2 ))
        b=$(best "$mode" "$threads" base)
        a=$(best "$mode" "$threads" agent)
        n=$(best "$mode" "$threads" naive)
        awk -v m="$mode" -v t="$threads" -v b="$b" -v a="$a" -v n="$n" -v u="$used" -v e="$events" 'BEGIN {
            base = b * u / e; agent = (a - b) * u / e; naive = (n - b) * u / e;
            printf "%-6s %7d %10.1f %10.1f %10.2f %10.1f %10.2f %12.1f\n", m, t, base, agent, a / b, naive, n / b, naive / (agent > 0 ? agent : 1)
        }'
    done
done

# Bytes per event, from a recorded run of each mode.
for mode in mutex pipe; do
    rm -rf "$WORK/rec"
    "$SCALPEL" record -o "$WORK/rec" -- "$BENCH" "$mode" 4 "$ITERS" >/dev/null 2>"$WORK/summary"
    files=$(find "$WORK/rec" -name 't*.trace' | wc -l)
    bytes=$(find "$WORK/rec" -name 't*.trace' -printf '%s\n' | awk -v f="$files" '{s += $1} END {print s - f * 4096}')
    events=$(awk '/events:/ {print $2}' "$WORK/summary")
    awk -v m="$mode" -v b="$bytes" -v e="$events" 'BEGIN { printf "bytes per event (%s): %.2f  (%d events, %d bytes)\n", m, b / e, e, b }'
done
