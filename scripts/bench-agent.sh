#!/usr/bin/env bash
# Benchmarks the agent's added cost per intercepted event against the same loop without the
# agent, and against a naive recorder (one global mutex around a map of per-thread files, the
# baseline of the Scalpel paper), for 1, 2, 4 and 8 threads; then the added cost of call stacks
# 16 and 32 frames deep, with and without the stack cache; then the added cost of CPU times
# (`--cpu-time`, one clock_gettime system call per event); then the trace bytes per event.
#
# Costs are core-nanoseconds per event: wall time x min(threads, cores) / events, so they stay
# comparable when threads outnumber cores. Each repetition (REPEAT, default 7) runs the plain
# loop, the agent and the naive recorder back to back; medians over repetitions are printed.
# With valgrind installed, it also prints the instructions the agent adds per event.
#
# The `hot` section prints issue 25's figures: added core-ns per event, 1 and 2 threads, with
# stacks off, with the default stacks and with `--locks count`, beside the floor (a preloaded
# library that only reads the clock and stores a few bytes per call, scripts/bench/floor-shim.c),
# the agent named by
# AGENT_OLD (another build, to compare two versions in the same repetitions) and LTTng-UST's
# pthread wrapper under an `lttng` session (mutex loop; when lttng-tools and liblttng-ust1 are
# installed).
#
# The `relay` section is a server's many workers in miniature (agent-bench.c's relay mode): 64
# threads pass one token round a ring of pipes, and the one holding it locks and unlocks a
# mutex from 8 call sites at 8 stack depths, then passes it on: 18 events a turn, each thread's
# agent state as cold as the 63 other turns left it. Prints the turn's time untraced and the
# wall ns the agent adds per event (one thread runs at a time, so wall time is the cost).
#
# Usage: scripts/bench-agent.sh            (ITERS=200000 REPEAT=7 by default; RELAY_TURNS=1000)
#        SECTIONS="cpu bytes" scripts/bench-agent.sh   (some of: agent hot relay stacks cpu instr misses bytes)
#        AGENT_OLD=/tmp/old/libscalpel_agent.so SECTIONS=hot scripts/bench-agent.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ITERS=${ITERS:-200000}
REPEAT=${REPEAT:-7}
SECTIONS=${SECTIONS:-agent hot relay stacks cpu instr misses bytes}
RELAY_TURNS=${RELAY_TURNS:-1000}
AGENT_OLD=${AGENT_OLD:-}
LTTNG_WRAPPER=/usr/lib/x86_64-linux-gnu/liblttng-ust-pthread-wrapper.so.1
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
cargo build --release -q -p scalpel-agent -p scalpel
AGENT=$PWD/target/release/libscalpel_agent.so
SCALPEL=$PWD/target/release/scalpel
WORK=$(mktemp -d /tmp/scalpel-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
BENCH=$WORK/agent-bench
cc -O2 -fomit-frame-pointer -pthread -o "$BENCH" scripts/bench/agent-bench.c
FLOOR=$WORK/floor-shim.so
cc -O2 -fPIC -shared -o "$FLOOR" scripts/bench/floor-shim.c -ldl
CORES=$(nproc)

# The agent runs only under `scalpel record`, which hands it its files; its summary (stderr) is
# dropped, the benchmark's own line (stdout) kept.
rec() { SCALPEL_AGENT=$AGENT "$SCALPEL" record -o "$WORK/t" "$@" 2>/dev/null; }

# One timed run: prints wall ns.
run() {
    local mode=$1 threads=$2 kind=$3
    rm -rf "$WORK/t" && mkdir -p "$WORK/t"
    case $kind in
        base)  "$BENCH" "$mode" "$threads" "$ITERS" ;;
        # nostack:DEPTH — the agent with stacks off, events DEPTH frames deep (0 for the table).
        nostack:*) BENCH_DEPTH=${kind#nostack:} rec --stacks off -- "$BENCH" "$mode" "$threads" "$ITERS" ;;
        # cpu — the agent with stacks off and CPU times on.
        cpu) rec --cpu-time --stacks off -- "$BENCH" "$mode" "$threads" "$ITERS" ;;
        # stacks:DEPTH:CACHE — events DEPTH frames deep, that many frames recorded.
        stacks:*) IFS=: read -r _ d c <<< "$kind"
            BENCH_DEPTH=$d rec --stacks all --stack-depth "$d" --stack-cache "$c" -- \
                "$BENCH" "$mode" "$threads" "$ITERS" ;;
        naive) "$BENCH" "$mode" "$threads" "$ITERS" naive "$WORK/t" ;;
        # floor — the least a recorder must do (scripts/bench/floor-shim.c), preloaded alone.
        floor) LD_PRELOAD=$FLOOR "$BENCH" "$mode" "$threads" "$ITERS" ;;
        # count — the default stacks with uncontended mutex pairs counted (`--locks count`).
        count) rec --locks count -- "$BENCH" "$mode" "$threads" "$ITERS" ;;
        # default — the agent as `record` runs it by default (stacks all, 32 deep, cache on).
        default) rec -- "$BENCH" "$mode" "$threads" "$ITERS" ;;
        # old:nostack, old:default — the same with the agent at AGENT_OLD.
        old:nostack) SCALPEL_AGENT=$AGENT_OLD "$SCALPEL" record -o "$WORK/t" --stacks off -- \
            "$BENCH" "$mode" "$threads" "$ITERS" 2>/dev/null ;;
        old:default) SCALPEL_AGENT=$AGENT_OLD "$SCALPEL" record -o "$WORK/t" -- \
            "$BENCH" "$mode" "$threads" "$ITERS" 2>/dev/null ;;
        # lttng — LTTng-UST's pthread wrapper preloaded, the session `hot` made tracing only for
        # the run (its consumer daemon would otherwise take CPU from the other variants).
        lttng) lttng start >/dev/null 2>&1
            LD_PRELOAD=$LTTNG_WRAPPER "$BENCH" "$mode" "$threads" "$ITERS"
            lttng stop >/dev/null 2>&1 ;;
    esac | awk '{print $3}'
}

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# The three variants run back to back in every repetition, so each comparison is made within one
# moment of a noisy machine; the median over repetitions is reported.
if want agent; then
printf '%-6s %7s %10s %10s %10s %10s %12s\n' mode threads "base ns/ev" "agent +ns" "agent x" "naive +ns" "naive/agent"
for mode in mutex pipe; do
    for threads in 1 2 4 8; do
        used=$(( threads < CORES ? threads : CORES ))
        events=$(( threads * ITERS * 2 ))
        : > "$WORK/rows"
        for _ in $(seq 1 "$REPEAT"); do
            b=$(run "$mode" "$threads" base)
            a=$(run "$mode" "$threads" nostack:0)
            n=$(run "$mode" "$threads" naive)
            echo "$b $a $n" >> "$WORK/rows"
        done
        base=$(awk -v u="$used" -v e="$events" '{print $1 * u / e}' "$WORK/rows" | median)
        agent=$(awk -v u="$used" -v e="$events" '{print ($2 - $1) * u / e}' "$WORK/rows" | median)
        ratio=$(awk '{print $2 / $1}' "$WORK/rows" | median)
        naive=$(awk -v u="$used" -v e="$events" '{print ($3 - $1) * u / e}' "$WORK/rows" | median)
        vs=$(awk '{print ($3 - $1) / (($2 - $1) > 0 ? ($2 - $1) : 1)}' "$WORK/rows" | median)
        printf '%-6s %7d %10.1f %10.1f %10.2f %10.1f %12.1f\n' "$mode" "$threads" "$base" "$agent" "$ratio" "$naive" "$vs"
    done
done

fi

# Issue 25's figures: the added core-ns per event of the agent with stacks off and with the
# default stacks (and of AGENT_OLD and LTTng-UST when present), 1 and 2 threads, every variant
# in every repetition, medians over repetitions.
if want hot; then
echo
lttng_on=0
if [ -e "$LTTNG_WRAPPER" ] && command -v lttng >/dev/null; then
    lttng-sessiond --daemonize --quiet 2>/dev/null || true
    if lttng create scalpel-bench --output="$WORK/lttng" >/dev/null 2>&1 \
        && lttng enable-event -u 'lttng_ust_pthread:*' >/dev/null 2>&1; then
        lttng_on=1
    fi
fi
cols=(nostack:0 default count floor)
names=("off +ns" "default +ns" "count +ns" "floor +ns")
if [ -n "$AGENT_OLD" ]; then cols+=(old:nostack old:default); names+=("old off +ns" "old def +ns"); fi
if [ $lttng_on = 1 ]; then cols+=(lttng); names+=("lttng +ns" "lttng/off"); fi
echo "added core-ns per event: this agent with stacks off and default stacks${AGENT_OLD:+, the agent at AGENT_OLD}$([ $lttng_on = 1 ] && echo ', LTTng-UST pthread wrapper')"
header=$(printf '%-6s %7s %10s' mode threads "base ns/ev")
for n in "${names[@]}"; do header+=$(printf ' %12s' "$n"); done
echo "$header"
for mode in mutex pipe; do
    for threads in 1 2; do
        used=$(( threads < CORES ? threads : CORES ))
        events=$(( threads * ITERS * 2 ))
        : > "$WORK/hrows"
        for _ in $(seq 1 "$REPEAT"); do
            row=$(run "$mode" "$threads" base 2>/dev/null)
            for c in "${cols[@]}"; do
                if [ "$c" = lttng ] && [ "$mode" = pipe ]; then row+=" -"; continue; fi
                row+=" $(run "$mode" "$threads" "$c" 2>/dev/null)"
            done
            echo "$row" >> "$WORK/hrows"
        done
        line=$(printf '%-6s %7d %10.1f' "$mode" "$threads" \
            "$(awk -v u="$used" -v e="$events" '{print $1 * u / e}' "$WORK/hrows" | median)")
        for i in "${!cols[@]}"; do
            col=$((i + 2))
            if [ "${cols[$i]}" = lttng ] && [ "$mode" = pipe ]; then line+=$(printf ' %12s' -); continue; fi
            v=$(awk -v c="$col" -v u="$used" -v e="$events" '{print ($c - $1) * u / e}' "$WORK/hrows" | median)
            line+=$(printf ' %12.1f' "$v")
            if [ "${cols[$i]}" = lttng ]; then
                # LTTng-UST's added cost over ours (stacks off), per repetition, then the median.
                r=$(awk -v c="$col" '{d = $2 - $1; print ($c - $1) / (d > 0 ? d : 1)}' "$WORK/hrows" | median)
                line+=$(printf ' %12.2f' "$r")
            fi
        done
        if [ $lttng_on = 1 ] && [ "$mode" = pipe ]; then line+=$(printf ' %12s' -); fi
        echo "$line"
    done
done
if [ $lttng_on = 1 ]; then lttng destroy scalpel-bench >/dev/null 2>&1 || true; fi
fi

# A server's workers in miniature (see the top): wall ns added per event, 64 threads.
if want relay; then
echo
cols=(nostack:0 default count)
names=("off +ns" "default +ns" "count +ns")
if [ -n "$AGENT_OLD" ]; then cols+=(old:nostack old:default); names+=("old off +ns" "old def +ns"); fi
echo "relay: 64 threads, one token, 18 events a turn; wall ns added per event"
header=$(printf '%-6s %7s %12s' mode threads "base us/turn")
for n in "${names[@]}"; do header+=$(printf ' %12s' "$n"); done
echo "$header"
: > "$WORK/rrows"
for _ in $(seq 1 "$REPEAT"); do
    row=$(ITERS=$RELAY_TURNS run relay 64 base 2>/dev/null)
    for c in "${cols[@]}"; do row+=" $(ITERS=$RELAY_TURNS run relay 64 "$c" 2>/dev/null)"; done
    echo "$row" >> "$WORK/rrows"
done
turns=$(( 64 * RELAY_TURNS ))
events=$(( turns * 18 ))
line=$(printf '%-6s %7d %12.2f' relay 64 "$(awk -v t="$turns" '{print $1 / t / 1000}' "$WORK/rrows" | median)")
for i in "${!cols[@]}"; do
    col=$((i + 2))
    line+=$(printf ' %12.1f' "$(awk -v c="$col" -v e="$events" '{print ($c - $1) / e}' "$WORK/rrows" | median)")
done
echo "$line"
fi

# The added cost of call stacks: every event DEPTH frames deep with DEPTH frames recorded, with
# the stack cache off (a full DWARF walk per event) and on, against the agent with stacks off on
# the same deep workload. Same core-ns per event and within-repetition medians as above.
if want stacks; then
echo
echo "call stacks: added core-ns per event over the agent without stacks"
printf '%-6s %7s %12s %12s %12s %12s\n' mode threads "d16 walk" "d16 cached" "d32 walk" "d32 cached"
for mode in mutex pipe; do
    for threads in 1 2 4 8; do
        used=$(( threads < CORES ? threads : CORES ))
        events=$(( threads * ITERS * 2 ))
        : > "$WORK/srows"
        for _ in $(seq 1 "$REPEAT"); do
            row=""
            for d in 16 32; do
                n=$(run "$mode" "$threads" "nostack:$d")
                w=$(run "$mode" "$threads" "stacks:$d:off")
                c=$(run "$mode" "$threads" "stacks:$d:on")
                row="$row $((w - n)) $((c - n))"
            done
            echo "$row" >> "$WORK/srows"
        done
        cells=""
        for col in 1 2 3 4; do
            v=$(awk -v c="$col" -v u="$used" -v e="$events" '{print $c * u / e}' "$WORK/srows" | median)
            cells="$cells $(printf '%12.1f' "$v")"
        done
        printf '%-6s %7d%s\n' "$mode" "$threads" "$cells"
    done
done

fi

# The added cost of CPU times: the agent with stacks off, with and without `--cpu-time`.
if want cpu; then
echo
echo "CPU times: added core-ns per event over the agent without them (stacks off)"
printf '%-6s %7s %12s %12s\n' mode threads "agent +ns" "cpu-time +ns"
for mode in mutex pipe; do
    for threads in 1 2 4; do
        used=$(( threads < CORES ? threads : CORES ))
        events=$(( threads * ITERS * 2 ))
        : > "$WORK/crows"
        for _ in $(seq 1 "$REPEAT"); do
            b=$(run "$mode" "$threads" base)
            a=$(run "$mode" "$threads" nostack:0)
            c=$(run "$mode" "$threads" cpu)
            echo "$((a - b)) $((c - a))" >> "$WORK/crows"
        done
        agent=$(awk -v u="$used" -v e="$events" '{print $1 * u / e}' "$WORK/crows" | median)
        cpu=$(awk -v u="$used" -v e="$events" '{print $2 * u / e}' "$WORK/crows" | median)
        printf '%-6s %7d %12.1f %12.1f\n' "$mode" "$threads" "$agent" "$cpu"
    done
done
fi

# Instructions added per event (one thread), from callgrind: deterministic, unlike the timings.
# Two run lengths are measured so start-up costs cancel out.
if want instr && command -v valgrind >/dev/null; then
    count() {
        rm -rf "$WORK/t" && mkdir -p "$WORK/t"
        "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    }
    for mode in mutex pipe; do
        cg="valgrind --tool=callgrind --callgrind-out-file=/dev/null"
        b1=$(count $cg "$BENCH" "$mode" 1 20000); b2=$(count $cg "$BENCH" "$mode" 1 40000)
        a1=$(count "$SCALPEL" record -o "$WORK/t" --stacks off -- $cg "$BENCH" "$mode" 1 20000)
        a2=$(count "$SCALPEL" record -o "$WORK/t" --stacks off -- $cg "$BENCH" "$mode" 1 40000)
        awk -v m="$mode" -v b1="$b1" -v b2="$b2" -v a1="$a1" -v a2="$a2" 'BEGIN {
            printf "instructions added per event (%s): %.0f\n", m, ((a2 - a1) - (b2 - b1)) / 40000 }'
        for c in off on; do
            s1=$(count env BENCH_DEPTH=16 "$SCALPEL" record -o "$WORK/t" --stack-depth 16 --stack-cache "$c" -- $cg "$BENCH" "$mode" 1 20000)
            s2=$(count env BENCH_DEPTH=16 "$SCALPEL" record -o "$WORK/t" --stack-depth 16 --stack-cache "$c" -- $cg "$BENCH" "$mode" 1 40000)
            awk -v m="$mode" -v c="$c" -v a1="$a1" -v a2="$a2" -v s1="$s1" -v s2="$s2" 'BEGIN {
                printf "instructions added by depth-16 stacks per event (%s, cache %s): %.0f\n", m, c, ((s2 - s1) - (a2 - a1)) / 40000 }'
        done
    done
fi

# The relay's cache misses, simulated by cachegrind (one simulated cache; valgrind runs the
# threads one at a time): deterministic, unlike the relay's timings, which move by 10 ns an
# event between runs. What it cannot show is lines moving between cores. Per event added to
# the untraced relay: instructions, first-level data misses, last-level data misses. Two turn
# counts, so that start-up cancels out.
if want misses && command -v valgrind >/dev/null; then
    sim() {
        rm -rf "$WORK/t" && mkdir -p "$WORK/t"
        "$@" 2>&1 >/dev/null | awk '
            /I *refs:/ {gsub(",", "", $4); i = $4}
            /D1 *misses:/ {gsub(",", "", $4); d = $4}
            /LLd misses:/ {gsub(",", "", $4); l = $4}
            END {print i, d, l}'
    }
    cgs="valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null"
    variants=("untraced" "stacks off" "default")
    [ -n "$AGENT_OLD" ] && variants+=("old off" "old default")
    declare -A got=()
    for v in "${variants[@]}"; do
        for n in 100 200; do
            case $v in
                untraced) got[$v$n]=$(sim $cgs "$BENCH" relay 64 $n) ;;
                "stacks off") got[$v$n]=$(sim "$SCALPEL" record -o "$WORK/t" --stacks off -- $cgs "$BENCH" relay 64 $n) ;;
                default) got[$v$n]=$(sim "$SCALPEL" record -o "$WORK/t" -- $cgs "$BENCH" relay 64 $n) ;;
                "old off") got[$v$n]=$(SCALPEL_AGENT=$AGENT_OLD sim "$SCALPEL" record -o "$WORK/t" --stacks off -- $cgs "$BENCH" relay 64 $n) ;;
                "old default") got[$v$n]=$(SCALPEL_AGENT=$AGENT_OLD sim "$SCALPEL" record -o "$WORK/t" -- $cgs "$BENCH" relay 64 $n) ;;
            esac
        done
    done
    events=$(( 64 * 100 * 18 ))
    echo "relay under cachegrind, added per event: instructions, D1 misses, LL data misses"
    for v in "${variants[@]:1}"; do
        echo "${got[untraced100]} ${got[untraced200]} ${got[${v}100]} ${got[${v}200]}" | awk -v v="$v" -v e="$events" '{
            printf "%-12s %8.1f %8.2f %8.3f\n", v, (($10 - $7) - ($4 - $1)) / e, (($11 - $8) - ($5 - $2)) / e, (($12 - $9) - ($6 - $3)) / e }'
    done
fi

# Bytes per event, from a recorded run of each mode, with the default stacks and with CPU times,
# and the traced process's own page faults per trace page it wrote (issue 25: the recorder's
# faults, from reading the trace for its summary, are not the host's).
if want bytes; then
for mode in mutex pipe; do
    for flags in "" "--cpu-time"; do
        rm -rf "$WORK/rec"
        "$SCALPEL" record -o "$WORK/rec" $flags -- "$BENCH" "$mode" 4 "$ITERS" >/dev/null 2>"$WORK/summary"
        files=$(find "$WORK/rec" -name 't*.trace' | wc -l)
        bytes=$(find "$WORK/rec" -name 't*.trace' -printf '%s\n' | awk -v f="$files" '{s += $1} END {print s - f * 4096}')
        events=$(awk '/events:/ {print $2}' "$WORK/summary")
        faults=$(awk '/host minor faults:/ {print $4}' "$WORK/summary")
        awk -v m="$mode${flags:+ $flags}" -v b="$bytes" -v e="$events" -v f="$faults" 'BEGIN {
            printf "bytes per event (%s): %.2f  (%d events, %d bytes); host page faults per trace page written: %.2f (%d faults, %d pages)\n",
                m, b / e, e, b, f / (b / 4096), f, b / 4096 }'
    done
done
fi
