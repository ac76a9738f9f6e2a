/* SPDX-License-Identifier: Apache-2.0 */
/* The server side of a scheduling step: build a gp_view from the state (pending, held,
 * running and stopping jobs plus ended jobs that others depend on), run the pure core
 * (gp_sched_step), and apply the plan: persist allocations, state changes and orders in
 * the current transaction; the state thread hands the orders to agents only after the
 * commit. Pending reasons are kept in memory for `gpool why` (they are recomputed every
 * step, so they are not stored). Steps go through the state's memo (gp_sched_step_memo):
 * a job's rev is bumped by every change to it (state.c), the view's by every change to a
 * node or queue, and by any change of the nodes' and queues' figures found here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/plan.h"
#include "core/sched.h"
#include "server/state.h"
#include "util/mem.h"

typedef struct view_build {
  gp_view view;
  gp_node *nodes;
  gp_queue *queues;
  gp_job *jobs;
  gp_srv_job **srv_jobs; /* view index -> job */
  uint64_t *job_revs;    /* view index -> the job's rev */
  gp_placement *placements;
  size_t n_placements;
} view_build;

static gp_node_state node_state(const gp_srv_node *n) {
  return n->alive ? n->admin_state : GP_NODE_DOWN;
}

static void add_job(view_build *b, int *nj, gp_srv_job *j) {
  gp_job *v = &b->jobs[*nj];
  *v = (gp_job){0};
  v->id = j->idstr;
  v->queue = j->queue;
  v->user = j->user;
  v->priority_class = j->priority;
  v->req.tasks = j->tasks;
  v->req.gpus_per_task = j->gpus;
  v->req.gpu_milli = j->gpu_milli;
  v->req.gpu_mem_mib = j->gpu_mem_mib;
  v->req.mig_profile = j->mig;
  v->req.cpu_milli = j->cpu_milli;
  v->req.mem_mib = j->mem_mib;
  v->req.n_gpu_models = j->n_gpu_types;
  v->req.gpu_models = (const char *const *)j->gpu_types;
  v->req.n_node_selector = j->n_selector;
  v->req.node_selector = j->selector;
  v->req.allow_spot = j->allow_spot;
  v->state = j->state;
  v->submitted_at = j->submitted_at;
  v->started_at = j->started_at;
  v->last_checkpoint_at = j->last_checkpoint_at;
  v->time_limit = j->time_limit;
  v->exit_code = j->exit_code;
  v->requeue = j->requeue;
  v->restarts = j->restarts;
  if ((j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING) && j->n_alloc > 0) {
    gp_placement *p = b->placements + b->n_placements;
    b->n_placements += (size_t)j->n_alloc;
    for (int t = 0; t < j->n_alloc; t++)
      p[t] = (gp_placement){j->alloc[t].node, j->alloc[t].gpu_mask, j->alloc[t].gpu_milli,
                            j->alloc[t].gpu_mem_mib, j->alloc[t].mig_instance};
    v->placements = p;
    v->n_placements = j->n_alloc;
  }
  v->n_after = j->n_after;
  v->after = (const char *const *)j->after;
  v->n_after_ok = j->n_after_ok;
  v->after_ok = (const char *const *)j->after_ok;
  v->n_after_any = j->n_after_any;
  v->after_any = (const char *const *)j->after_any;
  j->view_index = *nj;
  b->job_revs[*nj] = j->rev;
  b->srv_jobs[(*nj)++] = j;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return p;
  size_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  *cap = n;
  return gp_xrealloc(p, n * elem);
}

static void build_view(gp_srv_state *s, view_build *b) {
  gp_srv_scratch *sc = &s->scratch;
  memset(b, 0, sizeof *b);
  sc->nodes = grow(sc->nodes, &sc->cap_nodes, (size_t)s->n_nodes + 1, sizeof *sc->nodes);
  b->nodes = sc->nodes;
  for (int i = 0; i < s->n_nodes; i++) {
    gp_srv_node *n = s->nodes[i];
    for (int g = 0; g < n->n_gpus; g++) {
      gp_srv_gpu *src = &n->gpus[g];
      n->view_gpus[g] = (gp_gpu){src->uuid, src->health, src->mode, src->replicas,
                                 src->nvlink_domain, src->mem_mib, src->n_mig, src->mig};
    }
    b->nodes[i] = (gp_node){n->name, n->model ? n->model : "", n->gpu_mem_mib, n->n_gpus,
                            n->view_gpus, n->cpu_milli, n->mem_mib, n->n_labels, n->labels,
                            n->capacity, node_state(n)};
  }
  sc->queues = grow(sc->queues, &sc->cap_queues, (size_t)s->n_queues + 1, sizeof *sc->queues);
  b->queues = sc->queues;
  for (int i = 0; i < s->n_queues; i++) {
    gp_srv_queue *q = s->queues[i];
    b->queues[i] = (gp_queue){q->name, q->deserved, q->limit, q->weight, q->default_priority,
                              q->default_time_limit};
  }
  /* Jobs: every active job, plus ended ones that active jobs depend on (once each). */
  size_t cap = (size_t)s->n_active + 1, n_pl = 1;
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    cap += (size_t)(j->n_after + j->n_after_ok + j->n_after_any);
    n_pl += (size_t)j->n_alloc;
    j->view_index = -1;
  }
  sc->jobs = grow(sc->jobs, &sc->cap_jobs, cap, sizeof *sc->jobs);
  sc->srv_jobs = grow(sc->srv_jobs, &sc->cap_srv_jobs, cap, sizeof *sc->srv_jobs);
  sc->job_revs = grow(sc->job_revs, &sc->cap_job_revs, cap, sizeof *sc->job_revs);
  b->jobs = sc->jobs;
  b->srv_jobs = sc->srv_jobs;
  b->job_revs = sc->job_revs;
  int nj = 0;
  /* Placements of ended dependencies are not needed: only active jobs hold resources. */
  sc->placements = grow(sc->placements, &sc->cap_placements, n_pl, sizeof *sc->placements);
  b->placements = sc->placements;
  for (int a = 0; a < s->n_active; a++) add_job(b, &nj, s->active[a]);
  int n_active = nj;
  for (int a = 0; a < n_active; a++) {
    gp_srv_job *j = b->srv_jobs[a];
    if (!j->n_after && !j->n_after_ok && !j->n_after_any) continue;
    char **lists[3] = {j->after, j->after_ok, j->after_any};
    int counts[3] = {j->n_after, j->n_after_ok, j->n_after_any};
    for (int l = 0; l < 3; l++)
      for (int k = 0; k < counts[l]; k++) {
        gp_srv_job *d = gp__srv_job_get(s, lists[l][k]);
        if (!d || d->active_pos >= 0 || d->view_index >= 0) continue;
        int saved = d->n_alloc;
        d->n_alloc = 0; /* ended: holds nothing */
        add_job(b, &nj, d);
        d->n_alloc = saved;
      }
  }
  b->view = (gp_view){.n_nodes = s->n_nodes, .nodes = b->nodes, .n_queues = s->n_queues,
                      .queues = b->queues, .n_pools = s->cfg->n_pools, .pools = s->cfg->pools,
                      .n_jobs = nj, .jobs = b->jobs, .job_revs = b->job_revs};
}

/* A fingerprint of the nodes' and queues' figures as the view shows them (strings by
 * address: every change of one goes through a site that calls gp__srv_view_changed). The
 * policy and pools come from the config, which a state never changes. */
static uint64_t mix(uint64_t h, uint64_t w) { return (h ^ w) * 0x100000001b3ull; }
static uint64_t mix_d(uint64_t h, double d) {
  uint64_t w;
  memcpy(&w, &d, sizeof w);
  return mix(h, w);
}

static uint64_t view_fingerprint(const gp_view *v) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(h, (uint64_t)v->n_nodes << 32 ^ (uint64_t)v->n_queues);
  for (int i = 0; i < v->n_nodes; i++) {
    const gp_node *n = &v->nodes[i];
    h = mix(h, (uintptr_t)n->name ^ (uint64_t)(uintptr_t)n->model << 1);
    h = mix(h, (uint64_t)n->gpu_mem_mib ^ (uint64_t)n->n_gpus << 48);
    h = mix(h, (uint64_t)n->cpu_milli ^ (uint64_t)n->mem_mib << 20);
    h = mix(h, (uintptr_t)n->labels ^ (uint64_t)n->n_labels << 56 ^ (uint64_t)n->capacity << 40 ^
                   (uint64_t)n->state << 44);
    for (int g = 0; n->gpus && g < n->n_gpus; g++) {
      const gp_gpu *u = &n->gpus[g];
      h = mix(h, (uintptr_t)u->uuid ^ (uint64_t)u->health << 56 ^ (uint64_t)u->mode << 48);
      h = mix(h, (uint64_t)(uint32_t)u->timeslice_replicas ^ (uint64_t)(uint32_t)u->nvlink_domain << 32);
      h = mix(h, (uint64_t)u->mem_mib ^ (uintptr_t)u->mig ^ (uint64_t)u->n_mig << 56);
      for (int k = 0; k < u->n_mig; k++)
        h = mix(h, (uintptr_t)u->mig[k].profile ^ (uintptr_t)u->mig[k].uuid ^ (uint64_t)u->mig[k].start_slot << 58);
    }
  }
  for (int q = 0; q < v->n_queues; q++) {
    const gp_queue *u = &v->queues[q];
    h = mix(h, (uintptr_t)u->name ^ (uint64_t)(uintptr_t)u->default_priority << 1);
    h = mix_d(mix_d(mix_d(h, u->deserved_gpus), u->limit_gpus), u->weight);
    h = mix(h, (uint64_t)u->default_time_limit);
  }
  return h;
}

/* The step, through the memo. With sched_check, a full step beside it must agree. */
static int step(gp_srv_state *s, gp_view *v, int64_t now, gp_plan **ret, gp_err *err) {
  uint64_t fp = view_fingerprint(v);
  if (fp != s->view_fp) {
    s->view_fp = fp;
    gp__srv_view_changed(s);
  }
  v->rev = s->view_rev;
  int r = gp_sched_step_memo(s->memo, &s->cfg->policy, v, now, 0, ret, err);
  if (r || !s->sched_check) return r;
  gp_plan *full = NULL;
  gp_err e = {0};
  if (gp_sched_step(&s->cfg->policy, v, now, &full, &e) || !gp_plan_equal(*ret, full)) {
    fprintf(stderr, "gpool server: the scheduler's memo decided other than a full step at %lld\n",
            (long long)now);
    abort();
  }
  gp_plan_free(full);
  return 0;
}

static int apply_start(gp_srv_state *s, gp_srv_job *j, const gp_plan_start *st, int64_t now,
                       gp_err *err) {
  if (j->state != GP_JOB_PENDING || st->n_placements != j->tasks) return 0;
  for (int t = 0; t < st->n_placements; t++)
    if (st->placements[t].node < 0 || st->placements[t].node >= s->n_nodes) return 0;
  free(j->alloc);
  j->alloc = gp_xcalloc((size_t)st->n_placements, sizeof *j->alloc);
  j->n_alloc = st->n_placements;
  for (int t = 0; t < st->n_placements; t++) {
    const gp_placement *p = &st->placements[t];
    j->alloc[t] = (gp_srv_alloc){p->node, p->gpu_mask, p->gpu_milli, p->gpu_mem_mib,
                                 p->mig_instance, false, 0, 0};
  }
  gp__srv_job_set_state(s, j, GP_JOB_RUNNING);
  j->started_at = now;
  j->has_exit_code = false;
  j->pending_reason = -1;
  j->reservation_at = 0;
  s->counters.starts++;
  gp_hist_observe(&s->counters.wait_s, (double)(now - j->submitted_at));
  json_t *extra = json_object();
  json_object_set_new(extra, "node", json_string(s->nodes[j->alloc[0].node]->name));
  if (j->n_alloc > 1) {
    json_t *nodes = json_array();
    for (int t = 0; t < j->n_alloc; t++)
      json_array_append_new(nodes, json_string(s->nodes[j->alloc[t].node]->name));
    json_object_set_new(extra, "nodes", nodes);
  }
  int r = gp__srv_job_event(s, j, "started", now, extra, err);
  if (!r) r = gp__srv_persist_job(s, j, err);
  for (int t = 0; t < j->n_alloc && !r; t++) {
    const gp_srv_alloc *a = &j->alloc[t];
    gp_store_alloc row = {j->id, t, s->nodes[a->node]->name, a->gpu_mask, a->gpu_milli,
                          a->gpu_mem_mib, a->mig_instance};
    r = gp_store_put_alloc(s->store, &row, err);
  }
  for (int t = 0; t < j->n_alloc && !r; t++) {
    gp_srv_node *n = s->nodes[j->alloc[t].node];
    j->alloc[t].order_id = s->next_order_id;
    r = gp__srv_order_add(s, n, gp__srv_start_order(s, j, t), j->id, true, err);
    /* A stop still queued for an earlier run of this job here must not hit the new run. */
    for (int o = 0; o < n->n_orders - 1 && !r; o++)
      if (n->orders[o].job_id == j->id) {
        r = gp__srv_orders_purge_stale(s, n, err);
        break;
      }
  }
  return r;
}

static bool mig_order_outstanding(const gp_srv_node *n, int gpu) {
  for (int i = 0; i < n->n_orders; i++)
    if (n->orders[i].job_id == -1 - gpu) return true;
  return false;
}

static void keep_figs(gp_srv_state *s, const gp_plan *plan) {
  for (int i = 0; i < s->n_figs; i++) {
    free(s->figs[i].name);
    free(s->figs[i].parent);
  }
  free(s->figs);
  s->figs = gp_xcalloc((size_t)plan->n_queues + 1, sizeof *s->figs);
  s->n_figs = plan->n_queues;
  for (int i = 0; i < plan->n_queues; i++) {
    s->figs[i].fig = plan->queues[i];
    s->figs[i].name = gp_xstrdup(plan->queues[i].name);
    int p = plan->queues[i].parent;
    s->figs[i].parent = p >= 0 && p < plan->n_queues ? gp_xstrdup(plan->queues[p].name) : NULL;
    s->figs[i].fig.name = s->figs[i].name;
  }
}

int gp__srv_schedule(gp_srv_state *s, int64_t now, gp_err *err) {
  view_build b;
  build_view(s, &b);
  gp_plan *plan = NULL;
  int r = step(s, &b.view, now, &plan, err);
  s->sched_dirty = false;
  if (r) return r;
  s->counters.sched_cycles++;
  s->have_plan = true;
  /* Ends first (they never hold resources), then preemptions, then starts. */
  for (int i = 0; i < plan->n_ended && !r; i++) {
    const gp_plan_end *e = &plan->ended[i];
    if (e->job < 0 || e->job >= b.view.n_jobs) continue;
    gp_srv_job *j = b.srv_jobs[e->job];
    if (j->state != GP_JOB_PENDING && j->state != GP_JOB_HELD) continue;
    if (s->n_nodes == 0 && (e->reason == GP_END_NO_MATCHING_NODES || e->reason == GP_END_GPU_MODEL_UNKNOWN)) {
      /* No agent has registered yet: nothing is known about the fleet, so wait. */
      j->pending_reason = GP_PEND_NO_MATCHING_NODES;
      free(j->pending_message);
      j->pending_message = gp_xstrdup("No node has registered yet; the job waits for the first agent.");
      continue;
    }
    free(j->pending_message);
    j->pending_message = e->message ? gp_xstrdup(e->message) : NULL;
    char reason[600];
    snprintf(reason, sizeof reason, "%s%s%s", gp_end_reason_name(e->reason),
             e->message ? ": " : "", e->message ? e->message : "");
    r = gp__srv_job_end(s, j, GP_JOB_FAILED, reason, now, err);
  }
  for (int i = 0; i < plan->n_preemptions && !r; i++) {
    const gp_plan_preemption *p = &plan->preemptions[i];
    if (p->job < 0 || p->job >= b.view.n_jobs) continue;
    gp_srv_job *j = b.srv_jobs[p->job];
    if (j->state != GP_JOB_RUNNING) continue;
    json_t *extra = json_object();
    json_object_set_new(extra, "reason", json_string(gp_preempt_kind_name(p->kind)));
    if (p->for_job >= 0 && p->for_job < b.view.n_jobs)
      json_object_set_new(extra, "for_job", json_string(b.srv_jobs[p->for_job]->idstr));
    r = gp__srv_job_event(s, j, "preempted", now, extra, err);
    if (!r) r = gp__srv_job_stop(s, j, "preempted", now, err);
    s->counters.preemptions++;
  }
  for (int i = 0; i < plan->n_starts && !r; i++) {
    const gp_plan_start *st = &plan->starts[i];
    if (st->job >= 0 && st->job < b.view.n_jobs) r = apply_start(s, b.srv_jobs[st->job], st, now, err);
  }
  for (int i = 0; i < plan->n_pending; i++) {
    const gp_plan_pending *p = &plan->pending[i];
    if (p->job < 0 || p->job >= b.view.n_jobs) continue;
    gp_srv_job *j = b.srv_jobs[p->job];
    j->pending_reason = (int)p->reason;
    j->reservation_at = 0; /* set again below when the plan still reserves for it */
    /* Most pending jobs keep their reason from step to step: copy only what changed. */
    if (!p->message || !j->pending_message || strcmp(p->message, j->pending_message) != 0) {
      free(j->pending_message);
      j->pending_message = p->message ? gp_xstrdup(p->message) : NULL;
    }
  }
  for (int i = 0; i < plan->n_reservations; i++) {
    const gp_plan_reservation *rv = &plan->reservations[i];
    if (rv->job >= 0 && rv->job < b.view.n_jobs) b.srv_jobs[rv->job]->reservation_at = rv->at;
  }
  for (int i = 0; i < plan->n_mig && !r; i++) {
    const gp_plan_mig *m = &plan->mig[i];
    if (m->node < 0 || m->node >= s->n_nodes) continue;
    gp_srv_node *n = s->nodes[m->node];
    if (mig_order_outstanding(n, m->gpu)) continue;
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("mig"));
    json_object_set_new(o, "gpu", json_integer(m->gpu));
    json_t *profiles = json_array(), *slots = json_array();
    for (int k = 0; k < m->n_instances; k++) {
      json_array_append_new(profiles, json_string(m->profiles[k]));
      json_array_append_new(slots, json_integer(m->start_slots[k]));
    }
    json_object_set_new(o, "profiles", profiles);
    json_object_set_new(o, "start_slots", slots);
    r = gp__srv_order_add(s, n, o, -1 - m->gpu, false, err);
  }
  keep_figs(s, plan);
  gp_plan_free(plan);
  /* Ended dependencies were marked in this view only. */
  for (int i = 0; i < b.view.n_jobs; i++) b.srv_jobs[i]->view_index = -1;
  /* Applying the plan may itself have changed what the next step sees (a requeue), but
   * not in a way that needs another step right away. */
  s->sched_dirty = false;
  return r;
}

static bool node_fits(const gp_srv_node *n, const gp_srv_job *j) {
  if (j->n_gpu_types > 0) {
    bool ok = false;
    for (int i = 0; i < j->n_gpu_types && !ok; i++) ok = n->model && strcasecmp(n->model, j->gpu_types[i]) == 0;
    if (!ok) return false;
  }
  if (j->gpus > n->n_gpus) return false;
  if ((j->gpu_milli > 0 || j->gpu_mem_mib > 0 || j->mig) && n->n_gpus == 0) return false;
  if (j->gpu_mem_mib > 0 && n->gpu_mem_mib > 0 && j->gpu_mem_mib > n->gpu_mem_mib) return false;
  if (j->cpu_milli > 0 && n->cpu_milli > 0 && j->cpu_milli > n->cpu_milli) return false;
  if (j->mem_mib > 0 && n->mem_mib > 0 && j->mem_mib > n->mem_mib) return false;
  if (n->capacity == GP_CAP_SPOT && !j->allow_spot) return false;
  for (int i = 0; i < j->n_selector; i++) {
    bool ok = false;
    for (int k = 0; k < n->n_labels && !ok; k++)
      ok = strcmp(n->labels[k].key, j->selector[i].key) == 0 &&
           strcmp(n->labels[k].value, j->selector[i].value) == 0;
    if (!ok) return false;
  }
  return true;
}

int gp__srv_check_feasible(const gp_srv_state *s, const gp_srv_job *j, gp_err *err) {
  if (s->n_nodes == 0) return 0; /* nothing is known yet: the scheduler will say */
  if (j->n_gpu_types > 0) {
    bool known = false;
    for (int i = 0; i < s->n_nodes && !known; i++)
      for (int k = 0; k < j->n_gpu_types && !known; k++)
        known = s->nodes[i]->model && strcasecmp(s->nodes[i]->model, j->gpu_types[k]) == 0;
    if (!known)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_types",
                        "no node in the pool has GPU model %s%s", j->gpu_types[0],
                        j->n_gpu_types > 1 ? " (or the other models listed)" : "");
  }
  for (int i = 0; i < s->n_nodes; i++)
    if (node_fits(s->nodes[i], j)) return 0;
  return gp_err_set(err, GP_EINVAL, NULL, 0, j->gpus > 0 ? "gpus" : "node_selector",
                    "NoMatchingNodes: no node in the pool could ever run one task of this job "
                    "(GPUs, GPU model, CPUs, memory, labels or spot)");
}
