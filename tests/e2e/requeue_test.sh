#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm's `scontrol requeue` (POST /v1/jobs/{id}/requeue): a job that requeues itself from
# inside with its own step credential runs again with SLURM_RESTART_COUNT 1 and then
# completes; its owner may requeue a running job, another user may not (403), a job that is
# not running cannot be (409), and a job's credential is good for its own requeue only: on
# another job 403, on any other route 401.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 2xH100-80GB
"$GPOOL" slurm-shims "$E2E_DIR/sbin" >/dev/null || fail "gpool slurm-shims"
export PATH=$E2E_DIR/sbin:$PATH GPOOL_TOKEN=$ADMIN_TOKEN

# ---- a job requeues itself once, with no token of its own ----
cat >self.sh <<'SH'
#!/bin/bash
#SBATCH -J self
echo "run $SLURM_RESTART_COUNT" >>runs
if [ "$SLURM_RESTART_COUNT" = 0 ]; then
  scontrol requeue "$SLURM_JOB_ID" 2>>requeue.err || echo "scontrol failed: $?" >>runs
  sleep 30 # the requeue stops this run
fi
SH
self=$(sbatch --parsable self.sh) || fail "sbatch self.sh: $self"
wait_for 40 "job $self to complete after its requeue" job_is "$self" completed
expect_eq "run 0/run 1" "$(tr '\n' / <runs | sed 's|/$||')" "it ran twice, the second time as restart 1 ($(cat requeue.err 2>&1))"
expect_eq 1 "$(job_field "$self" .restarts)" "one restart"
expect_contains "$(job_field "$self" '[.timeline[].event] | join(",")')" "requeue_requested,requeued" "the timeline says so"
expect_eq "the job itself" "$(job_field "$self" '[.timeline[] | select(.event == "requeue_requested") | .by][0]')" "asked by the job itself"

# ---- the owner, another user, a job not running ----
rm -f "$E2E_DIR/gate"
held=$(as_bob "$GPOOL" submit -g 1 -- sh -c "echo start >>held.runs; $(gate_wait)")
wait_for 20 "job $held to run" job_launched "$held"
bob2=$(as_bob "$GPOOL" submit -g 2 -- sleep 60) # pending: n1 has one GPU left
expect_eq 409 "$(api_status POST "/v1/jobs/$bob2/requeue" "$BOB_TOKEN")" "a pending job cannot be requeued ($(cat body))"
as_bob "$GPOOL" cancel "$bob2" >/dev/null
expect_eq 200 "$(api_status POST "/v1/jobs/$held/requeue" "$BOB_TOKEN")" "its owner requeues it ($(cat body))"
wait_for 30 "job $held to run again" sh -c "[ \"\$(grep -c start held.runs)\" = 2 ]"
expect_eq 1 "$(job_field "$held" .restarts)" "restarted once"

# ---- a job's credential: its own requeue only ----
cat >peek.sh <<'SH'
#!/bin/bash
#SBATCH -J peek
code() { curl -s -o /dev/null -w '%{http_code}' -X "$1" -H "Authorization: Bearer $GPOOL_JOB_KEY" "$GPOOL_SERVER$2"; }
echo "other $(code POST /v1/jobs/$OTHER/requeue) show $(code GET /v1/jobs/$SLURM_JOB_ID) cancel $(code POST /v1/jobs/$SLURM_JOB_ID/cancel)" >peek.out
SH
peek=$(OTHER=$held sbatch --parsable peek.sh) || fail "sbatch peek.sh: $peek"
wait_for 30 "job $peek to end" sh -c "'$GPOOL' show $peek -o json | jq -e '.state | test(\"completed|failed\")'"
expect_eq "other 403 show 401 cancel 401" "$(cat peek.out)" "a job's credential reaches nothing but its own steps and requeue"
expect_eq 1 "$(job_field "$held" .restarts)" "the other job was not requeued"
open_gate
wait_for 30 "job $held to complete" job_is "$held" completed
echo "PASS"
