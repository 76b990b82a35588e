#!/usr/bin/env bash
# Benchmarks the graph stage (loading plus leaf cutting plus edge matching) on a synthetic trace
# of EVENTS events (default 10 million) shaped like a worker pool: pipelines of a dispatcher, a
# worker behind a mutex+cond queue, a pipe reader and a semaphore waiter (see
# crates/scalpel/src/bin/bench-graph.rs). Each repetition (REPEAT, default 5) builds the graph in a
# fresh process and prints its throughput and peak memory (VmHWM) per event; the median
# throughput closes the output.
#
# Usage: scripts/bench-graph.sh            (EVENTS=10000000 REPEAT=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."

EVENTS=${EVENTS:-10000000}
REPEAT=${REPEAT:-5}
cargo build --release -q -p scalpel
BIN=$PWD/target/release/scalpel-bench-graph
WORK=$(mktemp -d /tmp/scalpel-bench-graph.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$BIN" gen "$WORK/trace" --events "$EVENTS"
echo "synthetic trace: $EVENTS events, $(du -sh "$WORK/trace" | cut -f1) on disk, $(nproc) cores"
rates=()
for i in $(seq "$REPEAT"); do
    line=$("$BIN" run "$WORK/trace")
    echo "run $i: $line"
    rates+=("$(sed -E 's/.*throughput ([0-9.]+) M.*/\1/' <<<"$line")")
done
median=$(printf '%s\n' "${rates[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "median throughput: $median M events/s"
