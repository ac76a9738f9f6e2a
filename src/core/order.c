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
 * Job ties (same keys) go to the job that came first (gp_order_id_cmp), then the smaller
 * view index.
 * A step usually considers a few hundred of 100,000 pending jobs, so segments are not
 * heapified up front: each keeps a window, a heap of its 32 best jobs picked in one pass
 * (about one comparison per job, against heapify's two and their moves), ahead of the
 * rest in no order. Every job in the window comes before every job in the rest, so the
 * window's top is the segment's best. A segment that uses up its window is likely to be
 * drained further (a queue far below its share, a step that starts thousands of jobs):
 * its rest then becomes a plain heap.
 * With a memo (memo.c) every segment is kept sorted instead, from one step to the next
 * (see gp__core_kept_order below): pops then walk it. */
#include <stdlib.h>
#include <string.h>

#include "core/order.h"
#include "core/usage.h"

/* A heap entry carries its keys, so sifting compares adjacent memory instead of chasing
 * job indexes into the view. */
typedef struct hent {
  int64_t k1, k2;       /* sort keys, smaller first; then the job id, then j */
  uint64_t idp;         /* the id's order key (gp__core_id_key) */
  int j;
} hent;

struct gp__core_order {
  gp__core_ctx *c;
  bool fair;
  bool sorted;          /* each segment is sorted (the memo's kept order): pops walk it */
  uint8_t *remembered;  /* sorted: per entry, whether the memo remembers its job */
  struct gp_sched_memo *keeper; /* sorted: the memo that keeps this order for the next step */
  hent *heap;           /* one segment per leaf (or one for global orders): window, rest */
  int *seg_start, *seg_len;
  int *win_len, *win_k; /* per segment: jobs in the window; its next size (INT32_MAX: all) */
  int n_seg;
  int *qheap;           /* per parent (tree index, root = tree.n): heap of active children */
  int *qstart, *qlen;
  int *qpos;            /* position of a queue in its parent's heap, -1 when inactive */
  struct rest { double min_gpus; int max_prio; bool whole, any, done; } *rest; /* per segment */
  const int64_t *ukey;  /* per view job: its key among its leaf's users (usage.c), or NULL */
};

/* Ties on the keys go to the job that came first by its id (gp_order_id_cmp: the server's
 * job numbers as numbers, so job 9 before job 10 of the same second), then the view index.
 * Jobs submitted in the same second with the same priority tie on the keys, and heapify
 * compares such pairs often: the id key (gp__core_id_key) settles them without reading
 * the view. */
static inline __attribute__((always_inline)) bool job_less(const gp__core_order *o, const hent *a,
                                                          const hent *b) {
  if (a->k1 != b->k1) return a->k1 < b->k1;
  if (a->k2 != b->k2) return a->k2 < b->k2;
  if (a->idp != b->idp) return a->idp < b->idp;
  int c = gp_order_id_cmp(o->c->view->jobs[a->j].id, o->c->view->jobs[b->j].id);
  if (c) return c < 0;
  return a->j < b->j;
}

/* Max-heap sift, for picking the K best: the root is the worst of those kept. */
static void worst_sift_down(const gp__core_order *o, hent *h, int n, int i) {
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

static void job_sift_down(const gp__core_order *o, hent *h, int n, int i) {
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



/* A queue of weight 0 past its deserved GPUs: it comes after every sibling of positive
 * weight, whatever its usage or share (a weight is never a divisor here). */
static bool after_all(const gp__core_queue *q) {
  return q->weight <= 0 && q->allocated >= q->deserved - GP__EPS;
}

/* Queue order: (weight 0 past deserved?, no fair share?, at or past its fair share?, ratio
 * or allocation, tree index). The ratio counts decayed past usage (usage.c) with the
 * allocation: a queue that used the cluster all week comes after one that did not. Usage
 * never puts a queue past its fair share ahead of one below it: that queue would borrow
 * GPUs the other reclaims at once (preempt.c), over and over. */
static bool queue_less(const gp__core_order *o, int a, int b) {
  const gp__core_queue *qa = &o->c->tree.q[a], *qb = &o->c->tree.q[b];
  bool la = after_all(qa), lb = after_all(qb);
  if (la != lb) return lb;
  bool za = qa->fair_share <= GP__EPS, zb = qb->fair_share <= GP__EPS;
  if (za != zb) return zb;
  bool fa = qa->allocated >= qa->fair_share - GP__EPS, fb = qb->allocated >= qb->fair_share - GP__EPS;
  if (!za && fa != fb) return fb;
  double ua = qa->allocated + qa->usage, ub = qb->allocated + qb->usage;
  double ka = za ? ua : ua / qa->fair_share;
  double kb = zb ? ub : ub / qb->fair_share;
  if (ka != kb) return ka < kb;
  return a < b;
}

static int parent_slot(const gp__core_order *o, int q) {
  int p = o->c->tree.q[q].parent;
  return p < 0 ? o->c->tree.n : p;
}

static void qswap(gp__core_order *o, int *h, int i, int k) {
  int t = h[i];
  h[i] = h[k];
  h[k] = t;
  o->qpos[h[i]] = i;
  o->qpos[h[k]] = k;
}

static void q_sift(gp__core_order *o, int p, int i) {
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

static void q_insert(gp__core_order *o, int q) {
  int p = parent_slot(o, q);
  int i = o->qlen[p]++;
  o->qheap[o->qstart[p] + i] = q;
  o->qpos[q] = i;
  q_sift(o, p, i);
}

static void q_remove(gp__core_order *o, int q) {
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

/* A job's heap entry: its keys under the policy's order; among the users of a leaf, its
 * user's load instead of its submit time (usage.c). */
static hent entry_of(const gp__core_order *o, int j) {
  const gp__core_ctx *c = o->c;
  const gp__core_job *ji = &c->jobs[j];
  gp_order_keys k = gp_order_keys_of(c->pol->order, ji->prio, ji->limit, ji->submitted);
  if (o->ukey) k.k2 = o->ukey[j];
  return (hent){.j = j, .idp = ji->idp, .k1 = k.k1, .k2 = k.k2};
}

/* The memo's kept order: the last step's eligible jobs, each segment sorted, and whether
 * the memo remembered each. A remembered job whose slot this step replayed (did not
 * classify afresh: ctx.fresh_bits) is eligible again with the same keys, so this step's
 * order is the kept one minus the jobs that changed, merged with the jobs classified
 * afresh (sorted: usually a few per cent). That is a sequential pass instead of picking
 * windows from every segment a step draws from. */
struct gp__core_kept_order {
  hent *e;
  uint8_t *remembered;  /* 0: not kept (the slot had no rev, or the job was not remembered) */
  int *seg_start;       /* n_seg + 1 */
  int n, n_seg;
  uint64_t step;        /* the memo step that built it: only the next one may use it */
  bool user_keys;       /* keyed by users' loads, which change with other jobs: not reused */
};

void gp__core_kept_order_free(struct gp__core_kept_order *k) {
  if (!k) return;
  free(k->e);
  free(k->remembered);
  free(k->seg_start);
  free(k);
}

size_t gp__core_kept_order_bytes(const struct gp__core_kept_order *k) {
  if (!k) return 0;
  return sizeof *k + (size_t)k->n * (sizeof *k->e + sizeof *k->remembered) +
         ((size_t)k->n_seg + 1) * sizeof(int);
}

static int seg_of(const gp__core_order *o, int j) { return o->fair ? o->c->jobs[j].leaf : 0; }

static bool fresh_less(const gp__core_order *o, const hent *a, const hent *b) {
  int sa = seg_of(o, a->j), sb = seg_of(o, b->j);
  if (sa != sb) return sa < sb;
  return job_less(o, a, b);
}

/* Bottom-up merge sort of n entries (scratch: n more). */
static void sort_entries(const gp__core_order *o, hent *a, hent *tmp, int n) {
  for (int w = 1; w < n; w *= 2) {
    for (int lo = 0; lo < n; lo += 2 * w) {
      int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int i = lo, k = mid, t = lo;
      while (i < mid && k < hi) tmp[t++] = fresh_less(o, &a[k], &a[i]) ? a[k++] : a[i++];
      while (i < mid) tmp[t++] = a[i++];
      while (k < hi) tmp[t++] = a[k++];
    }
    memcpy(a, tmp, (size_t)n * sizeof *a);
  }
}

/* Fills o->heap with every eligible job, each segment sorted, and the segments' bounds:
 * from the kept order when `kept` is usable (plus the jobs classified afresh), else by
 * sorting all. Returns false when the kept order does not account for exactly this step's
 * eligible jobs (a caller that broke the rev contract): then the caller sorts all instead.
 * rec: the memo's records, which say whether it remembers a job. */
static bool build_sorted(gp__core_order *o, const struct gp__core_kept_order *kept,
                         const gp__core_memo_rec *rec) {
  gp__core_ctx *c = o->c;
  const uint64_t *revs = c->view->job_revs;
  int n_elig = c->cls->n_eligible, nj = c->view->n_jobs;
  const int *src = kept ? c->cls->lists.fresh : c->cls->eligible;
  int nf = kept ? c->cls->n_fresh : n_elig;
  hent *fresh = gp__core_salloc(c, ((size_t)nf + 1) * sizeof *fresh);
  for (int e = 0; e < nf; e++) fresh[e] = entry_of(o, src[e]);
  hent *tmp = gp__core_salloc(c, ((size_t)nf + 1) * sizeof *tmp);
  sort_entries(o, fresh, tmp, nf);
  hent *out = o->heap;
  uint8_t *orem = o->remembered;
  int oi = 0, fi = 0;
  bool ok = true;
  for (int s = 0; s < o->n_seg && ok; s++) {
    int ki = kept ? kept->seg_start[s] : 0, kend = kept ? kept->seg_start[s + 1] : 0;
    int fend = fi;
    while (fend < nf && seg_of(o, fresh[fend].j) == s) fend++;
    o->seg_start[s] = oi;
    for (;;) {
      while (ki < kend) { /* skip kept jobs whose slot changed */
        int j = kept->e[ki].j;
        if (kept->remembered[ki] && j < nj && !(c->cls->fresh_bits[j >> 6] >> (j & 63) & 1)) break;
        ki++;
      }
      bool have_f = fi < fend;
      if (ki >= kend && !have_f) break;
      if (oi == n_elig) {
        ok = false;
        break;
      }
      if (ki < kend && (!have_f || job_less(o, &kept->e[ki], &fresh[fi]))) {
        orem[oi] = 1;
        out[oi++] = kept->e[ki++];
      } else {
        int j = fresh[fi].j;
        orem[oi] = revs && revs[j] && rec[j].rev == revs[j];
        out[oi++] = fresh[fi++];
      }
    }
    o->seg_len[s] = oi - o->seg_start[s];
  }
  o->seg_start[o->n_seg] = oi;
  return ok && fi == nf && oi == n_elig;
}

gp__core_order *gp__core_order_new(gp__core_ctx *c) {
  gp__core_order *o = gp__core_scalloc(c, 1, sizeof *o);
  o->c = c;
  o->fair = c->pol->order == GP_ORDER_FAIRSHARE;
  /* Users' loads depend on other jobs and on usage, so an order keyed by them is sorted
   * afresh every step (the memo's kept order assumes a job's keys are its own). */
  if (o->fair && c->pol->fair_users) o->ukey = gp__core_user_keys(c);
  int nq = c->tree.n;
  o->n_seg = o->fair ? nq : 1;
  o->seg_start = gp_xcalloc((size_t)o->n_seg + 1, sizeof(int));
  o->seg_len = gp__core_scalloc(c, (size_t)o->n_seg + 1, sizeof(int));
  int n_elig = c->cls->n_eligible;
  o->heap = gp_xmalloc(((size_t)n_elig + 1) * sizeof(hent));
  struct gp_sched_memo *m = c->memo;
  if (m) {
    /* Kept for the next step: the order sorted in full (merged from the last one). */
    const struct gp__core_kept_order *k = m->order;
    bool usable = k && c->view_known && k->step + 1 == m->step && k->n_seg == o->n_seg &&
                  !k->user_keys && !o->ukey;
    o->remembered = gp_xmalloc(((size_t)n_elig + 1) * sizeof *o->remembered);
    if (!build_sorted(o, usable ? k : NULL, m->rec) && usable) build_sorted(o, NULL, m->rec);
    o->sorted = true;
    o->keeper = m;
  } else {
    for (int e = 0; e < n_elig; e++) o->seg_len[seg_of(o, c->cls->eligible[e])]++;
    for (int s = 0; s < o->n_seg; s++) o->seg_start[s + 1] = o->seg_start[s] + o->seg_len[s];
    int *fill = gp__core_scalloc(c, (size_t)o->n_seg + 1, sizeof(int));
    for (int e = 0; e < n_elig; e++) {
      int j = c->cls->eligible[e];
      int s = seg_of(o, j);
      o->heap[o->seg_start[s] + fill[s]++] = entry_of(o, j);
    }
  }
  o->win_len = gp__core_scalloc(c, (size_t)o->n_seg + 1, sizeof(int));
  o->win_k = gp__core_salloc(c, ((size_t)o->n_seg + 1) * sizeof(int));
  for (int s = 0; s < o->n_seg; s++) o->win_k[s] = 32;

  if (o->fair) {
    /* Child heaps: a parent's segment holds at most its number of children. */
    o->qstart = gp__core_scalloc(c, (size_t)nq + 2, sizeof(int));
    o->qlen = gp__core_scalloc(c, (size_t)nq + 2, sizeof(int));
    o->qpos = gp__core_salloc(c, ((size_t)nq + 1) * sizeof(int));
    int off = 0;
    for (int q = 0; q < nq; q++) {
      o->qstart[q] = off;
      off += c->tree.q[q].n_children;
      o->qpos[q] = -1;
    }
    o->qstart[nq] = off;
    for (int q = 0; q < nq; q++) off += c->tree.q[q].parent < 0;
    o->qheap = gp__core_salloc(c, ((size_t)off + 1) * sizeof(int));
    /* Activate leaves with jobs and every ancestor (children before parents: reverse
     * tree order). */
    bool *active = gp__core_scalloc(c, (size_t)nq + 1, sizeof(bool));
    for (int q = nq - 1; q >= 0; q--) {
      if (gp__core_qtree_is_leaf(&c->tree, q) ? o->seg_len[q] > 0 : active[q]) {
        active[q] = true;
        if (c->tree.q[q].parent >= 0) active[c->tree.q[q].parent] = true;
      }
    }
    for (int q = 0; q < nq; q++)
      if (active[q]) q_insert(o, q);
  }
  return o;
}

void gp__core_order_free(gp__core_order *o) {
  if (!o) return;
  if (o->sorted) { /* the memo keeps this step's order for the next one */
    struct gp_sched_memo *m = o->keeper;
    gp__core_kept_order_free(m->order);
    struct gp__core_kept_order *k = m->order = gp_xcalloc(1, sizeof *k);
    *k = (struct gp__core_kept_order){.e = o->heap, .remembered = o->remembered,
                                 .seg_start = o->seg_start, .n = o->c->cls->n_eligible,
                                 .n_seg = o->n_seg, .step = m->step,
                                 .user_keys = o->ukey != NULL};
    o->heap = NULL;
    o->remembered = NULL;
    o->seg_start = NULL;
  }
  free(o->heap);
  free(o->remembered);
  free(o->seg_start);
  /* (The rest is the step's scratch memory.) */
}

/* The window is empty: moves the win_k best of the rest to the front, as a heap. */
static void refill(gp__core_order *o, int s) {
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

static int pop_job(gp__core_order *o, int s) {
  if (o->sorted) return o->heap[o->seg_start[s + 1] - o->seg_len[s]--].j;
  hent *h = o->heap + o->seg_start[s];
  if (o->win_len[s] == 0) refill(o, s);
  int w = --o->win_len[s];
  int j = h[0].j;
  h[0] = h[w];
  job_sift_down(o, h, w, 0);
  h[w] = h[--o->seg_len[s]]; /* the rest's last job fills the window's freed place */
  return j;
}

int gp__core_order_next(gp__core_order *o) {
  if (!o->fair) return o->seg_len[0] ? pop_job(o, 0) : -1;
  const gp__core_qtree *t = &o->c->tree;
  int p = t->n;
  while (o->qlen[p]) {
    int q = o->qheap[o->qstart[p]];
    if (!gp__core_qtree_is_leaf(t, q)) {
      p = q;
      continue;
    }
    int j = pop_job(o, q);
    /* Deactivate emptied queues upwards. */
    for (int e = q; e >= 0 && (gp__core_qtree_is_leaf(t, e) ? o->seg_len[e] == 0 : o->qlen[e] == 0);
         e = t->q[e].parent)
      q_remove(o, e);
    return j;
  }
  return -1;
}

int gp__core_order_top(const gp__core_order *o) {
  if (!o->fair) return o->seg_len[0] ? 0 : -1;
  const gp__core_qtree *t = &o->c->tree;
  for (int p = t->n; o->qlen[p];) {
    int q = o->qheap[o->qstart[p]];
    if (gp__core_qtree_is_leaf(t, q)) return q;
    p = q;
  }
  return -1;
}

bool gp__core_order_rest(gp__core_order *o, int s, double *min_gpus, int *max_prio, bool *whole) {
  if (!o->rest) o->rest = gp__core_scalloc(o->c, (size_t)o->n_seg + 1, sizeof *o->rest);
  struct rest *b = &o->rest[s];
  if (!b->done) {
    /* The jobs still to come: the end of a sorted segment, the front of a heap one. */
    int lo = o->sorted ? o->seg_start[s + 1] - o->seg_len[s] : o->seg_start[s];
    b->min_gpus = 1e300;
    b->max_prio = INT32_MIN;
    for (int i = lo; i < lo + o->seg_len[s]; i++) {
      const gp__core_job *ji = &o->c->jobs[o->heap[i].j];
      if (ji->kind != GP__R_WHOLE && ji->kind != GP__R_CPU) continue;
      b->any = true;
      b->whole |= ji->kind == GP__R_WHOLE;
      if (ji->gpus < b->min_gpus) b->min_gpus = ji->gpus;
      if (ji->prio > b->max_prio) b->max_prio = ji->prio;
    }
    b->done = true;
  }
  *min_gpus = b->min_gpus;
  *max_prio = b->max_prio;
  *whole = b->whole;
  return b->any;
}

int gp__core_order_skip(gp__core_order *o, int s, int k) {
  int n = k < o->seg_len[s] ? k : o->seg_len[s];
  for (int i = 0; i < n; i++) gp__core_order_next(o);
  return n;
}

void gp__core_order_update(gp__core_order *o, int leaf) {
  if (!o->fair) return;
  for (int q = leaf; q >= 0; q = o->c->tree.q[q].parent)
    if (o->qpos[q] >= 0) q_sift(o, parent_slot(o, q), o->qpos[q]);
}
