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
TMP=$(mktemp -d /tmp/gpool-history.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

ms() { date +%s%3N; }
config() {
  cat >"$TMP/server.yaml" <<EOC
listen: 127.0.0.1:0
data_dir: $TMP/data
tokens:
  - {token: bench-admin, user: bench, role: admin}
queues:
  - {name: default, users: ["*"]}
default_queue: default
recent_ended_jobs: $1
EOC
}
# Starts the server; sets PID, URL and LOAD_MS (until /healthz answers 200).
start() {
  rm -f "$TMP/data/server.url"
  local t0
  t0=$(ms)
  "$GPOOL" server --config "$TMP/server.yaml" >"$TMP/server.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 6000); do [ -s "$TMP/data/server.url" ] && break; sleep 0.01; done
  URL=$(head -n1 "$TMP/data/server.url")
  for _ in $(seq 1 60000); do curl -fsS -o /dev/null "$URL/healthz" 2>/dev/null && break; sleep 0.01; done
  LOAD_MS=$(($(ms) - t0))
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""; }
rss_kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
api() { curl -fsS -H "Authorization: Bearer bench-admin" -H 'Content-Type: application/json' "$@"; }

# One real ended job: the server writes its document and timeline.
mkdir -p "$TMP/data"
config 10000
start
EMPTY_RSS=$(rss_kib "$PID" VmRSS)
id=$(api -X POST "$URL/v1/jobs" -d '{"command":["python","train.py","--epochs","10"],"hold":true,"name":"tmpl","env":{"A":"1"}}' | sed 's/.*"id":"\([0-9]*\)".*/\1/')
api -X POST "$URL/v1/jobs/$id/cancel" >/dev/null
stop

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
  config "$r"
  start
  sleep 0.5
  rss=$(rss_kib "$PID" VmRSS) hwm=$(rss_kib "$PID" VmHWM)
  t0=$(ms); api "$URL/v1/jobs/1" >/dev/null; oldest=$(($(ms) - t0))
  t0=$(ms); api "$URL/v1/jobs?all=1&limit=1000" >/dev/null; page=$(($(ms) - t0))
  printf '%-10s %10s %10s %10s %12s %12s\n' "$r" "$LOAD_MS" "$((rss / 1024))" "$((hwm / 1024))" "$oldest" "$page"
  stop
done
