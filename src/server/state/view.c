/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler's view, kept between steps. Each node, queue and active job has one entry
 * in gp_srv_view; a change to the record marks it stale (gp__srv_job_changed,
 * gp__srv_node_changed, gp__srv_queues_changed) and the next step rewrites only the stale
 * entries, so a step costs what changed, not what exists. Active jobs sit at their
 * position in gp_srv_state.active (a job that moves there is marked changed, which gives
 * it the new rev the core's memo needs); the ended jobs that active ones depend on follow
 * them, found anew each step while any active job names a dependency. With sched_check
 * (tests), every kept entry is compared with one derived afresh and a difference aborts:
 * a change site that forgot to mark its record fails the suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/model.h"
#include "server/state/state.h"
#include "util/mem.h"

static gp_node_state node_state(const gp_srv_node *n) {
  return n->alive ? n->admin_state : GP_NODE_DOWN;
}

/* The entry of node n; its GPUs go to `gpus` (GP_MAX_NODE_GPUS entries). Entries are
 * zeroed and then written field by field, so padding stays zero and sched_check can
 * compare whole entries with memcmp. */
static void fill_node(gp_node *v, gp_gpu *gpus, const gp_srv_node *n) {
  memset(gpus, 0, GP_MAX_NODE_GPUS * sizeof *gpus);
  for (int g = 0; g < n->n_gpus; g++) {
    const gp_srv_gpu *src = &n->gpus[g];
    gp_gpu *u = &gpus[g];
    u->uuid = src->uuid;
    u->health = src->health;
    u->mode = src->mode;
    u->timeslice_replicas = src->replicas;
    u->nvlink_domain = src->nvlink_domain;
    u->mem_mib = src->mem_mib;
    u->n_mig = src->n_mig;
    u->mig = src->mig;
  }
  memset(v, 0, sizeof *v);
  v->name = n->name;
  v->model = n->model ? n->model : "";
  v->gpu_mem_mib = n->gpu_mem_mib;
  v->n_gpus = n->n_gpus;
  v->gpus = gpus;
  v->cpu_milli = n->cpu_milli;
  v->mem_mib = n->mem_mib;
  v->n_labels = n->n_labels;
  v->labels = n->labels;
  v->capacity = n->capacity;
  v->state = node_state(n);
  v->n_images = n->n_pref_hashes; /* images and models (models.c) */
  v->images = n->pref_hashes;
}

static void fill_queue(gp_queue *v, const gp_srv_queue *q) {
  memset(v, 0, sizeof *v);
  *v = (gp_queue){.name = q->name, .deserved_gpus = q->deserved, .limit_gpus = q->limit,
                  .weight = q->weight, .default_priority = q->default_priority,
                  .default_time_limit = q->default_time_limit, .spot = q->spot,
                  .spot_share = q->spot_share, .n_user_limits = q->user_limits.n,
                  .user_limits = q->user_limits.core};
}

void gp__srv_job_request(const gp_srv_job *j, gp_request *r) {
  memset(r, 0, sizeof *r);
  r->tasks = j->tasks;
  r->max_tasks_per_node = j->tasks_per_node;
  r->nodes = j->nodes;
  r->gpus_per_task = j->gpus;
  r->gpu_milli = j->gpu_milli;
  r->gpu_mem_mib = j->gpu_mem_mib;
  r->mig_profile = j->mig;
  r->cpu_milli = j->cpu_milli;
  r->mem_mib = j->mem_mib;
  r->n_gpu_models = j->n_gpu_types;
  r->gpu_models = (const char *const *)j->gpu_types;
  r->n_node_selector = j->n_selector;
  r->node_selector = j->selector;
  r->allow_spot = j->allow_spot;
  r->exclusive = j->exclusive;
  r->spread = j->service != NULL; /* a service's replicas go apart (docs/services.md) */
  const char *image = json_string_value(json_object_get(j->container, "image"));
  r->image = image ? gp_proto_image_hash(image) : 0;
  r->model = j->model ? gp_proto_model_hash(j->model) : 0;
}

/* The entry of job j. Its placements go to `pl` (j->n_alloc entries) when it holds
 * resources; an ended dependency (`holds` false) holds none. */
static void fill_job(gp_job *v, gp_placement *pl, const gp_srv_job *j, bool holds) {
  memset(v, 0, sizeof *v);
  v->id = j->idstr;
  v->queue = j->queue;
  v->user = j->user;
  v->priority_class = j->priority;
  gp__srv_job_request(j, &v->req);
  v->state = j->state;
  v->submitted_at = j->submitted_at;
  v->started_at = j->started_at;
  v->last_checkpoint_at = j->last_checkpoint_at;
  v->time_limit = j->time_limit;
  v->exit_code = j->exit_code;
  v->requeue = j->requeue;
  v->restarts = j->restarts;
  v->begin_at = j->begin_at;
  if (holds && (j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING) && j->n_alloc > 0) {
    for (int t = 0; t < j->n_alloc; t++) {
      memset(&pl[t], 0, sizeof pl[t]);
      pl[t].node = j->alloc[t].node;
      pl[t].gpu_mask = j->alloc[t].gpu_mask;
      pl[t].gpu_milli = j->alloc[t].gpu_milli;
      pl[t].gpu_mem_mib = j->alloc[t].gpu_mem_mib;
      pl[t].mig_instance = j->alloc[t].mig_instance;
    }
    v->placements = pl;
    v->n_placements = j->n_alloc;
  }
  v->n_after = j->n_after;
  v->after = (const char *const *)j->after;
  v->n_after_ok = j->n_after_ok;
  v->after_ok = (const char *const *)j->after_ok;
  v->n_after_any = j->n_after_any;
  v->after_any = (const char *const *)j->after_any;
  v->n_after_not_ok = j->n_after_not_ok;
  v->after_not_ok = (const char *const *)j->after_not_ok;
  v->singleton = j->singleton;
  v->name = j->name;
  v->dep_only = j->array != NULL || j->dep_only;
}

/* Singleton is left out: it reads the active jobs only, never an ended one. */
static bool has_deps(const gp_srv_job *j) {
  return j->n_after || j->n_after_ok || j->n_after_any || j->n_after_not_ok;
}

/* ---- marking ---- */

void gp__srv_job_changed(gp_srv_state *s, gp_srv_job *j) {
  j->rev = ++s->revs;
  gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_JOB_CHANGED, &(gp_srv_hook_ev){.job = j}, NULL);
  if (j->view_stale) return;
  j->view_stale = true;
  gp_srv_view *w = &s->view;
  gp_xgrow((void **)&w->stale_jobs, &w->cap_stale_jobs, (size_t)w->n_stale_jobs + 1,
           sizeof *w->stale_jobs);
  w->stale_jobs[w->n_stale_jobs++] = j->id;
}

void gp__srv_node_changed(gp_srv_state *s, gp_srv_node *n) {
  s->view_rev = ++s->revs;
  gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_NODE_CHANGED, &(gp_srv_hook_ev){.node = n}, NULL);
  if (n->view_stale) return;
  n->view_stale = true;
  gp_srv_view *w = &s->view;
  gp_xgrow((void **)&w->stale_nodes, &w->cap_stale_nodes, (size_t)w->n_stale_nodes + 1,
           sizeof *w->stale_nodes);
  w->stale_nodes[w->n_stale_nodes++] = n->index;
}

void gp__srv_queues_changed(gp_srv_state *s) {
  s->view_rev = ++s->revs;
  s->view.queues_stale = true;
}

void gp__srv_view_active_moved(gp_srv_state *s, gp_srv_job *j, bool added) {
  if (has_deps(j)) s->view.n_with_deps += added ? 1 : -1;
}

/* ---- the step's view ---- */

static void sync_job(gp_srv_state *s, gp_srv_job *j) {
  gp_srv_view *w = &s->view;
  j->view_stale = false;
  if (j->active_pos < 0) return;
  if ((size_t)j->n_alloc > j->cap_view_pl) {
    free(j->view_pl);
    j->view_pl = gp_xcalloc((size_t)j->n_alloc, sizeof *j->view_pl);
    j->cap_view_pl = (size_t)j->n_alloc;
  }
  fill_job(&w->jobs[j->active_pos], j->view_pl, j, true);
  w->job_revs[j->active_pos] = j->rev;
}

/* Appends the ended jobs that active jobs depend on (once each, holding nothing). */
static void add_ended_deps(gp_srv_state *s) {
  gp_srv_view *w = &s->view;
  for (int i = 0; i < w->n_deps; i++) w->deps[i]->view_index = -1;
  w->n_deps = 0;
  if (w->n_with_deps <= 0) return;
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    if (!has_deps(j)) continue;
    char **lists[4] = {j->after, j->after_ok, j->after_any, j->after_not_ok};
    int counts[4] = {j->n_after, j->n_after_ok, j->n_after_any, j->n_after_not_ok};
    for (int l = 0; l < 4; l++)
      for (int k = 0; k < counts[l]; k++) {
        gp_srv_job *d = gp__srv_job_get(s, lists[l][k]);
        if (!d) d = gp__srv_ended_ghost(s, gp__srv_job_id_parse(lists[l][k])); /* out of memory */
        if (!d) d = gp__srv_array_ghost(s, gp__srv_job_id_parse(lists[l][k])); /* not made yet */
        if (!d || d->active_pos >= 0 || d->view_index >= 0) continue;
        size_t at = (size_t)s->n_active + (size_t)w->n_deps;
        gp_xgrow((void **)&w->jobs, &w->cap_jobs, at + 1, sizeof *w->jobs);
        gp_xgrow((void **)&w->job_revs, &w->cap_job_revs, at + 1, sizeof *w->job_revs);
        gp_xgrow((void **)&w->deps, &w->cap_deps, (size_t)w->n_deps + 1, sizeof *w->deps);
        fill_job(&w->jobs[at], NULL, d, false);
        w->job_revs[at] = d->rev;
        d->view_index = (int)at;
        w->deps[w->n_deps++] = d;
      }
  }
}

static void verify(const gp_srv_state *s);

const gp_node *gp__srv_view_nodes(gp_srv_state *s) {
  gp_srv_view *w = &s->view;
  gp_xgrow((void **)&w->nodes, &w->cap_nodes, (size_t)s->n_nodes + 1, sizeof *w->nodes);
  for (int i = 0; i < w->n_stale_nodes; i++) {
    int k = w->stale_nodes[i];
    if (k < 0 || k >= s->n_nodes) continue;
    gp_srv_node *n = s->nodes[k];
    n->view_stale = false;
    fill_node(&w->nodes[k], n->view_gpus, n);
  }
  w->n_stale_nodes = 0;
  return w->nodes;
}

const gp_view *gp__srv_view_sync(gp_srv_state *s) {
  gp_srv_view *w = &s->view;
  gp__srv_view_nodes(s);
  gp_xgrow((void **)&w->queues, &w->cap_queues, (size_t)s->n_queues + 1, sizeof *w->queues);
  gp_xgrow((void **)&w->jobs, &w->cap_jobs, (size_t)s->n_active + 1, sizeof *w->jobs);
  gp_xgrow((void **)&w->job_revs, &w->cap_job_revs, (size_t)s->n_active + 1, sizeof *w->job_revs);
  if (w->queues_stale)
    for (int i = 0; i < s->n_queues; i++) fill_queue(&w->queues[i], s->queues[i]);
  w->queues_stale = false;
  for (int i = 0; i < w->n_stale_jobs; i++) {
    int64_t id = w->stale_jobs[i];
    gp_srv_job *j = id > 0 && (size_t)id < s->cap_jobs ? s->jobs[id] : NULL;
    if (j && j->view_stale) sync_job(s, j);
  }
  w->n_stale_jobs = 0;
  add_ended_deps(s);
  gp__srv_ended_ghosts_trim(s);
  size_t n = (size_t)s->n_active + (size_t)w->n_deps;
  gp_xgrow((void **)&w->at, &w->cap_at, n + 1, sizeof *w->at);
  if (s->n_active) memcpy(w->at, s->active, (size_t)s->n_active * sizeof *w->at);
  if (w->n_deps) memcpy(w->at + s->n_active, w->deps, (size_t)w->n_deps * sizeof *w->at);
  w->view = (gp_view){.n_nodes = s->n_nodes, .nodes = w->nodes, .n_queues = s->n_queues,
                      .queues = w->queues, .n_pools = s->cfg->n_pools, .pools = s->cfg->pools,
                      .n_jobs = s->n_active + w->n_deps, .jobs = w->jobs,
                      .job_revs = w->job_revs, .rev = s->view_rev};
  if (s->sched_check) verify(s);
  return &w->view;
}

gp_srv_job *gp__srv_view_job(const gp_srv_state *s, int index) {
  return index >= 0 && index < s->view.view.n_jobs ? s->view.at[index] : NULL;
}

void gp__srv_view_free(gp_srv_view *w) {
  free(w->nodes);
  free(w->queues);
  free(w->jobs);
  free(w->job_revs);
  free(w->deps);
  free(w->at);
  free(w->stale_jobs);
  free(w->stale_nodes);
}

/* ---- sched_check: the kept view against one derived afresh ---- */

static void differs(const char *what, const char *name) {
  fprintf(stderr, "gpool server: the kept view's %s %s differs from its record "
          "(a change site did not mark it)\n", what, name);
  abort();
}

static void verify(const gp_srv_state *s) {
  const gp_srv_view *w = &s->view;
  gp_gpu gpus[GP_MAX_NODE_GPUS];
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    gp_node v;
    fill_node(&v, gpus, n);
    v.gpus = w->nodes[i].gpus;
    if (n->index != i || memcmp(&v, &w->nodes[i], sizeof v) != 0 ||
        memcmp(gpus, n->view_gpus, sizeof gpus) != 0)
      differs("node", n->name);
  }
  for (int i = 0; i < s->n_queues; i++) {
    gp_queue v;
    fill_queue(&v, s->queues[i]);
    if (memcmp(&v, &w->queues[i], sizeof v) != 0) differs("queue", s->queues[i]->name);
  }
  for (int a = 0; a < s->n_active; a++) {
    const gp_srv_job *j = s->active[a];
    gp_placement *pl = gp_xcalloc((size_t)j->n_alloc + 1, sizeof *pl);
    gp_job v;
    fill_job(&v, pl, j, true);
    const gp_job *k = &w->jobs[a];
    bool same = j->active_pos == a && w->job_revs[a] == j->rev &&
                v.n_placements == k->n_placements &&
                (!v.n_placements || memcmp(pl, k->placements, (size_t)v.n_placements * sizeof *pl) == 0);
    v.placements = k->placements;
    if (!same || memcmp(&v, k, sizeof v) != 0) differs("job", j->idstr);
    free(pl);
  }
}
