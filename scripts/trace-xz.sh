#!/usr/bin/env bash
# Records `xz -T2` (XZ Utils' threaded encoder: a main thread feeding blocks to two workers)
# under `scalpel record` while it compresses a generated text, then infers and holds the model to
# scripts/servers/xz.toml (`server-check`): one block, one task. The blocks are counted by
# `xz --list` on what it wrote.
#
# Usage: scripts/trace-xz.sh [TRACE_DIR]     (default: target/xz-trace)
# Environment: MEGABYTES (8: random bytes, base64-encoded, so about 10.8 MB of input),
# BLOCK (65536: xz's --block-size).
# Needs Debian's xz-utils and python3 (installed with apt-get when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/xz-trace}
MEGABYTES=${MEGABYTES:-8}
BLOCK=${BLOCK:-65536}

if ! command -v xz >/dev/null || [ ! -x /usr/bin/python3 ]; then
    echo "installing xz-utils and python3" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq xz-utils python3 >/dev/null
fi

scripts/build-release.sh
SCALPEL=$PWD/target/release/scalpel

WORK=$(mktemp -d /tmp/scalpel-xz.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# The same input on every run (a fixed seed).
/usr/bin/python3 -c "import base64, random, sys
r = random.Random(49)
sys.stdout.buffer.write(base64.encodebytes(r.randbytes($MEGABYTES * 1000 * 1000)))" > "$WORK/input.txt"
rm -rf "$OUT"
# Bounded: xz ends when its input does.
"$SCALPEL" record -o "$OUT" -- xz -T2 --block-size="$BLOCK" -c "$WORK/input.txt" > "$WORK/out.xz"
blocks=$(xz --robot --list "$WORK/out.xz" | awk '$1 == "totals" {print $3}')
echo "blocks written: $blocks"
status=0
open_to_others=$(find "$OUT" -perm /o=rwx | wc -l)
echo "entries others may read, write or enter: $open_to_others"
[ "$open_to_others" = 0 ] || { echo "FAIL: $(find "$OUT" -perm /o=rwx | head -3)" >&2; status=1; }
xz -dc "$WORK/out.xz" | cmp -s - "$WORK/input.txt" || { echo "FAIL: xz's output does not decompress to its input" >&2; status=1; }
"$SCALPEL" infer "$OUT" -o "$OUT/model" >/dev/null
target/release/server-check "$OUT/model" scripts/servers/xz.toml xz "$blocks" || status=1
echo "== scalpel top =="
"$SCALPEL" top "$OUT/model" --limit 6 || status=1
exit $status
