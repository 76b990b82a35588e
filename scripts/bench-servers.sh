#!/usr/bin/env bash
# What recording costs real servers: memcached under `memcaslap`, nginx under `ab -k` and Apache
# under `ab -k`, each run untraced and under `scalpel record` in alternation (PAIRS pairs per
# server, default 3; the order within a pair rotates), on 127.0.0.1. Prints each run's
# throughput and the CPU time the server (every process of it, and the recorder) used per
# request, then per server the medians, the traced/untraced ratios of the medians, the median
# of each pair's own ratio and the ratio of the best runs, and fails if a request failed. Throughput is what the issue's targets
# are about, but on a 2-core machine it moves with the load generator's share of the CPUs (two
# runs of the same agent differed by 10%); CPU time per request is the agent's own cost, steadier.
#
# With AGENT_OLD (another build of the agent), each repetition also runs the server under that
# agent, so two versions are compared in the same run; OLD_FLAGS, when set, replaces
# RECORD_FLAGS for it (the same agent with two sets of flags: AGENT_OLD=target/release/
# libscalpel_agent.so RECORD_FLAGS="--locks count" OLD_FLAGS="").
#
# With PIN=1 the server runs on CPU 0 and the load generator on CPU 1 (`taskset`): the server is
# then bound by its one core, and the traced/untraced ratio follows its CPU time per request.
# Unpinned, memcached uses 1.1-1.2 of the two cores and the generator the rest, so part of the
# agent's cost comes out of the generator's share instead of the server's throughput.
#
# Usage: scripts/bench-servers.sh                 (PAIRS=3, SERVERS="memcached nginx apache")
#        PIN=1 SERVERS=memcached scripts/bench-servers.sh
#        RECORD_FLAGS="--stacks off" scripts/bench-servers.sh
#        AGENT_OLD=/tmp/old/libscalpel_agent.so SERVERS=memcached scripts/bench-servers.sh
# Needs memcached, libmemcached-tools, nginx-light, apache2, apache2-utils and time.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-3}
SERVERS=${SERVERS:-memcached nginx apache}
APACHE_REQUESTS=${APACHE_REQUESTS:-100000}
NGINX_REQUESTS=${NGINX_REQUESTS:-100000}
MEMCACHED_SECONDS=${MEMCACHED_SECONDS:-5}
AGENT_OLD=${AGENT_OLD:-}
MODES="untraced traced"; [ -n "$AGENT_OLD" ] && MODES="untraced traced old"
[ -x /usr/bin/time ] || { echo "bench-servers: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
SERVER_CPU=(); LOAD_CPU=()
if [ "${PIN:-0}" = 1 ]; then
    command -v taskset >/dev/null || { echo "bench-servers: PIN=1 needs taskset (util-linux)" >&2; exit 2; }
    [ "$(nproc)" -ge 2 ] || { echo "bench-servers: PIN=1 needs two CPUs, this machine has $(nproc)" >&2; exit 2; }
    SERVER_CPU=(taskset -c 0); LOAD_CPU=(taskset -c 1)
fi
cargo build --release -q -p scalpel-agent -p scalpel
SCALPEL=$PWD/target/release/scalpel
WORK=$(mktemp -d /tmp/scalpel-servers.XXXXXX)
SERVER_PID_FILE=""
RECORD_PID=""
cleanup() {
    # Servers are stopped by their PID files only, never by name.
    if [ -n "$SERVER_PID_FILE" ] && [ -s "$SERVER_PID_FILE" ]; then
        kill -TERM "$(cat "$SERVER_PID_FILE")" 2>/dev/null || true
    fi
    if [ -n "$RECORD_PID" ]; then wait "$RECORD_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
chmod 755 "$WORK"
ROOT=0; [ "$(id -u)" = 0 ] && ROOT=1

mkdir -p "$WORK/htdocs"
head -c 18000 /dev/urandom | base64 > "$WORK/htdocs/index.html"
chmod 755 "$WORK/htdocs"; chmod 644 "$WORK/htdocs/index.html"
[ $ROOT = 1 ] && chown nobody "$WORK"

# Runs CMD... untraced, traced, or traced by AGENT_OLD (MODE: untraced, traced, old), in the
# background under /usr/bin/time, which writes the CPU seconds of the server's processes (user,
# system) to $WORK/cpu; sets RECORD_PID. Traced, time runs under the recorder, so that the
# recorder's own work after the server exits (its summary decodes the whole trace: 0.6 s after
# a 5 s memcached run) is not counted.
launch() {
    local mode=$1; shift
    rm -f "$WORK/cpu"
    local timed=(/usr/bin/time -o "$WORK/cpu" -f "%U %S")
    if [ "$mode" = traced ] || [ "$mode" = old ]; then
        rm -rf "$WORK/trace"
        local agent=$PWD/target/release/libscalpel_agent.so flags=${RECORD_FLAGS:-}
        if [ "$mode" = old ]; then agent=$AGENT_OLD; flags=${OLD_FLAGS-$flags}; fi
        # shellcheck disable=SC2086 # the flags are words
        SCALPEL_AGENT=$agent "$SCALPEL" record -o "$WORK/trace" $flags -- "${timed[@]}" "${SERVER_CPU[@]}" "$@" 2>/dev/null &
        RECORD_PID=$!
    else
        "${timed[@]}" "${SERVER_CPU[@]}" "$@" &
        RECORD_PID=$!
    fi
}

# Microseconds of CPU per request: the last run's CPU seconds (see `launch`) over $1 requests.
cpu_per_request() {
    tail -1 "$WORK/cpu" | awk -v n="$1" '{printf "%.1f", ($1 + $2) * 1e6 / n}'
}

# Stops the server by its PID file and waits for it (and the recorder).
stop() {
    kill -TERM "$(cat "$SERVER_PID_FILE")"
    wait "$RECORD_PID" 2>/dev/null || true
    RECORD_PID=""
    rm -f "$SERVER_PID_FILE"
}

wait_http() {
    for _ in $(seq 1 100); do
        if ab -q -n 1 "http://127.0.0.1:$1/index.html" >/dev/null 2>&1; then return; fi
        sleep 0.1
    done
}

# One ab run: prints requests per second. A failed request is reported with ab's own account of
# it (connect, receive, length or exception) and marked in $WORK/failed; the run still counts.
ab_load() {
    local port=$1 n=$2
    timeout 300 "${LOAD_CPU[@]}" ab -k -n "$n" -c 16 "http://127.0.0.1:$port/index.html" > "$WORK/ab.txt" 2>&1
    local failed
    failed=$(awk '/Failed requests/ {print $3}' "$WORK/ab.txt")
    if [ "$failed" != 0 ]; then
        echo "FAIL: $failed failed requests: $(grep -A1 'Failed requests' "$WORK/ab.txt" | tail -1 | xargs)" >&2
        echo "$failed" >> "$WORK/failed"
    fi
    awk '/Requests per second/ {print $4}' "$WORK/ab.txt"
}

run_memcached() {
    local mode=$1 port=18311
    SERVER_PID_FILE=$WORK/memcached.pid
    local user=(); [ $ROOT = 1 ] && user=(-u nobody)
    launch "$mode" /usr/bin/memcached -U 0 -l 127.0.0.1 -p $port -t 4 "${user[@]}" -P "$SERVER_PID_FILE"
    for _ in $(seq 1 100); do
        if [ -s "$SERVER_PID_FILE" ] && memcstat --servers="127.0.0.1:$port" >/dev/null 2>&1; then break; fi
        sleep 0.1
    done
    timeout 120 "${LOAD_CPU[@]}" memcaslap -s "127.0.0.1:$port" -t "${MEMCACHED_SECONDS}s" -c 16 -T 2 > "$WORK/load.txt" 2>&1
    stop
    local tps ops
    tps=$(awk '/^Run time/ {for (i = 1; i <= NF; i++) if ($i == "TPS:") print $(i + 1)}' "$WORK/load.txt" | tail -1)
    ops=$(awk '/^Run time/ {for (i = 1; i <= NF; i++) if ($i == "Ops:") print $(i + 1)}' "$WORK/load.txt" | tail -1)
    [ -n "$tps" ] && [ -n "$ops" ] && echo "$tps $(cpu_per_request "$ops")"
}

run_nginx() {
    local mode=$1 port=18390
    SERVER_PID_FILE=$WORK/nginx.pid
    local user=""; [ $ROOT = 1 ] && user="user www-data;"
    scripts/servers/render.sh scripts/servers/nginx.conf WORK="$WORK" PORT="$port" USER_LINE="$user" \
        > "$WORK/nginx.conf"
    launch "$mode" /usr/sbin/nginx -c "$WORK/nginx.conf" -e "$WORK/nginx-error.log"
    wait_http $port
    local rps; rps=$(ab_load $port "$NGINX_REQUESTS")
    stop
    [ -n "$rps" ] && echo "$rps $(cpu_per_request "$NGINX_REQUESTS")"
}

run_apache() {
    local mode=$1 port=18380
    SERVER_PID_FILE=$WORK/httpd.pid
    # A literal \n: render.sh's sed makes it a line break.
    local run_as=""; [ $ROOT = 1 ] && run_as='User www-data\nGroup www-data'
    # 32 workers per child, twice ab's 16 connections (see the template). Untraced runs failed
    # a request with 16 too (1 run in 24); a traced worker's longer way back to idle only made
    # it likelier.
    scripts/servers/render.sh scripts/servers/apache.conf WORK="$WORK" PORT="$port" RUN_AS="$run_as" \
        THREADS=32 WORKERS=128 KEEPALIVE=On > "$WORK/httpd.conf"
    launch "$mode" /usr/sbin/apache2 -f "$WORK/httpd.conf" -DFOREGROUND
    wait_http $port
    local rps; rps=$(ab_load $port "$APACHE_REQUESTS")
    stop
    [ -n "$rps" ] && echo "$rps $(cpu_per_request "$APACHE_REQUESTS")"
}

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
summary=""
for server in $SERVERS; do
    for mode in $MODES; do : > "$WORK/$mode"; : > "$WORK/$mode.cpu"; done
    : > "$WORK/pairs"
    read -r -a modes <<< "$MODES"
    for pair in $(seq "$PAIRS"); do
        # The order rotates from pair to pair: run one after the other, the same build twice
        # came out 2-5% apart in 7 pairs of 9, the later one faster.
        declare -A got=()
        for k in "${!modes[@]}"; do
            mode=${modes[$(( (k + pair - 1) % ${#modes[@]} ))]}
            v=$("run_$server" "$mode")
            if [ -z "$v" ]; then echo "FAIL: no throughput from $server ($mode)" >&2; echo 1 >> "$WORK/failed"; got[$mode]=-; continue; fi
            read -r rate cpu <<< "$v"
            echo "$server pair $pair $mode: $rate per s, $cpu us CPU per request"
            echo "$rate" >> "$WORK/$mode"
            echo "$cpu" >> "$WORK/$mode.cpu"
            got[$mode]=$rate
        done
        row=""
        for mode in "${modes[@]}"; do row+=" ${got[$mode]}"; done
        [[ "$row" != *" -"* ]] && echo "$row" >> "$WORK/pairs"
        unset got
    done
    u=$(median < "$WORK/untraced"); t=$(median < "$WORK/traced")
    uc=$(median < "$WORK/untraced.cpu"); tc=$(median < "$WORK/traced.cpu")
    line=$(printf '%-10s %12.1f %12.1f %8s %9.1f %9.1f %8s' "$server" "$u" "$t" "$(ratio "$t" "$u")" \
        "$uc" "$tc" "$(ratio "$tc" "$uc")")
    if [ -n "$AGENT_OLD" ]; then
        o=$(median < "$WORK/old"); oc=$(median < "$WORK/old.cpu")
        line+=$(printf ' %12.1f %8s %9.1f %8s' "$o" "$(ratio "$o" "$u")" "$oc" "$(ratio "$oc" "$uc")")
    fi
    # The median of each pair's own ratio: the machine's speed drifts between pairs (untraced
    # runs of one server moved 20% within one run here), and a ratio taken within a pair, of
    # runs made a minute apart, leaves most of that drift out.
    line+=$(printf ' %10s' "$(awk '{printf "%.4f\n", $2 / $1}' "$WORK/pairs" | median)")
    if [ -n "$AGENT_OLD" ]; then
        line+=$(printf ' %10s' "$(awk '{printf "%.4f\n", $3 / $1}' "$WORK/pairs" | median)")
    fi
    # The ratio of each variant's best run: what slows a run here is mostly the host (other
    # guests on the same cores), which only ever takes throughput away, so a variant's fastest
    # run is the nearest to its own speed. Printed beside the medians, never instead of them.
    best() { sort -n | tail -1; }
    line+=$(printf ' %10s' "$(ratio "$(best < "$WORK/traced")" "$(best < "$WORK/untraced")")")
    if [ -n "$AGENT_OLD" ]; then
        line+=$(printf ' %10s' "$(ratio "$(best < "$WORK/old")" "$(best < "$WORK/untraced")")")
    fi
    summary+=$line$'\n'
done
header=$(printf '%-10s %12s %12s %8s %9s %9s %8s' server "untraced/s" "traced/s" ratio \
    "cpu us" "traced" "ratio")
[ -n "$AGENT_OLD" ] && header+=$(printf ' %12s %8s %9s %8s' "old/s" "ratio" "old us" "ratio")
header+=$(printf ' %10s' "pair ratio")
[ -n "$AGENT_OLD" ] && header+=$(printf ' %10s' "old pair")
header+=$(printf ' %10s' "best ratio")
[ -n "$AGENT_OLD" ] && header+=$(printf ' %10s' "old best")
echo "(cpu us: microseconds of the server's CPU per request, untraced and traced; pair ratio: the median over pairs of traced/untraced throughput within the pair; best ratio: traced's fastest run over untraced's)"
echo "$header"
printf '%s' "$summary"
if [ -s "$WORK/failed" ]; then
    echo "FAIL: runs with failed requests: $(wc -l < "$WORK/failed")" >&2
    exit 1
fi
