#!/usr/bin/env bash
# Replays widgetd's PostgreSQL creation with pgbench, as it runs today and in
# the shapes grouping would give it, on widgetd's own schema, and prints for
# each: creations per second at 64 clients, the server's CPU per creation and
# pgbench's own. It bounds what a design can reach on the server's side
# before any of it is built (docs/performance.md, "what grouping PostgreSQL
# creations could give").
#
#   examples/bench/pgbench/run.sh [SERVER_URL] [SECS] [ROUNDS]
#
# SERVER_URL: a server that may create databases (default
# postgres://postgres@127.0.0.1:5432/postgres); a database of the run's own is
# created and dropped. The server's CPU is read from /proc, so it counts only
# when the server runs on this machine. Needs psql and pgbench (Debian:
# postgresql-client) and builds widgetd to lay out its schema.
set -euo pipefail

server=${1:-postgres://postgres@127.0.0.1:5432/postgres}
secs=${2:-8}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
name="widgetd_replay_$$"
db="${server%/*}/$name"
scratch=$(mktemp -d)

cleanup() {
    psql -q "$server" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT

# CPU ticks of the server so far: every live `postgres` process, plus the
# exited backends the postmaster (the oldest of them) has reaped.
server_ticks() {
    local total=0 oldest fields
    oldest=$(pgrep -o -x postgres || true)
    for pid in $(pgrep -x postgres); do
        fields=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
        fields=${fields##*) }
        # shellcheck disable=SC2086
        set -- $fields
        total=$((total + ${12} + ${13}))
        [ "$pid" = "$oldest" ] && total=$((total + ${14} + ${15}))
    done
    echo "$total"
}

echo "replay: creating $name and widgetd's schema" >&2
psql -q "$server" -c "CREATE DATABASE $name"
(cd "$repo" && cargo run --release -q -- --data-dir "$scratch/data" --database-url "$db" audit verify >/dev/null)
psql -q "$db" -f "$here/setup.sql"

hz=$(getconf CLK_TCK)

# replay LABEL CREATIONS_PER_TRANSACTION SCRIPT
replay() {
    local label=$1 per=$2 script=$3 before after main seals
    # Three shared epoch reads to every eight creations, in each shape.
    local weight=$((8 / per))
    before=$(server_ticks)
    pgbench -n -M prepared -c 1 -R 250 -T "$secs" -f "$here/seal.sql" "$db" >"$scratch/seal.out" 2>&1 &
    /usr/bin/time -f "%U %S" -o "$scratch/time" \
        pgbench -n -M prepared -c 64 -j 2 -T "$secs" \
        -f "$here/$script@$weight" -f "$here/epoch.sql@3" "$db" >"$scratch/main.out" 2>&1
    wait
    sleep 0.3
    after=$(server_ticks)
    if grep -qE 'aborted|ERROR' "$scratch/main.out" "$scratch/seal.out"; then
        grep -hE 'aborted|ERROR' "$scratch/main.out" "$scratch/seal.out" | head -3 >&2
        exit 1
    fi
    # The first script's transactions (the creations').
    main=$(grep -E '^ - [0-9]+ transactions' "$scratch/main.out" | head -1 | awk '{print $2}')
    seals=$(grep 'actually processed' "$scratch/seal.out" | awk '{print $NF}')
    python3 - "$label" "$per" "$main" "$secs" "$before" "$after" "$hz" "$seals" $(cat "$scratch/time") <<'EOF'
import sys
label, per, txns, secs, before, after, hz, seals, user, system = sys.argv[1:11]
n = int(txns) * int(per)
server_ms = (int(after) - int(before)) / int(hz) * 1000 / n
pgbench_ms = (float(user) + float(system)) * 1000 / n
print(f"{label:<14} creations/s {n / float(secs):7.0f}   server ms/creation {server_ms:.3f}"
      f"   pgbench ms/creation {pgbench_ms:.3f}   creations per seal {n / max(int(seals), 1):.0f}")
EOF
}

for round in $(seq "$rounds"); do
    echo "replay: round $round of $rounds, ${secs}s per shape" >&2
    replay "today" 1 one.sql
    replay "guessed" 1 guessed.sql
    replay "8 per commit" 8 eight_stmts.sql
    replay "8 merged" 8 eight_merged.sql
done
