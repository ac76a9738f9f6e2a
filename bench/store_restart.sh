#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A restart on a large store (issue 33's figure): a SQLite store holding PENDING pending jobs
# (one-GPU jobs waiting on an empty fleet) and, beside them, ENDED ended jobs, each a real job
# document with its timeline (copied from ones the server wrote, inserted straight into the
# file, without load records, as a store of a gpool before them), then a fresh `gpool server`
# on it twice: `first`, which reads the documents and writes the jobs' load records (the
# upgrade), and `again`, a restart that reads the records. Prints, per start, the time from
# the process's start to its first answer (`503 loading`) and to `/healthz` answering 200
# (the load done), and the server's CPU time and RSS once loaded.
#
#   bench/store_restart.sh [BUILD_DIR]    (default build/rel: a Release gpool_bin)
#   env: PENDING=100000 ENDED="0 1000000"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
PENDING=${PENDING:-100000} ENDED=${ENDED:-"0 1000000"}
GPOOL=$BUILD/gpool
[ -x "$GPOOL" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "the sqlite3 shell is needed" >&2; exit 2; }
source "$ROOT/bench/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-restart.XXXXXX)
cleanup() { bench_server_stop; rm -rf "$TMP"; }
trap cleanup EXIT
ms() { date +%s%3N; }
api() { curl -fsS -H "Authorization: Bearer bench-admin" -H 'Content-Type: application/json' "$@"; }
id_of() { sed -n 's/^{"job":{"id":"\([0-9]*\)".*/\1/p'; }

# Two real jobs: one pending (no node to run on), one ended (cancelled).
mkdir -p "$TMP/data"
bench_server_config "$TMP" 600 "recent_ended_jobs: 10000"
bench_server_run "$GPOOL" "$TMP"
pend=$(api -X POST "$URL/v1/jobs" -d '{"command":["python","train.py","--epochs","10"],"gpus":1,"name":"p","env":{"A":"1"}}' | id_of)
done_id=$(api -X POST "$URL/v1/jobs" -d '{"command":["python","train.py"],"hold":true,"name":"e","env":{"A":"1"}}' | id_of)
api -X POST "$URL/v1/jobs/$done_id/cancel" >/dev/null
bench_server_stop

# The two jobs as templates, kept in a file of their own: each fill rewrites the jobs table,
# so a second fill reading them back from it would copy the first fill's rows (pending jobs
# carrying an ended_at) instead.
sqlite3 "$TMP/data/gpool.db" >/dev/null <<EOS
ATTACH '$TMP/tpl.db' AS tpl;
CREATE TABLE tpl.tj AS SELECT id AS tid, doc, state, queue, user FROM jobs WHERE id IN ($pend, $done_id);
CREATE TABLE tpl.tev AS SELECT job_id AS tid, event, doc, seq FROM job_events WHERE job_id IN ($pend, $done_id);
EOS

# fill ENDED: ENDED ended jobs (ids 1..ENDED), then PENDING pending ones after them.
fill() {
  local ended=$1 db=$TMP/data/gpool.db
  sqlite3 "$db" >/dev/null <<EOS
PRAGMA journal_mode=WAL;
PRAGMA synchronous=OFF;
ATTACH '$TMP/tpl.db' AS tpl;
BEGIN;
DELETE FROM job_events;
DELETE FROM jobs;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $ended + $PENDING)
INSERT INTO jobs(id, state, queue, user, submitted_at, doc)
  SELECT i, t.state, t.queue, 'user' || (i % 50), 1700000000 + i,
         CASE WHEN i <= $ended
           THEN json_set(t.doc, '\$.id', CAST(i AS TEXT), '\$.name', 'job-' || i, '\$.user', 'user' || (i % 50),
                         '\$.submitted_at', 1700000000 + i, '\$.ended_at', 1700000000 + i + 60)
           ELSE json_set(t.doc, '\$.id', CAST(i AS TEXT), '\$.name', 'job-' || i, '\$.user', 'user' || (i % 50),
                         '\$.submitted_at', 1700000000 + i) END
  FROM n JOIN tpl.tj AS t ON t.tid = CASE WHEN i <= $ended THEN $done_id ELSE $pend END;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $ended + $PENDING)
INSERT INTO job_events(job_id, at, event, doc)
  SELECT i, 1700000000 + i, e.event, json_set(e.doc, '\$.at', 1700000000 + i)
  FROM n JOIN tpl.tev AS e ON e.tid = CASE WHEN i <= $ended THEN $done_id ELSE $pend END
  ORDER BY i, e.seq;
INSERT OR REPLACE INTO meta(key, value) VALUES ('next_job_id', $ended + $PENDING + 1);
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
EOS
}

# start WHICH ENDED: one server start on the store, until loaded, then stopped.
start() {
  rm -f "$TMP/data/server.url"
  t0=$(ms)
  "$GPOOL" server --config "$TMP/server.yaml" >"$TMP/server.log" 2>&1 &
  SERVER_PID=$!
  until [ -s "$TMP/data/server.url" ]; do
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 5 "$TMP/server.log" >&2; echo "the server died" >&2; exit 1; }
    sleep 0.01
  done
  URL=$(head -n1 "$TMP/data/server.url")
  until curl -s -o /dev/null "$URL/healthz" 2>/dev/null; do sleep 0.005; done
  first=$(($(ms) - t0))
  until curl -fsS -o /dev/null "$URL/healthz" 2>/dev/null; do
    kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 5 "$TMP/server.log" >&2; echo "the server died" >&2; exit 1; }
    sleep 0.005
  done
  ready=$(($(ms) - t0))
  read -r ut st < <(awk '{print $14, $15}' "/proc/$SERVER_PID/stat")
  cpu=$(( (ut + st) * 1000 / $(getconf CLK_TCK) ))
  rss=$(awk '$1 == "VmRSS:" {print int($2 / 1024)}' "/proc/$SERVER_PID/status")
  printf '%-9s %-9s %-6s %10s %10s %10s %10s\n' "$PENDING" "$2" "$1" "$first" "$ready" "$cpu" "$rss"
  bench_server_stop
}

printf '%-9s %-9s %-6s %10s %10s %10s %10s\n' pending ended start first_ms ready_ms cpu_ms rss_mib
for ended in $ENDED; do
  fill "$ended"
  start first "$ended"
  start again "$ended"
done
