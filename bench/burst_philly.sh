#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bursting on the Philly replay (issue 20's autoscaling figure): the full Philly trace under
# the gpool preset, queues from philly_vc_nodes.csv, nodes of 8 H100s. Three replays:
#   full fixed    352 on-prem nodes (the Helios fleet's size);
#   small fixed   SMALL on-prem nodes (default 176: half of it) and nothing else;
#   small+burst   the same SMALL nodes, with a spot template (at SPOT_PRICE, reclaimed at
#                 5% a month with AWS's 2-minute notice) and an on-demand one (at
#                 OD_PRICE), up to 352 - SMALL nodes each, that autoscaling creates when
#                 jobs wait (after a 5-minute provider delay) and deletes after 10 minutes
#                 empty; the default class order tries spot first.
# On-prem GPUs are priced at ONPREM_PRICE a GPU-hour (an assumption: owning an H100 with
# power, space and staff, amortised; the cloud prices are 2026 list prices). Prints the
# total cost (the fleet's: every node from the first submission to the last end, provider
# nodes from their create call to their deletion), mean JCT and wait, peak nodes, provider
# nodes created and their node-hours and cost.
#
#   bench/burst_philly.sh [BUILD_DIR]   (default build/rel: a Release build of gpool_bin)
#   env: TRACES=DIR (philly.csv and philly_vc_nodes.csv; default traces/philly)
#        TIME_SCALE=4 SMALL=176 ONPREM_PRICE=2.00 SPOT_PRICE=2.41 OD_PRICE=6.88 SEED=1
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
TRACES=${TRACES:-$ROOT/traces/philly}
TIME_SCALE=${TIME_SCALE:-4} SMALL=${SMALL:-176} SEED=${SEED:-1}
ONPREM_PRICE=${ONPREM_PRICE:-2.00} SPOT_PRICE=${SPOT_PRICE:-2.41} OD_PRICE=${OD_PRICE:-6.88}
FULL=352
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
[ -r "$TRACES/philly.csv" ] && [ -r "$TRACES/philly_vc_nodes.csv" ] || { echo "no philly.csv and philly_vc_nodes.csv in $TRACES (set TRACES=DIR)" >&2; exit 2; }
[ "$SMALL" -ge 1 ] && [ "$SMALL" -lt "$FULL" ] || { echo "SMALL must be 1..$((FULL - 1))" >&2; exit 2; }
TMP=$(mktemp -d /tmp/gpool-burst-philly.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/prices.yaml" <<YAML
prices:
  currency: USD
  gpu_hour:
    - {model: H100-80GB, capacity: on-prem, price: $ONPREM_PRICE}
YAML
BURST=$((FULL - SMALL))
cat >"$TMP/templates.yaml" <<YAML
node_templates:
  - {name: burst-spot, model: H100-80GB, gpus: 8, capacity: spot,
     price_per_gpu_hour: $SPOT_PRICE, max_nodes: $BURST}
  - {name: burst-od, model: H100-80GB, gpus: 8, capacity: on-demand,
     price_per_gpu_hour: $OD_PRICE, max_nodes: $BURST}
YAML

common=(sim replay --trace "$TRACES/philly.csv" --queues-from "$TRACES/philly_vc_nodes.csv"
        --prices "$TMP/prices.yaml" --policy gpool --time-scale "$TIME_SCALE" --seed "$SEED"
        --checkpoint-interval 30m --restart-overhead 5m --no-progress --deterministic -o json)

# run NAME FLEET [FLAGS...]: one replay, its JSON in $TMP/NAME.json.
run() {
  local name=$1 fleet=$2
  shift 2
  echo "== gpool ${common[*]} --fleet $fleet $*"
  /usr/bin/time -f "%U" -o "$TMP/$name.cpu" "$BUILD/gpool" "${common[@]}" --fleet "$fleet" "$@" >"$TMP/$name.json"
}
run full "${FULL}x8xH100-80GB:on-prem"
run small "${SMALL}x8xH100-80GB:on-prem"
run burst "${SMALL}x8xH100-80GB:on-prem" --templates "$TMP/templates.yaml" \
  --provider-delay 5m --scale-down-after 10m --spot-interruptions 0.05 --spot-notice 2m

# key FILE KEY [OBJECT]: a value of the run's JSON, top level or inside "OBJECT": {...}.
key() {
  local f=$1 k=$2 obj=${3:-}
  if [ -n "$obj" ]; then sed -n "/\"$obj\": {/,/}/p" "$f"; else cat "$f"; fi |
    sed -n "s/^ *\"$k\": \([^,]*\),\{0,1\}$/\1/p" | head -n1
}
# row LABEL NAME NODES: NODES is the fixed fleet's size, for runs without autoscaling.
row() {
  local f=$TMP/$2.json peak created hours pcost
  peak=$(key "$f" peak_nodes scale); peak=${peak:-$3}
  created=$(key "$f" nodes_created scale); created=${created:-0}
  hours=$(key "$f" provider_node_hours scale); hours=${hours:-0}
  pcost=$(key "$f" provider_cost scale); pcost=${pcost:-0}
  printf '%-12s %13.0f %8.3f %9.1f %6s %8s %10.0f %12.0f %9s %6s\n' "$1" "$(key "$f" fleet cost)" \
    "$(awk -v s="$(key "$f" avg_jct_s)" 'BEGIN {print s / 3600}')" \
    "$(awk -v s="$(key "$f" avg_wait_s)" 'BEGIN {print s / 60}')" \
    "$peak" "$created" "$hours" "$pcost" "$(key "$f" unfinished)" "$(cat "$TMP/$2.cpu")"
}
echo
printf '%-12s %13s %8s %9s %6s %8s %10s %12s %9s %6s\n' "" "total USD" "JCT h" "wait min" \
  "peak" "created" "node-h" "provider USD" "unfinished" "CPU s"
row "full fixed" full "$FULL"
row "small fixed" small "$SMALL"
row "small+burst" burst "$SMALL"
echo
f=$TMP/burst.json
awk -v ff="$(key "$TMP/full.json" fleet cost)" -v bf="$(key "$f" fleet cost)" \
    -v sw="$(key "$TMP/small.json" avg_wait_s)" -v bw="$(key "$f" avg_wait_s)" \
    -v del="$(key "$f" nodes_deleted scale)" -v intr="$(key "$f" interruptions spot)" \
    -v jobs="$(key "$f" jobs_interrupted spot)" -v lost="$(key "$f" gpu_hours_lost spot)" \
    -v ph="$(key "$f" provider_gpu_hours scale)" -v pc="$(key "$f" provider_cost scale)" \
    'BEGIN {printf "== small+burst: total cost %.1f%% below full fixed, mean wait %.1f min (small fixed: %.1f min); %d provider nodes deleted, %d spot reclaims (%d jobs interrupted, %.1f GPU-h lost); provider GPU-hours at %.2f USD on average\n",
            100 * (ff - bf) / ff, bw / 60, sw / 60, del, intr, jobs, lost, pc / ph}'
