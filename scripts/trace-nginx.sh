#!/usr/bin/env bash
# Records nginx (Debian's nginx-light: one worker process, `aio threads` with a pool of 4 threads,
# `sendfile off`, on 127.0.0.1) under `scalpel record` while `ab -k` loads it, then infers and
# prints the figures of the hand-offs issue: how many of the pool's eventfd completions reach a
# worker leaf (a `ready` edge: nginx never reads its eventfd, edge-triggered epoll reports it)
# instead of the eventfd's external sink, and how many offloads (the worker's push to the pool →
# the pool thread's file read and eventfd write → the worker's reply) one task type holds.
# Fails when fewer than 95% of the completions reach a worker leaf, when one task type holds under
# 95% of the offloads, when the request task misses the targets of "one request, one task type"
# (90% of the requests, 90% of those top-level or in a session, at most 10 types for 95% of
# the leaves; 95% in a session) or when a request failed.
#
# Usage: scripts/trace-nginx.sh [TRACE_DIR]     (default: target/nginx-trace)
# Environment: REQUESTS (20000), CONCURRENCY (32), LOAD_SECONDS (60: ab's time limit), PORT.
# Needs nginx-light and apache2-utils (installed with apt-get when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/nginx-trace}
PORT=${PORT:-18090}
REQUESTS=${REQUESTS:-20000}
CONCURRENCY=${CONCURRENCY:-32}

if [ ! -x /usr/sbin/nginx ] || ! command -v ab >/dev/null; then
    echo "installing nginx-light and apache2-utils" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light apache2-utils >/dev/null
fi

scripts/build-release.sh
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-nginx.XXXXXX)
RECORD_PID=""
cleanup() {
    # Stopped by its PID file only, never by name.
    if [ -s "$WORK/nginx.pid" ]; then kill -TERM "$(cat "$WORK/nginx.pid")" 2>/dev/null || true; fi
    if [ -n "$RECORD_PID" ]; then wait "$RECORD_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/htdocs"
# 24 KiB of text: large enough that nginx reads it in the thread pool.
head -c 18000 /dev/urandom | base64 > "$WORK/htdocs/index.html"
USER_LINE=""
if [ "$(id -u)" = 0 ]; then USER_LINE="user www-data;"; fi
scripts/servers/render.sh scripts/servers/nginx.conf WORK="$WORK" PORT="$PORT" USER_LINE="$USER_LINE" \
    > "$WORK/nginx.conf"
chmod 755 "$WORK" "$WORK/htdocs"; chmod 644 "$WORK/htdocs/index.html"
rm -rf "$OUT"
"$SCALPEL" record -o "$OUT" -- /usr/sbin/nginx -c "$WORK/nginx.conf" -e "$WORK/nginx-error.log" &
RECORD_PID=$!

for _ in $(seq 1 100); do
    if ab -q -n 1 "http://127.0.0.1:$PORT/index.html" >/dev/null 2>&1; then break; fi
    sleep 0.1
done
# Bounded in count and in time (-t caps the run at LOAD_SECONDS, 60 s unless set).
ab -k -t "${LOAD_SECONDS:-60}" -n "$REQUESTS" -c "$CONCURRENCY" "http://127.0.0.1:$PORT/index.html" > "$WORK/ab.txt"
grep -E 'Complete requests|Failed requests|Requests per second' "$WORK/ab.txt"
kill -QUIT "$(cat "$WORK/nginx.pid")"
wait "$RECORD_PID" || true
RECORD_PID=""

complete=$(awk '/Complete requests/ {print $3}' "$WORK/ab.txt")
failed=$(awk '/Failed requests/ {print $3}' "$WORK/ab.txt")
status=0
# The trace is the recording user's alone, whoever the server's workers run as.
open_to_others=$(find "$OUT" -perm /o=rwx | wc -l)
echo "entries others may read, write or enter: $open_to_others"
[ "$open_to_others" = 0 ] || { echo "FAIL: $(find "$OUT" -perm /o=rwx | head -3)" >&2; status=1; }
[ "$failed" = 0 ] && [ "$complete" -gt 0 ] || { echo "FAIL: $complete served, $failed failed" >&2; status=1; }

"$SCALPEL" infer "$OUT" -o "$OUT/model" --min-count 100 --timings >/dev/null 2>"$WORK/timings.txt"
cat "$WORK/timings.txt" >&2
scripts/check-drawing-times.sh "$WORK/timings.txt" || status=1
# The checks of scripts/servers/nginx.toml (tests/src/servers/): the offloads, and "one
# request, one task type" against the requests ab counted (and the one it was started with);
# the names of the types that hold 1% of the leaves, with every type's share down to half a
# percent, go to $OUT/names.txt; when SAME_NAMES names another recording's file, a type holding
# 1% in either recording must hold at least half a percent in the other by the same name.
target/release/server-check "$OUT/model" scripts/servers/nginx.toml nginx "$((complete + 1))" \
    --names-out "$OUT/names.txt" ${SAME_NAMES:+--same-names "$SAME_NAMES"} || status=1
echo "== scalpel top =="
"$SCALPEL" top "$OUT/model" --limit 8 || status=1
# Where the waiting ends (issue 26): the knots, and the report naming the first.
scripts/print-knots.sh "$SCALPEL" "$OUT/model" "$WORK" || status=1
exit $status
