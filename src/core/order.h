/* SPDX-License-Identifier: Apache-2.0 */
/* The order (order.c): eligible jobs in policy order, one at a time. Its state is private
 * to order.c (gp__core_order); with a memo, the order kept from the last step. */
#ifndef GP_CORE_ORDER_H
#define GP_CORE_ORDER_H

#include "core/classify.h"

typedef struct gp__core_order gp__core_order;
gp__core_order *gp__core_order_new(gp__core_ctx *c);
void gp__core_order_free(gp__core_order *o);
/* Next job to consider, or -1. */
int gp__core_order_next(gp__core_order *o);
/* The memo's kept order (order.c). */
void gp__core_kept_order_free(struct gp__core_kept_order *k);
size_t gp__core_kept_order_bytes(const struct gp__core_kept_order *k);
/* The segment (leaf, or 0 for a global order) the next job comes from, or -1. */
int gp__core_order_top(const gp__core_order *o);
/* Over the jobs still to come from segment s that ask for whole GPUs or CPU only (what
 * preemption acts for): the fewest GPUs asked, the highest priority, and whether any asks
 * for whole GPUs (what reservations are for). False when there is none. Computed once per
 * segment: later, fewer jobs remain, so the answer stays a bound. */
bool gp__core_order_rest(gp__core_order *o, int s, double *min_gpus, int *max_prio, bool *whole);
/* Takes up to k jobs of segment s off the order unconsidered; returns how many. */
int gp__core_order_skip(gp__core_order *o, int s, int k);
/* The job's leaf got more allocation: re-evaluate queue order. */
void gp__core_order_update(gp__core_order *o, int leaf);

#endif
