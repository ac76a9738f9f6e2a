/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool service endpoints NAME`: a service's ready replicas as JSON, as Prometheus's
 * http_sd target list, or as an upstream block for nginx or a backend for HAProxy. With
 * --watch it asks again every --interval seconds (default 1) and, when the rendered text
 * changes, rewrites --out (a temporary file renamed over it, so a reload never reads half
 * a file) and runs --exec (e.g. 'nginx -s reload'). The server drains a replica out of the
 * endpoints before it stops it (docs/services.md#drain), so a balancer fed this way stops
 * sending to it first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/service_int.h"
#include "protocol/service.h"
#include "util/buf.h"

static int cmp_ep(const void *x, const void *y) {
  const json_t *a = *(const json_t *const *)x, *b = *(const json_t *const *)y;
  int c = strcmp(json_string_value(json_object_get(a, "host")), json_string_value(json_object_get(b, "host")));
  if (c) return c;
  json_int_t pa = json_integer_value(json_object_get(a, "port")), pb = json_integer_value(json_object_get(b, "port"));
  return pa < pb ? -1 : pa > pb;
}

/* host:port, IPv6 in brackets. */
static void addr(const json_t *e, char *buf, size_t size) {
  const char *h = json_string_value(json_object_get(e, "host"));
  long long p = (long long)json_integer_value(json_object_get(e, "port"));
  snprintf(buf, size, strchr(h, ':') && h[0] != '[' ? "[%s]:%lld" : "%s:%lld", h, p);
}

/* The text for one answer of GET /v1/services/NAME/endpoints, or NULL for a bad format. */
static char *render(const char *name, const char *fmt, json_t *answer) {
  json_t *eps = json_object_get(answer, "endpoints");
  size_t n = json_array_size(eps);
  if (n > 100000) n = 100000;
  const json_t **v = calloc(n ? n : 1, sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = json_array_get(eps, i);
  qsort(v, n, sizeof *v, cmp_ep);
  gp_buf b;
  gp_buf_init(&b, 0);
  char a[320];
  if (!strcmp(fmt, "json")) {
    char *t = json_dumps(answer, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    gp_buf_printf(&b, "%s\n", t ? t : "{}");
    free(t);
  } else if (!strcmp(fmt, "http_sd")) {
    json_t *targets = json_array();
    for (size_t i = 0; i < n; i++) {
      addr(v[i], a, sizeof a);
      json_array_append_new(targets, json_string(a));
    }
    json_t *list = json_array();
    if (n) json_array_append_new(list, json_pack("{s:o, s:{s:s}}", "targets", targets, "labels", "service", name));
    else json_decref(targets);
    char *t = json_dumps(list, JSON_INDENT(2));
    gp_buf_printf(&b, "%s\n", t ? t : "[]");
    free(t);
    json_decref(list);
  } else if (!strcmp(fmt, "nginx")) {
    gp_buf_printf(&b, "# gpool service %s: its ready replicas (written by gpool service endpoints)\n", name);
    gp_buf_printf(&b, "upstream gpool_%s {\n", name);
    for (size_t i = 0; i < n; i++) {
      addr(v[i], a, sizeof a);
      gp_buf_printf(&b, "    server %s;\n", a);
    }
    /* nginx refuses an empty upstream: a server that is always down stands in. */
    if (!n) gp_buf_printf(&b, "    server 127.0.0.1:9 down;\n");
    gp_buf_printf(&b, "}\n");
  } else if (!strcmp(fmt, "haproxy")) {
    gp_buf_printf(&b, "# gpool service %s: its ready replicas (written by gpool service endpoints)\n", name);
    gp_buf_printf(&b, "backend gpool_%s\n    balance roundrobin\n", name);
    for (size_t i = 0; i < n; i++) {
      addr(v[i], a, sizeof a);
      gp_buf_printf(&b, "    server r%s %s\n", json_string_value(json_object_get(v[i], "job")), a);
    }
  } else {
    free(v);
    gp_buf_done(&b);
    return NULL;
  }
  free(v);
  return gp_buf_steal(&b);
}

static int write_out(const char *path, const char *text) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  bool ok = fputs(text, f) >= 0;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

int gp_cli_service_endpoints(gp_cli *cli, const gp_svc_args *a) {
  const char *name = a->words[1];
  const char *fmt = a->format ? a->format : "json";
  if (!name) return gp_cli_usage_error("service", "endpoints of which service?");
  if (a->words[2]) return gp_cli_usage_error("service", "unexpected argument \"%s\"", a->words[2]);
  if (!gp_proto_service_name_valid(name)) return gp_cli_usage_error("service", "'%s' is not a service name", name);
  if (strcmp(fmt, "json") && strcmp(fmt, "http_sd") && strcmp(fmt, "nginx") && strcmp(fmt, "haproxy"))
    return gp_cli_usage_error("service", "--format is json, http_sd, nginx or haproxy");
  if (a->exec && !a->watch) return gp_cli_usage_error("service", "--exec goes with --watch");
  if (a->out && strlen(a->out) > 4000) return gp_cli_usage_error("service", "--out: path too long");
  double every = 1.0;
  if (a->interval) {
    char *end;
    every = strtod(a->interval, &end);
    if (*end || every < 0.1 || every > 3600) return gp_cli_usage_error("service", "--interval is 0.1 to 3600 seconds");
  }
  char path[160];
  snprintf(path, sizeof path, "/v1/services/%s/endpoints", name);
  int code = gp_cli_connect(cli);
  char *last = NULL;
  while (!code) {
    json_t *answer = NULL;
    int rc = gp_cli_call(cli, "GET", path, NULL, &answer);
    if (rc && !a->watch) {
      code = rc;
      break;
    }
    char *text = rc ? NULL : render(name, fmt, answer);
    json_decref(answer);
    if (text && (!last || strcmp(text, last) != 0)) {
      if (a->out) {
        if (write_out(a->out, text) != 0) {
          fprintf(stderr, "gpool service: cannot write %s: %s\n", a->out, strerror(errno));
          free(text);
          code = 1;
          break;
        }
      } else {
        fputs(text, stdout);
        fflush(stdout);
      }
      if (a->exec) {
        int st = system(a->exec);
        if (st != 0) fprintf(stderr, "gpool service: --exec '%s' exited with status %d\n", a->exec, st);
      }
      free(last);
      last = text;
    } else {
      free(text);
    }
    if (!a->watch) break;
    struct timespec ts = {(time_t)every, (long)((every - (double)(time_t)every) * 1e9)};
    nanosleep(&ts, NULL);
  }
  free(last);
  gp_cli_done(cli);
  return code;
}
