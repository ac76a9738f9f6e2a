/* SPDX-License-Identifier: Apache-2.0 */
/* Fair share over time on the server (fairshare.h). Usage is kept per key, a queue path
 * ("org/team") or a leaf and a user ("org/team/p:alice"; queue names hold no ':'), as
 * (value, at): decayed usage in cluster-seconds (GPU-seconds weighted by the model's
 * weight, over the weighted GPUs up), exact at any later time by the closed form
 * (src/ledger/decay.h). A job's run is charged when its ledger intervals close, in that
 * transaction; a running job's part so far is added when the view's usage is computed, by
 * the same closed form, so nothing jumps when it ends. The scheduler sees GPU-equivalents
 * (usage / tau * the weighted GPUs up now): what a steady allocation of that many GPUs
 * would have left. */
#include "server/accounting/fairshare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/accounting/ledger.h"
#include "server/state/server_int.h"
#include "util/mem.h"

typedef struct fs_ent {
  char *key;
  char *queue;          /* the key's queue part (a copy) */
  const char *user;     /* into key, after ':'; NULL for a queue's own entry */
  double v;             /* cluster-seconds as of `at` */
  int64_t at;
  double now;           /* scratch: the value at the last computation, running jobs in */
  /* User entries: GPU-hours (plain, unweighted) in the limit period that starts at ps, for
   * the queue's max_gpu_hours (user_limits.h). */
  double ph, ph_now;
  int64_t ps;
} fs_ent;

struct gp__srv_fairshare {
  fs_ent *e;
  size_t n, cap;
  int *slot;            /* open addressing: entry index + 1, 0: empty */
  size_t mask;
  gp_usage *view;       /* what the scheduler's view points at */
  size_t n_view, cap_view;
  int64_t view_at;      /* when it was computed; 0: never */
  bool dirty;           /* a charge since */
};

static uint32_t hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

static struct gp__srv_fairshare *fs_of(gp_srv_state *s) {
  if (!s->fairshare) s->fairshare = gp_xcalloc(1, sizeof *s->fairshare);
  return s->fairshare;
}

static fs_ent *find(struct gp__srv_fairshare *f, const char *key) {
  if (!f->slot) return NULL;
  for (size_t h = hash(key) & f->mask; f->slot[h]; h = (h + 1) & f->mask)
    if (strcmp(f->e[f->slot[h] - 1].key, key) == 0) return &f->e[f->slot[h] - 1];
  return NULL;
}

static void rehash(struct gp__srv_fairshare *f) {
  size_t cap = 64;
  while (cap < f->n * 2 + 2) cap *= 2;
  free(f->slot);
  f->slot = gp_xcalloc(cap, sizeof *f->slot);
  f->mask = cap - 1;
  for (size_t i = 0; i < f->n; i++) {
    size_t h = hash(f->e[i].key) & f->mask;
    while (f->slot[h]) h = (h + 1) & f->mask;
    f->slot[h] = (int)i + 1;
  }
}

static fs_ent *get(struct gp__srv_fairshare *f, const char *key) {
  fs_ent *e = find(f, key);
  if (e) return e;
  gp_xgrow((void **)&f->e, &f->cap, f->n + 1, sizeof *f->e);
  e = &f->e[f->n++];
  *e = (fs_ent){.key = gp_xstrdup(key)};
  const char *colon = strchr(e->key, ':');
  e->queue = colon ? gp_xstrndup(e->key, (size_t)(colon - e->key)) : gp_xstrdup(e->key);
  e->user = colon ? colon + 1 : NULL;
  if (!f->slot || f->n * 2 > f->mask) rehash(f);
  else {
    size_t h = hash(key) & f->mask;
    while (f->slot[h]) h = (h + 1) & f->mask;
    f->slot[h] = (int)f->n;
  }
  return e;
}

void gp__srv_fairshare_free(gp_srv_state *s) {
  struct gp__srv_fairshare *f = s->fairshare;
  if (!f) return;
  for (size_t i = 0; i < f->n; i++) {
    free(f->e[i].key);
    free(f->e[i].queue);
  }
  free(f->e);
  free(f->slot);
  free(f->view);
  free(f);
  s->fairshare = NULL;
}

/* A stored key: a queue name, or a leaf's name ':' a user (1 to 256 bytes of printable
 * characters without ':'). */
static bool key_ok(const char *key) {
  const char *colon = strchr(key, ':');
  size_t ql = colon ? (size_t)(colon - key) : strlen(key);
  if (ql == 0 || ql > GP_MAX_QUEUE_NAME) return false;
  char q[GP_MAX_QUEUE_NAME + 1];
  memcpy(q, key, ql);
  q[ql] = '\0';
  if (!gp_queue_name_ok(q)) return false;
  if (!colon) return true;
  size_t ul = strlen(colon + 1);
  if (ul == 0 || ul > 256) return false;
  for (const char *p = colon + 1; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ':') return false;
  return true;
}

void gp__srv_fairshare_loaded(gp_srv_state *s, const char *key, const char *doc) {
  json_t *o = json_loads(doc, 0, NULL);
  json_t *v = json_object_get(o, "v"), *at = json_object_get(o, "at");
  if (!key_ok(key) || !json_is_number(v) || !json_is_integer(at) || !isfinite(json_number_value(v)) ||
      json_number_value(v) < 0 || json_integer_value(at) < 0) {
    fprintf(stderr, "gpool server: fair share: the stored usage of %.300s does not read; ignored\n", key);
    json_decref(o);
    return;
  }
  fs_ent *e = get(fs_of(s), key);
  e->v = json_number_value(v);
  e->at = (int64_t)json_integer_value(at);
  json_t *ph = json_object_get(o, "ph"), *ps = json_object_get(o, "ps");
  if (json_is_number(ph) && json_number_value(ph) >= 0 && isfinite(json_number_value(ph)) && json_is_integer(ps)) {
    e->ph = json_number_value(ph);
    e->ps = (int64_t)json_integer_value(ps);
  }
  fs_of(s)->dirty = true;
  json_decref(o);
}

/* The GPUs up now (nodes alive and in service, healthy GPUs), each by its model's weight:
 * what usage is a share of. */
static double capacity(const gp_srv_state *s) {
  double c = 0;
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    if (!n->alive || n->admin_state != GP_NODE_UP) continue;
    int up = 0;
    for (int g = 0; g < n->n_gpus; g++) up += n->gpus[g].health == GP_GPU_HEALTHY;
    c += up * gp_fairshare_weight(&s->cfg->fairshare, n->model);
  }
  return c;
}

/* Job j's weighted GPUs (shares as fractions). */
static double job_rate(const gp_srv_state *s, const gp_srv_job *j) {
  double r = 0;
  for (int t = 0; t < j->n_alloc; t++) {
    const gp_srv_alloc *a = &j->alloc[t];
    if (a->node < 0 || a->node >= s->n_nodes) continue;
    r += gp__srv_task_share(s, a) * gp_fairshare_weight(&s->cfg->fairshare, s->nodes[a->node]->model);
  }
  return r;
}

/* Job j's GPUs, plain (each GPU by the share held): what GPU-hour limits count. */
static double job_share(const gp_srv_state *s, const gp_srv_job *j) {
  double r = 0;
  for (int t = 0; t < j->n_alloc; t++) r += gp__srv_task_share(s, &j->alloc[t]);
  return r;
}

/* The start of the current GPU-hour limit period of a leaf queue (month without limits). */
static int64_t period_start(const gp_srv_state *s, const char *queue, int64_t now) {
  const gp_srv_queue *q = gp__srv_queue_get(s, queue);
  return gp_budget_period_start(q && q->user_limits.n ? q->user_limits.period : GP_BUDGET_MONTH, now);
}

/* GPU-hours of a run [t0, now) of `gpus` that fall in the period starting at ps. */
static double period_hours(double gpus, int64_t t0, int64_t now, int64_t ps) {
  if (t0 < ps) t0 = ps;
  return now > t0 ? gpus * (double)(now - t0) / 3600 : 0;
}

/* Calls fn for every key job j charges: each ancestor of its queue, the queue, and
 * (queue, user). */
static int each_key(const gp_srv_job *j, int (*fn)(void *ctx, const char *key), void *ctx) {
  char k[GP_MAX_QUEUE_NAME + 300];
  size_t ql = strlen(j->queue);
  if (ql > GP_MAX_QUEUE_NAME) return 0;
  int r = 0;
  for (size_t i = 1; i <= ql && !r; i++) {
    if (i < ql && j->queue[i] != '/') continue;
    memcpy(k, j->queue, i);
    k[i] = '\0';
    r = fn(ctx, k);
  }
  if (!r && j->user && *j->user && strlen(j->user) <= 256) {
    snprintf(k, sizeof k, "%s:%s", j->queue, j->user);
    r = fn(ctx, k);
  }
  return r;
}

typedef struct charge_ctx {
  gp_srv_state *s;
  const gp_srv_job *j;
  double add;
  int64_t now;
  gp_err *err;
} charge_ctx;

static int charge_key(void *ctx, const char *key) {
  charge_ctx *c = ctx;
  fs_ent *e = get(fs_of(c->s), key);
  e->v = gp_decay_at(&c->s->cfg->fairshare, e->v, e->at, c->now) + c->add;
  e->at = c->now;
  if (e->user) {
    int64_t ps = period_start(c->s, e->queue, c->now);
    if (e->ps != ps) e->ph = 0, e->ps = ps;
    e->ph += period_hours(job_share(c->s, c->j), c->j->started_at, c->now, ps);
  }
  if (gp__srv_ledger_is_off(c->s)) return 0;
  char name[GP_SRV_SETTING_NAME_MAX + 300], doc[160];
  snprintf(name, sizeof name, GP_SRV_SETTING_FAIRSHARE "%s", key);
  snprintf(doc, sizeof doc, "{\"v\":%.17g,\"at\":%lld,\"ph\":%.17g,\"ps\":%lld}", e->v,
           (long long)e->at, e->ph, (long long)e->ps);
  return gp_store_put_setting(c->s->store, name, doc, c->err);
}

int gp__srv_fairshare_charge(gp_srv_state *s, const gp_srv_job *j, int64_t now, gp_err *err) {
  if (!j->queue || j->started_at <= 0 || now <= j->started_at) return 0;
  double rate = job_rate(s, j), cap = capacity(s);
  if (!(rate > 0)) return 0;
  if (cap < rate) cap = rate; /* its own nodes gone: it had the cluster it could see */
  charge_ctx c = {s, j, gp_decay_interval(&s->cfg->fairshare, rate / cap, j->started_at, now, now), now, err};
  if (!(c.add > 0)) return 0;
  fs_of(s)->dirty = true;
  return each_key(j, charge_key, &c);
}

typedef struct open_ctx {
  gp_srv_state *s;
  const gp_srv_job *j;
  double add;
  int64_t now;
} open_ctx;

static int open_key(void *ctx, const char *key) {
  open_ctx *c = ctx;
  fs_ent *e = get(fs_of(c->s), key);
  e->now += c->add;
  if (e->user)
    e->ph_now += period_hours(job_share(c->s, c->j), c->j->started_at, c->now,
                              period_start(c->s, e->queue, c->now));
  return 0;
}

/* Every entry's value at `now` (in ->now), running jobs' parts so far in; returns the
 * capacity it is a share of. */
static double compute(gp_srv_state *s, int64_t now) {
  struct gp__srv_fairshare *f = fs_of(s);
  const gp_fairshare_config *cfg = &s->cfg->fairshare;
  /* The limit period is the queue's; without any queue limits, a month (no lookups). */
  bool limits = false;
  for (int q = 0; q < s->n_queues && !limits; q++) limits = s->queues[q]->user_limits.n > 0;
  int64_t month = gp_budget_period_start(GP_BUDGET_MONTH, now);
  for (size_t i = 0; i < f->n; i++) {
    fs_ent *e = &f->e[i];
    e->now = gp_decay_at(cfg, e->v, e->at, now);
    e->ph_now = e->user && e->ps == (limits ? period_start(s, e->queue, now) : month) ? e->ph : 0;
  }
  double cap = capacity(s);
  for (int k = 0; k < s->n_active; k++) {
    const gp_srv_job *j = s->active[k];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) continue;
    if (j->started_at <= 0 || now <= j->started_at) continue;
    double rate = job_rate(s, j), c = cap < rate ? rate : cap;
    if (!(rate > 0)) continue;
    open_ctx o = {s, j, gp_decay_interval(cfg, rate / c, j->started_at, now, now), now};
    each_key(j, open_key, &o);
  }
  return cap;
}

/* GPU-equivalents of a value in cluster-seconds. */
static double gpus_of(const gp_srv_state *s, double v, double cap) {
  return v / gp_decay_tau(&s->cfg->fairshare) * cap;
}

void gp__srv_fairshare_view(gp_srv_state *s, int64_t now) {
  struct gp__srv_fairshare *f = fs_of(s);
  gp_view *v = &s->view.view;
  if (f->dirty || f->view_at == 0 || now - f->view_at >= GP_SRV_FAIRSHARE_REFRESH_S || now < f->view_at) {
    double cap = compute(s, now);
    gp_xgrow((void **)&f->view, &f->cap_view, f->n + 1, sizeof *f->view);
    f->n_view = 0;
    for (size_t i = 0; i < f->n; i++) {
      const fs_ent *e = &f->e[i];
      double g = gpus_of(s, e->now, cap);
      if (!isfinite(g) || g < 0) g = 0;
      if (!(g > 1e-9) && !(e->ph_now > 0)) continue;
      f->view[f->n_view++] = (gp_usage){.queue = e->queue, .user = e->user, .gpus = g,
                                        .period_gpu_hours = e->ph_now};
    }
    f->view_at = now;
    f->dirty = false;
    s->view_rev = ++s->revs; /* the usage is part of what the scheduler's memo depends on */
  }
  v->n_usage = (int)f->n_view;
  v->usage = f->view;
  v->rev = s->view_rev;
}

/* ---- what users see: GET /v1/shares, the job's line, metrics ---- */

/* One row of the shares table. */
typedef struct share_row {
  const char *queue, *user;  /* user NULL: the queue's row */
  const char *parent;        /* queue rows: the parent's name ("" at the top) */
  int up;                    /* the parent's row (a user's: its queue's), -1 at the top */
  double usage;              /* cluster-seconds now */
  double weight;             /* queue: its weight; user: 1 */
  double eff, share, factor;
} share_row;

typedef struct shares {
  share_row *rows;
  size_t n, cap;
  char **owned;              /* keys and parents' names made here */
  size_t n_owned, cap_owned;
  int *slot;                 /* open addressing over keys: row index + 1, 0: empty */
  size_t mask;
  double cap_gpus;
} shares;

static char *own(shares *t, char *s) {
  gp_xgrow((void **)&t->owned, &t->cap_owned, t->n_owned + 1, sizeof *t->owned);
  return t->owned[t->n_owned++] = s;
}

static void shares_free(shares *t) {
  for (size_t i = 0; i < t->n_owned; i++) free(t->owned[i]);
  free(t->owned);
  free(t->rows);
  free(t->slot);
}

/* A row's key: the queue's name, or queue ":" user. */
static bool row_is(const share_row *r, const char *queue, const char *user) {
  if (strcmp(r->queue, queue) != 0) return false;
  return user ? r->user && strcmp(r->user, user) == 0 : !r->user;
}

static uint32_t row_hash(const char *queue, const char *user) {
  uint32_t h = hash(queue);
  if (user) h = (h ^ 0x3a) * 16777619u ^ hash(user);
  return h;
}

static int row_of(const shares *t, const char *queue, const char *user) {
  if (!t->slot) return -1;
  for (size_t h = row_hash(queue, user) & t->mask; t->slot[h]; h = (h + 1) & t->mask)
    if (row_is(&t->rows[t->slot[h] - 1], queue, user)) return t->slot[h] - 1;
  return -1;
}

static void index_rows(shares *t) {
  size_t cap = 64;
  while (cap < t->n * 2 + 2) cap *= 2;
  free(t->slot);
  t->slot = gp_xcalloc(cap, sizeof *t->slot);
  t->mask = cap - 1;
  for (size_t i = 0; i < t->n; i++) {
    size_t h = row_hash(t->rows[i].queue, t->rows[i].user) & t->mask;
    while (t->slot[h]) h = (h + 1) & t->mask;
    t->slot[h] = (int)i + 1;
  }
}

/* The row of (queue, user), added when missing; the strings must outlive the table. */
static int add_row(shares *t, const char *queue, const char *user) {
  int i = row_of(t, queue, user);
  if (i >= 0) return i;
  gp_xgrow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows);
  t->rows[t->n] = (share_row){.queue = queue, .user = user, .weight = 1, .up = -1, .parent = ""};
  t->n++;
  if (!t->slot || t->n * 2 > t->mask) index_rows(t);
  else {
    size_t h = row_hash(queue, user) & t->mask;
    while (t->slot[h]) h = (h + 1) & t->mask;
    t->slot[h] = (int)t->n;
  }
  return (int)t->n - 1;
}

/* Every queue (implied parents too), every user with usage or an active job, with usage,
 * effective usage (its part of its siblings' total), normalised share (its weight's part
 * of its siblings'; users of a leaf share equally) and factor 2^-(effective / share). In
 * time linear in the rows (a hash of them), so /metrics and `gpool why` stay cheap with
 * 100,000 users. */
static void shares_build(gp_srv_state *s, int64_t now, shares *t) {
  memset(t, 0, sizeof *t);
  t->cap_gpus = compute(s, now);
  struct gp__srv_fairshare *f = fs_of(s);
  for (int i = 0; i < s->n_queues; i++) {
    const char *name = s->queues[i]->name;
    for (const char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
      char *pre = gp_xstrndup(name, (size_t)(p - name));
      if (row_of(t, pre, NULL) >= 0) free(pre);
      else add_row(t, own(t, pre), NULL);
    }
    int r = add_row(t, name, NULL); /* (before reading rows: it may move them) */
    t->rows[r].weight = s->queues[i]->weight;
  }
  for (size_t i = 0; i < f->n; i++) {
    const fs_ent *e = &f->e[i];
    int r = row_of(t, e->queue, NULL);
    if (r >= 0 && e->user) r = add_row(t, e->queue, e->user);
    if (r >= 0) t->rows[r].usage = e->now;
  }
  for (int k = 0; k < s->n_active; k++) {
    const gp_srv_job *j = s->active[k];
    if (j->user && j->queue && row_of(t, j->queue, NULL) >= 0) add_row(t, j->queue, j->user);
  }
  /* Parents; then each parent's sums of its children's usage and weight, for queue rows
   * and for user rows apart (slot n: the top level). */
  double *qu = gp_xcalloc(t->n + 1, sizeof *qu), *qw = gp_xcalloc(t->n + 1, sizeof *qw);
  double *uu = gp_xcalloc(t->n + 1, sizeof *uu), *uw = gp_xcalloc(t->n + 1, sizeof *uw);
  for (size_t i = 0; i < t->n; i++) {
    share_row *r = &t->rows[i];
    if (r->user) {
      r->up = row_of(t, r->queue, NULL);
      r->parent = r->queue;
    } else {
      const char *slash = strrchr(r->queue, '/');
      if (slash) {
        char *pre = gp_xstrndup(r->queue, (size_t)(slash - r->queue));
        r->up = row_of(t, pre, NULL);
        free(pre);
        if (r->up >= 0) r->parent = t->rows[r->up].queue;
      }
    }
    size_t up = r->up >= 0 ? (size_t)r->up : t->n;
    *(r->user ? &uu[up] : &qu[up]) += r->usage;
    *(r->user ? &uw[up] : &qw[up]) += r->weight;
  }
  for (size_t i = 0; i < t->n; i++) {
    share_row *r = &t->rows[i];
    size_t up = r->up >= 0 ? (size_t)r->up : t->n;
    double u = r->user ? uu[up] : qu[up], w = r->user ? uw[up] : qw[up];
    r->eff = u > 0 ? r->usage / u : 0;
    r->share = w > 0 ? r->weight / w : 0;
    r->factor = gp_fairshare_factor(r->eff, r->share);
  }
  free(qu);
  free(qw);
  free(uu);
  free(uw);
}

static json_t *row_json(const gp_srv_state *s, const shares *t, const share_row *r) {
  json_t *o = json_object();
  json_object_set_new(o, "queue", json_string(r->queue));
  if (r->user) json_object_set_new(o, "user", json_string(r->user));
  else json_object_set_new(o, "parent", *r->parent ? json_string(r->parent) : json_null());
  /* Raw usage in weighted GPU-hours of today's capacity; GPU-equivalents; the rest. */
  json_object_set_new(o, "raw_usage_gpu_hours", json_real(r->usage * t->cap_gpus / 3600));
  json_object_set_new(o, "usage_gpus", json_real(gpus_of(s, r->usage, t->cap_gpus)));
  json_object_set_new(o, "effective_usage", json_real(r->eff));
  json_object_set_new(o, "share", json_real(r->share));
  json_object_set_new(o, "factor", json_real(r->factor));
  return o;
}

static const char *reset_name(gp_decay_reset r) {
  return r == GP_DECAY_RESET_MONTH ? "month" : r == GP_DECAY_RESET_QUARTER ? "quarter" : "none";
}

int gp__srv_shares_route(gp_srv_state *s, struct gp_srv_req *r, int64_t now) {
  if (!gp__srv_req_method(r, "GET")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/shares");
    return 0;
  }
  static const char *const keys[] = {"queue", "user", NULL};
  if (!gp__srv_query_known(r, keys, "shares take queue and user")) return 0;
  const char *fq = json_string_value(json_object_get(r->query, "queue"));
  const char *fu = json_string_value(json_object_get(r->query, "user"));
  shares t;
  shares_build(s, now, &t);
  json_t *qs = json_array(), *us = json_array();
  for (size_t i = 0; i < t.n; i++) {
    const share_row *w = &t.rows[i];
    size_t fl = fq ? strlen(fq) : 0;
    /* A queue filter keeps it and its sub-queues ("a" keeps "a/b"). */
    if (fq && !(strncmp(w->queue, fq, fl) == 0 && (w->queue[fl] == '\0' || w->queue[fl] == '/'))) continue;
    if (fu && (!w->user || strcmp(w->user, fu) != 0)) continue;
    json_array_append_new(w->user ? us : qs, row_json(s, &t, w));
  }
  const gp_fairshare_config *c = &s->cfg->fairshare;
  json_t *o = json_object();
  json_object_set_new(o, "half_life_s", c->half_life_s > 0 ? json_integer(c->half_life_s) : json_string("off"));
  json_object_set_new(o, "reset", json_string(reset_name(c->reset)));
  json_object_set_new(o, "capacity_gpus", json_real(t.cap_gpus));
  json_object_set_new(o, "queues", qs);
  json_object_set_new(o, "users", us);
  shares_free(&t);
  gp__srv_reply_json(r, 200, o);
  return 0;
}

void gp__srv_fairshare_metrics(gp_srv_state *s, int64_t now, gp_buf *out) {
  shares t;
  shares_build(s, now, &t);
  gp_buf_puts(out, "# HELP gpool_fairshare_usage_gpus Decayed past usage of a queue, in GPU-equivalents.\n"
                   "# TYPE gpool_fairshare_usage_gpus gauge\n");
  for (size_t i = 0; i < t.n; i++)
    if (!t.rows[i].user)
      gp_buf_printf(out, "gpool_fairshare_usage_gpus{queue=\"%s\"} %.6g\n", t.rows[i].queue,
                    gpus_of(s, t.rows[i].usage, t.cap_gpus));
  gp_buf_puts(out, "# HELP gpool_fairshare_factor Fair-share factor of a queue, 2^-(effective usage / share).\n"
                   "# TYPE gpool_fairshare_factor gauge\n");
  for (size_t i = 0; i < t.n; i++)
    if (!t.rows[i].user)
      gp_buf_printf(out, "gpool_fairshare_factor{queue=\"%s\"} %.6g\n", t.rows[i].queue, t.rows[i].factor);
  shares_free(&t);
}
