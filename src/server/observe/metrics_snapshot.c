/* SPDX-License-Identifier: Apache-2.0 */
/* Fills the gp_server_metrics snapshot (src/server/state/metrics.h, rendered by obs's module) from
 * the state, on the state thread, for GET /metrics. Pending reasons come from the last
 * scheduling step; idle GPUs from agents' telemetry (an allocated GPU under 5% for 10 min). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger/prices.h"

#include "server/accounting/budgets.h"
#include "server/accounting/ledger.h"
#include "server/accounting/prices.h"
#include "server/elastic/interrupt.h"
#include "server/observe/metrics_snapshot.h"
#include "server/workloads/sessions.h"
#include "server/elastic/autoscale.h"
#include "server/state/server_int.h"
#include "server/state/metrics.h"
#include "util/mem.h"

static const char *const reason_names[] = {
    "Priority", "QueueLimit", "Resources", "Reservation", "Dependency", "Held",
    "NoMatchingNodes", "GpuModelUnavailable", "WaitingForPreemption", NULL};
static const char *const job_states[] = {"pending", "running", "held", "stopping", "completed",
                                         "failed", "cancelled", "preempted", "timeout", NULL};
static const char *const node_states[] = {"up", "down", "drain", "cordon", NULL};

typedef struct usage_list {
  gp_server_metrics_usage *v;
  size_t cap;
  int n;
} usage_list;

static void add_usage(void *ctx, const gp_srv_usage_total *t) {
  usage_list *l = ctx;
  gp_xgrow((void **)&l->v, &l->cap, (size_t)l->n + 1, sizeof *l->v);
  l->v[l->n++] = (gp_server_metrics_usage){t->queue, t->model, gp_capacity_name(t->capacity),
                                           t->gpu_s, t->used_gpu_s, t->measured_gpu_s};
}

static int queue_index(const gp_server_metrics_queue *qs, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(qs[i].name, name) == 0) return i;
  return -1;
}

/* What a task's GPUs cost per hour now: each GPU's share times its price per GPU-hour. */
static double task_cost_rate(const gp_srv_state *s, const gp_srv_alloc *a, int64_t now) {
  const gp_prices *prices = gp__srv_prices(s);
  if (!prices || a->node < 0 || a->node >= s->n_nodes) return 0;
  const gp_srv_node *n = s->nodes[a->node];
  double rate;
  if (!gp_prices_rate(prices, n->model, n->capacity, now, &rate)) return 0;
  return gp__srv_task_share(s, a) * rate;
}

typedef struct budget_rows {
  const gp_srv_state *s;
  gp_server_metrics_budget *rows;
  int n;
  size_t cap;
} budget_rows;

static void add_budget(void *ctx, const gp_srv_budget_queue *e) {
  budget_rows *b = ctx;
  gp_xgrow((void **)&b->rows, &b->cap, (size_t)b->n + 1, sizeof *b->rows);
  const gp_prices *prices = gp__srv_prices(b->s);
  const char *unit = e->budget.money ? (prices ? prices->currency : "") : "gpu_hours";
  b->rows[b->n++] = (gp_server_metrics_budget){e->queue, unit, e->budget.limit, e->spent,
                                               e->spent / e->budget.limit, e->alerts_total[0],
                                               e->alerts_total[1]};
}

typedef struct cost_rows {
  gp_server_metrics_cost *rows;
  int n;
  size_t cap;
} cost_rows;

static void add_cost(void *ctx, const char *queue, const char *model, gp_capacity c, double cost) {
  cost_rows *r = ctx;
  gp_xgrow((void **)&r->rows, &r->cap, (size_t)r->n + 1, sizeof *r->rows);
  r->rows[r->n++] = (gp_server_metrics_cost){queue, model, gp_capacity_name(c), cost};
}

char *gp__srv_metrics_text(const gp_srv_state *s) {
  int64_t now = (int64_t)time(NULL);
  gp_server_metrics m;
  memset(&m, 0, sizeof m);
  m.reason_names = reason_names;
  m.job_state_names = job_states;
  m.node_state_names = node_states;
  int nq = s->n_queues;
  gp_server_metrics_queue *qs = gp_xcalloc((size_t)nq + 1, sizeof *qs);
  for (int i = 0; i < nq; i++) {
    const gp_srv_queue *q = s->queues[i];
    qs[i].name = q->name;
    qs[i].deserved = q->deserved;
    qs[i].limit = q->limit;
    qs[i].weight = q->weight;
    memcpy(qs[i].idle_actions, q->idle_actions, sizeof qs[i].idle_actions);
    for (int k = 0; k < s->n_figs; k++)
      if (strcmp(s->figs[k].name, q->name) == 0) qs[i].fair_share = s->figs[k].fig.fair_share;
  }
  /* Active jobs from the active list, ended ones from their counts (most are not in
   * memory). */
  for (int a = 0; a < s->n_active; a++)
    if ((unsigned)s->active[a]->state < GP_METRICS_MAX_STATES) m.jobs_by_state[s->active[a]->state]++;
  for (int st = 0; st < GP_METRICS_MAX_STATES && st < 16; st++)
    if (gp_job_state_is_final((gp_job_state)st)) m.jobs_by_state[st] += (int)s->ended.by_state[st];
  for (int a = 0; a < s->n_active; a++) {
    const gp_srv_job *j = s->active[a];
    int qi = queue_index(qs, nq, j->queue);
    if (qi < 0) continue;
    if (j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING) {
      qs[qi].running_jobs++;
      if (gp__srv_idle_now(s, j, now)) qs[qi].jobs_idle++;
      for (int t = 0; t < j->n_alloc; t++) {
        int g = __builtin_popcount(j->alloc[t].gpu_mask);
        qs[qi].allocated += g * (j->alloc[t].gpu_milli / 1000.0);
        qs[qi].cost_rate_per_h += task_cost_rate(s, &j->alloc[t], now);
        m.gpus_allocated += g;
      }
    } else if (j->state == GP_JOB_PENDING || j->state == GP_JOB_HELD) {
      qs[qi].pending_jobs++;
      qs[qi].pending_gpus += (double)j->gpus * j->tasks + j->gpu_milli / 1000.0 * j->tasks;
      int reason = j->state == GP_JOB_HELD ? GP_PEND_HELD : j->pending_reason;
      if (reason >= 0 && reason < GP_METRICS_MAX_REASONS) qs[qi].pending_by_reason[reason]++;
    }
  }
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    gp_node_state st = n->alive ? n->admin_state : GP_NODE_DOWN;
    m.nodes_by_state[st]++;
    if (n->alive) m.agents_up++;
    else m.agents_down++;
    m.gpus_total += n->n_gpus;
    for (int g = 0; g < n->n_gpus; g++) {
      if (n->gpus[g].health != GP_GPU_HEALTHY) m.gpus_unhealthy++;
      if (!n->gpus[g].idle_since || n->last_heartbeat - n->gpus[g].idle_since < GP_SRV_IDLE_WINDOW_S)
        continue;
      /* Idle long enough: count it if a job holds it, for that job's queue. */
      for (int a = 0; a < s->n_active; a++) {
        const gp_srv_job *j = s->active[a];
        bool holds = false;
        for (int t = 0; t < j->n_alloc; t++)
          holds = holds || (j->alloc[t].node == i && (j->alloc[t].gpu_mask & (UINT32_C(1) << g)));
        if (!holds) continue;
        m.gpus_allocated_idle++;
        int qi = queue_index(qs, nq, j->queue);
        if (qi >= 0) qs[qi].gpus_allocated_idle++;
        break;
      }
    }
  }
  m.idle_threshold_pct = GP_SRV_IDLE_PCT;
  m.idle_window_s = GP_SRV_IDLE_WINDOW_S;
  m.queues = qs;
  m.n_queues = nq;
  m.submissions_total = s->counters.submissions;
  m.jobs_started_total = s->counters.starts;
  m.preemptions_total = s->counters.preemptions;
  m.sched_cycles_total = s->counters.sched_cycles;
  m.sched_steps_skipped_total = s->counters.steps_skipped;
  m.last_sched_cycle_s = s->counters.last_cycle_s;
  m.sched_cycles_cpu_s = s->counters.cycles_cpu_s;
  m.sched_cycle_s = s->counters.cycle_s;
  m.queue_wait_s = s->counters.wait_s;
  m.job_run_s = s->counters.run_s;
  m.store_write_failures_total = s->store_health.write_failures;
  m.store_writes_refused_total = s->store_health.refused_total;
  m.store_writable = !s->store_health.degraded;
  usage_list ul = {NULL, 0, 0};
  gp__srv_usage_totals(s, time(NULL), add_usage, &ul);
  m.usage = ul.v;
  m.n_usage = ul.n;
  budget_rows br = {s, NULL, 0, 0};
  gp__srv_budget_each(s, add_budget, &br);
  m.budgets = br.rows;
  m.n_budgets = br.n;
  cost_rows cr = {NULL, 0, 0};
  gp__srv_budget_costs(s, add_cost, &cr);
  m.costs = cr.rows;
  m.n_costs = cr.n;
  const gp_prices *prices = gp__srv_prices(s);
  m.currency = prices ? prices->currency : NULL;
  static const char *capacities[GP_SRV_CAPACITIES + 1];
  for (int c = 0; c < GP_SRV_CAPACITIES; c++) capacities[c] = gp_capacity_name((gp_capacity)c);
  static const char *sources[GP_SRV_INTERRUPT_SOURCES + 1];
  for (int k = 0; k < GP_SRV_INTERRUPT_SOURCES; k++) sources[k] = gp__srv_interrupt_sources[k];
  m.capacity_names = capacities;
  m.interrupt_sources = sources;
  for (int c = 0; c < GP_SRV_CAPACITIES; c++)
    for (int k = 0; k < GP_SRV_INTERRUPT_SOURCES; k++)
      m.interruptions[c][k] = s->counters.interruptions[c][k];
  m.notice_to_stop_s = s->counters.notice_to_stop_s;
  if (m.notice_to_stop_s.n_bounds == 0)
    gp_hist_init(&m.notice_to_stop_s, gp_hist_bounds_notice_s, gp_hist_n_bounds_notice_s);
  gp_buf out;
  gp_buf_init(&out, 0);
  gp_server_metrics_render(&m, &out);
  gp__srv_autoscale_metrics(s, &out);
  gp__srv_sessions_metrics(s->sessions, &out);
  free(qs);
  free(ul.v);
  free(br.rows);
  free(cr.rows);
  char *text = gp_buf_steal(&out);
  gp_buf_done(&out);
  return text;
}
