#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pending gang to provider call (issue 20's figure, target < 2 s): a real server on
# 127.0.0.1 with no node and N node templates (a label each, so that every job has a
# template of its own and no creation serves another), each provider recording the moment
# it is called (tests/e2e/provider_agents.sh with agents that never start). N times: a
# 2-node gang is submitted (the client's clock just before the request) and the time until
# its template's provider records its `create` is measured, both on this host. Prints each
# figure and the p50 and max in ms. The autoscaler's `interval` (default 1 s) is part of the
# figure: a job may wait up to one interval for the next proposal.
#
#   bench/autoscale_call.sh [BUILD_DIR]   (default build/rel; any build with a gpool binary)
#   env: N=20 INTERVAL=1s
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build/rel}" 2>/dev/null && pwd) || BUILD=${1:-$ROOT/build/rel}
N=${N:-20} INTERVAL=${INTERVAL:-1s}
[ -x "$BUILD/gpool" ] || { echo "build first: cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target gpool_bin" >&2; exit 2; }
export GPOOL_BIN=$BUILD/gpool
source "$ROOT/tests/e2e/lib.sh"
e2e_init
mkdir -p "$E2E_DIR/pa"
tmpls=''
for i in $(seq 1 "$N"); do
  tmpls="$tmpls
  - {name: t$i, provider: $ROOT/tests/e2e/provider_agents.sh, model: H100-80GB, gpus: 8, max_nodes: 2, labels: {bench: b$i}, env: {PA_DIR: $E2E_DIR/pa, PA_NOSTART: 1, PA_SIM: 8xH100-80GB}}"
done
e2e_write_config "autoscale: {interval: $INTERVAL, resume_timeout: 1h}
node_templates:$tmpls"
e2e_server
figures=()
called() { grep -q " t$1 create " "$E2E_DIR/pa/calls.log" 2>/dev/null; }
for i in $(seq 1 "$N"); do
  sleep 0.$((RANDOM % 10)) # submissions land anywhere in the autoscaler's interval
  t0=$(date +%s%3N)
  curl -fsS -o /dev/null -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
    -d "{\"command\": [\"true\"], \"gpus\": 8, \"tasks\": 2, \"node_selector\": {\"bench\": \"b$i\"}}" \
    "$SERVER_URL/v1/jobs" || fail "submit $i"
  wait_for 30 "template t$i's create call" called "$i"
  at=$(grep " t$i create " "$E2E_DIR/pa/calls.log" | head -n1 | cut -d' ' -f1)
  ms=$(awk -v a="$at" -v b="$t0" 'BEGIN { printf "%d", a * 1000 - b }')
  figures+=("$ms")
  echo "run $i: pending gang to create call $ms ms"
done
sorted=$(printf '%s\n' "${figures[@]}" | sort -n)
p50=$(sed -n "$(((N + 1) / 2))p" <<<"$sorted")
max=$(tail -n1 <<<"$sorted")
echo "pending gang to provider create call over $N runs (interval $INTERVAL): p50 $p50 ms, max $max ms"
