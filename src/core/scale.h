/* SPDX-License-Identifier: Apache-2.0 */
/* Autoscaling's decisions, shared by the server (which calls the providers) and the
 * simulator (which adds and removes virtual nodes): after a scheduling step, which nodes to
 * ask the node templates' providers for, and which provider nodes to delete.
 *
 * Scale-up: a pending job that no node can hold now (the step left it pending for
 * resources, missing or down nodes, or a reservation) is first fitted, whole gang, into the
 * nodes already being created and those proposed earlier in the same call; failing that,
 * into the fewest new nodes of the first template, in order, that can hold its whole gang:
 * spot templates only for jobs that allow spot and whose queue does not refuse it (a queue
 * that prefers spot tries them first), classes in the caller's rank (on-prem, reserved,
 * spot, on-demand by default), cheapest first within a class; a template is passed over
 * while it backs off after a failed call, when max_nodes would be passed, or when the
 * pool's hourly cost would pass max_hourly_cost (a template without a price is never used
 * under a cap). Jobs are taken oldest first, so one burst serves the longest waiting.
 *
 * Scale-down: a provider node (up, drained or cordoned) that holds no job, gets no start in
 * the plan and has been empty for scale_down_after is deleted, at most the template's
 * disruption budget of its nodes being deleted at once. Only empty nodes: scaling down
 * never stops a running job.
 *
 * Pure: no I/O, no clock; same inputs give the same proposal. */
#ifndef GP_CORE_SCALE_H
#define GP_CORE_SCALE_H

#include "core/model.h"
#include "core/plan.h"
#include "util/error.h"

/* What the caller knows now about template t (parallel to gp_view.templates). */
typedef struct gp_scale_template {
  int nodes;                 /* its instances that exist: being created, registered, or
                                being deleted; counted against max_nodes */
  int creating;              /* of those, asked for and not registered yet */
  int deleting;              /* of those, being deleted */
  double price_per_gpu_hour; /* < 0: not known */
  gp_time retry_at;          /* after a failed call: not asked before then; 0: now */
  int disruption_budget;     /* its nodes being deleted at once, at most; 0: never delete */
} gp_scale_template;

typedef struct gp_scale_config {
  const gp_scale_template *templates; /* gp_view.n_templates entries */
  int class_rank[4];        /* per gp_capacity: lower is tried first; < 0: never created */
  double max_hourly_cost;   /* GP_NO_LIMIT: none */
  double hourly_cost;       /* what the provider nodes that exist cost per hour now */
  const int *node_template; /* per view node: its template, or -1 (not a provider's) */
  const gp_time *node_idle_since; /* per view node: since when it has held no job; 0: it
                                     holds one, or not known */
  gp_time scale_down_after; /* seconds; 0: never scale down */
} gp_scale_config;

/* Whether up to max_nodes nodes of template t could hold the request (its size, model,
 * labels and capacity type; not what the job's queue prefers). For a server to accept a
 * submission that only a template's nodes could run. */
bool gp_scale_could_hold(const gp_template *t, const gp_request *r);

/* The default class_rank: on-prem, reserved, spot, on-demand. */
void gp_scale_default_ranks(int class_rank[4]);

/* Adds to `plan` (made by gp_sched_step for `view`, with its pending list) the creations,
 * deletions and the scale note of every pending job that no node can hold now. Returns 0,
 * or GP_EINVAL with *err when cfg and view disagree (a template index out of range). */
int gp_scale_propose(const gp_policy *policy, const gp_view *view, const gp_scale_config *cfg,
                     gp_plan *plan, gp_err *err);

#endif
