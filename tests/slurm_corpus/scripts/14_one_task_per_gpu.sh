#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=1
#SBATCH -C gpu
#SBATCH -A m1234
#SBATCH -q regular
#SBATCH -t 00:30:00

export MASTER_ADDR=$(scontrol show hostnames | head -n 1)
export MASTER_PORT=29500

# One process per GPU: each task sets torch's variables from Slurm's.
srun bash -c '
  export RANK=$SLURM_PROCID
  export LOCAL_RANK=$SLURM_LOCALID
  export WORLD_SIZE=$SLURM_NTASKS
  exec python train.py --config config.yaml
'
