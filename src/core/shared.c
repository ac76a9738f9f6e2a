/* SPDX-License-Identifier: Apache-2.0 */
/* Requests that do not take whole GPUs (DESIGN.md §3):
 *   fractions and memory shares go to GPUs in `shared` mode, scored node by node by the
 *   sharing policy of core/share (policy.share: gpool, FGD, BestFit, ...), and to `timeslice`
 *   GPUs (one replica per task, fullest GPU first) when no shared GPU fits;
 *   whole-GPU tasks of one GPU take a timeslice replica the same way when no exclusive or
 *   shared GPU fits them (placement.c asks, gp__core_fit_replica), like the Kubernetes device
 *   plugin's time-slicing; the placement's gpu_milli is then 1000 / replicas;
 *   MIG requests take a free instance of their profile on a GPU in `mig` mode; when none is
 *   free and policy.dynamic_mig is on, an idle MIG GPU of a model that offers the profile
 *   is re-partitioned (core/mig's layout chooser, fed with the step's pending MIG demand)
 *   and the plan says so; the job waits for the new instances (reason Resources).
 * Candidates are the up nodes that have such GPUs (a short list on most fleets), so these
 * requests scan that list rather than the whole-GPU index. */
#include <stdlib.h>
#include <string.h>

#include "core/mig.h"
#include "core/place.h"
#include "core/share/share.h"

struct gp__core_shared {
  int *nodes, n_nodes;       /* up nodes with shared, timeslice or MIG GPUs, view order */
  gp_share_mix *mix;         /* FGD / gpool policies: the pending fractional mix */
  gp_mig_demand *demand;     /* pending MIG demand by profile */
  int n_demand;
  uint8_t *planned;          /* per GPU: 1 = being re-partitioned in this plan */
  struct planned_inst { int node; const char *profile; } *insts; /* unclaimed new instances */
  size_t n_insts, cap_insts;
};

static bool static_ok(gp__core_ctx *c, const gp__core_req *r, int node) {
  gp__core_req rr = *r;
  rr.kind = GP__R_WHOLE; /* filters only */
  rr.gpus = 0;
  rr.cpu = rr.mem = 0;
  gp__core_fit f;
  return gp__core_node_fit(c, &rr, node, 0, 0, 0, &f);
}

static int64_t gpu_mem_of(const gp_node *n, int g) {
  return n->gpus && n->gpus[g].mem_mib > 0 ? n->gpus[g].mem_mib : n->gpu_mem_mib;
}

void gp__core_shared_setup(gp__core_ctx *c) {
  /* Classification saw every eligible job: without fractional, MIG, CPU-only or
   * replica-able ones (other_eligible) there is nothing to look for. */
  if (!c->cls->other_eligible) return;
  bool any = false;
  for (int j = 0; j < c->view->n_jobs && !any; j++)
    any = c->jobs[j].stat == GP__J_ELIGIBLE &&
          (c->jobs[j].kind == GP__R_FRACTION || c->jobs[j].kind == GP__R_MIG ||
           (c->jobs[j].kind == GP__R_WHOLE && c->fleet->has_timeslice &&
            c->view->jobs[j].req.gpus_per_task == 1));
  if (!any) return;
  struct gp__core_shared *sh = c->place->sh = gp_xcalloc(1, sizeof *sh);
  sh->nodes = gp_xmalloc(((size_t)c->view->n_nodes + 1) * sizeof(int));
  for (int i = 0; i < c->view->n_nodes; i++)
    if (c->nodes[i].up && (c->nodes[i].share_ok | c->nodes[i].mig_ok)) sh->nodes[sh->n_nodes++] = i;
  sh->planned = gp_xcalloc((size_t)c->fleet->n_gpus_total + 1, 1);
  bool want_mix = c->pol->share == GP_SHARE_POLICY_FGD || c->pol->share == GP_SHARE_POLICY_GPOOL;
  if (want_mix) sh->mix = gp_share_mix_new();
  size_t dcap = 0;
  for (int j = 0; j < c->view->n_jobs; j++) {
    const gp__core_job *ji = &c->jobs[j];
    if (ji->stat != GP__J_ELIGIBLE) continue;
    const gp_request *rq = &c->view->jobs[j].req;
    if (ji->kind == GP__R_FRACTION && sh->mix) {
      int milli = rq->gpu_milli > 0 ? rq->gpu_milli
                                    : (int)((ji->gpus / rq->tasks) * GP_GPU_MILLI + 0.5);
      if (milli < 1) milli = 1;
      if (milli > 999) milli = 999;
      gp_share_req sr = {.n_gpus = 1, .gpu_milli = milli, .cpu_milli = rq->cpu_milli,
                         .mem_mib = rq->mem_mib, .n_models = rq->n_gpu_models,
                         .models = rq->gpu_models};
      gp_share_mix_add(sh->mix, &sr, rq->tasks, NULL); /* past 4096 shapes: the rest ignored */
    } else if (ji->kind == GP__R_MIG) {
      int d = 0;
      while (d < sh->n_demand && strcmp(sh->demand[d].profile, rq->mig_profile) != 0) d++;
      if (d == sh->n_demand) {
        gp_xgrow((void **)&sh->demand, &dcap, (size_t)d + 1, sizeof *sh->demand);
        sh->demand[sh->n_demand++] = (gp_mig_demand){rq->mig_profile, 0};
      }
      sh->demand[d].count += rq->tasks;
    }
  }
  if (sh->mix) {
    /* The shared GPUs per model, which gpool weighs model-limited demand against. */
    for (int k = 0; k < sh->n_nodes; k++) {
      const gp_node *n = &c->view->nodes[sh->nodes[k]];
      int shared = 0;
      for (int g = 0; g < n->n_gpus; g++) shared += c->nodes[sh->nodes[k]].share_ok >> g & 1;
      if (shared && n->model && n->model[0]) gp_share_mix_set_capacity(sh->mix, n->model, shared, NULL);
    }
    gp_share_mix_finish(sh->mix, 100, NULL);
  }
}

void gp__core_shared_done(gp__core_ctx *c) {
  struct gp__core_shared *sh = c->place->sh;
  if (!sh) return;
  free(sh->nodes);
  gp_share_mix_free(sh->mix);
  free(sh->demand);
  free(sh->planned);
  free(sh->insts);
  free(sh);
  c->place->sh = NULL;
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

/* The node's fullest timeslice GPU with a free replica for r, or -1; *ret_free: its free
 * replicas. */
static int fullest_replica(const gp__core_ctx *c, const gp__core_req *r, int node, int *ret_free) {
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
  int best = fullest_replica(c, r, node, &best_free);
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

/* Dynamic MIG: re-partition an idle MIG GPU for pending demand. Returns true when a
 * re-partition that serves r was planned. */
static bool plan_repartition(gp__core_ctx *c, const gp__core_req *r) {
  struct gp__core_shared *sh = c->place->sh;
  for (int si = 0; si < r->n_slots; si++) {
    for (int k = 0; k < sh->n_nodes; k++) {
      int node = sh->nodes[k];
      const gp_node *n = &c->view->nodes[node];
      const gp__core_node *s = &c->nodes[node];
      if (s->pool + 1 != r->slots[si] || !n->gpus || !static_ok(c, r, node)) continue;
      for (int g = 0; g < n->n_gpus; g++) {
        int gi = s->gpu_base + g;
        if (!(s->mig_ok >> g & 1) || c->fleet->gpu_mig_busy[gi] || sh->planned[gi]) continue;
        gp_mig_layout lay;
        if (gp_mig_plan_layout(n->model, sh->demand, sh->n_demand, &lay, NULL) != 0) continue;
        bool serves = false;
        for (int i = 0; i < lay.n && !serves; i++)
          serves = strcmp(lay.profile[i]->name, r->mig_profile) == 0;
        if (!serves) continue;
        sh->planned[gi] = 1;
        c->fleet->use_gen++; /* placement reads `planned` */
        gp_plan_mig *pm = gp__core_vec_push(&c->place->migs, sizeof *pm);
        pm->node = node;
        pm->gpu = g;
        pm->n_instances = lay.n;
        const char **profiles = gp_arena_alloc(c->arena, (size_t)lay.n * sizeof(char *));
        int *slots = gp_arena_alloc(c->arena, (size_t)lay.n * sizeof(int));
        bool claimed = false;
        for (int i = 0; i < lay.n; i++) {
          profiles[i] = gp_arena_strdup(c->arena, lay.profile[i]->name);
          slots[i] = lay.start_slot[i];
          /* Every new instance but the one r takes waits for another pending job. */
          if (!claimed && strcmp(profiles[i], r->mig_profile) == 0) {
            claimed = true;
          } else {
            gp_xgrow((void **)&sh->insts, &sh->cap_insts, sh->n_insts + 1, sizeof *sh->insts);
            sh->insts[sh->n_insts++] = (struct planned_inst){node, profiles[i]};
          }
          /* Demand this layout serves is no longer pending for later GPUs. */
          for (int d = 0; d < sh->n_demand; d++)
            if (strcmp(sh->demand[d].profile, lay.profile[i]->name) == 0 && sh->demand[d].count > 0) {
              sh->demand[d].count--;
              break;
            }
        }
        pm->profiles = profiles;
        pm->start_slots = slots;
        return true;
      }
    }
  }
  return false;
}

bool gp__core_fit_shared(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *f) {
  if (!c->place->sh) return false;
  c->place->share_round++;
  for (int si = 0; si < r->n_slots; si++) {
    int best = -1;
    gp__core_fit tmp;
    for (int k = 0; k < c->place->sh->n_nodes; k++) {
      int node = c->place->sh->nodes[k];
      if (c->nodes[node].pool + 1 != r->slots[si]) continue;
      if (!gp__core_node_fit(c, r, node, 0, 0, 0, &tmp)) continue;
      if (best < 0 || tmp.score > f->score) {
        best = node;
        *f = tmp;
        if (r->kind == GP__R_MIG) break; /* first free instance in view order */
      }
    }
    if (best >= 0) return true;
  }
  return false;
}

bool gp__core_fit_replica(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *f) {
  if (!c->place->sh || r->kind != GP__R_WHOLE || r->gpus != 1) return false;
  for (int si = 0; si < r->n_slots; si++) {
    /* The fullest GPU of the slot's nodes (fewest free replicas), first in view order on
     * ties: replicas fill one GPU before the next, as fractions do. */
    int best = -1, best_g = -1, best_free = 0;
    for (int k = 0; k < c->place->sh->n_nodes; k++) {
      int node = c->place->sh->nodes[k];
      const gp__core_node *s = &c->nodes[node];
      if (s->pool + 1 != r->slots[si] || r->cpu > s->cpu_free || r->mem > s->mem_free) continue;
      int fr;
      int g = fullest_replica(c, r, node, &fr);
      if (g < 0 || (best >= 0 && fr >= best_free) || !gp__core_node_static_ok(c, r, node)) continue;
      best = node;
      best_g = g;
      best_free = fr;
    }
    if (best >= 0) {
      int replicas = c->view->nodes[best].gpus[best_g].timeslice_replicas;
      int milli = replicas > 0 ? GP_GPU_MILLI / replicas : GP_GPU_MILLI;
      f->node = best;
      f->mask = (uint32_t)1 << best_g;
      f->milli = milli < 1 ? 1 : milli;
      f->gpu_mem = 0;
      f->mig = -1;
      f->score = 0;
      return true;
    }
  }
  return false;
}

/* An instance of a re-partition planned in this step that r may take. */
static bool claim_planned(gp__core_ctx *c, const gp__core_req *r) {
  struct gp__core_shared *sh = c->place->sh;
  for (size_t i = 0; i < sh->n_insts; i++) {
    if (strcmp(sh->insts[i].profile, r->mig_profile) != 0) continue;
    int node = sh->insts[i].node;
    bool slot = false;
    for (int k = 0; k < r->n_slots && !slot; k++) slot = c->nodes[node].pool + 1 == r->slots[k];
    if (!slot || !static_ok(c, r, node)) continue;
    sh->insts[i] = sh->insts[--sh->n_insts];
    return true;
  }
  return false;
}

bool gp__core_mig_wait(gp__core_ctx *c, gp__core_req *r) {
  if (!c->place->sh || c->jobs[r->job].kind != GP__R_MIG || !c->pol->dynamic_mig) return false;
  gp__core_req_need(c, r);
  if (r->tasks != 1) return false;
  return claim_planned(c, r) || plan_repartition(c, r);
}
