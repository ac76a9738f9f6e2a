/* SPDX-License-Identifier: Apache-2.0 */
/* Backfill (backfill.c): reservations for blocked jobs, from the release times of running
 * jobs, this plan's starts and this step's victims. */
#ifndef GP_CORE_BACKFILL_H
#define GP_CORE_BACKFILL_H

#include "core/preempt.h"

typedef struct gp__core_backfill {
  gp__core_vec reservations; /* gp_plan_reservation, in decision order */
  int n_resv;
  bool *leaf_has_resv;
  struct gp__core_resv_cache *rcache; /* release events per node */
  /* Per request shape (shapes.c): the step as it stood when a reservation for a job of
   * that shape last found no time (backfill.c); NULL until one fails. */
  struct gp__core_resv_fail *failed;
  size_t failed_cap;
} gp__core_backfill;

/* Backfill (backfill.c): computes and records a reservation for a blocked job. */
void gp__core_reserve(gp__core_ctx *c, gp__core_req *r);
void gp__core_backfill_done(gp__core_ctx *c);

#endif
