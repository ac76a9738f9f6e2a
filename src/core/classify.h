/* SPDX-License-Identifier: Apache-2.0 */
/* Classification (classify.c, jobs.c, classify_memo.c, deps.c, feasible.c, shapes.c): one
 * pass over the view's jobs. Running jobs take their holds (fleet.h) and count in their
 * queues; pending jobs end, wait with a reason, or become eligible with their request shape
 * and placement key.
 * Its state is the per-job array every later stage reads and writes (through
 * gp__core_job_mut), the jobs by status, the queue sums and the request shapes. */
#ifndef GP_CORE_CLASSIFY_H
#define GP_CORE_CLASSIFY_H

#include "core/fleet.h"
#include "core/memo.h"
#include "core/strmap.h"
#include "core/validate.h"

/* What the step has decided about a job so far. */
enum gp__core_jstat {
  GP__J_NONE = 0,  /* ended before this step, or not a job the step acts on */
  GP__J_RUNNING,   /* RUNNING in the view: holds GPUs */
  GP__J_STOPPING,  /* STOPPING in the view: still holds GPUs */
  GP__J_ELIGIBLE,  /* pending and schedulable, not yet decided */
  GP__J_WAITING,   /* pending with a reason (reason/msg) */
  GP__J_ENDED,     /* ends in this plan (end_reason/msg) */
  GP__J_STARTED,   /* starts in this plan */
};

typedef struct gp__core_job {
  double gpus;          /* GPUs held (running) or asked (pending), fractions as fractions */
  gp_time limit;        /* effective time limit in seconds; 0: none */
  gp_time submitted;    /* copy of submitted_at, so ordering stays in this compact array */
  int leaf;             /* tree index of its queue, -1 when unknown */
  int prio;             /* resolved priority */
  uint8_t stat;         /* enum gp__core_jstat */
  uint8_t kind;         /* enum gp__core_rkind */
  uint8_t reason;       /* gp_pending_reason, when GP__J_WAITING */
  uint8_t end_reason;   /* gp_end_reason, when GP__J_ENDED */
  bool preemptible;
  bool victim;          /* chosen as a victim in this step (or a stopping job counted on) */
  int shape;            /* request shape id (shapes.c), -1 before it is computed */
  int pkey;             /* placement key id (shapes.c), -1 for jobs not eligible */
  const char *msg;      /* static sentence or plan-arena string */
  uint64_t idp;         /* eligible jobs: the id's order key (gp__core_id_key), read while
                           classification has the job in cache, for order.c's ties */
} gp__core_job;

typedef struct gp__core_cls {
  /* Jobs by status, in view order, so later passes need not scan the view. */
  int *running, n_running;   /* RUNNING and STOPPING */
  gp__core_run *run;              /* per running position */
  int *eligible, n_eligible; /* pending and schedulable */
  int n_ended;               /* jobs that end in this plan */
  int n_stopping;
  int run_min_prio;     /* lowest priority of a preemptible running job (INT_MAX: none) */
  int min_whole;        /* smallest whole-GPU per-task request among eligible jobs */
  bool other_eligible;  /* eligible fractional, MIG or CPU-only jobs exist */
  bool mig_eligible;    /* some eligible job asks for a MIG instance */

  /* With a memo: the memo's lists, lent (gp__core_lists), and what this step put in them. */
  gp__core_lists lists;
  /* With a memo, lent for the step as well (gp__core_memo_begin): per view slot, the memo
   * step that last journaled it (NULL without a memo: nothing is journaled), this step's
   * number, and the last step's shape tables, emptied and used again (shapes.c). */
  uint64_t *journaled, journal_step;
  struct gp__core_shapes *spare_shapes;
  uint64_t *fresh_bits;      /* a bit per view slot classified afresh, i.e. not replayed
                                (its rev changed) */
  int n_fresh, n_journal, n_kept_toks;

  /* Queue sums while every amount is a whole number: per tree queue, GPUs held; per leaf,
   * GPUs asked or held. */
  int64_t *alloc_int, *demand_int;
  bool sums_inexact;
  uint64_t alloc_gen;   /* changes whenever a queue's allocation or lost GPUs do */

  /* Leaf lookups by queue-name pointer: callers that share one string per queue (the
   * simulator, the server) skip the hash; the answer never depends on the cache. */
  const char *qcache_ptr[1024]; /* slots: gp__core_ptr_slot(name, 10) */
  int qcache_val[1024];
  const char *hcache_ptr[64]; /* string hashes by pointer (shapes.c) */
  uint32_t hcache_val[64];
  const char *ccache_ptr[16]; /* priority class by name pointer */
  int ccache_val[16];
  int *leaf_class;            /* per queue: default class resolved, -2 until first use */
  bool *path_limited;         /* per queue: it or an ancestor has a limit */

  struct gp__core_shapes *shapes;  /* shapes.c: request shapes and failed placement keys */
  struct gp__core_guard *guard;    /* guarantee.c: non-preemptible GPUs per queue, or NULL
                                      until first needed */
  int keys_alive;             /* placement keys with jobs left that have not failed */

  /* Spot settings in force per tree queue (spot.c). NULL arrays: no queue has one. */
  uint8_t *spot_pref;         /* gp_spot_pref: the queue's own, else its nearest ancestor's */
  int *spot_cap;              /* the queue whose spot_share caps it (itself or an
                                 ancestor), or -1 */
  double *spot_held;          /* GPUs its jobs and its sub-queues' hold on spot nodes */
  bool spot_mixed;            /* up nodes of spot and of other capacity: preferences matter */

  /* Job ids (built on first need, for dependencies). */
  bool ids_built;
  gp__core_strmap ids;
  /* Singleton keys "user\x1fname" -> slot of single_first (the job that may run; built on
   * the first singleton job, deps.c). */
  bool single_built;
  gp__core_strmap single;
  int *single_first;
} gp__core_cls;

/* ctx.jobs[j], about to be written: with a memo the slot is journaled, so that the step's
 * end puts it back as classification left it (journal.c; classify_memo.c puts it back). */
void gp__core_journal_add(gp__core_ctx *c, int j);
static inline gp__core_job *gp__core_job_mut(gp__core_ctx *c, int j) {
  if (c->cls->journaled && c->cls->journaled[j] != c->cls->journal_step) gp__core_journal_add(c, j);
  return &c->jobs[j];
}

/* The pass (classify.c) and each job's part in it (jobs.c). */
/* Ends the step's use of classification's state: with a memo, puts back the slots this
 * step journaled and returns the lists lent to it; else frees the per-job array. */
void gp__core_cls_done(gp__core_ctx *c);
void gp__core_job_wait(gp__core_ctx *c, int j, gp_pending_reason r, const char *msg);
void gp__core_job_end(gp__core_ctx *c, int j, gp_end_reason r, const char *msg);
int gp__core_class_of(const gp__core_ctx *c, const gp_job *job, int leaf); /* class index or -1 */
int gp__core_classify_jobs(gp__core_ctx *c);
/* Adds `gpus` to the allocation of `leaf` and all its ancestors (negative to remove). */
void gp__core_queue_add_alloc(gp__core_ctx *c, int leaf, double gpus);
/* The first queue on leaf's path whose limit `extra` GPUs more would break, or -1. */
int gp__core_queue_over_limit(const gp__core_ctx *c, int leaf, double extra);

/* Dependencies (deps.c): 0 satisfied, 1 waiting (msg set), -1 never (msg set). */
int gp__core_deps_check(gp__core_ctx *c, int j, const char **msg);
/* Whether job names any dependency (singleton included): its classification depends on
 * other jobs, so it is checked each step and never remembered. */
static inline bool gp__core_has_deps(const gp_job *job) {
  return (job->n_after | job->n_after_ok | job->n_after_any | job->n_after_not_ok) || job->singleton;
}

/* Feasibility of a request on the fleet (feasible.c). */
enum gp__core_feas {
  GP__FEAS_OK = 0, GP__FEAS_DOWN, GP__FEAS_MODEL_DOWN, GP__FEAS_NEVER, GP__FEAS_MODEL_UNKNOWN,
  GP__FEAS_TEMPLATE,       /* only nodes of a template (gp_view.templates) could hold it */
  GP__FEAS_TEMPLATE_MODEL, /* the same, and only a template has the model it names */
};
int gp__core_feasible(gp__core_ctx *c, int j);
/* Task slots node n could ever offer the request (kind: enum gp__core_rkind), whatever runs
 * there: its size alone. */
int gp__core_ever_slots(const gp_node *n, const gp_request *r, int kind);
/* A gang's exact node count (gp_request.nodes, Slurm's -N): its tasks on exactly that many
 * distinct nodes, or 0 for any number. The one rule placement, feasibility, backfill
 * reservations and the autoscaler's sizing read. */
int gp__core_exact_nodes(const gp_request *r);
/* Whether a gang of `tasks` fits on exactly `nodes` of the nodes whose task slots are
 * slots[0..n-1] (one task at least on each, at most its slots): true when `nodes` of them
 * have a slot and the `nodes` largest hold the gang. */
bool gp__core_nodes_hold(const int *slots, int n, int nodes, int tasks);
/* The kind of a request (enum gp__core_rkind): MIG, whole GPUs, a fraction or CPU only. */
int gp__core_request_kind(const gp_request *r);
/* Task slots one empty node of template t offers the request (its size, model, labels and
 * capacity type); 0 when it may not hold it. */
int gp__core_template_slots(const gp_template *t, const gp_request *r);
/* Whether up to max_nodes nodes of template t could hold the request (gp_scale_could_hold,
 * which the autoscaler's callers ask; feasibility asks it for jobs only a template could
 * run). */
bool gp__core_template_holds(const gp_template *t, const gp_request *r);

/* Request shapes and placement keys (shapes.c). */
int gp__core_shape_of(gp__core_ctx *c, int j);
/* Shape tokens: a name for job j's raw request key that lasts across steps (created on
 * first use in *tk); job j's shape through its token in memo step `step`. */
int gp__core_shape_token(gp__core_ctx *c, int j, struct gp__core_tokens **tk);
int gp__core_shape_by_token(gp__core_ctx *c, int j, struct gp__core_tokens *tk, int tok, uint64_t step);
int gp__core_tokens_count(const struct gp__core_tokens *tk);
size_t gp__core_tokens_bytes(const struct gp__core_tokens *tk);
void gp__core_tokens_free(struct gp__core_tokens *tk);
int gp__core_shape_feas(gp__core_ctx *c, int shape);
void gp__core_shape_set_feas(gp__core_ctx *c, int shape, int v);
/* which: 0 = placement ignoring reservations failed, 1 = waiting-for-stopping check failed.
 * spot_tried: the request that failed could use spot nodes (else the failure says nothing
 * of shapes whose jobs may use them). */
bool gp__core_shape_flag(gp__core_ctx *c, int shape, int which);
void gp__core_shape_set_flag(gp__core_ctx *c, int shape, int which, bool spot_tried);
bool gp__core_shape_fits_free(const gp__core_ctx *c, int shape);
void gp__core_shape_set_fits_free(gp__core_ctx *c, int shape);
/* Whether the shape's jobs fit with spot allowed although their queue keeps them off it
 * (spot.c): 1, 0, or -1 when not known since a node's use last changed. */
int gp__core_shape_spot_fit(const gp__core_ctx *c, int shape);
void gp__core_shape_set_spot_fit(gp__core_ctx *c, int shape, bool fits);
/* Whether a job of the shape ending at `end` already failed on the class of nodes its
 * queue prefers (gang.c), honouring reservations; and noting such a failure. */
bool gp__core_shape_first_failed(const gp__core_ctx *c, int shape, gp_time end);
void gp__core_shape_set_first_failed(gp__core_ctx *c, int shape, gp_time end);
void gp__core_keys_add(gp__core_ctx *c, int j, gp_time end);
/* Sets the shape and placement key of an eligible job the memo's replay left without them
 * (classify_memo.c, keep_eligible): called before the step looks at the job. */
void gp__core_job_keyed(gp__core_ctx *c, int j);
/* n eligible jobs of shape t at once, the earliest ending at `end` (their keys are set
 * later, by gp__core_job_keyed). */
void gp__core_keys_add_n(gp__core_ctx *c, int t, int n, gp_time end);
void gp__core_keys_consider(gp__core_ctx *c, int j);
bool gp__core_keys_failed(const gp__core_ctx *c, int j);
void gp__core_keys_fail(gp__core_ctx *c, int j, bool spot_tried);
void gp__core_shapes_done(gp__core_ctx *c);
void gp__core_shapes_free(struct gp__core_shapes *s);

#endif
