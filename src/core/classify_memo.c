/* SPDX-License-Identifier: Apache-2.0 */
/* Classification with a memo (memo.h; docs/internals/scheduler.md, "The memo"): the pass
 * over the jobs replays what it remembers of every slot whose job and view are unchanged
 * and classifies the other slots as the plain pass does (jobs.c), remembering what it
 * derived for the next step. What the step writes to a slot afterwards is journaled and
 * put back when the step ends. This file is the one place classification knows the memo. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/classify_pass.h"

/* A replayed eligible job joins the step: its queue's demand and the eligible list now;
 * its placement key and what it tells the early stop are the same for every job of its
 * request token, so they are counted per token (gp__core_tagg) and added once, by admit_kept.
 * Its own shape and key wait until the step looks at it (gp__core_job_keyed). */
static void keep_eligible(gp__core_ctx *c, int j, const gp__core_memo_rec *m) {
  struct gp_sched_memo *mm = c->memo;
  gp__core_tagg *a = &mm->tagg[m->tok];
  if (a->step != mm->step) {
    *a = (gp__core_tagg){.step = mm->step, .min_limit = INT64_MAX, .rep = j};
    gp_xgrow((void **)&c->cls->lists.kept_toks, &c->cls->lists.kept_toks_cap,
             (size_t)c->cls->n_kept_toks + 1, sizeof *c->cls->lists.kept_toks);
    c->cls->lists.kept_toks[c->cls->n_kept_toks++] = m->tok;
  }
  a->n++;
  if (m->limit > 0 && m->limit < a->min_limit) a->min_limit = m->limit;
  gp__core_add_sums(c, m->leaf, m->gpus, m->sums, false);
  c->cls->eligible[c->cls->n_eligible++] = j;
}

static void admit_kept(gp__core_ctx *c) {
  struct gp_sched_memo *mm = c->memo;
  for (int i = 0; i < c->cls->n_kept_toks; i++) {
    int tok = c->cls->lists.kept_toks[i];
    const gp__core_tagg *a = &mm->tagg[tok];
    int shape = gp__core_shape_by_token(c, a->rep, mm->tokens, tok, mm->step);
    gp__core_keys_add_n(c, shape, a->n, gp__core_end_if_started(c, a->min_limit == INT64_MAX ? 0 : a->min_limit));
    gp__core_admit_kind(c, c->jobs[a->rep].kind, mm->rec[a->rep].whole_per_task);
  }
}

void gp__core_job_keyed(gp__core_ctx *c, int j) {
  const gp__core_job *ji = &c->jobs[j];
  if (ji->pkey >= 0 || ji->stat != GP__J_ELIGIBLE) return;
  struct gp_sched_memo *mm = c->memo; /* (only keep_eligible leaves an eligible job unkeyed) */
  int shape = gp__core_shape_by_token(c, j, mm->tokens, mm->rec[j].tok, mm->step);
  gp__core_job_mut(c, j)->pkey = shape;
}

/* Keeps what classification derived from job j for the next step (memo.c). Not kept: an
 * ended job (its sentence may live in this plan's arena), a job with dependencies (its
 * state depends on other jobs too), a job waiting for its begin time (the clock ends the
 * wait, not a change), a job without a rev. */
static void remember(gp__core_ctx *c, int j, uint64_t rev, gp__core_memo_rec *m, const gp__core_run *ru) {
  const gp_job *job = &c->view->jobs[j];
  const gp__core_job *ji = &c->jobs[j];
  if (!rev || ji->stat == GP__J_ENDED || gp__core_has_deps(job) || job->begin_at > c->now) {
    m->rev = 0;
    return;
  }
  c->memo->cls[j] = *ji;
  *m = (gp__core_memo_rec){.rev = rev, .gpus = ji->gpus, .limit = ji->limit, .leaf = ji->leaf,
                      .tok = ji->shape >= 0 ? gp__core_shape_token(c, j, &c->memo->tokens) : -1,
                      .whole_per_task = job->req.gpus_per_task, .stat = ji->stat,
                      .sums = gp__core_gpus_whole(ji->gpus) ? 1 : 2};
  if (ji->stat == GP__J_RUNNING || ji->stat == GP__J_STOPPING) c->memo->run[j] = *ru;
}

/* Does for job j what classification did when it was remembered, so that everything the
 * step builds from it (sums, lists, the nodes' use, placement keys) comes out the same.
 * Its slot of ctx.jobs (the memo's) still holds that classification: nothing is copied. */
static void replay(gp__core_ctx *c, int j, const gp__core_memo_rec *m, size_t *run_cap) {
  switch (m->stat) {
  case GP__J_RUNNING:
  case GP__J_STOPPING: {
    const gp__core_run *ru = &c->memo->run[j];
    bool held = c->fleet->held && c->fleet->held[j];
    gp__core_count_running(c, j, m->sums, ru, run_cap, held);
    if (!held && ru->node >= 0 && ru->whole) gp__core_usage_keep(c, j, ru);
    break;
  }
  case GP__J_ELIGIBLE:
    if (m->tok >= 0) {
      keep_eligible(c, j, m);
      break;
    }
    gp__core_admit(c, j, m->whole_per_task);
    break;
  default: /* (a waiting job is never considered: its shape is not needed) */
    break;
  }
}

int gp__core_classify_kept(gp__core_ctx *c) {
  const gp_view *v = c->view;
  struct gp_sched_memo *mm = c->memo;
  /* Room for as many running jobs as the memo's last step had (and some): growing the
   * records one doubling at a time copied them over and over. */
  size_t run_cap = mm->n_running + mm->n_running / 8 + 16;
  c->cls->run = gp_xmalloc(run_cap * sizeof *c->cls->run);
  /* replays count eligible jobs per token (keep_eligible) */
  c->cls->fresh_bits = gp__core_scalloc(c, (size_t)v->n_jobs / 64 + 1, sizeof *c->cls->fresh_bits);
  size_t words = mm->changed_words;
  if ((size_t)v->n_jobs / 64 + 1 > words) {
    gp_xgrow((void **)&mm->changed, &mm->changed_words, (size_t)v->n_jobs / 64 + 1,
             sizeof *mm->changed);
    memset(mm->changed + words, 0, (mm->changed_words - words) * sizeof *mm->changed);
  }
  size_t n_tok = (size_t)gp__core_tokens_count(mm->tokens);
  if (n_tok > mm->tagg_cap) {
    size_t cap = mm->tagg_cap;
    gp_xgrow((void **)&mm->tagg, &mm->tagg_cap, n_tok, sizeof *mm->tagg);
    memset(mm->tagg + cap, 0, (mm->tagg_cap - cap) * sizeof *mm->tagg);
  }
  gp__core_memo_rec *memo = mm->rec;
  const uint64_t *revs = v->job_revs;
  for (int j = 0; j < v->n_jobs; j++) {
    if (revs[j] && memo[j].rev == revs[j]) {
      replay(c, j, &memo[j], &run_cap);
      continue;
    }
    int rc = gp__core_slot_check(c, j);
    if (rc) return rc;
    /* The slot changed: the hold the memo kept for it goes (its old record is still
     * there: remember() below overwrites it). */
    gp__core_usage_drop(c, j, &mm->run[j]);
    c->cls->fresh_bits[j >> 6] |= 1ull << (j & 63);
    mm->changed[j >> 6] |= 1ull << (j & 63);
    gp__core_run ru;
    gp__core_classify_slot(c, j, &ru, &run_cap);
    const gp__core_job *ji = &c->jobs[j];
    if (ji->stat == GP__J_ELIGIBLE) { /* the order merges these into the one the memo kept (order.c) */
      gp_xgrow((void **)&c->cls->lists.fresh, &c->cls->lists.fresh_cap, (size_t)c->cls->n_fresh + 1,
               sizeof *c->cls->lists.fresh);
      c->cls->lists.fresh[c->cls->n_fresh++] = j;
    }
    remember(c, j, revs[j], &memo[j], &ru);
    if (memo[j].rev && (ji->stat == GP__J_RUNNING || ji->stat == GP__J_STOPPING) && ru.node >= 0 &&
        ru.whole)
      gp__core_usage_keep(c, j, &ru);
  }
  gp__core_usage_end(c, mm->run, mm->step);
  admit_kept(c);
  gp__core_sums_done(c);
  mm->n_running = (size_t)c->cls->n_running;
  return 0;
}

/* With a memo, when the step ends: a journaled slot is put back from its record when the
 * record stands for this view's job (a slot without one is classified afresh next step
 * anyway). The lists go back to the memo. */
void gp__core_cls_kept_done(gp__core_ctx *c) {
  struct gp_sched_memo *m = c->memo;
  const uint64_t *revs = c->view->job_revs;
  for (int i = 0; i < c->cls->n_journal; i++) {
    int j = c->cls->lists.journal[i];
    if (!m->rec[j].rev || m->rec[j].rev != revs[j]) continue;
    c->jobs[j] = m->cls[j];
    c->jobs[j].shape = c->jobs[j].pkey = -1;
  }
  c->cls->n_journal = 0;
  m->lists = c->cls->lists; /* back, at the size they grew to */
  memset(&c->cls->lists, 0, sizeof c->cls->lists);
  /* The shape tables back: the ones this step used, else the ones it was lent. */
  m->shapes = c->cls->shapes ? c->cls->shapes : c->cls->spare_shapes;
  c->cls->shapes = c->cls->spare_shapes = NULL;
}

