/* SPDX-License-Identifier: Apache-2.0 */
/* A report from the ledger's daily roll-ups (server.h, gp_report_feed_days; store.h,
 * gp_store_job_day): what lets a year's report read a year of day sums instead of a
 * million intervals. The period splits into whole UTC days, read as sums, and the rest —
 * the partial days at its edges and any day inside which a price changes (its sum could
 * not be priced) — read as closed intervals clipped to those stretches; the open
 * intervals (not in the roll-ups until they close) are read raw over the whole period.
 * All in one snapshot of the store, so an interval that closes meanwhile counts once.
 * The fleet's node intervals are read raw: a node's state changes a few times a month,
 * and unused commitment is a sweep over the reserved GPUs present, not a sum. */
#include <stdlib.h>

#include "server/accounting/ledger.h"
#include "server/accounting/report.h"
#include "server/accounting/ledger_feed.h"
#include "util/mem.h"

#define DAY_S 86400

typedef struct days_scan {
  gp_ledger_report *lr;
  int64_t now;
  int64_t day0;       /* the first whole day */
  const bool *whole;  /* by day from day0: read as a sum */
  int n_days;
  long n;
} days_scan;

static bool day_taken(const days_scan *sc, int64_t day) {
  int64_t i = (day - sc->day0) / DAY_S;
  return day >= sc->day0 && i < sc->n_days && sc->whole[i];
}

static int on_job_day(void *ctx, const gp_store_job_day *d) {
  days_scan *sc = ctx;
  sc->n++;
  if (!sc->lr || !day_taken(sc, d->day)) return 0;
  gp_ledger_job_day j = {.day = d->day, .queue = d->queue, .user = d->user, .model = d->model,
                         .capacity = gp__srv_ledger_capacity(d->capacity), .gpu_s = d->gpu_s,
                         .used_gpu_s = d->used_gpu_s, .known_gpu_s = d->known_gpu_s,
                         .energy_j = d->energy_j, .energy_known = d->energy_known};
  gp_ledger_report_add_job_day(sc->lr, &j);
  return 0;
}

static int on_alloc_day(void *ctx, const gp_store_alloc_day *d) {
  days_scan *sc = ctx;
  sc->n++;
  if (!sc->lr || !day_taken(sc, d->day)) return 0;
  /* As the raw path reads node states: a name this server does not know counts as up. */
  int state = gp__srv_ledger_node_state(d->state);
  gp_ledger_alloc_day a = {.day = d->day, .model = d->model, .capacity = gp__srv_ledger_capacity(d->capacity),
                           .state = state < 0 ? GP_LEDGER_UP : (gp_ledger_node_state)state,
                           .gpu_s = d->gpu_s};
  gp_ledger_report_add_alloc_day(sc->lr, &a);
  return 0;
}

static int on_node(void *ctx, const gp_store_node_interval *iv) {
  days_scan *sc = ctx;
  sc->n++;
  if (!sc->lr) return 0;
  gp_ledger_node_iv n = gp__srv_ledger_node_iv(iv, sc->now);
  if (n.end > n.start) gp_ledger_report_add_node(sc->lr, &n);
  return 0;
}

/* A closed interval of a stretch read raw (the open ones come once, below). */
static int on_closed(void *ctx, const gp_store_interval *iv) {
  days_scan *sc = ctx;
  if (!iv->end) return 0;
  sc->n++;
  if (!sc->lr) return 0;
  gp_ledger_job_iv j = gp__srv_ledger_job_iv(iv, sc->now);
  if (j.end > j.start) gp_ledger_report_add_job(sc->lr, &j);
  return 0;
}

static int on_open(void *ctx, const gp_store_interval *iv) {
  days_scan *sc = ctx;
  sc->n++;
  if (!sc->lr) return 0;
  gp_ledger_job_iv j = gp__srv_ledger_job_iv(iv, sc->now);
  if (j.end > j.start) gp_ledger_report_add_job(sc->lr, &j);
  return 0;
}

/* The closed intervals of [a, b), clipped to it. */
static int raw_stretch(gp_store_reader *r, days_scan *sc, int64_t a, int64_t b, const char *user,
                       gp_err *err) {
  if (a >= b) return 0;
  if (sc->lr) gp_ledger_report_window(sc->lr, a, b);
  return gp_store_reader_intervals(r, a, b, user, on_closed, sc, err);
}

static int feed(gp_store_reader *r, days_scan *sc, int64_t from, int64_t to, const char *user,
                bool nodes, gp_err *err) {
  int rc = nodes ? gp_store_reader_node_intervals(r, from, to, on_node, sc, err) : 0;
  int64_t d0 = sc->day0, d1 = d0 + (int64_t)sc->n_days * DAY_S;
  if (!rc) rc = gp_store_reader_job_days(r, d0, d1, user, on_job_day, sc, err);
  if (!rc && nodes) rc = gp_store_reader_alloc_days(r, d0, d1, on_alloc_day, sc, err);
  /* Raw: before the first whole day, each run of days not taken whole, and after. */
  int64_t a = from;
  for (int i = 0; i <= sc->n_days && !rc; i++) {
    int64_t day = d0 + (int64_t)i * DAY_S;
    if (i == sc->n_days) {
      rc = raw_stretch(r, sc, a, to, user, err);
    } else if (sc->whole[i]) {
      rc = raw_stretch(r, sc, a, day, user, err);
      a = day + DAY_S;
    }
  }
  if (sc->lr) gp_ledger_report_window(sc->lr, 0, 0);
  if (!rc) rc = gp_store_reader_open_intervals(r, to, user, on_open, sc, err);
  return rc;
}

int gp_report_feed_days(gp_store_reader *r, gp_ledger_report *lr, int64_t from, int64_t to,
                        int64_t now, const char *user, bool nodes, long *ret_read, gp_err *err) {
  if (from >= to) return 0;
  int64_t d0 = (from + DAY_S - 1) / DAY_S * DAY_S, d1 = to / DAY_S * DAY_S;
  int n_days = d1 > d0 ? (int)((d1 - d0) / DAY_S) : 0;
  bool *whole = gp_xcalloc((size_t)n_days + 1, sizeof *whole);
  /* Without a report (counting only), every whole day counts as a sum. */
  for (int i = 0; i < n_days; i++)
    whole[i] = !lr || gp_ledger_report_day_whole(lr, d0 + (int64_t)i * DAY_S);
  days_scan sc = {.lr = lr, .now = now, .day0 = d0, .whole = whole, .n_days = n_days};
  int rc = gp_store_reader_snapshot(r, true, err);
  if (!rc) rc = feed(r, &sc, from, to, user, nodes, err);
  gp_store_reader_snapshot(r, false, NULL);
  free(whole);
  if (ret_read) *ret_read = sc.n;
  return rc;
}
