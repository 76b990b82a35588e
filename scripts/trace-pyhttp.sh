#!/usr/bin/env bash
# Records Python's ThreadingHTTPServer (scripts/servers/pyhttp.py: a thread per connection,
# HTTP/1.1 keep-alive, on 127.0.0.1) under `scalpel record` while `ab -k` loads it, then infers
# and holds the model to scripts/servers/pyhttp.toml (`server-check`): one request, one task.
# CPython's GIL (a mutex and a condition every thread signals and waits on) is found as a lock,
# so its hand-overs neither cut a request nor join two (docs/ARCHITECTURE.md, `condlocks`).
#
# Usage: scripts/trace-pyhttp.sh [TRACE_DIR]     (default: target/pyhttp-trace)
# Environment: REQUESTS (2000), CONCURRENCY (8), LOAD_SECONDS (60: ab's time limit), PORT.
# Needs Debian's python3 (/usr/bin/python3) and apache2-utils (installed with apt-get when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/pyhttp-trace}
PORT=${PORT:-18091}
REQUESTS=${REQUESTS:-2000}
CONCURRENCY=${CONCURRENCY:-8}

if [ ! -x /usr/bin/python3 ] || ! command -v ab >/dev/null; then
    echo "installing python3 and apache2-utils" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 apache2-utils >/dev/null
fi

scripts/build-release.sh
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-pyhttp.XXXXXX)
RECORD_PID=""
cleanup() {
    # Stopped by its PID file only, never by name.
    if [ -s "$WORK/server.pid" ]; then kill -TERM "$(cat "$WORK/server.pid")" 2>/dev/null || true; fi
    if [ -n "$RECORD_PID" ]; then wait "$RECORD_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
rm -rf "$OUT"
"$SCALPEL" record -o "$OUT" -- /usr/bin/python3 scripts/servers/pyhttp.py "$PORT" "$WORK/server.pid" &
RECORD_PID=$!

for _ in $(seq 1 100); do
    if ab -q -n 1 "http://127.0.0.1:$PORT/" >/dev/null 2>&1; then break; fi
    sleep 0.1
done
# Bounded in count and in time (-t caps the run at LOAD_SECONDS, 60 s unless set).
ab -k -t "${LOAD_SECONDS:-60}" -n "$REQUESTS" -c "$CONCURRENCY" "http://127.0.0.1:$PORT/" > "$WORK/ab.txt"
grep -E 'Complete requests|Failed requests|Requests per second' "$WORK/ab.txt"
kill -TERM "$(cat "$WORK/server.pid")"
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
# The requests ab counted, and the one it was started with.
target/release/server-check "$OUT/model" scripts/servers/pyhttp.toml pyhttp "$((complete + 1))" \
    --names-out "$OUT/names.txt" || status=1
echo "== scalpel top =="
"$SCALPEL" top "$OUT/model" --limit 8 || status=1
exit $status
