/* SPDX-License-Identifier: Apache-2.0 */
/* Gang placement: a job of N tasks starts all of them or none. Tasks are placed one by
 * one on the live capacity (so two tasks may share a node, up to the job's
 * max_tasks_per_node, and on exactly `nodes` distinct nodes when it asks for a count: a
 * node it opens must have room for its share) and rolled back on the first
 * failure, which makes the placement transactional. A multi-node gang first tries to fit
 * inside one topology block (nodes labelled topology.block=...), fullest candidate block
 * first under bin-packing (emptiest under spread), at most GP__MAX_GANG_BLOCKS blocks;
 * then anywhere.
 *
 * The tasks of a gang work in lockstep, so the slowest sets the pace: one task on an older
 * GPU model, or on a time-sliced share while the others hold whole GPUs, slows them all.
 * Once the first task is placed the others are held to its model and kind; when that
 * leaves them no room, each other model and kind is tried in turn (model ids in name
 * order, whole GPUs before replicas). A job that names several GPU types accepts any of
 * them for each task; the kind never mixes.
 *
 * A queue that prefers or avoids spot capacity (spot.c) has the whole job tried on the
 * class of nodes it prefers first, then anywhere. */
#include "core/place.h"

static void rollback(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *fits, int n) {
  for (int t = n - 1; t >= 0; t--) gp__core_give(c, r, &fits[t]);
}

/* The best node of block b for one task: most used (binpack) or least used (spread). */
static bool fit_in_block(gp__core_ctx *c, const gp__core_req *r, int b, gp__core_fit *f) {
  bool spread = c->pol->placement == GP_PLACE_SPREAD;
  int best = -1, best_free = 0;
  gp__core_fit tmp;
  for (int k = c->fleet->block_start[b]; k < c->fleet->block_start[b + 1]; k++) {
    int node = c->fleet->block_nodes[k];
    int fr = gp__core_popc(c->nodes[node].free);
    if (fr < r->gpus) continue;
    if (best >= 0 && (spread ? fr <= best_free : fr >= best_free)) continue;
    if (!gp__core_node_fit(c, r, node, 0, 0, 0, &tmp)) continue;
    best = node;
    best_free = fr;
    *f = tmp;
  }
  return best >= 0;
}

void gp__core_gang_rest(const gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *first,
                        gp__core_req *rest) {
  *rest = *r;
  if (r->kind == GP__R_CPU) return;
  if (c->view->jobs[r->job].req.n_gpu_models < 2 && c->nodes[first->node].model >= 0) {
    rest->n_models = 1;
    rest->models[0] = c->nodes[first->node].model;
  }
  if (r->kind == GP__R_WHOLE)
    rest->fit_kind = first->milli < GP_GPU_MILLI ? GP__FIT_REPLICA : GP__FIT_WHOLE;
}

void gp__core_gang_opened(gp__core_req *rest, const gp__core_fit *fits, int t) {
  for (int u = 0; u < t; u++)
    if (fits[u].node == fits[t].node) return;
  rest->n_open++;
}

static bool place_in_block(gp__core_ctx *c, const gp__core_req *r, int b, gp__core_fit *fits) {
  gp__core_req rest;
  for (int t = 0; t < r->tasks; t++) {
    rest.placed = fits; /* what --ntasks-per-node counts against */
    rest.n_placed = t;
    if (!fit_in_block(c, t ? &rest : r, b, &fits[t])) {
      rollback(c, r, fits, t);
      return false;
    }
    gp__core_take(c, r, &fits[t]);
    if (t == 0) gp__core_gang_rest(c, r, &fits[0], &rest);
    gp__core_gang_opened(&rest, fits, t);
  }
  return true;
}

/* Up to GP__MAX_GANG_BLOCKS candidate blocks with enough free GPUs, best first. */
static int candidate_blocks(const gp__core_ctx *c, const gp__core_req *r, int *out) {
  bool spread = c->pol->placement == GP_PLACE_SPREAD;
  int need = r->tasks * r->gpus, n = 0;
  for (int b = 0; b < c->fleet->n_blocks; b++) {
    int fr = c->fleet->block_free[b];
    if (fr < need) continue;
    /* Insertion into a short sorted list: (free asc for binpack, desc for spread, id). */
    int k = n < GP__MAX_GANG_BLOCKS ? n++ : GP__MAX_GANG_BLOCKS;
    while (k > 0) {
      int pf = c->fleet->block_free[out[k - 1]];
      if (spread ? pf >= fr : pf <= fr) break;
      if (k < GP__MAX_GANG_BLOCKS) out[k] = out[k - 1];
      k--;
    }
    if (k < GP__MAX_GANG_BLOCKS) out[k] = b;
  }
  return n;
}

/* Anywhere: task by task through the index, the others held to the first one's choice.
 * *ret_rest is that narrowed request when the first task found a place, else untouched. */
static bool place_wide(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *fits,
                       gp__core_req *ret_rest, bool *ret_first) {
  gp__core_req rest;
  int t = 0;
  for (; t < r->tasks; t++) {
    rest.placed = fits;
    rest.n_placed = t;
    if (!gp__core_fit_task(c, t ? &rest : r, &fits[t])) break;
    gp__core_take(c, r, &fits[t]);
    if (t == 0) {
      gp__core_gang_rest(c, r, &fits[0], &rest);
      *ret_rest = rest;
      *ret_first = true;
    }
    gp__core_gang_opened(&rest, fits, t);
  }
  if (t == r->tasks) return true;
  rollback(c, r, fits, t);
  return false;
}

/* One block (whole GPUs only: blocks hold no replicas), else anywhere. */
static bool place_gang(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *fits,
                       gp__core_req *ret_rest, bool *ret_first) {
  if (r->kind == GP__R_WHOLE && r->fit_kind != GP__FIT_REPLICA && c->fleet->n_blocks > 0) {
    int cand[GP__MAX_GANG_BLOCKS];
    int n = candidate_blocks(c, r, cand);
    for (int k = 0; k < n; k++)
      if (place_in_block(c, r, cand[k], fits)) return true;
  }
  return place_wide(c, r, fits, ret_rest, ret_first);
}

/* The first task's model and kind left the others no room: try every other model and
 * kind the job accepts. `tried` is the narrowed request of the attempt that failed. */
static bool place_other_kinds(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *fits,
                              const gp__core_req *tried) {
  bool by_model = r->kind != GP__R_CPU && c->view->jobs[r->job].req.n_gpu_models < 2;
  int nm = !by_model ? 1 : r->n_models < 0 ? c->fleet->n_models : r->n_models;
  int nk = r->kind == GP__R_WHOLE && r->gpus == 1 && c->fleet->has_timeslice ? 2 : 1;
  for (int mi = 0; mi < nm; mi++) {
    for (int ki = 0; ki < nk; ki++) {
      gp__core_req alt = *r;
      if (by_model) {
        alt.n_models = 1;
        alt.models[0] = r->n_models < 0 ? mi : r->models[mi];
      }
      if (nk == 2) alt.fit_kind = ki ? GP__FIT_REPLICA : GP__FIT_WHOLE;
      if ((!by_model || alt.models[0] == tried->models[0]) && (nk == 1 || alt.fit_kind == tried->fit_kind))
        continue;
      gp__core_req rest;
      bool first = false;
      if (place_gang(c, &alt, fits, &rest, &first)) return true;
    }
  }
  return false;
}

static bool place_job(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *fits, bool commit) {
  bool ok = false;
  if (r->tasks == 1) {
    ok = gp__core_fit_task(c, r, &fits[0]);
    if (ok) gp__core_take(c, r, &fits[0]);
  } else {
    gp__core_req tried;
    bool first = false;
    ok = place_gang(c, r, fits, &tried, &first);
    /* When not even the first task fits anywhere, no narrower request can. */
    if (!ok && first) ok = place_other_kinds(c, r, fits, &tried);
  }
  if (ok && !commit) rollback(c, r, fits, r->tasks);
  return ok;
}

/* A queue's spot preference (spot.c): the whole job on the class of nodes it prefers
 * first, then anywhere, each in the placement policy's order. */
bool gp__core_place_job(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *fits, bool commit) {
  /* (A failed first try is remembered per shape: it would fail again for the step.) */
  int shape = r->spot_first && r->honor_resv ? c->jobs[r->job].shape : -1;
  if (r->spot_first && !(shape >= 0 && gp__core_shape_first_failed(c, shape, r->end))) {
    gp__core_req first = *r;
    first.spot_deny |= r->spot_first;
    first.spot_first = 0;
    if (place_job(c, &first, fits, commit)) return true;
    if (shape >= 0) gp__core_shape_set_first_failed(c, shape, r->end);
  }
  return place_job(c, r, fits, commit);
}
