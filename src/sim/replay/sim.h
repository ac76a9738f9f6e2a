/* SPDX-License-Identifier: Apache-2.0 */
/* The replay engine's state, shared by the engine (engine.c), its events (events.c), its
 * run (run.c) and the autoscaling that adds and removes its nodes (scale.c). Internal to
 * src/sim/replay. */
#ifndef GP_SIM_REPLAY_SIM_H
#define GP_SIM_REPLAY_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "core/sched.h"
#include "sim/replay/cost.h"
#include "sim/replay/heap.h"
#include "sim/replay/replay.h"

typedef struct gp__sim_scale gp__sim_scale; /* scale.c */

#define PEND_TASKS_MAX 64
#define NO_CKPT INT64_MAX /* ckpt_next of a slot that is not running */
#define NO_IDLE INT64_MAX /* idle_from of a run that never idles */

enum sj_state { SJ_FUTURE = 0, SJ_PENDING, SJ_RUNNING, SJ_STOPPING, SJ_DONE, SJ_TIMEOUT, SJ_REJECTED };

typedef struct sjob {
  int state;
  int view;               /* slot in the view, -1 when not there */
  int queue;
  uint32_t gen;
  bool limit_enforced;    /* the time limit came from the trace: hitting it ends the job */
  bool timeout_run;       /* the current run ends at its limit, not at completion */
  int restarts;
  gp_time work_left;      /* seconds of work still to do */
  gp_time run_start, run_overhead, preempted_at;
  gp_time pending_since, first_start, end, wait;
  double gpus;            /* GPUs held while running */
  double ask;             /* GPUs the job asks for */
  int need;               /* whole GPUs it asks for (0: fractional or CPU-only) */
  uint32_t pend_seq;      /* times it became pending: tells stale FIFO entries apart */
  int64_t pend_step;      /* s->steps when it last became pending */
  int n_pl;
  gp_placement *pl;
  gp_time idle_tail;      /* seconds at the end of its work it holds its GPUs idle */
  gp_time idle_from;      /* this run idles from here to its end; NO_IDLE: it never does */
  gp_time run_end;        /* when this run ends if nothing stops it */
  bool spot_stop;         /* stopping at a spot notice: its progress is saved */
  bool spot_hit;          /* a spot interruption cut one of its runs */
} sjob;

typedef struct sim {
  const gp_replay_config *cfg;
  const gp_trace *trace;
  const gp_fleet *fleet;
  const gp_replay_queues *queues;
  gp_time *arrive;        /* arrival time of each job (the trace's, time-scaled) */
  int n_pools;
  gp_pool *pools;         /* static partitions, when asked for */
  bool can_preempt;
  bool strict_fifo;
  gp_arena *arena;
  /* The nodes: the fleet's, then provider nodes (autoscaling, scale.c) in the slots past
   * them; a deleted provider node's slot stays down with no GPU until a new node takes it.
   * Per-node arrays have cap_nodes entries. */
  int n_nodes, cap_nodes;
  gp_node *nodes;
  int *jobs_on;             /* placements held on each node */
  int *node_id;             /* each node's id in the cost ledger (cost.h) */
  int max_node_gpus;        /* GPUs of the largest node or template: gangs split to fit */
  const struct gp_prices *prices; /* the catalogue the replay is priced with; NULL: none */
  int *gpu_used;
  int64_t free_whole, up_gpus;
  int *node_idle;           /* idle GPUs per node (0 when down) */
  int64_t idle_hist[GP_MAX_NODE_GPUS + 1];
  /* Pending whole-GPU jobs by GPUs per task and tasks (more than PEND_TASKS_MAX tasks
   * count as PEND_TASKS_MAX: what fits them fits that many). */
  int64_t (*pend_shape)[PEND_TASKS_MAX + 1];
  int nodes_down;
  /* Spot interruptions (NULL when none is modelled): per node the mean seconds between
   * them (0: never), its life (0, then one more per replacement; the events' gen) and
   * whether it is drained by a notice (1) or reclaimed (2); spot_out counts those. */
  double *spot_mean;
  int *spot_life;
  char *spot_state;
  int spot_out;
  sjob *jobs;
  gp_job *v;
  int *vmap;
  int nv;
  /* The core keeps what it derived from unchanged jobs between calls: every write to a
   * view slot gives it a new rev (vrev, the view's job_revs), node failures and repairs a
   * new view rev. */
  gp_sched_memo *memo;
  uint64_t *vrev;
  /* Per view slot: when a running job's saved work next grows (its last checkpoint moves),
   * NO_CKPT for the others; refresh_checkpoints skips the slots whose time has not come. */
  gp_time *ckpt_next;
  uint64_t last_rev, view_rev;
  /* Per-queue state and integrals over time. */
  int nq;
  double *alloc, *fair, *alloc_int, *fair_int;
  /* Fair share over time (usage.c): per queue, decayed usage in cluster-seconds as of
   * t_last (cfg->usage), what the view carries of it (refreshed each simulated minute), and
   * the weekly Jain index of cumulative GPU-hours against deserved shares. */
  double *usage;
  gp_usage *usage_view;
  int n_usage_view;
  gp_time usage_view_at;
  gp_time next_week;
  bool probed;              /* the usage shares were taken at cfg->usage_probe */
  int64_t *q_pending, *q_running;
  double *q_pending_gpus;   /* GPUs asked by the queue's pending jobs */
  /* To skip calls that cannot start anything: pending jobs by whole GPUs asked, the
   * smallest such count, and (strict FIFO) the pending jobs in the core's order. */
  int64_t *need_count;
  int max_need, min_need;
  gp__sim_heap fifo;            /* pending jobs by (submit, index); stale entries skipped */
  int64_t steps;            /* gp_sched_step calls so far */
  int64_t last_pend_step;   /* s->steps when a job last became pending */
  gp_time last_step_t;      /* time of the latest call */
  bool skipped;             /* something changed since the latest call, without a call */
  double alloc_total, alloc_int_total, up_int;
  int64_t pending_total, running_total;
  gp_time t_first, t_last;
  gp_time next_sample;    /* seconds since t_first */
  gp__sim_heap heap;
  uint64_t rng;
  gp_replay_result *r;
  gp__sim_cost *cost;       /* the runs' intervals when the replay is priced, else NULL */
  const gp_idle_policy **idle_pol; /* per queue: its idle policy, NULL: none */
  gp__sim_scale *scale;     /* autoscaling; NULL: a fixed fleet */
  bool scale_pass;          /* the next call to the core is an autoscaling pass */
  gp_err *err;
  double sched_seconds;
  int progress_pct;
} sim;

/* An idle GPU of up node `node` appeared (+1) or was taken (-1). */
void gp__sim_idle_gpus(sim *s, int node, int delta);
/* Schedules the next interruption of spot node `node`, whose current life started at t_up. */
void gp__sim_spot_schedule(sim *s, int node, gp_time t_up);

/* engine.c: the clock, the view, the pending counts, the runs and the plans. */

/* Monotonic wall-clock seconds, to time the core's calls. */
double gp__sim_now_s(void);
/* An exponential sample of mean `mean_s` seconds from the replay's seeded generator. */
gp_time gp__sim_exp_sample(sim *s, double mean_s);
/* The entry of a job changed (or moved): a new rev for the core's memo. */
gp_job *gp__sim_view_touch(sim *s, int i);
/* Job j arrives: its entry `proto` joins the view. */
void gp__sim_view_add(sim *s, int j, const gp_job *proto);
/* Job j is pending from t. */
void gp__sim_pend_add(sim *s, int j, gp_time t);
/* Could a step now start something, with no preemption? */
bool gp__sim_could_start(sim *s);
/* The CSV's header line. */
void gp__sim_csv_header(sim *s);
/* Samples every simulated minute in [next_sample, upto): the state is constant there. */
void gp__sim_sample_until(sim *s, gp_time upto_rel);
/* usage.c: over [t_last, t), before the integrals move: decayed usage and week ends. */
void gp__sim_usage_advance(sim *s, gp_time t);
/* Puts the queues' usage in the step's view (a refresh changes the view's rev). */
void gp__sim_usage_view(sim *s, gp_view *view, gp_time now);
/* The Jain index of cumulative GPU-hours over deserved shares at the integrals' state. */
double gp__sim_cumulative_jain(const sim *s, const double *cum);

/* Moves the clock to t: integrates allocations and fair shares over [t_last, t). */
void gp__sim_advance(sim *s, gp_time t);
/* The milli-GPU held on GPU g of node `node`. */
int *gp__sim_gpu_slot(sim *s, int node, int g);
/* Seconds of work this run has done by time t (after its restart overhead). */
gp_time gp__sim_run_progress(const sjob *sj, gp_time t);
/* Seconds of this run's work saved by checkpoints at time t. */
gp_time gp__sim_saved_work(const sim *s, const sjob *sj, gp_time t);
/* A run is cut short with `saved` seconds of its work kept and requeued at `now`; returns
 * the GPU-hours of the run that were not saved. */
double gp__sim_requeue_saved(sim *s, int j, gp_time saved, gp_time now);
/* A run cut at `stopped`: the work since its last checkpoint is lost (as above). */
double gp__sim_requeue(sim *s, int j, gp_time stopped, gp_time now);
/* Job j's run completes at t. */
void gp__sim_finish(sim *s, int j, gp_time t);
/* The idle policy acts on running job j at t; true when GPUs came free. */
bool gp__sim_idle_act(sim *s, int j, gp_time t);
/* One call to the core at `now` and the application of its plan; 0 or an error code. */
int gp__sim_step(sim *s, gp_time now);

/* events.c */

/* Handles one heap event; returns true when it may let a job start. */
bool gp__sim_handle(sim *s, const gp__sim_event *e);

#endif
