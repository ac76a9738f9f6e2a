/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool images [--node N] [-o json]`: the container images each node holds, as their
 * agents report them (GET /v1/nodes: each node's `images`; docs/containers.md). */
#include <stdio.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"

enum { O_NODE = 1 };
static const gp_opt images_opts[] = {{0, "node", true, O_NODE}, GP_CLI_COMMON_OPTS};

static const char images_usage[] =
  "Usage: gpool images [--node NODE] [-o json]\n"
  "  The container images each node holds (name, size), as its agent last reported them.\n";

static int own(void *arg, int id, const char *v) {
  if (id == O_NODE) *(const char **)arg = v;
  return 0;
}

static int table(gp_cli *cli, json_t *nodes, json_t *answer, void *arg) {
  (void)cli;
  (void)answer;
  const char *only = *(const char **)arg;
  static const char *const head[] = {"NODE", "IMAGE", "SIZE"};
  gp_table *t = gp_table_new(3, head);
  size_t i, k;
  json_t *n, *im;
  json_array_foreach(nodes, i, n) {
    const char *name = json_string_value(json_object_get(n, "name"));
    if (!name || (only && strcmp(only, name))) continue;
    json_array_foreach(json_object_get(n, "images"), k, im) {
      char size[32];
      double mb = (double)json_integer_value(json_object_get(im, "size")) / 1e6;
      if (mb >= 1000) snprintf(size, sizeof size, "%.1f GB", mb / 1000);
      else snprintf(size, sizeof size, "%.1f MB", mb);
      size_t m;
      json_t *nm;
      json_array_foreach(json_object_get(im, "names"), m, nm) {
        const char *row[] = {name, json_string_value(nm), size};
        gp_table_add(t, row);
      }
    }
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
  return 0;
}

int gp_cmd_images(int argc, char **argv) {
  gp_cli cli = {.cmd = "images"};
  const char *node = NULL;
  int code = gp_cli_parse(&cli, argc, argv, images_opts, own, NULL, &node, images_usage);
  if (code) return code < 0 ? 0 : code;
  if (cli.json) {
    /* -o json: [{"node", "images": [...]}] for the nodes asked about. */
    json_t *answer = NULL;
    code = gp_cli_connect(&cli);
    if (!code) code = gp_cli_call(&cli, "GET", "/v1/nodes", NULL, &answer);
    if (!code) {
      json_t *out = json_array();
      size_t i;
      json_t *n;
      json_array_foreach(json_object_get(answer, "nodes"), i, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        if (!name || (node && strcmp(node, name))) continue;
        json_t *im = json_object_get(n, "images");
        json_array_append_new(out, json_pack("{s:s, s:o}", "node", name, "images",
                                             im ? json_incref(im) : json_array()));
      }
      gp_cli_print_json(out);
      json_decref(out);
    }
    json_decref(answer);
    gp_cli_done(&cli);
    return code;
  }
  return gp_cli_get_print(&cli, "/v1/nodes", "nodes", table, &node);
}
