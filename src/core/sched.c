/* SPDX-License-Identifier: Apache-2.0 */
/* gp_sched_step: one scheduling step, from (policy, view, now) to a plan.
 *
 *   1. validate the view, build the queue tree            (validate.c, queue_tree.c)
 *   2. fleet capacity, what running/stopping jobs hold    (nodes.c)
 *   3. classify jobs: schedulable, or a reason, or ended  (jobs.c, deps.c, feasible.c)
 *   4. fair share by water-filling                        (queue_tree.c)
 *   5. consider pending jobs in order, each: queue limit, guarantees (a non-preemptible
 *      job borrows no GPU another queue is guaranteed: guarantee.c), placement (index, gangs,
 *      reservations), else waiting for stopping jobs, else preemption, else Resources and
 *      perhaps a backfill reservation                     (order.c, placement.c, gang.c,
 *                                                          preempt.c, backfill.c)
 *   6. stop early once nothing could fit anywhere
 *   7. assemble the plan in one pass over the jobs, giving every job not considered its
 *      reason (every array in view order or decision order: deterministic).
 * See docs/internals/scheduler.md for the reasoning and the costs. */
#include "core/sched.h"

#include <stdlib.h>
#include <string.h>

#include "core/backfill.h"
#include "core/guarantee.h"
#include "core/memo.h"
#include "core/order.h"
#include "core/reservation.h"
#include "core/spot.h"
#include "core/user_limits.h"

/* Plan assembly's own state: the sentences it formats once per queue. */
typedef struct gp__core_assembly {
  const char **limit_msg;     /* per queue: "Queue X is at its limit" (made on first use) */
} gp__core_assembly;

/* Each stage ends its use of its state, the highest first. */
static void ctx_done(gp__core_ctx *c) {
  gp__core_ares_done(c);
  gp__core_user_limits_done(c);
  gp__core_backfill_done(c);
  gp__core_preempt_done(c);
  gp__core_place_done(c);
  gp__core_cls_done(c);
  gp__core_fleet_done(c);
  free(c->assembly->limit_msg);
  gp__core_qtree_done(&c->tree);
  gp__core_scratch_end(c->scratch, c->scratch != &c->own_scratch);
}

static const char *limit_message(gp__core_ctx *c, int q) {
  if (!c->assembly->limit_msg) c->assembly->limit_msg = gp_xcalloc((size_t)c->tree.n + 1, sizeof(char *));
  if (!c->assembly->limit_msg[q])
    c->assembly->limit_msg[q] = gp_arena_printf(c->arena, "Queue %s is at its limit of %g GPUs.",
                                      c->tree.q[q].name, c->tree.q[q].limit);
  return c->assembly->limit_msg[q];
}

/* Nothing left could be placed: no free node can hold the smallest whole-GPU request, or
 * every placement key still waiting has already failed in this step (shapes.c). */
static bool nothing_fits(const gp__core_ctx *c) {
  if (c->cls->keys_alive <= 0) return true;
  return !c->cls->other_eligible && gp__core_index_max_level(&c->fleet->ix) < c->cls->min_whole;
}

/* Would the job fit once the STOPPING jobs are gone? Memoised per shape: a failure stays a
 * failure for the rest of the step. */
static bool waits_for_stopping(gp__core_ctx *c, gp__core_req *r) {
  if (c->cls->n_stopping <= 0) return false;
  int shape = c->jobs[r->job].shape;
  if (shape >= 0 && gp__core_shape_flag(c, shape, 1)) return false;
  gp__core_req_need(c, r);
  if (gp__core_fits_after_stopping(c, r)) return true;
  /* (An advance reservation's fence depends on the job's end: a failure is not the shape's.) */
  if (shape >= 0 && !gp__core_ares_any(c)) gp__core_shape_set_flag(c, shape, 1, gp__core_spot_tried(r));
  return false;
}

/* The plain no-room sentence; an exclusive job's says what else it waits for. */
static const char *no_room(const gp__core_ctx *c, int j) {
  return c->view->jobs[j].req.exclusive
             ? "Not enough nodes free of other jobs (it is exclusive) with the GPUs, CPU or memory it "
               "asks for right now."
             : GP__MSG_RESOURCES;
}

/* A job that found no room: not enough resources, unless its queue's spot settings alone
 * keep it from spot nodes where it would start now (spot.c). Asked of placement with spot
 * allowed once per shape while no node's use changes (without reservations, whose fences
 * depend on each job's end). Made in decisions-only steps too, so that they place as the
 * others do. */
static const char *resources_message(gp__core_ctx *c, gp__core_req *r, gp__core_fit **fits,
                                     size_t *fits_cap) {
  int why = gp__core_spot_why(c, r->job);
  if (!why) return no_room(c, r->job);
  gp__core_req_need(c, r);
  int shape = c->backfill->n_resv == 0 && !gp__core_ares_any(c) ? c->jobs[r->job].shape : -1;
  int fit = shape >= 0 ? gp__core_shape_spot_fit(c, shape) : -1;
  if (fit < 0) {
    gp__core_req wide = *r;
    wide.spot_deny &= (uint8_t)~GP__DENY_SPOT;
    gp_xgrow((void **)fits, fits_cap, (size_t)r->tasks, sizeof **fits);
    fit = gp__core_place_job(c, &wide, *fits, false);
    if (shape >= 0) gp__core_shape_set_spot_fit(c, shape, fit);
  }
  return fit ? gp__core_spot_message(why) : no_room(c, r->job);
}

/* Considers one job. Returns true when the job is blocked on resources (what stops a
 * strict, non-backfilling order). */
static bool try_job(gp__core_ctx *c, gp__core_order *o, int j, gp__core_fit **fits, size_t *fits_cap) {
  gp__core_job *ji = &c->jobs[j];
  gp__core_keys_consider(c, j);
  int over = gp__core_limit_over(c, ji->leaf, ji->gpus);
  if (over >= 0) {
    gp__core_req lr = {.job = j};
    if (gp__core_try_preempt_at_limit(c, &lr, fits, fits_cap)) {
      gp__core_job_wait(c, j, GP_PEND_WAITING_FOR_PREEMPTION, GP__MSG_WAIT_PREEMPT);
      return true;
    }
    gp__core_job_wait(c, j, GP_PEND_QUEUE_LIMIT, limit_message(c, over));
    return false;
  }
  if (!ji->preemptible && (over = gp__core_guard_over(c, ji->leaf, ji->gpus)) >= 0) {
    gp__core_job_wait(c, j, GP_PEND_QUEUE_LIMIT, gp__core_guard_message(c, over));
    return false;
  }
  const char *ulim_msg = NULL;
  int ulim = gp__core_user_limit_block(c, j, &ulim_msg);
  if (ulim >= 0) {
    gp__core_job_wait(c, j, (gp_pending_reason)ulim, ulim_msg);
    return false;
  }
  /* The request in placement terms is built on first need: most jobs a step considers
   * have failed keys and settle on answers the step already has. */
  gp__core_req r = {.job = j};
  if (!gp__core_keys_failed(c, j)) {
    gp__core_req_need(c, &r);
    gp_xgrow((void **)fits, fits_cap, (size_t)r.tasks, sizeof **fits);
    if (gp__core_place_job(c, &r, *fits, true)) {
      gp__core_start_job(c, &r, *fits);
      gp__core_user_limit_started(c, j);
      gp__core_order_update(o, ji->leaf);
      return false;
    }
    gp__core_keys_fail(c, j, gp__core_spot_tried(&r));
    if (c->backfill->n_resv == 0 && !gp__core_ares_any(c)) /* no fence: fails for all ends */
      gp__core_shape_set_flag(c, ji->shape, 0, gp__core_spot_tried(&r));
  }
  if (c->backfill->n_resv > 0 && !gp__core_shape_flag(c, ji->shape, 0)) {
    bool fits_free = gp__core_shape_fits_free(c, ji->shape);
    if (!fits_free) {
      gp__core_req_need(c, &r);
      gp_xgrow((void **)fits, fits_cap, (size_t)r.tasks, sizeof **fits);
      gp__core_req free_r = r;
      free_r.honor_resv = false;
      fits_free = gp__core_place_job(c, &free_r, *fits, false);
    }
    if (fits_free) {
      gp__core_shape_set_fits_free(c, ji->shape);
      gp__core_job_wait(c, j, GP_PEND_RESERVATION, GP__MSG_RESERVATION);
      return false;
    }
    gp__core_req_need(c, &r);
    if (!gp__core_ares_any(c)) gp__core_shape_set_flag(c, ji->shape, 0, gp__core_spot_tried(&r));
  }
  if (waits_for_stopping(c, &r)) {
    gp__core_job_wait(c, j, GP_PEND_WAITING_FOR_PREEMPTION, GP__MSG_WAIT_PREEMPT);
    return true;
  }
  if (gp__core_try_preempt(c, &r)) {
    gp__core_job_wait(c, j, GP_PEND_WAITING_FOR_PREEMPTION, GP__MSG_WAIT_PREEMPT);
    return true;
  }
  if (gp__core_mig_wait(c, &r)) {
    gp__core_job_wait(c, j, GP_PEND_RESOURCES, GP__MSG_MIG_REPARTITION);
    return true;
  }
  const char *fenced = gp__core_ares_reason(c, &r, fits, fits_cap);
  if (fenced) gp__core_job_wait(c, j, GP_PEND_RESERVATION, fenced);
  else gp__core_job_wait(c, j, GP_PEND_RESOURCES, resources_message(c, &r, fits, fits_cap));
  if (c->pol->backfill) gp__core_reserve(c, &r);
  if (fenced) gp__core_job_mut(c, j)->msg = fenced; /* (the advance reservation says more) */
  return true;
}

/* The reason of a job the loop never considered (in view order, from assemble's one pass
 * over the jobs: a waiting-for-stopping check may count on a stopping job, so the order
 * matters). Returned, not written to the job: the plan is all that needs it. */
static gp_plan_pending settle_unconsidered(gp__core_ctx *c, int j, bool head_blocked) {
  const gp__core_job *ji = &c->jobs[j];
  int over = gp__core_limit_over(c, ji->leaf, ji->gpus);
  if (over >= 0) return (gp_plan_pending){j, GP_PEND_QUEUE_LIMIT, limit_message(c, over)};
  if (!ji->preemptible && (over = gp__core_guard_over(c, ji->leaf, ji->gpus)) >= 0)
    return (gp_plan_pending){j, GP_PEND_QUEUE_LIMIT, gp__core_guard_message(c, over)};
  const char *ulim_msg = NULL;
  int ulim = gp__core_user_limit_block(c, j, &ulim_msg);
  if (ulim >= 0) return (gp_plan_pending){j, (gp_pending_reason)ulim, ulim_msg};
  if (head_blocked) return (gp_plan_pending){j, GP_PEND_PRIORITY, GP__MSG_PRIORITY};
  if (c->cls->n_stopping > 0) {
    gp__core_job_keyed(c, j); /* (its shape remembers a failure for the jobs of the same request) */
    if (!(ji->shape >= 0 && gp__core_shape_flag(c, ji->shape, 1))) {
      gp__core_req r;
      gp__core_req_init(c, j, &r);
      if (waits_for_stopping(c, &r))
        return (gp_plan_pending){j, GP_PEND_WAITING_FOR_PREEMPTION, GP__MSG_WAIT_PREEMPT};
    }
  }
  /* A job of a shape that fits on spot, where its queue keeps it from (resources_message). */
  int why = c->backfill->n_resv == 0 && !gp__core_ares_any(c) ? gp__core_spot_why(c, j) : GP__SPOT_WHY_NONE;
  if (why) {
    gp__core_job_keyed(c, j);
    if (ji->shape >= 0 && gp__core_shape_spot_fit(c, ji->shape) == 1)
      return (gp_plan_pending){j, GP_PEND_RESOURCES, gp__core_spot_message(why)};
  }
  return (gp_plan_pending){j, GP_PEND_RESOURCES, no_room(c, j)};
}

/* Once nothing fits, in a decisions-only step: can the jobs still to come from the order's
 * next segment change nothing? Each would only wait: no placement (nothing fits), no
 * stopping job to wait on (that claims it), no reservation (its leaf has one, or the step
 * has all it may make), no MIG plan, no preemption (gp__core_preempt_may_act). */
static bool rest_inert(gp__core_ctx *c, gp__core_order *o, int s) {
  if (c->cls->n_stopping > 0 || (c->pol->dynamic_mig && c->cls->mig_eligible)) return false;
  double min_gpus;
  int max_prio;
  bool whole;
  if (!gp__core_order_rest(o, s, &min_gpus, &max_prio, &whole)) return true;
  bool fair = c->pol->order == GP_ORDER_FAIRSHARE;
  if (whole && c->pol->backfill && c->backfill->n_resv < GP__MAX_RESERVATIONS &&
      !(fair && c->backfill->leaf_has_resv && c->backfill->leaf_has_resv[s]))
    return false;
  if (!fair) /* jobs of every leaf: only a step that can no longer preempt at all */
    return !c->preempt->possible || c->preempt->attempts >= GP__MAX_PREEMPT_ATTEMPTS;
  return !gp__core_preempt_may_act(c, s, min_gpus, max_prio);
}

/* Considers jobs in order until nothing more can change. Returns whether a strict order
 * stopped at a blocked job (everyone behind it waits for Priority). */
static bool run(gp__core_ctx *c) {
  gp__core_order *o = gp__core_order_new(c);
  gp__core_fit *fits = NULL;
  size_t fits_cap = 0;
  bool strict = c->pol->order != GP_ORDER_FAIRSHARE && !c->pol->backfill;
  bool head_blocked = false;
  int drained = 0;
  for (;;) {
    /* A strict order stops at its first blocked job anyway, and that job must be the one
     * everybody else waits behind: no early stop there. */
    if (!strict && nothing_fits(c)) {
      /* Nothing can be placed any more. Only preemption and backfill reservations could
       * still change something for the best-ordered jobs: a bounded number more are
       * considered (each cheap: its placement key is dead), then the rest get their
       * reason in bulk. */
      bool more_resv = c->pol->backfill && c->backfill->n_resv < GP__MAX_RESERVATIONS;
      /* Reservations made now change nothing more in this step (nothing can start), so a
       * step that reports none stops here, unless a MIG job's turn could still plan a
       * re-partition. */
      if (c->decisions_only && !(c->pol->dynamic_mig && c->cls->mig_eligible)) more_resv = false;
      bool more_preempt = c->preempt->possible && c->preempt->attempts < GP__MAX_PREEMPT_ATTEMPTS;
      if ((!more_resv && !more_preempt) || drained++ >= GP__MAX_DRAIN) break;
      /* A decisions-only step passes over inert jobs as a block; they count as
       * considered, so the drain ends where it would have. */
      int s = c->decisions_only && !more_resv ? gp__core_order_top(o) : -1;
      if (s >= 0 && rest_inert(c, o, s)) {
        drained += gp__core_order_skip(o, s, GP__MAX_DRAIN - drained + 1) - 1;
        continue;
      }
    }
    int j = gp__core_order_next(o);
    if (j < 0) break;
    gp__core_job_keyed(c, j);
    if (try_job(c, o, j, &fits, &fits_cap) && strict) {
      head_blocked = true;
      break;
    }
  }
  free(fits);
  gp__core_order_free(o);
  return head_blocked;
}

static void *copy_vec(gp_arena *a, const gp__core_vec *v, size_t elem) {
  if (!v->n) return NULL;
  void *p = gp_arena_alloc(a, v->n * elem);
  memcpy(p, v->items, v->n * elem);
  return p;
}

static gp_plan *assemble(gp__core_ctx *c, bool head_blocked, bool decisions_only) {
  gp_plan *plan = gp_xcalloc(1, sizeof *plan);
  gp_arena *a = c->arena;
  plan->arena = a;
  plan->now = c->now;
  plan->n_starts = (int)c->place->starts.n;
  plan->starts = copy_vec(a, &c->place->starts, sizeof(gp_plan_start));
  plan->n_preemptions = (int)c->preempt->preemptions.n;
  plan->preemptions = copy_vec(a, &c->preempt->preemptions, sizeof(gp_plan_preemption));
  if (!decisions_only) {
    plan->n_reservations = (int)c->backfill->reservations.n;
    plan->reservations = copy_vec(a, &c->backfill->reservations, sizeof(gp_plan_reservation));
  }
  plan->n_mig = (int)c->place->migs.n;
  plan->mig = copy_vec(a, &c->place->migs, sizeof(gp_plan_mig));

  /* One pass over the jobs: ended ones; unless only decisions are wanted, reasons for
   * those never considered, the pending list and the queues' job figures. The figures are summed per leaf and
   * then up the tree: GPUs asked are whole numbers nearly always, and integer sums come out
   * the same in any order; with a fraction among them, the GPUs are summed job by job from
   * the pending list instead, in the order a walk per job adds them (the same roundings). */
  int nj = c->view->n_jobs;
  gp_plan_pending *pend = decisions_only ? NULL : gp_xmalloc(((size_t)nj + 1) * sizeof *pend);
  gp__core_vec ended = {0};
  int nq = c->tree.n;
  gp_plan_queue *qs = gp_arena_alloc(a, ((size_t)nq + 1) * sizeof *qs);
  int64_t *asked = gp__core_scalloc(c, (size_t)nq + 1, sizeof *asked);
  bool fractions = false;
  if (decisions_only && c->cls->n_ended == 0) nj = 0; /* the pass would find nothing */
  for (int j = 0; j < nj; j++) {
    const gp__core_job *ji = &c->jobs[j];
    if (ji->stat == GP__J_ENDED) {
      gp_plan_end *e = gp__core_vec_push(&ended, sizeof *e);
      *e = (gp_plan_end){j, (gp_end_reason)ji->end_reason, ji->msg};
      continue;
    }
    if (decisions_only) continue;
    bool pending = ji->stat == GP__J_ELIGIBLE || ji->stat == GP__J_WAITING;
    if (ji->stat == GP__J_WAITING && ji->reason == GP_PEND_BEGIN_TIME)
      gp__core_valid_by(c, c->view->jobs[j].begin_at);
    if (pending)
      pend[plan->n_pending++] =
          ji->stat == GP__J_ELIGIBLE
              ? settle_unconsidered(c, j, head_blocked)
              : (gp_plan_pending){j, (gp_pending_reason)ji->reason, ji->msg};
    if (ji->leaf < 0) continue;
    if (pending) {
      qs[ji->leaf].pending_jobs++;
      /* (Whole and small: integer sums stay exact, far below 2^53.) */
      if (ji->gpus >= 0 && ji->gpus < 1e9 && ji->gpus == (double)(int64_t)ji->gpus)
        asked[ji->leaf] += (int64_t)ji->gpus;
      else
        fractions = true;
    } else if (ji->stat == GP__J_RUNNING || ji->stat == GP__J_STOPPING ||
               ji->stat == GP__J_STARTED) {
      qs[ji->leaf].running_jobs++;
    }
  }
  /* (Parents precede their children in the tree.) */
  for (int q = nq - 1; q >= 0; q--) {
    int par = c->tree.q[q].parent;
    if (!fractions) {
      qs[q].pending = (double)asked[q];
      if (par >= 0) asked[par] += asked[q];
    }
    if (par >= 0) {
      qs[par].pending_jobs += qs[q].pending_jobs;
      qs[par].running_jobs += qs[q].running_jobs;
    }
  }
  for (int k = 0; fractions && k < plan->n_pending; k++) {
    const gp__core_job *ji = &c->jobs[pend[k].job];
    for (int q = ji->leaf; q >= 0; q = c->tree.q[q].parent) qs[q].pending += ji->gpus;
  }
  if (plan->n_pending) { /* (made to measure: the list can be most of the plan) */
    size_t bytes = (size_t)plan->n_pending * sizeof *pend;
    plan->pending = gp_arena_adopt(a, gp_xrealloc(pend, bytes), bytes);
  } else {
    free(pend);
  }
  plan->n_ended = (int)ended.n;
  plan->ended = copy_vec(a, &ended, sizeof(gp_plan_end));
  free(ended.items);
  plan->n_queues = c->tree.n;
  plan->queues = qs;
  for (int q = 0; q < c->tree.n; q++) {
    const gp__core_queue *t = &c->tree.q[q];
    qs[q].name = gp_arena_strdup(a, t->name);
    qs[q].parent = t->parent;
    qs[q].deserved = t->deserved;
    qs[q].limit = t->limit;
    qs[q].weight = t->weight;
    qs[q].fair_share = t->fair_share;
    qs[q].allocated = t->allocated;
  }
  return plan;
}

/* The plan's valid_until (plan.h): what the step's checks noted (ctx.valid_until: the
 * reservation fences a job passed), and the times at which what the step read of the jobs
 * turns: a pending job's begin time (noted by assemble), a running job's end (backfill
 * counts an overdue job as ending now, so its release moves with now from end + 1 on) and
 * the moment it becomes old enough to be a victim. Every other use of now in a step
 * compares times that all move with it (ends of jobs started now against each other,
 * time since a checkpoint against another's), so the answer holds until one of these. */
static gp_time plan_valid_until(gp__core_ctx *c, const gp_plan *plan) {
  gp_time now = c->now, soon = now < GP__NEVER ? now + 1 : now;
  if (c->decisions_only || plan->n_starts || plan->n_preemptions || plan->n_ended || plan->n_mig ||
      c->cls->n_stopping > 0)
    return soon;
  for (int i = 0; i < plan->n_reservations; i++) /* (at now: it moves with now) */
    if (plan->reservations[i].at <= now) return soon;
  for (int r = 0; r < c->cls->n_running; r++) {
    const gp__core_run *ru = &c->cls->run[r];
    if (ru->started <= GP__NEVER - c->pol->min_runtime && ru->started + c->pol->min_runtime > now)
      gp__core_valid_by(c, ru->started + c->pol->min_runtime);
    gp_time e = gp__core_run_end(ru);
    if (e >= now && e < GP__NEVER) gp__core_valid_by(c, e + 1);
  }
  return c->valid_until;
}

int gp_sched_step(const gp_policy *policy, const gp_view *view, gp_time now,
                  gp_plan **ret_plan, gp_err *err) {
  return gp_sched_step_memo(NULL, policy, view, now, 0, ret_plan, err);
}

int gp_sched_step_memo(gp_sched_memo *memo, const gp_policy *policy, const gp_view *view,
                       gp_time now, unsigned flags, gp_plan **ret_plan, gp_err *err) {
  if (!policy || !view || !ret_plan)
    return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "policy, view and ret_plan are required");
  /* The context and every stage's state live for this call. */
  gp__core_ctx c;
  gp__core_fleet fleet;
  gp__core_cls cls;
  gp__core_place place;
  gp__core_preempt preempt;
  gp__core_backfill backfill;
  gp__core_assembly assembly;
  memset(&c, 0, sizeof c);
  memset(&fleet, 0, sizeof fleet);
  memset(&cls, 0, sizeof cls);
  memset(&place, 0, sizeof place);
  memset(&preempt, 0, sizeof preempt);
  memset(&backfill, 0, sizeof backfill);
  memset(&assembly, 0, sizeof assembly);
  c.fleet = &fleet;
  c.cls = &cls;
  c.place = &place;
  c.preempt = &preempt;
  c.backfill = &backfill;
  c.assembly = &assembly;
  c.pol = policy;
  c.view = view;
  c.now = now;
  c.valid_until = GP__NEVER;
  c.err = err;
  c.decisions_only = flags & GP_SCHED_DECISIONS_ONLY;
  c.scratch = &c.own_scratch;
  gp__core_memo_begin(&c, memo);
  int rc = gp__core_validate(&c);
  if (rc) {
    ctx_done(&c);
    return rc;
  }
  gp__core_memo_view_checked(&c);
  gp__core_ares_setup(&c); /* (before classification: request shapes read membership) */
  c.arena = gp_arena_new();
  /* Filled by classification (a memo lends its own: gp__core_memo_begin). */
  if (!c.jobs) c.jobs = gp_xmalloc(((size_t)view->n_jobs + 1) * sizeof *c.jobs);
  gp__core_nodes_init(&c);
  rc = gp__core_classify_jobs(&c);
  if (rc) {
    gp_arena_free(c.arena);
    ctx_done(&c);
    return rc;
  }
  gp__core_nodes_index(&c);
  gp__core_qtree_fair_share(&c.tree, c.fleet->capacity);
  gp__core_preempt_setup(&c);
  gp__core_ares_maint(&c);
  gp__core_shared_setup(&c);
  bool head_blocked = run(&c);
  *ret_plan = assemble(&c, head_blocked, c.decisions_only);
  if (c.ares && c.ares->valid < c.valid_until) c.valid_until = c.ares->valid;
  (*ret_plan)->valid_until = plan_valid_until(&c, *ret_plan);
  ctx_done(&c);
  return 0;
}
