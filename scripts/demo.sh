#!/usr/bin/env bash
# The demo: the Scalpel paper's story on the bundled replicated-store sample. Builds Scalpel,
# records the sample in its async-RPC mode (the flow-control bug), infers the task model,
# prints the top-down view, and writes the SVG and the HTML report.
#
# Usage: scripts/demo.sh [OUT_DIR]     (default: target/demo)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/demo}
TRACE="$OUT/trace"
MODEL="$OUT/model"

if ! command -v dot >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "== installing Graphviz (for the SVG) =="
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null
    else
        echo "scalpel demo: Graphviz is missing, so there will be no SVG (the DOT file is still"
        echo "  written). Install it with: sudo apt-get install graphviz"
    fi
fi

echo "== building (release) =="
cargo build --release -q -p scalpel-agent -p scalpel-inferencer -p scalpel-samples
S=target/release/scalpel

echo "== recording replicated-store --rpc async (client, primary and backup processes) =="
rm -rf "$OUT"
mkdir -p "$OUT"
"$S" record -o "$TRACE" -- target/release/replicated-store --rpc async

echo
echo "== inferring the task model =="
"$S" infer "$TRACE" -o "$MODEL" >"$OUT/infer.txt"
sed -n '/^task model/,$p' "$OUT/infer.txt" | sed -n '1,20p'
echo "   (the whole tree: $MODEL/model-tree.txt)"

echo
echo "== top-down: the top-level tasks by total time =="
"$S" top "$MODEL" --limit 8
TOP=$("$S" top "$MODEL" --format csv --limit 1 | sed -n '2p' | python3 -c \
    'import csv,sys; print(next(csv.reader(sys.stdin))[1])' 2>/dev/null || true)
if [ -n "$TOP" ]; then
    echo
    echo "== top-down: the largest task, expanded =="
    "$S" top "$MODEL" --expand "$TOP" --limit 4
fi

echo
"$S" report "$MODEL" -o "$OUT/report.html"
echo
echo "The model:  $MODEL/model.svg (and model.json, model-tree.txt)"
echo "The report: $OUT/report.html"
