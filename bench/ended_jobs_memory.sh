#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Server memory with a long job history: a store holding JOBS ended jobs (each a real job
# document with its timeline, copied from one the server wrote, inserted straight into the
# SQLite file), then a fresh `gpool server` on it, for each RECENT (recent_ended_jobs).
# Reports, per run: the load time (start until /healthz answers 200), the server's RSS
# once loaded and its peak (VmHWM), and the time to read the oldest job (GET /v1/jobs/{id},
# from the store) and the first page of GET /v1/jobs?all=1. Beside them, the same server
# on an empty store. The bound: RSS ≈ empty server + RECENT × bytes per job in memory +
# 9 bytes per job id (its final state and its slot in the id table).
#
#   bench/ended_jobs_memory.sh [BUILD_DIR]    (default build/rel: a Release gpool_bin)
#   env: JOBS=1000000 RECENT="1000 10000 100000"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
JOBS=${JOBS:-1000000} RECENT=${RECENT:-"1000 10000 100000"}
GPOOL=$BUILD/gpool
[ -x "$GPOOL" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "the sqlite3 shell is needed" >&2; exit 2; }
source "$ROOT/bench/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-history.XXXXXX)
cleanup() { bench_server_stop; rm -rf "$TMP"; }
trap cleanup EXIT

ms() { date +%s%3N; }
# Starts the server on the store in $TMP keeping RECENT ended jobs; sets LOAD_MS (start until
# /healthz answers 200).
start() {
  bench_server_config "$TMP" 600 "recent_ended_jobs: $1"
  local t0
  t0=$(ms)
  bench_server_run "$GPOOL" "$TMP"
  LOAD_MS=$(($(ms) - t0))
}
rss_kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
api() { curl -fsS -H "Authorization: Bearer bench-admin" -H 'Content-Type: application/json' "$@"; }

# One real ended job: the server writes its document and timeline.
mkdir -p "$TMP/data"
start 10000
EMPTY_RSS=$(rss_kib "$SERVER_PID" VmRSS)
id=$(api -X POST "$URL/v1/jobs" -d '{"command":["python","train.py","--epochs","10"],"hold":true,"name":"tmpl","env":{"A":"1"}}' | sed 's/.*"id":"\([0-9]*\)".*/\1/')
api -X POST "$URL/v1/jobs/$id/cancel" >/dev/null
bench_server_stop

t0=$(ms)
sqlite3 "$TMP/data/gpool.db" <<EOS
PRAGMA journal_mode=WAL;
PRAGMA synchronous=OFF;
BEGIN;
CREATE TEMP TABLE tmpl AS SELECT doc, state, queue, user, submitted_at FROM jobs WHERE id = $id;
CREATE TEMP TABLE tev AS SELECT event, doc, seq FROM job_events WHERE job_id = $id ORDER BY seq;
DELETE FROM job_events;
DELETE FROM jobs;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $JOBS)
INSERT INTO jobs(id, state, queue, user, submitted_at, doc)
  SELECT i, t.state, t.queue, 'user' || (i % 50), 1700000000 + i,
         json_set(t.doc, '\$.id', CAST(i AS TEXT), '\$.name', 'job-' || i, '\$.user', 'user' || (i % 50),
                  '\$.submitted_at', 1700000000 + i, '\$.ended_at', 1700000000 + i + 60)
  FROM n, tmpl AS t;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $JOBS)
INSERT INTO job_events(job_id, at, event, doc)
  SELECT i, 1700000000 + i, e.event, json_set(e.doc, '\$.at', 1700000000 + i)
  FROM n, tev AS e ORDER BY i, e.seq;
INSERT OR REPLACE INTO meta(key, value) VALUES ('next_job_id', $JOBS + 1);
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
EOS
BUILD_MS=$(($(ms) - t0))
echo "store: $JOBS ended jobs, $(du -m "$TMP/data/gpool.db" | cut -f1) MiB, built in ${BUILD_MS} ms"
echo "empty server: RSS $((EMPTY_RSS / 1024)) MiB"
printf '%-10s %10s %10s %10s %12s %12s\n' recent load_ms rss_mib peak_mib oldest_ms page_ms
for r in $RECENT; do
  # The jobs were written without load records: a first start reads their documents and
  # writes the records of those it keeps; the figures are of the restart after it.
  start "$r"
  bench_server_stop
  start "$r"
  sleep 0.5
  rss=$(rss_kib "$SERVER_PID" VmRSS) hwm=$(rss_kib "$SERVER_PID" VmHWM)
  t0=$(ms); api "$URL/v1/jobs/1" >/dev/null; oldest=$(($(ms) - t0))
  t0=$(ms); api "$URL/v1/jobs?all=1&limit=1000" >/dev/null; page=$(($(ms) - t0))
  printf '%-10s %10s %10s %10s %12s %12s\n' "$r" "$LOAD_MS" "$((rss / 1024))" "$((hwm / 1024))" "$oldest" "$page"
  bench_server_stop
done
