#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fair share over time on the Philly replay (issue 37's figure): the full Philly trace on the
# Helios fleet (352 nodes x 8 GPUs, queues from philly_vc_nodes.csv) at --time-scale
# TIME_SCALE, under fifo, backfill, gpool without usage, and gpool with usage that never
# decays (--half-life off) and that halves every 1 h, 1 day and 7 days. Prints one markdown
# row per replay: the instantaneous Jain index, the weekly cumulative Jain index (min / mean
# / last over the weeks), mean wait, preemptions and the replay's CPU seconds (the only
# figure that is not deterministic). docs/simulator.md ("Figures") holds the table.
#
#   bench/fairshare_philly.sh [BUILD_DIR]   (default build/rel: a Release build of gpool_bin)
#   env: TRACES=DIR (philly.csv and philly_vc_nodes.csv; default traces/philly)
#        TIME_SCALE=7 (93% offered load) JOBS=1 (replays run at once)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/rel}
TRACES=${TRACES:-$ROOT/traces/philly}
TIME_SCALE=${TIME_SCALE:-7} JOBS=${JOBS:-1}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
if [ ! -r "$TRACES/philly.csv" ] || [ ! -r "$TRACES/philly_vc_nodes.csv" ]; then
  echo "no philly.csv and philly_vc_nodes.csv in $TRACES (set TRACES=DIR)" >&2; exit 2
fi
command -v jq >/dev/null || { echo "jq is needed to read the replays' JSON" >&2; exit 2; }
TMP=$(mktemp -d /tmp/gpool-fairshare-philly.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# label|policy and options
runs=("fifo|--policy fifo" "backfill|--policy backfill" "gpool, no usage|--policy gpool"
      "gpool, usage without decay (off)|--policy gpool --half-life off"
      "gpool, half-life 1h|--policy gpool --half-life 1h"
      "gpool, half-life 1d|--policy gpool --half-life 1d"
      "gpool, half-life 7d|--policy gpool --half-life 7d")
one() {
  local i=$1 opts=${runs[$1]#*|}
  # shellcheck disable=SC2086 # the options are words
  /usr/bin/time -f "%U" -o "$TMP/$i.cpu" "$BUILD/gpool" sim replay --trace "$TRACES/philly.csv" \
    --queues-from "$TRACES/philly_vc_nodes.csv" --time-scale "$TIME_SCALE" --no-progress \
    $opts -o json --deterministic >"$TMP/$i.json"
}
for i in "${!runs[@]}"; do
  one "$i" &
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
done
wait

echo "| policy | instantaneous Jain | weekly cumulative Jain: min / mean / last | avg wait | preemptions | CPU |"
echo "|---|---|---|---|---|---|"
for i in "${!runs[@]}"; do
  jq -r --arg name "${runs[$i]%%|*}" --arg cpu "$(cat "$TMP/$i.cpu")" '
    def f3: (. * 1000 | round / 1000 | tostring) as $s
            | if ($s | test("\\.")) then ($s + "000" | .[0:(index(".") + 4)]) else $s + ".000" end;
    def thousands: tostring | until(test("^[0-9]{1,3}(,|$)"); sub("(?<a>[0-9])(?<b>[0-9]{3})(?<c>,|$)"; "\(.a),\(.b)\(.c)"));
    .weekly_cumulative_jain as $w
    | "| \($name) | \(.jain_fairness | f3) | \($w | min | f3) / \($w | add / length | f3) / \($w[-1] | f3)"
      + " | \(.avg_wait_s / 3600 * 100 | round / 100) h | \(.preemptions | thousands) | \($cpu) s |"' "$TMP/$i.json"
done
