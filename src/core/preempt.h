/* SPDX-License-Identifier: Apache-2.0 */
/* Preemption (preempt.c, preempt_limit.c, victim_order.c): victims for a blocked job,
 * chosen on a simulation before anything is evicted, and the jobs that wait for stopping
 * jobs. */
#ifndef GP_CORE_PREEMPT_H
#define GP_CORE_PREEMPT_H

#include "core/place.h"

typedef struct gp__core_preempt {
  gp__core_vec preemptions;  /* gp_plan_preemption, in decision order */
  gp__core_vec victims;      /* ints: every job chosen as a victim (or stopping job counted on),
                           in the order chosen; backfill reads it */
  int attempts;         /* simulations run (GP__MAX_PREEMPT_ATTEMPTS) */
  bool possible;        /* some running job could be a victim for some kind */
  struct gp__core_preempt_scratch *pre;    /* preempt.c's scratch */
} gp__core_preempt;

/* Preemption (preempt.c): true when victims were chosen (recorded in the plan). */
bool gp__core_try_preempt(gp__core_ctx *c, gp__core_req *r);
/* Priority preemption for a job whose queue (or a parent) is at its limit: the queue's
 * lower-priority victims, enough to bring it within the limit with the job's GPUs (counting
 * its stopping jobs nobody counts on yet), and room for the job unless it has room now.
 * True when victims were chosen or stopping jobs counted on. fits: placement scratch. */
bool gp__core_try_preempt_at_limit(gp__core_ctx *c, gp__core_req *r, gp__core_fit **fits,
                                   size_t *fits_cap);
/* The first queue on leaf's path whose limit `gpus` more would break, or -1: what its jobs
 * hold, and what jobs waiting for victims will hold beyond what those victims give back.
 * A job behind one waiting at a limit may not take the room its victims free. */
int gp__core_limit_over(const gp__core_ctx *c, int leaf, double gpus);
bool gp__core_preempt_may_act(gp__core_ctx *c, int leaf, double min_gpus, int max_prio);
/* True when the job would fit once the STOPPING jobs are gone. */
bool gp__core_fits_after_stopping(gp__core_ctx *c, const gp__core_req *r);
void gp__core_preempt_setup(gp__core_ctx *c);
void gp__core_preempt_done(gp__core_ctx *c);

/* Victims (preempt.c, victim_order.c): may running position r be preempted now? The
 * victim-able jobs' running positions in victim order into order[]; returns how many. */
bool gp__core_victim_able(const gp__core_ctx *c, int r);
int gp__core_victim_order(gp__core_ctx *c, int *order);
void gp__core_victims_forget(struct gp__core_victims *v);
void gp__core_victims_free(struct gp__core_victims *v);
size_t gp__core_victims_bytes(const struct gp__core_victims *v);

#endif
