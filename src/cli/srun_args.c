/* SPDX-License-Identifier: Apache-2.0 */
/* srun's options (srun_args.h): the layout (-N, -n, --ntasks-per-node, -w), -l, -K,
 * --export, --jobid, and the options that are true of gpool anyway (--mpi=none,
 * --cpu-bind=none, -u, --overlap, -c equal to the job's). Every other option is refused by
 * name: a step that silently ran other than asked would be worse than none. */
#include "cli/srun_args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/limits.h"
#include "protocol/outpath.h"
#include "util/error.h"
#include "util/hostlist.h"
#include "util/mem.h"
#include "util/units.h"

enum { O_NODES = 1, O_NTASKS, O_TPN, O_NODELIST, O_LABEL, O_KILL, O_QUIET, O_JOBID, O_EXPORT,
       O_CPUS, O_MPI, O_CPU_BIND, O_UNBUF, O_OVERLAP, O_PTY, O_OUTPUT, O_ERROR, O_INPUT, O_OPEN_MODE,
       O_EXCLUSIVE };

typedef struct opt {
  const char *name;
  char short_name;
  int takes;  /* 0: a flag, 1: a value, 2: a value only after '=' */
  int id;
} opt;

static const opt opts[] = {
    {"nodes", 'N', 1, O_NODES},           {"ntasks", 'n', 1, O_NTASKS},
    {"ntasks-per-node", 0, 1, O_TPN},     {"nodelist", 'w', 1, O_NODELIST},
    {"label", 'l', 0, O_LABEL},           {"kill-on-bad-exit", 'K', 2, O_KILL},
    {"quiet", 'Q', 0, O_QUIET},           {"jobid", 0, 1, O_JOBID},
    {"export", 0, 1, O_EXPORT},           {"cpus-per-task", 'c', 1, O_CPUS},
    {"mpi", 0, 1, O_MPI},                 {"cpu-bind", 0, 1, O_CPU_BIND},
    {"cpu_bind", 0, 1, O_CPU_BIND},       {"unbuffered", 'u', 0, O_UNBUF},
    {"overlap", 0, 0, O_OVERLAP},         {"pty", 0, 0, O_PTY},
    {"output", 'o', 1, O_OUTPUT},         {"error", 'e', 1, O_ERROR},
    {"input", 'i', 1, O_INPUT},           {"open-mode", 0, 1, O_OPEN_MODE},
    {"exclusive", 0, 0, O_EXCLUSIVE},
};
#define N_OPTS (sizeof opts / sizeof opts[0])

static int say(char *msg, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, size, fmt, ap);
  va_end(ap);
  return 2;
}

static int count(const char *v, const char *what, int *out, char *msg, size_t size) {
  int64_t n;
  if (!v || gp_parse_int64(v, &n) || n < 1 || n > GP_PROTO_MAX_TASKS)
    return say(msg, size, "%s: '%.64s' is not a count from 1 to %d%s", what, v ? v : "", GP_PROTO_MAX_TASKS,
               v && strchr(v, '-') ? " (a min-max range is not offered)" : "");
  *out = (int)n;
  return 0;
}

static int add_name(void *ctx, const char *name) {
  json_array_append_new(ctx, json_string(name));
  return 0;
}

static bool var_name(const char *k, size_t len) {
  if (len == 0 || len > 256 || (k[0] >= '0' && k[0] <= '9')) return false;
  for (size_t i = 0; i < len; i++)
    if (!((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') || k[i] == '_'))
      return false;
  return true;
}

/* --export=ALL|NONE|[ALL,]NAME[=value],... (Slurm's forms). */
static int read_export(const char *v, gp_srun_opts *o, char *msg, size_t size) {
  o->export_mode = 2;
  json_decref(o->export_set);
  json_decref(o->export_names);
  o->export_set = json_object();
  o->export_names = json_array();
  for (const char *p = v; p && *p;) {
    size_t len = strcspn(p, ",");
    const char *eq = memchr(p, '=', len);
    if (len == 3 && strncmp(p, "ALL", 3) == 0) {
      o->export_mode = 0;
    } else if (len == 4 && strncmp(p, "NONE", 4) == 0) {
      o->export_mode = o->export_mode == 0 ? 0 : 1;
    } else if (eq && var_name(p, (size_t)(eq - p))) {
      char *k = gp_xstrndup(p, (size_t)(eq - p)), *val = gp_xstrndup(eq + 1, len - (size_t)(eq - p) - 1);
      json_object_set_new(o->export_set, k, json_string(val));
      free(k);
      free(val);
    } else if (!eq && var_name(p, len)) {
      char *k = gp_xstrndup(p, len);
      json_array_append_new(o->export_names, json_string(k));
      free(k);
    } else {
      return say(msg, size, "--export: '%.*s' is not ALL, NONE, a variable name or NAME=value", (int)(len < 64 ? len : 64), p);
    }
    p += len + (p[len] == ',');
  }
  return 0;
}

static int apply(int id, const char *spelled, const char *v, const char *(*env)(const char *), gp_srun_opts *o,
                 char *msg, size_t size) {
  switch (id) {
  case O_NODES: return count(v, "-N/--nodes", &o->nodes, msg, size);
  case O_NTASKS: return count(v, "-n/--ntasks", &o->ntasks, msg, size);
  case O_TPN: return count(v, "--ntasks-per-node", &o->ntasks_per_node, msg, size);
  case O_NODELIST: {
    gp_err err = {0};
    json_decref(o->nodelist);
    o->nodelist = json_array();
    if (!v || !*v || gp_hostlist_expand(v, GP_PROTO_MAX_TASKS, add_name, o->nodelist, NULL, &err))
      return say(msg, size, "-w/--nodelist: '%.100s' is not a node list%s%s", v ? v : "", err.message[0] ? ": " : "",
                 err.message);
    return 0;
  }
  case O_LABEL: o->label = true; return 0;
  case O_KILL:
    if (v && strcmp(v, "0") && strcmp(v, "1"))
      return say(msg, size, "--kill-on-bad-exit: '%.32s' is not 0 or 1", v);
    o->kill_on_bad_exit = !v || strcmp(v, "1") == 0;
    return 0;
  case O_QUIET: o->quiet = true; return 0;
  case O_JOBID:
    free(o->jobid);
    if (!v || !*v || strlen(v) > 40) return say(msg, size, "--jobid: '%.40s' is not a job id", v ? v : "");
    o->jobid = gp_xstrdup(v);
    return 0;
  case O_EXPORT: return read_export(v, o, msg, size);
  case O_CPUS: {
    /* True of gpool when it is what each of the job's tasks holds. */
    const char *mine = env("SLURM_CPUS_PER_TASK");
    if (v && mine && strcmp(v, mine) == 0) return 0;
    return say(msg, size, "%s=%.32s: a step's tasks hold the CPUs of the job's tasks (%s); steps with "
               "their own CPU counts are not offered", spelled, v ? v : "", mine ? mine : "no -c given to the job");
  }
  case O_MPI:
    if (v && strcmp(v, "none") == 0) return 0;
    return say(msg, size, "--mpi=%.32s: gpool has no PMI server; use --mpi=none, or mpirun (it starts "
               "its daemons through srun)", v ? v : "");
  case O_CPU_BIND:
    if (v && (strcmp(v, "none") == 0 || strcmp(v, "no") == 0)) return 0;
    return say(msg, size, "%s=%.32s: gpool binds no task to CPUs; only none is offered", spelled, v ? v : "");
  case O_UNBUF: return 0;   /* output is relayed as it is written, whatever this says */
  case O_OVERLAP: o->exclusive = false; return 0; /* steps share the job's tasks by default */
  case O_EXCLUSIVE: o->exclusive = true; return 0;
  case O_OUTPUT:
  case O_ERROR: {
    const char *why = v ? gp_outpath_check(v) : "no file name";
    if (why) return say(msg, size, "%s=%.100s: %s", spelled, v ? v : "", why);
    char **dst = id == O_OUTPUT ? &o->output : &o->error;
    free(*dst);
    *dst = gp_xstrdup(v);
    return 0;
  }
  case O_INPUT:
    if (v && strcmp(v, "none") == 0) return 0; /* the tasks read /dev/null */
    return say(msg, size, "%s=%.64s: srun does not forward input; only none is offered", spelled, v ? v : "");
  case O_OPEN_MODE:
    if (!v || (strcmp(v, "append") && strcmp(v, "truncate")))
      return say(msg, size, "--open-mode=%.32s: append or truncate", v ? v : "");
    o->append = strcmp(v, "append") == 0;
    return 0;
  case O_PTY:
    /* Outside a job, srun --pty is `gpool run --pty` (slurm_srun.c, before this parser). */
    return say(msg, size, "--pty: interactive steps inside a job are not offered; run the command without "
               "--pty (its output is relayed), or enter the job with gpool exec -it");
  }
  return say(msg, size, "%s: not offered", spelled);
}

int gp_srun_parse(int argc, char **argv, const char *(*env)(const char *name), gp_srun_opts *o,
                  char *msg, size_t size) {
  memset(o, 0, sizeof *o);
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-' || !a[1]) break;
    if (a[1] == '-') {
      const char *name = a + 2, *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      const opt *p = NULL;
      for (size_t k = 0; k < N_OPTS && !p; k++)
        if (strlen(opts[k].name) == len && strncmp(opts[k].name, name, len) == 0) p = &opts[k];
      char spelled[80];
      snprintf(spelled, sizeof spelled, "--%.*s", (int)(len < 60 ? len : 60), name);
      if (!p) return say(msg, size, "%s: this srun option is not offered by gpool (docs/slurm.md)", spelled);
      const char *v = eq ? eq + 1 : NULL;
      if (p->takes == 0 && v) return say(msg, size, "%s takes no value", spelled);
      if (p->takes == 1 && !v) {
        if (i + 1 >= argc) return say(msg, size, "%s needs a value", spelled);
        v = argv[++i];
      }
      int rc = apply(p->id, spelled, v, env, o, msg, size);
      if (rc) return rc;
      continue;
    }
    /* Short options: "-N2", "-N 2", flags together ("-lK"). */
    for (const char *c = a + 1; *c; c++) {
      const opt *p = NULL;
      for (size_t k = 0; k < N_OPTS && !p; k++)
        if (opts[k].short_name == *c) p = &opts[k];
      char spelled[8];
      snprintf(spelled, sizeof spelled, "-%c", *c);
      if (!p) return say(msg, size, "%s: this srun option is not offered by gpool (docs/slurm.md)", spelled);
      if (p->takes == 1) {
        const char *v = c[1] ? c + 1 : NULL;
        if (!v) {
          if (i + 1 >= argc) return say(msg, size, "%s needs a value", spelled);
          v = argv[++i];
        }
        int rc = apply(p->id, spelled, v, env, o, msg, size);
        if (rc) return rc;
        break;
      }
      int rc = apply(p->id, spelled, NULL, env, o, msg, size);
      if (rc) return rc;
    }
  }
  if (i >= argc) return say(msg, size, "no command to run (usage: srun [OPTIONS] COMMAND [ARGS...])");
  o->argc = argc - i;
  o->argv = argv + i;
  return 0;
}

void gp_srun_opts_done(gp_srun_opts *o) {
  json_decref(o->nodelist);
  json_decref(o->export_set);
  json_decref(o->export_names);
  free(o->jobid);
  free(o->output);
  free(o->error);
  memset(o, 0, sizeof *o);
}

static const char *twin_of(const char *k) {
  static const char *const names[] = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
                                      "LOCAL_WORLD_SIZE", "NODE_RANK", NULL};
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], k) == 0) return names[i];
  return NULL;
}

static const char *item_value(char *const *items, const char *key) {
  size_t kl = strlen(key);
  for (char *const *p = items; p && *p; p++)
    if (strncmp(*p, key, kl) == 0 && (*p)[kl] == '=') return *p + kl + 1;
  return NULL;
}

json_t *gp_srun_env(const gp_srun_opts *o, char *const *items, char *msg, size_t size) {
  json_t *env = json_object();
  for (char *const *p = items; o->export_mode != 1 && p && *p; p++) {
    const char *eq = strchr(*p, '=');
    if (!eq || !var_name(*p, (size_t)(eq - *p))) continue;
    char key[260];
    snprintf(key, sizeof key, "%.*s", (int)(eq - *p), *p);
    if (strncmp(key, "GPOOL_", 6) == 0) continue;
    if (o->export_mode == 2) {
      bool named = false;
      for (size_t k = 0; k < json_array_size(o->export_names) && !named; k++)
        named = strcmp(json_string_value(json_array_get(o->export_names, k)), key) == 0;
      if (!named) continue;
    }
    if (twin_of(key)) {
      char twin[300];
      snprintf(twin, sizeof twin, "GPOOL_%s", key);
      const char *t = item_value(items, twin);
      if (t && strcmp(t, eq + 1) == 0) continue; /* gpool's value for the job task */
    }
    json_object_set_new(env, key, json_string(eq + 1));
  }
  if (o->export_set) json_object_update(env, o->export_set);
  size_t bytes = 0;
  const char *k;
  json_t *v;
  json_object_foreach(env, k, v) bytes += strlen(k) + strlen(json_string_value(v)) + 2;
  if (json_object_size(env) > GP_PROTO_MAX_STEP_ENV || bytes > GP_PROTO_MAX_STEP_ENV_BYTES) {
    snprintf(msg, size, "the environment holds %zu variables in %zu bytes, more than a step takes (%d in %d bytes): "
             "pass fewer with --export=NAME,...", json_object_size(env), bytes, GP_PROTO_MAX_STEP_ENV,
             GP_PROTO_MAX_STEP_ENV_BYTES);
    json_decref(env);
    return NULL;
  }
  return env;
}
