/* SPDX-License-Identifier: Apache-2.0 */
/* The fragmentation simulator's trace (see trace.h): the rows come from the simulator's
 * one node list reader and one trace reader, which check every field; this file keeps
 * what the simulator uses, adds its own bounds (GPUs per node and pod, CPU and memory
 * sizes) and interns GPU models and gpu_specs. Its errors name file, line and field too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/frag/trace.h"
#include "sim/trace/node_list.h"
#include "sim/trace/trace.h"
#include "util/mem.h"

#define MAX_CPU_MILLI 100000000LL  /* 100k cores */
#define MAX_MEM_MIB 1000000000LL   /* ~1 PiB */
#define MAX_GPUS 32
#define MAX_MODELS 256
#define MAX_SPECS 4096

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

typedef struct node_reader {
  gp_frag_trace *t;
  const char *path;
  size_t cap;
  int rows;
} node_reader;

/* One row of the node list: a GPU node with its model, or a CPU-only node counted and left
 * out. This simulator needs every node's CPU and memory and bounds them. */
static int add_node(void *arg, const gp_node_row *row, gp_err *err) {
  node_reader *r = arg;
  gp_frag_trace *t = r->t;
  r->rows++;
  if (row->cpu_milli < 0)
    return gp_err_set(err, GP_EINVAL, r->path, row->line, "cpu_milli", "the node list has no cpu_milli column");
  if (row->mem_mib < 0)
    return gp_err_set(err, GP_EINVAL, r->path, row->line, "memory_mib", "the node list has no memory_mib column");
  if (row->cpu_milli > MAX_CPU_MILLI)
    return gp_err_set(err, GP_EINVAL, r->path, row->line, "cpu_milli", "%lld is over %lld",
                      (long long)row->cpu_milli, MAX_CPU_MILLI);
  if (row->mem_mib > MAX_MEM_MIB)
    return gp_err_set(err, GP_EINVAL, r->path, row->line, "memory_mib", "%lld is over %lld",
                      (long long)row->mem_mib, MAX_MEM_MIB);
  if (row->gpus == 0) {
    t->skipped_cpu_nodes++;
    return 0;
  }
  if (!row->model || !row->model[0])
    return gp_err_set(err, GP_EINVAL, r->path, row->line, "model", "a node with GPUs needs a model");
  int m = model_index(t, row->model, r->path, row->line, "model", err);
  if (m < 0) return m;
  if (t->n_nodes >= GP_FRAG_MAX_ROWS)
    return gp_err_set(err, GP_ELIMIT, r->path, row->line, NULL, "more than %d nodes", GP_FRAG_MAX_ROWS);
  gp_xgrow((void **)&t->nodes, &r->cap, (size_t)t->n_nodes + 1, sizeof(gp_frag_node));
  t->nodes[t->n_nodes++] = (gp_frag_node){row->cpu_milli, row->mem_mib, row->gpus, m};
  return 0;
}

/* The node list through the one node list reader. */
static int read_nodes(gp_frag_trace *t, const char *path, gp_err *err) {
  node_reader r = {.t = t, .path = path};
  int rc = gp_node_list_read(path, add_node, &r, err);
  if (!rc && r.rows == 0)
    rc = gp_err_set(err, GP_EINVAL, path, 0, NULL, "no node listed (an empty file, or a header alone)");
  else if (!rc && t->n_nodes == 0)
    rc = gp_err_set(err, GP_EINVAL, path, 0, NULL, "no GPU nodes");
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

int gp_frag_trace_spec(gp_frag_trace *t, const char *spec, gp_err *err) {
  return spec_index(t, spec, NULL, 0, err);
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
