/* SPDX-License-Identifier: Apache-2.0 */
/* A job's steps as a record (steps.h): freed with the job, their JSON for the API and the
 * store, and read back from a stored job. What the job documents need of the steps, apart
 * from the writers (steps.c: the tasks' ends, the signals, the tick), so that reading and
 * storing a job does not call into the code that changes the state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/order.h"
#include "server/state/state.h"
#include "server/state/steps_doc.h"
#include "util/mem.h"

static void set(char **dst, const char *v) {
  free(*dst);
  *dst = v ? gp_xstrdup(v) : NULL;
}

static gp_srv_steps *steps_of(gp_srv_job *j) {
  if (!j->steps) j->steps = gp_xcalloc(1, sizeof *j->steps);
  return j->steps;
}

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
