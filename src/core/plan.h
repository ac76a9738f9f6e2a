/* SPDX-License-Identifier: Apache-2.0 */
/* A plan: what one scheduling step decided. It is data, never log lines: the server
 * persists it and then tells agents; the simulator applies it to its virtual cluster;
 * `gpool plan` prints it. Job, node and queue references are indexes into the gp_view the
 * plan was made from; all memory belongs to the plan (gp_plan_free). */
#ifndef GP_CORE_PLAN_H
#define GP_CORE_PLAN_H

#include "core/model.h"

/* Why a job is still pending (DESIGN.md §2, "Pending reasons"). */
typedef enum gp_pending_reason {
  GP_PEND_PRIORITY = 0,        /* others are ahead of it */
  GP_PEND_QUEUE_LIMIT,         /* its queue (or a parent) is at its limit */
  GP_PEND_RESOURCES,           /* not enough free GPUs/CPU/memory right now */
  GP_PEND_RESERVATION,         /* would delay a higher job's reservation */
  GP_PEND_DEPENDENCY,          /* waiting for jobs it depends on */
  GP_PEND_HELD,
  GP_PEND_NO_MATCHING_NODES,   /* no node could ever satisfy it (transient: nodes down) */
  GP_PEND_GPU_MODEL_UNAVAILABLE,
  GP_PEND_WAITING_FOR_PREEMPTION, /* victims are stopping; it starts when they are gone */
  GP_PEND_BEGIN_TIME,          /* its begin time (gp_job.begin_at) is still ahead */
  GP_PEND_USER_GPU_LIMIT,      /* its user holds the most GPUs the queue allows one user */
  GP_PEND_USER_GPU_HOURS,      /* its user used the GPU-hours the queue allows per period */
} gp_pending_reason;

/* Why a job ends without running. */
typedef enum gp_end_reason {
  GP_END_DEPENDENCY_NEVER_SATISFIED = 0, /* an afterok job failed, a dependency is unknown */
  GP_END_NO_MATCHING_NODES,              /* no node in the fleet can ever satisfy it */
  GP_END_GPU_MODEL_UNKNOWN,              /* it asks for a GPU model no node has */
  GP_END_INVALID_REQUEST,                /* e.g. an unknown queue or priority class */
} gp_end_reason;

typedef enum gp_preempt_kind {
  GP_PREEMPT_PRIORITY = 0, /* a higher-priority job of the same queue */
  GP_PREEMPT_RECLAIM,      /* a queue below its fair share takes back lent GPUs */
  GP_PREEMPT_MAINT,        /* a maintenance window starts on its node (for_job -1) */
} gp_preempt_kind;

typedef struct gp_plan_start {
  int job;
  int n_placements;              /* one per task */
  gp_placement *placements;
} gp_plan_start;

typedef struct gp_plan_preemption {
  int job;              /* the victim */
  int for_job;          /* the job that needs its GPUs */
  gp_preempt_kind kind;
} gp_plan_preemption;

typedef struct gp_plan_reservation {
  int job;
  gp_time at;           /* earliest start computed from running jobs' time limits */
} gp_plan_reservation;

typedef struct gp_plan_pending {
  int job;
  gp_pending_reason reason;
  const char *message;  /* one sentence for `gpool why` */
} gp_plan_pending;

typedef struct gp_plan_end {
  int job;
  gp_end_reason reason;
  const char *message;
} gp_plan_end;

/* A queue's figures after the step; includes implied parent queues. */
typedef struct gp_plan_queue {
  const char *name;
  int parent;           /* index into plan->queues, -1 for top-level queues */
  double deserved;      /* GPUs */
  double limit;         /* GP_NO_LIMIT for none */
  double weight;
  double fair_share;    /* GPUs, from the water-filling */
  double allocated;     /* GPUs held by running/stopping jobs after the plan's starts */
  double pending;       /* GPUs asked by pending jobs */
  int running_jobs, pending_jobs;
} gp_plan_queue;

/* Dynamic MIG: re-partition an idle GPU to this layout (the agent executes it). */
typedef struct gp_plan_mig {
  int node;
  int gpu;
  int n_instances;
  const char *const *profiles; /* e.g. {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"} */
  const int *start_slots;
} gp_plan_mig;

/* Scale-up (src/core/scale.h): ask the provider of template `tmpl` (an index into
 * gp_view.templates) for `count` new nodes, the first pending job they are for being `job`. */
typedef struct gp_plan_create {
  int tmpl;
  int count;
  int job;
} gp_plan_create;

/* Scale-down: delete provider node `node`, which has held no job since `idle_since`. */
typedef struct gp_plan_delete {
  int node;
  gp_time idle_since;
} gp_plan_delete;

/* What scaling means for one pending job that no node can hold now. */
typedef enum gp_scale_state {
  GP_SCALE_WAITING = 0, /* nodes of `tmpl` are being created for it (asked earlier or now) */
  GP_SCALE_BACKOFF,     /* `tmpl` would hold it but its provider failed; asked again later */
  GP_SCALE_MAX_NODES,   /* `tmpl` would hold it but has max_nodes nodes already */
  GP_SCALE_COST_CAP,    /* `tmpl` would hold it but max_hourly_cost would be passed */
  GP_SCALE_NO_TEMPLATE, /* no template could hold it (tmpl -1) */
} gp_scale_state;

typedef struct gp_plan_scale_note {
  int job;
  int tmpl;             /* the first template in order that would hold it, or -1 */
  gp_scale_state state;
  int count;            /* nodes of tmpl it needs (GP_SCALE_WAITING: being created) */
} gp_plan_scale_note;

typedef struct gp_plan {
  gp_time now;
  /* Until when this plan stays the step's answer as time passes: for the same policy and
   * view, a step at any time in [now, valid_until) returns this plan but for `now` (its
   * reservations' times included). now + 1 when the plan acts (starts, preemptions, ended
   * jobs, MIG changes: the caller's view changes anyway), when a job is stopping, and in a
   * decisions-only step; INT64_MAX when no time moves it. A bound, not a
   * decision: gp_plan_equal leaves it out. For a caller that skips steps that cannot change
   * anything (the server). */
  gp_time valid_until;
  int n_starts;
  gp_plan_start *starts;
  int n_preemptions;
  gp_plan_preemption *preemptions;
  int n_reservations;
  gp_plan_reservation *reservations;
  int n_pending;
  gp_plan_pending *pending;
  int n_ended;
  gp_plan_end *ended;
  int n_queues;
  gp_plan_queue *queues;
  int n_mig;
  gp_plan_mig *mig;
  /* Filled by gp_scale_propose (src/core/scale.h) only; gp_sched_step leaves them empty. */
  int n_creates;
  gp_plan_create *creates;
  int n_deletes;
  gp_plan_delete *deletes;
  int n_scale_notes;
  gp_plan_scale_note *scale_notes; /* by job index, ascending */
  struct gp_arena *arena; /* owns everything above */
} gp_plan;

void gp_plan_free(gp_plan *plan); /* accepts NULL */
/* Whether two plans say the same thing, field by field (strings by content): what the
 * byte-identical promise of gp_sched_step_memo means, checkable by its callers. */
bool gp_plan_equal(const gp_plan *a, const gp_plan *b);

/* Machine names ("Resources", "GpuModelUnavailable", "reclaim", ...) as in the API. */
const char *gp_pending_reason_name(gp_pending_reason r);
const char *gp_end_reason_name(gp_end_reason r);
const char *gp_preempt_kind_name(gp_preempt_kind k);
const char *gp_scale_state_name(gp_scale_state s); /* "waiting", "backoff", "max_nodes", ... */

#endif
