#!/usr/bin/env bash
# Replays widgetd's PostgreSQL creation with pgbench, as it runs today and in
# the shapes grouping would give it, on widgetd's own schema, and prints for
# each: creations per second at 64 clients, the server's CPU per creation and
# pgbench's own. It bounds what a design can reach on the server's side
# before any of it is built (docs/perf-log/2026-12.md, "2026-12-02, what
# grouping PostgreSQL creations could give").
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
    # The sealer ends a second after the creations, so that the time of
    # the creations' pgbench counts none of its CPU and the server's CPU is
    # read while it still runs.
    pgbench -n -M prepared -c 1 -R 250 -T "$((secs + 1))" -f "$here/seal.sql" "$db" \
        >"$scratch/seal.out" 2>&1 &
    local TIMEFORMAT='%U %S'
    { time pgbench -n -M prepared -c 64 -j 2 -T "$secs" \
        -f "$here/$script@$weight" -f "$here/epoch.sql@3" "$db" >"$scratch/main.out" 2>&1; } \
        2>"$scratch/time"
    # Read before the sealer ends: the postmaster has reaped the creations'
    # backends by then, and the sealer's counts up to here.
    sleep 0.3
    after=$(server_ticks)
    wait
    if grep -qE 'aborted|ERROR' "$scratch/main.out" "$scratch/seal.out"; then
        grep -hE 'aborted|ERROR' "$scratch/main.out" "$scratch/seal.out" | head -3 >&2
        exit 1
    fi
    # The first script's transactions (the creations').
    main=$(grep -E '^ - [0-9]+ transactions' "$scratch/main.out" | head -1 | awk '{print $2}' || true)
    seals=$(grep 'actually processed' "$scratch/seal.out" | awk '{print $NF}' || true)
    if [ -z "$main" ] || [ "$main" = 0 ]; then
        echo "$label: no transaction finished in ${secs}s; give it more seconds" >&2
        return
    fi
    awk -v label="$label" -v per="$per" -v txns="$main" -v secs="$secs" \
        -v before="$before" -v after="$after" -v hz="$hz" -v seals="$seals" \
        -v user="$(cut -d' ' -f1 "$scratch/time")" -v sys="$(cut -d' ' -f2 "$scratch/time")" \
        'BEGIN {
            n = txns * per
            if (seals < 1) seals = 1
            printf "%-14s creations/s %7.0f   server ms/creation %.3f   pgbench ms/creation %.3f   creations per seal %.0f\n",
                label, n / secs, (after - before) / hz * 1000 / n, (user + sys) * 1000 / n, n / seals
        }'
}

for round in $(seq "$rounds"); do
    echo "replay: round $round of $rounds, ${secs}s per shape" >&2
    replay "today" 1 one.sql
    replay "guessed" 1 guessed.sql
    replay "8 per commit" 8 eight_stmts.sql
    replay "8 merged" 8 eight_merged.sql
done
