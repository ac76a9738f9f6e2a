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
 * requests scan that list rather than the whole-GPU index. This file holds the step's
 * shared-GPU state, that scan (each node judged by gp__core_node_fit, node_fit.c, whose
 * shared-GPU half is shared_node.c), the replicas for whole-GPU tasks and dynamic MIG. */
#include <stdlib.h>
#include <string.h>

#include "core/shared_int.h"

static bool static_ok(gp__core_ctx *c, const gp__core_req *r, int node) {
  gp__core_req rr = *r;
  rr.kind = GP__R_WHOLE; /* filters only */
  rr.gpus = 0;
  rr.cpu = rr.mem = 0;
  gp__core_fit f;
  return gp__core_node_fit(c, &rr, node, 0, 0, 0, &f);
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
      int g = gp__core_fullest_replica(c, r, node, &fr);
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
