#!/usr/bin/env bash
# The test command: builds every crate (the end-to-end tests run the agent and the `scalpel`
# binary from the target directory), then runs all tests (the golden files in
# crates/scalpel/tests/golden/ among them: SCALPEL_BLESS=1 rewrites them), with clippy's lints
# (as errors) on every crate as it is built, then rustfmt and the module-structure check that CI
# enforces.
set -euo pipefail
cd "$(dirname "$0")/.."
# Clippy lints the workspace's crates while they are built for the tests: clippy-driver stands in
# for rustc on them, as `cargo clippy` has it, and still generates their code. Why not a
# `cargo clippy` after the tests: it checked every dependency again (DataFusion, Ballista …),
# which a build's artifacts cannot serve, 6 of CI's minutes. Dependencies are built by rustc as
# before; the same two variables must hold for `cargo test`, or it builds the crates again.
if ! command -v clippy-driver >/dev/null; then
    echo "test.sh: clippy-driver is missing: rustup component add clippy" >&2
    exit 1
fi
linted() {
    RUSTC_WORKSPACE_WRAPPER=clippy-driver \
        CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" "$@"
}
linted cargo build --workspace --all-targets
# The optimized agent too: the tests of a host's timing under the agent use the one users run;
# and the samples, for the test that the README's example names what the demo prints.
cargo build --release -p scalpel-agent -p scalpel-samples
# Tests that cannot run here (no root, a library missing) append a line to not-run.txt.
rm -f target/debug/not-run.txt
linted cargo test --workspace
if [ -s target/debug/not-run.txt ]; then
    echo "== not run ($(wc -l < target/debug/not-run.txt) tests; each passed as a no-op) =="
    sort target/debug/not-run.txt
fi
cargo fmt --all -- --check
# No import circles between the modules of any crate (Cargo keeps the crates' layering).
python3 scripts/check-modules.py
