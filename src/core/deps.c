/* SPDX-License-Identifier: Apache-2.0 */
/* Job dependencies, Slurm's meaning:
 *   after:ID     the job may start once ID has started (or ended: it cannot start later);
 *   afterok:ID   once ID ended COMPLETED; if it ended any other way it never will;
 *   afterany:ID  once ID ended, however;
 *   afternotok:ID once ID ended otherwise than COMPLETED; if it completed it never will;
 *   singleton    once no other job of the same name and user runs, and none submitted
 *                before it is still waiting (Slurm: after every earlier job of that name).
 * A dependency on an id the view does not carry, or on the job itself, can never be met
 * (the view must carry ended jobs that others depend on: gp_view's contract). The id map is
 * built on the first job that has dependencies, so views without any never pay for it; the
 * singleton map (name and user -> the one job of that key that may run) likewise. */
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
    if (c->view->jobs[d].dep_only && c->view->jobs[d].started_at > 0) return SAT; /* an array began */
    break;
  case 1: /* afterok */
    if (s == GP_JOB_COMPLETED) return SAT;
    if (final) {
      *msg = gp_arena_printf(c->arena, "It needs job %s to succeed, but that job ended %s.", id,
                             gp_job_state_name(s));
      return NEVER;
    }
    break;
  case 3: /* afternotok */
    if (s == GP_JOB_COMPLETED) {
      *msg = gp_arena_printf(c->arena, "It needs job %s to fail, but that job completed.", id);
      return NEVER;
    }
    if (final) return SAT;
    break;
  default: /* afterany */
    if (final) return SAT;
    break;
  }
  return WAIT;
}

/* Does job a (not final) come before job b for singleton: a running job first, then the
 * one submitted first. */
static bool single_first(const gp_job *a, const gp_job *b) {
  bool ra = a->state == GP_JOB_RUNNING || a->state == GP_JOB_STOPPING;
  bool rb = b->state == GP_JOB_RUNNING || b->state == GP_JOB_STOPPING;
  if (ra != rb) return ra;
  if (a->submitted_at != b->submitted_at) return a->submitted_at < b->submitted_at;
  return gp_order_id_cmp(a->id, b->id) < 0;
}

/* The key (user, name) of job j in the singleton map, or NULL when it has no name. */
static const char *single_key(gp__core_ctx *c, const gp_job *job) {
  if (!job->name || !job->user) return NULL;
  return gp_arena_printf(c->arena, "%s\x1f%s", job->user, job->name);
}

/* For each (user, name) of a job not yet ended, the job that comes first. */
static void build_single(gp__core_ctx *c) {
  const gp_view *v = c->view;
  gp__core_strmap_init(&c->cls->single, 16);
  c->cls->single_first = gp_arena_alloc(c->arena, ((size_t)v->n_jobs + 1) * sizeof(int));
  int n = 0;
  for (int j = 0; j < v->n_jobs; j++) {
    const gp_job *job = &v->jobs[j];
    if (gp_job_state_is_final(job->state)) continue;
    const char *key = single_key(c, job);
    if (!key) continue;
    int k = gp__core_strmap_put(&c->cls->single, key, n);
    if (k < 0) {
      c->cls->single_first[n++] = j;
    } else if (single_first(job, &v->jobs[c->cls->single_first[k]])) {
      c->cls->single_first[k] = j;
    }
  }
  c->cls->single_built = true;
}

static int singleton(gp__core_ctx *c, int j, const char **msg) {
  const gp_job *job = &c->view->jobs[j];
  const char *key = single_key(c, job);
  if (!key) return SAT;
  if (!c->cls->single_built) build_single(c);
  int k = gp__core_strmap_get(&c->cls->single, key);
  int first = k >= 0 ? c->cls->single_first[k] : j;
  if (first == j) return SAT;
  *msg = gp_arena_printf(c->arena, "It is a singleton and job %s of the same name (%s) comes first.",
                         c->view->jobs[first].id, job->name);
  return WAIT;
}

int gp__core_deps_check(gp__core_ctx *c, int j, const char **msg) {
  const gp_job *job = &c->view->jobs[j];
  if (!gp__core_has_deps(job)) return SAT;
  int worst = SAT;
  const char *const *lists[4] = {job->after, job->after_ok, job->after_any, job->after_not_ok};
  int counts[4] = {job->n_after, job->n_after_ok, job->n_after_any, job->n_after_not_ok};
  if (!c->cls->ids_built && (counts[0] | counts[1] | counts[2] | counts[3])) build_ids(c);
  for (int k = 0; k < 4; k++) {
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
  if (job->singleton && worst == SAT) {
    worst = singleton(c, j, msg);
  }
  return worst;
}
