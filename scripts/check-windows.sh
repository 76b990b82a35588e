#!/usr/bin/env bash
# Recordings of any length (issue 53): infers a recording whole, then in windows under
# `--memory LIMIT` with the address space held to twice the limit, or MIN_SPACE if larger
# (`prlimit --as`; the mappings glibc and the worker threads reserve come to about twice what is
# resident, and to more on larger traces below 512M: docs/LIMITS.md), and checks with
# `scalpel-bench-graph compare` that at most BOUND of the leaves stand in another request task
# (the task each leaf is directly part of) than in the whole model, and, when OUTER_BOUND is set,
# at most that many in another outermost task (`top`'s). LIMIT may name several limits (one
# whole inference, then one windowed run and check per limit): where windows fall changes what
# their boundaries and the sample's gap cut. The figures of the runs go to stderr;
# docs/BENCHMARKS.md has the commands and what they gave.
#
#   scripts/check-windows.sh [TRACE]   (default target/memcached-trace; LIMIT=256M, BOUND=0.001)
#   LIMIT="224M 512M" MIN_SPACE=1G scripts/check-windows.sh target/written-trace
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
    # MIN_SPACE: below 512M, glibc's per-thread arenas (heaps of 64 MiB reserved each) and the
    # worker threads' stacks can reserve more than twice the limit (docs/LIMITS.md).
    least=$(numfmt --from=iec "${MIN_SPACE:-0}")
    space=$((2 * limit_bytes > least ? 2 * limit_bytes : least))
    rm -rf "$WORK/windows"
    echo "--memory $limit:" >&2
    prlimit --as=$space "$SCALPEL" infer "$TRACE" -o "$WORK/windows" \
        --memory "$limit" --timings | tail -3
    "$BENCH" compare "$WORK/whole" "$WORK/windows" --inner-bound "$BOUND" \
        ${OUTER_BOUND:+--outer-bound "$OUTER_BOUND"}
done
