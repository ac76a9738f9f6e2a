/* SPDX-License-Identifier: Apache-2.0 */
/* gp_sched_memo: what a step keeps for the next one. Classification (jobs.c) is the only
 * pass that reads every job of the view, and most jobs are the same from one step to the
 * next, so it keeps per view slot what it derived from the job (queue, class, limit,
 * request kind, reason, a running job's record) and replays that while the job's rev and
 * the view's rev are unchanged. The step's per-slot array stays too; what a step writes
 * to it is journaled here and put back when the step ends. Other parts keep their own
 * (the victim order, the order of eligible jobs, the nodes' use, the queue tree, the
 * scratch block); each stands only for work, so a memo can never change a plan. */
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "core/backfill.h"
#include "core/memo.h"
#include "core/order.h"

#define TOKENS_MAX 65536 /* distinct request keys remembered before starting over */

gp_sched_memo *gp_sched_memo_new(void) { return gp_xcalloc(1, sizeof(gp_sched_memo)); }

void gp_sched_memo_free(gp_sched_memo *m) {
  if (!m) return;
  free(m->rec);
  free(m->cls);
  free(m->run);
  gp__core_tokens_free(m->tokens);
  gp__core_victims_free(m->victims);
  free(m->changed);
  gp__core_nodes_snap_free(m->nodes);
  gp__core_kept_order_free(m->order);
  gp__core_usage_free(m->usage);
  free(m->tagg);
  free(m->lists.fresh);
  free(m->lists.kept_toks);
  free(m->lists.journal);
  gp__core_shapes_free(m->shapes);
  free(m->jobs);
  free(m->journaled);
  gp__core_qtree_done(&m->tree);
  gp__core_scratch_end(&m->scratch, false);
  free(m);
}

size_t gp_sched_memo_bytes(const gp_sched_memo *m) {
  if (!m) return 0;
  size_t per_slot = sizeof *m->rec + sizeof *m->cls + sizeof *m->run + sizeof *m->jobs +
                    sizeof *m->journaled;
  return sizeof *m + m->cap * per_slot + m->tagg_cap * sizeof *m->tagg +
         gp__core_tokens_bytes(m->tokens) + gp__core_victims_bytes(m->victims) +
         m->changed_words * sizeof *m->changed +
         gp__core_nodes_snap_bytes(m->nodes) + gp__core_kept_order_bytes(m->order) + gp__core_usage_bytes(m->usage) +
         m->scratch.cap + (m->lists.fresh_cap + m->lists.kept_toks_cap + m->lists.journal_cap) * sizeof(int);
}

void gp__core_memo_begin(gp__core_ctx *c, gp_sched_memo *m) {
  const gp_view *v = c->view;
  if (!m) return;
  bool known = v->rev != 0 && m->view_rev == v->rev && m->pol == c->pol;
  if (gp__core_tokens_count(m->tokens) > TOKENS_MAX) {
    /* Requests of every size went by (a long replay): start the tokens over. */
    gp__core_tokens_free(m->tokens);
    m->tokens = NULL;
    known = false;
  }
  if (!known) {
    /* Nodes, queues, pools or the policy changed: every record may be stale. */
    if (m->rec) memset(m->rec, 0, m->cap * sizeof *m->rec);
    gp__core_victims_forget(m->victims);
    gp__core_nodes_snap_free(m->nodes);
    m->nodes = NULL;
    gp__core_qtree_done(&m->tree);
    m->view_rev = 0;
  }
  m->step++;
  if (v->rev == 0 || !v->job_revs) return;
  if ((size_t)v->n_jobs + 1 > m->cap) {
    size_t cap = m->cap;
    gp_xgrow((void **)&m->rec, &m->cap, (size_t)v->n_jobs + 1, sizeof *m->rec);
    m->run = gp_xrealloc(m->run, m->cap * sizeof *m->run);
    m->cls = gp_xrealloc(m->cls, m->cap * sizeof *m->cls);
    m->jobs = gp_xrealloc(m->jobs, m->cap * sizeof *m->jobs);
    m->journaled = gp_xrealloc(m->journaled, m->cap * sizeof *m->journaled);
    memset(m->rec + cap, 0, (m->cap - cap) * sizeof *m->rec);
    memset(m->journaled + cap, 0, (m->cap - cap) * sizeof *m->journaled);
  }
  c->memo = m;
  c->scratch = &m->scratch;
  c->jobs = m->jobs;
  c->view_known = known;
  c->known_tree = known && m->tree.q ? &m->tree : NULL;
  c->cls->lists = m->lists;
  c->cls->journaled = m->journaled;
  c->cls->journal_step = m->step;
  c->cls->spare_shapes = m->shapes;
  m->shapes = NULL;
}

/* The view passed the checks that gp__core_validate skips for a known view; the tree it built
 * for a view the memo did not know is kept for the next step. */
void gp__core_memo_view_checked(gp__core_ctx *c) {
  if (!c->memo) return;
  c->memo->view_rev = c->view->rev;
  c->memo->pol = c->pol;
  if (!c->known_tree) {
    gp__core_qtree_done(&c->memo->tree);
    gp__core_qtree_clone(&c->memo->tree, &c->tree);
  }
}
