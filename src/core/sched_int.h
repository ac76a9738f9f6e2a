/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler's working state for one step, shared by the files of src/core that make up
 * gp_sched_step (sched.c, validate.c, nodes.c, jobs.c, deps.c, feasible.c, shapes.c,
 * order.c, placement.c, gang.c, shared.c, preempt.c, victim_order.c, backfill.c, memo.c).
 * Internal: gp__ names, never used outside core and its unit tests.
 * docs/internals/scheduler.md explains it.
 *
 * Everything here lives for one call, except what a caller's gp_sched_memo keeps between
 * calls (struct gp_sched_memo and what it points to). Memory for the plan goes to the
 * plan's arena; all scratch is malloc'ed and freed at the end of the step (sched.c,
 * ctx_done). Indexes: "job" and "node" are view indexes, "queue" is a tree index
 * (queue_tree.h). */
#ifndef GP_CORE_SCHED_INT_H
#define GP_CORE_SCHED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/bits.h"
#include "core/model.h"
#include "core/node_index.h"
#include "core/plan.h"
#include "core/queue_tree.h"
#include "core/scratch.h"
#include "core/strmap.h"
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

/* What the step has decided about a job so far. */
enum gp__jstat {
  GP__J_NONE = 0,  /* ended before this step, or not a job the step acts on */
  GP__J_RUNNING,   /* RUNNING in the view: holds GPUs */
  GP__J_STOPPING,  /* STOPPING in the view: still holds GPUs */
  GP__J_ELIGIBLE,  /* pending and schedulable, not yet decided */
  GP__J_WAITING,   /* pending with a reason (reason/msg) */
  GP__J_ENDED,     /* ends in this plan (end_reason/msg) */
  GP__J_STARTED,   /* starts in this plan */
};

/* Request kinds (gp_request says exactly one applies). */
enum gp__rkind { GP__R_WHOLE = 0, GP__R_FRACTION, GP__R_MIG, GP__R_CPU };

typedef struct gp__job {
  double gpus;          /* GPUs held (running) or asked (pending), fractions as fractions */
  gp_time limit;        /* effective time limit in seconds; 0: none */
  gp_time submitted;    /* copy of submitted_at, so ordering stays in this compact array */
  int leaf;             /* tree index of its queue, -1 when unknown */
  int prio;             /* resolved priority */
  uint8_t stat;         /* enum gp__jstat */
  uint8_t kind;         /* enum gp__rkind */
  uint8_t reason;       /* gp_pending_reason, when GP__J_WAITING */
  uint8_t end_reason;   /* gp_end_reason, when GP__J_ENDED */
  bool preemptible;
  bool victim;          /* chosen as a victim in this step (or a stopping job counted on) */
  int shape;            /* request shape id (shapes.c), -1 before it is computed */
  int pkey;             /* placement key id (shapes.c), -1 for jobs not eligible */
  const char *msg;      /* static sentence or plan-arena string */
  uint64_t idp;         /* eligible jobs: the id's first 8 bytes (gp__id_prefix), read while
                           classification has the job in cache, for order.c's ties */
} gp__job;

typedef struct gp__node {
  uint32_t whole_ok;    /* GPUs whole-GPU work may use: node up, healthy, exclusive/shared */
  uint32_t share_ok;    /* GPUs fractional work may use: node up, healthy, shared/timeslice */
  uint32_t mig_ok;      /* GPUs in MIG mode that are healthy on an up node */
  uint32_t free;        /* whole_ok GPUs nobody uses */
  uint32_t resv;        /* GPUs promised to a backfill reservation */
  int model;            /* model id (ctx->model_names), -1 for a node without GPUs */
  int block;            /* topology.block id, -1 when unlabelled */
  int pool;             /* index into view->pools, -1 for the general fleet */
  int gpu_base;         /* offset of GPU 0 in the per-GPU arrays */
  int dom_base, n_dom;  /* NVLink domain masks at ctx->dom[dom_base ..] */
  int64_t cpu_free, mem_free;
  bool up;              /* state UP: takes new work */
  bool mem_varies;      /* some GPU has its own mem_mib */
  bool exclusive_only;  /* every GPU is in exclusive mode: whole-GPU bookkeeping suffices */
  uint8_t n_whole_ok;   /* GPUs in whole_ok */
} gp__node;

/* One task's resources, derived from a job for the placement functions. */
typedef struct gp__req {
  int job;
  int kind;             /* enum gp__rkind */
  int tasks;
  int gpus;             /* whole GPUs per task (GP__R_WHOLE) */
  int milli;            /* GP__R_FRACTION: per task (computed from memory when asked so) */
  int64_t gpu_mem;      /* GP__R_FRACTION: memory share per task, 0 if not asked */
  int64_t min_gpu_mem;
  int64_t cpu, mem;
  const char *mig_profile;
  int n_models;         /* -1: any model */
  int models[8];        /* model ids; requests naming more use any of the first 8 known */
  int n_slots;
  int slots[16];        /* pool slots in order of preference (0 = general fleet) */
  gp_time end;          /* now + limit, GP__NEVER without a limit (for reservations) */
  bool honor_resv;      /* keep off GPUs that a reservation needs before `end` */
  bool ready;           /* filled in (gp__req_init); else only `job` is set */
} gp__req;

/* Where one task goes. */
typedef struct gp__fit {
  int node;
  uint32_t mask;
  int milli;            /* per GPU: 1000 whole, else the share */
  int64_t gpu_mem;
  int mig;              /* MIG instance or -1 */
  double score;         /* shared placements: the sharing policy's score (higher wins) */
} gp__fit;

/* A running or stopping job as classification read it (jobs.c), by position in
 * ctx.running: preemption and backfill use this instead of reading the view again. */
typedef struct gp__run {
  int node;             /* its only node (one placement), -1 when it has several */
  uint32_t whole;       /* one placement: the whole GPUs it holds there */
  int64_t cpu, mem;     /* per placement */
  gp_time started;
  gp_time since;        /* max(started, last checkpoint): work since then is lost */
  gp_time limit;        /* as gp__job.limit */
  double gpus;          /* as gp__job.gpus */
  int leaf, prio;       /* as gp__job */
  bool stopping, preemptible;
} gp__run;

/* When a running job's record says it ends, before the step's now is applied (its end
 * is the later of the two): INT64_MIN for a stopping job (it ends now), GP__NEVER without
 * a time limit. */
static inline gp_time gp__run_end(const gp__run *ru) {
  if (ru->stopping) return INT64_MIN;
  if (ru->limit <= 0 || ru->started > GP__NEVER - ru->limit) return GP__NEVER;
  return ru->started + ru->limit;
}

/* gp_sched_step_memo's memory of one view slot (memo.c): what classification (jobs.c)
 * derived from the job, replayed while the job's rev and the view's rev stay the same.
 * A replay reads only these; the whole classification (memo.cls) puts a slot back. */
typedef struct gp__memo_rec {
  uint64_t rev;         /* the job's rev when recorded; 0: nothing recorded */
  double gpus;          /* as gp__job */
  gp_time limit;
  int leaf;
  int tok;              /* its request's shape token (shapes.c); -1: shape not computed */
  int whole_per_task;   /* whole-GPU requests: GPUs per task (the early stop's minimum) */
  uint8_t stat;         /* as gp__job */
  uint8_t sums;         /* gpus for classification's integer sums: 1 whole, 2 not */
} gp__memo_rec;

/* Lists a memo step grows, with their counts in the step (gp__ctx): jobs classified
 * afresh (not replayed), the tokens of the step's gp__tagg counts, the slots of ctx.jobs
 * the step wrote (gp__job_mut). */
typedef struct gp__lists {
  int *fresh, *kept_toks, *journal;
  size_t fresh_cap, kept_toks_cap, journal_cap;
} gp__lists;

/* Kept eligible jobs of one request token in a step (jobs.c): replays count them here and
 * the step's placement keys take each token's count and earliest end at once. */
typedef struct gp__tagg {
  uint64_t step;        /* the memo step these counts are for */
  int64_t min_limit;    /* smallest positive time limit; INT64_MAX: none */
  int n;                /* jobs */
  int rep;              /* one of them (view index): the token's shape is found through it */
} gp__tagg;

struct gp_sched_memo {
  uint64_t view_rev;    /* the view the records belong to; 0: none */
  const gp_policy *pol;
  gp__memo_rec *rec;    /* per view index */
  gp__job *cls;         /* per view index: ctx.jobs[j] as classification left it */
  gp__run *run;         /* per view index: running and stopping jobs' records (apart, so
                           that replaying a pending job reads no more than it needs) */
  size_t cap;
  struct gp__tokens *tokens;
  struct gp__victims *victims; /* the victim order (victim_order.c) */
  uint64_t *changed;    /* a bit per view slot classified afresh since the victim order
                           was last made (set by classification, cleared by that order) */
  size_t changed_words;
  struct gp__nodes_snap *nodes; /* what the nodes give before any job holds them (nodes.c) */
  struct gp__kept_order *order; /* the last step's eligible jobs in order (order.c) */
  struct gp__usage *usage; /* the nodes as the last step's kept holds left them (nodes.c) */
  uint64_t step;        /* steps run with this memo */
  size_t n_running;     /* running and stopping jobs in the last step */
  gp__tagg *tagg;       /* per token */
  size_t tagg_cap;
  gp__qtree tree;       /* the view's queue tree as built (n 0: none), for the next step */
  gp__scratch scratch;  /* its steps' scratch block, kept for the next */
  gp__lists lists;      /* lent to each step (ctx.lists): they grow once, not every step */
  struct gp__shapes *shapes; /* the last step's shape tables, emptied by the next */
  /* ctx.jobs of every memo step: a slot whose record is replayed keeps what
   * classification left there (shape and key -1), so a replay writes nothing to it. What a
   * step changes in it afterwards is journaled and put back when the step ends. */
  gp__job *jobs;        /* per view slot, cap entries */
  uint64_t *journaled;  /* per view slot: the step that journaled it */
};

typedef struct gp__ctx {
  const gp_policy *pol;
  const gp_view *view;
  gp_time now;
  gp_err *err;

  /* Priority classes in force. */
  const gp_priority_class *classes;
  int n_classes;
  int default_class;    /* index into classes */

  struct gp_sched_memo *memo; /* NULL: gp_sched_step, or a view without a rev */
  struct gp__usage *usage;    /* the memo's kept holds, when it has them (nodes.c) */
  const uint8_t *held;        /* with them: per view slot, whether its job's hold is kept */
  gp__scratch *scratch;       /* the memo's, or own_scratch */
  gp__scratch own_scratch;
  bool view_known;      /* the memo's view: its nodes and pools were checked before */

  gp__qtree tree;
  gp__job *jobs;        /* one per view job */
  gp__node *nodes;      /* one per view node */

  /* Per GPU (node.gpu_base + i). */
  int n_gpus_total;
  int *gpu_used;        /* shared: milli used; timeslice: replicas used */
  int64_t *gpu_mem_used;
  uint8_t *gpu_mig_busy; /* bit k: MIG instance k in use */
  gp_time *gpu_resv_until; /* reservation time when the GPU is in node.resv */
  uint32_t *dom;        /* NVLink domain masks */

  /* GPU models, sorted by name (ids are positions). */
  int n_models;
  const char **model_names;
  gp__strmap model_map;
  bool model_map_shared; /* the memo's node snapshot owns it */

  /* topology.block groups: block id -> nodes (CSR), free whole GPUs per block. */
  int n_blocks;
  int *block_start, *block_nodes, *block_free;

  /* Node pools: per tree queue, the pool it owns (itself or through an ancestor), or -1. */
  int *queue_pool;
  int n_slots;          /* 1 + n_pools */

  gp__index ix;
  bool indexed;         /* ix and block_free are live (after gp__nodes_index) */
  uint64_t use_gen;     /* changes whenever a node's use does, taken or given back (nodes.c) */
  uint64_t alloc_gen;   /* changes whenever a queue's allocation or lost GPUs do */
  int64_t max_gpu_mem;  /* largest GPU memory in the fleet, MiB */
  bool has_timeslice;   /* some up node has a healthy timeslice GPU (replicas for 1-GPU tasks) */

  /* Leaf lookups by queue-name pointer: callers that share one string per queue (the
   * simulator, the server) skip the hash; the answer never depends on the cache. */
  const char *qcache_ptr[1024]; /* slots: gp__ptr_slot(name, 10) */
  int qcache_val[1024];
  const char *hcache_ptr[64]; /* string hashes by pointer (shapes.c) */
  uint32_t hcache_val[64];
  const char *ccache_ptr[16]; /* priority class by name pointer (jobs.c) */
  int ccache_val[16];
  int *leaf_class;            /* per queue: default class resolved, -2 until first use */
  bool *path_limited;         /* per queue: it or an ancestor has a limit (jobs.c) */
  const char *mcache_ptr[16]; /* GPU model id by name pointer (nodes.c) */
  int mcache_val[16];

  /* Jobs by status, in view order (jobs.c), so later passes need not scan the view. */
  int *running, n_running;   /* RUNNING and STOPPING */
  gp__run *run;              /* per running position */
  int *eligible, n_eligible; /* pending and schedulable */
  gp__lists lists;           /* with a memo: the memo's, lent (gp__lists) */
  uint64_t *fresh_bits;      /* with a memo: a bit per view slot classified afresh, i.e. not
                                replayed (its rev changed) */
  int n_fresh, n_journal, n_kept_toks;
  /* Classification's queue sums while every amount is a whole number (jobs.c): per tree
   * queue, GPUs held; per leaf, GPUs asked or held. */
  int64_t *alloc_int, *demand_int;
  bool sums_inexact;
  int n_ended;               /* jobs that end in this plan */

  int n_stopping;
  int run_min_prio;     /* lowest priority of a preemptible running job (INT_MAX: none) */

  /* Capacity for fair share (nodes.c), and the cheapest eligible request (early stop). */
  double capacity;
  int min_whole;        /* smallest whole-GPU per-task request among eligible jobs */
  bool other_eligible;  /* eligible fractional, MIG or CPU-only jobs exist */

  /* Only starts, preemptions, ended jobs, MIG changes and fair shares are wanted
   * (GP_SCHED_DECISIONS_ONLY): no reasons, no reservations in the plan. */
  bool decisions_only;
  bool mig_eligible;    /* some eligible job asks for a MIG instance */

  /* Backfill. */
  int n_resv;
  bool *leaf_has_resv;

  /* Preemption. */
  int preempt_attempts;
  bool preempt_possible;

  struct gp__shapes *shapes;  /* shapes.c: request shapes and failed placement keys */
  int keys_alive;             /* placement keys with jobs left that have not failed */
  struct gp__preempt *pre;    /* preempt.c's scratch */
  struct gp__shared *sh;      /* shared.c's state */
  struct gp__resv_cache *rcache; /* backfill.c's release events per node */
  const char **limit_msg;     /* per queue: "Queue X is at its limit" (made on first use) */

  /* Job ids (built on first need, for dependencies). */
  bool ids_built;
  gp__strmap ids;

  /* Jobs this plan starts, per node (for backfill): chains of start indexes. */
  int *started_head;    /* per node: first entry or -1 (allocated on the first start) */
  int *started_next, *started_start;
  size_t started_n, started_cap;

  /* Plan under construction. */
  gp_arena *arena;
  gp__vec starts, preemptions, reservations, migs;
  gp__vec victims;      /* ints: every job chosen as a victim (or stopping job counted on),
                           in the order chosen (preempt.c; backfill.c reads it) */
  uint64_t share_round;
  struct gp_share_mix *share_mix;
} gp__ctx;

void gp__journal_add(gp__ctx *c, int j);

/* ctx.jobs[j], about to be written: with a memo the slot is journaled, so that the step's
 * end puts it back as classification left it (memo.c). */
static inline gp__job *gp__job_mut(gp__ctx *c, int j) {
  if (c->memo && c->memo->journaled[j] != c->memo->step) gp__journal_add(c, j);
  return &c->jobs[j];
}

/* Is placement k of job the first on its node? (Per-node lists count a job once.) */
static inline bool gp__first_on_node(const gp_job *job, int k) {
  for (int m = 0; m < k; m++)
    if (job->placements[m].node == job->placements[k].node) return false;
  return true;
}

/* Validates policy and view and builds the queue tree (validate.c). */
int gp__validate(gp__ctx *c);
/* The memo (memo.c): use m (may be NULL) for this step; note that the view passed. */
void gp__memo_begin(gp__ctx *c, struct gp_sched_memo *m);
void gp__memo_view_checked(gp__ctx *c);
/* Puts back the slots this step journaled and takes back the lists lent to it (memo steps;
 * called when the step ends). */
void gp__memo_restore_jobs(gp__ctx *c);
int gp__validate_job(gp__ctx *c, int j);

/* Jobs (jobs.c). */
void gp__job_wait(gp__ctx *c, int j, gp_pending_reason r, const char *msg);
void gp__job_end(gp__ctx *c, int j, gp_end_reason r, const char *msg);
int gp__class_of(const gp__ctx *c, const gp_job *job, int leaf); /* class index or -1 */
int gp__classify_jobs(gp__ctx *c);
/* Adds `gpus` to the allocation of `leaf` and all its ancestors (negative to remove). */
void gp__queue_add_alloc(gp__ctx *c, int leaf, double gpus);
/* The first queue on leaf's path whose limit `extra` GPUs more would break, or -1. */
int gp__queue_over_limit(const gp__ctx *c, int leaf, double extra);

/* Nodes (nodes.c). */
int gp__nodes_init(gp__ctx *c);
void gp__nodes_snap_free(struct gp__nodes_snap *s);
size_t gp__nodes_snap_bytes(const struct gp__nodes_snap *s);
/* Builds the node index from the free capacity left after running jobs. */
void gp__nodes_index(gp__ctx *c);
int gp__model_id(const gp__ctx *c, const char *model);
bool gp__node_has_labels(const gp_node *n, int n_sel, const gp_label *sel);
/* Takes / gives back one task's resources (commit and undo). */
void gp__take(gp__ctx *c, const gp__req *r, const gp__fit *f);
void gp__give(gp__ctx *c, const gp__req *r, const gp__fit *f);
/* Applies a running job's placements to the free capacity. */
void gp__hold_placements(gp__ctx *c, int j);
/* The fast path of that for whole GPUs (mask) of a node where every GPU is exclusive,
 * before the index exists; false (nothing done) when it does not apply. */
bool gp__hold_whole(gp__ctx *c, int node, uint32_t mask, int64_t cpu, int64_t mem);

/* Placement (placement.c, gang.c). */
void gp__req_init(gp__ctx *c, int j, gp__req *r);
/* Fills in a request of which only `job` is set, once. */
void gp__req_need(gp__ctx *c, gp__req *r);
/* Can task r go on node i, given `extra` GPUs (and cpu/mem) counted as freed? On true,
 * fills *f. */
bool gp__node_fit(gp__ctx *c, const gp__req *r, int node, uint32_t extra, int64_t extra_cpu,
                  int64_t extra_mem, gp__fit *f);
/* Best node for one task through the index, or false. */
bool gp__fit_task(gp__ctx *c, const gp__req *r, gp__fit *f);
/* Places all tasks of a job or none; on true the resources are taken and fits[] filled
 * (r->tasks entries). With commit false the resources are given back before returning. */
bool gp__place_job(gp__ctx *c, const gp__req *r, gp__fit *fits, bool commit);
uint32_t gp__choose_gpus(const gp__ctx *c, int node, uint32_t avail, int want);
/* Records a start in the plan and updates queues. fits: r->tasks entries. */
void gp__start_job(gp__ctx *c, const gp__req *r, const gp__fit *fits);

/* Dependencies (deps.c): 0 satisfied, 1 waiting (msg set), -1 never (msg set). */
int gp__deps_check(gp__ctx *c, int j, const char **msg);

/* Feasibility of a request on the fleet (feasible.c). */
enum gp__feas { GP__FEAS_OK = 0, GP__FEAS_DOWN, GP__FEAS_MODEL_DOWN, GP__FEAS_NEVER, GP__FEAS_MODEL_UNKNOWN };
int gp__feasible(gp__ctx *c, int j);

/* Request shapes and placement keys (shapes.c). */
int gp__shape_of(gp__ctx *c, int j);
/* Victims (preempt.c, victim_order.c): may running position r be preempted now? The
 * victim-able jobs' running positions in victim order into order[]; returns how many. */
bool gp__victim_able(const gp__ctx *c, int r);
int gp__victim_order(gp__ctx *c, int *order);
void gp__victims_forget(struct gp__victims *v);
void gp__victims_free(struct gp__victims *v);
size_t gp__victims_bytes(const struct gp__victims *v);

/* Shape tokens: a name for job j's raw request key that lasts across steps (created on
 * first use in *tk); job j's shape through its token in memo step `step`. */
int gp__shape_token(gp__ctx *c, int j, struct gp__tokens **tk);
int gp__shape_by_token(gp__ctx *c, int j, struct gp__tokens *tk, int tok, uint64_t step);
int gp__tokens_count(const struct gp__tokens *tk);
size_t gp__tokens_bytes(const struct gp__tokens *tk);
void gp__tokens_free(struct gp__tokens *tk);
int gp__shape_feas(gp__ctx *c, int shape);
void gp__shape_set_feas(gp__ctx *c, int shape, int v);
/* which: 0 = placement ignoring reservations failed, 1 = waiting-for-stopping check failed. */
bool gp__shape_flag(gp__ctx *c, int shape, int which);
void gp__shape_set_flag(gp__ctx *c, int shape, int which);
bool gp__shape_fits_free(const gp__ctx *c, int shape);
void gp__shape_set_fits_free(gp__ctx *c, int shape);
void gp__keys_add(gp__ctx *c, int j, gp_time end);
/* Sets the shape and placement key of an eligible job the memo's replay left without them
 * (jobs.c keep_eligible): called before the step looks at the job. */
void gp__job_keyed(gp__ctx *c, int j);
/* n eligible jobs of shape t at once, the earliest ending at `end` (their keys are set
 * later, by gp__job_keyed). */
void gp__keys_add_n(gp__ctx *c, int t, int n, gp_time end);
void gp__keys_consider(gp__ctx *c, int j);
bool gp__keys_failed(const gp__ctx *c, int j);
void gp__keys_fail(gp__ctx *c, int j);
void gp__shapes_done(gp__ctx *c);
void gp__shapes_free(struct gp__shapes *s);

/* Preemption (preempt.c): true when victims were chosen (recorded in the plan). */
bool gp__try_preempt(gp__ctx *c, gp__req *r);
bool gp__preempt_may_act(gp__ctx *c, int leaf, double min_gpus, int max_prio);
/* True when the job would fit once the STOPPING jobs are gone. */
bool gp__fits_after_stopping(gp__ctx *c, const gp__req *r);
void gp__preempt_setup(gp__ctx *c);
void gp__preempt_done(gp__ctx *c);

/* Fractions, memory shares, time-slices and MIG instances (shared.c). */
void gp__shared_setup(gp__ctx *c);
void gp__shared_done(gp__ctx *c);
bool gp__node_static_ok(const gp__ctx *c, const gp__req *r, int node);
bool gp__node_fit_shared(gp__ctx *c, const gp__req *r, int node, gp__fit *f);
bool gp__fit_shared(gp__ctx *c, const gp__req *r, gp__fit *f);
/* A whole-GPU task of one GPU on a timeslice replica (the fullest GPU with a free replica),
 * for when no exclusive or shared GPU fits it. */
bool gp__fit_replica(gp__ctx *c, const gp__req *r, gp__fit *f);
/* Dynamic MIG: a MIG job that found no free instance waits for a re-partition planned in
 * this step (claiming one of its new instances, or planning one). True when it does. */
bool gp__mig_wait(gp__ctx *c, gp__req *r);

/* Backfill (backfill.c): computes and records a reservation for a blocked job. */
void gp__reserve(gp__ctx *c, gp__req *r);
void gp__backfill_done(gp__ctx *c);

/* Ordering (order.c). */
typedef struct gp__order gp__order;
gp__order *gp__order_new(gp__ctx *c);
void gp__order_free(gp__order *o);
/* Next job to consider, or -1. */
int gp__order_next(gp__order *o);
/* The memo's kept holds (nodes.c): is slot j's hold in them; give back the one of a slot
 * that changed (old: its record as the memo kept it); keep a remembered job's one-placement
 * hold; close classification (slots past the view's end give theirs back). */
void gp__usage_free(struct gp__usage *u);
size_t gp__usage_bytes(const struct gp__usage *u);
void gp__usage_drop(gp__ctx *c, int j, const gp__run *old);
void gp__usage_keep(gp__ctx *c, int j, const gp__run *ru);
/* The held jobs on node (their memo run records): the first slot, the next, -1 after the
 * last (none without kept holds). Per node, the earliest and latest gp__run_end among
 * them (GP__NEVER and INT64_MIN for none); false without kept holds. */
int gp__usage_first(const gp__ctx *c, int node);
int gp__usage_next(const gp__ctx *c, int j);
bool gp__usage_bounds(const gp__ctx *c, const gp_time **lo, const gp_time **hi);
void gp__usage_end(gp__ctx *c, const gp__run *old_runs);
/* The memo's kept order (order.c). */
void gp__kept_order_free(struct gp__kept_order *k);
size_t gp__kept_order_bytes(const struct gp__kept_order *k);
/* The segment (leaf, or 0 for a global order) the next job comes from, or -1. */
int gp__order_top(const gp__order *o);
/* Over the jobs still to come from segment s that ask for whole GPUs or CPU only (what
 * preemption acts for): the fewest GPUs asked, the highest priority, and whether any asks
 * for whole GPUs (what reservations are for). False when there is none. Computed once per
 * segment: later, fewer jobs remain, so the answer stays a bound. */
bool gp__order_rest(gp__order *o, int s, double *min_gpus, int *max_prio, bool *whole);
/* Takes up to k jobs of segment s off the order unconsidered; returns how many. */
int gp__order_skip(gp__order *o, int s, int k);
/* The job's leaf got more allocation: re-evaluate queue order. */
void gp__order_update(gp__order *o, int leaf);

/* Sentences for the common reasons: string literals, so 100,000 pending jobs share them
 * instead of each getting a formatted copy. Rare reasons get formatted messages. */
#define GP__MSG_HELD "The job is held; it runs once it is released."
#define GP__MSG_DEPENDENCY "The job waits for the jobs it depends on."
#define GP__MSG_RESOURCES "Not enough free GPUs, CPU or memory that it may use right now."
#define GP__MSG_PRIORITY "Jobs ahead of it in the queue order are waiting for resources."
#define GP__MSG_RESERVATION \
  "Starting it now would delay a job that holds a reservation for those GPUs."
#define GP__MSG_NO_MATCH_DOWN \
  "Nodes that could run it exist but none of them is up, healthy and in a GPU mode it can use right now."
#define GP__MSG_MODEL_DOWN \
  "No node with the GPU model it asks for is up and healthy right now."
#define GP__MSG_WAIT_PREEMPT "Jobs are being stopped to make room for it."
#define GP__MSG_NEVER_NODES "No node in the cluster could ever satisfy this request."
#define GP__MSG_MODEL_UNKNOWN "No node in the cluster has the GPU model it asks for."
#define GP__MSG_MIG_REPARTITION "A GPU is being re-partitioned into MIG instances for it."
#define GP__MSG_NO_QUEUE "The job names a queue that does not exist."
#define GP__MSG_NOT_LEAF "The job names a parent queue; jobs go to leaf queues."
#define GP__MSG_NO_CLASS "The job names a priority class that does not exist."

#endif
