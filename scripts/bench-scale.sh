#!/usr/bin/env bash
# How `scalpel infer` scales with the length of a recording: events per second, peak memory
# (VmHWM) and bytes of peak memory per event, for this build and a previous one, alternated in
# one run (this machine is noisy), on
#   - memcached recorded under memcaslap for MEMCACHED_SECONDS seconds (default 20; 0 skips it), by
#     scripts/trace-memcached.sh;
#   - nginx recorded under ab (keep-alive) for NGINX_SECONDS seconds (default 0: skipped), by
#     scripts/trace-nginx.sh;
#   - a synthetic trace of EVENTS events (default 0: skipped) written with `TraceWriter` in the
#     shape of a worker pool (`scalpel-bench-graph gen`, four threads a pipeline).
# Each trace is inferred REPEAT times (default 3) by each build, in turn; the medians are
# printed. The previous build is OLD (a `scalpel` binary) or, without it, the revision BASE
# (default HEAD~1) built in its own worktree and target directory under target/bench-base.
#
# Usage: [MEMCACHED_SECONDS=20] [NGINX_SECONDS=0] [EVENTS=0] [OLD=bin | BASE=rev] scripts/bench-scale.sh
# The traces are written to target/bench-scale/ and removed at the end (about 13 bytes a
# memcached event: 0.8 GB for 20 seconds) unless KEEP_TRACES=1.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_MC=${MEMCACHED_SECONDS:-20}
NGINX_SECONDS=${NGINX_SECONDS:-0}
EVENTS=${EVENTS:-0}
REPEAT=${REPEAT:-3}
# A memory limit: this build is also run with `infer --memory $MEMORY` (windows) in each turn.
MEMORY=${MEMORY:-}
BASE=${BASE:-HEAD~1}
WORK=target/bench-scale
mkdir -p "$WORK"
out=$(mktemp -d /tmp/bench-scale.XXXXXX)
cleanup() {
    rm -rf "$out"
    if [ "${KEEP_TRACES:-0}" != 1 ]; then rm -rf "$WORK/memcached" "$WORK/nginx" "$WORK/synthetic"; fi
}
trap cleanup EXIT

scripts/build-release.sh
cargo build --release -q -p scalpel --bin scalpel-bench-graph
NEW=$PWD/target/release/scalpel
if [ -z "${OLD:-}" ]; then
    rev=$(git rev-parse --verify "$BASE^{commit}")
    tree=$PWD/target/bench-base/tree
    if [ ! -e "$tree/.git" ]; then
        git worktree add --detach -f "$tree" "$rev" >/dev/null
    fi
    git -C "$tree" checkout -q --detach "$rev"
    echo "building the previous build ($BASE = ${rev:0:9}) in $tree" >&2
    (cd "$tree" && CARGO_TARGET_DIR=$PWD/../target cargo build --release -q -p scalpel)
    OLD=$PWD/target/bench-base/target/release/scalpel
fi

traces=()
if [ "$SECONDS_MC" != 0 ]; then
    SECONDS_LOAD=$SECONDS_MC scripts/trace-memcached.sh "$WORK/memcached" >"$WORK/memcached.log" 2>&1 \
        || echo "note: trace-memcached.sh's checks failed (see $WORK/memcached.log); the trace is used" >&2
    traces+=("$WORK/memcached")
fi
if [ "$NGINX_SECONDS" != 0 ]; then
    REQUESTS=100000000 LOAD_SECONDS=$NGINX_SECONDS scripts/trace-nginx.sh "$WORK/nginx" >"$WORK/nginx.log" 2>&1 \
        || echo "note: trace-nginx.sh's checks failed (see $WORK/nginx.log); the trace is used" >&2
    traces+=("$WORK/nginx")
fi
if [ "$EVENTS" != 0 ]; then
    rm -rf "$WORK/synthetic"
    target/release/scalpel-bench-graph gen "$WORK/synthetic" --events "$EVENTS"
    traces+=("$WORK/synthetic")
fi
[ ${#traces[@]} -gt 0 ] || { echo "nothing to measure: MEMCACHED_SECONDS, NGINX_SECONDS and EVENTS are all 0" >&2; exit 2; }

# run BIN DIR [ARGS…]: "seconds kilobytes" of one inference into a fresh directory.
run() {
    rm -rf "$out/model"
    /usr/bin/time -f "%e %M" -o "$out/time" "$1" infer "$2" -o "$out/model" "${@:3}" >/dev/null 2>"$out/err" || {
        echo "infer failed on $2 with $1:" >&2; cat "$out/err" >&2; exit 1
    }
    cat "$out/time"
}
median() { tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
report() { # name events seconds... / kilobytes...
    local name=$1 events=$2 t=$3 kb=$4
    awk -v n="$name" -v e="$events" -v t="$t" -v kb="$kb" 'BEGIN {
        printf "  %-18s %7.2f s  %6.2f M events/s  peak %7.1f MiB  %5.1f B/event\n",
            n, t, e / t / 1e6, kb / 1024, kb * 1024 / e }'
}
for dir in "${traces[@]}"; do
    events=$("$NEW" summary "$dir" | awk '$1 == "events:" { print $2 }')
    echo "$dir: $events events, $(du -sh "$dir" | cut -f1) on disk, $(nproc) cores, $REPEAT runs each, medians"
    ot=(); om=(); nt=(); nm=(); wt=(); wm=()
    for _ in $(seq "$REPEAT"); do
        read -r t m < <(run "$OLD" "$dir"); ot+=("$t"); om+=("$m")
        read -r t m < <(run "$NEW" "$dir"); nt+=("$t"); nm+=("$m")
        if [ -n "$MEMORY" ]; then
            read -r t m < <(run "$NEW" "$dir" --memory "$MEMORY"); wt+=("$t"); wm+=("$m")
        fi
    done
    report old "$events" "$(echo "${ot[@]}" | median)" "$(echo "${om[@]}" | median)"
    report new "$events" "$(echo "${nt[@]}" | median)" "$(echo "${nm[@]}" | median)"
    if [ -n "$MEMORY" ]; then
        report "new --memory $MEMORY" "$events" "$(echo "${wt[@]}" | median)" "$(echo "${wm[@]}" | median)"
    fi
done
