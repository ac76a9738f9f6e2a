#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A service's replicas are jobs of the inference class of their queue: they preempt the
# queue's own batch work (requeued, back to pending), and they do not take GPUs of another
# queue that stays within its share.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
E2E_QUEUES='  - {name: a, deserved: 2, users: ["*"], priority_classes: [inference, batch]}
  - {name: b, deserved: 2, users: ["*"]}' e2e_server "policy: {min_runtime: 0}"
e2e_agent n1 4xH100-80GB
export GPOOL_TOKEN=$BOB_TOKEN
SRC=${GP_SOURCE_DIR:?}/tests/e2e/svc_replica.py
mkdir -p "$E2E_DIR/svc"

a1=$("$GPOOL" submit -q a -g 1 -p batch --requeue --grace 1s -- sleep 300)
a2=$("$GPOOL" submit -q a -g 1 -p batch --requeue --grace 1s -- sleep 300)
b1=$("$GPOOL" submit -q b -g 1 -p batch --requeue --grace 1s -- sleep 300)
b2=$("$GPOOL" submit -q b -g 1 -p batch --requeue --grace 1s -- sleep 300)
for j in $a1 $a2 $b1 $b2; do wait_for 20 "batch job $j to run" job_is "$j" running; done

cat >svc.yaml <<YAML
name: serve
queue: a
command: [python3, "$SRC"]
env: {SVC_DIR: "$E2E_DIR/svc"}
gpus: 1
replicas: 3
probes: {readiness: {path: /healthz, period_s: 1}}
YAML
"$GPOOL" service apply -f svc.yaml >/dev/null || fail "apply"
wait_for 40 "two replicas ready, in queue a's place" sh -c "[ \"\$('$GPOOL' service show serve -o json | jq .replicas.ready)\" = 2 ]"
for j in $a1 $a2; do
  expect_eq pending "$(job_field "$j" .state)" "queue a's batch job $j was preempted and requeued"
  expect_contains "$(job_field "$j" '[.timeline[].event] | join(",")')" "preempt" "job $j's timeline"
done
sleep 3
for j in $b1 $b2; do expect_eq running "$(job_field "$j" .state)" "queue b's job $j, within b's share, keeps running"; done
expect_eq 2 "$("$GPOOL" service show serve -o json | jq '[.replica_jobs[] | select(.state == "running")] | length')" \
  "the third replica waits: no GPU of queue b's share is taken"
pend=$("$GPOOL" service show serve -o json | jq -r '.replica_jobs[] | select(.state == "pending") | .job')
[ -n "$pend" ] || fail "a third replica pending"
expect_eq inference "$(job_field "$pend" .priority)" "the replica's class"
echo "PASS"
