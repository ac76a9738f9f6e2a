/* SPDX-License-Identifier: Apache-2.0 */
/* Reads `node_templates:` from the server config: the shape, price and limits through the
 * shared reader (snapshot/template_read.h), then the provider's keys. Every value reaches a
 * provider's request or environment, so each is bounded and checked, naming the key: a
 * template that loads is one a provider call can be made from. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/model.h"
#include "server/state/node_templates.h"


static int fail(const gp_doc *d, const gp_doc_node *n, const char *field, const char *msg,
                gp_err *err) {
  return gp_err_set(err, GP_EINVAL, d->name, n ? n->line : 0, field, "%s", msg);
}

static bool env_name_ok(const char *k) {
  if (!k || !*k || strlen(k) > 128 || (*k >= '0' && *k <= '9')) return false;
  for (const char *c = k; *c; c++)
    if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
      return false;
  return strcmp(k, "PATH") != 0 && strcmp(k, "GPOOL_TEMPLATE") != 0;
}

static bool text_ok(const char *s, size_t max) {
  if (!s || strlen(s) > max) return false;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if (*c < 0x20 || *c == 0x7f) return false;
  return true;
}

static int read_env(const gp_doc *d, const gp_doc_node *m, const char *field, gp_arena *a,
                    gp_provider_template *t, gp_err *err) {
  int r = gp_doc_expect(d, m, field, GP_DOC_MAP, err);
  if (r) return r;
  if (m->n > GP_PROVIDER_MAX_ENV) return fail(d, m, field, "at most 64 variables", err);
  const char **vars = gp_arena_alloc(a, sizeof *vars * (size_t)(m->n + 1));
  for (int i = 0; i < m->n; i++) {
    char f[256];
    const char *v;
    gp_doc_path(f, sizeof f, field, m->keys[i]);
    if ((r = gp_doc_str(d, m->items[i], f, &v, err))) return r;
    if (!env_name_ok(m->keys[i]))
      return fail(d, m->items[i], f,
                  "an environment variable name ([A-Za-z_][A-Za-z0-9_]*, not PATH or GPOOL_TEMPLATE)", err);
    if (!text_ok(v, 4096)) return fail(d, m->items[i], f, "at most 4096 printable characters", err);
    vars[i] = gp_arena_printf(a, "%s=%s", m->keys[i], v);
  }
  t->env = vars;
  t->n_env = m->n;
  return 0;
}

/* The provider's own keys of template i; the shape and limits are read already. */
static int read_provider(const gp_doc *d, const gp_doc_node *m, const char *path, gp_arena *a,
                         gp_node_template *out, gp_err *err) {
  gp_provider_template *t = &out->t;
  const gp_node *shape = &out->spec.t.node;
  char f[256];
  const gp_doc_node *n;
  const char *v;
  int r;
  int64_t iv;
  t->name = shape->name;
  t->model = shape->model;
  t->gpus = shape->n_gpus;
  t->gpu_mem_mib = shape->gpu_mem_mib;
  t->capacity = gp_capacity_name(shape->capacity);
  t->price_per_gpu_hour = out->spec.price_per_gpu_hour;
  t->max_nodes = out->spec.t.max_nodes;
  const char **keys = gp_arena_alloc(a, sizeof *keys * (size_t)(shape->n_labels + 1));
  const char **vals = gp_arena_alloc(a, sizeof *vals * (size_t)(shape->n_labels + 1));
  for (int i = 0; i < shape->n_labels; i++) {
    keys[i] = shape->labels[i].key;
    vals[i] = shape->labels[i].value;
  }
  t->label_keys = keys;
  t->label_values = vals;
  t->n_labels = shape->n_labels;
  gp_doc_path(f, sizeof f, path, "provider");
  if (!(n = gp_doc_get(m, "provider"))) return fail(d, m, f, "is required", err);
  if ((r = gp_doc_str(d, n, f, &v, err))) return r;
  struct stat st;
  if (v[0] != '/' || !text_ok(v, 1024))
    return fail(d, n, f, "must be the absolute path of an executable", err);
  if (stat(v, &st) != 0 || !S_ISREG(st.st_mode) || access(v, X_OK) != 0)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "%s is not an executable file", v);
  t->provider = gp_arena_strdup(a, v);
  if ((n = gp_doc_get(m, "env"))) {
    gp_doc_path(f, sizeof f, path, "env");
    if ((r = read_env(d, n, f, a, t, err))) return r;
  }
  out->timeout_s = 60;
  if ((n = gp_doc_get(m, "timeout"))) {
    gp_doc_path(f, sizeof f, path, "timeout");
    if ((r = gp_doc_duration_s(d, n, f, &iv, err))) return r;
    if (iv < 1 || iv > 3600) return fail(d, n, f, "must be 1 s .. 1 h", err);
    out->timeout_s = (int)iv;
  }
  return 0;
}

int gp_node_templates_read(const gp_doc *d, const gp_doc_node *seq, const char *path, gp_arena *a,
                           gp_node_template **ret, int *ret_n, gp_err *err) {
  static const char *const provider_keys[] = {"provider", "env", "timeout", NULL};
  gp_template_spec *specs;
  int n;
  int r = gp_templates_read(d, seq, path, provider_keys, a, &specs, &n, err);
  if (r) return r;
  gp_node_template *ts = gp_arena_alloc(a, sizeof *ts * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    char f[128];
    snprintf(f, sizeof f, "%s[%d]", path, i);
    memset(&ts[i], 0, sizeof ts[i]);
    ts[i].spec = specs[i];
    if ((r = read_provider(d, seq->items[i], f, a, &ts[i], err))) return r;
  }
  *ret = ts;
  *ret_n = n;
  return 0;
}
