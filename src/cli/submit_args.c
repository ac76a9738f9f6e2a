/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`'s option tables and their translation into a POST /v1/jobs body
 * (submit_args.h). gpool's own options and Slurm's sbatch spellings map onto the same
 * actions; a few Slurm-only forms (total --gpus, --ntasks, --dependency lists) are kept in
 * private "_" keys until gp_submit_finish() (submit_finish.c) knows the node count. */
#include "cli/submit_args.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/opts.h"
#include "cli/submit_batch.h"
#include "cli/submit_container.h"
#include "protocol/model.h"
#include "util/mem.h"
#include "util/signals.h"
#include "util/units.h"

#define MAX_GPUS_PER_TASK 1024
#define MAX_TASKS 100000
#define MAX_LIST 256 /* dependencies, GPU types */
#define MAX_SELECTOR 64 /* node selector labels (as the server takes them) */
#define MAX_LABEL 256   /* bytes of a label's key or value */

enum {
  O_QUEUE = 1, O_GPUS, O_GPU_TYPE, O_GRES, O_NODES, O_CPUS, O_MEM, O_TIME, O_PRIORITY,
  O_REQUEUE, O_NO_REQUEUE, O_GRACE, O_SIGNAL, O_AFTER, O_AFTER_OK, O_AFTER_ANY, O_NAME,
  O_HOLD, O_GPU_FRACTION, O_GPU_MEM, O_MIG, O_WORKDIR, O_ENV, O_OUTPUT, O_SERVER, O_TOKEN,
  O_HELP, O_CA, O_ADVISE, O_ALLOW_SPOT, O_NO_SPOT, O_NODE_SELECTOR, O_MAIL_TYPE, O_MAIL_USER, O_MODEL,
  /* Slurm-only forms */
  O_SB_GPUS_TOTAL, O_SB_GPUS_PER_NODE, O_SB_NTASKS, O_SB_DEPENDENCY, O_SB_SIGNAL, O_SB_TIME,
  O_SB_NODES, O_EXCLUSIVE, O_SB_MEM, O_SB_PARTITION, O_SB_IGNORED_ARG, O_NTASKS_PER_NODE, O_SB_GPUS_PER_TASK, O_ARRAY,
  /* submit_batch.c */
  O_OUT_FILE, O_ERR_FILE, O_OPEN_MODE, O_BEGIN, O_EXPORT,
  /* submit_container.c: O_CONTAINER + gp_submit_container_opt */
  O_CONTAINER = 1000, O_CT_IMAGE, O_CT_MOUNTS, O_CT_WORKDIR, O_CT_ENV, O_CT_WRITABLE,
  O_CT_NO_MOUNT_HOME, O_CT_MOUNT_HOME,
};

#define CONTAINER_OPTS                                                                     \
  {0, "container-image", true, O_CT_IMAGE}, {0, "container-mounts", true, O_CT_MOUNTS},   \
  {0, "container-workdir", true, O_CT_WORKDIR}, {0, "container-env", true, O_CT_ENV},      \
  {0, "container-writable", false, O_CT_WRITABLE},                                         \
  {0, "no-container-mount-home", false, O_CT_NO_MOUNT_HOME},                               \
  {0, "container-mount-home", false, O_CT_MOUNT_HOME}

static const gp_opt gpool_opts[] = {
  {'q', "queue", true, O_QUEUE},
  {'g', "gpus", true, O_GPUS},
  {0, "gpu-type", true, O_GPU_TYPE},
  {0, "gres", true, O_GRES},
  {'N', "nodes", true, O_NODES},
  {0, "ntasks", true, O_SB_NTASKS},
  {0, "ntasks-per-node", true, O_NTASKS_PER_NODE},
  {0, "gpus-per-task", true, O_GPUS},
  {'c', "cpus", true, O_CPUS},
  {0, "mem", true, O_MEM},
  {'t', "time", true, O_TIME},
  {'p', "priority", true, O_PRIORITY},
  {0, "requeue", false, O_REQUEUE},
  {0, "no-requeue", false, O_NO_REQUEUE},
  {0, "grace", true, O_GRACE},
  {0, "signal", true, O_SIGNAL},
  {0, "after", true, O_AFTER},
  {0, "afterok", true, O_AFTER_OK},
  {0, "afterany", true, O_AFTER_ANY},
  {0, "dependency", true, O_SB_DEPENDENCY},
  {0, "array", true, O_ARRAY},
  {'n', "name", true, O_NAME},
  {0, "hold", false, O_HOLD},
  {0, "allow-spot", false, O_ALLOW_SPOT},
  {0, "exclusive", false, O_EXCLUSIVE},
  {0, "no-spot", false, O_NO_SPOT},
  {0, "node-selector", true, O_NODE_SELECTOR},
  {0, "gpu-fraction", true, O_GPU_FRACTION},
  {0, "gpu-mem", true, O_GPU_MEM},
  {0, "mig", true, O_MIG},
  {'D', "workdir", true, O_WORKDIR},
  {'e', "env", true, O_ENV},
  {'o', "output", true, O_OUTPUT},
  {0, "error", true, O_ERR_FILE},
  {0, "open-mode", true, O_OPEN_MODE},
  {0, "begin", true, O_BEGIN},
  {0, "export", true, O_EXPORT},
  {0, "server", true, O_SERVER},
  {0, "token", true, O_TOKEN},
  {0, "ca", true, O_CA},
  {'h', "help", false, O_HELP},
  {0, "advise", false, O_ADVISE},
  {0, "mail-type", true, O_MAIL_TYPE},
  {0, "mail-user", true, O_MAIL_USER},
  {0, "image", true, O_CT_IMAGE},
  {0, "model", true, O_MODEL},
  CONTAINER_OPTS,
  {0, NULL, false, 0},
};

static const gp_opt sbatch_opts[] = {
  {'p', "partition", true, O_SB_PARTITION},
  {'G', "gpus", true, O_SB_GPUS_TOTAL},
  {0, "gpus-per-node", true, O_SB_GPUS_PER_NODE},
  {0, "gpus-per-task", true, O_SB_GPUS_PER_TASK},
  {0, "gres", true, O_GRES},
  {'N', "nodes", true, O_SB_NODES},
  {'n', "ntasks", true, O_SB_NTASKS},
  {'c', "cpus-per-task", true, O_CPUS},
  {0, "mem", true, O_SB_MEM},
  {'t', "time", true, O_SB_TIME},
  {0, "requeue", false, O_REQUEUE},
  {0, "no-requeue", false, O_NO_REQUEUE},
  {0, "signal", true, O_SB_SIGNAL},
  {'d', "dependency", true, O_SB_DEPENDENCY},
  {'a', "array", true, O_ARRAY},
  {'J', "job-name", true, O_NAME},
  {'H', "hold", false, O_HOLD},
  {'D', "chdir", true, O_WORKDIR},
  {'o', "output", true, O_OUT_FILE},
  {'e', "error", true, O_ERR_FILE},
  {0, "open-mode", true, O_OPEN_MODE},
  {'b', "begin", true, O_BEGIN},
  {0, "export", true, O_EXPORT},
  /* Accepted so real scripts submit unchanged, but gpool has no use for them. */
  {'A', "account", true, O_SB_IGNORED_ARG},
  {'q', "qos", true, O_SB_IGNORED_ARG},
  {0, "mail-type", true, O_MAIL_TYPE},
  {0, "mail-user", true, O_MAIL_USER},
  {0, "ntasks-per-node", true, O_NTASKS_PER_NODE},
  {'C', "constraint", true, O_SB_IGNORED_ARG},
  {0, "exclusive", false, O_EXCLUSIVE},
  CONTAINER_OPTS, /* pyxis's */
  {0, NULL, false, 0},
};

void gp_submit_init(gp_submit *s) {
  memset(s, 0, sizeof *s);
  s->req = json_object();
  s->cli = json_object();
  gp_buf_init(&s->warnings, 65536);
}

void gp_submit_done(gp_submit *s) {
  json_decref(s->req);
  json_decref(s->cli);
  gp_buf_done(&s->warnings);
}

/* ---- values ---- */

static int bad(gp_err *err, const char *where, const char *field, const char *fmt,
               const char *value) {
  char msg[400];
  snprintf(msg, sizeof msg, fmt, value);
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s%s%s", where ? where : "",
                    where ? ": " : "", msg);
}

static int int_in(const char *s, int64_t lo, int64_t hi, int64_t *ret) {
  int64_t v;
  if (gp_parse_int64(s, &v) || v < lo || v > hi) return GP_EINVAL;
  *ret = v;
  return 0;
}

/* "12", or an array element "12_7". */
static bool is_job_id(const char *s, size_t n) {
  if (n == 0 || n > 32) return false;
  int under = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '_' && i > 0 && i + 1 < n && under++ == 0) continue;
    if (!isdigit((unsigned char)s[i])) return false;
  }
  return true;
}

/* Slurm's --array "0-99:2%8" / "1,3,5-7": the server reads the spec; here only its
 * alphabet, so that a script's mistake names its line. */
static int array_opt(json_t *req, const char *v, const char *where, gp_err *err) {
  if (!*v || strlen(v) > 4096 || strspn(v, "0123456789,-:%") != strlen(v))
    return bad(err, where, "array", "'%s' is not an array spec (e.g. 0-99:2%%8 or 1,3,5-7)", v);
  json_object_set_new(req, "array", json_string(v));
  return 0;
}

/* Appends the ids in "12,13" or "12:13" to req[key]. */
static int add_ids(json_t *req, const char *key, const char *list, const char *where,
                   gp_err *err) {
  json_t *arr = json_object_get(req, key);
  if (!arr) {
    arr = json_array();
    json_object_set_new(req, key, arr);
  }
  const char *p = list;
  for (;;) {
    size_t n = strcspn(p, ",:");
    if (!is_job_id(p, n)) return bad(err, where, key, "'%s' is not a list of job ids", list);
    if (json_array_size(arr) >= MAX_LIST) return bad(err, where, key, "too many job ids in '%s'", list);
    json_array_append_new(arr, json_stringn(p, n));
    if (!p[n]) break;
    p += n + 1;
  }
  return 0;
}

static int add_gpu_types(json_t *req, const char *list, const char *where, gp_err *err) {
  json_t *arr = json_array();
  const char *p = list;
  for (;;) {
    size_t n = strcspn(p, ",");
    bool ok = n > 0 && n <= 64;
    for (size_t i = 0; ok && i < n; i++)
      ok = isalnum((unsigned char)p[i]) || p[i] == '-' || p[i] == '_' || p[i] == '.';
    if (!ok || json_array_size(arr) >= MAX_LIST) {
      json_decref(arr);
      return bad(err, where, "gpu_types", "'%s' is not a list of GPU models (e.g. h100,h200)", list);
    }
    json_array_append_new(arr, json_stringn(p, n));
    if (!p[n]) break;
    p += n + 1;
  }
  json_object_set_new(req, "gpu_types", arr);
  return 0;
}

/* "[type:]N" as in Slurm's --gpus and --gpus-per-node. */
static int typed_count(json_t *req, const char *key, const char *s, const char *where,
                       gp_err *err) {
  const char *colon = strrchr(s, ':');
  int64_t n;
  if (int_in(colon ? colon + 1 : s, 0, MAX_GPUS_PER_TASK * (int64_t)MAX_TASKS, &n))
    return bad(err, where, "gpus", "'%s' is not a GPU count ([type:]N)", s);
  if (colon) {
    char type[80];
    if ((size_t)(colon - s) >= sizeof type) return bad(err, where, "gpu_types", "GPU type too long in '%s'", s);
    memcpy(type, s, (size_t)(colon - s));
    type[colon - s] = '\0';
    int rc = add_gpu_types(req, type, where, err);
    if (rc) return rc;
  }
  json_object_set_new(req, key, json_integer(n));
  return 0;
}

/* "gpu", "gpu:2", "gpu:h100:2" (per node, as in Slurm). */
static int gres(json_t *req, const char *s, const char *where, gp_err *err) {
  if (strncmp(s, "gpu", 3) || (s[3] && s[3] != ':'))
    return bad(err, where, "gres", "only GPU resources are supported ('gpu[:type]:N'), not '%s'", s);
  if (strchr(s, ','))
    return bad(err, where, "gres", "only one generic resource is supported, got '%s'", s);
  if (!s[3]) {
    json_object_set_new(req, "_gpus_per_node", json_integer(1));
    return 0;
  }
  const char *rest = s + 4;
  const char *colon = strchr(rest, ':');
  int64_t n = 1;
  if (colon) {
    if (int_in(colon + 1, 0, MAX_GPUS_PER_TASK, &n))
      return bad(err, where, "gres", "'%s' does not end in a GPU count", s);
    char type[80];
    if ((size_t)(colon - rest) >= sizeof type || colon == rest)
      return bad(err, where, "gres", "bad GPU type in '%s'", s);
    memcpy(type, rest, (size_t)(colon - rest));
    type[colon - rest] = '\0';
    int rc = add_gpu_types(req, type, where, err);
    if (rc) return rc;
  } else if (int_in(rest, 0, MAX_GPUS_PER_TASK, &n)) {
    int rc = add_gpu_types(req, rest, where, err); /* "gpu:h100": one of that type */
    if (rc) return rc;
    n = 1;
  }
  json_object_set_new(req, "_gpus_per_node", json_integer(n));
  return 0;
}

/* Slurm's --dependency: "afterok:12:13,afterany:14,singleton" (all must hold). */
static int dependency(json_t *req, const char *s, const char *where, gp_err *err) {
  if (strchr(s, '?')) return bad(err, where, "dependency", "'any of' dependencies ('?') are not supported: '%s'", s);
  char *copy = gp_xstrdup(s), *save = NULL;
  int rc = 0;
  for (char *part = strtok_r(copy, ",", &save); part && !rc; part = strtok_r(NULL, ",", &save)) {
    if (!strcmp(part, "singleton")) {
      json_object_set_new(req, "singleton", json_true());
      continue;
    }
    char *colon = strchr(part, ':');
    if (!colon) {
      rc = bad(err, where, "dependency", "'%s' is not TYPE:ID[:ID...]", part);
      break;
    }
    *colon = '\0';
    const char *key = !strcmp(part, "after") ? "after" : !strcmp(part, "afterok") ? "after_ok"
                      : !strcmp(part, "afterany") ? "after_any"
                      : !strcmp(part, "afternotok") ? "after_not_ok"
                      : !strcmp(part, "aftercorr") ? "after_corr" : NULL;
    if (!key) {
      rc = bad(err, where, "dependency",
               "dependency type '%s' is not supported (use after, afterok, afterany, afternotok, "
               "aftercorr or singleton)", part);
      break;
    }
    /* Slurm allows "after:12+5" (minutes delay); gpool does not. */
    rc = add_ids(req, key, colon + 1, where, err);
  }
  free(copy);
  return rc;
}

static bool mig_profile_ok(const char *s) {
  /* "1g.10gb", "3g.40gb", "1g.10gb+me" */
  const char *p = s;
  if (!isdigit((unsigned char)*p)) return false;
  while (isdigit((unsigned char)*p)) p++;
  if (*p++ != 'g' || *p++ != '.' || !isdigit((unsigned char)*p)) return false;
  while (isdigit((unsigned char)*p)) p++;
  if (strncmp(p, "gb", 2)) return false;
  p += 2;
  return !*p || !strcmp(p, "+me") || !strcmp(p, "+gfx");
}

static int string_opt(json_t *req, const char *key, const char *v, size_t max, const char *where,
                      gp_err *err) {
  if (!*v || strlen(v) > max) return bad(err, where, key, "'%s' is empty or too long", v);
  json_object_set_new(req, key, json_string(v));
  return 0;
}

/* Returned by a group of options for an option outside it. */
#define NOT_MINE INT_MIN

/* --time in Slurm's form: a plain number is minutes; infinite and unlimited set no limit. */
static int sbatch_time(json_t *req, const char *v, const char *where, gp_err *err) {
  int64_t n;
  if (!strcasecmp(v, "infinite") || !strcasecmp(v, "unlimited")) return 0;
  if (!gp_parse_int64(v, &n)) {
    if (n <= 0 || n > 100000000) return bad(err, where, "time_limit", "'%s' is not a time limit", v);
    n *= 60;
  } else if (gp_parse_duration_s(v, &n) || n <= 0) {
    return bad(err, where, "time_limit", "'%s' is not a time limit", v);
  }
  json_object_set_new(req, "time_limit", json_integer(n));
  return 0;
}

/* --env NAME=VALUE: one variable of the job's environment. */
static int add_env(json_t *req, const char *v, const char *where, gp_err *err) {
  const char *eq = strchr(v, '=');
  if (!eq || eq == v || strlen(v) > 65536) return bad(err, where, "env", "'%s' is not NAME=VALUE", v);
  json_t *env = json_object_get(req, "env");
  if (!env) {
    env = json_object();
    json_object_set_new(req, "env", env);
  }
  char *key = gp_xstrndup(v, (size_t)(eq - v));
  json_object_set_new(env, key, json_string(eq + 1));
  free(key);
  return 0;
}

/* --node-selector KEY=VALUE: a label every node of the job must carry (repeatable; a key
 * given again takes the last value). */
static int add_selector(json_t *req, const char *v, const char *where, gp_err *err) {
  const char *eq = strchr(v, '=');
  size_t klen = eq ? (size_t)(eq - v) : 0;
  if (!eq || klen == 0 || klen > MAX_LABEL || !eq[1] || strlen(eq + 1) > MAX_LABEL)
    return bad(err, where, "node_selector", "'%s' is not KEY=VALUE (e.g. zone=eu-1)", v);
  json_t *sel = json_object_get(req, "node_selector");
  if (!sel) {
    sel = json_object();
    json_object_set_new(req, "node_selector", sel);
  }
  char *key = gp_xstrndup(v, klen);
  if (!json_object_get(sel, key) && json_object_size(sel) >= MAX_SELECTOR) {
    free(key);
    return bad(err, where, "node_selector", "more than 64 labels at '%s'", v);
  }
  json_object_set_new(sel, key, json_string(eq + 1));
  free(key);
  return 0;
}

/* The options that size the job: GPUs and their kind, nodes and tasks, CPUs, memory. */
static int apply_resource(json_t *req, int id, const char *v, const char *where, gp_err *err) {
  int64_t n;
  double d;
  switch (id) {
  case O_GPUS:
    if (int_in(v, 0, MAX_GPUS_PER_TASK, &n))
      return bad(err, where, "gpus", "'%s' is not a GPU count (0 or more GPUs per task)", v);
    json_object_set_new(req, "gpus", json_integer(n));
    return 0;
  case O_GPU_TYPE:
    return add_gpu_types(req, v, where, err);
  case O_GRES:
    return gres(req, v, where, err);
  case O_NODES:
    if (int_in(v, 1, MAX_TASKS, &n)) return bad(err, where, "tasks", "'%s' is not a node count (1 or more)", v);
    json_object_set_new(req, "_nodes", json_integer(n));
    return 0;
  case O_SB_NODES:
  case O_SB_MEM:
  case O_SB_PARTITION:
    return gp_submit_sb_opt(req, id == O_SB_NODES ? "nodes" : id == O_SB_MEM ? "mem" : "partition", v, where, err);
  case O_NTASKS_PER_NODE:
    if (int_in(v, 1, MAX_TASKS, &n))
      return bad(err, where, "tasks_per_node", "'%s' is not a task count (1 or more)", v);
    json_object_set_new(req, "_per_node", json_integer(n));
    return 0;
  case O_CPUS:
    if (int_in(v, 1, 1 << 20, &n)) return bad(err, where, "cpus", "'%s' is not a CPU count", v);
    json_object_set_new(req, "cpus", json_integer(n));
    return 0;
  case O_MEM:
    if (gp_parse_mem_mib(v, &n) || n <= 0)
      return bad(err, where, "mem_mib", "'%s' is not a memory size (e.g. 64G, 512M)", v);
    json_object_set_new(req, "mem_mib", json_integer(n));
    return 0;
  case O_GPU_FRACTION:
    if (gp_parse_double(v, &d) || !(d > 0 && d < 1) || d < 0.001)
      return bad(err, where, "gpu_fraction", "'%s' is not a fraction of one GPU (between 0.001 and 1, e.g. 0.5)", v);
    json_object_set_new(req, "gpu_fraction", json_real(d));
    return 0;
  case O_GPU_MEM:
    if (gp_parse_mem_mib(v, &n) || n <= 0)
      return bad(err, where, "gpu_mem_mib", "'%s' is not a GPU memory size (e.g. 20G)", v);
    json_object_set_new(req, "gpu_mem_mib", json_integer(n));
    return 0;
  case O_MIG:
    if (!mig_profile_ok(v))
      return bad(err, where, "mig", "'%s' is not a MIG profile (e.g. 1g.10gb, 3g.40gb)", v);
    json_object_set_new(req, "mig", json_string(v));
    return 0;
  case O_SB_GPUS_TOTAL:
    return typed_count(req, "_gpus_total", v, where, err);
  case O_SB_GPUS_PER_NODE:
    return typed_count(req, "_gpus_per_node", v, where, err);
  case O_SB_GPUS_PER_TASK:
    return typed_count(req, "gpus", v, where, err);
  case O_SB_NTASKS:
    if (int_in(v, 1, MAX_TASKS, &n)) return bad(err, where, "tasks", "'%s' is not a task count", v);
    json_object_set_new(req, "_ntasks", json_integer(n));
    return 0;
  default:
    return NOT_MINE;
  }
}

/* The options about time: the limit, and the signal and grace period before it. */
static int apply_time(json_t *req, int id, const char *v, const char *where, gp_err *err) {
  int64_t n;
  switch (id) {
  case O_TIME:
    if (gp_parse_duration_s(v, &n) || n <= 0)
      return bad(err, where, "time_limit", "'%s' is not a duration (e.g. 4h, 30m, 1-00:00:00)", v);
    json_object_set_new(req, "time_limit", json_integer(n));
    return 0;
  case O_SB_TIME:
    return sbatch_time(req, v, where, err);
  case O_GRACE:
    if (gp_parse_duration_s(v, &n) || n > 86400)
      return bad(err, where, "grace_s", "'%s' is not a grace period (e.g. 60s, 5m; at most a day)", v);
    json_object_set_new(req, "grace_s", json_integer(n));
    return 0;
  case O_SIGNAL:
  case O_SB_SIGNAL:
    return gp_submit_signal(req, v, id == O_SB_SIGNAL, where, err);
  case O_BEGIN:
    return gp_submit_begin(req, v, where, err);
  default:
    return NOT_MINE;
  }
}

/* The options naming the jobs this one waits for. */
static int apply_dependency(json_t *req, int id, const char *v, const char *where, gp_err *err) {
  switch (id) {
  case O_AFTER:
    return add_ids(req, "after", v, where, err);
  case O_AFTER_OK:
    return add_ids(req, "after_ok", v, where, err);
  case O_AFTER_ANY:
    return add_ids(req, "after_any", v, where, err);
  case O_SB_DEPENDENCY:
    return dependency(req, v, where, err);
  case O_ARRAY:
    return array_opt(req, v, where, err);
  default:
    return NOT_MINE;
  }
}

/* The options about the job itself: queue, name, priority, hold, requeue, directory and
 * environment. */
static int apply_job(json_t *req, int id, const char *v, const char *where, gp_err *err) {
  switch (id) {
  case O_QUEUE:
    if (strchr(v, ',')) return bad(err, where, "queue", "one queue only, got '%s'", v);
    json_object_del(req, "partitions"); /* a later -q replaces a -p a,b list */
    return string_opt(req, "queue", v, 255, where, err);
  case O_PRIORITY:
    return string_opt(req, "priority", v, 64, where, err);
  case O_REQUEUE:
  case O_NO_REQUEUE:
    json_object_set_new(req, "requeue", json_boolean(id == O_REQUEUE));
    return 0;
  case O_NAME:
    return string_opt(req, "name", v, 255, where, err);
  case O_HOLD:
    json_object_set_new(req, "hold", json_true());
    return 0;
  case O_EXCLUSIVE:
    json_object_set_new(req, "exclusive", json_true());
    return 0;
  case O_MODEL:
    if (!gp_proto_model_name_valid(v))
      return bad(err, where, "model",
                 "'%s' is not a model name (1 to 127 of A-Z a-z 0-9 . _ -, a letter or digit first)", v);
    json_object_set_new(req, "model", json_string(v));
    return 0;
  case O_ALLOW_SPOT:
  case O_NO_SPOT:
    json_object_set_new(req, "allow_spot", json_boolean(id == O_ALLOW_SPOT));
    return 0;
  case O_NODE_SELECTOR:
    return add_selector(req, v, where, err);
  case O_WORKDIR:
    return string_opt(req, "workdir", v, 4095, where, err);
  case O_ENV:
    return add_env(req, v, where, err);
  case O_OUT_FILE:
  case O_OUTPUT: /* in a directive; on the command line "json" and "table" are formats */
    return gp_submit_output(req, "output", "-o/--output", v, where, err);
  case O_ERR_FILE:
    return gp_submit_output(req, "error", "--error", v, where, err);
  case O_OPEN_MODE:
    return gp_submit_open_mode(req, v, where, err);
  case O_EXPORT:
    return gp_submit_export(req, v, where, err);
  case O_MAIL_TYPE:
  case O_MAIL_USER:
    return gp_submit_mail_opt(req, id == O_MAIL_TYPE, v, where, err);
  case O_CT_IMAGE: case O_CT_MOUNTS: case O_CT_WORKDIR: case O_CT_ENV: case O_CT_WRITABLE:
  case O_CT_NO_MOUNT_HOME: case O_CT_MOUNT_HOME:
    return gp_submit_container(req, (gp_submit_container_opt)(id - O_CONTAINER), v, where, err);
  default:
    return NOT_MINE;
  }
}

/* Applies one option to `req`, through the group of options it belongs to. */
static int apply(gp_submit *s, json_t *req, int id, const char *v, const char *where, gp_err *err) {
  int rc = apply_resource(req, id, v, where, err);
  if (rc == NOT_MINE) rc = apply_time(req, id, v, where, err);
  if (rc == NOT_MINE) rc = apply_dependency(req, id, v, where, err);
  if (rc == NOT_MINE) rc = apply_job(req, id, v, where, err);
  if (rc == NOT_MINE) rc = bad(err, where, NULL, "%s", "internal error: unhandled option");
  return rc;
}

/* ---- the command line ---- */

int gp_submit_parse_args(gp_submit *s, int argc, char **argv, gp_err *err) {
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  for (;;) {
    const char *v = NULL;
    int id = gp_opt_next(&it, gpool_opts, &v, err);
    if (id == GP_OPT_END) break;
    if (id < 0 && id != GP_OPT_POSITIONAL) return id;
    if (id == GP_OPT_POSITIONAL) {
      it.i--; /* the script or the command starts here */
      break;
    }
    int rc = 0;
    switch (id) {
    case O_OUTPUT:
      if (strcmp(v, "json") && strcmp(v, "table")) rc = apply(s, s->cli, id, v, NULL, err);
      else s->json_out = !strcmp(v, "json");
      break;
    case O_SERVER: s->server = v; break;
    case O_TOKEN: s->token = v; break;
    case O_CA: s->ca = v; break;
    case O_HELP: s->help = true; break;
    case O_ADVISE: s->advise = true; break;
    default: rc = apply(s, s->cli, id, v, NULL, err);
    }
    if (rc) return rc;
  }
  s->dashdash = it.dashdash;
  s->n_args = argc - it.i;
  s->args = argv + it.i;
  return 0;
}

/* ---- scripts ---- */

static void warn(gp_submit *s, const char *where, const char *what) {
  gp_buf_printf(&s->warnings, "%s: %s\n", where, what);
}

static int directive(gp_submit *s, bool sbatch, char *rest, const char *where, gp_err *err) {
  char *words[128];
  int n = gp_opt_split(rest, words, 127);
  if (n == GP_ELIMIT) return gp_err_set(err, GP_ELIMIT, NULL, 0, NULL, "%s: too many words", where);
  if (n < 0) return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "%s: unterminated quote", where);
  /* gp_opt_next starts at index 1 (argv[0] is a program name). */
  char *argv[129];
  argv[0] = (char *)"directive";
  memcpy(argv + 1, words, (size_t)n * sizeof *words);
  gp_opt_iter it;
  gp_opt_init(&it, n + 1, argv, 1);
  it.where = where;
  for (;;) {
    const char *v = NULL;
    gp_err e = {0};
    int start = it.i;
    int id = gp_opt_next(&it, sbatch ? sbatch_opts : gpool_opts, &v, &e);
    if (id == GP_OPT_END && !it.dashdash) break;
    if (sbatch && (id == GP_EINVAL || id == GP_OPT_POSITIONAL || id == GP_OPT_END)) {
      char msg[600];
      const char *word = argv[start];
      /* An unknown "--opt value": take the value along so it is not read as a word. */
      if (id == GP_EINVAL && it.i == start + 1 && word[0] == '-' && !strchr(word, '=') &&
          it.i < it.argc && it.argv[it.i][0] != '-')
        it.i++;
      snprintf(msg, sizeof msg, "#SBATCH %s is not supported by gpool; ignored", word);
      warn(s, where, msg);
      if (id == GP_OPT_END) break;
      continue;
    }
    if (id == GP_OPT_END || id == GP_OPT_POSITIONAL)
      return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "%s: #GPOOL lines carry options only, not '%s'",
                        where, it.argv[it.i - 1]);
    if (id < 0) {
      if (err) *err = e;
      return id;
    }
    if (id == O_SB_IGNORED_ARG) {
      char msg[600];
      snprintf(msg, sizeof msg, "#SBATCH %s has no meaning in gpool; ignored", argv[start]);
      warn(s, where, msg);
      continue;
    }
    if (id == O_SERVER || id == O_TOKEN || id == O_HELP || id == O_CA || id == O_ADVISE)
      return gp_err_set(err, GP_EINVAL, NULL, 0, NULL,
                        "%s: only job options belong in #GPOOL lines (not --server, --token, --ca, --help, --advise)", where);
    int rc = apply(s, s->req, id, v, where, err);
    if (rc) return rc;
  }
  return 0;
}

int gp_submit_parse_script(gp_submit *s, const char *name, const char *text, size_t len,
                           gp_err *err) {
  if (len > GP_SUBMIT_MAX_SCRIPT)
    return gp_err_set(err, GP_ELIMIT, name, 0, NULL, "the script is larger than %zu KiB", GP_SUBMIT_MAX_SCRIPT >> 10);
  if (memchr(text, '\0', len))
    return gp_err_set(err, GP_EINVAL, name, 0, NULL, "this is not a text file (it contains NUL bytes)");
  size_t pos = 0;
  int line_no = 0;
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    line_no++;
    size_t n = end - pos;
    const char *line = text + pos;
    pos = end + 1;
    size_t lead = 0;
    while (lead < n && (line[lead] == ' ' || line[lead] == '\t')) lead++;
    if (lead == n || (n - lead == 1 && line[lead] == '\r')) continue; /* blank */
    if (line[lead] != '#') break; /* the first command ends the directive block */
    bool gpool = n >= 6 && !strncmp(line, "#GPOOL", 6) && (n == 6 || isspace((unsigned char)line[6]));
    bool sbatch = n >= 7 && !strncmp(line, "#SBATCH", 7) && (n == 7 || isspace((unsigned char)line[7]));
    if (!gpool && !sbatch) continue;
    s->sbatch = s->sbatch || sbatch;
    if (n > 4096) return gp_err_set(err, GP_ELIMIT, name, line_no, NULL, "directive line too long");
    char *rest = gp_xstrndup(line + (gpool ? 6 : 7), n - (gpool ? 6 : 7));
    char where[320];
    snprintf(where, sizeof where, "%.256s:%d", name, line_no);
    int rc = directive(s, sbatch, rest, where, err);
    free(rest);
    if (rc) {
      if (err) { /* the message starts with "name:line: "; keep that in file and line */
        size_t wl = strlen(where);
        if (!strncmp(err->message, where, wl) && err->message[wl] == ':')
          memmove(err->message, err->message + wl + 2, strlen(err->message + wl + 2) + 1);
        err->line = line_no;
        snprintf(err->file, sizeof err->file, "%s", name);
      }
      return rc;
    }
  }
  return 0;
}
