/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler: a pure function from (policy, cluster view, now) to a plan.
 * Same inputs give a byte-identical plan; nothing here reads a clock, a file or a socket. */
#ifndef GP_CORE_SCHED_H
#define GP_CORE_SCHED_H

#include <stddef.h>

#include "core/model.h"
#include "core/plan.h"
#include "util/error.h"

/* Could a request ever run on this fleet, whatever runs there now and whichever nodes are
 * up? The core's own test, the one by which a step ends impossible jobs, on the nodes'
 * sizes (GPU count, memory and MIG support, CPU, host memory), GPU models, capacity types and
 * labels; pools are left out (a queue's pool can only narrow the answer). False, with *why
 * GP_END_GPU_MODEL_UNKNOWN or GP_END_NO_MATCHING_NODES, when it never could; true for an
 * empty fleet, about which nothing is known yet. For a server to refuse such a submission. */
bool gp_sched_could_ever_run(const gp_node *nodes, int n_nodes, const gp_request *r,
                             gp_end_reason *why);

/* Runs one scheduling step. On success returns 0 and stores a new plan in *ret_plan (the
 * caller frees it with gp_plan_free). Returns GP_EINVAL, with details in *err (may be
 * NULL), when the view is inconsistent (a placement on a node that does not exist, a GPU
 * index out of range, two queues with one name); *ret_plan is untouched then. */
int gp_sched_step(const gp_policy *policy, const gp_view *view, gp_time now,
                  gp_plan **ret_plan, gp_err *err);

/* What a caller may keep between steps so that a step re-derives only what changed (an
 * incremental step on a big cluster finds most jobs and every node unchanged). With flags
 * 0, gp_sched_step_memo returns exactly what gp_sched_step returns for the same (policy,
 * view, now), byte for byte, as long as the caller keeps the rev contract (gp_view.rev,
 * gp_view.job_revs): the memo stands in for work, never for input. A view with rev 0 or
 * without job_revs clears it. One memo serves one caller's view; it is not thread-safe. */
typedef struct gp_sched_memo gp_sched_memo;

/* gp_sched_step_memo's flags. */
enum {
  /* Decisions only: the plan holds what changes the cluster, as always (starts,
   * preemptions, ended jobs, MIG changes) and the fair shares, but no reasons for pending
   * jobs (plan.pending empty, the queues' pending figures and job counts 0) and no
   * reservations (the step still makes those that fence later starts, but stops looking
   * for more once nothing more can start). For callers that act on decisions alone (the
   * simulator). */
  GP_SCHED_DECISIONS_ONLY = 1u << 0,
};

gp_sched_memo *gp_sched_memo_new(void);
void gp_sched_memo_free(gp_sched_memo *m);
/* Bytes the memo holds (about 450 per job slot of the largest view seen, its steps' scratch
 * block included). */
size_t gp_sched_memo_bytes(const gp_sched_memo *m);
int gp_sched_step_memo(gp_sched_memo *m, const gp_policy *policy, const gp_view *view,
                       gp_time now, unsigned flags, gp_plan **ret_plan, gp_err *err);

#endif
