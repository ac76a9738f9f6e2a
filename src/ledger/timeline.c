/* SPDX-License-Identifier: Apache-2.0 */
/* Price timelines (see timeline.h). Built once per (model, capacity) a report meets; the
 * catalogue lookups (gp_prices_rate) happen here, once per segment. */
#include "ledger/timeline.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/mem.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

typedef struct cuts { int64_t *t; size_t n, cap; int64_t from, to; } cuts;

static void cut(cuts *c, int64_t t) {
  if (t <= c->from || t >= c->to) return;
  gp_xgrow((void **)&c->t, &c->cap, c->n + 1, sizeof *c->t);
  c->t[c->n++] = t;
}

gp__ledger_timeline *gp__ledger_timeline_new(const gp_prices *p, const char *model,
                                             gp_capacity c, const gp__ledger_periods *ps) {
  cuts k = {.from = ps->bound[0], .to = ps->bound[ps->n]};
  for (int i = 0; i <= ps->n; i++) cut(&k, ps->bound[i]);
  for (int i = 0; p && i < p->n_prices; i++)
    if (p->prices[i].capacity == c &&
        (!strcmp(p->prices[i].model, "*") || !strcasecmp(p->prices[i].model, model)))
      cut(&k, p->prices[i].from);
  for (int i = 0; p && c == GP_CAP_RESERVED && i < p->n_commitments; i++)
    if (!strcasecmp(p->commitments[i].model, model)) {
      cut(&k, p->commitments[i].from);
      cut(&k, p->commitments[i].to);
    }
  for (int i = 0; p && c == GP_CAP_ON_PREM && i < p->n_energy; i++) cut(&k, p->energy[i].from);
  gp_xgrow((void **)&k.t, &k.cap, k.n + 1, sizeof *k.t);
  k.t[k.n++] = k.from;
  qsort(k.t, k.n, sizeof *k.t, cmp_i64);
  size_t n = 0;
  for (size_t i = 0; i < k.n; i++)
    if (!n || k.t[i] != k.t[n - 1]) k.t[n++] = k.t[i];

  gp__ledger_timeline *tl = gp_xcalloc(1, sizeof *tl);
  tl->n = (int)n;
  tl->start = gp_xmalloc((n + 1) * sizeof *tl->start);
  tl->rate = gp_xcalloc(n, sizeof *tl->rate);
  tl->known = gp_xcalloc(n, sizeof *tl->known);
  tl->kwh = gp_xcalloc(n, sizeof *tl->kwh);
  tl->period = gp_xcalloc(n, sizeof *tl->period);
  for (size_t i = 0; i < n; i++) {
    int64_t t = k.t[i];
    tl->start[i] = t;
    tl->known[i] = !p || gp_prices_rate(p, model, c, t, &tl->rate[i]);
    if (c == GP_CAP_ON_PREM && !gp_prices_energy_rate(p, t, &tl->kwh[i])) tl->kwh[i] = 0;
    tl->period[i] = gp__ledger_period_of(ps, t);
  }
  tl->start[n] = k.to;
  free(k.t);
  return tl;
}

int gp__ledger_timeline_find(const gp__ledger_timeline *tl, int64_t t) {
  int lo = 0, hi = tl->n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (tl->start[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

void gp__ledger_timeline_free(gp__ledger_timeline *tl) {
  if (!tl) return;
  free(tl->start);
  free(tl->rate);
  free(tl->known);
  free(tl->kwh);
  free(tl->period);
  free(tl);
}
