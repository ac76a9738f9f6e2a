#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Starts a throw-away PostgreSQL for tests and benchmarks: a new cluster in DIR (initdb),
# listening on 127.0.0.1 only at a free port, its unix sockets in DIR, fsync on (commits are
# as durable as in production), 200 connections (tests run in parallel, each with its own
# databases). Prints its URL, postgresql://USER@127.0.0.1:PORT/postgres, and writes it to
# DIR/url. As root, initdb and postgres run as the `postgres` system user (they refuse
# root), on DIR handed to that user; when a parent of DIR is closed to that user (CI's
# private temporary directory), the cluster lives in a directory of its own under /tmp,
# named in DIR/cluster (tests/pg/pg_ctl.sh and pg_stop.sh read it). tests/pg/pg_stop.sh DIR
# stops it.
set -euo pipefail
dir=${1:?usage: pg_start.sh DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "pg_start: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin:" \
       "run scripts/setup.sh (it installs postgresql)" >&2
  exit 1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
as=()
user=$(id -un)
root=
if [ "$(id -u)" = 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "pg_start: running as root needs the postgres system user: run scripts/setup.sh" >&2
    exit 1
  fi
  as=(runuser -u postgres --)
  user=postgres
  chown postgres: "$dir"
  if ! runuser -u postgres -- test -w "$dir"; then
    [ -s "$dir/cluster" ] && rm -rf "$(cat "$dir/cluster")"
    root=$(mktemp -d /tmp/gpool-pg.XXXXXX)
    chown postgres: "$root"
    printf '%s\n' "$root" >"$dir/cluster"
  fi
fi
[ -s "$dir/cluster" ] && [ -z "$root" ] && rm -f "$dir/cluster"
root=${root:-$dir}
# A stopped cluster left in DIR by an earlier run is replaced.
"${as[@]}" rm -rf "$root/data"
"${as[@]}" "$bin/initdb" -D "$root/data" -U "$user" -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
# The settings go into postgresql.conf (the last line of a setting wins), so that
# tests/pg/pg_ctl.sh DIR start brings a stopped cluster back where it was.
conf() { "${as[@]}" sh -c "printf '%s\n' \"\$1\" >>'$root/data/postgresql.conf'" sh "$1"; }
conf "listen_addresses = '127.0.0.1'"
conf "unix_socket_directories = '$root'"
conf "fsync = on"
conf "max_connections = 200"
# A free port: bind port 0 and read what the kernel gave. Another process could take it
# before postgres binds; then postgres fails to start and the next try picks another.
for try in 1 2 3 4 5; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  conf "port = $port"
  if bash "$(dirname "$0")/pg_ctl.sh" "$dir" start >/dev/null; then
    url="postgresql://$user@127.0.0.1:$port/postgres"
    printf '%s\n' "$url" >"$dir/url"
    printf '%s\n' "$url"
    exit 0
  fi
done
echo "pg_start: PostgreSQL did not start; see $root/postgres.log" >&2
tail -n 20 "$root/postgres.log" >&2 || true
exit 1
