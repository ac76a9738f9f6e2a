#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A throw-away PostgreSQL for the failover tests that may stop and restart it:
# `failover_pg.sh start DIR` starts one with tests/pg/pg_start.sh (which prints its URL),
# `failover_pg.sh stop DIR` stops it at once (immediate: as a crash would, every session
# cut) and `failover_pg.sh restart DIR` does that and starts it again on the same port.
set -euo pipefail
cmd=${1:?usage: failover_pg.sh start|stop|restart DIR}
dir=${2:?usage: failover_pg.sh start|stop|restart DIR}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
as=()
[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)

stop() { "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true; }

case $cmd in
start)
  mkdir -p "$dir"
  # As root, postgres (another user) must reach DIR through the test's temp dir.
  [ "$(id -u)" = 0 ] && chmod o+x "$(dirname "$(cd "$dir" && pwd)")"
  bash "$here/../pg/pg_start.sh" "$dir"
  ;;
stop) stop ;;
restart)
  stop
  url=$(cat "$dir/url")
  port=${url##*:}
  port=${port%%/*}
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c max_connections=200" start >/dev/null
  ;;
*) echo "usage: failover_pg.sh start|stop|restart DIR" >&2; exit 2 ;;
esac
