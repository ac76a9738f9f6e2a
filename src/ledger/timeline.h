/* SPDX-License-Identifier: Apache-2.0 */
/* The price timeline of one (model, capacity type) over a report: [from, to) cut into
 * segments inside which the GPU-hour price, the energy price and the period do not change,
 * so an interval is priced by walking segments, never by searching the catalogue. Cuts fall
 * at period bounds, at the `from` of each price entry that could apply, at commitment
 * bounds (reserved) and at energy price dates (on-prem). */
#ifndef GP_LEDGER_TIMELINE_H
#define GP_LEDGER_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "ledger/periods.h"
#include "ledger/prices.h"

typedef struct gp__ledger_timeline {
  int n;
  int64_t *start;   /* n + 1 entries; start[n] = the report's `to` */
  double *rate;     /* per GPU-hour; 0 where unknown */
  bool *known;      /* a price applies (always true without a catalogue) */
  double *kwh;      /* energy price per kWh (on-prem; 0 where none) */
  int32_t *period;
} gp__ledger_timeline;

/* `prices` may be NULL (no money: every rate 0, known). */
gp__ledger_timeline *gp__ledger_timeline_new(const gp_prices *prices, const char *model,
                                             gp_capacity c, const gp__ledger_periods *ps);
/* The segment holding t, for start[0] <= t < start[n]. */
int gp__ledger_timeline_find(const gp__ledger_timeline *tl, int64_t t);
void gp__ledger_timeline_free(gp__ledger_timeline *tl);   /* accepts NULL */

#endif
