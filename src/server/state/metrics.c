/* SPDX-License-Identifier: Apache-2.0 */
/* Renders the server's gpool_* metrics declared in metrics.h. Every family gets HELP and
 * TYPE lines once, even when it has no series yet, so dashboards and alerts can tell
 * "zero" from "not exported". */
#include "server/state/metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/idle.h"

const double gp_hist_bounds_wait_s[] = {1,    5,    15,    30,    60,    300,   900,
                                        1800, 3600, 7200, 14400, 28800, 86400, 259200, 604800};
const int gp_hist_n_bounds_wait_s = sizeof gp_hist_bounds_wait_s / sizeof(double);
const double gp_hist_bounds_cycle_s[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                         0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
                                         5,      10};
const int gp_hist_n_bounds_cycle_s = sizeof gp_hist_bounds_cycle_s / sizeof(double);
const double gp_hist_bounds_notice_s[] = {0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60};
const int gp_hist_n_bounds_notice_s = sizeof gp_hist_bounds_notice_s / sizeof(double);

void gp_hist_init(gp_hist *h, const double *bounds, int n) {
  memset(h, 0, sizeof *h);
  if (n > GP_HIST_MAX_BUCKETS - 1) n = GP_HIST_MAX_BUCKETS - 1;
  for (int i = 0; i < n; i++) {
    if (i && !(bounds[i] > h->bounds[h->n_bounds - 1])) continue; /* keep them ascending */
    h->bounds[h->n_bounds++] = bounds[i];
  }
}

void gp_hist_observe(gp_hist *h, double v) {
  if (isnan(v)) return;
  int i = 0;
  while (i < h->n_bounds && v > h->bounds[i]) i++;
  h->counts[i]++;
  h->sum += v;
  h->count++;
}

void gp_prom_escape(gp_buf *out, const char *value) {
  for (const char *p = value ? value : ""; *p; p++) {
    if (*p == '\\') gp_buf_puts(out, "\\\\");
    else if (*p == '"') gp_buf_puts(out, "\\\"");
    else if (*p == '\n') gp_buf_puts(out, "\\n");
    else gp_buf_append(out, p, 1);
  }
}

/* Prometheus float formatting: integers without a fraction, others with enough digits. */
static void num(gp_buf *out, double v) {
  if (isnan(v)) gp_buf_puts(out, "NaN");
  else if (isinf(v)) gp_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
  else if (v == (double)(long long)v && fabs(v) < 1e15) gp_buf_printf(out, "%lld", (long long)v);
  else gp_buf_printf(out, "%.9g", v);
}

static void family(gp_buf *out, const char *name, const char *type, const char *help) {
  gp_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(gp_buf *out, const char *name, const char *lk, const char *lv, double v) {
  gp_buf_puts(out, name);
  if (lk) {
    gp_buf_printf(out, "{%s=\"", lk);
    gp_prom_escape(out, lv);
    gp_buf_puts(out, "\"}");
  }
  gp_buf_puts(out, " ");
  num(out, v);
  gp_buf_puts(out, "\n");
}

static void queue_gauge(gp_buf *out, const gp_server_metrics *m, const char *name,
                        const char *help, size_t offset, bool is_int) {
  family(out, name, "gauge", help);
  for (int i = 0; i < m->n_queues; i++) {
    const char *q = (const char *)&m->queues[i];
    double v = is_int ? *(const int *)(q + offset) : *(const double *)(q + offset);
    sample(out, name, "queue", m->queues[i].name, v);
  }
}

static void hist(gp_buf *out, const char *name, const char *help, const gp_hist *h) {
  family(out, name, "histogram", help);
  uint64_t cum = 0;
  for (int i = 0; i < h->n_bounds; i++) {
    cum += h->counts[i];
    gp_buf_printf(out, "%s_bucket{le=\"", name);
    num(out, h->bounds[i]);
    gp_buf_printf(out, "\"} %llu\n", (unsigned long long)cum);
  }
  cum += h->counts[h->n_bounds];
  gp_buf_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
  gp_buf_printf(out, "%s_sum ", name);
  num(out, h->sum);
  gp_buf_printf(out, "\n%s_count %llu\n", name, (unsigned long long)h->count);
}

void gp_prom_histogram(gp_buf *out, const char *name, const char *help, const gp_hist *h) {
  hist(out, name, help, h);
}

static void by_name(gp_buf *out, const char *name, const char *type, const char *help,
                    const char *label, const char *const *names, const int *values, int max) {
  family(out, name, type, help);
  for (int i = 0; names && i < max && names[i]; i++) sample(out, name, label, names[i], values[i]);
}

/* One sample labelled queue, model and capacity. */
static void qmc_sample(gp_buf *out, const char *name, const char *queue, const char *model,
                       const char *capacity, double v) {
  gp_buf_printf(out, "%s{queue=\"", name);
  gp_prom_escape(out, queue);
  gp_buf_puts(out, "\",model=\"");
  gp_prom_escape(out, model);
  gp_buf_puts(out, "\",capacity=\"");
  gp_prom_escape(out, capacity);
  gp_buf_puts(out, "\"} ");
  num(out, v);
  gp_buf_puts(out, "\n");
}

/* A counter per (queue, model, capacity), the value at `offset` in each usage entry. */
static void usage_counter(gp_buf *out, const gp_server_metrics *m, const char *name,
                          const char *help, size_t offset) {
  family(out, name, "counter", help);
  for (int i = 0; i < m->n_usage; i++) {
    const gp_server_metrics_usage *u = &m->usage[i];
    qmc_sample(out, name, u->queue, u->model, u->capacity,
               *(const double *)((const char *)u + offset));
  }
}

static void budget_sample(gp_buf *out, const char *name, const gp_server_metrics_budget *b,
                          double v) {
  gp_buf_printf(out, "%s{queue=\"", name);
  gp_prom_escape(out, b->queue);
  gp_buf_puts(out, "\",unit=\"");
  gp_prom_escape(out, b->unit);
  gp_buf_puts(out, "\"} ");
  num(out, v);
  gp_buf_puts(out, "\n");
}

/* Budgets (queue, unit) and costs (queue, model, capacity). */
static void budgets_and_costs(const gp_server_metrics *m, gp_buf *out) {
  family(out, "gpool_queue_budget", "gauge",
         "The queue's budget per period, in GPU-hours or in the price catalogue's currency.");
  for (int i = 0; i < m->n_budgets; i++)
    budget_sample(out, "gpool_queue_budget", &m->budgets[i], m->budgets[i].budget);
  family(out, "gpool_queue_budget_spent", "gauge",
         "What the queue spent of its budget in the current period.");
  for (int i = 0; i < m->n_budgets; i++)
    budget_sample(out, "gpool_queue_budget_spent", &m->budgets[i], m->budgets[i].spent);
  family(out, "gpool_queue_budget_used_ratio", "gauge",
         "Spent over budget in the current period (1: all of it).");
  for (int i = 0; i < m->n_budgets; i++)
    budget_sample(out, "gpool_queue_budget_used_ratio", &m->budgets[i], m->budgets[i].used_ratio);
  family(out, "gpool_queue_budget_alerts_total", "counter",
         "Budget alerts raised since the server started, at 80% and 100% of a period's budget.");
  for (int i = 0; i < m->n_budgets; i++) {
    for (int k = 0; k < 2; k++) {
      gp_buf_puts(out, "gpool_queue_budget_alerts_total{queue=\"");
      gp_prom_escape(out, m->budgets[i].queue);
      gp_buf_printf(out, "\",threshold=\"%s\"} %llu\n", k ? "100" : "80",
                    (unsigned long long)(k ? m->budgets[i].alerts_100 : m->budgets[i].alerts_80));
    }
  }
  family(out, "gpool_queue_cost_total", "counter",
         "Cost of the queue's allocations since the server started, at the catalogue's prices.");
  for (int i = 0; i < m->n_costs; i++) {
    const gp_server_metrics_cost *c = &m->costs[i];
    qmc_sample(out, "gpool_queue_cost_total", c->queue, c->model, c->capacity, c->cost);
  }
}

static void spot(const gp_server_metrics *m, gp_buf *out) {
  const char *name = "gpool_spot_interruptions_total";
  family(out, name, "counter",
         "Spot interruption notices acted on (node drained, jobs stopped), by the node's "
         "capacity type and where the notice came from.");
  for (int c = 0; m->capacity_names && c < GP_METRICS_MAX_STATES && m->capacity_names[c]; c++)
    for (int k = 0; m->interrupt_sources && k < GP_METRICS_MAX_STATES && m->interrupt_sources[k];
         k++) {
      if (!m->interruptions[c][k]) continue;
      gp_buf_printf(out, "%s{node_capacity=\"", name);
      gp_prom_escape(out, m->capacity_names[c]);
      gp_buf_puts(out, "\",source=\"");
      gp_prom_escape(out, m->interrupt_sources[k]);
      gp_buf_puts(out, "\"} ");
      num(out, (double)m->interruptions[c][k]);
      gp_buf_puts(out, "\n");
    }
  hist(out, "gpool_spot_notice_to_stop_seconds",
       "From an agent seeing a spot interruption notice to the stop orders of the node's jobs.",
       &m->notice_to_stop_s);
}

void gp_server_metrics_render(const gp_server_metrics *m, gp_buf *out) {
#define QOFF(f) offsetof(gp_server_metrics_queue, f)
  queue_gauge(out, m, "gpool_queue_pending_jobs", "Jobs waiting in the queue.",
              QOFF(pending_jobs), true);
  queue_gauge(out, m, "gpool_queue_running_jobs", "Jobs running from the queue.",
              QOFF(running_jobs), true);
  queue_gauge(out, m, "gpool_queue_pending_gpus", "GPUs requested by the queue's pending jobs.",
              QOFF(pending_gpus), false);
  queue_gauge(out, m, "gpool_queue_allocated_gpus", "GPUs allocated to the queue's jobs.",
              QOFF(allocated), false);
  queue_gauge(out, m, "gpool_queue_deserved_gpus", "GPUs guaranteed to the queue (its quota).",
              QOFF(deserved), false);
  queue_gauge(out, m, "gpool_queue_fair_share_gpus",
              "The queue's fair share of GPUs computed in the last scheduling cycle.",
              QOFF(fair_share), false);
  queue_gauge(out, m, "gpool_queue_weight", "The queue's weight for sharing spare GPUs.",
              QOFF(weight), false);
  family(out, "gpool_queue_limit_gpus", "gauge", "Hard ceiling of GPUs for the queue (absent: none).");
  for (int i = 0; i < m->n_queues; i++)
    if (m->queues[i].limit >= 0)
      sample(out, "gpool_queue_limit_gpus", "queue", m->queues[i].name, m->queues[i].limit);
  queue_gauge(out, m, "gpool_queue_gpus_allocated_idle",
              "GPUs allocated to the queue whose utilisation stayed under the idle threshold "
              "for the idle window.",
              QOFF(gpus_allocated_idle), true);
  queue_gauge(out, m, "gpool_jobs_idle",
              "Running jobs of the queue whose SM use stayed under their idle threshold for "
              "their idle window (the queue's idle policy, else 5% for 10 min).",
              QOFF(jobs_idle), true);
  family(out, "gpool_idle_actions_total", "counter",
         "Actions of the queue's idle policy on idle jobs since the server started.");
  for (int i = 0; i < m->n_queues; i++)
    for (int a = GP_IDLE_NOTIFY; a <= GP_IDLE_CANCEL; a++) {
      gp_buf_puts(out, "gpool_idle_actions_total{queue=\"");
      gp_prom_escape(out, m->queues[i].name);
      gp_buf_printf(out, "\",action=\"%s\"} %llu\n", gp_idle_action_name((gp_idle_action)a),
                    (unsigned long long)m->queues[i].idle_actions[a]);
    }
  queue_gauge(out, m, "gpool_queue_cost_rate_per_hour",
              "Cost per hour of the queue's running allocations at the catalogue's prices now "
              "(each GPU's share times its price per GPU-hour).",
              QOFF(cost_rate_per_h), false);
  family(out, "gpool_queue_pending_jobs_by_reason", "gauge",
         "Pending jobs of the queue by machine-readable pending reason.");
  for (int i = 0; i < m->n_queues; i++) {
    for (int r = 0; m->reason_names && r < GP_METRICS_MAX_REASONS && m->reason_names[r]; r++) {
      gp_buf_puts(out, "gpool_queue_pending_jobs_by_reason{queue=\"");
      gp_prom_escape(out, m->queues[i].name);
      gp_buf_puts(out, "\",reason=\"");
      gp_prom_escape(out, m->reason_names[r]);
      gp_buf_printf(out, "\"} %d\n", m->queues[i].pending_by_reason[r]);
    }
  }
#undef QOFF
  by_name(out, "gpool_jobs", "gauge", "Jobs by state.", "state", m->job_state_names,
          m->jobs_by_state, GP_METRICS_MAX_STATES);
  by_name(out, "gpool_nodes", "gauge", "Nodes by state.", "state", m->node_state_names,
          m->nodes_by_state, GP_METRICS_MAX_STATES);
  family(out, "gpool_agents", "gauge",
         "Node agents by liveness: up (heartbeat within the timeout) or down.");
  sample(out, "gpool_agents", "state", "up", m->agents_up);
  sample(out, "gpool_agents", "state", "down", m->agents_down);
  family(out, "gpool_gpus", "gauge", "GPUs of the fleet: total, allocated, unhealthy (drained or failed).");
  sample(out, "gpool_gpus", "state", "total", m->gpus_total);
  sample(out, "gpool_gpus", "state", "allocated", m->gpus_allocated);
  sample(out, "gpool_gpus", "state", "unhealthy", m->gpus_unhealthy);
  family(out, "gpool_gpus_allocated_idle", "gauge",
         "Allocated GPUs whose utilisation stayed under the idle threshold for the idle window.");
  sample(out, "gpool_gpus_allocated_idle", NULL, NULL, m->gpus_allocated_idle);
  family(out, "gpool_gpu_idle_threshold_percent", "gauge",
         "Utilisation under which an allocated GPU counts as idle.");
  sample(out, "gpool_gpu_idle_threshold_percent", NULL, NULL, m->idle_threshold_pct);
  family(out, "gpool_gpu_idle_window_seconds", "gauge",
         "How long an allocated GPU must stay under the threshold to count as idle.");
  sample(out, "gpool_gpu_idle_window_seconds", NULL, NULL, m->idle_window_s);
  family(out, "gpool_submissions_total", "counter", "Jobs submitted since the server started.");
  sample(out, "gpool_submissions_total", NULL, NULL, (double)m->submissions_total);
  family(out, "gpool_jobs_started_total", "counter", "Job starts since the server started.");
  sample(out, "gpool_jobs_started_total", NULL, NULL, (double)m->jobs_started_total);
  family(out, "gpool_preemptions_total", "counter", "Preemptions since the server started.");
  sample(out, "gpool_preemptions_total", NULL, NULL, (double)m->preemptions_total);
  family(out, "gpool_scheduling_cycles_total", "counter",
         "Scheduling cycles run since the server started.");
  sample(out, "gpool_scheduling_cycles_total", NULL, NULL, (double)m->sched_cycles_total);
  family(out, "gpool_scheduling_steps_skipped_total", "counter",
         "Scheduling cycles that skipped the step: nothing it reads had changed and its last plan "
         "still held.");
  sample(out, "gpool_scheduling_steps_skipped_total", NULL, NULL, (double)m->sched_steps_skipped_total);
  family(out, "gpool_scheduling_last_cycle_seconds", "gauge",
         "Wall time of the last scheduling cycle.");
  sample(out, "gpool_scheduling_last_cycle_seconds", NULL, NULL, m->last_sched_cycle_s);
  hist(out, "gpool_scheduling_cycle_seconds", "Wall time of scheduling cycles.", &m->sched_cycle_s);
  family(out, "gpool_scheduling_cycle_cpu_seconds_total", "counter",
         "CPU time the server's state thread spent in scheduling cycles.");
  sample(out, "gpool_scheduling_cycle_cpu_seconds_total", NULL, NULL, m->sched_cycles_cpu_s);
  family(out, "gpool_store_write_failures_total", "counter",
         "Store transactions that failed (a full disk, an I/O error): each answered 503.");
  sample(out, "gpool_store_write_failures_total", NULL, NULL, (double)m->store_write_failures_total);
  family(out, "gpool_store_writes_refused_total", "counter",
         "Requests that would write, refused with 503 while the store was not writable.");
  sample(out, "gpool_store_writes_refused_total", NULL, NULL, (double)m->store_writes_refused_total);
  family(out, "gpool_store_writable", "gauge",
         "1 while the store takes writes; 0 while the server refuses writes after a failure.");
  sample(out, "gpool_store_writable", NULL, NULL, m->store_writable ? 1 : 0);
  hist(out, "gpool_queue_wait_seconds", "Time jobs waited from submission to start.",
       &m->queue_wait_s);
  hist(out, "gpool_job_run_seconds", "Run time of jobs that ended.", &m->job_run_s);
  usage_counter(out, m, "gpool_queue_gpu_seconds_total",
                "GPU-seconds allocated to the queue's jobs (x the share of each GPU held) since "
                "the server started, by GPU model and capacity type.",
                offsetof(gp_server_metrics_usage, gpu_s));
  usage_counter(out, m, "gpool_queue_used_gpu_seconds_total",
                "SM-busy GPU-seconds of the queue's jobs where measured, since the server "
                "started, by GPU model and capacity type.",
                offsetof(gp_server_metrics_usage, used_gpu_s));
  usage_counter(out, m, "gpool_queue_measured_gpu_seconds_total",
                "The part of gpool_queue_gpu_seconds_total whose use the agents measured (use "
                "over this is the queue's utilisation; MPS clients' use is not measured).",
                offsetof(gp_server_metrics_usage, measured_gpu_s));
  budgets_and_costs(m, out);
  spot(m, out);
}
