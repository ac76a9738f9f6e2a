#!/bin/bash
#SBATCH --partition=default
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-node=2
#SBATCH --time=00:15:00

module purge 2>/dev/null || true
module load pytorch 2>/dev/null || echo "no module system here: using the environment as it is"

srun python3 -m torch.distributed.run --standalone --nnodes=1 \
  --nproc_per_node=$SLURM_GPUS_ON_NODE train.py --epochs 1
