#!/usr/bin/env bash
# Records the golden trace corpus (tests/corpus/<case>/trace/): one small recording per sample
# program and per C program of tests/c that exercises a graph pass or a miner rule. See
# tests/corpus/README.md for what a case is.
#
#   scripts/record-corpus.sh            re-record every case
#   scripts/record-corpus.sh CASE...    re-record the cases named (e.g. `pipeline latch`)
#
# Each case is recorded with `scalpel record`, then readied by `corpus-scrub` (refuses a trace
# that lost events, makes module paths relative so that no file of this machine is needed,
# drops the sparse shared.tbl), and its command is written to `command.txt`. A recording
# differs from run to run (scheduling), so re-recording a case changes its golden files: bless
# them afterwards and review the diff:
#
#   SCALPEL_BLESS=1 cargo test -p scalpel-e2e --test corpus
#
# Needs a debug build of the workspace's binaries (this script builds them) and `cc`. Uses
# $CARGO_TARGET_DIR when set, else ./target.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
bin=$target/debug
corpus=$root/tests/corpus

cargo build -q -p scalpel --bin scalpel
cargo build -q -p scalpel-agent
cargo build -q -p scalpel-samples
cargo build -q -p scalpel-e2e --bin corpus-scrub --bin corpus-gen

cdir=$target/corpus-c
mkdir -p "$cdir"
c_prog() { # name [cflags]: compiles tests/c/<name>.c as the e2e tests do; prints its path
    # shellcheck disable=SC2086 # the flags are words
    cc -O1 -g -pthread -Wall ${2:-} -o "$cdir/$1" "$root/tests/c/$1.c"
    echo "$cdir/$1"
}

# case | program (sample name, c:<tests/c name>, gen:<seed> for the generated corpus's program
# of that seed, its server recorded under its load, or bin:<name> for a program of the system's
# PATH) | arguments | C flags (sizes: -DROUNDS=N)
# An argument @TEXT@ stands for a file of about 10.8 MB of text (8 MB of seeded random bytes in
# base64, as scripts/trace-xz.sh makes), for a compressor to work on.
# xz-blocks needs a recording in which the worker, woken to start a block, waited again for its
# input in some blocks and not in others, or took a block's pieces in different takes (before
# `round::pair_proposals` keyed hand-off links by kind alone, fewer than 95% of the blocks were
# one type; the kept one: 103 of 165 before, 162 after); recorded with two busy loops beside.
# gen-feeder's stored trace is seed 972's program as it was before the generator's `chunks`
# (session 57), a plain feeder on condition queues; seed 1352 draws that kind of program now.
# gen-peeled-pieces: a feeder that hands each request over in five pieces on an eventfd, read
# after a peeled first take (`weak`'s pieces' site passed over for the loop head: 0 before).
# An argument @STATIC@ stands for the same C program linked statically (`-static`), which the
# agent cannot record: a peer left out of the trace, as a load generator is.
# gen-late-worker needs a recording whose worker started after two hand-offs, so that its
# peeled first take never waited: record it while `yes >/dev/null` keeps both cores busy, and
# keep a recording whose graph.txt shows the worker's first leaf ending at a write.
# gen-woken-take needs a recording in which the serving stage both waited for room in the
# writer's queue and found its own queue empty: record it with three `yes >/dev/null` beside,
# and keep one that scores below 0.95 without the woken-take rule (about 1 run in 10).
# gen-commit-head likewise: a recording whose serving thread waited for a group commit before
# its first take waited (so the loop head's guess is the commit's wait), three `yes` beside.
# gen-futex-nowait needs a recording in which a worker's futex wait returned EAGAIN (`scalpel
# dump TRACE --op futex_wait` shows it; about 2 runs in 3).
# gen-reply-after-accept needs a recording that scores below 0.95 without the rule (the loop
# wrote a finished job's reply in the leaf that accepted a client; about 2 runs in 10).
# gen-lock-two-waited needs a recording in which only two of the four users of the global
# lock's condition were ever woken on it (graph.txt: its cond and queue edges reach two
# threads), with more than 10 types before `condlocks` took two woken as a lock (the kept one:
# 11); with the optimized agent and two `corpus-gen 1 57` side by side, about 1 run in 15.
cases() {
    cat <<'LIST'
pipeline|pipeline|40
fanout|fanout|20
handoff|handoff|--items 10
lowlock|lowlock|--items 60 --consumers 2
tasks-stages|tasks|stages --items 20
tasks-mixed|tasks|mixed --items 20
tasks-nested|tasks|nested --items 12
threadpool|threadpool|--workers 2 --connections 3 --requests 12
wakeups|wakeups|--items 20
workqueue|workqueue|30
replicated-store|replicated-store|--clients 1 --commits 20 --window 4 --value-size 512 --workers 2 --senders 2 --flow-sleep-ms 20
replicated-queue|replicated-store|--clients 2 --commits 40 --window 4 --value-size 512 --workers 4 --senders 4 --flow-sleep-ms 20
latch|c:latch||-DROUNDS=24
semlock|c:semlock||-DROUNDS=24
wakeonly|c:wakeonly|
turns|c:turns|
pshared|c:pshared|
ordering|c:ordering||-DROUNDS=60 -DBYTES=6000
variants|c:variants|
fetch|c:fetch|
robbed|c:robbed|
cancel|c:cancel|
forkexec|c:forkexec|
signals|c:corpus_signals|
futex|c:corpus_futex|
handoff-notify|c:corpus_handoffs|notify
handoff-broadcast|c:corpus_handoffs|broadcast
handoff-loop|c:corpus_handoffs|loop
sessions-loop|c:corpus_handoffs|loop @STATIC@|-DLOOP_CLIENTS=6 -DLOOP_REQS=4
sessions-threadpool|threadpool|--workers 2 --connections 6 --requests 24
tasks-mixed-60|tasks|mixed --items 60
pipeline-window|pipeline|40 --window 3
fanout-window|fanout|20 --window 2
fold-holds-core|c:knots|syncer . 240
gen-pipelined|gen:14|
gen-backpressure|gen:43|
gen-commit|gen:20|
gen-call|gen:1|
condlock|c:condlock|
condlock-forced|c:condlock|forced
gen-futex-queue|gen:17|
gen-eventfd-queue|gen:884327012|
gen-sem-queue|gen:887023002|
gen-forwarded|gen:884327022|
gen-room-between-pushes|gen:893100003|
gen-peeled|gen:42|
gen-pipelined-commit|gen:896200010|
gen-pipelined-call|gen:899300016|
gen-answered-apart|gen:12|
gen-pipe-readers|gen:7|
gen-pipe-requeue|gen:912700022|
gen-peeled-commit|gen:912700017|
gen-global-lock|gen:915000092|
gen-pipelined-lock|gen:189789000|
gen-idle-wakeup|gen:227|
gen-feeder|gen:1352|
gen-late-worker|gen:2|
gen-woken-take|gen:23|
gen-commit-head|gen:13|
gen-futex-nowait|gen:944000012|
gen-reply-after-accept|gen:944000012|
gen-lock-two-waited|gen:57|
gen-peeled-pieces|gen:517|
gen-idle-pipelined|gen:242|
gen-late-reader|gen:198700047|
gen-late-reader-sender|gen:209200007|
xz-blocks|bin:xz|-T2 --block-size=65536 -c @TEXT@
proxy|c:corpus_proxy|@STATIC@
pipelined-pool|c:corpus_pipelined_pool|@STATIC@
LIST
}

want=" $* "
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases | while IFS='|' read -r name prog args cflags; do
    if [ $# -gt 0 ] && [[ $want != *" $name "* ]]; then continue; fi
    case $prog in
        c:*)
            exe=$(c_prog "${prog#c:}" "$cflags")
            if [[ $args == *@STATIC@* ]]; then
                static=$(c_prog "${prog#c:}" "$cflags -static")
                mv "$static" "$static-static"
                args=${args//@STATIC@/$static-static}
                exe=$(c_prog "${prog#c:}" "$cflags")
            fi
            ;;
        gen:*) exe=gen-${prog#gen:} ;;
        bin:*) exe=$(command -v "${prog#bin:}") ;;
        *) exe=$bin/$prog ;;
    esac
    if [[ $args == *@TEXT@* ]]; then
        [ -f "$tmp/text" ] || python3 -c "import base64, random, sys
r = random.Random(49)
sys.stdout.buffer.write(base64.encodebytes(r.randbytes(8 * 1000 * 1000)))" >"$tmp/text"
        args=${args//@TEXT@/$tmp/text}
    fi
    echo "== $name: $(basename "$exe") $args"
    if [[ $prog == gen:* ]]; then
        "$bin/corpus-gen" 1 "${prog#gen:}" --keep "$tmp/gen" --scalpel "$bin/scalpel" \
            --min-share 0 --max-types 1000000 >"$tmp/$name.out" 2>&1 || {
            echo "recording $name failed:"; cat "$tmp/$name.out"; exit 1
        }
        mv "$tmp/gen/seed-${prog#gen:}/trace" "$tmp/$name"
        args="server (generated from seed ${prog#gen:} by tests/src/generated; load outside the trace)"
    else
        # shellcheck disable=SC2086 # the arguments are words
        (cd "$tmp" && "$bin/scalpel" record -o "$tmp/$name" -- "$exe" $args >"$tmp/$name.out" 2>&1) || {
            echo "recording $name failed:"; cat "$tmp/$name.out"; exit 1
        }
    fi
    "$bin/corpus-scrub" "$tmp/$name"
    rm -rf "${corpus:?}/$name/trace"
    mkdir -p "$corpus/$name"
    mv "$tmp/$name" "$corpus/$name/trace"
    args=${args//$tmp\/text/TEXT (scripts/record-corpus.sh)}
    echo "$(basename "$exe") ${args//$cdir\//}${cflags:+ (built with $cflags)}" >"$corpus/$name/command.txt"
    du -sh "$corpus/$name/trace"
done
