#!/usr/bin/env bash
# Recordings of any length (issue 53): infers a recording whole, then in windows under
# `--memory LIMIT` with the address space held to twice the limit above what the program maps
# before inferring (`prlimit --as`; scalpel refuses a limit that leaves less: ARCHITECTURE, "The
# limit itself"), and checks with
# `scalpel-bench-graph compare` that at most BOUND of the leaves stand in another request task
# (the task each leaf is directly part of) than in the whole model, and, when OUTER_BOUND is set,
# at most that many in another outermost task (`top`'s). LIMIT may name several limits (one
# whole inference, then one windowed run and check per limit): where windows fall changes what
# their boundaries and the sample's gap cut. The figures of the runs go to stderr;
# docs/BENCHMARKS.md has the commands and what they gave.
#
#   scripts/check-windows.sh [TRACE]   (default target/memcached-trace; LIMIT=256M, BOUND=0.001)
#   LIMIT="224M 512M" scripts/check-windows.sh target/written-trace
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE=${1:-target/memcached-trace}
LIMIT=${LIMIT:-256M}
BOUND=${BOUND:-0.001}
SCALPEL=$PWD/target/release/scalpel
BENCH=$PWD/target/release/scalpel-bench-graph
[ -x "$BENCH" ] || cargo build --release -q -p scalpel --bin scalpel-bench-graph
WORK=$(mktemp -d /tmp/scalpel-windows.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$SCALPEL" infer "$TRACE" -o "$WORK/whole" --timings >/dev/null
for limit in $LIMIT; do
    limit_bytes=$(numfmt --from=iec "$limit")
    # What the program maps before inferring (its code, libraries and threads' stacks): 150 to
    # 160 MiB measured, 256 MiB allowed.
    space=$((2 * limit_bytes + (256 << 20)))
    rm -rf "$WORK/windows"
    echo "--memory $limit:" >&2
    prlimit --as=$space "$SCALPEL" infer "$TRACE" -o "$WORK/windows" \
        --memory "$limit" --timings | tail -3
    "$BENCH" compare "$WORK/whole" "$WORK/windows" --inner-bound "$BOUND" \
        ${OUTER_BOUND:+--outer-bound "$OUTER_BOUND"}
done
