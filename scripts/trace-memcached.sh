#!/usr/bin/env bash
# Records memcached (Debian's memcached 1.6: 4 worker threads, on 127.0.0.1, UDP off) under
# `scalpel record` while `memcaslap` from libmemcached-tools loads it for a few seconds, then
# infers and prints the figures of the hand-offs issue: where each accepted connection's
# hand-off to a worker lands (it must be the worker's read of its notify descriptor, which the
# listener writes after queueing the connection, not the connection's first request, which comes
# when the client pleases), the delay it measures, and the top-down view. Fails under the
# targets of "one request, one task type" (95% of the requests in the request task, 90% of those
# top-level or in a session, 95% in a session, at most 10 types for 95% of the leaves).
# RECORD_FLAGS adds `scalpel record` flags (e.g. `--locks count`).
#
# Usage: scripts/trace-memcached.sh [TRACE_DIR]     (default: target/memcached-trace)
# Needs memcached and libmemcached-tools (installed with apt-get when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/memcached-trace}
PORT=${PORT:-18211}
SECONDS_LOAD=${SECONDS_LOAD:-3}
CONCURRENCY=${CONCURRENCY:-16}

if [ ! -x /usr/bin/memcached ] || ! command -v memcaslap >/dev/null; then
    echo "installing memcached and libmemcached-tools" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq memcached libmemcached-tools >/dev/null
fi

scripts/build-release.sh
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-memcached.XXXXXX)
RECORD_PID=""
cleanup() {
    # Stopped by its PID file only, never by name.
    if [ -s "$WORK/memcached.pid" ]; then kill -TERM "$(cat "$WORK/memcached.pid")" 2>/dev/null || true; fi
    if [ -n "$RECORD_PID" ]; then wait "$RECORD_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
chmod 755 "$WORK"
USER_ARGS=()
# As root, memcached drops to `nobody` before it writes its PID file.
if [ "$(id -u)" = 0 ]; then USER_ARGS=(-u nobody); chown nobody "$WORK"; fi
rm -rf "$OUT"
# shellcheck disable=SC2086 # the flags are words
"$SCALPEL" record -o "$OUT" ${RECORD_FLAGS:-} -- /usr/bin/memcached -U 0 -l 127.0.0.1 -p "$PORT" -t 4 \
    "${USER_ARGS[@]}" -P "$WORK/memcached.pid" &
RECORD_PID=$!
for _ in $(seq 1 100); do
    if [ -s "$WORK/memcached.pid" ] && memcstat --servers="127.0.0.1:$PORT" >/dev/null 2>&1; then break; fi
    sleep 0.1
done
# Bounded in time (-t) and by the outer timeout.
timeout $((SECONDS_LOAD + 60)) memcaslap -s "127.0.0.1:$PORT" -t "${SECONDS_LOAD}s" -c "$CONCURRENCY" -T 2 > "$WORK/load.txt" 2>&1
grep -E '^Run time' "$WORK/load.txt"
if [ ! -s "$WORK/memcached.pid" ]; then
    echo "FAIL: memcached wrote no PID file; stopping the recorder" >&2
    kill -TERM "$RECORD_PID"
fi
kill -TERM "$(cat "$WORK/memcached.pid")"
wait "$RECORD_PID" || true
RECORD_PID=""

status=0
# The trace is the recording user's alone, whoever the server's workers run as.
open_to_others=$(find "$OUT" -perm /o=rwx | wc -l)
echo "entries others may read, write or enter: $open_to_others"
[ "$open_to_others" = 0 ] || { echo "FAIL: $(find "$OUT" -perm /o=rwx | head -3)" >&2; status=1; }
"$SCALPEL" infer "$OUT" -o "$OUT/model" --min-count 100 --timings >/dev/null 2>"$WORK/timings.txt"
cat "$WORK/timings.txt" >&2
scripts/check-drawing-times.sh "$WORK/timings.txt" || status=1
ops=$(awk '/^Run time/ { for (i = 1; i < NF; i++) if ($i == "Ops:") print $(i + 1) }' "$WORK/load.txt")
# The checks of scripts/servers/memcached.toml (tests/src/servers/): every connection hand-off
# lands on the worker's notification read, and "one request, one task type" against the
# operations memcaslap counted; the names of the types that hold 1% of the leaves (with every
# type's share down to half a percent) go to $OUT/names.txt; with SAME_NAMES (another
# recording's file) a type holding 1% in either must hold half a percent in the other by name.
target/release/server-check "$OUT/model" scripts/servers/memcached.toml memcached "${ops:-0}" \
    --names-out "$OUT/names.txt" ${SAME_NAMES:+--same-names "$SAME_NAMES"} || status=1
echo "== scalpel top =="
"$SCALPEL" top "$OUT/model" --limit 8 || status=1
# Where the waiting ends (issue 26): the knots, and the report naming the first.
scripts/print-knots.sh "$SCALPEL" "$OUT/model" "$WORK" || status=1
exit $status
