/* SPDX-License-Identifier: Apache-2.0 */
/* The queues' idle-GPU policy (core/idle.h) on the server's running jobs: each agent report
 * measures the job's SM use over its share of its GPUs, and the tick acts on a job idle
 * past its queue's rule, once per idle stretch. Every action is an `idle` event with the
 * figures that caused it; a requeue or a cancel then goes through the stop handshake (the
 * job's checkpoint signal and grace, as for a preemption) and ends in finalize
 * (lifecycle.c), which reads the event to know which (idle_rule.c). A job whose use is
 * unknown (an MPS client, a report without sm_busy_gpu_s) is never idle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/accounting/idle.h"
#include "server/accounting/ledger.h"
#include "server/state/state.h"

void gp__srv_idle_measure(gp_srv_state *s, gp_srv_job *j, bool known, int64_t now) {
  if (j->state != GP_JOB_RUNNING) return;
  double busy = -1, share = 0;
  /* A report without the figure leaves the last one in the ledger; it is not use seen
   * now, so the job's use is unknown until its reports carry it again. */
  if (known) gp__srv_job_use(s, j, &busy, &share);
  const gp_idle_rule *r = gp__srv_idle_rule(s, j);
  gp_idle_track_update(&j->idle, busy, share, r ? r->threshold_pct : GP_SRV_IDLE_PCT, now);
}

void gp__srv_idle_reset(gp_srv_job *j) {
  j->idle = GP_IDLE_TRACK_INIT;
  j->idle_acted_since = 0;
}

static int act(gp_srv_state *s, gp_srv_job *j, gp_srv_queue *q, const gp_idle_rule *r,
               int64_t now, gp_err *err) {
  const char *why = NULL;
  gp_idle_action a = gp_idle_effective(r, j->requeue, gp__srv_idle_class(s, j), &why);
  int64_t since = j->idle.idle_since;
  char fig[96], reason[300];
  gp__srv_idle_figures(fig, sizeof fig, r->threshold_pct, now - since);
  if (a == GP_IDLE_NOTIFY)
    snprintf(reason, sizeof reason, "%s (policy: notify%s%s)", fig, why ? "; " : "",
             why ? why : "");
  else
    snprintf(reason, sizeof reason, "%s: stopping it to %s", fig, gp_idle_action_name(a));
  json_t *extra = json_object();
  json_object_set_new(extra, "action", json_string(gp_idle_action_name(a)));
  json_object_set_new(extra, "threshold_pct", json_real(r->threshold_pct));
  json_object_set_new(extra, "window_s", json_integer(r->window_s));
  json_object_set_new(extra, "grace_s", json_integer(r->grace_s));
  json_object_set_new(extra, "util_pct",
                      j->idle.last_pct >= 0 ? json_real(j->idle.last_pct) : json_null());
  json_object_set_new(extra, "idle_since", json_integer(since));
  json_object_set_new(extra, "idle_for_s", json_integer(now - since));
  if (why) json_object_set_new(extra, "why", json_string(why));
  json_object_set_new(extra, "reason", json_string(reason));
  j->idle_acted_since = since;
  q->idle_actions[a]++;
  fprintf(stderr, "gpool server: idle: job %s (queue %s) %s\n", j->idstr, j->queue, reason);
  int rc = gp__srv_job_event(s, j, "idle", now, extra, err);
  if (!rc && a != GP_IDLE_NOTIFY) rc = gp__srv_job_stop(s, j, "idle", now, err);
  return rc;
}

int gp__srv_idle_tick(gp_srv_state *s, int64_t now, gp_err *err) {
  int rc = 0;
  /* A stop leaves the job in the active list (STOPPING), so the walk is not disturbed. */
  for (int k = 0; k < s->n_active && !rc; k++) {
    gp_srv_job *j = s->active[k];
    if (j->state != GP_JOB_RUNNING || !j->idle.idle_since ||
        j->idle_acted_since == j->idle.idle_since)
      continue;
    gp_srv_queue *q = gp__srv_queue_get(s, j->queue);
    if (!q || !q->idle_policy.set) continue;
    const gp_idle_rule *r = gp_idle_rule_for(&q->idle_policy, gp__srv_idle_class(s, j));
    int64_t due = gp_idle_due(r, j->started_at, j->idle.idle_since);
    if (due > 0 && now >= due) rc = act(s, j, q, r, now, err);
  }
  return rc;
}
