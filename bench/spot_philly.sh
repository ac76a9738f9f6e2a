#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Spot capacity on the Philly replay with prices (issue 20's figure): the full Philly trace
# under the gpool preset on the Helios fleet's shape (352 nodes x 8 GPUs, queues from
# philly_vc_nodes.csv) priced as H100s: on-demand at $6.88 a GPU-hour, spot SPOT_PRICE
# (default $2.41: 65% off, the middle of the seeds' 60-70%). Four replays:
#   on-demand     all 352 nodes on-demand;
#   spot 5%       half the GPUs spot (the spot group first, so the preset's packing puts
#                 jobs there), reclaimed at 5% a month, no usable notice: jobs keep only
#                 their 30-minute checkpoints;
#   spot 20%      the same at 20% a month;
#   spot 20% +2m  the same with a 2-minute notice (AWS): jobs checkpoint at the notice.
# Restart overhead 5 min, replacement after 5 min. Prints fleet and job cost, mean JCT and
# wait, interruptions, jobs interrupted and GPU-hours lost for each, and what spot saved.
# The rate is the probability that a spot node is reclaimed within 30 days (docs/simulator.md,
# "Spot interruptions").
#
#   bench/spot_philly.sh [BUILD_DIR]   (default build/rel: a Release build of gpool_bin)
#   env: TRACES=DIR (philly.csv and philly_vc_nodes.csv; default traces/philly)
#        SPOT_PRICE=2.41 TIME_SCALE=1 SEED=1
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
TRACES=${TRACES:-$ROOT/traces/philly}
SPOT_PRICE=${SPOT_PRICE:-2.41} TIME_SCALE=${TIME_SCALE:-1} SEED=${SEED:-1}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
[ -r "$TRACES/philly.csv" ] && [ -r "$TRACES/philly_vc_nodes.csv" ] || { echo "no philly.csv and philly_vc_nodes.csv in $TRACES (set TRACES=DIR)" >&2; exit 2; }
TMP=$(mktemp -d /tmp/gpool-spot-philly.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/prices.yaml" <<YAML
prices:
  currency: USD
  gpu_hour:
    - {model: H100-80GB, capacity: on-demand, price: 6.88}
    - {model: H100-80GB, capacity: spot, price: $SPOT_PRICE}
YAML

ON_DEMAND=352x8xH100-80GB:on-demand
HALF_SPOT=176x8xH100-80GB:spot,176x8xH100-80GB:on-demand
common=(sim replay --trace "$TRACES/philly.csv" --queues-from "$TRACES/philly_vc_nodes.csv"
        --prices "$TMP/prices.yaml" --policy gpool --time-scale "$TIME_SCALE" --seed "$SEED"
        --checkpoint-interval 30m --restart-overhead 5m --provider-delay 5m
        --no-progress --deterministic -o json)

# run NAME FLEET [SPOT FLAGS...]: one replay, its JSON in $TMP/NAME.json.
run() {
  local name=$1 fleet=$2
  shift 2
  echo "== gpool ${common[*]} --fleet $fleet $*"
  /usr/bin/time -f "%U" -o "$TMP/$name.cpu" "$BUILD/gpool" "${common[@]}" --fleet "$fleet" "$@" >"$TMP/$name.json"
}
run od "$ON_DEMAND"
run s5 "$HALF_SPOT" --spot-interruptions 0.05 --spot-notice 0
run s20 "$HALF_SPOT" --spot-interruptions 0.2 --spot-notice 0
run s20n "$HALF_SPOT" --spot-interruptions 0.2 --spot-notice 2m

# key FILE KEY [OBJECT]: a number of the run's JSON, top level or inside "OBJECT": {...}.
key() {
  local f=$1 k=$2 obj=${3:-}
  if [ -n "$obj" ]; then sed -n "/\"$obj\": {/,/}/p" "$f"; else cat "$f"; fi |
    sed -n "s/^ *\"$k\": \([^,]*\),\{0,1\}$/\1/p" | head -n1
}
row() {
  local f=$TMP/$2.json
  printf '%-14s %14.0f %14.0f %9.3f %9.1f %6s %6s %9s %6s\n' "$1" "$(key "$f" fleet cost)" \
    "$(key "$f" jobs cost)" "$(awk -v s="$(key "$f" avg_jct_s)" 'BEGIN {print s / 3600}')" \
    "$(awk -v s="$(key "$f" avg_wait_s)" 'BEGIN {print s / 60}')" \
    "$(key "$f" interruptions spot)" "$(key "$f" jobs_interrupted spot)" \
    "$(key "$f" gpu_hours_lost spot)" "$(cat "$TMP/$2.cpu")"
}
echo
printf '%-14s %14s %14s %9s %9s %6s %6s %9s %6s\n' "" "fleet USD" "jobs USD" "JCT h" "wait min" \
  "intr" "jobs" "GPU-h lost" "CPU s"
row on-demand od
row "spot 5%" s5
row "spot 20%" s20
row "spot 20% +2m" s20n
echo
for r in s5 s20 s20n; do
  awk -v name="$r" -v of="$(key "$TMP/od.json" fleet cost)" -v sf="$(key "$TMP/$r.json" fleet cost)" \
      -v oj="$(key "$TMP/od.json" jobs cost)" -v sj="$(key "$TMP/$r.json" jobs cost)" \
      -v ot="$(key "$TMP/od.json" avg_jct_s)" -v st="$(key "$TMP/$r.json" avg_jct_s)" \
      -v ow="$(key "$TMP/od.json" avg_wait_s)" -v sw="$(key "$TMP/$r.json" avg_wait_s)" \
      'BEGIN {printf "== %s: fleet cost %.1f%% lower, job cost %.1f%% lower, mean JCT %+.1f s (%+.3f%%), mean wait %+.1f s\n",
              name, 100 * (of - sf) / of, 100 * (oj - sj) / oj, st - ot, 100 * (st - ot) / ot, sw - ow}'
done
