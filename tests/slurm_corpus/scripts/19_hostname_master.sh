#!/bin/bash
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=1
#SBATCH --gres=gpu:2
#SBATCH --output=slurm_output.txt
#SBATCH --error=slurm_error.txt
#SBATCH --time=00:02:00

export MASTER_ADDR=$(hostname)
export MASTER_PORT=1234

srun python train.py --deepspeed_config ds_config.json
