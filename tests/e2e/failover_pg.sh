#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A throw-away PostgreSQL for the failover tests that may crash and restart it:
# `failover_pg.sh start DIR` starts one with tests/pg/pg_start.sh (which prints its URL),
# `failover_pg.sh stop DIR` stops it at once (immediate: as a crash would, every session
# cut) and `failover_pg.sh restart DIR` does that and starts it again where it was.
set -euo pipefail
cmd=${1:?usage: failover_pg.sh start|stop|restart DIR}
dir=${2:?usage: failover_pg.sh start|stop|restart DIR}
pg=$(cd "$(dirname "$0")/../pg" && pwd)
case $cmd in
start)
  mkdir -p "$dir"
  # As root, postgres (another user) must reach DIR through the test's temp dir.
  [ "$(id -u)" = 0 ] && chmod o+x "$(dirname "$(cd "$dir" && pwd)")"
  bash "$pg/pg_start.sh" "$dir"
  ;;
stop) bash "$pg/pg_ctl.sh" "$dir" stop -m immediate >/dev/null 2>&1 || true ;;
restart) bash "$pg/pg_ctl.sh" "$dir" restart -m immediate >/dev/null ;;
*) echo "usage: failover_pg.sh start|stop|restart DIR" >&2; exit 2 ;;
esac
