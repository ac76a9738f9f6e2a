/* SPDX-License-Identifier: Apache-2.0 */
/* Classification's pass over the view's jobs, from its set-up to its end: the tables every
 * slot feeds, then the plain loop (each slot classified by jobs.c) or, with a memo, the
 * memo's (classify_memo.c, which replays what it remembers); and, when the step ends, the
 * hand-back of classification's state. The one file that chooses between the two loops, so
 * that neither calls the other. */
#include <limits.h>
#include <stdlib.h>

#include "core/classify_pass.h"

int gp__core_classify_jobs(gp__core_ctx *c) {
  const gp_view *v = c->view;
  c->cls->min_whole = GP_MAX_NODE_GPUS + 1;
  c->cls->run_min_prio = INT_MAX;
  c->cls->running = gp__core_salloc(c, ((size_t)v->n_jobs + 1) * sizeof(int));
  c->cls->leaf_class = gp__core_salloc(c, ((size_t)c->tree.n + 1) * sizeof(int));
  for (int q = 0; q < c->tree.n; q++) c->cls->leaf_class[q] = -2;
  c->cls->eligible = gp__core_salloc(c, ((size_t)v->n_jobs + 1) * sizeof(int));
  c->cls->alloc_int = gp__core_scalloc(c, (size_t)c->tree.n + 1, sizeof *c->cls->alloc_int);
  c->cls->demand_int = gp__core_scalloc(c, (size_t)c->tree.n + 1, sizeof *c->cls->demand_int);
  c->cls->sums_inexact = v->n_jobs > (1 << 21); /* (so integer sums stay under 2^52) */
  /* Queues with a limit on their path (parents precede children in the tree): jobs of the
   * others skip the limit walk, done for every job never considered. */
  c->cls->path_limited = gp__core_salloc(c, ((size_t)c->tree.n + 1) * sizeof(bool));
  for (int q = 0; q < c->tree.n; q++) {
    int par = c->tree.q[q].parent;
    c->cls->path_limited[q] = c->tree.q[q].limit != GP_NO_LIMIT || (par >= 0 && c->cls->path_limited[par]);
  }
  gp__core_spot_setup(c);
  if (c->memo) return gp__core_classify_kept(c);
  size_t run_cap = 0;
  for (int j = 0; j < v->n_jobs; j++) {
    int rc = gp__core_slot_check(c, j);
    if (rc) return rc;
    gp__core_run ru;
    gp__core_classify_slot(c, j, &ru, &run_cap);
  }
  gp__core_sums_done(c);
  return 0;
}

void gp__core_cls_done(gp__core_ctx *c) {
  if (c->memo) gp__core_cls_kept_done(c); /* (the memo's array and lists) */
  else free(c->jobs);
  free(c->cls->run);
  if (c->cls->ids_built) gp__core_strmap_done(&c->cls->ids);
  if (c->cls->single_built) gp__core_strmap_done(&c->cls->single);
  gp__core_shapes_done(c);
}
