/* SPDX-License-Identifier: Apache-2.0 */
/* Feeding the ledger report (see report.h): checking the params, and adding node and job
 * intervals. Each interval is clipped to the period and walked along its (model, capacity)
 * price timeline; each piece adds to one group's sums and, for a job, to the node interval
 * it ran in, without allocating. Inputs that contradict each other are counted as
 * anomalies (gp_ledger_report_anomalies) and skipped or clamped, never trusted into a crash. */
#include "ledger/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/calendar.h"
#include "ledger/report_int.h"
#include "util/mem.h"

#define MAX_NODE_GPUS 1000000
/* 10000-01-01T00:00:00Z: the end of the last second a report may cover. */
#define GP_LEDGER_TIME_END (GP_CALENDAR_MAX + 1)

/* Times a ledger can hold; beyond them `end - start` could overflow. */
static bool sane_times(int64_t start, int64_t end) {
  return start >= -GP_LEDGER_TIME_END && end <= 2 * GP_LEDGER_TIME_END && start <= end;
}

static int check_params(const gp_ledger_params *p, gp_err *err) {
  if (p->from < 0 || p->from >= GP_LEDGER_TIME_END)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "from", "must be from 1970-01-01 to 9999-12-31");
  if (p->to <= p->from || p->to > GP_LEDGER_TIME_END)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "to", "must be after from, at most 10000-01-01");
  if (p->group & ~(unsigned)(GP_LG_QUEUE | GP_LG_USER | GP_LG_MODEL | GP_LG_CAPACITY |
                             GP_LG_NODE | GP_LG_JOB | GP_LG_SERVICE))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "by", "unknown grouping");
  if ((unsigned)p->step > GP_LS_MONTH)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "step", "must be day, week or month");
  if ((unsigned)p->share_idle > GP_LSI_USAGE)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "share_idle", "must be none, deserved or usage");
  if (p->n_deserved < 0 || (p->n_deserved > 0 && (!p->deserved_queue || !p->deserved_gpus)))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "deserved", "a count without its arrays");
  for (int i = 0; i < p->n_deserved; i++)
    if (!p->deserved_queue[i] || !isfinite(p->deserved_gpus[i]) || p->deserved_gpus[i] < 0)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "deserved",
                        "each queue needs a name and a finite number of GPUs >= 0");
  return 0;
}

gp_ledger_report *gp_ledger_report_new(const gp_ledger_params *p) {
  static const gp_ledger_params none = {.from = 0, .to = 0};
  gp_ledger_report *r = gp_xcalloc(1, sizeof *r);
  r->p = p ? *p : none;
  r->arena = gp_arena_new();
  gp__ledger_intern_init(&r->queues, r->arena);
  gp__ledger_intern_init(&r->users, r->arena);
  gp__ledger_intern_init(&r->models, r->arena);
  gp__ledger_intern_init(&r->nodes, r->arena);
  gp__ledger_intern_init(&r->services, r->arena);
  r->rc = check_params(&r->p, &r->err);
  if (!r->rc) r->rc = gp__ledger_periods_build(&r->periods, r->p.from, r->p.to, r->p.step, &r->err);
  return r;
}

const gp__ledger_timeline *gp__ledger_report_timeline(gp_ledger_report *r, int32_t model,
                                                      gp_capacity c) {
  size_t i = (size_t)model * 4 + (size_t)c;
  if (i >= r->n_timelines) {
    size_t n = r->n_timelines;
    gp_xgrow((void **)&r->timelines, &n, i + 1, sizeof *r->timelines);
    memset(r->timelines + r->n_timelines, 0, (n - r->n_timelines) * sizeof *r->timelines);
    r->n_timelines = n;
  }
  if (!r->timelines[i])
    r->timelines[i] = gp__ledger_timeline_new(r->p.prices, r->models.names[model], c,
                                              &r->periods);
  return r->timelines[i];
}

/* [s, e): the interval clipped to the report; false when nothing is left. */
static bool clip(const gp_ledger_report *r, int64_t start, int64_t end, int64_t *s, int64_t *e) {
  *s = start > r->p.from ? start : r->p.from;
  *e = end < r->p.to ? end : r->p.to;
  return *s < *e;
}

/* A job interval's part in the report and the window (gp_ledger_report_window). */
static bool clip_job(const gp_ledger_report *r, int64_t start, int64_t end, int64_t *s,
                     int64_t *e) {
  if (!clip(r, start, end, s, e)) return false;
  if (r->win_to > 0) {
    if (*s < r->win_from) *s = r->win_from;
    if (*e > r->win_to) *e = r->win_to;
  }
  return *s < *e;
}

void gp_ledger_report_add_node(gp_ledger_report *r, const gp_ledger_node_iv *iv) {
  int64_t s, e;
  if (r->rc || r->finished) return;
  if (!iv || !iv->node || !iv->model || iv->gpus < 1 || iv->gpus > MAX_NODE_GPUS ||
      (unsigned)iv->state > GP_LEDGER_DOWN || (unsigned)iv->capacity > GP_CAP_ON_PREM ||
      !sane_times(iv->start, iv->end)) {
    r->anomalies++;
    return;
  }
  if (!clip(r, iv->start, iv->end, &s, &e)) return;
  gp_xgrow((void **)&r->nrecs, &r->cap_nrecs, r->n_nrecs + 1, sizeof *r->nrecs);
  gp__ledger_node_rec *n = &r->nrecs[r->n_nrecs++];
  n->node = gp__ledger_intern(&r->nodes, iv->node);
  n->model = gp__ledger_intern(&r->models, iv->model);
  n->capacity = iv->capacity;
  n->state = iv->state;
  n->gpus = iv->gpus;
  n->start = s;
  n->end = e;
  n->first_period = gp__ledger_period_of(&r->periods, s);
  n->n_periods = gp__ledger_period_of(&r->periods, e - 1) - n->first_period + 1;
  n->per = gp_arena_alloc(r->arena, sizeof *n->per * (size_t)n->n_periods);
  const gp__ledger_timeline *tl = gp__ledger_report_timeline(r, n->model, n->capacity);
  for (int k = gp__ledger_timeline_find(tl, s); k < tl->n && tl->start[k] < e; k++) {
    int64_t a = tl->start[k] > s ? tl->start[k] : s;
    int64_t b = tl->start[k + 1] < e ? tl->start[k + 1] : e;
    gp__ledger_node_period *pp = &n->per[tl->period[k] - n->first_period];
    double g = (double)n->gpus * (double)(b - a);
    pp->cap_gpu_s += g;
    pp->cap_cost += g * tl->rate[k] / 3600.0;
    if (!tl->known[k]) pp->cost_unknown = true;
  }
}

typedef struct node_sort { int32_t node, idx; int64_t start; } node_sort;

static int cmp_node_sort(const void *a, const void *b) {
  const node_sort *x = a, *y = b;
  if (x->node != y->node) return x->node < y->node ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Node records by node and start, rebuilt when node intervals arrived since. */
static void index_nodes(gp_ledger_report *r) {
  if (r->indexed_nrecs == r->n_nrecs && r->indexed_nodes == r->nodes.n) return;
  size_t nn = r->nodes.n;
  node_sort *ns = gp_xmalloc((r->n_nrecs ? r->n_nrecs : 1) * sizeof *ns);
  for (size_t i = 0; i < r->n_nrecs; i++)
    ns[i] = (node_sort){r->nrecs[i].node, (int32_t)i, r->nrecs[i].start};
  qsort(ns, r->n_nrecs, sizeof *ns, cmp_node_sort);
  r->node_first = gp_xrealloc(r->node_first, (nn ? nn : 1) * sizeof *r->node_first);
  r->node_count = gp_xrealloc(r->node_count, (nn ? nn : 1) * sizeof *r->node_count);
  r->node_order = gp_xrealloc(r->node_order, (r->n_nrecs ? r->n_nrecs : 1) * sizeof *r->node_order);
  memset(r->node_count, 0, (nn ? nn : 1) * sizeof *r->node_count);
  for (size_t i = 0; i < r->n_nrecs; i++) {
    int32_t node = ns[i].node;
    if (!r->node_count[node]) r->node_first[node] = (int32_t)i;
    r->node_count[node]++;
    r->node_order[i] = ns[i].idx;
  }
  free(ns);
  r->indexed_nrecs = r->n_nrecs;
  r->indexed_nodes = nn;
}

/* Attributes a job piece [a, b) of period `period` to the node intervals it overlaps;
 * returns the seconds covered. *cursor walks the node's records forward. */
static int64_t attribute(gp_ledger_report *r, int32_t node, int *cursor, int64_t a, int64_t b,
                         int32_t period, double share, double rate) {
  if ((size_t)node >= r->indexed_nodes || !r->node_count[node]) return 0;
  const int32_t *order = r->node_order + r->node_first[node];
  int n = r->node_count[node], j = *cursor;
  int64_t covered = 0;
  while (j < n && r->nrecs[order[j]].end <= a) j++;
  *cursor = j;
  for (; j < n && r->nrecs[order[j]].start < b; j++) {
    gp__ledger_node_rec *rec = &r->nrecs[order[j]];
    int64_t lo = rec->start > a ? rec->start : a, hi = rec->end < b ? rec->end : b;
    int pi = period - rec->first_period;
    if (hi <= lo || pi < 0 || pi >= rec->n_periods) continue;
    double g = share * (double)(hi - lo);
    rec->per[pi].alloc_gpu_s += g;
    rec->per[pi].alloc_cost += g * rate / 3600.0;
    covered += hi - lo;
  }
  return covered;
}

/* The first of a node's records that may overlap t (records of one node do not overlap). */
static int first_record(const gp_ledger_report *r, int32_t node, int64_t t) {
  if ((size_t)node >= r->indexed_nodes || !r->node_count[node]) return 0;
  const int32_t *order = r->node_order + r->node_first[node];
  int lo = 0, hi = r->node_count[node] - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (r->nrecs[order[mid]].start <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

void gp_ledger_report_add_job(gp_ledger_report *r, const gp_ledger_job_iv *iv) {
  int64_t s, e;
  if (r->rc || r->finished) return;
  if (!iv || !iv->node || !iv->model || !(iv->share > 0 && iv->share <= 1) ||
      (unsigned)iv->capacity > GP_CAP_ON_PREM || !sane_times(iv->start, iv->end)) {
    r->anomalies++;
    return;
  }
  if (!clip_job(r, iv->start, iv->end, &s, &e)) return;
  index_nodes(r);
  unsigned g = r->p.group;
  int32_t model = gp__ledger_intern(&r->models, iv->model);
  int32_t node = gp__ledger_intern(&r->nodes, iv->node);
  gp__ledger_key key;
  gp__ledger_key_init(&key);
  if ((g & GP_LG_QUEUE) || r->p.share_idle != GP_LSI_NONE)
    key.queue = gp__ledger_intern(&r->queues, iv->queue);
  if (g & GP_LG_USER) key.user = gp__ledger_intern(&r->users, iv->user);
  if (g & GP_LG_MODEL) key.model = model;
  if (g & GP_LG_CAPACITY) key.capacity = (int16_t)iv->capacity;
  if (g & GP_LG_NODE) key.node = node;
  if (g & GP_LG_JOB) key.job = iv->job;
  /* A job of no service groups under "-", so that the rows still add up to the total. */
  if (g & GP_LG_SERVICE)
    key.service = gp__ledger_intern(&r->services, iv->service && *iv->service ? iv->service : "-");
  key.kind = GP_LR_JOBS;

  const gp__ledger_timeline *tl = gp__ledger_report_timeline(r, model, iv->capacity);
  double total = (double)(iv->end - iv->start);
  bool on_prem = iv->capacity == GP_CAP_ON_PREM;
  int cursor = first_record(r, node, s);
  int64_t covered = 0;
  for (int k = gp__ledger_timeline_find(tl, s); k < tl->n && tl->start[k] < e; k++) {
    int64_t a = tl->start[k] > s ? tl->start[k] : s;
    int64_t b = tl->start[k + 1] < e ? tl->start[k + 1] : e;
    double dur = (double)(b - a), gpu_s = iv->share * dur, cost = gpu_s * tl->rate[k] / 3600.0;
    key.period = tl->period[k];
    gp__ledger_sums *sum = gp__ledger_map_get(&r->jobs, &key);
    sum->gpu_s += gpu_s;
    if (iv->used_gpu_s >= 0 && isfinite(iv->used_gpu_s)) {
      sum->used_gpu_s += iv->used_gpu_s * dur / total;
      sum->known_gpu_s += gpu_s;
    }
    if (iv->energy_j >= 0 && isfinite(iv->energy_j)) {
      double joules = iv->energy_j * dur / total;
      sum->energy_j += joules;
      sum->energy_known = true;
      if (on_prem) {
        double ecost = joules / 3.6e6 * tl->kwh[k];
        sum->cost += ecost;
        r->energy_cost += ecost;
      }
    }
    sum->cost += cost;
    if (!tl->known[k]) sum->cost_unknown = true;
    covered += attribute(r, node, &cursor, a, b, tl->period[k], iv->share, tl->rate[k]);
  }
  if (covered < e - s) r->anomalies++;
}

double gp_ledger_report_fleet_cost(const gp_ledger_report *r) { return r ? r->fleet_cost : 0; }

int64_t gp_ledger_report_anomalies(const gp_ledger_report *r) { return r ? r->anomalies : 0; }

void gp_ledger_report_free(gp_ledger_report *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_timelines; i++) gp__ledger_timeline_free(r->timelines[i]);
  free(r->timelines);
  free(r->nrecs);
  free(r->node_first);
  free(r->node_count);
  free(r->node_order);
  gp__ledger_map_done(&r->jobs);
  gp__ledger_map_done(&r->alloc_days);
  gp__ledger_intern_done(&r->queues);
  gp__ledger_intern_done(&r->users);
  gp__ledger_intern_done(&r->models);
  gp__ledger_intern_done(&r->nodes);
  gp__ledger_intern_done(&r->services);
  gp__ledger_periods_done(&r->periods);
  free(r->rows);
  gp_arena_free(r->arena);
  free(r);
}
