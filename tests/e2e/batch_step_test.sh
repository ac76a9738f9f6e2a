#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm's batch semantics: a script with #SBATCH lines (-N 2 --ntasks-per-node 2
# --gpus-per-task 1) runs once, as the batch step on the first node of its allocation, with
# the SLURM_* variables of the whole allocation and every GPU the job holds on that node;
# its other tasks hold their GPUs (busy in `gpool nodes`) with no copy of the script until it
# ends (an agent restart re-adopts them), then are freed. The job's state and exit code are
# the script's (exit 3: failed, 3), and the holders' stop is no failure; a cancel ends it;
# `srun` in the script runs its step tasks in the holders' tasks, on both nodes. Each node has an address of its own (127.0.0.2,
# 127.0.0.3), as on a real cluster. gpool's own `gpool submit -N 2 -- CMD` still runs CMD in
# every task.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n2 4xH100-80GB --listen 127.0.0.2:0
e2e_agent n3 4xH100-80GB --listen 127.0.0.3:0
export GPOOL_TOKEN=$ADMIN_TOKEN

# Busy GPUs of job $1 as `gpool nodes` shows them, as "node:count" pairs.
busy() {
  "$GPOOL" nodes -o json | jq -r --arg j "$1" \
    '[.[] | {n: .name, c: ([.gpu_list[] | select(.jobs | index($j))] | length)} | select(.c > 0) | "\(.n):\(.c)"] | join(",")'
}

cat >batch.sh <<SH
#!/bin/bash
#SBATCH -J batchjob
#SBATCH -N 2
#SBATCH --ntasks-per-node 2
#SBATCH --gpus-per-task 1
echo "run node=\$GPOOL_NODE procid=\$SLURM_PROCID nodeid=\$SLURM_NODEID localid=\$SLURM_LOCALID ntasks=\$SLURM_NTASKS nnodes=\$SLURM_JOB_NUM_NODES list=\$SLURM_JOB_NODELIST per=\$SLURM_TASKS_PER_NODE master=\$MASTER_ADDR gpus=\$SLURM_GPUS_ON_NODE cuda=\$(echo \$CUDA_VISIBLE_DEVICES | tr ',' '\n' | wc -l) rank=\${RANK-unset}" >>"$E2E_DIR/marker"
$(gate_wait)
echo "the script ends with 3"
exit 3
SH
id=$("$GPOOL" submit batch.sh) || fail "submit batch.sh: $id"
wait_for 30 "job $id to run" job_is "$id" running
expect_eq true "$(job_field "$id" .batch)" "the job is marked a batch job"
expect_contains "$("$GPOOL" show "$id")" "once, as the batch step on the first node" "gpool show says how it runs"
wait_for 30 "the batch script to start" test -s marker
# Every task is placed and started, the script in one of them only.
wait_for 30 "the four tasks of $id to launch" job_launched "$id" 4
expect_eq "2,2" "$(job_field "$id" '[.placements | group_by(.node)[] | length | tostring] | join(",")')" \
  "two tasks on each of two nodes"
node0=$(job_field "$id" '.placements[0].node')
list=$([ "$node0" = n2 ] && echo "n[2-3]" || echo "n[3,2]")
expect_eq "n2:2,n3:2" "$(busy "$id")" "the holders' GPUs are busy while the script runs"
sleep 1 # a copy run by a holder would have written by now
expect_eq 1 "$(wc -l <marker)" "the script ran once ($(cat marker))"
expect_eq "run node=$node0 procid=0 nodeid=0 localid=0 ntasks=4 nnodes=2 list=$list per=2(x2) master=127.0.0.${node0#n} gpus=2 cuda=2 rank=unset" \
  "$(cat marker)" "the batch step's environment describes the whole allocation"
for t in 1 2 3; do
  expect_eq "" "$("$GPOOL" logs "$id" --task $t 2>/dev/null)" "task $t runs no copy of the script"
done
# kill -9 of the agent of the other node: its restart re-adopts both holders, still held.
other=$([ "$node0" = n2 ] && echo n3 || echo n2)
kill -9 "$(agent_pid "$other")"
e2e_agent "$other" 4xH100-80GB --listen "127.0.0.${other#n}:0"
wait_for 20 "the restarted agent to re-adopt both holders" grep -q "found 2 running job(s)" "$E2E_DIR/agent-$other.log"
job_is "$id" running || fail "job $id must still run after the agent restart ($(job_field "$id" .state))"
expect_eq "n2:2,n3:2" "$(busy "$id")" "the holders' GPUs are still held after the restart"
open_gate
wait_for 30 "job $id to end" sh -c "'$GPOOL' show $id -o json | jq -e '.state | test(\"completed|failed|cancelled\")'"
expect_eq failed "$(job_field "$id" .state)" "the job fails as its script did"
expect_eq 3 "$(job_field "$id" .exit_code)" "the job's exit code is the script's"
expect_contains "$(job_field "$id" .end_reason)" "batch script exited with code 3" "the end reason names the script"
expect_contains "$("$GPOOL" logs "$id")" "the script ends with 3" "the script's output is task 0's log"
expect_eq "" "$(busy "$id")" "every GPU is freed when the script ends"
expect_eq 1 "$(wc -l <marker)" "still one run"

# The script exits 0: the job completes though its holders were stopped.
sed -i 's/^exit 3$/exit 0/' batch.sh
ok=$("$GPOOL" submit batch.sh) || fail "submit: $ok"
wait_for 30 "job $ok to end" sh -c "'$GPOOL' show $ok -o json | jq -e '.state | test(\"completed|failed|cancelled\")'"
expect_eq completed "$(job_field "$ok" .state)" "a batch job whose script exits 0 completes"
expect_eq 0 "$(job_field "$ok" .exit_code)" "with code 0 (the holders' stop counts for nothing)"

# A cancelled batch job ends cancelled, holders and all.
rm -f gate
can=$("$GPOOL" submit batch.sh) || fail "submit: $can"
wait_for 30 "the four tasks of $can to launch" job_launched "$can" 4
"$GPOOL" cancel "$can" >/dev/null || fail "cancel $can"
wait_for 30 "job $can to end" sh -c "'$GPOOL' show $can -o json | jq -e '.state | test(\"completed|failed|cancelled\")'"
expect_eq cancelled "$(job_field "$can" .state)" "a cancelled batch job ends cancelled"
expect_eq "" "$(busy "$can")" "and frees its GPUs"
open_gate

# The usual Slurm script: srun from the batch step fans out over the allocation, its step
# tasks running in the holders' tasks on both nodes.
cat >srun.sh <<SH
#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node 2
#SBATCH --gpus-per-task 1
echo "batch \$SLURM_PROCID" >>"$E2E_DIR/srun-marker"
srun -l sh -c 'echo "step \$SLURM_PROCID of \$SLURM_NTASKS on \$GPOOL_NODE"'
SH
st=$("$GPOOL" submit srun.sh) || fail "submit srun.sh: $st"
wait_for 60 "job $st to end" sh -c "'$GPOOL' show $st -o json | jq -e '.state | test(\"completed|failed|cancelled\")'"
steps=$("$GPOOL" logs "$st" 2>&1)
expect_eq completed "$(job_field "$st" .state)" "the srun script completes ($steps)"
expect_eq "batch 0" "$(cat srun-marker)" "the script ran once"
expect_eq 4 "$(grep -c 'step [0-3] of 4 on n[23]' <<<"$steps")" "srun ran a step task in each of the 4 tasks ($steps)"
expect_eq 2 "$(grep -o 'on n[23]' <<<"$steps" | sort -u | wc -l)" "on both nodes"

# gpool's own -N 2 without #SBATCH: the command runs in every task.
each=$("$GPOOL" submit -N 2 --ntasks-per-node 1 -g 1 -- sh -c "echo \"each \$GPOOL_TASK_INDEX\" >>'$E2E_DIR/each'")
wait_for 30 "job $each to end" sh -c "'$GPOOL' show $each -o json | jq -e '.state | test(\"completed|failed\")'"
expect_eq completed "$(job_field "$each" .state)" "a gpool gang completes"
expect_eq false "$(job_field "$each" .batch)" "it is no batch job"
expect_eq "each 0,each 1" "$(sort each | paste -sd,)" "its command ran once per task"
echo "PASS"
