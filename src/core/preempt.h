/* SPDX-License-Identifier: Apache-2.0 */
/* Preemption (preempt.c, victim_order.c): victims for a blocked job, chosen on a
 * simulation before anything is evicted, and the jobs that wait for stopping jobs. */
#ifndef GP_CORE_PREEMPT_H
#define GP_CORE_PREEMPT_H

#include "core/place.h"

typedef struct gp__core_preempt {
  gp__vec preemptions;  /* gp_plan_preemption, in decision order */
  gp__vec victims;      /* ints: every job chosen as a victim (or stopping job counted on),
                           in the order chosen; backfill reads it */
  int attempts;         /* simulations run (GP__MAX_PREEMPT_ATTEMPTS) */
  bool possible;        /* some running job could be a victim for some kind */
  struct gp__preempt *pre;    /* preempt.c's scratch */
} gp__core_preempt;

/* Preemption (preempt.c): true when victims were chosen (recorded in the plan). */
bool gp__try_preempt(gp__ctx *c, gp__req *r);
bool gp__preempt_may_act(gp__ctx *c, int leaf, double min_gpus, int max_prio);
/* True when the job would fit once the STOPPING jobs are gone. */
bool gp__fits_after_stopping(gp__ctx *c, const gp__req *r);
void gp__preempt_setup(gp__ctx *c);
void gp__preempt_done(gp__ctx *c);

/* Victims (preempt.c, victim_order.c): may running position r be preempted now? The
 * victim-able jobs' running positions in victim order into order[]; returns how many. */
bool gp__victim_able(const gp__ctx *c, int r);
int gp__victim_order(gp__ctx *c, int *order);
void gp__victims_forget(struct gp__victims *v);
void gp__victims_free(struct gp__victims *v);
size_t gp__victims_bytes(const struct gp__victims *v);

#endif
