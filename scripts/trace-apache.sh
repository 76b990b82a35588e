#!/usr/bin/env bash
# Records Apache httpd (Debian's apache2, event MPM, on 127.0.0.1) under `scalpel record` while
# `ab -n 5000 -c 16` loads it, then checks that every request was served and that the trace shows
# the listener, the worker threads, condition variables, epoll or poll, socket reads and writes,
# and call stacks at the condvar and poll sites. RECORD_FLAGS adds `scalpel record` flags.
# Then `scalpel infer` builds the causal graph, and the type graph must show the listener's
# accept → queue push handing the connection to a worker (a hand-off edge, and a condvar edge
# when the worker waited), and the worker's read → process → writev chain fed by the client's
# bytes (TYPES_SVG, when set, gets a
# copy of the type graph drawn with --min-count 100). The task model must hold a task from the
# listener's push to the worker's read and writev, covering at least half the requests, and it
# must be the most frequent top-level task, at the top level for at least half the requests;
# its counts are printed against the requests (MODEL_SVG, when set, gets that task drawn with
# `--task`); `scripts/model-shares.py` fails under the targets of "one request, one task type"
# (95% of the requests, 90% of those top-level or in a session, at most 10 types for 95% of the
# leaves). Last, `scalpel top` prints the
# top-down view and the request task expanded.
#
# Usage: scripts/trace-apache.sh [TRACE_DIR]     (default: target/apache-trace)
# Needs root for apt-get when apache2/ab are missing; builds the workspace in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/apache-trace}
PORT=${PORT:-18080}
REQUESTS=${REQUESTS:-5000}
CONCURRENCY=${CONCURRENCY:-16}

if ! command -v apache2 >/dev/null && [ ! -x /usr/sbin/apache2 ] || ! command -v ab >/dev/null; then
    echo "installing apache2 and apache2-utils" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq apache2 apache2-utils >/dev/null
fi

cargo build --release -q -p scalpel-agent -p scalpel
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-apache.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/htdocs"
head -c 4096 /dev/urandom | base64 > "$WORK/htdocs/index.html"
MODS=/usr/lib/apache2/modules
RUN_AS=""
if [ "$(id -u)" = 0 ]; then RUN_AS=$'User www-data\nGroup www-data'; fi
cat > "$WORK/httpd.conf" <<CONF
ServerRoot "$WORK"
ServerName localhost
LoadModule mpm_event_module $MODS/mod_mpm_event.so
LoadModule authz_core_module $MODS/mod_authz_core.so
LoadModule mime_module $MODS/mod_mime.so
LoadModule dir_module $MODS/mod_dir.so
Listen 127.0.0.1:$PORT
PidFile "$WORK/httpd.pid"
ErrorLog "$WORK/error.log"
DocumentRoot "$WORK/htdocs"
TypesConfig /etc/mime.types
$RUN_AS
StartServers 2
ServerLimit 4
ThreadsPerChild 16
MaxRequestWorkers 64
KeepAlive Off
<Directory "$WORK/htdocs">
    Require all granted
</Directory>
CONF

chmod 755 "$WORK" "$WORK/htdocs"; chmod 644 "$WORK/htdocs/index.html"
rm -rf "$OUT"
"$SCALPEL" record -o "$OUT" ${RECORD_FLAGS:-} -- /usr/sbin/apache2 -f "$WORK/httpd.conf" -DFOREGROUND &
RECORD_PID=$!

for _ in $(seq 1 100); do
    if ab -q -n 1 "http://127.0.0.1:$PORT/index.html" >/dev/null 2>&1; then break; fi
    sleep 0.1
done

ab -n "$REQUESTS" -c "$CONCURRENCY" "http://127.0.0.1:$PORT/index.html" > "$WORK/ab.txt"
grep -E 'Complete requests|Failed requests|Requests per second' "$WORK/ab.txt"
kill -TERM "$(cat "$WORK/httpd.pid")"
wait "$RECORD_PID" || true

complete=$(awk '/Complete requests/ {print $3}' "$WORK/ab.txt")
failed=$(awk '/Failed requests/ {print $3}' "$WORK/ab.txt")
[ "$complete" = "$REQUESTS" ] && [ "$failed" = 0 ] || { echo "FAIL: $complete served, $failed failed" >&2; exit 1; }

"$SCALPEL" dump --summary "$OUT"
count() { "$SCALPEL" dump "$OUT" --op "$1" 2>/dev/null | grep -c " $1 " || true; }
status=0
# The trace is the recording user's alone, whoever the server's workers run as.
open_to_others=$(find "$OUT" -perm /o=rwx | wc -l)
echo "entries others may read, write or enter: $open_to_others"
[ "$open_to_others" = 0 ] || { echo "FAIL: $(find "$OUT" -perm /o=rwx | head -3)" >&2; status=1; }
for op in accept4 epoll_wait cond_wait cond_signal read writev; do
    n=$(count "$op")
    printf '%-12s %8d events\n' "$op" "$n"
    [ "$n" -gt 0 ] || { echo "FAIL: no $op events in the trace" >&2; status=1; }
done
# Stacks at the worker's condvar wait and the listener's poll: deeper than 3 frames, every frame
# inside a known module, and the condvar site named in httpd. Debian strips static functions
# (the event MPM's listener and worker loops, apr's epoll backend); those show as [+offset].
for op in cond_wait epoll_wait; do
    stack=$("$SCALPEL" dump "$OUT" --op "$op" --limit 1 2>/dev/null | awk '/^        at /')
    depth=$(printf '%s\n' "$stack" | grep -c '^        at ' || true)
    named=$(printf '%s\n' "$stack" | grep -cE '^        at (ap_|apr_)' || true)
    unknown=$(printf '%s\n' "$stack" | grep -c '^        at \[0x' || true)
    printf '%-12s stack of %d frames, %d named in httpd/apr, %d outside any module\n' \
        "$op" "$depth" "$named" "$unknown"
    if [ "$depth" -le 3 ] || [ "$unknown" -gt 0 ] || { [ "$op" = cond_wait ] && [ "$named" = 0 ]; }; then
        echo "FAIL: $op stack:" >&2; echo "$stack" >&2; status=1
    fi
done
# The causal graph and its leaf types.
"$SCALPEL" infer "$OUT" -o "$OUT/model" --min-count 100 --timings 2>"$WORK/timings.txt"
cat "$WORK/timings.txt" >&2
scripts/check-drawing-times.sh "$WORK/timings.txt" || status=1
DOT=$OUT/model/types.dot
# has_edge FROM TO STYLE: an edge between types whose labels contain FROM and TO, whose label
# contains STYLE.
has_edge() {
    awk -v from="$1" -v to="$2" -v want="$3" '
        /^  t[0-9]+ \[label=/ { id=$1; sub(/^[^"]*"/, ""); label[id]=$0; next }
        / -> / && index($0, want) {
            if (index(label[$1], from) && index(label[$3], to)) found=1
        }
        END { exit !found }' "$DOT"
}
check_edge() {
    if has_edge "$1" "$2" "$3"; then
        printf 'type graph: %s -> %s (%s)\n' "$1" "$2" "$3"
    else
        echo "FAIL: no $3 edge from a '$1' type to a '$2' type in $DOT" >&2; status=1
    fi
}
# Leaves that start where their thread went back for new work (after epoll_wait, the queue
# wait, or an accept that did not follow an epoll wait) are typed by their end alone: their
# labels read "- → op". The listener's accept after epoll_wait is part of the same fetch, so its
# push leaf reads "accept4 → cond_signal".
check_edge '- → accept4' 'accept4 → cond_signal' 'label="'
check_edge 'accept4 → cond_signal' '- → read' 'label="handoff ×'
check_edge 'accept4 → cond_signal' '- → read' 'label="cond ×'
check_edge '- → read' 'read → writev' 'label="'
check_edge 'read → writev' 'writev → ' 'label="'
grep -q 'external_source_tcp -> t[0-9]* \[label="stream' "$DOT" \
    || { echo "FAIL: the worker's reads are not fed by the clients' bytes" >&2; status=1; }
if [ -n "${TYPES_SVG:-}" ]; then cp "$OUT/model/types.svg" "$TYPES_SVG"; fi
# The task model: a task that serves a request, from the listener's push of the connection to
# the worker's read and writev. Count how many requests it stands for.
python3 - "$OUT/model" "$complete" "$WORK/request-task" <<'PY' || status=1
import json, sys
out, requests, name_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, "scripts")
import stored
model = stored.load(out, "model")
graph = stored.load(out, "graph")
types, leaves = graph["types"], graph["leaves"]
def role(l):
    t = types[leaves[l]["type"]]
    ops = (t["start"]["op"], t["end"]["op"])
    fns = " ".join(t["end"]["frames"])
    if ops[1] == "cond_signal" and "ap_queue_push_socket" in fns: return "push"
    if ops[1] == "read" and "ap_core_input_filter" in fns: return "read"
    if ops[1] == "writev" and "ap_core_output_filter" in fns: return "writev"
    return None
best = None
for i, t in enumerate(model["types"]):
    if t["kind"] != "group" or not t["occurrences"]:
        continue
    # Roles of the core: an occurrence with nothing added, when the type has variants (an
    # extra step, such as the listener's next push, is not what the task is).
    bare = next((k for k, v in enumerate(t.get("variants", [])) if not v["extra"]), None)
    core = [o for o in t["occurrences"] if o.get("variant") == bare] or t["occurrences"]
    roles = {role(l) for l in core[0]["leaves"]}
    if {"push", "read", "writev"} <= roles and (best is None or t["count"] > best[1]["count"]):
        best = (i, t)
if best is None:
    print("FAIL: no task holds the listener's push and the worker's read and writev", file=sys.stderr)
    sys.exit(1)
i, t = best
open(name_file, "w").write(t["name"])
share = t["count"] / requests
print(f"model: task {i} '{t['name']}' serves a request: {t['count']} occurrences "
      f"({share:.0%} of {requests} requests), level {t['level']}, "
      f"{t['top_level']} at the top level")
if share < 0.5:
    print("FAIL: the request task covers under half of the requests", file=sys.stderr)
    sys.exit(1)
# It is a top-level task, the most frequent one (single leaves left out of every task, such as
# the listener's return to epoll_wait, are not tasks).
groups = [k for k, x in enumerate(model["types"]) if x["kind"] == "group"]
top = max(groups, key=lambda k: (model["types"][k]["top_level"], -k))
if top != i or t["top_level"] < requests / 2:
    print(f"FAIL: the request task is {t['top_level']} times a top-level task; the most "
          f"frequent top-level task is '{model['types'][top]['name']}'", file=sys.stderr)
    sys.exit(1)
PY
# The figures of the "one request, one task type" issue (scripts/model-shares.py): the request
# task's share of the requests the load generator counted, how many are top-level or under a
# session, and how many types cover 95% of the leaves; the names of the types that hold 1% of
# the leaves go to $OUT/names.txt, and must equal SAME_NAMES's when it is set (a file another
# recording wrote).
python3 scripts/model-shares.py "$OUT/model" "$((complete + 1))" --name apache \
    --marker writev:ap_core_output_filter --needs accept4 --min-share 0.95 --min-top 0.9 --max-types 10 --names-out "$OUT/names.txt" \
    ${SAME_NAMES:+--same-names "$SAME_NAMES"} || status=1
if [ -n "${MODEL_SVG:-}" ] && [ -s "$WORK/request-task" ]; then
    "$SCALPEL" infer "$OUT" -o "$WORK/drawn" --task "$(cat "$WORK/request-task")" >/dev/null
    cp "$WORK/drawn/model.svg" "$MODEL_SVG"
fi
# The top-down view: the top-level tasks, and the request task expanded.
echo "== scalpel top =="
"$SCALPEL" top "$OUT/model" --limit 8 || status=1
if [ -s "$WORK/request-task" ]; then
    "$SCALPEL" top "$OUT/model" --expand "$(cat "$WORK/request-task")" --limit 6 || status=1
fi
# Where the waiting ends (issue 26): the knots, and the report naming the first.
scripts/print-knots.sh "$SCALPEL" "$OUT/model" "$WORK" || status=1
# With `RECORD_FLAGS=--sample 99` (as CI runs it): where the CPU went (issue 27), the five
# functions with the most on-CPU samples and the request task's wall-clock graph in Chromium.
if [[ " ${RECORD_FLAGS:-} " == *" --sample "* ]]; then
    echo "== on-CPU samples: the five busiest functions (self) =="
    "$SCALPEL" flame "$OUT/model" --on-cpu --folded | python3 -c '
import sys, collections
c = collections.Counter()
for line in sys.stdin:
    stack, n = line.rsplit(" ", 1)
    c[stack.rsplit(";", 1)[-1]] += int(n)
total = sum(c.values())
for f, n in c.most_common(5):
    print(f"{100 * n / total:6.1f}%  {f}")
print(f"{total} samples")' || status=1
    if [ -s "$WORK/request-task" ]; then
        "$SCALPEL" flame "$OUT/model" --wall --task "$(cat "$WORK/request-task")" \
            -o "$WORK/wall.svg" >/dev/null || status=1
        scripts/check-flame-svg.sh "$WORK/wall.svg" || status=1
    fi
fi
threads=$(find "$OUT" -name 't*.trace' | wc -l)
echo "thread files: $threads"
[ "$threads" -ge 16 ] || { echo "FAIL: expected the listener and worker threads" >&2; status=1; }
exit $status
