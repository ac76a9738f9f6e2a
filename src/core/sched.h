/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler: a pure function from (policy, cluster view, now) to a plan.
 * Same inputs give a byte-identical plan; nothing here reads a clock, a file or a socket. */
#ifndef GP_CORE_SCHED_H
#define GP_CORE_SCHED_H

#include "core/model.h"
#include "core/plan.h"
#include "util/error.h"

/* Runs one scheduling step. On success returns 0 and stores a new plan in *ret_plan (the
 * caller frees it with gp_plan_free). Returns GP_EINVAL, with details in *err (may be
 * NULL), when the view is inconsistent (a placement on a node that does not exist, a GPU
 * index out of range, two queues with one name); *ret_plan is untouched then. */
int gp_sched_step(const gp_policy *policy, const gp_view *view, gp_time now,
                  gp_plan **ret_plan, gp_err *err);

#endif
