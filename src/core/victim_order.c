/* SPDX-License-Identifier: Apache-2.0 */
/* The victim order (preempt.c): victim-able running jobs, lowest priority first, then least
 * work lost (now - max(last checkpoint, start)), then youngest (latest start), then view
 * index. A step sorts them once (an LSD radix sort). With a memo (memo.c) the order is
 * kept from step to step instead: `now` moves every key's lost work by the same amount, so
 * unchanged jobs keep their relative order, and a step only sorts the jobs whose slot
 * changed and merges them in. The result is the same sequence either way: both sort the
 * same jobs by the same total order. */
#include <stdlib.h>
#include <string.h>

#include "core/preempt.h"

/* Running position r (ctx.running), read from its record only: no running job is a victim
 * before the victim order exists (priority, reclaim and pool victims are picked from it;
 * the stopping check counts on stopping jobs only), and this decides who enters it. */
bool gp__core_victim_able(const gp__core_ctx *c, int r) {
  const gp__core_run *ru = &c->cls->run[r];
  return !ru->stopping && ru->preemptible && c->now - ru->started >= c->pol->min_runtime;
}

/* ---- one sort per step ---- */

typedef struct vkey {
  int prio;
  int j;
  gp_time lost, started;
  int r;                /* running position */
} vkey;

/* The sort keys as unsigned numbers in the same order: component 0 is the least
 * significant (view index), 3 the most (priority); started sorts descending. */
static uint64_t vkey_part(const vkey *k, int part) {
  switch (part) {
  case 0: return (uint64_t)(uint32_t)k->j;
  case 1: return ~((uint64_t)k->started ^ (1ull << 63));
  case 2: return (uint64_t)k->lost ^ (1ull << 63);
  default: return (uint64_t)(int64_t)k->prio ^ (1ull << 63);
  }
}

/* LSD radix sort, a stable counting pass per byte of each key part from the least
 * significant up, skipping bytes that are the same in every key (most of them: jobs of
 * one step share start times, priorities are a handful): a fraction of a comparison
 * sort's cost on 20,000 jobs. */
static void vkey_sort(vkey *a, int n) {
  if (n < 2) return;
  vkey *tmp = gp_xmalloc((size_t)n * sizeof *tmp), *src = a, *dst = tmp;
  for (int part = 0; part < 4; part++) {
    uint64_t first = vkey_part(&src[0], part), vary = 0;
    for (int i = 1; i < n; i++) vary |= vkey_part(&src[i], part) ^ first;
    for (int shift = 0; shift < 64 && (vary >> shift); shift += 8) {
      if (((vary >> shift) & 0xff) == 0) continue;
      int count[257] = {0};
      for (int i = 0; i < n; i++) count[((vkey_part(&src[i], part) >> shift) & 0xff) + 1]++;
      for (int d = 0; d < 256; d++) count[d + 1] += count[d];
      for (int i = 0; i < n; i++) dst[count[(vkey_part(&src[i], part) >> shift) & 0xff]++] = src[i];
      vkey *t = src;
      src = dst;
      dst = t;
    }
  }
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
  free(tmp);
}

static int sorted_once(const gp__core_ctx *c, int *order) {
  vkey *keys = gp_xmalloc(((size_t)c->cls->n_running + 1) * sizeof *keys);
  int n = 0;
  for (int r = 0; r < c->cls->n_running; r++) {
    if (!gp__core_victim_able(c, r)) continue;
    const gp__core_run *ru = &c->cls->run[r];
    keys[n++] = (vkey){ru->prio, c->cls->running[r], c->now - ru->since, ru->started, r};
  }
  vkey_sort(keys, n);
  for (int k = 0; k < n; k++) order[k] = keys[k].r;
  free(keys);
  return n;
}

/* ---- kept across steps ---- */

/* A running job that is preemptible and not stopping: a victim once old enough
 * (min_runtime is checked per step, as it depends on now). */
typedef struct vent {
  int prio;
  int j;
  gp_time since, started;
  uint64_t rev;         /* its slot's rev when it entered */
} vent;

struct gp__core_victims {
  vent *e;
  int n, cap;
};

/* The victim order: less lost work is a later `since`. */
static bool vent_before(const vent *a, const vent *b) {
  if (a->prio != b->prio) return a->prio < b->prio;
  if (a->since != b->since) return a->since > b->since;
  if (a->started != b->started) return a->started > b->started;
  return a->j < b->j;
}

static int vent_cmp(const void *x, const void *y) {
  const vent *a = x, *b = y;
  return vent_before(a, b) ? -1 : vent_before(b, a) ? 1 : 0;
}

void gp__core_victims_free(struct gp__core_victims *v) {
  if (!v) return;
  free(v->e);
  free(v);
}

size_t gp__core_victims_bytes(const struct gp__core_victims *v) {
  return v ? sizeof *v + (size_t)v->cap * sizeof *v->e : 0;
}

void gp__core_victims_forget(struct gp__core_victims *v) {
  if (v) v->n = 0;
}

/* A slot whose bit in memo.changed is clear holds the job it held when the order was last
 * made, with the same rev: its entry is still right, and a running job there has one if it
 * may be a victim at all. (Bits are read from a small array, not the view's revs at
 * random.) */
static int kept_across_steps(gp__core_ctx *c, struct gp_sched_memo *m, int *order) {
  const gp_view *view = c->view;
  const uint64_t *revs = view->job_revs, *changed = m->changed;
  if (!m->victims) m->victims = gp_xcalloc(1, sizeof *m->victims);
  struct gp__core_victims *V = m->victims;
  /* Entries whose slot is unchanged stay, in order. */
  int kept = 0;
  for (int i = 0; i < V->n; i++) {
    const vent *e = &V->e[i];
    if (e->j < view->n_jobs && e->rev && !(changed[e->j >> 6] >> (e->j & 63) & 1))
      V->e[kept++] = *e;
  }
  /* The others enter sorted. */
  int *pos = gp_xmalloc(((size_t)view->n_jobs + 1) * sizeof *pos);
  vent *fresh = gp_xmalloc(((size_t)c->cls->n_running + 1) * sizeof *fresh);
  int nf = 0;
  for (int r = 0; r < c->cls->n_running; r++) {
    const gp__core_run *ru = &c->cls->run[r];
    int j = c->cls->running[r];
    pos[j] = r;
    if (ru->stopping || !ru->preemptible || !(changed[j >> 6] >> (j & 63) & 1)) continue;
    fresh[nf++] = (vent){ru->prio, j, ru->since, ru->started, revs[j]};
  }
  memset(m->changed, 0, m->changed_words * sizeof *m->changed);
  qsort(fresh, (size_t)nf, sizeof *fresh, vent_cmp);
  vent *merged = gp_xmalloc(((size_t)kept + nf + 1) * sizeof *merged);
  int a = 0, b = 0, n = 0;
  while (a < kept || b < nf)
    merged[n++] = b == nf || (a < kept && vent_before(&V->e[a], &fresh[b])) ? V->e[a++] : fresh[b++];
  free(V->e);
  free(fresh);
  V->e = merged;
  V->n = V->cap = n;
  /* Every entry is a running job of this step (kept: unchanged since it entered). */
  int out = 0;
  for (int i = 0; i < n; i++) {
    int r = pos[V->e[i].j];
    if (gp__core_victim_able(c, r)) order[out++] = r;
  }
  free(pos);
  return out;
}

int gp__core_victim_order(gp__core_ctx *c, int *order) {
  return c->memo ? kept_across_steps(c, c->memo, order) : sorted_once(c, order);
}
