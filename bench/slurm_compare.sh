#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpool beside Slurm 22.05 on this machine, measured in one run.
#
#   bench/slurm_compare.sh [BUILD_DIR]        (default build/cli-rel: a Release build)
#   env: JOBS=10000 NODES=1250 CLIENTS=16 SLURM_JOBS=$JOBS SKIP_SLURM=1
#
# gpool: a real `gpool server` (SQLite in a temp dir, durable on ack) and
# bench_submit_bench, which registers NODES simulated 8-GPU nodes over the agent protocol
# (fake agents that answer start orders with `started` events without forking; see the
# program's header) and then submits JOBS one-GPU jobs from CLIENTS keep-alive clients,
# timing until all are running. A second gpool run uses one client, as sbatch does, and a
# third runs the `gpool submit` command once per job, as the sbatch loop does.
# Slurm: bench/slurm_peer.sh (Debian's slurm-wlm packages, a throwaway config in this
# run's temp dir) with NODES nodes in CLOUD state (scheduler
# only: jobs are allocated and wait in CONFIGURING, the Slurm equivalent of "started" with
# no process), sbatch one job after another, "Jobs started" from sdiag.
# Prints each figure and the ratios gpool/Slurm.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=${1:-$ROOT/build/cli-rel}
GPOOL=$BUILD/gpool
BENCH=$BUILD/bench_submit_bench
PEER=$HERE/slurm_peer.sh
JOBS=${JOBS:-10000}
NODES=${NODES:-1250}
CLIENTS=${CLIENTS:-16}
SLURM_JOBS=${SLURM_JOBS:-$JOBS}
[ -x "$GPOOL" ] && [ -x "$BENCH" ] || { echo "build first: cmake -S . -B build/cli-rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/cli-rel" >&2; exit 2; }

source "$HERE/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-bench.XXXXXX)
cleanup() {
  bench_server_stop
  if [ -n "${SLURM_PEER_DIR:-}" ]; then
    bash "$PEER" stop >/dev/null 2>&1
    for _ in $(seq 1 50); do pgrep -f "$SLURM_PEER_DIR" >/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$TMP" 2>/dev/null || true
}
trap cleanup EXIT

start_server() { bench_server_start "$GPOOL" "$TMP/server" 120; }  # a fresh server, empty store

echo "== machine: $(nproc) CPUs, $(uname -sr); $(date -u +%FT%TZ)"
echo "== gpool: $NODES simulated nodes x 8 GPUs, $JOBS one-GPU jobs, $CLIENTS clients"
start_server
"$BENCH" --server "$URL" --token bench-admin --clients "$CLIENTS" --jobs "$JOBS" --wait-started \
  --fake-nodes "$NODES" --agent-token bench-agent --agent-threads 4 --timeout 600 | tee "$TMP/gpool.out"
echo "== gpool: one client, one submission after another (like sbatch), $JOBS jobs on an empty fleet"
start_server
"$BENCH" --server "$URL" --token bench-admin --clients 1 --jobs "$JOBS" --timeout 600 | tee "$TMP/gpool1.out"
CLI_JOBS=${CLI_JOBS:-1000}
echo "== gpool: the CLI, one 'gpool submit' process per job (like sbatch), $CLI_JOBS jobs"
t0=$(date +%s.%N)
for _ in $(seq 1 "$CLI_JOBS"); do
  GPOOL_SERVER=$URL GPOOL_TOKEN=bench-admin "$GPOOL" submit -g 1 -- true >/dev/null
done
t1=$(date +%s.%N)
g_cli=$(echo "scale=1; $CLI_JOBS / ($t1 - $t0)" | bc)
echo "gpool submit CLI: $CLI_JOBS jobs in $(echo "$t1 - $t0" | bc) s: $g_cli submissions/s"
bench_server_stop

rate() { sed -n 's/.* \([0-9.]*\) submissions\/s.*/\1/p' "$1" | head -n1; }
g_rate=$(rate "$TMP/gpool.out")
g1_rate=$(rate "$TMP/gpool1.out")
g_start=$(sed -n 's/.*all [0-9]* start orders received by the agents \([0-9.]*\) s after the first.*/\1/p' "$TMP/gpool.out")

if [ -z "${SKIP_SLURM:-}" ]; then
  echo "== slurm 22.05: $NODES CLOUD nodes x 8 GPUs, $SLURM_JOBS one-GPU jobs, sbatch one after another"
  # A fresh state directory per run: a controller that reloads 10,000 old jobs starts late.
  export SLURM_PEER_DIR=$TMP/slurm
  bash "$PEER" start "$NODES" cloud >/dev/null 2>&1 || true
  for _ in $(seq 1 120); do SLURM_CONF=$SLURM_PEER_DIR/etc/slurm.conf sinfo -h >/dev/null 2>&1 && break; sleep 0.5; done
  bash "$PEER" bench "$SLURM_JOBS" | tee "$TMP/slurm.out"
  bash "$PEER" stop >/dev/null 2>&1 || true
  s_rate=$(sed -n 's/.*submit \([0-9.]*\)\/s.*/\1/p' "$TMP/slurm.out")
  s_start=$(sed -n 's/.*all started after \([0-9.]*\) s.*/\1/p' "$TMP/slurm.out")
  echo "== side by side (same run)"
  printf "%-44s %12s %12s %10s\n" "figure" "gpool" "slurm" "ratio"
  printf "%-44s %12s %12s %9sx\n" "submissions/s ($CLIENTS clients vs sbatch)" "$g_rate" "$s_rate" "$(echo "scale=1; $g_rate / $s_rate" | bc)"
  printf "%-44s %12s %12s %9sx\n" "submissions/s (1 client vs sbatch)" "$g1_rate" "$s_rate" "$(echo "scale=1; $g1_rate / $s_rate" | bc)"
  printf "%-44s %12s %12s %9sx\n" "submissions/s (gpool submit CLI vs sbatch)" "$g_cli" "$s_rate" "$(echo "scale=1; $g_cli / $s_rate" | bc)"
  if [ -n "$g_start" ] && [ -n "$s_start" ]; then
    printf "%-44s %12s %12s %9sx\n" "s until all jobs started ($JOBS vs $SLURM_JOBS)" "$g_start" "$s_start" "$(echo "scale=1; $s_start / $g_start" | bc)"
  fi
  echo "(ratios: how many times faster gpool is)"
fi
