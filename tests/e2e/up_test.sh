#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's story: `gpool up` starts a whole pool in one command; a job submitted with
# no queue runs on a simulated GPU with CUDA_VISIBLE_DEVICES set to its GPU's UUID, finishes,
# and its output is readable; the greeting's `nvidia-smi` job finds gpool's simulated one; nodes, queues and jobs show it; `gpool up --stop` ends it all.
source "$(dirname "$0")/lib.sh"
e2e_init

out=$("$GPOOL" up --detach --data "$E2E_DIR/pool" --port 0 --sim 2xH100-80GB --name box 2>&1) \
  || { cat "$E2E_DIR"/pool/*.log >&2; fail "gpool up --detach failed: $out"; }
UP_PID=$(cut -d" " -f1 "$E2E_DIR/pool/up.pid")
E2E_PIDS+=("$UP_PID")
expect_contains "$out" "gpool is up" "greeting"
expect_contains "$out" "node box with 2 x H100-80GB simulated GPUs" "greeting names the node and its GPUs, simulated"
expect_contains "$out" "gpool submit -g 1 -- nvidia-smi" "greeting says what to try"
test -s "$GPOOL_CONFIG_DIR/client.json" || fail "gpool up did not write client.json"
[ "$(stat -c %a "$GPOOL_CONFIG_DIR/client.json")" = 600 ] || fail "client.json must be private (0600)"
ADMIN_TOKEN=$(jq -r .token "$GPOOL_CONFIG_DIR/client.json")  # for the helpers (job_is, ...)

# No --server, no --token, no -q: everything comes from client.json and the default queue.
id=$("$GPOOL" submit -g 1 -n hello -- sh -c 'echo "visible=$CUDA_VISIBLE_DEVICES job=$GPOOL_JOB_ID"')
[[ "$id" =~ ^[0-9]+$ ]] || fail "submit should print a job id, got '$id'"
wait_for 20 "job $id to complete" job_is "$id" completed

job=$("$GPOOL" show "$id" -o json)
expect_eq default "$(jq -r .queue <<<"$job")" "a job without -q lands in the default queue"
log=$("$GPOOL" logs "$id")
uuid=${log#visible=}
uuid=${uuid%% *}
[[ "$uuid" =~ ^GPU-[0-9a-f-]+$ ]] || fail "CUDA_VISIBLE_DEVICES must be one GPU UUID, the job saw: $log"
expect_eq "visible=$uuid job=$id" "$log" "the job saw exactly one GPU and its own id"
"$GPOOL" nodes -o json | jq -e --arg u "$uuid" '[.[].gpu_list[].uuid] | index($u)' >/dev/null \
  || fail "the job's GPU $uuid is not a GPU of the pool"
expect_eq "$uuid" "$(jq -r '.placements[0].gpu_uuids[0]' <<<"$job")" "the job ran on the GPU of its placement"

# The greeting's suggestion works on simulated GPUs too: a simulated nvidia-smi, labelled as
# such, lists exactly the job's GPU.
smi=$("$GPOOL" submit -g 1 -n smi -- nvidia-smi)
wait_for 20 "the nvidia-smi job to end" sh -c "GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show $smi -o json | jq -e '.state != \"pending\" and .state != \"running\"'"
smi_log=$("$GPOOL" logs "$smi")
expect_eq completed "$(job_field "$smi" .state)" "gpool submit -g 1 -- nvidia-smi completes (log: $smi_log)"
expect_eq 0 "$(job_field "$smi" .exit_code)" "nvidia-smi exits with 0"
expect_contains "$(head -n1 <<<"$smi_log")" "gpool simulated GPUs" "its first line says the GPUs are simulated"
smi_uuid=$(job_field "$smi" '.placements[0].gpu_uuids[0]')
listed=$(grep -o 'GPU-[0-9a-f-]*' <<<"$smi_log")
expect_eq "$smi_uuid" "$listed" "nvidia-smi lists exactly the job's GPU"

# The agent talks to the server's own agent listener (agent_listen), and jobs get the API's
# address: users' connections never take the agent's.
agent_url=$(cat "$E2E_DIR/pool/server/agent.url")
api_url=$(jq -r .server "$GPOOL_CONFIG_DIR/client.json")
[[ "$agent_url" =~ ^http://127\.0\.0\.1:[0-9]+$ && "$agent_url" != "$api_url" ]] \
  || fail "the server should write its agent listener's URL, got '$agent_url' (API: $api_url)"
agent_args=$(tr '\0' ' ' <"/proc/$(pgrep -P "$UP_PID" -f "gpool agent")/cmdline")
expect_contains "$agent_args" "--server $agent_url " "the agent uses the agent listener"
expect_eq 404 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" "$agent_url/v1/queues")" \
  "the agent listener serves no user routes"
env_job=$("$GPOOL" submit -n env -- sh -c 'echo "server=$GPOOL_SERVER"')
wait_for 20 "job $env_job to complete" job_is "$env_job" completed
expect_eq "server=$api_url" "$("$GPOOL" logs "$env_job")" "jobs get the API's address as GPOOL_SERVER"

# People's views.
jobs=$("$GPOOL" jobs -a)
expect_contains "$jobs" "hello" "gpool jobs -a lists the finished job"
show=$("$GPOOL" show "$id")
expect_contains "$show" "Job $id (hello): completed" "gpool show headline"
expect_contains "$show" "box" "gpool show names the node"
nodes=$("$GPOOL" nodes -v)
expect_contains "$nodes" "box" "gpool nodes lists the local node"
expect_contains "$nodes" "H100-80GB x2 (simulated)" "gpool nodes shows the model and that the GPUs are simulated"
[ "$("$GPOOL" nodes -o json | jq -r ".[0].gpu_backend")" = sim ] || fail "the API names the GPU backend"
queues=$("$GPOOL" queues)
expect_contains "$queues" "default" "gpool queues shows the default queue"
why=$("$GPOOL" why "$id")
expect_contains "$why" "is not pending: it ended as completed" "gpool why on a finished job"

# The agent crashes: `gpool up` starts it again and the pool keeps working.
old_agent=$(pgrep -P "$UP_PID" -f "gpool agent") || fail "gpool up has no agent child"
kill -9 "$old_agent"
wait_for 20 "gpool up to restart its agent" sh -c "pgrep -P $UP_PID -f 'gpool agent' | grep -vx $old_agent"
again=$("$GPOOL" submit -g 1 -- true)
wait_for 30 "a job after the agent's restart to complete" job_is "$again" completed

# A second `gpool up` on the same data dir refuses while the first runs.
if "$GPOOL" up --detach --data "$E2E_DIR/pool" --port 0 >/dev/null 2>&1; then fail "a second gpool up must refuse"; fi

"$GPOOL" up --stop --data "$E2E_DIR/pool" >/dev/null || fail "gpool up --stop failed"
# Gone, or a zombie its new parent (pid 1) has not reaped yet: it no longer runs.
case "$(ps -o stat= -p "$UP_PID" 2>/dev/null)" in "" | Z*) ;; *) fail "the pool is still running after --stop" ;; esac
err=$("$GPOOL" jobs 2>&1) && fail "gpool jobs must fail when the server is gone"
expect_contains "$err" "cannot reach the gpool server" "a clear message when the pool is down"

# A pool whose GPU is shared: `--sharing shared` reaches the agent, and two half-GPU jobs run
# on the one GPU at the same time (no MPS daemon here, so the agent's memory watchdog
# enforces each share and the jobs' records say so).
mkdir -p "$E2E_DIR/no-mps"
out=$(CUDA_MPS_PIPE_DIRECTORY="$E2E_DIR/no-mps" "$GPOOL" up --detach --data "$E2E_DIR/shared" --port 0 \
  --sim 1xH100-80GB --name halves --sharing shared 2>&1) \
  || { cat "$E2E_DIR"/shared/*.log >&2; fail "gpool up --sharing shared failed: $out"; }
E2E_PIDS+=("$(cut -d" " -f1 "$E2E_DIR/shared/up.pid")")
expect_eq shared "$("$GPOOL" nodes -o json | jq -r '.[0].gpu_list[0].mode')" "the node's GPU is in shared mode"
h1=$("$GPOOL" submit --gpu-fraction 0.5 -- sleep 30)
h2=$("$GPOOL" submit --gpu-fraction 0.5 -- sleep 30)
ADMIN_TOKEN=$(jq -r .token "$GPOOL_CONFIG_DIR/client.json")  # this pool's
wait_for 20 "the first half-GPU job to run" job_is "$h1" running
wait_for 20 "the second half-GPU job to run beside it" job_is "$h2" running
job_is "$h1" running || fail "the two half-GPU jobs must run at the same time"
for h in "$h1" "$h2"; do
  expect_eq 0 "$(job_field "$h" '.placements[0].gpu_ids[0]')" "job $h runs on the node's one GPU"
  expect_eq watchdog "$(job_field "$h" .enforcement)" "job $h's share is enforced by the memory watchdog"
done
bad=$("$GPOOL" up --detach --data "$E2E_DIR/bad" --port 0 --sim 1xH100-80GB --sharing halves 2>&1) \
  && fail "gpool up must refuse an unknown sharing mode"
expect_contains "$bad" "unknown sharing mode 'halves'" "an unknown sharing mode is named"
"$GPOOL" up --stop --data "$E2E_DIR/shared" >/dev/null || fail "gpool up --stop (shared pool) failed"
echo "ok: gpool up story"
