/* SPDX-License-Identifier: Apache-2.0 */
/* Idle and pool-sizing advice (advice.h): GPU-hours held but unused by queue and user, the
 * running jobs idle now, each queue's waits against the quota it left idle, and the fleet's
 * allocation against the 70-90% band. A name filter asks about one job: then only idle_now
 * of that name comes from here. */
#include <math.h>
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
        a->arena, "%s in %s held %.1f GPU-hours that sat idle: %.0f%% of the %.1f GPU-hours "
        "it held with its use measured", it->user, it->queue, idle_h, idle_h / known_h * 100, known_h);
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
        "holding %.2f GPUs: %.2f GPU-hours so far",
        (long long)j->job, *j->name ? " `" : "", j->name, *j->name ? "`" : "", j->user,
        (double)idle_s / 60.0, j->last_pct < 0 ? 0 : j->last_pct, j->threshold_pct,
        j->share_gpus, it->saving_gpu_h);
    gp__ledger_adv_evidence(it, "idle_s", (double)idle_s);
    gp__ledger_adv_evidence(it, "sm_util_pct", j->last_pct);
    gp__ledger_adv_evidence(it, "threshold_pct", j->threshold_pct);
    gp__ledger_adv_evidence(it, "gpus", j->share_gpus);
  }
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
    double deserved_h = q->deserved_gpus * period_h, alloc_h = alloc_s / 3600.0;
    double idle_h = fmax(0, deserved_h - alloc_h), waited_h = waited_s / 3600.0;
    bool little = waited_h >= MIN_WAIT_GPU_H && waited_h > idle_h;
    bool much = idle_h >= MUCH_IDLE_QUOTA * deserved_h && waited_h < LITTLE_WAIT * idle_h;
    if (!little && !much) continue;
    gp_advice_item *it = gp__ledger_adv_item(a, GP_ADVICE_QUOTA);
    it->queue = gp_arena_strdup(a->arena, q->name);
    it->cost_known = false;
    it->suggestion = little ? "raise deserved_gpus" : "lower deserved_gpus";
    if (little) {
      it->message = gp_arena_printf(
          a->arena, "%s: its jobs waited %.1f GPU-hours for GPUs while it left only %.1f of its "
          "%.1f deserved GPU-hours idle: too little quota", q->name, waited_h, idle_h, deserved_h);
    } else {
      it->saving_gpu_h = idle_h;
      it->message = gp_arena_printf(
          a->arena, "%s used %.0f%% of its %.1f deserved GPU-hours and its jobs waited %.1f "
          "GPU-hours: too much quota; %.1f GPU-hours could be promised to other queues",
          q->name, alloc_h / deserved_h * 100, deserved_h, waited_h, idle_h);
    }
    gp__ledger_adv_evidence(it, "deserved_gpus", q->deserved_gpus);
    gp__ledger_adv_evidence(it, "deserved_gpu_hours", deserved_h);
    gp__ledger_adv_evidence(it, "allocated_gpu_hours", alloc_h);
    gp__ledger_adv_evidence(it, "idle_quota_gpu_hours", idle_h);
    gp__ledger_adv_evidence(it, "waited_gpu_hours", waited_h);
  }
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
        "band: %.1f of its %.1f up GPU-hours were not needed even at %.0f%%",
        pct, GP_ADVICE_BAND_LOW * 100, GP_ADVICE_BAND_HIGH * 100, it->saving_gpu_h, up_h,
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
  utilisation(a);
}
