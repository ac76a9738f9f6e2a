#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Per-user limits of a queue on a real server (docs/config.md "Per-user limits"), each with
# its reason: a user at the queue's max_gpus waits with UserGpuLimit while another user's
# job starts; a user past max_pending_jobs is refused (429, UserPendingLimit); a user at
# max_gpu_hours waits with UserGpuHours; limits set through the API are checked, kept
# across a restart and shown by `gpool queues -v`.
source "$(dirname "$0")/lib.sh"
e2e_init
E2E_QUEUES='  - name: shared
    users: ["*"]
    user_limits: {period: week, users: {"*": {max_gpus: 1, max_pending_jobs: 2}, bob: {max_gpu_hours: 0}}}' e2e_server
export GPOOL_TOKEN=$ADMIN_TOKEN
e2e_agent n1 4xH100-80GB

# --- max_gpus --------------------------------------------------------------------------------
a1=$(as_alice "$GPOOL" submit -q shared -g 1 -n a1 -- sh -c "$(gate_wait)")
a2=$(as_alice "$GPOOL" submit -q shared -g 1 -n a2 -- sh -c "$(gate_wait)")
wait_for 20 "a1 to run" job_launched "$a1"
wait_for 10 "a2 to wait for alice's GPU limit" job_field_is "$a2" .pending_reason UserGpuLimit
expect_contains "$("$GPOOL" why "$a2")" "which allows one user 1" "gpool why names the limit"

# --- max_pending_jobs -------------------------------------------------------------------------
a3=$(as_alice "$GPOOL" submit -q shared -g 1 -n a3 -- true)
out=$(as_alice "$GPOOL" submit -q shared -g 1 -n a4 -- true 2>&1) && fail "a third pending job of alice was taken: $out"
expect_contains "$out" "UserPendingLimit" "the refusal names the limit"
expect_contains "$out" "user_limits.max_pending_jobs" "the refusal names the field"

# --- max_gpu_hours ----------------------------------------------------------------------------
b1=$(as_bob "$GPOOL" submit -q shared -g 1 -n b1 -- true)
wait_for 10 "bob's job to wait for his GPU-hours" job_field_is "$b1" .pending_reason UserGpuHours
job_is "$a3" pending || fail "a3 must wait too"

# --- through the API, shown, kept -------------------------------------------------------------
code=$(api_status PUT /v1/queues/lab "$ADMIN_TOKEN" -d '{"users": ["*"], "user_limits": {"users": {"carol": {"max_gpus": -1}}}}')
expect_eq 400 "$code" "a negative limit is refused"
expect_contains "$(cat "$E2E_DIR/body")" "user_limits.users.carol.max_gpus" "the error names the field"
code=$(api_status PUT /v1/queues/lab "$ADMIN_TOKEN" -d '{"users": ["*"], "user_limits": {"period": "day", "users": {"*": {"max_gpus": 2, "max_gpu_hours": 10}}}}')
expect_eq 201 "$code" "limits through the API ($(cat "$E2E_DIR/body"))"
table=$("$GPOOL" queues -v)
expect_contains "$table" "USER_LIMITS" "gpool queues -v has the column"
expect_contains "$table" "*: 1 GPUs, 2 pending; bob: 0 GPU-h/week" "the config's limits"
expect_contains "$table" "*: 2 GPUs, 10 GPU-h/day" "the API's limits"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
e2e_server
expect_eq 2 "$("$GPOOL" queues -o json | jq -r '.[] | select(.name == "lab") | .user_limits.users["*"].max_gpus')" \
  "the API's limits survive a restart"
open_gate
echo "user_limits_test: ok"
