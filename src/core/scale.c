/* SPDX-License-Identifier: Apache-2.0 */
/* Autoscaling's proposal (scale.h): which templates' nodes to create for pending jobs, and
 * which empty provider nodes to delete. Runs after a step, on its plan; pure. */
#include "core/scale.h"

#include <stdlib.h>
#include <string.h>

#include "core/classify.h"
#include "core/fleet.h"
#include "core/strmap.h"
#include "util/mem.h"

void gp_scale_default_ranks(int class_rank[4]) {
  class_rank[GP_CAP_ON_PREM] = 0;
  class_rank[GP_CAP_RESERVED] = 1;
  class_rank[GP_CAP_SPOT] = 2;
  class_rank[GP_CAP_ON_DEMAND] = 3;
}

bool gp_scale_could_hold(const gp_template *t, const gp_request *r) { return gp__core_template_holds(t, r); }

/* A node being created (asked earlier or in this call): GPUs not yet promised to a job. */
typedef struct vnode {
  int tmpl;
  int free_gpus;
} vnode;

typedef struct scaler {
  const gp_view *v;
  const gp_scale_config *cfg;
  gp_time now;
  int nt;
  int *nodes;        /* per template: instances, counting this call's creations */
  double hourly;     /* the pool's cost per hour, counting this call's creations */
  vnode *vn;
  int n_vn, cap_vn;
  int *order[3][2];  /* template order per (queue preference: neutral/prefer/avoid, spot ok) */
  uint32_t *held;    /* per view node: GPUs held after the plan's starts */
} scaler;

static void add_vnodes(scaler *s, int t, int count) {
  if (s->n_vn + count > s->cap_vn) {
    s->cap_vn = (s->n_vn + count) * 2;
    s->vn = realloc(s->vn, sizeof *s->vn * (size_t)s->cap_vn);
    if (!s->vn) abort();
  }
  for (int k = 0; k < count; k++) s->vn[s->n_vn++] = (vnode){t, s->v->templates[t].node.n_gpus};
}

/* GPUs one task of the request takes on a fresh node: whole GPUs, or one for a fraction or
 * a MIG instance (a created node's GPUs are whole until something shares them). */
static int gpus_per_task(const gp_request *r) { return r->gpus_per_task > 0 ? r->gpus_per_task : 1; }

/* Tasks of `per` GPUs the nodes of template t on their way can still take. */
static int slots_on_the_way(const scaler *s, int t, int per) {
  int n = 0;
  for (int i = 0; i < s->n_vn; i++)
    if (s->vn[i].tmpl == t) n += s->vn[i].free_gpus / per;
  return n;
}

/* The slots of the nodes of template t on their way for the request (at most a fresh
 * node's, `cap`), into k[] (s->n_vn entries, 0 for another template's); returns k. */
static int *slots_creating(const scaler *s, int t, const gp_request *r, int cap) {
  int *k = gp_xcalloc((size_t)s->n_vn + 1, sizeof *k);
  for (int i = 0; i < s->n_vn; i++)
    if (s->vn[i].tmpl == t) k[i] = s->vn[i].free_gpus / gpus_per_task(r) < cap ? s->vn[i].free_gpus / gpus_per_task(r) : cap;
  return k;
}

/* An exact node count (gp__core_exact_nodes): the gang on `exact` of the nodes on their way,
 * those with the most slots (the first on a tie), one task each, then as many as each
 * holds; 0 (nothing taken) when they cannot hold it (gp__core_nodes_hold). */
static int fit_creating_exact(scaler *s, int t, const gp_request *r, int exact) {
  int *k = slots_creating(s, t, r, gp__core_template_slots(&s->v->templates[t], r));
  if (!gp__core_nodes_hold(k, s->n_vn, exact, r->tasks)) {
    free(k);
    return 0;
  }
  int left = r->tasks - exact, per = gpus_per_task(r);
  for (int p = 0; p < exact; p++) {
    int best = -1;
    for (int i = 0; i < s->n_vn; i++)
      if (k[i] > 0 && (best < 0 || k[i] > k[best])) best = i;
    int take = 1 + (k[best] - 1 < left ? k[best] - 1 : left);
    left -= take - 1;
    s->vn[best].free_gpus -= take * per;
    k[best] = 0;
  }
  free(k);
  return exact;
}

/* How many new nodes of template t, with the nodes on their way, hold a gang of an exact
 * node count; -1 when no number up to that count does. */
static int new_nodes_exact(const scaler *s, int t, const gp_request *r, int exact) {
  int per_node = gp__core_template_slots(&s->v->templates[t], r);
  int *k = slots_creating(s, t, r, per_node);
  int *all = gp_xmalloc(((size_t)s->n_vn + (size_t)exact + 1) * sizeof *all), found = -1;
  for (int c = 1; c <= exact && found < 0; c++) {
    memcpy(all, k, (size_t)s->n_vn * sizeof *all);
    for (int x = 0; x < c; x++) all[s->n_vn + x] = per_node;
    if (gp__core_nodes_hold(all, s->n_vn + c, exact, r->tasks)) found = c;
  }
  free(all);
  free(k);
  return found;
}

/* Fits the whole gang into the nodes of template t being created; takes their GPUs and
 * returns the nodes used, or 0 (nothing taken) when it does not fit. */
static int fit_creating(scaler *s, int t, const gp_request *r) {
  int exact = gp__core_exact_nodes(r);
  if (exact > 0) return fit_creating_exact(s, t, r, exact);
  int per = gpus_per_task(r), need = r->tasks, used = 0;
  if (slots_on_the_way(s, t, per) < need) return 0;
  for (int i = 0; i < s->n_vn && need > 0; i++) {
    if (s->vn[i].tmpl != t) continue;
    int k = s->vn[i].free_gpus / per;
    if (k > need) k = need;
    if (k == 0) continue;
    s->vn[i].free_gpus -= k * per;
    need -= k;
    used++;
  }
  return used;
}

static double node_price(const scaler *s, int t) {
  double p = s->cfg->templates[t].price_per_gpu_hour;
  return p < 0 ? -1 : p * s->v->templates[t].node.n_gpus;
}

/* Where template t stands for a job with queue preference `pref`: its class rank (spot
 * first for `prefer`, last for `avoid`), then price per GPU-hour (unknown last), then
 * configuration order. */
static bool before(const scaler *s, gp_spot_pref pref, int x, int y) {
  long cx = s->cfg->class_rank[s->v->templates[x].node.capacity];
  long cy = s->cfg->class_rank[s->v->templates[y].node.capacity];
  if (s->v->templates[x].node.capacity == GP_CAP_SPOT) cx = pref == GP_SPOT_PREFER ? -1 : pref == GP_SPOT_AVOID ? 1000 : cx;
  if (s->v->templates[y].node.capacity == GP_CAP_SPOT) cy = pref == GP_SPOT_PREFER ? -1 : pref == GP_SPOT_AVOID ? 1000 : cy;
  if (cx != cy) return cx < cy;
  double px = s->cfg->templates[x].price_per_gpu_hour, py = s->cfg->templates[y].price_per_gpu_hour;
  if ((px < 0) != (py < 0)) return py < 0;
  if (px != py) return px < py;
  return x < y;
}

/* The template orders, one per (queue preference: neutral/prefer/avoid, spot allowed), each
 * ending with -1; classes ranked below 0 are left out. Insertion sort: a few hundred
 * templates at most. */
static void make_orders(scaler *s) {
  static const gp_spot_pref prefs[3] = {GP_SPOT_NEUTRAL, GP_SPOT_PREFER, GP_SPOT_AVOID};
  for (int p = 0; p < 3; p++)
    for (int spot_ok = 0; spot_ok < 2; spot_ok++) {
      int *o = gp_xmalloc(sizeof *o * (size_t)(s->nt + 1)), n = 0;
      for (int t = 0; t < s->nt; t++) {
        const gp_node *nd = &s->v->templates[t].node;
        if (s->cfg->class_rank[nd->capacity] < 0 || (nd->capacity == GP_CAP_SPOT && !spot_ok)) continue;
        int k = n++;
        while (k > 0 && before(s, prefs[p], t, o[k - 1])) {
          o[k] = o[k - 1];
          k--;
        }
        o[k] = t;
      }
      o[n] = -1;
      s->order[p][spot_ok] = o;
    }
}

/* Why the job's first possible template is passed over, or -1 when it may be asked. */
static int blocked(const scaler *s, int t, int count) {
  const gp_scale_template *st = &s->cfg->templates[t];
  if (st->retry_at > s->now) return GP_SCALE_BACKOFF;
  if (s->nodes[t] + count > s->v->templates[t].max_nodes) return GP_SCALE_MAX_NODES;
  if (s->cfg->max_hourly_cost >= 0) {
    double p = node_price(s, t);
    if (p < 0 || s->hourly + p * count > s->cfg->max_hourly_cost + 1e-9) return GP_SCALE_COST_CAP;
  }
  return -1;
}

static bool wants_nodes(gp_pending_reason r) {
  return r == GP_PEND_RESOURCES || r == GP_PEND_NO_MATCHING_NODES || r == GP_PEND_GPU_MODEL_UNAVAILABLE ||
         r == GP_PEND_RESERVATION || r == GP_PEND_PRIORITY;
}

typedef struct cand {
  int job;
  gp_time submitted_at;
} cand;

static int by_age(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->submitted_at != y->submitted_at) return x->submitted_at < y->submitted_at ? -1 : 1;
  return x->job - y->job;
}

/* The spot preference in force for a queue: its own, else its nearest ancestor's that sets
 * one (the rule of spot.h, here by name: the proposal has no queue tree). */
static gp_spot_pref queue_pref(const gp_view *v, const gp__core_strmap *queues, const char *name) {
  char buf[GP_MAX_QUEUE_NAME + 1];
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > GP_MAX_QUEUE_NAME) return GP_SPOT_NEUTRAL;
  memcpy(buf, name, n + 1);
  for (;;) {
    int q = gp__core_strmap_get(queues, buf);
    if (q >= 0 && v->queues[q].spot != GP_SPOT_NEUTRAL) return v->queues[q].spot;
    char *slash = strrchr(buf, '/');
    if (!slash) return GP_SPOT_NEUTRAL;
    *slash = '\0';
  }
}

/* The note for job j, and a creation when one of its templates may be asked. */
static void scale_job(scaler *s, int j, const gp__core_strmap *queues, gp_plan_scale_note *note,
                      gp_plan_create *creates, int *n_creates) {
  const gp_job *job = &s->v->jobs[j];
  const gp_request *r = &job->req;
  *note = (gp_plan_scale_note){j, -1, GP_SCALE_NO_TEMPLATE, 0};
  if (gp__core_request_kind(r) == GP__R_CPU) return;
  gp_spot_pref pref = queue_pref(s->v, queues, job->queue);
  bool spot_ok = r->allow_spot && pref != GP_SPOT_NEVER;
  const int *order = s->order[pref == GP_SPOT_PREFER ? 1 : pref == GP_SPOT_AVOID ? 2 : 0][spot_ok];
  /* Nodes already on their way, in the same order. */
  for (const int *o = order; *o >= 0; o++) {
    if (gp__core_template_slots(&s->v->templates[*o], r) <= 0) continue;
    int used = fit_creating(s, *o, r);
    if (used) {
      *note = (gp_plan_scale_note){j, *o, GP_SCALE_WAITING, used};
      return;
    }
  }
  for (const int *o = order; *o >= 0; o++) {
    int t = *o, per_node = gp__core_template_slots(&s->v->templates[t], r);
    if (per_node <= 0) continue;
    /* New nodes for what the nodes on their way cannot hold of the gang. */
    int have = slots_on_the_way(s, t, gpus_per_task(r));
    int count = (r->tasks - have + per_node - 1) / per_node;
    int exact = gp__core_exact_nodes(r);
    if (exact > 0) { /* exactly that many nodes: never more, and as many as it takes */
      if (exact > s->v->templates[t].max_nodes || (long long)per_node * exact < r->tasks) continue;
      count = new_nodes_exact(s, t, r, exact);
      if (count < 0) continue;
    } else if ((r->tasks + per_node - 1) / per_node > s->v->templates[t].max_nodes) {
      continue; /* never this one */
    }
    int why = blocked(s, t, count);
    if (why >= 0) {
      if (note->tmpl < 0) *note = (gp_plan_scale_note){j, t, (gp_scale_state)why, count};
      continue;
    }
    creates[(*n_creates)++] = (gp_plan_create){t, count, j};
    s->nodes[t] += count;
    if (node_price(s, t) > 0) s->hourly += node_price(s, t) * count;
    add_vnodes(s, t, count);
    fit_creating(s, t, r);
    *note = (gp_plan_scale_note){j, t, GP_SCALE_WAITING, count};
    return;
  }
}

static void propose_up(scaler *s, gp_plan *plan) {
  int np = plan->n_pending;
  cand *cs = gp_xmalloc(sizeof *cs * (size_t)(np + 1));
  int nc = 0;
  for (int k = 0; k < np; k++) {
    const gp_plan_pending *p = &plan->pending[k];
    if (wants_nodes(p->reason)) cs[nc++] = (cand){p->job, s->v->jobs[p->job].submitted_at};
  }
  qsort(cs, (size_t)nc, sizeof *cs, by_age);
  gp__core_strmap queues;
  gp__core_strmap_init(&queues, (size_t)s->v->n_queues);
  for (int q = 0; q < s->v->n_queues; q++) gp__core_strmap_put(&queues, s->v->queues[q].name, q);
  gp_plan_scale_note *notes = gp_arena_alloc(plan->arena, sizeof *notes * (size_t)(nc + 1));
  gp_plan_create *creates = gp_arena_alloc(plan->arena, sizeof *creates * (size_t)(nc + 1));
  int n_creates = 0;
  for (int k = 0; k < nc; k++) scale_job(s, cs[k].job, &queues, &notes[k], creates, &n_creates);
  gp__core_strmap_done(&queues);
  free(cs);
  /* Notes by job index, as the pending list is. */
  for (int a = 1; a < nc; a++) {
    gp_plan_scale_note x = notes[a];
    int b = a - 1;
    while (b >= 0 && notes[b].job > x.job) {
      notes[b + 1] = notes[b];
      b--;
    }
    notes[b + 1] = x;
  }
  plan->scale_notes = notes;
  plan->n_scale_notes = nc;
  plan->creates = creates;
  plan->n_creates = n_creates;
}

/* GPUs held on each node by running and stopping jobs and by the plan's starts (a share or
 * a MIG instance holds its GPU). */
static void held_gpus(const gp_view *v, const gp_plan *plan, uint32_t *held) {
  for (int j = 0; j < v->n_jobs; j++)
    if (v->jobs[j].state == GP_JOB_RUNNING || v->jobs[j].state == GP_JOB_STOPPING)
      for (int k = 0; k < v->jobs[j].n_placements; k++) {
        const gp_placement *p = &v->jobs[j].placements[k];
        if (p->node >= 0 && p->node < v->n_nodes) held[p->node] |= p->gpu_mask;
      }
  for (int i = 0; i < plan->n_starts; i++)
    for (int k = 0; k < plan->starts[i].n_placements; k++) {
      const gp_placement *p = &plan->starts[i].placements[k];
      if (p->node >= 0 && p->node < v->n_nodes) held[p->node] |= p->gpu_mask;
    }
}

static void propose_down(scaler *s, gp_plan *plan) {
  const gp_view *v = s->v;
  if (s->cfg->scale_down_after <= 0 || !s->cfg->node_template || !s->cfg->node_idle_since) return;
  const uint32_t *held = s->held;
  int *deleting = gp_xcalloc((size_t)s->nt + 1, sizeof *deleting);
  for (int t = 0; t < s->nt; t++) deleting[t] = s->cfg->templates[t].deleting;
  gp_plan_delete *del = gp_arena_alloc(plan->arena, sizeof *del * (size_t)(v->n_nodes + 1));
  int nd = 0;
  for (int i = 0; i < v->n_nodes; i++) {
    int t = s->cfg->node_template[i];
    gp_time since = s->cfg->node_idle_since[i];
    if (t < 0 || held[i] || since <= 0 || s->now - since < s->cfg->scale_down_after) continue;
    if (deleting[t] >= s->cfg->templates[t].disruption_budget) continue;
    deleting[t]++;
    del[nd++] = (gp_plan_delete){i, since};
  }
  plan->deletes = del;
  plan->n_deletes = nd;
  free(deleting);
}

int gp_scale_propose(const gp_policy *policy, const gp_view *view, const gp_scale_config *cfg,
                     gp_plan *plan, gp_err *err) {
  (void)policy;
  int nt = view->n_templates;
  if (nt > 0 && !cfg->templates)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "templates", "the view has %d templates and no state for them", nt);
  for (int t = 0; t < nt; t++)
    if ((unsigned)view->templates[t].node.capacity > GP_CAP_ON_PREM)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "templates", "template %d has no capacity type", t);
  for (int i = 0; cfg->node_template && i < view->n_nodes; i++)
    if (cfg->node_template[i] < -1 || cfg->node_template[i] >= nt)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "node_template", "node %d names template %d of %d", i,
                        cfg->node_template[i], nt);
  plan->n_creates = plan->n_deletes = plan->n_scale_notes = 0;
  if (nt == 0) return 0;
  scaler s = {.v = view, .cfg = cfg, .now = plan->now, .nt = nt, .hourly = cfg->hourly_cost};
  s.nodes = gp_xcalloc((size_t)nt, sizeof *s.nodes);
  for (int t = 0; t < nt; t++) {
    s.nodes[t] = cfg->templates[t].nodes;
    add_vnodes(&s, t, cfg->templates[t].creating);
  }
  s.held = gp_xcalloc((size_t)view->n_nodes + 1, sizeof *s.held);
  held_gpus(view, plan, s.held);
  /* A provider node that is up with free GPUs left after the step is one a gang's other
   * nodes are still on their way for (nodes register one at a time): its free GPUs count
   * like a node being created, so the gang is not asked for again. */
  for (int i = 0; cfg->node_template && i < view->n_nodes; i++) {
    int t = cfg->node_template[i];
    const gp_node *n = &view->nodes[i];
    if (t < 0 || n->state != GP_NODE_UP) continue;
    int free_gpus = 0;
    for (int g = 0; g < n->n_gpus; g++)
      if (!(s.held[i] >> g & 1) && (!n->gpus || n->gpus[g].health == GP_GPU_HEALTHY)) free_gpus++;
    if (free_gpus == 0) continue;
    add_vnodes(&s, t, 1);
    s.vn[s.n_vn - 1].free_gpus = free_gpus;
  }
  make_orders(&s);
  propose_up(&s, plan);
  propose_down(&s, plan);
  for (int p = 0; p < 3; p++)
    for (int k = 0; k < 2; k++) free(s.order[p][k]);
  free(s.vn);
  free(s.held);
  free(s.nodes);
  return 0;
}
