/* SPDX-License-Identifier: Apache-2.0 */
/* A plan's lifetime and the machine names of its reason and kind enums, as the API and
 * `gpool plan -o json` spell them. Everything a plan points to lives in its arena, so
 * freeing a plan is one arena release. */
#include "core/plan.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

void gp_plan_free(gp_plan *plan) {
  if (!plan) return;
  gp_arena_free(plan->arena);
  free(plan);
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* The same bits, as byte-identical output needs (0.1 + 0.2 is not 0.3). */
static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static bool same_placements(const gp_placement *a, const gp_placement *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i].node != b[i].node || a[i].gpu_mask != b[i].gpu_mask || a[i].gpu_milli != b[i].gpu_milli ||
        a[i].gpu_mem_mib != b[i].gpu_mem_mib || a[i].mig_instance != b[i].mig_instance)
      return false;
  return true;
}

bool gp_plan_equal(const gp_plan *a, const gp_plan *b) {
  if (a->now != b->now || a->n_starts != b->n_starts || a->n_preemptions != b->n_preemptions ||
      a->n_reservations != b->n_reservations || a->n_pending != b->n_pending ||
      a->n_ended != b->n_ended || a->n_queues != b->n_queues || a->n_mig != b->n_mig ||
      a->n_creates != b->n_creates || a->n_deletes != b->n_deletes || a->n_scale_notes != b->n_scale_notes)
    return false;
  for (int i = 0; i < a->n_creates; i++)
    if (a->creates[i].tmpl != b->creates[i].tmpl || a->creates[i].count != b->creates[i].count ||
        a->creates[i].job != b->creates[i].job)
      return false;
  for (int i = 0; i < a->n_deletes; i++)
    if (a->deletes[i].node != b->deletes[i].node || a->deletes[i].idle_since != b->deletes[i].idle_since)
      return false;
  for (int i = 0; i < a->n_scale_notes; i++) {
    const gp_plan_scale_note *x = &a->scale_notes[i], *y = &b->scale_notes[i];
    if (x->job != y->job || x->tmpl != y->tmpl || x->state != y->state || x->count != y->count) return false;
  }
  for (int i = 0; i < a->n_starts; i++) {
    const gp_plan_start *x = &a->starts[i], *y = &b->starts[i];
    if (x->job != y->job || x->n_placements != y->n_placements ||
        !same_placements(x->placements, y->placements, x->n_placements))
      return false;
  }
  for (int i = 0; i < a->n_preemptions; i++) {
    const gp_plan_preemption *x = &a->preemptions[i], *y = &b->preemptions[i];
    if (x->job != y->job || x->for_job != y->for_job || x->kind != y->kind) return false;
  }
  for (int i = 0; i < a->n_reservations; i++)
    if (a->reservations[i].job != b->reservations[i].job || a->reservations[i].at != b->reservations[i].at)
      return false;
  for (int i = 0; i < a->n_pending; i++) {
    const gp_plan_pending *x = &a->pending[i], *y = &b->pending[i];
    if (x->job != y->job || x->reason != y->reason || !same_str(x->message, y->message)) return false;
  }
  for (int i = 0; i < a->n_ended; i++) {
    const gp_plan_end *x = &a->ended[i], *y = &b->ended[i];
    if (x->job != y->job || x->reason != y->reason || !same_str(x->message, y->message)) return false;
  }
  for (int i = 0; i < a->n_queues; i++) {
    const gp_plan_queue *x = &a->queues[i], *y = &b->queues[i];
    if (!same_str(x->name, y->name) || x->parent != y->parent || !same_bits(x->deserved, y->deserved) ||
        !same_bits(x->limit, y->limit) || !same_bits(x->weight, y->weight) ||
        !same_bits(x->fair_share, y->fair_share) || !same_bits(x->allocated, y->allocated) ||
        !same_bits(x->pending, y->pending) || x->running_jobs != y->running_jobs ||
        x->pending_jobs != y->pending_jobs)
      return false;
  }
  for (int i = 0; i < a->n_mig; i++) {
    const gp_plan_mig *x = &a->mig[i], *y = &b->mig[i];
    if (x->node != y->node || x->gpu != y->gpu || x->n_instances != y->n_instances) return false;
    for (int k = 0; k < x->n_instances; k++)
      if (!same_str(x->profiles[k], y->profiles[k]) || x->start_slots[k] != y->start_slots[k]) return false;
  }
  return true;
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
    [GP_PEND_BEGIN_TIME] = "BeginTime",
    [GP_PEND_USER_GPU_LIMIT] = "UserGpuLimit",
    [GP_PEND_USER_GPU_HOURS] = "UserGpuHours",
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
    [GP_PREEMPT_MAINT] = "maintenance",
};

static const char *const scale_state_names[] = {
    [GP_SCALE_WAITING] = "waiting",
    [GP_SCALE_BACKOFF] = "backoff",
    [GP_SCALE_MAX_NODES] = "max_nodes",
    [GP_SCALE_COST_CAP] = "cost_cap",
    [GP_SCALE_NO_TEMPLATE] = "no_template",
};

#define NAME_OF(table, v) \
  ((unsigned)(v) < sizeof table / sizeof table[0] && table[v] ? table[v] : "Unknown")

const char *gp_pending_reason_name(gp_pending_reason r) { return NAME_OF(pending_names, r); }
const char *gp_end_reason_name(gp_end_reason r) { return NAME_OF(end_names, r); }
const char *gp_preempt_kind_name(gp_preempt_kind k) { return NAME_OF(preempt_names, k); }
const char *gp_scale_state_name(gp_scale_state s) { return NAME_OF(scale_state_names, s); }
