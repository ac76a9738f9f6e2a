/* SPDX-License-Identifier: Apache-2.0 */
/* A service replica's part of a start order (service.h): encode and decode, every field
 * checked against its bounds. */
#include "protocol/service.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto_int.h"

bool gp_proto_service_name_valid(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n >= GP_PROTO_SERVICE_NAME_MAX || name[0] < 'a' || name[0] > 'z') return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

bool gp_proto_probe_path_valid(const char *path) {
  size_t n = path ? strlen(path) : 0;
  if (n == 0 || n >= GP_PROTO_PROBE_PATH_MAX || path[0] != '/') return false;
  for (size_t i = 0; i < n; i++)
    if (path[i] <= ' ' || path[i] > '~') return false;
  return true;
}

static json_t *probe_encode(const gp_proto_probe *p) {
  if (!p->set) return json_null();
  return json_pack("{s:s, s:i, s:i, s:i, s:i}", "path", p->path, "period_s", p->period_s, "timeout_s",
                   p->timeout_s, "failure_threshold", p->failure_threshold, "initial_delay_s",
                   p->initial_delay_s);
}

json_t *gp_proto_service_encode(const gp_proto_service *s) {
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(s->name));
  json_object_set_new(o, "startup", probe_encode(&s->startup));
  json_object_set_new(o, "readiness", probe_encode(&s->readiness));
  json_object_set_new(o, "liveness", probe_encode(&s->liveness));
  if (s->metric[0])
    json_object_set_new(o, "metrics", json_pack("{s:s, s:s, s:i}", "path", s->metrics_path, "name", s->metric,
                                                "period_s", s->metrics_period_s));
  return o;
}

static int probe_decode(const json_t *o, const char *ctx, const char *key, gp_proto_probe *p, gp_err *err) {
  memset(p, 0, sizeof *p);
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) return 0;
  char c[96];
  snprintf(c, sizeof c, "%s.%s", ctx, key);
  if (!json_is_object(v)) return gp__proto_bad(err, ctx, key, "a probe is an object");
  int r;
  int64_t x;
  if ((r = gp__proto_str_into(v, c, "path", p->path, sizeof p->path, true, err))) return r;
  if (!gp_proto_probe_path_valid(p->path))
    return gp__proto_bad(err, c, "path", "a probe path starts with / and holds printable ASCII, no spaces");
  if ((r = gp__proto_int(v, c, "period_s", 1, 3600, false, 5, &x, err))) return r;
  p->period_s = (int)x;
  if ((r = gp__proto_int(v, c, "timeout_s", 1, 60, false, 1, &x, err))) return r;
  p->timeout_s = (int)x;
  if ((r = gp__proto_int(v, c, "failure_threshold", 1, 1000, false, 3, &x, err))) return r;
  p->failure_threshold = (int)x;
  if ((r = gp__proto_int(v, c, "initial_delay_s", 0, 86400, false, 0, &x, err))) return r;
  p->initial_delay_s = (int)x;
  p->set = true;
  return 0;
}

int gp_proto_service_decode(const json_t *o, const char *ctx, gp_proto_service *ret, gp_err *err) {
  memset(ret, 0, sizeof *ret);
  if (!json_is_object(o)) return gp__proto_bad(err, NULL, ctx, "service must be an object");
  int r = gp__proto_str_into(o, ctx, "name", ret->name, sizeof ret->name, true, err);
  if (!r && !gp_proto_service_name_valid(ret->name))
    r = gp__proto_bad(err, ctx, "name", "a service name is [a-z][a-z0-9-]*, at most 63 bytes");
  if (!r) r = probe_decode(o, ctx, "startup", &ret->startup, err);
  if (!r) r = probe_decode(o, ctx, "readiness", &ret->readiness, err);
  if (!r) r = probe_decode(o, ctx, "liveness", &ret->liveness, err);
  const json_t *m = json_object_get(o, "metrics");
  if (!r && m && !json_is_null(m)) {
    char c[96];
    snprintf(c, sizeof c, "%s.metrics", ctx);
    int64_t per;
    if (!json_is_object(m)) return gp__proto_bad(err, ctx, "metrics", "metrics is an object");
    r = gp__proto_str_into(m, c, "path", ret->metrics_path, sizeof ret->metrics_path, true, err);
    if (!r && !gp_proto_probe_path_valid(ret->metrics_path))
      r = gp__proto_bad(err, c, "path", "a metrics path starts with / and holds printable ASCII, no spaces");
    if (!r) r = gp__proto_str_into(m, c, "name", ret->metric, sizeof ret->metric, true, err);
    if (!r && !gp_proto_metric_name_valid(ret->metric))
      r = gp__proto_bad(err, c, "name", "a metric name is [a-zA-Z_:][a-zA-Z0-9_:]*");
    if (!r) r = gp__proto_int(m, c, "period_s", 1, 3600, false, 2, &per, err);
    if (!r) ret->metrics_period_s = (int)per;
  }
  return r;
}

bool gp_proto_metric_name_valid(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n >= GP_PROTO_METRIC_NAME_MAX) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool gp_proto_metric_sum(const char *text, size_t len, const char *name, double *ret) {
  size_t nl = strlen(name);
  double sum = 0;
  bool any = false;
  for (size_t i = 0; i < len;) {
    const char *line = text + i;
    const char *end = memchr(line, '\n', len - i);
    size_t ll = end ? (size_t)(end - line) : len - i;
    i += ll + 1;
    if (ll <= nl || line[0] == '#' || memcmp(line, name, nl) != 0) continue;
    size_t p = nl;
    if (line[p] == '{') { /* labels: to the closing brace, quotes respected */
      bool quoted = false;
      for (p++; p < ll && (quoted || line[p] != '}'); p++) {
        if (line[p] == '\\' && quoted) p++;
        else if (line[p] == '"') quoted = !quoted;
      }
      if (p >= ll) continue;
      p++;
    }
    if (p >= ll || (line[p] != ' ' && line[p] != '\t')) continue; /* another metric's name */
    while (p < ll && (line[p] == ' ' || line[p] == '\t')) p++;
    char num[64];
    size_t k = 0;
    while (p < ll && line[p] != ' ' && line[p] != '\t' && k < sizeof num - 1) num[k++] = line[p++];
    num[k] = '\0';
    char *e;
    double v = strtod(num, &e);
    if (k == 0 || *e || !isfinite(v) || v < 0 || v > 1e12) return false;
    sum += v;
    any = true;
  }
  if (any) *ret = sum;
  return any;
}
