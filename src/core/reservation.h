/* SPDX-License-Identifier: Apache-2.0 */
/* Advance reservations in a step (reservation.c; gp_reservation in model.h,
 * docs/scheduling.md "Advance reservations"): which nodes each reservation in force fences,
 * which jobs are inside it, and the maintenance windows' stops. */
#ifndef GP_CORE_RESERVATION_H
#define GP_CORE_RESERVATION_H

#include "core/place.h"

typedef struct gp__core_ares {
  int n;                /* reservations in force (end > now), at most 64 */
  int idx[GP_MAX_VIEW_RESERVATIONS]; /* their view indexes */
  uint64_t *node_bits;  /* per node: bit k when reservation idx[k] holds it */
  uint64_t *inside;     /* per job: bit k when the job is inside reservation idx[k] */
  uint8_t *inside_done; /* per job: inside[] computed */
  gp_time valid;        /* the earliest later time at which a fence check answers otherwise */
} gp__core_ares;

/* Checks the view's reservations (GP_EINVAL naming "reservations[i].<field>"). */
int gp__core_ares_check(gp__core_ctx *c);
/* Builds the step's record (after classification); none when no reservation is in force. */
void gp__core_ares_setup(gp__core_ctx *c);
void gp__core_ares_done(gp__core_ctx *c);
/* Is any reservation in force (so placement depends on each job's end and membership)? */
static inline bool gp__core_ares_any(const gp__core_ctx *c) { return c->ares && c->ares->n > 0; }
/* Bits of the reservations in force that job j is inside (0 without any). */
uint64_t gp__core_ares_inside(const gp__core_ctx *c, int j);
/* The position (in ares.idx) of a reservation that keeps job j, ending at `end`, off node
 * now, or -1. Notes when the answer turns (ares.valid). */
int gp__core_ares_fence(const gp__core_ctx *c, int j, gp_time end, int node);
/* Backfill: the time from which node is free of every reservation that keeps job j off it
 * (its latest end), or 0 when none does. */
gp_time gp__core_ares_free_from(const gp__core_ctx *c, int j, int node);
/* Maintenance windows that have begun: their nodes' running jobs from outside them are
 * stopped (plan preemptions GP_PREEMPT_MAINT). */
void gp__core_ares_maint(gp__core_ctx *c);
/* For a job that found no room: when it would fit but for a reservation, the sentence
 * naming it (plan arena), else NULL (reservation_reason.c). */
const char *gp__core_ares_reason(gp__core_ctx *c, gp__core_req *r, gp__core_fit **fits, size_t *fits_cap);

#endif
