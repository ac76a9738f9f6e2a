/* SPDX-License-Identifier: Apache-2.0 */
/* Per-user limits of leaf queues (user_limits.h). The step's tally per (leaf, user) is
 * made on the first check, and only when some queue has limits: the GPUs the user's
 * running jobs hold there (starts of this step added as they happen) and the GPU-hours of
 * the current period the view gives. A named user's limit wins over the queue's "*". */
#include "core/user_limits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/classify.h"
#include "core/field.h"
#include "core/strmap.h"

typedef struct ulim_ent {
  double running, hours;
} ulim_ent;

struct gp__core_ulim {
  bool none;            /* no queue of the view has limits */
  gp__core_strmap map;  /* "leaf\x1fuser" -> entry */
  ulim_ent *e;
  size_t n, cap;
};

int gp__core_user_limits_check_view(gp__core_ctx *c) {
  char f[96];
  for (int i = 0; i < c->view->n_queues; i++) {
    const gp_queue *q = &c->view->queues[i];
    if (q->n_user_limits < 0 || (q->n_user_limits && !q->user_limits))
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "queues", i, ".user_limits"),
                        "malformed view: a count without its array");
    for (int k = 0; k < q->n_user_limits; k++) {
      const gp_user_limit *l = &q->user_limits[k];
      const char *bad = !l->user || !*l->user ? "user"
                        : l->max_gpus != GP_NO_LIMIT && !(l->max_gpus >= 0 && isfinite(l->max_gpus)) ? "max_gpus"
                        : l->max_gpu_hours != GP_NO_LIMIT && !(l->max_gpu_hours >= 0 && isfinite(l->max_gpu_hours))
                            ? "max_gpu_hours"
                            : NULL;
      if (bad) {
        char g[64], s[32] = ".";
        strncat(s, bad, sizeof s - 2);
        gp__core_field(f, sizeof f, gp__core_field(g, sizeof g, "queues", i, ".user_limits"), k, s);
        return gp_err_set(c->err, GP_EINVAL, NULL, 0, f,
                          "queue %s: a user limit needs a user and limits of 0 or more (or none)", q->name);
      }
    }
  }
  for (int i = 0; i < c->view->n_usage; i++) {
    double h = c->view->usage[i].period_gpu_hours;
    if (!(h >= 0) || !isfinite(h)) {
      gp__core_field(f, sizeof f, "usage", i, ".period_gpu_hours");
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, f, "must be a finite number of 0 or more, got %g", h);
    }
  }
  return 0;
}

static const gp_queue *leaf_queue(const gp__core_ctx *c, int leaf) {
  int vi = leaf >= 0 ? c->tree.q[leaf].view_index : -1;
  return vi >= 0 ? &c->view->queues[vi] : NULL;
}

static const gp_user_limit *limit_of(const gp_queue *q, const char *user) {
  const gp_user_limit *any = NULL;
  for (int k = 0; q && k < q->n_user_limits; k++) {
    if (strcmp(q->user_limits[k].user, user) == 0) return &q->user_limits[k];
    if (strcmp(q->user_limits[k].user, "*") == 0) any = &q->user_limits[k];
  }
  return any;
}

static ulim_ent *ent(gp__core_ctx *c, struct gp__core_ulim *u, int leaf, const char *user) {
  /* The key: the leaf's tree index in digits, 0x1f, the user. */
  char buf[512];
  int n = 0;
  char digits[16];
  int k = 0;
  for (unsigned v = (unsigned)leaf; k == 0 || v; v /= 10) digits[k++] = (char)('0' + v % 10);
  while (k > 0) buf[n++] = digits[--k];
  buf[n++] = '\x1f';
  size_t ul = strlen(user);
  if (ul + (size_t)n >= sizeof buf) return NULL; /* a user name past 500 bytes: unlimited */
  memcpy(buf + n, user, ul + 1);
  n += (int)ul;
  int i = gp__core_strmap_get(&u->map, buf);
  if (i >= 0) return &u->e[i];
  char *key = gp__core_salloc(c, (size_t)n + 1);
  memcpy(key, buf, (size_t)n + 1);
  gp_xgrow((void **)&u->e, &u->cap, u->n + 1, sizeof *u->e);
  u->e[u->n] = (ulim_ent){0};
  gp__core_strmap_put(&u->map, key, (int)u->n);
  return &u->e[u->n++];
}

static const char *user_of(const gp_job *j) { return j->user ? j->user : ""; }

static struct gp__core_ulim *tally(gp__core_ctx *c) {
  if (c->ulim) return c->ulim;
  struct gp__core_ulim *u = c->ulim = gp__core_scalloc(c, 1, sizeof *u);
  u->none = true;
  for (int i = 0; i < c->view->n_queues && u->none; i++) u->none = c->view->queues[i].n_user_limits == 0;
  if (u->none) return u;
  gp__core_strmap_init(&u->map, 64);
  for (int r = 0; r < c->cls->n_running; r++) {
    int j = c->cls->running[r], leaf = c->jobs[j].leaf;
    const gp_queue *q = leaf_queue(c, leaf);
    if (!q || !q->n_user_limits) continue;
    ulim_ent *e = ent(c, u, leaf, user_of(&c->view->jobs[j]));
    if (e) e->running += c->jobs[j].gpus;
  }
  for (int i = 0; i < c->view->n_usage; i++) {
    const gp_usage *x = &c->view->usage[i];
    int leaf = x->user ? gp__core_qtree_find(&c->tree, x->queue) : -1;
    const gp_queue *q = leaf_queue(c, leaf);
    if (!q || !q->n_user_limits) continue;
    ulim_ent *e = ent(c, u, leaf, x->user);
    if (e) e->hours += x->period_gpu_hours;
  }
  return u;
}

void gp__core_user_limits_done(gp__core_ctx *c) {
  if (!c->ulim) return;
  if (!c->ulim->none) gp__core_strmap_done(&c->ulim->map);
  free(c->ulim->e);
  c->ulim = NULL;
}

int gp__core_user_limit_block(gp__core_ctx *c, int j, const char **msg) {
  struct gp__core_ulim *u = tally(c);
  if (u->none) return -1;
  int leaf = c->jobs[j].leaf;
  const gp_queue *q = leaf_queue(c, leaf);
  const char *user = user_of(&c->view->jobs[j]);
  const gp_user_limit *l = limit_of(q, user);
  if (!l) return -1;
  ulim_ent *e = ent(c, u, leaf, user);
  if (!e) return -1;
  if (l->max_gpus != GP_NO_LIMIT && e->running + c->jobs[j].gpus > l->max_gpus + GP__EPS) {
    *msg = gp_arena_printf(c->arena, "User %s holds %g GPUs in queue %s, which allows one user %g.",
                           user, e->running, q->name, l->max_gpus);
    return GP_PEND_USER_GPU_LIMIT;
  }
  if (l->max_gpu_hours != GP_NO_LIMIT && e->hours >= l->max_gpu_hours - GP__EPS) {
    *msg = gp_arena_printf(c->arena,
                           "User %s used %.1f GPU-hours in queue %s this period, which allows one "
                           "user %g.", user, e->hours, q->name, l->max_gpu_hours);
    return GP_PEND_USER_GPU_HOURS;
  }
  return -1;
}

void gp__core_user_limit_started(gp__core_ctx *c, int j) {
  struct gp__core_ulim *u = tally(c);
  if (u->none) return;
  const gp_queue *q = leaf_queue(c, c->jobs[j].leaf);
  if (!q || !q->n_user_limits) return;
  ulim_ent *e = ent(c, u, c->jobs[j].leaf, user_of(&c->view->jobs[j]));
  if (e) e->running += c->jobs[j].gpus;
}
