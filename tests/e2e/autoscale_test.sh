#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The autoscaler with real agents: the provider (provider_agents.sh) "creates" a node by
# starting a `gpool agent` with simulated GPUs and deletes it by stopping it. A pending
# 2-node gang finds the reserved template out of capacity (it backs off), gets two on-demand
# nodes, runs and completes; a template whose agents never start hits resume_timeout, its
# instance is deleted and the job's pending reason says so; an empty node is deleted after
# scale_down_after, and a node running a job that cannot checkpoint is not, until it ends; a
# provider that answers a second creation with the node of its first (a running node) has
# that instance deleted and is not asked again every second.
source "$(dirname "$0")/lib.sh"
e2e_init
PROVIDER=${GP_SOURCE_DIR:?}/tests/e2e/provider_agents.sh
mkdir -p "$E2E_DIR/pa"
env_of() { # the provider's env for a template: SIM [extra entries]
  echo "{PA_DIR: $E2E_DIR/pa, PA_GPOOL: $GPOOL, PA_URL_FILE: $E2E_DIR/server/server.url, PA_TOKEN: \"$AGENT_TOKEN\", PA_SIM: $1${2:+, $2}}"
}
e2e_write_config "autoscale: {interval: 1s, resume_timeout: 6s, scale_down_after: 3s, backoff: {initial: 60s}}
node_templates:
  - {name: rsv, provider: $PROVIDER, model: H100-80GB, gpus: 2, capacity: reserved, max_nodes: 2, env: $(env_of 2xH100-80GB 'PA_FAIL: capacity')}
  - {name: od, provider: $PROVIDER, model: H100-80GB, gpus: 2, max_nodes: 3, price_per_gpu_hour: 2, env: $(env_of 2xH100-80GB)}
  - {name: ghost, provider: $PROVIDER, model: A100-80GB, gpus: 1, max_nodes: 1, env: $(env_of 1xA100-80GB 'PA_NOSTART: 1')}
  - {name: liar, provider: $PROVIDER, model: L40S, gpus: 1, max_nodes: 4, env: $(env_of 1xL40S 'PA_NODE: liar-node')}"
e2e_server
export GPOOL_TOKEN=$ADMIN_TOKEN
calls() { cat "$E2E_DIR/pa/calls.log" 2>/dev/null; }
listed() { "$GPOOL" nodes -o json | jq -e --arg n "$1" 'any(.[]; .name == $n)' >/dev/null; }
not_listed() { ! listed "$1"; }
message_has() { job_field "$1" .pending_message | grep -qF "$2"; }
stop_agents() { for f in "$E2E_DIR"/pa/*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; }
trap 'stop_agents; e2e_cleanup' EXIT

# A gang of two 2-GPU tasks: no node yet; reserved first (out of capacity), then on-demand.
gang=$("$GPOOL" submit -N 2 -g 2 -- sleep 1) || fail "submit the gang"
ghost=$("$GPOOL" submit -g 1 --gpu-type a100-80gb -- true) || fail "submit the A100 job"
wait_for 20 "the gang to complete" job_is "$gang" completed
log=$(calls)
expect_contains "$log" "rsv create" "the reserved template is tried first"
expect_contains "$log" "od create {\"count\":2" "then two on-demand nodes"
[ "$(echo "$log" | grep -n 'rsv create' | head -1 | cut -d: -f1)" -lt \
  "$(echo "$log" | grep -n 'od create' | head -1 | cut -d: -f1)" ] || fail "reserved before on-demand: $log"
expect_eq capacity "$("$GPOOL" templates -o json | jq -r '.[] | select(.name == "rsv") | .backoff.class')" \
  "the reserved template backs off"
expect_contains "$(job_field "$gang" '[.timeline[].event] | join(",")')" "scale_up" "the gang's timeline"
expect_eq od "$("$GPOOL" nodes -o json | jq -r '[.[] | .provider.template] | unique | join(",")')" \
  "the nodes' template"

# A job the gang's nodes can take now, that cannot checkpoint: its node stays.
held=$("$GPOOL" submit -g 2 --no-requeue -- sh -c "$(gate_wait)") || fail "submit the held job"
wait_for 10 "job $held to run" job_is "$held" running
busy=$(job_field "$held" '.placements[0].node')
other=$("$GPOOL" nodes -o json | jq -r --arg b "$busy" '.[] | select(.name != $b) | .name')
wait_for 15 "the empty node $other to be scaled down" not_listed "$other"
expect_contains "$(calls)" "od delete {\"count\":null,\"instances\":[\"$other\"]" "the provider's delete"

# The A100 template's agents never start: past resume_timeout its instance is deleted.
expect_contains "$(calls)" "ghost create" "the A100 template was asked"
wait_for 15 "the ghost instance to be deleted" sh -c "grep -q 'ghost delete' '$E2E_DIR/pa/calls.log'"
wait_for 5 "the A100 job's reason" message_has "$ghost" "did not register within resume_timeout 6s"
expect_eq pending "$(job_field "$ghost" .state)" "the A100 job waits"
"$GPOOL" cancel "$ghost" >/dev/null || fail "cancel $ghost"

sleep 4 # past scale_down_after: the node with the running job is still there
listed "$busy" || fail "node $busy runs job $held and must not be scaled down"
expect_eq running "$(job_field "$held" .state)" "the job on the busy node"
open_gate
wait_for 10 "job $held to complete" job_is "$held" completed
wait_for 15 "node $busy to be scaled down once empty" not_listed "$busy"
metrics=$(curl -fsS "$SERVER_URL/metrics")
expect_contains "$metrics" 'gpool_provider_calls_total{template="od",verb="create",result="ok"} 1' "create metric"
expect_contains "$metrics" 'gpool_provider_calls_total{template="rsv",verb="create",result="capacity"} 1' "capacity metric"
expect_contains "$metrics" 'gpool_autoscale_pending_to_call_seconds_count' "pending-to-call histogram"

# The liar answers every create with node liar-node: the first instance gets it, the
# second is an orphan, deleted at once, and the template backs off (old code: dropped, asked
# again every second).
first=$("$GPOOL" submit -g 1 --gpu-type l40s -- sleep 60) || fail "submit the first L40S job"
wait_for 20 "job $first to run" job_is "$first" running
expect_eq liar-node "$(job_field "$first" '.placements[0].node')" "the first L40S job's node"
second=$("$GPOOL" submit -g 1 --gpu-type l40s -- sleep 60) || fail "submit the second L40S job"
wait_for 10 "the orphan's delete" sh -c "grep -q 'liar delete' '$E2E_DIR/pa/calls.log'"
expect_eq invalid "$("$GPOOL" templates -o json | jq -r '.[] | select(.name == "liar") | .last_error.class')" \
  "the liar backs off"
sleep 3
expect_eq 2 "$(calls | grep -c 'liar create')" "creates of the liar"
expect_eq 1 "$(calls | grep -c 'liar delete')" "deletes of the liar (the orphan's)"
expect_eq pending "$(job_field "$second" .state)" "the second L40S job waits"
expect_contains "$(job_field "$second" .pending_message)" "but instance liar-" "the second job's reason"
expect_eq liar-node "$("$GPOOL" nodes -o json | jq -r '.[] | select(.provider.template == "liar") | .name')" \
  "the liar's one node"
"$GPOOL" cancel "$first" "$second" >/dev/null || fail "cancel the L40S jobs"
echo "ok: autoscale"
