/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool logs ID [-f] [--stderr] [--task N]`: prints a job's output through the server,
 * which proxies it from the agent that ran the job (GET /v1/jobs/{id}/log). With -f it
 * keeps polling until the job has ended and everything it wrote has been printed. Each task
 * of a gang writes its own log on its own node: one is shown at a time, and a note on stderr
 * says which when the user did not choose. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "util/units.h"

enum { L_FOLLOW = 1, L_STDERR, L_TASK };
static const gp_opt logs_opts[] = {
  {'f', "follow", false, L_FOLLOW}, {0, "stderr", false, L_STDERR}, {0, "task", true, L_TASK},
  GP_CLI_COMMON_OPTS,
};

static const char logs_usage[] =
  "Usage: gpool logs ID [-f] [--stderr] [--task N]\n"
  "  Prints the job's standard output (--stderr: its standard error).\n"
  "  -f keeps printing new output until the job ends.\n"
  "  --task N shows task N of a gang (default: task 0).\n";

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The job's state (whether it has ended) and its number of tasks. */
static int job_facts(gp_cli *cli, const char *id, int *ended, int64_t *tasks) {
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  json_t *answer = NULL;
  int code = gp_cli_call(cli, "GET", path, NULL, &answer);
  if (code) return code;
  json_t *job = json_object_get(answer, "job");
  const char *state = json_string_value(json_object_get(job, "state"));
  *ended = state && gp_job_state_final(state);
  json_t *t = json_object_get(job, "tasks");
  if (tasks) *tasks = json_is_integer(t) ? json_integer_value(t) : 1;
  json_decref(answer);
  return 0;
}

typedef struct logs_args {
  const char *job;
  bool follow, err_stream;
  int64_t task;              /* -1: not chosen (task 0, with a note for a gang) */
} logs_args;

static int logs_opt(void *arg, int id, const char *v) {
  logs_args *a = arg;
  if (id == L_FOLLOW) a->follow = true;
  else if (id == L_STDERR) a->err_stream = true;
  else if (id == L_TASK && (gp_parse_int64(v, &a->task) || a->task < 0 || a->task > 100000))
    return gp_cli_usage_error("logs", "--task: expected a task index (0, 1, ...), got '%s'", v);
  return 0;
}

/* The log path of the next read: the server picks task 0 when none is named. */
static void log_path(char *path, size_t size, const logs_args *a, long long offset) {
  char task[32] = "";
  if (a->task >= 0) snprintf(task, sizeof task, "&task=%lld", (long long)a->task);
  snprintf(path, size, "/v1/jobs/%s/log?stream=%s&offset=%lld%s", a->job,
           a->err_stream ? "stderr" : "stdout", offset, task);
}

static int logs_word(void *arg, const char *v) {
  logs_args *a = arg;
  if (a->job) return gp_cli_usage_error("logs", "one job at a time");
  if (!gp_cli_valid_job_id(v)) return gp_cli_usage_error("logs", "'%s' is not a job id", v);
  a->job = v;
  return 0;
}

int gp_cmd_logs(int argc, char **argv) {
  gp_cli cli = {.cmd = "logs"};
  logs_args a = {.task = -1};
  int code = gp_cli_parse(&cli, argc, argv, logs_opts, logs_opt, logs_word, &a, logs_usage);
  if (code) return code < 0 ? 0 : code;
  const char *job = a.job;
  bool follow = a.follow;
  if (!job) return gp_cli_usage_error(cli.cmd, "which job? give a job id");
  if ((code = gp_cli_connect(&cli))) return code;
  if (a.task < 0) {
    /* A gang's tasks each have a log: say which one this is and how to see the others. */
    int ended = 0;
    int64_t tasks = 1;
    if ((code = job_facts(&cli, job, &ended, &tasks))) goto done;
    if (tasks > 1)
      fprintf(stderr, "gpool logs: job %s is a gang of %lld tasks: showing task 0 "
                      "(the others: gpool logs %s --task N, N = 1..%lld)\n",
              job, (long long)tasks, job, (long long)tasks - 1);
  }

  long long offset = 0;
  int idle_polls = 0;
  for (;;) {
    char path[192];
    log_path(path, sizeof path, &a, offset);
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
      if ((code = job_facts(&cli, job, &ended, NULL))) break;
      if (ended && (eof || ++idle_polls > 2)) {
        /* One more read catches what was written between the two calls. */
        if (eof) {
          log_path(path, sizeof path, &a, offset);
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
done:
  gp_cli_done(&cli);
  return code;
}
