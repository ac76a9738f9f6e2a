/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's autoscaling (scale.h). Node slots past the fleet's hold provider nodes;
 * tmpl_of[slot] is a live provider node's template, -1 for the fleet's nodes and for free
 * slots (down, no GPU). A slot's gen changes whenever its node gets its first job back, is
 * emptied or removed, so a scale-down check of an earlier stretch is dropped. */
#include "sim/replay/scale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/scale.h"
#include "ledger/prices.h"
#include "util/mem.h"

/* One node asked of a provider. */
typedef struct creation {
  int tmpl;
  gp_time called;    /* the create call: paid for from here */
  const char *name;  /* "<template>-<n>", unique in the replay */
  int cost_id;       /* its node id in the cost ledger; -1 when not priced */
  bool gone;         /* deleted or reclaimed */
} creation;

struct gp__sim_scale {
  int n;
  gp_template *tmpl;          /* the view's templates; each new node's shape */
  gp_scale_template *st;      /* what exists of each */
  const char **price_model;   /* per template: its price key in s->prices */
  gp_prices *own_prices;      /* the catalogue with the templates' prices, when any */
  int n_fleet;
  int *tmpl_of;               /* per slot */
  gp_time *idle_since;        /* per slot: since when the provider node is empty; 0: busy */
  uint32_t *gen;              /* per slot */
  int *made;                  /* per slot: its creation */
  int cap;                    /* entries of the per-slot arrays */
  creation *cr;
  int n_cr, cap_cr;
  int64_t live;               /* provider nodes that exist, being created included */
  gp_time last_pass;
  bool tick_queued;
};

/* The templates' own prices added to the config's catalogue, keyed "<model>@<template>"
 * so that a template's price applies to its nodes alone; NULL when no template states
 * one. The config's entries are borrowed: it outlives the replay. */
static gp_prices *own_prices(sim *s) {
  const gp_replay_templates *t = s->cfg->scale.templates;
  const gp_prices *base = s->cfg->prices;
  int extra = 0;
  for (int i = 0; i < t->n; i++) extra += t->spec[i].price_per_gpu_hour >= 0;
  if (extra == 0) return NULL;
  gp_prices *p = gp_xcalloc(1, sizeof *p);
  p->arena = gp_arena_new();
  p->refs = 1;
  int n_base = base ? base->n_prices : 0;
  p->prices = gp_arena_alloc(p->arena, (size_t)(n_base + extra) * sizeof *p->prices);
  if (base) {
    p->currency = base->currency;
    memcpy(p->prices, base->prices, (size_t)n_base * sizeof *p->prices);
    p->n_commitments = base->n_commitments;
    p->commitments = base->commitments;
    p->n_energy = base->n_energy;
    p->energy = base->energy;
  }
  p->n_prices = n_base;
  for (int i = 0; i < t->n; i++) {
    const gp_template_spec *sp = &t->spec[i];
    if (sp->price_per_gpu_hour < 0) continue;
    s->scale->price_model[i] =
        gp_arena_printf(s->arena, "%s@%s", sp->t.node.model, sp->t.node.name);
    p->prices[p->n_prices++] = (gp_price){.model = s->scale->price_model[i],
                                          .capacity = sp->t.node.capacity, .from = 0,
                                          .per_gpu_hour = sp->price_per_gpu_hour};
  }
  return p;
}

void gp__sim_scale_start(sim *s) {
  const gp_replay_templates *t = s->cfg->scale.templates;
  s->prices = s->cfg->prices;
  if (!t || t->n < 1) return;
  gp__sim_scale *sc = gp_xcalloc(1, sizeof *sc);
  s->scale = sc;
  sc->n = t->n;
  sc->n_fleet = s->fleet->n_nodes;
  sc->tmpl = gp_xcalloc((size_t)t->n, sizeof *sc->tmpl);
  sc->st = gp_xcalloc((size_t)t->n, sizeof *sc->st);
  sc->price_model = gp_xcalloc((size_t)t->n, sizeof *sc->price_model);
  for (int i = 0; i < t->n; i++) {
    sc->tmpl[i] = t->spec[i].t;
    sc->tmpl[i].node.state = GP_NODE_UP;
    sc->tmpl[i].node.gpus = NULL;
    sc->price_model[i] = sc->tmpl[i].node.model;
    sc->st[i].disruption_budget = t->spec[i].disruption_budget;
    if (sc->tmpl[i].node.n_gpus > s->max_node_gpus) s->max_node_gpus = sc->tmpl[i].node.n_gpus;
  }
  sc->own_prices = own_prices(s);
  if (sc->own_prices) s->prices = sc->own_prices;
  sc->last_pass = INT64_MIN / 2;
  sc->cap = s->cap_nodes;
  sc->tmpl_of = gp_xmalloc((size_t)sc->cap * sizeof *sc->tmpl_of);
  for (int i = 0; i < sc->cap; i++) sc->tmpl_of[i] = -1;
  sc->idle_since = gp_xcalloc((size_t)sc->cap, sizeof *sc->idle_since);
  sc->gen = gp_xcalloc((size_t)sc->cap, sizeof *sc->gen);
  sc->made = gp_xcalloc((size_t)sc->cap, sizeof *sc->made);
  s->r->scale.modelled = true;
  s->r->scale.peak_nodes = s->fleet->n_nodes;
}

void gp__sim_scale_free(sim *s) {
  gp__sim_scale *sc = s->scale;
  if (!sc) return;
  free(sc->tmpl);
  free(sc->st);
  free(sc->price_model);
  gp_prices_free(sc->own_prices);
  free(sc->tmpl_of);
  free(sc->idle_since);
  free(sc->gen);
  free(sc->made);
  free(sc->cr);
  free(sc);
  s->scale = NULL;
}

void gp__sim_scale_view(const sim *s, gp_view *v) {
  if (!s->scale) return;
  v->n_templates = s->scale->n;
  v->templates = s->scale->tmpl;
}

/* ---- node slots ---- */

static void *grow(void *p, size_t elem, int old_n, int new_n) {
  p = gp_xrealloc(p, (size_t)new_n * elem);
  memset((char *)p + (size_t)old_n * elem, 0, (size_t)(new_n - old_n) * elem);
  return p;
}

/* Room for one more node slot in every per-node array. */
static void ensure_slot(sim *s) {
  gp__sim_scale *sc = s->scale;
  if (s->n_nodes < s->cap_nodes) return;
  int old = s->cap_nodes, cap = old * 2;
  s->nodes = grow(s->nodes, sizeof *s->nodes, old, cap);
  s->jobs_on = grow(s->jobs_on, sizeof *s->jobs_on, old, cap);
  s->gpu_used = grow(s->gpu_used, GP_MAX_NODE_GPUS * sizeof *s->gpu_used, old, cap);
  s->node_idle = grow(s->node_idle, sizeof *s->node_idle, old + 1, cap + 1);
  s->node_id = grow(s->node_id, sizeof *s->node_id, old, cap);
  if (s->spot_mean) {
    s->spot_mean = grow(s->spot_mean, sizeof *s->spot_mean, old, cap);
    s->spot_life = grow(s->spot_life, sizeof *s->spot_life, old, cap);
    s->spot_state = grow(s->spot_state, sizeof *s->spot_state, old, cap);
  }
  sc->tmpl_of = grow(sc->tmpl_of, sizeof *sc->tmpl_of, old, cap);
  for (int i = old; i < cap; i++) sc->tmpl_of[i] = -1;
  sc->idle_since = grow(sc->idle_since, sizeof *sc->idle_since, old, cap);
  sc->gen = grow(sc->gen, sizeof *sc->gen, old, cap);
  sc->made = grow(sc->made, sizeof *sc->made, old, cap);
  s->cap_nodes = sc->cap = cap;
}

/* A free slot past the fleet's: the first one, else a new one at the end (down, no GPU,
 * counted among the nodes with no idle GPU). */
static int take_slot(sim *s) {
  gp__sim_scale *sc = s->scale;
  for (int i = sc->n_fleet; i < s->n_nodes; i++)
    if (sc->tmpl_of[i] < 0) return i;
  ensure_slot(s);
  int i = s->n_nodes++;
  s->nodes[i] = (gp_node){.name = "", .model = "", .state = GP_NODE_DOWN};
  s->idle_hist[0]++;
  return i;
}

/* Free slots at the end leave the view. */
static void trim_slots(sim *s) {
  gp__sim_scale *sc = s->scale;
  while (s->n_nodes > sc->n_fleet && sc->tmpl_of[s->n_nodes - 1] < 0) {
    s->n_nodes--;
    s->idle_hist[0]--;
  }
}

/* idle_since of a node empty from t: the core reads 0 as "holds a job", and a trace's clock
 * may start at 0. */
static gp_time empty_since(gp_time t) { return t > 0 ? t : 1; }

static void check_later(sim *s, int slot, gp_time at) {
  gp__sim_heap_push(&s->heap, at, GP__EV_SCALE_CHECK, slot, s->scale->gen[slot]);
}

/* A pass for the pending jobs, at most one interval after the last one. */
static void queue_tick(sim *s, gp_time t) {
  gp__sim_scale *sc = s->scale;
  if (sc->tick_queued) return;
  gp_time at = sc->last_pass + s->cfg->scale.interval;
  gp__sim_heap_push(&s->heap, at > t ? at : t, GP__EV_SCALE_TICK, 0, 0);
  sc->tick_queued = true;
}

static void life_ends(sim *s, const creation *c, gp_time t) {
  gp_replay_scale_stats *st = &s->r->scale;
  double h = t > c->called ? (double)(t - c->called) / 3600.0 : 0;
  st->node_hours += h;
  st->gpu_hours += h * s->scale->tmpl[c->tmpl].node.n_gpus;
  if (s->cost && c->cost_id >= 0) gp__sim_cost_node_end(s->cost, c->cost_id, t);
}

/* Provider node `slot` is gone at t (it holds no job). */
static void node_remove(sim *s, int slot, gp_time t) {
  gp__sim_scale *sc = s->scale;
  gp_node *n = &s->nodes[slot];
  if (n->state == GP_NODE_UP)
    for (int g = 0; g < n->n_gpus; g++)
      if (s->gpu_used[slot * GP_MAX_NODE_GPUS + g] == 0) gp__sim_idle_gpus(s, slot, -1);
  if (n->state != GP_NODE_DOWN) s->up_gpus -= n->n_gpus;
  if (s->spot_state && s->spot_state[slot] != 0) s->spot_out--;
  if (s->spot_state) {
    s->spot_state[slot] = 0;
    s->spot_life[slot]++; /* its spot events are dropped */
  }
  creation *c = &sc->cr[sc->made[slot]];
  c->gone = true;
  life_ends(s, c, t);
  sc->st[c->tmpl].nodes--;
  sc->live--;
  n->n_gpus = 0;
  n->gpus = NULL;
  n->state = GP_NODE_DOWN;
  s->view_rev++;
  sc->tmpl_of[slot] = -1;
  sc->idle_since[slot] = 0;
  sc->gen[slot]++;
  trim_slots(s);
  if (s->pending_total > 0) queue_tick(s, t); /* max_nodes and the cost cap have room */
}

/* Creation k's node is up at t. */
static void node_up(sim *s, int k, gp_time t) {
  gp__sim_scale *sc = s->scale;
  creation *c = &sc->cr[k];
  sc->st[c->tmpl].creating--;
  int slot = take_slot(s);
  const gp_node *shape = &sc->tmpl[c->tmpl].node;
  gp_node *n = &s->nodes[slot];
  *n = *shape;
  n->name = c->name;
  n->state = GP_NODE_UP;
  if (s->fleet->shared) {
    gp_gpu *g = gp_arena_alloc(s->arena, (size_t)n->n_gpus * sizeof *g);
    for (int i = 0; i < n->n_gpus; i++)
      g[i] = (gp_gpu){.mode = GP_SHARE_SHARED, .nvlink_domain = -1};
    n->gpus = g;
  }
  s->view_rev++;
  for (int g = 0; g < n->n_gpus; g++) gp__sim_idle_gpus(s, slot, +1);
  s->up_gpus += n->n_gpus;
  s->jobs_on[slot] = 0;
  s->node_id[slot] = c->cost_id;
  sc->tmpl_of[slot] = c->tmpl;
  sc->made[slot] = k;
  sc->gen[slot]++;
  sc->idle_since[slot] = empty_since(t);
  if (s->cfg->scale.scale_down_after > 0) check_later(s, slot, t + s->cfg->scale.scale_down_after);
  if (s->spot_mean) {
    s->spot_state[slot] = 0;
    s->spot_life[slot]++;
    s->spot_mean[slot] = n->capacity == GP_CAP_SPOT
                             ? gp_replay_spot_mean_s(gp_replay_spot_rate(&s->cfg->spot, n->model))
                             : 0;
    if (s->spot_mean[slot] > 0) gp__sim_spot_schedule(s, slot, t);
  }
}

/* ---- passes ---- */

/* A template's price per GPU-hour at t: its own, else the catalogue's; < 0: not known. */
static double price_at(const sim *s, int i, gp_time t) {
  const gp_replay_templates *tp = s->cfg->scale.templates;
  if (tp->spec[i].price_per_gpu_hour >= 0) return tp->spec[i].price_per_gpu_hour;
  double v;
  const gp_node *n = &s->scale->tmpl[i].node;
  return s->cfg->prices && gp_prices_rate(s->cfg->prices, n->model, n->capacity, t, &v) ? v : -1;
}

int gp__sim_scale_propose(sim *s, const gp_view *v, gp_plan *plan, gp_time now) {
  gp__sim_scale *sc = s->scale;
  sc->last_pass = now;
  double hourly = 0;
  for (int i = 0; i < sc->n; i++) {
    sc->st[i].price_per_gpu_hour = price_at(s, i, now);
    if (sc->st[i].price_per_gpu_hour > 0)
      hourly += sc->st[i].price_per_gpu_hour * sc->tmpl[i].node.n_gpus * sc->st[i].nodes;
  }
  const gp_replay_scale *cfg = &s->cfg->scale;
  gp_scale_config c = {.templates = sc->st, .max_hourly_cost = cfg->max_hourly_cost,
                       .hourly_cost = hourly, .node_template = sc->tmpl_of,
                       .node_idle_since = sc->idle_since,
                       .scale_down_after = cfg->scale_down_after};
  memcpy(c.class_rank, cfg->class_rank, sizeof c.class_rank);
  gp_err e = {0};
  int rc = gp_scale_propose(&s->cfg->policy, v, &c, plan, &e);
  if (rc) {
    char msg[700];
    gp_err_format(&e, msg, sizeof msg);
    return gp_err_set(s->err, rc, NULL, 0, NULL, "autoscaling refused the replay's view: %s", msg);
  }
  return 0;
}

static void create(sim *s, int tmpl, gp_time now) {
  gp__sim_scale *sc = s->scale;
  if (sc->n_cr == sc->cap_cr) {
    sc->cap_cr = sc->cap_cr ? sc->cap_cr * 2 : 64;
    sc->cr = gp_xrealloc(sc->cr, (size_t)sc->cap_cr * sizeof *sc->cr);
  }
  int k = sc->n_cr++;
  creation *c = &sc->cr[k];
  const gp_node *shape = &sc->tmpl[tmpl].node;
  *c = (creation){.tmpl = tmpl, .called = now, .cost_id = -1,
                  .name = gp_arena_printf(s->arena, "%s-%d", shape->name, k + 1)};
  if (s->cost)
    c->cost_id = gp__sim_cost_node_new(s->cost, sc->n_fleet, shape, c->name,
                                       sc->price_model[tmpl], now);
  sc->st[tmpl].nodes++;
  sc->st[tmpl].creating++;
  sc->live++;
  gp_replay_scale_stats *st = &s->r->scale;
  st->created++;
  if (sc->live > st->peak_provider_nodes) st->peak_provider_nodes = sc->live;
  if (sc->n_fleet + sc->live > st->peak_nodes) st->peak_nodes = sc->n_fleet + sc->live;
  gp__sim_heap_push(&s->heap, now + s->cfg->spot.provider_delay, GP__EV_NODE_UP, k, 0);
}

int gp__sim_scale_apply(sim *s, const gp_plan *plan, gp_time now) {
  gp__sim_scale *sc = s->scale;
  for (int i = 0; i < plan->n_creates; i++) {
    const gp_plan_create *c = &plan->creates[i];
    if (c->tmpl < 0 || c->tmpl >= sc->n || c->count < 1 || c->count > 100000)
      return gp_err_set(s->err, GP_ESTATE, NULL, 0, NULL,
                        "inconsistent plan from autoscaling: %d nodes of template %d",
                        c->count, c->tmpl);
    for (int k = 0; k < c->count; k++) create(s, c->tmpl, now);
  }
  for (int i = 0; i < plan->n_deletes; i++) {
    int slot = plan->deletes[i].node;
    if (slot < 0 || slot >= s->n_nodes || sc->tmpl_of[slot] < 0 || s->jobs_on[slot] > 0)
      return gp_err_set(s->err, GP_ESTATE, NULL, 0, NULL,
                        "inconsistent plan from autoscaling: it deletes node index %d, which "
                        "is not an empty provider node", slot);
    node_remove(s, slot, now);
    s->r->scale.deleted++;
  }
  /* Nodes the disruption budget kept for now go in a later pass. */
  gp_time after = s->cfg->scale.scale_down_after;
  if (plan->n_deletes > 0 && after > 0)
    for (int i = sc->n_fleet; i < s->n_nodes; i++)
      if (sc->tmpl_of[i] >= 0 && sc->idle_since[i] > 0 && now - sc->idle_since[i] >= after)
        check_later(s, i, now + s->cfg->scale.interval);
  return 0;
}

/* ---- the engine's news ---- */

void gp__sim_scale_pending(sim *s, gp_time t) {
  if (s->scale) queue_tick(s, t);
}

void gp__sim_scale_node_busy(sim *s, int node) {
  gp__sim_scale *sc = s->scale;
  if (!sc || sc->tmpl_of[node] < 0) return;
  sc->idle_since[node] = 0;
  sc->gen[node]++;
}

void gp__sim_scale_node_empty(sim *s, int node, gp_time t) {
  gp__sim_scale *sc = s->scale;
  if (!sc || sc->tmpl_of[node] < 0) return;
  sc->idle_since[node] = empty_since(t);
  sc->gen[node]++;
  if (s->cfg->scale.scale_down_after > 0) check_later(s, node, t + s->cfg->scale.scale_down_after);
}

bool gp__sim_scale_event(sim *s, const gp__sim_event *e) {
  gp__sim_scale *sc = s->scale;
  switch (e->kind) {
  case GP__EV_NODE_UP:
    node_up(s, e->id, e->t);
    return true;
  case GP__EV_SCALE_CHECK:
    if (e->id >= s->n_nodes || sc->tmpl_of[e->id] < 0 || sc->gen[e->id] != e->gen) return false;
    s->scale_pass = true;
    return true;
  case GP__EV_SCALE_TICK:
    sc->tick_queued = false;
    if (s->pending_total == 0) return false;
    s->scale_pass = true;
    return true;
  }
  return false;
}

bool gp__sim_scale_reclaimed(sim *s, int node, gp_time t) {
  gp__sim_scale *sc = s->scale;
  if (!sc || sc->tmpl_of[node] < 0) return false;
  s->r->scale.interrupted++;
  node_remove(s, node, t);
  return true;
}

bool gp__sim_scale_busy(const sim *s) {
  const gp__sim_scale *sc = s->scale;
  if (!sc) return false;
  if (sc->tick_queued) return true;
  for (int i = 0; i < sc->n; i++)
    if (sc->st[i].creating > 0) return true;
  /* An empty node's deletion makes room under max_nodes and the cost cap. */
  if (s->cfg->scale.scale_down_after > 0)
    for (int i = sc->n_fleet; i < s->n_nodes; i++)
      if (sc->tmpl_of[i] >= 0 && sc->idle_since[i] > 0) return true;
  return false;
}

void gp__sim_scale_finish(sim *s, gp_time t_end) {
  gp__sim_scale *sc = s->scale;
  if (!sc) return;
  /* Nodes up or still being created at the end are paid for up to it. */
  for (int k = 0; k < sc->n_cr; k++)
    if (!sc->cr[k].gone) life_ends(s, &sc->cr[k], t_end);
}
