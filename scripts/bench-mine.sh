#!/usr/bin/env bash
# Benchmarks the hierarchy miner on synthetic causal graphs with a known hierarchy (see
# crates/scalpel/src/bin/bench-mine.rs): 10^5, 10^6 and 10^7 leaves (SIZES to change), each in a
# fresh process, REPEAT times (default 3). Each line prints the mining time, the peak memory of
# the process (the graph included) and whether the requests, sub-requests and loops were
# recovered exactly; the median time per size closes the output, with its growth relative to
# the previous size (10x leaves: near-linear growth is about 10x time).
#
# Usage: scripts/bench-mine.sh        (SIZES="100000 1000000 10000000" REPEAT=3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-100000 1000000 10000000}
REPEAT=${REPEAT:-3}
cargo build --release -q -p scalpel
BIN=$PWD/target/release/scalpel-bench-mine
echo "$(nproc) cores"
prev=""
for n in $SIZES; do
    times=()
    for i in $(seq "$REPEAT"); do
        line=$("$BIN" "$n")
        echo "run $i: $line"
        times+=("$(sed -E 's/.*mined in ([0-9.]+) s.*/\1/' <<<"$line")")
    done
    median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    if [ -n "$prev" ]; then
        growth=$(awk -v a="$median" -v b="$prev" 'BEGIN { printf "%.1fx", a / b }')
        echo "median for $n leaves: $median s ($growth the previous size)"
    else
        echo "median for $n leaves: $median s"
    fi
    prev=$median
done
