#!/bin/bash
#SBATCH --job-name=sweep
#SBATCH --array=0-3
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=2
#SBATCH --time=00:10:00
#SBATCH -o logs/%x-%A_%a.out
#SBATCH -e logs/%x-%A_%a.err

LRS=(0.1 0.01 0.001 0.0001)
LR=${LRS[$SLURM_ARRAY_TASK_ID]}

echo "My SLURM_ARRAY_TASK_ID: " $SLURM_ARRAY_TASK_ID
echo "Learning rate: " $LR

python train.py --lr $LR --seed $SLURM_ARRAY_TASK_ID
