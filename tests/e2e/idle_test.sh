#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A queue's idle policy on a real pool, the simulated GPUs loaded as each job declares:
#   1. a job at 0% SM in a queue whose policy requeues is stopped and requeued (its
#      timeline says why, with the figures), while a busy job (90%) keeps running;
#   2. in a queue whose policy notifies, the idle job keeps running and `gpool show` and
#      `gpool why` say since when it is idle and what the policy did;
#   3. a bad key in a queue's idle_policy stops the server with the key's name.
source "$(dirname "$0")/lib.sh"
e2e_init
E2E_QUEUES='  - {name: lab, users: ["*"], idle_policy: {window: 3s, grace: 0, action: requeue}}
  - {name: watch, users: ["*"], idle_policy: {window: 3s, grace: 0}}' e2e_server
export GPOOL_TOKEN=$ADMIN_TOKEN
e2e_agent n1 4xH100-80GB

# --- 1. requeued when idle, the busy one left alone -----------------------------------
idle=$("$GPOOL" submit -q lab -g 1 --requeue -n idle -e GPOOL_SIM_UTIL=0 -- sleep 60)
busy=$("$GPOOL" submit -q lab -g 1 --requeue -n busy -e GPOOL_SIM_UTIL=90 -- sleep 60)
watched=$("$GPOOL" submit -q watch -g 1 -n watched -e GPOOL_SIM_UTIL=0 -- sleep 60)
requeued() { [ "$(job_field "$1" '[.timeline[] | select(.event == "requeued")] | length')" -ge 1 ]; }
wait_for 30 "the idle job to be requeued" requeued "$idle"
expect_eq "requeue" "$(job_field "$idle" '[.timeline[] | select(.event == "idle")][0].action')" \
  "the idle event names the action"
expect_eq 0 "$(job_field "$idle" '[.timeline[] | select(.event == "idle")][0].util_pct')" \
  "the idle event gives the job's SM use"
timeline=$("$GPOOL" show "$idle" | sed -n '/^  timeline$/,/^  [a-z]/p')
expect_contains "$timeline" "requeued: idle: under 5% SM for 3 s" "gpool show: the requeue and why"
expect_contains "$timeline" "idle: under 5% SM for" "gpool show: the idle event"
[ "$(job_field "$idle" .restarts)" -ge 1 ] || fail "the idle job was requeued, restarts >= 1"
expect_eq running "$(job_field "$busy" .state)" "the busy job keeps running"
expect_eq 0 "$(job_field "$busy" '[.timeline[] | select(.event == "idle")] | length')" \
  "the busy job has no idle event"
util=$(job_field "$busy" .idle.util_pct)
[ "${util%.*}" -ge 50 ] || fail "the busy job's measured SM use: $util"

# --- 2. notified: gpool show and gpool why ----------------------------------------------
notified() { [ "$(job_field "$1" '.idle.acted')" = true ]; }
wait_for 20 "the watched job to be notified" notified "$watched"
expect_eq running "$(job_field "$watched" .state)" "a notified job keeps running"
expect_contains "$("$GPOOL" show "$watched")" "  idle       under 5% SM since" "gpool show: idle since"
expect_contains "$("$GPOOL" show "$watched")" "policy: notified at" "gpool show: the policy's verdict"
expect_contains "$("$GPOOL" why "$watched")" "Idle: under 5% SM since" "gpool why: idle"
"$GPOOL" cancel "$idle" "$busy" "$watched" >/dev/null

# --- 3. a bad key names the field -------------------------------------------------------
sed 's/idle_policy: {window: 3s, grace: 0}/idle_policy: {window: 3s, grace: -1}/' server.yaml >bad.yaml
err=$(timeout 10 "$GPOOL" server --config bad.yaml 2>&1) && fail "a bad idle policy must stop the server"
expect_contains "$err" "queues[2].idle_policy.grace" "the error names the key"
echo "ok: idle"
