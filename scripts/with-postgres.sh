#!/usr/bin/env bash
# Runs a command with a temporary PostgreSQL server (Debian's postgresql
# package): a new data directory under $TMPDIR, a free port on 127.0.0.1,
# trust authentication for user "temporal". The command gets its URL in
# DELEGATE_POSTGRES_URL (postgres://temporal@127.0.0.1:PORT/temporal); the
# server and its data are removed when the command ends.
#
#   scripts/with-postgres.sh ./bin/delegate bench --server '$DELEGATE_POSTGRES_URL'
#
# Arguments are passed through eval, so that '$DELEGATE_POSTGRES_URL' in
# them is expanded once the server is up. As root, the server runs as user
# postgres (PostgreSQL refuses to run as root).
set -euo pipefail

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "with-postgres: PostgreSQL server binaries not found (apt-get install postgresql)" >&2
  exit 2
fi

as_owner=()
if [ "$(id -u)" = 0 ]; then
  as_owner=(runuser -u postgres --)
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/delegate-pg.XXXXXX")
chmod 755 "$dir"
[ ${#as_owner[@]} -eq 0 ] || chown postgres "$dir"

# A free port below the kernel's ephemeral range (as the Go tests choose).
port=""
for _ in $(seq 1 200); do
  p=$((20000 + RANDOM % 12000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "with-postgres: no free port" >&2; exit 2; }

cleanup() {
  "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

"${as_owner[@]}" "$bindir/initdb" -D "$dir/data" -U temporal -A trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 2; }
"${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=${PG_FSYNC:-on}" start >/dev/null ||
  { cat "$dir/server.log" >&2; exit 2; }

export DELEGATE_POSTGRES_URL="postgres://temporal@127.0.0.1:$port/temporal"
export DELEGATE_POSTGRES_DATA="$dir/data"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') at $DELEGATE_POSTGRES_URL" >&2
# The command runs in the background so that a TERM or INT sent to this
# script reaches it at once (bash defers traps while it waits on a
# foreground command); the server is removed after it ends.
# exec env: the command replaces the subshell, so the signals below reach
# it (with "VAR=value cmd" arguments too).
eval exec env "$@" &
child=$!
trap 'kill -TERM $child 2>/dev/null' TERM
trap 'kill -INT $child 2>/dev/null' INT
rc=0
wait $child || rc=$?
while kill -0 $child 2>/dev/null; do wait $child || rc=$?; done
exit $rc
