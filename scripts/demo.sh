#!/usr/bin/env bash
# The demo: builds Scalpel, records the bundled work-queue sample under the agent, and shows what
# the trace holds: the summary, then the first events of every thread merged by time, and the
# task model inferred from it (written to TRACE_DIR/model).
#
# Usage: scripts/demo.sh [TRACE_DIR]     (default: target/demo-trace)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/demo-trace}
cargo build --release -q -p scalpel-agent -p scalpel-inferencer -p scalpel-samples
rm -rf "$OUT"
target/release/scalpel record -o "$OUT" -- target/release/workqueue 200
echo
echo "== first 40 events, all threads merged by time =="
target/release/scalpel dump --merged --limit 40 "$OUT"
echo
echo "== the dispatcher's condition-variable traffic =="
target/release/scalpel dump "$OUT" --op cond_signal --op cond_wait --limit 10
echo
echo "== the task model (scalpel infer) =="
target/release/scalpel infer "$OUT" -o "$OUT/model" | sed -n '/^task model/,$p'
