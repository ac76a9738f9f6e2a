/* SPDX-License-Identifier: Apache-2.0 */
/* Gang placement: a job of N tasks starts all of them or none. Tasks are placed one by
 * one on the live capacity (so two tasks may share a node) and rolled back on the first
 * failure, which makes the placement transactional. A multi-node gang first tries to fit
 * inside one topology block (nodes labelled topology.block=...), fullest candidate block
 * first under bin-packing (emptiest under spread), at most GP__MAX_GANG_BLOCKS blocks;
 * then anywhere. */
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

static bool place_in_block(gp__core_ctx *c, const gp__core_req *r, int b, gp__core_fit *fits) {
  for (int t = 0; t < r->tasks; t++) {
    if (!fit_in_block(c, r, b, &fits[t])) {
      rollback(c, r, fits, t);
      return false;
    }
    gp__core_take(c, r, &fits[t]);
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

bool gp__core_place_job(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *fits, bool commit) {
  bool ok = false;
  if (r->tasks == 1) {
    ok = gp__core_fit_task(c, r, &fits[0]);
    if (ok) gp__core_take(c, r, &fits[0]);
  } else {
    if (r->kind == GP__R_WHOLE && c->fleet->n_blocks > 0) {
      int cand[GP__MAX_GANG_BLOCKS];
      int n = candidate_blocks(c, r, cand);
      for (int k = 0; k < n && !ok; k++) ok = place_in_block(c, r, cand[k], fits);
    }
    if (!ok) {
      int t = 0;
      for (; t < r->tasks; t++) {
        if (!gp__core_fit_task(c, r, &fits[t])) break;
        gp__core_take(c, r, &fits[t]);
      }
      if (t < r->tasks) rollback(c, r, fits, t);
      else ok = true;
    }
  }
  if (ok && !commit) rollback(c, r, fits, r->tasks);
  return ok;
}
