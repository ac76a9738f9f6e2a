/* SPDX-License-Identifier: Apache-2.0 */
/* The context of one scheduling step (gp_sched_step, sched.c): what every stage reads
 * (policy, view, time, the queue tree, the memo if any, scratch memory) and one pointer per
 * stage to the state that stage owns. A stage's state is defined in its own header
 * (fleet.h, classify.h, place.h, preempt.h, backfill.h; the order's is private to
 * order.c), so a file sees the state of the stages whose headers it includes and no
 * other; the headers include downwards only (docs/internals/scheduler.md, "Stages and
 * their state").
 *
 * Internal: gp__core_ names, never used outside core. Everything lives for one call, except
 * what a caller's gp_sched_memo keeps between calls (memo.h). Memory for the plan goes to
 * the plan's arena; scratch memory ends with the step (scratch.h). Indexes: "job" and
 * "node" are view indexes, "queue" is a tree index (queue_tree.h). */
#ifndef GP_CORE_CTX_H
#define GP_CORE_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/bits.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/queue_tree.h"
#include "core/scratch.h"
#include "core/vec.h"
#include "util/error.h"
#include "util/mem.h"

#define GP__NEVER INT64_MAX
#define GP__EPS 1e-6

/* Caps that keep a step cheap on big clusters (docs/internals/scheduler.md). */
#define GP__MAX_RESERVATIONS 8      /* backfill reservations per step (and 1 per leaf) */
#define GP__MAX_PREEMPT_ATTEMPTS 8  /* preemption simulations per step */
#define GP__MAX_GANG_BLOCKS 4       /* topology blocks tried per gang before going wide */
#define GP__MAX_DRAIN 256           /* jobs considered once nothing fits (reservations,
                                       preemption), before the rest get reasons in bulk */

typedef struct gp__core_ctx {
  const gp_policy *pol;
  const gp_view *view;
  gp_time now;
  gp_err *err;
  /* The plan's valid_until as far as the step's own time-dependent checks know: the
   * earliest later time at which a check made on the way would answer otherwise
   * (gp__core_valid_by; sched.c adds the thresholds it can read off the jobs). */
  gp_time valid_until;
  /* Only starts, preemptions, ended jobs, MIG changes and fair shares are wanted
   * (GP_SCHED_DECISIONS_ONLY): no reasons, no reservations in the plan. */
  bool decisions_only;

  /* Priority classes in force (validate.c). */
  const gp_priority_class *classes;
  int n_classes;
  int default_class;    /* index into classes */

  struct gp_sched_memo *memo; /* NULL: gp_sched_step, or a view without a rev (memo.h) */
  bool view_known;      /* the memo's view: its nodes and pools were checked before */
  const gp__core_qtree *known_tree; /* the memo's tree of that view's queues, or NULL */
  gp__core_scratch *scratch; /* the memo's, or own_scratch */
  gp__core_scratch own_scratch;

  gp__core_qtree tree;
  gp_arena *arena;      /* the plan's: strings the plan keeps */

  /* The step's record of each job and node, which every stage from classification on
   * reads and updates (a job's status and reason, a node's free GPUs): defined with the
   * stage that fills them in (classify.h, fleet.h), kept here so that the per-job and
   * per-node loops reach them without going through a stage. */
  struct gp__core_job *jobs;   /* one per view job */
  struct gp__core_node *nodes; /* one per view node */

  /* Each stage's state, in the order the step runs the stages. */
  struct gp__core_fleet *fleet;       /* fleet.h: nodes, GPUs, the free-capacity index */
  struct gp__core_cls *cls;           /* classify.h: per-job records, lists, shapes */
  struct gp__core_place *place;       /* place.h: starts, shared GPUs, MIG plans */
  struct gp__core_preempt *preempt;   /* preempt.h: victims and preemptions */
  struct gp__core_backfill *backfill; /* backfill.h: reservations */
  struct gp__core_assembly *assembly; /* sched.c: what assembling the plan keeps */
  struct gp__core_ulim *ulim;         /* user_limits.c: per-user tallies, made on first use */
  struct gp__core_ares *ares;         /* reservation.c: advance reservations in force, or NULL */
} gp__core_ctx;

/* A check of this step that depends on now answers otherwise from time t on (t > now): the
 * plan may differ from then. */
static inline void gp__core_valid_by(gp__core_ctx *c, gp_time t) {
  if (t <= c->now) t = c->now + 1;
  if (t < c->valid_until) c->valid_until = t;
}

/* Is placement k of job the first on its node? (Per-node lists count a job once.) */
static inline bool gp__core_first_on_node(const gp_job *job, int k) {
  for (int m = 0; m < k; m++)
    if (job->placements[m].node == job->placements[k].node) return false;
  return true;
}

/* Sentences for the common reasons: string literals, so 100,000 pending jobs share them
 * instead of each getting a formatted copy. Rare reasons get formatted messages. */
#define GP__MSG_HELD "The job is held; it runs once it is released."
#define GP__MSG_BEGIN "The job asked not to start before its begin time (--begin)."
#define GP__MSG_DEPENDENCY "The job waits for the jobs it depends on."
#define GP__MSG_RESOURCES "Not enough free GPUs, CPU or memory that it may use right now."
#define GP__MSG_PRIORITY "Jobs ahead of it in the queue order are waiting for resources."
#define GP__MSG_RESERVATION \
  "Starting it now would delay a job that holds a reservation for those GPUs."
#define GP__MSG_NO_MATCH_DOWN \
  "Nodes that could run it exist but none of them is up, healthy and in a GPU mode it can use right now."
#define GP__MSG_MODEL_DOWN \
  "No node with the GPU model it asks for is up and healthy right now."
#define GP__MSG_TEMPLATE_ONLY \
  "No node in the cluster could hold it; it waits for nodes a provider can add (node templates)."
#define GP__MSG_WAIT_PREEMPT "Jobs are being stopped to make room for it."
#define GP__MSG_NEVER_NODES "No node in the cluster could ever satisfy this request."
#define GP__MSG_MODEL_UNKNOWN "No node in the cluster has the GPU model it asks for."
#define GP__MSG_MIG_REPARTITION "A GPU is being re-partitioned into MIG instances for it."
#define GP__MSG_NO_QUEUE "The job names a queue that does not exist."
#define GP__MSG_NOT_LEAF "The job names a parent queue; jobs go to leaf queues."
#define GP__MSG_NO_CLASS "The job names a priority class that does not exist."

#endif
