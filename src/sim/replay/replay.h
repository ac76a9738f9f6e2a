/* SPDX-License-Identifier: Apache-2.0 */
/* Trace replay: a discrete-event simulation that drives the scheduler core (the very
 * gp_sched_step the server runs) through a cluster trace on a virtual clock, and measures
 * what users would feel: queueing delay, job completion time, utilisation, fairness,
 * preemptions.
 *
 * The engine keeps a gp_view of only the jobs that matter to the core (pending, running,
 * stopping), updated in place as jobs arrive and leave, and calls the core after a batch of
 * same-time events only when something changed that could let a job start. It applies each
 * plan to its virtual cluster: starts (placements are checked against the GPUs it knows are
 * free: a plan that double-books a GPU stops the replay with an error), preemptions (a
 * grace period, then the job is requeued and loses the work since its last checkpoint),
 * and jobs the core ends as impossible. Reservations are information only. A job may hold
 * its GPUs idle for the end of its run (the trace's idle_tail or the assumed idle model);
 * an idle policy acts on those stretches as the server's does (core/idle.h). With node
 * templates, autoscaling adds provider nodes for jobs that wait and deletes empty ones, as
 * the server's core proposes (core/scale.h).
 *
 * Determinism: the same trace, fleet, queues, policy and seed give byte-identical results
 * (wall_seconds, the replay's own run time, is the only exception). */
#ifndef GP_SIM_REPLAY_REPLAY_H
#define GP_SIM_REPLAY_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/idle.h"
#include "core/model.h"
#include "ledger/decay.h"
#include "sim/trace/trace.h"
#include "snapshot/template_read.h"
#include "util/error.h"
#include "util/mem.h"

#define GP_REPLAY_MAX_CSV_ROWS 5000000

struct gp_prices; /* ledger/prices.h */

/* ---- Inputs ---- */

/* The GPU machines of a replay. Owns its arrays and strings (arena). */
typedef struct gp_fleet {
  int n_nodes;
  gp_node *nodes;
  int max_node_gpus; /* GPUs of the largest node: gangs are split to fit it */
  int64_t total_gpus;
  bool shared;       /* every GPU is shared (fractional jobs) */
  gp_arena *arena;
} gp_fleet;

/* A fleet from a spec: shorthand "352x8xV100[:CAPACITY][,16x8xA100[:CAPACITY]]" (nodes x
 * GPUs x model; the model may be left out; CAPACITY is on-demand, reserved, spot or
 * on-prem), a node list CSV (openb's columns sn|name, gpu|gpus, model, and optional
 * cpu_milli, memory_mib, capacity), or a YAML/JSON pool description with a `nodes:` list
 * (the nodes part of a `gpool plan` snapshot). Nodes are on-prem unless the spec gives
 * another capacity type. `shared_gpus` makes every GPU shared (fractional jobs) instead of
 * exclusive. */
int gp_fleet_load(const char *spec, bool shared_gpus, gp_fleet **ret, gp_err *err);
/* The Helios Philly fleet: the nodes of the virtual clusters in a vc,node num CSV
 * (philly_vc_nodes.csv), 8 GPUs each, each node labelled queue=<its VC>. */
int gp_fleet_from_vc_file(const char *path, gp_fleet **ret, gp_err *err);
void gp_fleet_free(gp_fleet *f);

/* Leaf queues of a replay. Owns its arrays and strings. */
typedef struct gp_replay_queues {
  int n;
  gp_queue *queues;
  gp_arena *arena;
} gp_replay_queues;

/* Queues from a YAML/JSON file: a list, or a map with a `queues:` list, in the server's
 * config format (gp_queues_read). */
int gp_replay_queues_load(const char *path, gp_replay_queues **ret, gp_err *err);
/* One queue per virtual cluster of a "vc,node num" CSV with deserved = nodes x
 * gpus_per_node; queues that appear in the trace but not in the file are added with
 * deserved 0 (they run on borrowed capacity). */
int gp_replay_queues_from_vc_file(const char *path, int gpus_per_node, const gp_trace *trace,
                                  gp_replay_queues **ret, gp_err *err);
/* One queue per queue name of the trace, deserved 0, weight 1: fair share then splits the
 * fleet equally among the queues with demand. */
gp_replay_queues *gp_replay_queues_from_trace(const gp_trace *trace);
void gp_replay_queues_free(gp_replay_queues *q);

/* The policies compared in docs/simulator.md. */
typedef enum gp_replay_preset {
  GP_REPLAY_FIFO = 0, /* one strict queue by submit time, no backfill, no preemption */
  GP_REPLAY_BACKFILL, /* priority order + EASY backfill (Slurm-like), no quotas */
  GP_REPLAY_GPOOL,    /* hierarchical fair share, quotas, borrowing, reclaim, backfill */
  GP_REPLAY_SJF,      /* shortest job first with the true durations: a reference bound */
  GP_REPLAY_BACKFILL_VC, /* backfill inside static per-queue partitions (Philly's VCs) */
  GP_REPLAY_CUSTOM,   /* a policy file */
} gp_replay_preset;

int gp_replay_preset_parse(const char *s, gp_replay_preset *ret);
const char *gp_replay_preset_name(gp_replay_preset p);
/* Fills *p with the preset's policy (gp_policy_init, then the preset's switches). */
void gp_replay_preset_policy(gp_replay_preset preset, gp_policy *p);
/* True for the presets that confine each queue to its own nodes. */
bool gp_replay_preset_partitioned(gp_replay_preset preset);
/* Reads a policy file: the server's policy block, either at the top level or under a
 * `policy:` (or `scheduler:`) key, with optional `priority_classes:`. Strings live in
 * `arena`. */
int gp_replay_policy_load(const char *path, gp_arena *arena, gp_policy *ret, gp_err *err);

/* The idle-GPU policy of a replay (`--idle-policy FILE`): the server's `idle_policy` map
 * (docs/config.md) for every queue, and optionally per queue. Owns its strings. */
typedef struct gp_replay_idle_policy {
  gp_idle_policy all;          /* queues without their own (may be unset: no policy) */
  int n;                       /* queues with their own */
  const char **queue;
  gp_idle_policy *policy;
  gp_arena *arena;
} gp_replay_idle_policy;

/* Reads `idle_policy: {window, grace, action, threshold_pct, interactive}` and an optional
 * `queues: {NAME: {...}}` with the same keys for the queues that differ, with the reader
 * the server uses (gp_idle_policy_read): the same defaults and errors (file, line, key). */
int gp_replay_idle_policy_load(const char *path, gp_replay_idle_policy **ret, gp_err *err);
void gp_replay_idle_policy_free(gp_replay_idle_policy *p); /* accepts NULL */

/* Spot interruptions (`--spot-interruptions`, docs/simulator.md "Spot interruptions"): a
 * rate is the probability that a spot node is reclaimed within 30 days of running (how
 * AWS's Spot Advisor quotes "frequency of interruption"), turned into an exponential time
 * to the next interruption with mean 30 d / -ln(1 - rate). Only spot nodes are
 * interrupted. */
#define GP_REPLAY_SPOT_MAX_MODELS 32
#define GP_REPLAY_SPOT_MODEL_LEN 64

typedef struct gp_replay_spot {
  double rate;                   /* every spot node's rate unless its model has its own;
                                    0: never interrupted */
  int n_models;
  char model[GP_REPLAY_SPOT_MAX_MODELS][GP_REPLAY_SPOT_MODEL_LEN];
  double model_rate[GP_REPLAY_SPOT_MAX_MODELS];
  gp_time notice;                /* seconds of notice before a node is reclaimed */
  gp_time provider_delay;        /* seconds until a reclaimed node's replacement is up */
} gp_replay_spot;

/* Parses "RATE[:MODEL=RATE,...]" (a rate as 0.05 or 5%, from 0 up to but not including 1)
 * into spot's rates, leaving its other fields alone. Errors name `--spot-interruptions`. */
int gp_replay_spot_parse(const char *s, gp_replay_spot *spot, gp_err *err);
/* The rate of a node of `model` (a model's own rate, else the default one). */
double gp_replay_spot_rate(const gp_replay_spot *spot, const char *model);
/* Mean seconds between interruptions of a node at `rate`; 0 when it is never interrupted. */
double gp_replay_spot_mean_s(double rate);
/* Seconds from a spot node's start (its k-th life: 0 for the fleet's node, then one per
 * replacement) until it is reclaimed, for node index `node` at mean `mean_s`: a hash of
 * the seed, the node and k, so the same seed interrupts the same nodes at the same times
 * whatever else the replay does. */
gp_time gp_replay_spot_life(uint64_t seed, int node, int k, double mean_s);

/* Autoscaling (`--templates FILE`, docs/simulator.md "Scale-up and scale-down"): the node
 * templates a provider could add, from a file whose only key is the server config's
 * `node_templates:` list, read as the server reads it (snapshot/template_read.h); a
 * template's `provider`, `env` and `timeout` are accepted and unused. Owns its strings. */
typedef struct gp_replay_templates {
  int n;
  const gp_template_spec *spec;
  gp_arena *arena;
} gp_replay_templates;

int gp_replay_templates_load(const char *path, gp_replay_templates **ret, gp_err *err);
void gp_replay_templates_free(gp_replay_templates *t); /* accepts NULL */

typedef struct gp_replay_scale {
  const gp_replay_templates *templates; /* NULL: a fixed fleet. Borrowed */
  int class_rank[4];          /* per gp_capacity, lower is tried first; < 0: never created
                                 (core/scale.h; default on-prem, reserved, spot, on-demand) */
  double max_hourly_cost;     /* provider nodes' cost per hour at most; GP_NO_LIMIT: none */
  gp_time scale_down_after;   /* an empty provider node is deleted after this; 0: never */
  gp_time interval;           /* seconds between autoscaling passes, at least 1 */
} gp_replay_scale;

/* Parses "on-prem,reserved,spot,on-demand" (`--scale-order`): the classes tried, in order;
 * a class left out is never created. Errors name `--scale-order`. */
int gp_replay_scale_order_parse(const char *s, int class_rank[4], gp_err *err);

typedef struct gp_replay_config {
  const char *policy_name;      /* for reports: "fifo", "gpool", or the policy file's name */
  gp_policy policy;
  bool oracle_limits;           /* time limit = true duration (sjf) */
  double overestimate;          /* time limit = duration x this when the trace has none */
  gp_time checkpoint_interval;  /* seconds of progress between checkpoints; 0: none */
  gp_time restart_overhead;     /* seconds a restarted job spends before doing work */
  gp_time grace;                /* seconds a preempted job keeps its GPUs */
  double mtbf_hours;            /* per node; 0: no node failures */
  gp_time repair_time;          /* seconds a failed node stays down */
  uint64_t seed;
  double time_scale;            /* arrival offsets are divided by this (2: twice the offered
                                   load, durations unchanged); 1 replays the trace as is */
  bool partition;               /* static partitions: each queue runs only on the nodes
                                   labelled queue=<its name> (as Philly's VCs did) */
  gp_time share_probe;          /* when calls were skipped, call the core at least this
                                   often anyway so fair shares (for the fairness figures)
                                   are never older than this; 0: never (default 3600) */
  bool every_event;             /* call the core after every batch, skipping nothing (for
                                   checking that skipped calls change no outcome) */
  double idle_fraction;         /* the idle model (--idle-tail): this share of the jobs, */
  double idle_share;            /* chosen by the seed, hold their GPUs idle for the last
                                   idle_share of their duration; 0: only the trace's own
                                   idle_tail. An assumption, not a measurement */
  const gp_replay_idle_policy *idle_policy; /* acts on idle stretches; NULL: none. Borrowed */
  gp_replay_spot spot;           /* spot interruptions; rates 0: none. Its provider_delay
                                    is also the time from a create call to the node being
                                    up (autoscaling) */
  gp_replay_scale scale;         /* autoscaling; templates NULL: none */
  const struct gp_prices *prices; /* price the replay (ledger/prices.h); NULL: no cost
                                   figures. Borrowed for the run */
  bool usage;                   /* fair share over time: the queues' decayed usage enters
                                   the view (--half-life); false: none */
  gp_fairshare_config fairshare; /* its half-life (0: off, no decay) and reset */
  gp_time usage_probe;          /* > 0: the queues' usage shares (usage_share) are taken this
                                   long after the first submission instead of at the end */
  FILE *csv;                    /* time series, one row per simulated minute; may be NULL */
  bool progress;                /* draw a progress bar on stderr */
} gp_replay_config;

/* Reads `--prices FILE`: the server's `prices` map (docs/config.md) at the top level of a
 * YAML/JSON file or under its `prices:` key. Errors name the file, line and key. On success
 * *ret holds one reference (gp_replay_prices_free). */
int gp_replay_prices_load(const char *path, struct gp_prices **ret, gp_err *err);
void gp_replay_prices_free(struct gp_prices *p); /* accepts NULL */

/* Seconds of idle tail of trace job i: the trace's own `idle_tail` when it gives one above
 * 0; otherwise, for a job the idle model (cfg->idle_fraction) picks, idle_share of its
 * duration. The pick is a hash of
 * the seed and the job's line, so the same seed picks the same jobs whatever else the
 * replay does. */
gp_time gp_replay_idle_tail(const gp_replay_config *cfg, const gp_trace *trace, size_t i);

/* Defaults: overestimate 2, checkpoint 30 min, restart overhead 60 s, grace 30 s, no
 * failures, repair 1 h, seed 1, no spot interruptions (notice 2 min, provider delay
 * 5 min), no autoscaling (when templates are given: the default class order, no cost cap,
 * scale-down after 10 min, a pass at most every 60 s). */
void gp_replay_config_init(gp_replay_config *c);

/* ---- Results ---- */

typedef struct gp_replay_queue_stats {
  const char *name;
  double deserved_gpus;
  int64_t jobs, finished;        /* submitted; completed or timed out */
  double avg_wait_s, p95_wait_s; /* over jobs that started */
  double avg_jct_s, p95_jct_s;   /* over finished jobs */
  double gpu_hours;              /* allocated GPU-hours */
  double avg_allocated_gpus;     /* over the makespan */
  double avg_fair_share_gpus;    /* the core's fair share, over the makespan */
  double share_ratio;            /* allocated / fair share (integrals); 0 if no share */
  double usage_share;            /* its part of all queues' decayed usage at the end, or at
                                    cfg->usage_probe (with --half-life); 0 without */
  int64_t preempted;             /* times a job of this queue was preempted */
  double cost;                   /* what its jobs' GPU-hours cost (priced replays) */
  bool cost_unknown;             /* some of them had no price */
} gp_replay_queue_stats;

/* The money of a priced replay, over [first submission, last end), in `currency`:
 * jobs + idle + drained_down + unused_commitment = fleet (the ledger's conservation). */
typedef struct gp_replay_cost {
  bool priced;                   /* false: the replay had no prices; the rest is 0 */
  const char *currency;
  double jobs;                   /* GPU-hours allocated to jobs, x share, at their price */
  double idle;                   /* GPUs of the fleet that no job held */
  double drained_down;           /* capacity on drained or down nodes (0 in a replay) */
  double unused_commitment;      /* committed reserved GPUs the fleet does not have */
  double fleet;                  /* every node's GPUs over the whole replay */
  bool unknown;                  /* some GPU-hour had no price: the figures are too low */
} gp_replay_cost;

/* Idle GPUs: the stretches at the end of runs that hold GPUs without using them (the
 * trace's idle_tail or the idle model) and what the idle policy did about them. */
typedef struct gp_replay_idle {
  bool modelled;                 /* some job had an idle tail */
  bool assumed;                  /* the tails come from the idle model (--idle-tail) */
  int64_t jobs;                  /* jobs with an idle tail */
  double gpu_hours;              /* idle GPU-hours of the model: held + released */
  double held_gpu_hours;         /* of which jobs held until they ended (or were preempted) */
  bool policy;                   /* an idle policy ran */
  int64_t notified, requeued, cancelled; /* its actions, one per run at most */
  double released_gpu_hours;     /* GPU-hours freed: from the action to the run's end */
  bool priced;                   /* the money below is set (a priced replay) */
  double cost, released_cost;    /* idle GPU-hours and released ones at their GPUs' prices */
  bool cost_unknown;             /* some of them had no price */
  bool has_baseline;             /* the same replay without the policy ran (set by callers) */
  double base_avg_wait_s, base_avg_jct_s;
} gp_replay_idle;

/* Spot interruptions and what they cost the jobs (only when a rate was given). */
typedef struct gp_replay_spot_stats {
  bool modelled;                 /* some spot node had a rate above 0 */
  int64_t interruptions;         /* spot nodes reclaimed */
  int64_t notices_used;          /* of which jobs were on the node and checkpointed at the
                                    notice (it was at least --grace long) */
  int64_t jobs_interrupted;      /* distinct jobs that had a run cut by an interruption */
  int64_t runs_interrupted;      /* runs cut (a job may be hit more than once) */
  double gpu_hours_recomputed;   /* progress no checkpoint saved, done again */
  double gpu_hours_overhead;     /* the restart overhead of the runs that follow */
  double gpu_hours_lost;         /* recomputed + overhead */
} gp_replay_spot_stats;

/* Autoscaling: the provider nodes the replay created and deleted (only with templates). */
typedef struct gp_replay_scale_stats {
  bool modelled;                 /* the replay had node templates */
  int64_t created;               /* provider nodes asked for */
  int64_t deleted;               /* of which scaled down (empty for scale_down_after) */
  int64_t interrupted;           /* of which reclaimed (spot templates) */
  int64_t peak_provider_nodes;   /* provider nodes at once, those being created included */
  int64_t peak_nodes;            /* the fleet's nodes and provider nodes at once */
  double node_hours;             /* provider nodes, from the create call to their deletion
                                    (or the replay's end) */
  double gpu_hours;              /* the same in GPUs */
  bool priced;                   /* cost below is set (a priced replay) */
  double cost;                   /* what those node-hours cost (part of the fleet cost) */
  bool cost_unknown;             /* some of them had no price */
} gp_replay_scale_stats;

/* The time series kept for charts: a bounded number of evenly spaced samples. */
typedef struct gp_replay_series {
  int n, cap, n_queues;
  gp_time period;                /* seconds between samples */
  double *t;                     /* seconds since the first submission */
  double *pending_jobs, *running_jobs, *allocated_gpus, *up_gpus;
  double *queue_pending;         /* [i * n_queues + q]: pending jobs of queue q */
  double *queue_gpus;            /* [i * n_queues + q]: GPUs allocated to queue q */
} gp_replay_series;

typedef struct gp_replay_result {
  char *policy;
  int64_t jobs, completed, timeouts, rejected, unfinished;
  double avg_jct_s, p50_jct_s, p95_jct_s, p99_jct_s;
  double avg_wait_s, p50_wait_s, p95_wait_s, p99_wait_s;
  double gpu_utilization;        /* allocated GPU-seconds / up GPU-seconds, 0..1 */
  double makespan_s;             /* last end - first submission */
  double jain_fairness;          /* of the queues' share ratios */
  /* Jain's index of each queue's cumulative GPU-hours over its deserved share (its weight's
   * where nothing is deserved), among the queues that had demand, at the end of each week
   * from the first submission (and at the end for the last, partial one). */
  int n_weeks;
  double *weekly_jain;
  double usage_half_life_s;      /* -1: no usage in the view; 0: usage without decay */
  int64_t preemptions;
  double gpu_hours_lost;         /* GPU time of preempted runs not saved by a checkpoint */
  int64_t node_failures;
  int64_t csv_rows;              /* rows written to the CSV time series (at most
                                    GP_REPLAY_MAX_CSV_ROWS: 9.5 years of minutes) */
  double gpu_hours_lost_failures;
  int64_t sched_calls;           /* gp_sched_step calls */
  double sched_seconds;          /* wall time inside gp_sched_step */
  double wall_seconds;           /* wall time of the whole replay (not deterministic) */
  int n_queues;
  gp_replay_queue_stats *queues;
  gp_replay_cost cost;
  gp_replay_idle idle;
  gp_replay_spot_stats spot;
  gp_replay_scale_stats scale;
  int64_t n_jct;
  double *jct_sorted;            /* finished jobs' completion times, ascending */
  gp_replay_series series;
  gp_arena *arena;               /* owns the queue names */
} gp_replay_result;

/* Runs a replay. The trace, fleet and queues are borrowed. Every job of the trace must
 * name a queue of `queues` (otherwise GP_EINVAL naming the trace line). Returns 0 and a
 * result (gp_replay_result_free), or GP_EINVAL/GP_ESTATE with err (an inconsistent plan,
 * a job that asks for an unknown priority class, ...). */
int gp_replay_run(const gp_replay_config *cfg, const gp_trace *trace, const gp_fleet *fleet,
                  const gp_replay_queues *queues, gp_replay_result **ret, gp_err *err);
void gp_replay_result_free(gp_replay_result *r);

/* ---- Reports ---- */

/* The JSON summary (one object; `with_wall` false writes wall_seconds as 0 so outputs
 * compare byte for byte). Returns a malloc'd string. */
char *gp_replay_result_json(const gp_replay_result *r, bool with_wall);
/* Several results as {"runs": [...]} for `sim compare -o json`. */
char *gp_replay_results_json(gp_replay_result *const *r, int n, bool with_wall);
/* Tables for people: one run with its queues, or several runs side by side. */
void gp_replay_print_table(FILE *out, const gp_replay_result *r);
void gp_replay_print_compare(FILE *out, gp_replay_result *const *r, int n);
/* The money of priced runs as CSV: policy,kind,queue,cost,currency with one `jobs` row per
 * queue, then `idle`, `drained_down`, `unused_commitment` and `fleet` (the total). Runs
 * that were not priced write no row. */
void gp_replay_write_cost_csv(FILE *out, gp_replay_result *const *r, int n);
/* A self-contained HTML page (inline SVG, no network) with the runs' charts. */
int gp_replay_write_html(const char *path, const char *title, gp_replay_result *const *r,
                         int n, gp_err *err);

#endif
