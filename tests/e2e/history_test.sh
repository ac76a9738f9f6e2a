#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ended jobs out of memory: with recent_ended_jobs 5 and 50 ended jobs, memory lists at
# most 5 ended, yet `gpool show` of the oldest shows the same document as when it was in
# memory, `gpool jobs -a` and GET /v1/jobs?all=1 list all 50 across pages, dependencies on
# evicted jobs resolve, a restart keeps it all and never reuses an id; users see only their
# own history; bad parameters are refused naming the field.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server "recent_ended_jobs: 5"
e2e_agent n1 1xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

first=$("$GPOOL" submit -g 1 -n first -- true)
wait_for 20 "job $first to complete" job_is "$first" completed
# The document as it is in memory (usage is the agent's last report, kept in memory only).
before=$(job_json "$first" | jq -S 'del(.usage)')

# 49 more ended jobs: submitted held, then cancelled (no GPU needed).
cancelled=()
for i in $(seq 1 47); do
  id=$(api_status POST /v1/jobs "$ADMIN_TOKEN" -d '{"command":["true"],"hold":true,"name":"h'"$i"'"}' >/dev/null; jq -r .job.id "$E2E_DIR/body")
  [ "$(api_status POST "/v1/jobs/$id/cancel" "$ADMIN_TOKEN")" = 200 ] || fail "cancel $id"
  cancelled+=("$id")
done
bobs=()
for i in 1 2; do
  id=$(api_status POST /v1/jobs "$BOB_TOKEN" -d '{"command":["secret-'"$i"'"],"hold":true}' >/dev/null; jq -r .job.id "$E2E_DIR/body")
  [ "$(api_status POST "/v1/jobs/$id/cancel" "$BOB_TOKEN")" = 200 ] || fail "bob cancels $id"
  bobs+=("$id")
done

# Memory keeps at most 5 ended jobs (eviction runs after each committed batch).
in_memory() { api_status GET "/v1/jobs?state=completed,cancelled,failed&limit=1000" "$ADMIN_TOKEN" >/dev/null; jq '.jobs | length' "$E2E_DIR/body"; }
wait_for 10 "memory to hold at most 5 ended jobs" sh -c "[ \$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' jobs -s completed,cancelled,failed -o json | jq length) -le 5 ]"
n=$(in_memory)
[ "$n" -le 5 ] || fail "memory lists $n ended jobs, expected at most 5"

check_history() {
  local what=$1
  # The oldest job, read from the store, is the document it was in memory.
  after=$(job_json "$first" | jq -S 'del(.usage)')
  [ "$before" = "$after" ] || fail "$what: job $first read from the store differs: $(diff <(echo "$before") <(echo "$after"))"
  expect_contains "$("$GPOOL" show "$first")" "completed" "$what: gpool show of an evicted job"
  expect_contains "$("$GPOOL" why "$first")" "$first" "$what: gpool why of an evicted job"
  # Every ended job through the CLI (it follows the cursor) and by pages of 7.
  total=$("$GPOOL" jobs -a -o json | jq length)
  expect_eq 50 "$total" "$what: gpool jobs -a lists every ended job"
  local cursor="" pages=0 seen=0
  while :; do
    api_status GET "/v1/jobs?all=1&limit=7${cursor:+&cursor=$cursor}" "$ADMIN_TOKEN" >/dev/null
    seen=$((seen + $(jq '.jobs | length' "$E2E_DIR/body")))
    pages=$((pages + 1))
    cursor=$(jq -r '.next // empty' "$E2E_DIR/body")
    [ -n "$cursor" ] || break
    [ $pages -lt 20 ] || fail "$what: the cursor does not end"
  done
  expect_eq 50 "$seen" "$what: pages of 7 list every ended job"
  expect_eq 8 "$pages" "$what: 50 jobs in pages of 7"
  # Newest ended first, each once.
  api_status GET "/v1/jobs?all=1&limit=100" "$ADMIN_TOKEN" >/dev/null
  expect_eq 50 "$(jq '[.jobs[].id] | unique | length' "$E2E_DIR/body")" "$what: each job once"
  expect_eq "$first" "$(jq -r '.jobs[-1].id' "$E2E_DIR/body")" "$what: the first to end is last"
  # A period: nothing ended before 2001, everything since.
  api_status GET "/v1/jobs?all=1&to=2001-01-01" "$ADMIN_TOKEN" >/dev/null
  expect_eq 0 "$(jq '.jobs | length' "$E2E_DIR/body")" "$what: an empty period"
  total=$("$GPOOL" jobs -a --from 2001-01-01T00:00:00Z -o json | jq length)
  expect_eq 50 "$total" "$what: --from lists the period"
  # Users see their own history only; another's evicted job hides its command.
  expect_eq 200 "$(api_status GET "/v1/jobs?all=1" "$BOB_TOKEN")" "$what: bob lists his history"
  expect_eq 2 "$(jq '.jobs | length' "$E2E_DIR/body")" "$what: bob sees his 2 jobs only"
  expect_eq 403 "$(api_status GET "/v1/jobs?all=1&user=alice" "$BOB_TOKEN")" "$what: bob may not list alice's"
  expect_eq user "$(jq -r .error.field "$E2E_DIR/body")" "$what: the 403 names user"
  expect_eq 200 "$(api_status GET "/v1/jobs?all=1&user=bob" "$ADMIN_TOKEN")" "$what: an admin lists bob's"
  expect_eq 2 "$(jq '.jobs | length' "$E2E_DIR/body")" "$what: user=bob filters"
  expect_eq 200 "$(api_status GET "/v1/jobs/${cancelled[0]}" "$BOB_TOKEN")" "$what: bob reads an evicted job"
  expect_eq '["(hidden)"]' "$(jq -c .job.command "$E2E_DIR/body")" "$what: another's command is hidden"
  expect_eq '["secret-1"]' "$(as_bob "$GPOOL" show "${bobs[0]}" -o json | jq -c .command)" "$what: bob sees his own"
  expect_eq 409 "$(api_status POST "/v1/jobs/${cancelled[0]}/cancel" "$ADMIN_TOKEN")" "$what: an evicted job has ended"
  expect_eq 404 "$(api_status GET "/v1/jobs/99999" "$ADMIN_TOKEN")" "$what: an unknown job"
  # Bad parameters name their field.
  for bad in "from=yesterday:from" "to=2026-02-30:to" "limit=0:limit" "limit=10001:limit" \
             "cursor=abc:cursor" "from=2026-01-02&to=2026-01-01:to" ; do
    expect_eq 400 "$(api_status GET "/v1/jobs?all=1&${bad%:*}" "$ADMIN_TOKEN")" "$what: ${bad%:*}"
    expect_eq "${bad##*:}" "$(jq -r .error.field "$E2E_DIR/body")" "$what: ${bad%:*} names the field"
  done
  # Dependencies on evicted jobs: after_ok on one that completed runs, on one cancelled is
  # refused; after_any on one cancelled runs.
  d1=$("$GPOOL" submit -g 1 --afterok "$first" -- true)
  wait_for 20 "job $d1 (afterok an evicted completed job) to complete" job_is "$d1" completed
  out=$("$GPOOL" submit -g 1 --afterok "${cancelled[1]}" -- true 2>&1) && fail "$what: afterok a cancelled job must be refused"
  expect_contains "$out" "cancelled" "$what: the refusal says how the dependency ended"
  d2=$("$GPOOL" submit -g 1 --afterany "${cancelled[2]}" -- true)
  wait_for 20 "job $d2 (afterany an evicted cancelled job) to complete" job_is "$d2" completed
  expect_contains "$("$GPOOL" jobs -a --limit 2 -o json | jq -r '.[].id')" "$d2" "$what: the last ended comes first"
}

check_history "running"
# A restart (d1 and d2 ended too: 52 ended jobs) loads only the recent ones, and keeps the
# rest reachable.
max_id=$d2
kill -TERM "$SERVER_PID"
wait_for 10 "the server to stop" sh -c "! kill -0 $SERVER_PID"
e2e_server
total=$("$GPOOL" jobs -a -o json | jq length)
expect_eq 52 "$total" "after a restart: every ended job"
after=$(job_json "$first" | jq -S 'del(.usage)')
[ "$before" = "$after" ] || fail "after a restart: job $first differs"
[ "$(in_memory)" -le 5 ] || fail "after a restart: memory loads at most 5 ended jobs"
new=$("$GPOOL" submit --hold -- true)
[ "$new" -gt "$max_id" ] || fail "after a restart: job id $new reuses an id (last was $max_id)"
d3=$("$GPOOL" submit -g 1 --afterok "$first" -- true)
wait_for 20 "job $d3 (afterok an evicted job, after a restart) to complete" job_is "$d3" completed
metrics=$(curl -fsS "$SERVER_URL/metrics")
expect_contains "$metrics" 'gpool_jobs{state="cancelled"} 49' "the metrics count every ended job"
echo "ok: history"
