#!/bin/bash
#SBATCH --job-name=ds-no-ssh
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=2
#SBATCH --cpus-per-task=4
#SBATCH --time=00:30:00
#SBATCH -o logs/%x-%j.out

# A DeepSpeed hostfile from the allocation (DeepSpeed needs one line per node with its slots)
HOSTFILE=hostfile.$SLURM_JOB_ID
scontrol show hostnames $SLURM_JOB_NODELIST | while read -r host; do
  echo "$host slots=2"
done > $HOSTFILE
cat $HOSTFILE

export MASTER_ADDR=$(head -n 1 $HOSTFILE | cut -d' ' -f1)
export MASTER_PORT=29500

# No passwordless ssh between the nodes: one deepspeed launcher per node, started by srun.
srun --ntasks-per-node=1 bash -c 'deepspeed --no_ssh --node_rank=$SLURM_NODEID \
  --hostfile='"$HOSTFILE"' --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT \
  train.py --deepspeed --deepspeed_config ds_config.json'
