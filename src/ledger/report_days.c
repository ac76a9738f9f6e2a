/* SPDX-License-Identifier: Apache-2.0 */
/* Feeding the ledger report from daily roll-ups (report.h, "Roll-ups"; docs/accounting.md):
 * a day's sums of job figures and of allocation by node state, priced as the intervals of
 * that day would be. A day is taken as a sum only when nothing the price depends on changes
 * inside it (gp_ledger_report_day_whole): then every second of the day has one rate, and
 * the sum of the day's pieces times that rate is the day's cost. Allocation by node state
 * is kept as negative capacity per (kind, period, model, capacity), which finish (rows.c)
 * adds to the node intervals' capacity to make the idle and drained/down rows. */
#include <math.h>

#include "ledger/report.h"
#include "ledger/report_int.h"

#define DAY_S 86400

/* Whether t lies strictly inside (day, day + 1 day). */
static bool inside(int64_t t, int64_t day) { return t > day && t < day + DAY_S; }

bool gp_ledger_report_day_whole(const gp_ledger_report *r, int64_t day) {
  if (r->rc || day % DAY_S || day < r->p.from || day + DAY_S > r->p.to) return false;
  if (gp__ledger_period_of(&r->periods, day) != gp__ledger_period_of(&r->periods, day + DAY_S - 1))
    return false;
  const gp_prices *p = r->p.prices;
  if (!p) return true;
  for (int i = 0; i < p->n_prices; i++)
    if (inside(p->prices[i].from, day)) return false;
  for (int i = 0; i < p->n_commitments; i++)
    if (inside(p->commitments[i].from, day) || inside(p->commitments[i].to, day)) return false;
  for (int i = 0; i < p->n_energy; i++)
    if (inside(p->energy[i].from, day)) return false;
  return true;
}

void gp_ledger_report_window(gp_ledger_report *r, int64_t from, int64_t to) {
  r->win_from = from;
  r->win_to = to;
  r->rolled = true;
}

/* The segment of (model, capacity)'s timeline that holds the whole day, or -1. */
static int day_segment(gp_ledger_report *r, int32_t model, gp_capacity c, int64_t day,
                       const gp__ledger_timeline **ret) {
  const gp__ledger_timeline *tl = gp__ledger_report_timeline(r, model, c);
  int k = gp__ledger_timeline_find(tl, day);
  *ret = tl;
  return k < tl->n && tl->start[k] <= day && tl->start[k + 1] >= day + DAY_S ? k : -1;
}

static bool figure_ok(double v) { return isfinite(v) && v >= 0; }

void gp_ledger_report_add_job_day(gp_ledger_report *r, const gp_ledger_job_day *d) {
  if (r->rc || r->finished) return;
  r->rolled = true;
  if (!d || !d->model || (unsigned)d->capacity > GP_CAP_ON_PREM ||
      !gp_ledger_report_day_whole(r, d->day) || !figure_ok(d->gpu_s) ||
      !figure_ok(d->used_gpu_s) || !figure_ok(d->known_gpu_s) || !figure_ok(d->energy_j)) {
    r->anomalies++;
    return;
  }
  int32_t model = gp__ledger_intern(&r->models, d->model);
  const gp__ledger_timeline *tl;
  int k = day_segment(r, model, d->capacity, d->day, &tl);
  if (k < 0) {
    r->anomalies++;
    return;
  }
  unsigned g = r->p.group;
  gp__ledger_key key;
  gp__ledger_key_init(&key);
  if ((g & GP_LG_QUEUE) || r->p.share_idle != GP_LSI_NONE)
    key.queue = gp__ledger_intern(&r->queues, d->queue ? d->queue : "");
  if (g & GP_LG_USER) key.user = gp__ledger_intern(&r->users, d->user ? d->user : "");
  if (g & GP_LG_MODEL) key.model = model;
  if (g & GP_LG_CAPACITY) key.capacity = (int16_t)d->capacity;
  key.kind = GP_LR_JOBS;
  key.period = tl->period[k];
  gp__ledger_sums *sum = gp__ledger_map_get(&r->jobs, &key);
  sum->gpu_s += d->gpu_s;
  sum->used_gpu_s += d->used_gpu_s;
  sum->known_gpu_s += d->known_gpu_s;
  sum->cost += d->gpu_s * tl->rate[k] / 3600.0;
  if (!tl->known[k]) sum->cost_unknown = true;
  if (d->energy_known) {
    sum->energy_j += d->energy_j;
    sum->energy_known = true;
    if (d->capacity == GP_CAP_ON_PREM) {
      double ecost = d->energy_j / 3.6e6 * tl->kwh[k];
      sum->cost += ecost;
      r->energy_cost += ecost;
    }
  }
}

void gp_ledger_report_add_alloc_day(gp_ledger_report *r, const gp_ledger_alloc_day *d) {
  if (r->rc || r->finished) return;
  r->rolled = true;
  if (!d || !d->model || (unsigned)d->capacity > GP_CAP_ON_PREM ||
      (unsigned)d->state > GP_LEDGER_DOWN || !gp_ledger_report_day_whole(r, d->day) ||
      !figure_ok(d->gpu_s)) {
    r->anomalies++;
    return;
  }
  int32_t model = gp__ledger_intern(&r->models, d->model);
  const gp__ledger_timeline *tl;
  int k = day_segment(r, model, d->capacity, d->day, &tl);
  if (k < 0) {
    r->anomalies++;
    return;
  }
  gp__ledger_key key;
  gp__ledger_key_init(&key);
  key.kind = (int16_t)(d->state == GP_LEDGER_UP ? GP_LR_IDLE : GP_LR_DRAINED_DOWN);
  key.period = tl->period[k];
  if (r->p.group & GP_LG_MODEL) key.model = model;
  if (r->p.group & GP_LG_CAPACITY) key.capacity = (int16_t)d->capacity;
  gp__ledger_sums *s = gp__ledger_map_get(&r->alloc_days, &key);
  s->gpu_s -= d->gpu_s;
  s->cost -= d->gpu_s * tl->rate[k] / 3600.0;
}
