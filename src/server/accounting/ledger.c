/* SPDX-License-Identifier: Apache-2.0 */
/* The server's side of the usage ledger (store.h, `ledger` and `node_ledger`): one
 * interval per (task, GPU) of each run of a job, opened where the run's allocations are
 * stored and closed where they are freed, in the same transaction, so a kill -9 never
 * separates a job's state from its ledger; one interval per node state (up, drained,
 * down). Also the running totals per (queue, model, capacity) that metrics and budgets
 * read, and each job's list of attempts (`gpool show`).
 *
 * A GPU's share is what the interval costs of it: a whole GPU 1, a fraction gpu_milli /
 * 1000, a MIG instance its compute slices over the GPU's (the core's MIG tables), a
 * time-slice replica 1 / replicas. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/mig.h"
#include "ledger/report.h"
#include "server/accounting/fairshare.h"
#include "server/accounting/ledger.h"
#include "server/state/state.h"
#include "util/mem.h"

#define MAX_ATTEMPTS_KEPT 100 /* a job's attempts list keeps the latest this many */

/* Use of the intervals closed since the server started, per (queue, model, capacity). */
typedef struct usage_sum {
  char *queue, *model;  /* owned */
  gp_capacity capacity;
  double gpu_s, used_gpu_s, measured_gpu_s;
} usage_sum;

/* gp_srv_state.ledger (ledger.h). */
struct gp__srv_ledger {
  bool off;             /* no writes to the store (gp__srv_ledger_set_off) */
  usage_sum *sums;
  int n_sums;
  size_t cap_sums;
};

/* The record of s, made on first use. */
static struct gp__srv_ledger *ledger_of(gp_srv_state *s) {
  if (!s->ledger) s->ledger = gp_xcalloc(1, sizeof *s->ledger);
  return s->ledger;
}

void gp__srv_ledger_set_off(gp_srv_state *s, bool off) {
  if (off || s->ledger) ledger_of(s)->off = off;
}

bool gp__srv_ledger_is_off(const gp_srv_state *s) { return s->ledger && s->ledger->off; }

static void sums_free(struct gp__srv_ledger *l) {
  for (int i = 0; i < l->n_sums; i++) {
    free(l->sums[i].queue);
    free(l->sums[i].model);
  }
  free(l->sums);
  l->sums = NULL;
  l->n_sums = 0;
  l->cap_sums = 0;
}

void gp__srv_ledger_free(gp_srv_state *s) {
  if (!s->ledger) return;
  sums_free(s->ledger);
  free(s->ledger);
  s->ledger = NULL;
}

bool gp__srv_ledger_off_env(void) {
  /* Read once: the first state is made at server start, on the main thread, before any
   * other thread could ask. */
  static int off = -1;
  if (off < 0) {
    const char *v = getenv("GPOOL_LEDGER_OFF");
    off = v && strcmp(v, "1") == 0;
  }
  return off;
}

double gp__srv_gpu_share(const gp_srv_node *n, int gpu, const gp_srv_alloc *a) {
  const gp_srv_gpu *g = &n->gpus[gpu];
  if (a->mig_instance >= 0 && a->mig_instance < g->n_mig) {
    const gp_mig_model *m = gp_mig_model_find(n->model);
    const gp_mig_profile *p = m ? gp_mig_profile_find(m, g->mig[a->mig_instance].profile) : NULL;
    /* The largest profile holds every compute slice of the GPU (7g). */
    int all = m && m->n_profiles > 0 ? m->profiles[m->n_profiles - 1].compute_slices : 0;
    if (p && all > 0) return (double)p->compute_slices / all;
    return 1;
  }
  if (a->gpu_milli > 0 && a->gpu_milli < 1000) {
    if (g->mode == GP_SHARE_TIMESLICE && g->replicas > 1) return 1.0 / g->replicas;
    return a->gpu_milli / 1000.0;
  }
  return 1;
}

double gp__srv_task_share(const gp_srv_state *s, const gp_srv_alloc *a) {
  if (a->node < 0 || a->node >= s->n_nodes) return 0;
  const gp_srv_node *n = s->nodes[a->node];
  double sum = 0;
  for (uint32_t m = a->gpu_mask; m; m &= m - 1) {
    int g = __builtin_ctz(m);
    if (g < n->n_gpus) sum += gp__srv_gpu_share(n, g, a);
  }
  return sum;
}

void gp__srv_job_use(const gp_srv_state *s, const gp_srv_job *j, double *busy_gpu_s,
                     double *share_gpus) {
  double busy = 0, share = 0;
  for (int t = 0; t < j->n_alloc; t++) {
    const gp_srv_alloc *a = &j->alloc[t];
    if (a->used_gpu_s < 0) busy = -1;
    else if (busy >= 0) busy += a->used_gpu_s;
    share += gp__srv_task_share(s, a);
  }
  *busy_gpu_s = j->n_alloc > 0 ? busy : -1;
  *share_gpus = share;
}

/* ---- running totals ---- */

/* The slot of a key, or -1. */
static int sum_index(const gp_srv_state *s, const char *queue, const char *model, gp_capacity c) {
  for (int i = 0; s->ledger && i < s->ledger->n_sums; i++) {
    const usage_sum *u = &s->ledger->sums[i];
    if (u->capacity == c && strcmp(u->queue, queue) == 0 && strcmp(u->model, model) == 0)
      return i;
  }
  return -1;
}

static usage_sum *sum_for(gp_srv_state *s, const char *queue, const char *model, gp_capacity c) {
  struct gp__srv_ledger *l = ledger_of(s);
  int i = sum_index(s, queue, model, c);
  if (i >= 0) return &l->sums[i];
  gp_xgrow((void **)&l->sums, &l->cap_sums, (size_t)l->n_sums + 1, sizeof *l->sums);
  usage_sum *u = &l->sums[l->n_sums++];
  memset(u, 0, sizeof *u);
  u->queue = gp_xstrdup(queue);
  u->model = gp_xstrdup(model);
  u->capacity = c;
  return u;
}

/* What task `a` of job j has held since its run started, added to the sums: GPU-seconds
 * held, SM-busy GPU-seconds, and the GPU-seconds held whose use the agent measured (use's
 * denominator: a task whose use is unknown, an MPS client, is neither busy nor idle). */
static void add_task(const gp_srv_state *s, const gp_srv_job *j, const gp_srv_alloc *a,
                     int64_t now, double *gpu_s, double *used_gpu_s, double *measured_gpu_s) {
  int64_t held = j->started_at > 0 && now > j->started_at ? now - j->started_at : 0;
  double g = gp__srv_task_share(s, a) * (double)held;
  *gpu_s += g;
  if (a->used_gpu_s >= 0) {
    *used_gpu_s += a->used_gpu_s;
    *measured_gpu_s += g;
  }
}

void gp__srv_usage_adopt(gp_srv_state *s, gp_srv_state *old) {
  struct gp__srv_ledger *l = ledger_of(s);
  sums_free(l);
  if (old->ledger) {
    l->sums = old->ledger->sums;
    l->n_sums = old->ledger->n_sums;
    l->cap_sums = old->ledger->cap_sums;
    old->ledger->sums = NULL;
    old->ledger->n_sums = 0;
    old->ledger->cap_sums = 0;
  }
  for (int k = 0; k < s->n_active; k++)
    if (s->active[k]->state == GP_JOB_RUNNING || s->active[k]->state == GP_JOB_STOPPING)
      gp__srv_usage_track(s, s->active[k]);
}

void gp__srv_usage_track(gp_srv_state *s, const gp_srv_job *j) {
  for (int t = 0; t < j->n_alloc; t++) {
    const gp_srv_alloc *a = &j->alloc[t];
    if (a->node < 0 || a->node >= s->n_nodes) continue;
    const gp_srv_node *n = s->nodes[a->node];
    sum_for(s, j->queue, n->model ? n->model : "", n->capacity);
  }
}

void gp__srv_usage_totals(const gp_srv_state *s, int64_t now,
                          void (*fn)(void *ctx, const gp_srv_usage_total *t), void *ctx) {
  int n_sums = s->ledger ? s->ledger->n_sums : 0;
  size_t n = (size_t)n_sums + 1;
  double *open_gpu_s = gp_xcalloc(n, sizeof *open_gpu_s);
  double *open_used = gp_xcalloc(n, sizeof *open_used);
  double *open_measured = gp_xcalloc(n, sizeof *open_measured);
  for (int k = 0; k < s->n_active; k++) {
    const gp_srv_job *j = s->active[k];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) continue;
    for (int t = 0; t < j->n_alloc; t++) {
      const gp_srv_alloc *a = &j->alloc[t];
      if (a->node < 0 || a->node >= s->n_nodes) continue;
      const gp_srv_node *nd = s->nodes[a->node];
      int i = sum_index(s, j->queue, nd->model ? nd->model : "", nd->capacity);
      if (i >= 0) add_task(s, j, a, now, &open_gpu_s[i], &open_used[i], &open_measured[i]);
    }
  }
  for (int i = 0; i < n_sums; i++) {
    const usage_sum *u = &s->ledger->sums[i];
    gp_srv_usage_total t = {u->queue, u->model, u->capacity, u->gpu_s + open_gpu_s[i],
                            u->used_gpu_s + open_used[i], u->measured_gpu_s + open_measured[i]};
    fn(ctx, &t);
  }
  free(open_gpu_s);
  free(open_used);
  free(open_measured);
}

/* ---- job intervals ---- */

/* The job's attempt list: a new entry for the run that starts now. */
static void attempt_started(const gp_srv_state *s, gp_srv_job *j, int64_t now) {
  if (!j->attempts) j->attempts = json_array();
  while (json_array_size(j->attempts) >= MAX_ATTEMPTS_KEPT) json_array_remove(j->attempts, 0);
  json_t *nodes = json_array();
  for (int t = 0; t < j->n_alloc; t++) {
    const char *name = s->nodes[j->alloc[t].node]->name;
    bool dup = false;
    for (size_t i = 0; i < json_array_size(nodes) && !dup; i++)
      dup = strcmp(json_string_value(json_array_get(nodes, i)), name) == 0;
    if (!dup) json_array_append_new(nodes, json_string(name));
  }
  json_t *o = json_object();
  json_object_set_new(o, "attempt", json_integer(j->restarts + 1));
  json_object_set_new(o, "start", json_integer(now));
  json_object_set_new(o, "end", json_null());
  json_object_set_new(o, "nodes", nodes);
  json_object_set_new(o, "end_reason", json_null());
  json_array_append_new(j->attempts, o);
}

/* Opens an interval per (task, GPU) of the job's current run from `start`. */
static int open_intervals(gp_srv_state *s, gp_srv_job *j, int64_t start, gp_err *err) {
  int r = 0;
  for (int t = 0; t < j->n_alloc && !r; t++) {
    gp_srv_alloc *a = &j->alloc[t];
    a->used_gpu_s = a->energy_j = -1;
    if (gp__srv_ledger_is_off(s)) continue;
    const gp_srv_node *n = s->nodes[a->node];
    for (uint32_t m = a->gpu_mask; m && !r; m &= m - 1) {
      int g = __builtin_ctz(m);
      if (g >= n->n_gpus) continue;
      gp_store_interval iv = {.job_id = j->id, .attempt = j->restarts + 1, .task = t,
                              .user = j->user, .queue = j->queue, .node = n->name,
                              .gpu_uuid = n->gpus[g].uuid ? n->gpus[g].uuid : "",
                              .model = n->model ? n->model : "",
                              .capacity = gp_capacity_name(n->capacity),
                              .service = j->service ? j->service : "",
                              .share = gp__srv_gpu_share(n, g, a), .start = start};
      r = gp_store_open_interval(s->store, &iv, err);
    }
  }
  return r;
}

int gp__srv_ledger_open_job(gp_srv_state *s, gp_srv_job *j, int64_t now, gp_err *err) {
  attempt_started(s, j, now);
  gp__srv_usage_track(s, j);
  return open_intervals(s, j, now, err);
}

int gp__srv_ledger_close_job(gp_srv_state *s, gp_srv_job *j, int64_t now, gp_err *err) {
  /* A run whose allocations were lost (none left in memory) still closes its intervals. */
  json_t *last = json_array_get(j->attempts, json_array_size(j->attempts) - 1);
  if (json_is_object(last) && json_is_null(json_object_get(last, "end")))
    json_object_set_new(last, "end", json_integer(now));
  for (int t = 0; t < j->n_alloc; t++) {
    const gp_srv_alloc *a = &j->alloc[t];
    if (a->node < 0 || a->node >= s->n_nodes) continue;
    const gp_srv_node *n = s->nodes[a->node];
    usage_sum *u = sum_for(s, j->queue, n->model ? n->model : "", n->capacity);
    add_task(s, j, a, now, &u->gpu_s, &u->used_gpu_s, &u->measured_gpu_s);
  }
  /* Decayed usage for fair share, in this same transaction (fairshare.c). */
  int r = gp__srv_fairshare_charge(s, j, now, err);
  if (r || gp__srv_ledger_is_off(s)) return r;
  return gp_store_close_intervals(s->store, j->id, now, err);
}

int gp__srv_ledger_use(gp_srv_state *s, gp_srv_job *j, int node, int task, double used_gpu_s,
                       double energy_j, int64_t now, gp_err *err) {
  if (used_gpu_s < 0 && energy_j < 0) return 0;
  if (task >= 0 && (task >= j->n_alloc || j->alloc[task].node != node)) return 0;
  /* What the job's GPUs on the node (the task's, when the figures are one task's) could
   * have done since the run started (a minute of slack for the agent's clock and
   * sampling): a figure beyond it is cut, not believed. */
  int gpus = 0;
  for (int t = 0; t < j->n_alloc; t++)
    if (j->alloc[t].node == node && (task < 0 || t == task))
      gpus += __builtin_popcount(j->alloc[t].gpu_mask);
  double elapsed = (double)(now - j->started_at + 60);
  if (j->started_at > 0 && elapsed > 0 && gpus > 0) {
    if (used_gpu_s > gpus * elapsed) used_gpu_s = gpus * elapsed;
    if (energy_j > gpus * elapsed * GP_SRV_MAX_GPU_WATTS) energy_j = gpus * elapsed * GP_SRV_MAX_GPU_WATTS;
  }
  /* One task's figures are its own; an agent that names no task sends the job's on all its
   * tasks on the node, and each task takes its share. */
  double node_share = 0;
  bool changed = false;
  for (int t = 0; t < j->n_alloc; t++)
    if (j->alloc[t].node == node && (task < 0 || t == task)) node_share += gp__srv_task_share(s, &j->alloc[t]);
  for (int t = 0; t < j->n_alloc; t++) {
    gp_srv_alloc *a = &j->alloc[t];
    if (a->node != node || node_share <= 0 || (task >= 0 && t != task)) continue;
    double part = gp__srv_task_share(s, a) / node_share;
    if (used_gpu_s >= 0 && a->used_gpu_s != used_gpu_s * part) {
      a->used_gpu_s = used_gpu_s * part;
      changed = true;
    }
    if (energy_j >= 0 && a->energy_j != energy_j * part) {
      a->energy_j = energy_j * part;
      changed = true;
    }
  }
  /* While the store refuses writes the figures wait in memory: the next report carries
   * them again (they are totals since the run started). */
  if (!changed || gp__srv_ledger_is_off(s) || s->store_health.degraded) return 0;
  if (task >= 0) {
    /* The store keeps the job's figures per node: the sum of its tasks' there (a figure
     * no task has reported yet stays unknown). */
    used_gpu_s = energy_j = 0;
    for (int t = 0; t < j->n_alloc; t++) {
      const gp_srv_alloc *a = &j->alloc[t];
      if (a->node != node) continue;
      used_gpu_s = used_gpu_s < 0 || a->used_gpu_s < 0 ? -1 : used_gpu_s + a->used_gpu_s;
      energy_j = energy_j < 0 || a->energy_j < 0 ? -1 : energy_j + a->energy_j;
    }
  }
  return gp_store_set_interval_use(s->store, j->id, s->nodes[node]->name, used_gpu_s, energy_j,
                                   err);
}

/* ---- node intervals ---- */

/* Indexed by the engine's gp_ledger_node_state, so a stored name reads straight into it. */
static const char *const node_states[] = {[GP_LEDGER_UP] = "up", [GP_LEDGER_DRAINED] = "drained",
                                          [GP_LEDGER_DOWN] = "down"};

int gp__srv_ledger_node(gp_srv_state *s, gp_srv_node *n, int64_t now, gp_err *err) {
  int st = !n->alive ? 2 : n->admin_state == GP_NODE_UP ? 0 : 1;
  if (st == n->ledger_state) return 0;
  n->ledger_state = st;
  if (gp__srv_ledger_is_off(s)) return 0;
  gp_store_node_interval iv = {.node = n->name, .model = n->model ? n->model : "",
                               .capacity = gp_capacity_name(n->capacity), .state = node_states[st],
                               .gpus = n->n_gpus, .start = now};
  return gp_store_open_node_interval(s->store, &iv, err);
}

int gp__srv_ledger_node_state(const char *name) {
  for (int i = 0; i < 3; i++)
    if (strcmp(name, node_states[i]) == 0) return i;
  return -1;
}

/* ---- after a load ---- */

/* The time a job's last run ended, for closing an interval the store left open: its end,
 * or its last timeline event (a requeue), or now. */
static int64_t run_end(const gp_srv_job *j, int64_t now) {
  if (j->ended_at > 0) return j->ended_at;
  json_t *last = json_array_get(j->timeline, json_array_size(j->timeline) - 1);
  json_t *at = json_object_get(last, "at");
  return json_is_integer(at) ? json_integer_value(at) : now;
}

static int cmp_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Begins the repair's transaction on first use. */
static int repair_begin(gp_srv_state *s, bool *began, gp_err *err) {
  if (*began) return 0;
  int r = gp_store_begin(s->store, err);
  *began = r == 0;
  return r;
}

int gp__srv_ledger_repair(gp_srv_state *s, int64_t *open_jobs, int n_open, int64_t now,
                          gp_err *err) {
  for (int k = 0; k < s->n_active; k++)
    if (s->active[k]->state == GP_JOB_RUNNING || s->active[k]->state == GP_JOB_STOPPING)
      gp__srv_usage_track(s, s->active[k]);
  if (gp__srv_ledger_is_off(s)) return 0;
  if (n_open > 0) qsort(open_jobs, (size_t)n_open, sizeof *open_jobs, cmp_id);
  int r = 0;
  bool began = false;
  /* Open intervals of jobs that no longer run: closed at the run's end. */
  for (int i = 0; i < n_open && !r; i++) {
    if (i > 0 && open_jobs[i] == open_jobs[i - 1]) continue;
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)open_jobs[i]);
    gp_srv_job *j = gp__srv_job_get(s, id);
    if (j && (j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING)) continue;
    int64_t end = j ? run_end(j, now) : now;
    fprintf(stderr, "gpool server: ledger: job %lld is not running but had open intervals; "
                    "closed them at %lld\n", (long long)open_jobs[i], (long long)end);
    if (!(r = repair_begin(s, &began, err))) r = gp_store_close_intervals(s->store, open_jobs[i], end, err);
  }
  /* Running jobs without intervals (a store written before the ledger was kept): opened
   * from the run's start. */
  for (int k = 0; k < s->n_active && !r; k++) {
    gp_srv_job *j = s->active[k];
    if ((j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) || j->n_alloc == 0) continue;
    if (n_open > 0 && bsearch(&j->id, open_jobs, (size_t)n_open, sizeof *open_jobs, cmp_id)) continue;
    bool placed = true;
    for (int t = 0; t < j->n_alloc; t++) placed = placed && j->alloc[t].node >= 0;
    if (!placed) continue;
    fprintf(stderr, "gpool server: ledger: running job %s had no open intervals; opened them "
                    "from its start\n", j->idstr);
    if (!(r = repair_begin(s, &began, err))) r = open_intervals(s, j, j->started_at, err);
  }
  if (began && !r) r = gp_store_commit(s->store, err);
  if (began && r) gp_store_rollback(s->store);
  return r;
}
