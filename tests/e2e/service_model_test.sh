#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A service's `model` draws its replica to the node whose agent's models_dir holds it
# (docs/services.md#placement): two equal agents, n2 with a models_dir holding m1/, and a
# one-replica service with `model: m1` lands on n2 (without the model the spread rule takes
# n1, the first node). The node's API document lists its models; a bad name is refused;
# `gpool submit --model` carries one.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
e2e_write_config
sed -i 's|^  - {name: default, users: \["\*"\]}|  - {name: default, users: ["*"], priority_classes: [inference, batch]}|' "$E2E_DIR/server.yaml"
e2e_server
mkdir -p "$E2E_DIR/models/m1" "$E2E_DIR/models/.locks" "$E2E_DIR/models/bad name"
touch "$E2E_DIR/models/m2" # a file is no model
e2e_agent n1 4xH100-80GB
e2e_agent n2 4xH100-80GB --models-dir "$E2E_DIR/models"
export GPOOL_TOKEN=$BOB_TOKEN
SRC=${GP_SOURCE_DIR:?}/tests/e2e/svc_replica.py
mkdir -p "$E2E_DIR/svc"

node_models() { as_alice "$GPOOL" nodes -o json | jq -c --arg n "$1" '.[] | select(.name == $n) | .models'; }
n2_models() { [ "$(node_models n2)" = '["m1"]' ]; }
wait_for 20 "n2 to report its models" n2_models
expect_eq '["m1"]' "$(node_models n2)" "n2 lists the one valid model directory"
expect_eq null "$(node_models n1)" "n1 has no models_dir"

svc() { # NAME [MODEL]
  cat >"$1.yaml" <<YAML
name: $1
command: [python3, "$SRC"]
env: {SVC_DIR: "$E2E_DIR/svc"}
gpus: 1
replicas: 1
${2:+model: $2}
probes: {readiness: {path: /healthz, period_s: 1}}
YAML
  "$GPOOL" service apply -f "$1.yaml" >/dev/null || fail "apply $1"
}
replica_node() { "$GPOOL" service show "$1" -o json | jq -r '[.replica_jobs[] | select(.state == "running") | .node] | join(" ")'; }
has_replica() { [ -n "$(replica_node "$1")" ]; }

svc plain
wait_for 30 "plain's replica to run" has_replica plain
expect_eq n1 "$(replica_node plain)" "without a model the first of two equal nodes"
pjob=$("$GPOOL" service show plain -o json | jq -r '.replica_jobs[0].job')
"$GPOOL" service delete plain >/dev/null || fail "delete plain"
job_ended() { case "$(job_field "$1" .state)" in running | stopping | pending) return 1 ;; esac; }
wait_for 30 "plain's replica to end" job_ended "$pjob"

svc served m1
wait_for 30 "served's replica to run" has_replica served
expect_eq n2 "$(replica_node served)" "the replica goes to the node holding model m1"
job=$("$GPOOL" service show served -o json | jq -r '.replica_jobs[0].job')
expect_eq m1 "$(job_field "$job" .model)" "the replica's job carries the model"

# A model is a preference, never a constraint: one nobody holds still runs.
svc other m9
wait_for 30 "other's replica to run" has_replica other

# Untrusted names are refused, naming the field.
st=$(api_status POST /v1/jobs "$BOB_TOKEN" -d '{"command": ["true"], "model": "../etc"}')
expect_eq 400 "$st" "a model name with '/' is refused"
expect_contains "$(cat "$E2E_DIR/body")" '"model"' "the error names the field"
long=$(printf 'm%.0s' $(seq 1 200))
st=$(api_status POST /v1/jobs "$BOB_TOKEN" -d "{\"command\": [\"true\"], \"model\": \"$long\"}")
expect_eq 400 "$st" "a 200-character model name is refused"
# `gpool submit --model` carries it; the CLI checks the name first.
j=$("$GPOOL" submit -g 1 --model m1 -- sleep 30) || fail "submit --model"
expect_eq m1 "$(job_field "$j" .model)" "submit --model sets the job's model"
out=$("$GPOOL" submit -g 1 --model ../x -- true 2>&1) && fail "submit --model ../x was accepted"
expect_contains "$out" "model" "the CLI's error names the model"
echo "PASS"
