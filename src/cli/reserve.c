/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool reserve`: advance reservations and maintenance windows (Slurm's `scontrol create
 * reservation`), through /v1/reservations: create, list, update, delete. Times are read as
 * --begin reads them (now+1hour, 16:00, tomorrow, 2026-12-24T10:00) and sent as Unix
 * seconds; durations as 90m, 2h, 1-00:00:00. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/submit_batch.h"
#include "util/calendar.h"
#include "util/units.h"

enum { R_NODES = 1, R_GPUS, R_MODEL, R_START, R_DURATION, R_END, R_QUEUE, R_USERS, R_MAINT, R_NO_MAINT, R_NAME };
static const gp_opt reserve_opts[] = {
    {0, "nodes", true, R_NODES},       {'g', "gpus", true, R_GPUS},   {0, "model", true, R_MODEL},
    {0, "start", true, R_START},       {'d', "duration", true, R_DURATION},
    {0, "end", true, R_END},           {'q', "queue", true, R_QUEUE}, {'u', "users", true, R_USERS},
    {0, "maint", false, R_MAINT},      {0, "no-maint", false, R_NO_MAINT},
    {0, "name", true, R_NAME},         GP_CLI_COMMON_OPTS};

typedef struct reserve_args {
  json_t *body;
  const char *word;     /* update/delete: the reservation's name */
  int words;
  const char *cmd;
} reserve_args;

/* "a,b,c" as a JSON list of its non-empty parts. */
static json_t *list_of(const char *v) {
  json_t *a = json_array();
  const char *p = v;
  while (*p) {
    const char *c = strchr(p, ',');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    if (n) json_array_append_new(a, json_stringn(p, n));
    p += n + (c ? 1 : 0);
  }
  return a;
}

static int when(reserve_args *a, const char *key, const char *v) {
  int64_t t;
  if (gp_submit_parse_begin(v, (int64_t)time(NULL), &t))
    return gp_cli_usage_error(a->cmd, "--%s '%.64s' is not a time (e.g. now, now+1hour, 16:00, tomorrow, "
                              "2026-12-24T10:00)", key, v);
  json_object_set_new(a->body, key, json_integer(t));
  return 0;
}

static int reserve_opt(void *arg, int id, const char *v) {
  reserve_args *a = arg;
  int64_t n;
  switch (id) {
  case R_NODES: json_object_set_new(a->body, "nodes", list_of(v)); break;
  case R_USERS: json_object_set_new(a->body, "users", list_of(v)); break;
  case R_GPUS:
    if (gp_parse_int64(v, &n) || n < 1 || n > 1000000)
      return gp_cli_usage_error(a->cmd, "--gpus '%.32s' is not a number of GPUs", v);
    json_object_set_new(a->body, "gpus", json_integer(n));
    break;
  case R_MODEL: json_object_set_new(a->body, "model", json_string(v)); break;
  case R_START: return when(a, "start", v);
  case R_END: return when(a, "end", v);
  case R_DURATION:
    if (gp_parse_duration_s(v, &n) || n <= 0)
      return gp_cli_usage_error(a->cmd, "--duration '%.32s' is not a duration (e.g. 90m, 2h, 1-00:00:00)", v);
    json_object_set_new(a->body, "duration", json_integer(n));
    break;
  case R_QUEUE: json_object_set_new(a->body, "queue", json_string(v)); break;
  case R_MAINT: json_object_set_new(a->body, "maint", json_true()); break;
  case R_NO_MAINT: json_object_set_new(a->body, "maint", json_false()); break;
  case R_NAME: json_object_set_new(a->body, "name", json_string(v)); break;
  default: break;
  }
  return 0;
}

static int reserve_word(void *arg, const char *w) {
  reserve_args *a = arg;
  a->word = w;
  a->words++;
  return 0;
}

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static int print_list(gp_cli *cli, json_t *list, json_t *answer, void *arg) {
  (void)cli, (void)answer, (void)arg;
  static const char *const head[] = {"NAME", "STATE", "START", "END", "NODES", "FOR", "MAINT"};
  gp_table *t = gp_table_new(7, head);
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *r = json_array_get(list, i);
    char nodes[512] = "", who[512] = "";
    json_t *ns = json_object_get(r, "nodes"), *us = json_object_get(r, "users");
    for (size_t k = 0; k < json_array_size(ns); k++)
      snprintf(nodes + strlen(nodes), sizeof nodes - strlen(nodes), "%s%s", k ? "," : "",
               json_string_value(json_array_get(ns, k)));
    if (json_is_string(json_object_get(r, "queue")))
      snprintf(who, sizeof who, "queue %s", str(r, "queue"));
    for (size_t k = 0; k < json_array_size(us); k++)
      snprintf(who + strlen(who), sizeof who - strlen(who), "%s%s", k ? "," : "",
               json_string_value(json_array_get(us, k)));
    const char *cells[] = {str(r, "name"), str(r, "state"), str(r, "start_time"), str(r, "end_time"), nodes,
                           *who ? who : "nobody", json_is_true(json_object_get(r, "maint")) ? "yes" : "no"};
    gp_table_add(t, cells);
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
  return 0;
}

static const char reserve_usage[] =
  "Usage: gpool reserve create (--nodes N1,N2 | --gpus N [--model M]) --start T\n"
  "                            (--duration D | --end T) [--queue Q | --users U1,U2]\n"
  "                            [--maint] [--name NAME]\n"
  "       gpool reserve list\n"
  "       gpool reserve update NAME [the options of create]\n"
  "       gpool reserve delete NAME\n"
  "  Advance reservations (admins): the nodes are kept for the queue's or the users' jobs\n"
  "  from START for DURATION; other jobs start there only if their time limit ends before\n"
  "  START (a job without a time limit never does). --maint makes it a maintenance window:\n"
  "  at START the jobs still running on its nodes are stopped (checkpoint signal, grace,\n"
  "  requeued when requeueable). --gpus N picks the nodes when it is made. Times: now,\n"
  "  now+1hour, 16:00, tomorrow, 2026-12-24T10:00; durations: 90m, 2h, 1-00:00:00.\n";

int gp_cmd_reserve(int argc, char **argv) {
  gp_cli cli = {.cmd = "reserve"};
  const char *sub = argc > 1 ? argv[1] : "";
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
    fputs(reserve_usage, stdout);
    return 0;
  }
  bool create = !strcmp(sub, "create"), list = !strcmp(sub, "list"), update = !strcmp(sub, "update"),
       del = !strcmp(sub, "delete");
  if (!create && !list && !update && !del)
    return gp_cli_usage_error(cli.cmd, "say create, list, update or delete (gpool reserve --help)");
  reserve_args a = {.body = json_object(), .cmd = "reserve"};
  int code = gp_cli_parse(&cli, argc - 1, argv + 1, reserve_opts, reserve_opt, reserve_word, &a, reserve_usage);
  if (!code && (create || list) && a.words)
    code = gp_cli_usage_error(cli.cmd, "unexpected '%s'", a.word);
  if (!code && (update || del) && a.words != 1)
    code = gp_cli_usage_error(cli.cmd, "name one reservation");
  if (!code && (list || del) && json_object_size(a.body))
    code = gp_cli_usage_error(cli.cmd, "%s takes no reservation options", sub);
  if (!code && list) { /* (it connects and disconnects itself) */
    json_decref(a.body);
    return gp_cli_get_print(&cli, "/v1/reservations", "reservations", print_list, NULL);
  }
  if (!code && (code = gp_cli_connect(&cli)) == 0) {
    char path[300], esc[200];
    if (a.word && gp_client_escape(a.word, 0, esc, sizeof esc)) {
      gp_cli_done(&cli);
      json_decref(a.body);
      return gp_cli_usage_error(cli.cmd, "the name is too long");
    }
    snprintf(path, sizeof path, "/v1/reservations%s%s", a.word ? "/" : "", a.word ? esc : "");
    json_t *answer = NULL;
    code = gp_cli_call(&cli, create ? "POST" : update ? "PATCH" : "DELETE", path, del ? NULL : a.body, &answer);
    if (!code && cli.json) gp_cli_print_json(answer);
    else if (!code && del) printf("Deleted reservation %s.\n", a.word);
    else if (!code) {
      json_t *one = json_array();
      json_array_append(one, json_object_get(answer, "reservation"));
      print_list(&cli, one, answer, NULL);
      json_decref(one);
    }
    json_decref(answer);
    gp_cli_done(&cli);
  }
  json_decref(a.body);
  return code < 0 ? 0 : code;
}
