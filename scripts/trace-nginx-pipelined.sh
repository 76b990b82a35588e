#!/usr/bin/env bash
# Records nginx (Debian's nginx-light, scripts/servers/nginx.conf: one worker process, `aio
# threads` with a pool of 4 threads, on 127.0.0.1) under `scalpel record` while wrk loads it
# with a pipelining script (scripts/servers/pipeline.lua: each connection writes four GETs at
# once), then infers and checks "one request, one task" counted by responses
# (scripts/servers/nginx-pipelined.toml, by `server-check`): each response's task must hold the
# hand-off of its file read to the pool and the pool's completion, one response per task, for
# 90% of the responses wrk counted. Fails also when a response was not 200, a socket failed, or
# the trace is open to other users.
#
# Usage: scripts/trace-nginx-pipelined.sh [TRACE_DIR]   (default: target/nginx-pipelined-trace)
# Environment: RESPONSES (4000 per wrk thread), THREADS (2), CONNECTIONS (8), LOAD_SECONDS (10:
# wrk's -d), PORT. Needs nginx-light, wrk and apache2-utils (installed with apt-get when missing
# and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/nginx-pipelined-trace}
PORT=${PORT:-18390}
RESPONSES=${RESPONSES:-4000}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-8}

if [ ! -x /usr/sbin/nginx ] || ! command -v wrk >/dev/null || ! command -v ab >/dev/null; then
    echo "installing nginx-light, wrk and apache2-utils" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light wrk apache2-utils >/dev/null
fi

scripts/build-release.sh
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-nginx-pipelined.XXXXXX)
RECORD_PID=""
cleanup() {
    # Stopped by its PID file only, never by name.
    if [ -s "$WORK/nginx.pid" ]; then kill -TERM "$(cat "$WORK/nginx.pid")" 2>/dev/null || true; fi
    if [ -n "$RECORD_PID" ]; then wait "$RECORD_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/htdocs"
head -c 3000 /dev/urandom | base64 > "$WORK/htdocs/index.html"
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
# Bounded in count (RESPONSES per wrk thread, by the script) and in time (-d).
WRK_RESPONSES=$RESPONSES wrk -t "$THREADS" -c "$CONNECTIONS" -d "${LOAD_SECONDS:-10}s" \
    -s scripts/servers/pipeline.lua "http://127.0.0.1:$PORT/index.html" > "$WORK/wrk.txt"
cat "$WORK/wrk.txt"
kill -QUIT "$(cat "$WORK/nginx.pid")"
wait "$RECORD_PID" || true
RECORD_PID=""

responses=$(awk '/requests in/ {print $1}' "$WORK/wrk.txt")
non_2xx=$(awk '/Non-2xx or 3xx responses/ {print $NF}' "$WORK/wrk.txt")
socket_errors=$(grep -c 'Socket errors' "$WORK/wrk.txt" || true)
status=0
open_to_others=$(find "$OUT" -perm /o=rwx | wc -l)
echo "entries others may read, write or enter: $open_to_others"
[ "$open_to_others" = 0 ] || { echo "FAIL: $(find "$OUT" -perm /o=rwx | head -3)" >&2; status=1; }
if [ -z "$responses" ] || [ "$responses" = 0 ] || [ -n "$non_2xx" ] || [ "$socket_errors" != 0 ]; then
    echo "FAIL: ${responses:-no} responses, non-2xx: ${non_2xx:-0}, socket errors: $socket_errors" >&2
    status=1
fi

"$SCALPEL" infer "$OUT" -o "$OUT/model" --min-count 100 >/dev/null
# Against the responses wrk counted, and the one the readiness probe asked for.
target/release/server-check "$OUT/model" scripts/servers/nginx-pipelined.toml nginx-pipelined \
    "$((${responses:-0} + 1))" || status=1
echo "== scalpel top =="
"$SCALPEL" top "$OUT/model" --limit 8 || status=1
exit $status
