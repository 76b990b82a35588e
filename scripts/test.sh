#!/usr/bin/env bash
# The test command: builds every crate (the end-to-end tests run the agent and the `scalpel`
# binary from the target directory), then runs all tests (the golden files in
# crates/scalpel/tests/golden/ among them: SCALPEL_BLESS=1 rewrites them), then the lints and the
# module-structure check that CI enforces.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --workspace --all-targets
# The optimized agent too: the tests of a host's timing under the agent use the one users run;
# and the samples, for the test that the README's example names what the demo prints.
cargo build --release -p scalpel-agent -p scalpel-samples
# Tests that cannot run here (no root, a library missing) append a line to not-run.txt.
rm -f target/debug/not-run.txt
# Clippy runs while the tests do: they wait on the programs they record and leave about 40% of
# the two cores idle, which clippy at the lowest priority takes. It has a target directory of
# its own: in target/debug it would hold the directory's lock for minutes, and `cargo test`
# waits for that lock before it runs anything (a check builds no artifact a test could use
# anyway). Its findings are printed, and fail the run, below.
CARGO_TARGET_DIR=target/clippy nice -n 19 cargo clippy --workspace --all-targets -- -D warnings \
    >target/clippy.log 2>&1 &
clippy_pid=$!
trap 'kill "$clippy_pid" 2>/dev/null || true' EXIT
cargo test --workspace
if [ -s target/debug/not-run.txt ]; then
    echo "== not run ($(wc -l < target/debug/not-run.txt) tests; each passed as a no-op) =="
    sort target/debug/not-run.txt
fi
cargo fmt --all -- --check
clippy=0
wait "$clippy_pid" || clippy=$?
trap - EXIT
if [ "$clippy" != 0 ]; then
    cat target/clippy.log
    echo "clippy: failed (exit $clippy)"
    exit 1
fi
# No import circles between the modules of any crate (Cargo keeps the crates' layering).
python3 scripts/check-modules.py
