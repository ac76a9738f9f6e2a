/* SPDX-License-Identifier: Apache-2.0 */
/* A pending job's place in its queue (the API's `queue_position`): 1 for the job its queue
 * would start next. The ranks follow the keys the scheduler's order gives jobs inside a
 * queue (gp_order_keys_of; ties to the job that came first, gp_order_id_cmp: the core's own
 * rule, so that position 1 is the job a step starts first), over the
 * jobs the last step considered (a pending reason other than a dependency or a hold). They
 * are worked out when first read after a step and kept until the next one, so a step pays
 * nothing for them and a page of 10,000 jobs sorts once. With fair share between users
 * (gp_policy.fair_users) and a queue holding jobs of two users, the second key is each
 * user's load as src/core/usage.c makes it: decayed usage, GPUs running, GPUs of the
 * user's own jobs ahead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "server/state/state.h"
#include "util/mem.h"

typedef struct rank_ent {
  const char *queue;
  int64_t k1, k2;
  gp_srv_job *j;
} rank_ent;

/* A (queue, user) and GPUs: a running job's, or a usage entry's. */
typedef struct load_ent {
  const char *queue, *user;
  double gpus;
} load_ent;

static int qu_cmp(const char *qa, const char *ua, const char *qb, const char *ub) {
  int c = strcmp(qa, qb);
  return c ? c : strcmp(ua, ub);
}

static int load_cmp(const void *a, const void *b) {
  const load_ent *x = a, *y = b;
  return qu_cmp(x->queue, x->user, y->queue, y->user);
}

static const char *user_of(const gp_srv_job *j) { return j->user ? j->user : ""; }

/* A user's own jobs in the core's order: priority (k1), then submitted, then id. */
static int user_cmp(const void *a, const void *b) {
  const rank_ent *x = a, *y = b;
  int c = qu_cmp(x->queue, user_of(x->j), y->queue, user_of(y->j));
  if (c) return c;
  if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
  if (x->j->submitted_at != y->j->submitted_at) return x->j->submitted_at < y->j->submitted_at ? -1 : 1;
  return gp_order_id_cmp(x->j->idstr, y->j->idstr);
}

/* GPUs a running job holds, fractions as fractions. */
static double held_gpus(const gp_srv_job *j) {
  double g = 0;
  for (int t = 0; t < j->n_alloc; t++)
    g += __builtin_popcount(j->alloc[t].gpu_mask) * (j->alloc[t].gpu_milli / 1000.0);
  return g;
}

/* Sets k2 of the n entries to their users' loads (milli-GPU) when a queue holds jobs of
 * two users; else leaves them. */
static void user_keys(const gp_srv_state *s, rank_ent *ents, size_t n) {
  qsort(ents, n, sizeof *ents, user_cmp);
  bool mixed = false;
  for (size_t i = 1; i < n && !mixed; i++)
    mixed = strcmp(ents[i].queue, ents[i - 1].queue) == 0 && strcmp(user_of(ents[i].j), user_of(ents[i - 1].j)) != 0;
  if (!mixed) return;
  const gp_view *v = &s->view.view;
  size_t nl = 0;
  load_ent *l = gp_xmalloc(((size_t)s->n_active + (size_t)v->n_usage + 1) * sizeof *l);
  for (int a = 0; a < s->n_active; a++) {
    const gp_srv_job *j = s->active[a];
    if ((j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING) && j->queue)
      l[nl++] = (load_ent){j->queue, user_of(j), held_gpus(j)};
  }
  for (int i = 0; i < v->n_usage; i++)
    if (v->usage[i].user) l[nl++] = (load_ent){v->usage[i].queue, v->usage[i].user, v->usage[i].gpus};
  qsort(l, nl, sizeof *l, load_cmp);
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    const char *q = ents[i].queue, *u = user_of(ents[i].j);
    while (k < nl && qu_cmp(l[k].queue, l[k].user, q, u) < 0) k++;
    double acc = 0;
    for (; k < nl && qu_cmp(l[k].queue, l[k].user, q, u) == 0; k++) acc += l[k].gpus;
    for (; i < n && !strcmp(ents[i].queue, q) && !strcmp(user_of(ents[i].j), u); i++) {
      acc += gp__srv_job_asked_gpus(ents[i].j);
      double m = acc * GP_GPU_MILLI;
      ents[i].k2 = m < 9e15 ? (int64_t)llround(m) : (int64_t)9e15;
    }
  }
  free(l);
}

static int ent_cmp(const void *a, const void *b) {
  const rank_ent *x = a, *y = b;
  int c = strcmp(x->queue, y->queue);
  if (c) return c;
  if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
  if (x->k2 != y->k2) return x->k2 < y->k2 ? -1 : 1;
  return gp_order_id_cmp(x->j->idstr, y->j->idstr);
}

/* Does the scheduler's order hold the job (as of the last step)? */
static bool ranked(const gp_srv_job *j) {
  return j->state == GP_JOB_PENDING && j->pending_reason >= 0 &&
         j->pending_reason != GP_PEND_DEPENDENCY && j->pending_reason != GP_PEND_HELD;
}

/* The time limit the core reads for a job: its own, else its nearest queue's default (the
 * leaf's, then each parent's), else the policy's; 0: none. */
static int64_t limit_of(const gp_srv_state *s, const gp_srv_job *j) {
  if (j->time_limit > 0) return j->time_limit;
  char name[GP_MAX_QUEUE_NAME + 1];
  snprintf(name, sizeof name, "%s", j->queue ? j->queue : "");
  for (;;) {
    const gp_srv_queue *q = gp__srv_queue_get(s, name);
    if (q && q->default_time_limit > 0) return q->default_time_limit;
    char *slash = strrchr(name, '/');
    if (!slash) break;
    *slash = '\0';
  }
  return s->cfg->policy.default_time_limit > 0 ? s->cfg->policy.default_time_limit : 0;
}

static rank_ent entry_of(const gp_srv_state *s, gp_srv_job *j) {
  const gp_priority_class *pc = gp_priority_class_find(&s->cfg->policy, gp__srv_idle_class(s, j));
  gp_order_keys k = gp_order_keys_of(s->cfg->policy.order, pc ? pc->priority : 0, limit_of(s, j), j->submitted_at);
  return (rank_ent){.queue = j->queue, .k1 = k.k1, .k2 = k.k2, .j = j};
}

static void refresh(gp_srv_state *s) {
  rank_ent *ents = gp_xmalloc(((size_t)s->n_active + 1) * sizeof *ents);
  size_t n = 0;
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    j->queue_position = 0;
    if (ranked(j) && j->queue) ents[n++] = entry_of(s, j);
  }
  if (s->cfg->policy.order == GP_ORDER_FAIRSHARE && s->cfg->policy.fair_users) user_keys(s, ents, n);
  qsort(ents, n, sizeof *ents, ent_cmp);
  int pos = 0;
  for (size_t i = 0; i < n; i++) {
    pos = i > 0 && strcmp(ents[i].queue, ents[i - 1].queue) == 0 ? pos + 1 : 1;
    ents[i].j->queue_position = pos;
  }
  free(ents);
  s->ranked_cycle = s->counters.sched_cycles + 1;
}

int gp__srv_job_queue_position(const gp_srv_state *s, const gp_srv_job *j) {
  if (!s || !s->cfg || !ranked(j)) return 0;
  /* The ranks are a cache of the last step's order: refreshing them changes nothing the
   * state's readers can see but this field, and only the state thread calls this. */
  gp_srv_state *w = (gp_srv_state *)s;
  if (w->ranked_cycle != w->counters.sched_cycles + 1) refresh(w);
  return j->queue_position;
}
