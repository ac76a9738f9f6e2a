/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup v2 limits for jobs: a gpool sub-tree (default /sys/fs/cgroup/gpool) with one child
 * per job ("job-<id>") carrying cpu.max and memory.max. Where cgroup v2 with the cpu and
 * memory controllers is not available or not writable, gp_cgroup_probe says why in one
 * sentence and the agent runs jobs without these limits (and reports "cgroups": false). */
#ifndef GP_AGENT_CGROUP_H
#define GP_AGENT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct gp_cgroup {
  char root[512];        /* the gpool sub-tree */
  bool ok;               /* limits can be applied */
  char message[384];     /* why not, when !ok */
} gp_cgroup;

/* Prepares `root` (creating it, enabling cpu and memory for its children). Always fills
 * *ret; returns 0 when usable, GP_EUNSUPP otherwise (ret->message says why). */
int gp_cgroup_probe(const char *root, gp_cgroup *ret);

/* Creates the job's cgroup with its limits: cpu_milli (1000 = one CPU; <= 0: no limit) and
 * mem_mib (<= 0: no limit). Writes "<cgroup>/cgroup.procs" into procs_path. */
int gp_cgroup_job_create(const gp_cgroup *cg, const char *job_id, int64_t cpu_milli,
                         int64_t mem_mib, char *procs_path, size_t size, gp_err *err);

/* True when the kernel's OOM killer killed a process of the job (memory.events oom_kill). */
bool gp_cgroup_job_oom_killed(const gp_cgroup *cg, const char *job_id);

/* Removes the job's cgroup (it must be empty); 0 or GP_EIO. */
int gp_cgroup_job_remove(const gp_cgroup *cg, const char *job_id);

#endif
