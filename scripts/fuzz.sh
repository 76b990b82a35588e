#!/usr/bin/env bash
# cargo fuzz, for a fixed time per target: `decode` (one trace file's bytes through the decoder)
# and `infer` (a fresh recording of the thread-pool sample with one file replaced by the input,
# through what `scalpel dump`, `summary` and `infer` compute). libFuzzer stops a run at a panic,
# an abort, 2 GiB of memory or 10 s for one input. Inputs that failed are written under
# target/fuzz-failures/ (infer's as the trace directory they stand for, to keep in
# tests/regressions/ once fixed, where the test command replays every directory through the
# real `scalpel`; decode's as the file), and the script exits 1, as it does when a run fails
# without leaving an input.
# Installs cargo-fuzz when it is missing; when it cannot be installed, says "not run" and
# exits 0. The stable compiler builds the targets (RUSTC_BOOTSTRAP lets it take the flags
# cargo-fuzz passes), so no nightly toolchain is needed. No address sanitizer: the reader and the
# pipeline are safe Rust, and without it `infer` runs about twice as many inputs (2.4 a second
# here: each one symbolizes and mines a whole recording).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 120)
#        scripts/fuzz.sh --build-only   (installs cargo-fuzz and builds the targets, runs nothing;
#                                        .ci/run starts it early at the idle scheduling class)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-120}
BUILD_ONLY=0
if [ "$SECS" = --build-only ]; then
    BUILD_ONLY=1
elif ! [[ "$SECS" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET | --build-only]: '$SECS' is neither" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz =="
    if ! cargo install -q --locked cargo-fuzz; then
        echo "fuzz: not run: cargo-fuzz cannot be installed"
        exit 0
    fi
fi
# Only for cargo-fuzz's builds: the flags it passes are unstable ones. The test command's build
# settings (scripts/checked-build.sh; CI keeps them set) are not the fuzz build's: it has its own
# target directory and profile, and clippy has no say in it.
fuzz() {
    (cd fuzz && env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS \
        -u CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS -u CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS \
        RUSTC_BOOTSTRAP=1 cargo fuzz "$@")
}
echo "== building the fuzz targets =="
fuzz build -O -s none
if [ "$BUILD_ONLY" = 1 ]; then
    exit 0
fi
scripts/build-release.sh
R=$PWD/target/release
WORK=$(mktemp -d /tmp/scalpel-fuzz.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# Without its debug sections: symbolizing from them (decompressing DWARF for every input) took
# most of each `infer` input's time; the symbol table names the frames all the same.
cp "$R/threadpool" "$WORK/threadpool"
strip --strip-debug "$WORK/threadpool"
"$R/scalpel" record -o "$WORK/trace" -- "$WORK/threadpool" --connections 2 --requests 5 2>/dev/null
"$R/fuzz-input" seeds "$WORK/trace" "$WORK/corpus-infer"
# The decoder's seeds are the trace files themselves (an infer input is a file-picking byte and
# the file).
mkdir -p "$WORK/corpus-decode"
for f in "$WORK"/corpus-infer/*; do
    tail -c +2 "$f" >"$WORK/corpus-decode/$(basename "$f")"
done
rm -rf target/fuzz-failures
mkdir -p target/fuzz-failures
failed=0
# Each target runs in one process on one core, so the two run side by side: the same fuzzing
# time each, in half the wall time on CI's two cores.
run_target() {
    local target=$1 art="$WORK/artifacts-$1/"
    mkdir -p "$art"
    # -rss_limit_mb and -timeout: the bounds the mutation runs hold (2 GiB; 10 s is far past
    # the intact trace's time). libFuzzer's log is kept; its last lines are printed.
    local status=0
    SCALPEL_FUZZ_TRACE="$WORK/trace" fuzz run -O -s none "$target" "$WORK/corpus-$target" -- \
        -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$art" \
        -print_final_stats=1 >"$WORK/fuzz-$target.log" 2>&1 || status=$?
    echo "$status" >"$WORK/status-$target"
}
echo "== cargo fuzz run decode and infer, ${SECS} s each, side by side =="
run_target decode &
decode_pid=$!
run_target infer &
infer_pid=$!
wait "$decode_pid" "$infer_pid"
for target in decode infer; do
    echo "== cargo fuzz run $target =="
    art="$WORK/artifacts-$target/"
    status=$(cat "$WORK/status-$target" 2>/dev/null || echo "no status")
    grep -v '^#[0-9]' "$WORK/fuzz-$target.log" | tail -n 12 || true
    if [ "$status" != 0 ] && [ -z "$(ls -A "$art")" ]; then
        echo "fuzz: cargo fuzz run $target failed (exit $status) without a failing input"
        failed=1
    fi
    for a in "$art"*; do
        [ -e "$a" ] || continue
        failed=1
        name=$(basename "$a")
        echo "fuzz: $target failed on $name"
        if [ "$target" = infer ]; then
            "$R/fuzz-input" apply "$WORK/trace" "$a" "target/fuzz-failures/$target-$name"
        else
            cp "$a" "target/fuzz-failures/$target-$name"
        fi
    done
done
if [ "$failed" = 1 ]; then
    echo "fuzz: failing inputs in target/fuzz-failures/"
    exit 1
fi
echo "fuzz: decode and infer ran ${SECS} s each, no failure"
