/* SPDX-License-Identifier: Apache-2.0 */
/* Fleets for a replay: shorthand ("352x8xV100,16x8xA100:reserved"), a node list CSV
 * (openb's columns, and an optional capacity column), a YAML/JSON pool description (the
 * `nodes:` part of a `gpool plan` snapshot, read by the snapshot reader), or the Helios
 * Philly fleet from philly_vc_nodes.csv. Every node has a capacity type (what its GPU-hours
 * cost when the replay is priced); on-prem unless the spec says otherwise. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/replay/replay.h"
#include "sim/replay/vc.h"
#include "sim/trace/node_list.h"
#include "sim/trace/reader.h"
#include "snapshot/snapshot.h"
#include "util/doc.h"
#include "util/units.h"

#define MAX_FLEET_NODES 200000
#define FLEET_MAX_BYTES ((size_t)64 << 20)

static gp_fleet *fleet_new(void) {
  gp_fleet *f = gp_xcalloc(1, sizeof *f);
  f->arena = gp_arena_new();
  return f;
}

void gp_fleet_free(gp_fleet *f) {
  if (!f) return;
  gp_arena_free(f->arena);
  free(f);
}

/* Fills totals and, for shared fleets, marks every GPU shared. */
static int fleet_finish(gp_fleet *f, bool shared, const char *src, gp_err *err) {
  if (f->n_nodes < 1) return gp_err_set(err, GP_EINVAL, src, 0, NULL, "the fleet has no node");
  f->total_gpus = 0;
  f->shared = shared;
  f->max_node_gpus = 0;
  for (int i = 0; i < f->n_nodes; i++) {
    gp_node *n = &f->nodes[i];
    f->total_gpus += n->n_gpus;
    if (n->n_gpus > f->max_node_gpus) f->max_node_gpus = n->n_gpus;
    if (shared && n->n_gpus > 0 && !n->gpus) {
      gp_gpu *g = gp_arena_alloc(f->arena, (size_t)n->n_gpus * sizeof *g);
      for (int k = 0; k < n->n_gpus; k++) {
        g[k].mode = GP_SHARE_SHARED;
        g[k].nvlink_domain = -1;
      }
      n->gpus = g;
    }
  }
  return 0;
}

static void node_init(gp_fleet *f, gp_node *n, const char *name, const char *model, int gpus) {
  memset(n, 0, sizeof *n);
  n->name = gp_arena_strdup(f->arena, name);
  n->model = gp_arena_strdup(f->arena, model);
  n->n_gpus = gpus;
  int64_t mem = 0;
  n->gpu_mem_mib = gp_gpu_model_mem_mib(model, &mem) == 0 ? mem : 0;
  n->cpu_milli = GP_UNTRACKED_CPU_MILLI;
  n->mem_mib = GP_UNTRACKED_MEM_MIB;
  n->capacity = GP_CAP_ON_PREM;
  n->state = GP_NODE_UP;
}

/* A capacity type by name, with an error naming the field and the names there are. */
static int parse_capacity(const char *s, const char *file, int line, const char *field,
                          gp_capacity *ret, gp_err *err) {
  if (gp_capacity_parse(s, ret) == 0) return 0;
  return gp_err_set(err, GP_EINVAL, file, line, field,
                    "unknown capacity type '%s' (on-demand, reserved, spot or on-prem)", s);
}

/* "352x8xV100,16x8xA100", "352x8", and any group with ":CAPACITY" ("32x8xH100:reserved"). */
static int parse_shorthand(const char *spec, gp_fleet *f, gp_err *err) {
  int64_t total = 0;
  int cap = 0, rc;
  const char *p = spec;
  while (*p) {
    char *end;
    errno = 0;
    long nodes = strtol(p, &end, 10);
    if (end == p || *end != 'x' || nodes < 1 || errno)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "fleet",
                        "expected NODESxGPUSxMODEL (e.g. 352x8xV100), got '%s'", spec);
    p = end + 1;
    long gpus = strtol(p, &end, 10);
    if (end == p || gpus < 1 || gpus > GP_MAX_NODE_GPUS)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "fleet",
                        "GPUs per node must be 1 to %d in '%s'", GP_MAX_NODE_GPUS, spec);
    p = end;
    char model[64] = "gpu";
    if (*p == 'x') {
      p++;
      size_t n = strcspn(p, ",:");
      if (n == 0 || n >= sizeof model)
        return gp_err_set(err, GP_EINVAL, NULL, 0, "fleet", "bad GPU model in '%s'", spec);
      memcpy(model, p, n);
      model[n] = '\0';
      p += n;
    }
    gp_capacity capacity = GP_CAP_ON_PREM;
    if (*p == ':') {
      p++;
      char name[32];
      size_t n = strcspn(p, ",");
      if (n == 0 || n >= sizeof name)
        return gp_err_set(err, GP_EINVAL, NULL, 0, "fleet.capacity",
                          "expected on-demand, reserved, spot or on-prem after ':' in '%s'", spec);
      memcpy(name, p, n);
      name[n] = '\0';
      p += n;
      if ((rc = parse_capacity(name, NULL, 0, "fleet.capacity", &capacity, err))) return rc;
    }
    if (*p == ',') p++;
    else if (*p)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "fleet", "unexpected '%s' in '%s'", p, spec);
    total += nodes;
    if (total > MAX_FLEET_NODES)
      return gp_err_set(err, GP_ELIMIT, NULL, 0, "fleet", "more than %d nodes", MAX_FLEET_NODES);
    int base = f->n_nodes;
    if (base + nodes > cap) {
      cap = (int)total;
      gp_node *grown = gp_arena_alloc(f->arena, (size_t)cap * sizeof *grown);
      if (base) memcpy(grown, f->nodes, (size_t)base * sizeof *grown);
      f->nodes = grown;
    }
    for (long i = 0; i < nodes; i++) {
      char name[96];
      snprintf(name, sizeof name, "%s-%05ld", model, (long)(base + i));
      node_init(f, &f->nodes[base + i], name, model, (int)gpus);
      f->nodes[base + i].capacity = capacity;
    }
    f->n_nodes = base + (int)nodes;
  }
  return 0;
}

typedef struct csv_fleet {
  gp_fleet *f;
  const char *path;
  int cap;
} csv_fleet;

static int add_csv_node(void *arg, const gp_node_row *row, gp_err *err) {
  csv_fleet *c = arg;
  gp_fleet *f = c->f;
  if (f->n_nodes >= MAX_FLEET_NODES)
    return gp_err_set(err, GP_ELIMIT, c->path, row->line, NULL, "more than %d nodes", MAX_FLEET_NODES);
  if (f->n_nodes == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 256;
    gp_node *grown = gp_arena_alloc(f->arena, (size_t)c->cap * sizeof *grown);
    if (f->n_nodes) memcpy(grown, f->nodes, (size_t)f->n_nodes * sizeof *grown);
    f->nodes = grown;
  }
  gp_node *node = &f->nodes[f->n_nodes++];
  node_init(f, node, row->name, row->model && *row->model ? row->model : "gpu", row->gpus);
  if (row->cpu_milli >= 0) node->cpu_milli = row->cpu_milli;
  if (row->mem_mib >= 0) node->mem_mib = row->mem_mib;
  if (row->capacity && *row->capacity)
    return parse_capacity(row->capacity, c->path, row->line, "capacity", &node->capacity, err);
  return 0;
}

/* A node list CSV (sim/trace/node_list.h): every row a node. */
static int read_node_csv(const char *path, gp_fleet *f, gp_err *err) {
  csv_fleet c = {.f = f, .path = path};
  return gp_node_list_read(path, add_csv_node, &c, err);
}

static int read_node_yaml(const char *path, gp_fleet *f, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_file(path, &d, err);
  if (rc) return rc;
  const gp_doc_node *seq = d->root;
  if (seq && seq->kind == GP_DOC_MAP) seq = gp_doc_get(d->root, "nodes");
  if (!seq) {
    rc = gp_err_set(err, GP_EINVAL, path, d->root ? d->root->line : 1, "nodes",
                    "expected a `nodes:` list");
  } else {
    rc = gp_nodes_read(d, seq, "nodes", NULL, f->arena, &f->nodes, &f->n_nodes, err);
    /* A replay's machines are on-prem unless a node says otherwise, whatever the fleet's
     * form (the snapshot reader's own default is the server's, on-demand). */
    for (int i = 0; !rc && i < f->n_nodes; i++)
      if (!gp_doc_get(seq->items[i], "capacity")) f->nodes[i].capacity = GP_CAP_ON_PREM;
  }
  gp_doc_free(d);
  return rc;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int gp_fleet_load(const char *spec, bool shared_gpus, gp_fleet **ret, gp_err *err) {
  gp_fleet *f = fleet_new();
  int rc;
  if (ends_with(spec, ".csv"))
    rc = read_node_csv(spec, f, err);
  else if (ends_with(spec, ".yaml") || ends_with(spec, ".yml") || ends_with(spec, ".json"))
    rc = read_node_yaml(spec, f, err);
  else if (isdigit((unsigned char)spec[0]))
    rc = parse_shorthand(spec, f, err);
  else
    rc = gp_err_set(err, GP_EINVAL, NULL, 0, "fleet",
                    "'%s' is neither NODESxGPUSxMODEL nor a .csv/.yaml/.json file", spec);
  if (!rc) rc = fleet_finish(f, shared_gpus, spec, err);
  if (rc) {
    gp_fleet_free(f);
    return rc;
  }
  *ret = f;
  return 0;
}

/* ---- the Philly VC file: "vc,node num" ---- */

int gp__sim_read_vc_file(const char *path, gp__sim_vc_entry **ret, int *ret_n, gp_err *err) {
  size_t len;
  char *text = gp__sim_trace_slurp(path, FLEET_MAX_BYTES, &len, err);
  if (!text) return err ? err->code : GP_EIO;
  gp__sim_vc_entry *v = NULL;
  int n = 0, line = 0, rc = 0;
  bool header = true;
  char *fields[8];
  for (char *p = text; *p && !rc;) {
    char *s = gp__sim_trace_next_line(&p);
    line++;
    if (!*s) continue;
    int k = gp__sim_csv_split(s, fields, 8);
    if (header) {
      header = false;
      if (k == 2 && !isdigit((unsigned char)fields[1][0])) continue; /* "vc,node num" */
    }
    int64_t nodes;
    if (k != 2 || !*fields[0] || strlen(fields[0]) >= sizeof v->name ||
        gp_parse_int64(fields[1], &nodes) || nodes < 0 || nodes > MAX_FLEET_NODES) {
      rc = gp_err_set(err, GP_EINVAL, path, line, NULL,
                      "expected 'vc,nodes' with a node count from 0 to %d", MAX_FLEET_NODES);
      break;
    }
    if (n >= 10000) {
      rc = gp_err_set(err, GP_ELIMIT, path, line, NULL, "more than 10000 virtual clusters");
      break;
    }
    v = gp_xrealloc(v, (size_t)(n + 1) * sizeof *v);
    snprintf(v[n].name, sizeof v[n].name, "%s", fields[0]);
    v[n].nodes = (int)nodes;
    v[n].line = line;
    n++;
  }
  free(text);
  if (!rc && n == 0) rc = gp_err_set(err, GP_EINVAL, path, 0, NULL, "no virtual cluster listed");
  if (rc) {
    free(v);
    return rc;
  }
  *ret = v;
  *ret_n = n;
  return 0;
}

int gp_fleet_from_vc_file(const char *path, gp_fleet **ret, gp_err *err) {
  gp__sim_vc_entry *v = NULL;
  int n = 0;
  int rc = gp__sim_read_vc_file(path, &v, &n, err);
  if (rc) return rc;
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += v[i].nodes;
  if (total > MAX_FLEET_NODES) {
    free(v);
    return gp_err_set(err, GP_ELIMIT, path, 0, NULL, "more than %d nodes", MAX_FLEET_NODES);
  }
  gp_fleet *f = fleet_new();
  f->nodes = gp_arena_alloc(f->arena, (size_t)(total ? total : 1) * sizeof *f->nodes);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < v[i].nodes; k++) {
      char name[96];
      snprintf(name, sizeof name, "%s-%03d", v[i].name, k);
      gp_node *node = &f->nodes[f->n_nodes++];
      node_init(f, node, name, "philly", 8);
      gp_label *l = gp_arena_alloc(f->arena, sizeof *l);
      l->key = "queue";
      l->value = gp_arena_strdup(f->arena, v[i].name);
      node->labels = l;
      node->n_labels = 1;
    }
  free(v);
  rc = fleet_finish(f, false, path, err);
  if (rc) {
    gp_fleet_free(f);
    return rc;
  }
  *ret = f;
  return 0;
}
