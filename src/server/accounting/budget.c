/* SPDX-License-Identifier: Apache-2.0 */
/* Queue budgets in the server: what each queue with a budget has spent in its current
 * period, the alerts at 80% and 100% (one each per period, kept in the store so a restart
 * does not repeat them), and the actions on new jobs once a budget is spent (hold_new,
 * demote). Also the cost since the server started per (queue, model, capacity) for
 * gpool_queue_cost_total. State thread.
 *
 * Spend = what the ledger holds for the period up to the moment the queue was first looked
 * at (one read of the store: at start, or when an admin gives a queue a budget), plus what
 * the running totals (gp__srv_usage_totals) grew by since. Money is the growth of each
 * (queue, model, capacity) total priced at the rate in force when it grew: the totals are
 * read at every tick (about a second), so a price change splits them within a tick. A new
 * period starts from zero at the first tick inside it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/prices.h"
#include "server/accounting/budgets.h"
#include "server/accounting/ledger.h"
#include "server/accounting/prices.h"
#include "server/state/state.h"
#include "util/mem.h"

typedef struct budget_piece {
  char *queue, *model;
  gp_capacity capacity;
  double last_gpu_s;    /* the running total at the last look */
  double cost;          /* priced growth since the server started (unpriced growth adds
                           nothing, as in reports) */
} budget_piece;

struct gp__srv_budgets {
  budget_piece *pieces;
  int n_pieces;
  size_t cap_pieces;
  gp_srv_budget_queue *queues;
  int n_queues;
  size_t cap_queues;
};

static gp__srv_budgets *budgets(gp_srv_state *s) {
  if (!s->budgets) s->budgets = gp_xcalloc(1, sizeof *s->budgets);
  return s->budgets;
}

void gp__srv_budgets_free(gp__srv_budgets *b) {
  if (!b) return;
  for (int i = 0; i < b->n_pieces; i++) {
    free(b->pieces[i].queue);
    free(b->pieces[i].model);
  }
  free(b->pieces);
  for (int i = 0; i < b->n_queues; i++) free(b->queues[i].queue);
  free(b->queues);
  free(b);
}

static gp_srv_budget_queue *queue_entry(gp__srv_budgets *b, const char *name, bool create) {
  for (int i = 0; i < b->n_queues; i++)
    if (strcmp(b->queues[i].queue, name) == 0) return &b->queues[i];
  if (!create) return NULL;
  gp_xgrow((void **)&b->queues, &b->cap_queues, (size_t)b->n_queues + 1, sizeof *b->queues);
  gp_srv_budget_queue *e = &b->queues[b->n_queues++];
  memset(e, 0, sizeof *e);
  e->queue = gp_xstrdup(name);
  return e;
}

const gp_srv_budget_queue *gp__srv_budget_get(const gp_srv_state *s, const char *queue) {
  return s->budgets ? queue_entry(s->budgets, queue, false) : NULL;
}

/* ---- the running totals, priced ---- */

typedef struct grow_ctx {
  gp_srv_state *s;
  int64_t now;
  int next;             /* the piece the next total most likely is */
} grow_ctx;

static bool is_piece(const budget_piece *p, const gp_srv_usage_total *t) {
  return p->capacity == t->capacity && strcmp(p->queue, t->queue) == 0 &&
         strcmp(p->model, t->model) == 0;
}

static void grow(void *ctx, const gp_srv_usage_total *t) {
  grow_ctx *c = ctx;
  gp__srv_budgets *b = budgets(c->s);
  budget_piece *p = NULL;
  /* The totals come in the same order at every look, so the next piece is the usual match
   * and a tick costs one pass, not one search per total. */
  if (c->next < b->n_pieces && is_piece(&b->pieces[c->next], t)) p = &b->pieces[c->next];
  for (int i = 0; i < b->n_pieces && !p; i++)
    if (is_piece(&b->pieces[i], t)) p = &b->pieces[i];
  if (p) c->next = (int)(p - b->pieces) + 1;
  else c->next = b->n_pieces + 1;
  if (!p) {
    gp_xgrow((void **)&b->pieces, &b->cap_pieces, (size_t)b->n_pieces + 1, sizeof *b->pieces);
    p = &b->pieces[b->n_pieces++];
    memset(p, 0, sizeof *p);
    p->queue = gp_xstrdup(t->queue);
    p->model = gp_xstrdup(t->model);
    p->capacity = t->capacity;
  }
  /* A total below the last look was started again: it all grew since. */
  double delta = t->gpu_s >= p->last_gpu_s ? t->gpu_s - p->last_gpu_s : t->gpu_s;
  p->last_gpu_s = t->gpu_s;
  if (delta <= 0) return;
  double rate;
  if (gp_prices_rate(gp__srv_prices(c->s), t->model, t->capacity, c->now, &rate))
    p->cost += delta / 3600.0 * rate;
}

/* A queue's totals since the server started: GPU-seconds and priced cost. */
static void queue_cum(const gp__srv_budgets *b, const char *queue, double *gpu_s, double *cost) {
  *gpu_s = *cost = 0;
  for (int i = 0; i < b->n_pieces; i++)
    if (strcmp(b->pieces[i].queue, queue) == 0) {
      *gpu_s += b->pieces[i].last_gpu_s;
      *cost += b->pieces[i].cost;
    }
}

void gp__srv_budget_costs(const gp_srv_state *s,
                          void (*fn)(void *ctx, const char *queue, const char *model,
                                     gp_capacity c, double cost),
                          void *ctx) {
  if (!s->budgets || !gp__srv_prices(s)) return;
  for (int i = 0; i < s->budgets->n_pieces; i++) {
    const budget_piece *p = &s->budgets->pieces[i];
    fn(ctx, p->queue, p->model, p->capacity, p->cost);
  }
}

/* ---- the period's spend before the first look, from the ledger ---- */

typedef struct base_ctx {
  gp_srv_state *s;
  int64_t now;
} base_ctx;

void gp__srv_budget_each(const gp_srv_state *s,
                         void (*fn)(void *ctx, const gp_srv_budget_queue *e), void *ctx) {
  for (int i = 0; s->budgets && i < s->budgets->n_queues; i++)
    if (s->budgets->queues[i].active) fn(ctx, &s->budgets->queues[i]);
}

static int add_interval(void *ctx, const gp_store_interval *iv) {
  base_ctx *c = ctx;
  gp_srv_budget_queue *e = queue_entry(budgets(c->s), iv->queue, false);
  if (!e || e->based) return 0;
  int64_t from = iv->start > e->period_start ? iv->start : e->period_start;
  int64_t to = iv->end > 0 && iv->end < c->now ? iv->end : c->now;
  if (to <= from) return 0;
  double gpu_s = iv->share * (double)(to - from);
  e->base_gpu_s += gpu_s;
  gp_capacity cap = GP_CAP_ON_DEMAND;
  double rate;
  if (gp_capacity_parse(iv->capacity, &cap) == 0 &&
      gp_prices_rate(gp__srv_prices(c->s), iv->model, cap, from, &rate))
    e->base_cost += gpu_s / 3600.0 * rate;
  return 0;
}

/* Reads the ledger once for the queues not yet based: [earliest period start, now). */
static void read_bases(gp_srv_state *s, int64_t now) {
  gp__srv_budgets *b = budgets(s);
  int64_t from = INT64_MAX;
  for (int i = 0; i < b->n_queues; i++)
    if (!b->queues[i].based && b->queues[i].period_start < from) from = b->queues[i].period_start;
  if (from == INT64_MAX) return;
  gp_store_reader *r = NULL;
  gp_err err = {0};
  base_ctx c = {s, now};
  int rc = 0;
  if (from <= now) { /* a test's shifted clock may start the period later */
    rc = gp_store_reader_open(s->store, &r, &err);
    if (!rc) rc = gp_store_reader_intervals(r, from, now + 1, NULL, add_interval, &c, &err);
  }
  gp_store_reader_close(r);
  if (rc)
    fprintf(stderr, "gpool server: budgets: reading the ledger failed (%s); spend counts from "
                    "now\n", err.message);
  for (int i = 0; i < b->n_queues; i++) {
    gp_srv_budget_queue *e = &b->queues[i];
    if (e->based) continue;
    if (rc) e->base_gpu_s = e->base_cost = 0;
    queue_cum(b, e->queue, &e->mark_gpu_s, &e->mark_cost);
    e->based = true;
  }
}

/* ---- alerts and actions ---- */

/* The catalogue's currency, "" without one. */
static const char *currency(const gp_srv_state *s) {
  const gp_prices *p = gp__srv_prices(s);
  return p ? p->currency : "";
}

static void describe_limit(const gp_srv_state *s, const gp_budget *bg, double v, char *buf,
                           size_t size) {
  if (bg->money)
    snprintf(buf, size, "%.2f %s", v, currency(s));
  else
    snprintf(buf, size, "%.6g GPU-hours", v);
}

/* What was spent, as precise as the budget's size calls for: "512.3", "0.00213". */
static void describe_spent(const gp_srv_budget_queue *e, char *buf, size_t size) {
  if (e->budget.money) snprintf(buf, size, "%.2f", e->spent);
  else if (e->spent >= 10) snprintf(buf, size, "%.1f", e->spent);
  else snprintf(buf, size, "%.3g", e->spent);
}

void gp__srv_budget_message(const gp_srv_state *s, const gp_srv_budget_queue *e, char *buf,
                            size_t size) {
  char limit[64], used[64];
  describe_limit(s, &e->budget, e->budget.limit, limit, sizeof limit);
  describe_spent(e, used, sizeof used);
  snprintf(buf, size,
           "queue %s spent its %s budget of %s (%s used); held until the period ends or an "
           "admin releases it",
           e->queue, gp_budget_period_adjective(e->budget.period), limit, used);
}

static int save_level(gp_srv_state *s, const gp_srv_budget_queue *e, gp_err *err) {
  char name[GP_SRV_SETTING_NAME_MAX], doc[96];
  snprintf(name, sizeof name, "budget/%s", e->queue);
  snprintf(doc, sizeof doc, "{\"period_start\": %lld, \"level\": %d}", (long long)e->period_start,
           e->level);
  return gp_store_put_setting(s->store, name, doc, err);
}

void gp__srv_budget_level_loaded(gp_srv_state *s, const char *queue, const char *doc) {
  json_t *o = json_loads(doc, 0, NULL);
  json_t *ps = json_object_get(o, "period_start"), *lv = json_object_get(o, "level");
  if (json_is_integer(ps) && json_is_integer(lv)) {
    gp_srv_budget_queue *e = queue_entry(budgets(s), queue, true);
    e->saved_period_start = json_integer_value(ps);
    e->saved_level = (int)json_integer_value(lv);
  }
  json_decref(o);
}

/* A new period: the jobs the last one's budget held may start (those their owners hold
 * too stay held: budget_hold.c). */
static int release_held(gp_srv_state *s, const char *queue, int64_t now, gp_err *err) {
  int rc = 0;
  /* Collect first: releasing a job may edit the active list. */
  gp_srv_job **held = gp_xcalloc((size_t)s->n_active + 1, sizeof *held);
  int n = 0;
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    if (strcmp(j->queue, queue) == 0 && gp__srv_job_budget_held(j)) held[n++] = j;
  }
  for (int i = 0; i < n && !rc; i++)
    rc = gp__srv_job_budget_release(s, held[i], "a new budget period began", now, err);
  free(held);
  return rc;
}

static int alert(gp_srv_state *s, gp_srv_budget_queue *e, int level, gp_err *err) {
  char limit[64], used[64];
  describe_limit(s, &e->budget, e->budget.limit, limit, sizeof limit);
  describe_spent(e, used, sizeof used);
  fprintf(stderr, "gpool server: budget: queue %s reached %d%% of its %s budget of %s (%s used)\n",
          e->queue, level, gp_budget_period_adjective(e->budget.period), limit, used);
  e->alerts_total[level >= 100]++;
  e->level = level;
  return save_level(s, e, err);
}

static bool same_budget(const gp_budget *a, const gp_budget *b) {
  return a->set == b->set && a->money == b->money && a->limit == b->limit &&
         a->period == b->period && a->action == b->action;
}

int gp__srv_budgets_tick(gp_srv_state *s, int64_t now, gp_err *err) {
  gp__srv_budgets *b = budgets(s);
  grow_ctx gc = {s, now, 0};
  gp__srv_usage_totals(s, now, grow, &gc);
  /* The queues with a budget, each in its current period. */
  for (int i = 0; i < s->n_queues; i++) {
    const gp_srv_queue *q = s->queues[i];
    gp_srv_budget_queue *e = queue_entry(b, q->name, q->budget.set);
    if (!e) continue;
    bool changed = !same_budget(&e->budget, &q->budget);
    e->budget = q->budget;
    if (!q->budget.set) continue;
    int64_t start = gp_budget_period_start(q->budget.period, gp_budget_clock(now));
    if (start != e->period_start || changed) {
      bool rolled = e->period_start && start > e->period_start;
      e->period_start = start;
      e->period_end = gp_budget_period_end(q->budget.period, gp_budget_clock(now));
      e->based = false;
      e->base_gpu_s = e->base_cost = 0;
      e->level = e->saved_period_start == start ? e->saved_level : 0;
      if (rolled) {
        int rc = release_held(s, q->name, now, err);
        if (rc) return rc;
      }
    }
  }
  read_bases(s, now);
  for (int i = 0; i < b->n_queues; i++) {
    gp_srv_budget_queue *e = &b->queues[i];
    const gp_srv_queue *q = gp__srv_queue_get(s, e->queue);
    e->active = q && q->budget.set && e->based;
    if (!e->active) continue;
    double gpu_s, cost;
    queue_cum(b, e->queue, &gpu_s, &cost);
    e->spent = e->budget.money ? e->base_cost + cost - e->mark_cost
                               : (e->base_gpu_s + gpu_s - e->mark_gpu_s) / 3600.0;
    if (e->spent < 0) e->spent = 0;
    double ratio = e->spent / e->budget.limit;
    int rc = 0;
    if (ratio >= 0.8 && e->level < 80) rc = alert(s, e, 80, err);
    if (!rc && ratio >= 1.0 && e->level < 100) rc = alert(s, e, 100, err);
    if (rc) return rc;
  }
  return 0;
}

/* ---- new jobs of a queue whose budget is spent ---- */

/* The preemptible class with the lowest priority, or NULL. */
static const gp_priority_class *lowest_preemptible(const gp_policy *p) {
  const gp_priority_class *cls = p->n_priority_classes ? p->priority_classes
                                                       : gp_default_priority_classes;
  int n = p->n_priority_classes ? p->n_priority_classes : gp_n_default_priority_classes;
  const gp_priority_class *low = NULL;
  for (int i = 0; i < n; i++) {
    const gp_priority_class *c = &cls[i];
    if (c->preemptible && (!low || c->priority < low->priority)) low = c;
  }
  return low;
}

int gp__srv_budget_on_submit(gp_srv_state *s, gp_srv_job *j, int64_t now, gp_err *err) {
  const gp_srv_budget_queue *e = gp__srv_budget_get(s, j->queue);
  if (!e || !e->active || e->spent < e->budget.limit || e->budget.action == GP_BUDGET_NONE)
    return 0;
  char why[400];
  if (e->budget.action == GP_BUDGET_HOLD_NEW) {
    /* Held by its owner already (submit --hold) or not: the budget's hold is its own, which
     * the owner's release does not lift. */
    gp__srv_budget_message(s, e, why, sizeof why);
    return gp__srv_job_budget_hold(s, j, why, now, err);
  }
  const gp_policy *pol = &s->cfg->policy;
  const gp_priority_class *low = lowest_preemptible(pol);
  if (!low) return 0;
  const gp_srv_queue *q = gp__srv_queue_get(s, j->queue);
  const char *cur = j->priority                      ? j->priority
                    : q && q->default_priority ? q->default_priority
                                               : pol->default_priority;
  const gp_priority_class *cc = cur ? gp_priority_class_find(pol, cur) : NULL;
  if (cc && cc->preemptible && cc->priority <= low->priority) return 0;
  char limit[64], used[64];
  describe_limit(s, &e->budget, e->budget.limit, limit, sizeof limit);
  describe_spent(e, used, sizeof used);
  snprintf(why, sizeof why, "queue %s spent its %s budget of %s (%s used); new jobs run at "
           "priority class %s until the period ends",
           e->queue, gp_budget_period_adjective(e->budget.period), limit, used, low->name);
  json_t *extra = json_pack("{s:s,s:s,s:s}", "to", low->name, "by", "budget", "reason", why);
  json_object_set_new(extra, "from", cur ? json_string(cur) : json_null());
  free(j->priority);
  j->priority = gp_xstrdup(low->name);
  gp__srv_job_changed(s, j);
  return gp__srv_job_event(s, j, "demoted", now, extra, err);
}

/* ---- the API's view ---- */

void gp__srv_budget_json(const gp_srv_state *s, const char *queue, json_t *o) {
  const gp_srv_budget_queue *e = gp__srv_budget_get(s, queue);
  if (!e || !e->active) return;
  json_object_set_new(o, "budget_unit", json_string(e->budget.money ? currency(s) : "gpu_hours"));
  json_object_set_new(o, "budget_spent", json_real(e->spent));
  json_object_set_new(o, "budget_used_ratio", json_real(e->spent / e->budget.limit));
  json_object_set_new(o, "budget_period_start", json_integer(e->period_start));
  json_object_set_new(o, "budget_period_end", json_integer(e->period_end));
}
