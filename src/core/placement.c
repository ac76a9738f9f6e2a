/* SPDX-License-Identifier: Apache-2.0 */
/* Placement of one task: the filters (node up, GPU healthy, GPU model, minimum GPU memory,
 * CPU, host memory, node labels, capacity type (the job's allow_spot and its queue's spot
 * settings, spot.c), reserved pools, backfill reservations), the
 * choice of GPUs inside a node (one NVLink domain when possible) and the choice of node
 * through the free-capacity index: bin-packing scans buckets upwards from the request, so
 * the first node found is the most used one that fits; spread scans downwards. Among the
 * nodes of one bucket level, one holding the job's container image and model comes first,
 * then one holding either. A spread request (a service's replica) on a fleet with racks
 * (topology.block labels) goes to the emptiest rack first, then its emptiest node, so a
 * rack lost takes few replicas; there too the image and model break a tie. */
#include <stdlib.h>
#include <string.h>

#include "core/guarantee.h"
#include "core/place.h"
#include "core/reservation.h"
#include "core/spot.h"

void gp__core_req_init(gp__core_ctx *c, int j, gp__core_req *r) {
  const gp_job *job = &c->view->jobs[j];
  const gp__core_job *ji = &c->jobs[j];
  memset(r, 0, sizeof *r);
  r->job = j;
  r->kind = ji->kind;
  r->tasks = job->req.tasks;
  r->per_node = job->req.max_tasks_per_node > 0 && job->req.max_tasks_per_node < r->tasks
                    ? job->req.max_tasks_per_node : 0;
  r->nodes = gp__core_exact_nodes(&job->req);
  r->gpus = ji->kind == GP__R_WHOLE ? job->req.gpus_per_task : 0;
  r->milli = job->req.gpu_milli;
  r->gpu_mem = job->req.gpu_mem_mib;
  r->min_gpu_mem = job->req.min_gpu_mem_mib;
  r->cpu = job->req.cpu_milli;
  r->mem = job->req.mem_mib;
  r->mig_profile = job->req.mig_profile;
  if (job->req.n_gpu_models <= 0) {
    r->n_models = -1;
  } else {
    for (int i = 0; i < job->req.n_gpu_models && r->n_models < 8; i++) {
      int m = gp__core_model_id(c, job->req.gpu_models[i]);
      bool dup = false;
      for (int k = 0; k < r->n_models && !dup; k++) dup = r->models[k] == m;
      if (m >= 0 && !dup) r->models[r->n_models++] = m;
    }
  }
  /* Pool slots: the queue's own pool first, then the general fleet, then pools that lend
   * to preemptible borrowers. */
  int own = ji->leaf >= 0 ? c->fleet->queue_pool[ji->leaf] : -1;
  if (own >= 0) r->slots[r->n_slots++] = own + 1;
  r->slots[r->n_slots++] = 0;
  for (int p = 0; p < c->view->n_pools && r->n_slots < 16; p++)
    if (p != own && c->view->pools[p].lend && ji->preemptible) r->slots[r->n_slots++] = p + 1;
  r->end = ji->limit > 0 && c->now < GP__NEVER - ji->limit ? c->now + ji->limit : GP__NEVER;
  r->honor_resv = true;
  r->image = job->req.image;
  r->model = job->req.model;
  gp__core_spot_req(c, r);
  r->ready = true;
}

void gp__core_req_need(gp__core_ctx *c, gp__core_req *r) {
  if (!r->ready) gp__core_req_init(c, r->job, r);
}

static uint32_t lowest_bits(uint32_t m, int k) {
  uint32_t out = 0;
  for (; m && k > 0; k--) {
    uint32_t b = m & -m;
    out |= b;
    m &= m - 1;
  }
  return out;
}

uint32_t gp__core_choose_gpus(const gp__core_ctx *c, int node, uint32_t avail, int want) {
  const gp__core_node *s = &c->nodes[node];
  if (want <= 0) return 0;
  if (!s->n_dom) return lowest_bits(avail, want);
  const uint32_t *dom = c->fleet->dom + s->dom_base;
  /* The fullest domain that still fits the whole request keeps big domains free. */
  int best = -1, best_cnt = GP_MAX_NODE_GPUS + 1;
  for (int d = 0; d < s->n_dom; d++) {
    int cnt = gp__core_popc(dom[d] & avail);
    if (cnt >= want && cnt < best_cnt) {
      best = d;
      best_cnt = cnt;
    }
  }
  if (best >= 0) return lowest_bits(dom[best] & avail, want);
  /* Span as few domains as possible: largest first, then GPUs outside any domain. */
  uint32_t out = 0, used_dom = 0;
  while (want > 0) {
    int pick = -1, pick_cnt = 0;
    for (int d = 0; d < s->n_dom; d++) {
      if (used_dom & (1u << d)) continue;
      int cnt = gp__core_popc(dom[d] & avail);
      if (cnt > pick_cnt) {
        pick = d;
        pick_cnt = cnt;
      }
    }
    if (pick < 0) break;
    used_dom |= 1u << pick;
    uint32_t take = lowest_bits(dom[pick] & avail, want);
    out |= take;
    want -= gp__core_popc(take);
  }
  if (want > 0) out |= lowest_bits(avail & ~out, want);
  return out;
}

static bool model_ok(const gp__core_req *r, int model) {
  if (r->n_models < 0) return true;
  for (int k = 0; k < r->n_models; k++)
    if (r->models[k] == model) return true;
  return false;
}

static bool slot_ok(const gp__core_req *r, int pool) {
  for (int k = 0; k < r->n_slots; k++)
    if (r->slots[k] == pool + 1) return true;
  return false;
}

/* GPUs of node s whose memory is at least min. */
static uint32_t mem_ok_mask(const gp__core_ctx *c, int node, int64_t min) {
  const gp_node *n = &c->view->nodes[node];
  if (min <= 0) return ~(uint32_t)0;
  if (!c->nodes[node].mem_varies) return n->gpu_mem_mib >= min ? ~(uint32_t)0 : 0;
  uint32_t m = 0;
  for (int g = 0; g < n->n_gpus; g++) {
    int64_t mem = n->gpus[g].mem_mib > 0 ? n->gpus[g].mem_mib : n->gpu_mem_mib;
    if (mem >= min) m |= (uint32_t)1 << g;
  }
  return m;
}

/* --exclusive both ways: an exclusive job only on a node that holds no task but its own
 * gang's (those placed so far are taken already), and no job on a node that holds a task
 * of an exclusive one. A preemption simulation counts the tasks its victims free there
 * (r->freed_*): a higher-priority exclusive job may clear a node of preemptible ones. */
bool gp__core_node_excl_ok(const gp__core_ctx *c, const gp__core_req *r, int node) {
  const gp__core_node *s = &c->nodes[node];
  int tasks = s->tasks - r->freed_tasks, excl = s->excl - r->freed_excl;
  if (!c->view->jobs[r->job].req.exclusive) return excl <= 0;
  if (tasks <= 0) return true;
  int here = 0;
  for (int t = 0; t < r->n_placed; t++) here += r->placed[t].node == node;
  return tasks == here && excl == here;
}

/* Node-level filters shared by every kind of request. */
bool gp__core_node_static_ok(const gp__core_ctx *c, const gp__core_req *r, int node) {
  return gp__core_node_static_ok_any_excl(c, r, node) && gp__core_node_excl_ok(c, r, node);
}

bool gp__core_node_static_ok_any_excl(const gp__core_ctx *c, const gp__core_req *r, int node) {
  const gp_node *n = &c->view->nodes[node];
  const gp__core_node *s = &c->nodes[node];
  const gp_request *req = &c->view->jobs[r->job].req;
  if (!s->up) return false;
  if (r->per_node > 0 && r->n_placed >= r->per_node) {
    /* --ntasks-per-node: a node that holds that many of the gang's tasks takes no more. */
    int here = 0;
    for (int t = 0; t < r->n_placed; t++) here += r->placed[t].node == node;
    if (here >= r->per_node) return false;
  }
  if (r->nodes > 0 && gp__core_gang_nodes_need(r, node) < 0) return false;
  if (n->capacity == GP_CAP_SPOT && !req->allow_spot) return false;
  if (r->spot_deny && !gp__core_spot_node_ok(c, r, node)) return false;
  if (r->kind != GP__R_CPU && !model_ok(r, s->model)) return false;
  if (!slot_ok(r, s->pool)) return false;
  if (req->n_node_selector && !gp__core_node_has_labels(n, req->n_node_selector, req->node_selector))
    return false;
  if (c->ares && !r->ignore_ares && gp__core_ares_fence(c, r->job, r->end, node) >= 0) return false;
  return true;
}

bool gp__core_node_fit(gp__core_ctx *c, const gp__core_req *r, int node, uint32_t extra, int64_t extra_cpu,
                  int64_t extra_mem, gp__core_fit *f) {
  const gp__core_node *s = &c->nodes[node];
  if (r->cpu > s->cpu_free + extra_cpu || r->mem > s->mem_free + extra_mem) return false;
  if (!gp__core_node_static_ok(c, r, node)) return false;
  /* A node the gang opens must have room for its part of an exact node count. */
  int need = r->nodes > 0 ? gp__core_gang_nodes_need(r, node) : 1;
  if (need > 1 && ((int64_t)need * r->cpu > s->cpu_free + extra_cpu ||
                   (int64_t)need * r->mem > s->mem_free + extra_mem))
    return false;
  f->node = node;
  f->mask = 0;
  f->milli = GP_GPU_MILLI;
  f->gpu_mem = 0;
  f->mig = -1;
  if (r->kind == GP__R_CPU) return true;
  if (r->kind != GP__R_WHOLE) return gp__core_node_fit_shared(c, r, node, f);
  uint32_t avail = s->free | (extra & s->whole_ok);
  if (r->honor_resv && (s->resv & avail)) {
    for (uint32_t m = s->resv & avail; m; m &= m - 1) {
      int g = __builtin_ctz(m);
      gp_time until = c->fleet->gpu_resv_until[s->gpu_base + g];
      if (r->end > until) avail &= ~((uint32_t)1 << g);
      /* It ends in time now; started later, with its end later, it no longer would. */
      else if (until - r->end < GP__NEVER - 1 - c->now) gp__core_valid_by(c, c->now + (until - r->end) + 1);
    }
  }
  avail &= mem_ok_mask(c, node, r->min_gpu_mem);
  if (gp__core_popc(avail) < r->gpus * need) return false;
  f->mask = gp__core_choose_gpus(c, node, avail, r->gpus);
  return true;
}

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
