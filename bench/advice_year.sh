#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Advice over a year of ledger history (issue 19's figure): a SQLite store with INTERVALS job
# intervals over 2026 on 2,000 nodes and every job's ended document (bench_advice_year write:
# the report bench's fleet, ~266,000 jobs with recurring names and use figures), then, for
# March and for the whole year:
#   - in-process: the store's reads alone, and the reads + the advice engine
#     (bench_advice_year time: wall and CPU, best of 3);
#   - through the HTTP API: `GET /v1/advice` of a real `gpool server` on that store, as an
#     admin (node intervals, job intervals, ended jobs), timed by curl (best of 3).
#
#   bench/advice_year.sh [BUILD_DIR]   (default build/rel: a Release build of gpool_bin and
#                                       bench_advice_year)
#   env: INTERVALS=1000000 KEEP=DIR (reuse/keep the store in DIR; written when missing)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
INTERVALS=${INTERVALS:-1000000}
for p in gpool bench_advice_year; do
  [ -x "$BUILD/$p" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin bench_advice_year" >&2; exit 2; }
done
TMP=${KEEP:-$(mktemp -d /tmp/gpool-advice.XXXXXX)}
source "$ROOT/bench/server_lib.sh"
cleanup() {
  bench_server_stop
  [ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/data"
chmod 700 "$TMP/data"
if [ ! -s "$TMP/data/gpool.db" ]; then
  echo "== writing $INTERVALS intervals and their jobs"
  "$BUILD/bench_advice_year" write "$TMP/data/gpool.db" "$INTERVALS"
fi

echo "== in-process (store reads, then reads + advice engine)"
"$BUILD/bench_advice_year" time "$TMP/data/gpool.db"

# The server keeps the last 10,000 ended jobs in memory; the rest stay in the store.
bench_server_config "$TMP" 600 "recent_ended_jobs: 10000"
bench_server_run "$BUILD/gpool" "$TMP"

echo "== through the HTTP API (GET /v1/advice as an admin, best of 3)"
for period in "month from=2026-03-01&to=2026-04-01" "year from=2026-01-01&to=2027-01-01"; do
  name=${period%% *} range=${period#* }
  best=""
  for _ in 1 2 3; do
    t=$(curl -s -o "$TMP/answer.json" -w '%{http_code} %{time_total}' \
          -H "Authorization: Bearer bench-admin" "$URL/v1/advice?$range")
    [ "${t%% *}" = 200 ] || { echo "advice answered ${t%% *}: $(head -c 300 "$TMP/answer.json")" >&2; exit 1; }
    ms=$(awk -v s="${t#* }" 'BEGIN {printf "%.1f", s * 1000}')
    best=$(awk -v a="$best" -v b="$ms" 'BEGIN {print (a == "" || b + 0 < a + 0) ? b : a}')
  done
  items=$(grep -o '"kind":' "$TMP/answer.json" | wc -l)
  printf '%-5s HTTP  %8s ms wall  (%d items, %d bytes)\n' "$name" "$best" "$items" "$(wc -c <"$TMP/answer.json")"
done
