/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool registry login REGISTRY [-u USER] [--password-stdin] [--pool]`, `gpool registry
 * logout REGISTRY [--pool]`, `gpool registry list`: the caller's credentials for container
 * registries (docs/containers.md#credentials), which only the caller's jobs pull with; an
 * admin's --pool one serves users who have none. The password is read from stdin or the
 * terminal (never an argument: other users see a command line) and never printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "protocol/registry.h"

enum { O_USER = 1, O_STDIN, O_POOL };

static const gp_opt registry_opts[] = {
  {'u', "username", true, O_USER},
  {0, "password-stdin", false, O_STDIN},
  {0, "pool", false, O_POOL},
  GP_CLI_COMMON_OPTS,
};

static const char registry_usage[] =
  "Usage: gpool registry login REGISTRY [-u USER] [--password-stdin] [--pool]\n"
  "       gpool registry logout REGISTRY [--pool]\n"
  "       gpool registry list [-o json]\n"
  "  REGISTRY is host[:port] as in your images' names (127.0.0.1:5000, nvcr.io).\n"
  "  Your credential serves your own jobs' pulls only; --pool (admins) sets the one used\n"
  "  for users who have none. The password comes from stdin (--password-stdin) or the\n"
  "  terminal, never the command line.\n";

typedef struct args {
  const char *words[3];
  const char *user;
  bool from_stdin, pool;
} args;

static int own(void *arg, int id, const char *v) {
  args *a = arg;
  if (id == O_USER) a->user = v;
  else if (id == O_STDIN) a->from_stdin = true;
  else a->pool = true;
  return 0;
}

static int word(void *arg, const char *w) {
  args *a = arg;
  for (int i = 0; i < 3; i++)
    if (!a->words[i]) {
      a->words[i] = w;
      return 0;
    }
  return gp_cli_usage_error("registry", "unexpected argument \"%s\"", w);
}

/* One line from f into buf, without its newline; false when there is none or it is too long. */
static bool read_line(FILE *f, char *buf, size_t size) {
  if (!fgets(buf, (int)size, f)) return false;
  size_t n = strcspn(buf, "\r\n");
  if (n == strlen(buf) && !feof(f)) return false; /* longer than the buffer */
  buf[n] = '\0';
  return true;
}

static int read_password(const args *a, char *buf, size_t size) {
  if (a->from_stdin) {
    if (!read_line(stdin, buf, size) || !*buf) {
      fprintf(stderr, "gpool registry: no password on stdin (one line of at most %d bytes)\n",
              GP_PROTO_REGISTRY_PASSWORD_MAX);
      return 2;
    }
    return 0;
  }
  if (!isatty(0)) {
    fprintf(stderr, "gpool registry: stdin is not a terminal: give --password-stdin\n");
    return 2;
  }
  struct termios old, quiet;
  tcgetattr(0, &old);
  quiet = old;
  quiet.c_lflag &= ~(tcflag_t)ECHO;
  fprintf(stderr, "Password: ");
  tcsetattr(0, TCSAFLUSH, &quiet);
  bool ok = read_line(stdin, buf, size);
  tcsetattr(0, TCSAFLUSH, &old);
  fprintf(stderr, "\n");
  if (!ok || !*buf) {
    fprintf(stderr, "gpool registry: no password\n");
    return 2;
  }
  return 0;
}

static int list_table(gp_cli *cli, json_t *items, json_t *answer, void *arg) {
  (void)cli;
  (void)answer;
  (void)arg;
  static const char *const head[] = {"REGISTRY", "SCOPE"};
  gp_table *t = gp_table_new(2, head);
  size_t i;
  json_t *e;
  json_array_foreach(items, i, e) {
    const char *row[] = {json_string_value(json_object_get(e, "registry")),
                         json_string_value(json_object_get(e, "scope"))};
    gp_table_add(t, row);
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
  return 0;
}

int gp_cmd_registry(int argc, char **argv) {
  gp_cli cli = {.cmd = "registry"};
  args a = {0};
  int code = gp_cli_parse(&cli, argc, argv, registry_opts, own, word, &a, registry_usage);
  if (code) return code < 0 ? 0 : code;
  const char *verb = a.words[0] ? a.words[0] : "list";
  bool login = !strcmp(verb, "login"), logout = !strcmp(verb, "logout");
  if (!strcmp(verb, "list")) {
    if (a.words[1] || a.user || a.from_stdin || a.pool)
      return gp_cli_usage_error("registry", "`gpool registry list` takes no arguments");
    return gp_cli_get_print(&cli, "/v1/registries", "registries", list_table, NULL);
  }
  if (!login && !logout) return gp_cli_usage_error("registry", "unknown action \"%s\" (login, logout or list)", verb);
  if (!a.words[1]) return gp_cli_usage_error("registry", "%s which registry?", verb);
  if (a.words[2]) return gp_cli_usage_error("registry", "unexpected argument \"%s\"", a.words[2]);
  const char *why = gp_proto_registry_check(a.words[1]);
  if (why) return gp_cli_usage_error("registry", "registry '%s': %s", a.words[1], why);
  if (logout && (a.user || a.from_stdin))
    return gp_cli_usage_error("registry", "-u and --password-stdin go with `gpool registry login`");
  char path[GP_PROTO_REGISTRY_MAX + 64];
  snprintf(path, sizeof path, "/v1/registries/%s%s", a.words[1], a.pool ? "?pool=true" : "");
  json_t *body = NULL, *answer = NULL;
  if (login) {
    if (!a.user || !*a.user) return gp_cli_usage_error("registry", "login needs -u USER");
    char pw[GP_PROTO_REGISTRY_PASSWORD_MAX + 2];
    if ((code = read_password(&a, pw, sizeof pw))) return code;
    body = json_pack("{s:s, s:s}", "username", a.user, "password", pw);
    explicit_bzero(pw, sizeof pw);
  }
  code = gp_cli_connect(&cli);
  if (!code) code = gp_cli_call(&cli, login ? "PUT" : "DELETE", path, body, &answer);
  if (body) {
    /* jansson's copy of the password, wiped before it is freed */
    json_t *p = json_object_get(body, "password");
    if (p) explicit_bzero((char *)json_string_value(p), json_string_length(p));
  }
  json_decref(body);
  if (!code) {
    if (cli.json) gp_cli_print_json(answer);
    else printf("%s %s%s\n", login ? "Logged in to" : "Logged out of", a.words[1],
                a.pool ? " (pool-wide)" : "");
  }
  json_decref(answer);
  gp_cli_done(&cli);
  return code;
}
