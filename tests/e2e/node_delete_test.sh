#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# DELETE /v1/nodes/{name}: refused for an up node and for one that still runs a job (409,
# naming why), allowed for a drained node once empty; --force loses the node's job as a lost
# node would (requeued: it runs again on the other node); a deleted node leaves the list and
# stays gone after a server restart, and an agent that registers the name again is a new node.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 1xH100-80GB
e2e_agent n2 1xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

started_on() { job_field "$1" '[.timeline[] | select(.event == "started")] | last | .node'; }
listed() { "$GPOOL" nodes -o json | jq -e --arg n "$1" 'any(.[]; .name == $n)' >/dev/null; }

j=$("$GPOOL" submit -g 1 --requeue -n held -- sh -c "$(gate_wait)")
wait_for 20 "job $j to run" job_is "$j" running
victim=$(started_on "$j")
case "$victim" in n1) other=n2 ;; n2) other=n1 ;; *) fail "job $j started on '$victim'" ;; esac

out=$("$GPOOL" nodes delete "$victim" 2>&1) && fail "deleting an up node must be refused: $out"
expect_contains "$out" "drain or cordon it first" "an up node"
"$GPOOL" drain "$victim" --reason retire >/dev/null || fail "drain $victim"
expect_eq 409 "$(api_status DELETE "/v1/nodes/$victim" "$ADMIN_TOKEN")" "a drained node running a job"
expect_contains "$(cat "$E2E_DIR/body")" "still runs job $j" "the refusal names the job"
expect_eq 403 "$(api_status DELETE "/v1/nodes/$victim" "$BOB_TOKEN")" "a user deleting a node"
expect_eq 400 "$(api_status DELETE "/v1/nodes/$victim?force=maybe" "$ADMIN_TOKEN")" "a bad force value"
listed "$victim" || fail "a refused delete must leave $victim listed"

# Forced: the machine is gone (its agent with it) and the job runs again elsewhere.
kill -KILL "$(agent_pid "$victim")"
"$GPOOL" nodes delete "$victim" --force >/dev/null || fail "a forced delete must succeed"
listed "$victim" && fail "$victim must leave the node list"
expect_eq 404 "$(api_status GET "/v1/nodes/$victim" "$ADMIN_TOKEN")" "GET a deleted node"
wait_for 20 "job $j to run again" job_is "$j" running
expect_eq "$other" "$(started_on "$j")" "the requeued job's node"
expect_contains "$(job_field "$j" '[.timeline[].event] | join(",")')" "requeued" "the job was requeued"
open_gate
wait_for 20 "job $j to complete" job_is "$j" completed

# Drained and empty: deleted while its agent still runs; the agent registers the name again
# and it is a new node (up, no drain reason).
"$GPOOL" drain "$other" --reason retire >/dev/null || fail "drain $other"
"$GPOOL" nodes delete "$other" >/dev/null || fail "deleting a drained, empty node must succeed"
wait_for 20 "$other to register again as a new node" node_is "$other" up
expect_eq null "$("$GPOOL" nodes -o json | jq -r --arg n "$other" '.[] | select(.name == $n) | .reason')" \
  "the new node's reason"

# A restart reads the store: the deleted node does not come back.
kill -9 "$SERVER_PID"
e2e_server
listed "$victim" && fail "$victim must stay deleted after a server restart"
listed "$other" || fail "$other (registered again) must survive the restart"
expect_eq completed "$(job_field "$j" .state)" "the job after the restart"
echo "ok: node delete"
