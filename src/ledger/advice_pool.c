/* SPDX-License-Identifier: Apache-2.0 */
/* Idle and pool-sizing advice (advice.h): GPU-hours held but unused by queue and user, the
 * running jobs idle now, each queue's waits against the quota it left idle, and the fleet's
 * allocation against the 70-90% band. A name filter asks about one job: then only idle_now
 * of that name comes from here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/advice_int.h"
#include "util/mem.h"

#define MIN_IDLE_GPU_H 0.01   /* less is rounding, not waste */
#define MIN_WAIT_GPU_H 1.0    /* waits shorter than this are not a quota problem */
#define MUCH_IDLE_QUOTA 0.5   /* half a queue's deserved hours idle ... */
#define LITTLE_WAIT 0.1       /* ... while its waits are under a tenth of that: too much */

static const char *str(const gp_advice *a, int32_t id) {
  return id >= 0 && (size_t)id < a->strs.n ? a->strs.names[id] : "";
}

#define N(v) gp__ledger_adv_num(a, (v))

static void idle_week(gp_advice *a) {
  for (size_t i = 0; i < a->n_idle; i++) {
    const gp__ledger_adv_idle *d = &a->idle[i];
    double idle_h = (d->known_gpu_s - d->used_gpu_s) / 3600.0, known_h = d->known_gpu_s / 3600.0;
    if (idle_h < MIN_IDLE_GPU_H) continue;
    gp_advice_item *it = gp__ledger_adv_item(a, GP_ADVICE_IDLE_WEEK);
    it->queue = str(a, d->queue);
    it->user = str(a, d->user);
    it->saving_gpu_h = idle_h;
    it->saving_cost = d->idle_cost;
    it->cost_known = a->p.prices && !d->cost_unknown;
    it->message = gp_arena_printf(
        a->arena, "%s in %s held %s GPU-hours that sat idle: %.0f%% of the %s GPU-hours "
        "it held with its use measured", it->user, it->queue, N(idle_h), idle_h / known_h * 100,
        N(known_h));
    gp__ledger_adv_evidence(it, "idle_gpu_hours", idle_h);
    gp__ledger_adv_evidence(it, "measured_gpu_hours", known_h);
    gp__ledger_adv_evidence(it, "used_gpu_hours", d->used_gpu_s / 3600.0);
  }
}

static void idle_now(gp_advice *a) {
  for (size_t i = 0; i < a->n_now_idle; i++) {
    const gp_advice_idle *j = &a->now_idle[i];
    int64_t idle_s = a->p.now > j->idle_since ? a->p.now - j->idle_since : 0;
    gp_advice_item *it = gp__ledger_adv_item(a, GP_ADVICE_IDLE_NOW);
    it->queue = j->queue;
    it->user = j->user;
    it->name = *j->name ? j->name : NULL;
    it->job = j->job;
    it->saving_gpu_h = j->share_gpus * (double)idle_s / 3600.0;
    double rate = 0;
    it->cost_known = a->p.prices && gp_prices_rate(a->p.prices, j->model, j->capacity, a->p.now, &rate);
    it->saving_cost = it->cost_known ? it->saving_gpu_h * rate : 0;
    it->suggestion = gp_arena_printf(a->arena, "gpool cancel %lld", (long long)j->job);
    it->message = gp_arena_printf(
        a->arena, "job %lld%s%s%s (%s) has been idle for %.0f min at %.0f%% SM (under %.0f%%), "
        "holding %s GPUs: %s GPU-hours so far",
        (long long)j->job, *j->name ? " `" : "", j->name, *j->name ? "`" : "", j->user,
        (double)idle_s / 60.0, j->last_pct < 0 ? 0 : j->last_pct, j->threshold_pct,
        N(j->share_gpus), N(it->saving_gpu_h));
    gp__ledger_adv_evidence(it, "idle_s", (double)idle_s);
    gp__ledger_adv_evidence(it, "sm_util_pct", j->last_pct);
    gp__ledger_adv_evidence(it, "threshold_pct", j->threshold_pct);
    gp__ledger_adv_evidence(it, "gpus", j->share_gpus);
  }
}

/* The fleet's up GPUs over the period as levels: how long it had each count of GPUs up. */
typedef struct level {
  int gpus;
  double s;
} level;

static int by_time(const void *x, const void *y) {
  const gp__ledger_adv_up *p = x, *q = y;
  return p->t < q->t ? -1 : p->t > q->t;
}

static int by_gpus(const void *x, const void *y) {
  const level *p = x, *q = y;
  return p->gpus < q->gpus ? -1 : p->gpus > q->gpus;
}

/* Sorted by GPUs, with the seconds at each count summed; returns how many. */
static size_t up_levels(gp_advice *a, level **ret) {
  if (a->n_up > 1) qsort(a->up, a->n_up, sizeof *a->up, by_time);
  level *lv = gp_xcalloc(a->n_up + 1, sizeof *lv);
  size_t n = 0;
  long long gpus = 0;
  for (size_t i = 0; i < a->n_up; i++) {
    if (i > 0 && a->up[i].t > a->up[i - 1].t && gpus > 0)
      lv[n++] = (level){(int)(gpus < INT32_MAX ? gpus : INT32_MAX), (double)(a->up[i].t - a->up[i - 1].t)};
    gpus += a->up[i].gpus;
  }
  if (n > 1) qsort(lv, n, sizeof *lv, by_gpus);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k > 0 && lv[k - 1].gpus == lv[i].gpus) lv[k - 1].s += lv[i].s;
    else lv[k++] = lv[i];
  }
  *ret = lv;
  return k;
}

/* The GPU-seconds `deserved` GPUs come to while the fleet was up: at each moment the
 * deserved GPUs or the GPUs up, whichever is fewer. A pool up for 5 minutes of a week
 * promised 5 minutes of them, not a week. */
static double deserved_gpu_s(const level *lv, size_t n, double deserved) {
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += lv[i].s * fmin(deserved, (double)lv[i].gpus);
  return sum;
}

static void quota(gp_advice *a) {
  /* Waits of the jobs that started in the period, in GPU-hours. */
  for (size_t i = 0; i < a->n_runs; i++) {
    const gp__ledger_adv_run *r = &a->runs[i];
    if (r->started_at < a->p.from || r->started_at >= a->p.to || r->submitted_at <= 0 ||
        r->started_at <= r->submitted_at)
      continue;
    int32_t ji = gp__ledger_imap_get(&a->job_index, r->job, -1);
    const char *model = ji >= 0 ? str(a, a->jobs[ji].model) : "";
    double gpus = gp__ledger_adv_share(model, r->gpus, r->gpu_milli, r->mig >= 0 ? str(a, r->mig) : NULL);
    gp__ledger_adv_queue_of(a, r->queue)->waited_gpu_s +=
        (double)(r->started_at - r->submitted_at) * gpus * (r->tasks > 0 ? r->tasks : 1);
  }
  level *lv = NULL;
  size_t n_lv = up_levels(a, &lv);
  double up_h = 0;
  for (size_t i = 0; i < n_lv; i++) up_h += lv[i].s / 3600.0;
  double period_h = (double)(a->p.to - a->p.from) / 3600.0;
  for (int k = 0; k < a->p.n_queues; k++) {
    const gp_advice_queue *q = &a->p.queues[k];
    if (!q->name || !(q->deserved_gpus > 0) || !gp__ledger_adv_in_queue(a->p.queue, q->name)) continue;
    double alloc_s = 0, waited_s = 0;
    for (size_t i = 0; i < a->n_queue_ids; i++) {
      int32_t id = a->queue_ids[i];
      if (!gp__ledger_adv_in_queue(q->name, str(a, id))) continue;
      alloc_s += a->queues[id].alloc_gpu_s;
      waited_s += a->queues[id].waited_gpu_s;
    }
    double deserved_h = deserved_gpu_s(lv, n_lv, q->deserved_gpus) / 3600.0, alloc_h = alloc_s / 3600.0;
    if (!(deserved_h > 0)) continue; /* no GPU was up: nothing was promised or left idle */
    double idle_h = fmax(0, deserved_h - alloc_h), waited_h = waited_s / 3600.0;
    bool little = waited_h >= MIN_WAIT_GPU_H && waited_h > idle_h;
    bool much = idle_h >= MUCH_IDLE_QUOTA * deserved_h && waited_h < LITTLE_WAIT * idle_h;
    if (!little && !much) continue;
    gp_advice_item *it = gp__ledger_adv_item(a, GP_ADVICE_QUOTA);
    it->queue = gp_arena_strdup(a->arena, q->name);
    it->cost_known = false;
    it->suggestion = little ? "raise deserved_gpus" : "lower deserved_gpus";
    /* Said where the fleet was not up all the period, so the figures are not read as a
     * whole period's. */
    const char *over = up_h < period_h - 1e-9
                           ? gp_arena_printf(a->arena, " (over the %s h the fleet was up)", N(up_h))
                           : "";
    if (little) {
      it->message = gp_arena_printf(
          a->arena, "%s: its jobs waited %s GPU-hours for GPUs while it left only %s of its "
          "%s deserved GPU-hours%s idle: too little quota", q->name, N(waited_h), N(idle_h),
          N(deserved_h), over);
    } else {
      it->saving_gpu_h = idle_h;
      it->message = gp_arena_printf(
          a->arena, "%s used %.0f%% of its %s deserved GPU-hours%s and its jobs waited %s "
          "GPU-hours: too much quota; %s GPU-hours could be promised to other queues",
          q->name, alloc_h / deserved_h * 100, N(deserved_h), over, N(waited_h), N(idle_h));
    }
    gp__ledger_adv_evidence(it, "deserved_gpus", q->deserved_gpus);
    gp__ledger_adv_evidence(it, "deserved_gpu_hours", deserved_h);
    gp__ledger_adv_evidence(it, "allocated_gpu_hours", alloc_h);
    gp__ledger_adv_evidence(it, "idle_quota_gpu_hours", idle_h);
    gp__ledger_adv_evidence(it, "waited_gpu_hours", waited_h);
    gp__ledger_adv_evidence(it, "fleet_up_hours", up_h);
  }
  free(lv);
}

static void utilisation(gp_advice *a) {
  if (!(a->up_gpu_s > 0)) return;
  double up_h = a->up_gpu_s / 3600.0, alloc_h = a->alloc_gpu_s / 3600.0;
  double pct = alloc_h / up_h * 100;
  gp_advice_item *it = gp__ledger_adv_item(a, GP_ADVICE_UTILISATION);
  it->cost_known = a->p.prices && !a->up_cost_unknown;
  if (pct < GP_ADVICE_BAND_LOW * 100) {
    it->saving_gpu_h = up_h - alloc_h / GP_ADVICE_BAND_HIGH;
    it->saving_cost = it->saving_gpu_h * a->up_cost / a->up_gpu_s * 3600.0;
    it->suggestion = "shrink the fleet or move work onto it";
    it->message = gp_arena_printf(
        a->arena, "the fleet's GPUs were allocated %.0f%% of their up time, under the %.0f-%.0f%% "
        "band: %s of its %s up GPU-hours were not needed even at %.0f%%",
        pct, GP_ADVICE_BAND_LOW * 100, GP_ADVICE_BAND_HIGH * 100, N(it->saving_gpu_h), N(up_h),
        GP_ADVICE_BAND_HIGH * 100);
  } else {
    it->cost_known = false;
    it->message = gp_arena_printf(
        a->arena, "the fleet's GPUs were allocated %.0f%% of their up time, %s the %.0f-%.0f%% band%s",
        pct, pct > GP_ADVICE_BAND_HIGH * 100 ? "over" : "inside", GP_ADVICE_BAND_LOW * 100,
        GP_ADVICE_BAND_HIGH * 100,
        pct > GP_ADVICE_BAND_HIGH * 100 ? ": jobs wait for GPUs; the fleet could grow" : "");
  }
  gp__ledger_adv_evidence(it, "up_gpu_hours", up_h);
  gp__ledger_adv_evidence(it, "allocated_gpu_hours", alloc_h);
  gp__ledger_adv_evidence(it, "allocated_pct", pct);
  if (a->known_gpu_s > 0)
    gp__ledger_adv_evidence(it, "used_pct_of_measured", a->used_gpu_s / a->known_gpu_s * 100);
}

void gp__ledger_adv_pool_items(gp_advice *a) {
  idle_now(a);
  if (a->p.name) return;
  idle_week(a);
  if (!a->p.fleet) return;
  quota(a);
  /* The band is the whole fleet's: advice on one queue counts only that queue's jobs, whose
   * allocation is not the fleet's. */
  if (!a->p.queue) utilisation(a);
}
