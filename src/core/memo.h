/* SPDX-License-Identifier: Apache-2.0 */
/* What a gp_sched_memo keeps between steps (memo.c; docs/internals/scheduler.md, "The
 * memo"): per view slot, what classification derived from its job, and the tables the
 * stages keep for their next step. A stage finds it through ctx.memo (NULL without one). */
#ifndef GP_CORE_MEMO_H
#define GP_CORE_MEMO_H

#include "core/ctx.h"

typedef struct gp__core_job gp__core_job;
typedef struct gp__core_run gp__core_run;

/* gp_sched_step_memo's memory of one view slot (memo.c): what classification (classify_memo.c)
 * derived from the job, replayed while the job's rev and the view's rev stay the same.
 * A replay reads only these; the whole classification (memo.cls) puts a slot back. */
typedef struct gp__core_memo_rec {
  uint64_t rev;         /* the job's rev when recorded; 0: nothing recorded */
  double gpus;          /* as gp__core_job */
  gp_time limit;
  int leaf;
  int tok;              /* its request's shape token (shapes.c); -1: shape not computed */
  int whole_per_task;   /* whole-GPU requests: GPUs per task (the early stop's minimum) */
  uint8_t stat;         /* as gp__core_job */
  uint8_t sums;         /* gpus for classification's integer sums: 1 whole, 2 not */
} gp__core_memo_rec;

/* Lists a memo step grows, with their counts in the step (gp__core_ctx): jobs classified
 * afresh (not replayed), the tokens of the step's gp__core_tagg counts, the slots of ctx.jobs
 * the step wrote (gp__core_job_mut). */
typedef struct gp__core_lists {
  int *fresh, *kept_toks, *journal;
  size_t fresh_cap, kept_toks_cap, journal_cap;
} gp__core_lists;

/* Kept eligible jobs of one request token in a step (classify_memo.c): replays count them here and
 * the step's placement keys take each token's count and earliest end at once. */
typedef struct gp__core_tagg {
  uint64_t step;        /* the memo step these counts are for */
  int64_t min_limit;    /* smallest positive time limit; INT64_MAX: none */
  int n;                /* jobs */
  int rep;              /* one of them (view index): the token's shape is found through it */
} gp__core_tagg;

struct gp_sched_memo {
  uint64_t view_rev;    /* the view the records belong to; 0: none */
  const gp_policy *pol;
  gp__core_memo_rec *rec;    /* per view index */
  gp__core_job *cls;         /* per view index: ctx.jobs[j] as classification left it */
  gp__core_run *run;         /* per view index: running and stopping jobs' records (apart, so
                           that replaying a pending job reads no more than it needs) */
  size_t cap;
  struct gp__core_tokens *tokens;
  struct gp__core_victims *victims; /* the victim order (victim_order.c) */
  uint64_t *changed;    /* a bit per view slot classified afresh since the victim order
                           was last made (set by classification, cleared by that order) */
  size_t changed_words;
  struct gp__core_nodes_snap *nodes; /* what the nodes give before any job holds them (nodes.c) */
  struct gp__core_kept_order *order; /* the last step's eligible jobs in order (order.c) */
  struct gp__core_usage *usage; /* the nodes as the last step's kept holds left them (nodes.c) */
  uint64_t step;        /* steps run with this memo */
  size_t n_running;     /* running and stopping jobs in the last step */
  gp__core_tagg *tagg;       /* per token */
  size_t tagg_cap;
  gp__core_qtree tree;       /* the view's queue tree as built (n 0: none), for the next step */
  gp__core_scratch scratch;  /* its steps' scratch block, kept for the next */
  gp__core_lists lists;      /* lent to each step (ctx.lists): they grow once, not every step */
  struct gp__core_shapes *shapes; /* the last step's shape tables, emptied by the next */
  /* ctx.jobs of every memo step: a slot whose record is replayed keeps what
   * classification left there (shape and key -1), so a replay writes nothing to it. What a
   * step changes in it afterwards is journaled and put back when the step ends. */
  gp__core_job *jobs;        /* per view slot, cap entries */
  uint64_t *journaled;  /* per view slot: the step that journaled it */
};

/* The memo for this step: use m (may be NULL). With one, the step's scratch memory and
 * per-job array (ctx.jobs) are the memo's, and classification is lent its lists, journal
 * and shape tables until the step ends (gp__core_cls_done). Then: note that the view
 * passed validation. */
void gp__core_memo_begin(gp__core_ctx *c, struct gp_sched_memo *m);
void gp__core_memo_view_checked(gp__core_ctx *c);

#endif
