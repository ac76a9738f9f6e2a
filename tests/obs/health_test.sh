#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU health end to end, as an operator sees it, with faults injected into simulated GPUs
# through the admin API (POST /v1/nodes/NAME/inject):
#   - an application fault (Xid 13) changes nothing: the job keeps running;
#   - a GPU that falls off the bus (Xid 79) fails the job on it with a hardware reason (the
#     job is requeued) and shows as failed with no stale figures: `gpool nodes -v` and `gpool
#     top` show why, the scheduler stops using it, and `gpool resume NODE:GPU` returns it;
#   - a storm of single-bit ECC errors drains the GPU (the job on it keeps running);
#   - a node-level fault (Xid 154) drains the whole node;
#   - sustained thermal throttling shows as a node condition (agent /metrics, the API, gpool top);
#   - a GPU drained by the policy comes back by itself after a successful reset check;
#   - injection is refused for a GPU the node does not have.
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init
e2e_server
# Short windows so the story fits in seconds; the defaults are in docs/health.md.
cat >"$E2E_DIR/agent.yaml" <<EOF
health:
  throttle_window: 2s
  sbe_storm: {count: 50, window: 60s, action: drain_gpu}
EOF
cat >"$E2E_DIR/agent-auto.yaml" <<EOF
health:
  auto_resume: 3s
EOF
e2e_agent n1 2xH100-80GB --config "$E2E_DIR/agent.yaml"
e2e_agent n2 2xA100-80GB
e2e_agent n3 1xH100-80GB --config "$E2E_DIR/agent-auto.yaml"

inject() { # inject NODE SPEC: prints the HTTP status
  api_status POST "/v1/nodes/$1/inject" "$ADMIN_TOKEN" --data "{\"fault\": \"$2\"}"
}
gpu_field() { # gpu_field NODE GPU JQ
  as_alice "$GPOOL" nodes -o json | jq -r --arg n "$1" --argjson g "$2" \
    ".[] | select(.name == \$n) | .gpu_list[] | select(.index == \$g) | $3"
}
gpu_is() { [ "$(gpu_field "$1" "$2" .health)" = "$3" ]; }
job_timeline_has() { job_json "$1" | jq -e --arg w "$2" '[.timeline[] | tostring] | any(contains($w))' >/dev/null; }

# A two-GPU job on n1 (it holds both GPUs, so the faults below hit it).
job=$(as_alice "$GPOOL" submit -n victim -g 2 --requeue -- sleep 300) || fail "submit"
wait_for 40 "job $job to run" job_is "$job" running
expect_eq n1 "$(job_field "$job" '.placements[0].node')" "the job runs on n1"

# 1. An application fault is the application's business.
N1_URL=$(as_alice "$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n1") | .agent_url')
expect_eq 200 "$(inject n1 'xid:13@gpu0')" "inject xid 13"
last_xid_is() { curl -fsS "$N1_URL/metrics" | grep -q "^DCGM_FI_DEV_XID_ERRORS{gpu=\"$1\",.*} $2\$"; }
wait_for 40 "the agent to see Xid 13 on GPU 0" last_xid_is 0 13
sleep 2
job_is "$job" running || fail "an Xid 13 must not stop the job (state $(job_field "$job" .state))"
gpu_is n1 0 healthy || fail "an Xid 13 must not drain GPU 0"

# 2. GPU 1 falls off the bus: the job is failed with a hardware reason, the GPU shows as
# failed with no figures (its last reading would be stale), and no mean counts it.
has_figures() { [ "$(gpu_field n1 1 '.telemetry | has("power_w")')" = true ]; }
wait_for 40 "GPU n1:1 to report its figures" has_figures
expect_eq 200 "$(inject n1 'xid:79@gpu1')" "inject xid 79"
wait_for 40 "GPU n1:1 to be failed" gpu_is n1 1 failed
reason=$(gpu_field n1 1 .reason)
expect_contains "$reason" "79" "the failed GPU names the Xid"
expect_eq '{}' "$(gpu_field n1 1 '.telemetry | tojson')" "a failed GPU has no telemetry"
out=$(as_alice "$GPOOL" nodes -v) || fail "gpool nodes -v"
expect_contains "$out" "fallen off the bus" "gpool nodes -v shows why GPU 1 is out"
row=$(awk '/^n1 /{f=1; next} /^[^ ]/{f=0} f && $1 == 1' <<<"$out")
expect_contains "$row" "failed" "gpool nodes -v shows GPU 1 as failed"
! grep -qE '[0-9]+W|[0-9]+%' <<<"$row" || fail "gpool nodes -v shows stale figures for the failed GPU: $row"
top=$(as_alice "$GPOOL" top --once) || fail "gpool top --once"
row=$(awk '/^n1 /{f=1; next} /^[^ ]/{f=0} f && $1 == 1' <<<"$top")
expect_contains "$row" "failed" "gpool top shows GPU 1 as failed"
! grep -qE '[0-9]+W' <<<"$row" || fail "gpool top shows stale power for the failed GPU: $row"
expect_contains "$top" ", 1 failed" "gpool top counts the failed GPU"
! curl -fsS "$N1_URL/metrics" | grep -qE '^DCGM_FI_DEV_(GPU_UTIL|POWER_USAGE)\{gpu="1",' ||
  fail "the agent still exports figures of the GPU that fell off the bus"
# The job was failed with a hardware reason and, since it allows it, requeued.
wait_for 40 "job $job to be requeued after the fault" job_timeline_has "$job" '"requeued"'
job_timeline_has "$job" "gpu_fault" || fail "the job's timeline must name the GPU fault: $(job_json "$job" | jq -c .timeline)"
[ "$(job_field "$job" .restarts)" -ge 1 ] || fail "a requeued job counts a restart"
# The drained GPU is not used: a new one-GPU job can only go to n1's GPU 0 or to n2.
one=$(as_alice "$GPOOL" submit -n one -g 1 --gpu-type H100-80GB -- sleep 300) || fail "submit one"
wait_for 40 "job $one to run" job_is "$one" running
gpus=$(job_field "$one" '.placements[0].gpu_ids | map(tostring) | join(",")')
[ "$(job_field "$one" '.placements[0].node')" != n1 ] || [ "$gpus" = 0 ] ||
  fail "a job was placed on the drained GPU n1:1 (got $gpus)"
as_alice "$GPOOL" cancel "$job" "$one" >/dev/null

# 3. `gpool resume` returns the GPU.
out=$(as_alice "$GPOOL" resume n1:1 2>&1) || fail "gpool resume n1:1: $out"
wait_for 40 "GPU n1:1 back in service" gpu_is n1 1 healthy

# 4. A single-bit ECC storm drains GPU 0 of n1 (action drain_gpu: no job is failed).
keep=$(as_alice "$GPOOL" submit -n keeps-running -g 1 --gpu-type H100-80GB -- sleep 300) || fail "submit keep"
wait_for 40 "job $keep to run" job_is "$keep" running
node=$(job_field "$keep" '.placements[0].node')
g=$(job_field "$keep" '.placements[0].gpu_ids[0]')
expect_eq 200 "$(inject "$node" "ecc_sbe:60@gpu$g;ecc_sbe:60@gpu$g,after=1500ms")" "inject an SBE storm"
wait_for 40 "GPU $node:$g to be drained by the storm" gpu_is "$node" "$g" drained
expect_contains "$(gpu_field "$node" "$g" .reason)" "single-bit" "the storm is named"
sleep 2
job_is "$keep" running || fail "drain_gpu alone must let the running job finish"
as_alice "$GPOOL" cancel "$keep" >/dev/null

# 5. A node-level fault drains n2.
expect_eq 200 "$(inject n2 'xid:154@gpu0')" "inject xid 154"
wait_for 40 "node n2 to be drained" node_is n2 drain
expect_contains "$(as_alice "$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n2") | .reason')" "154" \
  "the node's reason names the Xid"

# 6. Sustained thermal throttling is a node condition on the agent's /metrics.
expect_eq 200 "$(inject n1 'thermal@gpu0,for=60s')" "inject thermal throttling"
has_condition() { curl -fsS "$N1_URL/metrics" | grep -q 'gpool_node_condition{hostname="n1",condition="thermal_throttling"} 1'; }
wait_for 40 "the thermal_throttling condition on n1" has_condition
node_has_condition() {
  as_alice "$GPOOL" nodes -o json | jq -e --arg n "$1" --arg c "$2" \
    '.[] | select(.name == $n) | .conditions // [] | index($c)' >/dev/null
}
wait_for 40 "the server to show n1's thermal_throttling condition" node_has_condition n1 thermal_throttling
expect_contains "$(as_alice "$GPOOL" top --once)" "thermal_throttling" "gpool top shows the condition"

# 7. Automatic return: n3's policy resumes a drained GPU after a successful reset check.
expect_eq 200 "$(inject n3 'xid:74@gpu0')" "inject an NVLink error on n3"
wait_for 40 "GPU n3:0 to be drained" gpu_is n3 0 drained
wait_for 40 "GPU n3:0 to return after its reset check" gpu_is n3 0 healthy

# 8. Bad injections are refused with a clear error.
expect_eq 400 "$(inject n1 'xid:79')" "a fault without @gpuN is 400"
expect_contains "$(cat "$E2E_DIR/body")" "gpu" "the refusal says what is missing"
echo "ok: GPU health actions end to end"
