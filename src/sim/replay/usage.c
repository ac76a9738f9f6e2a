/* SPDX-License-Identifier: Apache-2.0 */
/* Fair share over time in the replay (docs/simulator.md, docs/scheduling.md): each queue's
 * decayed usage, integrated exactly between events (allocations are constant there) by
 * the closed form of src/ledger/decay.h over the GPUs up, and put in the core's view as
 * GPU-equivalents each simulated minute, as the server does; and, whatever the policy, the
 * weekly Jain index of each queue's cumulative GPU-hours against its deserved share, which
 * says whether fairness holds over time and not only at each instant. */
#include <stdlib.h>
#include <string.h>

#include "sim/replay/sim.h"
#include "sim/replay/stats.h"

#define WEEK (7 * 86400)
#define USAGE_REFRESH_S 60

/* Shares each queue is owed: deserved over the sum, or weight over the sum when nothing is
 * deserved. */
static double share_of(const sim *s, int q) {
  double dsum = 0, wsum = 0;
  for (int k = 0; k < s->nq; k++) {
    dsum += s->queues->queues[k].deserved_gpus;
    wsum += s->queues->queues[k].weight;
  }
  const gp_queue *x = &s->queues->queues[q];
  if (dsum > 0) return x->deserved_gpus / dsum;
  return wsum > 0 ? x->weight / wsum : 0;
}

double gp__sim_cumulative_jain(const sim *s, const double *cum) {
  double *x = gp_xmalloc(((size_t)s->nq + 1) * sizeof *x);
  size_t n = 0;
  for (int q = 0; q < s->nq; q++) {
    double sh = share_of(s, q);
    /* A queue with no demand so far (no fair share ever) says nothing about fairness. */
    if (sh > 0 && (s->fair_int[q] > 0 || cum[q] > 0)) x[n++] = cum[q] / sh;
  }
  double j = gp__sim_jain(x, n);
  free(x);
  return j;
}

static void week_end(sim *s, gp_time at) {
  double *cum = gp_xmalloc(((size_t)s->nq + 1) * sizeof *cum);
  double dt = (double)(at - s->t_last);
  for (int q = 0; q < s->nq; q++) cum[q] = s->alloc_int[q] + s->alloc[q] * dt;
  gp_replay_result *r = s->r;
  r->weekly_jain = realloc(r->weekly_jain, ((size_t)r->n_weeks + 1) * sizeof *r->weekly_jain);
  if (!r->weekly_jain) abort();
  r->weekly_jain[r->n_weeks++] = gp__sim_cumulative_jain(s, cum);
  free(cum);
}

void gp__sim_usage_advance(sim *s, gp_time t) {
  if (s->next_week == 0) s->next_week = s->t_first + WEEK;
  while (s->next_week <= t) {
    week_end(s, s->next_week);
    s->next_week += WEEK;
  }
  if (!s->cfg->usage) return;
  if (!s->usage) s->usage = gp_xcalloc((size_t)s->nq + 1, sizeof *s->usage);
  double cap = (double)s->up_gpus;
  const gp_fairshare_config *c = &s->cfg->fairshare;
  gp_time probe = s->cfg->usage_probe > 0 ? s->t_first + s->cfg->usage_probe : 0;
  if (probe > s->t_last && probe <= t && !s->probed) {
    /* The shares at the probe: the usage carried to it exactly. */
    double sum = 0;
    double *u = gp_xmalloc(((size_t)s->nq + 1) * sizeof *u);
    for (int q = 0; q < s->nq; q++) {
      double rate = cap > 0 ? s->alloc[q] / cap : 0;
      u[q] = gp_decay_at(c, s->usage[q], s->t_last, probe) + gp_decay_interval(c, rate, s->t_last, probe, probe);
      sum += u[q];
    }
    for (int q = 0; q < s->nq && q < s->r->n_queues; q++) s->r->queues[q].usage_share = sum > 0 ? u[q] / sum : 0;
    free(u);
    s->probed = true;
  }
  for (int q = 0; q < s->nq; q++) {
    double rate = cap > 0 ? s->alloc[q] / cap : 0;
    s->usage[q] = gp_decay_at(c, s->usage[q], s->t_last, t) + gp_decay_interval(c, rate, s->t_last, t, t);
  }
}

void gp__sim_usage_view(sim *s, gp_view *view, gp_time now) {
  if (!s->cfg->usage || !s->usage) return;
  if (!s->usage_view || now - s->usage_view_at >= USAGE_REFRESH_S) {
    if (!s->usage_view) s->usage_view = gp_xcalloc((size_t)s->nq + 1, sizeof *s->usage_view);
    double scale = (double)s->up_gpus / gp_decay_tau(&s->cfg->fairshare);
    s->n_usage_view = 0;
    for (int q = 0; q < s->nq; q++)
      if (s->usage[q] > 0)
        s->usage_view[s->n_usage_view++] = (gp_usage){.queue = s->queues->queues[q].name, .gpus = s->usage[q] * scale};
    s->usage_view_at = now;
    view->rev = ++s->view_rev; /* usage is part of the view the memo keys on */
  }
  view->n_usage = s->n_usage_view;
  view->usage = s->usage_view;
}
