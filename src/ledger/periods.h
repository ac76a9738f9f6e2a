/* SPDX-License-Identifier: Apache-2.0 */
/* A report's periods: [from, to) cut at each day, week (Monday) or calendar month start in
 * UTC, or one period when there is no step. Each period carries its calendar label (the
 * step's start, which may precede `from` for the first one). */
#ifndef GP_LEDGER_PERIODS_H
#define GP_LEDGER_PERIODS_H

#include <stdint.h>

#include "ledger/report.h"
#include "util/error.h"

typedef struct gp__ledger_periods {
  int n;
  int64_t *bound;   /* n + 1 entries: bound[0] = from, bound[n] = to, increasing */
  int64_t *label;   /* n entries: the step's start (from with no step) */
} gp__ledger_periods;

/* Fails (GP_ELIMIT, field "step") past GP_LEDGER_MAX_PERIODS. Needs 0 <= from < to. */
int gp__ledger_periods_build(gp__ledger_periods *ps, int64_t from, int64_t to,
                             gp_ledger_step step, gp_err *err);
/* The period holding t, for from <= t < to. */
int gp__ledger_period_of(const gp__ledger_periods *ps, int64_t t);
void gp__ledger_periods_done(gp__ledger_periods *ps);

#endif
