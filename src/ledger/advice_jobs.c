/* SPDX-License-Identifier: Apache-2.0 */
/* Right-size and spot advice (advice.h): the ended runs, joined with their jobs' pieces in
 * the period, grouped per (user, job name, request, model) so that a recurring job is judged
 * over all its runs (an unnamed job alone), then each group sized and checked for spot. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/advice_int.h"
#include "util/mem.h"

#define MIB_PER_GIB 1024.0

typedef struct group {
  const gp__ledger_adv_run *first;  /* its first run: the request */
  const gp__ledger_adv_job *job;    /* that run's pieces: model and capacity */
  int runs;
  bool unknown;                     /* some run's use was not measured */
  int64_t peak_mem_mib, last_start;
  double max_util_pct, gpu_s, cost;
  bool cost_unknown;
  int spot_runs;
  double nonspot_gpu_s, nonspot_cost, spot_cost;
  bool spot_unknown;
  int64_t longest_nonspot_s;
} group;

/* One task's request is sized only when it holds at most one GPU: peak memory is summed
 * over a node's GPUs, so it is per GPU only there. */
static bool sizable(const gp__ledger_adv_run *r) {
  return r->tasks == 1 && (r->mig >= 0 || r->gpu_milli > 0 || r->gpus == 1);
}

static const char *str(const gp_advice *a, int32_t id) {
  return id >= 0 && (size_t)id < a->strs.n ? a->strs.names[id] : "";
}

#define N(v) gp__ledger_adv_num(a, (v))

/* "the last 10 runs of `train` (alice)" or "job 42 (alice)". */
static char *subject(gp_advice *a, const group *g, int runs) {
  const char *name = str(a, g->first->name), *user = str(a, g->first->user);
  if (!*name) return gp_arena_printf(a->arena, "job %lld (%s)", (long long)g->first->job, user);
  if (runs == 1) return gp_arena_printf(a->arena, "the run of `%s` (%s)", name, user);
  return gp_arena_printf(a->arena, "the last %d runs of `%s` (%s)", runs, name, user);
}

static const char *held(gp_advice *a, const group *g, const char *model) {
  const gp__ledger_adv_run *r = g->first;
  if (r->mig >= 0) return gp_arena_printf(a->arena, "a %s slice of %s", str(a, r->mig), model);
  if (r->gpu_milli > 0)
    return gp_arena_printf(a->arena, "%.2f of %s", r->gpu_milli / (double)GP_GPU_MILLI, model);
  return gp_arena_printf(a->arena, "a whole %s", model);
}

static void set_subject(gp_advice *a, gp_advice_item *it, const group *g) {
  it->user = str(a, g->first->user);
  it->queue = str(a, g->first->queue);
  const char *name = str(a, g->first->name);
  it->name = *name ? name : NULL;
  it->job = *name ? 0 : g->first->job;
}

static void right_size(gp_advice *a, const group *g) {
  const gp__ledger_adv_run *r = g->first;
  if (!sizable(r) || g->unknown || g->peak_mem_mib < 0 || g->max_util_pct < 0) return;
  const char *model = str(a, g->job->model);
  double cur = gp__ledger_adv_share(model, r->gpus, r->gpu_milli, r->mig >= 0 ? str(a, r->mig) : NULL);
  if (!(cur > 0)) return;
  double h = a->p.headroom;
  double need_mem = (double)g->peak_mem_mib * (1 + h);
  /* The agent's SM figure is a share of what the process can see: the MIG instance for a
   * slice (its busy time is scaled by the slice's part of the GPU in sm_busy_gpu_s), but the
   * whole GPU for a fraction, whose processes run on the whole device. So a 0.5 fraction at
   * 60% SM needs 0.6 of a GPU (0.72 with headroom), not 0.3. */
  double whole_gpus = r->mig >= 0 ? g->max_util_pct / 100.0 * cur : g->max_util_pct / 100.0;
  double need_gpu = whole_gpus * (1 + h);
  gp__ledger_adv_fit fit;
  if (!gp__ledger_adv_fit_find(a, model, g->job->capacity, g->last_start, cur, need_mem, need_gpu, &fit))
    return;
  gp_advice_item *it = gp__ledger_adv_item(a, GP_ADVICE_RIGHT_SIZE);
  set_subject(a, it, g);
  it->suggestion = gp_arena_strdup(a->arena, fit.flag);
  double gpu_h = g->gpu_s / 3600.0;
  if (fit.model_change) {
    double rate = 0;
    bool priced = a->p.prices &&
                  gp_prices_rate(a->p.prices, fit.model, g->job->capacity, g->last_start, &rate);
    it->saving_gpu_h = 0;
    it->saving_cost = priced ? g->cost - gpu_h * rate : 0;
    it->cost_known = priced && !g->cost_unknown;
  } else {
    it->saving_gpu_h = gpu_h * (1 - fit.share / cur);
    it->saving_cost = g->cost * (1 - fit.ratio);
    it->cost_known = a->p.prices && !g->cost_unknown;
  }
  double less = (1 - fit.ratio) * 100;
  /* A fraction's SM figure is the whole GPU's: said so, lest 60% of a 0.50 share read as
   * 0.30 of a GPU. */
  const char *sm = r->gpu_milli > 0 && r->mig < 0
                       ? gp_arena_printf(a->arena, "%.0f%% of the whole GPU's SM, holding %s",
                                         g->max_util_pct, held(a, g, model))
                       : gp_arena_printf(a->arena, "%.0f%% SM of %s", g->max_util_pct, held(a, g, model));
  it->message = gp_arena_printf(
      a->arena, "%s peaked at %.1f GiB and %s: `%s` would cost %.0f%% less%s",
      subject(a, g, g->runs), (double)g->peak_mem_mib / MIB_PER_GIB, sm, fit.flag, less,
      fit.model_change ? " (if it runs fast enough on that model)" : "");
  gp__ledger_adv_evidence(it, "runs", g->runs);
  gp__ledger_adv_evidence(it, "peak_mem_mib", (double)g->peak_mem_mib);
  gp__ledger_adv_evidence(it, "avg_sm_util_pct", g->max_util_pct);
  gp__ledger_adv_evidence(it, "headroom_pct", h * 100);
  gp__ledger_adv_evidence(it, "gpu_hours", gpu_h);
  gp__ledger_adv_evidence(it, "share", cur);
  gp__ledger_adv_evidence(it, "needed_share", need_gpu);
  gp__ledger_adv_evidence(it, "advised_share", fit.share);
  gp__ledger_adv_evidence(it, "less_pct", less);
}

static void spot(gp_advice *a, const group *g) {
  if (!g->spot_runs) return;
  bool priced = a->p.prices && !g->spot_unknown && !g->cost_unknown;
  double saving = g->nonspot_cost - g->spot_cost;
  if (priced && !(saving > 0)) return;
  gp_advice_item *it = gp__ledger_adv_item(a, GP_ADVICE_SPOT);
  set_subject(a, it, g);
  it->suggestion = "--allow-spot";
  it->saving_gpu_h = 0;
  it->saving_cost = priced ? saving : 0;
  it->cost_known = priced;
  double gpu_h = g->nonspot_gpu_s / 3600.0;
  if (priced && g->nonspot_cost > 0)
    it->message = gp_arena_printf(
        a->arena, "%s checkpointed, requeues, and held %s GPU-hours of non-spot capacity for up "
        "to %s h in one go: on spot it would cost %.0f%% less",
        subject(a, g, g->spot_runs), N(gpu_h), N((double)g->longest_nonspot_s / 3600.0),
        saving / g->nonspot_cost * 100);
  else
    it->message = gp_arena_printf(
        a->arena, "%s checkpointed, requeues, and held %s GPU-hours of non-spot capacity for up "
        "to %s h in one go: it could run on spot capacity",
        subject(a, g, g->spot_runs), N(gpu_h), N((double)g->longest_nonspot_s / 3600.0));
  gp__ledger_adv_evidence(it, "runs", g->spot_runs);
  gp__ledger_adv_evidence(it, "gpu_hours", gpu_h);
  gp__ledger_adv_evidence(it, "longest_run_s", (double)g->longest_nonspot_s);
  gp__ledger_adv_evidence(it, "checkpoint_interval_s", (double)a->p.checkpoint_s);
  if (priced) {
    gp__ledger_adv_evidence(it, "cost", g->nonspot_cost);
    gp__ledger_adv_evidence(it, "spot_cost", g->spot_cost);
  }
}

/* Whether run r belongs to group g: the same user and name (or job, unnamed), request and
 * model. */
static bool same_group(const gp_advice *a, const group *g, const gp__ledger_adv_run *r, int32_t model) {
  const gp__ledger_adv_run *f = g->first;
  bool named = *str(a, r->name);
  return f->user == r->user && f->name == r->name && (named || f->job == r->job) &&
         f->tasks == r->tasks && f->gpus == r->gpus && f->gpu_milli == r->gpu_milli &&
         f->mig == r->mig && g->job->model == model;
}

/* A hash of the group key; a collision probes the next key (gp__ledger_imap_get keeps one
 * group per key). */
static int64_t group_hash(const gp_advice *a, const gp__ledger_adv_run *r, int32_t model) {
  uint64_t h = UINT64_C(1469598103934665603);
  int64_t parts[] = {r->user, r->name, *str(a, r->name) ? 0 : r->job, r->tasks, r->gpus,
                     r->gpu_milli, r->mig, model};
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    h = (h ^ (uint64_t)parts[i]) * UINT64_C(1099511628211);
  return (int64_t)h;
}

void gp__ledger_adv_jobs_items(gp_advice *a) {
  gp__ledger_imap index = {0};
  group *groups = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < a->n_runs; i++) {
    const gp__ledger_adv_run *r = &a->runs[i];
    if (a->p.name && strcmp(a->p.name, str(a, r->name)) != 0) continue;
    int32_t ji = gp__ledger_imap_get(&a->job_index, r->job, -1);
    if (ji < 0) continue; /* no GPU held in the period: nothing to save there */
    const gp__ledger_adv_job *j = &a->jobs[ji];
    int64_t k = group_hash(a, r, j->model);
    int32_t gi;
    while ((gi = gp__ledger_imap_get(&index, k, (int32_t)n)) < (int32_t)n &&
           !same_group(a, &groups[gi], r, j->model))
      k = (int64_t)((uint64_t)k * UINT64_C(6364136223846793005) + 1);
    if ((size_t)gi == n) {
      gp_xgrow((void **)&groups, &cap, n + 1, sizeof *groups);
      groups[n++] = (group){.first = r, .job = j, .peak_mem_mib = -1, .max_util_pct = -1};
    }
    group *g = &groups[gi];
    g->runs++;
    if (r->peak_mem_mib < 0 || r->avg_sm_util_pct < 0) g->unknown = true;
    if (r->peak_mem_mib > g->peak_mem_mib) g->peak_mem_mib = r->peak_mem_mib;
    if (r->avg_sm_util_pct > g->max_util_pct) g->max_util_pct = r->avg_sm_util_pct;
    if (j->first_start > g->last_start) g->last_start = j->first_start;
    g->gpu_s += j->gpu_s;
    g->cost += j->cost;
    g->cost_unknown |= j->cost_unknown;
    if (r->requeue && r->last_checkpoint_at > 0 && j->longest_nonspot_s > a->p.checkpoint_s) {
      g->spot_runs++;
      g->nonspot_gpu_s += j->nonspot_gpu_s;
      g->nonspot_cost += j->nonspot_cost;
      g->spot_cost += j->spot_cost;
      g->spot_unknown |= j->spot_unknown;
      if (j->longest_nonspot_s > g->longest_nonspot_s) g->longest_nonspot_s = j->longest_nonspot_s;
    }
  }
  for (size_t i = 0; i < n; i++) {
    right_size(a, &groups[i]);
    spot(a, &groups[i]);
  }
  free(groups);
  gp__ledger_imap_done(&index);
}
