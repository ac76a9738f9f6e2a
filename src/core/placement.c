/* SPDX-License-Identifier: Apache-2.0 */
/* Placement of one task: the choice of node through the free-capacity index, each
 * candidate judged by node_fit.c (the filters: node up, GPU healthy, GPU model, minimum GPU
 * memory, CPU, host memory, node labels, capacity type, reserved pools, reservations; and
 * the GPUs it would take there): bin-packing scans buckets upwards from the request, so
 * the first node found is the most used one that fits; spread scans downwards. Among the
 * nodes of one bucket level, one holding the job's container image and model comes first,
 * then one holding either. A spread request (a service's replica) on a fleet with racks
 * (topology.block labels) goes to the emptiest rack first, then its emptiest node, so a
 * rack lost takes few replicas; there too the image and model break a tie. Requests for
 * shared GPUs search shared.c's nodes instead. And the start a placement records. */
#include <stdlib.h>
#include <string.h>

#include "core/guarantee.h"
#include "core/place.h"
#include "core/spot.h"

/* Scans bucket (group, level) for its lowest-index node that passes the filters. */
static int scan_bucket(gp__core_ctx *c, const gp__core_req *r, int group, int level, gp__core_fit *f) {
  if (!gp__core_index_count(&c->fleet->ix, group, level)) return -1;
  const int *members = c->fleet->ix.members + c->fleet->ix.group_start[group];
  for (int pos = gp__core_index_next(&c->fleet->ix, group, level, 0); pos >= 0;
       pos = gp__core_index_next(&c->fleet->ix, group, level, pos + 1))
    if (gp__core_node_fit(c, r, members[pos], 0, 0, 0, f)) return members[pos];
  return -1;
}

/* Does node `node` hold hash h (its sorted gp_node.images: images and models)? */
static bool node_holds(const gp__core_ctx *c, int node, uint64_t h) {
  const gp_node *n = &c->view->nodes[node];
  int lo = 0, hi = n->n_images;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (n->images[mid] < h) lo = mid + 1;
    else if (n->images[mid] > h) hi = mid;
    else return true;
  }
  return false;
}

/* How many of the request's image and model node `node` holds (0..2). */
static int node_pref(const gp__core_ctx *c, int node, const gp__core_req *r) {
  return (r->image && node_holds(c, node, r->image)) + (r->model && node_holds(c, node, r->model));
}

/* scan_bucket, but only nodes that hold at least `want` of the request's image and model. */
static int scan_bucket_pref(gp__core_ctx *c, const gp__core_req *r, int group, int level, int want,
                            gp__core_fit *f) {
  if (!gp__core_index_count(&c->fleet->ix, group, level)) return -1;
  const int *members = c->fleet->ix.members + c->fleet->ix.group_start[group];
  for (int pos = gp__core_index_next(&c->fleet->ix, group, level, 0); pos >= 0;
       pos = gp__core_index_next(&c->fleet->ix, group, level, pos + 1))
    if (node_pref(c, members[pos], r) >= want && gp__core_node_fit(c, r, members[pos], 0, 0, 0, f))
      return members[pos];
  return -1;
}

/* The best node at one level over the request's GPU models: lowest view index wins, after
 * a node holding the job's image and model, then one holding either (pulling an image or
 * loading a model into a cache costs minutes; the nodes of one level are equal to the
 * placement policy, so this changes nothing for jobs with neither). */
static bool scan_level(gp__core_ctx *c, const gp__core_req *r, int slot, int level, gp__core_fit *f) {
  int stride = c->fleet->n_models + 1, best = -1;
  gp__core_fit tmp;
  int nm = r->n_models < 0 ? c->fleet->n_models + (r->kind == GP__R_CPU) : r->n_models;
  for (int want = (r->image != 0) + (r->model != 0); want >= 0 && best < 0; want--) {
    for (int k = 0; k < nm; k++) {
      int m = r->n_models < 0 ? k : r->models[k];
      int node = want > 0 ? scan_bucket_pref(c, r, slot * stride + m, level, want, &tmp)
                          : scan_bucket(c, r, slot * stride + m, level, &tmp);
      if (node >= 0 && (best < 0 || node < best)) {
        best = node;
        *f = tmp;
      }
    }
  }
  return best >= 0;
}

/* Whether (rack, free, pref) ranks above (best_rack, best_free, best_pref) for a spread. */
static bool spread_better(int rack, int fr, int pref, int best_rack, int best_free, int best_pref) {
  if (rack != best_rack) return rack > best_rack;
  if (fr != best_free) return fr > best_free;
  return pref > best_pref;
}

/* A spread request's node among pool slot `slot` when the fleet has racks: the node in the
 * rack with the most free GPUs (a node with no rack label is a rack of its own), then the
 * node with the most free GPUs, then one holding more of the job's image and model, then
 * the lowest index. The free-capacity index has no rack dimension, so this scans the nodes
 * once; spread requests are a service's replicas, a few per step. */
static bool fit_spread_racks(gp__core_ctx *c, const gp__core_req *r, int slot, gp__core_fit *f) {
  int best = -1, best_rack = 0, best_free = 0, best_pref = 0;
  gp__core_fit tmp;
  for (int node = 0; node < c->view->n_nodes; node++) {
    const gp__core_node *s = &c->nodes[node];
    int fr = gp__core_popc(s->free);
    if (s->pool + 1 != slot || fr < r->gpus) continue;
    int rack = s->block >= 0 ? c->fleet->block_free[s->block] : fr;
    int pref = node_pref(c, node, r);
    if (best >= 0 && !spread_better(rack, fr, pref, best_rack, best_free, best_pref)) continue;
    if (!gp__core_node_fit(c, r, node, 0, 0, 0, &tmp)) continue;
    best = node;
    best_rack = rack;
    best_free = fr;
    best_pref = pref;
    *f = tmp;
  }
  return best >= 0;
}

bool gp__core_fit_task(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *f) {
  if (r->kind == GP__R_FRACTION || r->kind == GP__R_MIG) return gp__core_fit_shared(c, r, f);
  int need = r->gpus;
  for (int si = 0; si < r->n_slots && r->fit_kind != GP__FIT_REPLICA; si++) {
    int slot = r->slots[si];
    if (c->view->jobs[r->job].req.spread && c->fleet->n_blocks > 0 && r->kind == GP__R_WHOLE) {
      if (fit_spread_racks(c, r, slot, f)) return true;
    } else if (c->pol->placement == GP_PLACE_SPREAD || c->view->jobs[r->job].req.spread) {
      for (int l = GP_MAX_NODE_GPUS; l >= need; l--)
        if (c->fleet->ix.level_count[l] && scan_level(c, r, slot, l, f)) return true;
    } else {
      for (int l = need; l <= GP_MAX_NODE_GPUS; l++)
        if (c->fleet->ix.level_count[l] && scan_level(c, r, slot, l, f)) return true;
    }
  }
  /* Exclusive and shared GPUs first, in every pool slot; then a timeslice replica. Only a
   * one-GPU task: N replicas of one GPU are not N GPUs (docs/internals/scheduler.md). */
  if (r->gpus == 1 && c->fleet->has_timeslice && r->fit_kind != GP__FIT_WHOLE)
    return gp__core_fit_replica(c, r, f);
  return false;
}

void gp__core_start_job(gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *fits) {
  gp__core_job *ji = &c->jobs[r->job];
  gp_plan_start *st = gp__core_vec_push(&c->place->starts, sizeof *st);
  st->job = r->job;
  st->n_placements = r->tasks;
  st->placements = gp_arena_alloc(c->arena, (size_t)r->tasks * sizeof *st->placements);
  for (int t = 0; t < r->tasks; t++) {
    gp_placement *p = &st->placements[t];
    p->node = fits[t].node;
    p->gpu_mask = fits[t].mask;
    p->gpu_milli = fits[t].mask ? fits[t].milli : 0;
    p->gpu_mem_mib = fits[t].gpu_mem;
    p->mig_instance = fits[t].mig;
  }
  gp__core_job_mut(c, r->job)->stat = GP__J_STARTED;
  if (r->kind == GP__R_WHOLE) {
    /* A task on a time-sliced replica holds 1/N of a GPU, and that is what it counts as
     * once it runs (jobs.c reads its placement): count the same now, so the queue's
     * allocation does not jump between this step and the next. */
    double held = 0;
    bool replica = false;
    for (int t = 0; t < r->tasks; t++) {
      int milli = fits[t].milli > 0 && fits[t].milli < GP_GPU_MILLI ? fits[t].milli : GP_GPU_MILLI;
      replica |= milli < GP_GPU_MILLI;
      held += gp__core_popc(fits[t].mask) * (milli / (double)GP_GPU_MILLI);
    }
    if (replica) ji->gpus = held;
  }
  if (ji->leaf >= 0) gp__core_queue_add_alloc(c, ji->leaf, ji->gpus);
  gp__core_spot_started(c, r, fits);
  if (!ji->preemptible) gp__core_guard_started(c, ji->leaf, ji->gpus);
  /* Remember which nodes it is on, once per node, for backfill's release times. */
  if (!c->place->started_head) {
    c->place->started_head = gp_xmalloc(((size_t)c->view->n_nodes + 1) * sizeof(int));
    for (int i = 0; i < c->view->n_nodes; i++) c->place->started_head[i] = -1;
  }
  for (int t = 0; t < r->tasks; t++) {
    bool dup = false;
    for (int u = 0; u < t && !dup; u++) dup = fits[u].node == fits[t].node;
    if (dup) continue;
    size_t e = c->place->started_n++;
    if (e >= c->place->started_cap) {
      c->place->started_cap = c->place->started_cap ? c->place->started_cap * 2 : 256;
      c->place->started_next = gp_xrealloc(c->place->started_next, c->place->started_cap * sizeof(int));
      c->place->started_start = gp_xrealloc(c->place->started_start, c->place->started_cap * sizeof(int));
    }
    c->place->started_next[e] = c->place->started_head[fits[t].node];
    c->place->started_start[e] = (int)c->place->starts.n - 1;
    c->place->started_head[fits[t].node] = (int)e;
  }
}

void gp__core_place_done(gp__core_ctx *c) {
  gp__core_shared_done(c);
  free(c->place->started_head);
  free(c->place->started_next);
  free(c->place->started_start);
  free(c->place->starts.items);
  free(c->place->migs.items);
}
