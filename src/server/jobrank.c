/* SPDX-License-Identifier: Apache-2.0 */
/* A pending job's place in its queue (the API's `queue_position`): 1 for the job its queue
 * would start next. The ranks follow the keys the scheduler's order gives jobs inside a
 * queue (gp_order_keys_of; ties to the job that came first, gp_order_id_cmp: the core's own
 * rule, so that position 1 is the job a step starts first), over the
 * jobs the last step considered (a pending reason other than a dependency or a hold). They
 * are worked out when first read after a step and kept until the next one, so a step pays
 * nothing for them and a page of 10,000 jobs sorts once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "server/state.h"
#include "util/mem.h"

typedef struct rank_ent {
  const char *queue;
  int64_t k1, k2;
  gp_srv_job *j;
} rank_ent;

static int ent_cmp(const void *a, const void *b) {
  const rank_ent *x = a, *y = b;
  int c = strcmp(x->queue, y->queue);
  if (c) return c;
  if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
  if (x->k2 != y->k2) return x->k2 < y->k2 ? -1 : 1;
  return gp_order_id_cmp(x->j->idstr, y->j->idstr);
}

/* Does the scheduler's order hold the job (as of the last step)? */
static bool ranked(const gp_srv_job *j) {
  return j->state == GP_JOB_PENDING && j->pending_reason >= 0 &&
         j->pending_reason != GP_PEND_DEPENDENCY && j->pending_reason != GP_PEND_HELD;
}

/* The time limit the core reads for a job: its own, else its nearest queue's default (the
 * leaf's, then each parent's), else the policy's; 0: none. */
static int64_t limit_of(const gp_srv_state *s, const gp_srv_job *j) {
  if (j->time_limit > 0) return j->time_limit;
  char name[GP_MAX_QUEUE_NAME + 1];
  snprintf(name, sizeof name, "%s", j->queue ? j->queue : "");
  for (;;) {
    const gp_srv_queue *q = gp__srv_queue_get(s, name);
    if (q && q->default_time_limit > 0) return q->default_time_limit;
    char *slash = strrchr(name, '/');
    if (!slash) break;
    *slash = '\0';
  }
  return s->cfg->policy.default_time_limit > 0 ? s->cfg->policy.default_time_limit : 0;
}

static rank_ent entry_of(const gp_srv_state *s, gp_srv_job *j) {
  const gp_priority_class *pc = gp_priority_class_find(&s->cfg->policy, gp__srv_idle_class(s, j));
  gp_order_keys k = gp_order_keys_of(s->cfg->policy.order, pc ? pc->priority : 0, limit_of(s, j), j->submitted_at);
  return (rank_ent){.queue = j->queue, .k1 = k.k1, .k2 = k.k2, .j = j};
}

static void refresh(gp_srv_state *s) {
  rank_ent *ents = gp_xmalloc(((size_t)s->n_active + 1) * sizeof *ents);
  size_t n = 0;
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    j->queue_position = 0;
    if (ranked(j)) ents[n++] = entry_of(s, j);
  }
  qsort(ents, n, sizeof *ents, ent_cmp);
  int pos = 0;
  for (size_t i = 0; i < n; i++) {
    pos = i > 0 && strcmp(ents[i].queue, ents[i - 1].queue) == 0 ? pos + 1 : 1;
    ents[i].j->queue_position = pos;
  }
  free(ents);
  s->ranked_cycle = s->counters.sched_cycles + 1;
}

int gp__srv_job_queue_position(const gp_srv_state *s, const gp_srv_job *j) {
  if (!s || !s->cfg || !ranked(j)) return 0;
  /* The ranks are a cache of the last step's order: refreshing them changes nothing the
   * state's readers can see but this field, and only the state thread calls this. */
  gp_srv_state *w = (gp_srv_state *)s;
  if (w->ranked_cycle != w->counters.sched_cycles + 1) refresh(w);
  return j->queue_position;
}
