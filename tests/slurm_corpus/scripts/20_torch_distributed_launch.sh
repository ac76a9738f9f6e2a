#!/bin/bash
#SBATCH --job-name=admin_test
#SBATCH --nodes=1
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-gpu=2
#SBATCH --mem-per-gpu=2G
#SBATCH --time=1-0
#SBATCH -o %N_%x_%j.out

python -m torch.distributed.launch \
        --nproc_per_node=4 \
        --use_env main.py
