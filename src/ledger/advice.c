/* SPDX-License-Identifier: Apache-2.0 */
/* The advice engine's intake (advice.h): each interval is clipped to the period and added to
 * its job's, its (queue, user)'s and the fleet's sums; runs and idle jobs are kept for the
 * join at finish, which turns the sums into items. Nothing is kept per interval. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/advice_int.h"
#include "util/mem.h"

static const char *const kind_names[] = {"right_size", "spot", "idle_now", "idle_week",
                                         "quota", "utilisation"};

const char *gp_advice_kind_name(gp_advice_kind k) {
  return (unsigned)k < sizeof kind_names / sizeof *kind_names ? kind_names[k] : "?";
}

static uint64_t mix(int64_t k) {
  uint64_t x = (uint64_t)k * UINT64_C(0x9e3779b97f4a7c15);
  return x ^ (x >> 31);
}

static void imap_rehash(gp__ledger_imap *m, size_t n_slots) {
  int64_t *keys = m->keys;
  int32_t *vals = m->vals;
  size_t old = m->n_slots;
  m->keys = gp_xcalloc(n_slots, sizeof *m->keys);
  m->vals = gp_xcalloc(n_slots, sizeof *m->vals);
  m->n_slots = n_slots;
  for (size_t i = 0; i < old; i++) {
    if (!vals[i]) continue;
    size_t s = mix(keys[i]) & (n_slots - 1);
    while (m->vals[s]) s = (s + 1) & (n_slots - 1);
    m->keys[s] = keys[i];
    m->vals[s] = vals[i];
  }
  free(keys);
  free(vals);
}

int32_t gp__ledger_imap_get(gp__ledger_imap *m, int64_t key, int32_t add) {
  if (m->n_slots) {
    size_t s = mix(key) & (m->n_slots - 1);
    for (; m->vals[s]; s = (s + 1) & (m->n_slots - 1))
      if (m->keys[s] == key) return m->vals[s] - 1;
  }
  if (add < 0) return -1;
  if ((m->n + 1) * 2 > m->n_slots) imap_rehash(m, m->n_slots ? m->n_slots * 2 : 256);
  size_t s = mix(key) & (m->n_slots - 1);
  while (m->vals[s]) s = (s + 1) & (m->n_slots - 1);
  m->keys[s] = key;
  m->vals[s] = add + 1;
  m->n++;
  return add;
}

void gp__ledger_imap_done(gp__ledger_imap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

bool gp__ledger_adv_in_queue(const char *filter, const char *q) {
  if (!filter) return true;
  if (!q) return false;
  size_t n = strlen(filter);
  return strncmp(filter, q, n) == 0 && (q[n] == '\0' || q[n] == '/');
}

gp_advice *gp_advice_new(const gp_advice_params *p) {
  gp_advice *a = gp_xcalloc(1, sizeof *a);
  a->p = *p;
  a->arena = gp_arena_new();
  gp__ledger_intern_init(&a->strs, a->arena);
  /* Filters are compared with the store's strings; copies keep them valid. */
  a->p.queue = p->queue ? gp_arena_strdup(a->arena, p->queue) : NULL;
  a->p.user = p->user ? gp_arena_strdup(a->arena, p->user) : NULL;
  a->p.name = p->name ? gp_arena_strdup(a->arena, p->name) : NULL;
  a->have_periods = p->from >= 0 && p->from < p->to &&
                    gp__ledger_periods_build(&a->periods, p->from, p->to, GP_LS_NONE, NULL) == 0;
  a->last_job = a->last_queue = a->last_user = a->last_model = -1;
  return a;
}

void gp_advice_free(gp_advice *a) {
  if (!a) return;
  gp__ledger_intern_done(&a->strs);
  for (size_t i = 0; i < a->n_timelines; i++) gp__ledger_timeline_free(a->timelines[i]);
  free(a->timelines);
  if (a->have_periods) gp__ledger_periods_done(&a->periods);
  gp__ledger_imap_done(&a->job_index);
  gp__ledger_imap_done(&a->idle_index);
  free(a->jobs);
  free(a->idle);
  free(a->queues);
  free(a->queue_ids);
  free(a->runs);
  free(a->now_idle);
  free(a->up);
  free(a->items);
  gp_arena_free(a->arena);
  free(a);
}

/* [start, end) clipped to the period; false when nothing is left. */
static bool clip(const gp_advice *a, int64_t *start, int64_t *end) {
  if (*start < a->p.from) *start = a->p.from;
  if (*end > a->p.to) *end = a->p.to;
  return *end > *start;
}

/* The price timeline of (model id, c) over the period, built when first met. */
static const gp__ledger_timeline *timeline(gp_advice *a, int32_t model, gp_capacity c) {
  size_t k = (size_t)model * 4 + (size_t)c;
  if (k >= a->n_timelines) {
    size_t n = a->n_timelines ? a->n_timelines : 16;
    while (n <= k) n *= 2;
    a->timelines = gp_xrealloc(a->timelines, n * sizeof *a->timelines);
    memset(a->timelines + a->n_timelines, 0, (n - a->n_timelines) * sizeof *a->timelines);
    a->n_timelines = n;
  }
  if (!a->timelines[k])
    a->timelines[k] = gp__ledger_timeline_new(a->p.prices, a->strs.names[model], c, &a->periods);
  return a->timelines[k];
}

/* Cost of holding `share` of a GPU of (model id, c) over [s, e), inside the period, split
 * where the price changes (as reports do); false when some part has no price. */
static bool price(gp_advice *a, int32_t model, gp_capacity c, int64_t s, int64_t e, double share,
                  double *cost) {
  *cost = 0;
  if (!a->p.prices) return true;
  if (!a->have_periods || (unsigned)c > GP_CAP_ON_PREM) return false;
  const gp__ledger_timeline *tl = timeline(a, model, c);
  bool known = true;
  for (int i = gp__ledger_timeline_find(tl, s); s < e && i < tl->n; i++) {
    int64_t end = tl->start[i + 1] < e ? tl->start[i + 1] : e;
    if (tl->known[i]) *cost += share * (double)(end - s) / 3600.0 * tl->rate[i];
    else known = false;
    s = end;
  }
  return known;
}

/* The id of `name`, the previous call's when it is the same (intervals of one job come
 * together, so most calls are). */
static int32_t intern_near(gp_advice *a, int32_t *last, const char *name) {
  if (*last >= 0 && strcmp(a->strs.names[*last], name ? name : "") == 0) return *last;
  return *last = gp__ledger_intern(&a->strs, name);
}

void gp_advice_add_node(gp_advice *a, const gp_ledger_node_iv *iv) {
  int64_t s = iv->start, e = iv->end;
  if (a->finished || iv->state != GP_LEDGER_UP || iv->gpus <= 0 || !clip(a, &s, &e)) return;
  double gpu_s = (double)(e - s) * iv->gpus, cost = 0;
  a->up_gpu_s += gpu_s;
  gp_xgrow((void **)&a->up, &a->cap_up, a->n_up + 2, sizeof *a->up);
  a->up[a->n_up++] = (gp__ledger_adv_up){s, iv->gpus};
  a->up[a->n_up++] = (gp__ledger_adv_up){e, -iv->gpus};
  if (price(a, intern_near(a, &a->last_model, iv->model), iv->capacity, s, e, iv->gpus, &cost))
    a->up_cost += cost;
  else a->up_cost_unknown = true;
}

gp__ledger_adv_queue *gp__ledger_adv_queue_of(gp_advice *a, int32_t q) {
  size_t old = a->cap_queues;
  gp_xgrow((void **)&a->queues, &a->cap_queues, (size_t)q + 1, sizeof *a->queues);
  if (a->cap_queues > old) memset(a->queues + old, 0, (a->cap_queues - old) * sizeof *a->queues);
  if (!a->queues[q].seen) {
    a->queues[q].seen = true;
    gp_xgrow((void **)&a->queue_ids, &a->cap_queue_ids, a->n_queue_ids + 1, sizeof *a->queue_ids);
    a->queue_ids[a->n_queue_ids++] = q;
  }
  return &a->queues[q];
}

/* One piece of a job's holding inside the period: a raw interval's part of it, or one
 * whole day's roll-up of the job on one (model, capacity). */
typedef struct job_piece {
  int64_t job;
  int32_t model;
  gp_capacity capacity;
  int64_t start, end;               /* what it is priced over */
  int64_t first_start;              /* its first second in the period */
  double share;                     /* of a GPU over [start, end) */
  double gpu_s, cost;
  bool priced;                      /* cost is whole */
  int64_t longest_s;                /* its longest stretch held (kept for non-spot pieces) */
} job_piece;

/* Adds a piece to its job's sums (the job found or added): the one accumulation that raw
 * intervals and day roll-ups share, so that both give a job the same figures. */
static void add_job_piece(gp_advice *a, const job_piece *p) {
  int32_t ji = a->last_job >= 0 && a->jobs[a->last_job].job == p->job
                   ? a->last_job
                   : gp__ledger_imap_get(&a->job_index, p->job, (int32_t)a->n_jobs);
  if ((size_t)ji == a->n_jobs) {
    gp_xgrow((void **)&a->jobs, &a->cap_jobs, a->n_jobs + 1, sizeof *a->jobs);
    a->jobs[a->n_jobs++] = (gp__ledger_adv_job){.job = p->job, .model = p->model,
                                                .capacity = p->capacity, .first_start = p->first_start};
  }
  a->last_job = ji;
  gp__ledger_adv_job *j = &a->jobs[ji];
  if (p->first_start < j->first_start) j->first_start = p->first_start;
  j->gpu_s += p->gpu_s;
  j->cost += p->cost;
  j->cost_unknown |= !p->priced;
  if (p->capacity != GP_CAP_SPOT) {
    double spot = 0;
    j->nonspot_gpu_s += p->gpu_s;
    j->nonspot_cost += p->cost;
    if (price(a, p->model, GP_CAP_SPOT, p->start, p->end, p->share, &spot)) j->spot_cost += spot;
    else j->spot_unknown = true;
    if (p->longest_s > j->longest_nonspot_s) j->longest_nonspot_s = p->longest_s;
  }
}

/* The idle sums of (queue, user), added when first met. */
static gp__ledger_adv_idle *idle_of(gp_advice *a, int32_t q, int32_t u) {
  int64_t key = (int64_t)((uint64_t)(uint32_t)q << 32 | (uint32_t)u);
  int32_t ii = gp__ledger_imap_get(&a->idle_index, key, (int32_t)a->n_idle);
  if ((size_t)ii == a->n_idle) {
    gp_xgrow((void **)&a->idle, &a->cap_idle, a->n_idle + 1, sizeof *a->idle);
    a->idle[a->n_idle++] = (gp__ledger_adv_idle){.queue = q, .user = u};
  }
  return &a->idle[ii];
}

void gp_advice_add_interval(gp_advice *a, const gp_ledger_job_iv *iv) {
  int64_t s = iv->start, e = iv->end;
  if (a->finished || !(iv->share > 0 && iv->share <= 1) || iv->end <= iv->start ||
      !clip(a, &s, &e))
    return;
  if (a->win_to > 0) {
    if (s < a->win_from) s = a->win_from;
    if (e > a->win_to) e = a->win_to;
    if (e <= s) return;
  }
  if ((a->p.user && (!iv->user || strcmp(a->p.user, iv->user) != 0)) ||
      !gp__ledger_adv_in_queue(a->p.queue, iv->queue))
    return;
  double dur = (double)(e - s), gpu_s = iv->share * dur, cost = 0;
  int32_t model = intern_near(a, &a->last_model, iv->model);
  bool priced = price(a, model, iv->capacity, s, e, iv->share, &cost);
  add_job_piece(a, &(job_piece){.job = iv->job, .model = model, .capacity = iv->capacity, .start = s,
                                .end = e, .first_start = s, .share = iv->share, .gpu_s = gpu_s,
                                .cost = cost, .priced = priced, .longest_s = iv->end - iv->start});
  /* The queue's and the fleet's. */
  int32_t q = intern_near(a, &a->last_queue, iv->queue), u = intern_near(a, &a->last_user, iv->user);
  gp__ledger_adv_queue_of(a, q)->alloc_gpu_s += gpu_s;
  a->alloc_gpu_s += gpu_s;
  if (iv->used_gpu_s < 0) return;
  /* Use is measured over the whole interval: the period's part is pro rata. */
  double used = iv->used_gpu_s * dur / (double)(iv->end - iv->start);
  if (used > gpu_s) used = gpu_s;
  a->used_gpu_s += used;
  a->known_gpu_s += gpu_s;
  gp__ledger_adv_idle *d = idle_of(a, q, u);
  d->known_gpu_s += gpu_s;
  d->used_gpu_s += used;
  d->idle_cost += gpu_s > 0 ? cost * (gpu_s - used) / gpu_s : 0;
  d->cost_unknown |= !priced;
}

#define DAY_S 86400

static bool inside(int64_t t, int64_t day) { return t > day && t < day + DAY_S; }

bool gp_advice_day_whole(const gp_advice *a, int64_t day) {
  if (day % DAY_S || day < a->p.from || day + DAY_S > a->p.to) return false;
  const gp_prices *p = a->p.prices;
  for (int i = 0; p && i < p->n_prices; i++)
    if (inside(p->prices[i].from, day)) return false;
  for (int i = 0; p && i < p->n_commitments; i++)
    if (inside(p->commitments[i].from, day) || inside(p->commitments[i].to, day)) return false;
  for (int i = 0; p && i < p->n_energy; i++)
    if (inside(p->energy[i].from, day)) return false;
  return true;
}

void gp_advice_window(gp_advice *a, int64_t from, int64_t to) {
  a->win_from = from;
  a->win_to = to;
}

/* As gp_advice_add_interval does for each of the day's intervals: on a whole day every
 * price is one rate, so a cost is the rate times the day's sum (price() over the whole day
 * with the sum spread as a share of it). */
void gp_advice_add_held_day(gp_advice *a, const gp_advice_held_day *d) {
  if (a->finished || !d || !d->model || !(d->gpu_s > 0) || !isfinite(d->gpu_s) ||
      !(d->known_gpu_s >= 0) || !(d->used_gpu_s >= 0) || !gp_advice_day_whole(a, d->day))
    return;
  if ((a->p.user && (!d->user || strcmp(a->p.user, d->user) != 0)) ||
      !gp__ledger_adv_in_queue(a->p.queue, d->queue))
    return;
  int64_t day = d->day, end = day + DAY_S;
  double gpu_s = d->gpu_s, cost = 0;
  int32_t model = intern_near(a, &a->last_model, d->model);
  bool priced = price(a, model, d->capacity, day, end, gpu_s / DAY_S, &cost);
  add_job_piece(a, &(job_piece){.job = d->job, .model = model, .capacity = d->capacity, .start = day,
                                .end = end, .first_start = d->first_start < day ? day : d->first_start,
                                .share = gpu_s / DAY_S, .gpu_s = gpu_s, .cost = cost, .priced = priced,
                                .longest_s = d->longest_s});
  int32_t q = intern_near(a, &a->last_queue, d->queue), u = intern_near(a, &a->last_user, d->user);
  gp__ledger_adv_queue_of(a, q)->alloc_gpu_s += gpu_s;
  a->alloc_gpu_s += gpu_s;
  if (!(d->known_gpu_s > 0)) return;
  double known = d->known_gpu_s, used = d->used_gpu_s < known ? d->used_gpu_s : known, idle = 0;
  a->used_gpu_s += used;
  a->known_gpu_s += known;
  price(a, model, d->capacity, day, end, (known - used) / DAY_S, &idle);
  gp__ledger_adv_idle *id = idle_of(a, q, u);
  id->known_gpu_s += known;
  id->used_gpu_s += used;
  id->idle_cost += idle;
  id->cost_unknown |= !priced;
}

void gp_advice_add_run(gp_advice *a, const gp_advice_run *r) {
  if (a->finished || r->job <= 0) return;
  if ((a->p.user && (!r->user || strcmp(a->p.user, r->user) != 0)) ||
      !gp__ledger_adv_in_queue(a->p.queue, r->queue))
    return;
  gp_xgrow((void **)&a->runs, &a->cap_runs, a->n_runs + 1, sizeof *a->runs);
  a->runs[a->n_runs++] = (gp__ledger_adv_run){
      .job = r->job,
      .name = gp__ledger_intern(&a->strs, r->name),
      .user = gp__ledger_intern(&a->strs, r->user),
      .queue = gp__ledger_intern(&a->strs, r->queue),
      .mig = r->mig ? gp__ledger_intern(&a->strs, r->mig) : -1,
      .tasks = r->tasks,
      .gpus = r->gpus,
      .gpu_milli = r->gpu_milli,
      .requeue = r->requeue,
      .last_checkpoint_at = r->last_checkpoint_at,
      .submitted_at = r->submitted_at,
      .started_at = r->started_at,
      .peak_mem_mib = r->peak_mem_mib,
      .avg_sm_util_pct = r->avg_sm_util_pct,
  };
}

void gp_advice_add_idle(gp_advice *a, const gp_advice_idle *j) {
  if (a->finished || j->idle_since <= 0) return;
  if ((a->p.user && (!j->user || strcmp(a->p.user, j->user) != 0)) ||
      !gp__ledger_adv_in_queue(a->p.queue, j->queue) ||
      (a->p.name && (!j->name || strcmp(a->p.name, j->name) != 0)))
    return;
  gp_xgrow((void **)&a->now_idle, &a->cap_now_idle, a->n_now_idle + 1, sizeof *a->now_idle);
  gp_advice_idle *c = &a->now_idle[a->n_now_idle++];
  *c = *j;
  c->name = gp_arena_strdup(a->arena, j->name ? j->name : "");
  c->user = gp_arena_strdup(a->arena, j->user ? j->user : "");
  c->queue = gp_arena_strdup(a->arena, j->queue ? j->queue : "");
  c->model = gp_arena_strdup(a->arena, j->model ? j->model : "");
}

const char *gp__ledger_adv_num(gp_advice *a, double v) {
  if (!isfinite(v)) return "?";
  double m = fabs(v);
  int dec = m > 0 && m < 100 ? 2 - (int)floor(log10(m)) : 0;
  if (dec > 6) dec = 6;
  char *buf = gp_arena_printf(a->arena, "%.*f", dec, v);
  if (strchr(buf, '.')) {
    size_t n = strlen(buf);
    while (buf[n - 1] == '0') buf[--n] = '\0';
    if (buf[n - 1] == '.') buf[--n] = '\0';
  }
  return strcmp(buf, "-0") == 0 ? "0" : buf;
}

gp_advice_item *gp__ledger_adv_item(gp_advice *a, gp_advice_kind kind) {
  gp_xgrow((void **)&a->items, &a->cap_items, a->n_items + 1, sizeof *a->items);
  gp_advice_item *it = &a->items[a->n_items++];
  memset(it, 0, sizeof *it);
  it->kind = kind;
  it->cost_known = a->p.prices != NULL;
  return it;
}

void gp__ledger_adv_evidence(gp_advice_item *it, const char *key, double value) {
  if (it->n_evidence >= GP_ADVICE_MAX_EVIDENCE) return;
  it->evidence[it->n_evidence++] = (gp_advice_figure){key, value};
}

/* Largest saving first: money where both are priced, else GPU-hours; then by kind. */
static int by_saving(const void *x, const void *y) {
  const gp_advice_item *a = x, *b = y;
  double ka = a->cost_known && b->cost_known ? a->saving_cost : a->saving_gpu_h;
  double kb = a->cost_known && b->cost_known ? b->saving_cost : b->saving_gpu_h;
  if (ka != kb) return ka > kb ? -1 : 1;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  return a->job < b->job ? -1 : a->job > b->job;
}

int gp_advice_finish(gp_advice *a, const gp_advice_item **items, int *n, bool *truncated,
                     gp_err *err) {
  const gp_advice_params *p = &a->p;
  if (p->from >= p->to)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "from", "the period is empty: from must come before to");
  if (!(p->headroom >= 0 && p->headroom <= GP_ADVICE_MAX_HEADROOM))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "headroom", "headroom must be between 0 and %g",
                      GP_ADVICE_MAX_HEADROOM);
  if (p->checkpoint_s < 1)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "checkpoint", "the checkpoint interval must be at least 1 s");
  if (!a->finished) {
    a->finished = true;
    gp__ledger_adv_jobs_items(a);
    gp__ledger_adv_pool_items(a);
    if (a->n_items > 1) qsort(a->items, a->n_items, sizeof *a->items, by_saving);
  }
  bool cut = a->n_items > GP_ADVICE_MAX_ITEMS;
  *items = a->items;
  *n = cut ? GP_ADVICE_MAX_ITEMS : (int)a->n_items;
  if (truncated) *truncated = cut;
  return 0;
}
