#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs pg_ctl on the test PostgreSQL that tests/pg/pg_start.sh DIR made, as the user that
# owns it (the postgres system user when run as root), waiting up to 30 s:
#   tests/pg/pg_ctl.sh DIR stop -m fast | start | restart -m fast
# The cluster's settings (address, port, sockets) are in its postgresql.conf, so a plain
# start brings it back where it was.
set -euo pipefail
dir=${1:?usage: pg_ctl.sh DIR ACTION [pg_ctl options]}
shift
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$bin" ] || { echo "pg_ctl: no PostgreSQL binaries: run scripts/setup.sh" >&2; exit 1; }
as=()
[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
# The cluster may live elsewhere (pg_start.sh: DIR closed to the postgres user).
[ -s "$dir/cluster" ] && dir=$(cat "$dir/cluster")
exec "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 30 "$@"
