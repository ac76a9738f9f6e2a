/* SPDX-License-Identifier: Apache-2.0 */
/* Job and node transitions shared by the API, the agent protocol and the scheduler, each
 * written to the store with a timeline event: stop handshakes (cancel, preemption, time
 * limit), task exits, requeues, lost nodes. A job's timeline is the raw material for
 * accounting: submitted, started, preempted, requeued, ended (state, exit code, reason). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/order.h"
#include "server/state/state.h"
#include "util/mem.h"

static void set_str(char **dst, const char *v) {
  free(*dst);
  *dst = v ? gp_xstrdup(v) : NULL;
}

void gp__srv_attempt_ended(gp_srv_job *j, const char *reason) {
  json_t *last = json_array_get(j->attempts, json_array_size(j->attempts) - 1);
  if (!json_is_object(last) || !json_is_null(json_object_get(last, "end_reason"))) return;
  if (json_is_null(json_object_get(last, "end"))) return; /* still running */
  json_object_set_new(last, "end_reason", reason ? json_string(reason) : json_null());
}

int gp__srv_job_end(gp_srv_state *s, gp_srv_job *j, gp_job_state st, const char *reason,
                int64_t now, gp_err *err) {
  gp__srv_job_set_state(s, j, st);
  j->ended_at = now;
  set_str(&j->end_reason, reason);
  set_str(&j->stop_reason, NULL);
  gp__srv_attempt_ended(j, reason);
  s->counters.ends++;
  if (j->started_at > 0 && now >= j->started_at) gp_hist_observe(&s->counters.run_s, (double)(now - j->started_at));
  json_t *extra = json_object();
  json_object_set_new(extra, "state", json_string(gp_job_state_name(st)));
  json_object_set_new(extra, "exit_code", j->has_exit_code ? json_integer(j->exit_code) : json_null());
  json_object_set_new(extra, "reason", reason ? json_string(reason) : json_null());
  int r = gp__srv_job_event(s, j, "ended", now, extra, err);
  if (!r) r = gp__srv_persist_job(s, j, err);
  return r;
}

/* Releases the job's allocations (memory and store); the features see the run end first
 * (the ledger closes its intervals, the steps end, the idle tracking restarts): every end
 * of a run (stop, exit, requeue, preemption, lost node) comes through here. */
static int free_allocs(gp_srv_state *s, gp_srv_job *j, int64_t now, gp_err *err) {
  int r = gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_RUN_ENDED, &(gp_srv_hook_ev){.job = j, .now_s = now},
                            err);
  if (r) return r;
  /* Remember where it ran, for `gpool show` and accounting. */
  if (j->n_alloc > 0) {
    json_decref(j->last_placements);
    j->last_placements = gp__srv_job_placements_json(s, j);
  }
  free(j->alloc);
  j->alloc = NULL;
  j->n_alloc = 0;
  gp__srv_job_changed(s, j);
  s->sched_dirty = true;
  return gp_store_del_allocs(s->store, j->id, err);
}

static int requeue(gp_srv_state *s, gp_srv_job *j, const char *why, int64_t now, gp_err *err) {
  gp__srv_job_set_state(s, j, GP_JOB_PENDING);
  gp__srv_attempt_ended(j, why);
  j->restarts++;
  j->started_at = 0;
  j->has_exit_code = false;
  j->exit_signal = 0;
  set_str(&j->stop_reason, NULL);
  set_str(&j->task_failure, NULL);
  set_str(&j->enforcement, NULL);
  s->counters.requeues++;
  json_t *extra = json_object();
  json_object_set_new(extra, "reason", json_string(why));
  json_object_set_new(extra, "restarts", json_integer(j->restarts));
  int r = gp__srv_job_event(s, j, "requeued", now, extra, err);
  if (!r) r = gp__srv_persist_job(s, j, err);
  return r;
}

static int send_stop(gp_srv_state *s, gp_srv_job *j, int task, const char *reason, int grace_s,
                     gp_err *err) {
  int ni = j->alloc[task].node;
  if (ni < 0 || ni >= s->n_nodes) return 0;
  /* One stop order per node, even when several tasks share it. */
  for (int t = 0; t < task; t++)
    if (j->alloc[t].node == ni && !j->alloc[t].exited) return 0;
  gp_proto_order o = {.kind = GP_PROTO_STOP};
  snprintf(o.u.stop.job, sizeof o.u.stop.job, "%s", j->idstr);
  snprintf(o.u.stop.signal, sizeof o.u.stop.signal, "%s", j->signal);
  o.u.stop.grace_s = grace_s;
  snprintf(o.u.stop.reason, sizeof o.u.stop.reason, "%s", reason);
  return gp__srv_order_add(s, s->nodes[ni], gp_proto_order_encode(&o), j->id, false, err);
}

int gp__srv_job_stop(gp_srv_state *s, gp_srv_job *j, const char *reason, int64_t now, gp_err *err) {
  return gp__srv_job_stop_within(s, j, reason, j->grace_s, now, err);
}

int gp__srv_job_stop_within(gp_srv_state *s, gp_srv_job *j, const char *reason, int max_grace_s,
                            int64_t now, gp_err *err) {
  (void)now;
  int grace_s = j->grace_s < max_grace_s ? j->grace_s : max_grace_s;
  if (grace_s < 0) grace_s = 0;
  int r = 0;
  for (int t = 0; t < j->n_alloc && !r; t++)
    if (!j->alloc[t].exited) r = send_stop(s, j, t, reason, grace_s, err);
  if (r) return r;
  if (j->state != GP_JOB_STOPPING) gp__srv_job_set_state(s, j, GP_JOB_STOPPING);
  if (!j->stop_reason || strcmp(j->stop_reason, "failed") == 0 || strcmp(reason, "cancelled") == 0)
    set_str(&j->stop_reason, reason);
  return gp__srv_persist_job(s, j, err);
}

/* All tasks are gone: the job ends, or returns to the queue. */
static int finalize(gp_srv_state *s, gp_srv_job *j, const char *agent_reason, int64_t now,
                    gp_err *err) {
  int r = free_allocs(s, j, now, err);
  if (r) return r;
  const char *sr = j->stop_reason;
  if (sr && strcmp(sr, "preempted") == 0) {
    if (j->requeue) return requeue(s, j, "preempted", now, err);
    return gp__srv_job_end(s, j, GP_JOB_PREEMPTED, "preempted", now, err);
  }
  if (sr && strcmp(sr, "cancelled") == 0) return gp__srv_job_end(s, j, GP_JOB_CANCELLED, "cancelled", now, err);
  /* Asked for (requeue_api.c, Slurm's `scontrol requeue`): back to the queue, whatever the
   * tasks' exit codes, with the restart count one higher. */
  if (sr && strcmp(sr, "requeued") == 0) return requeue(s, j, "requeued on request", now, err);
  if (sr && strcmp(sr, "idle") == 0) {
    /* The queue's idle policy stopped it: requeued or cancelled, as its `idle` event says. */
    char why[160];
    if (gp__srv_idle_requeues(j, why, sizeof why) && j->requeue) return requeue(s, j, why, now, err);
    return gp__srv_job_end(s, j, GP_JOB_CANCELLED, why, now, err);
  }
  if (sr && strcmp(sr, "timeout") == 0)
    return gp__srv_job_end(s, j, GP_JOB_TIMEOUT, "time limit reached", now, err);
  if (sr && strcmp(sr, "interrupted") == 0) {
    /* The cloud reclaimed the node (interrupt.c): not the job's fault. It keeps its
     * submission time, so the queue's order puts it back ahead of later work. */
    if (j->requeue) return requeue(s, j, "node interrupted", now, err);
    return gp__srv_job_end(s, j, GP_JOB_FAILED, "node interrupted", now, err);
  }
  if (sr && strcmp(sr, "lost") == 0) {
    if (j->requeue) return requeue(s, j, "node lost", now, err);
    return gp__srv_job_end(s, j, GP_JOB_FAILED, "node lost", now, err);
  }
  /* The agent's health policy stopped the job because its GPU failed: not the job's fault,
   * so it is treated like a lost node (requeued when the job allows it). */
  if (agent_reason && strncmp(agent_reason, "gpu_fault", 9) == 0 && j->requeue)
    return requeue(s, j, agent_reason, now, err);
  /* Completed only when every task exited 0 (the exit code is the tasks' highest; a batch
   * job's is its script's, and a holder lost while it ran fails it). */
  if (j->has_exit_code && j->exit_code == 0 && !(j->batch && j->task_failure))
    return gp__srv_job_end(s, j, GP_JOB_COMPLETED, agent_reason ? agent_reason : "exited", now, err);
  if (j->task_failure) agent_reason = j->task_failure;
  return gp__srv_job_end(s, j, GP_JOB_FAILED, agent_reason ? agent_reason : "exited", now, err);
}

static bool all_exited(const gp_srv_job *j) {
  for (int t = 0; t < j->n_alloc; t++)
    if (!j->alloc[t].exited) return false;
  return true;
}

/* A batch job (docs/slurm.md): its script, task 0, is the job. When it ends, its exit code
 * and reason are the job's and the holders are released (stopped with reason "ended": not
 * a failure, and their codes count for nothing). A holder runs nothing of its own, so one
 * that ends while the script runs has lost part of the allocation: the job fails for it. */
static int batch_task_exited(gp_srv_state *s, gp_srv_job *j, bool script_ended, int task,
                             int exit_code, int sig, const char *reason, int64_t now, gp_err *err) {
  const char *why = reason && strcmp(reason, "exited") != 0 ? reason : NULL;
  char text[1000];
  if (script_ended) {
    j->has_exit_code = true;
    j->exit_code = exit_code;
    j->exit_signal = sig;
    if (exit_code != 0 && !j->task_failure) {
      /* A plain exit is said by its code ("exited: exited with code 3" says it twice). */
      if (exit_code > 0 && (!why || !strncmp(why, "exited", 6)))
        snprintf(text, sizeof text, "batch script exited with code %d", exit_code);
      else if (why) snprintf(text, sizeof text, "batch script (task 0): %s", why);
      else snprintf(text, sizeof text, "batch script ended without an exit code");
      j->task_failure = gp_xstrdup(text);
    }
  } else if (!j->alloc[0].exited && j->state == GP_JOB_RUNNING && !j->task_failure) {
    snprintf(text, sizeof text, "task %d, holding part of the allocation, ended before the batch script: %s",
             task, why ? why : exit_code >= 0 ? "exited" : "ended without an exit code");
    j->task_failure = gp_xstrdup(text);
  }
  if (!all_exited(j)) {
    if (j->state != GP_JOB_RUNNING) return gp__srv_persist_job(s, j, err);
    return gp__srv_job_stop(s, j, j->alloc[0].exited ? "ended" : "failed", now, err);
  }
  return finalize(s, j, NULL, now, err);
}

int gp__srv_job_task_exited(gp_srv_state *s, gp_srv_job *j, int node, int task, int exit_code,
                            int sig, const char *reason, int64_t now, gp_err *err) {
  if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) return 0;
  bool script_was_running = j->n_alloc > 0 && !j->alloc[0].exited;
  if (task >= 0) {
    /* The agent names the task: only that one ended, whatever else runs on the node. */
    if (task >= j->n_alloc || j->alloc[task].node != node || j->alloc[task].exited) return 0;
    j->alloc[task].exited = true;
    j->alloc[task].exit_code = exit_code;
  } else {
    /* An agent from before tasks were named reports a job once per node: every task of the
     * job on that node has exited. */
    bool any = false;
    for (int t = 0; t < j->n_alloc; t++)
      if (j->alloc[t].node == node && !j->alloc[t].exited) {
        j->alloc[t].exited = true;
        j->alloc[t].exit_code = exit_code;
        any = true;
      }
    if (!any) return 0; /* a duplicate report, or a task that is not here */
  }
  if (j->batch && j->n_alloc > 1)
    return batch_task_exited(s, j, script_was_running && j->alloc[0].exited, task, exit_code, sig, reason,
                             now, err);
  /* The job's exit code is its tasks' highest (a task that left none, -1, counts as a
   * failure below any real code). */
  if (!j->has_exit_code || (j->exit_code == 0 && exit_code != 0) ||
      (j->exit_code != 0 && exit_code > j->exit_code)) {
    j->has_exit_code = true;
    j->exit_code = exit_code;
    j->exit_signal = sig;
  }
  if (exit_code != 0 && !j->task_failure && j->n_alloc > 1) {
    /* The first task to fail is why the gang ends: the others are stopped for it. */
    char who[300], text[1000];
    if (task >= 0) snprintf(who, sizeof who, "task %d", task);
    else snprintf(who, sizeof who, "a task on node %.200s", s->nodes[node]->name);
    if (reason) snprintf(text, sizeof text, "%s: %s", who, reason);
    else if (exit_code > 0) snprintf(text, sizeof text, "%s: exited with code %d", who, exit_code);
    else snprintf(text, sizeof text, "%s: ended without an exit code", who);
    j->task_failure = gp_xstrdup(text);
  }
  bool all = true;
  for (int t = 0; t < j->n_alloc; t++) all = all && j->alloc[t].exited;
  if (!all) {
    /* A failed task dooms the gang: stop the others. */
    if (exit_code != 0 && j->state == GP_JOB_RUNNING) return gp__srv_job_stop(s, j, "failed", now, err);
    return gp__srv_persist_job(s, j, err);
  }
  const char *why = reason && strcmp(reason, "exited") != 0 ? reason : NULL;
  return finalize(s, j, why, now, err);
}

int gp__srv_job_lost(gp_srv_state *s, gp_srv_job *j, const char *why, int64_t now, gp_err *err) {
  int r = 0;
  /* Tasks on nodes that are still alive are stopped; their reports will be ignored. */
  for (int t = 0; t < j->n_alloc && !r; t++) {
    int ni = j->alloc[t].node;
    if (!j->alloc[t].exited && ni >= 0 && ni < s->n_nodes && s->nodes[ni]->alive)
      r = send_stop(s, j, t, "lost", j->grace_s, err);
  }
  if (r) return r;
  json_t *extra = json_object();
  json_object_set_new(extra, "reason", json_string(why));
  if ((r = gp__srv_job_event(s, j, "lost", now, extra, err))) return r;
  set_str(&j->stop_reason, "lost");
  return finalize(s, j, NULL, now, err);
}

int gp__srv_node_down(gp_srv_state *s, gp_srv_node *n, const char *why, int64_t now, gp_err *err) {
  int idx = gp__srv_node_index(s, n->name);
  n->alive = false;
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  int lr = gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_NODE_STATE, &(gp_srv_hook_ev){.node = n, .now_s = now},
                             err);
  if (lr) return lr;
  /* Collect first: losing a job edits the active list. */
  int nj = 0;
  gp_srv_job **victims = gp_xcalloc((size_t)s->n_active + 1, sizeof *victims);
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    for (int t = 0; t < j->n_alloc; t++)
      if (j->alloc[t].node == idx && !j->alloc[t].exited) {
        victims[nj++] = j;
        break;
      }
  }
  int r = 0;
  for (int i = 0; i < nj && !r; i++) r = gp__srv_job_lost(s, victims[i], why, now, err);
  free(victims);
  return r;
}

int gp__srv_state_tick(gp_srv_state *s, int64_t now_s, int64_t now_ms, gp_err *err) {
  int r = 0;
  int64_t timeout_ms = (int64_t)s->cfg->node_timeout_s * 1000;
  for (int i = 0; i < s->n_nodes && !r; i++) {
    gp_srv_node *n = s->nodes[i];
    /* A parked long poll is an agent that is listening right now. Polls are capped at half
     * the timeout, so an agent that vanished with its connection open is still caught. */
    if (n->waiter) n->last_seen_ms = now_ms;
    if (n->alive && now_ms - n->last_seen_ms > timeout_ms)
      r = gp__srv_node_down(s, n, "node lost: no heartbeat", now_s, err);
  }
  for (int a = 0; a < s->n_active && !r; a++) {
    gp_srv_job *j = s->active[a];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) continue;
    bool broken = j->n_alloc == 0;
    for (int t = 0; t < j->n_alloc; t++) broken = broken || j->alloc[t].node < 0;
    if (broken) {
      r = gp__srv_job_lost(s, j, "allocation lost", now_s, err);
      a--; /* the active list shrank or kept this slot */
      if (a < -1) a = -1;
      continue;
    }
    if (j->state == GP_JOB_RUNNING && j->time_limit > 0)
      gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_JOB_TICK, &(gp_srv_hook_ev){.job = j, .now_s = now_s}, NULL);
    if (j->state == GP_JOB_RUNNING && j->time_limit > 0 && j->started_at > 0 &&
        now_s - j->started_at >= j->time_limit)
      r = gp__srv_job_stop(s, j, "timeout", now_s, err);
  }
  /* Then each feature's own work of the tick (node reports, steps, heartbeats, idle policy,
   * budgets, services: parts.c registers them in that order). */
  if (!r)
    r = gp__srv_hook_fire(s, &s->hooks, GP_SRV_HOOK_TICK, &(gp_srv_hook_ev){.now_s = now_s, .now_ms = now_ms},
                          err);
  return r;
}
