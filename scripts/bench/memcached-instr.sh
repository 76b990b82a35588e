#!/usr/bin/env bash
# What the agent executes inside a real server, counted rather than timed: memcached (4 workers)
# under callgrind, traced by each agent given (default: target/release/libscalpel_agent.so) and
# untraced, each serving a fixed number of `memcaslap` requests on 127.0.0.1. Prints per agent
# the events recorded, the instructions executed in the agent's own code per event and per
# request, and untraced memcached's user-space instructions per request for scale.
#
# Why: on this 2-core VM a server's throughput moves 5-10% between runs of one build, more than
# a change to the agent does, and there are no hardware counters (`perf stat -e cycles` reads
# nothing). Instruction counts do not move between runs of one build; they miss what cache
# misses cost, so they rank changes that cut work, not ones that move memory. callgrind runs
# one thread at a time, so memcached's LRU maintainer, whose work follows the clock, does more
# rounds than at full speed: compare builds by instructions per event, not per request.
#
# The agent's code is told apart by its sources: memcached, libevent and glibc are C, so every
# instruction attributed to a Rust source file (the agent's crates, Rust's core library, the
# crates it uses) is the agent's.
#
# Usage: scripts/bench/memcached-instr.sh [AGENT.so ...]     (REQUESTS, default 20000)
# Needs valgrind, memcached and libmemcached-tools; run as root (memcached runs as nobody).
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in valgrind callgrind_annotate memcached memcaslap memcstat setpriv; do
    command -v "$tool" >/dev/null || { echo "memcached-instr: $tool is missing" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "memcached-instr: run as root (memcached is run as nobody)" >&2; exit 2; }
REQUESTS=${REQUESTS:-20000}
cargo build --release -q -p scalpel-agent -p scalpel
SCALPEL=$PWD/target/release/scalpel
AGENTS=("$@"); [ ${#AGENTS[@]} -gt 0 ] || AGENTS=("$PWD/target/release/libscalpel_agent.so")
for a in "${AGENTS[@]}"; do [ -f "$a" ] || { echo "memcached-instr: no agent at $a" >&2; exit 2; }; done
WORK=$(mktemp -d /tmp/scalpel-mcinstr.XXXXXX)
PID_FILE=""
RUN_PID=""
cleanup() {
    # The server is stopped by its PID file only.
    if [ -n "$PID_FILE" ] && [ -s "$PID_FILE" ]; then kill -TERM "$(cat "$PID_FILE")" 2>/dev/null || true; fi
    if [ -n "$RUN_PID" ]; then wait "$RUN_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
chmod 755 "$WORK"
PORT=18411
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

# One run in $WORK/run (AGENT: an agent's path, or "none"); sets nothing, leaves cg.out, load.txt
# and the trace there. memcached's -c is valgrind's own descriptor limit: memcached sets its
# file limit to its connection count, and valgrind refuses any other hard limit than its own.
run() {
    local agent=$1 dir=$WORK/run
    rm -rf "$dir"; mkdir -p "$dir"; chown nobody "$dir"
    PID_FILE=$dir/pid
    local limit; limit=$(valgrind --tool=none sh -c 'ulimit -Hn' 2>/dev/null)
    local server=(valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out"
        /usr/bin/memcached -U 0 -l 127.0.0.1 -p $PORT -t 4 -c "$limit" -P "$PID_FILE")
    if [ "$agent" = none ]; then
        "${as_nobody[@]}" "${server[@]}" > "$dir/server.txt" 2>&1 &
    else
        SCALPEL_AGENT=$agent "${as_nobody[@]}" "$SCALPEL" record -o "$dir/trace" -- "${server[@]}" \
            > "$dir/server.txt" 2>&1 &
    fi
    RUN_PID=$!
    for _ in $(seq 1 300); do
        if [ -s "$PID_FILE" ] && memcstat --servers="127.0.0.1:$PORT" >/dev/null 2>&1; then break; fi
        sleep 0.1
    done
    timeout 600 memcaslap -s "127.0.0.1:$PORT" -x "$REQUESTS" -c 4 -T 1 > "$dir/load.txt" 2>&1
    kill -TERM "$(cat "$PID_FILE")"
    wait "$RUN_PID" || true
    RUN_PID=""
    PID_FILE=""
    grep -q "^Run time" "$dir/load.txt" || { echo "memcached-instr: memcaslap failed:" >&2; cat "$dir/load.txt" >&2; exit 1; }
    [ -s "$dir/cg.out" ] || { echo "memcached-instr: no callgrind output:" >&2; tail "$dir/server.txt" >&2; exit 1; }
}

# Instructions in the function table of $WORK/run/cg.out: "total agent".
instructions() {
    callgrind_annotate --inclusive=no --threshold=100 --auto=no "$WORK/run/cg.out" \
        | sed -n '/file:function/,/^$/p' \
        | awk '{gsub(",", "", $1)} $1 ~ /^[0-9]+$/ {
            t += $1; if ($0 ~ / (tracer-agent|format)\/|\/rustc\/|\.cargo\/registry/) a += $1 }
            END {printf "%.0f %.0f\n", t, a}'
}

run none
read -r base _ <<< "$(instructions)"
printf '%-44s %10s %12s %12s\n' agent events "instr/event" "instr/req"
for a in "${AGENTS[@]}"; do
    run "$a"
    read -r _ agent <<< "$(instructions)"
    events=$("$SCALPEL" summary "$WORK/run/trace" | awk '/^ *events:/ {print $2}')
    awk -v n="$a" -v e="$events" -v i="$agent" -v r="$REQUESTS" \
        'BEGIN {printf "%-44s %10d %12.1f %12.0f\n", n, e, i / e, i / r}'
done
awk -v b="$base" -v r="$REQUESTS" 'BEGIN {printf "untraced memcached: %.0f user-space instructions per request (start-up included)\n", b / r}'
