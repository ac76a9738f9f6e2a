#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Advance reservations and maintenance windows (`gpool reserve`, /v1/reservations), with a
# real server and simulated agents, in seconds:
#   1. only admins create, change or delete (403 for others); everyone lists;
#   2. a maintenance window on n1 starting in a few seconds: `gpool nodes` shows it ahead;
#      at its start the requeueable job running on n1 gets its checkpoint signal and goes
#      back to pending (preempted, reason maintenance), n1 shows as `maint`, and `gpool why`
#      names the window; once it ends, the job runs on n1 again;
#   3. reservations are kept in the store: a kill -9 and restart keep them; delete drops one.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

# A requeueable job on n1 that records the checkpoint signal it gets.
cat >ckpt.sh <<'SH'
#!/bin/bash
trap 'echo "TERM $SLURM_RESTART_COUNT" >>signals; exit 143' TERM
echo "run ${SLURM_RESTART_COUNT:-0}" >>runs
while :; do sleep 0.2; done
SH
chmod +x ckpt.sh
job=$(as_bob "$GPOOL" submit -g 2 --requeue --grace 5 -- "$E2E_DIR/ckpt.sh") || fail "submit: $job"
wait_for 20 "job $job to run on n1" job_launched "$job"
e2e_agent n2 2xH100-80GB
hog=$(as_bob "$GPOOL" submit -g 2 -- sleep 120) || fail "submit hog: $hog"
wait_for 20 "the hog to run on n2" job_launched "$hog"
expect_eq n2 "$(job_field "$hog" '.placements[0].node')" "the hog runs on n2"

# ---- 1. who may do what ----
body='{"name":"x","nodes":["n2"],"start":"now+1h","duration":"1h"}'
expect_eq 403 "$(api_status POST /v1/reservations "$BOB_TOKEN" -d "$body")" "a user may not create ($(cat body))"
expect_eq 200 "$(api_status GET /v1/reservations "$BOB_TOKEN")" "a user may list"
expect_eq 400 "$(api_status POST /v1/reservations "$ADMIN_TOKEN" -d '{"nodes":["nope"],"start":"now","duration":60}')" "unknown node"
expect_eq nodes "$(jq -r .error.field body)" "the error names the field"
expect_eq 400 "$(api_status POST /v1/reservations "$ADMIN_TOKEN" -d '{"nodes":["n2"],"start":"soon","duration":60}')" "bad start"
expect_eq start "$(jq -r .error.field body)" "the error names start"
expect_eq 400 "$(api_status POST /v1/reservations "$ADMIN_TOKEN" -d '{"nodes":["n2"],"start":"now","duration":60,"colour":1}')" "unknown field"

# ---- 2. a maintenance window on n1 ----
out=$("$GPOOL" reserve create --nodes n1 --start now+6 --duration 10 --maint --name maint-dec) || fail "reserve create: $out"
created=$(date +%s)
expect_contains "$out" "maint-dec" "create prints it"
expect_eq 403 "$(api_status DELETE /v1/reservations/maint-dec "$BOB_TOKEN")" "a user may not delete"
expect_eq 403 "$(api_status PATCH /v1/reservations/maint-dec "$BOB_TOKEN" -d '{"duration":5}')" "a user may not update"
expect_eq 409 "$(api_status POST /v1/reservations "$ADMIN_TOKEN" -d '{"nodes":["n1"],"start":"now+8","duration":60}')" "n1 is taken then"
expect_contains "$(as_bob "$GPOOL" reserve list)" "maint-dec" "everyone sees the list"
expect_contains "$("$GPOOL" nodes)" "maintenance maint-dec in" "gpool nodes shows the window ahead"
# By GPUs: the nodes are picked when it is made (n2: n1 is taken over that window).
"$GPOOL" reserve create --gpus 2 --model h100-80gb --start now+8 --duration 2h --users bob --name later >/dev/null ||
  fail "reserve create --gpus"
expect_eq n2 "$("$GPOOL" reserve list -o json | jq -r '.[] | select(.name == "later") | .nodes | join(",")')" "2 GPUs: n2"
"$GPOOL" reserve update later --duration 3h >/dev/null || fail "reserve update"
expect_eq 10800 "$("$GPOOL" reserve list -o json | jq -r '.[] | select(.name == "later") | .duration_s')" "updated"

wait_for 20 "job $job to be stopped for maintenance" sh -c "grep -q TERM '$E2E_DIR/signals' 2>/dev/null"
[ $(($(date +%s) - created)) -ge 5 ] || fail "the window stopped the job before its start"
expect_contains "$(job_field "$job" '[.timeline[] | select(.event == "preempted") | .reason] | join(",")')" \
  maintenance "preempted for maintenance"
wait_for 20 "job $job to be pending again" job_is "$job" pending
expect_eq maint "$("$GPOOL" nodes | awk '$1 == "n1" {print $2}')" "gpool nodes shows n1 in maintenance"
why=$(as_bob "$GPOOL" why "$job")
expect_contains "$why" "reserved by maint-dec" "gpool why names the window"
expect_eq Reservation "$(job_field "$job" .pending_reason)" "the reason"

# ---- 3. kept in the store ----
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
e2e_server
expect_eq "later,maint-dec" "$("$GPOOL" reserve list -o json | jq -r '[.[].name] | sort | join(",")')" \
  "both reservations after a restart"
expect_contains "$(as_bob "$GPOOL" why "$job")" "reserved by maint-dec" "the window still holds after the restart"
"$GPOOL" reserve delete later >/dev/null || fail "reserve delete"
expect_eq 404 "$(api_status GET /v1/reservations/later "$BOB_TOKEN")" "deleted"

# Once the window is over, the job runs again (on n1: n2 is the hog's).
wait_for 30 "job $job to run again after the window" job_launched "$job" 2
expect_eq "run 0/run 1" "$(tr '\n' / <runs | sed 's|/$||')" "it ran twice, the second time as restart 1"
expect_eq "" "$("$GPOOL" reserve list -o json | jq -r '.[].name')" "the ended window is gone"
echo "PASS"
