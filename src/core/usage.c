/* SPDX-License-Identifier: Apache-2.0 */
/* Past usage in the step: the view's decayed usage put on the queue tree (what orders
 * sibling queues, order.c), and the users' loads that order the jobs of one leaf queue so
 * that one user's 1,000 submissions do not starve a colleague's one. A user's load counts
 * what the user has used (decayed, from the view), what the user runs now and what the
 * user's own jobs ahead of a job ask: so a burst counts at once, before it has run (the
 * entry penalty), and the penalty is derived afresh every step from the jobs themselves,
 * never kept, so it cannot get stuck. Pure, as all of src/core. */
#include "core/usage.h"

#include <math.h>
#include <string.h>

#include "core/classify.h"
#include "core/field.h"
#include "core/order.h"
#include "core/strmap.h"

int gp__core_usage_apply(gp__core_ctx *c) {
  const gp_view *v = c->view;
  gp__core_qtree *t = &c->tree;
  char f[64];
  if (v->n_usage < 0 || (v->n_usage && !v->usage))
    return gp_err_set(c->err, GP_EINVAL, NULL, 0, "usage", "malformed view: a count without its array");
  for (int q = 0; q < t->n; q++) t->q[q].usage = -1;
  for (int i = 0; i < v->n_usage; i++) {
    const gp_usage *u = &v->usage[i];
    if (!(u->gpus >= 0) || !isfinite(u->gpus))
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "usage", i, ".gpus"),
                        "usage must be a finite number of 0 or more GPUs, got %g", u->gpus);
    if (!u->queue)
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "usage", i, ".queue"),
                        "a usage entry names no queue");
    if (u->user) continue;
    int q = gp__core_qtree_find(t, u->queue);
    if (q >= 0) t->q[q].usage = u->gpus;
  }
  /* Children come after their parent in tree order: backwards, a parent sees them done. */
  for (int q = t->n - 1; q >= 0; q--) {
    gp__core_queue *n = &t->q[q];
    if (n->usage >= 0) continue;
    n->usage = 0;
    for (int k = n->first_child; k >= 0; k = t->q[k].next_sibling) n->usage += t->q[k].usage;
  }
  return 0;
}

/* ---- users inside a leaf ---- */

typedef struct ukctx {
  const gp__core_ctx *c;
  const int *uid;       /* per view job: its user's number */
} ukctx;

/* (leaf, user, priority descending, submitted, id): a user's jobs in the leaf's own order. */
static bool uk_less(const ukctx *x, int a, int b) {
  const gp__core_job *ja = &x->c->jobs[a], *jb = &x->c->jobs[b];
  if (ja->leaf != jb->leaf) return ja->leaf < jb->leaf;
  if (x->uid[a] != x->uid[b]) return x->uid[a] < x->uid[b];
  if (ja->prio != jb->prio) return ja->prio > jb->prio;
  if (ja->submitted != jb->submitted) return ja->submitted < jb->submitted;
  if (ja->idp != jb->idp) return ja->idp < jb->idp;
  int r = gp_order_id_cmp(x->c->view->jobs[a].id, x->c->view->jobs[b].id);
  if (r) return r < 0;
  return a < b;
}

static void uk_sort(const ukctx *x, int *a, int *tmp, int n) {
  for (int w = 1; w < n; w *= 2) {
    for (int lo = 0; lo < n; lo += 2 * w) {
      int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int i = lo, k = mid, o = lo;
      while (i < mid && k < hi) tmp[o++] = uk_less(x, a[k], a[i]) ? a[k++] : a[i++];
      while (i < mid) tmp[o++] = a[i++];
      while (k < hi) tmp[o++] = a[k++];
    }
    memcpy(a, tmp, (size_t)n * sizeof *a);
  }
}

/* An open-addressing table from (leaf, user) to a load, sized for the pairs that have
 * eligible jobs: running jobs and usage of other pairs find no slot and are skipped. */
typedef struct pairtab {
  int64_t *key;         /* leaf * users + user, -1: empty */
  double *load;
  size_t mask;
} pairtab;

static size_t pair_slot(const pairtab *p, int64_t k) {
  size_t h = (size_t)((uint64_t)k * 0x9E3779B97F4A7C15ull >> 17) & p->mask;
  while (p->key[h] >= 0 && p->key[h] != k) h = (h + 1) & p->mask;
  return h;
}

static double *pair_load(pairtab *p, int64_t k) {
  size_t h = pair_slot(p, k);
  return p->key[h] == k ? &p->load[h] : NULL;
}

static const char *user_of(const gp_job *j) { return j->user ? j->user : ""; }

int64_t *gp__core_user_keys(gp__core_ctx *c) {
  const gp_view *v = c->view;
  int n_el = c->cls->n_eligible;
  const int *el = c->cls->eligible;
  if (n_el < 2) return NULL;
  /* Users by number, in the order first met (deterministic: view order). */
  gp__core_strmap users;
  gp__core_strmap_init(&users, 64);
  int *uid = gp__core_salloc(c, ((size_t)v->n_jobs + 1) * sizeof *uid);
  int n_users = 0;
  for (int e = 0; e < n_el; e++) {
    int j = el[e], u = gp__core_strmap_get(&users, user_of(&v->jobs[j]));
    if (u < 0) gp__core_strmap_put(&users, user_of(&v->jobs[j]), u = n_users++);
    uid[j] = u;
  }
  int *ord = gp__core_salloc(c, ((size_t)n_el + 1) * sizeof *ord);
  int *tmp = gp__core_salloc(c, ((size_t)n_el + 1) * sizeof *tmp);
  memcpy(ord, el, (size_t)n_el * sizeof *ord);
  ukctx x = {c, uid};
  uk_sort(&x, ord, tmp, n_el);
  /* Two users in one leaf? Else every leaf's order is the plain one. */
  bool mixed = false;
  int n_pairs = 1;
  for (int e = 1; e < n_el; e++) {
    int a = ord[e - 1], b = ord[e];
    if (c->jobs[a].leaf != c->jobs[b].leaf || uid[a] != uid[b]) n_pairs++;
    if (c->jobs[a].leaf == c->jobs[b].leaf && uid[a] != uid[b]) mixed = true;
  }
  if (!mixed) {
    gp__core_strmap_done(&users);
    return NULL;
  }
  pairtab p;
  size_t cap = 16;
  while (cap < (size_t)n_pairs * 2) cap *= 2;
  p.mask = cap - 1;
  p.key = gp__core_salloc(c, cap * sizeof *p.key);
  p.load = gp__core_scalloc(c, cap, sizeof *p.load);
  memset(p.key, 0xff, cap * sizeof *p.key);
  int64_t nu = n_users;
  for (int e = 0; e < n_el; e++) {
    int j = ord[e];
    int64_t k = (int64_t)c->jobs[j].leaf * nu + uid[j];
    p.key[pair_slot(&p, k)] = k;
  }
  /* What each pair runs now (GPUs held, fractions as fractions) ... */
  for (int r = 0; r < c->cls->n_running; r++) {
    int j = c->cls->running[r], u = gp__core_strmap_get(&users, user_of(&v->jobs[j]));
    double *l = u >= 0 && c->jobs[j].leaf >= 0 ? pair_load(&p, (int64_t)c->jobs[j].leaf * nu + u) : NULL;
    if (l) *l += c->jobs[j].gpus;
  }
  /* ... and has used (the view's decayed usage). */
  for (int i = 0; i < v->n_usage; i++) {
    const gp_usage *e = &v->usage[i];
    if (!e->user) continue;
    int u = gp__core_strmap_get(&users, e->user); /* (users without eligible jobs: skipped) */
    int q = u >= 0 ? gp__core_qtree_find(&c->tree, e->queue) : -1;
    double *l = q >= 0 ? pair_load(&p, (int64_t)q * nu + u) : NULL;
    if (l) *l += e->gpus;
  }
  int64_t *key = gp__core_salloc(c, ((size_t)v->n_jobs + 1) * sizeof *key);
  for (int e = 0; e < n_el;) {
    int j0 = ord[e];
    double acc = *pair_load(&p, (int64_t)c->jobs[j0].leaf * nu + uid[j0]);
    for (; e < n_el && c->jobs[ord[e]].leaf == c->jobs[j0].leaf && uid[ord[e]] == uid[j0]; e++) {
      acc += c->jobs[ord[e]].gpus;
      /* Milli-GPU, bounded so that no sum of loads overflows the key. */
      double m = acc * GP_GPU_MILLI;
      key[ord[e]] = m < 9e15 ? (int64_t)llround(m) : (int64_t)9e15;
    }
  }
  gp__core_strmap_done(&users);
  return key;
}
