/* SPDX-License-Identifier: Apache-2.0 */
/* One task on one node (place.h): the request a job's placement reads (gp__core_req), the
 * filters every kind of request passes (node up, --ntasks-per-node, an exact node count,
 * capacity type and spot settings, GPU model, pool slot, labels, --exclusive, advance
 * reservations), and what the task would take there: whole GPUs here (free, not promised
 * to a backfill reservation it would overrun, enough memory, one NVLink domain when
 * possible), fractions, time-slices and MIG instances through shared_node.c. Every search
 * (placement.c's index, gang.c's blocks, shared.c's shared nodes, preemption's walks) asks
 * this, and this asks nothing of them. */
#include <string.h>

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

int gp__core_gang_nodes_need(const gp__core_req *r, int node) {
  int here = 0, left = r->tasks - r->n_placed;
  for (int t = 0; t < r->n_placed; t++) here += r->placed[t].node == node;
  if (here > 0) return left <= r->nodes - r->n_open ? -1 : 1; /* the rest must open nodes */
  if (r->n_open >= r->nodes) return -1;
  /* Optimistic: the nodes opened so far take up to the bound each, and so do those left. */
  int cap = r->per_node > 0 ? r->per_node : r->tasks;
  int64_t need = (int64_t)left - (int64_t)(r->nodes - r->n_open - 1) * cap - ((int64_t)r->n_open * cap - r->n_placed);
  return need > 1 ? (int)need : 1;
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
