#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A job array of N elements (default 100,000) on a real `gpool server` with an empty SQLite
# store and no nodes: the submission's wall time (POST /v1/jobs, as curl sees it), and the
# server's memory for the array's pending elements: RSS after the submission minus RSS
# before, divided by N. Pending elements are not jobs (array.h): the server keeps the
# array's record and at most 64 elements made into jobs, plus 9 bytes per reserved id (its
# slot in the id table and its final-state byte). Targets: < 1 s and <= 200 B per element.
# The same figures for 1,000 plain jobs beside it say what an element would cost as a job.
#
#   bench/array_submit.sh [BUILD_DIR]    (default build/rel: a Release gpool_bin)
#   env: N=100000
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
N=${N:-100000}
GPOOL=$BUILD/gpool
[ -x "$GPOOL" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
source "$ROOT/bench/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-array.XXXXXX)
cleanup() { bench_server_stop; rm -rf "$TMP"; }
trap cleanup EXIT

rss_kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
api() { curl -fsS -H "Authorization: Bearer bench-admin" -H 'Content-Type: application/json' "$@"; }
settle() { sleep 1.5; } # a scheduling step or two: the window of elements is made

bench_server_start "$GPOOL" "$TMP" 600
api -X POST "$URL/v1/jobs" -d '{"command":["true"],"gpus":1}' >/dev/null # warm the paths
settle
before=$(rss_kib "$SERVER_PID")
last=$((N - 1))
secs=$(curl -fsS -o "$TMP/resp" -w '%{time_total}' -H "Authorization: Bearer bench-admin" \
  -H 'Content-Type: application/json' -X POST "$URL/v1/jobs" \
  -d "{\"command\":[\"python\",\"train.py\",\"--seed\",\"\$SLURM_ARRAY_TASK_ID\"],\"gpus\":1,\"array\":\"0-$last%100\"}")
id=$(sed 's/.*"id":"\([0-9]*\)".*/\1/' "$TMP/resp")
settle
after=$(rss_kib "$SERVER_PID")
made=$(api "$URL/v1/jobs?limit=1000" | grep -o "\"array_job_id\":\"$id\"" | wc -l)
pending=$(api "$URL/v1/jobs/$id" | sed 's/.*"n_pending":\([0-9]*\).*/\1/')
per=$(awk -v a="$after" -v b="$before" -v n="$N" 'BEGIN { printf "%.1f", (a - b) * 1024 / n }')
printf 'array of %d elements: submitted in %.3f s; pending %s, made into jobs %s\n' "$N" "$secs" "$pending" "$made"
printf 'server RSS %d -> %d KiB: %s B per pending element\n' "$before" "$after" "$per"

# For scale: 1,000 plain pending jobs.
before=$(rss_kib "$SERVER_PID")
for _ in $(seq 1 1000); do api -X POST "$URL/v1/jobs" -d '{"command":["python","train.py"],"gpus":1}' >/dev/null; done
settle
after=$(rss_kib "$SERVER_PID")
awk -v a="$after" -v b="$before" 'BEGIN { printf "1,000 plain pending jobs: %.0f B each\n", (a - b) * 1024 / 1000 }'
