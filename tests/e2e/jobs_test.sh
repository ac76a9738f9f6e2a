#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Jobs through the CLI on two agents: a gang spans both nodes and starts together with each
# task seeing its own GPUs and the gang's host list, and each task's log can be read; a running job is cancelled and its
# process ends; a held job waits (and `gpool why` says so) until released; a job asking for
# more than the fleet has stays pending with a reason; dependencies order jobs.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 4xH100-80GB
e2e_agent n2 4xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

# A gang: two nodes, four GPUs each.
gang=$("$GPOOL" submit -N 2 -g 4 -n gang -- sh -c 'echo "task=$GPOOL_TASK_INDEX/$GPOOL_TASKS hosts=$GPOOL_NODELIST gpus=$CUDA_VISIBLE_DEVICES"; sleep 2')
wait_for 20 "gang $gang to run" job_is "$gang" running
nodes=$(job_field "$gang" '[.placements[].node] | sort | join(",")')
expect_eq "n1,n2" "$nodes" "the gang holds both nodes"
ngpus=$(job_field "$gang" '[.placements[].gpu_ids[]] | length')
expect_eq 8 "$ngpus" "the gang holds four GPUs on each node"
wait_for 20 "gang $gang to complete" job_is "$gang" completed
expect_eq "n1,n2" "$(job_field "$gang" '[.placements[].node] | sort | join(",")')" "a finished job still says where it ran"
log=$("$GPOOL" logs "$gang")
expect_contains "$log" "task=0/2" "task 0 ran"
expect_contains "$log" "GPU-" "tasks see GPU UUIDs"
# Each task has its own log: without --task a note says which one is shown.
note=$("$GPOOL" logs "$gang" 2>&1 >/dev/null)
expect_contains "$note" "showing task 0" "gpool logs says which task of a gang it shows"
expect_contains "$note" "--task" "gpool logs says how to see the other tasks"
log1=$("$GPOOL" logs "$gang" --task 1 2>&1) || fail "gpool logs --task 1: $log1"
expect_contains "$log1" "task=1/2" "gpool logs --task 1 shows task 1"
out=$("$GPOOL" logs "$gang" --task 2 2>&1) && fail "a task the gang does not have must be refused"
expect_contains "$out" "0..1" "the refusal names the gang's tasks"
expect_eq 400 "$(api_status GET "/v1/jobs/$gang/log?task=x" "$ADMIN_TOKEN")" "a bad task parameter is 400"

# Cancel a running job: its process group is stopped and the job ends as cancelled.
long=$("$GPOOL" submit -g 1 -n sleeper -- sh -c 'echo started; exec sleep 301')
wait_for 20 "job $long to run" job_is "$long" running
wait_for 10 "job $long to print" sh -c "'$GPOOL' logs $long | grep -q started"
"$GPOOL" cancel "$long" >/dev/null || fail "cancel failed"
wait_for 20 "job $long to be cancelled" job_is "$long" cancelled
wait_for 10 "the cancelled job's process to end" sh -c '! pgrep -f "sleep 30[1]"'

# Hold and release.
held=$("$GPOOL" submit --hold -g 1 -- true)
sleep 1
job_is "$held" held || fail "a job submitted with --hold must stay held (is $(job_field "$held" .state))"
expect_contains "$("$GPOOL" why "$held")" "gpool release $held" "why explains a held job"
"$GPOOL" release "$held" >/dev/null
wait_for 20 "released job $held to complete" job_is "$held" completed

# Too big for the fleet: pending, with a reason a person can read.
big=$("$GPOOL" submit -g 16 -- true 2>&1) || true
if [[ "$big" =~ ^[0-9]+$ ]]; then
  wait_for 10 "job $big to get a pending reason" sh -c "[ -n \"\$(GPOOL_TOKEN=$ADMIN_TOKEN '$GPOOL' show $big -o json | jq -r '.pending_reason // empty')\" ]"
  why=$("$GPOOL" why "$big")
  expect_contains "$why" "Job $big has been pending" "why on a pending job"
  "$GPOOL" cancel "$big" >/dev/null
else
  expect_contains "$big" "gpool submit:" "an impossible request is refused with a message"
fi

# Dependencies: b waits for a (afterok).
a=$("$GPOOL" submit -g 1 -- sh -c "$(gate_wait)")
b=$("$GPOOL" submit -g 1 --afterok "$a" -- true)
sleep 0.5
job_is "$b" pending || fail "job $b must wait for $a"
open_gate
wait_for 30 "dependent job $b to complete" job_is "$b" completed
[ "$(job_field "$b" .started_at)" -ge "$(job_field "$a" .ended_at)" ] || fail "$b started before $a ended"

# Scripts with #GPOOL and #SBATCH lines.
cat >job.sh <<'SCRIPT'
#!/bin/sh
#SBATCH --job-name=from-slurm
#SBATCH --gres=gpu:h100:2
#GPOOL --time 10m
echo "n=$(echo $CUDA_VISIBLE_DEVICES | tr ',' '\n' | wc -l) arg=$1"
SCRIPT
s=$("$GPOOL" submit job.sh hello)
wait_for 20 "script job $s to complete" job_is "$s" completed
expect_eq "from-slurm" "$(job_field "$s" .name)" "#SBATCH --job-name"
expect_eq 600 "$(job_field "$s" .time_limit)" "#GPOOL --time"
expect_eq "n=2 arg=hello" "$("$GPOOL" logs "$s")" "the script ran with two GPUs and its argument"

# Following a job's output while it runs, and its standard error.
f=$("$GPOOL" submit -g 1 -- sh -c 'for i in 1 2 3; do echo "line $i"; sleep 0.5; done; echo oops >&2')
followed=$(timeout 30 "$GPOOL" logs -f "$f") || fail "gpool logs -f did not end with the job"
expect_eq "line 1
line 2
line 3" "$followed" "logs -f prints everything and stops when the job ends"
expect_eq oops "$("$GPOOL" logs --stderr "$f")" "logs --stderr"

# Draining one GPU, then the node, with reasons everyone sees; resume.
"$GPOOL" drain n1:1 --reason "XID 79" >/dev/null || fail "drain of one GPU"
expect_contains "$("$GPOOL" nodes -v)" "XID 79" "nodes -v shows the GPU's drain reason"
expect_eq drained "$("$GPOOL" nodes -o json | jq -r '.[] | select(.name == "n1") | .gpu_list[1].health')" "GPU 1 is drained"
"$GPOOL" resume n1:1 >/dev/null
"$GPOOL" drain n2 --reason "kernel upgrade" >/dev/null
expect_contains "$("$GPOOL" nodes)" "kernel upgrade" "nodes shows the node's drain reason"
node_is n2 drain || fail "n2 must be draining"
out=$(as_bob "$GPOOL" resume n2 2>&1) && fail "a user must not resume nodes"
"$GPOOL" resume n2 >/dev/null
node_is n2 up || fail "n2 must be up after resume"

# The table view.
table=$("$GPOOL" jobs -a)
expect_contains "$table" "ID" "jobs table header"
expect_contains "$table" "gang" "jobs table lists the gang"
echo "ok: jobs"
