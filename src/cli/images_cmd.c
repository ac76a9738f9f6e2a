/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool images [--node N] [-o json]`: the container images each node holds, as their
 * agents report them (GET /v1/nodes: each node's `images`; docs/containers.md), and the
 * admins' pre-pulls still under way on them, with their progress (GET /v1/images/pulls). */
#include <stdio.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "protocol/event.h"

enum { O_NODE = 1 };
static const gp_opt images_opts[] = {{0, "node", true, O_NODE}, GP_CLI_COMMON_OPTS};

static const char images_usage[] =
  "Usage: gpool images [--node NODE] [-o json]\n"
  "  The container images each node holds (name, size), as its agent last reported them,\n"
  "  and the pre-pulls under way on it (`gpool images pull`): \"pulling (3.1 of 9.8 GB)\".\n";

static int own(void *arg, int id, const char *v) {
  if (id == O_NODE) *(const char **)arg = v;
  return 0;
}

/* A pre-pull under way: "pulling (3.1 of 9.8 GB)", "pulling" before its first bytes. */
static void pulling_text(const json_t *p, char *buf, size_t size) {
  const json_t *d = json_object_get(p, "done_bytes"), *t = json_object_get(p, "total_bytes");
  if (!json_is_integer(d)) {
    snprintf(buf, size, "pulling");
    return;
  }
  char bytes[80];
  gp_proto_pull_bytes_text(json_integer_value(d), json_is_integer(t) ? json_integer_value(t) : 0, bytes,
                           sizeof bytes);
  snprintf(buf, size, "pulling (%s)", bytes);
}

static bool pending_on(const json_t *p, const char *node) {
  const char *n = json_string_value(json_object_get(p, "node"));
  const char *st = json_string_value(json_object_get(p, "state"));
  return n && st && !strcmp(n, node) && !strcmp(st, "pending");
}

static int table(json_t *nodes, json_t *pulls, const char *only) {
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
    json_t *p;
    json_array_foreach(pulls, k, p) {
      if (!pending_on(p, name)) continue;
      char text[120];
      pulling_text(p, text, sizeof text);
      const char *img = json_string_value(json_object_get(p, "image"));
      const char *row[] = {name, img ? img : "?", text};
      gp_table_add(t, row);
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
  json_t *answer = NULL, *pulls = NULL;
  code = gp_cli_connect(&cli);
  if (!code) code = gp_cli_call(&cli, "GET", "/v1/nodes", NULL, &answer);
  if (!code) code = gp_cli_call(&cli, "GET", "/v1/images/pulls", NULL, &pulls);
  if (!code) {
    json_t *nodes = json_object_get(answer, "nodes"), *list = json_object_get(pulls, "pulls");
    if (cli.json) {
      /* -o json: [{"node", "images": [...], "pulling": [pre-pulls under way]}] for the
       * nodes asked about. */
      json_t *out = json_array();
      size_t i, k;
      json_t *n, *p;
      json_array_foreach(nodes, i, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        if (!name || (node && strcmp(node, name))) continue;
        json_t *im = json_object_get(n, "images"), *under_way = json_array();
        json_array_foreach(list, k, p) {
          if (pending_on(p, name)) json_array_append(under_way, p);
        }
        json_array_append_new(out, json_pack("{s:s, s:o, s:o}", "node", name, "images",
                                             im ? json_incref(im) : json_array(), "pulling", under_way));
      }
      gp_cli_print_json(out);
      json_decref(out);
    } else {
      code = table(nodes, list, node);
    }
  }
  json_decref(answer);
  json_decref(pulls);
  gp_cli_done(&cli);
  return code;
}
