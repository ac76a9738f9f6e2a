/* SPDX-License-Identifier: Apache-2.0 */
/* A job as the server holds it in memory (gp_srv_job) and where each of its tasks runs
 * (gp_srv_alloc). Part of the server's state (state.h, which includes this); its functions
 * are declared there and in the feature headers.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_JOB_H
#define GP_SERVER_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/idle.h"
#include "core/model.h"
#include "server/state/array.h"

struct gp_srv_jobmetrics;
struct gp_srv_steps;

/* Where one task of a running job is, and whether it has exited. */
typedef struct gp_srv_alloc {
  int node;             /* index into gp_srv_state.nodes */
  uint32_t gpu_mask;
  int gpu_milli;
  int64_t gpu_mem_mib;
  int mig_instance;
  bool exited;
  int exit_code;
  int64_t order_id;     /* the start order of this run (memory only; 0: unknown) */
  /* This task's part of the job's use figures on its node in this run (ledger.c; memory
   * only, sent again by the agent after a restart); < 0: unknown. */
  double used_gpu_s, energy_j;
  /* Since when (monotonic ms) and from which report on (gp_srv_node.report_seq) the node's
   * agent has not listed this task's job (node_report.c); 0: listed, or not yet checked. */
  int64_t unreported_ms;
  uint64_t unreported_seq;
} gp_srv_alloc;

typedef struct gp_srv_job {
  int64_t id;
  char idstr[24];
  gp_job_state state;
  uint64_t rev;         /* from gp_srv_state.revs at its last change: the scheduler's memo */
  /* The request, as validated at submission. */
  char *name, *queue, *user, *priority; /* priority: class name, NULL: queue's default */
  json_t *command;      /* array of strings (owned reference) */
  json_t *env;          /* object string -> string (owned reference) */
  char *workdir;
  int tasks, gpus, gpu_milli;
  int tasks_per_node;   /* at most this many tasks on one node; 0: no bound */
  int nodes;            /* on exactly this many distinct nodes (Slurm's -N); 0: any */
  int64_t gpu_mem_mib;
  char *mig;
  int n_gpu_types;
  char **gpu_types;
  int64_t cpu_milli, mem_mib;
  int n_selector;
  gp_label *selector;   /* strings owned */
  bool allow_spot;
  bool exclusive;       /* whole nodes: no other job on its nodes (--exclusive) */
  char *model;          /* the model it serves (protocol/model.h), NULL: none; placement
                           prefers a node whose models_dir holds it */
  char **partitions;    /* submission only (Slurm's -p a,b): queues to try in turn; not stored */
  int n_partitions;
  int64_t time_limit;
  bool requeue;
  int grace_s;
  char *signal;         /* "TERM", "USR1", ... */
  /* Slurm's batch options (jobopts.c). */
  char *warn_signal;    /* Slurm's --signal=[B:]SIG@T: SIG ("USR1"), NULL: none... */
  int warn_before_s;    /* ...sent this long before the time limit... */
  bool warn_batch;      /* ...to the job's main process only (B:), else its process group */
  int64_t begin_at;     /* epoch s before which it does not start (--begin); 0: any time */
  char *output, *error; /* -o/--error file patterns (protocol/outpath.h), NULL: none */
  bool output_append;   /* --open-mode=append; else truncate */
  bool batch;           /* a Slurm batch script: task 0 runs it once (the batch step), the
                           other tasks hold their share of the allocation (docs/slurm.md) */
  json_t *container;    /* its image and how it runs (jobimage.c; owned), NULL: bare */
  /* Notifications (notify_job.c): --mail-type as GP_NOTIFY_* bits (mail_set: given), and
   * --mail-user (owned, NULL: the owner's own address, if any). */
  unsigned mail_events;
  bool mail_set;
  char *mail_user;
  unsigned time_noted;  /* GP_NOTIFY_TIME_LIMIT_50/80/90 noted in this run (memory only) */
  int n_after, n_after_ok, n_after_any, n_after_not_ok;
  char **after, **after_ok, **after_any, **after_not_ok;
  bool singleton;       /* Slurm's `singleton` (core/deps.c): one job of name and user at a time */
  /* Arrays (array.h): an array's job carries `array` (owned) and is never scheduled itself;
   * an element carries its array's job id (0: not an element) and its index. */
  gp_srv_array *array;
  int64_t array_job, array_index;
  bool dep_only;        /* a stand-in in the view for a dependency only (array.h) */
  /* Services (service.h): a replica carries its service's name (owned, NULL: not a
   * replica) and the revision it runs; the rest is this run's, from its agent (memory only,
   * reported again by the agent in every heartbeat). */
  char *service;
  int service_rev;
  int svc_port;         /* the port the agent gave it ($PORT), 0: none yet */
  bool svc_ready;       /* its readiness probe passes */
  int64_t svc_ready_at; /* epoch s it last became ready, 0: not ready */
  int64_t svc_drain_at; /* epoch s its drain began (out of the endpoints), 0: none */
  char svc_probe[160];  /* the last probe's outcome, as the agent said it */
  double svc_metric;    /* its autoscaling figure, as the agent read it from /metrics... */
  int64_t svc_metric_at; /* ...at this epoch s; 0: none */
  /* Lifecycle. */
  int restarts;
  int64_t submitted_at, started_at, ended_at, last_checkpoint_at;
  bool has_exit_code;
  int exit_code;
  int exit_signal;      /* the signal that killed the process whose end gave exit_code (the
                           batch script, or the task that decided a gang's code); 0: none */
  char *end_reason;
  char *stop_reason;    /* STOPPING: preempted|cancelled|timeout|failed */
  char *task_failure;   /* this run: "task N: why" of the first task that failed, which
                           ends the gang (memory only), or NULL */
  int master_port;      /* this run's rendezvous port (MASTER_PORT; memory only), 0: none */
  struct gp_srv_steps *steps; /* its srun steps and this run's step credential (steps.h), or NULL */
  int n_alloc;
  gp_srv_alloc *alloc;  /* RUNNING/STOPPING: one per task */
  json_t *timeline;     /* array of events (owned) */
  json_t *usage;        /* last usage the agent reported, or NULL */
  json_t *last_placements; /* where the last run ran (API shape), kept when it ends */
  json_t *attempts;     /* every run: {attempt, start, end, nodes, end_reason} (owned), or NULL */
  char *enforcement;    /* how the agent enforces a share (launched event), or NULL */
  int pending_reason;   /* gp_pending_reason, -1: none known yet */
  char *pending_message;
  int64_t reservation_at;
  bool events_noted;    /* listed in the event feed's record (events_feed.c) */
  uint64_t events_sig;  /* hash of the summary its last event carried, 0: none yet */
  struct gp_srv_jobmetrics *metrics; /* per-GPU telemetry of its runs (jobmetrics.h), or NULL */
  int queue_position;   /* 1-based place among its queue's pending jobs at the last step
                           (jobrank.c; read through gp__srv_job_queue_position), 0: none */
  gp_idle_track idle;   /* idleness of the current run (idle.c; memory only, measured again
                           from the agents' figures after a restart) */
  int64_t idle_acted_since; /* the idle stretch the policy last acted on, 0: none */
  int active_pos;       /* position in gp_srv_state.active, -1 when final */
  /* Its entry in the kept view (view.c). */
  bool view_stale;      /* changed since the last step: listed in gp_srv_view.stale_jobs */
  int view_index;       /* an ended dependency's place in this step's view, else -1 */
  gp_placement *view_pl; /* the entry's placements */
  size_t cap_view_pl;
} gp_srv_job;

#endif
