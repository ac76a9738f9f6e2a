/* SPDX-License-Identifier: Apache-2.0 */
/* The order in which pending jobs are considered.
 *
 * GP_ORDER_FAIRSHARE: a heap of jobs per leaf queue (higher priority, then older, then
 * view index) and, for every inner queue and the root, a heap of its active children keyed
 * by allocated / fair share (queues without a fair share sort last, by allocation; ties by
 * tree index). Picking a job descends from the root through the heap tops; after every
 * placement the placed job's leaf and its ancestors are re-sifted, so the order is
 * re-evaluated after every placement at O(depth * log(children)) instead of a re-sort.
 * GP_ORDER_FIFO / _PRIORITY / _SJF: one global heap; queues play no part.
 * Job ties (same keys) go to the smaller job id, then the smaller view index.
 * A step usually considers a few hundred of 100,000 pending jobs, so segments are not
 * heapified up front: each keeps a window, a heap of its 32 best jobs picked in one pass
 * (about one comparison per job, against heapify's two and their moves), ahead of the
 * rest in no order. Every job in the window comes before every job in the rest, so the
 * window's top is the segment's best. A segment that uses up its window is likely to be
 * drained further (a queue far below its share, a step that starts thousands of jobs):
 * its rest then becomes a plain heap. */
#include <stdlib.h>
#include <string.h>

#include "core/sched_int.h"

/* A heap entry carries its keys, so sifting compares adjacent memory instead of chasing
 * job indexes into the view. */
typedef struct hent {
  int64_t k1, k2;       /* sort keys, smaller first; then the job id, then j */
  uint64_t idp;         /* the id's first 8 bytes (gp__id_prefix) */
  int j;
} hent;

struct gp__order {
  gp__ctx *c;
  bool fair;
  hent *heap;           /* one segment per leaf (or one for global orders): window, rest */
  int *seg_start, *seg_len;
  int *win_len, *win_k; /* per segment: jobs in the window; its next size (INT32_MAX: all) */
  int n_seg;
  int *qheap;           /* per parent (tree index, root = tree.n): heap of active children */
  int *qstart, *qlen;
  int *qpos;            /* position of a queue in its parent's heap, -1 when inactive */
};

/* Ties on the keys go to the smaller job id, then the view index: callers that keep their
 * view in place (the simulator swap-removes ended jobs) still get submission order for
 * jobs submitted in the same second, as long as their ids sort that way. */
/* Jobs submitted in the same second with the same priority tie on the keys, and heapify
 * compares such pairs often: the id prefix (gp__id_prefix) settles them without reading
 * the view. */
static inline __attribute__((always_inline)) bool job_less(const gp__order *o, const hent *a,
                                                          const hent *b) {
  if (a->k1 != b->k1) return a->k1 < b->k1;
  if (a->k2 != b->k2) return a->k2 < b->k2;
  if (a->idp != b->idp) return a->idp < b->idp;
  /* Equal prefixes with a 0 in the last byte: both ids end within it, so they are equal. */
  int c = (a->idp & 0xff) == 0 ? 0 : strcmp(o->c->view->jobs[a->j].id, o->c->view->jobs[b->j].id);
  if (c) return c < 0;
  return a->j < b->j;
}

/* Max-heap sift, for picking the K best: the root is the worst of those kept. */
static void worst_sift_down(const gp__order *o, hent *h, int n, int i) {
  hent x = h[i];
  for (;;) {
    int l = 2 * i + 1, m = -1;
    const hent *worst = &x;
    if (l < n && job_less(o, worst, &h[l])) m = l, worst = &h[l];
    if (l + 1 < n && job_less(o, worst, &h[l + 1])) m = l + 1;
    if (m < 0) break;
    h[i] = h[m];
    i = m;
  }
  h[i] = x;
}

static void job_sift_down(const gp__order *o, hent *h, int n, int i) {
  hent x = h[i];
  for (;;) {
    int l = 2 * i + 1, m = -1;
    const hent *best = &x;
    if (l < n && job_less(o, &h[l], best)) m = l, best = &h[l];
    if (l + 1 < n && job_less(o, &h[l + 1], best)) m = l + 1;
    if (m < 0) break;
    h[i] = h[m];
    i = m;
  }
  h[i] = x;
}



/* Queue order: (no fair share?, ratio or allocation, tree index). */
static bool queue_less(const gp__order *o, int a, int b) {
  const gp__queue *qa = &o->c->tree.q[a], *qb = &o->c->tree.q[b];
  bool za = qa->fair_share <= GP__EPS, zb = qb->fair_share <= GP__EPS;
  if (za != zb) return zb;
  double ka = za ? qa->allocated : qa->allocated / qa->fair_share;
  double kb = zb ? qb->allocated : qb->allocated / qb->fair_share;
  if (ka != kb) return ka < kb;
  return a < b;
}

static int parent_slot(const gp__order *o, int q) {
  int p = o->c->tree.q[q].parent;
  return p < 0 ? o->c->tree.n : p;
}

static void qswap(gp__order *o, int *h, int i, int k) {
  int t = h[i];
  h[i] = h[k];
  h[k] = t;
  o->qpos[h[i]] = i;
  o->qpos[h[k]] = k;
}

static void q_sift(gp__order *o, int p, int i) {
  int *h = o->qheap + o->qstart[p], n = o->qlen[p];
  while (i > 0 && queue_less(o, h[i], h[(i - 1) / 2])) {
    qswap(o, h, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
  for (;;) {
    int l = 2 * i + 1, m = i;
    if (l < n && queue_less(o, h[l], h[m])) m = l;
    if (l + 1 < n && queue_less(o, h[l + 1], h[m])) m = l + 1;
    if (m == i) return;
    qswap(o, h, i, m);
    i = m;
  }
}

static void q_insert(gp__order *o, int q) {
  int p = parent_slot(o, q);
  int i = o->qlen[p]++;
  o->qheap[o->qstart[p] + i] = q;
  o->qpos[q] = i;
  q_sift(o, p, i);
}

static void q_remove(gp__order *o, int q) {
  int p = parent_slot(o, q), i = o->qpos[q];
  int *h = o->qheap + o->qstart[p];
  int last = --o->qlen[p];
  o->qpos[q] = -1;
  if (i != last) {
    h[i] = h[last];
    o->qpos[h[i]] = i;
    q_sift(o, p, i);
  }
}

gp__order *gp__order_new(gp__ctx *c) {
  gp__order *o = gp_xcalloc(1, sizeof *o);
  o->c = c;
  o->fair = c->pol->order == GP_ORDER_FAIRSHARE;
  int nq = c->tree.n;
  o->n_seg = o->fair ? nq : 1;
  o->seg_start = gp_xcalloc((size_t)o->n_seg + 1, sizeof(int));
  o->seg_len = gp_xcalloc((size_t)o->n_seg + 1, sizeof(int));
  int n_elig = c->n_eligible;
  for (int e = 0; e < n_elig; e++) o->seg_len[o->fair ? c->jobs[c->eligible[e]].leaf : 0]++;
  for (int s = 0; s < o->n_seg; s++) o->seg_start[s + 1] = o->seg_start[s] + o->seg_len[s];
  o->heap = gp_xmalloc(((size_t)n_elig + 1) * sizeof(hent));
  int *fill = gp_xcalloc((size_t)o->n_seg + 1, sizeof(int));
  for (int e = 0; e < n_elig; e++) {
    int j = c->eligible[e];
    const gp__job *ji = &c->jobs[j];
    hent h = {.j = j, .idp = ji->idp};
    switch (c->pol->order) {
    case GP_ORDER_FIFO:
      h.k1 = ji->submitted;
      break;
    case GP_ORDER_SJF:
      h.k1 = ji->limit > 0 ? ji->limit : GP__NEVER;
      h.k2 = ji->submitted;
      break;
    default: /* fair share inside a leaf, and global priority */
      h.k1 = -(int64_t)ji->prio;
      h.k2 = ji->submitted;
      break;
    }
    int s = o->fair ? c->jobs[j].leaf : 0;
    o->heap[o->seg_start[s] + fill[s]++] = h;
  }
  free(fill);
  o->win_len = gp_xcalloc((size_t)o->n_seg + 1, sizeof(int));
  o->win_k = gp_xmalloc(((size_t)o->n_seg + 1) * sizeof(int));
  for (int s = 0; s < o->n_seg; s++) o->win_k[s] = 32;

  if (o->fair) {
    /* Child heaps: a parent's segment holds at most its number of children. */
    o->qstart = gp_xcalloc((size_t)nq + 2, sizeof(int));
    o->qlen = gp_xcalloc((size_t)nq + 2, sizeof(int));
    o->qpos = gp_xmalloc(((size_t)nq + 1) * sizeof(int));
    int off = 0;
    for (int q = 0; q < nq; q++) {
      o->qstart[q] = off;
      off += c->tree.q[q].n_children;
      o->qpos[q] = -1;
    }
    o->qstart[nq] = off;
    for (int q = 0; q < nq; q++) off += c->tree.q[q].parent < 0;
    o->qheap = gp_xmalloc(((size_t)off + 1) * sizeof(int));
    /* Activate leaves with jobs and every ancestor (children before parents: reverse
     * tree order). */
    bool *active = gp_xcalloc((size_t)nq + 1, sizeof(bool));
    for (int q = nq - 1; q >= 0; q--) {
      if (gp__qtree_is_leaf(&c->tree, q) ? o->seg_len[q] > 0 : active[q]) {
        active[q] = true;
        if (c->tree.q[q].parent >= 0) active[c->tree.q[q].parent] = true;
      }
    }
    for (int q = 0; q < nq; q++)
      if (active[q]) q_insert(o, q);
    free(active);
  }
  return o;
}

void gp__order_free(gp__order *o) {
  if (!o) return;
  free(o->heap);
  free(o->seg_start);
  free(o->seg_len);
  free(o->win_len);
  free(o->win_k);
  free(o->qheap);
  free(o->qstart);
  free(o->qlen);
  free(o->qpos);
  free(o);
}

/* The window is empty: moves the win_k best of the rest to the front, as a heap. */
static void refill(gp__order *o, int s) {
  hent *h = o->heap + o->seg_start[s];
  int n = o->seg_len[s], k = o->win_k[s] < n ? o->win_k[s] : n;
  o->win_k[s] = INT32_MAX; /* a queue that used up its first window will likely use up
                              more: the next refill makes a plain heap of the rest */
  for (int i = k / 2 - 1; i >= 0 && k < n; i--) worst_sift_down(o, h, k, i);
  for (int i = k; i < n; i++) {
    if (!job_less(o, &h[i], &h[0])) continue;
    hent t = h[0];
    h[0] = h[i];
    h[i] = t;
    worst_sift_down(o, h, k, 0);
  }
  for (int i = k / 2 - 1; i >= 0; i--) job_sift_down(o, h, k, i);
  o->win_len[s] = k;
}

static int pop_job(gp__order *o, int s) {
  hent *h = o->heap + o->seg_start[s];
  if (o->win_len[s] == 0) refill(o, s);
  int w = --o->win_len[s];
  int j = h[0].j;
  h[0] = h[w];
  job_sift_down(o, h, w, 0);
  h[w] = h[--o->seg_len[s]]; /* the rest's last job fills the window's freed place */
  return j;
}

int gp__order_next(gp__order *o) {
  if (!o->fair) return o->seg_len[0] ? pop_job(o, 0) : -1;
  const gp__qtree *t = &o->c->tree;
  int p = t->n;
  while (o->qlen[p]) {
    int q = o->qheap[o->qstart[p]];
    if (!gp__qtree_is_leaf(t, q)) {
      p = q;
      continue;
    }
    int j = pop_job(o, q);
    /* Deactivate emptied queues upwards. */
    for (int e = q; e >= 0 && (gp__qtree_is_leaf(t, e) ? o->seg_len[e] == 0 : o->qlen[e] == 0);
         e = t->q[e].parent)
      q_remove(o, e);
    return j;
  }
  return -1;
}

void gp__order_update(gp__order *o, int leaf) {
  if (!o->fair) return;
  for (int q = leaf; q >= 0; q = o->c->tree.q[q].parent)
    if (o->qpos[q] >= 0) q_sift(o, parent_slot(o, q), o->qpos[q]);
}
