#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A throw-away PostgreSQL for the failover tests: `failover_pg.sh start DIR` makes a
# cluster in DIR (owned by the `postgres` user when run as root: postgres refuses root),
# starts it on a free port of 127.0.0.1 with its socket in DIR, and prints its URL;
# `failover_pg.sh stop DIR` stops it at once (immediate: as a crash would) and
# `failover_pg.sh restart DIR` stops it that way and starts it again on the same port.
set -euo pipefail
cmd=${1:?usage: failover_pg.sh start|stop|restart DIR}
dir=${2:?usage: failover_pg.sh start|stop|restart DIR}
bin=$(dirname "$(readlink -f "$(command -v postgres)")")

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

launch() {
  local port=$1
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
    start >/dev/null
}

case $cmd in
start)
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir"
    chmod o+x "$(dirname "$dir")" # the test's temp dir: postgres must reach DIR through it
  fi
  as_pg "$bin/initdb" -D "$dir/data" -U gpool --auth=trust -E UTF8 --no-sync >/dev/null
  port=$(free_port)
  echo "$port" >"$dir/port"
  launch "$port"
  echo "postgresql://gpool@127.0.0.1:$port/postgres"
  ;;
stop) as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null ;;
restart)
  as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null || true
  launch "$(cat "$dir/port")"
  ;;
*) echo "usage: failover_pg.sh start|stop|restart DIR" >&2; exit 2 ;;
esac
