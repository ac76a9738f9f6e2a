#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The idle policy on the Philly replay with prices (issue 19's figure): the full Philly trace
# under the gpool preset on the Helios fleet's shape (352 nodes x 8 GPUs, queues from
# philly_vc_nodes.csv) priced as on-demand H100s at $6.88 a GPU-hour (the "Pricing Philly"
# set-up of docs/simulator.md), with the idle model --idle-tail IDLE_TAIL and the policy
# {window: 30m, grace: 10m, action: requeue}. Prints the replay's table and the figures:
# idle GPU-hours of the model, GPU-hours and money the policy freed, and the change in mean
# wait and JCT against the same replay without the policy (which the command also runs).
#
# Philly has no per-job utilisation: the idle stretches are an ASSUMPTION (a share of the
# jobs holds its GPUs idle for the last part of its run), not a measurement; see
# docs/simulator.md ("Idle GPUs").
#
#   bench/idle_policy_philly.sh [BUILD_DIR]   (default build/rel: a Release build of gpool_bin)
#   env: TRACES=DIR (philly.csv and philly_vc_nodes.csv; default traces/philly)
#        IDLE_TAIL=0.2:0.25 TIME_SCALE=1 SEED=1
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
TRACES=${TRACES:-$ROOT/traces/philly}
IDLE_TAIL=${IDLE_TAIL:-0.2:0.25} TIME_SCALE=${TIME_SCALE:-1} SEED=${SEED:-1}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
[ -r "$TRACES/philly.csv" ] && [ -r "$TRACES/philly_vc_nodes.csv" ] || { echo "no philly.csv and philly_vc_nodes.csv in $TRACES (set TRACES=DIR)" >&2; exit 2; }
TMP=$(mktemp -d /tmp/gpool-idle-philly.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/prices.yaml" <<'YAML'
prices:
  currency: USD
  gpu_hour:
    - {model: H100-80GB, capacity: on-demand, price: 6.88}
YAML
cat >"$TMP/idle.yaml" <<'YAML'
idle_policy: {window: 30m, grace: 10m, action: requeue}
YAML

args=(sim replay --trace "$TRACES/philly.csv" --queues-from "$TRACES/philly_vc_nodes.csv"
      --fleet 352x8xH100-80GB:on-demand --prices "$TMP/prices.yaml" --policy gpool
      --time-scale "$TIME_SCALE" --seed "$SEED" --idle-tail "$IDLE_TAIL"
      --idle-policy "$TMP/idle.yaml" --no-progress)
echo "== gpool ${args[*]}"
/usr/bin/time -f "%U" -o "$TMP/cpu" "$BUILD/gpool" "${args[@]}" -o json --deterministic >"$TMP/out.json"
"$BUILD/gpool" "${args[@]}" | sed -n '/^  idle/,/^$/p;/^  cost/p;/^  wait/p;/^  JCT/p'

# A key of the replay's `idle` object (the last object of the JSON).
idle() { sed -n '/"idle": {/,$p' "$TMP/out.json" | sed -n "s/^ *\"$1\": \([^,]*\),\{0,1\}$/\1/p" | head -n1; }
echo "== idle model $IDLE_TAIL (assumed): $(idle jobs) jobs, $(idle gpu_hours) GPU-hours idle"
echo "== policy freed $(idle released_gpu_hours) GPU-hours = $(idle released_cost) USD" \
     "($(idle requeued) jobs requeued); idle GPU-hours cost $(idle cost) USD in all"
echo "== mean wait $(idle baseline_avg_wait_s) s without the policy, change $(idle avg_wait_change_s) s;" \
     "mean JCT $(idle baseline_avg_jct_s) s, change $(idle avg_jct_change_s) s"
echo "== CPU: $(cat "$TMP/cpu") s for the replay and its run without the policy"
