/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool service apply -f svc.yaml | list | show NAME | scale NAME N | restart NAME |
 * rollback NAME [--revision N] | delete NAME | endpoints NAME ...` (docs/services.md): the
 * inference services of the pool through /v1/services. A spec file is YAML (read by the same
 * reader as the server's config, so errors name the line) or JSON; the server validates it.
 * The endpoints verb and its watch mode are in service_endpoints.c. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/service_int.h"
#include "protocol/service.h"
#include "util/doc.h"

enum { O_FILE = 1, O_REVISION, O_FORMAT, O_WATCH, O_EXEC, O_OUT, O_INTERVAL };

static const gp_opt service_opts[] = {
  {'f', "file", true, O_FILE},
  {0, "revision", true, O_REVISION},
  {0, "format", true, O_FORMAT},
  {0, "watch", false, O_WATCH},
  {0, "exec", true, O_EXEC},
  {0, "out", true, O_OUT},
  {0, "interval", true, O_INTERVAL},
  GP_CLI_COMMON_OPTS,
};

static const char service_usage[] =
  "Usage: gpool service apply -f SPEC.yaml     create or update a service (a new revision)\n"
  "       gpool service list [-o json]\n"
  "       gpool service show NAME [-o json]   revisions, replicas (node, state, readiness, probe)\n"
  "       gpool service scale NAME N\n"
  "       gpool service restart NAME          replace every replica, one at a time\n"
  "       gpool service wake NAME             a service scaled to zero gets its replicas back\n"
  "       gpool service rollback NAME [--revision N]\n"
  "       gpool service delete NAME\n"
  "       gpool service endpoints NAME [--format json|http_sd|nginx|haproxy] [--out FILE]\n"
  "                               [--watch [--exec CMD] [--interval SECONDS]]\n"
  "  See docs/services.md for the spec's fields.\n";

static int own(void *arg, int id, const char *v) {
  gp_svc_args *a = arg;
  switch (id) {
  case O_FILE: a->file = v; break;
  case O_REVISION: a->revision = v; break;
  case O_FORMAT: a->format = v; break;
  case O_WATCH: a->watch = true; break;
  case O_EXEC: a->exec = v; break;
  case O_OUT: a->out = v; break;
  default: a->interval = v; break;
  }
  return 0;
}

static int word(void *arg, const char *w) {
  gp_svc_args *a = arg;
  for (int i = 0; i < 3; i++)
    if (!a->words[i]) {
      a->words[i] = w;
      return 0;
    }
  return gp_cli_usage_error("service", "unexpected argument \"%s\"", w);
}

/* A YAML node as JSON: an unquoted scalar that reads as null, a boolean or a number is one;
 * anything else is a string. */
static json_t *to_json(const gp_doc_node *n) {
  if (!n) return json_null();
  if (n->kind == GP_DOC_SEQ) {
    json_t *a = json_array();
    for (int i = 0; i < n->n; i++) json_array_append_new(a, to_json(n->items[i]));
    return a;
  }
  if (n->kind == GP_DOC_MAP) {
    json_t *o = json_object();
    for (int i = 0; i < n->n; i++) json_object_set_new(o, n->keys[i], to_json(n->items[i]));
    return o;
  }
  const char *s = n->scalar ? n->scalar : "";
  if (!n->quoted) {
    if (!*s || !strcmp(s, "null") || !strcmp(s, "~")) return json_null();
    if (!strcmp(s, "true")) return json_true();
    if (!strcmp(s, "false")) return json_false();
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end == '\0' && end != s) return json_integer(v);
    /* Decimal numbers only (strtod would also read "0x10", "inf" and "nan"). */
    bool decimal = strspn(s, "0123456789+-.eE") == strlen(s);
    double d = strtod(s, &end);
    if (decimal && *end == '\0' && end != s && isfinite(d)) return json_real(d);
  }
  return json_string(s);
}

static int apply(gp_cli *cli, const gp_svc_args *a) {
  if (!a->file) return gp_cli_usage_error("service", "apply needs -f SPEC (YAML or JSON)");
  gp_doc *doc = NULL;
  gp_err err = {0};
  if (gp_doc_load_file(a->file, &doc, &err) != 0) {
    if (err.line > 0) fprintf(stderr, "gpool service: %s:%d: %s\n", err.file[0] ? err.file : a->file, err.line, err.message);
    else fprintf(stderr, "gpool service: %s: %s\n", a->file, err.message);
    return 2;
  }
  json_t *spec = doc->root ? to_json(doc->root) : json_null();
  gp_doc_free(doc);
  const char *name = json_string_value(json_object_get(spec, "name"));
  if (!json_is_object(spec) || !name || !*name || strlen(name) > 63 || strchr(name, '/') || strchr(name, '?')) {
    fprintf(stderr, "gpool service: %s: the spec must be a map with a `name` (e.g. name: chat)\n", a->file);
    json_decref(spec);
    return 2;
  }
  char path[128];
  snprintf(path, sizeof path, "/v1/services/%s", name);
  json_t *answer = NULL;
  int code = gp_cli_connect(cli);
  if (!code) code = gp_cli_call(cli, "PUT", path, spec, &answer);
  if (!code) {
    const json_t *s = json_object_get(answer, "service");
    if (cli->json) gp_cli_print_json((json_t *)s);
    else
      printf("service %s: revision %lld, %lld replicas desired (%s)\n", name,
             (long long)json_integer_value(json_object_get(s, "revision")),
             (long long)json_integer_value(json_object_get(json_object_get(s, "replicas"), "desired")),
             json_string_value(json_object_get(json_object_get(s, "rollout"), "message")));
  }
  json_decref(spec);
  json_decref(answer);
  gp_cli_done(cli);
  return code;
}

static int list_table(gp_cli *cli, json_t *items, json_t *answer, void *arg) {
  (void)cli;
  (void)answer;
  (void)arg;
  static const char *const head[] = {"NAME", "OWNER", "QUEUE", "REVISION", "READY", "DESIRED", "ROLLOUT"};
  gp_table *t = gp_table_new(7, head);
  size_t i;
  json_t *e;
  json_array_foreach(items, i, e) {
    const json_t *rs = json_object_get(e, "replicas");
    char rev[32], ready[32], desired[32];
    snprintf(rev, sizeof rev, "%lld", (long long)json_integer_value(json_object_get(e, "revision")));
    snprintf(ready, sizeof ready, "%lld", (long long)json_integer_value(json_object_get(rs, "ready")));
    snprintf(desired, sizeof desired, "%lld", (long long)json_integer_value(json_object_get(rs, "desired")));
    const char *row[] = {json_string_value(json_object_get(e, "name")), json_string_value(json_object_get(e, "owner")),
                         json_string_value(json_object_get(json_object_get(e, "spec"), "queue")), rev, ready, desired,
                         json_is_true(json_object_get(e, "deleting"))
                             ? "deleting"
                             : json_string_value(json_object_get(json_object_get(e, "rollout"), "state"))};
    gp_table_add(t, row);
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
  return 0;
}

static void print_show(const json_t *s) {
  const json_t *rs = json_object_get(s, "replicas"), *ro = json_object_get(s, "rollout");
  const json_t *spec = json_object_get(s, "spec");
  printf("Service:   %s (owner %s, queue %s, class %s)\n", json_string_value(json_object_get(s, "name")),
         json_string_value(json_object_get(s, "owner")), json_string_value(json_object_get(spec, "queue")),
         json_string_value(json_object_get(spec, "priority")) ? json_string_value(json_object_get(spec, "priority"))
                                                               : "(queue's default)");
  printf("Revision:  %lld (serving %lld, last complete %lld)\n", (long long)json_integer_value(json_object_get(s, "revision")),
         (long long)json_integer_value(json_object_get(s, "serving_revision")),
         (long long)json_integer_value(json_object_get(s, "stable_revision")));
  printf("Replicas:  %lld ready, %lld running, %lld desired (min %lld, max %lld)\n",
         (long long)json_integer_value(json_object_get(rs, "ready")),
         (long long)json_integer_value(json_object_get(rs, "running")),
         (long long)json_integer_value(json_object_get(rs, "desired")),
         (long long)json_integer_value(json_object_get(rs, "min")), (long long)json_integer_value(json_object_get(rs, "max")));
  printf("Rollout:   %s: %s%s\n", json_string_value(json_object_get(ro, "state")),
         json_string_value(json_object_get(ro, "message")),
         json_is_true(json_object_get(s, "deleting")) ? " (deleting)" : "");
  static const char *const head[] = {"JOB", "STATE", "REV", "NODE", "PORT", "READY", "LAST PROBE"};
  gp_table *t = gp_table_new(7, head);
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(s, "replica_jobs"), i, e) {
    char rev[16], port[16];
    snprintf(rev, sizeof rev, "%lld", (long long)json_integer_value(json_object_get(e, "revision")));
    snprintf(port, sizeof port, "%lld", (long long)json_integer_value(json_object_get(e, "port")));
    const char *node = json_string_value(json_object_get(e, "node"));
    const char *row[] = {json_string_value(json_object_get(e, "job")), json_string_value(json_object_get(e, "state")), rev,
                         node ? node : "-", port,
                         json_is_true(json_object_get(e, "draining")) ? "draining"
                         : json_is_true(json_object_get(e, "ready"))  ? "yes"
                                                                      : "no",
                         json_string_value(json_object_get(e, "last_probe"))};
    gp_table_add(t, row);
  }
  printf("\n");
  gp_table_print(t, stdout);
  gp_table_free(t);
  printf("\nRevisions:\n");
  json_array_foreach(json_object_get(s, "revisions"), i, e) {
    printf("  %lld  %s by %s at %lld\n", (long long)json_integer_value(json_object_get(e, "revision")),
           json_string_value(json_object_get(e, "note")), json_string_value(json_object_get(e, "by")),
           (long long)json_integer_value(json_object_get(e, "at")));
  }
}

/* show, scale, restart, rollback, delete: one call, the service back. */
static int one(gp_cli *cli, const gp_svc_args *a, const char *verb) {
  const char *name = a->words[1];
  if (!name) return gp_cli_usage_error("service", "%s which service?", verb);
  if (!gp_proto_service_name_valid(name)) return gp_cli_usage_error("service", "'%s' is not a service name", name);
  bool scale = !strcmp(verb, "scale");
  if (scale != (a->words[2] != NULL)) return gp_cli_usage_error("service", scale ? "scale NAME N" : "unexpected argument \"%s\"", a->words[2]);
  char path[160];
  const char *method = "POST";
  json_t *body = NULL;
  if (!strcmp(verb, "show")) {
    method = "GET";
    snprintf(path, sizeof path, "/v1/services/%s", name);
  } else if (!strcmp(verb, "delete")) {
    method = "DELETE";
    snprintf(path, sizeof path, "/v1/services/%s", name);
  } else {
    snprintf(path, sizeof path, "/v1/services/%s/%s", name, verb);
    body = json_object();
    if (scale) {
      char *end;
      long n = strtol(a->words[2], &end, 10);
      if (*end || end == a->words[2] || n < 0 || n > 1000) {
        json_decref(body);
        return gp_cli_usage_error("service", "replicas must be a number from 0 to 1000");
      }
      json_object_set_new(body, "replicas", json_integer(n));
    }
    if (a->revision) {
      char *end;
      long n = strtol(a->revision, &end, 10);
      if (*end || n < 1 || strcmp(verb, "rollback") != 0) {
        json_decref(body);
        return gp_cli_usage_error("service", "--revision N goes with rollback");
      }
      json_object_set_new(body, "revision", json_integer(n));
    }
  }
  json_t *answer = NULL;
  int code = gp_cli_connect(cli);
  if (!code) code = gp_cli_call(cli, method, path, body, &answer);
  json_decref(body);
  if (!code) {
    const json_t *s = json_object_get(answer, "service");
    if (cli->json) gp_cli_print_json((json_t *)s);
    else if (!strcmp(verb, "show")) print_show(s);
    else if (!strcmp(verb, "delete")) printf("service %s: deleting (replicas drain, then stop)\n", name);
    else
      printf("service %s: revision %lld, %lld replicas desired (%s)\n", name,
             (long long)json_integer_value(json_object_get(s, "revision")),
             (long long)json_integer_value(json_object_get(json_object_get(s, "replicas"), "desired")),
             json_string_value(json_object_get(json_object_get(s, "rollout"), "message")));
  }
  json_decref(answer);
  gp_cli_done(cli);
  return code;
}

int gp_cmd_service(int argc, char **argv) {
  gp_cli cli = {.cmd = "service"};
  gp_svc_args a = {0};
  int code = gp_cli_parse(&cli, argc, argv, service_opts, own, word, &a, service_usage);
  if (code) return code < 0 ? 0 : code;
  const char *verb = a.words[0] ? a.words[0] : "list";
  if (strcmp(verb, "endpoints") != 0 && (a.format || a.watch || a.exec || a.out || a.interval))
    return gp_cli_usage_error("service", "--format, --out, --watch, --exec and --interval go with endpoints");
  if (!strcmp(verb, "apply")) return apply(&cli, &a);
  if (!strcmp(verb, "list")) {
    if (a.words[1]) return gp_cli_usage_error("service", "`gpool service list` takes no arguments");
    return gp_cli_get_print(&cli, "/v1/services", "services", list_table, NULL);
  }
  if (!strcmp(verb, "endpoints")) return gp_cli_service_endpoints(&cli, &a);
  static const char *const verbs[] = {"show", "scale", "restart", "rollback", "delete", "wake", NULL};
  for (int i = 0; verbs[i]; i++)
    if (!strcmp(verb, verbs[i])) return one(&cli, &a, verb);
  return gp_cli_usage_error("service", "unknown action \"%s\"", verb);
}
