#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Services' figures (docs/performance.md): on one simulated node of a local pool,
#   - ready: from a replica's /healthz turning healthy to its endpoint being listed by
#     GET /v1/services/NAME/endpoints (readiness probe every 1 s, so up to 1 s of it is the
#     probe's own wait), N samples;
#   - start: gpool's own overhead to start a replica on a warm node, from `gpool service
#     scale` to the replica's process running (its first line of Python), less nothing:
#     the Python interpreter's own start-up is measured apart and printed beside it;
#   - scale: from a load step to the scaling decision, with the defaults (agent heartbeat 5 s,
#     scrape every 2 s, up_delay_s 5): a step that doubled the load, and one that did not.
# HEARTBEAT_S sets the agent's heartbeat (default 5, the agent's own default).
# Usage: bench/service_figures.sh BUILD_DIR [SAMPLES]
set -uo pipefail
BUILD=${1:?usage: bench/service_figures.sh BUILD_DIR [SAMPLES]}
N=${2:-10}
export GPOOL_BIN=$(cd "$BUILD" && pwd)/gpool
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/tests/e2e/lib.sh"
e2e_init
e2e_write_config
sed -i 's|^  - {name: default, users: \["\*"\]}|  - {name: default, users: ["*"], priority_classes: [inference]}|' "$E2E_DIR/server.yaml"
e2e_server
e2e_agent n1 8xH100-80GB --heartbeat-s "${HEARTBEAT_S:-5}"
export GPOOL_TOKEN=$BOB_TOKEN
mkdir -p svc
now_ms() { date +%s%3N; }
listed() { curl -fsS -H "Authorization: Bearer $BOB_TOKEN" "$SERVER_URL/v1/services/fig/endpoints" | jq -e --argjson p "$1" '[.endpoints[] | select(.port == $p)] | length == 1' >/dev/null; }
cat >fig.yaml <<YAML
name: fig
command: [python3, -c, "import time, os; open('$E2E_DIR/svc/t.' + os.environ['GPOOL_JOB_ID'], 'w').write(repr(time.time())); exec(open('$ROOT/tests/e2e/svc_replica.py').read())"]
env: {SVC_DIR: "$E2E_DIR/svc"}
gpus: 1
replicas: {min: 1, max: 8, initial: 1}
probes:
  readiness: {path: /healthz, period_s: 1, failure_threshold: 1}
autoscale: {metric: gpool_test_load, target: 10, down_delay_s: 3600}   # up_delay_s 5, period_s 2: the defaults
rollout: {drain_s: 0}
YAML
echo 1 >svc/load
"$GPOOL" service apply -f fig.yaml >/dev/null
wait_for 30 "a ready replica" sh -c "[ \"\$('$GPOOL' service show fig -o json | jq .replicas.ready)\" = 1 ]"
job=$("$GPOOL" service show fig -o json | jq -r '.replica_jobs[0].job')
port=$("$GPOOL" service show fig -o json | jq -r '.replica_jobs[0].port')
ready=()
for i in $(seq 1 "$N"); do
  touch "svc/unhealthy.$job"
  wait_for 10 "unlisted" sh -c "! curl -fsS -H 'Authorization: Bearer $BOB_TOKEN' '$SERVER_URL/v1/services/fig/endpoints' | grep -q '\"port\": *$port'"
  sleep 0.$((RANDOM % 10))
  t0=$(now_ms)
  rm -f "svc/unhealthy.$job"
  until listed "$port"; do sleep 0.01; done
  ready+=($(($(now_ms) - t0)))
done
echo "ready -> listed (ms, probe every 1 s): ${ready[*]}"
start=()
for i in $(seq 2 $((N < 7 ? N + 1 : 7))); do
  t0=$(now_ms)
  "$GPOOL" service scale fig "$i" >/dev/null
  until [ "$(ls svc/t.* | wc -l)" -ge "$i" ]; do sleep 0.01; done
  f=$(ls -t svc/t.* | head -1)
  start+=($(python3 -c "print(int(float(open('$f').read()) * 1000) - $t0)"))
done
py=$(python3 -c 'import time; t = time.time(); import subprocess; subprocess.run(["python3", "-c", "pass"]); print(int((time.time() - t) * 1000))')
echo "scale -> replica process running (ms): ${start[*]} (python3 start-up alone: ${py} ms)"
"$GPOOL" service scale fig 1 >/dev/null
wait_for 30 "one replica left" sh -c "[ \"\$('$GPOOL' service show fig -o json | jq .replicas.total)\" = 1 ]"
step() { # step LOAD: the time from writing LOAD to the next decision
  local n t0
  n=$("$GPOOL" service show fig -o json | jq '.decisions | length')
  t0=$(now_ms)
  echo "$1" >svc/load
  until [ "$("$GPOOL" service show fig -o json | jq '.decisions | length')" -gt "$n" ]; do sleep 0.05; done
  echo "load 1 -> $1 per replica -> scaling decision (ms): $(($(now_ms) - t0)) ($("$GPOOL" service show fig -o json | jq -c '.decisions[-1] | {from, to, reason}'))"
}
sleep 3
step 18
"$GPOOL" service scale fig 1 >/dev/null
echo 1 >svc/load
wait_for 30 "one replica left" sh -c "[ \"\$('$GPOOL' service show fig -o json | jq .replicas.total)\" = 1 ]"
sleep 5
step 25
