#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The usage ledger as the store keeps it, read straight from the server's SQLite file:
#   1. a preempted, requeued job has one interval per attempt and GPU, and `gpool show`
#      lists both attempts with their ends;
#   2. fractions, time-slice replicas and MIG instances hold their share of a GPU;
#   3. kill -9 of the server with those jobs running, a restart, the jobs end: every
#      interval is closed at its job's end and none is left open for an ended job;
#   4. node intervals follow drain, resume, a node that stops heartbeating and comes back.
source "$(dirname "$0")/lib.sh"
e2e_need sqlite3
e2e_init
E2E_QUEUES='  - {name: a, deserved: 2, users: ["*"]}
  - {name: b, deserved: 0, users: ["*"]}' e2e_server
export GPOOL_TOKEN=$ADMIN_TOKEN
DB=$E2E_DIR/server/gpool.db
q() { sqlite3 -readonly "$DB" "$1"; }

# --- 1. preemption: one interval per attempt and GPU ------------------------------------
e2e_agent n1 2xH100-80GB
"$GPOOL" cordon n1 --reason "not yet" >/dev/null
"$GPOOL" resume n1 >/dev/null
b=$("$GPOOL" submit -q b -g 2 --requeue --signal USR1 --grace 5s -n borrower -- \
  sh -c "trap 'exit 0' USR1; i=0; while [ \$i -lt 20 ]; do sleep 0.1; i=\$((i + 1)); done")
wait_for 20 "the borrower to run" job_launched "$b"
a=$("$GPOOL" submit -q a -g 2 -n owner -- sleep 1)
wait_for 30 "the borrower to run again and finish" job_is "$b" completed
job_is "$a" completed || fail "the owner's job must have completed before the borrower's second run ended"
expect_eq 1 "$(job_field "$b" .restarts)" "the borrower was requeued once"
expect_eq "1|2|closed
2|2|closed" "$(q "SELECT attempt, count(*), CASE WHEN count(\"end\") = count(*) THEN 'closed' END
                   FROM ledger WHERE job_id = $b GROUP BY attempt ORDER BY attempt")" \
  "the borrower's intervals: two GPUs in each of two attempts"
expect_eq "1.0|b|H100-80GB|on-demand|n1" \
  "$(q "SELECT DISTINCT share, queue, model, capacity, node FROM ledger WHERE job_id = $b")" \
  "each interval holds a whole H100 of queue b"
# Attempt 1 ends where attempt 2's GPUs are taken by the owner; the owner's run lies between.
end1=$(q "SELECT max(\"end\") FROM ledger WHERE job_id = $b AND attempt = 1")
start2=$(q "SELECT min(start) FROM ledger WHERE job_id = $b AND attempt = 2")
expect_eq "$end1" "$(job_field "$b" '.attempts[0].end')" "gpool show: the first attempt's end"
expect_eq "preempted" "$(job_field "$b" '.attempts[0].end_reason')" "gpool show: why the first attempt ended"
expect_eq "$start2" "$(job_field "$b" '.attempts[1].start')" "gpool show: the second attempt's start"
expect_eq "$start2" "$(job_field "$b" .started_at)" "started_at is the current attempt's start"
expect_eq "$(job_field "$b" .ended_at)" "$(job_field "$b" '.attempts[1].end')" "the last attempt ends with the job"
[ "$(q "SELECT min(start) FROM ledger WHERE job_id = $a")" -ge "$end1" ] ||
  fail "the owner's GPUs were the borrower's until its first attempt ended"
attempts=$("$GPOOL" show "$b" | sed -n '/^  attempts$/,/^  [a-z]/p')
expect_contains "$attempts" "on n1: preempted" "gpool show lists the first attempt and its end"
expect_contains "$attempts" "2 " "gpool show lists the second attempt"

# --- 2. shares of a GPU -------------------------------------------------------------------
e2e_agent n2 1xH100-80GB --sharing shared
e2e_agent n3 1xH100-80GB --sharing timeslice:4
e2e_agent n4 1xH100-80GB --sharing mig:3g.40gb,3g.40gb
ids=()
for i in 1 2; do
  ids+=("$("$GPOOL" submit --gpu-fraction 0.3 -n frac-$i -- sh -c "$(gate_wait)")")
done
ids+=("$("$GPOOL" submit --mig 3g.40gb -n mig -- sh -c "$(gate_wait)")")
for id in "${ids[@]}"; do wait_for 30 "job $id to run" job_launched "$id"; done
# A fraction on a shared GPU holds 0.3 of it, one replica of a 4-way time-sliced GPU 1/4,
# a 3g instance 3 of the 7 compute slices.
for id in "${ids[@]}"; do
  row=$(q "SELECT node, share FROM ledger WHERE job_id = $id AND \"end\" IS NULL")
  case "$row" in
    "n2|0.3" | "n3|0.25" | n4\|0.428571428571429*) ;;
    *) fail "job $id holds the wrong share: $row" ;;
  esac
done

# --- 3. kill -9 of the server with the jobs running ----------------------------------------
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
e2e_server
open_gate
for id in "${ids[@]}"; do wait_for 30 "job $id to complete after the restart" job_is "$id" completed; done
for id in "${ids[@]}"; do
  expect_eq "1|$(job_field "$id" .ended_at)" \
    "$(q "SELECT count(*), max(\"end\") FROM ledger WHERE job_id = $id")" \
    "job $id: one interval, closed at the job's end"
done
expect_eq 0 "$(q "SELECT count(*) FROM ledger l JOIN jobs j ON j.id = l.job_id
                  WHERE l.\"end\" IS NULL AND j.state NOT IN ('running', 'stopping')")" \
  "open intervals of jobs that are not running"

# --- 4. node intervals ---------------------------------------------------------------------
"$GPOOL" drain n2 --reason maintenance >/dev/null
"$GPOOL" resume n2 >/dev/null
kill -STOP "$(agent_pid n2)"
wait_for 20 "node n2 to be marked down" node_is n2 down
kill -CONT "$(agent_pid n2)"
wait_for 20 "node n2 to come back" node_is n2 up
expect_eq "up,drained,up,down,up" "$(q "SELECT group_concat(state) FROM
  (SELECT state FROM node_ledger WHERE node = 'n2' ORDER BY id)")" "n2's states in turn"
expect_eq 1 "$(q "SELECT count(*) FROM node_ledger WHERE node = 'n2' AND \"end\" IS NULL")" \
  "one open interval per node"
# n1: cordoned (drained) and resumed; the server's restart opened nothing new.
expect_eq "up,drained,up" "$(q "SELECT group_concat(state) FROM
  (SELECT state FROM node_ledger WHERE node = 'n1' ORDER BY id)")" "n1's states in turn"
expect_eq "1|2|H100-80GB|on-demand" "$(q "SELECT count(*), gpus, model, capacity FROM node_ledger
  WHERE node = 'n1' AND \"end\" IS NULL")" "n1's open interval"
echo "ok: ledger"
