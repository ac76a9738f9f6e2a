/* SPDX-License-Identifier: Apache-2.0 */
/* Job dependencies, Slurm's meaning:
 *   after:ID     the job may start once ID has started (or ended: it cannot start later);
 *   afterok:ID   once ID ended COMPLETED; if it ended any other way it never will;
 *   afterany:ID  once ID ended, however.
 * A dependency on an id the view does not carry, or on the job itself, can never be met
 * (the view must carry ended jobs that others depend on: gp_view's contract). The id map is
 * built on the first job that has dependencies, so views without any never pay for it. */
#include "core/classify.h"

static void build_ids(gp__core_ctx *c) {
  gp__core_strmap_init(&c->cls->ids, (size_t)c->view->n_jobs + 1);
  for (int j = 0; j < c->view->n_jobs; j++)
    if (c->view->jobs[j].id) gp__core_strmap_put(&c->cls->ids, c->view->jobs[j].id, j);
  c->cls->ids_built = true;
}

enum { SAT = 0, WAIT = 1, NEVER = -1 };

static int one(gp__core_ctx *c, int j, const char *id, int kind, const char **msg) {
  int d = id ? gp__core_strmap_get(&c->cls->ids, id) : -1;
  if (d < 0 || d == j) {
    *msg = gp_arena_printf(c->arena, "It depends on job %s, which %s.", id ? id : "(null)",
                           d == j ? "is the job itself" : "is unknown");
    return NEVER;
  }
  gp_job_state s = c->view->jobs[d].state;
  bool final = gp_job_state_is_final(s);
  switch (kind) {
  case 0: /* after */
    if (final || s == GP_JOB_RUNNING || s == GP_JOB_STOPPING) return SAT;
    break;
  case 1: /* afterok */
    if (s == GP_JOB_COMPLETED) return SAT;
    if (final) {
      *msg = gp_arena_printf(c->arena, "It needs job %s to succeed, but that job ended %s.", id,
                             gp_job_state_name(s));
      return NEVER;
    }
    break;
  default: /* afterany */
    if (final) return SAT;
    break;
  }
  return WAIT;
}

int gp__core_deps_check(gp__core_ctx *c, int j, const char **msg) {
  const gp_job *job = &c->view->jobs[j];
  if (job->n_after + job->n_after_ok + job->n_after_any == 0) return SAT;
  if (!c->cls->ids_built) build_ids(c);
  int worst = SAT;
  const char *const *lists[3] = {job->after, job->after_ok, job->after_any};
  int counts[3] = {job->n_after, job->n_after_ok, job->n_after_any};
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < counts[k] && lists[k]; i++) {
      const char *m = NULL;
      int r = one(c, j, lists[k][i], k, &m);
      if (r == NEVER) {
        *msg = m;
        return NEVER;
      }
      if (r == WAIT) worst = WAIT;
    }
  }
  if (worst == WAIT) *msg = GP__MSG_DEPENDENCY;
  return worst;
}
