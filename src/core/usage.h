/* SPDX-License-Identifier: Apache-2.0 */
/* Past usage in the step (usage.c): the view's decayed usage (gp_view.usage) put on the
 * queue tree, and the users' loads that order the jobs of a leaf queue
 * (gp_policy.fair_users). Internal to src/core. */
#ifndef GP_CORE_USAGE_H
#define GP_CORE_USAGE_H

#include "core/ctx.h"

/* Checks the view's usage entries and sets gp__core_queue.usage on every tree node: its
 * entry's, else the sum of its children's. An entry naming a queue the tree lacks (one
 * removed since) is ignored. GP_EINVAL naming "usage[i].gpus" or "usage[i].queue" for an
 * entry that is not finite and >= 0 or names no queue. */
int gp__core_usage_apply(gp__core_ctx *c);

/* Per view job (indexed like view->jobs; set for eligible ones), its key inside its leaf under fair users,
 * in milli-GPU: its user's decayed usage in that leaf, plus the GPUs the user's jobs run
 * there, plus the GPUs of the user's eligible jobs there that come before it (itself
 * included), so a burst counts before it has run (the entry penalty). Jobs of one user
 * keep their own order. NULL when no leaf has eligible jobs of two users (the order is
 * then the plain one). Scratch memory. */
int64_t *gp__core_user_keys(gp__core_ctx *c);

#endif
