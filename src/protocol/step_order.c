/* SPDX-License-Identifier: Apache-2.0 */
/* The step and step_stop orders (order.h): one task of a job step that srun asked for,
 * and the signal that ends a step's tasks on a node. The server encodes them, the agent
 * decodes them with every field bounded, as for a start order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/order.h"
#include "protocol/proto_int.h"
#include "util/mem.h"

#define CTX "step"

static json_t *strv_json(char **v, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, json_string(v[i]));
  return a;
}

json_t *gp__proto_step_encode(const gp_proto_order *o) {
  const gp_proto_step *s = &o->u.step;
  json_t *st = json_object();
  json_object_set_new(st, "job", json_string(s->job));
  json_object_set_new(st, "step", json_integer(s->step));
  json_object_set_new(st, "task", json_integer(s->task));
  json_object_set_new(st, "tasks", json_integer(s->tasks));
  json_object_set_new(st, "alloc_task", json_integer(s->alloc_task));
  json_object_set_new(st, "hosts", strv_json(s->hosts, s->n_hosts));
  json_object_set_new(st, "addrs", strv_json(s->addrs, s->n_addrs));
  json_object_set_new(st, "master_port", json_integer(s->master_port));
  json_object_set_new(st, "command", strv_json(s->argv, s->n_argv));
  json_t *env = json_object();
  for (int i = 0; i < s->n_env; i++) json_object_set_new(env, s->env_keys[i], json_string(s->env_values[i]));
  json_object_set_new(st, "env", env);
  json_object_set_new(st, "own_gpus", json_boolean(s->own_gpus));
  json_t *g = json_array();
  for (int i = 0; i < s->n_gpus; i++) json_array_append_new(g, json_integer(s->gpus[i]));
  json_object_set_new(st, "gpus", g);
  json_t *d = json_object();
  json_object_set_new(d, "step", st);
  return d;
}

/* A list of exactly `n` node names or addresses (no spaces or control characters). */
static int names(const json_t *st, const char *key, int n, char ***ret, int *ret_n, gp_err *err) {
  const json_t *a = json_object_get(st, key);
  if (!json_is_array(a) || json_array_size(a) != (size_t)n)
    return gp__proto_bad(err, CTX, key, "%s must list one entry per step task (%d)", key, n);
  *ret = gp_xcalloc((size_t)n + 1, sizeof **ret);
  for (int i = 0; i < n; i++) {
    const json_t *h = json_array_get(a, (size_t)i);
    const char *v = json_string_value(h);
    bool ok = v && *v && json_string_length(h) < GP_PROTO_NODE_MAX && strlen(v) == json_string_length(h);
    for (const char *p = v; ok && *p; p++) ok = (unsigned char)*p > ' ' && *p != 0x7f;
    if (!ok) return gp__proto_bad(err, CTX, key, "%s[%d] is not a node name or address", key, i);
    (*ret)[i] = gp_xstrdup(v);
    (*ret_n)++;
  }
  return 0;
}

int gp__proto_step_decode(const json_t *d, gp_proto_order *o, gp_err *err) {
  gp_proto_step *s = &o->u.step;
  const json_t *st = json_object_get(d, "step");
  if (!json_is_object(st)) return gp__proto_bad(err, NULL, "step", "a step order needs a step object");
  const char *job = json_string_value(json_object_get(st, "job"));
  if (!gp_proto_job_id_valid(job)) return gp__proto_bad(err, CTX, "job", "not a valid job id");
  snprintf(s->job, sizeof s->job, "%s", job);
  int64_t v;
  int r;
  if ((r = gp__proto_int(st, CTX, "step", 0, GP_PROTO_MAX_STEPS - 1, true, 0, &v, err))) return r;
  s->step = (int)v;
  if ((r = gp__proto_int(st, CTX, "tasks", 1, GP_PROTO_MAX_TASKS, true, 0, &v, err))) return r;
  s->tasks = (int)v;
  if ((r = gp__proto_int(st, CTX, "task", 0, s->tasks - 1, true, 0, &v, err))) return r;
  s->task = (int)v;
  if ((r = gp__proto_int(st, CTX, "alloc_task", 0, GP_PROTO_MAX_TASKS - 1, true, 0, &v, err))) return r;
  s->alloc_task = (int)v;
  if ((r = gp__proto_int(st, CTX, "master_port", 1, 65535, true, 0, &v, err))) return r;
  s->master_port = (int)v;
  if ((r = names(st, "hosts", s->tasks, &s->hosts, &s->n_hosts, err))) return r;
  if ((r = names(st, "addrs", s->tasks, &s->addrs, &s->n_addrs, err))) return r;
  const json_t *cmd = json_object_get(st, "command"), *env = json_object_get(st, "env");
  if ((r = gp_proto_start_check_run(cmd, env, NULL, err))) {
    size_t l = err ? strlen(err->field) : 0;
    if (err && l + 6 < sizeof err->field) { /* "command" -> "step.command" */
      memmove(err->field + 5, err->field, l + 1);
      memcpy(err->field, "step.", 5);
    }
    return r;
  }
  if (json_object_size(env) > GP_PROTO_MAX_STEP_ENV)
    return gp__proto_bad(err, CTX, "env", "a step passes at most %d variables", GP_PROTO_MAX_STEP_ENV);
  size_t n = json_array_size(cmd);
  s->argv = gp_xcalloc(n + 1, sizeof *s->argv);
  for (size_t i = 0; i < n; i++) s->argv[i] = gp_xstrdup(json_string_value(json_array_get(cmd, i)));
  s->n_argv = (int)n;
  n = json_object_size(env);
  s->env_keys = gp_xcalloc(n + 1, sizeof *s->env_keys);
  s->env_values = gp_xcalloc(n + 1, sizeof *s->env_values);
  const char *k;
  const json_t *ev;
  json_object_foreach((json_t *)env, k, ev) {
    s->env_keys[s->n_env] = gp_xstrdup(k);
    s->env_values[s->n_env++] = gp_xstrdup(json_string_value(ev));
  }
  s->own_gpus = json_is_true(json_object_get(st, "own_gpus"));
  const json_t *g = json_object_get(st, "gpus");
  if (g && !json_is_null(g) && (!json_is_array(g) || json_array_size(g) > GP_PROTO_MAX_GPUS))
    return gp__proto_bad(err, CTX, "gpus", "gpus must be a list of at most %d GPU indexes", GP_PROTO_MAX_GPUS);
  for (size_t i = 0; i < json_array_size(g); i++) {
    const json_t *x = json_array_get(g, i);
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= GP_PROTO_MAX_GPUS)
      return gp__proto_bad(err, CTX, "gpus", "gpus[%zu] is not a GPU index", i);
    s->gpus[s->n_gpus++] = (int)json_integer_value(x);
  }
  return 0;
}

static void strv_free(char **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

void gp__proto_step_done(gp_proto_order *o) {
  gp_proto_step *s = &o->u.step;
  strv_free(s->hosts, s->n_hosts);
  strv_free(s->addrs, s->n_addrs);
  strv_free(s->argv, s->n_argv);
  strv_free(s->env_keys, s->n_env);
  strv_free(s->env_values, s->n_env);
}

json_t *gp__proto_step_stop_encode(const gp_proto_order *o) {
  const gp_proto_step_stop *s = &o->u.step_stop;
  json_t *d = json_object();
  json_object_set_new(d, "job", json_string(s->job));
  json_object_set_new(d, "step", json_integer(s->step));
  json_object_set_new(d, "signal", json_string(s->signal));
  json_object_set_new(d, "reason", json_string(s->reason));
  return d;
}

int gp__proto_step_stop_decode(const json_t *d, gp_proto_order *o, gp_err *err) {
  gp_proto_step_stop *s = &o->u.step_stop;
  const char *job = json_string_value(json_object_get(d, "job"));
  if (!gp_proto_job_id_valid(job)) return gp__proto_bad(err, NULL, "job", "not a valid job id");
  snprintf(s->job, sizeof s->job, "%s", job);
  int64_t v;
  int r = gp__proto_int(d, NULL, "step", 0, GP_PROTO_MAX_STEPS - 1, true, 0, &v, err);
  if (r) return r;
  s->step = (int)v;
  if ((r = gp__proto_str_into(d, NULL, "signal", s->signal, sizeof s->signal, false, err))) return r;
  return gp__proto_str_into(d, NULL, "reason", s->reason, sizeof s->reason, false, err);
}
