#!/usr/bin/env bash
# Records nginx as a reverse proxy (Debian's nginx-light: one worker process, `proxy_pass` to a
# backend) under `scalpel record` while `ab -k` loads it. The backend is a second nginx started
# without the agent: every request's call to it goes to a peer outside the trace. Then infers and
# checks "one request, one task type" (scripts/servers/nginx-proxy.toml, by `server-check`): the
# task that holds a response to the client must also hold the client's request and the call to
# the backend (the connect, the request written to it, its answer read), for 95% of the requests.
# Fails also when a request failed or the trace is open to other users.
#
# Usage: scripts/trace-nginx-proxy.sh [TRACE_DIR]     (default: target/nginx-proxy-trace)
# Environment: REQUESTS (5000), CONCURRENCY (16), LOAD_SECONDS (60: ab's time limit), PORT,
# BACKEND_PORT. Needs nginx-light and apache2-utils (installed with apt-get when missing and
# run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/nginx-proxy-trace}
PORT=${PORT:-18190}
BACKEND_PORT=${BACKEND_PORT:-18191}
REQUESTS=${REQUESTS:-5000}
CONCURRENCY=${CONCURRENCY:-16}

if [ ! -x /usr/sbin/nginx ] || ! command -v ab >/dev/null; then
    echo "installing nginx-light and apache2-utils" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light apache2-utils >/dev/null
fi

scripts/build-release.sh
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-nginx-proxy.XXXXXX)
RECORD_PID=""
BACKEND_PID=""
cleanup() {
    # Stopped by their PID files only, never by name.
    if [ -s "$WORK/nginx.pid" ]; then kill -TERM "$(cat "$WORK/nginx.pid")" 2>/dev/null || true; fi
    if [ -n "$RECORD_PID" ]; then wait "$RECORD_PID" 2>/dev/null || true; fi
    if [ -s "$WORK/backend/nginx.pid" ]; then
        kill -TERM "$(cat "$WORK/backend/nginx.pid")" 2>/dev/null || true
    fi
    if [ -n "$BACKEND_PID" ]; then wait "$BACKEND_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/htdocs" "$WORK/backend"
head -c 3000 /dev/urandom | base64 > "$WORK/htdocs/index.html"
USER_LINE=""
if [ "$(id -u)" = 0 ]; then USER_LINE="user www-data;"; fi
for conf in nginx-proxy nginx-backend; do
    scripts/servers/render.sh "scripts/servers/$conf.conf" WORK="$WORK" PORT="$PORT" \
        BACKEND_PORT="$BACKEND_PORT" USER_LINE="$USER_LINE" > "$WORK/$conf.conf"
done
chmod 755 "$WORK" "$WORK/htdocs"; chmod 644 "$WORK/htdocs/index.html"

# The backend, untraced.
/usr/sbin/nginx -c "$WORK/nginx-backend.conf" -e "$WORK/backend/nginx-error.log" &
BACKEND_PID=$!
for _ in $(seq 1 100); do
    if ab -q -n 1 "http://127.0.0.1:$BACKEND_PORT/index.html" >/dev/null 2>&1; then break; fi
    sleep 0.1
done

rm -rf "$OUT"
"$SCALPEL" record -o "$OUT" -- /usr/sbin/nginx -c "$WORK/nginx-proxy.conf" -e "$WORK/nginx-error.log" &
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
open_to_others=$(find "$OUT" -perm /o=rwx | wc -l)
echo "entries others may read, write or enter: $open_to_others"
[ "$open_to_others" = 0 ] || { echo "FAIL: $(find "$OUT" -perm /o=rwx | head -3)" >&2; status=1; }
[ "$failed" = 0 ] && [ "$complete" -gt 0 ] || { echo "FAIL: $complete served, $failed failed" >&2; status=1; }

"$SCALPEL" infer "$OUT" -o "$OUT/model" --min-count 100 >/dev/null
# The requests ab counted, and the one the script sent to see the proxy up.
target/release/server-check "$OUT/model" scripts/servers/nginx-proxy.toml nginx-proxy \
    "$((complete + 1))" --names-out "$OUT/names.txt" || status=1
echo "== scalpel top =="
"$SCALPEL" top "$OUT/model" --limit 6 || status=1
exit $status
