/* SPDX-License-Identifier: Apache-2.0 */
/* Backfill (backfill.c): reservations for blocked jobs, from the release times of running
 * jobs, this plan's starts and this step's victims. */
#ifndef GP_CORE_BACKFILL_H
#define GP_CORE_BACKFILL_H

#include "core/preempt.h"

typedef struct gp__core_backfill {
  gp__vec reservations; /* gp_plan_reservation, in decision order */
  int n_resv;
  bool *leaf_has_resv;
  struct gp__resv_cache *rcache; /* release events per node */
} gp__core_backfill;

/* Backfill (backfill.c): computes and records a reservation for a blocked job. */
void gp__reserve(gp__ctx *c, gp__req *r);
void gp__backfill_done(gp__ctx *c);

#endif
