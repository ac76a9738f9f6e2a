/* SPDX-License-Identifier: Apache-2.0 */
/* Ended jobs out of memory (state.h, gp_srv_ended): the server keeps its active jobs and
 * the last cfg->recent_ended_jobs ended ones; older ended jobs are read from the store on
 * demand (history.c). What must stay whole for every ended job is small: its final state,
 * one byte per job id, which answers dependencies (the core needs a dependency's final
 * state) and the per-state counts. Memory is then bounded by recent_ended_jobs × a job's
 * size, plus 9 bytes per job id ever issued (this byte and the id's slot in
 * gp_srv_state.jobs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/state.h"
#include "util/mem.h"

static void fifo_push(gp_srv_ended *e, int64_t id) {
  if (e->fifo_head + e->fifo_len + 1 > e->cap_fifo) {
    if (e->fifo_head > 0) { /* slide down before growing */
      memmove(e->fifo, e->fifo + e->fifo_head, e->fifo_len * sizeof *e->fifo);
      e->fifo_head = 0;
    }
    gp_xgrow((void **)&e->fifo, &e->cap_fifo, e->fifo_len + 1, sizeof *e->fifo);
  }
  e->fifo[e->fifo_head + e->fifo_len++] = id;
}

void gp__srv_ended_mark(gp_srv_state *s, int64_t id, gp_job_state st, bool final) {
  gp_srv_ended *e = &s->ended;
  if (id <= 0) return;
  if ((size_t)id >= e->cap_final) {
    if (!final) return;
    size_t old = e->cap_final, cap = old ? old : 4096;
    while (cap <= (size_t)id) cap *= 2;
    e->final = gp_xrealloc(e->final, cap);
    memset(e->final + old, 0, cap - old);
    e->cap_final = cap;
  }
  uint8_t was = e->final[id];
  if (was && was - 1 < 16) e->by_state[was - 1]--;
  e->final[id] = 0;
  if (!final || (unsigned)st >= 16) return;
  e->final[id] = (uint8_t)(st + 1);
  e->by_state[st]++;
  if (s->jobs && (size_t)id < s->cap_jobs && s->jobs[id]) fifo_push(e, id);
}

bool gp__srv_ended_state(const gp_srv_state *s, int64_t id, gp_job_state *ret) {
  const gp_srv_ended *e = &s->ended;
  if (id <= 0 || (size_t)id >= e->cap_final || !e->final[id]) return false;
  if (ret) *ret = (gp_job_state)(e->final[id] - 1);
  return true;
}

void gp__srv_ended_evict(gp_srv_state *s) {
  gp_srv_ended *e = &s->ended;
  size_t keep = s->cfg->recent_ended_jobs > 0 ? (size_t)s->cfg->recent_ended_jobs : 1;
  if (e->fifo_len <= keep) return;
  /* The view's ended dependencies point at jobs; the next step finds them again. */
  gp_srv_view *w = &s->view;
  for (int i = 0; i < w->n_deps; i++) w->deps[i]->view_index = -1;
  w->n_deps = 0;
  while (e->fifo_len > keep) {
    int64_t id = e->fifo[e->fifo_head++];
    e->fifo_len--;
    gp_srv_job *j = (size_t)id < s->cap_jobs ? s->jobs[id] : NULL;
    /* A job that left its final state again (or an id listed twice) stays. */
    if (!j || !gp_job_state_is_final(j->state) || j->active_pos >= 0) continue;
    /* An array's job stays: "J_I" of an element that never ran is read from it. */
    if (j->array) continue;
    s->jobs[id] = NULL;
    gp__srv_job_free(j);
  }
  if (e->fifo_len == 0) e->fifo_head = 0;
}

gp_srv_job *gp__srv_ended_ghost(gp_srv_state *s, int64_t id) {
  gp_job_state st;
  if (!gp__srv_ended_state(s, id, &st)) return NULL;
  return gp__srv_ghost_get(s, id, st);
}

gp_srv_job *gp__srv_ghost_get(gp_srv_state *s, int64_t id, gp_job_state st) {
  gp_srv_ended *e = &s->ended;
  for (int i = 0; i < e->n_ghosts; i++)
    if (e->ghosts[i]->id == id) return e->ghosts[i];
  gp_srv_job *g = gp_xcalloc(1, sizeof *g);
  g->id = id;
  snprintf(g->idstr, sizeof g->idstr, "%lld", (long long)id);
  g->state = st;
  g->queue = gp_xstrdup("");
  g->user = gp_xstrdup("");
  g->active_pos = -1;
  g->view_index = -1;
  g->rev = ++s->revs;
  gp_xgrow((void **)&e->ghosts, &e->cap_ghosts, (size_t)e->n_ghosts + 1, sizeof *e->ghosts);
  e->ghosts[e->n_ghosts++] = g;
  return g;
}

void gp__srv_ended_ghosts_trim(gp_srv_state *s) {
  gp_srv_ended *e = &s->ended;
  int k = 0;
  for (int i = 0; i < e->n_ghosts; i++) {
    if (e->ghosts[i]->view_index >= 0) e->ghosts[k++] = e->ghosts[i];
    else gp__srv_job_free(e->ghosts[i]);
  }
  e->n_ghosts = k;
}

void gp__srv_ended_free(gp_srv_ended *e) {
  free(e->final);
  free(e->fifo);
  for (int i = 0; i < e->n_ghosts; i++) gp__srv_job_free(e->ghosts[i]);
  free(e->ghosts);
  memset(e, 0, sizeof *e);
}
