/* SPDX-License-Identifier: Apache-2.0 */
/* The order (order.c): eligible jobs in policy order, one at a time. Its state is private
 * to order.c (gp__order); with a memo, the order kept from the last step. */
#ifndef GP_CORE_ORDER_H
#define GP_CORE_ORDER_H

#include "core/classify.h"

typedef struct gp__order gp__order;
gp__order *gp__order_new(gp__ctx *c);
void gp__order_free(gp__order *o);
/* Next job to consider, or -1. */
int gp__order_next(gp__order *o);
/* The memo's kept order (order.c). */
void gp__kept_order_free(struct gp__kept_order *k);
size_t gp__kept_order_bytes(const struct gp__kept_order *k);
/* The segment (leaf, or 0 for a global order) the next job comes from, or -1. */
int gp__order_top(const gp__order *o);
/* Over the jobs still to come from segment s that ask for whole GPUs or CPU only (what
 * preemption acts for): the fewest GPUs asked, the highest priority, and whether any asks
 * for whole GPUs (what reservations are for). False when there is none. Computed once per
 * segment: later, fewer jobs remain, so the answer stays a bound. */
bool gp__order_rest(gp__order *o, int s, double *min_gpus, int *max_prio, bool *whole);
/* Takes up to k jobs of segment s off the order unconsidered; returns how many. */
int gp__order_skip(gp__order *o, int s, int k);
/* The job's leaf got more allocation: re-evaluate queue order. */
void gp__order_update(gp__order *o, int leaf);

#endif
