#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fair share over time on a real server (docs/scheduling.md "Fair share over time"):
#   1. issue 37's reproduction: alice holds both GPUs of a shared queue and has more
#      pending; bob submits later; when a GPU frees, bob's job starts, not alice's next;
#   2. a run's usage is charged when it ends: `gpool shares` shows alice's and the queue's
#      decayed usage, `gpool why` a fair-share line, /metrics the factor;
#   3. the usage is in the store (SQLite settings) and a kill -9 and restart change
#      nothing but the decay of the seconds between;
#   4. a weight-0 queue is taken through the API.
source "$(dirname "$0")/lib.sh"
e2e_need sqlite3
e2e_init
E2E_QUEUES='  - {name: shared, users: ["*"]}' e2e_server 'fairshare: {half_life: 1h, model_weights: {H100-80GB: 2}}'
export GPOOL_TOKEN=$ADMIN_TOKEN
DB=$E2E_DIR/server/gpool.db
e2e_agent n1 2xH100-80GB

# --- 1. a burst does not jump a colleague's job -------------------------------------------
a1=$(as_alice "$GPOOL" submit -q shared -g 1 -n a1 -- sh -c \
  "i=0; while [ ! -e '$E2E_DIR/gate1' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done; sleep 1")
a2=$(as_alice "$GPOOL" submit -q shared -g 1 -n a2 -- sh -c "$(gate_wait)")
wait_for 20 "alice's first two jobs to run" job_launched "$a2"
job_launched "$a1" || wait_for 20 "a1 to run" job_launched "$a1"
a3=$(as_alice "$GPOOL" submit -q shared -g 1 -n a3 -- sh -c "$(gate_wait)")
a4=$(as_alice "$GPOOL" submit -q shared -g 1 -n a4 -- sh -c "$(gate_wait)")
sleep 1
b1=$(as_bob "$GPOOL" submit -q shared -g 1 -n b1 -- sh -c "$(gate_wait)")
# The API's queue positions follow the same order: bob's job first, alice's third second.
wait_for 10 "bob's job to be ranked first" job_field_is "$b1" .queue_position 1
expect_eq 2 "$(job_field "$a3" .queue_position)" "alice's third job comes after bob's"
touch "$E2E_DIR/gate1"
wait_for 30 "a1 to complete" job_is "$a1" completed
wait_for 20 "bob's job to start on the freed GPU" job_launched "$b1"
job_is "$a3" pending || fail "alice's third job must still wait behind bob's (it is $(job_field "$a3" .state))"

# --- 2. charged at the end of a run, shown ----------------------------------------------------
shares=$("$GPOOL" shares -o json)
alice=$(echo "$shares" | jq -r '.users[] | select(.queue == "shared" and .user == "alice") | .raw_usage_gpu_hours')
queue=$(echo "$shares" | jq -r '.queues[] | select(.queue == "shared") | .raw_usage_gpu_hours')
[ -n "$alice" ] && awk "BEGIN { exit !($alice > 0) }" || fail "alice has usage after a1 ran: $shares"
awk "BEGIN { exit !($queue >= $alice) }" || fail "the queue's usage holds alice's: $shares"
expect_eq "3600" "$(echo "$shares" | jq -r .half_life_s)" "the half-life from the config"
table=$("$GPOOL" shares)
expect_contains "$table" "FACTOR" "gpool shares prints a table"
expect_contains "$table" "alice" "gpool shares lists alice"
expect_contains "$table" "Usage halves every 1h" "gpool shares names the half-life"
why=$("$GPOOL" why "$a3")
expect_contains "$why" "Fair share: queue shared factor" "gpool why has a fair-share line"
expect_contains "$why" "user alice factor" "gpool why gives the user's factor"
metrics=$(curl -fsS "$SERVER_URL/metrics")
expect_contains "$metrics" 'gpool_fairshare_factor{queue="shared"}' "metrics: the queue's factor"
expect_contains "$metrics" 'gpool_fairshare_usage_gpus{queue="shared"}' "metrics: the queue's usage"

# --- 3. kept in the store; a restart changes nothing --------------------------------------------
open_gate
for id in "$a2" "$a3" "$a4" "$b1"; do wait_for 40 "job $id to complete" job_is "$id" completed; done
rows=$(sqlite3 -readonly "$DB" "SELECT name FROM settings WHERE name LIKE 'fairshare/%' ORDER BY name")
# (bob's job may end in the second it started: whole seconds, as the ledger, charge nothing.)
expect_eq "fairshare/shared
fairshare/shared:alice" "$(echo "$rows" | grep -v ':bob$')" "the usage rows in the store"
before=$("$GPOOL" shares -o json | jq -r '.users[] | select(.user == "alice") | .raw_usage_gpu_hours')
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
e2e_server
after=$("$GPOOL" shares -o json | jq -r '.users[] | select(.user == "alice") | .raw_usage_gpu_hours')
# At most a minute between the two at a half-life of an hour: within 2%, and never more.
awk "BEGIN { exit !($after > 0.98 * $before && $after <= $before * 1.000001) }" ||
  fail "alice's usage across the restart: $before before, $after after"

# --- 4. weight 0 ----------------------------------------------------------------------------
code=$(api_status PUT /v1/queues/scavenger "$ADMIN_TOKEN" -d '{"weight": 0, "users": ["*"]}')
expect_eq 201 "$code" "a weight-0 queue is created ($(cat "$E2E_DIR/body"))"
expect_eq 0 "$("$GPOOL" queues -o json | jq -r '.[] | select(.name == "scavenger") | .weight')" \
  "its weight reads back as 0"
echo "fairshare_test: ok"
