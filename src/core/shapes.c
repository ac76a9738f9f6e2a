/* SPDX-License-Identifier: Apache-2.0 */
/* Request shapes: jobs whose requests are equal in everything placement looks at (kind,
 * tasks, GPUs, fraction, memory, CPU, host memory, GPU models, node selector, spot, MIG
 * profile, and the pools their queue may use) share a dense shape id. Shapes that differ
 * only in the numbers (tasks, GPUs per task, milli, GPU memory, CPU, host memory) share a
 * class. A shape plus the job's end time (now + limit, which decides what backfill
 * reservations allow) is a placement key.
 *
 * Why: free capacity only shrinks during a step (starts take it, reservations and claims
 * on stopping jobs fence it, nothing frees it), so once a request fails it fails for the
 * rest of the step, and so does every request of its class that asks at least as much of
 * every number and ends no earlier (placement is greedy per task, so more tasks or bigger
 * tasks never fit where fewer or smaller did not). A failure ignoring reservations kills
 * every end time. The step marks dominated keys dead, skips their jobs in O(1), and stops
 * considering jobs at all once no live key has jobs left: 100,000 pending jobs cost a few
 * placement attempts per class, not 100,000. */
#include <stdlib.h>
#include <string.h>

#include "core/sched_int.h"

static uint32_t mix(uint32_t h, uint64_t v) {
  h ^= (uint32_t)v + 0x9e3779b9u + (h << 6) + (h >> 2);
  h ^= (uint32_t)(v >> 32) + 0x9e3779b9u + (h << 6) + (h >> 2);
  return h;
}

static int pool_key(const gp__ctx *c, int j) {
  if (!c->view->n_pools) return 0;
  int leaf = c->jobs[j].leaf;
  return ((leaf >= 0 ? c->queue_pool[leaf] : -1) + 2) * 2 + c->jobs[j].preemptible;
}

/* Hash of the class part (numbers == false) or of the whole shape. */
static uint32_t sig_hash(const gp__ctx *c, int j, bool numbers) {
  const gp_request *r = &c->view->jobs[j].req;
  uint32_t h = 2166136261u;
  h = mix(h, (uint64_t)c->jobs[j].kind | (uint64_t)r->allow_spot << 8 |
                 (uint64_t)(uint32_t)pool_key(c, j) << 16);
  h = mix(h, (uint64_t)r->min_gpu_mem_mib);
  if (numbers) {
    h = mix(h, (uint64_t)(uint32_t)r->tasks | (uint64_t)(uint32_t)r->gpus_per_task << 32);
    h = mix(h, (uint64_t)(uint32_t)r->gpu_milli ^ ((uint64_t)r->gpu_mem_mib << 16));
    h = mix(h, (uint64_t)r->cpu_milli ^ ((uint64_t)r->mem_mib << 24));
  }
  for (int i = 0; i < r->n_gpu_models; i++) h = mix(h, gp__strhash(r->gpu_models[i]));
  for (int i = 0; i < r->n_node_selector; i++)
    h = mix(h, gp__strhash(r->node_selector[i].key) * 31u + gp__strhash(r->node_selector[i].value));
  if (r->mig_profile) h = mix(h, gp__strhash(r->mig_profile));
  return h;
}

static bool str_eq(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool sig_equal(const gp__ctx *c, int a, int b, bool numbers) {
  const gp_request *x = &c->view->jobs[a].req, *y = &c->view->jobs[b].req;
  if (numbers && (x->tasks != y->tasks || x->gpus_per_task != y->gpus_per_task ||
                  x->gpu_milli != y->gpu_milli || x->gpu_mem_mib != y->gpu_mem_mib ||
                  x->cpu_milli != y->cpu_milli || x->mem_mib != y->mem_mib))
    return false;
  if (c->jobs[a].kind != c->jobs[b].kind || x->min_gpu_mem_mib != y->min_gpu_mem_mib ||
      x->allow_spot != y->allow_spot || pool_key(c, a) != pool_key(c, b) ||
      x->n_gpu_models != y->n_gpu_models || x->n_node_selector != y->n_node_selector ||
      !str_eq(x->mig_profile, y->mig_profile))
    return false;
  if (x->gpu_models != y->gpu_models)
    for (int i = 0; i < x->n_gpu_models; i++)
      if (!str_eq(x->gpu_models[i], y->gpu_models[i])) return false;
  if (x->node_selector != y->node_selector)
    for (int i = 0; i < x->n_node_selector; i++)
      if (!str_eq(x->node_selector[i].key, y->node_selector[i].key) ||
          !str_eq(x->node_selector[i].value, y->node_selector[i].value))
        return false;
  return true;
}

/* An open-addressing table of job representatives keyed by a signature. */
typedef struct sigtab {
  int *slot;            /* id or -1 */
  uint32_t *hash;
  size_t mask;
} sigtab;

static void sigtab_init(sigtab *t) {
  t->mask = 255;
  t->slot = gp_xmalloc((t->mask + 1) * sizeof(int));
  t->hash = gp_xmalloc((t->mask + 1) * sizeof(uint32_t));
  for (size_t i = 0; i <= t->mask; i++) t->slot[i] = -1;
}

static void sigtab_done(sigtab *t) {
  free(t->slot);
  free(t->hash);
}

static void sigtab_grow(sigtab *t) {
  size_t nm = t->mask * 2 + 1;
  int *slot = gp_xmalloc((nm + 1) * sizeof(int));
  uint32_t *hs = gp_xmalloc((nm + 1) * sizeof(uint32_t));
  for (size_t i = 0; i <= nm; i++) slot[i] = -1;
  for (size_t i = 0; i <= t->mask; i++) {
    if (t->slot[i] < 0) continue;
    size_t p = t->hash[i] & nm;
    while (slot[p] >= 0) p = (p + 1) & nm;
    slot[p] = t->slot[i];
    hs[p] = t->hash[i];
  }
  sigtab_done(t);
  t->slot = slot;
  t->hash = hs;
  t->mask = nm;
}

/* The numbers of a request that domination compares. */
#define N_NUM 6
typedef struct numbers {
  int64_t v[N_NUM];
} numbers;

static numbers numbers_of(const gp__ctx *c, int j) {
  const gp_request *r = &c->view->jobs[j].req;
  return (numbers){{r->tasks, r->gpus_per_task, r->gpu_milli, r->gpu_mem_mib, r->cpu_milli, r->mem_mib}};
}

static bool at_least(const numbers *a, const numbers *b) {
  for (int i = 0; i < N_NUM; i++)
    if (a->v[i] < b->v[i]) return false;
  return true;
}

struct gp__shapes {
  sigtab shape_tab, class_tab;
  int n, cap;           /* shapes */
  int *rep;             /* a job of the shape */
  int *shape_class;
  numbers *num;
  int8_t *feas;         /* gp__feas result, -1 unknown */
  uint8_t *free_failed; /* placement ignoring reservations failed (dominated) */
  uint8_t *stop_failed; /* "fits once stopping jobs are gone" failed */
  int nc, ccap;         /* classes */
  int *class_rep, *first_key, *first_shape;
  int *next_shape;      /* per shape, in its class */
  /* Placement keys (shape, end). */
  int64_t *kslot_end;
  int *kslot_shape, *kslot_id;
  size_t kmask;
  int nk, kcap;
  int *remaining;       /* eligible jobs of the key not yet considered */
  uint8_t *dead;        /* dominated by a failure */
  int *key_shape, *next_key;
  int64_t *key_end;
};

static struct gp__shapes *shapes(gp__ctx *c) {
  struct gp__shapes *s = c->shapes;
  if (s) return s;
  s = c->shapes = gp_xcalloc(1, sizeof *s);
  sigtab_init(&s->shape_tab);
  sigtab_init(&s->class_tab);
  s->kmask = 255;
  s->kslot_id = gp_xmalloc((s->kmask + 1) * sizeof(int));
  s->kslot_shape = gp_xmalloc((s->kmask + 1) * sizeof(int));
  s->kslot_end = gp_xmalloc((s->kmask + 1) * sizeof(int64_t));
  for (size_t i = 0; i <= s->kmask; i++) s->kslot_id[i] = -1;
  return s;
}

void gp__shapes_done(gp__ctx *c) {
  struct gp__shapes *s = c->shapes;
  if (!s) return;
  sigtab_done(&s->shape_tab);
  sigtab_done(&s->class_tab);
  free(s->rep);
  free(s->shape_class);
  free(s->num);
  free(s->feas);
  free(s->free_failed);
  free(s->stop_failed);
  free(s->class_rep);
  free(s->first_key);
  free(s->first_shape);
  free(s->next_shape);
  free(s->kslot_end);
  free(s->kslot_shape);
  free(s->kslot_id);
  free(s->remaining);
  free(s->dead);
  free(s->key_shape);
  free(s->next_key);
  free(s->key_end);
  free(s);
  c->shapes = NULL;
}

static int class_of(gp__ctx *c, struct gp__shapes *s, int j) {
  sigtab *t = &s->class_tab;
  uint32_t h = sig_hash(c, j, false);
  size_t i = h & t->mask;
  for (; t->slot[i] >= 0; i = (i + 1) & t->mask)
    if (t->hash[i] == h && sig_equal(c, s->class_rep[t->slot[i]], j, false)) return t->slot[i];
  if (s->nc == s->ccap) {
    s->ccap = s->ccap ? s->ccap * 2 : 32;
    s->class_rep = gp_xrealloc(s->class_rep, (size_t)s->ccap * sizeof(int));
    s->first_key = gp_xrealloc(s->first_key, (size_t)s->ccap * sizeof(int));
    s->first_shape = gp_xrealloc(s->first_shape, (size_t)s->ccap * sizeof(int));
  }
  int id = s->nc++;
  s->class_rep[id] = j;
  s->first_key[id] = s->first_shape[id] = -1;
  t->slot[i] = id;
  t->hash[i] = h;
  if ((size_t)s->nc * 2 > t->mask + 1) sigtab_grow(t);
  return id;
}

int gp__shape_of(gp__ctx *c, int j) {
  gp__job *ji = &c->jobs[j];
  if (ji->shape >= 0) return ji->shape;
  struct gp__shapes *s = shapes(c);
  sigtab *t = &s->shape_tab;
  uint32_t h = sig_hash(c, j, true);
  size_t i = h & t->mask;
  for (; t->slot[i] >= 0; i = (i + 1) & t->mask)
    if (t->hash[i] == h && sig_equal(c, s->rep[t->slot[i]], j, true)) return ji->shape = t->slot[i];
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->rep = gp_xrealloc(s->rep, (size_t)s->cap * sizeof(int));
    s->shape_class = gp_xrealloc(s->shape_class, (size_t)s->cap * sizeof(int));
    s->num = gp_xrealloc(s->num, (size_t)s->cap * sizeof(numbers));
    s->feas = gp_xrealloc(s->feas, (size_t)s->cap);
    s->free_failed = gp_xrealloc(s->free_failed, (size_t)s->cap);
    s->stop_failed = gp_xrealloc(s->stop_failed, (size_t)s->cap);
    s->next_shape = gp_xrealloc(s->next_shape, (size_t)s->cap * sizeof(int));
  }
  int id = s->n++;
  t->slot[i] = id;
  t->hash[i] = h;
  if ((size_t)s->n * 2 > t->mask + 1) sigtab_grow(t);
  int cl = class_of(c, s, j);
  s->rep[id] = j;
  s->shape_class[id] = cl;
  s->num[id] = numbers_of(c, j);
  s->feas[id] = -1;
  s->free_failed[id] = s->stop_failed[id] = 0;
  s->next_shape[id] = s->first_shape[cl];
  s->first_shape[cl] = id;
  return ji->shape = id;
}

int gp__shape_feas(gp__ctx *c, int shape) { return c->shapes->feas[shape]; }
void gp__shape_set_feas(gp__ctx *c, int shape, int v) { c->shapes->feas[shape] = (int8_t)v; }

bool gp__shape_flag(gp__ctx *c, int shape, int which) {
  return (which ? c->shapes->stop_failed : c->shapes->free_failed)[shape];
}

/* Kills every live key of shape's class that asks at least as much and ends at or after
 * `end` (GP__NEVER + nothing: pass INT64_MIN to kill every end). */
static void kill_dominated(gp__ctx *c, int shape, int64_t end) {
  struct gp__shapes *s = c->shapes;
  const numbers *p = &s->num[shape];
  for (int k = s->first_key[s->shape_class[shape]]; k >= 0; k = s->next_key[k]) {
    if (s->dead[k] || s->key_end[k] < end || !at_least(&s->num[s->key_shape[k]], p)) continue;
    s->dead[k] = 1;
    if (s->remaining[k] > 0) c->keys_alive--;
  }
}

void gp__shape_set_flag(gp__ctx *c, int shape, int which) {
  struct gp__shapes *s = c->shapes;
  if (which) { /* stopping capacity only shrinks too: dominated shapes fail as well */
    for (int t = s->first_shape[s->shape_class[shape]]; t >= 0; t = s->next_shape[t])
      if (at_least(&s->num[t], &s->num[shape])) s->stop_failed[t] = 1;
    return;
  }
  if (s->free_failed[shape]) return;
  for (int t = s->first_shape[s->shape_class[shape]]; t >= 0; t = s->next_shape[t])
    if (at_least(&s->num[t], &s->num[shape])) s->free_failed[t] = 1;
  kill_dominated(c, shape, INT64_MIN);
}

static uint32_t key_hash(int shape, int64_t end) {
  return mix(mix(2166136261u, (uint64_t)(uint32_t)shape), (uint64_t)end);
}

static void grow_keys(struct gp__shapes *s) {
  size_t nm = s->kmask * 2 + 1;
  int *ids = gp_xmalloc((nm + 1) * sizeof(int)), *shs = gp_xmalloc((nm + 1) * sizeof(int));
  int64_t *ends = gp_xmalloc((nm + 1) * sizeof(int64_t));
  for (size_t k = 0; k <= nm; k++) ids[k] = -1;
  for (size_t k = 0; k <= s->kmask; k++) {
    if (s->kslot_id[k] < 0) continue;
    size_t p = key_hash(s->kslot_shape[k], s->kslot_end[k]) & nm;
    while (ids[p] >= 0) p = (p + 1) & nm;
    ids[p] = s->kslot_id[k];
    shs[p] = s->kslot_shape[k];
    ends[p] = s->kslot_end[k];
  }
  free(s->kslot_id);
  free(s->kslot_shape);
  free(s->kslot_end);
  s->kslot_id = ids;
  s->kslot_shape = shs;
  s->kslot_end = ends;
  s->kmask = nm;
}

void gp__keys_add(gp__ctx *c, int j, gp_time end) {
  struct gp__shapes *s = shapes(c);
  int shape = gp__shape_of(c, j);
  size_t i = key_hash(shape, end) & s->kmask;
  for (; s->kslot_id[i] >= 0; i = (i + 1) & s->kmask)
    if (s->kslot_shape[i] == shape && s->kslot_end[i] == end) {
      c->jobs[j].pkey = s->kslot_id[i];
      s->remaining[s->kslot_id[i]]++;
      return;
    }
  if (s->nk == s->kcap) {
    s->kcap = s->kcap ? s->kcap * 2 : 64;
    s->remaining = gp_xrealloc(s->remaining, (size_t)s->kcap * sizeof(int));
    s->dead = gp_xrealloc(s->dead, (size_t)s->kcap);
    s->key_shape = gp_xrealloc(s->key_shape, (size_t)s->kcap * sizeof(int));
    s->next_key = gp_xrealloc(s->next_key, (size_t)s->kcap * sizeof(int));
    s->key_end = gp_xrealloc(s->key_end, (size_t)s->kcap * sizeof(int64_t));
  }
  int id = s->nk++;
  int cl = s->shape_class[shape];
  s->remaining[id] = 1;
  s->dead[id] = 0;
  s->key_shape[id] = shape;
  s->key_end[id] = end;
  s->next_key[id] = s->first_key[cl];
  s->first_key[cl] = id;
  s->kslot_id[i] = id;
  s->kslot_shape[i] = shape;
  s->kslot_end[i] = end;
  c->jobs[j].pkey = id;
  c->keys_alive++;
  if ((size_t)s->nk * 2 > s->kmask + 1) grow_keys(s);
}

void gp__keys_consider(gp__ctx *c, int j) {
  struct gp__shapes *s = c->shapes;
  int k = c->jobs[j].pkey;
  if (!s || k < 0) return;
  if (--s->remaining[k] == 0 && !s->dead[k]) c->keys_alive--;
}

bool gp__keys_failed(const gp__ctx *c, int j) {
  int k = c->jobs[j].pkey;
  return c->shapes && k >= 0 && c->shapes->dead[k];
}

void gp__keys_fail(gp__ctx *c, int j) {
  struct gp__shapes *s = c->shapes;
  int k = c->jobs[j].pkey;
  if (!s || k < 0) return;
  kill_dominated(c, s->key_shape[k], s->key_end[k]);
}
