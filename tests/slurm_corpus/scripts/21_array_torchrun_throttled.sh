#!/bin/bash
#SBATCH --job-name=seeds
#SBATCH --array=1-3%2
#SBATCH --nodes=1
#SBATCH --gpus=2
#SBATCH --time=00:20:00
#SBATCH -o logs/%A_%a.out

echo "seed $SLURM_ARRAY_TASK_ID of job $SLURM_ARRAY_JOB_ID"
torchrun --standalone --nproc_per_node=2 train.py --seed $SLURM_ARRAY_TASK_ID
