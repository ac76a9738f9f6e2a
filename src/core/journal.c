/* SPDX-License-Identifier: Apache-2.0 */
/* The step's journal of written job slots (classify.h, gp__core_job_mut): with a memo,
 * ctx.jobs is the memo's array, so a slot a later stage writes is noted here and put back
 * as classification left it when the step ends (classify_memo.c). A leaf: every stage that
 * writes a job's slot (classification, shapes, placement, reservations, preemption) notes
 * it here without reaching into classification's pass. */
#include "core/classify.h"

/* Slot j of ctx.jobs is about to be written (gp__core_job_mut): note it, so that the step's end
 * puts it back as classification left it. */
void gp__core_journal_add(gp__core_ctx *c, int j) {
  c->cls->journaled[j] = c->cls->journal_step;
  gp_xgrow((void **)&c->cls->lists.journal, &c->cls->lists.journal_cap, (size_t)c->cls->n_journal + 1,
           sizeof *c->cls->lists.journal);
  c->cls->lists.journal[c->cls->n_journal++] = j;
}
