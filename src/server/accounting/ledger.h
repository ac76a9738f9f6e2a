/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger's own record (ledger.c), behind gp_srv_state.ledger: whether the ledger's
 * writes are off (GPOOL_LEDGER_OFF=1, a benchmark switch; a follower and an HA server
 * still loading, which never write), and the totals of the intervals closed since the
 * server started per (queue, model, capacity), which metrics and budgets read through
 * gp__srv_usage_totals and which a reload carries over (gp__srv_usage_adopt). NULL until
 * used; freed with the state (parts.c). Below it, the ledger's intervals and attempts:
 * opened and closed with a job's runs and a node's states, and their running totals.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_LEDGER_H
#define GP_SERVER_LEDGER_H

#include <stdbool.h>

#include "server/state/state.h"

/* Whether GPOOL_LEDGER_OFF=1 (read once, when the server starts). */
bool gp__srv_ledger_off_env(void);
/* Turns the ledger's writes to the store off (or on again) for state s: intervals,
 * figures and fair-share charges stay in memory only. Made states start with them on
 * unless GPOOL_LEDGER_OFF=1 (parts.c). */
void gp__srv_ledger_set_off(gp_srv_state *s, bool off);
bool gp__srv_ledger_is_off(const gp_srv_state *s);
/* Frees the ledger's record of s (NULL: nothing). */
void gp__srv_ledger_free(gp_srv_state *s);
/* After a reload: the new state takes the old one's totals (they are the server's since it
 * started, not the store's); its own off switch stays as it was made. */
void gp__srv_usage_adopt(gp_srv_state *s, gp_srv_state *old);

/* ---- the usage ledger's intervals and totals ---- */
/* The running totals metrics and budgets read (gp__srv_usage_totals). */
typedef struct gp_srv_usage_total {
  const char *queue, *model;
  gp_capacity capacity;
  double gpu_s, used_gpu_s;
  double measured_gpu_s;  /* the part of gpu_s whose use was measured */
} gp_srv_usage_total;

/* The part of GPU `gpu` of node n that task allocation `a` holds, in (0, 1]. */
double gp__srv_gpu_share(const gp_srv_node *n, int gpu, const gp_srv_alloc *a);
/* The GPUs' total share held by one task (the sum of gp__srv_gpu_share over its GPUs). */
double gp__srv_task_share(const gp_srv_state *s, const gp_srv_alloc *a);
/* A run starts (its allocations just stored): one interval per (task, GPU), a new attempt. */
int gp__srv_ledger_open_job(gp_srv_state *s, gp_srv_job *j, int64_t now, gp_err *err);
/* The run's allocations are freed: its intervals close, its attempt ends, the totals grow. */
int gp__srv_ledger_close_job(gp_srv_state *s, gp_srv_job *j, int64_t now, gp_err *err);
/* The agent on node index `node` reported the job's figures there for this run (totals
 * since the run started; < 0: unknown): task `task`'s own, or with task -1 the job's on
 * all its tasks there, which go to them by share. The agent
 * is not trusted with them: use beyond every GPU busy since the start, or energy beyond
 * GP_SRV_MAX_GPU_WATTS per GPU, is cut to that bound. */
int gp__srv_ledger_use(gp_srv_state *s, gp_srv_job *j, int node, int task, double used_gpu_s,
                       double energy_j, int64_t now, gp_err *err);
/* Opens the node's interval for its state now (up, drained or down) when it changed. */
int gp__srv_ledger_node(gp_srv_state *s, gp_srv_node *n, int64_t now, gp_err *err);
/* The index of a node state name ("up" 0, "drained" 1, "down" 2), or -1. */
int gp__srv_ledger_node_state(const char *name);
/* After a load: closes the open intervals (job ids `open_jobs`, sorted here) of jobs that
 * no longer run, opens those of running jobs that have none, in a transaction of its own;
 * each repair is logged. */
int gp__srv_ledger_repair(gp_srv_state *s, int64_t *open_jobs, int n_open, int64_t now,
                          gp_err *err);
/* The job's SM-busy GPU-seconds in this run, the sum of its tasks' parts (< 0 when any
 * task's use is unknown), and its GPUs counted by share (gp__srv_gpu_share). */
void gp__srv_job_use(const gp_srv_state *s, const gp_srv_job *j, double *busy_gpu_s,
                     double *share_gpus);
/* Makes room in the totals for the keys of a running job. */
void gp__srv_usage_track(gp_srv_state *s, const gp_srv_job *j);
/* Calls fn for each (queue, model, capacity) with its totals up to now (closed intervals
 * since start + open intervals' time so far). State thread. */
void gp__srv_usage_totals(const gp_srv_state *s, int64_t now,
                          void (*fn)(void *ctx, const gp_srv_usage_total *t), void *ctx);

#endif
