/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool images pull REF [--nodes N1,N2] [--no-wait]` (admins): pre-pulls an image on the
 * nodes named (every node when none is) through their agents (POST /v1/images/pull), then
 * waits for each node's answer (GET /v1/images/pulls) and prints it: `n1  pulled image REF
 * in 2.4 s`, or the final reason (`unauthorized: REF`). Exit 1 when any failed or did not
 * answer in time. docs/containers.md#pre-pulling. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "protocol/container.h"

enum { O_NODES = 1, O_NO_WAIT, O_WAIT };
static const gp_opt pull_opts[] = {{0, "nodes", true, O_NODES}, {0, "no-wait", false, O_NO_WAIT},
                                   {0, "wait", true, O_WAIT}, GP_CLI_COMMON_OPTS};

static const char pull_usage[] =
  "Usage: gpool images pull REF [--nodes N1,N2,...] [--no-wait] [--wait SECONDS]\n"
  "  Pulls the image on those nodes (default: every node) ahead of the jobs in it (admins),\n"
  "  and prints each node's result as its agent answers (within --wait, default 900 s).\n";

typedef struct args {
  const char *ref, *nodes;
  bool no_wait;
  int wait_s;
  int bad;
} args;

static int own(void *arg, int id, const char *v) {
  args *a = arg;
  if (id == O_NODES) a->nodes = v;
  else if (id == O_NO_WAIT) a->no_wait = true;
  else if (sscanf(v, "%d", &a->wait_s) != 1 || a->wait_s < 1 || a->wait_s > 86400)
    return gp_cli_usage_error("images pull", "--wait: seconds, 1 to 86400");
  return 0;
}

static int word(void *arg, const char *w) {
  args *a = arg;
  if (a->ref) return gp_cli_usage_error("images pull", "unexpected argument \"%s\"", w);
  a->ref = w;
  return 0;
}

/* The results of our orders in `all`, by order id; true when none is pending. */
static bool settled(const json_t *mine, const json_t *all) {
  size_t i, k;
  json_t *m, *r;
  json_array_foreach(mine, i, m) {
    const char *id = json_string_value(json_object_get(m, "id"));
    json_array_foreach(all, k, r) {
      if (!id || strcmp(id, json_string_value(json_object_get(r, "id")) ?: "")) continue;
      json_object_set(m, "state", json_object_get(r, "state"));
      json_object_set(m, "message", json_object_get(r, "message"));
    }
    if (!strcmp(json_string_value(json_object_get(m, "state")) ?: "", "pending")) return false;
  }
  return true;
}

int gp_cmd_images_pull(int argc, char **argv) {
  gp_cli cli = {.cmd = "images pull"};
  args a = {.wait_s = 900};
  int code = gp_cli_parse(&cli, argc, argv, pull_opts, own, word, &a, pull_usage);
  if (code) return code < 0 ? 0 : code;
  if (!a.ref) return gp_cli_usage_error("images pull", "pull which image?");
  const char *why = gp_proto_image_check(a.ref);
  if (why) return gp_cli_usage_error("images pull", "image '%s': %s", a.ref, why);
  json_t *body = json_pack("{s:s}", "image", a.ref);
  if (a.nodes) {
    json_t *list = json_array();
    char buf[4096];
    if (strlen(a.nodes) >= sizeof buf) {
      json_decref(list);
      json_decref(body);
      return gp_cli_usage_error("images pull", "--nodes: at most %zu bytes", sizeof buf - 1);
    }
    snprintf(buf, sizeof buf, "%s", a.nodes);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
      json_array_append_new(list, json_string(t));
    json_object_set_new(body, "nodes", list);
  }
  json_t *answer = NULL;
  code = gp_cli_connect(&cli);
  if (!code) code = gp_cli_call(&cli, "POST", "/v1/images/pull", body, &answer);
  json_decref(body);
  json_t *mine = json_incref(json_object_get(answer, "pulls"));
  time_t deadline = time(NULL) + a.wait_s;
  bool done = a.no_wait;
  while (!code && !done) {
    json_t *now = NULL;
    code = gp_cli_call(&cli, "GET", "/v1/images/pulls", NULL, &now);
    if (!code) done = settled(mine, json_object_get(now, "pulls"));
    json_decref(now);
    if (!done && time(NULL) >= deadline) break;
    if (!done && !code) nanosleep(&(struct timespec){0, 250 * 1000000L}, NULL);
  }
  if (!code) {
    if (cli.json) {
      gp_cli_print_json(mine);
    } else {
      static const char *const head[] = {"NODE", "STATE", "RESULT"};
      gp_table *t = gp_table_new(3, head);
      size_t i;
      json_t *m;
      json_array_foreach(mine, i, m) {
        const char *msg = json_string_value(json_object_get(m, "message"));
        const char *row[] = {json_string_value(json_object_get(m, "node")),
                             json_string_value(json_object_get(m, "state")), msg ? msg : "-"};
        gp_table_add(t, row);
      }
      gp_table_print(t, stdout);
      gp_table_free(t);
    }
    size_t i;
    json_t *m;
    json_array_foreach(mine, i, m) {
      const char *st = json_string_value(json_object_get(m, "state"));
      if (st && (!strcmp(st, "failed") || (!a.no_wait && !strcmp(st, "pending")))) code = 1;
    }
  }
  json_decref(mine);
  json_decref(answer);
  gp_cli_done(&cli);
  return code;
}
