/* SPDX-License-Identifier: Apache-2.0 */
/* Shared plumbing of the API-speaking commands (cli_common.h). */
#include "cli/cli_common.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/mem.h"

int gp_cli_common_opt(gp_cli *cli, int id, const char *value) {
  switch (id) {
  case GP_CLI_O_SERVER: cli->server = value; return 0;
  case GP_CLI_O_TOKEN: cli->token = value; return 0;
  case GP_CLI_O_CA: cli->ca = value; return 0;
  case GP_CLI_O_HELP: cli->help = true; return 0;
  case GP_CLI_O_OUTPUT:
    if (!strcmp(value, "json")) cli->json = true;
    else if (!strcmp(value, "table")) cli->json = false;
    else return gp_cli_usage_error(cli->cmd, "-o takes 'json' or 'table', not '%s'", value);
    return 0;
  default:
    return gp_cli_usage_error(cli->cmd, "unhandled option");
  }
}

int gp_cli_parse(gp_cli *cli, int argc, char **argv, const gp_opt *table, gp_cli_opt_fn own,
                 gp_cli_word_fn word, void *arg, const char *usage) {
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  gp_err err = {0};
  for (;;) {
    const char *v = NULL;
    int id = gp_opt_next(&it, table, &v, &err);
    if (id == GP_OPT_END) break;
    int rc;
    if (id == GP_OPT_POSITIONAL) {
      if (!word) return gp_cli_usage_error(cli->cmd, "unexpected '%s'", v);
      rc = word(arg, v);
    } else if (id < 0) {
      return gp_cli_usage_error(cli->cmd, "%s", err.message);
    } else {
      rc = id < GP_CLI_COMMON_BASE && own ? own(arg, id, v) : gp_cli_common_opt(cli, id, v);
    }
    if (rc) return rc;
  }
  if (cli->help && usage) {
    fputs(usage, stdout);
    return -1;
  }
  return 0;
}

int gp_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gpool %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see 'gpool %s --help')\n", cmd);
  va_end(ap);
  return 2;
}

int gp_cli_fail(const gp_cli *cli, int rc, const gp_err *err) {
  char line[1200];
  gp_err_format(err, line, sizeof line);
  fprintf(stderr, "gpool %s: %s\n", cli->cmd, line[0] ? line : gp_strerror(rc));
  if (rc == GP_EPERM && strstr(line, "token"))
    fprintf(stderr, "  (the token comes from --token, GPOOL_TOKEN or client.json, in that order)\n");
  return rc == GP_EIO || rc == GP_ETIMEOUT ? 3 : 1;
}

int gp_cli_connect(gp_cli *cli) {
  char *server = NULL, *token = NULL;
  gp_err err = {0};
  int rc = gp_client_resolve(cli->server, cli->token, &server, &token, &err);
  if (rc) return gp_cli_fail(cli, rc, &err);
  if (!token) {
    char path[4096] = "~/.config/gpool/client.json";
    gp_client_config_path(path, sizeof path);
    fprintf(stderr,
            "gpool %s: no token: pass --token, set GPOOL_TOKEN, or start a local pool with "
            "'gpool up' (it writes %s)\n", cli->cmd, path);
    free(server);
    return 2;
  }
  char *ca = NULL;
  if ((rc = gp_client_resolve_ca(cli->ca, &ca, &err))) {
    free(server);
    free(token);
    return gp_cli_fail(cli, rc, &err);
  }
  cli->client = gp_client_new(server, token);
  free(server);
  free(token);
  if (!cli->client) {
    free(ca);
    fprintf(stderr, "gpool %s: cannot create an HTTP client\n", cli->cmd);
    return 3;
  }
  gp_client_set_ca(cli->client, ca);
  free(ca);
  return 0;
}

void gp_cli_done(gp_cli *cli) {
  gp_client_free(cli->client);
  cli->client = NULL;
}

int gp_cli_call(gp_cli *cli, const char *method, const char *path, json_t *body, json_t **ret) {
  gp_err err = {0};
  int rc = gp_client_call(cli->client, method, path, body, ret, NULL, &err);
  return rc ? gp_cli_fail(cli, rc, &err) : 0;
}

void gp_cli_print_json(json_t *doc) {
  char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (s) {
    fputs(s, stdout);
    fputc('\n', stdout);
  }
  free(s);
}

int gp_cli_get_print(gp_cli *cli, const char *path, const char *key, gp_cli_table_fn table,
                     void *arg) {
  json_t *answer = NULL;
  int code = gp_cli_connect(cli);
  if (!code) code = gp_cli_call(cli, "GET", path, NULL, &answer);
  if (!code) {
    json_t *list = json_object_get(answer, key);
    if (cli->json) {
      json_t *none = json_array();
      gp_cli_print_json(list ? list : none);
      json_decref(none);
    } else {
      code = table(cli, list, answer, arg);
    }
  }
  json_decref(answer);
  gp_cli_done(cli);
  return code;
}

void gp_cli_fmt_duration(int64_t s, char *out, size_t cap) {
  if (s <= 0) snprintf(out, cap, "0s");
  else if (s < 60) snprintf(out, cap, "%llds", (long long)s);
  else if (s < 3600) snprintf(out, cap, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else if (s < 86400) snprintf(out, cap, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
  else snprintf(out, cap, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

void gp_cli_fmt_mib(int64_t mib, char *out, size_t cap) {
  if (mib >= 1024 * 1024 && mib % (1024 * 1024) == 0) snprintf(out, cap, "%lldT", (long long)(mib >> 20));
  else if (mib >= 1024 * 1024) snprintf(out, cap, "%.1fT", (double)mib / (1024.0 * 1024.0));
  else if (mib >= 1024 && mib % 1024 == 0) snprintf(out, cap, "%lldG", (long long)(mib >> 10));
  else if (mib >= 1024) snprintf(out, cap, "%.1fG", (double)mib / 1024.0);
  else snprintf(out, cap, "%lldM", (long long)mib);
}

void gp_cli_fmt_gpus(double g, char *out, size_t cap) {
  if (g == (double)(long long)g) snprintf(out, cap, "%lld", (long long)g);
  else snprintf(out, cap, "%.2f", g);
  /* "0.50" -> "0.5" */
  size_t n = strlen(out);
  if (strchr(out, '.')) {
    while (n > 0 && out[n - 1] == '0') out[--n] = '\0';
    if (n > 0 && out[n - 1] == '.') out[--n] = '\0';
  }
}

bool gp_cli_valid_id(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 32) return false;
  for (size_t i = 0; i < n; i++)
    if (!isdigit((unsigned char)s[i])) return false;
  return true;
}

bool gp_cli_valid_job_id(const char *s) {
  const char *u = strchr(s, '_');
  if (!u) return gp_cli_valid_id(s);
  char head[40];
  if (u - s >= (ptrdiff_t)sizeof head) return false;
  snprintf(head, sizeof head, "%.*s", (int)(u - s), s);
  return gp_cli_valid_id(head) && gp_cli_valid_id(u + 1);
}

int64_t gp_cli_now(void) { return (int64_t)time(NULL); }

double gp_cli_num(json_t *v) { return json_is_number(v) ? json_number_value(v) : 0; }

struct gp_table {
  int ncols;
  size_t nrows, cap;
  char **cells; /* row-major, nrows+1 rows (headers first) */
};

gp_table *gp_table_new(int ncols, const char *const *headers) {
  gp_table *t = gp_xcalloc(1, sizeof *t);
  t->ncols = ncols;
  gp_table_add(t, headers);
  return t;
}

void gp_table_add(gp_table *t, const char *const *cells) {
  gp_xgrow((void **)&t->cells, &t->cap, (t->nrows + 1) * (size_t)t->ncols, sizeof *t->cells);
  for (int c = 0; c < t->ncols; c++)
    t->cells[t->nrows * (size_t)t->ncols + (size_t)c] = gp_xstrdup(cells[c] ? cells[c] : "");
  t->nrows++;
}

void gp_table_print(const gp_table *t, FILE *out) {
  size_t width[64] = {0};
  int ncols = t->ncols < 64 ? t->ncols : 64;
  for (size_t r = 0; r < t->nrows; r++)
    for (int c = 0; c < ncols; c++) {
      size_t w = strlen(t->cells[r * (size_t)t->ncols + (size_t)c]);
      if (w > width[c]) width[c] = w;
    }
  for (size_t r = 0; r < t->nrows; r++) {
    for (int c = 0; c < ncols; c++) {
      const char *cell = t->cells[r * (size_t)t->ncols + (size_t)c];
      if (c == ncols - 1) fputs(cell, out);
      else fprintf(out, "%-*s  ", (int)width[c], cell);
    }
    fputc('\n', out);
  }
}

void gp_table_free(gp_table *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++) free(t->cells[i]);
  free(t->cells);
  free(t);
}
