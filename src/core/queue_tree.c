/* SPDX-License-Identifier: Apache-2.0 */
/* Queue tree construction and fair share by water-filling, the over-quota part weighted
 * by weight and past usage (see queue_tree.h). The tree is small (tens to thousands of
 * queues), so the water-filling uses a simple iterative loop per parent: each round either
 * hands out everything left or saturates at least one child. */
#include "core/queue_tree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/field.h"
#include "util/mem.h"

#define EPS 1e-9

/* Name order for the tree: '/' sorts before every other byte, so "a/b" comes right after
 * "a" and before "a-c": a depth-first walk with siblings in byte order. */
static int path_cmp(const char *a, const char *b) {
  for (;; a++, b++) {
    unsigned char ca = (unsigned char)*a, cb = (unsigned char)*b;
    if (ca == cb) {
      if (!ca) return 0;
      continue;
    }
    if (!ca) return -1;
    if (!cb) return 1;
    if (ca == '/') return -1;
    if (cb == '/') return 1;
    return ca < cb ? -1 : 1;
  }
}

bool gp_queue_name_ok(const char *s) {
  if (!s || !*s) return false;
  size_t seg = 0, dots = 0, n = 0;
  for (const char *c = s;; c++, n++) {
    if (n > GP_MAX_QUEUE_NAME) return false;
    if (*c == '/' || !*c) {
      if (seg == 0 || dots == seg) return false; /* "", "." or ".." (or "...": no meaning) */
      if (!*c) return true;
      seg = dots = 0;
      continue;
    }
    bool alnum = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
    if (!alnum && *c != '.' && *c != '_' && *c != '-') return false;
    seg++;
    dots += *c == '.';
  }
}

typedef struct entry {
  const char *name;
  int view_index;
} entry;

static int entry_cmp(const void *a, const void *b) {
  return path_cmp(((const entry *)a)->name, ((const entry *)b)->name);
}

void gp__core_qtree_done(gp__core_qtree *t) {
  if (!t) return;
  free(t->q);
  if (!t->shared) {
    for (int i = 0; i < t->n_owned; i++) free(t->owned[i]);
    free(t->owned);
    if (t->names.keys) gp__core_strmap_done(&t->names);
  }
  memset(t, 0, sizeof *t);
}

void gp__core_qtree_clone(gp__core_qtree *t, const gp__core_qtree *src) {
  memset(t, 0, sizeof *t);
  t->n = src->n;
  t->first_root = src->first_root;
  t->q = gp_xmalloc(((size_t)src->n + 1) * sizeof *t->q);
  memcpy(t->q, src->q, (size_t)src->n * sizeof *t->q);
  t->owned = gp_xmalloc(((size_t)src->n + 1) * sizeof *t->owned);
  gp__core_strmap_init(&t->names, (size_t)src->n + 1);
  for (int i = 0; i < src->n; i++) {
    t->q[i].name = t->owned[t->n_owned++] = gp_xstrdup(src->q[i].name);
    gp__core_strmap_put(&t->names, t->q[i].name, i);
  }
}

void gp__core_qtree_share(gp__core_qtree *t, const gp__core_qtree *src) {
  *t = *src;
  t->q = gp_xmalloc(((size_t)src->n + 1) * sizeof *t->q);
  memcpy(t->q, src->q, (size_t)src->n * sizeof *t->q);
  t->shared = true;
}

static int check_queue(const gp_queue *q, int i, gp_err *err) {
  char f[64];
  if (!gp_queue_name_ok(q->name))
    return gp_err_set(err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "queues", i, ".name"),
                      "%s, got \"%.64s\"", GP_QUEUE_NAME_RULE, q->name ? q->name : "");
  if (!(q->weight >= 0) || !isfinite(q->weight))
    return gp_err_set(err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "queues", i, ".weight"),
                      "queue %s: weight must be a number of 0 or more, got %g", q->name, q->weight);
  if (!(q->deserved_gpus >= 0) || !isfinite(q->deserved_gpus))
    return gp_err_set(err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "queues", i, ".deserved"),
                      "queue %s: deserved must be 0 or more GPUs, got %g", q->name,
                      q->deserved_gpus);
  if (q->limit_gpus != GP_NO_LIMIT && (!(q->limit_gpus >= 0) || !isfinite(q->limit_gpus)))
    return gp_err_set(err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "queues", i, ".limit"),
                      "queue %s: limit must be 0 or more GPUs (or none), got %g", q->name,
                      q->limit_gpus);
  return 0;
}

int gp__core_qtree_build(gp__core_qtree *t, const gp_queue *queues, int n_queues, gp_err *err) {
  memset(t, 0, sizeof *t);
  t->first_root = -1;
  gp__core_strmap seen; /* name -> index into ents */
  gp__core_strmap_init(&seen, (size_t)n_queues * 2 + 1);
  size_t ents_cap = 0, owned_cap = 0;
  entry *ents = NULL;
  int n = 0, rc = 0;
  for (int i = 0; i < n_queues; i++) {
    if ((rc = check_queue(&queues[i], i, err))) goto fail;
    if (gp__core_strmap_get(&seen, queues[i].name) >= 0) {
      char f[64];
      rc = gp_err_set(err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "queues", i, ".name"),
                      "queue %s is defined twice", queues[i].name);
      goto fail;
    }
    gp_xgrow((void **)&ents, &ents_cap, (size_t)n + 1, sizeof *ents);
    ents[n] = (entry){queues[i].name, i};
    gp__core_strmap_put(&seen, queues[i].name, n++);
  }
  /* Implied parents: every proper prefix ending before a '/'. */
  for (int i = 0; i < n_queues; i++) {
    const char *name = queues[i].name;
    for (const char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
      char *prefix = gp_xstrndup(name, (size_t)(p - name));
      if (gp__core_strmap_get(&seen, prefix) >= 0) {
        free(prefix);
        continue;
      }
      gp_xgrow((void **)&t->owned, &owned_cap, (size_t)t->n_owned + 1, sizeof *t->owned);
      t->owned[t->n_owned++] = prefix;
      gp_xgrow((void **)&ents, &ents_cap, (size_t)n + 1, sizeof *ents);
      ents[n] = (entry){prefix, -1};
      gp__core_strmap_put(&seen, prefix, n++);
    }
  }
  gp__core_strmap_done(&seen);
  if (n > 1) qsort(ents, (size_t)n, sizeof *ents, entry_cmp);

  t->n = n;
  t->q = gp_xcalloc((size_t)(n ? n : 1), sizeof *t->q);
  gp__core_strmap_init(&t->names, (size_t)n + 1);
  for (int i = 0; i < n; i++) {
    gp__core_queue *q = &t->q[i];
    q->name = ents[i].name;
    q->view_index = ents[i].view_index;
    q->first_child = q->next_sibling = q->parent = -1;
    if (q->view_index >= 0) {
      const gp_queue *v = &queues[q->view_index];
      q->deserved = v->deserved_gpus;
      q->limit = v->limit_gpus;
      q->weight = v->weight;
    } else {
      q->limit = GP_NO_LIMIT;
      q->weight = 1;
    }
    gp__core_strmap_put(&t->names, q->name, i);
    const char *slash = strrchr(q->name, '/');
    if (slash) {
      /* The parent sorts before the child, so it is already in the map. */
      char *pname = gp_xstrndup(q->name, (size_t)(slash - q->name));
      q->parent = gp__core_strmap_get(&t->names, pname);
      free(pname);
      q->depth = t->q[q->parent].depth + 1;
    }
  }
  free(ents);
  /* Children lists in tree order, and implied deserved bottom-up. */
  for (int i = n - 1; i >= 0; i--) {
    gp__core_queue *q = &t->q[i];
    if (q->view_index < 0) {
      double sum = 0;
      for (int c = q->first_child; c >= 0; c = t->q[c].next_sibling) sum += t->q[c].deserved;
      q->deserved = sum;
    }
    if (q->parent >= 0) {
      gp__core_queue *p = &t->q[q->parent];
      q->next_sibling = p->first_child;
      p->first_child = i;
      p->n_children++;
    } else {
      q->next_sibling = t->first_root;
      t->first_root = i;
    }
  }
  return 0;
fail:
  free(ents);
  gp__core_strmap_done(&seen);
  gp__core_qtree_done(t);
  return rc;
}

int gp__core_qtree_find(const gp__core_qtree *t, const char *name) {
  if (!name || !t->names.keys) return -1;
  return gp__core_strmap_get(&t->names, name);
}

bool gp__core_qtree_is_ancestor(const gp__core_qtree *t, int anc, int q) {
  for (; q >= 0; q = t->q[q].parent)
    if (q == anc) return true;
  return false;
}

static double cap_of(const gp__core_queue *q) {
  double c = q->demand;
  if (q->limit != GP_NO_LIMIT && q->limit < c) c = q->limit;
  return c < 0 ? 0 : c;
}

/* A child's weight in a water-filling round: its over-quota weight while some child of
 * positive weight has room, else 1 for the children of weight 0. */
static double wf(const gp__core_queue *q, bool any_pos) {
  return any_pos ? q->over_weight : (q->weight > 0 ? 0 : 1);
}

double gp__core_over_factor(double usage_fraction, double share_fraction) {
  if (!(usage_fraction > 0)) return 1;
  double x = usage_fraction / share_fraction;
  return exp2(-(x < GP__CORE_OVER_FLOOR_EXP ? x : GP__CORE_OVER_FLOOR_EXP));
}

/* Over-quota weights of the children chained from `first`: weight x factor, the factor
 * from each child's part of its siblings' decayed usage against its weight's part of
 * their weights (the same fractions `gpool shares` shows). Past usage thus sizes what a
 * queue borrows, not only when it borrows; a fixed point is usage in proportion to weight
 * (a queue that used less gets more until it has caught up). Weight 0 stays 0. */
static void over_weights(gp__core_qtree *t, int first) {
  double u = 0, w = 0;
  for (int c = first; c >= 0; c = t->q[c].next_sibling) {
    if (t->q[c].usage > 0) u += t->q[c].usage;
    w += t->q[c].weight;
  }
  for (int c = first; c >= 0; c = t->q[c].next_sibling) {
    gp__core_queue *q = &t->q[c];
    q->over_weight = q->weight;
    if (q->weight > 0 && u > 0 && q->usage > 0)
      q->over_weight = q->weight * gp__core_over_factor(q->usage / u, q->weight / w);
  }
}

/* Divides `share` among the children chained from `first` (see the header). */
static void distribute(gp__core_qtree *t, int first, double share) {
  if (first < 0) return;
  over_weights(t, first);
  double sum = 0;
  for (int c = first; c >= 0; c = t->q[c].next_sibling) {
    gp__core_queue *q = &t->q[c];
    double g = q->deserved < cap_of(q) ? q->deserved : cap_of(q);
    q->fair_share = g;
    sum += g;
  }
  double left = share - sum;
  if (sum > share) {
    double scale = sum > 0 ? share / sum : 0;
    for (int c = first; c >= 0; c = t->q[c].next_sibling) t->q[c].fair_share *= scale;
    left = 0;
  }
  /* Water-filling of what is left by over-quota weight w (over_weights). Each round: the
   * active children (demand not met) would each get left * w / W; if that saturates
   * nobody, hand it out and stop; otherwise give everyone the amount that saturates the
   * tightest child, and drop it. Children of weight 0 take part only once no child of
   * positive weight has room: then they share what is left equally (weight 1 each), so a
   * weight-0 queue gets what nobody else wants and never divides by 0. */
  while (left > EPS) {
    bool any_pos = false;
    for (int c = first; c >= 0 && !any_pos; c = t->q[c].next_sibling)
      any_pos = t->q[c].weight > 0 && cap_of(&t->q[c]) - t->q[c].fair_share > EPS;
    double wsum = 0, tmin = INFINITY;
    for (int c = first; c >= 0; c = t->q[c].next_sibling) {
      gp__core_queue *q = &t->q[c];
      double room = cap_of(q) - q->fair_share, w = wf(q, any_pos);
      if (room <= EPS || w <= 0) continue;
      wsum += w;
      if (room / w < tmin) tmin = room / w;
    }
    if (wsum <= 0) break;
    double per_weight = left / wsum;
    if (per_weight <= tmin) {
      for (int c = first; c >= 0; c = t->q[c].next_sibling) {
        gp__core_queue *q = &t->q[c];
        if (cap_of(q) - q->fair_share > EPS) q->fair_share += per_weight * wf(q, any_pos);
      }
      left = 0;
      break;
    }
    for (int c = first; c >= 0; c = t->q[c].next_sibling) {
      gp__core_queue *q = &t->q[c];
      double room = cap_of(q) - q->fair_share, w = wf(q, any_pos);
      if (room <= EPS || w <= 0) continue;
      double give = tmin * w;
      if (give >= room - EPS) give = room; /* saturated: exact, so it leaves the loop */
      q->fair_share += give;
      left -= give;
    }
  }
  for (int c = first; c >= 0; c = t->q[c].next_sibling)
    distribute(t, t->q[c].first_child, t->q[c].fair_share);
}

void gp__core_qtree_fair_share(gp__core_qtree *t, double capacity) {
  for (int i = t->n - 1; i >= 0; i--) {
    gp__core_queue *q = &t->q[i];
    if (q->n_children) {
      double d = 0;
      for (int c = q->first_child; c >= 0; c = t->q[c].next_sibling) d += t->q[c].demand;
      q->demand = d;
    }
  }
  distribute(t, t->first_root, capacity < 0 ? 0 : capacity);
}
