/* SPDX-License-Identifier: Apache-2.0 */
/* Non-preemptible jobs within the queues' guarantees (see guarantee.h for the rule). The
 * check walks the job's path once: depth is small, and only non-preemptible jobs that
 * would start pay for it. */
#include "core/guarantee.h"

#include "core/scratch.h"

typedef struct gp__core_guard {
  double *np;          /* per queue: GPUs held by its non-preemptible jobs */
  double *kids_excess; /* per queue: its children's excess (np beyond deserved), summed */
  double *des;         /* per queue: deserved, plus the GPUs of the pools it (or a child)
                          owns */
  double *kept;        /* per queue: des it does not pass on to its children */
  double top_excess;   /* the top-level queues' excess, summed */
  double top_free;     /* the cluster's GPUs that no top-level queue is guaranteed */
  const char **msg;    /* per queue: the sentence, made on first use */
} gp__core_guard;

static double excess(const gp__core_guard *g, int q, double np) {
  return np > g->des[q] ? np - g->des[q] : 0;
}

static void add(gp__core_ctx *c, gp__core_guard *g, int leaf, double gpus) {
  for (int q = leaf; q >= 0; q = c->tree.q[q].parent) {
    const gp__core_queue *tq = &c->tree.q[q];
    double grow = excess(g, q, g->np[q] + gpus) - excess(g, q, g->np[q]);
    g->np[q] += gpus;
    if (tq->parent >= 0) g->kids_excess[tq->parent] += grow;
    else g->top_excess += grow;
  }
}

static gp__core_guard *guard(gp__core_ctx *c) {
  if (c->cls->guard) return c->cls->guard;
  const gp__core_qtree *t = &c->tree;
  gp__core_guard *g = gp__core_scalloc(c, 1, sizeof *g);
  g->np = gp__core_scalloc(c, (size_t)t->n + 1, sizeof *g->np);
  g->kids_excess = gp__core_scalloc(c, (size_t)t->n + 1, sizeof *g->kids_excess);
  g->des = gp__core_scalloc(c, (size_t)t->n + 1, sizeof *g->des);
  g->kept = gp__core_scalloc(c, (size_t)t->n + 1, sizeof *g->kept);
  g->msg = gp__core_scalloc(c, (size_t)t->n + 1, sizeof *g->msg);
  for (int q = 0; q < t->n; q++) g->des[q] = t->q[q].deserved;
  /* A reserved pool is its owner's guarantee too: running there borrows from nobody. */
  for (int i = 0; i < c->view->n_nodes && c->view->n_pools > 0; i++) {
    int p = c->nodes[i].pool;
    if (p < 0 || c->view->nodes[i].state == GP_NODE_DOWN) continue;
    int own = gp__core_qtree_find(t, c->view->pools[p].queue);
    for (int q = own; q >= 0; q = t->q[q].parent) g->des[q] += c->view->nodes[i].n_gpus;
  }
  double top = 0;
  for (int q = 0; q < t->n; q++) {
    double kids = 0;
    for (int k = t->q[q].first_child; k >= 0; k = t->q[k].next_sibling) kids += g->des[k];
    g->kept[q] = g->des[q] > kids ? g->des[q] - kids : 0;
    if (t->q[q].parent < 0) top += g->des[q];
  }
  g->top_free = c->fleet->capacity > top ? c->fleet->capacity - top : 0;
  c->cls->guard = g;
  /* Jobs started earlier in the step were preemptible (a non-preemptible start builds
   * this first), so the running jobs are all there is to count. */
  for (int r = 0; r < c->cls->n_running; r++) {
    const gp__core_run *ru = &c->cls->run[r];
    if (!ru->preemptible && ru->leaf >= 0) add(c, g, ru->leaf, ru->gpus);
  }
  return g;
}

int gp__core_guard_over(gp__core_ctx *c, int leaf, double gpus) {
  if (c->pol->order != GP_ORDER_FAIRSHARE || leaf < 0 || !(gpus > 0)) return -1;
  gp__core_guard *g = guard(c);
  /* Going up, `grow` is how much the queue's excess grows; what its parent keeps for
   * itself and the parent's new excess are what may cover it. (A queue within its
   * guarantee changes nothing at its level; a parent above its own may still grow when a
   * child is guaranteed more than the parent, so every level is looked at.) */
  for (int q = leaf; q >= 0; q = c->tree.q[q].parent) {
    const gp__core_queue *tq = &c->tree.q[q];
    double grow = excess(g, q, g->np[q] + gpus) - excess(g, q, g->np[q]);
    if (grow <= GP__EPS) continue;
    int p = tq->parent;
    double kids = (p >= 0 ? g->kids_excess[p] : g->top_excess) + grow;
    double room = p >= 0 ? g->kept[p] + excess(g, p, g->np[p] + gpus) : g->top_free;
    if (kids > room + GP__EPS) return q;
  }
  return -1;
}

void gp__core_guard_started(gp__core_ctx *c, int leaf, double gpus) {
  if (c->pol->order != GP_ORDER_FAIRSHARE || leaf < 0) return;
  add(c, guard(c), leaf, gpus);
}

const char *gp__core_guard_message(gp__core_ctx *c, int q) {
  gp__core_guard *g = guard(c);
  if (!g->msg[q])
    g->msg[q] = gp_arena_printf(
        c->arena,
        "Queue %s is guaranteed %g GPUs; a non-preemptible job may not hold more by "
        "borrowing GPUs that other queues are guaranteed. It starts when that is no longer "
        "so, or run it in a preemptible priority class.",
        c->tree.q[q].name, g->des[q]);
  return g->msg[q];
}
