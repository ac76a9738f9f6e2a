/* SPDX-License-Identifier: Apache-2.0 */
/* Shared GPUs on one node (shared.c has the fleet-wide search and dynamic MIG): where on
 * node `node` a fraction or memory share goes (the sharing policy of core/share scores its
 * shared GPUs; else a timeslice replica), which free MIG instance a MIG task takes, and the
 * fullest timeslice GPU with a free replica. The node-level half of gp__core_node_fit
 * (node_fit.c), so it sits below the searches that call that. */
#include <string.h>

#include "core/shared_int.h"

static int64_t gpu_mem_of(const gp_node *n, int g) {
  return n->gpus && n->gpus[g].mem_mib > 0 ? n->gpus[g].mem_mib : n->gpu_mem_mib;
}

/* The node as core/share sees it: free milli and memory of its shared GPUs. */
static void share_view(const gp__core_ctx *c, int node, gp_share_node *sn) {
  const gp_node *n = &c->view->nodes[node];
  const gp__core_node *s = &c->nodes[node];
  memset(sn, 0, sizeof *sn);
  sn->model = n->model;
  sn->n_gpus = n->n_gpus;
  sn->cpu_free_milli = s->cpu_free;
  sn->mem_free_mib = s->mem_free;
  for (int g = 0; g < n->n_gpus; g++) {
    bool shared = (s->share_ok >> g & 1) && (!n->gpus || n->gpus[g].mode == GP_SHARE_SHARED);
    if (!shared) continue;
    int k = s->gpu_base + g;
    int fm = GP_GPU_MILLI - c->fleet->gpu_used[k];
    sn->gpu_free_milli[g] = fm > 0 ? fm : 0;
    int64_t mem = gpu_mem_of(n, g) - c->fleet->gpu_mem_used[k];
    sn->gpu_free_mem_mib[g] = mem > 0 ? mem : 0;
  }
}

/* The milli a request takes on this node's GPUs: its fraction, or its memory share of the
 * node's GPU model (core/share's rounding); GP_GPU_MILLI + 1 when it cannot fit one GPU. */
static int milli_for(const gp__core_ctx *c, const gp__core_req *r, int node) {
  if (r->milli > 0) return r->milli;
  int milli = 0;
  if (gp_share_milli_for_mem(r->gpu_mem, c->view->nodes[node].gpu_mem_mib, &milli, NULL) != 0)
    return GP_GPU_MILLI + 1;
  return milli;
}

int gp__core_fullest_replica(const gp__core_ctx *c, const gp__core_req *r, int node, int *ret_free) {
  const gp_node *n = &c->view->nodes[node];
  const gp__core_node *s = &c->nodes[node];
  if (!n->gpus) return -1;
  int best = -1, best_free = 0;
  for (int g = 0; g < n->n_gpus; g++) {
    if (!(s->share_ok >> g & 1) || n->gpus[g].mode != GP_SHARE_TIMESLICE) continue;
    if (gpu_mem_of(n, g) < r->min_gpu_mem) continue;
    int fr = n->gpus[g].timeslice_replicas - c->fleet->gpu_used[s->gpu_base + g];
    if (fr > 0 && (best < 0 || fr < best_free)) {
      best = g;
      best_free = fr;
    }
  }
  *ret_free = best_free;
  return best;
}

/* A fraction on a timeslice GPU: one replica; the fullest GPU with a free replica. */
static bool fit_timeslice(gp__core_ctx *c, const gp__core_req *r, int node, gp__core_fit *f) {
  int best_free;
  int best = gp__core_fullest_replica(c, r, node, &best_free);
  if (best < 0) return false;
  f->node = node;
  f->mask = (uint32_t)1 << best;
  f->milli = r->milli > 0 ? r->milli : milli_for(c, r, node);
  if (f->milli > 999) f->milli = 999;
  f->gpu_mem = 0;
  f->mig = -1;
  return true;
}

static bool fit_mig(gp__core_ctx *c, const gp__core_req *r, int node, gp__core_fit *f) {
  const gp_node *n = &c->view->nodes[node];
  const gp__core_node *s = &c->nodes[node];
  if (!n->gpus) return false;
  for (int g = 0; g < n->n_gpus; g++) {
    if (!(s->mig_ok >> g & 1) || (c->place->sh && c->place->sh->planned[s->gpu_base + g])) continue;
    int inst = gp_mig_find_free(n->gpus[g].mig, n->gpus[g].n_mig, c->fleet->gpu_mig_busy[s->gpu_base + g],
                                r->mig_profile);
    if (inst < 0) continue;
    f->node = node;
    f->mask = (uint32_t)1 << g;
    f->milli = 0;
    f->gpu_mem = 0;
    f->mig = inst;
    return true;
  }
  return false;
}

bool gp__core_node_fit_shared(gp__core_ctx *c, const gp__core_req *r, int node, gp__core_fit *f) {
  if (r->kind == GP__R_MIG) return fit_mig(c, r, node, f);
  gp_share_node sn;
  share_view(c, node, &sn);
  gp_share_req sr = {.n_gpus = 1, .gpu_milli = milli_for(c, r, node), .gpu_mem_mib = r->gpu_mem,
                     .cpu_milli = r->cpu, .mem_mib = r->mem};
  if (sr.gpu_milli <= GP_GPU_MILLI) {
    gp_share_ctx sc = {.policy = c->pol->share, .mix = c->place->sh ? c->place->sh->mix : NULL,
                       .seed = c->pol->seed, .round = c->place->share_round, .tie = GP_SHARE_TIE_FIRST};
    if (!sc.mix && (sc.policy == GP_SHARE_POLICY_FGD || sc.policy == GP_SHARE_POLICY_GPOOL))
      sc.policy = GP_SHARE_POLICY_BESTFIT;
    gp_share_choice ch;
    if (r->min_gpu_mem > 0)
      for (int g = 0; g < sn.n_gpus; g++)
        if (gpu_mem_of(&c->view->nodes[node], g) < r->min_gpu_mem) sn.gpu_free_milli[g] = 0;
    if (gp_share_score(&sc, &sn, &sr, &ch, NULL) == 0 && ch.fits && ch.gpu_mask) {
      f->node = node;
      f->mask = ch.gpu_mask;
      f->milli = sr.gpu_milli;
      /* A fraction reserves the same share of the GPU's memory, so the agent can cap it. */
      f->gpu_mem = r->gpu_mem > 0 ? r->gpu_mem
                                  : gpu_mem_of(&c->view->nodes[node], __builtin_ctz(ch.gpu_mask)) *
                                        sr.gpu_milli / GP_GPU_MILLI;
      f->mig = -1;
      f->score = ch.score;
      return true;
    }
  }
  if (fit_timeslice(c, r, node, f)) {
    f->score = -1e300; /* only when no shared GPU fits */
    return true;
  }
  return false;
}
