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
source "$ROOT/bench/server_lib.sh"
bench_year_store "$BUILD" bench_advice_year " and their jobs"

echo "== in-process (store reads, then reads + advice engine)"
"$BUILD/bench_advice_year" time "$TMP/data/gpool.db"

# The server keeps the last 10,000 ended jobs in memory; the rest stay in the store.
bench_server_config "$TMP" 600 "recent_ended_jobs: 10000"
bench_server_run "$BUILD/gpool" "$TMP"

echo "== through the HTTP API (GET /v1/advice as an admin, best of 3)"
for period in "month from=2026-03-01&to=2026-04-01" "year from=2026-01-01&to=2027-01-01"; do
  name=${period%% *} range=${period#* }
  best=$(bench_get_best "/v1/advice?$range")
  items=$(grep -o '"kind":' "$TMP/answer.json" | wc -l)
  printf '%-5s HTTP  %8s ms wall  (%d items, %d bytes)\n' "$name" "$best" "$items" "$(wc -c <"$TMP/answer.json")"
done
