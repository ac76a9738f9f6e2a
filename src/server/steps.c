/* SPDX-License-Identifier: Apache-2.0 */
/* The steps a job keeps (steps.h): their tasks' ends as the agents report them, the step's
 * state and exit code from those, the signals that end a step (srun cancelled, a bad exit
 * with --kill-on-bad-exit or a task killed by a signal, the job's end), the run's step
 * credential, and their JSON for the API and the store. A step never changes the job's own
 * state or exit code: the job's command decides, as Slurm's batch script does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "protocol/order.h"
#include "server/state.h"
#include "server/steps.h"
#include "util/mem.h"

static void task_done(gp_srv_step_task *t) {
  free(t->node);
  free(t->reason);
  free(t->message);
}

static void step_done(gp_srv_step *p) {
  json_decref(p->command);
  for (int i = 0; i < p->n_tasks; i++) task_done(&p->tasks[i]);
  free(p->tasks);
  free(p->state);
  free(p->reason);
}

void gp__srv_steps_free(gp_srv_steps *st) {
  if (!st) return;
  for (int i = 0; i < st->n; i++) step_done(&st->items[i]);
  free(st->items);
  free(st);
}

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

/* ---- JSON ---- */

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

json_t *gp__srv_step_json(const gp_srv_step *p) {
  json_t *o = json_object();
  json_object_set_new(o, "id", json_integer(p->id));
  json_object_set_new(o, "command", json_deep_copy(p->command));
  json_object_set_new(o, "state", json_string(p->state ? p->state : "running"));
  json_object_set_new(o, "exit_code", p->ended ? json_integer(p->exit_code) : json_null());
  json_object_set_new(o, "reason", str_or_null(p->reason));
  json_object_set_new(o, "kill_on_bad_exit", json_boolean(p->kill_on_bad_exit));
  json_object_set_new(o, "exclusive", json_boolean(p->exclusive));
  json_object_set_new(o, "master_port", json_integer(p->master_port));
  json_object_set_new(o, "created_at", json_integer(p->created_at));
  json_object_set_new(o, "ended_at", p->ended_at ? json_integer(p->ended_at) : json_null());
  json_t *tasks = json_array(), *nodes = json_array();
  for (int i = 0; i < p->n_tasks; i++) {
    const gp_srv_step_task *t = &p->tasks[i];
    json_t *x = json_object();
    json_object_set_new(x, "task", json_integer(i));
    json_object_set_new(x, "alloc_task", json_integer(t->alloc_task));
    json_object_set_new(x, "node", json_string(t->node ? t->node : ""));
    json_object_set_new(x, "state", json_string(t->done ? "ended" : "running"));
    json_object_set_new(x, "exit_code", t->has_exit ? json_integer(t->exit_code) : json_null());
    json_object_set_new(x, "signal", t->signal ? json_integer(t->signal) : json_null());
    json_object_set_new(x, "reason", str_or_null(t->reason));
    json_object_set_new(x, "message", str_or_null(t->message));
    json_object_set_new(x, "out_bytes", json_integer(t->out_bytes));
    json_object_set_new(x, "err_bytes", json_integer(t->err_bytes));
    json_array_append_new(tasks, x);
    bool seen = false;
    for (size_t k = 0; k < json_array_size(nodes) && !seen; k++)
      seen = t->node && strcmp(json_string_value(json_array_get(nodes, k)), t->node) == 0;
    if (!seen && t->node) json_array_append_new(nodes, json_string(t->node));
  }
  json_object_set_new(o, "ntasks", json_integer(p->n_tasks));
  json_object_set_new(o, "nodes", nodes);
  json_object_set_new(o, "tasks", tasks);
  return o;
}

json_t *gp__srv_steps_json(const gp_srv_job *j) {
  if (!j->steps || j->steps->n == 0) return NULL;
  json_t *a = json_array();
  for (int i = 0; i < j->steps->n; i++) json_array_append_new(a, gp__srv_step_json(&j->steps->items[i]));
  return a;
}

json_t *gp__srv_steps_store_json(const gp_srv_job *j) {
  if (!j->steps) return NULL;
  json_t *o = json_object();
  json_object_set_new(o, "key", json_string(j->steps->key));
  json_object_set_new(o, "next_id", json_integer(j->steps->next_id));
  json_object_set_new(o, "started", json_integer(j->steps->started));
  json_t *items = gp__srv_steps_json(j);
  json_object_set_new(o, "items", items ? items : json_array());
  return o;
}

static const char *opt_str(const json_t *o, const char *key, size_t max) {
  const char *v = json_string_value(json_object_get(o, key));
  return v && strlen(v) <= max ? v : NULL;
}

void gp__srv_steps_from_store(gp_srv_job *j, const json_t *doc) {
  if (!json_is_object(doc)) return;
  gp_srv_steps *st = steps_of(j);
  const char *key = opt_str(doc, "key", sizeof st->key - 1);
  snprintf(st->key, sizeof st->key, "%s", key ? key : "");
  json_int_t next = json_integer_value(json_object_get(doc, "next_id"));
  st->next_id = next > 0 && next < GP_PROTO_MAX_STEPS ? (int)next : 0;
  json_int_t started = json_integer_value(json_object_get(doc, "started"));
  st->started = started > 0 && started <= GP_SRV_STEPS_MAX ? (int)started : 0;
  const json_t *items = json_object_get(doc, "items");
  size_t n = json_array_size(items);
  if (n > GP_SRV_STEPS_KEPT) n = GP_SRV_STEPS_KEPT;
  st->items = gp_xcalloc(n + 1, sizeof *st->items);
  for (size_t i = 0; i < n; i++) {
    const json_t *x = json_array_get(items, i), *tasks = json_object_get(x, "tasks");
    const json_t *cmd = json_object_get(x, "command");
    if (!json_is_array(cmd) || !json_is_array(tasks) || json_array_size(tasks) > GP_PROTO_MAX_TASKS) continue;
    gp_srv_step *p = &st->items[st->n++];
    p->id = (int)json_integer_value(json_object_get(x, "id"));
    p->command = json_deep_copy(cmd);
    p->state = gp_xstrdup(opt_str(x, "state", 32) ? opt_str(x, "state", 32) : "running");
    p->ended = strcmp(p->state, "running") != 0;
    set(&p->reason, opt_str(x, "reason", 512));
    p->exit_code = (int)json_integer_value(json_object_get(x, "exit_code"));
    p->kill_on_bad_exit = json_is_true(json_object_get(x, "kill_on_bad_exit"));
    p->exclusive = json_is_true(json_object_get(x, "exclusive"));
    p->master_port = (int)json_integer_value(json_object_get(x, "master_port"));
    p->created_at = json_integer_value(json_object_get(x, "created_at"));
    p->ended_at = json_integer_value(json_object_get(x, "ended_at"));
    p->n_tasks = (int)json_array_size(tasks);
    p->tasks = gp_xcalloc((size_t)p->n_tasks + 1, sizeof *p->tasks);
    for (int k = 0; k < p->n_tasks; k++) {
      const json_t *y = json_array_get(tasks, (size_t)k);
      gp_srv_step_task *t = &p->tasks[k];
      t->alloc_task = (int)json_integer_value(json_object_get(y, "alloc_task"));
      set(&t->node, opt_str(y, "node", GP_PROTO_NODE_MAX));
      const char *ts = opt_str(y, "state", 16);
      t->done = ts && strcmp(ts, "ended") == 0;
      const json_t *ec = json_object_get(y, "exit_code");
      t->has_exit = json_is_integer(ec);
      t->exit_code = (int)json_integer_value(ec);
      t->signal = (int)json_integer_value(json_object_get(y, "signal"));
      set(&t->reason, opt_str(y, "reason", 64));
      set(&t->message, opt_str(y, "message", 512));
      t->out_bytes = json_integer_value(json_object_get(y, "out_bytes"));
      t->err_bytes = json_integer_value(json_object_get(y, "err_bytes"));
    }
  }
}

/* ---- ends ---- */

/* Every task is done: the step's exit code (the highest; 128 + N for signal N, as a shell
 * reports it) and state. */
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
