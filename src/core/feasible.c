/* SPDX-License-Identifier: Apache-2.0 */
/* Can a request ever run, and can it run on the nodes that are up now? Answers, per job:
 *   MODEL_UNKNOWN  it names GPU models and no node in the fleet has any of them   -> ended
 *   NEVER          no set of nodes in the fleet could hold it, whatever their state -> ended
 *   MODEL_DOWN     nodes of its model exist but none of them is up and healthy    -> pending
 *   DOWN           nodes that could hold it exist but not enough are up/healthy   -> pending
 *   OK
 * "Could hold it" ignores what is in use: it compares the request with each node's size
 * (GPU count and memory, CPU, host memory, labels, capacity type and the queue's refusal
 * of spot, pools). An empty fleet (no node registered yet) makes every job wait rather
 * than end. The scan stops
 * as soon as enough up nodes are found, and results are memoised per request shape
 * (shapes.c), so
 * 100,000 pending jobs of a few dozen shapes cost a few dozen scans. */
#include <stdlib.h>
#include <string.h>

#include "core/mig.h"
#include "core/spot.h"

static bool names_model(const gp_request *r, const char *model) {
  for (int i = 0; i < r->n_gpu_models; i++)
    if (model && strcmp(r->gpu_models[i], model) == 0) return true;
  return false;
}

/* May this job's queue use a node of pool p at all? */
static bool pool_allows(const gp__core_ctx *c, int j, int pool) {
  if (pool < 0) return true;
  int leaf = c->jobs[j].leaf;
  if (leaf >= 0 && c->fleet->queue_pool[leaf] == pool) return true;
  return c->view->pools[pool].lend && c->jobs[j].preemptible;
}

static bool mig_layout_has(const gp_gpu *g, const char *profile) {
  for (int k = 0; k < g->n_mig; k++)
    if (g->mig[k].profile && strcmp(g->mig[k].profile, profile) == 0) return true;
  return false;
}

/* Whether GPU g of node n could ever take part in a task of this request: its memory, its
 * MIG support; and how many one-GPU tasks it could take (its time-slice replicas). */
static int gpu_ever(const gp_node *n, int g, const gp_request *r, int kind) {
  const gp_gpu *gpu = n->gpus ? &n->gpus[g] : NULL;
  int64_t mem = gpu && gpu->mem_mib > 0 ? gpu->mem_mib : n->gpu_mem_mib;
  switch (kind) {
  case GP__R_WHOLE:
    if (mem < r->min_gpu_mem_mib) return 0;
    /* One-GPU tasks may take its replicas (placement.c, gp__core_fit_replica). */
    if (r->gpus_per_task == 1 && gpu && gpu->mode == GP_SHARE_TIMESLICE && gpu->timeslice_replicas > 1)
      return gpu->timeslice_replicas;
    return 1;
  case GP__R_FRACTION:
    return mem >= r->min_gpu_mem_mib && mem >= r->gpu_mem_mib;
  case GP__R_MIG: {
    const gp_mig_model *mm = gp_mig_model_find(n->model);
    return mm && gp_mig_profile_find(mm, r->mig_profile) ? 1 : 0;
  }
  default:
    return 0;
  }
}

/* GPU units (gpu_ever's) to task slots; CPU-only tasks take none. */
static int tasks_of(const gp_request *r, int kind, int units) {
  if (kind == GP__R_WHOLE) return units / r->gpus_per_task;
  return kind == GP__R_CPU ? r->tasks : units;
}

/* A node's task slots bounded by its CPU and host memory, when it reports them, and by the
 * gang's tasks per node. */
static int host_bound(const gp_node *n, const gp_request *r, int slots) {
  if (r->max_tasks_per_node > 0 && r->max_tasks_per_node < slots) slots = r->max_tasks_per_node;
  if (r->cpu_milli > 0 && n->cpu_milli > 0) {
    int64_t k = n->cpu_milli / r->cpu_milli;
    if (k < slots) slots = (int)k;
  }
  if (r->mem_mib > 0 && n->mem_mib > 0) {
    int64_t k = n->mem_mib / r->mem_mib;
    if (k < slots) slots = (int)k;
  }
  return slots;
}

/* Task slots node n could ever offer the request, whatever runs there: its size alone. */
int gp__core_ever_slots(const gp_node *n, const gp_request *r, int kind) {
  int units = 0;
  for (int g = 0; g < n->n_gpus; g++) units += gpu_ever(n, g, r, kind);
  return host_bound(n, r, tasks_of(r, kind, units));
}

/* Task slots node i offers the job: (ever, now), in one pass over its GPUs. */
static void node_slots(gp__core_ctx *c, int j, int i, int *ever, int *now) {
  const gp_node *n = &c->view->nodes[i];
  const gp__core_node *s = &c->nodes[i];
  const gp_request *r = &c->view->jobs[j].req;
  int kind = c->jobs[j].kind;
  int e = 0, w = 0;
  for (int g = 0; g < n->n_gpus; g++) {
    int k = gpu_ever(n, g, r, kind);
    if (!k) continue;
    e += k;
    const gp_gpu *gpu = n->gpus ? &n->gpus[g] : NULL;
    uint32_t bit = (uint32_t)1 << g;
    switch (kind) {
    case GP__R_WHOLE: /* k > 1: a time-sliced GPU's replicas, free while it shares */
      w += k > 1 ? ((s->share_ok & bit) ? k : 0) : (s->whole_ok & bit) != 0;
      break;
    case GP__R_FRACTION:
      w += (s->share_ok & bit) != 0;
      break;
    case GP__R_MIG:
      if ((s->mig_ok & bit) && (c->pol->dynamic_mig || (gpu && mig_layout_has(gpu, r->mig_profile))))
        w++;
      break;
    default:
      break;
    }
  }
  e = host_bound(n, r, tasks_of(r, kind, e));
  w = tasks_of(r, kind, w);
  if (w > e) w = e;
  *ever = e;
  *now = s->up ? w : 0;
}

int gp__core_exact_nodes(const gp_request *r) {
  return r->tasks > 1 && r->nodes > 0 && r->nodes <= r->tasks ? r->nodes : 0;
}

bool gp__core_nodes_hold(const int *slots, int n, int nodes, int tasks) {
  /* The `nodes` largest by a partial selection: n is a node's count of candidates and
   * `nodes` is small against it in practice; slots are at most a node's GPUs or tasks. */
  int64_t sum = 0;
  int taken = 0;
  for (int want = INT32_MAX; taken < nodes;) {
    int best = 0, count = 0;
    for (int i = 0; i < n; i++)
      if (slots[i] < want && slots[i] > best) best = slots[i];
    if (best <= 0) return false; /* fewer than `nodes` nodes offer a slot */
    for (int i = 0; i < n; i++) count += slots[i] == best;
    int k = count < nodes - taken ? count : nodes - taken;
    sum += (int64_t)k * best;
    taken += k;
    want = best;
  }
  return sum >= tasks;
}

/* Whether node i may hold tasks of job j at all: capacity type, pool, labels. */
static bool node_allowed(const gp__core_ctx *c, int j, int i) {
  const gp_request *r = &c->view->jobs[j].req;
  const gp_node *n = &c->view->nodes[i];
  if (n->capacity == GP_CAP_SPOT && gp__core_spot_refused(c, j)) return false;
  if (!pool_allows(c, j, c->nodes[i].pool)) return false;
  return !r->n_node_selector || gp__core_node_has_labels(n, r->n_node_selector, r->node_selector);
}

/* compute() for a gang held to one GPU model: the slots of each model are counted apart,
 * and the gang needs all its tasks within one. */
static int compute_gang(gp__core_ctx *c, int j, bool by_model) {
  const gp_request *r = &c->view->jobs[j].req;
  int nm = c->fleet->n_models, need_nodes = gp__core_exact_nodes(r);
  /* Per model: task slots ever and now, and the nodes that offer some (an exact node count
   * needs that many). */
  int *ever = gp_xcalloc((size_t)nm * 4, sizeof *ever), *now = ever + nm;
  int *n_ever = now + nm, *n_now = n_ever + nm;
  bool model_seen = false, model_up = false, could = false;
  int v = -1;
  for (int i = 0; i < c->view->n_nodes && v < 0; i++) {
    const gp_node *n = &c->view->nodes[i];
    int m = c->nodes[i].model;
    if (m < 0 || m >= nm) continue;
    if (by_model) {
      if (n->n_gpus <= 0 || !names_model(r, n->model)) continue;
      model_seen = true;
      if (c->nodes[i].up && (c->nodes[i].whole_ok | c->nodes[i].share_ok | c->nodes[i].mig_ok))
        model_up = true;
    }
    if (!node_allowed(c, j, i)) continue;
    int e, w;
    node_slots(c, j, i, &e, &w);
    ever[m] += e;
    now[m] += w;
    n_ever[m] += e > 0;
    n_now[m] += w > 0;
    if (ever[m] >= r->tasks && n_ever[m] >= need_nodes) could = true;
    if (now[m] >= r->tasks && n_now[m] >= need_nodes) v = GP__FEAS_OK;
  }
  free(ever);
  if (v >= 0) return v;
  if (by_model && !model_seen) return GP__FEAS_MODEL_UNKNOWN;
  if (!could) return GP__FEAS_NEVER;
  return by_model && !model_up ? GP__FEAS_MODEL_DOWN : GP__FEAS_DOWN;
}

static int compute_fleet(gp__core_ctx *c, int j) {
  const gp_request *r = &c->view->jobs[j].req;
  bool by_model = r->n_gpu_models > 0 && c->jobs[j].kind != GP__R_CPU;
  /* A fleet with no node at all is one whose agents have not registered yet: nothing can
   * be judged impossible against it. */
  if (c->view->n_nodes == 0) return by_model ? GP__FEAS_MODEL_DOWN : GP__FEAS_DOWN;
  /* A gang's tasks share one GPU model unless the job names several (gang.c): count its
   * slots per model then. */
  if (r->tasks > 1 && c->jobs[j].kind != GP__R_CPU && r->n_gpu_models < 2 && c->fleet->n_models > 1)
    return compute_gang(c, j, by_model);
  bool model_seen = false, model_up = false;
  int ever = 0, now = 0, n_ever = 0, n_now = 0, need_nodes = gp__core_exact_nodes(r);
  for (int i = 0; i < c->view->n_nodes; i++) {
    const gp_node *n = &c->view->nodes[i];
    if (by_model) {
      if (n->n_gpus <= 0 || !names_model(r, n->model)) continue;
      model_seen = true;
      if (c->nodes[i].up && (c->nodes[i].whole_ok | c->nodes[i].share_ok | c->nodes[i].mig_ok))
        model_up = true;
    }
    if (n->capacity == GP_CAP_SPOT && gp__core_spot_refused(c, j)) continue;
    if (!pool_allows(c, j, c->nodes[i].pool)) continue;
    if (r->n_node_selector && !gp__core_node_has_labels(n, r->n_node_selector, r->node_selector))
      continue;
    int e, w;
    node_slots(c, j, i, &e, &w);
    ever += e;
    now += w;
    n_ever += e > 0;
    n_now += w > 0;
    if (now >= r->tasks && n_now >= need_nodes) return GP__FEAS_OK;
  }
  if (by_model && !model_seen) return GP__FEAS_MODEL_UNKNOWN;
  if (ever < r->tasks || n_ever < need_nodes) return GP__FEAS_NEVER;
  return by_model && !model_up ? GP__FEAS_MODEL_DOWN : GP__FEAS_DOWN;
}

static bool takes_model(const gp_request *r, const char *model) {
  if (r->n_gpu_models == 0) return true;
  for (int i = 0; i < r->n_gpu_models; i++)
    if (model && strcmp(r->gpu_models[i], model) == 0) return true;
  return false;
}

/* (Task slots of one empty node of a template: what both the autoscaler (scale.c) and
 * feasibility read, so it lives here, below both.) */
int gp__core_template_slots(const gp_template *t, const gp_request *r) {
  const gp_node *n = &t->node;
  if (n->capacity == GP_CAP_SPOT && !r->allow_spot) return 0;
  if (!takes_model(r, n->model)) return 0;
  if (r->n_node_selector && !gp__core_node_has_labels(n, r->n_node_selector, r->node_selector)) return 0;
  return gp__core_ever_slots(n, r, gp__core_request_kind(r));
}

bool gp__core_template_holds(const gp_template *t, const gp_request *r) {
  if (t->max_nodes <= 0) return false;
  int exact = gp__core_exact_nodes(r); /* exactly that many of its nodes, one task each at least */
  if (exact > 0) return exact <= t->max_nodes && (long long)gp__core_template_slots(t, r) * exact >= r->tasks;
  return (long long)gp__core_template_slots(t, r) * t->max_nodes >= r->tasks;
}

/* A job the fleet could never hold but a template's nodes could waits for them (not spot
 * ones when its queue refuses spot). */
static int compute(gp__core_ctx *c, int j) {
  int v = compute_fleet(c, j);
  if (v != GP__FEAS_NEVER && v != GP__FEAS_MODEL_UNKNOWN) return v;
  const gp_request *r = &c->view->jobs[j].req;
  for (int t = 0; t < c->view->n_templates; t++)
    if (!(c->view->templates[t].node.capacity == GP_CAP_SPOT && gp__core_spot_refused(c, j)) &&
        gp__core_template_holds(&c->view->templates[t], r))
      return v == GP__FEAS_MODEL_UNKNOWN ? GP__FEAS_TEMPLATE_MODEL : GP__FEAS_TEMPLATE;
  return v;
}

int gp__core_request_kind(const gp_request *r) {
  if (r->mig_profile) return GP__R_MIG;
  if (r->gpus_per_task > 0) return GP__R_WHOLE;
  if (r->gpu_milli > 0 || r->gpu_mem_mib > 0) return GP__R_FRACTION;
  return GP__R_CPU;
}

#define GANG_MODELS 64 /* distinct models counted apart for a gang; beyond, one sum */

bool gp_sched_could_ever_run(const gp_node *nodes, int n_nodes, const gp_request *r,
                             gp_end_reason *why) {
  int kind = gp__core_request_kind(r);
  bool by_model = r->n_gpu_models > 0 && kind != GP__R_CPU, model_seen = false;
  /* A gang's tasks share one GPU model unless the job names several (gang.c). */
  bool one_model = r->tasks > 1 && kind != GP__R_CPU && r->n_gpu_models < 2;
  const char *models[GANG_MODELS];
  int slots[GANG_MODELS], n_models = 0, rest = 0;
  int ever = 0;
  for (int i = 0; i < n_nodes && ever < r->tasks; i++) {
    const gp_node *n = &nodes[i];
    if (by_model) {
      if (n->n_gpus <= 0 || !names_model(r, n->model)) continue;
      model_seen = true;
    }
    if (n->capacity == GP_CAP_SPOT && !r->allow_spot) continue;
    if (r->n_node_selector && !gp__core_node_has_labels(n, r->n_node_selector, r->node_selector))
      continue;
    int e = gp__core_ever_slots(n, r, kind);
    if (!one_model) {
      ever += e;
      continue;
    }
    int m = 0;
    while (m < n_models && strcmp(models[m], n->model ? n->model : "") != 0) m++;
    if (m == n_models && n_models < GANG_MODELS) {
      models[n_models] = n->model ? n->model : "";
      slots[n_models++] = 0;
    }
    int *acc = m < n_models ? &slots[m] : &rest;
    *acc += e;
    if (*acc > ever) ever = *acc;
  }
  if (n_nodes == 0 || ever >= r->tasks) return true;
  *why = by_model && !model_seen ? GP_END_GPU_MODEL_UNKNOWN : GP_END_NO_MATCHING_NODES;
  return false;
}

int gp__core_feasible(gp__core_ctx *c, int j) {
  int shape = gp__core_shape_of(c, j);
  int v = gp__core_shape_feas(c, shape);
  if (v < 0) {
    v = compute(c, j);
    gp__core_shape_set_feas(c, shape, v);
  }
  return v;
}
