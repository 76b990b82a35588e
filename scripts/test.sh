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
cargo test --workspace
if [ -s target/debug/not-run.txt ]; then
    echo "== not run ($(wc -l < target/debug/not-run.txt) tests; each passed as a no-op) =="
    sort target/debug/not-run.txt
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# No import circles between the modules of any crate (Cargo keeps the crates' layering).
python3 scripts/check-modules.py
