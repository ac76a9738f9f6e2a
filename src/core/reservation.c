/* SPDX-License-Identifier: Apache-2.0 */
/* Advance reservations and maintenance windows (Slurm's `scontrol create reservation`):
 * fences in time on whole nodes, from the view (gp_view.reservations), applied where
 * placement filters nodes (node_fit.c: gp__core_node_static_ok_any_excl), where backfill
 * computes when a node frees up (backfill.c), and as stops at a maintenance window's start.
 *
 * Why whole nodes: a maintenance window takes whole machines, and a fence per node is one
 * test in the node filter that every kind of request (whole GPUs, fractions, MIG, CPU)
 * already passes through; a reservation of N GPUs is turned into nodes when it is made
 * (the server picks them: docs/scheduling.md).
 *
 * What a fence depends on: the job's membership (its queue and user: part of its request
 * shape, shapes.c, so that a failure of one job says nothing of a job of the other side),
 * its end (now + its time limit: the shapes' failure records are per end already) and now
 * (the step's valid_until gets every time at which an answer turns). */
#include "core/reservation.h"

#include <stdlib.h>
#include <string.h>

#include "core/field.h"
#include "core/preempt.h"

int gp__core_ares_check(gp__core_ctx *c) {
  const gp_view *v = c->view;
  char f[64];
  if (v->n_reservations < 0 || (v->n_reservations && !v->reservations))
    return gp_err_set(c->err, GP_EINVAL, NULL, 0, "reservations", "malformed view: a count without its array");
  if (v->n_reservations > GP_MAX_VIEW_RESERVATIONS)
    return gp_err_set(c->err, GP_EINVAL, NULL, 0, "reservations", "at most %d reservations",
                      GP_MAX_VIEW_RESERVATIONS);
  for (int i = 0; i < v->n_reservations; i++) {
    const gp_reservation *rv = &v->reservations[i];
    if (!rv->name)
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "reservations", i, ".name"),
                        "a reservation needs a name");
    if (rv->end <= rv->start)
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "reservations", i, ".end"),
                        "reservation %s ends before it starts", rv->name);
    if (rv->n_nodes < 0 || (rv->n_nodes && !rv->nodes) || rv->n_users < 0 || (rv->n_users && !rv->users))
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "reservations", i, ".nodes"),
                        "malformed reservation %s: a count without its array", rv->name);
    for (int k = 0; k < rv->n_nodes; k++)
      if (rv->nodes[k] < 0 || rv->nodes[k] >= v->n_nodes)
        return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "reservations", i, ".nodes"),
                          "reservation %s names a node that does not exist", rv->name);
    for (int k = 0; k < rv->n_users; k++)
      if (!rv->users[k])
        return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "reservations", i, ".users"),
                          "reservation %s lists a user without a name", rv->name);
  }
  return 0;
}

void gp__core_ares_setup(gp__core_ctx *c) {
  const gp_view *v = c->view;
  int n = 0, idx[GP_MAX_VIEW_RESERVATIONS];
  for (int i = 0; i < v->n_reservations; i++) {
    const gp_reservation *rv = &v->reservations[i];
    if (rv->end <= c->now || rv->n_nodes == 0) continue;
    idx[n++] = i;
    /* The answers turn when it begins and when it ends. */
    if (rv->start > c->now) gp__core_valid_by(c, rv->start);
    gp__core_valid_by(c, rv->end);
  }
  if (!n) return;
  gp__core_ares *a = gp_xcalloc(1, sizeof *a);
  a->n = n;
  memcpy(a->idx, idx, (size_t)n * sizeof *idx);
  a->node_bits = gp_xcalloc((size_t)v->n_nodes + 1, sizeof *a->node_bits);
  for (int k = 0; k < n; k++) {
    const gp_reservation *rv = &v->reservations[idx[k]];
    for (int m = 0; m < rv->n_nodes; m++) a->node_bits[rv->nodes[m]] |= (uint64_t)1 << k;
  }
  a->inside = gp_xmalloc(((size_t)v->n_jobs + 1) * sizeof *a->inside);
  a->inside_done = gp_xcalloc((size_t)v->n_jobs + 1, 1);
  a->valid = GP__NEVER;
  c->ares = a;
}

void gp__core_ares_done(gp__core_ctx *c) {
  if (!c->ares) return;
  if (c->ares->valid < c->valid_until) c->valid_until = c->ares->valid;
  free(c->ares->node_bits);
  free(c->ares->inside);
  free(c->ares->inside_done);
  free(c->ares);
  c->ares = NULL;
}

/* Is queue `q` the reservation's queue or one below it? */
static bool under(const char *q, const char *top) {
  size_t n = strlen(top);
  return q && strncmp(q, top, n) == 0 && (q[n] == '\0' || q[n] == '/');
}

uint64_t gp__core_ares_inside(const gp__core_ctx *c, int j) {
  gp__core_ares *a = c->ares;
  if (!a) return 0;
  if (a->inside_done[j]) return a->inside[j];
  const gp_job *job = &c->view->jobs[j];
  uint64_t bits = 0;
  for (int k = 0; k < a->n; k++) {
    const gp_reservation *rv = &c->view->reservations[a->idx[k]];
    bool in = rv->queue && under(job->queue, rv->queue);
    for (int u = 0; u < rv->n_users && !in; u++) in = job->user && strcmp(job->user, rv->users[u]) == 0;
    if (in) bits |= (uint64_t)1 << k;
  }
  a->inside[j] = bits;
  a->inside_done[j] = 1;
  return bits;
}

static void note_valid(gp__core_ares *a, const gp__core_ctx *c, gp_time t) {
  if (t <= c->now) t = c->now + 1;
  if (t < a->valid) a->valid = t;
}

int gp__core_ares_fence(const gp__core_ctx *c, int j, gp_time end, int node) {
  gp__core_ares *a = c->ares;
  if (!a || !a->node_bits[node]) return -1;
  uint64_t bits = a->node_bits[node] & ~gp__core_ares_inside(c, j);
  for (; bits; bits &= bits - 1) {
    int k = __builtin_ctzll(bits);
    const gp_reservation *rv = &c->view->reservations[a->idx[k]];
    if (rv->start <= c->now || end > rv->start) return k;
    /* It ends in time now; asked later, with its end later, it no longer would. */
    if (rv->start - end < GP__NEVER - 1 - c->now) note_valid(a, c, c->now + (rv->start - end) + 1);
  }
  return -1;
}

gp_time gp__core_ares_free_from(const gp__core_ctx *c, int j, int node) {
  const gp__core_ares *a = c->ares;
  if (!a || !a->node_bits[node]) return 0;
  gp_time t = 0;
  for (uint64_t bits = a->node_bits[node] & ~gp__core_ares_inside(c, j); bits; bits &= bits - 1) {
    const gp_reservation *rv = &c->view->reservations[a->idx[__builtin_ctzll(bits)]];
    if (rv->end > t) t = rv->end;
  }
  return t;
}

/* Does running job j hold anything on a node of reservation position k? */
static bool runs_on(const gp__core_ctx *c, int r, int k) {
  const gp__core_run *ru = &c->cls->run[r];
  uint64_t bit = (uint64_t)1 << k;
  if (ru->node >= 0) return c->ares->node_bits[ru->node] & bit;
  const gp_job *job = &c->view->jobs[c->cls->running[r]];
  for (int p = 0; p < job->n_placements; p++)
    if (c->ares->node_bits[job->placements[p].node] & bit) return true;
  return false;
}

void gp__core_ares_maint(gp__core_ctx *c) {
  gp__core_ares *a = c->ares;
  if (!a) return;
  for (int k = 0; k < a->n; k++) {
    const gp_reservation *rv = &c->view->reservations[a->idx[k]];
    if (!rv->maint || rv->start > c->now) continue;
    for (int r = 0; r < c->cls->n_running; r++) {
      int v = c->cls->running[r];
      if (c->cls->run[r].stopping || c->jobs[v].victim || !runs_on(c, r, k)) continue;
      if (gp__core_ares_inside(c, v) & ((uint64_t)1 << k)) continue;
      /* Every job, preemptible or not: the machine goes down for maintenance. */
      gp__core_job_mut(c, v)->victim = true;
      *(int *)gp__core_vec_push(&c->preempt->victims, sizeof(int)) = v;
      c->cls->alloc_gen++;
      gp_plan_preemption *pe = gp__core_vec_push(&c->preempt->preemptions, sizeof *pe);
      *pe = (gp_plan_preemption){.job = v, .for_job = -1, .kind = GP_PREEMPT_MAINT};
    }
  }
}
