/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool provider test`: runs one call of a node template's provider (docs/providers.md)
 * exactly as the server does (the config's template, environment, deadline and checks)
 * and shows the checked answer or the error's class and reason with the provider's
 * stderr, so an admin can try a script before the server relies on it. It talks to no
 * server: it reads the server's config file. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "provider/provider.h"
#include "server/state/config.h"
#include "server/state/node_templates.h"

enum { P_CONFIG = 1, P_COUNT, P_KEY };
static const gp_opt provider_opts[] = {{'c', "config", true, P_CONFIG},
                                       {'n', "count", true, P_COUNT},
                                       {0, "idempotency-key", true, P_KEY},
                                       GP_CLI_COMMON_OPTS};

#define MAX_WORDS (2 + GP_PROVIDER_MAX_INSTANCES)

typedef struct provider_args {
  const char *config, *key;
  int count;
  int n_words;
  const char *words[MAX_WORDS]; /* TEMPLATE VERB [ID...] */
} provider_args;

static int provider_opt(void *arg, int id, const char *v) {
  provider_args *a = arg;
  if (id == P_CONFIG) a->config = v;
  if (id == P_KEY) a->key = v;
  if (id == P_COUNT) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > GP_PROVIDER_MAX_INSTANCES)
      return gp_cli_usage_error("provider test", "--count must be 1..%d, not '%s'",
                                GP_PROVIDER_MAX_INSTANCES, v);
    a->count = (int)n;
  }
  return 0;
}

static int provider_word(void *arg, const char *v) {
  provider_args *a = arg;
  if (a->n_words >= MAX_WORDS) return gp_cli_usage_error("provider test", "too many instance ids");
  a->words[a->n_words++] = v;
  return 0;
}

static const char provider_usage[] =
  "Usage: gpool provider test --config FILE TEMPLATE list\n"
  "       gpool provider test --config FILE TEMPLATE create [--count N] [--idempotency-key K]\n"
  "       gpool provider test --config FILE TEMPLATE delete ID... [--idempotency-key K]\n"
  "  Runs one call of the node template's provider as the server would (docs/providers.md)\n"
  "  and prints the checked answer, or the error's class and reason, and the provider's\n"
  "  stderr. Exits 0 when the call succeeded, 1 when it failed. A create or delete acts for\n"
  "  real: it starts or stops machines.\n";

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_t *result_json(gp_provider_verb verb, int r, const gp_provider_result *res,
                           const gp_provider_error *e) {
  json_t *o = json_object();
  json_object_set_new(o, "ok", json_boolean(r == 0));
  json_t *list = json_array();
  for (int i = 0; !r && i < res->n; i++) {
    const gp_provider_instance *in = &res->instances[i];
    if (verb == GP_PROVIDER_DELETE) {
      json_array_append_new(list, json_string(in->id));
      continue;
    }
    json_t *x = json_pack("{s:s,s:s}", "id", in->id, "node", in->node);
    if (in->capacity[0]) json_object_set_new(x, "capacity", json_string(in->capacity));
    if (in->price_per_gpu_hour >= 0) json_object_set_new(x, "price", json_real(in->price_per_gpu_hour));
    json_array_append_new(list, x);
  }
  json_object_set_new(o, verb == GP_PROVIDER_DELETE ? "deleted" : "instances", list);
  if (r) {
    json_t *err = json_pack("{s:s,s:s}", "class", gp_provider_class_name(e->cls), "message", e->message);
    if (e->retry_after_s >= 0) json_object_set_new(err, "retry_after", json_integer(e->retry_after_s));
    json_object_set_new(o, "error", err);
  }
  json_object_set_new(o, "exit_status", json_integer(res->exit_status));
  json_object_set_new(o, "elapsed_ms", json_integer(res->elapsed_ms));
  json_object_set_new(o, "stderr", json_string(res->stderr_text ? res->stderr_text : ""));
  return o;
}

static void print_human(gp_provider_verb verb, const char *tmpl, int r,
                        const gp_provider_result *res, const gp_provider_error *e) {
  if (r) {
    printf("%s %s: failed after %.1f s (exit status %d): %s: %s", tmpl,
           gp_provider_verb_name(verb), (double)res->elapsed_ms / 1000.0, res->exit_status,
           gp_provider_class_name(e->cls), e->message);
    if (e->retry_after_s >= 0) printf(" (retry after %d s)", e->retry_after_s);
    printf("\n");
  } else {
    printf("%s %s: ok in %.1f s, %d %s\n", tmpl, gp_provider_verb_name(verb),
           (double)res->elapsed_ms / 1000.0, res->n,
           verb == GP_PROVIDER_DELETE ? "deleted" : res->n == 1 ? "instance" : "instances");
    for (int i = 0; i < res->n; i++) {
      const gp_provider_instance *in = &res->instances[i];
      printf("  %s", in->id);
      if (in->node[0]) printf("  node %s", in->node);
      if (in->capacity[0]) printf("  %s", in->capacity);
      if (in->price_per_gpu_hour >= 0) printf("  %.4g per GPU-hour", in->price_per_gpu_hour);
      printf("\n");
    }
  }
  if (res->stderr_text && *res->stderr_text)
    printf("provider stderr:\n%s%s", res->stderr_text,
           res->stderr_text[strlen(res->stderr_text) - 1] == '\n' ? "" : "\n");
}

int gp_cmd_provider_test(int argc, char **argv) {
  gp_cli cli = {.cmd = "provider test"};
  provider_args a = {.count = 1};
  int code = gp_cli_parse(&cli, argc, argv, provider_opts, provider_opt, provider_word, &a,
                          provider_usage);
  if (code) return code < 0 ? 0 : code;
  if (!a.config) return gp_cli_usage_error("provider test", "give the server's config with --config FILE");
  if (a.n_words < 2) return gp_cli_usage_error("provider test", "give a TEMPLATE and a verb: create, delete or list");
  gp_provider_verb verb;
  if (gp_provider_verb_parse(a.words[1], &verb))
    return gp_cli_usage_error("provider test", "the verb is create, delete or list, not '%s'", a.words[1]);
  if (verb == GP_PROVIDER_DELETE && a.n_words < 3)
    return gp_cli_usage_error("provider test", "delete needs the instance ids to delete");
  if (verb != GP_PROVIDER_DELETE && a.n_words > 2)
    return gp_cli_usage_error("provider test", "%s takes no instance ids", a.words[1]);
  gp_server_config *cfg = NULL;
  gp_err err = {0};
  if (gp_server_config_load(a.config, &cfg, &err)) {
    char msg[1024];
    gp_err_format(&err, msg, sizeof msg);
    fprintf(stderr, "gpool provider test: %s\n", msg);
    return 2;
  }
  const gp_node_template *nt = NULL;
  for (int i = 0; i < cfg->n_node_templates; i++)
    if (strcmp(cfg->node_templates[i].t.name, a.words[0]) == 0) nt = &cfg->node_templates[i];
  if (!nt) {
    fprintf(stderr, "gpool provider test: %s has no node template %s (%d defined)\n", a.config,
            a.words[0], cfg->n_node_templates);
    gp_server_config_free(cfg);
    return 2;
  }
  char key[64];
  snprintf(key, sizeof key, "gpool-provider-test-%lld-%d", (long long)(now_ms() / 1000), (int)getpid());
  gp_provider_request req = {.verb = verb, .tmpl = &nt->t, .count = a.count,
                             .n_instances = a.n_words - 2, .instances = a.words + 2,
                             .idempotency_key = a.key ? a.key : key,
                             .deadline_ms = now_ms() + (int64_t)nt->timeout_s * 1000};
  gp_provider_result res;
  gp_provider_error e;
  int r = gp_provider_run(&req, &res, &e);
  if (cli.json) {
    json_t *o = result_json(verb, r, &res, &e);
    gp_cli_print_json(o);
    json_decref(o);
  } else {
    print_human(verb, nt->t.name, r, &res, &e);
  }
  gp_provider_result_done(&res);
  gp_server_config_free(cfg);
  return r ? 1 : 0;
}
