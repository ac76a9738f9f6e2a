/* SPDX-License-Identifier: Apache-2.0 */
/* What classification's pass over the jobs shares between its two loops: the plain one
 * (jobs.c), which classifies every slot, and the memo's (classify_memo.c), which replays
 * the slots it remembers and classifies the others the same way. Both feed the same queue
 * sums, running-job records and eligible list, so a replayed slot counts exactly as a
 * classified one. Private to those two files and to the pass that runs one of them
 * (classify.c). */
#ifndef GP_CORE_CLASSIFY_PASS_H
#define GP_CORE_CLASSIFY_PASS_H

#include "core/spot.h"

/* Classification's queue sums. While every amount is a whole number (whole-GPU and
 * CPU-only jobs: nearly always) they are kept as integers, per leaf, and the tree's sums
 * are made from them at the end: floating-point sums of whole numbers are exact in any
 * order, so that is what adding each job along its path would give, without a chain of
 * dependent additions through every job. On the first fraction the sums are redone job by
 * job in view order (gp__core_sums_done). */
static inline bool gp__core_gpus_whole(double gpus) {
  return gpus >= 0 && gpus < 2147483648.0 && gpus == (double)(int64_t)gpus;
}

/* (sums: gp__core_memo_rec.sums when a replay knows it, else 0.) */
static inline __attribute__((always_inline)) void gp__core_add_sums(gp__core_ctx *c, int leaf,
                                                                    double gpus, uint8_t sums,
                                                                    bool held) {
  if (c->cls->sums_inexact) return;
  if (sums ? sums != 1 : !gp__core_gpus_whole(gpus)) {
    c->cls->sums_inexact = true;
    return;
  }
  c->cls->demand_int[leaf] += (int64_t)gpus;
  if (held) c->cls->alloc_int[leaf] += (int64_t)gpus;
}

/* A running or stopping job's part in the step: what its queues hold, what its nodes
 * lose (unless the memo's kept holds have it already), its record for preemption and
 * backfill. */
static inline __attribute__((always_inline)) void gp__core_count_running(gp__core_ctx *c, int j,
                                                                         uint8_t sums,
                                                                         const gp__core_run *ru,
                                                                         size_t *run_cap, bool held) {
  if (ru->leaf >= 0) gp__core_add_sums(c, ru->leaf, ru->gpus, sums, true);
  if (ru->spot > 0 && ru->leaf >= 0) gp__core_spot_add_held(c, ru->leaf, ru->spot);
  /* One placement of whole GPUs: held from the record, without reading the view. */
  if (!held &&
      !(ru->node >= 0 && ru->whole && gp__core_hold_whole(c, ru->node, ru->whole, ru->cpu, ru->mem, ru->exclusive)))
    gp__core_hold_placements(c, j);
  if (ru->stopping) c->cls->n_stopping++;
  else if (ru->preemptible && ru->prio < c->cls->run_min_prio) c->cls->run_min_prio = ru->prio;
  gp_xgrow((void **)&c->cls->run, run_cap, (size_t)c->cls->n_running + 1, sizeof *c->cls->run);
  c->cls->run[c->cls->n_running] = *ru;
  c->cls->running[c->cls->n_running++] = j;
}

/* When a job with this time limit would end if it started now (GP__NEVER: never). */
static inline gp_time gp__core_end_if_started(const gp__core_ctx *c, gp_time limit) {
  return limit > 0 && c->now < GP__NEVER - limit ? c->now + limit : GP__NEVER;
}

/* What an eligible job's kind of request tells the early stop. */
void gp__core_admit_kind(gp__core_ctx *c, int kind, int whole_per_task);
/* An eligible job joins the step: its queue's demand, its placement key, the early
 * stop's smallest request, the eligible list. */
void gp__core_admit(gp__core_ctx *c, int j, int whole_per_task);

/* Slot j afresh: 0, or the error of a job the view should not hold. */
static inline int gp__core_slot_check(gp__core_ctx *c, int j) {
  const gp_job *job = &c->view->jobs[j];
  /* (Only an id is checked for jobs that hold nothing: skip the call for them.) */
  return job->id && job->state != GP_JOB_RUNNING && job->state != GP_JOB_STOPPING
             ? 0
             : gp__core_validate_job(c, j);
}
/* Classifies slot j from its job (checked by gp__core_slot_check); a running or stopping
 * job's record goes to *ru. */
void gp__core_classify_slot(gp__core_ctx *c, int j, gp__core_run *ru, size_t *run_cap);
/* Makes the tree's queue sums once every job is counted. */
void gp__core_sums_done(gp__core_ctx *c);

/* The memo's pass (classify_memo.c), after the common set-up: replays what it remembers,
 * classifies the rest, and keeps what it classified for the next step. */
int gp__core_classify_kept(gp__core_ctx *c);
/* With a memo, when the step ends: puts back the slots this step journaled and returns
 * the lists lent to it. */
void gp__core_cls_kept_done(gp__core_ctx *c);

#endif
