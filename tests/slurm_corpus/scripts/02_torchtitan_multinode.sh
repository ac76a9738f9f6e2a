#!/usr/bin/bash
# Multi-node training: one torchrun per node, the rendezvous on the first node.
#SBATCH --job-name=torchtitan_multi_node
#SBATCH --ntasks=2
#SBATCH --nodes=2
#SBATCH --gpus-per-task=2
#SBATCH --cpus-per-task=4
#SBATCH --partition=default

nodes=( $( scontrol show hostnames $SLURM_JOB_NODELIST ) )
nodes_array=($nodes)
head_node=${nodes_array[0]}
head_node_ip=$(srun --nodes=1 --ntasks=1 -w "$head_node" hostname --ip-address)
echo Node IP: $head_node_ip
export LOGLEVEL=INFO
# Enable for A100
export FI_PROVIDER="efa"
export NCCL_BUFFSIZE=2097152
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
export NCCL_DEBUG=WARN
export PYTHONFAULTHANDLER=1
export LD_LIBRARY_PATH=/opt/amazon/efa/lib:$LD_LIBRARY_PATH
export CUDA_LAUNCH_BLOCKING=0

CONFIG_FILE=${CONFIG_FILE:-"./train_configs/llama3_8b.toml"}

dcgmi profile --pause 2>/dev/null || true
srun torchrun --nnodes 2 --nproc_per_node 2 --rdzv_id 101 --rdzv_backend c10d --rdzv_endpoint "$head_node_ip:29500" ./train.py --job.config_file ${CONFIG_FILE}
dcgmi profile --resume 2>/dev/null || true
