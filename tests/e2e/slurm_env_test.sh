#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm inside a job: a gang of -N 2 --ntasks-per-node 2 on two nodes (#GPOOL lines: gpool
# runs the script in every task; a #SBATCH script runs once, batch_step_test.sh), each of
# its four tasks reading the SLURM_* variables real scripts read (ids, node list in hostlist
# form starting at task 0's node, counts, ranks) and `scontrol show hostnames` from the
# shim directory on its PATH. A job's own -e value wins over gpool's; scontrol refuses a
# list over its bound and what it does not implement.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n1 2xH100-80GB
e2e_agent n2 2xH100-80GB
export GPOOL_TOKEN=$ADMIN_TOKEN

cat >job.sh <<'SH'
#!/bin/bash
#GPOOL -n slurmenv -N 2 --ntasks-per-node 2 -c 1
echo $SLURM_PROCID $SLURM_NTASKS $SLURM_JOB_NODELIST $(scontrol show hostnames | head -n1)
echo "ids $SLURM_JOB_ID $SLURM_JOBID name $SLURM_JOB_NAME part $SLURM_JOB_PARTITION cluster $SLURM_CLUSTER_NAME"
echo "nodes $SLURM_JOB_NUM_NODES $SLURM_NNODES $SLURM_NODELIST tasks $SLURM_NPROCS $SLURM_NTASKS_PER_NODE $SLURM_TASKS_PER_NODE cpus $SLURM_CPUS_PER_TASK"
echo "rank $SLURM_PROCID local $SLURM_LOCALID node $SLURM_NODEID=$NODE_RANK on $GPOOL_NODE user $SLURM_JOB_USER dir $SLURM_SUBMIT_DIR"
echo "all $(scontrol show hostname | tr '\n' ' ')"
SH
id=$("$GPOOL" submit job.sh) || fail "submit job.sh: $id"
wait_for 30 "job $id to end" sh -c "'$GPOOL' show $id -o json | jq -e '.state | test(\"completed|failed\")'"
for t in 0 1 2 3; do echo "--- task $t"; "$GPOOL" logs "$id" --task $t 2>&1; done >out.txt
expect_eq completed "$(job_field "$id" .state)" "the Slurm script completes ($(cat out.txt))"
node0=$(job_field "$id" '.placements[0].node')
if [ "$node0" = n1 ]; then other=n2 list="n[1-2]"; else other=n1 list="n[2,1]"; fi

for t in 0 1 2 3; do
  log=$("$GPOOL" logs "$id" --task $t 2>&1)
  node=$(job_field "$id" ".placements[$t].node")
  expect_eq "$t 4 $list $node0" "$(head -n1 <<<"$log")" "task $t: PROCID NTASKS NODELIST and scontrol's first host"
  expect_contains "$log" "ids $id $id name slurmenv part default cluster gpool" "task $t: job id, name, partition"
  expect_contains "$log" "nodes 2 2 $list tasks 4 2 2(x2) cpus 1" "task $t: node and task counts"
  expect_contains "$log" "all $node0 $other " "task $t: scontrol show hostname lists both nodes"
  expect_contains "$log" "rank $t local " "task $t: its rank"
  expect_contains "$log" "on $node user alice dir $E2E_DIR" "task $t: user and submit dir"
  # NODEID is the node's index in the list, the same as NODE_RANK.
  nid=$([ "$node" = "$node0" ] && echo 0 || echo 1)
  expect_contains "$log" "node $nid=$nid on $node" "task $t: SLURM_NODEID"
done
expect_eq 2 "$(grep -c 'local 0 ' out.txt)" "one LOCALID 0 on each node ($(cat out.txt))"
expect_eq 2 "$(grep -c 'local 1 ' out.txt)" "one LOCALID 1 on each node"

# The job's own -e value wins; scontrol's bound and what it does not implement.
id2=$("$GPOOL" submit -e SLURM_JOB_NAME=mine -n other -- sh -c \
  'echo "name $SLURM_JOB_NAME"; scontrol show hostnames "n[1-200000]" 2>&1; echo "big $?"; scontrol show job 2>&1; echo "job $?"; scontrol show hostnames "a[08-10],b"')
wait_for 20 "job $id2 to end" sh -c "'$GPOOL' show $id2 -o json | jq -e '.state | test(\"completed|failed\")'"
log2=$("$GPOOL" logs "$id2" 2>&1)
expect_contains "$log2" "name mine" "-e SLURM_JOB_NAME wins over gpool's"
expect_contains "$log2" "big 1" "a list over the bound fails"
expect_contains "$log2" "more than 100000 hosts" "and says why"
expect_contains "$log2" "job 1" "scontrol show job is not imitated"
expect_contains "$log2" "answers only 'scontrol show hostnames" "and says so"
expect_contains "$log2" "$(printf 'a08\na09\na10\nb')" "an explicit list expands"
echo "PASS"
