/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet's capacity for one step: which GPUs of which nodes may take new work, what
 * running and stopping jobs hold, GPU model ids, topology blocks, NVLink domain masks and
 * reserved pools. Free capacity changes only through gp__core_take / gp__core_give, which keep the
 * node index (node_index.h) and the per-block free counts in step. */
#include <stdlib.h>
#include <string.h>

#include "core/fleet.h"

/* CPU and host memory of a node that reports none are not constrained. */
#define UNTRACKED ((int64_t)1 << 60)

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int gp__core_model_id(const gp__core_ctx *c, const char *model) {
  if (!model) return -1;
  gp__core_fleet *fl = c->fleet; /* (its cache changes no answer) */
  unsigned h = gp__core_ptr_slot(model, 4);
  if (fl->mcache_ptr[h] == model) return fl->mcache_val[h];
  int m = gp__core_strmap_get(&fl->model_map, model);
  fl->mcache_ptr[h] = model;
  fl->mcache_val[h] = m;
  return m;
}

bool gp__core_node_has_labels(const gp_node *n, int n_sel, const gp_label *sel) {
  for (int s = 0; s < n_sel; s++) {
    bool found = false;
    for (int l = 0; l < n->n_labels && !found; l++)
      found = n->labels[l].key && n->labels[l].value && strcmp(n->labels[l].key, sel[s].key) == 0 &&
              strcmp(n->labels[l].value, sel[s].value) == 0;
    if (!found) return false;
  }
  return true;
}

static const char *label_of(const gp_node *n, const char *key) {
  for (int l = 0; l < n->n_labels; l++)
    if (n->labels[l].key && strcmp(n->labels[l].key, key) == 0) return n->labels[l].value;
  return NULL;
}

/* What gp__core_nodes_init derives from the view's nodes, pools and queues, kept by a memo
 * (memo.c) while the view's rev stays: a step copies it instead of reading every node's
 * labels, model and GPUs again. Model names point into the view's strings, which the rev
 * contract keeps alive and unchanged. */
struct gp__core_nodes_snap {
  int nn, n_models, n_blocks, n_gpus_total, n_slots, n_queues;
  gp__core_node *nodes;
  const char **model_names;
  gp__core_strmap model_map; /* name -> id: steps look names up in it (ctx.model_map_shared) */
  int *block_start, *block_nodes, *queue_pool;
  uint32_t *dom;
  int64_t max_gpu_mem;
  bool has_timeslice;
  double capacity;
};

static void *dup_of(const void *p, size_t bytes) {
  void *d = gp_xmalloc(bytes ? bytes : 1);
  if (bytes) memcpy(d, p, bytes);
  return d;
}

/* The same, in the step's scratch memory (the step's own arrays). */
static void *step_dup(gp__core_ctx *c, const void *p, size_t bytes) {
  void *d = gp__core_salloc(c, bytes);
  if (bytes) memcpy(d, p, bytes);
  return d;
}

/* What running jobs, starts and reservations change during a step: all zero at first,
 * but the per-GPU counts a memo kept (gpu_used: NULL for none). */
static void usage_arrays(gp__core_ctx *c, const int *gpu_used) {
  size_t total = (size_t)c->fleet->n_gpus_total;
  c->fleet->block_free = gp__core_scalloc(c, (size_t)c->fleet->n_blocks + 1, sizeof(int));
  c->fleet->gpu_used = gpu_used ? step_dup(c, gpu_used, (total + 1) * sizeof(int)) : gp__core_scalloc(c, total + 1, sizeof(int));
  c->fleet->gpu_mem_used = gp__core_scalloc(c, total + 1, sizeof(int64_t));
  c->fleet->gpu_mig_busy = gp__core_scalloc(c, total + 1, 1);
  /* (Read only for GPUs in a node's resv, which a reservation sets with it.) */
  c->fleet->gpu_resv_until = gp__core_salloc(c, (total + 1) * sizeof(gp_time));
}

/* Kept by a memo (memo.c): the nodes and per-GPU counts as the derived state plus the
 * holds of the last step's remembered running jobs with one whole-GPU placement on an
 * exclusive node (most jobs) left them. Holds are sums of integers, so a step starts from
 * this copy, gives back the holds of slots that changed and adds the new ones, and ends up
 * exactly where holding every running job again would have. Other holds (several
 * placements, shared GPUs, jobs the memo does not remember) are made every step and never
 * enter this copy. The held jobs are listed per node too, with the earliest and latest end
 * among them (gp__core_run_end), for backfill's release events: a step finds a node's held
 * jobs and bounds there instead of sorting every running job onto its node again. */
struct gp__core_usage {
  gp__core_node *nodes;
  int *gpu_used;
  uint8_t *held;        /* per view slot: its job's hold (memo run record) is in here */
  int *next, *prev;     /* per view slot, when held: its node's list (-1 ends it) */
  size_t held_cap;
  int *head;            /* per node: its first held slot, or -1 */
  gp_time *lo, *hi;     /* per node: earliest and latest end of its held jobs (GP__NEVER
                           and INT64_MIN for none), unless `stale` (a job left since) */
  bool *stale;
  int *stale_nodes, n_stale;
  int nn, ng, n_slots;  /* nodes, GPUs, view slots of the step that left it */
  uint64_t step;        /* the memo step whose classification completed it; 0: unusable */
};

void gp__core_usage_free(struct gp__core_usage *u) {
  if (!u) return;
  free(u->nodes);
  free(u->gpu_used);
  free(u->held);
  free(u->next);
  free(u->prev);
  free(u->head);
  free(u->lo);
  free(u->hi);
  free(u->stale);
  free(u->stale_nodes);
  free(u);
}

size_t gp__core_usage_bytes(const struct gp__core_usage *u) {
  if (!u) return 0;
  return sizeof *u + ((size_t)u->nn + 1) * (sizeof *u->nodes + sizeof *u->head + sizeof *u->lo +
                                            sizeof *u->hi + sizeof *u->stale + sizeof(int)) +
         ((size_t)u->ng + 1) * sizeof(int) + u->held_cap * (1 + sizeof *u->next + sizeof *u->prev);
}

static bool hold_whole_on(gp__core_node *nodes, int *gpu_used, int node, uint32_t mask, int64_t cpu,
                          int64_t mem, bool excl) {
  gp__core_node *s = &nodes[node];
  if (!s->exclusive_only) return false;
  /* The per-GPU count still matters when a preemption simulation takes and gives back a
   * victim's GPU. */
  for (uint32_t m = mask; m; m &= m - 1) gpu_used[s->gpu_base + __builtin_ctz(m)] += GP_GPU_MILLI;
  s->free &= ~mask;
  s->cpu_free -= cpu;
  s->mem_free -= mem;
  s->tasks++;
  s->excl += excl;
  return true;
}

/* Gives back a hold_whole_on hold: on an exclusive node a GPU is free again once nothing
 * holds it, as apply() decides. */
static void unhold_whole_on(gp__core_node *nodes, int *gpu_used, int node, uint32_t mask, int64_t cpu,
                            int64_t mem, bool excl) {
  gp__core_node *s = &nodes[node];
  for (uint32_t m = mask; m; m &= m - 1) {
    int g = __builtin_ctz(m);
    if ((gpu_used[s->gpu_base + g] -= GP_GPU_MILLI) <= 0 && (s->whole_ok >> g & 1))
      s->free |= (uint32_t)1 << g;
  }
  s->cpu_free += cpu;
  s->mem_free += mem;
  s->tasks--;
  s->excl -= excl;
}

/* The memo's kept usage when the last step left it for this view, else NULL. */
static struct gp__core_usage *usage_kept(const gp__core_ctx *c, const struct gp_sched_memo *m, int nn,
                                         int ng) {
  struct gp__core_usage *u = m->usage;
  return u && c->view_known && u->step && u->step + 1 == m->step && u->nn == nn && u->ng == ng
             ? u
             : NULL;
}

/* The step's starting usage: `kept` when the step started from it (usage_kept), else the
 * derived nodes with nothing held, and the copy starts over from them. */
static void usage_begin(gp__core_ctx *c, struct gp_sched_memo *m, struct gp__core_usage *kept) {
  struct gp__core_usage *u = kept;
  int nn = c->view->n_nodes, ng = c->fleet->n_gpus_total;
  if (!u) {
    u = m->usage;
    if (!u || u->nn != nn || u->ng != ng) {
      gp__core_usage_free(u);
      u = m->usage = gp_xcalloc(1, sizeof *u);
      u->nodes = gp_xmalloc(((size_t)nn + 1) * sizeof *u->nodes);
      u->gpu_used = gp_xmalloc(((size_t)ng + 1) * sizeof *u->gpu_used);
      u->head = gp_xmalloc(((size_t)nn + 1) * sizeof *u->head);
      u->lo = gp_xmalloc(((size_t)nn + 1) * sizeof *u->lo);
      u->hi = gp_xmalloc(((size_t)nn + 1) * sizeof *u->hi);
      u->stale = gp_xmalloc(((size_t)nn + 1) * sizeof *u->stale);
      u->stale_nodes = gp_xmalloc(((size_t)nn + 1) * sizeof *u->stale_nodes);
      u->nn = nn;
      u->ng = ng;
    }
    memcpy(u->nodes, c->nodes, ((size_t)nn + 1) * sizeof *c->nodes);
    memset(u->gpu_used, 0, ((size_t)ng + 1) * sizeof *u->gpu_used);
    if (u->held) memset(u->held, 0, u->held_cap);
    for (int i = 0; i < nn; i++) {
      u->head[i] = -1;
      u->lo[i] = GP__NEVER;
      u->hi[i] = INT64_MIN;
      u->stale[i] = false;
    }
    u->n_stale = 0;
    u->n_slots = 0;
  }
  size_t cap = u->held_cap;
  if ((size_t)c->view->n_jobs + 1 > cap) {
    gp_xgrow((void **)&u->held, &u->held_cap, (size_t)c->view->n_jobs + 1, 1);
    memset(u->held + cap, 0, u->held_cap - cap);
    u->next = gp_xrealloc(u->next, u->held_cap * sizeof *u->next);
    u->prev = gp_xrealloc(u->prev, u->held_cap * sizeof *u->prev);
  }
  u->step = 0; /* until classification completes it */
  c->fleet->usage = u;
  c->fleet->held = u->held;
  c->fleet->kept_runs = m->run;
}

void gp__core_usage_drop(gp__core_ctx *c, int j, const gp__core_run *old) {
  struct gp__core_usage *u = c->fleet->usage;
  if (!u || !u->held[j]) return;
  unhold_whole_on(u->nodes, u->gpu_used, old->node, old->whole, old->cpu, old->mem, old->exclusive);
  unhold_whole_on(c->nodes, c->fleet->gpu_used, old->node, old->whole, old->cpu, old->mem, old->exclusive);
  u->held[j] = 0;
  if (u->prev[j] >= 0) u->next[u->prev[j]] = u->next[j];
  else u->head[old->node] = u->next[j];
  if (u->next[j] >= 0) u->prev[u->next[j]] = u->prev[j];
  if (!u->stale[old->node]) { /* (its bounds are made again when next asked) */
    u->stale[old->node] = true;
    u->stale_nodes[u->n_stale++] = old->node;
  }
}

void gp__core_usage_keep(gp__core_ctx *c, int j, const gp__core_run *ru) {
  struct gp__core_usage *u = c->fleet->usage;
  if (!u || !hold_whole_on(u->nodes, u->gpu_used, ru->node, ru->whole, ru->cpu, ru->mem, ru->exclusive)) return;
  u->held[j] = 1;
  u->prev[j] = -1;
  u->next[j] = u->head[ru->node];
  if (u->next[j] >= 0) u->prev[u->next[j]] = j;
  u->head[ru->node] = j;
  gp_time e = gp__core_run_end(ru);
  if (e < u->lo[ru->node]) u->lo[ru->node] = e;
  if (e > u->hi[ru->node]) u->hi[ru->node] = e;
}

int gp__core_usage_first(const gp__core_ctx *c, int node) { return c->fleet->usage ? c->fleet->usage->head[node] : -1; }

int gp__core_usage_next(const gp__core_ctx *c, int j) { return c->fleet->usage->next[j]; }

bool gp__core_usage_bounds(const gp__core_ctx *c, const gp_time **lo, const gp_time **hi) {
  struct gp__core_usage *u = c->fleet->usage;
  if (!u) return false;
  for (int k = 0; k < u->n_stale; k++) {
    int node = u->stale_nodes[k];
    u->lo[node] = GP__NEVER;
    u->hi[node] = INT64_MIN;
    for (int j = u->head[node]; j >= 0; j = u->next[j]) {
      gp_time e = gp__core_run_end(&c->fleet->kept_runs[j]);
      if (e < u->lo[node]) u->lo[node] = e;
      if (e > u->hi[node]) u->hi[node] = e;
    }
    u->stale[node] = false;
  }
  u->n_stale = 0;
  *lo = u->lo;
  *hi = u->hi;
  return true;
}

void gp__core_usage_end(gp__core_ctx *c, const gp__core_run *old_runs, uint64_t step) {
  struct gp__core_usage *u = c->fleet->usage;
  if (!u) return;
  /* Slots past the view's end now: their jobs left. */
  for (int j = c->view->n_jobs; j < u->n_slots; j++) gp__core_usage_drop(c, j, &old_runs[j]);
  u->n_slots = c->view->n_jobs;
  u->step = step;
}

void gp__core_nodes_snap_free(struct gp__core_nodes_snap *s) {
  if (!s) return;
  free(s->nodes);
  free(s->model_names);
  if (s->model_map.keys) gp__core_strmap_done(&s->model_map);
  free(s->block_start);
  free(s->block_nodes);
  free(s->queue_pool);
  free(s->dom);
  free(s);
}

size_t gp__core_nodes_snap_bytes(const struct gp__core_nodes_snap *s) {
  if (!s) return 0;
  return sizeof *s + ((size_t)s->nn + 1) * (sizeof *s->nodes + sizeof(int)) +
         ((size_t)s->n_models + 1) * sizeof(char *) + ((size_t)s->n_blocks + 1) * sizeof(int) +
         ((size_t)s->n_queues + 1) * sizeof(int) + ((size_t)s->n_gpus_total + 1) * sizeof(uint32_t);
}

static struct gp__core_nodes_snap *snap_take(const gp__core_ctx *c) {
  struct gp__core_nodes_snap *s = gp_xcalloc(1, sizeof *s);
  s->nn = c->view->n_nodes;
  s->n_models = c->fleet->n_models;
  s->n_blocks = c->fleet->n_blocks;
  s->n_gpus_total = c->fleet->n_gpus_total;
  s->n_slots = c->fleet->n_slots;
  s->n_queues = c->tree.n;
  s->nodes = dup_of(c->nodes, ((size_t)s->nn + 1) * sizeof *c->nodes);
  s->model_names = dup_of(c->fleet->model_names, ((size_t)s->n_models + 1) * sizeof *c->fleet->model_names);
  gp__core_strmap_init(&s->model_map, (size_t)s->n_models + 1);
  for (int m = 0; m < s->n_models; m++) gp__core_strmap_put(&s->model_map, s->model_names[m], m);
  s->block_start = dup_of(c->fleet->block_start, ((size_t)s->n_blocks + 1) * sizeof(int));
  s->block_nodes = dup_of(c->fleet->block_nodes, ((size_t)s->nn + 1) * sizeof(int));
  s->queue_pool = dup_of(c->fleet->queue_pool, ((size_t)s->n_queues + 1) * sizeof(int));
  s->dom = dup_of(c->fleet->dom, ((size_t)s->n_gpus_total + 1) * sizeof(uint32_t));
  s->max_gpu_mem = c->fleet->max_gpu_mem;
  s->has_timeslice = c->fleet->has_timeslice;
  s->capacity = c->fleet->capacity;
  return s;
}

/* The derived state from the snapshot; nodes and per-GPU counts from the memo's kept
 * usage instead when there is one (kept: it is the derived state plus the kept holds). */
static void snap_restore(gp__core_ctx *c, const struct gp__core_nodes_snap *s, const struct gp__core_usage *kept) {
  c->nodes = step_dup(c, kept ? kept->nodes : s->nodes, ((size_t)s->nn + 1) * sizeof *c->nodes);
  /* What a step only reads is the snapshot's own (the step's arrays of these are scratch
   * memory, never freed one by one). */
  c->fleet->n_models = s->n_models;
  c->fleet->model_names = s->model_names;
  c->fleet->model_map = s->model_map;
  c->fleet->model_map_shared = true;
  c->fleet->n_blocks = s->n_blocks;
  c->fleet->block_start = s->block_start;
  c->fleet->block_nodes = s->block_nodes;
  c->fleet->n_gpus_total = s->n_gpus_total;
  usage_arrays(c, kept ? kept->gpu_used : NULL);
  c->fleet->dom = s->dom;
  c->fleet->max_gpu_mem = s->max_gpu_mem;
  c->fleet->has_timeslice = s->has_timeslice;
  c->fleet->capacity = s->capacity;
  c->fleet->n_slots = s->n_slots;
  c->fleet->queue_pool = s->queue_pool;
}

static int nodes_derive(gp__core_ctx *c);

/* Healthy GPUs on nodes that are not down: the pool fair shares divide. */
static double fleet_capacity(const gp__core_ctx *c) {
  double cap = 0;
  for (int i = 0; i < c->view->n_nodes; i++) {
    const gp_node *n = &c->view->nodes[i];
    if (n->state == GP_NODE_DOWN) continue;
    for (int g = 0; g < n->n_gpus; g++)
      cap += !n->gpus || n->gpus[g].health != GP_GPU_FAILED;
  }
  return cap;
}

int gp__core_nodes_init(gp__core_ctx *c) {
  struct gp_sched_memo *m = c->memo;
  if (m && c->view_known && m->nodes && m->nodes->nn == c->view->n_nodes &&
      m->nodes->n_queues == c->tree.n) {
    struct gp__core_usage *kept = usage_kept(c, m, m->nodes->nn, m->nodes->n_gpus_total);
    snap_restore(c, m->nodes, kept);
    usage_begin(c, m, kept);
    return 0;
  }
  int rc = nodes_derive(c);
  c->fleet->capacity = fleet_capacity(c);
  if (m && !rc) {
    gp__core_nodes_snap_free(m->nodes);
    m->nodes = snap_take(c);
    usage_begin(c, m, NULL);
  }
  return rc;
}

static int nodes_derive(gp__core_ctx *c) {
  const gp_view *v = c->view;
  int nn = v->n_nodes;
  c->nodes = gp__core_scalloc(c, (size_t)nn + 1, sizeof *c->nodes);

  /* GPU models, sorted by name so ids do not depend on node order. */
  const char **names = gp__core_salloc(c, ((size_t)nn + 1) * sizeof *names);
  int nm = 0;
  gp__core_strmap seen;
  gp__core_strmap_init(&seen, 16);
  const char *last_m = NULL; /* nodes in a row often share one model string: skip the hash */
  for (int i = 0; i < nn; i++) {
    const char *m = v->nodes[i].model;
    if (m && m != last_m && v->nodes[i].n_gpus > 0) {
      if (gp__core_strmap_put(&seen, m, nm) < 0) names[nm++] = m;
      last_m = m;
    }
    if (v->nodes[i].gpu_mem_mib > c->fleet->max_gpu_mem) c->fleet->max_gpu_mem = v->nodes[i].gpu_mem_mib;
  }
  gp__core_strmap_done(&seen);
  qsort(names, (size_t)nm, sizeof *names, str_cmp);
  c->fleet->model_names = names;
  c->fleet->n_models = nm;
  gp__core_strmap_init(&c->fleet->model_map, (size_t)nm + 1);
  for (int m = 0; m < nm; m++) gp__core_strmap_put(&c->fleet->model_map, names[m], m);

  /* Blocks, in order of first appearance. */
  gp__core_strmap blocks;
  gp__core_strmap_init(&blocks, 64);
  int *bcount = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  const char *last_b = NULL; /* neighbours usually share their block's string */
  int last_id = -1;
  for (int i = 0; i < nn; i++) {
    const char *b = label_of(&v->nodes[i], "topology.block");
    c->nodes[i].block = -1;
    if (!b) continue;
    int id = b == last_b ? last_id : gp__core_strmap_get(&blocks, b);
    if (id < 0) {
      id = c->fleet->n_blocks++;
      gp__core_strmap_put(&blocks, b, id);
    }
    last_b = b;
    last_id = id;
    c->nodes[i].block = id;
    bcount[id]++;
  }
  gp__core_strmap_done(&blocks);
  c->fleet->block_start = gp__core_scalloc(c, (size_t)c->fleet->n_blocks + 1, sizeof(int));
  c->fleet->block_nodes = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  for (int b = 0; b < c->fleet->n_blocks; b++) c->fleet->block_start[b + 1] = c->fleet->block_start[b] + bcount[b];
  memset(bcount, 0, ((size_t)nn + 1) * sizeof(int));
  for (int i = 0; i < nn; i++) {
    int b = c->nodes[i].block;
    if (b >= 0) c->fleet->block_nodes[c->fleet->block_start[b] + bcount[b]++] = i;
  }

  /* Per-GPU arrays and masks. */
  int total = 0, ndom = 0;
  for (int i = 0; i < nn; i++) {
    c->nodes[i].gpu_base = total;
    total += v->nodes[i].n_gpus;
  }
  c->fleet->n_gpus_total = total;
  usage_arrays(c, NULL);
  c->fleet->dom = gp__core_scalloc(c, (size_t)total + 1, sizeof(uint32_t));
  for (int i = 0; i < nn; i++) {
    const gp_node *n = &v->nodes[i];
    gp__core_node *s = &c->nodes[i];
    s->model = n->n_gpus > 0 ? gp__core_model_id(c, n->model) : -1;
    s->up = n->state == GP_NODE_UP;
    s->cpu_free = n->cpu_milli > 0 ? n->cpu_milli : UNTRACKED;
    s->mem_free = n->mem_mib > 0 ? n->mem_mib : UNTRACKED;
    s->pool = -1;
    for (int p = 0; p < v->n_pools && s->pool < 0; p++)
      if (gp__core_node_has_labels(n, 1, &v->pools[p].selector)) s->pool = p;
    s->dom_base = ndom;
    for (int g = 0; g < n->n_gpus; g++) {
      uint32_t bit = (uint32_t)1 << g;
      gp_gpu_health h = n->gpus ? n->gpus[g].health : GP_GPU_HEALTHY;
      gp_share_mode m = n->gpus ? n->gpus[g].mode : GP_SHARE_EXCLUSIVE;
      if (!s->up || h != GP_GPU_HEALTHY) continue;
      if (m == GP_SHARE_EXCLUSIVE || m == GP_SHARE_SHARED) s->whole_ok |= bit;
      if (m == GP_SHARE_SHARED || m == GP_SHARE_TIMESLICE) s->share_ok |= bit;
      if (m == GP_SHARE_TIMESLICE) c->fleet->has_timeslice = true;
      if (m == GP_SHARE_MIG) s->mig_ok |= bit;
      if (n->gpus && n->gpus[g].mem_mib > 0 && n->gpus[g].mem_mib != n->gpu_mem_mib)
        s->mem_varies = true;
    }
    s->free = s->whole_ok;
    s->n_whole_ok = (uint8_t)gp__core_popc(s->whole_ok);
    s->exclusive_only = true;
    for (int g = 0; n->gpus && g < n->n_gpus; g++)
      if (n->gpus[g].mode != GP_SHARE_EXCLUSIVE) s->exclusive_only = false;
    if (n->gpus) {
      /* NVLink domains in ascending domain number: masks gathered in one pass over the
       * GPUs, then sorted by number (a node has a few). */
      int ids[GP_MAX_NODE_GPUS], nd = 0;
      uint32_t masks[GP_MAX_NODE_GPUS];
      for (int g = 0; g < n->n_gpus; g++) {
        int d = n->gpus[g].nvlink_domain;
        if (d < 0) continue;
        int k = 0;
        while (k < nd && ids[k] != d) k++;
        if (k == nd) {
          /* insertion by domain number */
          while (k > 0 && ids[k - 1] > d) {
            ids[k] = ids[k - 1];
            masks[k] = masks[k - 1];
            k--;
          }
          ids[k] = d;
          masks[k] = 0;
          nd++;
        }
        masks[k] |= (uint32_t)1 << g;
      }
      memcpy(&c->fleet->dom[s->dom_base], masks, (size_t)nd * sizeof *masks);
      s->n_dom = nd;
      ndom += nd;
    }
  }

  /* Pools: which queues own one (a pool's queue and its sub-queues). */
  c->fleet->n_slots = 1 + v->n_pools;
  c->fleet->queue_pool = gp__core_salloc(c, ((size_t)c->tree.n + 1) * sizeof(int));
  for (int q = 0; q < c->tree.n; q++) c->fleet->queue_pool[q] = -1;
  for (int p = 0; p < v->n_pools; p++) {
    int q = gp__core_qtree_find(&c->tree, v->pools[p].queue);
    for (int d = 0; d < c->tree.n && q >= 0; d++)
      if (c->fleet->queue_pool[d] < 0 && gp__core_qtree_is_ancestor(&c->tree, q, d)) c->fleet->queue_pool[d] = p;
  }
  return 0;
}

/* Group of a node in the index: (pool slot, model); nodes without GPUs use model n_models. */
static int group_of(const gp__core_ctx *c, int i) {
  const gp__core_node *s = &c->nodes[i];
  if (!s->up) return -1;
  int m = s->model >= 0 ? s->model : c->fleet->n_models;
  return (s->pool + 1) * (c->fleet->n_models + 1) + m;
}

void gp__core_nodes_index(gp__core_ctx *c) {
  int nn = c->view->n_nodes;
  int *groups = gp_xmalloc(((size_t)nn + 1) * sizeof(int));
  for (int i = 0; i < nn; i++) groups[i] = group_of(c, i);
  gp__core_index_init(&c->fleet->ix, nn, groups, c->fleet->n_slots * (c->fleet->n_models + 1));
  free(groups);
  for (int i = 0; i < nn; i++) {
    if (!c->nodes[i].up) continue;
    int f = gp__core_popc(c->nodes[i].free);
    gp__core_index_set(&c->fleet->ix, i, f);
    if (c->nodes[i].block >= 0) c->fleet->block_free[c->nodes[i].block] += f;
  }
  c->fleet->indexed = true;
}

/* Applies one task's use of a node: sign +1 takes, -1 gives back. */
static void apply(gp__core_ctx *c, int node, uint32_t mask, int milli, int64_t gpu_mem, int mig,
                  int64_t cpu, int64_t mem, bool excl, int sign) {
  const gp_node *n = &c->view->nodes[node];
  gp__core_node *s = &c->nodes[node];
  int before = gp__core_popc(s->free);
  c->fleet->use_gen++;
  for (uint32_t m = mask; m; m &= m - 1) {
    int g = __builtin_ctz(m);
    int k = s->gpu_base + g;
    gp_share_mode mode = n->gpus ? n->gpus[g].mode : GP_SHARE_EXCLUSIVE;
    if (mig >= 0) {
      if (sign > 0) c->fleet->gpu_mig_busy[k] |= (uint8_t)(1u << (mig & 7));
      else c->fleet->gpu_mig_busy[k] &= (uint8_t)~(1u << (mig & 7));
    } else if (mode == GP_SHARE_TIMESLICE) {
      c->fleet->gpu_used[k] += sign;
    } else {
      c->fleet->gpu_used[k] += sign * (milli > 0 && milli < GP_GPU_MILLI ? milli : GP_GPU_MILLI);
      c->fleet->gpu_mem_used[k] += sign * gpu_mem;
    }
    bool idle = c->fleet->gpu_used[k] <= 0 && c->fleet->gpu_mem_used[k] <= 0 && !c->fleet->gpu_mig_busy[k];
    uint32_t bit = (uint32_t)1 << g;
    if (idle && (s->whole_ok & bit)) s->free |= bit;
    else s->free &= ~bit;
  }
  s->cpu_free -= sign * cpu;
  s->mem_free -= sign * mem;
  s->tasks += sign;
  s->excl += sign * excl;
  int after = gp__core_popc(s->free);
  if (after != before && s->up && c->fleet->indexed) {
    gp__core_index_set(&c->fleet->ix, node, after);
    if (s->block >= 0) c->fleet->block_free[s->block] += after - before;
  }
}

bool gp__core_hold_whole(gp__core_ctx *c, int node, uint32_t mask, int64_t cpu, int64_t mem, bool excl) {
  return !c->fleet->indexed && hold_whole_on(c->nodes, c->fleet->gpu_used, node, mask, cpu, mem, excl);
}

void gp__core_hold_placements(gp__core_ctx *c, int j) {
  const gp_job *job = &c->view->jobs[j];
  for (int p = 0; p < job->n_placements; p++) {
    const gp_placement *pl = &job->placements[p];
    if (gp__core_hold_whole(c, pl->node, pl->gpu_mask, job->req.cpu_milli, job->req.mem_mib,
                            job->req.exclusive))
      continue;
    apply(c, pl->node, pl->gpu_mask, pl->gpu_milli, pl->gpu_mem_mib, pl->mig_instance,
          job->req.cpu_milli, job->req.mem_mib, job->req.exclusive, +1);
  }
}

void gp__core_take(gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *f) {
  apply(c, f->node, f->mask, f->milli, f->gpu_mem, f->mig, r->cpu, r->mem,
        c->view->jobs[r->job].req.exclusive, +1);
}

void gp__core_give(gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *f) {
  apply(c, f->node, f->mask, f->milli, f->gpu_mem, f->mig, r->cpu, r->mem,
        c->view->jobs[r->job].req.exclusive, -1);
}

void gp__core_fleet_done(gp__core_ctx *c) {
  gp__core_index_done(&c->fleet->ix);
  if (c->fleet->model_map.keys && !c->fleet->model_map_shared) gp__core_strmap_done(&c->fleet->model_map);
}
