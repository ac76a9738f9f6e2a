/* SPDX-License-Identifier: Apache-2.0 */
/* What a queue's idle-GPU policy says of a job, read without acting: its rule and class,
 * whether it is idle now, and what a stop for idleness ends in (read from the job's `idle`
 * event). The job documents, the queue positions, the metrics, the advice and the end of a
 * run read these; the policy's measuring and acting (idle.c) is a feature the state never
 * calls. Calls nothing of the server but the lookups (lookup.c). */
#include <stdio.h>
#include <string.h>

#include "server/state/state.h"

const gp_idle_rule *gp__srv_idle_rule(const gp_srv_state *s, const gp_srv_job *j) {
  const gp_srv_queue *q = gp__srv_queue_get(s, j->queue);
  if (!q || !q->idle_policy.set) return NULL;
  return gp_idle_rule_for(&q->idle_policy, gp__srv_idle_class(s, j));
}

const char *gp__srv_idle_class(const gp_srv_state *s, const gp_srv_job *j) {
  if (j->priority) return j->priority;
  const gp_srv_queue *q = gp__srv_queue_get(s, j->queue);
  if (q && q->default_priority) return q->default_priority;
  return s->cfg ? s->cfg->policy.default_priority : NULL;
}

bool gp__srv_idle_now(const gp_srv_state *s, const gp_srv_job *j, int64_t now) {
  if (j->state != GP_JOB_RUNNING || !j->idle.idle_since) return false;
  const gp_idle_rule *r = gp__srv_idle_rule(s, j);
  return now - j->idle.idle_since >= (r ? r->window_s : GP_SRV_IDLE_WINDOW_S);
}

/* "under 5% SM for 600 s" */
void gp__srv_idle_figures(char *buf, size_t size, double threshold_pct, int64_t for_s) {
  snprintf(buf, size, "under %g%% SM for %lld s", threshold_pct, (long long)for_s);
}

bool gp__srv_idle_requeues(const gp_srv_job *j, char *why, size_t size) {
  const json_t *tl = j->timeline;
  for (size_t i = json_array_size(tl); i-- > 0;) {
    const json_t *e = json_array_get(tl, i);
    const char *name = json_string_value(json_object_get(e, "event"));
    if (!name || strcmp(name, "idle") != 0) continue;
    const char *action = json_string_value(json_object_get(e, "action"));
    if (!action || strcmp(action, "notify") == 0) continue;
    char fig[96];
    gp__srv_idle_figures(fig, sizeof fig, json_number_value(json_object_get(e, "threshold_pct")),
            json_integer_value(json_object_get(e, "window_s")));
    snprintf(why, size, "idle: %s", fig);
    return strcmp(action, "requeue") == 0;
  }
  snprintf(why, size, "idle");
  return j->requeue;
}
