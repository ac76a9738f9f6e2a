/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool advise`: where GPU-hours and money go unused and what to change (GET /v1/advice),
 * as a table of the savings with each piece of advice's sentence under it, or the API's
 * JSON. The server checks every value and names the one at fault; this command only carries
 * them over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/advise.h"
#include "cli/cli_common.h"
#include "cli/commands.h"

enum { O_QUEUE = 1, O_USER, O_NAME, O_FROM, O_TO, O_HEADROOM, O_CHECKPOINT, O_N };

static const gp_opt advise_opts[] = {
    {0, "queue", true, O_QUEUE}, {0, "user", true, O_USER},       {0, "name", true, O_NAME},
    {0, "from", true, O_FROM},   {0, "to", true, O_TO},           {0, "headroom", true, O_HEADROOM},
    {0, "checkpoint", true, O_CHECKPOINT},
    GP_CLI_COMMON_OPTS};

static const char *const param_names[O_N] = {NULL, "queue", "user", "name", "from", "to",
                                             "headroom", "checkpoint"};

typedef struct args {
  const char *param[O_N];
} args;

static int own_opt(void *arg, int id, const char *v) {
  ((args *)arg)->param[id] = v;
  return 0;
}

/* "alice/train-7b", "job 42 (alice)", "org/a", "fleet". */
static void subject(json_t *it, char *out, size_t cap) {
  const char *user = json_string_value(json_object_get(it, "user"));
  const char *queue = json_string_value(json_object_get(it, "queue"));
  const char *name = json_string_value(json_object_get(it, "name"));
  json_t *job = json_object_get(it, "job");
  if (json_is_integer(job) && name) snprintf(out, cap, "job %lld %s", (long long)json_integer_value(job), name);
  else if (json_is_integer(job)) snprintf(out, cap, "job %lld", (long long)json_integer_value(job));
  else if (user && name) snprintf(out, cap, "%s/%s", user, name);
  else if (user && queue) snprintf(out, cap, "%s in %s", user, queue);
  else if (queue) snprintf(out, cap, "%s", queue);
  else snprintf(out, cap, "fleet");
}

static void print_table(json_t *answer) {
  json_t *items = json_object_get(answer, "items");
  const char *currency = json_string_value(json_object_get(answer, "currency"));
  printf("advice, %s to %s, headroom %.0f%%", json_string_value(json_object_get(answer, "from")),
         json_string_value(json_object_get(answer, "to")),
         json_number_value(json_object_get(answer, "headroom")) * 100);
  if (currency) printf(", money in %s", currency);
  printf("\n");
  if (json_array_size(items) == 0) {
    printf("nothing to advise\n");
    return;
  }
  static const char *const head[] = {"#", "KIND", "SUBJECT", "GPU_HOURS_SAVED", "SAVED", "CHANGE"};
  gp_table *t = gp_table_new(6, head);
  size_t i;
  json_t *it;
  json_array_foreach(items, i, it) {
    char num[24], subj[300], gpu_h[48], cost[48];
    json_t *saving = json_object_get(it, "saving");
    snprintf(num, sizeof num, "%zu", i + 1);
    subject(it, subj, sizeof subj);
    snprintf(gpu_h, sizeof gpu_h, "%.2f", gp_cli_num(json_object_get(saving, "gpu_hours")));
    json_t *c = json_object_get(saving, "cost");
    if (json_is_number(c)) snprintf(cost, sizeof cost, "%.2f", json_number_value(c));
    else snprintf(cost, sizeof cost, "-");
    const char *change = json_string_value(json_object_get(it, "suggestion"));
    const char *cells[] = {num, json_string_value(json_object_get(it, "kind")), subj, gpu_h, cost,
                           change ? change : "-"};
    gp_table_add(t, cells);
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
  printf("\n");
  json_array_foreach(items, i, it)
    printf("%zu. %s\n", i + 1, json_string_value(json_object_get(it, "message")));
}

/* Appends "?k=v&..." for the given parameters; false when one is too long. */
static bool build_path(char *path, size_t cap, const char *const *param, const char **bad) {
  int n = snprintf(path, cap, "/v1/advice");
  char sep = '?', esc[1100];
  for (int i = 1; i < O_N; i++) {
    if (!param[i]) continue;
    if (gp_client_escape(param[i], 0, esc, sizeof esc)) {
      *bad = param_names[i];
      return false;
    }
    n += snprintf(path + n, cap - (size_t)n, "%c%s=%s", sep, param_names[i], esc);
    sep = '&';
  }
  return (size_t)n < cap;
}

int gp_cli_advise_name(gp_cli *cli, const char *name, FILE *out) {
  const char *param[O_N] = {0};
  param[O_NAME] = name;
  char path[2048];
  const char *bad = NULL;
  if (!name || !*name || !build_path(path, sizeof path, param, &bad)) return 0;
  json_t *answer = NULL;
  gp_err err = {0};
  long status = 0;
  int rc = gp_client_call(cli->client, "GET", path, NULL, &answer, &status, &err);
  if (rc) {
    fprintf(out, "gpool %s: no advice (%s)\n", cli->cmd, err.message);
    return 0;
  }
  size_t i;
  json_t *it;
  int n = 0;
  json_array_foreach(json_object_get(answer, "items"), i, it) {
    fprintf(out, "advice: %s\n", json_string_value(json_object_get(it, "message")));
    n++;
  }
  json_decref(answer);
  return n;
}

static const char advise_usage[] =
    "Usage: gpool advise [--queue Q] [--user U] [--name N] [--from T] [--to T]\n"
    "                    [--headroom H] [--checkpoint D] [-o table|json]\n"
    "  Where GPU-hours and money go unused, with the evidence and the saving of each change:\n"
    "    right_size   jobs whose peak memory and SM use fit a smaller MIG profile, a\n"
    "                 fraction, or a cheaper GPU model in the fleet\n"
    "    spot         requeueable jobs that checkpoint and could run on spot capacity\n"
    "    idle_now     running jobs idle past their queue's window now\n"
    "    idle_week    GPU-hours held but unused, by queue and user\n"
    "    quota        queues whose jobs wait for GPUs, or that leave their quota idle (admins)\n"
    "    utilisation  the fleet's allocation against the 70-90% band (admins)\n"
    "  --queue Q     a queue and its sub-queues (no fleet band)  --user U  one user (admins)\n"
    "  --name N      jobs of this name only\n"
    "  --from T, --to T  the period: RFC 3339, a date or Unix seconds; default the last 7 days\n"
    "  --headroom H  margin over the measured use: 0.2 or 20% (default), 0 to 4\n"
    "  --checkpoint D  checkpoint interval a spot job must outlast (default 30m)\n"
    "  A user sees only their own jobs' advice; an admin sees everyone's and the fleet's.\n";

int gp_cmd_advise(int argc, char **argv) {
  gp_cli cli = {.cmd = "advise"};
  args a = {0};
  int code = gp_cli_parse(&cli, argc, argv, advise_opts, own_opt, NULL, &a, advise_usage);
  if (code) return code < 0 ? 0 : code;
  char path[4096];
  const char *bad = NULL;
  if (!build_path(path, sizeof path, a.param, &bad))
    return gp_cli_usage_error(cli.cmd, "--%s is too long", bad ? bad : "option");
  if ((code = gp_cli_connect(&cli))) return code;
  json_t *answer = NULL;
  code = gp_cli_call(&cli, "GET", path, NULL, &answer);
  gp_cli_done(&cli);
  if (code) return code;
  if (cli.json) gp_cli_print_json(answer);
  else print_table(answer);
  if (json_is_true(json_object_get(answer, "truncated")))
    fprintf(stderr, "gpool advise: only the %zu largest savings are listed\n",
            json_array_size(json_object_get(answer, "items")));
  json_decref(answer);
  return 0;
}
