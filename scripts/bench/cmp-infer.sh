#!/usr/bin/env bash
# Compares two builds of `scalpel infer` in one run: each trace directory is inferred by OLD and
# NEW in turn, REPEAT times (default 3), alternating, into a fresh output directory; prints the
# median wall-clock seconds and peak memory of each, and their ratio. NEW also runs once with
# --timings, to show where its time goes.
#
# Usage: scripts/bench/cmp-infer.sh OLD/scalpel NEW/scalpel TRACE_DIR...
set -euo pipefail
OLD=$1; NEW=$2; shift 2
REPEAT=${REPEAT:-3}
W=$(mktemp -d /tmp/cmp-infer.XXXXXX); trap 'rm -rf "$W"' EXIT
# run BIN DIR: "seconds kilobytes" of one inference.
run() {
  rm -rf "$W/out"
  /usr/bin/time -f "%e %M" -o "$W/time" "$1" infer "$2" -o "$W/out" >/dev/null 2>&1 || true
  cat "$W/time"
}
median() { tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for dir in "$@"; do
  ot=(); om=(); nt=(); nm=()
  for _ in $(seq "$REPEAT"); do
    read -r t m < <(run "$OLD" "$dir"); ot+=("$t"); om+=("$m")
    read -r t m < <(run "$NEW" "$dir"); nt+=("$t"); nm+=("$m")
  done
  o=$(echo "${ot[@]}" | median); n=$(echo "${nt[@]}" | median)
  printf '%s: old %s s (%s MiB), new %s s (%s MiB), new/old %s\n' "$dir" \
    "$o" "$(( $(echo "${om[@]}" | median) / 1024 ))" \
    "$n" "$(( $(echo "${nm[@]}" | median) / 1024 ))" \
    "$(awk -v a="$n" -v b="$o" 'BEGIN { printf "%.3f", a / b }')"
  rm -rf "$W/out"
  "$NEW" infer "$dir" -o "$W/out" --timings 2>&1 >/dev/null | sed -n '/^timings:/,$p'
done
