#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The price of the network store: durable submissions per second through the real server
# (bench_submit_bench, 201 only once committed) with its SQLite store and with a PostgreSQL
# store, same machine, same run, alternating SQLite and PostgreSQL rounds so that a slow
# moment of the machine falls on both. PostgreSQL is a throw-away server
# (tests/pg/pg_start.sh: local TCP, fsync on, synchronous_commit on), one new database per
# round. Prints each round, the medians and their ratio (PostgreSQL / SQLite).
#
#   bench/store_submit.sh [BUILD_DIR]     (default build/rel: gpool_bin, bench_submit_bench)
#   env: ROUNDS=3 JOBS=20000 CLIENTS=64
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
ROUNDS=${ROUNDS:-3} JOBS=${JOBS:-20000} CLIENTS=${CLIENTS:-64}
for p in gpool bench_submit_bench; do
  [ -x "$BUILD/$p" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin bench_submit_bench" >&2; exit 2; }
done
command -v psql >/dev/null || { echo "psql is missing: run scripts/setup.sh" >&2; exit 2; }
source "$ROOT/bench/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-store-submit.XXXXXX)
chmod 755 "$TMP" # PostgreSQL runs as its own user when this runs as root
cleanup() {
  bench_server_stop
  bash "$ROOT/tests/pg/pg_stop.sh" "$TMP/pg"
  rm -rf "$TMP"
}
trap cleanup EXIT
PG_URL=$(bash "$ROOT/tests/pg/pg_start.sh" "$TMP/pg")

# round KIND N: one fresh server on a fresh store; prints the submissions/s.
round() {
  local kind=$1 n=$2 dir=$TMP/$1-$2 extra=""
  rm -rf "$dir"
  if [ "$kind" = postgresql ]; then
    psql -q "$PG_URL" -c "CREATE DATABASE gp_bench_$n" >/dev/null
    extra="store: ${PG_URL%/*}/gp_bench_$n"
  fi
  bench_server_config "$dir" 600 "$extra"
  bench_server_run "$BUILD/gpool" "$dir" >&2
  local out
  out=$("$BUILD/bench_submit_bench" --server "$URL" --token bench-admin --clients "$CLIENTS" \
          --jobs "$JOBS" 2>&1 | grep '^gpool submit:' | head -n 1)
  bench_server_stop
  echo "$kind round $n: $out" >&2
  sed -n 's/.*: \([0-9]*\) submissions\/s.*/\1/p' <<<"$out"
}

sqlite=() postgres=()
for n in $(seq 1 "$ROUNDS"); do
  sqlite+=("$(round sqlite "$n")")
  postgres+=("$(round postgresql "$n")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
ms=$(median "${sqlite[@]}") mp=$(median "${postgres[@]}")
echo "durable submissions/s, $JOBS jobs by $CLIENTS clients, $ROUNDS rounds each:"
echo "  SQLite     ${sqlite[*]}  (median $ms)"
echo "  PostgreSQL ${postgres[*]}  (median $mp)"
awk -v p="$mp" -v s="$ms" 'BEGIN {printf "  PostgreSQL / SQLite: %.2f\n", s ? p / s : 0}'
