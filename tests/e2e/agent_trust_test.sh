#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent protocol trusts no more than it must (docs/agent.md):
# 1. one agent token shared by every node cannot speak for another node: a heartbeat as n1
#    without n1's credential, reporting n1's job ended, is refused and the job runs on; an
#    admin can free the name, and n1's own agent claims it back;
# 2. 12 jobs of 250 KB commands started at once all reach their agent (the orders come in
#    several answers of bounded size) and can all be cancelled (tests/server/agent_test.c
#    checks the answers' sizes with 40);
# 3. a server restarted on a new, empty store while its agent keeps its state: the agent
#    kills the old store's job, the new store's job 1 runs (its start order is not taken for
#    one already run) and its log never shows the old job 1's output;
# 4. a gpool.db truncated to 0 bytes is refused at start, not opened as a new store.
source "$(dirname "$0")/lib.sh"
e2e_init
# Listing a dozen jobs of 250 KB each keeps an ASan server busy for seconds: nodes get a longer
# timeout than lib.sh's 3 s, so that the test's own polling never marks one down.
e2e_write_config
sed -i 's/^node_timeout_s: .*/node_timeout_s: 30/' "$E2E_DIR/server.yaml"
echo "max_job_bytes: 262144" >>"$E2E_DIR/server.yaml" # jobs as large as one start order carries
e2e_server
e2e_agent n1 2xH100-80GB
e2e_agent n2 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

# --- 1. a node name is not the shared token's to take ----------------------------------
"$GPOOL" cordon n2 --reason "the held job goes to n1" >/dev/null
held=$("$GPOOL" submit -g 1 -n held -- sh -c "$(gate_wait)")
wait_for 30 "job $held to start" job_launched "$held"
on=$(job_field "$held" '.placements[0].node')
expect_eq n1 "$on" "the held job's node"
"$GPOOL" resume n2 >/dev/null
spoof=$(jq -cn --arg n "$on" --arg j "$held" \
  '{node: $n, gen: 0, wait_ms: 0, events: [{kind: "exited", job: $j, exit_code: 0}]}')
expect_eq 403 "$(api_status POST /v1/agent/heartbeat "$AGENT_TOKEN" -d "$spoof")" \
  "a heartbeat as $on without its credential"
cred=$(printf '%032d' 7)
spoof=$(jq -cn --arg n "$on" --arg j "$held" --arg c "$cred" \
  '{node: $n, gen: 0, wait_ms: 0, credential: $c, events: [{kind: "exited", job: $j, exit_code: 0}]}')
expect_eq 403 "$(api_status POST /v1/agent/heartbeat "$AGENT_TOKEN" -d "$spoof")" \
  "a heartbeat as $on with a made-up credential"
reg=$(jq -cn --arg n "$on" --arg c "$cred" '{node: {name: $n, gpus: 0}, credential: $c}')
expect_eq 403 "$(api_status POST /v1/agent/register "$AGENT_TOKEN" -d "$reg")" \
  "a registration as $on with another credential"
expect_contains "$(cat "$E2E_DIR/body")" "gpool nodes forget" "the refusal says how to free the name"
sleep 1.5 # a few heartbeats of the real agents
job_is "$held" running || fail "the spoofed exit ended job $held ($(job_field "$held" .state))"
# An admin frees the name; the node's own agent registers again and claims it back.
expect_eq 403 "$(api_status DELETE "/v1/nodes/$on/credential" "$BOB_TOKEN")" "forget by a user"
out=$("$GPOOL" nodes forget "$on") || fail "gpool nodes forget $on: $out"
expect_contains "$out" "credential forgotten" "gpool nodes forget"
registered_twice() { [ "$(grep -c "registered with" "$E2E_DIR/agent-$on.log")" -ge 2 ]; }
wait_for 20 "the agent of $on to claim its name again" registered_twice
expect_eq 403 "$(api_status POST /v1/agent/register "$AGENT_TOKEN" -d "$reg")" \
  "a registration as $on once its agent claimed it back"
node_is "$on" up || fail "node $on must stay up"
job_is "$held" running || fail "job $held must still run on $on"
test -z "$(find "$E2E_DIR/agent-$on/credential.json" -perm /077)" || fail "the credential file is readable by others"
open_gate
wait_for 20 "job $held to complete" job_is "$held" completed

# --- 2. 12 jobs of 250 KB commands (four words of 63 KB), started in one step ---------
pad=$(head -c 63000 /dev/zero | tr "\0" x)
jq -n --arg p "$pad" --arg g "$(gate_wait)" \
  '{gpus: 0, command: ["sh", "-c", ($g + "; exit 0"), $p, $p, $p, $p]}' >"$E2E_DIR/big.json"
rm -f "$E2E_DIR/gate"
# Both nodes cordoned while the jobs queue; resuming n1 starts all 12 in one step: 3 MB of
# start orders for one agent.
"$GPOOL" cordon n1 --reason "queue first" >/dev/null
"$GPOOL" cordon n2 --reason "all on one node" >/dev/null
ids=()
for i in $(seq 1 12); do
  expect_eq 201 "$(api_status POST /v1/jobs "$ADMIN_TOKEN" --data-binary @"$E2E_DIR/big.json")" "big job $i"
  ids+=("$(jq -r '.job.id // .id' "$E2E_DIR/body")")
done
# The agent's log says what it received; asking the server for 12 big jobs ten times a
# second would be a load test of its own.
count_in_log() { grep -c "$1" "$E2E_DIR/agent-n1.log"; }
started0=$(count_in_log " started (epoch")
ended0=$(count_in_log "ended: killed")
"$GPOOL" resume n1 >/dev/null
all_started() { [ $(($(count_in_log " started (epoch") - started0)) -ge 12 ]; }
wait_for 90 "the 12 big jobs to start on their agent" all_started
"$GPOOL" cancel "${ids[@]}" >/dev/null
all_killed() { [ $(($(count_in_log "ended: killed") - ended0)) -ge 12 ]; }
wait_for 90 "the agent to stop the 12 big jobs" all_killed
cancelled() { [ "$("$GPOOL" jobs -o json --state cancelled 2>/dev/null | jq length)" -ge 12 ]; }
wait_for 60 "the 12 big jobs to be cancelled" cancelled
node_is n1 up || fail "n1 must stay up after the big answers"
open_gate

# --- 3. a new store under a live agent ------------------------------------------------
"$GPOOL" cordon n2 --reason "one agent for the store swap" >/dev/null
old=$(as_bob "$GPOOL" submit -g 1 -n old -- sh -c 'echo old-store-secret-output')
wait_for 30 "job $old of the old store to complete" job_is "$old" completed
keep=$(as_bob "$GPOOL" submit -g 1 -n kept -- sh -c "echo \$\$ > '$E2E_DIR/kept.pid'; exec sleep 120")
wait_for 30 "job $keep to start" job_launched "$keep"
wait_for 10 "job $keep to write its pid" test -s "$E2E_DIR/kept.pid"
kept_pid=$(cat "$E2E_DIR/kept.pid")
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
mv "$E2E_DIR/server" "$E2E_DIR/server.moved"
e2e_server
wait_for 20 "node n1 to register with the new store" node_is n1 up
wait_for 20 "the old store's job (pid $kept_pid) to be killed" sh -c "! kill -0 $kept_pid 2>/dev/null"
new=$("$GPOOL" submit -g 1 -n new -- sh -c 'echo new-store-output')
wait_for 30 "job $new of the new store to complete (its start order must not be skipped)" job_is "$new" completed
logs=$("$GPOOL" logs "$new" 2>&1)
expect_contains "$logs" "new-store-output" "the new job's log"
case "$logs" in *old-store-secret*) fail "job $new shows the old store's job output: $logs" ;; esac
for id in $(seq 1 5); do
  out=$("$GPOOL" logs "$id" 2>&1)
  case "$out" in *old-store-secret*) fail "job $id of the new store shows the old store's output" ;; esac
done
ls "$E2E_DIR/agent-n1/retired/"*/ >/dev/null 2>&1 || fail "the old store's job directories were not kept aside"

# --- 4. a truncated store is refused --------------------------------------------------
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
: >"$E2E_DIR/server/gpool.db"
rm -f "$E2E_DIR/server/gpool.db-wal" "$E2E_DIR/server/gpool.db-shm"
out=$(timeout 20 "$GPOOL" server --config "$E2E_DIR/server.yaml" 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a server on a 0-byte gpool.db must refuse to start (rc $rc): $out"
expect_contains "$out" "0 bytes" "the refusal names the empty store"
echo "PASS"
