/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster model the scheduler core reasons about: GPUs (whole, shared, time-sliced,
 * MIG), nodes, reserved node pools, hierarchical queues, priority classes, jobs and the
 * scheduling policy. A gp_view is a snapshot of all of it, built by the caller (server,
 * simulator, `gpool plan`); the core only reads it.
 *
 * Ownership: every pointer in a view is borrowed from the caller and must outlive the
 * gp_sched_step() call that reads it. Indexes (node, job, queue) are positions in the
 * view's arrays. Units are in the field names: *_mib, *_milli, times in seconds.
 *
 * This header is pure data: no I/O, no clock, no threads (see tests/core/purity_test.sh). */
#ifndef GP_CORE_MODEL_H
#define GP_CORE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

typedef int64_t gp_time; /* seconds on the caller's clock (wall clock or simulated) */

#define GP_GPU_MILLI 1000        /* compute capacity of one GPU, in milli-GPU */
#define GP_MAX_NODE_GPUS 32      /* gp_placement.gpu_mask has one bit per GPU of a node */
#define GP_MAX_MIG_INSTANCES 7   /* per GPU, per NVIDIA's MIG User Guide */
#define GP_NO_LIMIT (-1.0)       /* gp_queue.limit_gpus when the queue has no ceiling */
#define GP_MAX_NODE_IMAGES 1280  /* gp_node.images entries at most (images and models) */

/* ---- GPUs and nodes ---- */

typedef enum gp_node_state {
  GP_NODE_UP = 0,
  GP_NODE_DOWN,   /* agent gone: nothing runs, nothing is placed */
  GP_NODE_DRAIN,  /* running jobs finish, nothing new is placed */
  GP_NODE_CORDON, /* like drain, set by an admin for maintenance */
} gp_node_state;

typedef enum gp_capacity {
  GP_CAP_ON_DEMAND = 0,
  GP_CAP_RESERVED,
  GP_CAP_SPOT,
  GP_CAP_ON_PREM,
} gp_capacity;

typedef enum gp_gpu_health {
  GP_GPU_HEALTHY = 0,
  GP_GPU_DRAINED,   /* taken out by the health policy or an admin; running work may finish */
  GP_GPU_FAILED,    /* unusable */
} gp_gpu_health;

typedef enum gp_share_mode {
  GP_SHARE_EXCLUSIVE = 0, /* whole GPUs only */
  GP_SHARE_SHARED,        /* fractional jobs share compute (milli) and memory */
  GP_SHARE_TIMESLICE,     /* offered as `timeslice_replicas` replicas, no isolation */
  GP_SHARE_MIG,           /* partitioned into MIG instances (gp_gpu.mig) */
} gp_share_mode;

/* One MIG instance of a partitioned GPU, e.g. profile "3g.40gb" starting at slot 4. */
typedef struct gp_mig_instance {
  const char *profile;    /* "1g.10gb", ... as in the MIG User Guide */
  int start_slot;         /* compute-slice placement slot, 0..6 */
  const char *uuid;       /* "MIG-..." when known, else NULL */
} gp_mig_instance;

typedef struct gp_gpu {
  const char *uuid;       /* "GPU-..." when known, else NULL */
  gp_gpu_health health;
  gp_share_mode mode;
  int timeslice_replicas; /* GP_SHARE_TIMESLICE: N >= 2 */
  int nvlink_domain;      /* GPUs of one node with equal domain share NVLink; -1: none */
  int64_t mem_mib;        /* 0: the node's gpu_mem_mib */
  int n_mig;
  const gp_mig_instance *mig; /* GP_SHARE_MIG: the current layout */
} gp_gpu;

typedef struct gp_label {
  const char *key;
  const char *value;
} gp_label;

typedef struct gp_node {
  const char *name;
  const char *model;      /* GPU model, e.g. "H100-80GB"; all GPUs of a node share it */
  int64_t gpu_mem_mib;    /* memory of one GPU of this model */
  int n_gpus;             /* <= GP_MAX_NODE_GPUS */
  const gp_gpu *gpus;     /* n_gpus entries; NULL means n_gpus healthy exclusive GPUs */
  int64_t cpu_milli;      /* allocatable CPU, 1000 per core */
  int64_t mem_mib;        /* allocatable host memory */
  int n_labels;
  const gp_label *labels; /* e.g. topology.block=b1, pool=inference */
  gp_capacity capacity;
  gp_node_state state;
  /* What the node holds that a job may prefer: the hashes of its container images'
   * references and of its models' names (the caller's, e.g. gp_proto_image_hash and
   * gp_proto_model_hash, which never share a hash), in one set, strictly ascending, at most
   * GP_MAX_NODE_IMAGES. Placement prefers a node holding a job's image and model
   * (gp_request.image, .model) over an equal one without: a preference, never a filter.
   * Part of what gp_view.rev covers. */
  int n_images;
  const uint64_t *images;
} gp_node;

/* A kind of node a provider can add (the server's `node_templates:`, the simulator's
 * templates file): its shape as a node (name: the template's name; state ignored) and how
 * many of it may exist. A job that only such nodes could hold waits for them instead of
 * ending as impossible; src/core/scale.h proposes creating them. */
typedef struct gp_template {
  gp_node node;
  int max_nodes;
} gp_template;

/* ---- Queues, pools, priority classes ---- */

/* How a queue's jobs meet spot capacity (the jobs' own allow_spot still decides whether
 * they may run there at all). */
typedef enum gp_spot_pref {
  GP_SPOT_NEUTRAL = 0, /* spot nodes are like others to the placement policy */
  GP_SPOT_PREFER,      /* spot nodes first: cheap, requeueable training */
  GP_SPOT_AVOID,       /* spot nodes only when nothing else fits now */
  GP_SPOT_NEVER,       /* never on spot, whatever the job allows (inference) */
} gp_spot_pref;

/* A per-user limit of a leaf queue (Slurm's association and QOS limits): what one user's
 * jobs in that queue may hold. `user` "*" is every user without an entry of their own. */
typedef struct gp_user_limit {
  const char *user;
  double max_gpus;             /* GPUs its running jobs may hold; GP_NO_LIMIT: none */
  double max_gpu_hours;        /* GPU-hours per period (gp_usage.period_gpu_hours); GP_NO_LIMIT */
} gp_user_limit;

/* A queue in the tree "org/team/project". Parents are implied by names: a view may list
 * only leaves (a missing parent gets deserved = sum of its children, no limit, weight 1). */
typedef struct gp_queue {
  const char *name;            /* full path, '/'-separated */
  double deserved_gpus;        /* guaranteed quota; fractions allowed */
  double limit_gpus;           /* hard ceiling; GP_NO_LIMIT for none */
  double weight;               /* share of what nobody is guaranteed; >= 0, default 1. 0:
                                  only what no queue of positive weight wants, and its
                                  jobs come after its siblings' once past its deserved */
  const char *default_priority;/* priority class name, or NULL: policy default */
  gp_time default_time_limit;  /* seconds, 0: the policy's default */
  gp_spot_pref spot;
  double spot_share;           /* (0, 1]: at most this share of the GPUs its jobs hold may be
                                  on spot capacity; 0: no cap */
  int n_user_limits;           /* leaf queues: limits per user (gp_user_limit) */
  const gp_user_limit *user_limits;
} gp_queue;

/* Nodes carrying label `key=value` are reserved for `queue` (and its sub-queues). Other
 * queues' jobs land there only as preemptible borrowers when `lend` is true. */
typedef struct gp_pool {
  const char *name;
  const char *queue;
  gp_label selector;
  bool lend;
} gp_pool;

typedef struct gp_priority_class {
  const char *name;
  int priority;        /* higher runs first */
  bool preemptible;
} gp_priority_class;

/* ---- Jobs ---- */

typedef enum gp_job_state {
  GP_JOB_PENDING = 0,
  GP_JOB_RUNNING,
  GP_JOB_HELD,
  GP_JOB_STOPPING,    /* preempted or cancelled, inside its grace period: still holds GPUs */
  GP_JOB_COMPLETED,   /* exit code 0 */
  GP_JOB_FAILED,      /* non-zero exit, node failure without requeue, ... */
  GP_JOB_CANCELLED,
  GP_JOB_PREEMPTED,   /* preempted and not requeueable */
  GP_JOB_TIMEOUT,     /* hit its time limit */
} gp_job_state;

/* Where one task of a job runs: a node and the GPUs it holds there. */
typedef struct gp_placement {
  int node;             /* index into gp_view.nodes */
  uint32_t gpu_mask;    /* bit i: GPU i of the node */
  int gpu_milli;        /* per GPU in the mask: 1000 for whole GPUs, less for a share */
  int64_t gpu_mem_mib;  /* per GPU: memory reserved on a shared GPU (0 for whole/MIG) */
  int mig_instance;     /* index into the GPU's gp_gpu.mig, or -1 */
} gp_placement;

/* What a job asks for. Exactly one of: whole GPUs (gpus_per_task >= 1), a fraction
 * (gpu_milli in 1..999, one GPU per task), memory on a shared GPU (gpu_mem_mib > 0), or a
 * MIG instance (mig_profile). gpus_per_task == 0 and none of those: a CPU-only task. */
typedef struct gp_request {
  int tasks;                  /* gang size: all tasks start together or none; >= 1 */
  int max_tasks_per_node;     /* at most this many of its tasks on one node; 0: no bound */
  int nodes;                  /* on exactly this many distinct nodes (Slurm's -N, with
                                 max_tasks_per_node: -N 2 --ntasks-per-node 4 is 4 on each
                                 of 2 nodes); 0: any number */
  int gpus_per_task;          /* whole GPUs per task */
  int gpu_milli;              /* fraction of one GPU, 1..999; 0 when not fractional */
  int64_t gpu_mem_mib;        /* memory share of one GPU; 0 when not asked by memory */
  const char *mig_profile;    /* e.g. "1g.10gb"; NULL when not MIG */
  int64_t min_gpu_mem_mib;    /* only GPUs with at least this much memory */
  int64_t cpu_milli;          /* per task */
  int64_t mem_mib;            /* host memory per task */
  int n_gpu_models;
  const char *const *gpu_models; /* accepted models; none: any */
  int n_node_selector;
  const gp_label *node_selector; /* labels a node must carry */
  bool allow_spot;            /* may run on spot capacity */
  bool exclusive;             /* whole nodes: shares no node with another job (Slurm's
                                 --exclusive); its own tasks may share one */
  uint64_t image;             /* hash of its container image's reference, as the nodes'
                                 gp_node.images; 0: none. Among nodes the placement policy
                                 ranks equal, one holding it comes first */
  uint64_t model;             /* hash of the model it serves, as the nodes' gp_node.images
                                 (a disjoint hash space from the images'); 0: none. A node
                                 holding more of {image, model} comes first among equals */
  bool spread;                /* a one-node task goes to the least-used node that fits,
                                 whatever the policy (a service's replicas: apart, so a
                                 node lost takes few of them) */
} gp_request;

typedef struct gp_job {
  const char *id;
  const char *queue;          /* leaf queue name */
  const char *user;
  const char *priority_class; /* NULL: the queue's default, then the policy's */
  gp_request req;
  gp_job_state state;
  gp_time submitted_at;
  gp_time started_at;         /* RUNNING/STOPPING */
  gp_time last_checkpoint_at; /* 0: never reported */
  gp_time time_limit;         /* seconds; 0: queue or policy default */
  int exit_code;              /* ended jobs */
  bool requeue;               /* a preempted or node-lost job returns to PENDING */
  int restarts;
  gp_time begin_at;           /* not started before this (epoch s, as gp_view.now); 0: any time */
  int n_placements;           /* RUNNING/STOPPING: one per task */
  const gp_placement *placements;
  /* Dependencies, by job id. */
  int n_after, n_after_ok, n_after_any;
  const char *const *after;     /* start once these have started (Slurm's `after`) */
  const char *const *after_ok;  /* start once these ended COMPLETED; never if they failed */
  const char *const *after_any; /* start once these ended, in any way */
  int n_after_not_ok;
  const char *const *after_not_ok; /* start once these ended otherwise than COMPLETED;
                                      never if they completed (Slurm's `afternotok`) */
  /* Slurm's `singleton`: start only when no other job of the same name and user runs
   * and none submitted before it waits (so at most one such job runs at a time). */
  bool singleton;
  const char *name;             /* the job's name (singleton's key with user); NULL: none */
  /* A stand-in that is in the view only for the jobs that depend on it (a job array's
   * summary, an element not made a job yet): never scheduled, holds nothing; its state,
   * and started_at > 0 for `after`, answer the dependencies. */
  bool dep_only;
} gp_job;

/* ---- Policy ---- */

typedef enum gp_placement_policy {
  GP_PLACE_BINPACK = 0,  /* fill the most-used node that fits */
  GP_PLACE_SPREAD,       /* the least-used node (inference replicas) */
} gp_placement_policy;

/* How fractional requests pick a GPU on shared nodes (see src/core/share/). */
typedef enum gp_share_policy {
  GP_SHARE_POLICY_GPOOL = 0, /* gpool's default */
  GP_SHARE_POLICY_FGD,       /* fragmentation gradient descent (Weng et al., ATC'23) */
  GP_SHARE_POLICY_BESTFIT,
  GP_SHARE_POLICY_GPUPACKING,
  GP_SHARE_POLICY_DOTPRODUCT,
  GP_SHARE_POLICY_RANDOM,
} gp_share_policy;

typedef enum gp_order_policy {
  GP_ORDER_FAIRSHARE = 0, /* queues by allocated/fair share, then priority, then age */
  GP_ORDER_FIFO,          /* one strict queue by submit time, no quotas */
  GP_ORDER_PRIORITY,      /* priority then age, no quotas (Slurm-like with backfill) */
  GP_ORDER_SJF,           /* shortest time limit first (reference bound in the simulator) */
} gp_order_policy;

/* A pending job's keys in the order `order` considers jobs (within a leaf under fair share,
 * over all jobs otherwise): the smaller (k1, k2) first, ties to the job that came first
 * (gp_order_id_cmp). From
 * its priority (its class's), its time limit (0: none) and its submit time. The scheduler
 * orders by these, and the server ranks a queue's jobs by them for the API. */
typedef struct gp_order_keys {
  int64_t k1, k2;
} gp_order_keys;
gp_order_keys gp_order_keys_of(gp_order_policy order, int priority, int64_t limit, int64_t submitted);
/* Jobs with equal keys, in the order they came (<0: a first, as strcmp). Submit times are
 * whole seconds: ids settle the rest. An id of decimal digits without a leading zero (the
 * server's job numbers, given in the order jobs arrive) compares as a number, so 9 comes
 * before 10; such ids come before any other, and other ids compare as text. */
int gp_order_id_cmp(const char *a, const char *b);

typedef struct gp_policy {
  gp_placement_policy placement;
  gp_share_policy share;
  gp_order_policy order;
  bool backfill;
  bool reclaim;                 /* queues below fair share take back lent GPUs */
  bool preemption;              /* priority preemption inside a queue */
  bool dynamic_mig;             /* re-partition idle MIG GPUs for pending MIG demand */
  gp_time min_runtime;          /* a job younger than this is never a victim */
  gp_time default_time_limit;   /* for backfill, when job and queue have none; 0: none */
  const char *default_priority; /* class for jobs and queues that name none */
  int n_priority_classes;       /* 0: the defaults (gp_default_priority_classes) */
  const gp_priority_class *priority_classes;
  uint64_t seed;                /* for policies with randomness (GP_SHARE_POLICY_RANDOM) */
  /* Fair share between the users of a leaf queue (docs/scheduling.md): inside one
   * priority, a job's place is its user's load (decayed usage from gp_view.usage, GPUs
   * running, GPUs of the user's jobs ahead of it) rather than its age alone. */
  bool fair_users;
} gp_policy;

/* Past usage, decayed (docs/scheduling.md "Fair share over time"), as GPU-equivalents: what
 * a steady allocation of that many GPUs would have left. The caller computes it (the
 * server from its store, the simulator from its replay); the core only reads it. */
typedef struct gp_usage {
  const char *queue;  /* a queue of the tree: leaf or parent (implied parents too) */
  const char *user;   /* NULL: the queue's own usage; else that user's in the leaf `queue` */
  double gpus;        /* >= 0 and finite */
  double period_gpu_hours; /* user entries: GPU-hours used in the current limit period, what
                              gp_user_limit.max_gpu_hours is checked against; >= 0 */
} gp_usage;

/* An advance reservation (docs/scheduling.md, "Advance reservations"): whole nodes fenced
 * over [start, end). Jobs inside it (of `queue` or one of its sub-queues, or of one of
 * `users`) may use its nodes at any time and are the only ones that may during the window;
 * a job outside it starts on them only if it ends (now + its time limit) by `start`, so a
 * job without a time limit never does while the reservation lies ahead. A maintenance
 * window (`maint`) also stops, at its start, the jobs outside it that still run there
 * (plan preemptions of kind GP_PREEMPT_MAINT). One that has ended (end <= now) is ignored. */
#define GP_MAX_VIEW_RESERVATIONS 64
typedef struct gp_reservation {
  const char *name;
  gp_time start, end;          /* start < end */
  int n_nodes;
  const int *nodes;            /* indexes into gp_view.nodes */
  const char *queue;           /* NULL: none */
  int n_users;
  const char *const *users;
  bool maint;
} gp_reservation;

/* ---- The view ---- */

typedef struct gp_view {
  int n_nodes;
  const gp_node *nodes;
  int n_queues;
  const gp_queue *queues;
  int n_pools;
  const gp_pool *pools;
  int n_templates;
  const gp_template *templates; /* nodes a provider could add; none: a fixed fleet */
  int n_jobs;
  const gp_job *jobs;       /* every job the caller knows that matters: pending, held,
                               running, stopping, and ended ones that others depend on */
  /* For gp_sched_step_memo (sched.h); gp_sched_step ignores both. rev changes whenever
   * the nodes, queues, pools or the policy change; 0: remember nothing. job_revs[j]
   * changes whenever anything in jobs[j] changes or another job takes slot j (one counter
   * shared by all jobs does both); 0: never remember that slot. An array apart from the
   * jobs, so that telling which jobs changed reads 8 bytes per job, not a view entry. */
  uint64_t rev;
  const uint64_t *job_revs; /* n_jobs entries, or NULL: remember no job */
  /* Decayed past usage per queue and per (leaf queue, user); none: no history. Part of
   * what `rev` covers: a caller that changes it changes rev. */
  int n_usage;
  const gp_usage *usage;
  /* Advance reservations, at most GP_MAX_VIEW_RESERVATIONS; part of what `rev` covers. */
  int n_reservations;
  const gp_reservation *reservations;
} gp_view;

/* Fills *p with the defaults a user would expect: bin-pack, gpool sharing, fair-share
 * order, backfill, reclaim and preemption on, dynamic MIG on, default classes. */
void gp_policy_init(gp_policy *p);

/* The default priority classes of DESIGN.md: inference 100, interactive 80 (neither
 * preemptible), training 50, batch 20, opportunistic 0. */
extern const gp_priority_class gp_default_priority_classes[];
extern const int gp_n_default_priority_classes;

/* The class called `name` among the policy's classes (the defaults when it lists none),
 * or NULL. */
const gp_priority_class *gp_priority_class_find(const gp_policy *p, const char *name);

/* A queue name, the one rule for every place that names a queue (config, snapshots, the
 * API, the scheduler's view): '/'-separated segments of letters, digits, '.', '_' and '-',
 * none empty, "." or "..", at most GP_MAX_QUEUE_NAME bytes in all. So a name is safe in a
 * URL path, a file name, a metric label and a log line as it is. */
#define GP_MAX_QUEUE_NAME 256
#define GP_QUEUE_NAME_RULE                                                                     \
  "a queue name is a path like org/team/project: '/'-separated parts of letters, digits, "    \
  "'.', '_' and '-' (no empty part, no \".\" or \"..\"), at most 256 bytes"
bool gp_queue_name_ok(const char *name);

/* Enum names as they appear in files and the API ("pending", "drain", "spot", ...) and
 * their parsers (return 0 and set *ret, or GP_EINVAL). */
const char *gp_job_state_name(gp_job_state s);
int gp_job_state_parse(const char *s, gp_job_state *ret);
const char *gp_node_state_name(gp_node_state s);
int gp_node_state_parse(const char *s, gp_node_state *ret);
const char *gp_capacity_name(gp_capacity c);
int gp_capacity_parse(const char *s, gp_capacity *ret);
const char *gp_spot_pref_name(gp_spot_pref p);
int gp_spot_pref_parse(const char *s, gp_spot_pref *ret);
const char *gp_gpu_health_name(gp_gpu_health h);
int gp_gpu_health_parse(const char *s, gp_gpu_health *ret);
const char *gp_share_mode_name(gp_share_mode m);
int gp_share_mode_parse(const char *s, gp_share_mode *ret);
const char *gp_placement_policy_name(gp_placement_policy p);
int gp_placement_policy_parse(const char *s, gp_placement_policy *ret);
const char *gp_share_policy_name(gp_share_policy p);
int gp_share_policy_parse(const char *s, gp_share_policy *ret);
const char *gp_order_policy_name(gp_order_policy p);
int gp_order_policy_parse(const char *s, gp_order_policy *ret);

/* True for states in which a job will never run again. */
bool gp_job_state_is_final(gp_job_state s);

#endif
