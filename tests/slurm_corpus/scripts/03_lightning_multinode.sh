#!/bin/bash -e
# SLURM SUBMIT SCRIPT
#SBATCH --nodes=2
#SBATCH --gres=gpu:2
#SBATCH --ntasks-per-node=2
#SBATCH --mem=0
#SBATCH --time=0-02:00:00
#SBATCH --signal=SIGUSR1@90

# activate conda env (when there is one)
if [ -n "${CONDA_ENV:-}" ]; then source activate "$CONDA_ENV"; fi

# debugging flags (optional)
export NCCL_DEBUG=INFO
export PYTHONFAULTHANDLER=1

# run script from above
srun python train.py --trainer.num_nodes 2 --trainer.devices 2
