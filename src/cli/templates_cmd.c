/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool templates`: the node templates a provider can add nodes from (GET /v1/templates),
 * with how many of each exist, are being created or deleted, and a failing template's
 * backoff and last error. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli_common.h"
#include "cli/commands.h"

static const gp_opt templates_opts[] = {GP_CLI_COMMON_OPTS};

static const char *str(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static int templates_table(gp_cli *cli, json_t *list, json_t *answer, void *arg) {
  (void)cli;
  (void)answer;
  (void)arg;
  static const char *const head[] = {"NAME", "GPUS", "CAPACITY", "PRICE", "NODES", "MAX",
                                     "CREATING", "DELETING", "BACKOFF"};
  gp_table *t = gp_table_new(9, head);
  size_t i;
  json_t *e;
  int64_t now = gp_cli_now();
  json_array_foreach(list, i, e) {
    char gpus[96], price[32], nodes[16], max[16], creating[16], deleting[48], backoff[700];
    snprintf(gpus, sizeof gpus, "%lldx%s", (long long)gp_cli_num(json_object_get(e, "gpus")),
             str(e, "model"));
    json_t *p = json_object_get(e, "price_per_gpu_hour");
    if (json_is_number(p)) snprintf(price, sizeof price, "%.4g/GPU-h", gp_cli_num(p));
    else snprintf(price, sizeof price, "-");
    snprintf(nodes, sizeof nodes, "%lld", (long long)gp_cli_num(json_object_get(e, "nodes")));
    snprintf(max, sizeof max, "%lld", (long long)gp_cli_num(json_object_get(e, "max_nodes")));
    snprintf(creating, sizeof creating, "%lld", (long long)gp_cli_num(json_object_get(e, "creating")));
    long long orphans = (long long)gp_cli_num(json_object_get(e, "orphans"));
    int k = snprintf(deleting, sizeof deleting, "%lld", (long long)gp_cli_num(json_object_get(e, "deleting")));
    if (orphans > 0 && k > 0 && (size_t)k < sizeof deleting)
      snprintf(deleting + k, sizeof deleting - (size_t)k, " (%lld orphan%s)", orphans, orphans == 1 ? "" : "s");
    json_t *b = json_object_get(e, "backoff");
    if (json_is_object(b)) {
      char left[32];
      gp_cli_fmt_duration((int64_t)gp_cli_num(json_object_get(b, "until")) - now, left, sizeof left);
      snprintf(backoff, sizeof backoff, "%s more (%s: %.500s)", left, str(b, "class"),
               str(b, "message"));
    } else {
      snprintf(backoff, sizeof backoff, "-");
    }
    const char *row[] = {str(e, "name"), gpus, str(e, "capacity"), price, nodes, max,
                         creating, deleting, backoff};
    gp_table_add(t, row);
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
  return 0;
}

static const char templates_usage[] =
  "Usage: gpool templates [-o json]\n"
  "  The server's node templates (its config's node_templates:): NODES registered from each,\n"
  "  MAX (max_nodes), CREATING (asked for, not registered yet), DELETING (being given back,\n"
  "  orphans named: instances answered for a node another instance holds),\n"
  "  and BACKOFF: how long a failing template is passed over, and why.\n";

int gp_cmd_templates(int argc, char **argv) {
  gp_cli cli = {.cmd = "templates"};
  int code = gp_cli_parse(&cli, argc, argv, templates_opts, NULL, NULL, NULL, templates_usage);
  if (code) return code < 0 ? 0 : code;
  return gp_cli_get_print(&cli, "/v1/templates", "templates", templates_table, NULL);
}
