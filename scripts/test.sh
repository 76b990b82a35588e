#!/usr/bin/env bash
# The test command: builds every crate (the end-to-end tests run the agent and the `scalpel`
# binary from the target directory), then runs all tests (the golden files in
# crates/scalpel/tests/golden/ among them: SCALPEL_BLESS=1 rewrites them), with clippy's lints
# (as errors) on every crate as it is built, then rustfmt and the module-structure check that CI
# enforces. The build is the release profile with debug assertions and overflow checks
# (scripts/checked-build.sh says why).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/checked-build.sh
source scripts/checked-build.sh
cargo build --release --workspace --all-targets
# Tests that cannot run here (no root, a library missing) append a line to not-run.txt.
rm -f target/release/not-run.txt
cargo test --release --workspace
if [ -s target/release/not-run.txt ]; then
    echo "== not run ($(wc -l < target/release/not-run.txt) tests; each passed as a no-op) =="
    sort target/release/not-run.txt
fi
cargo fmt --all -- --check
# No import circles between the modules of any crate (Cargo keeps the crates' layering).
python3 scripts/check-modules.py
