/* SPDX-License-Identifier: Apache-2.0 */
/* Priority preemption at a queue's limit (preempt.h): a job whose queue, or a parent, is at
 * its limit takes its own queue's lower-priority victims, enough to bring the queue within
 * the limit with the job's GPUs, counting first the queue's stopping jobs nobody counts on
 * yet; and the limit check that keeps later jobs off the room those victims free. The
 * simulation itself is preempt.c's. */
#include "core/preempt_int.h"

/* GPUs the stopping jobs of `leaf` that nobody counts on yet hold: one pass over the
 * stopping jobs, kept per leaf while no allocation or victim changes (ctx.alloc_gen). */
static double stopping_free(gp__core_ctx *c, int leaf) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  if (c->cls->n_stopping == 0) return 0;
  gp__core_preempt_stopping_build(c);
  if (!p->lim_stop_gpus) {
    p->lim_stop_gpus = gp__core_salloc(c, ((size_t)c->tree.n + 1) * sizeof(double));
    p->lim_stop_gen = gp__core_scalloc(c, (size_t)c->tree.n + 1, sizeof(uint64_t));
  }
  if (p->lim_stop_gen[leaf] != c->cls->alloc_gen + 1) {
    double sum = 0;
    for (int k = 0; k < p->n_stopping; k++) {
      int v = p->stopping[k];
      if (c->jobs[v].leaf == leaf && !c->jobs[v].victim) sum += c->jobs[v].gpus;
    }
    p->lim_stop_gpus[leaf] = sum;
    p->lim_stop_gen[leaf] = c->cls->alloc_gen + 1;
  }
  return p->lim_stop_gpus[leaf];
}

/* Counts on the stopping job v: it is spoken for in this step. */
static void count_on(gp__core_ctx *c, int v) {
  gp__core_job_mut(c, v)->victim = true;
  *(int *)gp__core_vec_push(&c->preempt->victims, sizeof(int)) = v;
  for (int q = c->jobs[v].leaf; q >= 0; q = c->tree.q[q].parent) c->preempt->pre->lost[q] += c->jobs[v].gpus;
  c->cls->alloc_gen++;
}

bool gp__core_try_preempt_at_limit(gp__core_ctx *c, gp__core_req *r, gp__core_fit **fits,
                                   size_t *fits_cap) {
  const gp__core_job *J = &c->jobs[r->job];
  if (!c->pol->preemption || J->leaf < 0 || (J->kind != GP__R_WHOLE && J->kind != GP__R_CPU))
    return false;
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  bool victims = c->preempt->possible && c->cls->run_min_prio < J->prio;
  if (victims) {
    gp__core_preempt_count(c);
    victims = p->leaf_min_prio[J->leaf] < J->prio;
  }
  if (!victims && c->cls->n_stopping == 0) return false;
  gp__core_preempt_alloc_scratch(c);
  /* How far past the tightest limit on its path the job would take its queue, counting the
   * GPUs this step's victims give back and those jobs waiting for victims will take. */
  double excess = 0;
  for (int q = J->leaf; q >= 0; q = c->tree.q[q].parent) {
    const gp__core_queue *qq = &c->tree.q[q];
    if (qq->limit == GP_NO_LIMIT) continue;
    double e = qq->allocated - p->lost[q] + p->claimed[q] + J->gpus - qq->limit;
    if (e > excess) excess = e;
  }
  if (excess <= GP__EPS) return false;
  /* Its leaf's stopping jobs nobody counts on yet give GPUs back without a new victim:
   * the step after a preemption at the limit finds the victims stopping, and waits. */
  double stopping = stopping_free(c, J->leaf);
  if (stopping < excess - GP__EPS) {
    if (!victims) return false;
    if (p->lim_fail_gen[J->leaf] == c->cls->alloc_gen + 1 && J->gpus >= p->lim_fail_gpus[J->leaf] &&
        J->prio <= p->lim_fail_prio[J->leaf])
      return false; /* a job no smaller and no more urgent found no victims since */
    if (c->preempt->attempts >= GP__MAX_PREEMPT_ATTEMPTS) return false;
    c->preempt->attempts++;
    gp__core_req_need(c, r);
    /* Room now (without victims; reservations aside: it would start once within its
     * limit): the limit alone calls for victims. Else they must make room as well. */
    gp_xgrow((void **)fits, fits_cap, (size_t)r->tasks, sizeof **fits);
    gp__core_req free_r = *r;
    free_r.honor_resv = false;
    bool fits_now = gp__core_place_job(c, &free_r, *fits, false);
    if (!gp__core_preempt_simulate(c, r, K_PRIORITY, true, excess - stopping, !fits_now)) {
      p->lim_fail_gen[J->leaf] = c->cls->alloc_gen + 1;
      p->lim_fail_gpus[J->leaf] = J->gpus;
      p->lim_fail_prio[J->leaf] = J->prio;
      return false;
    }
  } else {
    for (int q = J->leaf; q >= 0; q = c->tree.q[q].parent) p->claimed[q] += J->gpus;
  }
  /* Counts on the stopping jobs it needs (all of them when victims were chosen too). */
  double counted = 0;
  for (int k = 0; k < p->n_stopping && counted < excess - GP__EPS && stopping > 0; k++) {
    int v = p->stopping[k];
    if (c->jobs[v].leaf != J->leaf || c->jobs[v].victim) continue;
    counted += c->jobs[v].gpus;
    count_on(c, v);
  }
  return true;
}

int gp__core_limit_over(const gp__core_ctx *c, int leaf, double gpus) {
  const struct gp__core_preempt_scratch *p = c->preempt->pre;
  if (!p || !p->claimed) return gp__core_queue_over_limit(c, leaf, gpus);
  if (c->cls->path_limited && leaf >= 0 && !c->cls->path_limited[leaf]) return -1;
  for (int q = leaf; q >= 0; q = c->tree.q[q].parent) {
    const gp__core_queue *qq = &c->tree.q[q];
    double ahead = p->claimed[q] - p->lost[q];
    if (qq->limit != GP_NO_LIMIT && qq->allocated + (ahead > 0 ? ahead : 0) + gpus > qq->limit + GP__EPS)
      return q;
  }
  return -1;
}
