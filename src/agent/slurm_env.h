/* SPDX-License-Identifier: Apache-2.0 */
/* The SLURM_* variables a job's task gets (slurm_env.c), so that Slurm scripts read their
 * job id, node list, task counts and ranks unchanged, and the directory of Slurm command
 * shims put first on every task's PATH (<data>/bin: `scontrol`, `squeue`, ... links to the
 * gpool binary, which answers by those names). Only what gpool knows is set, never a guess. */
#ifndef GP_AGENT_SLURM_ENV_H
#define GP_AGENT_SLURM_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/order.h"

/* What the agent decided about the task beyond its order. */
typedef struct gp__agent_slurm_task {
  const char *node;  /* this node's name (the node list's entry when the order has no hosts) */
  const char *user;  /* the job's user */
  int n_gpus;        /* GPUs this task holds on the node */
  int64_t cpus;      /* CPUs per task; 0: the job set none */
  int64_t node_cpus; /* the node's CPUs, all usable by a job without a CPU limit; 0: unknown */
  int gpus_per_task; /* whole GPUs each task of the job holds; 0: none, a GPU share or MIG */
  int64_t mem_mib;   /* each task's memory limit; 0: none */
  const int *job_gpus; /* GPU indexes of the job on this node (SLURM_JOB_GPUS)... */
  int n_job_gpus;
  bool job_gpus_all; /* ...all of them (else only this task's, whole when it is alone there) */
} gp__agent_slurm_task;

/* Calls set(ctx, name, value) for each SLURM_* variable of task o->task_index. */
void gp__agent_slurm_vars(const gp_proto_start *o, const gp__agent_slurm_task *t,
                          void (*set)(void *ctx, const char *name, const char *value), void *ctx);

/* SLURM_JOB_GPUS: "0,3" for the indexes given, in buf (size bytes); "" when they do not fit. */
void gp__agent_slurm_gpu_list(const int *gpus, int n, char *buf, size_t size);

/* Links <data_dir>/bin/{sbatch,squeue,scancel,sinfo,sacct,scontrol} to `exe` (the gpool
 * binary, which runs as each when called by that name) and writes the directory to dir; "" (and -1) when it cannot. */
int gp__agent_slurm_bin_write(const char *data_dir, const char *exe, char *dir, size_t size);

/* Writes <data_dir>/bash_env.sh, which a job's BASH_ENV names: it puts each of dirs[0..n-1]
 * back at the front of PATH when missing (the last one first), then sources
 * $GPOOL_BASH_ENV (the job's own BASH_ENV). A login shell (`#!/bin/bash -l`) reads
 * /etc/profile, which on Debian sets PATH anew, and then BASH_ENV: so srun, scontrol and a
 * simulated nvidia-smi stay found. Writes its path to path; "" (and -1) when it cannot. */
int gp__agent_slurm_profile_write(const char *data_dir, const char *const *dirs, int n, char *path,
                                  size_t size);

#endif
