#!/bin/bash
# lit-gpt style: Fabric reads the Slurm variables; one task per GPU.
#SBATCH --nodes=2
#SBATCH --gres=gpu:2
#SBATCH --ntasks-per-node=2
#SBATCH --time=0-02:00:00
#SBATCH --requeue
#SBATCH --job-name=pretrain

# debugging flags (optional)
export NCCL_DEBUG=INFO
export PYTHONFAULTHANDLER=1

srun python pretrain.py --devices 2 --num_nodes 2 --precision bf16-mixed
