#!/usr/bin/env bash
# The test command: builds every crate (the end-to-end tests run the agent and the `scalpel`
# binary from the target directory), then runs all tests, then the lints that CI enforces.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --workspace --all-targets
cargo test --workspace
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
