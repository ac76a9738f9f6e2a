#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A job's stop reaches its srun step tasks as Slurm's does (docs/slurm.md#steps): cancelling
# a batch job (2 nodes, --grace 4s) sends its step tasks the job's checkpoint signal (here
# USR1, as `--signal USR1` asks), so a trainer's trap checkpoints; a step task that ignores
# it is SIGKILLed at the end of the job's grace period, and the job ends `cancelled` only
# after its step tasks (none left running). The batch script and the step tasks see the
# SLURM_* names of what the job holds on their node (GPU indexes, per-node GPUs, memory).
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n2 2xH100-80GB --listen 127.0.0.2:0
e2e_agent n3 2xH100-80GB --listen 127.0.0.3:0
export GPOOL_TOKEN=$ADMIN_TOKEN

# Step task 0 checkpoints on the signal and exits; step task 1 notes it and carries on.
cat >train.sh <<SH
#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node 1
#SBATCH --gpus-per-node 2
#SBATCH --mem 1G
echo "\$SLURM_JOB_GPUS \$SLURM_GPUS_PER_NODE \$SLURM_GPUS_PER_TASK \$SLURM_MEM_PER_NODE \${SLURM_CPUS_ON_NODE:+cpus}" >$E2E_DIR/batch.env
srun sh -c 'echo "\$SLURMD_NODENAME \$SLURM_JOB_GPUS \$SLURM_GPUS_PER_NODE \$SLURM_GPUS_PER_TASK \${SLURM_CPUS_ON_NODE:+cpus}" >$E2E_DIR/step.env.\$SLURM_PROCID
  trap "echo ckpt \$SLURM_PROCID >$E2E_DIR/ckpt.\$SLURM_PROCID; [ \$SLURM_PROCID = 0 ] && exit 0" USR1
  echo \$\$ >$E2E_DIR/pid.\$SLURM_PROCID
  while :; do sleep 0.1; done'
SH
id=$("$GPOOL" submit --grace 4s --signal USR1 train.sh) || fail "submit train.sh: $id"
wait_for 60 "both step tasks to run" sh -c "[ -s pid.0 ] && [ -s pid.1 ]"
pid1=$(cat pid.1)
# What the job holds on each node, as Slurm names it (docs/slurm.md#slurm_-variables).
expect_eq "0,1 2 2 1024 cpus" "$(cat batch.env)" "the batch script's SLURM_JOB_GPUS, _GPUS_PER_NODE, _GPUS_PER_TASK, _MEM_PER_NODE, _CPUS_ON_NODE"
expect_eq "n2 0,1 2 2 cpus/n3 0,1 2 2 cpus" "$(cat step.env.* | sort | tr '\n' / | sed 's|/$||')" \
  "each step task's node's GPUs"
start=$SECONDS
"$GPOOL" cancel "$id" >/dev/null || fail "gpool cancel $id"
wait_for 30 "job $id to end" sh -c "'$GPOOL' show $id -o json | jq -e '.state | test(\"cancelled|failed|completed\")'"
took=$((SECONDS - start))
expect_eq cancelled "$(job_field "$id" .state)" "the cancelled job"
expect_eq "ckpt 0" "$(cat ckpt.0 2>/dev/null)" "step task 0 got the job's signal and checkpointed"
expect_eq "ckpt 1" "$(cat ckpt.1 2>/dev/null)" "step task 1 got the job's signal too"
kill -0 "$pid1" 2>/dev/null && fail "the step task that ignored the signal must be killed"
[ "$took" -ge 3 ] || fail "the job ended before its step task's grace period (${took}s)"
[ "$took" -le 15 ] || fail "the step task that ignored the signal must be killed at the end of the grace (${took}s)"
echo "PASS: a job's stop signals its step tasks and kills them after its grace period (${took}s)"
