/* SPDX-License-Identifier: Apache-2.0 */
/* The start order's job (order.h): exactly the fields an agent uses to run one task, read
 * with their bounds. The messages of the checks a user's own job can fail (a relative
 * workdir, a command or environment too large, a variable name a shell cannot take) end up
 * in the job's end reason, so they are sentences about the job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/service.h"
#include "protocol/registry.h"
#include "protocol/order.h"
#include "protocol/outpath.h"
#include "protocol/proto_int.h"
#include "util/mem.h"

#define CTX "job"

static char *dup_or_null(const char *s) { return s ? gp_xstrdup(s) : NULL; }

/* ---- placement ---- */

static json_t *placement_encode(const gp_proto_placement *p) {
  json_t *o = json_object(), *ids = json_array(), *uuids = json_array();
  json_object_set_new(o, "node", json_string(p->node));
  for (int g = 0; g < p->n_gpus; g++) {
    json_array_append_new(ids, json_integer(p->gpu_ids[g]));
    json_array_append_new(uuids, p->gpu_uuids[g][0] ? json_string(p->gpu_uuids[g]) : json_null());
  }
  json_object_set_new(o, "gpu_ids", ids);
  json_object_set_new(o, "gpu_uuids", uuids);
  json_object_set_new(o, "gpu_milli", json_integer(p->gpu_milli));
  json_object_set_new(o, "gpu_mem_mib", json_integer(p->gpu_mem_mib));
  gp__proto_set_str(o, "mig_uuid", p->mig_uuid[0] ? p->mig_uuid : NULL);
  return o;
}

static int placement_decode(const json_t *p, const char *ctx, gp_proto_placement *ret,
                            gp_err *err) {
  memset(ret, 0, sizeof *ret);
  if (!json_is_object(p)) return gp__proto_bad(err, NULL, ctx, "a placement is an object");
  int r = gp__proto_str_into(p, ctx, "node", ret->node, sizeof ret->node, false, err);
  if (r) return r;
  const json_t *ids = json_object_get(p, "gpu_ids"), *uuids = json_object_get(p, "gpu_uuids");
  if (ids && !json_is_null(ids) && (!json_is_array(ids) || json_array_size(ids) > GP_PROTO_MAX_GPUS))
    return gp__proto_bad(err, ctx, "gpu_ids", "gpu_ids must be a list of at most %d GPUs",
                         GP_PROTO_MAX_GPUS);
  if (uuids && !json_is_null(uuids) && !json_is_array(uuids))
    return gp__proto_bad(err, ctx, "gpu_uuids", "gpu_uuids must be a list");
  for (size_t i = 0; i < json_array_size(ids); i++) {
    const json_t *g = json_array_get(ids, i), *u = json_array_get(uuids, i);
    char f[32];
    snprintf(f, sizeof f, "gpu_ids[%zu]", i);
    if (!json_is_integer(g) || json_integer_value(g) < 0 ||
        json_integer_value(g) >= GP_PROTO_MAX_GPUS)
      return gp__proto_bad(err, ctx, f, "a GPU index is an integer from 0 to %d",
                           GP_PROTO_MAX_GPUS - 1);
    int idx = (int)json_integer_value(g);
    for (int k = 0; k < ret->n_gpus; k++)
      if (ret->gpu_ids[k] == idx) return gp__proto_bad(err, ctx, f, "placement names GPU %d twice", idx);
    if (u && !json_is_null(u)) {
      snprintf(f, sizeof f, "gpu_uuids[%zu]", i);
      if (!json_is_string(u) || json_string_length(u) >= GP_PROTO_UUID_MAX)
        return gp__proto_bad(err, ctx, f, "a GPU UUID is a string of at most %d bytes",
                             GP_PROTO_UUID_MAX - 1);
      snprintf(ret->gpu_uuids[ret->n_gpus], GP_PROTO_UUID_MAX, "%s", json_string_value(u));
    }
    ret->gpu_ids[ret->n_gpus++] = idx;
  }
  if (!r) r = gp__proto_int(p, ctx, "gpu_milli", 0, 1000, false, 0, &ret->gpu_milli, err);
  if (!r) r = gp__proto_int(p, ctx, "gpu_mem_mib", 0, INT64_MAX / 2, false, 0, &ret->gpu_mem_mib, err);
  if (!r) r = gp__proto_str_into(p, ctx, "mig_uuid", ret->mig_uuid, sizeof ret->mig_uuid, false, err);
  return r;
}

int gp_proto_placement_decode(const json_t *p, gp_proto_placement *ret, gp_err *err) {
  gp_proto_placement tmp;
  int r = placement_decode(p, "placement", &tmp, err);
  if (!r) *ret = tmp;
  return r;
}

/* ---- encode ---- */

json_t *gp_proto_start_encode(const gp_proto_start *s) {
  json_t *o = json_object();
  json_object_set_new(o, "id", json_string(s->id));
  json_object_set_new(o, "name", json_string(s->name ? s->name : ""));
  gp__proto_set_str(o, "queue", s->queue);
  gp__proto_set_str(o, "user", s->user);
  json_t *cmd = json_array(), *env = json_object();
  for (int i = 0; i < s->n_argv; i++) json_array_append_new(cmd, json_string(s->argv[i]));
  for (int i = 0; i < s->n_env; i++)
    json_object_set_new(env, s->env_keys[i], json_string(s->env_values[i]));
  json_object_set_new(o, "command", cmd);
  json_object_set_new(o, "env", env);
  gp__proto_set_str(o, "workdir", s->workdir);
  json_object_set_new(o, "tasks", json_integer(s->tasks));
  json_object_set_new(o, "gpu_fraction",
                      s->gpu_milli ? json_real((double)s->gpu_milli / 1000.0) : json_integer(0));
  json_object_set_new(o, "gpu_mem_mib", json_integer(s->gpu_mem_mib));
  json_object_set_new(o, "cpus", s->cpu_milli % 1000 ? json_real((double)s->cpu_milli / 1000.0)
                                                    : json_integer(s->cpu_milli / 1000));
  json_object_set_new(o, "mem_mib", json_integer(s->mem_mib));
  if (s->grace_s >= 0) json_object_set_new(o, "grace_s", json_integer(s->grace_s));
  json_object_set_new(o, "signal", json_string(s->signal));
  json_t *pl = json_array(), *hosts = json_array();
  if (s->has_placement) json_array_append_new(pl, placement_encode(&s->placement));
  for (int i = 0; i < s->n_hosts; i++) json_array_append_new(hosts, json_string(s->hosts[i]));
  json_object_set_new(o, "placements", pl);
  json_object_set_new(o, "hosts", hosts);
  if (s->n_addrs > 0) {
    json_t *addrs = json_array();
    for (int i = 0; i < s->n_addrs; i++) json_array_append_new(addrs, json_string(s->addrs[i]));
    json_object_set_new(o, "addrs", addrs);
  }
  if (s->master_port > 0) json_object_set_new(o, "master_port", json_integer(s->master_port));
  json_object_set_new(o, "task_index", json_integer(s->task_index));
  if (s->output) json_object_set_new(o, "output", json_string(s->output));
  if (s->error) json_object_set_new(o, "error", json_string(s->error));
  if (s->output_append) json_object_set_new(o, "open_mode", json_string("append"));
  if (s->time_limit > 0) json_object_set_new(o, "time_limit", json_integer(s->time_limit));
  if (s->warn_signal[0]) {
    json_object_set_new(o, "warn_signal", json_string(s->warn_signal));
    json_object_set_new(o, "warn_before_s", json_integer(s->warn_before_s));
    json_object_set_new(o, "warn_batch", json_boolean(s->warn_batch));
  }
  if (s->restarts > 0) json_object_set_new(o, "restarts", json_integer(s->restarts));
  if (s->batch) {
    json_object_set_new(o, "batch", json_true());
    if (s->n_node_gpus > 0) {
      json_t *g = json_array();
      for (int i = 0; i < s->n_node_gpus && i < GP_PROTO_MAX_GPUS; i++)
        json_array_append_new(g, json_integer(s->node_gpus[i]));
      json_object_set_new(o, "node_gpus", g);
    }
  }
  if (s->container) json_object_set_new(o, "container", gp_proto_container_encode(s->container));
  if (s->job_key[0]) json_object_set_new(o, "job_key", json_string(s->job_key));
  if (s->service) json_object_set_new(o, "service", gp_proto_service_encode(s->service));
  if (s->registry_auth) {
    json_object_set_new(o, "registry_auth", json_string(s->registry_auth));
    json_object_set_new(o, "registry_auth_scope", json_string(s->registry_auth_pool ? "pool" : "user"));
  }
  return o;
}

/* ---- decode ---- */

static bool env_name_valid(const char *k) {
  if (!k || !*k || strlen(k) > 256 || (*k >= '0' && *k <= '9')) return false;
  for (const char *p = k; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          *p == '_'))
      return false;
  return true;
}

/* The command as an agent will run it: 1..GP_PROTO_MAX_ARGS strings, the first not empty,
 * GP_PROTO_MAX_ARGS_BYTES in all. ctx names the field's parent ("job", or NULL). */
static int check_command(const json_t *cmd, const char *ctx, gp_err *err) {
  size_t n = json_array_size(cmd), bytes = 0;
  if (!json_is_array(cmd) || n == 0 || n > GP_PROTO_MAX_ARGS)
    return gp__proto_bad(err, ctx, "command", "the command must be a list of 1 to %d strings",
                         GP_PROTO_MAX_ARGS);
  for (size_t i = 0; i < n; i++) {
    const char *a = json_string_value(json_array_get(cmd, i));
    if (!a || (i == 0 && !*a))
      return gp__proto_bad(err, ctx, "command", "command[%zu] is not a string", i);
    bytes += strlen(a) + 1;
  }
  if (bytes > GP_PROTO_MAX_ARGS_BYTES)
    return gp__proto_bad(err, ctx, "command", "the command is longer than %d bytes",
                         GP_PROTO_MAX_ARGS_BYTES);
  return 0;
}

/* The environment as an agent will set it: at most GP_PROTO_MAX_ENV variables with valid
 * names and string values, GP_PROTO_MAX_ENV_BYTES in all; NULL or null is none. */
static int check_env(const json_t *env, const char *ctx, gp_err *err) {
  if (!env || json_is_null(env)) return 0;
  if (!json_is_object(env) || json_object_size(env) > GP_PROTO_MAX_ENV)
    return gp__proto_bad(err, ctx, "env", "env must be a map of at most %d variables",
                         GP_PROTO_MAX_ENV);
  const char *k;
  const json_t *v;
  size_t bytes = 0;
  json_object_foreach((json_t *)env, k, v) {
    if (!env_name_valid(k) || !json_is_string(v))
      return gp__proto_bad(err, ctx, "env",
                           "env: '%.100s' is not a valid variable name with a string value", k);
    bytes += strlen(k) + strlen(json_string_value(v)) + 2;
  }
  if (bytes > GP_PROTO_MAX_ENV_BYTES)
    return gp__proto_bad(err, ctx, "env", "env is larger than %d bytes", GP_PROTO_MAX_ENV_BYTES);
  return 0;
}

static int check_workdir(const char *workdir, const char *ctx, gp_err *err) {
  if (workdir && *workdir && workdir[0] != '/')
    return gp__proto_bad(err, ctx, "workdir", "workdir '%.200s' is not an absolute path", workdir);
  return 0;
}

int gp_proto_start_check_run(const json_t *command, const json_t *env, const char *workdir,
                             gp_err *err) {
  int r = check_command(command, NULL, err);
  if (!r) r = check_env(env, NULL, err);
  if (!r) r = check_workdir(workdir, NULL, err);
  return r;
}

static int decode_command(const json_t *job, gp_proto_start *s, gp_err *err) {
  const json_t *cmd = json_object_get(job, "command");
  int r = check_command(cmd, CTX, err);
  if (r) return r;
  size_t n = json_array_size(cmd);
  s->argv = gp_xcalloc(n + 1, sizeof *s->argv);
  for (size_t i = 0; i < n; i++) s->argv[i] = gp_xstrdup(json_string_value(json_array_get(cmd, i)));
  s->n_argv = (int)n;
  return 0;
}

static int decode_env(const json_t *job, gp_proto_start *s, gp_err *err) {
  const json_t *env = json_object_get(job, "env");
  int r = check_env(env, CTX, err);
  if (r || !env || json_is_null(env)) return r;
  const char *k;
  const json_t *v;
  size_t n = json_object_size(env);
  s->env_keys = gp_xcalloc(n + 1, sizeof *s->env_keys);
  s->env_values = gp_xcalloc(n + 1, sizeof *s->env_values);
  json_object_foreach((json_t *)env, k, v) {
    s->env_keys[s->n_env] = gp_xstrdup(k);
    s->env_values[s->n_env++] = gp_xstrdup(json_string_value(v));
  }
  return 0;
}

/* "hosts" (node names) or "addrs" (their addresses): a list of at most GP_PROTO_MAX_TASKS
 * non-empty strings without spaces or control characters (they go into host files). */
static int decode_names(const json_t *job, const char *key, const char *what, char ***ret,
                        int *ret_n, gp_err *err) {
  const json_t *hosts = json_object_get(job, key);
  if (!hosts || json_is_null(hosts)) return 0;
  size_t n = json_array_size(hosts);
  if (!json_is_array(hosts) || n > GP_PROTO_MAX_TASKS)
    return gp__proto_bad(err, CTX, key, "%s must be a list of at most %d %ss", key,
                         GP_PROTO_MAX_TASKS, what);
  for (size_t i = 0; i < n; i++) {
    const json_t *h = json_array_get(hosts, i);
    const char *v = json_string_value(h);
    bool ok = v && *v && json_string_length(h) < GP_PROTO_NODE_MAX && strlen(v) == json_string_length(h);
    for (const char *p = v; ok && *p; p++) ok = (unsigned char)*p > ' ' && *p != 0x7f;
    if (!ok) return gp__proto_bad(err, CTX, key, "%s[%zu] is not a %s", key, i, what);
  }
  *ret = gp_xcalloc(n + 1, sizeof **ret);
  for (size_t i = 0; i < n; i++) (*ret)[i] = gp_xstrdup(json_string_value(json_array_get(hosts, i)));
  *ret_n = (int)n;
  return 0;
}

static int decode_hosts(const json_t *job, gp_proto_start *s, gp_err *err) {
  int r = decode_names(job, "hosts", "node name", &s->hosts, &s->n_hosts, err);
  if (!r) r = decode_names(job, "addrs", "node address", &s->addrs, &s->n_addrs, err);
  if (r) return r;
  int64_t v;
  if ((r = gp__proto_int(job, CTX, "master_port", 0, 65535, false, 0, &v, err))) return r;
  s->master_port = (int)v;
  return 0;
}

/* A number of units (cores, GPUs) in [0, max] as thousandths, rounded. */
static int decode_milli(const json_t *job, const char *key, double max, int64_t *ret,
                        gp_err *err) {
  const json_t *v = json_object_get(job, key);
  *ret = 0;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > max)
    return gp__proto_bad(err, CTX, key, "%s must be a number from 0 to %g", key, max);
  *ret = (int64_t)(json_number_value(v) * 1000 + 0.5);
  return 0;
}

/* The output files, the signal before the limit and the restart count. */
static int decode_batch(const json_t *job, gp_proto_start *s, gp_err *err) {
  static const char *const keys[2] = {"output", "error"};
  char **dst[2] = {&s->output, &s->error};
  int r;
  for (int i = 0; i < 2; i++) {
    const char *pat;
    if ((r = gp__proto_str_ref(job, CTX, keys[i], GP_OUTPATH_MAX, &pat, err))) return r;
    if (!pat || !*pat) continue;
    const char *why = gp_outpath_check(pat);
    if (why) return gp__proto_bad(err, CTX, keys[i], "%s", why);
    *dst[i] = gp_xstrdup(pat);
  }
  char mode[16];
  if ((r = gp__proto_str_into(job, CTX, "open_mode", mode, sizeof mode, false, err))) return r;
  if (*mode && strcmp(mode, "append") && strcmp(mode, "truncate"))
    return gp__proto_bad(err, CTX, "open_mode", "open_mode must be append or truncate");
  s->output_append = !strcmp(mode, "append");
  int64_t v;
  if ((r = gp__proto_int(job, CTX, "time_limit", 0, INT64_C(366) * 86400, false, 0, &s->time_limit, err)))
    return r;
  if ((r = gp__proto_int(job, CTX, "warn_before_s", 0, GP_PROTO_MAX_GRACE_S, false, 0, &v, err))) return r;
  s->warn_before_s = (int)v;
  if ((r = gp__proto_str_into(job, CTX, "warn_signal", s->warn_signal, sizeof s->warn_signal, false, err)))
    return r;
  s->warn_batch = json_is_true(json_object_get(job, "warn_batch"));
  if ((r = gp__proto_int(job, CTX, "restarts", 0, 1000000, false, 0, &v, err))) return r;
  s->restarts = (int)v;
  if ((r = gp__proto_str_into(job, CTX, "job_key", s->job_key, sizeof s->job_key, false, err))) return r;
  for (const char *p = s->job_key; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '.' || *p == '-'))
      return gp__proto_bad(err, CTX, "job_key", "job_key holds a character other than [0-9a-z.-]");
  const json_t *b = json_object_get(job, "batch");
  if (b && !json_is_null(b) && !json_is_boolean(b))
    return gp__proto_bad(err, CTX, "batch", "batch must be true or false");
  s->batch = json_is_true(b);
  /* node_gpus: distinct GPU indexes of this node, for the batch task only. */
  const json_t *ng = json_object_get(job, "node_gpus");
  if (!ng || json_is_null(ng)) return 0;
  if (!s->batch || s->task_index != 0 || !json_is_array(ng) || json_array_size(ng) > GP_PROTO_MAX_GPUS)
    return gp__proto_bad(err, CTX, "node_gpus", "node_gpus is a list of at most %d GPU indexes, for a "
                                                "batch job's task 0 only", GP_PROTO_MAX_GPUS);
  uint32_t seen = 0;
  for (size_t i = 0; i < json_array_size(ng); i++) {
    const json_t *g = json_array_get(ng, i);
    if (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) >= GP_PROTO_MAX_GPUS ||
        (seen & (UINT32_C(1) << json_integer_value(g))))
      return gp__proto_bad(err, CTX, "node_gpus", "node_gpus[%zu] is not a distinct GPU index below %d", i,
                           GP_PROTO_MAX_GPUS);
    seen |= UINT32_C(1) << json_integer_value(g);
    s->node_gpus[s->n_node_gpus++] = (int)json_integer_value(g);
  }
  return 0;
}

static int decode_fields(const json_t *job, gp_proto_start *s, gp_err *err) {
  const char *id = json_string_value(json_object_get(job, "id"));
  if (!gp_proto_job_id_valid(id))
    return gp__proto_bad(err, CTX, "id", "the job id is missing or has characters other than "
                                         "letters, digits, '-', '_', '.'");
  snprintf(s->id, sizeof s->id, "%s", id);
  const char *name, *queue, *user, *workdir;
  int r = gp__proto_str_ref(job, CTX, "name", GP_PROTO_STR_MAX, &name, err);
  if (!r) r = gp__proto_str_ref(job, CTX, "queue", GP_PROTO_STR_MAX, &queue, err);
  if (!r) r = gp__proto_str_ref(job, CTX, "user", GP_PROTO_STR_MAX, &user, err);
  if (!r) r = gp__proto_str_ref(job, CTX, "workdir", GP_PROTO_STR_MAX, &workdir, err);
  if (r) return r;
  s->name = dup_or_null(name);
  s->queue = dup_or_null(queue);
  s->user = dup_or_null(user);
  if ((r = check_workdir(workdir, CTX, err))) return r;
  s->workdir = workdir && *workdir ? gp_xstrdup(workdir) : NULL;
  if ((r = decode_command(job, s, err)) || (r = decode_env(job, s, err)) ||
      (r = decode_hosts(job, s, err)))
    return r;
  int64_t v;
  if ((r = decode_milli(job, "cpus", 100000, &s->cpu_milli, err))) return r;
  if ((r = gp__proto_int(job, CTX, "mem_mib", 0, INT64_MAX / 2, false, 0, &s->mem_mib, err))) return r;
  if ((r = gp__proto_int(job, CTX, "tasks", 0, GP_PROTO_MAX_TASKS, false, 1, &v, err))) return r;
  s->tasks = v > 0 ? (int)v : 1;
  if ((r = gp__proto_int(job, CTX, "task_index", 0, s->tasks - 1, false, 0, &v, err))) return r;
  s->task_index = (int)v;
  if ((r = gp__proto_str_into(job, CTX, "signal", s->signal, sizeof s->signal, false, err))) return r;
  if ((r = gp__proto_int(job, CTX, "grace_s", 0, INT64_MAX, false, -1, &v, err))) return r;
  s->grace_s = v > GP_PROTO_MAX_GRACE_S ? GP_PROTO_MAX_GRACE_S : (int)v;
  if ((r = decode_milli(job, "gpu_fraction", 1, &s->gpu_milli, err))) return r;
  if ((r = gp__proto_int(job, CTX, "gpu_mem_mib", 0, INT64_MAX / 2, false, 0, &s->gpu_mem_mib, err)))
    return r;
  const json_t *pl = json_object_get(job, "placements");
  if (pl && !json_is_null(pl) && (!json_is_array(pl) || json_array_size(pl) > 1))
    return gp__proto_bad(err, CTX, "placements", "a start order carries one placement: its task's");
  if (json_array_size(pl) == 1) {
    if ((r = placement_decode(json_array_get(pl, 0), CTX ".placements[0]", &s->placement, err)))
      return r;
    s->has_placement = true;
  }
  const json_t *ct = json_object_get(job, "container");
  if (ct && !json_is_null(ct)) {
    s->container = gp_xcalloc(1, sizeof *s->container);
    if ((r = gp_proto_container_decode(ct, CTX ".container", s->container, err))) return r;
    /* The owner's credential for the image's registry (the server adds it as it sends the
     * order, never stored with it): base64 of "user:password", bounded. */
    const json_t *ra = json_object_get(job, "registry_auth");
    if (ra && !json_is_null(ra)) {
      if (!json_is_string(ra) || !gp_proto_registry_auth_valid(json_string_value(ra)))
        return gp__proto_bad(err, CTX, "registry_auth", "a credential is base64 text of at most %d bytes",
                             GP_PROTO_REGISTRY_AUTH_MAX);
      s->registry_auth = gp_xstrdup(json_string_value(ra));
      const json_t *sc = json_object_get(job, "registry_auth_scope");
      const char *scope = json_string_value(sc);
      if (sc && !json_is_null(sc) && (!scope || (strcmp(scope, "user") && strcmp(scope, "pool"))))
        return gp__proto_bad(err, CTX, "registry_auth_scope", "the scope is \"user\" or \"pool\"");
      s->registry_auth_pool = scope && !strcmp(scope, "pool");
    }
  }
  const json_t *sv = json_object_get(job, "service");
  if (sv && !json_is_null(sv)) {
    s->service = gp_xcalloc(1, sizeof *s->service);
    if ((r = gp_proto_service_decode(sv, CTX ".service", s->service, err))) return r;
  }
  return decode_batch(job, s, err);
}

int gp_proto_start_decode(const json_t *job, gp_proto_start *ret, gp_err *err) {
  memset(ret, 0, sizeof *ret);
  if (!json_is_object(job)) return gp__proto_bad(err, NULL, CTX, "start without a job object");
  int r = decode_fields(job, ret, err);
  if (r) gp_proto_start_done(ret);
  return r;
}

static void strv_free(char **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

void gp_proto_start_done(gp_proto_start *s) {
  if (!s) return;
  free(s->name);
  free(s->queue);
  free(s->user);
  free(s->workdir);
  free(s->output);
  free(s->error);
  strv_free(s->argv, s->n_argv);
  strv_free(s->env_keys, s->n_env);
  strv_free(s->env_values, s->n_env);
  strv_free(s->hosts, s->n_hosts);
  strv_free(s->addrs, s->n_addrs);
  gp_proto_container_done(s->container);
  free(s->container);
  free(s->service);
  if (s->registry_auth) explicit_bzero(s->registry_auth, strlen(s->registry_auth));
  free(s->registry_auth);
  memset(s, 0, sizeof *s);
}

const char *gp_proto_start_env(const gp_proto_start *s, const char *key) {
  for (int i = 0; i < s->n_env; i++)
    if (strcmp(s->env_keys[i], key) == 0) return s->env_values[i];
  return NULL;
}
