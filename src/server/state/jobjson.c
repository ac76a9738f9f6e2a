/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs from JSON: validation of a submission (untrusted: every field is checked for type,
 * range and size, unknown fields are refused by name), its admission checks, and reading
 * the stored document back (docs/internals/protocol.md). Writing a job's JSON is
 * jobjson_out.c; what others may see of it, jobredact.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/mig.h"
#include "core/plan.h"
#include "protocol/limits.h"
#include "protocol/model.h"
#include "protocol/order.h"
#include "server/state/jobmetrics.h"
#include "server/state/notify_job.h"
#include "server/state/jobrec.h"
#include "server/state/state.h"
#include "server/state/steps_doc.h"
#include "snapshot/policy_read.h"
#include "util/mem.h"
#include "util/signals.h"

#define MAX_ARGS GP_PROTO_MAX_ARGS
#define MAX_ARG_BYTES 65536
#define MAX_ENV 1024
#define MAX_STR 4096
#define MAX_LIST 64

static int bad(gp_err *err, const char *field, const char *fmt, const char *detail) {
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, fmt, detail ? detail : "");
}

static bool clean_str(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n > max) return false;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if (*c < 0x20 && *c != '\t') return false;
  return true;
}

static int get_str(const json_t *o, const char *key, size_t max, bool allow_empty, char **out,
                   gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v)) return bad(err, key, "must be a string%s", NULL);
  const char *s = json_string_value(v);
  if (!allow_empty && !*s) return bad(err, key, "must not be empty%s", NULL);
  if (!clean_str(s, max)) return bad(err, key, "is too long or contains control characters%s", NULL);
  free(*out);
  *out = gp_xstrdup(s);
  return 0;
}

static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) return 0;
  int64_t x;
  if (json_is_integer(v)) x = json_integer_value(v);
  else if (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
           fabs(json_real_value(v)) < 9e15)
    x = (int64_t)json_real_value(v);
  else
    return bad(err, key, "must be an integer%s", NULL);
  if (x < lo || x > hi)
    return gp_err_set(err, GP_EINVAL, NULL, 0, key, "must be between %lld and %lld",
                      (long long)lo, (long long)hi);
  *out = x;
  return 0;
}

static int get_bool(const json_t *o, const char *key, bool *out, gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_boolean(v)) return bad(err, key, "must be true or false%s", NULL);
  *out = json_is_true(v);
  return 0;
}

static void free_strv(char **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

static int get_strv(const json_t *o, const char *key, int max, size_t max_len, char ***out,
                    int *n_out, gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_array(v)) return bad(err, key, "must be a list of strings%s", NULL);
  size_t n = json_array_size(v);
  if ((int)n > max)
    return gp_err_set(err, GP_EINVAL, NULL, 0, key, "must have at most %d entries", max);
  char **items = gp_xcalloc(n ? n : 1, sizeof *items);
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(v, i);
    if (!json_is_string(e) || !*json_string_value(e) || !clean_str(json_string_value(e), max_len)) {
      free_strv(items, (int)i);
      char f[160];
      snprintf(f, sizeof f, "%s[%zu]", key, i);
      return bad(err, f, "must be a non-empty string without control characters%s", NULL);
    }
    items[i] = gp_xstrdup(json_string_value(e));
  }
  free_strv(*out, *n_out);
  *out = items;
  *n_out = (int)n;
  return 0;
}

/* The job's checkpoint signal: one a job can catch (util/signals.h's job table, the same
 * one `gpool submit --signal` checks), stored by its short name. */
static int get_signal(const json_t *o, char **out, gp_err *err) {
  char *s = NULL;
  int r = get_str(o, "signal", 16, false, &s, err);
  if (r || !s) return r;
  const char *name = gp_signal_job_name(s);
  free(s);
  if (!name) return bad(err, "signal", "must be a signal a job can catch, such as TERM, INT, USR1 or USR2%s", NULL);
  free(*out);
  *out = gp_xstrdup(name);
  return 0;
}

static gp_srv_job *job_blank(void) {
  gp_srv_job *j = gp_xcalloc(1, sizeof *j);
  j->tasks = 1;
  j->allow_spot = false;
  j->exclusive = false;
  j->grace_s = 30;
  j->signal = gp_xstrdup("TERM");
  j->timeline = json_array();
  j->pending_reason = -1;
  j->idle = GP_IDLE_TRACK_INIT;
  j->active_pos = -1;
  j->view_index = -1;
  j->command = json_array();
  j->env = json_object();
  return j;
}

/* Reads the request part of a job (shared by submissions and stored documents). */
static int read_spec(const json_t *o, gp_srv_job *j, gp_err *err) {
  int r;
  int64_t v;
  const json_t *cmd = json_object_get(o, "command");
  if (cmd && !json_is_null(cmd)) {
    if (!json_is_array(cmd) || json_array_size(cmd) == 0 || json_array_size(cmd) > MAX_ARGS)
      return bad(err, "command", "must be a non-empty list of strings (at most 4096)%s", NULL);
    for (size_t i = 0; i < json_array_size(cmd); i++) {
      const json_t *a = json_array_get(cmd, i);
      char f[64];
      snprintf(f, sizeof f, "command[%zu]", i);
      if (json_is_string(a) && json_string_length(a) > MAX_ARG_BYTES) /* a size: 413 */
        return gp_err_set(err, GP_ELIMIT, NULL, 0, f, "a word of the command may take at most 64 KiB");
      if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
        return bad(err, f, "must be a string of at most 64 KiB without NUL bytes%s", NULL);
    }
    json_decref(j->command);
    j->command = json_deep_copy(cmd);
  }
  const json_t *env = json_object_get(o, "env");
  if (env && !json_is_null(env)) {
    if (!json_is_object(env) || json_object_size(env) > MAX_ENV)
      return bad(err, "env", "must be an object of at most 1024 string values%s", NULL);
    const char *k;
    const json_t *ev;
    json_object_foreach((json_t *)env, k, ev) {
      char f[160];
      snprintf(f, sizeof f, "env.%.100s", k);
      if (json_is_string(ev) && json_string_length(ev) > MAX_ARG_BYTES) /* a size: 413 */
        return gp_err_set(err, GP_ELIMIT, NULL, 0, f, "a variable's value may take at most 64 KiB");
      if (!*k || strchr(k, '=') || !json_is_string(ev) ||
          strlen(json_string_value(ev)) != json_string_length(ev))
        return bad(err, f, "must be a string (names without '=')%s", NULL);
    }
    json_decref(j->env);
    j->env = json_deep_copy(env);
  }
  if ((r = get_str(o, "name", 256, true, &j->name, err))) return r;
  if ((r = get_str(o, "queue", GP_READ_MAX_NAME, false, &j->queue, err))) return r;
  if ((r = get_strv(o, "partitions", GP_SRV_MAX_PARTITIONS, GP_READ_MAX_NAME, &j->partitions, &j->n_partitions,
                    err)))
    return r;
  if (j->n_partitions && j->queue)
    return bad(err, "partitions", "names the queues to try in turn: give it or queue, not both%s", NULL);
  if ((r = get_str(o, "workdir", MAX_STR, false, &j->workdir, err))) return r;
  if ((r = get_str(o, "priority", GP_READ_MAX_NAME, false, &j->priority, err))) return r;
  v = j->gpus;
  if ((r = get_int(o, "gpus", 0, GP_MAX_NODE_GPUS, &v, err))) return r;
  j->gpus = (int)v;
  v = j->tasks;
  if ((r = get_int(o, "tasks", 1, GP_SRV_MAX_TASKS, &v, err))) return r;
  j->tasks = (int)v;
  v = j->tasks_per_node;
  if ((r = get_int(o, "tasks_per_node", 0, GP_SRV_MAX_TASKS, &v, err))) return r;
  j->tasks_per_node = (int)v;
  v = j->nodes;
  if ((r = get_int(o, "nodes", 0, GP_SRV_MAX_TASKS, &v, err))) return r;
  j->nodes = (int)v;
  if (j->nodes > j->tasks)
    return bad(err, "nodes", "must be at most the job's task count (each node holds one task at least)%s", NULL);
  if (j->nodes > 0 && j->tasks_per_node > 0 && (int64_t)j->nodes * j->tasks_per_node < j->tasks)
    return bad(err, "nodes", "times tasks_per_node must hold the job's tasks%s", NULL);
  const json_t *frac = json_object_get(o, "gpu_fraction");
  if (frac && !json_is_null(frac)) {
    if (!json_is_number(frac) || json_number_value(frac) < 0 || json_number_value(frac) >= 1)
      return bad(err, "gpu_fraction", "must be a number in [0, 1) (0: not fractional)%s", NULL);
    j->gpu_milli = (int)lround(json_number_value(frac) * 1000.0);
    if (json_number_value(frac) > 0 && j->gpu_milli == 0) j->gpu_milli = 1;
  }
  if ((r = get_int(o, "gpu_mem_mib", 0, INT64_C(1) << 40, &j->gpu_mem_mib, err))) return r;
  if ((r = get_str(o, "mig", 32, false, &j->mig, err))) return r;
  if ((r = get_strv(o, "gpu_types", MAX_LIST, 64, &j->gpu_types, &j->n_gpu_types, err))) return r;
  const json_t *cpus = json_object_get(o, "cpus");
  if (cpus && !json_is_null(cpus)) {
    if (!json_is_number(cpus) || json_number_value(cpus) < 0 || json_number_value(cpus) > 100000)
      return bad(err, "cpus", "must be a number of CPUs between 0 and 100000%s", NULL);
    j->cpu_milli = (int64_t)llround(json_number_value(cpus) * 1000.0);
  }
  if ((r = get_int(o, "mem_mib", 0, INT64_C(1) << 40, &j->mem_mib, err))) return r;
  if ((r = get_int(o, "time_limit", 0, INT64_C(366) * 86400, &j->time_limit, err))) return r;
  if ((r = get_bool(o, "requeue", &j->requeue, err))) return r;
  v = j->grace_s;
  if ((r = get_int(o, "grace_s", 0, 86400, &v, err))) return r;
  j->grace_s = (int)v;
  if ((r = get_signal(o, &j->signal, err))) return r;
  if ((r = gp__srv_notify_job_read(o, j, err))) return r;
  if ((r = get_strv(o, "after", GP_SRV_MAX_DEPS, 24, &j->after, &j->n_after, err))) return r;
  if ((r = get_strv(o, "after_ok", GP_SRV_MAX_DEPS, 24, &j->after_ok, &j->n_after_ok, err))) return r;
  if ((r = get_strv(o, "after_any", GP_SRV_MAX_DEPS, 24, &j->after_any, &j->n_after_any, err))) return r;
  if ((r = get_strv(o, "after_not_ok", GP_SRV_MAX_DEPS, 24, &j->after_not_ok, &j->n_after_not_ok, err)))
    return r;
  if ((r = get_bool(o, "singleton", &j->singleton, err))) return r;
  if ((r = get_bool(o, "allow_spot", &j->allow_spot, err))) return r;
  if ((r = get_bool(o, "exclusive", &j->exclusive, err))) return r;
  const json_t *mv = json_object_get(o, "model");
  if (mv && !json_is_null(mv)) {
    if (!json_is_string(mv) || strlen(json_string_value(mv)) != json_string_length(mv) ||
        !gp_proto_model_name_valid(json_string_value(mv)))
      return bad(err, "model", "must be 1 to 127 characters of A-Z, a-z, 0-9, '.', '_' or '-', starting with a "
                 "letter or digit%s", NULL);
    free(j->model);
    j->model = gp_xstrdup(json_string_value(mv));
  }
  if ((r = gp__srv_job_read_batch(o, j, err))) return r;
  if ((r = gp__srv_job_read_container(o, j, err))) return r;
  const json_t *sel = json_object_get(o, "node_selector");
  if (sel && !json_is_null(sel)) {
    if (!json_is_object(sel) || json_object_size(sel) > MAX_LIST)
      return bad(err, "node_selector", "must be an object of at most 64 label values%s", NULL);
    const char *k;
    const json_t *sv;
    gp_label *labels = gp_xcalloc(json_object_size(sel) + 1, sizeof *labels);
    int n = 0;
    json_object_foreach((json_t *)sel, k, sv) {
      if (!json_is_string(sv) || !clean_str(k, 256) || !clean_str(json_string_value(sv), 256)) {
        for (int i = 0; i < n; i++) {
          free((char *)labels[i].key);
          free((char *)labels[i].value);
        }
        free(labels);
        return bad(err, "node_selector", "values must be strings%s", NULL);
      }
      labels[n].key = gp_xstrdup(k);
      labels[n].value = gp_xstrdup(json_string_value(sv));
      n++;
    }
    j->selector = labels;
    j->n_selector = n;
  }
  return 0;
}

static const char *const request_keys[] = {
    "queue", "partitions", "name", "command", "workdir", "env", "gpus", "tasks", "tasks_per_node", "nodes", "gpu_fraction",
    "gpu_mem_mib", "mig", "gpu_types", "cpus", "mem_mib", "time_limit", "priority",
    "requeue", "grace_s", "signal", "after", "after_ok", "after_any", "after_not_ok", "singleton", "hold", "array", "after_corr",
    "node_selector", "allow_spot", "exclusive", "model", "user", "output", "error", "open_mode", "warn_signal", "warn_before_s",
    "warn_batch", "begin_at", "batch", "mail_type", "mail_user",
    "image", "container", "container_mounts", "container_workdir", "container_env", /* jobimage.c */
    "container_writable", "container_mount_home", NULL};

/* Dependencies name jobs that exist; `after_ok` on a job that already ended otherwise
 * than completed could never be met, nor `after_not_ok` on one that completed. */
static int check_deps(const gp_srv_state *s, char **ids, int n, const char *key, gp_err *err) {
  for (int i = 0; i < n; i++) {
    char f[64];
    snprintf(f, sizeof f, "%s[%d]", key, i);
    gp__srv_array_id_by_number(s, &ids[i]);
    const gp_srv_job *d = gp__srv_job_get(s, ids[i]);
    gp_job_state st = d ? d->state : GP_JOB_PENDING;
    int64_t pos;
    /* An ended job no longer in memory is known by its final state; an element not made
     * a job yet by its array. */
    if (!d && !gp__srv_ended_state(s, gp__srv_job_id_parse(ids[i]), &st) &&
        !gp__srv_array_of_id(s, gp__srv_job_id_parse(ids[i]), &pos))
      return gp_err_set(err, GP_EINVAL, NULL, 0, f, "job %s does not exist", ids[i]);
    if (strcmp(key, "after_ok") == 0 && gp_job_state_is_final(st) && st != GP_JOB_COMPLETED)
      return gp_err_set(err, GP_EINVAL, NULL, 0, f, "job %s ended %s, so this job could never start",
                        ids[i], gp_job_state_name(st));
    if (strcmp(key, "after_not_ok") == 0 && st == GP_JOB_COMPLETED)
      return gp_err_set(err, GP_EINVAL, NULL, 0, f,
                        "job %s completed, so this job (which waits for it to fail) could never start",
                        ids[i]);
  }
  return 0;
}

/* A job asking for more GPUs than its queue's (or a defined parent's) limit would wait
 * forever. */
static int check_limits(const gp_srv_state *s, const gp_srv_job *j, gp_err *err) {
  double asked = gp__srv_job_asked_gpus(j);
  if (asked <= 0) return 0;
  for (size_t len = strlen(j->queue);; ) {
    char *name = gp_xstrndup(j->queue, len);
    const gp_srv_queue *q = gp__srv_queue_get(s, name);
    free(name);
    if (q && q->limit != GP_NO_LIMIT && asked > q->limit + 1e-9)
      return gp_err_set(err, GP_EINVAL, NULL, 0, j->mig ? "mig" : j->gpu_milli > 0 ? "gpu_fraction" : "gpus",
                        "the job asks for %g GPUs in all, above the limit of %g of queue %s, so it "
                        "could never start",
                        asked, q->limit, q->name);
    const char *slash = memrchr(j->queue, '/', len);
    if (!slash) return 0;
    len = (size_t)(slash - j->queue);
  }
}

/* Is `profile` a MIG profile of any GPU model gpool knows? (Whether the fleet has such a
 * GPU is gp__srv_check_feasible's question.) */
static bool mig_profile_known(const char *profile) {
  for (int i = 0; i < gp_mig_model_count(); i++)
    if (gp_mig_profile_find(gp_mig_model_at(i), profile)) return true;
  return false;
}

/* A job's command and environment are what it carries to the agent and what the store and
 * every listing keep: held to max_job_bytes, admins' jobs too. */
static int check_size(const gp_server_config *cfg, const gp_srv_job *j, gp_err *err) {
  size_t cmd = 0, env = 0;
  for (size_t i = 0; i < json_array_size(j->command); i++)
    cmd += json_string_length(json_array_get(j->command, i)) + 1;
  const char *k;
  const json_t *v;
  json_object_foreach(j->env, k, v) env += strlen(k) + json_string_length(v) + 2;
  if (cmd + env <= (size_t)cfg->max_job_bytes) return 0;
  return gp_err_set(err, GP_ELIMIT, NULL, 0, cmd > env ? "command" : "env",
                    "the job's command and environment take %zu bytes; the limit "
                    "(max_job_bytes) is %d",
                    cmd + env, cfg->max_job_bytes);
}

/* `array` ("0-99:2%8") and `after_corr` (element I waits for element I of these; on a job
 * that is no array, afterok). A held array holds all its elements. */
static int read_array(const json_t *body, gp_srv_job *j, bool hold, gp_err *err) {
  const json_t *av = json_object_get(body, "array");
  if (av && !json_is_null(av)) {
    if (!json_is_string(av)) return bad(err, "array", "must be a spec such as \"0-99:2%%8\"%s", NULL);
    int r = gp__srv_array_parse(json_string_value(av), &j->array, err);
    if (r) return r;
    j->array->held_all = hold;
  }
  char **corr = NULL;
  int n = 0;
  int r = get_strv(body, "after_corr", GP_SRV_MAX_DEPS, 24, &corr, &n, err);
  if (r) return r;
  if (j->array) {
    j->array->after_corr = corr;
    j->array->n_after_corr = n;
  } else if (n) {
    j->after_ok = gp_xrealloc(j->after_ok, (size_t)(j->n_after_ok + n + 1) * sizeof *j->after_ok);
    for (int i = 0; i < n; i++) j->after_ok[j->n_after_ok++] = corr[i];
    free(corr);
  } else {
    free(corr);
  }
  if (j->n_after_ok > GP_SRV_MAX_DEPS)
    return bad(err, "after_ok", "at most 64 ids%s", NULL);
  return 0;
}

int gp__srv_job_parse(const gp_server_config *cfg, const json_t *body, const char *user,
                      bool is_admin, gp_srv_job **ret, gp_err *err) {
  if (!json_is_object(body))
    return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "the body must be a JSON object");
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)body, k, v) {
    bool known = false;
    for (int i = 0; request_keys[i] && !known; i++) known = strcmp(k, request_keys[i]) == 0;
    if (!known) {
      char f[128];
      snprintf(f, sizeof f, "%.100s", k);
      return gp_err_set(err, GP_EINVAL, NULL, 0, f, "unknown field");
    }
  }
  gp_srv_job *j = job_blank();
  int r = read_spec(body, j, err);
  if (r) goto fail;
  if (json_array_size(j->command) == 0) {
    r = gp_err_set(err, GP_EINVAL, NULL, 0, "command", "missing: say what the job runs");
    goto fail;
  }
  /* The size first: a command or environment too large is 413 whatever else is wrong.
   * Then what no agent would run is refused now, not after the 201 (the start order's rules). */
  if ((r = check_size(cfg, j, err))) goto fail;
  if ((r = gp_proto_start_check_run(j->command, j->env, j->workdir, err))) goto fail;
  const json_t *uv = json_object_get(body, "user");
  if (uv && !json_is_null(uv)) {
    if (!json_is_string(uv) || !*json_string_value(uv) || !clean_str(json_string_value(uv), 64)) {
      r = bad(err, "user", "must be a user name%s", NULL);
      goto fail;
    }
    if (!is_admin && strcmp(json_string_value(uv), user) != 0) {
      r = gp_err_set(err, GP_EPERM, NULL, 0, "user", "only admins may submit for another user");
      goto fail;
    }
    j->user = gp_xstrdup(json_string_value(uv));
  } else {
    j->user = gp_xstrdup(user);
  }
  bool hold = false;
  if ((r = get_bool(body, "hold", &hold, err))) goto fail;
  /* What a request asks for must be one kind of GPU demand. */
  int kinds = (j->gpus > 0) + (j->gpu_milli > 0) + (j->gpu_mem_mib > 0) + (j->mig != NULL);
  if (kinds > 1) {
    r = gp_err_set(err, GP_EINVAL, NULL, 0, j->mig ? "mig" : "gpu_fraction",
                   "ask for one of gpus, gpu_fraction, gpu_mem_mib or mig, not several");
    goto fail;
  }
  if (j->mig && !mig_profile_known(j->mig)) {
    r = gp_err_set(err, GP_EINVAL, NULL, 0, "mig",
                   "no GPU model offers a MIG profile \"%.32s\" (profiles look like 1g.10gb or 3g.40gb)",
                   j->mig);
    goto fail;
  }
  if (j->priority && !gp_priority_class_find(&cfg->policy, j->priority)) {
    r = gp_err_set(err, GP_EINVAL, NULL, 0, "priority", "no priority class is called \"%s\"",
                   j->priority);
    goto fail;
  }
  j->state = hold ? GP_JOB_HELD : GP_JOB_PENDING;
  if ((r = read_array(body, j, hold, err))) goto fail;
  *ret = j;
  return 0;
fail:
  gp__srv_job_free(j);
  return r;
}

int gp__srv_job_admit(const gp_srv_state *s, gp_srv_job *j, bool is_admin, gp_err *err) {
  if (!j->queue) {
    const char *dq = gp__srv_default_queue(s, j->user);
    if (!dq)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "queue",
                        "missing, and no default queue is configured for user %s", j->user);
    j->queue = gp_xstrdup(dq);
  }
  gp_srv_queue *q = gp__srv_queue_get(s, j->queue);
  if (!q) return gp_err_set(err, GP_EINVAL, NULL, 0, "queue", "no queue is called \"%s\"", j->queue);
  if (!is_admin && !gp__srv_queue_admits(q, j->user))
    return gp_err_set(err, GP_EPERM, NULL, 0, "queue", "queue %s does not admit user %s", q->name,
                      j->user);
  if (gp__srv_queue_is_parent(s, q->name))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "queue",
                      "queue %s is a parent queue; jobs go to the queues under it", q->name);
  if (!is_admin && j->priority && !gp__srv_queue_allows_class(s, q, j->priority))
    return gp_err_set(err, GP_EPERM, NULL, 0, "priority",
                      "queue %s does not let its users ask for priority class %s (see its "
                      "priority_classes)",
                      q->name, j->priority);
  int r;
  if ((r = check_deps(s, j->after, j->n_after, "after", err)) ||
      (r = check_deps(s, j->after_ok, j->n_after_ok, "after_ok", err)) ||
      (r = check_deps(s, j->after_any, j->n_after_any, "after_any", err)) ||
      (r = check_deps(s, j->after_not_ok, j->n_after_not_ok, "after_not_ok", err)) ||
      (r = check_deps(s, j->array ? j->array->after_corr : NULL, j->array ? j->array->n_after_corr : 0,
                      "after_corr", err)) ||
      (r = check_limits(s, j, err)) || (r = gp__srv_notify_job_admit(s, j, err)))
    return r;
  if (!j->time_limit && q->default_time_limit > 0) j->time_limit = q->default_time_limit;
  return 0;
}

/* The sections of a stored job that only some jobs have (jobdoc.c's put_runs, put_array):
 * each read only when present, so that a load record's rest (jobrec.c) goes through here
 * too. */
static void read_runs(const json_t *o, gp_srv_job *j) {
  const json_t *lp = json_object_get(o, "last_placements");
  if (json_is_array(lp)) {
    json_decref(j->last_placements);
    j->last_placements = json_deep_copy(lp);
  }
  const json_t *at = json_object_get(o, "attempts");
  if (json_is_array(at)) {
    json_decref(j->attempts);
    j->attempts = json_deep_copy(at);
  }
  const char *enf = json_string_value(json_object_get(o, "enforcement"));
  if (enf && strlen(enf) < 32) {
    free(j->enforcement);
    j->enforcement = gp_xstrdup(enf);
  }
  const json_t *us = json_object_get(o, "usage");
  if (json_is_object(us) && json_object_size(us) <= 32) {
    json_decref(j->usage);
    j->usage = json_deep_copy(us);
  }
  const json_t *arr = json_object_get(o, "array");
  if (arr && !json_is_null(arr) && !j->array) {
    /* An array part that does not read leaves the job without it, as it always has,
     * rather than refusing the store. */
    gp__srv_array_from_doc(arr, &j->array, NULL);
  }
  gp__srv_steps_from_store(j, json_object_get(o, "steps"));
}

int gp__srv_job_from_doc(const char *doc, gp_srv_job **ret, gp_err *err) {
  json_error_t je;
  json_t *o = json_loads(doc, 0, &je);
  if (!o) return gp_err_set(err, GP_EPARSE, NULL, 0, NULL, "stored job: %s", je.text);
  gp_srv_job *j = job_blank();
  int r = read_spec(o, j, err);
  const char *id = json_string_value(json_object_get(o, "id"));
  const char *st = json_string_value(json_object_get(o, "state"));
  const char *user = json_string_value(json_object_get(o, "user"));
  if (!r && (!id || !st || !user || !j->queue || gp_job_state_parse(st, &j->state)))
    r = gp_err_set(err, GP_EPARSE, NULL, 0, NULL, "stored job lacks id, state, user or queue");
  if (r) {
    json_decref(o);
    gp__srv_job_free(j);
    return r;
  }
  j->id = strtoll(id, NULL, 10);
  snprintf(j->idstr, sizeof j->idstr, "%lld", (long long)j->id);
  j->user = gp_xstrdup(user);
  j->restarts = (int)json_integer_value(json_object_get(o, "restarts"));
  j->submitted_at = json_integer_value(json_object_get(o, "submitted_at"));
  j->started_at = json_integer_value(json_object_get(o, "started_at"));
  j->ended_at = json_integer_value(json_object_get(o, "ended_at"));
  j->last_checkpoint_at = json_integer_value(json_object_get(o, "last_checkpoint_at"));
  const json_t *ec = json_object_get(o, "exit_code");
  if (json_is_integer(ec)) {
    j->has_exit_code = true;
    j->exit_code = (int)json_integer_value(ec);
  }
  json_int_t es = json_integer_value(json_object_get(o, "exit_signal"));
  j->exit_signal = es > 0 && es <= 128 ? (int)es : 0;
  const char *er = json_string_value(json_object_get(o, "end_reason"));
  if (er) j->end_reason = gp_xstrdup(er);
  const char *sr = json_string_value(json_object_get(o, "stop_reason"));
  if (sr) j->stop_reason = gp_xstrdup(sr);
  j->array_job = gp__srv_job_id_parse(json_string_value(json_object_get(o, "array_job_id")));
  j->array_index = json_integer_value(json_object_get(o, "array_index"));
  const char *svc = json_string_value(json_object_get(o, "service"));
  if (svc && strlen(svc) <= 64) {
    j->service = gp_xstrdup(svc);
    j->service_rev = (int)json_integer_value(json_object_get(o, "service_rev"));
  }
  read_runs(o, j);
  json_decref(o);
  *ret = j;
  return 0;
}

/* The record's fields, then its rest through the document's own readers (each of which
 * reads only the sections present). */
int gp__srv_job_from_rec(const char *rec, gp_srv_job **ret, gp_err *err) {
  *ret = NULL;
  gp_srv_job *j = job_blank();
  const char *rest;
  size_t n;
  int r = gp__srv_rec_decode(rec, j, &rest, &n, err);
  if (!r && rest) {
    json_error_t je;
    json_t *o = json_loadb(rest, n, 0, &je);
    if (!json_is_object(o)) r = gp_err_set(err, GP_EPARSE, NULL, 0, "rest", "load record: %s", je.text);
    else if (!(r = read_spec(o, j, err))) read_runs(o, j);
    json_decref(o);
  }
  if (r) {
    gp__srv_job_free(j);
    return r;
  }
  *ret = j;
  return 0;
}
