#!/usr/bin/env bash
# What a page of trace costs its writer, with the pages faulted in by the stores and with zeros
# written ahead of each window (scripts/bench/page-cost.c), alternated REPEAT times (default 3)
# over MIB MiB (default 256) in DIR (default: a new directory under the current one, so on the
# file system traces are usually written to; /tmp or /dev/shm may be tmpfs, where the two are
# alike).
#
# Usage: scripts/bench/page-cost.sh [DIR]      (REPEAT=3 MIB=256)
set -euo pipefail
cd "$(dirname "$0")"
REPEAT=${REPEAT:-3}
MIB=${MIB:-256}
WORK=$(mktemp -d "${1:-$PWD/../..}/page-cost.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/page-cost" page-cost.c
echo "file system: $(stat -f -c %T "$WORK"), kernel $(uname -r)"
for _ in $(seq 1 "$REPEAT"); do
    "$WORK/page-cost" "$WORK/f" fault "$MIB"
    "$WORK/page-cost" "$WORK/f" ahead "$MIB"
done
