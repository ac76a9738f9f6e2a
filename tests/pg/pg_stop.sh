#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops the PostgreSQL that tests/pg/pg_start.sh DIR started (fast shutdown: open sessions
# are ended) and removes its cluster. Nothing running in DIR is not an error.
set -uo pipefail
dir=${1:?usage: pg_stop.sh DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
root=$dir
[ -s "$dir/cluster" ] && root=$(cat "$dir/cluster")
[ -n "$bin" ] && [ -d "$root/data" ] || exit 0
bash "$(dirname "$0")/pg_ctl.sh" "$dir" stop -m fast >/dev/null 2>&1 || true
rm -rf "$root/data" "$dir/url"
# A cluster of its own under /tmp (pg_start.sh) goes whole.
[ "$root" != "$dir" ] && rm -rf "$root" "$dir/cluster"
exit 0
