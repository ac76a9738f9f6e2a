/* SPDX-License-Identifier: Apache-2.0 */
/* Per-user limits of leaf queues (user_limits.c, gp_queue.user_limits): the GPUs one
 * user's running jobs in a queue may hold, and the GPU-hours per period they may use
 * (gp_usage.period_gpu_hours). Internal to src/core. */
#ifndef GP_CORE_USER_LIMITS_H
#define GP_CORE_USER_LIMITS_H

#include "core/ctx.h"

/* GP_EINVAL naming "queues[i].user_limits[k].max_gpus" (or .user, .max_gpu_hours) for a
 * limit that is neither GP_NO_LIMIT nor a finite number >= 0, or names no user. */
int gp__core_user_limits_check_view(gp__core_ctx *c);
/* Would job j (pending, its leaf known) pass its user's limits in its queue now? -1 when
 * it would, else GP_PEND_USER_GPU_LIMIT or GP_PEND_USER_GPU_HOURS with *msg saying which
 * limit (a plan-arena string). */
int gp__core_user_limit_block(gp__core_ctx *c, int j, const char **msg);
/* Job j was started in this step: its GPUs count against its user's limit. */
void gp__core_user_limit_started(gp__core_ctx *c, int j);
/* Ends the step's tally (ctx_done). */
void gp__core_user_limits_done(gp__core_ctx *c);

#endif
