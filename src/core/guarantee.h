/* SPDX-License-Identifier: Apache-2.0 */
/* Non-preemptible jobs and the queues' guarantees (docs/internals/scheduler.md,
 * "Guarantees and non-preemptible jobs"). Reclaim gives a queue back its deserved GPUs by
 * preempting borrowers; a non-preemptible borrower can never be taken back, so such a job
 * may borrow only GPUs that nobody is guaranteed.
 *
 * The rule, at every level of the tree: what the children of a parent hold in
 * non-preemptible jobs beyond their own deserved GPUs (their excess) must fit in what the
 * parent does not pass on as a guarantee (its deserved minus the sum of its children's,
 * never below 0) plus the parent's own excess; at the top, in the cluster's capacity minus
 * the sum of the top-level queues' deserved GPUs. The GPUs of a reserved pool count as
 * its owner's (and the owner's ancestors') deserved GPUs. A pool without quotas (every deserved 0)
 * lets non-preemptible jobs use the whole cluster; two queues that are guaranteed all of it
 * each keep their non-preemptible jobs within their own share. It applies under the
 * fair-share order only: the other orders have no quotas.
 *
 * The per-queue sums are built on first need from the running jobs and kept up to date as
 * non-preemptible jobs start (victims are always preemptible, so preemption never lowers
 * them). Internal to src/core. */
#ifndef GP_CORE_GUARANTEE_H
#define GP_CORE_GUARANTEE_H

#include "core/classify.h"

/* The queue on leaf's path that `gpus` more GPUs in non-preemptible jobs would take
 * beyond its deserved GPUs and beyond what nobody is guaranteed (a tree index), or -1
 * when they fit (always -1 outside the fair-share order). */
int gp__core_guard_over(gp__core_ctx *c, int leaf, double gpus);
/* A non-preemptible job of `leaf` starts holding `gpus` GPUs. */
void gp__core_guard_started(gp__core_ctx *c, int leaf, double gpus);
/* The sentence for a job that gp__core_guard_over refused (q: its answer). */
const char *gp__core_guard_message(gp__core_ctx *c, int q);

#endif
