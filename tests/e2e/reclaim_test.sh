#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Reclaim with the grace handshake: queue b borrows the GPUs queue a deserves; when a's job
# arrives, b's job gets its checkpoint signal (USR1), exits inside its grace period, is
# requeued, and runs again to its end once a's job is done. The timeline tells the story.
source "$(dirname "$0")/lib.sh"
e2e_init
E2E_QUEUES='  - {name: a, deserved: 2, users: ["*"]}
  - {name: b, deserved: 0, users: ["*"]}' e2e_server
e2e_agent n1 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN
ev=$E2E_DIR/events

# The borrower: notes each start, checkpoints (here: notes it) on USR1 and exits.
{
  echo '#!/bin/sh'
  echo "echo start >>'$ev'"
  echo "trap 'echo usr1 >>\"$ev\"; exit 0' USR1"
  echo 'i=0'
  echo 'while [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done'
  echo "echo finished >>'$ev'"
} >borrower.sh
b=$("$GPOOL" submit -q b -g 2 --requeue --signal USR1 --grace 5s -n borrower borrower.sh)
wait_for 20 "the borrower to run" job_is "$b" running
wait_for 10 "the borrower to start" grep -q start "$ev"

a=$("$GPOOL" submit -q a -g 2 -n owner -- sleep 1)
wait_for 20 "the owner's job to run" job_is "$a" running
grep -q usr1 "$ev" || fail "the borrower must have received its checkpoint signal before the owner started"
wait_for 30 "the borrower to run again and finish" job_is "$b" completed
expect_eq "start,usr1,start,finished" "$(paste -sd, "$ev")" "the borrower's life"
expect_eq 1 "$(job_field "$b" .restarts)" "one restart"
timeline=$(job_field "$b" '[.timeline[].event] | join(",")')
expect_contains "$timeline" "preempted" "timeline has the preemption"
expect_contains "$timeline" "requeued" "timeline has the requeue"
[ "$(job_field "$b" '[.timeline[] | select(.event == "started")] | .[1].at')" -ge "$(job_field "$a" .ended_at)" ] \
  || fail "the borrower came back before the owner's job ended"
# The queue tree shows the two queues with their quotas.
queues=$("$GPOOL" queues)
grep -Eq '^a +2 ' <<<"$queues" || fail "gpool queues must show queue a deserving 2 GPUs: $queues"
grep -Eq '^b +0 ' <<<"$queues" || fail "gpool queues must show queue b deserving 0 GPUs: $queues"
expect_eq 2 "$("$GPOOL" queues -o json | jq '[.[] | select(.name == "a" or .name == "b")] | length')" "queues -o json"
echo "ok: reclaim"
