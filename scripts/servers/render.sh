#!/usr/bin/env bash
# Writes a server's configuration from its template in this directory: every @NAME@ replaced by
# the value given as NAME=VALUE (values must not contain `|`). Fails on a name left unreplaced.
#
# Usage: scripts/servers/render.sh TEMPLATE NAME=VALUE... > FILE
set -euo pipefail
template=$1; shift
args=()
for kv in "$@"; do
    args+=(-e "s|@${kv%%=*}@|${kv#*=}|g")
done
out=$(sed "${args[@]}" "$template")
if grep -q '@[A-Z_]*@' <<<"$out"; then
    echo "render.sh: $template: unreplaced $(grep -o '@[A-Z_]*@' <<<"$out" | sort -u | tr '\n' ' ')" >&2
    exit 1
fi
printf '%s\n' "$out"
