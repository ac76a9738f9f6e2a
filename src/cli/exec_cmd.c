/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool exec JOB [--task N] [-i] [-t] -- CMD...`: runs a command inside a running job
 * task (its user, cgroup, GPUs and environment; its container when it has one) through
 * the server and the job's agent, like `kubectl exec` (docs/interactive.md). -i sends this
 * terminal's input; -t gives the command a terminal (raw mode here, the window size
 * followed). The command's exit code is gpool's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "cli/session_client.h"
#include "util/units.h"

enum { E_TASK = 1, E_STDIN, E_TTY };
static const gp_opt exec_opts[] = {
    {0, "task", true, E_TASK}, {'i', "stdin", false, E_STDIN}, {'t', "tty", false, E_TTY}, GP_CLI_COMMON_OPTS,
};

static const char exec_usage[] =
    "Usage: gpool exec JOB [--task N] [-i] [-t] -- CMD [ARG...]\n"
    "  Runs CMD inside the running job: as its user, in its cgroup, with its environment\n"
    "  (CUDA_VISIBLE_DEVICES included), in its container when it runs in an image.\n"
    "  -i, --stdin   send this terminal's input to CMD (else CMD reads an empty input)\n"
    "  -t, --tty     give CMD a terminal (-it for a shell: gpool exec 12 -it -- bash)\n"
    "  --task N      the task of a gang to enter (default 0)\n"
    "  Only the job's owner and admins may exec into it. Exits with CMD's exit code.\n";

typedef struct exec_args {
  const char *job;
  int64_t task;
  bool in, tty;
} exec_args;

static int exec_opt(void *arg, int id, const char *v) {
  exec_args *a = arg;
  if (id == E_STDIN) a->in = true;
  else if (id == E_TTY) a->tty = true;
  else if (id == E_TASK && (gp_parse_int64(v, &a->task) || a->task < 0 || a->task > 100000))
    return gp_cli_usage_error("exec", "--task: expected a task index (0, 1, ...), got '%s'", v);
  return 0;
}

static int exec_word(void *arg, const char *v) {
  exec_args *a = arg;
  if (a->job) return gp_cli_usage_error("exec", "one job at a time; put the command after --");
  if (!gp_cli_valid_job_id(v)) return gp_cli_usage_error("exec", "'%s' is not a job id", v);
  a->job = v;
  return 0;
}

/* argv up to "--", with "-it" and "-ti" spelled as two flags (the scanner takes one letter
 * per word). */
static char **split_flags(int argc, char **argv, int *ret_argc) {
  char **out = calloc((size_t)argc * 2 + 1, sizeof *out);
  int n = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-it") || !strcmp(argv[i], "-ti")) {
      out[n++] = "-i";
      out[n++] = "-t";
    } else out[n++] = argv[i];
  }
  *ret_argc = n;
  return out;
}

int gp_cmd_exec(int argc, char **argv) {
  int dd = 1;
  while (dd < argc && strcmp(argv[dd], "--") != 0) dd++;
  gp_cli cli = {.cmd = "exec"};
  exec_args a = {.task = -1};
  int n;
  char **opts = split_flags(dd, argv, &n);
  int rc = gp_cli_parse(&cli, n, opts, exec_opts, exec_opt, exec_word, &a, exec_usage);
  free(opts);
  if (rc) return rc < 0 ? 0 : rc;
  if (!a.job) return gp_cli_usage_error("exec", "which job? gpool exec JOB -- CMD");
  if (dd >= argc - 1) return gp_cli_usage_error("exec", "no command: gpool exec JOB -- CMD [ARG...]");
  if (a.tty && !isatty(0)) return gp_cli_usage_error("exec", "-t needs a terminal on standard input");
  gp_tls_ws *w = NULL;
  rc = gp_cli_session_open(&cli, a.job, (int)a.task, &w);
  if (rc) return rc;
  json_t *cmd = json_array();
  for (int i = dd + 1; i < argc; i++) {
    json_t *word = json_string(argv[i]);
    if (!word) { /* never send a shortened command */
      json_decref(cmd);
      gp_tls_ws_free(w);
      return gp_cli_usage_error("exec", "word %d of the command is not UTF-8 text", i - dd);
    }
    json_array_append_new(cmd, word);
  }
  json_t *start = json_pack("{s:s,s:o,s:b}", "kind", "exec", "command", cmd, "tty", a.tty);
  gp_cli_session_io io = {.in_fd = a.in || a.tty ? 0 : -1, .out_fd = 1, .err_fd = 2, .tty = a.tty, .signals = !a.tty};
  rc = gp_cli_session_run(&cli, a.job, w, start, &io);
  json_decref(start);
  return rc;
}

/* `gpool attach JOB [--task N]`: the task's output (stdout here, stderr to stderr) as it
 * is written, from now until the task ends (gpool then exits with its code) or Ctrl-C. A
 * job's task reads no terminal, so nothing is sent to it; `gpool exec -it` opens one. A
 * `gpool run` job whose server stopped under it is the exception: its command takes this
 * terminal again as run gave it (raw mode, window size, Ctrl-C to the job). */
static const gp_opt attach_opts[] = {{0, "task", true, E_TASK}, GP_CLI_COMMON_OPTS};

static const char attach_usage[] =
    "Usage: gpool attach JOB [--task N]\n"
    "  Streams the running task's output as it is written (stderr to stderr) until the task\n"
    "  ends (then exits with its exit code) or Ctrl-C. --task N: the task of a gang (default 0).\n"
    "  A gpool run job whose server restarted gets this terminal back (its output meanwhile,\n"
    "  up to 64 KiB, first); it ends with the command's exit code.\n"
    "  For a shell inside the job use gpool exec JOB -it -- bash.\n";

int gp_cmd_attach(int argc, char **argv) {
  gp_cli cli = {.cmd = "attach"};
  exec_args a = {.task = -1};
  int rc = gp_cli_parse(&cli, argc, argv, attach_opts, exec_opt, exec_word, &a, attach_usage);
  if (rc) return rc < 0 ? 0 : rc;
  if (!a.job) return gp_cli_usage_error("attach", "which job? gpool attach JOB");
  gp_tls_ws *w = NULL;
  if ((rc = gp_cli_session_open(&cli, a.job, (int)a.task, &w))) return rc;
  json_t *start = json_pack("{s:s}", "kind", "attach");
  /* A `gpool run` job whose server restarted: its command takes this terminal again. */
  gp_cli_session_io io = {.in_fd = isatty(0) ? 0 : -1, .out_fd = 1, .err_fd = 2, .input_on_attach = true};
  rc = gp_cli_session_run(&cli, a.job, w, start, &io);
  json_decref(start);
  return rc;
}
