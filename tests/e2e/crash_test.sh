#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Crashes: kill -9 of the server in the middle of a burst of submissions loses no job it
# acknowledged; kill -9 of an agent with running jobs, then a restart, re-adopts them (same
# process, still running, finishing normally); an agent that stays away is marked down and
# its requeueable job is requeued and runs again elsewhere.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

# --- 1. kill -9 of the server during a burst -------------------------------------------
# Four submitters record every id the server acknowledged; the server dies under them.
burst() {
  local i out
  for i in $(seq 1 60); do
    out=$("$GPOOL" submit --hold -n "burst-$1-$i" -- true 2>/dev/null) && echo "$out" >>"$E2E_DIR/acked.$1"
  done
}
burst_pids=()
for w in 1 2 3 4; do
  burst $w &
  burst_pids+=($!)
done
# Crash in the middle of the burst: once acknowledgements are flowing.
wait_for 20 "the first acknowledged submission" sh -c "cat '$E2E_DIR'/acked.* 2>/dev/null | grep -q ."
sleep 0.3
kill -9 "$SERVER_PID"
wait "${burst_pids[@]}"  # only the submitters: the agent runs on
acked=$(cat "$E2E_DIR"/acked.* 2>/dev/null | wc -l)
[ "$acked" -gt 0 ] || fail "no submission was acknowledged before the crash (the burst started too late)"
e2e_server
missing=0
for id in $(cat "$E2E_DIR"/acked.*); do
  job_json "$id" >/dev/null 2>&1 || { echo "lost acknowledged job $id" >&2; missing=$((missing + 1)); }
done
expect_eq 0 "$missing" "acknowledged jobs lost after kill -9 of the server ($acked acknowledged)"
ids=$(cat "$E2E_DIR"/acked.*)
"$GPOOL" cancel $ids >/dev/null 2>&1
wait_for 20 "node n1 to be back up after the server restart" node_is n1 up

# --- 2. kill -9 of an agent with a running job; restart re-adopts it -----------------------
marker=$E2E_DIR/adopted.done
run=$("$GPOOL" submit -g 1 -n survivor -- sh -c "sleep 4; echo done > '$marker'")
wait_for 30 "job $run's process to start" job_launched "$run"
kill -9 "$(agent_pid n1)"
sleep 0.5
pgrep -f "sleep [4]" >/dev/null || fail "the job's process must outlive its agent"
e2e_agent n1 2xH100-80GB
job_is "$run" running || fail "the restarted agent must re-adopt job $run (it is $(job_field "$run" .state))"
wait_for 20 "re-adopted job $run to complete" job_is "$run" completed
test -f "$marker" || fail "the re-adopted job did not run to its end"
expect_eq 0 "$(job_field "$run" .restarts)" "a re-adopted job is not restarted"

# --- 3. an agent that stays away: node down, job requeued and run elsewhere ---------------
e2e_agent n2 2xH100-80GB
"$GPOOL" cordon n2 --reason "keep the first start on n1" >/dev/null
lost=$("$GPOOL" submit -g 1 --requeue -n requeued -- sh -c 'echo "ran on $GPOOL_NODELIST"; sleep 3')
wait_for 30 "job $lost to run on n1" job_launched "$lost"
"$GPOOL" resume n2 >/dev/null
kill -STOP "$(agent_pid n1)"   # the agent hangs: no heartbeat, no answer
wait_for 20 "node n1 to be marked down" node_is n1 down
wait_for 20 "job $lost to run again after its node was lost" sh -c \
  "[ \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show $lost -o json | jq -r '.restarts')\" -ge 1 ]"
wait_for 20 "requeued job $lost to complete on n2" job_is "$lost" completed
expect_eq n2 "$(job_field "$lost" '[.timeline[] | select(.event == "started") | .node] | last')" \
  "the requeued job ran on the surviving node"
timeline=$(job_field "$lost" '[.timeline[].event] | join(",")')
expect_contains "$timeline" "requeued" "the timeline records the requeue"
kill -CONT "$(agent_pid n1)"
echo "ok: crashes"
