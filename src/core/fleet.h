/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet (nodes.c): what the nodes offer and what is taken of them during a step. Per
 * node and per GPU free capacity, GPU models, topology blocks, pools, NVLink domains, and
 * the index of nodes by free GPUs (node_index.h); with a memo, the holds of remembered
 * running jobs kept from the last step. The vocabulary of taking capacity (a request,
 * a fit, a running job's hold) is defined here, where capacity is taken and given back. */
#ifndef GP_CORE_FLEET_H
#define GP_CORE_FLEET_H

#include "core/ctx.h"
#include "core/memo.h"
#include "core/node_index.h"
#include "core/strmap.h"

/* Request kinds (gp_request says exactly one applies). */
enum gp__core_rkind { GP__R_WHOLE = 0, GP__R_FRACTION, GP__R_MIG, GP__R_CPU };

typedef struct gp__core_node {
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
  int tasks;            /* tasks of any job held on it (running or placed this step) */
  int excl;             /* of those, tasks of exclusive jobs (gp_request.exclusive) */
} gp__core_node;

/* One task's resources, derived from a job for the placement functions. */
typedef struct gp__core_req {
  int job;
  int kind;             /* enum gp__core_rkind */
  int tasks;
  int per_node;         /* at most this many tasks of the gang on one node; 0: no bound */
  int nodes;            /* the gang on exactly this many distinct nodes; 0: any number */
  int n_open;           /* distinct nodes among the n_placed tasks (gp__core_gang_opened) */
  int freed_tasks;      /* preemption: tasks its victims free on the node being checked, */
  int freed_excl;       /* and of them, tasks of exclusive jobs (gp__core_node_excl_ok) */
  const struct gp__core_fit *placed; /* the gang's tasks placed so far (n_placed of them), */
  int n_placed;         /* which per_node counts against; NULL/0 for a first task */
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
  bool ignore_ares;     /* pass over advance reservations (reservation.c: naming the one
                           that keeps a job waiting) */
  bool ready;           /* filled in (gp__core_req_init); else only `job` is set */
  uint64_t image;       /* the job's image hash (gp_request.image); 0: none */
  uint64_t model;       /* the job's model hash (gp_request.model); 0: none */
  int fit_kind;         /* GP__FIT_*: what a whole-GPU task may take (gang.c narrows it) */
  uint8_t spot_deny;    /* GP__DENY_*: capacity classes it may not use (spot.c) */
  uint8_t spot_first;   /* GP__DENY_* of a first, narrower try (its queue's preference) */
  uint8_t spot_why;     /* GP__SPOT_WHY_*: why spot is denied when it alone is */
} gp__core_req;

/* Capacity classes a request keeps off (spot.c): spot nodes, or all the others. */
enum { GP__DENY_SPOT = 1, GP__DENY_OTHER = 2 };
/* Why a job that allows spot may not use it now: its queue refuses spot, or is at its
 * share of GPUs on spot. */
enum { GP__SPOT_WHY_NONE = 0, GP__SPOT_WHY_NEVER, GP__SPOT_WHY_CAP };

/* What a whole-GPU task may take: whole GPUs, else a time-slice replica (a one-GPU task);
 * or only one of them, as the other tasks of its gang took. */
enum { GP__FIT_ANY = 0, GP__FIT_WHOLE, GP__FIT_REPLICA };

/* Where one task goes. */
typedef struct gp__core_fit {
  int node;
  uint32_t mask;
  int milli;            /* per GPU: 1000 whole, else the share */
  int64_t gpu_mem;
  int mig;              /* MIG instance or -1 */
  double score;         /* shared placements: the sharing policy's score (higher wins) */
} gp__core_fit;

/* A running or stopping job as classification read it (jobs.c), by position in
 * ctx.running: preemption and backfill use this instead of reading the view again. */
typedef struct gp__core_run {
  int node;             /* its only node (one placement), -1 when it has several */
  uint32_t whole;       /* one placement: the whole GPUs it holds there */
  int64_t cpu, mem;     /* per placement */
  gp_time started;
  gp_time since;        /* max(started, last checkpoint): work since then is lost */
  gp_time limit;        /* as gp__core_job.limit */
  double gpus;          /* as gp__core_job.gpus */
  double spot;          /* of those, the GPUs on spot nodes */
  int leaf, prio;       /* as gp__core_job */
  bool stopping, preemptible;
  bool exclusive;       /* as gp_request.exclusive */
} gp__core_run;

/* When a running job's record says it ends, before the step's now is applied (its end
 * is the later of the two): INT64_MIN for a stopping job (it ends now), GP__NEVER without
 * a time limit. */
static inline gp_time gp__core_run_end(const gp__core_run *ru) {
  if (ru->stopping) return INT64_MIN;
  if (ru->limit <= 0 || ru->started > GP__NEVER - ru->limit) return GP__NEVER;
  return ru->started + ru->limit;
}

typedef struct gp__core_fleet {
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
  gp__core_strmap model_map;
  bool model_map_shared; /* the memo's node snapshot owns it */
  const char *mcache_ptr[16]; /* GPU model id by name pointer */
  int mcache_val[16];

  /* topology.block groups: block id -> nodes (CSR), free whole GPUs per block. */
  int n_blocks;
  int *block_start, *block_nodes, *block_free;

  /* Node pools: per tree queue, the pool it owns (itself or through an ancestor), or -1. */
  int *queue_pool;
  int n_slots;          /* 1 + n_pools */

  gp__core_index ix;
  bool indexed;         /* ix and block_free are live (after gp__core_nodes_index) */
  uint64_t use_gen;     /* changes whenever a node's use does, taken or given back */
  int64_t max_gpu_mem;  /* largest GPU memory in the fleet, MiB */
  bool has_timeslice;   /* some up node has a healthy timeslice GPU (replicas for 1-GPU tasks) */
  double capacity;      /* GPUs for fair share: healthy GPUs of nodes not down */

  struct gp__core_usage *usage;    /* the memo's kept holds, when it has them */
  const gp__core_run *kept_runs;   /* with them, per view slot: the memo's record of its
                                      running job (that of a held slot is its hold) */
  const uint8_t *held;        /* with them: per view slot, whether its job's hold is kept */
} gp__core_fleet;

/* Nodes (nodes.c). */
int gp__core_nodes_init(gp__core_ctx *c);
void gp__core_fleet_done(gp__core_ctx *c);
void gp__core_nodes_snap_free(struct gp__core_nodes_snap *s);
size_t gp__core_nodes_snap_bytes(const struct gp__core_nodes_snap *s);
/* Builds the node index from the free capacity left after running jobs. */
void gp__core_nodes_index(gp__core_ctx *c);
int gp__core_model_id(const gp__core_ctx *c, const char *model);
bool gp__core_node_has_labels(const gp_node *n, int n_sel, const gp_label *sel);
/* Takes / gives back one task's resources (commit and undo). */
void gp__core_take(gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *f);
void gp__core_give(gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *f);
/* Applies a running job's placements to the free capacity. */
void gp__core_hold_placements(gp__core_ctx *c, int j);
/* The fast path of that for whole GPUs (mask) of a node where every GPU is exclusive,
 * before the index exists; false (nothing done) when it does not apply. */
bool gp__core_hold_whole(gp__core_ctx *c, int node, uint32_t mask, int64_t cpu, int64_t mem, bool excl);
/* The memo's kept holds (nodes.c): is slot j's hold in them; give back the one of a slot
 * that changed (old: its record as the memo kept it); keep a remembered job's one-placement
 * hold; close classification of memo step `step` (slots past the view's end give theirs
 * back). */
void gp__core_usage_free(struct gp__core_usage *u);
size_t gp__core_usage_bytes(const struct gp__core_usage *u);
void gp__core_usage_drop(gp__core_ctx *c, int j, const gp__core_run *old);
void gp__core_usage_keep(gp__core_ctx *c, int j, const gp__core_run *ru);
/* The held jobs on node (their memo run records): the first slot, the next, -1 after the
 * last (none without kept holds). Per node, the earliest and latest gp__core_run_end among
 * them (GP__NEVER and INT64_MIN for none); false without kept holds. */
int gp__core_usage_first(const gp__core_ctx *c, int node);
int gp__core_usage_next(const gp__core_ctx *c, int j);
bool gp__core_usage_bounds(const gp__core_ctx *c, const gp_time **lo, const gp_time **hi);
void gp__core_usage_end(gp__core_ctx *c, const gp__core_run *old_runs, uint64_t step);
/* The record of held slot j (from gp__core_usage_first / gp__core_usage_next). */
static inline const gp__core_run *gp__core_usage_run(const gp__core_ctx *c, int j) {
  return &c->fleet->kept_runs[j];
}

#endif
