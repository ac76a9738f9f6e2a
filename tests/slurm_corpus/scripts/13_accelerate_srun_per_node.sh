#!/bin/bash
#SBATCH --job-name=acc-ddp
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=2
#SBATCH --cpus-per-task=4
#SBATCH --time=00:30:00

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
export MASTER_PORT=12340                     # any free TCP port
GPUS_PER_NODE=2

echo "[batch] MASTER_ADDR=$MASTER_ADDR  MASTER_PORT=$MASTER_PORT"
echo "[batch] NODES=$SLURM_NNODES  GPUS_PER_NODE=$GPUS_PER_NODE"

# One Accelerate front-end per node; Slurm sets SLURM_PROCID (0 ... nodes-1) in each.
srun --nodes=$SLURM_NNODES --ntasks=$SLURM_NNODES bash -c '
  echo "[front-end] rank $SLURM_PROCID on $(hostname)"
  accelerate launch --multi_gpu \
    --num_machines $SLURM_NNODES \
    --machine_rank $SLURM_PROCID \
    --main_process_ip $MASTER_ADDR \
    --main_process_port $MASTER_PORT \
    --num_processes $((SLURM_NNODES * 2)) \
    --mixed_precision bf16 \
    train.py --epochs 1
'
