/* SPDX-License-Identifier: Apache-2.0 */
/* Turning a fed ledger report into rows (gp_ledger_report_finish): idle and drained/down
 * capacity as each node interval's capacity minus the allocations attributed to it, unused
 * commitment by a sweep over the reserved GPUs present, the idle charge-back of share_idle,
 * and the sort. The fleet's cost is summed on the way, so the caller can check that the rows
 * add up to it.
 *
 * share_idle: the idle cost of each period (idle rows only; drained/down capacity and unused
 * commitment are not a queue's doing) is charged to the queues that have job rows in that
 * period, in proportion to their deserved GPUs (queues not listed deserve 0; when the
 * queues present deserve nothing in total, their usage is used instead) or to their
 * allocated GPU-seconds; within a queue, to its rows by their GPU-seconds. A period with no
 * job rows charges nobody. The charge is a second view of the idle rows' cost, in
 * idle_share_cost, not an addition to any total. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ledger/report.h"
#include "ledger/report_int.h"
#include "util/mem.h"

/* The key of a node period's capacity row: idle while the node is up, else drained/down,
 * grouped as the report asks (roll-ups are read only when the group has no node). */
static gp__ledger_key capacity_key(unsigned g, const gp__ledger_node_rec *n, int pi) {
  gp__ledger_key k;
  gp__ledger_key_init(&k);
  k.kind = (int16_t)(n->state == GP_LEDGER_UP ? GP_LR_IDLE : GP_LR_DRAINED_DOWN);
  k.period = n->first_period + pi;
  if (g & GP_LG_MODEL) k.model = n->model;
  if (g & GP_LG_CAPACITY) k.capacity = (int16_t)n->capacity;
  if (g & GP_LG_NODE) k.node = n->node;
  return k;
}

/* With roll-ups (report_days.c) the allocation of whole days is known per group, not per
 * node interval: capacity and allocation are summed per group first, and only the sums are
 * clamped. In a consistent ledger no clamp applies, so both ways give the same rows. */
static void capacity_rows_rolled(gp_ledger_report *r, gp__ledger_map *out, double *idle_by_period) {
  unsigned g = r->p.group;
  gp__ledger_map sums = {0};
  for (size_t i = 0; i < r->n_nrecs; i++) {
    const gp__ledger_node_rec *n = &r->nrecs[i];
    for (int pi = 0; pi < n->n_periods; pi++) {
      const gp__ledger_node_period *pp = &n->per[pi];
      r->fleet_cost += pp->cap_cost;
      gp__ledger_key k = capacity_key(g, n, pi);
      gp__ledger_sums *s = gp__ledger_map_get(&sums, &k);
      s->gpu_s += pp->cap_gpu_s - pp->alloc_gpu_s;
      s->cost += pp->cap_cost - pp->alloc_cost;
      s->known_gpu_s += pp->cap_gpu_s;   /* the capacity, for the clamp's tolerance */
      s->used_gpu_s += pp->cap_cost;
      if (pp->cost_unknown) s->cost_unknown = true;
    }
  }
  for (size_t e = 0; e < r->alloc_days.n; e++) {
    gp__ledger_sums *s = gp__ledger_map_get(&sums, &r->alloc_days.entries[e].key);
    s->gpu_s += r->alloc_days.entries[e].sums.gpu_s;
    s->cost += r->alloc_days.entries[e].sums.cost;
  }
  for (size_t e = 0; e < sums.n; e++) {
    const gp__ledger_key *k = &sums.entries[e].key;
    gp__ledger_sums *x = &sums.entries[e].sums;
    double gpu_s = x->gpu_s, cost = x->cost;
    if (gpu_s < -1e-6 * (x->known_gpu_s + 1) || cost < -1e-6 * (x->used_gpu_s + 1)) r->anomalies++;
    if (gpu_s < 0) gpu_s = 0;
    if (cost < 0) cost = 0;
    if (gpu_s == 0 && cost == 0) continue;
    gp__ledger_sums *s = gp__ledger_map_get(out, k);
    s->gpu_s += gpu_s;
    s->cost += cost;
    s->cost_unknown |= x->cost_unknown;
    if (k->kind == GP_LR_IDLE) idle_by_period[k->period] += cost;
  }
  gp__ledger_map_done(&sums);
}

/* Idle or drained/down rows from the node records. */
static void capacity_rows(gp_ledger_report *r, gp__ledger_map *out, double *idle_by_period) {
  if (r->rolled) {
    capacity_rows_rolled(r, out, idle_by_period);
    return;
  }
  unsigned g = r->p.group;
  /* A row's cost is unknown when some capacity of its group and period had no price, even
   * capacity that jobs held: the same rule whichever way the rows are made. */
  gp__ledger_map unknown = {0};
  for (size_t i = 0; i < r->n_nrecs; i++) {
    const gp__ledger_node_rec *n = &r->nrecs[i];
    for (int pi = 0; pi < n->n_periods; pi++) {
      const gp__ledger_node_period *pp = &n->per[pi];
      double gpu_s = pp->cap_gpu_s - pp->alloc_gpu_s, cost = pp->cap_cost - pp->alloc_cost;
      gp__ledger_key k = capacity_key(g, n, pi);
      if (pp->cost_unknown) gp__ledger_map_get(&unknown, &k)->cost_unknown = true;
      r->fleet_cost += pp->cap_cost;
      /* Rounding leaves a few ulps either way; more than that is a node holding more than
       * its GPUs, which a consistent ledger cannot show. */
      if (gpu_s < -1e-6 * (pp->cap_gpu_s + 1) || cost < -1e-6 * (pp->cap_cost + 1))
        r->anomalies++;
      if (gpu_s < 0) gpu_s = 0;
      if (cost < 0) cost = 0;
      if (gpu_s == 0 && cost == 0) continue;
      gp__ledger_sums *s = gp__ledger_map_get(out, &k);
      s->gpu_s += gpu_s;
      s->cost += cost;
      if (pp->cost_unknown) s->cost_unknown = true;
      if (n->state == GP_LEDGER_UP) idle_by_period[k.period] += cost;
    }
  }
  for (size_t e = 0; e < unknown.n; e++) {
    gp__ledger_sums *s = gp__ledger_map_find(out, &unknown.entries[e].key);
    if (s) s->cost_unknown = true;
  }
  gp__ledger_map_done(&unknown);
}

typedef struct event { int64_t t; int64_t delta; } event;

static int cmp_event(const void *a, const void *b) {
  int64_t x = ((const event *)a)->t, y = ((const event *)b)->t;
  return (x > y) - (x < y);
}

/* Unused commitment: (committed - reserved GPUs present)+ × price, swept over the
 * commitment's time inside the report, cut at period bounds. */
static void commitment_rows(gp_ledger_report *r, gp__ledger_map *out) {
  const gp_prices *p = r->p.prices;
  unsigned g = r->p.group;
  for (int ci = 0; p && ci < p->n_commitments; ci++) {
    const gp_commitment *c = &p->commitments[ci];
    int64_t w0 = c->from > r->p.from ? c->from : r->p.from, w1 = c->to < r->p.to ? c->to : r->p.to;
    if (w0 >= w1) continue;
    event *ev = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < r->n_nrecs; i++) {
      const gp__ledger_node_rec *nr = &r->nrecs[i];
      if (nr->capacity != GP_CAP_RESERVED || nr->end <= w0 || nr->start >= w1 ||
          strcasecmp(r->models.names[nr->model], c->model))
        continue;
      gp_xgrow((void **)&ev, &cap, n + 2, sizeof *ev);
      ev[n++] = (event){nr->start > w0 ? nr->start : w0, nr->gpus};
      ev[n++] = (event){nr->end < w1 ? nr->end : w1, -nr->gpus};
    }
    for (int pi = 0; pi <= r->periods.n; pi++) {
      gp_xgrow((void **)&ev, &cap, n + 1, sizeof *ev);
      int64_t t = r->periods.bound[pi];
      ev[n++] = (event){t < w0 ? w0 : t > w1 ? w1 : t, 0};
    }
    qsort(ev, n, sizeof *ev, cmp_event);
    int64_t present = 0, prev = w0;
    int32_t model = gp__ledger_intern(&r->models, c->model);
    for (size_t i = 0; i < n; i++) {
      if (ev[i].t > prev) {
        int64_t unused = c->gpus - present;
        if (unused > 0) {
          gp__ledger_key k;
          gp__ledger_key_init(&k);
          k.kind = GP_LR_UNUSED_COMMITMENT;
          k.period = gp__ledger_period_of(&r->periods, prev);
          if (g & GP_LG_MODEL) k.model = model;
          if (g & GP_LG_CAPACITY) k.capacity = GP_CAP_RESERVED;
          gp__ledger_sums *s = gp__ledger_map_get(out, &k);
          double gpu_s = (double)unused * (double)(ev[i].t - prev);
          s->gpu_s += gpu_s;
          s->cost += gpu_s * c->per_gpu_hour / 3600.0;
          r->fleet_cost += gpu_s * c->per_gpu_hour / 3600.0;
        }
        prev = ev[i].t;
      }
      present += ev[i].delta;
    }
    free(ev);
  }
}

/* A job row's queue and period alone: the key of its queue's sums in that period. */
static gp__ledger_key queue_key(const gp__ledger_key *row) {
  gp__ledger_key k;
  gp__ledger_key_init(&k);
  k.period = row->period;
  k.queue = row->queue;
  return k;
}

/* Charges each period's idle cost to the job entries (see the top of this file). */
static void share_idle(gp_ledger_report *r, const double *idle_by_period) {
  gp__ledger_map *jobs = &r->jobs, byq = {0};
  int np = r->periods.n;
  double *usage = gp_xcalloc((size_t)np, sizeof *usage);
  double *deserved = gp_xcalloc((size_t)np, sizeof *deserved);
  double *dq = gp_xcalloc(r->queues.n + 1, sizeof *dq);
  for (int i = 0; i < r->p.n_deserved; i++) {
    int32_t q = gp__ledger_intern_find(&r->queues, r->p.deserved_queue[i]);
    if (q >= 0) dq[q] = r->p.deserved_gpus[i];
  }
  for (size_t e = 0; e < jobs->n; e++) {
    gp__ledger_key k = queue_key(&jobs->entries[e].key);
    gp__ledger_sums *s = gp__ledger_map_get(&byq, &k);
    if (s->gpu_s == 0 && !s->cost_unknown) {
      s->cost_unknown = true; /* marks "counted": the queue's deserved GPUs once per period */
      deserved[k.period] += dq[k.queue];
    }
    s->gpu_s += jobs->entries[e].sums.gpu_s;
    usage[k.period] += jobs->entries[e].sums.gpu_s;
  }
  bool by_deserved = r->p.share_idle == GP_LSI_DESERVED;
  for (size_t e = 0; e < jobs->n; e++) {
    gp__ledger_key k = queue_key(&jobs->entries[e].key);
    int32_t p = k.period;
    double queue_gpu_s = gp__ledger_map_get(&byq, &k)->gpu_s, queue_part;
    if (idle_by_period[p] == 0 || queue_gpu_s <= 0) continue;
    if (by_deserved && deserved[p] > 0) queue_part = dq[k.queue] / deserved[p];
    else if (usage[p] > 0) queue_part = queue_gpu_s / usage[p];
    else continue;
    gp__ledger_sums *row = &jobs->entries[e].sums;
    row->idle_share_cost += idle_by_period[p] * queue_part * row->gpu_s / queue_gpu_s;
  }
  gp__ledger_map_done(&byq);
  free(usage);
  free(deserved);
  free(dq);
}

static int cmp_str(const char *a, const char *b) {
  if (!a || !b) return (a != NULL) - (b != NULL);
  return strcmp(a, b);
}

static int cmp_row(const void *pa, const void *pb) {
  const gp_ledger_row *a = pa, *b = pb;
  int c;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  if (a->period_start != b->period_start) return a->period_start < b->period_start ? -1 : 1;
  if ((c = cmp_str(a->queue, b->queue)) || (c = cmp_str(a->user, b->user)) ||
      (c = cmp_str(a->model, b->model)) || (c = cmp_str(a->capacity, b->capacity)) ||
      (c = cmp_str(a->node, b->node)) || (c = cmp_str(a->service, b->service)))
    return c;
  return (a->job > b->job) - (a->job < b->job);
}

static void add_rows(gp_ledger_report *r, const gp__ledger_map *m, bool drop_queue) {
  for (size_t e = 0; e < m->n; e++) {
    const gp__ledger_key *k = &m->entries[e].key;
    const gp__ledger_sums *s = &m->entries[e].sums;
    gp_ledger_row *row = &r->rows[r->n_rows++];
    memset(row, 0, sizeof *row);
    row->kind = (gp_ledger_row_kind)k->kind;
    row->period_start = r->periods.label[k->period];
    row->period_end = r->periods.bound[k->period + 1];
    row->queue = k->queue >= 0 && !drop_queue ? r->queues.names[k->queue] : NULL;
    row->user = k->user >= 0 ? r->users.names[k->user] : NULL;
    row->model = k->model >= 0 ? r->models.names[k->model] : NULL;
    row->capacity = k->capacity >= 0 ? gp_capacity_name((gp_capacity)k->capacity) : NULL;
    row->node = k->node >= 0 ? r->nodes.names[k->node] : NULL;
    row->service = k->service >= 0 ? r->services.names[k->service] : NULL;
    row->job = k->job >= 0 ? k->job : 0;
    row->gpu_s = s->gpu_s;
    row->used_gpu_s = s->used_gpu_s;
    row->known_gpu_s = s->known_gpu_s;
    row->energy_j = s->energy_j;
    row->energy_known = s->energy_known;
    row->cost = s->cost;
    row->idle_share_cost = s->idle_share_cost;
    row->cost_unknown = s->cost_unknown;
  }
}

/* Job entries keyed by queue only for share_idle's sake fold into the rows asked for. */
static void fold_queue(const gp__ledger_map *in, gp__ledger_map *out) {
  for (size_t e = 0; e < in->n; e++) {
    gp__ledger_key k = in->entries[e].key;
    k.queue = -1;
    gp__ledger_sums *s = gp__ledger_map_get(out, &k);
    const gp__ledger_sums *x = &in->entries[e].sums;
    s->gpu_s += x->gpu_s;
    s->used_gpu_s += x->used_gpu_s;
    s->known_gpu_s += x->known_gpu_s;
    s->energy_j += x->energy_j;
    s->energy_known |= x->energy_known;
    s->cost += x->cost;
    s->idle_share_cost += x->idle_share_cost;
    s->cost_unknown |= x->cost_unknown;
  }
}

int gp_ledger_report_finish(gp_ledger_report *r, const gp_ledger_row **rows, int *n_rows,
                            gp_err *err) {
  if (r->rc) {
    if (err) *err = r->err;
    return r->rc;
  }
  if (!r->finished) {
    r->finished = true;
    gp__ledger_map others = {0}, folded = {0};
    double *idle_by_period = gp_xcalloc((size_t)r->periods.n, sizeof *idle_by_period);
    capacity_rows(r, &others, idle_by_period);
    commitment_rows(r, &others);
    r->fleet_cost += r->energy_cost;
    if (r->p.share_idle != GP_LSI_NONE) share_idle(r, idle_by_period);
    bool fold = r->p.share_idle != GP_LSI_NONE && !(r->p.group & GP_LG_QUEUE);
    if (fold) fold_queue(&r->jobs, &folded);
    const gp__ledger_map *jobs = fold ? &folded : &r->jobs;
    r->rows = gp_xmalloc((jobs->n + others.n + 1) * sizeof *r->rows);
    add_rows(r, jobs, false);
    add_rows(r, &others, false);
    qsort(r->rows, (size_t)r->n_rows, sizeof *r->rows, cmp_row);
    gp__ledger_map_done(&others);
    gp__ledger_map_done(&folded);
    free(idle_by_period);
  }
  *rows = r->rows;
  *n_rows = r->n_rows;
  return 0;
}
