#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The server's cost of the web console's live updates: a fresh `gpool server` while jobs
# churn (CLIENTS clients each submit and cancel JOBS jobs as fast as the server answers),
# first with no event stream open, then with STREAMS streams (GET /v1/events, each read as
# a browser would, by a client of its own). Prints for each run the server's CPU seconds
# (user + system, from /proc), its RSS after the churn, the churn's wall time, and with
# streams the events one stream received (each job's cancellation must be among them).
#
#   bench/web_events.sh [BUILD_DIR]        (default build/rel; needs gpool, curl, python3)
#   env: STREAMS=100 CLIENTS=4 JOBS=1000
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
STREAMS=${STREAMS:-100} CLIENTS=${CLIENTS:-4} JOBS=${JOBS:-1000}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake --build $BUILD --target gpool_bin" >&2; exit 2; }
source "$ROOT/bench/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-events.XXXXXX)
STREAM_PIDS=()
stop_streams() { for p in "${STREAM_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; STREAM_PIDS=(); }
trap 'stop_streams; bench_server_stop; rm -rf "$TMP"' EXIT

cpu_s() {  # the server's user + system CPU seconds so far
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$SERVER_PID/stat"
}
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$SERVER_PID/status"; }

# CLIENTS processes, each JOBS submissions and cancels over one keep-alive connection.
churn() {
  python3 - "$URL" "$CLIENTS" "$JOBS" <<'PY'
import http.client, json, sys, urllib.parse
from multiprocessing import Process
url, clients, jobs = urllib.parse.urlparse(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
hdr = {'Authorization': 'Bearer bench-admin', 'Content-Type': 'application/json'}
def run(k):
    c = http.client.HTTPConnection(url.hostname, url.port)
    body = json.dumps({'name': f'churn-{k}', 'command': ['sleep', '1'], 'gpus': 1})
    for _ in range(jobs):
        c.request('POST', '/v1/jobs', body, hdr)
        r = c.getresponse(); doc = json.loads(r.read())
        assert r.status == 201, doc
        c.request('POST', f"/v1/jobs/{doc['job']['id']}/cancel", '', hdr)
        r = c.getresponse(); r.read()
        assert r.status == 200
ps = [Process(target=run, args=(k,)) for k in range(clients)]
for p in ps: p.start()
for p in ps: p.join()
sys.exit(max(p.exitcode for p in ps))
PY
}

run_once() {  # $1: streams to open
  bench_server_stop
  rm -rf "$TMP/server"
  # Every stream is bench-admin's: as many streams as one user may hold as the bench opens.
  bench_server_config "$TMP/server" 600 "events_max_streams_per_user: $(($1 > 0 ? $1 : 1))"
  bench_server_run "$BUILD/gpool" "$TMP/server"
  for i in $(seq 1 "$1"); do
    curl -sN -H "Authorization: Bearer bench-admin" "$URL/v1/events" >"$TMP/stream.$i" 2>/dev/null &
    STREAM_PIDS+=($!)
  done
  if [ "$1" -gt 0 ]; then  # every stream open before the churn starts
    for _ in $(seq 1 200); do
      n=$(curl -s "$URL/metrics" | awk '/^gpool_event_streams / {print $2}')
      [ "${n:-0}" -ge "$1" ] && break
      sleep 0.05
    done
  fi
  local cpu0 t0 t1 cpu1
  cpu0=$(cpu_s); t0=$(date +%s.%N)
  churn
  t1=$(date +%s.%N); sleep 0.5; cpu1=$(cpu_s)
  local got=0 ended=0
  if [ "$1" -gt 0 ]; then
    got=$(grep -c '^event: job' "$TMP/stream.1" || true)
    ended=$(grep -c '"state":"cancelled"' "$TMP/stream.1" || true)
  fi
  printf '%4d streams: server CPU %.2f s, RSS %s MB, churn of %d jobs %.2f s wall%s\n' \
    "$1" "$(echo "$cpu1 - $cpu0" | bc -l)" "$(rss_mb)" $((CLIENTS * JOBS)) \
    "$(echo "$t1 - $t0" | bc -l)" \
    "$([ "$1" -gt 0 ] && echo ", stream 1 got $got job events ($ended cancellations)" || true)"
  stop_streams
  bench_server_stop
}

echo "== $CLIENTS clients x $JOBS jobs submitted then cancelled; $STREAMS streams"
run_once 0
run_once "$STREAMS"
run_once 0
run_once "$STREAMS"
