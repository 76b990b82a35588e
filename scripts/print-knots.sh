#!/usr/bin/env bash
# Where the waiting ends (issue 26), for the real-server scripts: prints the knots of the
# wait-for graph of MODEL and the first one's edges, writes the HTML report into WORK and fails
# unless the report names a knot.
#
# Usage: scripts/print-knots.sh SCALPEL MODEL WORK
set -euo pipefail
SCALPEL=$1 MODEL=$2 WORK=$3
echo "== scalpel waitfor =="
"$SCALPEL" waitfor "$MODEL" >"$WORK/waitfor.txt"
grep '^Knot' "$WORK/waitfor.txt" | head -3 || true
sed -n '/^Knot 1:/,/^$/p' "$WORK/waitfor.txt" | grep -v '^        ' | head -12
"$SCALPEL" report "$MODEL" -o "$WORK/report.html" >/dev/null
grep -q '<h3>Knot 1: ' "$WORK/report.html" || { echo "FAIL: the report names no knot" >&2; exit 1; }
