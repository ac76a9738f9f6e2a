#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Notice to checkpoint signal (issue 20's figure, target < 5 s): a real server and one sim
# agent on 127.0.0.1 watching a stand-in AWS metadata service (tests/e2e/spot_metadata.py)
# every INTERVAL seconds, one requeueable job that traps USR1. N times: the notice appears,
# the time until the job's trap runs is measured (from the test's clock when it writes the
# notice to the job's clock in its trap, both on this host), then the node is resumed and
# the requeued job starts again. Prints each figure and the p50 and max in ms. The poll
# interval is part of the figure: a notice waits up to one interval for the next read.
#
#   bench/spot_notice.sh [BUILD_DIR]   (default build/rel; any build with a gpool binary)
#   env: N=20 INTERVAL=2 (the agent's default)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build/rel}" 2>/dev/null && pwd) || BUILD=${1:-$ROOT/build/rel}
N=${N:-20} INTERVAL=${INTERVAL:-2}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
export GPOOL_BIN=$BUILD/gpool
source "$ROOT/tests/e2e/lib.sh"
e2e_need python3
e2e_init
e2e_server
export GPOOL_TOKEN=$ADMIN_TOKEN
meta=$E2E_DIR/meta
mkdir -p "$meta"
e2e_spawn "$E2E_DIR/metadata.log" python3 "$ROOT/tests/e2e/spot_metadata.py" "$meta"
wait_for 10 "the metadata service to listen" test -s "$meta/port"
printf 'spot: {provider: aws, url: "http://127.0.0.1:%s", interval: %ss}\n' "$(cat "$meta/port")" "$INTERVAL" >a.yaml
chmod 600 a.yaml
e2e_agent a 1xH100-80GB --capacity spot --config "$E2E_DIR/a.yaml"
ev=$E2E_DIR/ev
{
  echo '#!/bin/sh'
  echo "echo start >>'$ev'"
  echo "trap 'echo \"usr1 \$(date +%s%3N)\" >>\"$ev\"; exit 0' USR1"
  echo 'i=0; while [ $i -lt 6000 ]; do sleep 0.1; i=$((i + 1)); done'
} >job.sh
"$GPOOL" submit -g 1 --requeue --allow-spot --signal USR1 -n spot-bench job.sh >/dev/null
count() { local n; n=$(grep -c "^$1" "$ev" 2>/dev/null); echo "${n:-0}"; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
figures=()
for i in $(seq 1 "$N"); do
  wait_for 30 "the job's start $i" at_least start "$i"
  sleep 0.$((RANDOM % 10)) # notices land anywhere in the poll interval
  t0=$(date +%s%3N)
  echo "notice $(($(date +%s) + 120 + i))" >"$meta/aws"
  wait_for 30 "signal $i" at_least usr1 "$i"
  ms=$(($(grep '^usr1' "$ev" | sed -n "${i}p" | cut -d' ' -f2) - t0))
  figures+=("$ms")
  echo "run $i: notice to checkpoint signal $ms ms"
  echo none >"$meta/aws"
  wait_for 10 "the node to be drained" node_is a drain
  curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
    -d '{}' "$SERVER_URL/v1/nodes/a/resume"
done
sorted=$(printf '%s\n' "${figures[@]}" | sort -n)
p50=$(sed -n "$(((N + 1) / 2))p" <<<"$sorted")
max=$(tail -n1 <<<"$sorted")
echo "notice to checkpoint signal over $N runs (poll interval ${INTERVAL} s): p50 $p50 ms, max $max ms"
