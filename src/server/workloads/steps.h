/* SPDX-License-Identifier: Apache-2.0 */
/* Job steps (srun inside a job): a step runs a command as K step tasks over the job's
 * allocation, each on the agent of its node inside the job task it maps to. Where the step
 * tasks go (step_place.c, pure), the steps a job keeps and their states (steps.c), and the
 * API that creates, reads, relays and cancels them (steps_api.c) with the job's step
 * credential (docs/api.md#steps).
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_STEPS_H
#define GP_SERVER_STEPS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/limits.h"
#include "server/state/steps_doc.h"
#include "util/error.h"

/* What srun asked of the layout; 0 / NULL: not given. */
typedef struct gp_srv_step_ask {
  int nodes;            /* -N/--nodes */
  int ntasks;           /* -n/--ntasks */
  int ntasks_per_node;  /* --ntasks-per-node */
  int n_nodelist;       /* -w/--nodelist, expanded */
  const char *const *nodelist;
} gp_srv_step_ask;

/* Places a step over an allocation of n_alloc tasks whose node is alloc_node[t] (an index)
 * named alloc_name[t]. Nodes are taken in the order of their first task; a node holds at
 * most as many step tasks as it has job tasks. Fills ret_alloc[0..*ret_n) with the job task
 * each step task (by rank) runs in, ranks in blocks per node. Returns 0, or GP_EINVAL with
 * the option it cannot honour in err->field ("nodes", "ntasks", "ntasks_per_node",
 * "nodelist") and why. Pure. */
int gp__srv_step_place(const int *alloc_node, const char *const *alloc_name, int n_alloc,
                       const gp_srv_step_ask *ask, int *ret_alloc, int *ret_n, gp_err *err);

/* Whether step task i (of the placement above) sees its job task's own GPUs: its node has
 * as many step tasks as job tasks. Otherwise it sees all of the job's GPUs on the node. */
bool gp__srv_step_own_gpus(const int *alloc_node, int n_alloc, const int *step_alloc, int n,
                           int i);

struct gp_srv_state;
struct gp_srv_job;
struct gp_srv_req;

/* ---- steps.c ---- */
/* A new run: a fresh step credential; the step counter of the run starts again. */
void gp__srv_steps_new_run(struct gp_srv_job *j);
gp_srv_step *gp__srv_step_find(struct gp_srv_job *j, int id);
/* The run ended (or the job left RUNNING/STOPPING): every running step ends, its unfinished
 * tasks with `reason`. */
void gp__srv_steps_job_ended(struct gp_srv_state *s, struct gp_srv_job *j, const char *reason,
                             int64_t now);
/* An agent's step_exited event from node `node` (its name). */
int gp__srv_step_task_exited(struct gp_srv_state *s, struct gp_srv_job *j, const char *node,
                             int step, int task, bool has_exit, int exit_code, int sig,
                             const char *reason, const char *message, int64_t out_bytes,
                             int64_t err_bytes, int64_t now, gp_err *err);
/* The agent of `node` registered again listing the step tasks it runs (`running`: an array
 * of {job, step, task}, or NULL): the others it ran are lost. */
struct gp_srv_node;
void gp__srv_steps_node_registered(struct gp_srv_state *s, struct gp_srv_node *n,
                                   const json_t *running, int64_t now);
/* start_order.c: the address other nodes reach node n at (its agent's host, else its name). */
void gp__srv_node_addr(const struct gp_srv_node *n, char *buf, size_t size);
/* The state thread's tick: a running step whose srun has not asked about it for
 * GP_SRV_STEP_ORPHAN_MS (srun killed by SIGKILL, its node gone) is cancelled. */
int gp__srv_steps_tick(struct gp_srv_state *s, int64_t now_ms, gp_err *err);
/* Sends step_stop orders for every unfinished task of the step (signal "" : TERM). */
int gp__srv_step_stop(struct gp_srv_state *s, struct gp_srv_job *j, gp_srv_step *p,
                      const char *reason, gp_err *err);

/* ---- steps_api.c ---- */
/* /v1/jobs/{id}/steps[/{step}[/output|/cancel]], rest after "steps" ("", "/3", ...). */
int gp__srv_steps_route(struct gp_srv_state *s, struct gp_srv_req *r, struct gp_srv_job *j,
                        const char *rest, int64_t now, gp_err *err);
/* Is `path` one that a job's step credential may use? Fills the job id. */
bool gp__srv_steps_path(const char *path, char *job_id, size_t size);

#endif
