/* SPDX-License-Identifier: Apache-2.0 */
/* The hooks of a job task's life on the node: the features that keep something per task
 * (batch's signal before the time limit, containers, sessions, srun's steps, the monitor's
 * usage, the image store's LRU) register a table of callbacks at agent start (agent.c), and
 * the life cycle (agent_start.c, agent_jobs.c) fires the events through here. So the life
 * cycle names no feature, and no feature calls back into it: a leaf, calling nothing of the
 * agent. Hooks run in the order they were registered, on the run loop's thread. */
#include "agent/agent_int.h"

#include <stdio.h>
#include <stdlib.h>

void gp__agent_hooks_add(gp_agent *a, const gp__agent_job_hooks *h) {
  /* The set is fixed at build time: more than the table holds is a programming error. */
  if (a->n_hooks >= GP__AGENT_HOOKS_MAX) {
    fprintf(stderr, "gpool agent: more than %d job hook tables (%s)\n", GP__AGENT_HOOKS_MAX, h->name);
    abort();
  }
  a->hooks[a->n_hooks++] = h;
}

void gp__agent_hooks_started(gp_agent *a, gp__agent_job *j) {
  for (int i = 0; i < a->n_hooks; i++)
    if (a->hooks[i]->started) a->hooks[i]->started(a, j);
}

void gp__agent_hooks_exit_status(gp_agent *a, const gp__agent_job *j, bool *known, int *code, int *sig) {
  for (int i = 0; i < a->n_hooks; i++)
    if (a->hooks[i]->exit_status) a->hooks[i]->exit_status(a, j, known, code, sig);
}

void gp__agent_hooks_ending(gp_agent *a, gp__agent_job *j) {
  for (int i = 0; i < a->n_hooks; i++)
    if (a->hooks[i]->ending) a->hooks[i]->ending(a, j);
}

void gp__agent_hooks_ended(gp_agent *a, const gp__agent_job *j) {
  for (int i = 0; i < a->n_hooks; i++)
    if (a->hooks[i]->ended) a->hooks[i]->ended(a, j);
}

void gp__agent_hooks_stopping(gp_agent *a, const gp__agent_job *j) {
  for (int i = 0; i < a->n_hooks; i++)
    if (a->hooks[i]->stopping) a->hooks[i]->stopping(a, j);
}

bool gp__agent_hooks_holds(const gp_agent *a, const gp__agent_job *j) {
  for (int i = 0; i < a->n_hooks; i++)
    if (a->hooks[i]->holds && a->hooks[i]->holds(a, j)) return true;
  return false;
}

json_t *gp__agent_hooks_usage(gp_agent *a, const gp__agent_job *j) {
  for (int i = 0; i < a->n_hooks; i++) {
    json_t *u = a->hooks[i]->usage ? a->hooks[i]->usage(a, j) : NULL;
    if (u) return u;
  }
  return NULL;
}

void gp__agent_hooks_removed(gp_agent *a, const gp__agent_job *j) {
  for (int i = 0; i < a->n_hooks; i++)
    if (a->hooks[i]->removed) a->hooks[i]->removed(a, j);
}

void gp__agent_hooks_tick(gp_agent *a, gp__agent_job *j, int64_t now_ms) {
  for (int i = 0; i < a->n_hooks; i++)
    if (a->hooks[i]->tick) a->hooks[i]->tick(a, j, now_ms);
}
