#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The usage ledger's cost on the server's hot path: the durable submissions/s benchmark
# (SUBMIT_JOBS one-GPU jobs on an empty fleet, SUBMIT_CLIENTS clients) and the start-up
# benchmark (JOBS one-GPU jobs on NODES simulated 8-GPU nodes: first submission until all
# run, each start writing its ledger interval), each run with the ledger and with
# GPOOL_LEDGER_OFF=1 (its writes skipped), alternating, ROUNDS rounds of each; a fresh
# server and store per run. Prints every run and the medians.
#
#   bench/ledger_cost.sh [BUILD_DIR]     (default build/rel: gpool_bin and bench_submit_bench)
#   env: ROUNDS=3 SUBMIT_JOBS=20000 SUBMIT_CLIENTS=64 JOBS=10000 NODES=1250 CLIENTS=32
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
ROUNDS=${ROUNDS:-3} SUBMIT_JOBS=${SUBMIT_JOBS:-20000} SUBMIT_CLIENTS=${SUBMIT_CLIENTS:-64}
JOBS=${JOBS:-10000} NODES=${NODES:-1250} CLIENTS=${CLIENTS:-32}
for p in gpool bench_submit_bench; do
  [ -x "$BUILD/$p" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin bench_submit_bench" >&2; exit 2; }
done
source "$ROOT/bench/server_lib.sh"
TMP=$(mktemp -d /tmp/gpool-ledger.XXXXXX)
cleanup() {
  bench_server_stop
  rm -rf "$TMP"
}
trap cleanup EXIT

# run MODE KIND: one benchmark run on a fresh server; MODE on (ledger kept) or off
# (GPOOL_LEDGER_OFF=1); prints the figure (submissions/s or seconds to start all).
run() {
  local mode=$1 kind=$2 off=""
  [ "$mode" = off ] && off=1
  GPOOL_LEDGER_OFF=$off bench_server_start "$BUILD/gpool" "$TMP/server" 120
  if [ "$kind" = submit ]; then
    "$BUILD/bench_submit_bench" --server "$URL" --token bench-admin --clients "$SUBMIT_CLIENTS" \
      --jobs "$SUBMIT_JOBS" --timeout 600 >"$TMP/out"
    sed -n 's/^gpool submit: .* \([0-9.]*\) submissions\/s.*/\1/p' "$TMP/out" | head -n1
  else
    "$BUILD/bench_submit_bench" --server "$URL" --token bench-admin --clients "$CLIENTS" \
      --jobs "$JOBS" --wait-started --fake-nodes "$NODES" --agent-token bench-agent \
      --agent-threads 4 --timeout 600 >"$TMP/out"
    sed -n 's/^gpool start: all [0-9]* jobs running on the server \([0-9.]*\) s after.*/\1/p' "$TMP/out"
  fi
  bench_server_stop
}

median() { sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "-"}'; }

echo "== machine: $(nproc) CPUs; $ROUNDS rounds, ledger on and off alternating"
declare -A fig
for kind in submit start; do
  for r in $(seq 1 "$ROUNDS"); do
    for mode in on off; do
      v=$(run "$mode" "$kind")
      [ -n "$v" ] || { cat "$TMP/out" >&2; echo "no figure from the $kind run" >&2; exit 1; }
      echo "$kind round $r ledger $mode: $v"
      fig[$kind.$mode]+="$v "
    done
  done
done
for kind in submit start; do
  on=$(tr ' ' '\n' <<<"${fig[$kind.on]}" | grep . | median)
  off=$(tr ' ' '\n' <<<"${fig[$kind.off]}" | grep . | median)
  if [ "$kind" = submit ]; then
    what="durable submissions/s, $SUBMIT_JOBS jobs, $SUBMIT_CLIENTS clients (higher is better)"
  else
    what="s from first submission to all $JOBS jobs running on $NODES nodes (lower is better)"
  fi
  echo "== median $what: ledger on $on, off $off ($(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')x)"
done
