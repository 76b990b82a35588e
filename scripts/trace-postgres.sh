#!/usr/bin/env bash
# Records PostgreSQL (Debian's postgresql 15, a fresh cluster on 127.0.0.1) under
# `scalpel record` while pgbench loads it (`pgbench -i -s 5`, then `pgbench -c 8 -j 2 -T 5`),
# then builds the causal graph and prints the figures of the hand-offs issue: the WAL flushes on
# the commit path as storage waits (fdatasync with XLogFlush in its stack), the titles the
# server's processes gave themselves (walwriter, checkpointer, background writer, backends), the
# row-lock sleeps in ProcSleep (lock time inside their statements; those that cut one must have
# their waker, a latch's signal), and the figures of "one request, one task type", failing under
# its targets (90% of the statements in the request task, 90% of those top-level or in a
# session, at most 10 types for 95% of the leaves). pgbench itself is not traced.
#
# Usage: scripts/trace-postgres.sh [TRACE_DIR]     (default: target/postgres-trace)
# Needs postgresql (installed with apt-get when missing and run as root). PostgreSQL refuses to
# run as root: as root, the server and the recording run as the `postgres` user.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/postgres-trace}
PORT=${PORT:-18432}
DURATION=${DURATION:-5}
source scripts/servers/postgres-env.sh

scripts/build-release.sh
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-postgres.XXXXXX)
RECORD_PID=""
cleanup() {
    # Stopped by the postmaster's PID file only, never by name.
    if [ -s "$WORK/data/postmaster.pid" ]; then
        kill -INT "$(head -1 "$WORK/data/postmaster.pid")" 2>/dev/null || true
    fi
    if [ -n "$RECORD_PID" ]; then wait "$RECORD_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
if [ "$(id -u)" = 0 ]; then chown postgres "$WORK" "$OUT"; fi
"${AS[@]}" "$BIN/initdb" -D "$WORK/data" -U postgres --auth=trust >/dev/null
"${AS[@]}" "$SCALPEL" record -o "$OUT" -- "$BIN/postgres" -D "$WORK/data" -k "$WORK" -p "$PORT" \
    -c listen_addresses=127.0.0.1 &
RECORD_PID=$!
for _ in $(seq 1 100); do
    if pg_isready -h 127.0.0.1 -p "$PORT" -q; then break; fi
    sleep 0.1
done
PGB=("${AS[@]}" timeout 120 pgbench -h 127.0.0.1 -p "$PORT" -U postgres)
"${PGB[@]}" -i -s 5 postgres >/dev/null 2>&1
# Bounded in time (-T) and by the timeout.
"${PGB[@]}" -c 8 -j 2 -T "$DURATION" postgres > "$WORK/pgbench.txt" 2>&1
grep -E 'number of transactions actually processed|number of failed|tps =' "$WORK/pgbench.txt"
kill -INT "$(head -1 "$WORK/data/postmaster.pid")"
wait "$RECORD_PID" || true
RECORD_PID=""

status=0
# The trace is the recording user's alone, whoever the server's workers run as.
open_to_others=$(find "$OUT" -perm /o=rwx | wc -l)
echo "entries others may read, write or enter: $open_to_others"
[ "$open_to_others" = 0 ] || { echo "FAIL: $(find "$OUT" -perm /o=rwx | head -3)" >&2; status=1; }
failed=$(awk '/number of failed transactions/ {print $5}' "$WORK/pgbench.txt")
[ "${failed:-x}" = 0 ] || { echo "FAIL: pgbench reports failed transactions: ${failed:-none}" >&2; status=1; }
"$SCALPEL" infer "$OUT" -o "$OUT/model" --min-count 100 --timings >/dev/null 2>"$WORK/timings.txt"
cat "$WORK/timings.txt" >&2
scripts/check-drawing-times.sh "$WORK/timings.txt" || status=1
# The checks of scripts/servers/postgres.toml (tests/src/servers/): the WAL flushes as storage
# waits, the processes' titles, the row lock waits, and "one statement, one task type" against
# the statements pgbench ran (7 per TPC-B transaction); the names of the types that hold 1% of
# the leaves, with every type's share down to half a percent, go to $OUT/names.txt; when
# SAME_NAMES names another recording's file, a type holding 1% in either recording must hold at
# least half a percent in the other by the same name (tests/src/servers).
tx=$(awk '/number of transactions actually processed/ { split($6, a, "/"); print a[1] }' "$WORK/pgbench.txt")
target/release/server-check "$OUT/model" scripts/servers/postgres.toml postgres "$((${tx:-0} * 7))" \
    --names-out "$OUT/names.txt" ${SAME_NAMES:+--same-names "$SAME_NAMES"} || status=1
# Where the waiting ends (issue 26): the knots, and the report naming the first.
scripts/print-knots.sh "$SCALPEL" "$OUT/model" "$WORK" || status=1
exit $status
