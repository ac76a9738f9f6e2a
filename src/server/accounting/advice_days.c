/* SPDX-License-Identifier: Apache-2.0 */
/* Advice from the ledger's daily roll-ups (server.h, gp_advice_feed_days): a year's advice
 * reads a year of per-job day sums (store.h, gp_store_held_day) instead of a million
 * intervals. As for reports (report_days.c): the whole UTC days of the period as sums, the
 * partial days at its edges and any day with a price change inside it as closed intervals
 * clipped to them, the open intervals raw, all in one snapshot of the store; the fleet's
 * node intervals and the ended jobs' documents as gp_advice_feed reads them. */
#include <limits.h>
#include <stdlib.h>

#include "server/accounting/advice.h"
#include "server/accounting/report.h"
#include "server/accounting/ledger_feed.h"
#include "util/mem.h"

#define DAY_S 86400

typedef struct days_scan {
  gp_advice *a;
  int64_t now, day0;
  const bool *whole;
  int n_days;
  long n;
} days_scan;

static int on_held(void *ctx, const gp_store_held_day *d) {
  days_scan *sc = ctx;
  sc->n++;
  int64_t i = (d->day - sc->day0) / DAY_S;
  if (d->day < sc->day0 || i >= sc->n_days || !sc->whole[i]) return 0;
  gp_advice_held_day h = {.day = d->day, .job = d->job_id, .user = d->user, .queue = d->queue,
                          .model = d->model, .capacity = gp__srv_ledger_capacity(d->capacity),
                          .gpu_s = d->gpu_s, .used_gpu_s = d->used_gpu_s,
                          .known_gpu_s = d->known_gpu_s, .first_start = d->first_start,
                          .longest_s = d->longest_s};
  gp_advice_add_held_day(sc->a, &h);
  return 0;
}

static int on_node(void *ctx, const gp_store_node_interval *iv) {
  days_scan *sc = ctx;
  sc->n++;
  gp_ledger_node_iv n = gp__srv_ledger_node_iv(iv, sc->now);
  if (n.end > n.start) gp_advice_add_node(sc->a, &n);
  return 0;
}

static int on_interval(void *ctx, const gp_store_interval *iv) {
  days_scan *sc = ctx;
  sc->n++;
  gp_ledger_job_iv j = gp__srv_ledger_job_iv(iv, sc->now);
  if (j.end > j.start) gp_advice_add_interval(sc->a, &j);
  return 0;
}

/* A closed interval of a stretch read raw (the open ones come once, after). */
static int on_closed(void *ctx, const gp_store_interval *iv) {
  return iv->end ? on_interval(ctx, iv) : 0;
}

static int raw_stretch(gp_store_reader *r, days_scan *sc, int64_t a, int64_t b, const char *user,
                       gp_err *err) {
  if (a >= b) return 0;
  gp_advice_window(sc->a, a, b);
  return gp_store_reader_intervals(r, a, b, user, on_closed, sc, err);
}

static int feed(gp_store_reader *r, days_scan *sc, const gp_advice_params *p, gp_err *err) {
  int rc = p->fleet ? gp_store_reader_node_intervals(r, p->from, p->to, on_node, sc, err) : 0;
  int64_t d0 = sc->day0, d1 = d0 + (int64_t)sc->n_days * DAY_S;
  if (!rc) rc = gp_store_reader_held_days(r, d0, d1, p->user, on_held, sc, err);
  int64_t a = p->from;
  for (int i = 0; i <= sc->n_days && !rc; i++) {
    int64_t day = d0 + (int64_t)i * DAY_S;
    if (i == sc->n_days) {
      rc = raw_stretch(r, sc, a, p->to, p->user, err);
    } else if (sc->whole[i]) {
      rc = raw_stretch(r, sc, a, day, p->user, err);
      a = day + DAY_S;
    }
  }
  gp_advice_window(sc->a, 0, 0);
  if (!rc) rc = gp_store_reader_open_intervals(r, p->to, p->user, on_interval, sc, err);
  /* Jobs that ended from the period's start on may have run in it. */
  gp_store_job_filter f = {.from = p->from, .to = p->now + 1, .user = p->user, .queue = p->queue};
  gp_advice *adv = sc->a;
  if (!rc) rc = gp_store_reader_jobs(r, &f, 0, 0, INT_MAX, gp__srv_advice_on_job, &adv, err);
  return rc;
}

int gp_advice_feed_days(gp_store_reader *r, gp_advice *a, const gp_advice_params *p,
                        long *ret_read, gp_err *err) {
  if (p->from >= p->to || p->from < 0) return gp_advice_feed(r, a, p, err);
  int64_t d0 = (p->from + DAY_S - 1) / DAY_S * DAY_S, d1 = p->to / DAY_S * DAY_S;
  int n_days = d1 > d0 ? (int)((d1 - d0) / DAY_S) : 0;
  bool *whole = gp_xcalloc((size_t)n_days + 1, sizeof *whole);
  for (int i = 0; i < n_days; i++) whole[i] = gp_advice_day_whole(a, d0 + (int64_t)i * DAY_S);
  days_scan sc = {.a = a, .now = p->now, .day0 = d0, .whole = whole, .n_days = n_days};
  int rc = gp_store_reader_snapshot(r, true, err);
  if (!rc) rc = feed(r, &sc, p, err);
  gp_store_reader_snapshot(r, false, NULL);
  free(whole);
  if (ret_read) *ret_read = sc.n;
  return rc;
}
