#!/bin/bash
#SBATCH -p gpu,debug
#SBATCH --exclusive
#SBATCH --mem=0
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --time=00:10:00
set -euo pipefail

head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
srun torchrun \
  --nnodes="$SLURM_NNODES" \
  --nproc-per-node="$SLURM_GPUS_ON_NODE" \
  --rdzv-backend=c10d \
  --rdzv-endpoint="$head:29400" \
  --rdzv-id="$SLURM_JOB_ID" \
  train.py
