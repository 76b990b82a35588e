#!/usr/bin/env bash
# What on-CPU sampling (`scalpel record --sample HZ`) adds to a CPU-bound program's run time:
# tests/c/cpumix.c (five functions, no system calls) untraced, recorded without samples, and
# recorded with `--sample 99` and `--sample 999`, back to back in every repetition so that each
# comparison is made within one moment of a noisy machine; medians over REPEAT (default 7)
# repetitions, and the ratios of the medians to the untraced run.
#
# Usage: scripts/bench-sampling.sh          (UNITS=1500 slices of cpumix, about 3 s, REPEAT=7)
set -euo pipefail
cd "$(dirname "$0")/.."

UNITS=${UNITS:-1500}
REPEAT=${REPEAT:-7}
cargo build --release -q -p scalpel-agent -p scalpel
AGENT=$PWD/target/release/libscalpel_agent.so
SCALPEL=$PWD/target/release/scalpel
WORK=$(mktemp -d /tmp/scalpel-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/cpumix" tests/c/cpumix.c

# One timed run of a variant: prints wall seconds.
run() {
    rm -rf "$WORK/t"
    local t0 t1
    t0=$(date +%s%N)
    case $1 in
        untraced) "$WORK/cpumix" "$UNITS" > /dev/null ;;
        recorded) SCALPEL_AGENT=$AGENT "$SCALPEL" record -o "$WORK/t" -- "$WORK/cpumix" "$UNITS" \
            > /dev/null 2>&1 ;;
        sample:*) SCALPEL_AGENT=$AGENT "$SCALPEL" record -o "$WORK/t" --sample "${1#sample:}" -- \
            "$WORK/cpumix" "$UNITS" > /dev/null 2>&1 ;;
    esac
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", (b - a) / 1e9}'
}

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

VARIANTS="untraced recorded sample:99 sample:999"
for v in $VARIANTS; do : > "$WORK/$v.times"; done
for _ in $(seq "$REPEAT"); do
    for v in $VARIANTS; do run "$v" >> "$WORK/$v.times"; done
done
base=$(median < "$WORK/untraced.times")
printf '%-12s %10s %10s\n' variant "median s" "x untraced"
for v in $VARIANTS; do
    m=$(median < "$WORK/$v.times")
    printf '%-12s %10.3f %10.4f\n' "$v" "$m" "$(awk -v m="$m" -v b="$base" 'BEGIN {print m / b}')"
done
# The samples of one more 999 Hz run, from the recorder's summary.
rm -rf "$WORK/t"
SCALPEL_AGENT=$AGENT "$SCALPEL" record -o "$WORK/t" --sample 999 -- "$WORK/cpumix" "$UNITS" \
    2>&1 >/dev/null | grep samples: || true
