/* SPDX-License-Identifier: Apache-2.0 */
/* The stored JSON document of a job, written straight into a buffer. Every submission and
 * every transition writes one, so this is the hottest serialisation of the server; building
 * a jansson tree first cost a quarter of the state thread's time. The output must mean
 * exactly what gp__srv_job_to_json(..., for_store = true) means (tests/server/jobdoc_test.c
 * compares the two). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/jobrec.h"
#include "server/state/notify.h"
#include "server/state/state.h"
#include "server/state/steps_doc.h"
#include "util/buf.h"

/* Appends `s` as a JSON string. Inputs were validated as UTF-8 by the JSON parser (or come
 * from the config), so only quotes, backslashes and control characters need escaping. */
static void put_str(gp_buf *b, const char *s) {
  if (!s) {
    gp_buf_puts(b, "null");
    return;
  }
  gp_buf_append(b, "\"", 1);
  const char *run = s;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c >= 0x20 && *c != '"' && *c != '\\') continue;
    gp_buf_append(b, run, (size_t)((const char *)c - run));
    switch (*c) {
    case '"': gp_buf_puts(b, "\\\""); break;
    case '\\': gp_buf_puts(b, "\\\\"); break;
    case '\n': gp_buf_puts(b, "\\n"); break;
    case '\t': gp_buf_puts(b, "\\t"); break;
    case '\r': gp_buf_puts(b, "\\r"); break;
    default: gp_buf_printf(b, "\\u%04x", *c); break;
    }
    run = (const char *)c + 1;
  }
  gp_buf_puts(b, run);
  gp_buf_append(b, "\"", 1);
}

static void put_key(gp_buf *b, const char *key) {
  gp_buf_append(b, ",\"", 2);
  gp_buf_puts(b, key);
  gp_buf_append(b, "\":", 2);
}

static void put_int(gp_buf *b, const char *key, long long v) {
  put_key(b, key);
  gp_buf_printf(b, "%lld", v);
}

static void put_int_or_null(gp_buf *b, const char *key, long long v, bool present) {
  put_key(b, key);
  if (present) gp_buf_printf(b, "%lld", v);
  else gp_buf_puts(b, "null");
}

static void put_kstr(gp_buf *b, const char *key, const char *v) {
  put_key(b, key);
  put_str(b, v);
}

static void put_real(gp_buf *b, const char *key, double v) {
  put_key(b, key);
  char num[40];
  snprintf(num, sizeof num, "%.17g", v);
  gp_buf_puts(b, num);
  if (!strpbrk(num, ".eEni")) gp_buf_puts(b, ".0");
}

static void put_strv(gp_buf *b, const char *key, char **v, int n) {
  put_key(b, key);
  gp_buf_append(b, "[", 1);
  for (int i = 0; i < n; i++) {
    if (i) gp_buf_append(b, ",", 1);
    put_str(b, v[i]);
  }
  gp_buf_append(b, "]", 1);
}

/* The sections below are written only when the job has them (most documents stay as
 * they were) and are the ones its load record carries as JSON (gp__srv_job_store_rec). */
static void put_mail(gp_buf *b, const gp_srv_job *j) {
  if (j->mail_set || j->mail_user) { /* only then: most jobs' documents stay as they were */
    char ev[128];
    gp_notify_events_format(j->mail_events, ev, sizeof ev);
    put_kstr(b, "mail_type", j->mail_set ? ev : NULL);
    put_kstr(b, "mail_user", j->mail_user);
  }
}

static void put_container(gp_buf *b, const gp_srv_job *j) {
  if (j->container) { /* only then: bare jobs' documents stay as they were */
    char *ct = json_dumps(j->container, JSON_COMPACT);
    put_key(b, "container");
    gp_buf_puts(b, ct ? ct : "null");
    free(ct);
  }
}

static void put_array(gp_buf *b, const gp_srv_job *j) {
  if (j->array) {
    json_t *a = gp__srv_array_doc(j->array);
    char *t = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    put_key(b, "array");
    gp_buf_puts(b, t ? t : "null");
    free(t);
  }
}

/* What its runs left: where it last ran, its attempts, its use figures, its steps. */
static void put_runs(gp_buf *b, const gp_srv_job *j) {
  if (j->last_placements && gp_job_state_is_final(j->state)) {
    char *pl = json_dumps(j->last_placements, JSON_COMPACT);
    put_key(b, "last_placements");
    gp_buf_puts(b, pl ? pl : "[]");
    free(pl);
  }
  if (j->attempts) {
    char *at = json_dumps(j->attempts, JSON_COMPACT);
    put_key(b, "attempts");
    gp_buf_puts(b, at ? at : "[]");
    free(at);
  }
  if (j->enforcement) put_kstr(b, "enforcement", j->enforcement);
  /* An ended job's last use figures outlive it: `gpool advise` sizes its next runs by them. */
  if (j->usage && gp_job_state_is_final(j->state)) {
    char *u = json_dumps(j->usage, JSON_COMPACT);
    put_key(b, "usage");
    gp_buf_puts(b, u ? u : "null");
    free(u);
  }
  json_t *steps = gp__srv_steps_store_json(j);
  if (steps) { /* with this run's step credential: the store is the server's own */
    char *t = json_dumps(steps, JSON_COMPACT);
    json_decref(steps);
    put_key(b, "steps");
    gp_buf_puts(b, t ? t : "null");
    free(t);
  }
}

char *gp__srv_job_store_rec(const gp_srv_job *j) {
  gp_buf rest;
  gp_buf_init(&rest, 0);
  put_mail(&rest, j);
  put_container(&rest, j);
  put_array(&rest, j);
  put_runs(&rest, j);
  if (rest.len) {
    rest.data[0] = '{'; /* the first piece's leading comma */
    gp_buf_append(&rest, "}", 1);
  }
  char *rec = gp__srv_rec_encode(j, rest.len ? rest.data : NULL, rest.len);
  gp_buf_done(&rest);
  return rec;
}

char *gp__srv_job_store_doc(const gp_srv_job *j) {
  gp_buf b;
  gp_buf_init(&b, 0);
  gp_buf_puts(&b, "{\"id\":");
  put_str(&b, j->idstr);
  put_kstr(&b, "name", j->name ? j->name : "");
  put_kstr(&b, "queue", j->queue);
  put_kstr(&b, "user", j->user);
  put_kstr(&b, "state", gp_job_state_name(j->state));
  put_kstr(&b, "priority", j->priority);
  put_key(&b, "command");
  gp_buf_append(&b, "[", 1);
  for (size_t i = 0; i < json_array_size(j->command); i++) {
    if (i) gp_buf_append(&b, ",", 1);
    put_str(&b, json_string_value(json_array_get(j->command, i)));
  }
  gp_buf_append(&b, "]", 1);
  put_key(&b, "env");
  gp_buf_append(&b, "{", 1);
  const char *k;
  json_t *v;
  bool first = true;
  json_object_foreach(j->env, k, v) {
    if (!first) gp_buf_append(&b, ",", 1);
    first = false;
    put_str(&b, k);
    gp_buf_append(&b, ":", 1);
    put_str(&b, json_string_value(v));
  }
  gp_buf_append(&b, "}", 1);
  put_kstr(&b, "workdir", j->workdir);
  put_int(&b, "gpus", j->gpus);
  put_int(&b, "tasks", j->tasks);
  if (j->tasks_per_node > 0) put_int(&b, "tasks_per_node", j->tasks_per_node);
  else put_kstr(&b, "tasks_per_node", NULL); /* null: no bound, as jobjson_out.c writes it */
  if (j->nodes > 0) put_int(&b, "nodes", j->nodes);
  else put_kstr(&b, "nodes", NULL);
  if (j->gpu_milli) put_real(&b, "gpu_fraction", j->gpu_milli / 1000.0);
  else put_int(&b, "gpu_fraction", 0);
  put_int(&b, "gpu_mem_mib", (long long)j->gpu_mem_mib);
  put_kstr(&b, "mig", j->mig);
  put_strv(&b, "gpu_types", j->gpu_types, j->n_gpu_types);
  if (j->cpu_milli % 1000) put_real(&b, "cpus", (double)j->cpu_milli / 1000.0);
  else put_int(&b, "cpus", (long long)(j->cpu_milli / 1000));
  put_int(&b, "mem_mib", (long long)j->mem_mib);
  put_int(&b, "time_limit", (long long)j->time_limit);
  put_key(&b, "requeue");
  gp_buf_puts(&b, j->requeue ? "true" : "false");
  put_int(&b, "grace_s", j->grace_s);
  put_kstr(&b, "signal", j->signal);
  put_mail(&b, j);
  put_key(&b, "allow_spot");
  gp_buf_puts(&b, j->allow_spot ? "true" : "false");
  put_key(&b, "exclusive");
  gp_buf_puts(&b, j->exclusive ? "true" : "false");
  if (j->model) put_kstr(&b, "model", j->model); /* only then: other documents stay as they were */
  put_kstr(&b, "output", j->output); /* jobopts.c's fields */
  put_kstr(&b, "error", j->error);
  put_kstr(&b, "open_mode", j->output_append ? "append" : "truncate");
  put_kstr(&b, "warn_signal", j->warn_signal);
  put_int(&b, "warn_before_s", j->warn_before_s);
  put_key(&b, "warn_batch");
  gp_buf_puts(&b, j->warn_batch ? "true" : "false");
  put_int_or_null(&b, "begin_at", (long long)j->begin_at, j->begin_at != 0);
  put_key(&b, "batch");
  gp_buf_puts(&b, j->batch ? "true" : "false");
  put_container(&b, j);
  put_key(&b, "node_selector");
  gp_buf_append(&b, "{", 1);
  for (int i = 0; i < j->n_selector; i++) {
    if (i) gp_buf_append(&b, ",", 1);
    put_str(&b, j->selector[i].key);
    gp_buf_append(&b, ":", 1);
    put_str(&b, j->selector[i].value);
  }
  gp_buf_append(&b, "}", 1);
  put_int(&b, "restarts", j->restarts);
  put_strv(&b, "after", j->after, j->n_after);
  put_strv(&b, "after_ok", j->after_ok, j->n_after_ok);
  put_strv(&b, "after_any", j->after_any, j->n_after_any);
  put_strv(&b, "after_not_ok", j->after_not_ok, j->n_after_not_ok);
  put_key(&b, "singleton");
  gp_buf_puts(&b, j->singleton ? "true" : "false");
  put_array(&b, j);
  if (j->array_job) {
    char aj[24];
    snprintf(aj, sizeof aj, "%lld", (long long)j->array_job);
    put_kstr(&b, "array_job_id", aj);
    put_int(&b, "array_index", (long long)j->array_index);
  }
  if (j->service) {
    put_kstr(&b, "service", j->service);
    put_int(&b, "service_rev", j->service_rev);
  }
  put_int_or_null(&b, "exit_code", j->exit_code, j->has_exit_code);
  put_int_or_null(&b, "exit_signal", j->exit_signal, j->exit_signal != 0);
  put_kstr(&b, "end_reason", j->end_reason);
  put_kstr(&b, "stop_reason", j->stop_reason);
  put_int(&b, "submitted_at", (long long)j->submitted_at);
  put_int_or_null(&b, "started_at", (long long)j->started_at, j->started_at != 0);
  put_int_or_null(&b, "ended_at", (long long)j->ended_at, j->ended_at != 0);
  put_int_or_null(&b, "last_checkpoint_at", (long long)j->last_checkpoint_at, j->last_checkpoint_at != 0);
  put_runs(&b, j);
  gp_buf_append(&b, "}", 1);
  char *out = gp_buf_steal(&b);
  gp_buf_done(&b);
  return out;
}
