/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool logs ID [-f] [--stderr]`: prints a job's output through the server, which proxies
 * it from the agent that ran the job (GET /v1/jobs/{id}/log). With -f it keeps polling
 * until the job has ended and everything it wrote has been printed. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/job_format.h"

enum { L_FOLLOW = 1, L_STDERR };
static const gp_opt logs_opts[] = {
  {'f', "follow", false, L_FOLLOW}, {0, "stderr", false, L_STDERR}, GP_CLI_COMMON_OPTS,
};

static const char logs_usage[] =
  "Usage: gpool logs ID [-f] [--stderr]\n"
  "  Prints the job's standard output (--stderr: its standard error).\n"
  "  -f keeps printing new output until the job ends.\n";

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int job_ended(gp_cli *cli, const char *id, int *ended) {
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  json_t *answer = NULL;
  int code = gp_cli_call(cli, "GET", path, NULL, &answer);
  if (code) return code;
  const char *state = json_string_value(json_object_get(json_object_get(answer, "job"), "state"));
  *ended = state && gp_job_state_final(state);
  json_decref(answer);
  return 0;
}

typedef struct logs_args {
  const char *job;
  bool follow, err_stream;
} logs_args;

static int logs_opt(void *arg, int id, const char *v) {
  (void)v;
  logs_args *a = arg;
  if (id == L_FOLLOW) a->follow = true;
  else if (id == L_STDERR) a->err_stream = true;
  return 0;
}

static int logs_word(void *arg, const char *v) {
  logs_args *a = arg;
  if (a->job) return gp_cli_usage_error("logs", "one job at a time");
  if (!gp_cli_valid_id(v)) return gp_cli_usage_error("logs", "'%s' is not a job id", v);
  a->job = v;
  return 0;
}

int gp_cmd_logs(int argc, char **argv) {
  gp_cli cli = {.cmd = "logs"};
  logs_args a = {0};
  int code = gp_cli_parse(&cli, argc, argv, logs_opts, logs_opt, logs_word, &a, logs_usage);
  if (code) return code < 0 ? 0 : code;
  const char *job = a.job;
  bool follow = a.follow, err_stream = a.err_stream;
  if (!job) return gp_cli_usage_error(cli.cmd, "which job? give a job id");
  if ((code = gp_cli_connect(&cli))) return code;

  long long offset = 0;
  int idle_polls = 0;
  for (;;) {
    char path[160];
    snprintf(path, sizeof path, "/v1/jobs/%s/log?stream=%s&offset=%lld", job,
             err_stream ? "stderr" : "stdout", offset);
    json_t *answer = NULL;
    if ((code = gp_cli_call(&cli, "GET", path, NULL, &answer))) break;
    json_t *data = json_object_get(answer, "data");
    size_t n = json_string_length(data);
    if (n) {
      fwrite(json_string_value(data), 1, n, stdout);
      fflush(stdout);
    }
    json_t *off = json_object_get(answer, "offset");
    long long next = json_is_integer(off) ? (long long)json_integer_value(off) : offset + (long long)n;
    if (next < offset) next = offset + (long long)n; /* never go backwards on a bad answer */
    offset = next;
    int eof = json_is_true(json_object_get(answer, "eof"));
    json_decref(answer);
    if (n && !eof) continue; /* more is there now: read on at once */
    if (!follow) break;
    /* -f: stop once the job has ended and its output is drained. */
    int ended = 0;
    if (n == 0 || eof) {
      if ((code = job_ended(&cli, job, &ended))) break;
      if (ended && (eof || ++idle_polls > 2)) {
        /* One more read catches what was written between the two calls. */
        if (eof) {
          snprintf(path, sizeof path, "/v1/jobs/%s/log?stream=%s&offset=%lld", job,
                   err_stream ? "stderr" : "stdout", offset);
          if (gp_cli_call(&cli, "GET", path, NULL, &answer) == 0) {
            data = json_object_get(answer, "data");
            if (json_string_length(data)) fwrite(json_string_value(data), 1, json_string_length(data), stdout);
            json_decref(answer);
          }
        }
        break;
      }
    }
    sleep_ms(300);
  }
  gp_cli_done(&cli);
  return code;
}
