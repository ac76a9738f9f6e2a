/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool report usage|cost|idle|efficiency`: GPU-hours, use, energy and cost from the
 * server's ledger (GET /v1/reports/{kind}), as an aligned table, CSV (RFC 4180) or the
 * API's JSON. The server checks every option's value and names the one at fault; this
 * command only carries them over. The answer lists its own columns, so each output
 * follows them rather than a copy of the server's list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "server/server.h"

enum { O_BY = 1, O_FROM, O_TO, O_STEP, O_SHARE_IDLE, O_OUTPUT };

/* The shared options but -o, which takes csv here as well (own_opt hands json and table
 * on). */
static const gp_opt report_opts[] = {
    {0, "by", true, O_BY},         {0, "from", true, O_FROM},
    {0, "to", true, O_TO},         {0, "step", true, O_STEP},
    {0, "share-idle", true, O_SHARE_IDLE}, {'o', "output", true, O_OUTPUT},
    {0, "server", true, GP_CLI_O_SERVER}, {0, "token", true, GP_CLI_O_TOKEN},
    {0, "ca", true, GP_CLI_O_CA},  {'h', "help", false, GP_CLI_O_HELP},
    {0, NULL, false, 0}};

typedef struct args {
  gp_cli *cli;
  const char *kind;
  const char *param[5]; /* by, from, to, step, share_idle: in O_BY.. order */
  bool csv;
} args;

static const char *const param_names[5] = {"by", "from", "to", "step", "share_idle"};

static int own_opt(void *arg, int id, const char *v) {
  args *a = arg;
  if (id == O_OUTPUT) {
    a->csv = strcmp(v, "csv") == 0;
    if (a->csv) {
      a->cli->json = false;
      return 0;
    }
    if (strcmp(v, "json") && strcmp(v, "table"))
      return gp_cli_usage_error(a->cli->cmd, "-o takes 'table', 'csv' or 'json', not '%s'", v);
    return gp_cli_common_opt(a->cli, GP_CLI_O_OUTPUT, v);
  }
  a->param[id - O_BY] = v;
  return 0;
}

static int word(void *arg, const char *w) {
  args *a = arg;
  if (a->kind) return gp_cli_usage_error(a->cli->cmd, "unexpected '%s'", w);
  a->kind = w;
  return 0;
}

/* A time for people: the date alone at midnight. */
static void when(const char *s, char *out, size_t cap) {
  if (strlen(s) == 20 && strcmp(s + 10, "T00:00:00Z") == 0) snprintf(out, cap, "%.10s", s);
  else snprintf(out, cap, "%s", s);
}

/* A cell for people: hours and kWh with two decimals, efficiency in percent, "-" for null.
 * The period is the range the row covers ("2026-01-01 to 2026-02-01"), from the report's
 * start where the step began before it, so no row reads as one day's use. */
static void cell(const char *column, json_t *row, const json_t *answer, char *out, size_t cap) {
  json_t *v = json_object_get(row, column);
  if (strcmp(column, "period") == 0 && json_is_string(v)) {
    const char *start = json_string_value(v), *from = json_string_value(json_object_get(answer, "from"));
    const char *end = json_string_value(json_object_get(row, "period_end"));
    char a[32], b[32];
    /* RFC 3339 in UTC ("...Z") sorts as text. */
    when(from && strcmp(from, start) > 0 ? from : start, a, sizeof a);
    if (!end) {
      snprintf(out, cap, "%s", a);
      return;
    }
    when(end, b, sizeof b);
    snprintf(out, cap, "%s to %s", a, b);
  } else if (json_is_null(v) || !v) {
    snprintf(out, cap, "-");
  } else if (json_is_string(v)) {
    snprintf(out, cap, "%s", json_string_value(v));
  } else if (strcmp(column, "efficiency") == 0) {
    snprintf(out, cap, "%.1f%%", json_number_value(v) * 100);
  } else {
    snprintf(out, cap, "%.2f", json_number_value(v));
  }
}

static void print_table(json_t *answer) {
  json_t *cols = json_object_get(answer, "columns"), *rows = json_object_get(answer, "rows");
  size_t n_all = json_array_size(cols);
  if (n_all == 0 || n_all > 32) return;
  /* The period's end shows inside the PERIOD cell, not as a column of its own. */
  const char *names[32], *head[32];
  char upper[32][32];
  size_t n = 0;
  for (size_t i = 0; i < n_all; i++) {
    const char *c = json_string_value(json_array_get(cols, i));
    if (!c || strcmp(c, "period_end") == 0) continue;
    size_t k = 0;
    for (; c[k] && k < sizeof upper[n] - 1; k++)
      upper[n][k] = (char)(c[k] >= 'a' && c[k] <= 'z' ? c[k] - 32 : c[k]);
    upper[n][k] = '\0';
    names[n] = c;
    head[n] = upper[n];
    n++;
  }
  printf("%s report, %s to %s", json_string_value(json_object_get(answer, "kind")),
         json_string_value(json_object_get(answer, "from")),
         json_string_value(json_object_get(answer, "to")));
  const char *currency = json_string_value(json_object_get(answer, "currency"));
  if (currency) printf(", cost in %s", currency);
  printf("\n");
  gp_table *t = gp_table_new((int)n, head);
  static char cells[32][256];
  const char *row_cells[32];
  bool over = false;
  size_t k;
  json_t *row;
  json_array_foreach(rows, k, row) {
    for (size_t i = 0; i < n; i++) {
      cell(names[i], row, answer, cells[i], sizeof cells[i]);
      row_cells[i] = cells[i];
    }
    json_t *e = json_object_get(row, "efficiency");
    if (json_is_number(e) && json_number_value(e) > 1.0005) over = true;
    gp_table_add(t, row_cells);
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
  json_t *fleet = json_object_get(answer, "fleet_cost");
  if (json_is_number(fleet)) printf("fleet cost: %.2f\n", json_number_value(fleet));
  if (over)
    printf("EFFICIENCY over 100%%: jobs holding part of a GPU (a fraction or a time-slice "
           "replica) kept more of its SMs busy than their part: without MPS a fraction caps "
           "memory, not compute, so a job uses the SMs its neighbours leave idle "
           "(docs/accounting.md)\n");
}

static void print_csv(const json_t *answer) {
  char *csv = gp_report_csv(answer);
  fputs(csv, stdout);
  free(csv);
}

static const char report_usage[] =
    "Usage: gpool report usage|cost|idle|efficiency [--by LIST] [--from T] [--to T]\n"
    "                    [--step day|week|month] [--share-idle none|deserved|usage]\n"
    "                    [-o table|csv|json]\n"
    "  GPU-hours, use, energy and cost from the ledger.\n"
    "    usage       GPU-hours allocated and used, efficiency, energy\n"
    "    cost        the same with their cost, plus idle, drained/down and unused\n"
    "                commitment rows (admins)\n"
    "    idle        only the idle, drained/down and unused commitment rows (admins)\n"
    "    efficiency  used / allocated per group, worst first\n"
    "  --by LIST     group by a comma list of queue, user, model, capacity, node, job,\n"
    "                service (a service's replicas; other jobs under \"-\")\n"
    "  --from T, --to T  the period [from, to): RFC 3339 (2026-01-31T12:00:00Z), a date\n"
    "                (2026-01-31, 00:00 UTC) or Unix seconds; default this month to now\n"
    "  --step S      one row per day, week (from Monday) or month (UTC)\n"
    "  --share-idle S  charge idle cost to queues by their deserved GPUs or their use\n"
    "                (admins)\n"
    "  A user sees only their own jobs' rows; an admin sees everything.\n";

int gp_cmd_report(int argc, char **argv) {
  gp_cli cli = {.cmd = "report"};
  args a = {.cli = &cli};
  int code = gp_cli_parse(&cli, argc, argv, report_opts, own_opt, word, &a, report_usage);
  if (code) return code < 0 ? 0 : code;
  if (!a.kind) return gp_cli_usage_error(cli.cmd, "which report: usage, cost, idle or efficiency");
  char path[2048], esc[1100];
  if (gp_client_escape(a.kind, 0, esc, sizeof esc))
    return gp_cli_usage_error(cli.cmd, "the report kind is too long");
  int n = snprintf(path, sizeof path, "/v1/reports/%s", esc);
  char sep = '?';
  for (int i = 0; i < 5; i++) {
    if (!a.param[i]) continue;
    if (gp_client_escape(a.param[i], 0, esc, sizeof esc))
      return gp_cli_usage_error(cli.cmd, "--%s is too long", param_names[i]);
    n += snprintf(path + n, sizeof path - (size_t)n, "%c%s=%s", sep, param_names[i], esc);
    sep = '&';
  }
  if ((code = gp_cli_connect(&cli))) return code;
  json_t *answer = NULL;
  code = gp_cli_call(&cli, "GET", path, NULL, &answer);
  gp_cli_done(&cli);
  if (code) return code;
  if (cli.json) gp_cli_print_json(answer);
  else if (a.csv) print_csv(answer);
  else print_table(answer);
  if (json_is_true(json_object_get(answer, "truncated")))
    fprintf(stderr, "gpool report: the answer was cut at %zu rows; group less or ask for a "
                    "shorter period\n", json_array_size(json_object_get(answer, "rows")));
  json_decref(answer);
  return 0;
}
