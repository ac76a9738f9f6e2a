/* SPDX-License-Identifier: Apache-2.0 */
/* The server's Prometheus metrics (gpool_* names): the server fills a plain snapshot struct
 * on its scheduler thread and this module renders it as Prometheus text exposition format
 * 0.0.4, with HELP and TYPE lines, escaped label values and cumulative histogram buckets.
 * The renderer does no I/O and holds no state, so it is tested directly against promtool.
 * Label cardinality is bounded by the number of queues (itself bounded by the config). */
#ifndef GP_SERVER_METRICS_H
#define GP_SERVER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define GP_HIST_MAX_BUCKETS 32

/* A histogram with fixed upper bounds (seconds). counts[i] counts observations in bucket i
 * (not cumulative); counts[n_bounds] is the +Inf bucket. */
typedef struct gp_hist {
  int n_bounds;
  double bounds[GP_HIST_MAX_BUCKETS - 1]; /* ascending */
  uint64_t counts[GP_HIST_MAX_BUCKETS];
  double sum;
  uint64_t count;
} gp_hist;

/* Sets bounds (ascending, at most GP_HIST_MAX_BUCKETS - 1; extra ones are dropped) and
 * zeroes the counts. */
void gp_hist_init(gp_hist *h, const double *bounds, int n);
void gp_hist_observe(gp_hist *h, double v);

/* Bounds that suit the server's histograms, for gp_hist_init. */
extern const double gp_hist_bounds_wait_s[];   /* 1 s .. 1 week */
extern const int gp_hist_n_bounds_wait_s;
extern const double gp_hist_bounds_cycle_s[];  /* 100 us .. 10 s */
extern const int gp_hist_n_bounds_cycle_s;
extern const double gp_hist_bounds_notice_s[]; /* 50 ms .. 60 s */
extern const int gp_hist_n_bounds_notice_s;

#define GP_METRICS_MAX_REASONS 16
#define GP_METRICS_MAX_STATES 16

typedef struct gp_server_metrics_queue {
  const char *name;            /* "org/team/proj"; borrowed */
  double deserved, limit;      /* limit < 0: none (rendered as absent) */
  double weight, fair_share, allocated;
  double pending_gpus;         /* GPUs requested by pending jobs */
  int running_jobs, pending_jobs;
  int pending_by_reason[GP_METRICS_MAX_REASONS]; /* index: gp_server_metrics.reason_names */
  int gpus_allocated_idle;     /* allocated GPUs under the idle threshold for the window */
  double cost_rate_per_h;      /* currency units per hour at list price; 0: unknown */
  int jobs_idle;               /* running jobs idle for at least their idle window now */
  uint64_t idle_actions[3];    /* the idle policy's actions, by gp_idle_action (core/idle.h) */
} gp_server_metrics_queue;

/* GPU-seconds of one (queue, GPU model, capacity type) since the server started
 * (gp__srv_usage_totals). */
typedef struct gp_server_metrics_usage {
  const char *queue, *model, *capacity; /* borrowed */
  double gpu_s;                /* allocated GPU-seconds x share */
  double used_gpu_s;           /* SM-busy GPU-seconds where measured */
  double measured_gpu_s;       /* the part of gpu_s whose use was measured */
} gp_server_metrics_usage;
/* A queue's budget in its current period (unit "gpu_hours" or the currency). */
typedef struct gp_server_metrics_budget {
  const char *queue, *unit;    /* borrowed */
  double budget, spent, used_ratio;
  uint64_t alerts_80, alerts_100; /* alerts raised since the server started */
} gp_server_metrics_budget;

/* The cost of a queue's use of one model on one capacity type since the server started. */
typedef struct gp_server_metrics_cost {
  const char *queue, *model, *capacity; /* borrowed */
  double cost;
} gp_server_metrics_cost;

typedef struct gp_server_metrics {
  int n_queues;
  const gp_server_metrics_queue *queues;
  /* Names for the indexes of pending_by_reason, jobs_by_state and nodes_by_state
   * ("Resources", "running", "up"...); a NULL name ends the list. Borrowed. */
  const char *const *reason_names;
  const char *const *job_state_names;
  const char *const *node_state_names;
  int jobs_by_state[GP_METRICS_MAX_STATES];
  int nodes_by_state[GP_METRICS_MAX_STATES];
  int agents_up, agents_down;  /* agents heard from within the heartbeat timeout, or not */
  int gpus_total, gpus_allocated, gpus_unhealthy;
  int gpus_allocated_idle;     /* whole fleet */
  double idle_threshold_pct;   /* what "idle" meant for gpus_allocated_idle */
  double idle_window_s;
  uint64_t submissions_total, jobs_started_total, preemptions_total, sched_cycles_total;
  uint64_t sched_steps_skipped_total;
  double last_sched_cycle_s, sched_cycles_cpu_s;
  gp_hist sched_cycle_s, queue_wait_s, job_run_s;
  uint64_t store_write_failures_total; /* failed store transactions */
  uint64_t store_writes_refused_total; /* requests refused while the store was not writable */
  bool store_writable;                 /* false while writes are refused (store_health.h) */
  int n_usage;
  const gp_server_metrics_usage *usage;
  int n_budgets;
  const gp_server_metrics_budget *budgets;
  int n_costs;
  const gp_server_metrics_cost *costs;
  const char *currency;                /* of the costs; NULL: no prices */
  /* Spot interruptions by node capacity and source (names borrowed; NULL ends a list). */
  const char *const *capacity_names;
  const char *const *interrupt_sources;
  uint64_t interruptions[GP_METRICS_MAX_STATES][GP_METRICS_MAX_STATES];
  gp_hist notice_to_stop_s;
} gp_server_metrics;

/* Appends the Prometheus text for `m` to `out` (check gp_buf_truncated afterwards). */
void gp_server_metrics_render(const gp_server_metrics *m, gp_buf *out);

/* Appends histogram `h` as family `name` (HELP `help`), cumulative buckets, sum and count. */
void gp_prom_histogram(gp_buf *out, const char *name, const char *help, const gp_hist *h);

/* Appends a label value escaped for the text format (backslash, double quote, newline). */
void gp_prom_escape(gp_buf *out, const char *value);

#endif
