# Sourced by the PostgreSQL scripts (trace-postgres.sh, diff-postgres.sh): finds Debian's
# PostgreSQL binaries in BIN (installing postgresql with apt-get when they are missing, as root)
# and sets AS to the command prefix that runs the server as the `postgres` user when we are root
# (PostgreSQL refuses to run as root).
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$BIN" ] || [ ! -x "$BIN/postgres" ] || ! command -v pgbench >/dev/null; then
    echo "installing postgresql" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-contrib >/dev/null
    BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi
AS=()
if [ "$(id -u)" = 0 ]; then AS=(runuser -u postgres --); fi
