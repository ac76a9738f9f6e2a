/* SPDX-License-Identifier: Apache-2.0 */
/* Request shapes: jobs whose requests are equal in everything placement looks at (kind,
 * tasks, GPUs, fraction, memory, CPU, host memory, GPU models, node selector, spot, MIG
 * profile, the pools their queue may use and their queue's spot settings, spot.c, and the
 * advance reservations they are inside, reservation.c) share a
 * dense shape id. A queue's spot cap depends on what that queue holds, so jobs of queues
 * with a cap share shapes only within the queue that sets it. The queue's spot settings
 * are no part of a class: a failure on every class of nodes fails each shape of the class
 * that asks at least as much, whatever its spot settings; a failure kept off spot nodes,
 * only those that may never use spot (and the shape that failed). Shapes that differ
 * only in the numbers (tasks, GPUs per task, milli, GPU memory, CPU, host memory) share a
 * class.
 *
 * Why: free capacity only shrinks during a step (starts take it, reservations and claims
 * on stopping jobs fence it, nothing frees it), so once a request fails it fails for the
 * rest of the step, and so does every request of its class that asks at least as much of
 * every number and ends no earlier (placement is greedy per task, so more tasks or bigger
 * tasks never fit where fewer or smaller did not). Backfill reservations make the job's
 * end time (now + limit) matter too: a failure at end e says nothing about jobs that end
 * earlier, so each shape keeps the earliest end that failed, and a failure ignoring
 * reservations fails the shape for every end. The step skips jobs of failed shapes in O(1)
 * and stops considering jobs at all once no shape that could still place has jobs left:
 * 100,000 pending jobs cost a few placement attempts per class, not 100,000. A shape
 * counts as dead for that once its failed end is at or before the earliest end of its
 * eligible jobs. */
#include <stdlib.h>
#include <string.h>

#include "core/reservation.h"
#include "core/spot.h"

static uint32_t mix(uint32_t h, uint64_t v) {
  h ^= (uint32_t)v + 0x9e3779b9u + (h << 6) + (h >> 2);
  h ^= (uint32_t)(v >> 32) + 0x9e3779b9u + (h << 6) + (h >> 2);
  return h;
}

static int pool_key(const gp__core_ctx *c, int j) {
  if (!c->view->n_pools) return 0;
  int leaf = c->jobs[j].leaf;
  return ((leaf >= 0 ? c->fleet->queue_pool[leaf] : -1) + 2) * 2 + c->jobs[j].preemptible;
}

/* Hash of a string, cached by pointer: requests usually share their model and label
 * strings, so the string is hashed once per step. The value never depends on the cache. */
static uint32_t str_hash(gp__core_ctx *c, const char *str) {
  unsigned h = gp__core_ptr_slot(str, 6);
  if (c->cls->hcache_ptr[h] == str) return c->cls->hcache_val[h];
  c->cls->hcache_ptr[h] = str;
  return c->cls->hcache_val[h] = gp__core_strhash(str);
}

/* Hash of the class part (numbers == false) or of the whole shape. */
/* The bound on a gang's tasks per node that matters (0: none): a class of its own, since a
 * tighter bound can fail where a looser one fits. */
static int per_node(const gp_request *r) {
  return r->max_tasks_per_node > 0 && r->max_tasks_per_node < r->tasks ? r->max_tasks_per_node : 0;
}

static uint32_t sig_hash(gp__core_ctx *c, int j, bool numbers) {
  const gp_request *r = &c->view->jobs[j].req;
  uint32_t h = 2166136261u;
  h = mix(h, (uint64_t)c->jobs[j].kind | (uint64_t)r->allow_spot << 8 | (uint64_t)r->exclusive << 9 |
                 (uint64_t)(uint32_t)pool_key(c, j) << 16);
  h = mix(h, (uint64_t)r->min_gpu_mem_mib);
  h = mix(h, (uint64_t)(uint32_t)per_node(r) | (uint64_t)(uint32_t)r->nodes << 32);
  h = mix(h, gp__core_ares_inside(c, j)); /* advance reservations it may use (reservation.c) */
  if (numbers) {
    h = mix(h, gp__core_spot_key(c, j));
    h = mix(h, (uint64_t)(uint32_t)r->tasks | (uint64_t)(uint32_t)r->gpus_per_task << 32);
    h = mix(h, (uint64_t)(uint32_t)r->gpu_milli ^ ((uint64_t)r->gpu_mem_mib << 16));
    h = mix(h, (uint64_t)r->cpu_milli ^ ((uint64_t)r->mem_mib << 24));
  }
  for (int i = 0; i < r->n_gpu_models; i++) h = mix(h, str_hash(c, r->gpu_models[i]));
  for (int i = 0; i < r->n_node_selector; i++)
    h = mix(h, str_hash(c, r->node_selector[i].key) * 31u + str_hash(c, r->node_selector[i].value));
  if (r->mig_profile) h = mix(h, str_hash(c, r->mig_profile));
  return h;
}

static bool str_eq(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool sig_equal(const gp__core_ctx *c, int a, int b, bool numbers) {
  const gp_request *x = &c->view->jobs[a].req, *y = &c->view->jobs[b].req;
  if (numbers && (x->tasks != y->tasks || x->gpus_per_task != y->gpus_per_task ||
                  x->gpu_milli != y->gpu_milli || x->gpu_mem_mib != y->gpu_mem_mib ||
                  x->cpu_milli != y->cpu_milli || x->mem_mib != y->mem_mib))
    return false;
  if (c->jobs[a].kind != c->jobs[b].kind || x->min_gpu_mem_mib != y->min_gpu_mem_mib ||
      per_node(x) != per_node(y) || x->nodes != y->nodes ||
      x->allow_spot != y->allow_spot || x->exclusive != y->exclusive || pool_key(c, a) != pool_key(c, b) ||
      (numbers && gp__core_spot_key(c, a) != gp__core_spot_key(c, b)) ||
      x->n_gpu_models != y->n_gpu_models || x->n_node_selector != y->n_node_selector ||
      !str_eq(x->mig_profile, y->mig_profile) || gp__core_ares_inside(c, a) != gp__core_ares_inside(c, b))
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

static numbers numbers_of(const gp__core_ctx *c, int j) {
  const gp_request *r = &c->view->jobs[j].req;
  return (numbers){{r->tasks, r->gpus_per_task, r->gpu_milli, r->gpu_mem_mib, r->cpu_milli, r->mem_mib}};
}

static bool at_least(const numbers *a, const numbers *b) {
  for (int i = 0; i < N_NUM; i++)
    if (a->v[i] < b->v[i]) return false;
  return true;
}

/* What sig_equal(.., true) compares, with lists and the MIG profile by pointer: two jobs
 * with equal raw keys have the same shape. Callers share one model list or selector per
 * kind of request, so most jobs find their shape in a small direct-mapped cache by raw key
 * (a few loads and one multiply-xor hash) instead of the string-hashing signature and a
 * field-by-field comparison with the shape's representative. A miss takes the full path,
 * which alone assigns shape ids: the cache changes no id. */
typedef struct rawkey {
  uint64_t v[9];        /* v[8]: the advance reservations it is inside (reservation.c) */
  const void *p[3];
} rawkey;

#define RAW_BITS 8

typedef struct raw_ent {
  rawkey k;
  int shape;            /* shape id + 1; 0: empty */
  uint32_t gen;         /* the tables' generation it belongs to (older: empty) */
} raw_ent;

struct gp__core_shapes {
  raw_ent *raw;         /* the cache by raw key: 1 << RAW_BITS entries */
  uint32_t gen;         /* bumped when a memo's next step takes the tables over */
  sigtab shape_tab, class_tab;
  int n, cap;           /* shapes */
  int *rep;             /* a job of the shape */
  int *shape_class;
  numbers *num;
  int8_t *feas;         /* gp__core_feas result, -1 unknown */
  uint8_t *free_failed; /* placement ignoring reservations failed (or a dominated one did) */
  uint8_t *stop_failed; /* "fits once stopping jobs are gone" failed */
  uint64_t *free_fit_gen; /* ctx.use_gen + 1 when placement ignoring reservations last
                             succeeded; 0: never */
  uint64_t *spot_gen;   /* ctx.use_gen + 1 when spot_fit was found; 0: never */
  uint8_t *spot_fit;    /* placement with spot allowed, for jobs their queue keeps off it */
  int64_t *first_failed_end; /* earliest end at which the try on the class of nodes its
                                queue prefers failed (gang.c), honouring reservations */
  uint8_t *may_spot;    /* its jobs may run on spot nodes (allowed, not refused by the queue) */
  int64_t *failed_end;  /* earliest end at which placement honouring reservations failed */
  int64_t *min_end;     /* earliest end among the shape's eligible jobs */
  int *remaining;       /* eligible jobs of the shape not yet considered */
  int nc, ccap;         /* classes */
  int *class_rep, *first_shape;
  int *next_shape;      /* per shape, in its class */
};

/* A memo keeps the tables for its next step and lends them to it (spare_shapes), which
 * empties them (ids are per step) but keeps their room: a step would otherwise allocate
 * some twenty arrays again. */
static struct gp__core_shapes *shapes(gp__core_ctx *c) {
  struct gp__core_shapes *s = c->cls->shapes;
  if (s) return s;
  if ((s = c->cls->spare_shapes)) {
    c->cls->spare_shapes = NULL;
    s->n = s->nc = 0;
    s->gen++;
    for (size_t i = 0; i <= s->shape_tab.mask; i++) s->shape_tab.slot[i] = -1;
    for (size_t i = 0; i <= s->class_tab.mask; i++) s->class_tab.slot[i] = -1;
    return c->cls->shapes = s;
  }
  s = c->cls->shapes = gp_xcalloc(1, sizeof *s);
  s->raw = gp_xcalloc((size_t)1 << RAW_BITS, sizeof *s->raw);
  s->gen = 1;
  sigtab_init(&s->shape_tab);
  sigtab_init(&s->class_tab);
  return s;
}

void gp__core_shapes_free(struct gp__core_shapes *s) {
  if (!s) return;
  free(s->raw);
  sigtab_done(&s->shape_tab);
  sigtab_done(&s->class_tab);
  free(s->rep);
  free(s->shape_class);
  free(s->num);
  free(s->feas);
  free(s->free_failed);
  free(s->stop_failed);
  free(s->free_fit_gen);
  free(s->spot_gen);
  free(s->spot_fit);
  free(s->first_failed_end);
  free(s->may_spot);
  free(s->failed_end);
  free(s->min_end);
  free(s->remaining);
  free(s->class_rep);
  free(s->first_shape);
  free(s->next_shape);
  free(s);
}

void gp__core_shapes_done(gp__core_ctx *c) {
  gp__core_shapes_free(c->cls->shapes);
  gp__core_shapes_free(c->cls->spare_shapes);
  c->cls->shapes = c->cls->spare_shapes = NULL;
}

static int class_of(gp__core_ctx *c, struct gp__core_shapes *s, int j) {
  sigtab *t = &s->class_tab;
  uint32_t h = sig_hash(c, j, false);
  size_t i = h & t->mask;
  for (; t->slot[i] >= 0; i = (i + 1) & t->mask)
    if (t->hash[i] == h && sig_equal(c, s->class_rep[t->slot[i]], j, false)) return t->slot[i];
  if (s->nc == s->ccap) {
    s->ccap = s->ccap ? s->ccap * 2 : 32;
    s->class_rep = gp_xrealloc(s->class_rep, (size_t)s->ccap * sizeof(int));
    s->first_shape = gp_xrealloc(s->first_shape, (size_t)s->ccap * sizeof(int));
  }
  int id = s->nc++;
  s->class_rep[id] = j;
  s->first_shape[id] = -1;
  t->slot[i] = id;
  t->hash[i] = h;
  if ((size_t)s->nc * 2 > t->mask + 1) sigtab_grow(t);
  return id;
}

static void raw_key(const gp__core_ctx *c, int j, rawkey *k) {
  const gp_request *r = &c->view->jobs[j].req;
  k->v[0] = (uint64_t)c->jobs[j].kind | (uint64_t)r->allow_spot << 8 | (uint64_t)r->exclusive << 9 |
            (uint64_t)(uint32_t)pool_key(c, j) << 16;
  /* A node count is below 2^20, and no GPU has 2^44 MiB. */
  k->v[1] = (uint64_t)r->min_gpu_mem_mib ^ (uint64_t)(uint32_t)r->nodes << 44;
  k->v[2] = (uint64_t)(uint32_t)r->tasks | (uint64_t)(uint32_t)r->gpus_per_task << 32;
  k->v[3] = (uint64_t)(uint16_t)r->gpu_milli | (uint64_t)(uint32_t)per_node(r) << 16 |
            (uint64_t)(uint16_t)r->n_gpu_models << 48;
  k->v[4] = (uint64_t)r->gpu_mem_mib;
  k->v[5] = (uint64_t)r->cpu_milli;
  k->v[6] = (uint64_t)r->mem_mib;
  k->v[7] = (uint64_t)(uint32_t)r->n_node_selector | (uint64_t)gp__core_spot_key(c, j) << 32;
  k->v[8] = gp__core_ares_inside(c, j);
  k->p[0] = r->gpu_models;
  k->p[1] = r->node_selector;
  k->p[2] = r->mig_profile;
}

/* The products are independent, so they run side by side instead of as one chain. Use
 * the high bits. */
static uint64_t raw_hash(const rawkey *k) {
  uint64_t h = (k->v[0] ^ k->v[4]) * 0x9e3779b97f4a7c15ull + (k->v[1] ^ k->v[5]) * 0xc2b2ae3d27d4eb4full +
               (k->v[2] ^ k->v[6]) * 0x165667b19e3779f9ull + (k->v[3] ^ k->v[7] ^ k->v[8]) * 0xd6e8feb86659fd93ull +
               ((uint64_t)(uintptr_t)k->p[0] ^ (uint64_t)(uintptr_t)k->p[1] * 3 ^
                (uint64_t)(uintptr_t)k->p[2] * 5) * 0xff51afd7ed558ccdull;
  return (h ^ h >> 31) * 0x9e3779b97f4a7c15ull;
}

static unsigned raw_slot(const rawkey *k) { return (unsigned)(raw_hash(k) >> (64 - RAW_BITS)); }

static bool raw_equal(const rawkey *a, const rawkey *b) {
  uint64_t d = 0; /* no branch per word: most lookups hit, and a hit compares them all */
  for (int i = 0; i < 9; i++) d |= a->v[i] ^ b->v[i];
  for (int i = 0; i < 3; i++) d |= (uint64_t)((uintptr_t)a->p[i] ^ (uintptr_t)b->p[i]);
  return d == 0;
}

static int shape_full(gp__core_ctx *c, int j);

int gp__core_shape_of(gp__core_ctx *c, int j) {
  if (c->jobs[j].shape >= 0) return c->jobs[j].shape;
  gp__core_job *ji = gp__core_job_mut(c, j);
  struct gp__core_shapes *s = shapes(c);
  rawkey k;
  raw_key(c, j, &k);
  raw_ent *m = &s->raw[raw_slot(&k)];
  if (m->gen == s->gen && m->shape > 0 && raw_equal(&m->k, &k)) return ji->shape = m->shape - 1;
  int id = shape_full(c, j);
  m->k = k;
  m->shape = id + 1;
  m->gen = s->gen;
  return id;
}

/* ---- Shape tokens (gp_sched_step_memo) ----
 * A token names a raw key across steps: jobs the memo remembers carry the token of their
 * request, and a step finds a remembered job's shape through it without reading the view.
 * Shape ids are never carried from one step to the next: a token's first job in a step
 * takes the path above (gp__core_shape_of), which alone assigns ids, in view order as always;
 * the token's other jobs, whose raw keys are bit for bit the same, reuse that id, as the
 * direct-mapped cache would have given them. So a pointer in a raw key that the caller
 * freed and reused for something else since can merge nothing: within one step, equal
 * raw keys mean equal requests. */
typedef struct token {
  rawkey k;
  uint64_t step;        /* the step that last gave it a shape */
  int shape;
} token;

struct gp__core_tokens {
  token *t;
  int n, cap;
  sigtab tab;           /* token ids by raw_hash */
};

void gp__core_tokens_free(struct gp__core_tokens *tk) {
  if (!tk) return;
  free(tk->t);
  sigtab_done(&tk->tab);
  free(tk);
}

int gp__core_shape_token(gp__core_ctx *c, int j, struct gp__core_tokens **tkp) {
  struct gp__core_tokens *tk = *tkp;
  if (!tk) {
    tk = *tkp = gp_xcalloc(1, sizeof *tk);
    sigtab_init(&tk->tab);
  }
  rawkey k;
  raw_key(c, j, &k);
  sigtab *t = &tk->tab;
  uint32_t h = (uint32_t)(raw_hash(&k) >> 32);
  size_t i = h & t->mask;
  for (; t->slot[i] >= 0; i = (i + 1) & t->mask)
    if (t->hash[i] == h && raw_equal(&tk->t[t->slot[i]].k, &k)) return t->slot[i];
  if (tk->n == tk->cap) {
    tk->cap = tk->cap ? tk->cap * 2 : 256;
    tk->t = gp_xrealloc(tk->t, (size_t)tk->cap * sizeof *tk->t);
  }
  int id = tk->n++;
  tk->t[id] = (token){.k = k, .step = 0, .shape = -1};
  t->slot[i] = id;
  t->hash[i] = h;
  if ((size_t)tk->n * 2 > t->mask + 1) sigtab_grow(t);
  return id;
}

int gp__core_tokens_count(const struct gp__core_tokens *tk) { return tk ? tk->n : 0; }

size_t gp__core_tokens_bytes(const struct gp__core_tokens *tk) {
  if (!tk) return 0;
  return sizeof *tk + (size_t)tk->cap * sizeof *tk->t + (tk->tab.mask + 1) * (sizeof(int) + sizeof(uint32_t));
}

int gp__core_shape_by_token(gp__core_ctx *c, int j, struct gp__core_tokens *tk, int tok, uint64_t step) {
  token *t = &tk->t[tok];
  if (t->step == step) return gp__core_job_mut(c, j)->shape = t->shape;
  t->step = step;
  return t->shape = gp__core_shape_of(c, j);
}

static int shape_full(gp__core_ctx *c, int j) {
  gp__core_job *ji = &c->jobs[j];
  struct gp__core_shapes *s = c->cls->shapes;
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
    s->free_fit_gen = gp_xrealloc(s->free_fit_gen, (size_t)s->cap * sizeof(uint64_t));
    s->spot_gen = gp_xrealloc(s->spot_gen, (size_t)s->cap * sizeof(uint64_t));
    s->spot_fit = gp_xrealloc(s->spot_fit, (size_t)s->cap);
    s->first_failed_end = gp_xrealloc(s->first_failed_end, (size_t)s->cap * sizeof(int64_t));
    s->may_spot = gp_xrealloc(s->may_spot, (size_t)s->cap);
    s->next_shape = gp_xrealloc(s->next_shape, (size_t)s->cap * sizeof(int));
    s->failed_end = gp_xrealloc(s->failed_end, (size_t)s->cap * sizeof(int64_t));
    s->min_end = gp_xrealloc(s->min_end, (size_t)s->cap * sizeof(int64_t));
    s->remaining = gp_xrealloc(s->remaining, (size_t)s->cap * sizeof(int));
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
  s->free_fit_gen[id] = 0;
  s->spot_gen[id] = 0;
  s->spot_fit[id] = 0;
  s->first_failed_end[id] = INT64_MAX;
  s->may_spot[id] = !gp__core_spot_refused(c, j);
  s->failed_end[id] = s->min_end[id] = INT64_MAX;
  s->remaining[id] = 0;
  s->next_shape[id] = s->first_shape[cl];
  s->first_shape[cl] = id;
  return ji->shape = id;
}

int gp__core_shape_feas(gp__core_ctx *c, int shape) { return c->cls->shapes->feas[shape]; }
void gp__core_shape_set_feas(gp__core_ctx *c, int shape, int v) { c->cls->shapes->feas[shape] = (int8_t)v; }

bool gp__core_shape_flag(gp__core_ctx *c, int shape, int which) {
  return (which ? c->cls->shapes->stop_failed : c->cls->shapes->free_failed)[shape];
}

/* Placement ignoring reservations gives the same answer for every job of a shape while no
 * node's use changed (ctx.use_gen): its last success stands. */
bool gp__core_shape_fits_free(const gp__core_ctx *c, int shape) {
  return c->cls->shapes->free_fit_gen[shape] == c->fleet->use_gen + 1;
}

void gp__core_shape_set_fits_free(gp__core_ctx *c, int shape) {
  c->cls->shapes->free_fit_gen[shape] = c->fleet->use_gen + 1;
}

/* The same for placement with spot allowed, success or failure: kept for the jobs of the
 * shape while no node's use changed. */
int gp__core_shape_spot_fit(const gp__core_ctx *c, int shape) {
  const struct gp__core_shapes *s = c->cls->shapes;
  return s->spot_gen[shape] == c->fleet->use_gen + 1 ? s->spot_fit[shape] : -1;
}

void gp__core_shape_set_spot_fit(gp__core_ctx *c, int shape, bool fits) {
  c->cls->shapes->spot_gen[shape] = c->fleet->use_gen + 1;
  c->cls->shapes->spot_fit[shape] = fits;
}

static bool dead(const struct gp__core_shapes *s, int t) {
  return s->free_failed[t] || s->failed_end[t] <= s->min_end[t];
}

/* Does a failure of `shape` (tried on spot nodes too, or kept off them) say that shape t
 * fails too? t asks at least as much, and could use no more kinds of nodes. */
static bool reaches(const struct gp__core_shapes *s, int shape, int t, bool spot_tried) {
  return at_least(&s->num[t], &s->num[shape]) && (spot_tried || !s->may_spot[t] || t == shape);
}

/* Applies a failure to every shape of the class it reaches: ignoring reservations (free) or
 * honouring them at end `end`. */
static void fail_dominated(gp__core_ctx *c, int shape, bool free_fail, int64_t end, bool spot_tried) {
  struct gp__core_shapes *s = c->cls->shapes;
  for (int t = s->first_shape[s->shape_class[shape]]; t >= 0; t = s->next_shape[t]) {
    if (!reaches(s, shape, t, spot_tried)) continue;
    bool was = dead(s, t);
    if (free_fail) s->free_failed[t] = 1;
    else if (end < s->failed_end[t]) s->failed_end[t] = end;
    if (!was && dead(s, t) && s->remaining[t] > 0) c->cls->keys_alive--;
  }
}

void gp__core_shape_set_flag(gp__core_ctx *c, int shape, int which, bool spot_tried) {
  struct gp__core_shapes *s = c->cls->shapes;
  if (which) { /* stopping capacity only shrinks too: dominated shapes fail as well */
    for (int t = s->first_shape[s->shape_class[shape]]; t >= 0; t = s->next_shape[t])
      if (reaches(s, shape, t, spot_tried)) s->stop_failed[t] = 1;
    return;
  }
  if (!s->free_failed[shape]) fail_dominated(c, shape, true, 0, spot_tried);
}

/* Ends as shapes.c stores them: INT64_MAX means "no failure yet", so a job without a
 * limit ends at INT64_MAX - 1. */
static int64_t clamp_end(gp_time end) { return end >= INT64_MAX - 1 ? INT64_MAX - 1 : end; }

/* A failure of the try on the preferred class of nodes stands for the rest of the step, for
 * jobs of the shape that end no earlier (free capacity only shrinks): the try is skipped. */
bool gp__core_shape_first_failed(const gp__core_ctx *c, int shape, gp_time end) {
  return clamp_end(end) >= c->cls->shapes->first_failed_end[shape];
}

void gp__core_shape_set_first_failed(gp__core_ctx *c, int shape, gp_time end) {
  int64_t *f = &c->cls->shapes->first_failed_end[shape];
  if (clamp_end(end) < *f) *f = clamp_end(end);
}

static gp_time end_of_job(const gp__core_ctx *c, int j) {
  gp_time l = c->jobs[j].limit;
  return clamp_end(l > 0 && c->now < GP__NEVER - l ? c->now + l : GP__NEVER);
}

void gp__core_keys_add_n(gp__core_ctx *c, int t, int n, gp_time end) {
  struct gp__core_shapes *s = shapes(c);
  if (s->remaining[t] == 0 && n > 0) c->cls->keys_alive++;
  s->remaining[t] += n;
  if (clamp_end(end) < s->min_end[t]) s->min_end[t] = clamp_end(end);
}

void gp__core_keys_add(gp__core_ctx *c, int j, gp_time end) {
  int t = gp__core_shape_of(c, j);
  gp__core_keys_add_n(c, t, 1, end);
  gp__core_job_mut(c, j)->pkey = t;
}

void gp__core_keys_consider(gp__core_ctx *c, int j) {
  struct gp__core_shapes *s = c->cls->shapes;
  int t = c->jobs[j].pkey;
  if (!s || t < 0) return;
  if (--s->remaining[t] == 0 && !dead(s, t)) c->cls->keys_alive--;
}

bool gp__core_keys_failed(const gp__core_ctx *c, int j) {
  const struct gp__core_shapes *s = c->cls->shapes;
  int t = c->jobs[j].pkey;
  if (!s || t < 0) return false;
  return s->free_failed[t] || end_of_job(c, j) >= s->failed_end[t];
}

void gp__core_keys_fail(gp__core_ctx *c, int j, bool spot_tried) {
  int t = c->jobs[j].pkey;
  if (!c->cls->shapes || t < 0) return;
  fail_dominated(c, t, false, end_of_job(c, j), spot_tried);
}
