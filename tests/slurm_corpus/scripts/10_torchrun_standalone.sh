#!/bin/bash
#SBATCH -N 1
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=8
#SBATCH -t 1:00:00
#SBATCH -J standalone

echo "Running on $(hostname) with GPUs $CUDA_VISIBLE_DEVICES"
torchrun --standalone --nnodes=1 --nproc_per_node=4 train.py --batch-size 64
