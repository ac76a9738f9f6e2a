/* SPDX-License-Identifier: Apache-2.0 */
/* Spot-aware placement per queue (spot.h). A queue that prefers spot (cheap, requeueable
 * training) has its jobs tried on spot nodes first, then anywhere in the placement
 * policy's usual order; one that avoids spot (inference, jobs that cannot checkpoint)
 * has them tried off spot first; one that never runs on spot keeps them off it whatever
 * the jobs allow. A spot_share caps the GPUs on spot of a queue and its sub-queues: a job
 * goes to spot nodes only while its queue's GPUs on spot, this job's counted in full, stay
 * within spot_share of all the GPUs its jobs hold, this job's counted too. So a queue
 * with share 0.5 starts its first GPU off spot, and at most half of what it holds is ever
 * on spot; a job the cap keeps off spot goes elsewhere or waits, and says why.
 *
 * What a queue holds on spot is counted like what it holds at all (jobs.c): running and
 * stopping jobs from their placements at classification, starts as the step makes them. */
#include "core/spot.h"

#define MSG_NEVER \
  "It could start now on spot nodes, but its queue does not run jobs on spot capacity."
#define MSG_CAP \
  "It could start now on spot nodes, but that would put its queue over its share of GPUs on spot."

static bool queue_sets(const gp_queue *q) {
  return (q->spot > GP_SPOT_NEUTRAL && q->spot <= GP_SPOT_NEVER) || q->spot_share > 0;
}

void gp__core_spot_setup(gp__core_ctx *c) {
  const gp__core_qtree *t = &c->tree;
  gp__core_cls *cl = c->cls;
  bool any = false;
  for (int q = 0; q < t->n && !any; q++)
    any = t->q[q].view_index >= 0 && queue_sets(&c->view->queues[t->q[q].view_index]);
  if (!any) return; /* (the arrays stay NULL: no job's placement changes) */
  cl->spot_pref = gp__core_salloc(c, (size_t)t->n + 1);
  cl->spot_cap = gp__core_salloc(c, ((size_t)t->n + 1) * sizeof *cl->spot_cap);
  cl->spot_held = gp__core_scalloc(c, (size_t)t->n + 1, sizeof *cl->spot_held);
  bool ordered = false;
  /* Parents precede their children in the tree. */
  for (int q = 0; q < t->n; q++) {
    int par = t->q[q].parent, vi = t->q[q].view_index;
    uint8_t pref = par >= 0 ? cl->spot_pref[par] : GP_SPOT_NEUTRAL;
    int cap = par >= 0 ? cl->spot_cap[par] : -1;
    if (vi >= 0) {
      const gp_queue *vq = &c->view->queues[vi];
      if (vq->spot > GP_SPOT_NEUTRAL && vq->spot <= GP_SPOT_NEVER) pref = (uint8_t)vq->spot;
      if (vq->spot_share > 0) cap = q; /* (NaN fails the test: no cap) */
    }
    cl->spot_pref[q] = pref;
    cl->spot_cap[q] = cap;
    ordered |= pref == GP_SPOT_PREFER || pref == GP_SPOT_AVOID;
  }
  /* A first try on one class of nodes finds nothing new unless both classes are up. */
  bool spot = false, other = false;
  for (int i = 0; ordered && i < c->view->n_nodes && !(spot && other); i++) {
    if (!c->nodes[i].up) continue;
    if (c->view->nodes[i].capacity == GP_CAP_SPOT) spot = true;
    else other = true;
  }
  cl->spot_mixed = spot && other;
}

uint32_t gp__core_spot_key(const gp__core_ctx *c, int j) {
  int leaf = c->jobs[j].leaf;
  if (!c->cls->spot_pref || leaf < 0 || !c->view->jobs[j].req.allow_spot) return 0;
  return c->cls->spot_pref[leaf] | (uint32_t)(c->cls->spot_cap[leaf] + 1) << 2;
}

bool gp__core_spot_refused(const gp__core_ctx *c, int j) {
  if (!c->view->jobs[j].req.allow_spot) return true;
  int leaf = c->jobs[j].leaf;
  return c->cls->spot_pref && leaf >= 0 && c->cls->spot_pref[leaf] == GP_SPOT_NEVER;
}

int gp__core_spot_why(const gp__core_ctx *c, int j) {
  int leaf = c->jobs[j].leaf;
  if (!c->cls->spot_pref || leaf < 0 || !c->view->jobs[j].req.allow_spot) return GP__SPOT_WHY_NONE;
  if (c->cls->spot_pref[leaf] == GP_SPOT_NEVER) return GP__SPOT_WHY_NEVER;
  int q = c->cls->spot_cap[leaf];
  double g = c->jobs[j].gpus;
  if (q < 0 || g <= 0) return GP__SPOT_WHY_NONE;
  double share = c->view->queues[c->tree.q[q].view_index].spot_share;
  if (share > 1) share = 1;
  return c->cls->spot_held[q] + g > share * (c->tree.q[q].allocated + g) + GP__EPS
             ? GP__SPOT_WHY_CAP
             : GP__SPOT_WHY_NONE;
}

void gp__core_spot_req(gp__core_ctx *c, gp__core_req *r) {
  r->spot_deny = r->spot_first = 0;
  if (!c->view->jobs[r->job].req.allow_spot) {
    r->spot_deny = GP__DENY_SPOT;
    r->spot_why = GP__SPOT_WHY_NONE;
    return;
  }
  r->spot_why = (uint8_t)gp__core_spot_why(c, r->job);
  if (r->spot_why) {
    r->spot_deny = GP__DENY_SPOT;
    return;
  }
  if (!c->cls->spot_mixed || c->jobs[r->job].leaf < 0) return;
  int pref = c->cls->spot_pref[c->jobs[r->job].leaf];
  if (pref == GP_SPOT_PREFER) r->spot_first = GP__DENY_OTHER;
  else if (pref == GP_SPOT_AVOID) r->spot_first = GP__DENY_SPOT;
}

void gp__core_spot_add_held(gp__core_ctx *c, int leaf, double gpus) {
  if (!c->cls->spot_held) return;
  for (int q = leaf; q >= 0; q = c->tree.q[q].parent) c->cls->spot_held[q] += gpus;
}

void gp__core_spot_started(gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *fits) {
  int leaf = c->jobs[r->job].leaf;
  if (!c->cls->spot_held || leaf < 0 || r->tasks <= 0) return;
  int on = 0;
  for (int t = 0; t < r->tasks; t++) on += c->view->nodes[fits[t].node].capacity == GP_CAP_SPOT;
  /* Every task asks the same: the job's GPUs in the share of its tasks on spot. */
  if (on) gp__core_spot_add_held(c, leaf, c->jobs[r->job].gpus * on / r->tasks);
}

const char *gp__core_spot_message(int why) {
  return why == GP__SPOT_WHY_NEVER ? MSG_NEVER : why == GP__SPOT_WHY_CAP ? MSG_CAP : NULL;
}
