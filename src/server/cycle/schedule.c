/* SPDX-License-Identifier: Apache-2.0 */
/* The server side of a scheduling step: bring the kept view up to date (view.c), run the
 * pure core through the state's memo (gp_sched_step_memo), and apply the plan: persist
 * allocations, state changes and orders in the current transaction; the state thread
 * hands the orders to agents only after the commit. Pending reasons are kept in memory for
 * `gpool why` (they are recomputed every step, so they are not stored). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/plan.h"
#include "core/sched.h"
#include "protocol/order.h"
#include "server/accounting/ledger.h"
#include "server/cycle/schedule.h"
#include "server/elastic/autoscale.h"
#include "server/accounting/fairshare.h"
#include "server/state/reservations.h"
#include "server/state/state.h"
#include "server/streams/events.h"
#include "server/workloads/start_order.h"
#include "server/workloads/steps.h"
#include "util/mem.h"

/* The step, through the memo. With sched_check, a full step beside it must agree. */
static int step(gp_srv_state *s, const gp_view *v, int64_t now, gp_plan **ret, gp_err *err) {
  int r = gp_sched_step_memo(s->memo, &s->cfg->policy, v, now, 0, ret, err);
  if (r || !s->sched_check) return r;
  gp_plan *full = NULL;
  gp_err e = {0};
  if (gp_sched_step(&s->cfg->policy, v, now, &full, &e) || !gp_plan_equal(*ret, full)) {
    fprintf(stderr, "gpool server: the scheduler's memo decided other than a full step at %lld\n",
            (long long)now);
    abort();
  }
  gp_plan_free(full);
  return 0;
}

static int apply_start(gp_srv_state *s, gp_srv_job *j, const gp_plan_start *st, int64_t now,
                       gp_err *err) {
  if (j->state != GP_JOB_PENDING || st->n_placements != j->tasks) return 0;
  for (int t = 0; t < st->n_placements; t++)
    if (st->placements[t].node < 0 || st->placements[t].node >= s->n_nodes) return 0;
  free(j->alloc);
  j->alloc = gp_xcalloc((size_t)st->n_placements, sizeof *j->alloc);
  j->n_alloc = st->n_placements;
  for (int t = 0; t < st->n_placements; t++) {
    const gp_placement *p = &st->placements[t];
    j->alloc[t] = (gp_srv_alloc){p->node, p->gpu_mask, p->gpu_milli, p->gpu_mem_mib,
                                 p->mig_instance, false, 0, 0, -1, -1, 0, 0};
  }
  gp__srv_job_set_state(s, j, GP_JOB_RUNNING);
  j->started_at = now;
  j->has_exit_code = false;
  j->exit_signal = 0;
  free(j->task_failure);
  j->task_failure = NULL;
  j->master_port = gp__srv_master_port(s, j);
  gp__srv_steps_new_run(j); /* before the start orders, which carry its credential */
  j->pending_reason = -1;
  j->reservation_at = 0;
  s->counters.starts++;
  gp_hist_observe(&s->counters.wait_s, (double)(now - j->submitted_at));
  json_t *extra = json_object();
  json_object_set_new(extra, "node", json_string(s->nodes[j->alloc[0].node]->name));
  if (j->n_alloc > 1) {
    json_t *nodes = json_array();
    for (int t = 0; t < j->n_alloc; t++)
      json_array_append_new(nodes, json_string(s->nodes[j->alloc[t].node]->name));
    json_object_set_new(extra, "nodes", nodes);
  }
  int r = gp__srv_job_event(s, j, "started", now, extra, err);
  if (!r) r = gp__srv_ledger_open_job(s, j, now, err); /* before the job's doc: its attempts */
  if (!r) r = gp__srv_persist_job(s, j, err);
  for (int t = 0; t < j->n_alloc && !r; t++) {
    const gp_srv_alloc *a = &j->alloc[t];
    gp_store_alloc row = {j->id, t, s->nodes[a->node]->name, a->gpu_mask, a->gpu_milli,
                          a->gpu_mem_mib, a->mig_instance};
    r = gp_store_put_alloc(s->store, &row, err);
  }
  for (int t = 0; t < j->n_alloc && !r; t++) {
    gp_srv_node *n = s->nodes[j->alloc[t].node];
    j->alloc[t].order_id = s->next_order_id;
    r = gp__srv_order_add(s, n, gp__srv_start_order(s, j, t), j->id, true, err);
    /* A stop still queued for an earlier run of this job here must not hit the new run. */
    for (int o = 0; o < n->n_orders - 1 && !r; o++)
      if (n->orders[o].job_id == j->id) {
        r = gp__srv_orders_purge_stale(s, n, err);
        break;
      }
  }
  return r;
}

static bool mig_order_outstanding(const gp_srv_node *n, int gpu) {
  for (int i = 0; i < n->n_orders; i++)
    if (n->orders[i].job_id == -1 - gpu) return true;
  return false;
}

static void keep_figs(gp_srv_state *s, const gp_plan *plan) {
  for (int i = 0; i < s->n_figs; i++) {
    free(s->figs[i].name);
    free(s->figs[i].parent);
  }
  free(s->figs);
  s->figs = gp_xcalloc((size_t)plan->n_queues + 1, sizeof *s->figs);
  s->n_figs = plan->n_queues;
  for (int i = 0; i < plan->n_queues; i++) {
    s->figs[i].fig = plan->queues[i];
    s->figs[i].name = gp_xstrdup(plan->queues[i].name);
    int p = plan->queues[i].parent;
    s->figs[i].parent = p >= 0 && p < plan->n_queues ? gp_xstrdup(plan->queues[p].name) : NULL;
    s->figs[i].fig.name = s->figs[i].name;
  }
}

/* ---- the phases of a step's plan, in the order they are applied ---- */

/* Jobs the core found impossible end (a job a node template could hold is not one: the
 * core leaves it pending), unless no node has registered yet (then nothing is known about
 * the fleet, so they wait). */
static int apply_ends(gp_srv_state *s, const gp_plan *plan, int64_t now, gp_err *err) {
  int r = 0;
  for (int i = 0; i < plan->n_ended && !r; i++) {
    const gp_plan_end *e = &plan->ended[i];
    gp_srv_job *j = gp__srv_view_job(s, e->job);
    if (!j || (j->state != GP_JOB_PENDING && j->state != GP_JOB_HELD)) continue;
    if (s->n_nodes == 0 && (e->reason == GP_END_NO_MATCHING_NODES || e->reason == GP_END_GPU_MODEL_UNKNOWN)) {
      j->pending_reason = GP_PEND_NO_MATCHING_NODES;
      free(j->pending_message);
      j->pending_message = gp_xstrdup("No node has registered yet; the job waits for the first agent.");
      continue;
    }
    free(j->pending_message);
    j->pending_message = e->message ? gp_xstrdup(e->message) : NULL;
    char reason[600];
    snprintf(reason, sizeof reason, "%s%s%s", gp_end_reason_name(e->reason),
             e->message ? ": " : "", e->message ? e->message : "");
    r = gp__srv_job_end(s, j, GP_JOB_FAILED, reason, now, err);
  }
  return r;
}

static int apply_preemptions(gp_srv_state *s, const gp_plan *plan, int64_t now, gp_err *err) {
  int r = 0;
  for (int i = 0; i < plan->n_preemptions && !r; i++) {
    const gp_plan_preemption *p = &plan->preemptions[i];
    gp_srv_job *j = gp__srv_view_job(s, p->job);
    if (!j || j->state != GP_JOB_RUNNING) continue;
    json_t *extra = json_object();
    json_object_set_new(extra, "reason", json_string(gp_preempt_kind_name(p->kind)));
    const gp_srv_job *for_job = gp__srv_view_job(s, p->for_job);
    if (for_job) json_object_set_new(extra, "for_job", json_string(for_job->idstr));
    r = gp__srv_job_event(s, j, "preempted", now, extra, err);
    if (!r) r = gp__srv_job_stop(s, j, "preempted", now, err);
    s->counters.preemptions++;
  }
  return r;
}

static int apply_starts(gp_srv_state *s, const gp_plan *plan, int64_t now, gp_err *err) {
  int r = 0;
  for (int i = 0; i < plan->n_starts && !r; i++) {
    const gp_plan_start *st = &plan->starts[i];
    gp_srv_job *j = gp__srv_view_job(s, st->job);
    if (j) r = apply_start(s, j, st, now, err);
  }
  return r;
}

/* Why each job still waits, and when a reservation expects it to start (memory only:
 * recomputed every step, read by `gpool why`). */
static void record_pending(gp_srv_state *s, const gp_plan *plan) {
  for (int i = 0; i < plan->n_pending; i++) {
    const gp_plan_pending *p = &plan->pending[i];
    gp_srv_job *j = gp__srv_view_job(s, p->job);
    if (!j) continue;
    bool changed = j->pending_reason != (int)p->reason;
    j->pending_reason = (int)p->reason;
    j->reservation_at = 0; /* set again below when the plan still reserves for it */
    /* Most pending jobs keep their reason from step to step: copy only what changed. */
    if (!p->message || !j->pending_message || strcmp(p->message, j->pending_message) != 0) {
      changed = changed || !p->message != !j->pending_message || p->message;
      free(j->pending_message);
      j->pending_message = p->message ? gp_xstrdup(p->message) : NULL;
    }
    if (changed) gp__srv_events_note_job(s, j); /* the console shows why it waits */
  }
  for (int i = 0; i < plan->n_reservations; i++) {
    const gp_plan_reservation *rv = &plan->reservations[i];
    gp_srv_job *j = gp__srv_view_job(s, rv->job);
    if (j) j->reservation_at = rv->at;
  }
}

/* MIG layouts the plan wants, one order per GPU at a time. */
static int order_mig_layouts(gp_srv_state *s, const gp_plan *plan, gp_err *err) {
  int r = 0;
  for (int i = 0; i < plan->n_mig && !r; i++) {
    const gp_plan_mig *m = &plan->mig[i];
    if (m->node < 0 || m->node >= s->n_nodes) continue;
    gp_srv_node *n = s->nodes[m->node];
    if (mig_order_outstanding(n, m->gpu)) continue;
    gp_proto_order o = {.kind = GP_PROTO_MIG};
    o.u.mig.gpu = m->gpu;
    for (int k = 0; k < m->n_instances && k < GP_PROTO_MAX_MIG; k++) {
      snprintf(o.u.mig.profiles[k], sizeof o.u.mig.profiles[k], "%s", m->profiles[k]);
      o.u.mig.start_slots[k] = m->start_slots[k];
      o.u.mig.n++;
    }
    r = gp__srv_order_add(s, n, gp_proto_order_encode(&o), -1 - m->gpu, false, err);
  }
  return r;
}

/* Could a step now change anything? Not when nothing the view holds changed since the
 * last one (no job, node or queue took a new rev; the same jobs), the clock has not passed
 * the time until which the core said its plan holds, and no autoscaler reads the plan
 * (it acts on time of its own). That plan acted on nothing (valid_until says so), so
 * applying it again would change nothing either. With sched_check, a full step proves it. */
static bool step_needless(gp_srv_state *s, const gp_view *v, int64_t now) {
  if (!s->have_plan || s->autoscale || s->revs != s->plan_revs || v->n_jobs != s->plan_n_jobs ||
      now < s->plan_now || now >= s->plan_valid_until)
    return false;
  if (!s->sched_check || !s->last_plan) return true;
  gp_plan *full = NULL;
  gp_err e = {0};
  if (gp_sched_step(&s->cfg->policy, v, now, &full, &e) == 0) {
    full->now = s->last_plan->now;
    if (gp_plan_equal(full, s->last_plan)) {
      gp_plan_free(full);
      return true;
    }
  }
  fprintf(stderr, "gpool server: a scheduling step skipped at %lld would have decided otherwise\n",
          (long long)now);
  abort();
}

int gp__srv_schedule(gp_srv_state *s, int64_t now, gp_err *err) {
  gp_plan *plan = NULL;
  /* The autoscaler first: nodes that registered as promised count, others are cordoned,
   * before this step may place anything on them. */
  int r = gp__srv_autoscale_before(s, now, err);
  if (!r) r = gp__srv_arrays_step(s, now, err); /* the array elements that may start now */
  if (r) return r;
  const gp_view *v = gp__srv_view_sync(s);
  gp__srv_fairshare_view(s, now); /* usage in the view (its rev changes with it) */
  r = gp__srv_resv_view(s, now, err); /* advance reservations, the same way */
  if (r) return r;
  s->view.view.templates = gp__srv_autoscale_templates(s->autoscale, &s->view.view.n_templates);
  if (step_needless(s, v, now)) {
    s->sched_dirty = false;
    s->counters.steps_skipped++;
    return 0;
  }
  r = step(s, v, now, &plan, err);
  s->sched_dirty = false;
  if (r) return r;
  s->counters.sched_cycles++;
  s->have_plan = true;
  s->plan_revs = s->revs;
  s->plan_n_jobs = v->n_jobs;
  s->plan_now = now;
  s->plan_valid_until = plan->valid_until;
  /* Ends first (they never hold resources), then preemptions, then starts. */
  r = apply_ends(s, plan, now, err);
  if (!r) r = apply_preemptions(s, plan, now, err);
  if (!r) r = apply_starts(s, plan, now, err);
  record_pending(s, plan);
  if (!r) r = order_mig_layouts(s, plan, err);
  if (!r) r = gp__srv_autoscale_after(s, v, plan, now, err);
  keep_figs(s, plan);
  /* Applying it changed the view (what it started, ended, stopped): its time is over. */
  if (s->revs != s->plan_revs) s->plan_valid_until = 0;
  if (s->sched_check) {
    gp_plan_free(s->last_plan);
    s->last_plan = plan;
  } else {
    gp_plan_free(plan);
  }
  /* Applying the plan may itself have changed what the next step sees (a requeue), but
   * not in a way that needs another step right away. */
  s->sched_dirty = false;
  return r;
}
