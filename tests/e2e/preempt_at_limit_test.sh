#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Priority preemption at a queue's limit, on a real pool: q1 is capped at 4 GPUs and runs
# four one-GPU batch jobs on an 8-GPU node (four GPUs free, but the queue is at its limit).
# A 2-GPU training job of the same queue takes the place of two of them, through the usual
# handshake: they get their checkpoint signal, exit inside their grace period and are
# requeued; the training job then runs within the limit, and the batch jobs left waiting
# cannot preempt it back (QueueLimit).
source "$(dirname "$0")/lib.sh"
e2e_init
E2E_QUEUES='  - {name: q1, deserved: 4, limit: 4, users: ["*"]}' e2e_server
e2e_agent n1 8xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN
ev=$E2E_DIR/events

# A batch job: exits when asked to checkpoint (USR1), else holds its GPU.
{
  echo '#!/bin/sh'
  echo "trap 'echo usr1 >>\"$ev\"; exit 0' USR1"
  echo 'i=0'
  echo 'while [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done'
} >batch.sh
batch=()
for i in 1 2 3 4; do
  batch+=("$("$GPOOL" submit -q q1 -g 1 -p batch --requeue --signal USR1 --grace 5s -n "b$i" batch.sh)")
done
for b in "${batch[@]}"; do wait_for 20 "batch job $b to run" job_launched "$b"; done

train=$("$GPOOL" submit -q q1 -g 2 -p training -n train -- sh -c "$(gate_wait)")
wait_for 20 "the training job to run" job_is "$train" running
expect_eq 2 "$(wc -l <"$ev")" "two batch jobs got their checkpoint signal"
preempted=0 pending=0
for b in "${batch[@]}"; do
  if [ "$(job_field "$b" '[.timeline[] | select(.event == "preempted")] | length')" -ge 1 ]; then
    preempted=$((preempted + 1))
    wait_for 10 "preempted job $b to be requeued" job_is "$b" pending
    wait_for 10 "job $b to wait at the limit" \
      test "$(job_field "$b" .pending_reason)" = QueueLimit
  fi
done
expect_eq 2 "$preempted" "exactly the two batch jobs the limit calls for were preempted"
expect_eq 4 "$("$GPOOL" queues -o json | jq '.[] | select(.name == "q1") | .allocated')" \
  "q1 holds its limit: the training job and two batch jobs"
sleep 2 # a few steps: the training job keeps running, nothing else is preempted
job_is "$train" running || fail "the training job must keep running"
expect_eq 2 "$(wc -l <"$ev")" "no further checkpoint signal"
open_gate
"$GPOOL" cancel "${batch[@]}" >/dev/null
echo "ok: preempt at limit"
