/* SPDX-License-Identifier: Apache-2.0 */
/* Reads `autoscale:` from the server config; every key is bounded and an error names it. */
#include <stdio.h>
#include <string.h>

#include "core/model.h"
#include "core/scale.h"
#include "server/state/autoscale_config.h"

#define MAX_HOURLY_COST 1e9
#define MAX_DURATION_S (7 * 86400)

void gp_autoscale_config_init(gp_autoscale_config *c) {
  memset(c, 0, sizeof *c);
  gp_scale_default_ranks(c->class_rank);
  c->max_hourly_cost = GP_NO_LIMIT;
  c->resume_timeout_s = 900;
  c->scale_down_after_s = 600;
  c->backoff_initial_s = 60;
  c->backoff_max_s = 1800;
  c->interval_ms = 1000;
}

static int duration(const gp_doc *d, const gp_doc_node *m, const char *path, const char *key,
                    int min, int *ret, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(m, key);
  if (!n) return 0;
  char f[160];
  gp_doc_path(f, sizeof f, path, key);
  int64_t v;
  int r = gp_doc_duration_s(d, n, f, &v, err);
  if (r) return r;
  if (v < min || v > MAX_DURATION_S)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be %d s .. 7 days", min);
  *ret = (int)v;
  return 0;
}

static int read_order(const gp_doc *d, const gp_doc_node *n, const char *f, gp_autoscale_config *c,
                      gp_err *err) {
  int r = gp_doc_expect(d, n, f, GP_DOC_SEQ, err);
  if (r) return r;
  if (n->n < 1 || n->n > 4)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "lists 1 to 4 capacity classes");
  for (int i = 0; i < 4; i++) c->class_rank[i] = -1;
  for (int i = 0; i < n->n; i++) {
    char fi[180];
    snprintf(fi, sizeof fi, "%s[%d]", f, i);
    const char *v;
    gp_capacity cap;
    if ((r = gp_doc_str(d, n->items[i], fi, &v, err))) return r;
    if (gp_capacity_parse(v, &cap) || (int)cap < 0 || (int)cap > 3)
      return gp_err_set(err, GP_EINVAL, d->name, n->items[i]->line, fi,
                        "\"%s\" is not a capacity class (on-prem, reserved, spot, on-demand)", v);
    if (c->class_rank[cap] >= 0)
      return gp_err_set(err, GP_EINVAL, d->name, n->items[i]->line, fi, "%s is listed twice", v);
    c->class_rank[cap] = i;
  }
  return 0;
}

int gp_autoscale_config_read(const gp_doc *d, const gp_doc_node *m, const char *path,
                             gp_autoscale_config *c, gp_err *err) {
  static const char *const keys[] = {"order", "max_hourly_cost", "resume_timeout",
                                     "scale_down_after", "backoff", "interval", NULL};
  int r = gp_doc_expect(d, m, path, GP_DOC_MAP, err);
  if (r || (r = gp_doc_check_keys(d, m, path, keys, err))) return r;
  char f[160];
  const gp_doc_node *n;
  if ((n = gp_doc_get(m, "order"))) {
    gp_doc_path(f, sizeof f, path, "order");
    if ((r = read_order(d, n, f, c, err))) return r;
  }
  if ((n = gp_doc_get(m, "max_hourly_cost")) && !gp_doc_is_null(n)) {
    gp_doc_path(f, sizeof f, path, "max_hourly_cost");
    if ((r = gp_doc_double(d, n, f, &c->max_hourly_cost, err))) return r;
    if (!(c->max_hourly_cost >= 0 && c->max_hourly_cost <= MAX_HOURLY_COST))
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "must be 0..1000000000 per hour");
  }
  if ((r = duration(d, m, path, "resume_timeout", 1, &c->resume_timeout_s, err)) ||
      (r = duration(d, m, path, "scale_down_after", 0, &c->scale_down_after_s, err)) ||
      (r = duration(d, m, path, "interval", 1, &c->interval_ms, err)))
    return r;
  if (gp_doc_get(m, "interval")) c->interval_ms *= 1000;
  if ((n = gp_doc_get(m, "backoff"))) {
    static const char *const bkeys[] = {"initial", "max", NULL};
    gp_doc_path(f, sizeof f, path, "backoff");
    if ((r = gp_doc_expect(d, n, f, GP_DOC_MAP, err)) || (r = gp_doc_check_keys(d, n, f, bkeys, err)) ||
        (r = duration(d, n, f, "initial", 1, &c->backoff_initial_s, err)) ||
        (r = duration(d, n, f, "max", 1, &c->backoff_max_s, err)))
      return r;
    if (c->backoff_max_s < c->backoff_initial_s) {
      char fm[180];
      gp_doc_path(fm, sizeof fm, f, "max");
      return gp_err_set(err, GP_EINVAL, d->name, (gp_doc_get(n, "max") ? gp_doc_get(n, "max") : n)->line,
                        fm, "must be at least backoff.initial (%d s)", c->backoff_initial_s);
    }
  }
  return 0;
}
