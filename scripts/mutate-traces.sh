#!/usr/bin/env bash
# Records three small real traces (a thread pool serving connections, a work queue, and a pipe
# written a byte at a time), then damages copies of them COUNT times (default 5000), one
# structure-aware mutation each, and runs `scalpel dump`, `summary` and `infer` on every mutant
# (release builds). Prints the counts; exits 1 if any run panicked, died of a signal, ended
# without a clear message or used more than 2 GiB. Runs slower than 10x the intact trace (at
# least 1 s) are counted and printed (they do not fail the run; see README, Known limits).
# Failing and slow inputs are copied to target/mutants/ (tests/regressions/ keeps some for good).
#
# Usage: scripts/mutate-traces.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-5000}
scripts/build-release.sh
R=$PWD/target/release
WORK=$(mktemp -d /tmp/scalpel-mutate.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -pthread -o "$WORK/bytestorm-bin" tests/c/bytestorm.c
"$R/scalpel" record -o "$WORK/threadpool" -- "$R/threadpool" --connections 8 --requests 40 2>/dev/null
"$R/scalpel" record -o "$WORK/workqueue" -- "$R/workqueue" 2>/dev/null
"$R/scalpel" record -o "$WORK/bytestorm" -- "$WORK/bytestorm-bin" 2000 >/dev/null 2>&1
rm -rf target/mutants
"$R/mutate-traces" --count "$COUNT" --keep target/mutants \
    "$WORK/threadpool" "$WORK/workqueue" "$WORK/bytestorm"
