#!/usr/bin/env bash
# The README as a newcomer meets it: a fresh Debian 12 (debootstrap's minimal variant) given only
# what the README's first screen names (build-essential and python3, plus git and curl to get the
# code) and the Rust toolchain, then a fresh clone of this repository's HEAD, and the README's two
# commands run there as they are written: `scripts/demo.sh`, then `scripts/test.sh`. Passes only
# if both exit 0; prints the tests the second lists as "not run".
#
# The toolchain is installed inside the new system as the README says: rustup's installer,
# then `rustup component add rustfmt clippy`; so it is whatever Rust is stable that day, not
# this machine's. Where sh.rustup.rs does not resolve, the same installer script is taken from
# its home, static.rust-lang.org/rustup/rustup-init.sh. Crates are fetched afresh from
# crates.io, and Debian's packages from its mirror, into the new system.
#
# Runs as root inside, as the README's root path (the demo installs Graphviz itself; the tests
# that need root run). Needs root (debootstrap, chroot, mounts); about 15 minutes on 2 cores
# (2026-11-24: demo 285 s, tests 375 s, 202 passed, 2 not run: perf, jemalloc).
# Usage: scripts/newcomer-test.sh [DIR]     (default /tmp/scalpel-newcomer, replaced)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "newcomer-test: needs root (debootstrap, chroot and mounts)" >&2
    exit 2
fi
NEW=${1:-/tmp/scalpel-newcomer}
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap

MOUNTS=(proc sys dev dev/pts dev/shm)
unmount_all() {
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        if mountpoint -q "$NEW/${MOUNTS[$i]}" 2>/dev/null; then
            umount -l "$NEW/${MOUNTS[$i]}" || true
        fi
    done
    return 0
}
unmount_all
trap unmount_all EXIT
# Never into a mount left behind.
rm -rf --one-file-system "$NEW"

echo "== a fresh Debian 12 in $NEW =="
debootstrap --variant=minbase bookworm "$NEW" http://deb.debian.org/debian >/dev/null
cp /etc/resolv.conf "$NEW/etc/resolv.conf"
mount -t proc proc "$NEW/proc"
# Slaves: nothing mounted or unmounted inside reaches this machine's own /sys and /dev.
mount --rbind /sys "$NEW/sys"
mount --make-rslave "$NEW/sys"
mount --bind /dev "$NEW/dev"
mount --make-rslave "$NEW/dev"
mount --bind /dev/pts "$NEW/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$NEW/dev/shm"

in_new() {
    chroot "$NEW" env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
        PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        bash -c "$1"
}
echo "== what the README names: build-essential python3 (and git, curl) =="
in_new "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    build-essential python3 git curl >/dev/null"
# Not a README step but this network's: it intercepts TLS with its own authority, which a machine
# here must trust to reach crates.io (as a proxy setting would be elsewhere).
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$NEW/usr/local/share/ca-certificates/"
    in_new "update-ca-certificates >/dev/null"
fi
echo "== Rust as the README installs it: rustup, then rustfmt and clippy =="
INSTALLER=https://sh.rustup.rs
if ! getent hosts sh.rustup.rs >/dev/null; then
    INSTALLER=https://static.rust-lang.org/rustup/rustup-init.sh
    echo "(sh.rustup.rs does not resolve here: the same script from $INSTALLER)"
fi
# -y: the installer asks before it changes anything, and there is nobody to answer here.
in_new "curl --proto '=https' --tlsv1.2 -sSf $INSTALLER | sh -s -- -y >/dev/null 2>&1 \
    && rustup component add rustfmt clippy >/dev/null 2>&1"
in_new "cargo --version && rustc --version && python3 --version && cc --version | head -1"

echo "== a fresh clone of HEAD ($(git rev-parse --short HEAD)) =="
git clone -q "$PWD" "$NEW/root/scalpel"

echo "== the README's first command: scripts/demo.sh =="
start=$(date +%s)
in_new "cd /root/scalpel && scripts/demo.sh" >"$NEW/demo.log" 2>&1 || {
    tail -40 "$NEW/demo.log"
    echo "newcomer-test: scripts/demo.sh failed (log: $NEW/demo.log)"
    exit 1
}
echo "demo: exit 0 in $(($(date +%s) - start)) s; its last lines:"
tail -3 "$NEW/demo.log"

echo "== the README's second command: scripts/test.sh =="
start=$(date +%s)
in_new "cd /root/scalpel && scripts/test.sh" >"$NEW/test.log" 2>&1 || {
    grep -E "^test .*FAILED|panicked|^error" "$NEW/test.log" | head -40 || true
    echo "newcomer-test: scripts/test.sh failed (log: $NEW/test.log)"
    exit 1
}
echo "tests: exit 0 in $(($(date +%s) - start)) s; $(grep -c '^test .* ok$' "$NEW/test.log") passed"
awk '/^== not run/ { p = 1; print; next } p && /^[a-z_0-9]+: / { print; next } p { exit }' \
    "$NEW/test.log"
echo "newcomer-test: both commands of the README ran on a fresh Debian 12"
