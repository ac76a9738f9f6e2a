/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool shares`: fair share over time, like Slurm's sshare. Per queue (indented under its
 * parent) and per user of a leaf queue: raw usage (decayed, weighted GPU-hours), usage
 * as GPU-equivalents, effective usage (its part of its siblings' usage), normalised share
 * and the fair-share factor 2^-(effective / share). From GET /v1/shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "client/client.h"
#include "util/buf.h"

enum { S_QUEUE = 1, S_USER };
static const gp_opt shares_opts[] = {{'q', "queue", true, S_QUEUE}, {'u', "user", true, S_USER},
                                     GP_CLI_COMMON_OPTS};

typedef struct shares_args {
  const char *queue, *user;
} shares_args;

static int shares_opt(void *arg, int id, const char *v) {
  shares_args *a = arg;
  if (id == S_QUEUE) a->queue = v;
  else if (id == S_USER) a->user = v;
  return 0;
}

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static void row(gp_table *t, json_t *r, const char *name, const char *user) {
  char raw[32], gpus[32], eff[32], share[32], factor[32];
  snprintf(raw, sizeof raw, "%.1f", gp_cli_num(json_object_get(r, "raw_usage_gpu_hours")));
  gp_cli_fmt_gpus(gp_cli_num(json_object_get(r, "usage_gpus")), gpus, sizeof gpus);
  snprintf(eff, sizeof eff, "%.3f", gp_cli_num(json_object_get(r, "effective_usage")));
  snprintf(share, sizeof share, "%.3f", gp_cli_num(json_object_get(r, "share")));
  snprintf(factor, sizeof factor, "%.3f", gp_cli_num(json_object_get(r, "factor")));
  const char *cells[] = {name, user, raw, gpus, eff, share, factor};
  gp_table_add(t, cells);
}

static int by_queue(const void *a, const void *b) {
  int c = strcmp(str(*(json_t *const *)a, "queue"), str(*(json_t *const *)b, "queue"));
  return c ? c : strcmp(str(*(json_t *const *)a, "user"), str(*(json_t *const *)b, "user"));
}

/* Queues in name order (so a parent comes before its children), each followed by its
 * users. */
static void print_table(json_t *answer) {
  json_t *qs = json_object_get(answer, "queues"), *us = json_object_get(answer, "users");
  size_t nq = json_array_size(qs), nu = json_array_size(us);
  json_t **q = calloc(nq + 1, sizeof *q), **u = calloc(nu + 1, sizeof *u);
  for (size_t i = 0; i < nq; i++) q[i] = json_array_get(qs, i);
  for (size_t i = 0; i < nu; i++) u[i] = json_array_get(us, i);
  qsort(q, nq, sizeof *q, by_queue);
  qsort(u, nu, sizeof *u, by_queue);
  static const char *const head[] = {"QUEUE", "USER", "RAW_GPU_H", "USAGE_GPUS", "EFFECTIVE",
                                     "SHARE", "FACTOR"};
  gp_table *t = gp_table_new(7, head);
  bool *shown = calloc(nu + 1, sizeof *shown);
  for (size_t i = 0; i < nq; i++) {
    const char *name = str(q[i], "queue");
    int depth = 0;
    for (const char *p = name; *p; p++) depth += *p == '/';
    const char *slash = strrchr(name, '/');
    char label[600];
    snprintf(label, sizeof label, "%*s%s", depth * 2, "", slash ? slash + 1 : name);
    row(t, q[i], label, "");
    for (size_t k = 0; k < nu; k++)
      if (!shown[k] && !strcmp(str(u[k], "queue"), name)) {
        row(t, u[k], "", str(u[k], "user"));
        shown[k] = true;
      }
  }
  for (size_t k = 0; k < nu; k++) /* users whose queue the filter left out */
    if (!shown[k]) row(t, u[k], str(u[k], "queue"), str(u[k], "user"));
  gp_table_print(t, stdout);
  gp_table_free(t);
  json_t *hl = json_object_get(answer, "half_life_s");
  if (json_is_integer(hl)) {
    char d[64];
    gp_cli_fmt_duration(json_integer_value(hl), d, sizeof d);
    printf("Usage halves every %s; reset: %s.\n", d, str(answer, "reset"));
  } else {
    printf("Usage does not decay (half_life: off); reset: %s.\n", str(answer, "reset"));
  }
  free(shown);
  free(q);
  free(u);
}

static const char shares_usage[] =
  "Usage: gpool shares [-q QUEUE] [-u USER] [-o json]\n"
  "  Fair share over time, per queue and per user of each leaf queue (like Slurm's sshare).\n"
  "  RAW_GPU_H: decayed usage in GPU-hours weighted by GPU model; USAGE_GPUS: the same as\n"
  "  the GPUs a steady allocation would need to leave it; EFFECTIVE: its part of its\n"
  "  siblings' usage; SHARE: its weight's part of its siblings' (a leaf's users share\n"
  "  equally); FACTOR: 2^-(EFFECTIVE/SHARE), 1 for no usage, 0.5 at exactly its share.\n"
  "  -q QUEUE keeps the queue and its sub-queues; -u USER keeps that user's rows.\n";

int gp_cmd_shares(int argc, char **argv) {
  gp_cli cli = {.cmd = "shares"};
  shares_args a = {0};
  int code = gp_cli_parse(&cli, argc, argv, shares_opts, shares_opt, NULL, &a, shares_usage);
  if (code) return code < 0 ? 0 : code;
  gp_buf path;
  gp_buf_init(&path, 256);
  gp_buf_puts(&path, "/v1/shares");
  const char *keys[] = {"queue", "user"}, *vals[] = {a.queue, a.user};
  for (int i = 0; i < 2; i++) {
    if (!vals[i]) continue;
    char esc[1024];
    if (gp_client_escape(vals[i], 0, esc, sizeof esc)) {
      gp_buf_done(&path);
      return gp_cli_usage_error(cli.cmd, "the -%c value is too long", keys[i][0]);
    }
    gp_buf_printf(&path, "%c%s=%s", strchr(path.data, '?') ? '&' : '?', keys[i], esc);
  }
  if ((code = gp_cli_connect(&cli))) {
    gp_buf_done(&path);
    return code;
  }
  json_t *answer = NULL;
  code = gp_cli_call(&cli, "GET", path.data, NULL, &answer);
  gp_buf_done(&path);
  if (!code) {
    if (cli.json) gp_cli_print_json(answer);
    else print_table(answer);
  }
  json_decref(answer);
  gp_cli_done(&cli);
  return code;
}
