#!/usr/bin/env bash
# Reads the `--timings` lines `scalpel infer` wrote to FILE and fails (exit 1) if laying out a
# drawing took more than LIMIT seconds (default 5): issue 24's bound, kept on every real server.
#
# Usage: scripts/check-drawing-times.sh FILE [LIMIT]
set -euo pipefail
FILE=$1; LIMIT=${2:-5}
grep -q '^timings:' "$FILE" || { echo "FAIL: no --timings lines in $FILE" >&2; exit 1; }
awk -v limit="$LIMIT" '
  /^  laying out / {
    n++
    secs = 0
    for (i = 1; i < NF; i++) if ($(i + 1) == "s") secs = $i
    if (secs + 0 > limit) { print "FAIL: " $0 " (more than " limit " s)"; bad = 1 }
  }
  END {
    if (n == 0) { print "FAIL: no drawing was timed"; bad = 1 }
    exit bad
  }' "$FILE" >&2
