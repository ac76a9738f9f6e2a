/* SPDX-License-Identifier: Apache-2.0 */
/* Report periods (see periods.h). */
#include "ledger/periods.h"

#include <stdlib.h>
#include <string.h>

#include "util/calendar.h"
#include "util/mem.h"

static int64_t step_start(gp_ledger_step step, int64_t t) {
  switch (step) {
  case GP_LS_DAY: return gp_day_start(t);
  case GP_LS_WEEK: return gp_week_start(t);
  case GP_LS_MONTH: return gp_month_start(t);
  default: return t;
  }
}

static int64_t step_next(gp_ledger_step step, int64_t label, int64_t to) {
  switch (step) {
  case GP_LS_DAY: return label + 86400;
  case GP_LS_WEEK: return label + 7 * 86400;
  case GP_LS_MONTH: return gp_next_month(label);
  default: return to;
  }
}

int gp__ledger_periods_build(gp__ledger_periods *ps, int64_t from, int64_t to,
                             gp_ledger_step step, gp_err *err) {
  size_t cap = 0, n = 0, lcap = 0;
  memset(ps, 0, sizeof *ps);
  for (int64_t t = from, label = step_start(step, from); t < to; n++) {
    if (n >= GP_LEDGER_MAX_PERIODS) {
      gp__ledger_periods_done(ps);
      return gp_err_set(err, GP_ELIMIT, NULL, 0, "step",
                        "more than %d steps in the period", GP_LEDGER_MAX_PERIODS);
    }
    gp_xgrow((void **)&ps->bound, &cap, n + 2, sizeof *ps->bound);
    gp_xgrow((void **)&ps->label, &lcap, n + 1, sizeof *ps->label);
    ps->bound[n] = t;
    ps->label[n] = label;
    label = step_next(step, label, to);
    t = label < to ? label : to;
    ps->bound[n + 1] = t;
  }
  ps->n = (int)n;
  return 0;
}

int gp__ledger_period_of(const gp__ledger_periods *ps, int64_t t) {
  int lo = 0, hi = ps->n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (ps->bound[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

void gp__ledger_periods_done(gp__ledger_periods *ps) {
  free(ps->bound);
  free(ps->label);
  memset(ps, 0, sizeof *ps);
}
