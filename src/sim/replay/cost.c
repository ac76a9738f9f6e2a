/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's cost (cost.h). Intervals are kept one per run and node (a GPU mask, not a
 * row per GPU), so a year of Philly costs a few megabytes; they are split into one ledger
 * interval per GPU only when priced, since a share is a part of one physical GPU. */
#include "sim/replay/cost.h"

#include <stdlib.h>
#include <string.h>

#include "ledger/report.h"
#include "util/mem.h"

typedef struct run_iv {
  gp_time start, end;
  const char *user;
  int job, attempt, queue, node;
  uint32_t gpu_mask;
  int gpu_milli;
} run_iv;

typedef struct iv_list {
  run_iv *iv;
  size_t n, cap;
} iv_list;

typedef struct node_gap {
  int node;
  gp_time start, end;
} node_gap;

/* A provider node's life. */
typedef struct prov_node {
  const char *name, *model, *price_model;
  gp_capacity capacity;
  int gpus;
  gp_time start, end; /* end INT64_MAX: still there at the finish */
} prov_node;

struct gp__sim_cost {
  iv_list runs, held, released; /* every run; idle stretches held; stretches freed */
  node_gap *gaps;               /* stretches nodes were not paid for, in time order */
  size_t n_gaps, cap_gaps;
  int n_fleet;                  /* node ids from here are provider nodes */
  prov_node *prov;
  int n_prov, cap_prov;
};

gp__sim_cost *gp__sim_cost_new(void) { return gp_xcalloc(1, sizeof(gp__sim_cost)); }

void gp__sim_cost_free(gp__sim_cost *c) {
  if (!c) return;
  free(c->prov);
  free(c->runs.iv);
  free(c->held.iv);
  free(c->released.iv);
  free(c->gaps);
  free(c);
}

static void push(iv_list *l, const run_iv *v) {
  if (v->end <= v->start || v->gpu_mask == 0 || v->gpu_milli <= 0) return; /* costs nothing */
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 1024;
    l->iv = gp_xrealloc(l->iv, l->cap * sizeof *l->iv);
  }
  l->iv[l->n++] = *v;
}

int gp__sim_cost_node_new(gp__sim_cost *c, int n_fleet, const gp_node *shape, const char *name,
                          const char *price_model, gp_time start) {
  c->n_fleet = n_fleet;
  if (c->n_prov == c->cap_prov) {
    c->cap_prov = c->cap_prov ? c->cap_prov * 2 : 64;
    c->prov = gp_xrealloc(c->prov, (size_t)c->cap_prov * sizeof *c->prov);
  }
  c->prov[c->n_prov] = (prov_node){.name = name, .model = shape->model,
                                   .price_model = price_model, .capacity = shape->capacity,
                                   .gpus = shape->n_gpus, .start = start, .end = INT64_MAX};
  return n_fleet + c->n_prov++;
}

void gp__sim_cost_node_end(gp__sim_cost *c, int id, gp_time end) {
  c->prov[id - c->n_fleet].end = end;
}

void gp__sim_cost_add(gp__sim_cost *c, int job, int attempt, int queue, const char *user,
                      int node, uint32_t gpu_mask, int gpu_milli, gp_time start, gp_time end) {
  push(&c->runs, &(run_iv){.start = start, .end = end, .user = user, .job = job,
                           .attempt = attempt, .queue = queue, .node = node,
                           .gpu_mask = gpu_mask, .gpu_milli = gpu_milli});
}

void gp__sim_cost_add_idle(gp__sim_cost *c, bool released, int job, int queue, const char *user,
                           int node, uint32_t gpu_mask, int gpu_milli, gp_time start,
                           gp_time end) {
  push(released ? &c->released : &c->held,
       &(run_iv){.start = start, .end = end, .user = user, .job = job, .attempt = 1,
                 .queue = queue, .node = node, .gpu_mask = gpu_mask, .gpu_milli = gpu_milli});
}

void gp__sim_cost_node_gap(gp__sim_cost *c, int node, gp_time start, gp_time end) {
  if (end <= start) return;
  if (c->n_gaps == c->cap_gaps) {
    c->cap_gaps = c->cap_gaps ? c->cap_gaps * 2 : 64;
    c->gaps = gp_xrealloc(c->gaps, c->cap_gaps * sizeof *c->gaps);
  }
  c->gaps[c->n_gaps++] = (node_gap){.node = node, .start = start, .end = end};
}

/* By node, then time (a stable order: recorded in time order within a node). */
static int gap_cmp(const void *a, const void *b) {
  const node_gap *x = a, *y = b;
  if (x->node != y->node) return x->node < y->node ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

static int queue_index(const gp_replay_queues *q, const char *name) {
  for (int i = 0; name && i < q->n; i++)
    if (strcmp(q->queues[i].name, name) == 0) return i;
  return -1;
}

/* Provider node `k`'s life as a ledger interval clipped to [from, to); false when it
 * lies outside. */
static bool prov_iv(const prov_node *v, gp_time from, gp_time to, gp_ledger_node_iv *ret) {
  *ret = (gp_ledger_node_iv){.node = v->name, .model = v->price_model, .capacity = v->capacity,
                             .gpus = v->gpus, .state = GP_LEDGER_UP,
                             .start = v->start > from ? v->start : from,
                             .end = v->end < to ? v->end : to};
  return v->gpus > 0 && ret->end > ret->start;
}

/* A report over [from, to) of the whole fleet (paid for over the whole replay: a failed
 * node is still owned), the provider nodes over their lives, and the intervals of `l`. */
static gp_ledger_report *report_of(const gp__sim_cost *c, const iv_list *l, unsigned group,
                                   const gp_prices *prices, const gp_fleet *fleet,
                                   const gp_replay_queues *queues, gp_time from, gp_time to) {
  gp_ledger_params p = {.from = from, .to = to, .group = group, .prices = prices};
  gp_ledger_report *rep = gp_ledger_report_new(&p);
  gp_ledger_node_iv pv;
  for (int k = 0; k < c->n_prov; k++)
    if (prov_iv(&c->prov[k], from, to, &pv)) gp_ledger_report_add_node(rep, &pv);
  size_t g = 0; /* gaps are sorted by node (gp__sim_cost_finish) */
  for (int i = 0; i < fleet->n_nodes; i++) {
    const gp_node *n = &fleet->nodes[i];
    gp_ledger_node_iv nv = {.node = n->name, .model = n->model, .capacity = n->capacity,
                            .gpus = n->n_gpus, .state = GP_LEDGER_UP, .start = from, .end = to};
    /* Paid for from `from` to `to` but in its gaps. */
    for (; g < c->n_gaps && c->gaps[g].node == i; g++) {
      gp_time s = c->gaps[g].start > from ? c->gaps[g].start : from;
      nv.end = s < to ? s : to;
      if (n->n_gpus > 0 && nv.end > nv.start) gp_ledger_report_add_node(rep, &nv);
      if (c->gaps[g].end > nv.start) nv.start = c->gaps[g].end;
    }
    nv.end = to;
    if (n->n_gpus > 0 && nv.end > nv.start) gp_ledger_report_add_node(rep, &nv);
  }
  for (size_t k = 0; k < l->n; k++) {
    const run_iv *v = &l->iv[k];
    const char *name, *model;
    gp_capacity cap;
    if (v->node < fleet->n_nodes) {
      const gp_node *n = &fleet->nodes[v->node];
      name = n->name, model = n->model, cap = n->capacity;
    } else {
      const prov_node *n = &c->prov[v->node - fleet->n_nodes];
      name = n->name, model = n->price_model, cap = n->capacity;
    }
    gp_ledger_job_iv jv = {.job = v->job + 1, .attempt = v->attempt,
                           .queue = queues->queues[v->queue].name, .user = v->user ? v->user : "",
                           .node = name, .model = model, .capacity = cap,
                           .share = v->gpu_milli / (double)GP_GPU_MILLI, .start = v->start,
                           .end = v->end, .used_gpu_s = -1, .energy_j = -1};
    for (uint32_t m = v->gpu_mask; m; m &= m - 1) gp_ledger_report_add_job(rep, &jv);
  }
  return rep;
}

/* The job cost of the intervals of `l`: what those GPU-hours cost at their GPUs' prices.
 * Only the job rows are read: freed stretches are what runs would have held, so two of
 * them may overlap on one GPU and the report's idle rows mean nothing here. */
static int price_idle(const gp__sim_cost *c, const iv_list *l, const gp_prices *prices,
                      const gp_fleet *fleet, const gp_replay_queues *queues, gp_time from,
                      gp_time to, double *cost, bool *unknown, gp_err *err) {
  *cost = 0;
  if (l->n == 0) return 0;
  /* A freed stretch may reach past the replay's last end (the run it was cut from would
   * have held it): the period is stretched to cover every interval. */
  for (size_t k = 0; k < l->n; k++)
    if (l->iv[k].end > to) to = l->iv[k].end;
  gp_ledger_report *rep = report_of(c, l, 0, prices, fleet, queues, from, to);
  const gp_ledger_row *rows = NULL;
  int n_rows = 0;
  int rc = gp_ledger_report_finish(rep, &rows, &n_rows, err);
  for (int i = 0; !rc && i < n_rows; i++)
    if (rows[i].kind == GP_LR_JOBS) {
      *cost += rows[i].cost;
      *unknown = *unknown || rows[i].cost_unknown;
    }
  gp_ledger_report_free(rep);
  return rc;
}

/* The provider nodes' share of the fleet cost: a report of their lives alone. */
static int price_provider_nodes(const gp__sim_cost *c, const gp_prices *prices, gp_time from,
                                gp_time to, gp_replay_scale_stats *st, gp_err *err) {
  gp_ledger_params p = {.from = from, .to = to, .prices = prices};
  gp_ledger_report *rep = gp_ledger_report_new(&p);
  gp_ledger_node_iv pv;
  for (int k = 0; k < c->n_prov; k++)
    if (prov_iv(&c->prov[k], from, to, &pv)) gp_ledger_report_add_node(rep, &pv);
  const gp_ledger_row *rows = NULL;
  int n_rows = 0;
  int rc = gp_ledger_report_finish(rep, &rows, &n_rows, err);
  if (!rc) {
    st->priced = true;
    st->cost = gp_ledger_report_fleet_cost(rep);
    for (int i = 0; i < n_rows; i++) st->cost_unknown = st->cost_unknown || rows[i].cost_unknown;
  }
  gp_ledger_report_free(rep);
  return rc;
}

int gp__sim_cost_finish(gp__sim_cost *c, const gp_prices *prices, const gp_fleet *fleet,
                        const gp_replay_queues *queues, gp_time from, gp_time to,
                        gp_replay_result *r, gp_err *err) {
  /* Nodes in index order, each one's gaps in time order. */
  if (c->n_gaps > 1) qsort(c->gaps, c->n_gaps, sizeof *c->gaps, gap_cmp);
  gp_ledger_report *rep = report_of(c, &c->runs, GP_LG_QUEUE, prices, fleet, queues, from, to);
  const gp_ledger_row *rows = NULL;
  int n_rows = 0;
  int rc = gp_ledger_report_finish(rep, &rows, &n_rows, err);
  if (!rc && gp_ledger_report_anomalies(rep) > 0)
    rc = gp_err_set(err, GP_ESTATE, NULL, 0, NULL,
                    "the replay's ledger is inconsistent with its fleet (%lld anomalies)",
                    (long long)gp_ledger_report_anomalies(rep));
  if (rc) {
    gp_ledger_report_free(rep);
    return rc;
  }
  gp_replay_cost *t = &r->cost;
  memset(t, 0, sizeof *t);
  t->priced = true;
  t->currency = gp_arena_strdup(r->arena, prices->currency ? prices->currency : "");
  for (int i = 0; i < n_rows; i++) {
    const gp_ledger_row *row = &rows[i];
    t->unknown = t->unknown || row->cost_unknown;
    switch (row->kind) {
    case GP_LR_JOBS: {
      t->jobs += row->cost;
      int q = queue_index(queues, row->queue);
      if (q >= 0) {
        r->queues[q].cost += row->cost;
        r->queues[q].cost_unknown = r->queues[q].cost_unknown || row->cost_unknown;
      }
      break;
    }
    case GP_LR_IDLE: t->idle += row->cost; break;
    case GP_LR_DRAINED_DOWN: t->drained_down += row->cost; break;
    case GP_LR_UNUSED_COMMITMENT: t->unused_commitment += row->cost; break;
    }
  }
  t->fleet = gp_ledger_report_fleet_cost(rep);
  gp_ledger_report_free(rep);
  if (c->n_prov > 0 && (rc = price_provider_nodes(c, prices, from, to, &r->scale, err))) return rc;
  if (!r->idle.modelled) return 0;
  gp_replay_idle *id = &r->idle;
  double held = 0;
  if ((rc = price_idle(c, &c->held, prices, fleet, queues, from, to, &held, &id->cost_unknown,
                       err)) ||
      (rc = price_idle(c, &c->released, prices, fleet, queues, from, to, &id->released_cost,
                       &id->cost_unknown, err)))
    return rc;
  id->priced = true;
  id->cost = held + id->released_cost;
  return 0;
}
