#!/usr/bin/env bash
# The one release build every script runs: the whole workspace (the agent, the `scalpel` binary,
# the samples, the test binaries such as server-check, corpus-gen and mutate-traces, and the
# Ballista node), always as one set. Cargo resolves a dependency's features over the packages
# named on its command line, so two scripts naming different sets would each rebuild part of the
# workspace (DataFusion among it) with the other's features. The whole workspace is also the set
# the test command builds (its tests add no feature), so in CI, where the test build's settings
# stay exported (scripts/checked-build.sh), every script finds its binaries built.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q --workspace
