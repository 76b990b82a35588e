#!/usr/bin/env bash
# The replicated-store sample on three machines, made on this one: the client, the primary and
# the backup each in a network namespace of its own (veth links, addresses 10.201.0.0/24 and
# 10.202.0.0/24), the client's monotonic clock 1,000 s ahead and the backup's 3 s behind (time
# namespaces). Each is recorded into a directory of its own, as on real machines, and inferred
# once; prints the clock each machine was given against the truth, then the primary's model and
# the top-down view of the whole. Needs root, iproute2 and util-linux (unshare).
# The checks are in tests/tests/hosts.rs, which CI runs with SCALPEL_HOSTS_REQUIRED=1.
# Usage: scripts/demo-hosts.sh [OUT]     (default target/demo-hosts)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "demo-hosts: needs root (network and time namespaces)" >&2
    exit 2
fi
for tool in ip unshare; do
    command -v "$tool" >/dev/null || { echo "demo-hosts: needs $tool (apt-get install iproute2 util-linux)" >&2; exit 2; }
done
OUT=${1:-target/demo-hosts}
scripts/build-release.sh
S=$PWD/target/release/scalpel
STORE=$PWD/target/release/replicated-store
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

TAG=$$
NS=(sd${TAG}pri sd${TAG}cli sd${TAG}bak)
cleanup() {
    for n in "${NS[@]}"; do ip netns del "$n" 2>/dev/null || true; done
}
trap cleanup EXIT
for n in "${NS[@]}"; do
    ip netns add "$n"
    ip -n "$n" link set lo up
done
link() { # link A B SUBNET: A at 10.SUBNET.0.1, B at 10.SUBNET.0.2
    local a=v${TAG}s$3a b=v${TAG}s$3b
    ip link add "$a" type veth peer name "$b"
    ip link set "$a" netns "$1"
    ip link set "$b" netns "$2"
    ip -n "$1" addr add "10.$3.0.1/24" dev "$a"
    ip -n "$2" addr add "10.$3.0.2/24" dev "$b"
    ip -n "$1" link set "$a" up
    ip -n "$2" link set "$b" up
}
link "${NS[0]}" "${NS[1]}" 201
link "${NS[0]}" "${NS[2]}" 202

echo "== recording: the backup (clock 3 s behind), the primary, the client (clock 1000 s ahead) =="
export SCALPEL_TRUTH="$OUT/truth.jsonl"
# Each role waits for the one it connects to: the backup prints its port, the primary a line.
exec 3< <(ip netns exec "${NS[2]}" unshare --time --monotonic=-3 \
    "$S" record -o "$OUT/backup" -- "$STORE" backup --bind 10.202.0.2 --port 7101 2>"$OUT/backup.log")
BACKUP_PID=$!
read -r -t 60 _ <&3
exec 4< <(ip netns exec "${NS[0]}" \
    "$S" record -o "$OUT/primary" -- "$STORE" --bind 10.201.0.1 --port 7100 \
    --backup 10.202.0.2:7101 --remote-clients 2>"$OUT/primary.log")
PRIMARY_PID=$!
read -r -t 60 _ <&4
timeout 300 ip netns exec "${NS[1]}" unshare --time --monotonic=1000 \
    "$S" record -o "$OUT/client" -- "$STORE" client --host 10.201.0.1 --port 7100 \
    >"$OUT/client.log" 2>&1
wait "$PRIMARY_PID" "$BACKUP_PID"
cat <&4 | grep "commits in" || true

echo
echo "== one model from the three directories (the primary's machine is the reference) =="
"$S" infer "$OUT/primary" "$OUT/client" "$OUT/backup" -o "$OUT/model" >"$OUT/infer.txt"
head -6 "$OUT/infer.txt"
echo
echo "== each machine's clock on the primary's (truth: client -1000 s, backup +3 s) =="
"$S" export "$OUT/model" --table hosts
echo
echo "== the primary's tasks, its machine kept (as the demo on one machine) =="
"$S" infer "$OUT/primary" "$OUT/client" "$OUT/backup" --include host:primary \
    -o "$OUT/primary-model" | sed -n '/^task model/,$p' | sed -n '1,12p'
echo
echo "== top-down, the whole system =="
"$S" top "$OUT/model" --limit 6
echo
echo "The traces: $OUT/{client,primary,backup}; the models: $OUT/model, $OUT/primary-model"
