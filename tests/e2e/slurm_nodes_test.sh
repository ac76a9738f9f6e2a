#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm's node directives on two simulated 2-GPU nodes: `#SBATCH -N 2` puts its two tasks
# on two different nodes (bin-packing alone would put both on n1), and an --exclusive job
# keeps another small job off its node (it goes to the other node) while a second
# exclusive job waits, as no node is free of other jobs. A partition list (-p a,b) goes to
# the first queue that takes the job, and is refused with each queue's reason when none does.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need jq
E2E_QUEUES='  - {name: private, users: [alice]}' e2e_server
e2e_agent n1 2xH100-80GB
e2e_agent n2 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

cat >nodes.sh <<'SH'
#!/bin/bash
#SBATCH -N 2
#SBATCH --gpus-per-node=1
echo "on $GPOOL_NODE"
SH
id=$("$GPOOL" submit nodes.sh) || fail "submit nodes.sh: $id"
wait_for 30 "job $id to end" sh -c "'$GPOOL' show $id -o json | jq -e '.state | test(\"completed|failed\")'"
expect_eq completed "$(job_field "$id" .state)" "the -N 2 script completes"
expect_eq "n1,n2" "$(job_field "$id" '[.placements[].node] | sort | join(",")')" "-N 2: one task on each node"
expect_eq 1 "$(job_field "$id" .tasks_per_node)" "-N 2 alone: at most one task a node"

# ---- --exclusive ----
rm -f "$E2E_DIR/gate"
cat >excl.sh <<SH
#!/bin/bash
#SBATCH --exclusive
#SBATCH --gpus=1
$(gate_wait)
SH
ex=$("$GPOOL" submit excl.sh) || fail "submit excl.sh: $ex"
wait_for 30 "job $ex to launch" job_launched "$ex"
expect_eq true "$(job_field "$ex" .exclusive)" "the job says it is exclusive"
expect_contains "$("$GPOOL" show "$ex")" "exclusive nodes" "gpool show says so"
exnode=$(job_field "$ex" '.placements[0].node')
small=$("$GPOOL" submit -g 1 -- sh -c "$(gate_wait)")
wait_for 30 "job $small to launch" job_launched "$small"
smallnode=$(job_field "$small" '.placements[0].node')
[ "$smallnode" != "$exnode" ] || fail "a small job must not share the exclusive job's node $exnode"
ex2=$("$GPOOL" submit --exclusive -g 1 -- true)
sleep 2
expect_eq pending "$(job_field "$ex2" .state)" "a second exclusive job waits: both nodes hold other jobs"
open_gate
wait_for 30 "job $ex2 to complete" job_is "$ex2" completed
job_is "$ex" completed || fail "job $ex must complete ($(job_field "$ex" .state))"

# ---- -p a,b: the first queue that takes the job ----
printf '#!/bin/sh\n#SBATCH -p private,default\ntrue\n' >part.sh
pj=$(as_bob "$GPOOL" submit part.sh) || fail "submit part.sh as bob: $pj"
expect_eq default "$(job_field "$pj" .queue)" "bob's job skips private (not his) for default"
pj2=$(as_alice "$GPOOL" submit part.sh) || fail "submit part.sh as alice: $pj2"
expect_eq private "$(job_field "$pj2" .queue)" "alice's job goes to the first queue, private"
printf '#!/bin/sh\n#SBATCH -p private,nosuch\ntrue\n' >none.sh
out=$(as_bob "$GPOOL" submit none.sh 2>&1) && fail "no queue of the list takes bob's job: $out"
expect_contains "$out" "does not admit user bob" "the refusal gives private's reason ($out)"
expect_contains "$out" 'no queue is called "nosuch"' "and nosuch's ($out)"
echo "PASS"
