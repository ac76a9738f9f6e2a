/* SPDX-License-Identifier: Apache-2.0 */
/* Readers for the policy sections of a config or snapshot (see policy_read.h). Each reader
 * works on a local copy and stores it only when every key was valid, so outputs stay
 * untouched on failure. */
#include "snapshot/policy_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/read_util.h"

int gp__snap_check_keys(const gp_doc *d, const gp_doc_node *map, const char *path,
                   const char *const *allowed, const char *const *extra, gp_err *err) {
  const char *all[96];
  int n = 0;
  for (const char *const *a = allowed; a && *a && n < 64; a++) all[n++] = *a;
  for (const char *const *a = extra; a && *a && n < 95; a++) all[n++] = *a;
  all[n] = NULL;
  return gp_doc_check_keys(d, map, path, all, err);
}

void gp__snap_field(char *buf, size_t size, const char *path, int index, const char *key) {
  const char *p = path && *path ? path : "";
  if (index >= 0 && key)
    snprintf(buf, size, "%s[%d].%s", p, index, key);
  else if (index >= 0)
    snprintf(buf, size, "%s[%d]", p, index);
  else if (key && *p)
    snprintf(buf, size, "%s.%s", p, key);
  else
    snprintf(buf, size, "%s", key ? key : p);
}

int gp__snap_read_name(const gp_doc *d, const gp_doc_node *n, const char *field, gp_arena *arena,
                  const char **ret, gp_err *err) {
  const char *s;
  int r = gp_doc_str(d, n, field, &s, err);
  if (r) return r;
  size_t len = strlen(s);
  if (len == 0) return gp_err_set(err, GP_EINVAL, d->name, n->line, field, "must not be empty");
  if (len > GP_READ_MAX_NAME)
    return gp_err_set(err, GP_ELIMIT, d->name, n->line, field, "longer than %d bytes",
                      GP_READ_MAX_NAME);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if (*c < 0x20 || *c == 0x7f)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, field,
                        "contains a control character");
  *ret = gp_arena_strdup(arena, s);
  return 0;
}

int gp__snap_list(const gp_doc *d, const gp_doc_node *seq, const char *path, int max, gp_err *err) {
  int r = gp_doc_expect(d, seq, path, GP_DOC_SEQ, err);
  if (r) return r;
  if (seq->n > max)
    return gp_err_set(err, GP_ELIMIT, d->name, seq->line, path, "more than %d entries", max);
  return 0;
}

static int entry_cmp(const void *a, const void *b) {
  const gp__snap_name_entry *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

int gp__snap_names_build(gp__snap_names *ix, const char *const *names, int n, gp_arena *arena,
                    int *ret_dup) {
  ix->n = n;
  ix->e = gp_arena_alloc(arena, (size_t)(n ? n : 1) * sizeof *ix->e);
  for (int i = 0; i < n; i++) ix->e[i] = (gp__snap_name_entry){names[i], i};
  qsort(ix->e, (size_t)n, sizeof *ix->e, entry_cmp);
  int dup = -1;
  for (int i = 1; i < n; i++)
    if (!strcmp(ix->e[i - 1].name, ix->e[i].name) && (dup < 0 || ix->e[i].index < dup))
      dup = ix->e[i].index;
  if (dup < 0) return 0;
  *ret_dup = dup;
  return GP_EEXIST;
}

int gp__snap_names_find(const gp__snap_names *ix, const char *name) {
  int lo = 0, hi = ix->n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    int c = strcmp(ix->e[mid].name, name);
    if (c == 0) {
      while (mid > 0 && !strcmp(ix->e[mid - 1].name, name)) mid--;
      return ix->e[mid].index;
    }
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* A boolean key of a map, if present. */
static int opt_bool(const gp_doc *d, const gp_doc_node *map, const char *path, const char *key,
                    bool *v, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(map, key);
  if (!n) return 0;
  char f[160];
  gp__snap_field(f, sizeof f, path, -1, key);
  return gp_doc_bool(d, n, f, v, err);
}

static int opt_duration(const gp_doc *d, const gp_doc_node *map, const char *path,
                        const char *key, gp_time *v, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(map, key);
  if (!n) return 0;
  char f[160];
  gp__snap_field(f, sizeof f, path, -1, key);
  int64_t s;
  int r = gp_doc_duration_s(d, n, f, &s, err);
  if (r) return r;
  if (s > GP_READ_MAX_DURATION_S)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "longer than %lld seconds",
                      (long long)GP_READ_MAX_DURATION_S);
  *v = s;
  return 0;
}

/* An enum key, spelled as one of `names` (in enum order); the message lists them all. */
static int opt_enum(const gp_doc *d, const gp_doc_node *map, const char *path, const char *key,
                    const char *const *names, int *v, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(map, key);
  if (!n) return 0;
  char f[160];
  gp__snap_field(f, sizeof f, path, -1, key);
  const char *s;
  int r = gp_doc_str(d, n, f, &s, err);
  if (r) return r;
  char want[256] = "";
  for (int i = 0; names[i]; i++) {
    if (!strcmp(names[i], s)) {
      *v = i;
      return 0;
    }
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? ", " : "", names[i]);
  }
  return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "'%.60s' is not one of: %s", s, want);
}

int gp_policy_read(const gp_doc *d, const gp_doc_node *map, const char *path,
                   const char *const *extra_keys, gp_arena *arena, gp_policy *ret,
                   gp_err *err) {
  static const char *const keys[] = {"placement", "sharing", "order", "backfill", "reclaim",
                                     "preemption", "dynamic_mig", "min_runtime",
                                     "default_time_limit", "default_priority", "seed", "fair_users",
                                     NULL};
  /* Spellings in enum order (the parsers in core/model.c use the same names). */
  static const char *const placements[] = {"binpack", "spread", NULL};
  static const char *const sharings[] = {"gpool", "fgd", "bestfit", "gpupacking",
                                         "dotproduct", "random", NULL};
  static const char *const orders[] = {"fairshare", "fifo", "priority", "sjf", NULL};
  int r = gp__snap_check_keys(d, map, path, keys, extra_keys, err);
  if (r) return r;
  gp_policy p = *ret;
  int placement = (int)p.placement, sharing = (int)p.share, order = (int)p.order;
  if ((r = opt_enum(d, map, path, "placement", placements, &placement, err)) ||
      (r = opt_enum(d, map, path, "sharing", sharings, &sharing, err)) ||
      (r = opt_enum(d, map, path, "order", orders, &order, err)) ||
      (r = opt_bool(d, map, path, "backfill", &p.backfill, err)) ||
      (r = opt_bool(d, map, path, "reclaim", &p.reclaim, err)) ||
      (r = opt_bool(d, map, path, "preemption", &p.preemption, err)) ||
      (r = opt_bool(d, map, path, "dynamic_mig", &p.dynamic_mig, err)) ||
      (r = opt_bool(d, map, path, "fair_users", &p.fair_users, err)) ||
      (r = opt_duration(d, map, path, "min_runtime", &p.min_runtime, err)) ||
      (r = opt_duration(d, map, path, "default_time_limit", &p.default_time_limit, err)))
    return r;
  p.placement = (gp_placement_policy)placement;
  p.share = (gp_share_policy)sharing;
  p.order = (gp_order_policy)order;
  char f[160];
  const gp_doc_node *n = gp_doc_get(map, "default_priority");
  if (n) {
    gp__snap_field(f, sizeof f, path, -1, "default_priority");
    if ((r = gp__snap_read_name(d, n, f, arena, &p.default_priority, err))) return r;
  }
  n = gp_doc_get(map, "seed");
  if (n) {
    int64_t seed;
    gp__snap_field(f, sizeof f, path, -1, "seed");
    if ((r = gp_doc_int(d, n, f, &seed, err))) return r;
    if (seed < 0) return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be >= 0");
    p.seed = (uint64_t)seed;
  }
  *ret = p;
  return 0;
}

int gp_priority_classes_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                             gp_arena *arena, gp_priority_class **ret_classes, int *ret_n,
                             gp_err *err) {
  static const char *const keys[] = {"name", "priority", "preemptible", NULL};
  int r = gp__snap_list(d, seq, path, GP_READ_MAX_PRIORITY_CLASSES, err);
  if (r) return r;
  gp_priority_class *cls = gp_arena_alloc(arena, (size_t)seq->n * sizeof *cls);
  char f[160];
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i];
    gp__snap_field(f, sizeof f, path, i, NULL);
    if ((r = gp__snap_check_keys(d, m, f, keys, NULL, err))) return r;
    const gp_doc_node *n = gp_doc_get(m, "name");
    gp__snap_field(f, sizeof f, path, i, "name");
    if (!n) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
    if ((r = gp__snap_read_name(d, n, f, arena, &cls[i].name, err))) return r;
    for (int j = 0; j < i; j++)
      if (!strcmp(cls[j].name, cls[i].name))
        return gp_err_set(err, GP_EEXIST, d->name, n->line, f,
                          "priority class '%s' is defined twice", cls[i].name);
    n = gp_doc_get(m, "priority");
    gp__snap_field(f, sizeof f, path, i, "priority");
    if (!n) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
    int64_t prio;
    if ((r = gp_doc_int(d, n, f, &prio, err))) return r;
    if (prio < -1000000 || prio > 1000000)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                        "must be between -1000000 and 1000000");
    cls[i].priority = (int)prio;
    cls[i].preemptible = true;
    n = gp_doc_get(m, "preemptible");
    gp__snap_field(f, sizeof f, path, i, "preemptible");
    if (n && (r = gp_doc_bool(d, n, f, &cls[i].preemptible, err))) return r;
  }
  /* The defaults, each replaced by a listed class of the same name, then the new ones. */
  int nd = gp_n_default_priority_classes, total = nd;
  gp_priority_class *all = gp_arena_alloc(arena, (size_t)(nd + seq->n) * sizeof *all);
  memcpy(all, gp_default_priority_classes, (size_t)nd * sizeof *all);
  for (int i = 0; i < seq->n; i++) {
    int k = 0;
    while (k < nd && strcmp(all[k].name, cls[i].name)) k++;
    all[k < nd ? k : total++] = cls[i];
  }
  *ret_classes = all;
  *ret_n = total;
  return 0;
}

/* A non-negative number of GPUs below a sane bound (a million GPUs). */
static int read_gpus(const gp_doc *d, const gp_doc_node *n, const char *f, double *v,
                     gp_err *err) {
  double x;
  int r = gp_doc_double(d, n, f, &x, err);
  if (r) return r;
  if (!isfinite(x) || x < 0 || x > 1e6)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "must be a number of GPUs between 0 and 1000000");
  *v = x;
  return 0;
}

/* `spot`: a map {prefer, share}, or the preference alone ("spot: avoid"). */
static int read_spot(const gp_doc *d, const gp_doc_node *n, const char *f, gp_queue *q,
                     gp_err *err) {
  static const char *const keys[] = {"prefer", "share", NULL};
  char g[192];
  const char *s;
  int r;
  const gp_doc_node *v = n;
  if (n->kind == GP_DOC_MAP) {
    if ((r = gp__snap_check_keys(d, n, f, keys, NULL, err))) return r;
    v = gp_doc_get(n, "prefer");
    snprintf(g, sizeof g, "%s.prefer", f);
  } else if (n->kind == GP_DOC_SCALAR) {
    snprintf(g, sizeof g, "%s", f);
  } else {
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "must be a map {prefer: ..., share: ...} or a preference");
  }
  if (v) {
    if ((r = gp_doc_str(d, v, g, &s, err))) return r;
    if (gp_spot_pref_parse(s, &q->spot))
      return gp_err_set(err, GP_EINVAL, d->name, v->line, g,
                        "'%.60s' is not one of: neutral, prefer, avoid, never", s);
  }
  if (n->kind == GP_DOC_MAP && (v = gp_doc_get(n, "share"))) {
    snprintf(g, sizeof g, "%s.share", f);
    double x;
    if ((r = gp_doc_double(d, v, g, &x, err))) return r;
    if (!isfinite(x) || x <= 0 || x > 1)
      return gp_err_set(err, GP_EINVAL, d->name, v->line, g,
                        "must be a share of GPUs above 0 and at most 1");
    q->spot_share = x;
  }
  return 0;
}

int gp_queues_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                   const char *const *extra_keys, gp_arena *arena, gp_queue **ret_queues,
                   int *ret_n, gp_err *err) {
  static const char *const keys[] = {"name", "deserved", "limit", "weight",
                                     "default_priority", "default_time_limit", "spot", NULL};
  int r = gp__snap_list(d, seq, path, GP_READ_MAX_QUEUES, err);
  if (r) return r;
  gp_queue *qs = gp_arena_alloc(arena, (size_t)(seq->n ? seq->n : 1) * sizeof *qs);
  char f[160];
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i];
    gp_queue *q = &qs[i];
    q->limit_gpus = GP_NO_LIMIT;
    q->weight = 1;
    gp__snap_field(f, sizeof f, path, i, NULL);
    if ((r = gp__snap_check_keys(d, m, f, keys, extra_keys, err))) return r;
    const gp_doc_node *n = gp_doc_get(m, "name");
    gp__snap_field(f, sizeof f, path, i, "name");
    if (!n) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
    if ((r = gp__snap_read_name(d, n, f, arena, &q->name, err))) return r;
    if (!gp_queue_name_ok(q->name))
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "'%.64s': %s", q->name,
                        GP_QUEUE_NAME_RULE);
    if ((n = gp_doc_get(m, "deserved"))) {
      gp__snap_field(f, sizeof f, path, i, "deserved");
      if ((r = read_gpus(d, n, f, &q->deserved_gpus, err))) return r;
    }
    if ((n = gp_doc_get(m, "limit")) && !gp_doc_is_null(n) &&
        !(n->kind == GP_DOC_SCALAR && !strcmp(n->scalar, "none"))) {
      gp__snap_field(f, sizeof f, path, i, "limit");
      if ((r = read_gpus(d, n, f, &q->limit_gpus, err))) return r;
      if (q->limit_gpus < q->deserved_gpus)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                          "limit %g is below deserved %g", q->limit_gpus, q->deserved_gpus);
    }
    if ((n = gp_doc_get(m, "weight"))) {
      gp__snap_field(f, sizeof f, path, i, "weight");
      if ((r = gp_doc_double(d, n, f, &q->weight, err))) return r;
      if (!isfinite(q->weight) || q->weight < 0 || q->weight > 1e6)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                          "must be a number from 0 to 1000000 (0: only what no other queue wants)");
    }
    if ((n = gp_doc_get(m, "default_priority"))) {
      gp__snap_field(f, sizeof f, path, i, "default_priority");
      if ((r = gp__snap_read_name(d, n, f, arena, &q->default_priority, err))) return r;
    }
    if ((n = gp_doc_get(m, "default_time_limit"))) {
      gp__snap_field(f, sizeof f, path, i, "default_time_limit");
      int64_t s;
      if ((r = gp_doc_duration_s(d, n, f, &s, err))) return r;
      if (s > GP_READ_MAX_DURATION_S)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "longer than %lld seconds",
                          (long long)GP_READ_MAX_DURATION_S);
      q->default_time_limit = s;
    }
    if ((n = gp_doc_get(m, "spot"))) {
      gp__snap_field(f, sizeof f, path, i, "spot");
      if ((r = read_spot(d, n, f, q, err))) return r;
    }
  }
  /* Duplicates through a sorted index: a config may list thousands of queues. */
  const char **names = gp_arena_alloc(arena, (size_t)(seq->n ? seq->n : 1) * sizeof *names);
  for (int i = 0; i < seq->n; i++) names[i] = qs[i].name;
  gp__snap_names ix;
  int dup;
  if (gp__snap_names_build(&ix, names, seq->n, arena, &dup)) {
    gp__snap_field(f, sizeof f, path, dup, "name");
    return gp_err_set(err, GP_EEXIST, d->name, gp_doc_get(seq->items[dup], "name")->line, f,
                      "queue '%s' is defined twice", qs[dup].name);
  }
  *ret_queues = qs;
  *ret_n = seq->n;
  return 0;
}

/* True when `name` is a listed queue or a parent of one. */
static bool queue_known(const gp_queue *queues, int n_queues, const char *name) {
  size_t len = strlen(name);
  for (int i = 0; i < n_queues; i++) {
    const char *q = queues[i].name;
    if (!strcmp(q, name) || (!strncmp(q, name, len) && q[len] == '/')) return true;
  }
  return false;
}

int gp_pools_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                  const char *const *extra_keys, const gp_queue *queues, int n_queues,
                  gp_arena *arena, gp_pool **ret_pools, int *ret_n, gp_err *err) {
  static const char *const keys[] = {"name", "queue", "selector", "lend", NULL};
  int r = gp__snap_list(d, seq, path, GP_READ_MAX_POOLS, err);
  if (r) return r;
  gp_pool *ps = gp_arena_alloc(arena, (size_t)(seq->n ? seq->n : 1) * sizeof *ps);
  char f[160];
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i];
    gp_pool *p = &ps[i];
    p->lend = true;
    gp__snap_field(f, sizeof f, path, i, NULL);
    if ((r = gp__snap_check_keys(d, m, f, keys, extra_keys, err))) return r;
    const gp_doc_node *n = gp_doc_get(m, "name");
    gp__snap_field(f, sizeof f, path, i, "name");
    if (!n) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
    if ((r = gp__snap_read_name(d, n, f, arena, &p->name, err))) return r;
    for (int j = 0; j < i; j++)
      if (!strcmp(ps[j].name, p->name))
        return gp_err_set(err, GP_EEXIST, d->name, n->line, f, "pool '%s' is defined twice",
                          p->name);
    n = gp_doc_get(m, "queue");
    gp__snap_field(f, sizeof f, path, i, "queue");
    if (!n) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
    if ((r = gp__snap_read_name(d, n, f, arena, &p->queue, err))) return r;
    if (queues && !queue_known(queues, n_queues, p->queue))
      return gp_err_set(err, GP_ENOENT, d->name, n->line, f, "no queue '%s'", p->queue);
    n = gp_doc_get(m, "selector");
    gp__snap_field(f, sizeof f, path, i, "selector");
    if (!n) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
    if ((r = gp_doc_expect(d, n, f, GP_DOC_MAP, err))) return r;
    if (n->n != 1)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                        "needs exactly one label, e.g. {pool: inference}");
    char kf[200];
    snprintf(kf, sizeof kf, "%s.%s", f, n->keys[0]);
    size_t klen = strlen(n->keys[0]);
    if (klen == 0 || klen > GP_READ_MAX_NAME)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                        "a label key must have 1 to %d bytes", GP_READ_MAX_NAME);
    p->selector.key = gp_arena_strdup(arena, n->keys[0]);
    if ((r = gp__snap_read_name(d, n->items[0], kf, arena, &p->selector.value, err))) return r;
    n = gp_doc_get(m, "lend");
    gp__snap_field(f, sizeof f, path, i, "lend");
    if (n && (r = gp_doc_bool(d, n, f, &p->lend, err))) return r;
  }
  *ret_pools = ps;
  *ret_n = seq->n;
  return 0;
}

int gp_policy_check(const gp_policy *p, const gp_queue *queues, int n_queues,
                    const gp_doc *d, const gp_doc_node *policy_map,
                    const gp_doc_node *queues_seq, gp_err *err) {
  const char *file = d ? d->name : NULL;
  if (p->default_priority && !gp_priority_class_find(p, p->default_priority)) {
    const gp_doc_node *n = gp_doc_get(policy_map, "default_priority");
    return gp_err_set(err, GP_EINVAL, file, n ? n->line : policy_map ? policy_map->line : 0,
                      "policy.default_priority",
                      "'%s' is not a priority class", p->default_priority);
  }
  for (int i = 0; i < n_queues; i++) {
    if (!queues[i].default_priority || gp_priority_class_find(p, queues[i].default_priority))
      continue;
    const gp_doc_node *m =
        queues_seq && queues_seq->kind == GP_DOC_SEQ && i < queues_seq->n ? queues_seq->items[i]
                                                                          : NULL;
    const gp_doc_node *n = gp_doc_get(m, "default_priority");
    char f[160];
    snprintf(f, sizeof f, "queues[%d].default_priority", i);
    return gp_err_set(err, GP_EINVAL, file, n ? n->line : 0, f, "'%s' is not a priority class",
                      queues[i].default_priority);
  }
  return 0;
}
