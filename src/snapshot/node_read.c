/* SPDX-License-Identifier: Apache-2.0 */
/* Reads the nodes of a snapshot (see snapshot.h and docs/plan-format.md): a node's GPUs,
 * CPU, memory, NVLink domains, labels, capacity type and state, with per-GPU overrides for
 * health, sharing mode (exclusive, shared, timeslice:N, mig:<layout>), UUID and memory.
 * MIG layouts are validated against the model by core/mig.h. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/mig.h"
#include "snapshot/policy_read.h"
#include "snapshot/read_util.h"
#include "snapshot/snapshot.h"
#include "util/units.h"

/* Models whose names carry no size; from DOMAIN.md's table (GB as GiB, as the MIG guide
 * writes its profile sizes). Names with "<N>GB" in them ("H100-80GB") need no table. */
static const struct {
  const char *prefix;
  int gib;
} model_mem[] = {
    {"H100 NVL", 94}, {"H100NVL", 94}, {"H100", 80}, {"H200", 141}, {"A100", 80},
    {"B200", 180},    {"B300", 288},   {"GB300", 288}, {"GB200", 186}, {"L40S", 48},
    {"L40", 48},      {"L4", 24},      {"A10G", 24},  {"A10", 24},   {"T4", 16},
    {"V100", 16},     {"A30", 24},     {"A40", 48},   {"RTX", 24},
};

int gp_gpu_model_mem_mib(const char *model, int64_t *ret_mib) {
  if (!model) return GP_ENOENT;
  /* "<digits>GB" (or "G") anywhere, e.g. "H100-80GB", "A100-SXM4-40GB", "H200-141GB". */
  for (const char *p = model; *p; p++) {
    if (!isdigit((unsigned char)*p) || (p > model && isdigit((unsigned char)p[-1]))) continue;
    char *end;
    long v = strtol(p, &end, 10);
    if ((*end == 'G' || *end == 'g') && (end[1] == 'B' || end[1] == 'b') && v > 0 &&
        v <= 4096 && (p == model || !isalpha((unsigned char)p[-1]))) {
      *ret_mib = (int64_t)v * 1024;
      return 0;
    }
  }
  const char *name = model;
  if (!strncasecmp(name, "NVIDIA ", 7)) name += 7;
  for (size_t i = 0; i < sizeof model_mem / sizeof model_mem[0]; i++)
    if (!strncasecmp(name, model_mem[i].prefix, strlen(model_mem[i].prefix))) {
      *ret_mib = (int64_t)model_mem[i].gib * 1024;
      return 0;
    }
  return GP_ENOENT;
}

/* Cores as a number ("96", "0.5") -> milli-CPU. */
static int read_cpus(const gp_doc *d, const gp_doc_node *n, const char *f, int64_t *ret,
                     gp_err *err) {
  double v;
  int r = gp_doc_double(d, n, f, &v, err);
  if (r) return r;
  if (!isfinite(v) || v < 0 || v > 1e6)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "must be a number of CPU cores between 0 and 1000000");
  *ret = (int64_t)llround(v * 1000);
  return 0;
}

/* Host memory: `mem_gib` (a number of GiB) or `mem` ("512G"); not both. */
int gp__snap_read_host_mem(const gp_doc *d, const gp_doc_node *m, const char *path, int index,
                      int64_t *ret, bool *ret_found, gp_err *err) {
  const gp_doc_node *gib = gp_doc_get(m, "mem_gib"), *mem = gp_doc_get(m, "mem");
  char f[160];
  *ret_found = gib || mem;
  if (gib && mem) {
    gp__snap_field(f, sizeof f, path, index, "mem");
    return gp_err_set(err, GP_EINVAL, d->name, mem->line, f, "give mem_gib or mem, not both");
  }
  if (gib) {
    gp__snap_field(f, sizeof f, path, index, "mem_gib");
    double v;
    int r = gp_doc_double(d, gib, f, &v, err);
    if (r) return r;
    if (!isfinite(v) || v < 0 || v > 1e9)
      return gp_err_set(err, GP_EINVAL, d->name, gib->line, f,
                        "must be a number of GiB between 0 and 1000000000");
    *ret = (int64_t)llround(v * 1024);
  } else if (mem) {
    gp__snap_field(f, sizeof f, path, index, "mem");
    return gp_doc_mem_mib(d, mem, f, ret, err);
  }
  return 0;
}

/* Labels: a map of string keys to string values (numbers read as their text). */
int gp__snap_read_labels(const gp_doc *d, const gp_doc_node *n, const char *f, gp_arena *arena,
                    gp_label **ret, int *ret_n, gp_err *err) {
  int r = gp_doc_expect(d, n, f, GP_DOC_MAP, err);
  if (r) return r;
  if (n->n > GP_READ_MAX_LABELS)
    return gp_err_set(err, GP_ELIMIT, d->name, n->line, f, "more than %d labels",
                      GP_READ_MAX_LABELS);
  gp_label *l = gp_arena_alloc(arena, (size_t)(n->n ? n->n : 1) * sizeof *l);
  for (int i = 0; i < n->n; i++) {
    char kf[200];
    snprintf(kf, sizeof kf, "%s.%s", f, n->keys[i]);
    size_t klen = strlen(n->keys[i]);
    if (klen == 0 || klen > GP_READ_MAX_NAME)
      return gp_err_set(err, GP_EINVAL, d->name, n->items[i]->line, f,
                        "a label key must have 1 to %d bytes", GP_READ_MAX_NAME);
    l[i].key = gp_arena_strdup(arena, n->keys[i]);
    if ((r = gp__snap_read_name(d, n->items[i], kf, arena, &l[i].value, err))) return r;
  }
  *ret = l;
  *ret_n = n->n;
  return 0;
}

/* "exclusive", "shared", "timeslice:N", "mig:<layout>" into one GPU. */
static int read_mode(const gp_doc *d, const gp_doc_node *n, const char *f, const char *model,
                     gp_arena *arena, gp_gpu *g, gp_err *err) {
  const char *s;
  int r = gp_doc_str(d, n, f, &s, err);
  if (r) return r;
  if (!strcmp(s, "exclusive")) {
    g->mode = GP_SHARE_EXCLUSIVE;
  } else if (!strcmp(s, "shared")) {
    g->mode = GP_SHARE_SHARED;
  } else if (!strncmp(s, "timeslice:", 10)) {
    int64_t k;
    if (gp_parse_int64(s + 10, &k) || k < 2 || k > 64)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                        "timeslice:N needs N between 2 and 64, got '%.40s'", s + 10);
    g->mode = GP_SHARE_TIMESLICE;
    g->timeslice_replicas = (int)k;
  } else if (!strncmp(s, "mig:", 4)) {
    gp_mig_layout lay;
    gp_err me = {0};
    if (gp_mig_layout_parse(model, s, &lay, &me))
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "%s", me.message);
    gp_mig_instance *inst = gp_arena_alloc(arena, (size_t)lay.n * sizeof *inst);
    for (int i = 0; i < lay.n; i++) {
      inst[i].profile = gp_arena_strdup(arena, lay.profile[i]->name);
      inst[i].start_slot = lay.start_slot[i];
    }
    g->mode = GP_SHARE_MIG;
    g->mig = inst;
    g->n_mig = lay.n;
  } else {
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                      "'%.60s' is not one of: exclusive, shared, timeslice:N, mig:<layout>", s);
  }
  return 0;
}

/* An explicit MIG layout with UUIDs: [{profile, start_slot, uuid}]. */
static int read_mig_list(const gp_doc *d, const gp_doc_node *seq, const char *f,
                         const char *model, gp_arena *arena, gp_gpu *g, gp_err *err) {
  static const char *const keys[] = {"profile", "start_slot", "uuid", NULL};
  int r = gp__snap_list(d, seq, f, GP_MAX_MIG_INSTANCES, err);
  if (r) return r;
  gp_mig_instance *inst = gp_arena_alloc(arena, (size_t)(seq->n ? seq->n : 1) * sizeof *inst);
  char ff[200];
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i], *n;
    gp__snap_field(ff, sizeof ff, f, i, NULL);
    if ((r = gp__snap_check_keys(d, m, ff, keys, NULL, err))) return r;
    gp__snap_field(ff, sizeof ff, f, i, "profile");
    if (!(n = gp_doc_get(m, "profile")))
      return gp_err_set(err, GP_EINVAL, d->name, m->line, ff, "missing");
    if ((r = gp__snap_read_name(d, n, ff, arena, &inst[i].profile, err))) return r;
    inst[i].start_slot = -1;
    if ((n = gp_doc_get(m, "start_slot"))) {
      int64_t s;
      gp__snap_field(ff, sizeof ff, f, i, "start_slot");
      if ((r = gp_doc_int(d, n, ff, &s, err))) return r;
      if (s < 0 || s >= GP_MIG_SLOTS)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, ff, "must be 0..%d",
                          GP_MIG_SLOTS - 1);
      inst[i].start_slot = (int)s;
    }
    if ((n = gp_doc_get(m, "uuid"))) {
      gp__snap_field(ff, sizeof ff, f, i, "uuid");
      if ((r = gp__snap_read_name(d, n, ff, arena, &inst[i].uuid, err))) return r;
    }
  }
  gp_mig_layout lay;
  gp_err me = {0};
  if (gp_mig_layout_check(model, inst, seq->n, &lay, &me))
    return gp_err_set(err, GP_EINVAL, d->name, seq->line, f, "%s", me.message);
  for (int i = 0; i < seq->n; i++) inst[i].start_slot = lay.start_slot[i];
  g->mode = GP_SHARE_MIG;
  g->mig = inst;
  g->n_mig = seq->n;
  return 0;
}

static int read_gpu_list(const gp_doc *d, const gp_doc_node *seq, const char *f, gp_node *node,
                         gp_gpu *gpus, gp_arena *arena, gp_err *err) {
  static const char *const keys[] = {"index", "uuid", "health", "mode", "mem", "mig", NULL};
  int r = gp__snap_list(d, seq, f, GP_MAX_NODE_GPUS, err);
  if (r) return r;
  uint32_t seen = 0;
  char ff[200];
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *m = seq->items[i], *n;
    gp__snap_field(ff, sizeof ff, f, i, NULL);
    if ((r = gp__snap_check_keys(d, m, ff, keys, NULL, err))) return r;
    gp__snap_field(ff, sizeof ff, f, i, "index");
    if (!(n = gp_doc_get(m, "index")))
      return gp_err_set(err, GP_EINVAL, d->name, m->line, ff, "missing");
    int64_t idx;
    if ((r = gp_doc_int(d, n, ff, &idx, err))) return r;
    if (idx < 0 || idx >= node->n_gpus)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, ff,
                        "GPU %lld is out of range: node %s has %d GPUs", (long long)idx,
                        node->name, node->n_gpus);
    if (seen & (1u << idx))
      return gp_err_set(err, GP_EEXIST, d->name, n->line, ff, "GPU %lld is listed twice",
                        (long long)idx);
    seen |= 1u << idx;
    gp_gpu *g = &gpus[idx];
    if ((n = gp_doc_get(m, "uuid"))) {
      gp__snap_field(ff, sizeof ff, f, i, "uuid");
      if ((r = gp__snap_read_name(d, n, ff, arena, &g->uuid, err))) return r;
    }
    if ((n = gp_doc_get(m, "health"))) {
      const char *s;
      gp__snap_field(ff, sizeof ff, f, i, "health");
      if ((r = gp_doc_str(d, n, ff, &s, err))) return r;
      if (gp_gpu_health_parse(s, &g->health))
        return gp_err_set(err, GP_EINVAL, d->name, n->line, ff,
                          "'%.60s' is not one of: healthy, drained, failed", s);
    }
    if ((n = gp_doc_get(m, "mem"))) {
      gp__snap_field(ff, sizeof ff, f, i, "mem");
      if ((r = gp_doc_mem_mib(d, n, ff, &g->mem_mib, err))) return r;
    }
    if ((n = gp_doc_get(m, "mode"))) {
      gp__snap_field(ff, sizeof ff, f, i, "mode");
      g->mig = NULL;
      g->n_mig = 0;
      if ((r = read_mode(d, n, ff, node->model, arena, g, err))) return r;
    }
    if ((n = gp_doc_get(m, "mig"))) {
      gp__snap_field(ff, sizeof ff, f, i, "mig");
      const gp_doc_node *mode = gp_doc_get(m, "mode");
      if (mode && g->mode != GP_SHARE_MIG)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, ff,
                          "a MIG layout needs mode mig (or no mode)");
      if ((r = read_mig_list(d, n, ff, node->model, arena, g, err))) return r;
    }
  }
  return 0;
}

static int read_nvlink(const gp_doc *d, const gp_doc_node *seq, const char *f, gp_node *node,
                       gp_gpu *gpus, gp_err *err) {
  int r = gp__snap_list(d, seq, f, GP_MAX_NODE_GPUS, err);
  if (r) return r;
  uint32_t seen = 0;
  char ff[200];
  for (int i = 0; i < seq->n; i++) {
    const gp_doc_node *dom = seq->items[i];
    gp__snap_field(ff, sizeof ff, f, i, NULL);
    if ((r = gp__snap_list(d, dom, ff, GP_MAX_NODE_GPUS, err))) return r;
    for (int j = 0; j < dom->n; j++) {
      int64_t idx;
      gp__snap_field(ff, sizeof ff, f, i, NULL);
      char fj[220];
      snprintf(fj, sizeof fj, "%s[%d]", ff, j);
      if ((r = gp_doc_int(d, dom->items[j], fj, &idx, err))) return r;
      if (idx < 0 || idx >= node->n_gpus)
        return gp_err_set(err, GP_EINVAL, d->name, dom->items[j]->line, fj,
                          "GPU %lld is out of range: node %s has %d GPUs", (long long)idx,
                          node->name, node->n_gpus);
      if (seen & (1u << idx))
        return gp_err_set(err, GP_EINVAL, d->name, dom->items[j]->line, fj,
                          "GPU %lld is in two NVLink domains", (long long)idx);
      seen |= 1u << idx;
      gpus[idx].nvlink_domain = i;
    }
  }
  return 0;
}

static int read_node(const gp_doc *d, const gp_doc_node *m, const char *path, int i,
                     const char *const *extra_keys, gp_arena *arena, gp_node *node,
                     gp_err *err) {
  static const char *const keys[] = {"name", "model", "gpus", "gpu_mem", "cpus", "mem_gib",
                                     "mem", "nvlink_domains", "labels", "capacity", "state",
                                     "gpu_mode", "gpu_list", NULL};
  char f[160];
  gp__snap_field(f, sizeof f, path, i, NULL);
  int r = gp__snap_check_keys(d, m, f, keys, extra_keys, err);
  if (r) return r;
  const gp_doc_node *n = gp_doc_get(m, "name");
  gp__snap_field(f, sizeof f, path, i, "name");
  if (!n) return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "missing");
  if ((r = gp__snap_read_name(d, n, f, arena, &node->name, err))) return r;

  int64_t gpus = 0;
  if ((n = gp_doc_get(m, "gpus"))) {
    gp__snap_field(f, sizeof f, path, i, "gpus");
    if ((r = gp_doc_int(d, n, f, &gpus, err))) return r;
    if (gpus < 0 || gpus > GP_MAX_NODE_GPUS)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be 0..%d",
                        GP_MAX_NODE_GPUS);
  }
  node->n_gpus = (int)gpus;
  n = gp_doc_get(m, "model");
  gp__snap_field(f, sizeof f, path, i, "model");
  if (n) {
    if ((r = gp__snap_read_name(d, n, f, arena, &node->model, err))) return r;
  } else if (gpus > 0) {
    return gp_err_set(err, GP_EINVAL, d->name, m->line, f,
                      "missing: a node with GPUs names their model, e.g. H100-80GB");
  } else {
    node->model = "none";
  }
  if ((n = gp_doc_get(m, "gpu_mem"))) {
    gp__snap_field(f, sizeof f, path, i, "gpu_mem");
    if ((r = gp_doc_mem_mib(d, n, f, &node->gpu_mem_mib, err))) return r;
  } else if (gpus > 0 && gp_gpu_model_mem_mib(node->model, &node->gpu_mem_mib)) {
    gp__snap_field(f, sizeof f, path, i, "gpu_mem");
    return gp_err_set(err, GP_EINVAL, d->name, m->line, f,
                      "missing: the memory of a %s GPU is not known; give it, e.g. 80G",
                      node->model);
  }
  node->cpu_milli = GP_UNTRACKED_CPU_MILLI;
  if ((n = gp_doc_get(m, "cpus"))) {
    gp__snap_field(f, sizeof f, path, i, "cpus");
    if ((r = read_cpus(d, n, f, &node->cpu_milli, err))) return r;
  }
  bool found;
  int64_t mem = GP_UNTRACKED_MEM_MIB;
  if ((r = gp__snap_read_host_mem(d, m, path, i, &mem, &found, err))) return r;
  node->mem_mib = mem;
  if ((n = gp_doc_get(m, "labels"))) {
    gp__snap_field(f, sizeof f, path, i, "labels");
    gp_label *l;
    if ((r = gp__snap_read_labels(d, n, f, arena, &l, &node->n_labels, err))) return r;
    node->labels = l;
  }
  if ((n = gp_doc_get(m, "capacity"))) {
    const char *s;
    gp__snap_field(f, sizeof f, path, i, "capacity");
    if ((r = gp_doc_str(d, n, f, &s, err))) return r;
    if (gp_capacity_parse(s, &node->capacity))
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                        "'%.60s' is not one of: on-demand, reserved, spot, on-prem", s);
  }
  if ((n = gp_doc_get(m, "state"))) {
    const char *s;
    gp__snap_field(f, sizeof f, path, i, "state");
    if ((r = gp_doc_str(d, n, f, &s, err))) return r;
    if (gp_node_state_parse(s, &node->state))
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                        "'%.60s' is not one of: up, down, drain, cordon", s);
  }

  /* Per-GPU data: always spelled out, so the core never guesses. */
  gp_gpu *g = gp_arena_alloc(arena, (size_t)(gpus ? gpus : 1) * sizeof *g);
  for (int k = 0; k < gpus; k++) g[k].nvlink_domain = -1;
  if ((n = gp_doc_get(m, "gpu_mode"))) {
    gp__snap_field(f, sizeof f, path, i, "gpu_mode");
    for (int k = 0; k < gpus; k++)
      if ((r = read_mode(d, n, f, node->model, arena, &g[k], err))) return r;
  }
  if ((n = gp_doc_get(m, "nvlink_domains"))) {
    gp__snap_field(f, sizeof f, path, i, "nvlink_domains");
    if ((r = read_nvlink(d, n, f, node, g, err))) return r;
  }
  if ((n = gp_doc_get(m, "gpu_list"))) {
    gp__snap_field(f, sizeof f, path, i, "gpu_list");
    if ((r = read_gpu_list(d, n, f, node, g, arena, err))) return r;
  }
  node->gpus = g;
  return 0;
}

int gp_nodes_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                  const char *const *extra_keys, gp_arena *arena, gp_node **ret_nodes,
                  int *ret_n, gp_err *err) {
  int r = gp__snap_list(d, seq, path, GP_READ_MAX_NODES, err);
  if (r) return r;
  gp_node *nodes = gp_arena_alloc(arena, (size_t)(seq->n ? seq->n : 1) * sizeof *nodes);
  for (int i = 0; i < seq->n; i++)
    if ((r = read_node(d, seq->items[i], path, i, extra_keys, arena, &nodes[i], err)))
      return r;
  const char **names = gp_arena_alloc(arena, (size_t)(seq->n ? seq->n : 1) * sizeof *names);
  for (int i = 0; i < seq->n; i++) names[i] = nodes[i].name;
  gp__snap_names ix;
  int dup;
  if (gp__snap_names_build(&ix, names, seq->n, arena, &dup)) {
    char f[160];
    gp__snap_field(f, sizeof f, path, dup, "name");
    return gp_err_set(err, GP_EEXIST, d->name, gp_doc_get(seq->items[dup], "name")->line, f,
                      "node '%s' is defined twice", nodes[dup].name);
  }
  *ret_nodes = nodes;
  *ret_n = seq->n;
  return 0;
}
