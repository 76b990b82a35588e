#!/usr/bin/env bash
# `scalpel diff` on a real server under two settings (issue 52): PostgreSQL (Debian's, a fresh
# cluster on 127.0.0.1 for each run) recorded under a pgbench load of one-statement
# transactions (an INSERT each, so every statement commits), first with synchronous_commit on,
# then off. With it on, each commit waits in XLogFlush for the WAL's fdatasync; with it off,
# it does not. The diff must pair the statement task across the runs, call its change beyond
# noise, and name I/O in XLogFlush, with its stack, as where the time went
# (target/release/diff-check). pgbench itself is not traced.
#
# Usage: scripts/diff-postgres.sh [OUT_DIR]     (default: target/postgres-diff)
# Needs postgresql (installed with apt-get when missing, as root). As root, the server and the
# recordings run as the `postgres` user.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/postgres-diff}
PORT=${PORT:-18433}
DURATION=${DURATION:-5}
source scripts/servers/postgres-env.sh
scripts/build-release.sh
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-pgdiff.XXXXXX)
RECORD_PID=""
cleanup() {
    # Stopped by the postmaster's PID file only, never by name.
    for pidfile in "$WORK"/*/postmaster.pid; do
        [ -s "$pidfile" ] && kill -INT "$(head -1 "$pidfile")" 2>/dev/null || true
    done
    if [ -n "$RECORD_PID" ]; then wait "$RECORD_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
if [ "$(id -u)" = 0 ]; then chown postgres "$WORK" "$OUT"; fi
# One statement a transaction: every statement is a commit.
cat > "$WORK/insert.sql" <<'SQL'
\set aid random(1, 100000)
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, 1, CURRENT_TIMESTAMP);
SQL
chmod a+r "$WORK/insert.sql"

# record SETTING: a fresh cluster, recorded with synchronous_commit=SETTING under the load.
record() {
    local setting=$1 data="$WORK/$1"
    "${AS[@]}" "$BIN/initdb" -D "$data" -U postgres --auth=trust >/dev/null
    "${AS[@]}" "$SCALPEL" record -o "$OUT/$setting" -- "$BIN/postgres" -D "$data" -k "$WORK" \
        -p "$PORT" -c listen_addresses=127.0.0.1 -c synchronous_commit="$setting" &
    RECORD_PID=$!
    for _ in $(seq 1 100); do
        if pg_isready -h 127.0.0.1 -p "$PORT" -q; then break; fi
        sleep 0.1
    done
    local pgb=("${AS[@]}" timeout 120 pgbench -h 127.0.0.1 -p "$PORT" -U postgres)
    "${pgb[@]}" -i -s 1 postgres >/dev/null 2>&1
    # Bounded in time (-T) and by the timeout.
    "${pgb[@]}" -n -f "$WORK/insert.sql" -c 8 -j 2 -T "$DURATION" postgres > "$WORK/$setting.txt" 2>&1
    echo "synchronous_commit=$setting: $(grep -E 'tps =' "$WORK/$setting.txt" | head -1)"
    failed=$(awk '/number of failed transactions/ {print $5}' "$WORK/$setting.txt")
    [ "${failed:-x}" = 0 ] || { echo "FAIL: pgbench reports failed transactions: ${failed:-none}" >&2; exit 1; }
    kill -INT "$(head -1 "$data/postmaster.pid")"
    wait "$RECORD_PID" || true
    RECORD_PID=""
    "$SCALPEL" infer "$OUT/$setting" -o "$OUT/$setting/model" --min-count 100 >/dev/null
}
record on
record off
"$SCALPEL" diff "$OUT/on/model" "$OUT/off/model" --limit 8
"$SCALPEL" diff "$OUT/on/model" "$OUT/off/model" --format json > "$OUT/diff.json"
# The statement task changed beyond noise, with I/O under XLogFlush as where the time went.
target/release/diff-check "$OUT/diff.json" --what io --frame XLogFlush
