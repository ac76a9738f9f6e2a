#!/bin/bash
#SBATCH --job-name=mpi-allreduce
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --time=00:05:00
#SBATCH --output=%x-%j.out

if command -v module >/dev/null 2>&1; then
  module load openmpi
fi

echo "Nodes: $SLURM_JOB_NODELIST, tasks: $SLURM_NTASKS"
# Open MPI reads the allocation from Slurm and starts its daemons with srun.
mpirun ./allreduce
