#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A report over a year of ledger history (issue 18's figure): a SQLite store with INTERVALS
# job intervals over 2026 on 2,000 nodes (bench_report_year write: ~50 queues, ~500 users,
# 4 models, 4 capacity types, in start order as a server writes them), then, for March and
# for the whole year, by queue and by user:
#   - the engine alone: the store's range read and the ledger engine, in-process
#     (bench_report_year time: wall and CPU, best of 3);
#   - through the HTTP API: `GET /v1/reports/cost` of a real `gpool server` on that store,
#     as an admin (node and job intervals), timed by curl (best of 3).
#
#   bench/report_year.sh [BUILD_DIR]   (default build/rel: a Release build of gpool_bin and
#                                       bench_report_year)
#   env: INTERVALS=1000000 KEEP=DIR (reuse/keep the store in DIR; written when missing)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
INTERVALS=${INTERVALS:-1000000}
source "$ROOT/bench/server_lib.sh"
bench_year_store "$BUILD" bench_report_year

echo "== engine alone (in-process: store range read + ledger engine)"
"$BUILD/bench_report_year" time "$TMP/data/gpool.db"

bench_server_config "$TMP" 600
bench_server_run "$BUILD/gpool" "$TMP"

echo "== through the HTTP API (GET /v1/reports/cost as an admin, best of 3)"
for period in "month from=2026-03-01&to=2026-04-01" "year from=2026-01-01&to=2027-01-01"; do
  name=${period%% *} range=${period#* }
  for by in queue user; do
    best=$(bench_get_best "/v1/reports/cost?by=$by&$range")
    rows=$(grep -o '"kind":"jobs"' "$TMP/answer.json" | wc -l)
    printf '%-5s by %-5s HTTP          %8s ms wall  (%d job rows, %d bytes)\n' "$name" "$by" "$best" "$rows" "$(wc -c <"$TMP/answer.json")"
  done
done
