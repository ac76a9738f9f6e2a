/* SPDX-License-Identifier: Apache-2.0 */
/* openb trace readers (see trace.h). Plain CSV as the traces use it: no quoting, one
 * record per line, `\r\n` tolerated. Lines over 64 KiB, fields out of range and
 * inconsistent GPU requests are errors naming file, line and field. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/frag/trace.h"
#include "sim/trace/trace.h"
#include "util/mem.h"

#define MAX_LINE 65536
#define MAX_FIELDS 64
#define MAX_CPU_MILLI 100000000LL  /* 100k cores */
#define MAX_MEM_MIB 1000000000LL   /* ~1 PiB */
#define MAX_GPUS 32
#define MAX_MODELS 256
#define MAX_SPECS 4096

typedef struct csv {
  FILE *f;
  const char *path;
  int line;
  char buf[MAX_LINE + 2];
  char *field[MAX_FIELDS];
  int n;
} csv;

/* Reads the next non-empty line and splits it. 1: a row, 0: end of file, <0: error. */
static int csv_next(csv *c, gp_err *err) {
  for (;;) {
    if (!fgets(c->buf, sizeof(c->buf), c->f)) {
      if (ferror(c->f)) return gp_err_set(err, GP_EIO, c->path, c->line, NULL, "read error");
      return 0;
    }
    c->line++;
    size_t len = strlen(c->buf);
    if (len && c->buf[len - 1] != '\n' && !feof(c->f))
      return gp_err_set(err, GP_ELIMIT, c->path, c->line, NULL, "line longer than %d bytes",
                        MAX_LINE);
    while (len && (c->buf[len - 1] == '\n' || c->buf[len - 1] == '\r')) c->buf[--len] = 0;
    if (len == 0) continue;
    c->n = 0;
    char *p = c->buf;
    for (;;) {
      if (c->n == MAX_FIELDS)
        return gp_err_set(err, GP_ELIMIT, c->path, c->line, NULL, "more than %d fields",
                          MAX_FIELDS);
      c->field[c->n++] = p;
      char *comma = strchr(p, ',');
      if (!comma) break;
      *comma = 0;
      p = comma + 1;
    }
    return 1;
  }
}

static int col(const csv *c, const char *name) {
  for (int i = 0; i < c->n; i++) {
    if (strcmp(c->field[i], name) == 0) return i;
  }
  return -1;
}

static int get_int(const csv *c, int idx, const char *name, int64_t lo, int64_t hi, int64_t *ret,
                   gp_err *err) {
  if (idx >= c->n)
    return gp_err_set(err, GP_EPARSE, c->path, c->line, name, "missing field (row has %d of them)",
                      c->n);
  const char *s = c->field[idx];
  if (!*s) return gp_err_set(err, GP_EINVAL, c->path, c->line, name, "empty value");
  errno = 0;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (errno || !end || *end || v < lo || v > hi)
    return gp_err_set(err, GP_EINVAL, c->path, c->line, name,
                      "\"%.40s\" is not a whole number in %lld..%lld", s, (long long)lo,
                      (long long)hi);
  *ret = v;
  return 0;
}

static int model_index(gp_frag_trace *t, const char *name, const char *path, int line,
                       const char *field, gp_err *err) {
  for (int i = 0; i < t->n_models; i++) {
    if (strcmp(t->models[i], name) == 0) return i;
  }
  if (t->n_models == MAX_MODELS)
    return gp_err_set(err, GP_ELIMIT, path, line, field, "more than %d GPU models",
                      MAX_MODELS);
  size_t len = strlen(name);
  if (len == 0 || len > 64)
    return gp_err_set(err, GP_EINVAL, path, line, field, "GPU model must be 1..64 chars");
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)name[i];
    if (ch < 0x21 || ch > 0x7e || ch == '|')
      return gp_err_set(err, GP_EINVAL, path, line, field, "bad character in GPU model");
  }
  t->models = gp_xrealloc(t->models, sizeof(char *) * (size_t)(t->n_models + 1));
  t->models[t->n_models] = gp_xstrdup(name);
  return t->n_models++;
}

static int open_csv(csv *c, const char *path, gp_err *err) {
  memset(c, 0, sizeof(*c));
  c->path = path;
  c->f = fopen(path, "r");
  if (!c->f) return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot open: %s", strerror(errno));
  int rc = csv_next(c, err);
  if (rc < 0) return rc;
  if (rc == 0) return gp_err_set(err, GP_EPARSE, path, 1, NULL, "empty file (no header)");
  return 0;
}

static int need_col(const csv *c, const char *name, int *ret, gp_err *err) {
  *ret = col(c, name);
  if (*ret < 0)
    return gp_err_set(err, GP_EPARSE, c->path, c->line, name, "header has no \"%s\" column",
                      name);
  return 0;
}

static int read_nodes(gp_frag_trace *t, const char *path, gp_err *err) {
  csv *c = gp_xmalloc(sizeof(csv));
  int rc = open_csv(c, path, err);
  int ccpu = 0, cmem = 0, cgpu = 0, cmodel = 0;
  if (!rc) rc = need_col(c, "cpu_milli", &ccpu, err);
  if (!rc) rc = need_col(c, "memory_mib", &cmem, err);
  if (!rc) rc = need_col(c, "gpu", &cgpu, err);
  if (!rc) rc = need_col(c, "model", &cmodel, err);
  size_t cap = 0;
  while (!rc) {
    int r = csv_next(c, err);
    if (r <= 0) {
      rc = r;
      break;
    }
    int64_t cpu = 0, mem = 0, gpu = 0;
    if ((rc = get_int(c, ccpu, "cpu_milli", 0, MAX_CPU_MILLI, &cpu, err)) ||
        (rc = get_int(c, cmem, "memory_mib", 0, MAX_MEM_MIB, &mem, err)) ||
        (rc = get_int(c, cgpu, "gpu", 0, MAX_GPUS, &gpu, err)))
      break;
    if (gpu == 0) {
      t->skipped_cpu_nodes++;
      continue;
    }
    if (cmodel >= c->n || !c->field[cmodel][0]) {
      rc = gp_err_set(err, GP_EINVAL, path, c->line, "model", "a node with GPUs needs a model");
      break;
    }
    int m = model_index(t, c->field[cmodel], path, c->line, "model", err);
    if (m < 0) {
      rc = m;
      break;
    }
    if (t->n_nodes >= GP_FRAG_MAX_ROWS) {
      rc = gp_err_set(err, GP_ELIMIT, path, c->line, NULL, "more than %d nodes", GP_FRAG_MAX_ROWS);
      break;
    }
    gp_xgrow((void **)&t->nodes, &cap, (size_t)t->n_nodes + 1, sizeof(gp_frag_node));
    t->nodes[t->n_nodes++] = (gp_frag_node){cpu, mem, (int)gpu, m};
  }
  if (!rc && t->n_nodes == 0) rc = gp_err_set(err, GP_EINVAL, path, 0, NULL, "no GPU nodes");
  if (c->f) fclose(c->f);
  free(c);
  return rc;
}

/* "A|B|C" -> index of an equal spec (same models, same order) or a new one. */
static int spec_index(gp_frag_trace *t, const char *s, const char *path, int line, gp_err *err) {
  const char *models[MAX_MODELS];
  int n = 0;
  char tmp[1024];
  size_t len = strlen(s);
  if (len >= sizeof(tmp))
    return gp_err_set(err, GP_ELIMIT, path, line, "gpu_spec", "gpu_spec too long");
  memcpy(tmp, s, len + 1);
  for (char *p = tmp;;) {
    char *bar = strchr(p, '|');
    if (bar) *bar = 0;
    if (!*p) return gp_err_set(err, GP_EINVAL, path, line, "gpu_spec", "empty model in gpu_spec");
    if (n == MAX_MODELS)
      return gp_err_set(err, GP_ELIMIT, path, line, "gpu_spec", "too many models");
    /* Models no node has still count (a pod that can never run is a failure to report). */
    int m = model_index(t, p, path, line, "gpu_spec", err);
    if (m < 0) return m;
    models[n++] = t->models[m];
    if (!bar) break;
    p = bar + 1;
  }
  for (int i = 0; i < t->n_specs; i++) {
    if (t->specs[i].n_models != n) continue;
    int j = 0;
    while (j < n && t->specs[i].models[j] == models[j]) j++;
    if (j == n) return i;
  }
  if (t->n_specs == MAX_SPECS)
    return gp_err_set(err, GP_ELIMIT, path, line, "gpu_spec", "more than %d gpu_specs", MAX_SPECS);
  t->specs = gp_xrealloc(t->specs, sizeof(gp_frag_spec) * (size_t)(t->n_specs + 1));
  t->specs[t->n_specs].n_models = n;
  t->specs[t->n_specs].models = gp_xcalloc((size_t)n, sizeof(char *));
  memcpy(t->specs[t->n_specs].models, models, sizeof(char *) * (size_t)n);
  return t->n_specs++;
}

/* One pod of the trace reader's job: its shape within this simulator's bounds. */
static int pod_from_job(gp_frag_trace *t, const gp_trace *tr, const gp_trace_job *j, int *spec_of,
                        gp_frag_pod *ret, gp_err *err) {
  const char *path = tr->source;
  if (j->cpu_milli > MAX_CPU_MILLI)
    return gp_err_set(err, GP_EINVAL, path, j->line, "cpu_milli", "%lld is over %lld",
                      (long long)j->cpu_milli, MAX_CPU_MILLI);
  if (j->mem_mib > MAX_MEM_MIB)
    return gp_err_set(err, GP_EINVAL, path, j->line, "memory_mib", "%lld is over %lld",
                      (long long)j->mem_mib, MAX_MEM_MIB);
  if (j->gpus > MAX_GPUS)
    return gp_err_set(err, GP_EINVAL, path, j->line, "num_gpu", "%d GPUs, more than %d",
                      j->gpus, MAX_GPUS);
  /* The reader keeps a share of one GPU as gpu_milli with gpus 0, whole GPUs as gpus. */
  int n_gpus = j->gpu_milli ? 1 : j->gpus;
  int spec = -1;
  if (j->gpu_models >= 0) {
    if (spec_of[j->gpu_models] < 0) {
      int rc = spec_index(t, gp_trace_name(tr, j->gpu_models), path, j->line, err);
      if (rc < 0) return rc;
      spec_of[j->gpu_models] = rc;
    }
    spec = spec_of[j->gpu_models];
  }
  *ret = (gp_frag_pod){j->cpu_milli, j->mem_mib, n_gpus,
                       j->gpu_milli ? j->gpu_milli : (n_gpus ? 1000 : 0), spec};
  return 0;
}

/* The pod list through the one trace reader, which checks every field and keeps the pods in
 * file order for shapes; this simulator adds its own bounds and splits gpu_specs. */
static int read_pods(gp_frag_trace *t, const char *path, gp_err *err) {
  gp_trace_opts o = {.format = GP_TRACE_OPENB, .shapes = true};
  gp_trace *tr = NULL;
  int rc = gp_trace_read_file(path, &o, &tr, err);
  if (rc) return rc;
  if (tr->n_jobs > GP_FRAG_MAX_ROWS) {
    rc = gp_err_set(err, GP_ELIMIT, path, tr->jobs[GP_FRAG_MAX_ROWS].line, NULL,
                    "more than %d pods", GP_FRAG_MAX_ROWS);
    gp_trace_free(tr);
    return rc;
  }
  int *spec_of = gp_xmalloc((tr->n_names ? tr->n_names : 1) * sizeof(int));
  for (size_t i = 0; i < tr->n_names; i++) spec_of[i] = -1;
  t->pods = gp_xcalloc(tr->n_jobs, sizeof(gp_frag_pod));
  for (size_t i = 0; i < tr->n_jobs && !rc; i++) {
    rc = pod_from_job(t, tr, &tr->jobs[i], spec_of, &t->pods[i], err);
    if (!rc) t->n_pods++;
  }
  free(spec_of);
  gp_trace_free(tr);
  return rc;
}

int gp_frag_trace_load(const char *nodes_csv, const char *pods_csv, gp_frag_trace **ret,
                       gp_err *err) {
  gp_frag_trace *t = gp_xcalloc(1, sizeof(*t));
  const char *base = strrchr(pods_csv, '/');
  base = base ? base + 1 : pods_csv;
  snprintf(t->name, sizeof(t->name), "%s", base);
  size_t n = strlen(t->name);
  if (n > 4 && strcmp(t->name + n - 4, ".csv") == 0) t->name[n - 4] = 0;
  int rc = read_nodes(t, nodes_csv, err);
  if (!rc) rc = read_pods(t, pods_csv, err);
  if (rc) {
    gp_frag_trace_free(t);
    return rc;
  }
  *ret = t;
  return 0;
}

void gp_frag_trace_free(gp_frag_trace *t) {
  if (!t) return;
  for (int i = 0; i < t->n_models; i++) free(t->models[i]);
  free(t->models);
  for (int i = 0; i < t->n_specs; i++) free(t->specs[i].models);
  free(t->specs);
  free(t->nodes);
  free(t->pods);
  free(t);
}
