#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The server at scale through its real API: a fresh `gpool server` (SQLite in a temp dir)
# and bench_submit_bench with NODES fake 8-GPU nodes heartbeating over the agent protocol
# (no processes forked; see that program's header), then JOBS one-GPU jobs. Measures
#   - memory: the server's RSS once every node has registered, and after HOLD seconds of
#     heartbeats from all of them (the ratio is the heartbeat traffic's residue), and the
#     server's CPU time over those seconds (what heartbeats alone cost);
#   - the steady-state scheduling cycle: with the fleet full (NODES x 8 running), the rest
#     pending and nothing changing, the mean wall and CPU time per cycle over HOLD seconds
#     (gpool_scheduling_cycle_seconds _sum/_count, gpool_scheduling_cycle_cpu_seconds_total)
#     and the last-cycle gauge sampled every second (min/median/max), and how many of those
#     cycles skipped their step (nothing had changed). On a small machine
#     the load generator shares the CPUs, so wall time includes waiting for one;
#   - beside it, the core's memo step at the same size (bench_sched_bench NODES JOBS).
#
#   bench/server_scale.sh [BUILD_DIR]     (default build/rel: a Release build of gpool_bin,
#                                          bench_submit_bench and bench_sched_bench)
#   env: NODES=10000 JOBS=100000 HOLD=30 CLIENTS=16
#        PERF=FILE records the server with `perf record` during the steady hold
#        (PERF_OPTS, default -g; --call-graph dwarf for call chains in a Release build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
NODES=${NODES:-10000} JOBS=${JOBS:-100000} HOLD=${HOLD:-30} CLIENTS=${CLIENTS:-16}
for p in gpool bench_submit_bench bench_sched_bench; do
  [ -x "$BUILD/$p" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin bench_submit_bench bench_sched_bench" >&2; exit 2; }
done
source "$ROOT/bench/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-scale.XXXXXX)
BENCH_PID=""
cleanup() {
  [ -n "$BENCH_PID" ] && kill "$BENCH_PID" 2>/dev/null
  bench_server_stop
  rm -rf "$TMP"
}
trap cleanup EXIT
bench_server_start "$BUILD/gpool" "$TMP/server" 600

rss_mb() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$SERVER_PID/status"; }
# The server's CPU time so far in seconds (utime + stime from /proc, in clock ticks).
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz}' "/proc/$SERVER_PID/stat"; }
# A scrape is read whole into a file before it is searched: `curl | awk '...; exit'` made
# curl fail with "failure writing output" (exit 23) whenever awk stopped reading before a
# large /metrics was all written, which aborted the run under `set -e`. A scrape that still
# fails (no answer in 10 s, an HTTP error) is reported and counted, never fatal.
SCRAPE_ERR=""
scrape() {  # scrape FILE: /metrics into FILE, or SCRAPE_ERR says why not (status 1)
  local code rc=0
  code=$(curl -s -o "$1" -w '%{http_code}' --max-time 10 "$URL/metrics") || rc=$?
  if [ "$rc" != 0 ]; then SCRAPE_ERR="curl exit $rc"; return 1; fi
  if [ "$code" != 200 ]; then SCRAPE_ERR="HTTP $code"; return 1; fi
}
metric_in() { awk -v m="$2" '$1 == m {print $2; exit}' "$1"; }
# scrape_retry FILE: up to 5 tries a second apart (for the figures the summary needs).
scrape_retry() {
  for _ in 1 2 3 4 5; do scrape "$1" && return 0; echo "   (scrape failed: $SCRAPE_ERR; retrying)" >&2; sleep 1; done
  return 1
}
wait_line() {  # wait_line TEXT: until the benchmark printed it (bounded by its own timeout)
  until grep -q "$1" "$TMP/bench.out" 2>/dev/null; do
    kill -0 "$BENCH_PID" 2>/dev/null || { cat "$TMP/bench.out"; echo "benchmark ended early" >&2; exit 1; }
    sleep 0.2
  done
}

echo "== machine: $(nproc) CPUs; $NODES nodes x 8 GPUs, $JOBS one-GPU jobs, hold $HOLD s"
"$BUILD/bench_submit_bench" --server "$URL" --token bench-admin --clients "$CLIENTS" --jobs "$JOBS" \
  --fake-nodes "$NODES" --agent-token bench-agent --agent-threads 4 --hold "$HOLD" \
  --timeout 1800 >"$TMP/bench.out" 2>&1 &
BENCH_PID=$!
wait_line "hold: fleet up, for"
rss_reg=$(rss_mb) cpu_hb0=$(cpu_s) t_hb0=$(date +%s.%N)
wait_line "hold: fleet up, done"
rss_hb=$(rss_mb) cpu_hb1=$(cpu_s) t_hb1=$(date +%s.%N)
wait_line "hold: steady, for"
sleep 2  # the last starts' events settle
scrape_retry "$TMP/m0" || { echo "no /metrics at the start of the hold: $SCRAPE_ERR" >&2; exit 1; }
s0=$(metric_in "$TMP/m0" gpool_scheduling_cycle_seconds_sum) c0=$(metric_in "$TMP/m0" gpool_scheduling_cycle_seconds_count)
u0=$(metric_in "$TMP/m0" gpool_scheduling_cycle_cpu_seconds_total)
k0=$(metric_in "$TMP/m0" gpool_scheduling_steps_skipped_total)
if [ -n "${PERF:-}" ]; then
  perf record ${PERF_OPTS:--g} -o "$PERF" -p "$SERVER_PID" -- sleep $((HOLD - 4)) >/dev/null 2>&1 &
fi
samples=() failed=0
for i in $(seq 1 $((HOLD - 4))); do
  if scrape "$TMP/m"; then
    samples+=("$(metric_in "$TMP/m" gpool_scheduling_last_cycle_seconds)")
  else
    failed=$((failed + 1))
    echo "   scrape $i of $((HOLD - 4)) failed: $SCRAPE_ERR" >&2
  fi
  sleep 1
done
scrape_retry "$TMP/m1" || { echo "no /metrics at the end of the hold: $SCRAPE_ERR" >&2; exit 1; }
s1=$(metric_in "$TMP/m1" gpool_scheduling_cycle_seconds_sum) c1=$(metric_in "$TMP/m1" gpool_scheduling_cycle_seconds_count)
u1=$(metric_in "$TMP/m1" gpool_scheduling_cycle_cpu_seconds_total)
k1=$(metric_in "$TMP/m1" gpool_scheduling_steps_skipped_total)
rss_steady=$(rss_mb)
wait "$BENCH_PID" || true
BENCH_PID=""
grep -E "^(fleet|gpool submit|gpool start):" "$TMP/bench.out" || true
running=$(curl -sf -H "Authorization: Bearer bench-admin" "$URL/v1/queues" | jq '[.queues[].running_jobs] | add')
echo "== server memory: $rss_reg MB after $NODES nodes registered; $rss_hb MB after $HOLD s of their heartbeats ($(awk -v a="$rss_hb" -v b="$rss_reg" 'BEGIN {printf "%.2f", a / b}')x); $rss_steady MB steady with $running running"
hb_rate=$(sed -n 's/^hold: fleet up, done (.*, \([0-9]*\)\/s)$/\1/p' "$TMP/bench.out")
echo "== heartbeats alone (no job yet${hb_rate:+, $hb_rate answered a second}): the server used $(awk -v a="$cpu_hb0" -v b="$cpu_hb1" -v s="$t_hb0" -v e="$t_hb1" 'BEGIN {printf "%.2f s CPU over %.1f s (%.0f%% of one core)", b - a, e - s, 100 * (b - a) / (e - s)}')"
printf '%s\n' "${samples[@]}" | sort -g | awk -v n="$((c1 - c0))" -v s="$(awk -v a="$s1" -v b="$s0" 'BEGIN {print a - b}')" \
  -v u="$(awk -v a="$u1" -v b="$u0" 'BEGIN {print a - b}')" '
  {v[NR] = $1 * 1000} END {
    printf "== steady cycle: %d cycles, mean %.2f ms wall, %.2f ms CPU; last-cycle gauge (wall) over %d s: min %.2f, median %.2f, max %.2f ms\n",
      n, n ? s * 1000 / n : 0, n ? u * 1000 / n : 0, NR, v[1], v[int((NR + 1) / 2)], v[NR] }'
[ -n "$k0" ] && echo "== of those cycles, $(awk -v a="$k1" -v b="$k0" 'BEGIN {print a - b}') skipped their step (nothing had changed)"
echo "== scrapes of /metrics during the hold: $((${#samples[@]} + failed)), $failed failed"
echo "== the core alone at this size (incremental memo step):"
"$BUILD/bench_sched_bench" "$NODES" "$JOBS" 20 | grep -E "^incremental|the same steps"
