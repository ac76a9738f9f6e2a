/* SPDX-License-Identifier: Apache-2.0 */
/* What every API-speaking `gpool` command shares: the options --server, --token, --ca and
 * -o json|table, connecting (client.h resolves flags, environment, client.json), printing
 * API errors as one clear line on stderr, exit codes, and aligned tables for people.
 *
 * Exit codes: 0 success, 1 the server refused or failed (the API's error is printed),
 * 2 a usage error (bad option), 3 the server could not be reached. */
#ifndef GP_CLI_CLI_COMMON_H
#define GP_CLI_CLI_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/opts.h"
#include "client/client.h"
#include "util/error.h"

/* Option ids >= GP_CLI_COMMON_BASE are the shared ones; commands append their own table
 * entries before GP_CLI_COMMON_OPTS. */
enum { GP_CLI_COMMON_BASE = 900, GP_CLI_O_SERVER, GP_CLI_O_TOKEN, GP_CLI_O_OUTPUT, GP_CLI_O_HELP,
       GP_CLI_O_CA };
#define GP_CLI_COMMON_OPTS                                                                 \
  {0, "server", true, GP_CLI_O_SERVER}, {0, "token", true, GP_CLI_O_TOKEN},                \
      {0, "ca", true, GP_CLI_O_CA},                                                        \
      {'o', "output", true, GP_CLI_O_OUTPUT}, {'h', "help", false, GP_CLI_O_HELP},         \
  {                                                                                        \
    0, NULL, false, 0                                                                      \
  }

typedef struct gp_cli {
  const char *cmd;      /* "jobs", for messages */
  const char *server;   /* --server, borrowed */
  const char *token;    /* --token, borrowed */
  const char *ca;       /* --ca, borrowed */
  bool json;            /* -o json */
  bool help;
  gp_client *client;    /* after gp_cli_connect */
} gp_cli;

/* Handles a shared option; returns 0, or 2 after printing a usage error. */
int gp_cli_common_opt(gp_cli *cli, int id, const char *value);

/* A command's own option (an id below GP_CLI_COMMON_BASE) or positional word; returns 0,
 * or an exit code after printing a usage error. */
typedef int (*gp_cli_opt_fn)(void *arg, int id, const char *value);
typedef int (*gp_cli_word_fn)(void *arg, const char *word);

/* Scans argv[1..] with `table` (ending in GP_CLI_COMMON_OPTS) up to the end or "--": the
 * command's own options go to `own`, positional words to `word` (NULL: refused as
 * unexpected), the shared options into cli. With --help, prints `usage` (when not NULL)
 * and returns -1; otherwise returns 0 or the exit code of the first error. */
int gp_cli_parse(gp_cli *cli, int argc, char **argv, const gp_opt *table, gp_cli_opt_fn own,
                 gp_cli_word_fn word, void *arg, const char *usage);

/* Connects (resolving server and token); returns 0, or prints why not and returns the exit
 * code. A missing token is an error that says where tokens come from. */
int gp_cli_connect(gp_cli *cli);
void gp_cli_done(gp_cli *cli);

/* Prints "gpool CMD: message (field: f)" on stderr and returns the exit code for rc. */
int gp_cli_fail(const gp_cli *cli, int rc, const gp_err *err);
/* Prints "gpool CMD: <message>" for a usage error and returns 2. */
int gp_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Calls the API; on failure prints the error and returns the exit code (non-zero). */
int gp_cli_call(gp_cli *cli, const char *method, const char *path, json_t *body, json_t **ret);

/* Pretty-prints JSON on stdout with a newline. */
void gp_cli_print_json(json_t *doc);

/* Prints a listed answer for people; returns 0 or an exit code. */
typedef int (*gp_cli_table_fn)(gp_cli *cli, json_t *list, json_t *answer, void *arg);

/* The listing commands' "connect, GET, print": GETs `path` and prints the answer's `key`
 * list, as JSON with -o json (an empty array when the answer has none), else through
 * `table` (while still connected). Disconnects; returns the exit code. */
int gp_cli_get_print(gp_cli *cli, const char *path, const char *key, gp_cli_table_fn table,
                     void *arg);

/* "45s", "12m", "3h05m", "2d04h"; negative or zero as "0s". */
void gp_cli_fmt_duration(int64_t s, char *out, size_t cap);
/* MiB as "80G", "512M", "1.5T" (powers of 1024). */
void gp_cli_fmt_mib(int64_t mib, char *out, size_t cap);
/* A number of GPUs: "2", "0.5", "1.25". */
void gp_cli_fmt_gpus(double g, char *out, size_t cap);
/* A job id is decimal digits; validates a user's word before it goes into a URL path. */
bool gp_cli_valid_id(const char *s);
/* A job id, or an array element's "12_7". */
bool gp_cli_valid_job_id(const char *s);
/* Seconds since the Unix epoch now. */
int64_t gp_cli_now(void);
/* Integer or real JSON value as a double (0 when absent). */
double gp_cli_num(json_t *v);

/* A table for people: columns sized to their widest cell, two spaces between them. */
typedef struct gp_table gp_table;
gp_table *gp_table_new(int ncols, const char *const *headers);
void gp_table_add(gp_table *t, const char *const *cells); /* ncols strings, copied */
void gp_table_print(const gp_table *t, FILE *out);
void gp_table_free(gp_table *t);

#endif
