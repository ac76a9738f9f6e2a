/* SPDX-License-Identifier: Apache-2.0 */
/* A plan's lifetime and the machine names of its reason and kind enums, as the API and
 * `gpool plan -o json` spell them. Everything a plan points to lives in its arena, so
 * freeing a plan is one arena release. */
#include "core/plan.h"

#include <stdlib.h>

#include "util/mem.h"

void gp_plan_free(gp_plan *plan) {
  if (!plan) return;
  gp_arena_free(plan->arena);
  free(plan);
}

static const char *const pending_names[] = {
    [GP_PEND_PRIORITY] = "Priority",
    [GP_PEND_QUEUE_LIMIT] = "QueueLimit",
    [GP_PEND_RESOURCES] = "Resources",
    [GP_PEND_RESERVATION] = "Reservation",
    [GP_PEND_DEPENDENCY] = "Dependency",
    [GP_PEND_HELD] = "Held",
    [GP_PEND_NO_MATCHING_NODES] = "NoMatchingNodes",
    [GP_PEND_GPU_MODEL_UNAVAILABLE] = "GpuModelUnavailable",
    [GP_PEND_WAITING_FOR_PREEMPTION] = "WaitingForPreemption",
};

static const char *const end_names[] = {
    [GP_END_DEPENDENCY_NEVER_SATISFIED] = "DependencyNeverSatisfied",
    [GP_END_NO_MATCHING_NODES] = "NoMatchingNodes",
    [GP_END_GPU_MODEL_UNKNOWN] = "GpuModelUnknown",
    [GP_END_INVALID_REQUEST] = "InvalidRequest",
};

static const char *const preempt_names[] = {
    [GP_PREEMPT_PRIORITY] = "priority",
    [GP_PREEMPT_RECLAIM] = "reclaim",
};

#define NAME_OF(table, v) \
  ((unsigned)(v) < sizeof table / sizeof table[0] && table[v] ? table[v] : "Unknown")

const char *gp_pending_reason_name(gp_pending_reason r) { return NAME_OF(pending_names, r); }
const char *gp_end_reason_name(gp_end_reason r) { return NAME_OF(end_names, r); }
const char *gp_preempt_kind_name(gp_preempt_kind k) { return NAME_OF(preempt_names, k); }
