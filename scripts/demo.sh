#!/usr/bin/env bash
# The demo: the Scalpel paper's story on the bundled replicated-store sample. Builds Scalpel,
# records the sample in its async-RPC mode (the flow-control bug), infers the primary's task
# model, prints the top-down view from the commit task down to the flow-control sleep, and writes the SVG and the HTML report.
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
scripts/build-release.sh
S=target/release/scalpel

echo "== recording replicated-store --rpc async (client, primary and backup processes) =="
rm -rf "$OUT"
mkdir -p "$OUT"
SCALPEL_TRUTH="$OUT/truth.jsonl" "$S" record -o "$TRACE" -- target/release/replicated-store --rpc async
# The primary's pid, from the ground truth the sample writes (it names the process of every task).
PRIMARY=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    t = json.loads(l)
    if t.get("type") == "local_commit":
        print(t["pid"]); break' "$OUT/truth.jsonl")

echo
echo "== inferring the task model of the primary (pid $PRIMARY), as the paper's Figure 1 =="
"$S" infer "$TRACE" --include "pid:$PRIMARY" -o "$MODEL" >"$OUT/infer.txt"
sed -n '/^task model/,$p' "$OUT/infer.txt" | sed -n '1,20p'
echo "   (the whole tree: $MODEL/model-tree.txt)"

echo
echo "== top-down: the top-level tasks by summed latency =="
"$S" top "$MODEL" --limit 8
# Down from the commit task: the top-level task whose children hold the local commit (the
# async RPC to the backup and its send), then the local commit itself.
PATH_NAMES=$(python3 - "$S" "$MODEL" <<'PY' || true
import json, subprocess, sys
s, model = sys.argv[1], sys.argv[2]
def top(*extra):
    out = subprocess.run([s, "top", model, "--format", "json", *extra],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)
for t in top()["tasks"]:
    kids = top("--expand", t["name"])["expanded"]["children"]
    local = [c["task"]["name"] for c in kids if "rpc_async_call" in c["task"]["name"]]
    if local:
        print(t["name"]); print(local[0]); break
PY
)
if [ -n "$PATH_NAMES" ]; then
    COMMIT=$(echo "$PATH_NAMES" | sed -n 1p)
    LOCAL=$(echo "$PATH_NAMES" | sed -n 2p)
    echo
    echo "== top-down: the commit task, expanded =="
    "$S" top "$MODEL" --expand "$COMMIT" --limit 4
    echo
    echo "== top-down: its local commit (mutate, async RPC, send), expanded =="
    "$S" top "$MODEL" --expand "$LOCAL" --limit 4
fi

echo
"$S" report "$MODEL" -o "$OUT/report.html"
echo
echo "The model:  $MODEL/model.svg (and model.json, model-tree.txt)"
echo "The report: $OUT/report.html"
