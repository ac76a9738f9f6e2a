#!/bin/bash
#SBATCH --job-name=requeue
#SBATCH --gres=gpu:1
#SBATCH --time=00:01:05
#SBATCH --signal=B:USR1@60
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=logs/%x-%j.out

# Slurm sends USR1 to this shell 60 s before the time limit: requeue the job, and the
# training, stopped by the requeue, saves a checkpoint to resume from.
requeue_job() {
  echo "$(date): caught USR1, requeueing $SLURM_JOB_ID (restart $SLURM_RESTART_COUNT)"
  scontrol requeue $SLURM_JOB_ID
}
trap requeue_job USR1

echo "$(date): start, restart count ${SLURM_RESTART_COUNT:-0}"
# srun in the background: bash runs a trap only once the command in the foreground ends.
srun python train.py --ckpt ckpt.$SLURM_JOB_ID.pt &
wait
