/* SPDX-License-Identifier: Apache-2.0 */
/* Reads `node_templates:` maps: the shape through the node reader (one set of rules for a
 * node's keys), then the template's own keys. */
#include "snapshot/template_read.h"

#include <string.h>

#include "snapshot/read_util.h"
#include "snapshot/snapshot.h"

static const char *const own_keys[] = {"max_nodes", "price_per_gpu_hour", "disruption_budget", NULL};

static bool name_ok(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n > 63 || s[0] == '.' || s[0] == '-') return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  }
  return true;
}

static int read_int(const gp_doc *d, const gp_doc_node *m, const char *path, int i, const char *key,
                    int lo, int hi, int *ret, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(m, key);
  if (!n) return 0;
  char f[160];
  int64_t v;
  gp__snap_field(f, sizeof f, path, i, key);
  int r = gp_doc_int(d, n, f, &v, err);
  if (r) return r;
  if (v < lo || v > hi) return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be %d..%d", lo, hi);
  *ret = (int)v;
  return 0;
}

static int read_own(const gp_doc *d, const gp_doc_node *m, const char *path, int i, gp_template_spec *s,
                    gp_err *err) {
  char f[160];
  const gp_doc_node *n;
  int r;
  if ((n = gp_doc_get(m, "state"))) {
    gp__snap_field(f, sizeof f, path, i, "state");
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "a template has no state; its nodes do");
  }
  gp__snap_field(f, sizeof f, path, i, "name");
  if (!name_ok(s->t.node.name))
    return gp_err_set(err, GP_EINVAL, d->name, gp_doc_get(m, "name")->line, f,
                      "1..63 characters of A-Z a-z 0-9 . _ -, not starting with . or -");
  if (s->t.node.n_gpus < 1) {
    gp__snap_field(f, sizeof f, path, i, "gpus");
    return gp_err_set(err, GP_EINVAL, d->name, m->line, f, "a template has 1..%d GPUs", GP_MAX_NODE_GPUS);
  }
  s->t.max_nodes = 1;
  if ((r = read_int(d, m, path, i, "max_nodes", 0, GP_TEMPLATE_MAX_NODES, &s->t.max_nodes, err))) return r;
  s->disruption_budget = 1;
  if ((r = read_int(d, m, path, i, "disruption_budget", 0, GP_TEMPLATE_MAX_NODES, &s->disruption_budget, err)))
    return r;
  s->price_per_gpu_hour = -1;
  if ((n = gp_doc_get(m, "price_per_gpu_hour"))) {
    gp__snap_field(f, sizeof f, path, i, "price_per_gpu_hour");
    if ((r = gp_doc_double(d, n, f, &s->price_per_gpu_hour, err))) return r;
    if (!(s->price_per_gpu_hour >= 0 && s->price_per_gpu_hour <= 1e6))
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be 0..1000000");
  }
  return 0;
}

int gp_templates_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                      const char *const *extra_keys, gp_arena *a, gp_template_spec **ret,
                      int *ret_n, gp_err *err) {
  int r = gp__snap_list(d, seq, path, GP_MAX_TEMPLATES, err);
  if (r) return r;
  /* The node reader allows a node's keys and `state`; ours and the caller's are extras. */
  int n_extra = 0;
  while (extra_keys && extra_keys[n_extra]) n_extra++;
  const char **extra = gp_arena_alloc(a, sizeof *extra * (size_t)(n_extra + 4));
  int k = 0;
  for (int i = 0; own_keys[i]; i++) extra[k++] = own_keys[i];
  for (int i = 0; i < n_extra; i++) extra[k++] = extra_keys[i];
  extra[k] = NULL;
  gp_node *nodes;
  int n;
  if ((r = gp_nodes_read(d, seq, path, extra, a, &nodes, &n, err))) return r;
  gp_template_spec *specs = gp_arena_alloc(a, sizeof *specs * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) {
    memset(&specs[i], 0, sizeof specs[i]);
    specs[i].t.node = nodes[i];
    specs[i].t.node.state = GP_NODE_UP;
    if ((r = read_own(d, seq->items[i], path, i, &specs[i], err))) return r;
  }
  *ret = specs;
  *ret_n = n;
  return 0;
}
