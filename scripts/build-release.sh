#!/usr/bin/env bash
# The one release build every script runs: the agent, the `scalpel` binary, the samples and the
# test binaries (server-check, corpus-gen, mutate-traces, …), always as one set. Cargo resolves
# a dependency's features over the packages named on its command line, so two scripts naming
# different sets would each rebuild half the workspace (DataFusion among it) with the other's
# features; CI runs several of them one after another.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p scalpel-agent -p scalpel -p scalpel-samples -p scalpel-e2e
