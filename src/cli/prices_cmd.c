/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool prices`: the price catalogue in force (GET /v1/prices); `gpool prices set FILE`
 * makes a YAML (or JSON) catalogue the one in force (admins; PUT), checked here first with
 * the server's reader so a mistake names the file's line; `gpool prices reset` goes back to
 * the config file's (DELETE). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "ledger/prices.h"
#include "util/doc.h"
#include "util/units.h"

static const gp_opt prices_opts[] = {GP_CLI_COMMON_OPTS};

static const char *str(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static void print_prices(const json_t *p) {
  const char *source = str(p, "source");
  if (!strcmp(source, "none")) {
    printf("No prices: the server's config has no `prices:` and no admin set any.\n");
    return;
  }
  printf("Currency %s (set by %s)\n", str(p, "currency"),
         !strcmp(source, "admin") ? "an admin: `gpool prices reset` returns to the config's"
                                  : "the config file");
  static const char *const head[] = {"MODEL", "CAPACITY", "PER GPU-HOUR", "FROM", "TO", "GPUS"};
  gp_table *t = gp_table_new(6, head);
  size_t i;
  json_t *e;
  char price[32], gpus[16];
  json_array_foreach(json_object_get(p, "gpu_hour"), i, e) {
    snprintf(price, sizeof price, "%.4g", gp_cli_num(json_object_get(e, "price")));
    const char *row[] = {str(e, "model"), str(e, "capacity"), price,
                         *str(e, "from") ? str(e, "from") : "-", "-", "-"};
    gp_table_add(t, row);
  }
  json_array_foreach(json_object_get(p, "commitments"), i, e) {
    snprintf(price, sizeof price, "%.4g", gp_cli_num(json_object_get(e, "price")));
    snprintf(gpus, sizeof gpus, "%lld", (long long)gp_cli_num(json_object_get(e, "gpus")));
    const char *row[] = {str(e, "model"), "reserved (commitment)", price, str(e, "from"),
                         str(e, "to"), gpus};
    gp_table_add(t, row);
  }
  json_array_foreach(json_object_get(p, "energy"), i, e) {
    snprintf(price, sizeof price, "%.4g/kWh", gp_cli_num(json_object_get(e, "price_per_kwh")));
    const char *row[] = {"energy", "on-prem", price, *str(e, "from") ? str(e, "from") : "-", "-",
                         "-"};
    gp_table_add(t, row);
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
}

/* A document node as JSON: YAML scalars that read as numbers become numbers (integers stay
 * integers: the reader wants a whole number of GPUs), anything else a string. */
static json_t *doc_json(const gp_doc_node *n, int depth) {
  if (!n || depth > GP_DOC_MAX_DEPTH) return json_null();
  if (n->kind == GP_DOC_MAP) {
    json_t *o = json_object();
    for (int i = 0; i < n->n; i++) json_object_set_new(o, n->keys[i], doc_json(n->items[i], depth + 1));
    return o;
  }
  if (n->kind == GP_DOC_SEQ) {
    json_t *a = json_array();
    for (int i = 0; i < n->n; i++) json_array_append_new(a, doc_json(n->items[i], depth + 1));
    return a;
  }
  if (gp_doc_is_null(n)) return json_null();
  if (!n->quoted) {
    int64_t i;
    if (gp_parse_int64(n->scalar, &i) == 0) return json_integer(i);
    char *end = NULL;
    double v = strtod(n->scalar, &end);
    if (end && end != n->scalar && !*end && isfinite(v)) return json_real(v);
  }
  return json_string(n->scalar);
}

static int word(void *arg, const char *w) {
  const char **words = arg;
  for (int i = 0; i < 2; i++)
    if (!words[i]) {
      words[i] = w;
      return 0;
    }
  return gp_cli_usage_error("prices", "unexpected argument \"%s\"", w);
}

static const char prices_usage[] =
  "Usage: gpool prices [-o json]\n"
  "       gpool prices set FILE     (admins) make FILE's catalogue the one in force\n"
  "       gpool prices reset        (admins) return to the config file's catalogue\n"
  "  FILE holds a `prices:` map as in the server's config (docs/config.md, \"Prices\").\n";

/* Reads FILE into the JSON body of PUT /v1/prices, checked with the server's reader. */
static int read_file_body(const char *path, json_t **ret) {
  gp_doc *d = NULL;
  gp_err e = {0};
  int rc = gp_doc_load_file(path, &d, &e);
  const gp_doc_node *map = NULL;
  if (!rc) {
    map = d->root && gp_doc_get(d->root, "prices") ? gp_doc_get(d->root, "prices") : d->root;
    gp_prices *p = NULL;
    if (!map) rc = gp_err_set(&e, GP_EINVAL, path, 1, "prices", "the file is empty");
    else if (!(rc = gp_prices_read(d, map, "prices", &p, &e))) gp_prices_free(p);
  }
  if (rc) {
    char buf[1024];
    gp_err_format(&e, buf, sizeof buf);
    fprintf(stderr, "gpool prices set: %s\n", buf);
    gp_doc_free(d);
    return 1;
  }
  *ret = doc_json(map, 0);
  gp_doc_free(d);
  return 0;
}

int gp_cmd_prices(int argc, char **argv) {
  gp_cli cli = {.cmd = "prices"};
  const char *words[2] = {NULL, NULL};
  int code = gp_cli_parse(&cli, argc, argv, prices_opts, NULL, word, words, prices_usage);
  if (code) return code < 0 ? 0 : code;
  const char *method = "GET";
  json_t *body = NULL;
  if (words[0] && !strcmp(words[0], "set")) {
    if (!words[1]) return gp_cli_usage_error("prices", "set which file? gpool prices set FILE");
    if ((code = read_file_body(words[1], &body))) return code;
    method = "PUT";
  } else if (words[0] && !strcmp(words[0], "reset")) {
    if (words[1]) return gp_cli_usage_error("prices", "unexpected argument \"%s\"", words[1]);
    method = "DELETE";
  } else if (words[0]) {
    return gp_cli_usage_error("prices", "unknown action \"%s\" (set FILE or reset)", words[0]);
  }
  json_t *answer = NULL;
  code = gp_cli_connect(&cli);
  if (!code) code = gp_cli_call(&cli, method, "/v1/prices", body, &answer);
  if (!code) {
    if (cli.json) gp_cli_print_json(json_object_get(answer, "prices"));
    else print_prices(json_object_get(answer, "prices"));
  }
  json_decref(body);
  json_decref(answer);
  gp_cli_done(&cli);
  return code;
}
