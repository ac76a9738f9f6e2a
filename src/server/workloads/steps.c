/* SPDX-License-Identifier: Apache-2.0 */
/* The steps a job keeps (steps.h): their tasks' ends as the agents report them, the step's
 * state and exit code from those, the signals that end a step (srun cancelled, a bad exit
 * with --kill-on-bad-exit or a task killed by a signal, the job's end) and the run's step
 * credential; their JSON for the API and the store is steps_doc.c's. A step never changes
 * the job's own state or exit code: the job's command decides, as Slurm's batch script
 * does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "protocol/order.h"
#include "server/state/state.h"
#include "server/workloads/steps.h"
#include "util/mem.h"

static void set(char **dst, const char *v) {
  free(*dst);
  *dst = v ? gp_xstrdup(v) : NULL;
}

static gp_srv_steps *steps_of(gp_srv_job *j) {
  if (!j->steps) j->steps = gp_xcalloc(1, sizeof *j->steps);
  return j->steps;
}

void gp__srv_steps_new_run(gp_srv_job *j) {
  gp_srv_steps *st = steps_of(j);
  unsigned char raw[32];
  st->key[0] = '\0';
  st->started = 0;
  /* No randomness, no credential: srun then needs a user token. */
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) return;
  size_t len = (size_t)snprintf(st->key, sizeof st->key, "%s", GP_SRV_STEP_KEY_PREFIX);
  for (size_t i = 0; i < sizeof raw && len + 3 <= sizeof st->key; i++)
    len += (size_t)snprintf(st->key + len, sizeof st->key - len, "%02x", raw[i]);
}

gp_srv_step *gp__srv_step_find(gp_srv_job *j, int id) {
  for (int i = 0; j->steps && i < j->steps->n; i++)
    if (j->steps->items[i].id == id) return &j->steps->items[i];
  return NULL;
}

static void step_settle(gp_srv_step *p, int64_t now) {
  if (p->ended) return;
  for (int i = 0; i < p->n_tasks; i++)
    if (!p->tasks[i].done) return;
  int code = 0;
  bool lost = false;
  for (int i = 0; i < p->n_tasks; i++) {
    const gp_srv_step_task *t = &p->tasks[i];
    int c = t->signal ? 128 + t->signal : t->has_exit ? t->exit_code : 1;
    if (!t->has_exit && !t->signal) lost = true;
    if (c > code) code = c;
  }
  p->ended = true;
  p->exit_code = code;
  p->ended_at = now;
  set(&p->state, p->reason && strcmp(p->reason, "cancelled") == 0 ? "cancelled"
                 : code == 0 && !lost                           ? "completed"
                                                                : "failed");
}

int gp__srv_step_stop(gp_srv_state *s, gp_srv_job *j, gp_srv_step *p, const char *reason,
                      gp_err *err) {
  if (p->ended || p->stopping) return 0;
  p->stopping = true;
  if (!p->reason) set(&p->reason, reason);
  /* One order per node that runs an unfinished task of it. */
  for (int i = 0; i < p->n_tasks; i++) {
    const gp_srv_step_task *t = &p->tasks[i];
    bool first = !t->done && t->node;
    for (int k = 0; k < i && first; k++)
      first = !(p->tasks[k].node && !p->tasks[k].done && strcmp(p->tasks[k].node, t->node) == 0);
    gp_srv_node *n = first ? gp__srv_node_get(s, t->node) : NULL;
    if (!n) continue;
    gp_proto_order o = {.kind = GP_PROTO_STEP_STOP};
    snprintf(o.u.step_stop.job, sizeof o.u.step_stop.job, "%s", j->idstr);
    o.u.step_stop.step = p->id;
    snprintf(o.u.step_stop.reason, sizeof o.u.step_stop.reason, "%s", reason);
    int r = gp__srv_order_add(s, n, gp_proto_order_encode(&o), j->id, false, err);
    if (r) return r;
  }
  return 0;
}

static void task_end(gp_srv_step_task *t, bool has_exit, int code, int sig, const char *reason,
                     const char *message) {
  t->done = true;
  t->has_exit = has_exit;
  t->exit_code = code;
  t->signal = sig;
  set(&t->reason, reason);
  set(&t->message, message);
}

int gp__srv_step_task_exited(gp_srv_state *s, gp_srv_job *j, const char *node, int step, int task,
                             bool has_exit, int exit_code, int sig, const char *reason,
                             const char *message, int64_t out_bytes, int64_t err_bytes,
                             int64_t now, gp_err *err) {
  gp_srv_step *p = gp__srv_step_find(j, step);
  if (!p || task < 0 || task >= p->n_tasks) return 0; /* a step no longer kept */
  gp_srv_step_task *t = &p->tasks[task];
  if (t->done || !t->node || strcmp(t->node, node) != 0) return 0; /* not that node's to tell */
  task_end(t, has_exit, exit_code, sig, reason && *reason ? reason : "exited", message);
  t->out_bytes = out_bytes;
  t->err_bytes = err_bytes;
  bool bad = sig || (has_exit && exit_code != 0) || !has_exit;
  int r = 0;
  /* --kill-on-bad-exit ends the others on a failure; a task killed by a signal (or one that
   * never started) ends them always, as Slurm does. */
  if (bad && !p->ended && (p->kill_on_bad_exit || sig || !has_exit))
    r = gp__srv_step_stop(s, j, p, "bad_exit", err);
  step_settle(p, now);
  if (!r) r = gp__srv_persist_job(s, j, err);
  return r;
}

int gp__srv_steps_tick(gp_srv_state *s, int64_t now_ms, gp_err *err) {
  int r = 0;
  for (int a = 0; a < s->n_active && !r; a++) {
    gp_srv_job *j = s->active[a];
    bool stopped = false;
    for (int i = 0; j->steps && i < j->steps->n && !r; i++) {
      gp_srv_step *p = &j->steps->items[i];
      if (p->ended || p->stopping) continue;
      if (!p->polled_ms) p->polled_ms = now_ms;
      if (now_ms - p->polled_ms < GP_SRV_STEP_ORPHAN_MS) continue;
      r = gp__srv_step_stop(s, j, p, "srun_gone", err);
      stopped = true;
    }
    if (stopped && !r) r = gp__srv_persist_job(s, j, err);
  }
  return r;
}

void gp__srv_steps_job_ended(gp_srv_state *s, gp_srv_job *j, const char *reason, int64_t now) {
  (void)s;
  for (int i = 0; j->steps && i < j->steps->n; i++) {
    gp_srv_step *p = &j->steps->items[i];
    if (p->ended) continue;
    if (!p->reason) set(&p->reason, "job_ended");
    for (int k = 0; k < p->n_tasks; k++)
      if (!p->tasks[k].done) task_end(&p->tasks[k], false, 0, 0, "job_ended", reason);
    step_settle(p, now);
  }
  /* The credential dies with the run. */
  if (j->steps) j->steps->key[0] = '\0';
}

void gp__srv_steps_node_registered(gp_srv_state *s, gp_srv_node *n, const json_t *running, int64_t now) {
  const char *node = n->name;
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    bool changed = false, pending = false;
    /* Orders for the job not delivered yet: its step tasks there may still start. */
    for (int o = 0; o < n->n_orders && !pending; o++) pending = n->orders[o].job_id == j->id;
    if (pending) continue;
    for (int i = 0; j->steps && i < j->steps->n; i++) {
      gp_srv_step *p = &j->steps->items[i];
      if (p->ended) continue;
      bool lost = false;
      for (int k = 0; k < p->n_tasks; k++) {
        gp_srv_step_task *t = &p->tasks[k];
        if (t->done || !t->node || strcmp(t->node, node) != 0) continue;
        bool listed = false;
        for (size_t e = 0; e < json_array_size(running) && !listed; e++) {
          const json_t *x = json_array_get(running, e);
          const char *jid = json_string_value(json_object_get(x, "job"));
          listed = jid && strcmp(jid, j->idstr) == 0 &&
                   json_integer_value(json_object_get(x, "step")) == p->id &&
                   json_integer_value(json_object_get(x, "task")) == k;
        }
        if (listed) continue;
        task_end(t, false, 0, 0, "lost", "the node's agent restarted and no longer runs this step task");
        changed = lost = true;
      }
      gp_err err = {0};
      /* A step that lost a task ends, as Slurm's does when a node fails under it. */
      if (lost && gp__srv_step_stop(s, j, p, "lost", &err))
        fprintf(stderr, "gpool server: job %s step %d: %s\n", j->idstr, p->id, err.message);
      step_settle(p, now);
    }
    gp_err err = {0};
    if (changed && gp__srv_persist_job(s, j, &err))
      fprintf(stderr, "gpool server: job %s: %s\n", j->idstr, err.message);
  }
}
