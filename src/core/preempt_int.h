/* SPDX-License-Identifier: Apache-2.0 */
/* What preempt.c and preempt_limit.c share: the kinds of simulation, the victim records a
 * walk reads and the step's preemption scratch. Internal to the core's preemption. */
#ifndef GP_CORE_PREEMPT_INT_H
#define GP_CORE_PREEMPT_INT_H

#include "core/preempt.h"

enum { K_POOL = 0, K_PRIORITY, K_RECLAIM, K_STOPPING, K_N };
enum { TAKEN = 1, VICTIM = 2 }; /* gp__core_preempt_scratch.out bits */

/* A victim-able running job in the victim order, with what a walk reads of its record
 * (jobs.c): its queue, priority, GPUs and, with one placement (most jobs), its node and
 * what it frees there (node -1 for several placements: read the view). Walks read these
 * in order instead of per-job records and view entries at random. */
typedef struct gp__core_vrec {
  int v;                /* view index */
  int node;
  uint32_t whole;
  int leaf, prio;
  double gpus;
  int64_t cpu, mem;
  bool excl;            /* an exclusive job (it counts in gp__core_node.excl) */
} gp__core_vrec;

struct gp__core_preempt_scratch {
  bool counted;                  /* gp__core_preempt_count ran: the next two are set */
  gp__core_vrec *vorder;                  /* the victim order (made on first use) */
  int n_vorder;
  int rc_epoch;                  /* changes whenever removals may have changed */
  int *rc_stamp;                 /* per tree queue: in epoch rc_stamp, reclaim_ok holds for */
  double *rc_ok_max;             /* its victims of up to rc_ok_max GPUs and fails for those */
  double *rc_bad_min;            /* of rc_bad_min or more (what was asked so far) */
  int *acc_stamp;                /* per node: accumulation of the current walk */
  uint32_t *acc_mask;
  int64_t *acc_cpu, *acc_mem;
  int *acc_tasks, *acc_excl;     /* tasks freed there, and of them exclusive jobs' */
  int *acc_head;                 /* per node: chain of walk entries (most recent first) */
  int *ent_v, *ent_next, n_ent;  /* walk entries: a victim on a node */
  int walk_stamp;
  int *leaf_min_prio;            /* per tree queue: lowest priority of its victim-able jobs */
  int *pool_borrowers;           /* per pool: running jobs of other queues on its nodes */
  /* Stopping jobs (in ctx.running order), and per node the ones on it (CSR): what a
   * waiting-for-stopping check walks (stopping_build). */
  bool stopping_built;
  int *stopping, n_stopping;
  int *stop_start, *stop_jobs;
  int *jstamp, *nstamp, stamp;   /* candidate marks per job / per node */
  int *cand_nodes, n_cand;
  uint32_t *tent_extra;          /* per node: GPUs freed by chosen victims, not yet reused */
  int64_t *tent_cpu, *tent_mem;
  int *tent_tasks, *tent_excl;
  int *touched, n_touched;
  bool *is_touched;
  double *removed;               /* per tree queue: GPUs taken from it in this simulation */
  double *lost;                  /* per tree queue: GPUs of victims chosen earlier this step */
  double *rcl;                   /* per leaf: reclaimable() as of ctx.alloc_gen rcl_gen - 1 */
  uint64_t *rcl_gen;
  double *claimed;               /* per tree queue: GPUs of jobs now waiting for victims */
  uint8_t *out;                  /* per job: TAKEN in the current simulation, VICTIM of
                                    this step (ctx.jobs' flag, here where walks read it
                                    from a small array instead of one entry per job) */
  int *taken_list, n_taken;
  double *fail_gpus[K_N];        /* per leaf: smallest request that failed, by kind */
  int *fail_prio;                /* per leaf: priority of that failed priority attempt */
  double *lim_fail_gpus;         /* per leaf: the same for preemption at a limit, while */
  int *lim_fail_prio;            /* ctx.alloc_gen stays lim_fail_gen - 1 */
  uint64_t *lim_fail_gen;
  double *lim_stop_gpus;         /* per leaf: stopping_free's answer, while ctx.alloc_gen */
  uint64_t *lim_stop_gen;        /* stays lim_stop_gen - 1 */
};

/* Per leaf, the lowest priority of its victim-able jobs and per pool its borrowers (once
 * a step: p->counted). */
void gp__core_preempt_count(gp__core_ctx *c);
/* The stopping jobs, and per node those on it (once a step: p->stopping_built). */
void gp__core_preempt_stopping_build(gp__core_ctx *c);
/* The scratch a simulation needs (once a step). */
void gp__core_preempt_alloc_scratch(gp__core_ctx *c);
/* Runs one simulation of `kind`. On success with record, the victims are in the plan.
 * need > 0 (priority preemption at a limit): the victims must also hold at least `need`
 * GPUs of the job's queue; place: the job needs victims to find room (else it has room
 * now, and only the limit calls for victims). */
bool gp__core_preempt_simulate(gp__core_ctx *c, const gp__core_req *r, int kind, bool record, double need,
                               bool place);

#endif
