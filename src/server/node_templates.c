/* SPDX-License-Identifier: Apache-2.0 */
/* Reads `node_templates:` from the server config. Every value reaches a provider's
 * request or environment, so each is bounded and checked here, naming the key: a template
 * that loads is one a provider call can be made from. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/model.h"
#include "server/node_templates.h"

#define MAX_TEMPLATES 256
#define MAX_LABELS 64

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

static int read_map(const gp_doc *d, const gp_doc_node *m, const char *field, bool env,
                    gp_arena *a, gp_provider_template *t, gp_err *err) {
  int r = gp_doc_expect(d, m, field, GP_DOC_MAP, err);
  if (r) return r;
  if (m->n > (env ? GP_PROVIDER_MAX_ENV : MAX_LABELS))
    return fail(d, m, field, env ? "at most 64 variables" : "at most 64 labels", err);
  const char **keys = gp_arena_alloc(a, sizeof *keys * (size_t)(m->n + 1));
  const char **vals = gp_arena_alloc(a, sizeof *vals * (size_t)(m->n + 1));
  for (int i = 0; i < m->n; i++) {
    char f[256];
    const char *v;
    gp_doc_path(f, sizeof f, field, m->keys[i]);
    if ((r = gp_doc_str(d, m->items[i], f, &v, err))) return r;
    if (env ? !env_name_ok(m->keys[i]) : !text_ok(m->keys[i], 256) || !*m->keys[i])
      return fail(d, m->items[i], f,
                  env ? "an environment variable name ([A-Za-z_][A-Za-z0-9_]*, not PATH or "
                        "GPOOL_TEMPLATE)"
                      : "a label key of 1..256 printable characters",
                  err);
    if (!text_ok(v, env ? 4096 : 256))
      return fail(d, m->items[i], f, env ? "at most 4096 printable characters" :
                                           "at most 256 printable characters", err);
    if (env) {
      keys[i] = gp_arena_printf(a, "%s=%s", m->keys[i], v);
    } else {
      keys[i] = gp_arena_strdup(a, m->keys[i]);
      vals[i] = gp_arena_strdup(a, v);
    }
  }
  if (env) {
    t->env = keys;
    t->n_env = m->n;
  } else {
    t->label_keys = keys;
    t->label_values = vals;
    t->n_labels = m->n;
  }
  return 0;
}

static int read_one(const gp_doc *d, const gp_doc_node *m, const char *path, gp_arena *a,
                    gp_node_template *out, gp_err *err) {
  static const char *const keys[] = {"name", "provider", "model", "gpus", "gpu_mem", "capacity",
                                     "price_per_gpu_hour", "labels", "max_nodes", "env",
                                     "timeout", NULL};
  int r = gp_doc_expect(d, m, path, GP_DOC_MAP, err);
  if (r || (r = gp_doc_check_keys(d, m, path, keys, err))) return r;
  gp_provider_template *t = &out->t;
  char f[256];
  const gp_doc_node *n;
  const char *v;
  static const char *const required[] = {"name", "provider", "model", "gpus"};
  for (int i = 0; i < 4; i++)
    if (!gp_doc_get(m, required[i])) {
      gp_doc_path(f, sizeof f, path, required[i]);
      return fail(d, m, f, "is required", err);
    }
  gp_doc_path(f, sizeof f, path, "name");
  n = gp_doc_get(m, "name");
  if ((r = gp_doc_str(d, n, f, &v, err))) return r;
  if (!gp_provider_node_valid(v))
    return fail(d, n, f, "1..63 characters of A-Z a-z 0-9 . _ -, not starting with . or -", err);
  t->name = gp_arena_strdup(a, v);
  gp_doc_path(f, sizeof f, path, "provider");
  n = gp_doc_get(m, "provider");
  if ((r = gp_doc_str(d, n, f, &v, err))) return r;
  struct stat st;
  if (v[0] != '/' || !text_ok(v, 1024))
    return fail(d, n, f, "must be the absolute path of an executable", err);
  if (stat(v, &st) != 0 || !S_ISREG(st.st_mode) || access(v, X_OK) != 0)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "%s is not an executable file", v);
  t->provider = gp_arena_strdup(a, v);
  gp_doc_path(f, sizeof f, path, "model");
  n = gp_doc_get(m, "model");
  if ((r = gp_doc_str(d, n, f, &v, err))) return r;
  if (!*v || !text_ok(v, 64)) return fail(d, n, f, "1..64 printable characters", err);
  t->model = gp_arena_strdup(a, v);
  int64_t iv;
  gp_doc_path(f, sizeof f, path, "gpus");
  n = gp_doc_get(m, "gpus");
  if ((r = gp_doc_int(d, n, f, &iv, err))) return r;
  if (iv < 1 || iv > GP_MAX_NODE_GPUS) return fail(d, n, f, "must be 1..32", err);
  t->gpus = (int)iv;
  if ((n = gp_doc_get(m, "gpu_mem"))) {
    gp_doc_path(f, sizeof f, path, "gpu_mem");
    if ((r = gp_doc_mem_mib(d, n, f, &t->gpu_mem_mib, err))) return r;
  }
  t->capacity = "on-demand";
  if ((n = gp_doc_get(m, "capacity"))) {
    static const char *const caps[] = {"on-demand", "reserved", "spot", "on-prem"};
    int k;
    gp_doc_path(f, sizeof f, path, "capacity");
    if ((r = gp_doc_enum(d, n, f, caps, 4, &k, err))) return r;
    gp_capacity c;
    if (gp_capacity_parse(caps[k], &c)) return fail(d, n, f, "unknown capacity", err);
    t->capacity = gp_capacity_name(c);
  }
  t->price_per_gpu_hour = -1;
  if ((n = gp_doc_get(m, "price_per_gpu_hour"))) {
    gp_doc_path(f, sizeof f, path, "price_per_gpu_hour");
    if ((r = gp_doc_double(d, n, f, &t->price_per_gpu_hour, err))) return r;
    if (!(t->price_per_gpu_hour >= 0 && t->price_per_gpu_hour <= 1e6))
      return fail(d, n, f, "must be 0..1000000", err);
  }
  t->max_nodes = 1;
  if ((n = gp_doc_get(m, "max_nodes"))) {
    gp_doc_path(f, sizeof f, path, "max_nodes");
    if ((r = gp_doc_int(d, n, f, &iv, err))) return r;
    if (iv < 0 || iv > 10000) return fail(d, n, f, "must be 0..10000", err);
    t->max_nodes = (int)iv;
  }
  if ((n = gp_doc_get(m, "labels"))) {
    gp_doc_path(f, sizeof f, path, "labels");
    if ((r = read_map(d, n, f, false, a, t, err))) return r;
  }
  if ((n = gp_doc_get(m, "env"))) {
    gp_doc_path(f, sizeof f, path, "env");
    if ((r = read_map(d, n, f, true, a, t, err))) return r;
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
  int r = gp_doc_expect(d, seq, path, GP_DOC_SEQ, err);
  if (r) return r;
  if (seq->n > MAX_TEMPLATES) return fail(d, seq, path, "at most 256 templates", err);
  gp_node_template *ts = gp_arena_alloc(a, sizeof *ts * (size_t)(seq->n + 1));
  for (int i = 0; i < seq->n; i++) {
    char f[128];
    snprintf(f, sizeof f, "%s[%d]", path, i);
    if ((r = read_one(d, seq->items[i], f, a, &ts[i], err))) return r;
    for (int k = 0; k < i; k++)
      if (strcmp(ts[k].t.name, ts[i].t.name) == 0) {
        char nf[160];
        gp_doc_path(nf, sizeof nf, f, "name");
        return gp_err_set(err, GP_EINVAL, d->name, seq->items[i]->line, nf,
                          "template %s is defined twice", ts[i].t.name);
      }
  }
  *ret = ts;
  *ret_n = seq->n;
  return 0;
}
