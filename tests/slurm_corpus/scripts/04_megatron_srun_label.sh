#!/bin/bash
#SBATCH -t 0:30:00 --exclusive --mem=0 --overcommit --ntasks-per-node=2
#SBATCH -N 2
#SBATCH --gpus-per-node=2
#SBATCH -J megatron-gpt

THIS_DIR=`pwd`
DATETIME=`date +'date_%y-%m-%d_time_%H-%M-%S'`
mkdir -p ${THIS_DIR}/logs

export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
export MASTER_PORT=6000

MEGATRON_PARAMS="--tensor-model-parallel-size 2 --pipeline-model-parallel-size 1 \
  --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --micro-batch-size 4"

CMD="python -u ${THIS_DIR}/pretrain_gpt.py ${MEGATRON_PARAMS}"

srun -l --kill-on-bad-exit=1 \
     --output=${THIS_DIR}/logs/%x_%j_$DATETIME.log \
     sh -c "RANK=\$SLURM_PROCID LOCAL_RANK=\$SLURM_LOCALID WORLD_SIZE=\$SLURM_NTASKS ${CMD}"
