#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Whether one client's heavy reads stall everyone else's: a fresh `gpool server` holding
# JOBS held jobs of about 200 KB each (command and environment, near the largest job
# max_job_bytes allows), then PARALLEL clients each
# reading the whole held list (following `next`) ROUNDS times, while a bystander times
# GET /v1/queues every 100 ms. Prints the bystander's slowest and median answer, the
# server's RSS before and at its peak, and how long the readers took.
#
#   bench/http_stall.sh [BUILD_DIR]        (default build/rel; needs gpool, curl, jq, python3)
#   env: JOBS=1000 PARALLEL=4 ROUNDS=3
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
JOBS=${JOBS:-1000} PARALLEL=${PARALLEL:-4} ROUNDS=${ROUNDS:-3}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake --build $BUILD --target gpool_bin" >&2; exit 2; }
source "$ROOT/bench/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-stall.XXXXXX)
trap 'bench_server_stop; rm -rf "$TMP"' EXIT
bench_server_start "$BUILD/gpool" "$TMP/server" 600
AUTH="Authorization: Bearer bench-admin"
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }

python3 - "$TMP/job.json" <<'PY'
import json, sys
word = 'x' * 60000
env = {f'K{i}': 'v' * 2000 for i in range(10)}
json.dump({'command': ['echo', word, word, word], 'env': env, 'gpus': 1, 'hold': True},
          open(sys.argv[1], 'w'))
PY
for _ in $(seq 1 "$JOBS"); do
  curl -sSf -o /dev/null -X POST -H "$AUTH" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/job.json" "$URL/v1/jobs"
done
rss0=$(rss_kb)
echo "== $JOBS held jobs of $(wc -c <"$TMP/job.json") bytes; server RSS $((rss0 / 1024)) MB"

read_all() {  # the whole held list, page after page
  local next="" n=0
  for _ in $(seq 1 "$ROUNDS"); do
    next=""
    while :; do
      page=$(curl -sf -H "$AUTH" "$URL/v1/jobs?state=held${next:+&next=$next}" | jq -c '{n: (.jobs | length), next}')
      n=$((n + $(jq -r .n <<<"$page")))
      next=$(jq -r '.next // empty' <<<"$page")
      [ -n "$next" ] || break
    done
  done
  echo "$n" >"$TMP/read.$1"
}

t0=$(date +%s.%N)
pids=()
for i in $(seq 1 "$PARALLEL"); do read_all "$i" & pids+=($!); done
peak=$rss0
: >"$TMP/lat"
while kill -0 "${pids[@]}" 2>/dev/null; do
  curl -sf -o /dev/null -w '%{time_total}\n' -H "$AUTH" "$URL/v1/queues" >>"$TMP/lat" || echo 99 >>"$TMP/lat"
  r=$(rss_kb); [ "$r" -gt "$peak" ] && peak=$r
  sleep 0.1
done
wait "${pids[@]}" || true
t1=$(date +%s.%N)
read_jobs=$(cat "$TMP"/read.* | awk '{n += $1} END {print n}')
echo "== $PARALLEL readers read $read_jobs jobs in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s"
sort -g "$TMP/lat" | awk '{v[NR] = $1 * 1000} END {
  printf "== bystander GET /v1/queues: %d answers, median %.0f ms, slowest %.0f ms\n", NR, v[int((NR + 1) / 2)], v[NR] }'
echo "== server RSS: $((rss0 / 1024)) MB before, $((peak / 1024)) MB at the peak (+$(((peak - rss0) / 1024)) MB)"
