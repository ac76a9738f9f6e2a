/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool run [submit options] [--pty] -- CMD...` (docs/interactive.md): submits a job in
 * the `interactive` priority class (unless -p names another), waits for it to start
 * (saying why it waits, as `gpool why` would), then runs CMD in it attached to this
 * terminal: stdin, stdout and stderr; with --pty on a terminal of its own, the window size
 * followed, Ctrl-C and Ctrl-Z reaching it as on a local terminal. CMD's exit code is the
 * job's and gpool's. Like Slurm's `srun --pty`, the job is the terminal's: it holds its
 * GPUs with a placeholder while CMD runs as a session in it (the job's user, cgroup, GPUs
 * and environment, as `gpool exec`), and it ends when CMD does or when the terminal goes
 * away. Ctrl-C while it waits cancels it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/session_client.h"
#include "cli/submit_args.h"
#include "cli/submit_batch.h"
#include "cli/run_job.h"

extern char **environ;

static const char run_usage[] =
    "Usage: gpool run [submit options] [--pty] -- CMD [ARG...]\n"
    "  Submits a job (priority class interactive unless -p names one), waits for it to\n"
    "  start, showing why it waits, then runs CMD in it attached to this terminal.\n"
    "  --pty   give CMD a terminal (a shell: gpool run -g 1 --pty -- bash)\n"
    "  Submit options are gpool submit's (-g, -q, -t, --gpu-type, ...; see gpool submit --help).\n"
    "  Exits with CMD's exit code; Ctrl-C while waiting cancels the job.\n";

static volatile sig_atomic_t interrupted;
static void on_int(int s) { interrupted = s; }

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits until the job's process runs on its node. 0 when it does; otherwise prints why
 * not and returns the exit code. */
static int wait_started(gp_cli *cli, const char *id) {
  char path[96], last[600] = "";
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  for (long wait = 20;; wait = wait < 500 ? wait * 2 : 500) {
    if (interrupted) {
      char cp[96];
      snprintf(cp, sizeof cp, "/v1/jobs/%s/cancel", id);
      json_t *a = NULL, *body = json_object();
      gp_cli_call(cli, "POST", cp, body, &a);
      json_decref(body);
      json_decref(a);
      fprintf(stderr, "gpool run: interrupted; job %s cancelled\n", id);
      return 130;
    }
    json_t *answer = NULL;
    int code = gp_cli_call(cli, "GET", path, NULL, &answer);
    if (code) return code;
    json_t *job = json_object_get(answer, "job");
    const char *state = json_string_value(json_object_get(job, "state"));
    bool launched = false;
    json_t *tl = json_object_get(job, "timeline"), *e;
    size_t i;
    json_array_foreach(tl, i, e) {
      const char *ev = json_string_value(json_object_get(e, "event"));
      launched |= ev && strcmp(ev, "launched") == 0;
    }
    char now[600] = "";
    if (state && (!strcmp(state, "pending") || !strcmp(state, "held"))) {
      const char *r = json_string_value(json_object_get(job, "pending_reason"));
      const char *m = json_string_value(json_object_get(job, "pending_message"));
      snprintf(now, sizeof now, "job %s %s: %s%s%s", id, state, r ? r : "Priority", m ? " - " : "", m ? m : "");
    }
    int rc = -1;
    if (state && !strcmp(state, "running") && launched) rc = 0;
    else if (state && strcmp(state, "pending") && strcmp(state, "held") && strcmp(state, "running") &&
             strcmp(state, "stopping")) {
      fprintf(stderr, "gpool run: job %s ended (%s) before it could be attached\n", id, state);
      rc = 1;
    }
    json_decref(answer);
    if (rc >= 0) return rc;
    if (now[0] && strcmp(now, last) != 0) {
      fprintf(stderr, "gpool run: %s\n", now);
      snprintf(last, sizeof last, "%s", now);
    }
    sleep_ms(wait);
  }
}

int gp_cli_run_job(gp_cli *cli, gp_submit *sp, bool pty) {
  gp_submit *s_ = sp;
  gp_err err = {0};
  int code = 0;
  json_t *answer = NULL, *cmd = NULL;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/");
  if (gp_submit_finish(s_, cwd, NULL, &err) || gp_submit_apply_export(s_->req, s_->sbatch, environ, &err)) {
    code = gp_cli_usage_error(cli->cmd, "%s", err.message);
    goto out;
  }
  if (s_->warnings.len) fprintf(stderr, "%s", s_->warnings.data);
  if (pty && !isatty(0)) {
    code = gp_cli_usage_error(cli->cmd, "--pty needs a terminal on standard input");
    goto out;
  }
  /* The job holds its allocation with a placeholder; CMD is the session's. */
  cmd = json_incref(json_object_get(s_->req, "command"));
  json_object_set_new(s_->req, "command", json_pack("[s,s]", "sleep", "infinity"));
  bool chose = json_object_get(s_->req, "priority") != NULL;
  if (!chose) json_object_set_new(s_->req, "priority", json_string("interactive"));
  if ((code = gp_cli_connect(cli))) goto out;
  struct sigaction sa = {0}, old;
  sa.sa_handler = on_int;
  sigaction(SIGINT, &sa, &old);
  int rc = gp_client_call(cli->client, "POST", "/v1/jobs", s_->req, &answer, NULL, &err);
  if (rc == GP_EPERM && !chose && !strcmp(err.field, "priority")) {
    /* The queue does not grant the interactive class (a queue's to give: it is never
     * preempted): the queue's own default then, said once. */
    fprintf(stderr, "gpool %s: %s; submitting with the queue's default class\n", cli->cmd, err.message);
    json_object_del(s_->req, "priority");
    memset(&err, 0, sizeof err);
    rc = gp_client_call(cli->client, "POST", "/v1/jobs", s_->req, &answer, NULL, &err);
  }
  if (rc) {
    code = gp_cli_fail(cli, rc, &err);
    goto out;
  }
  const char *id = json_string_value(json_object_get(json_object_get(answer, "job"), "id"));
  if (!id) {
    fprintf(stderr, "gpool %s: the server accepted the job but sent no id\n", cli->cmd);
    code = 1;
    goto out;
  }
  code = wait_started(cli, id);
  sigaction(SIGINT, &old, NULL);
  if (code) goto out;
  gp_tls_ws *w = NULL;
  if ((code = gp_cli_session_open(cli, id, 0, &w))) goto out;
  json_t *start = json_pack("{s:s,s:O,s:b,s:b}", "kind", "exec", "command", cmd, "tty", pty, "end_task", 1);
  gp_cli_session_io io = {.in_fd = 0, .out_fd = 1, .err_fd = 2, .tty = pty, .signals = !pty, .ends_job = true};
  code = gp_cli_session_run(cli, id, w, start, &io);
  json_decref(start);
out:
  json_decref(answer);
  json_decref(cmd);
  return code;
}

int gp_cmd_run(int argc, char **argv) {
  int dd = 1;
  while (dd < argc && strcmp(argv[dd], "--") != 0) dd++;
  bool pty = false, help = false;
  char **args = calloc((size_t)argc + 1, sizeof *args);
  int n = 0;
  for (int i = 0; i < argc; i++) {
    if (i > 0 && i < dd && !strcmp(argv[i], "--pty")) pty = true;
    else {
      if (i > 0 && i < dd && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) help = true;
      args[n++] = argv[i];
    }
  }
  if (help) {
    fputs(run_usage, stdout);
    free(args);
    return 0;
  }
  gp_cli cli = {.cmd = "run"};
  gp_submit s;
  gp_submit_init(&s);
  gp_err err = {0};
  int code;
  if (gp_submit_parse_args(&s, n, args, &err) || !s.dashdash) {
    code = gp_cli_usage_error("run", "%s", err.message[0] ? err.message : "put the command after --: gpool run -g 1 -- CMD");
  } else {
    cli.server = s.server;
    cli.token = s.token;
    cli.ca = s.ca;
    code = gp_cli_run_job(&cli, &s, pty);
  }
  gp_submit_done(&s);
  gp_cli_done(&cli);
  free(args);
  return code;
}

/* `gpool alloc [submit options] [-- CMD]` (Slurm's salloc): holds an allocation (a job in
 * the interactive class, like gpool run's, whose process only holds it) and runs a shell
 * here ($SHELL, or CMD) with GPOOL_JOB_ID and SLURM_JOB_ID naming it: `gpool exec $GPOOL_JOB_ID
 * -- ...` and `srun ...` (with the user's token) run on its GPUs. When the shell ends, the
 * allocation does (cancelled); gpool exits with the shell's code. */
static const char alloc_usage[] =
    "Usage: gpool alloc [submit options] [-- CMD [ARG...]]\n"
    "  Holds an allocation (priority class interactive unless -p) and runs $SHELL (or CMD)\n"
    "  here with GPOOL_JOB_ID and SLURM_JOB_ID set: srun and gpool exec $GPOOL_JOB_ID run on\n"
    "  its GPUs. The allocation ends when the shell does.\n";

int gp_cmd_alloc(int argc, char **argv) {
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(alloc_usage, stdout);
      return 0;
    }
  gp_cli cli = {.cmd = "alloc"};
  gp_submit s;
  gp_submit_init(&s);
  gp_err err = {0};
  int code = 0;
  json_t *answer = NULL;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/");
  /* The job's command is the holder; the shell runs here. */
  char **args = calloc((size_t)argc + 4, sizeof *args);
  int n = 0, dd = argc;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--") && dd == argc) dd = i;
    if (i < dd) args[n++] = argv[i];
  }
  args[n++] = "--";
  args[n++] = "sleep";
  args[n++] = "infinity";
  if (gp_submit_parse_args(&s, n, args, &err) || gp_submit_finish(&s, cwd, NULL, &err) ||
      gp_submit_apply_export(s.req, false, environ, &err)) {
    code = gp_cli_usage_error("alloc", "%s", err.message);
    goto out;
  }
  cli.server = s.server;
  cli.token = s.token;
  cli.ca = s.ca;
  bool chose = json_object_get(s.req, "priority") != NULL;
  if (!chose) json_object_set_new(s.req, "priority", json_string("interactive"));
  if ((code = gp_cli_connect(&cli))) goto out;
  struct sigaction sa = {0}, old;
  sa.sa_handler = on_int;
  sigaction(SIGINT, &sa, &old);
  int rc = gp_client_call(cli.client, "POST", "/v1/jobs", s.req, &answer, NULL, &err);
  if (rc == GP_EPERM && !chose && !strcmp(err.field, "priority")) {
    fprintf(stderr, "gpool alloc: %s; submitting with the queue's default class\n", err.message);
    json_object_del(s.req, "priority");
    memset(&err, 0, sizeof err);
    rc = gp_client_call(cli.client, "POST", "/v1/jobs", s.req, &answer, NULL, &err);
  }
  if (rc) {
    code = gp_cli_fail(&cli, rc, &err);
    goto out;
  }
  const char *id = json_string_value(json_object_get(json_object_get(answer, "job"), "id"));
  if (!id) {
    fprintf(stderr, "gpool alloc: the server accepted the job but sent no id\n");
    code = 1;
    goto out;
  }
  code = wait_started(&cli, id);
  sigaction(SIGINT, &old, NULL);
  if (code) goto out;
  fprintf(stderr, "gpool alloc: granted job allocation %s\n", id);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("GPOOL_JOB_ID", id, 1);
    setenv("SLURM_JOB_ID", id, 1);
    unsetenv("GPOOL_JOB_KEY"); /* another job's credential would not do */
    if (dd < argc - 1) execvp(argv[dd + 1], argv + dd + 1);
    const char *sh = getenv("SHELL");
    execlp(sh && *sh ? sh : "/bin/sh", sh && *sh ? sh : "/bin/sh", (char *)NULL);
    fprintf(stderr, "gpool alloc: cannot run the shell: %s\n", strerror(errno));
    _exit(127);
  }
  int st = 0;
  /* The shell owns the terminal's signals; this process only waits for it. */
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  code = pid < 0 ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  char cp[96];
  snprintf(cp, sizeof cp, "/v1/jobs/%s/cancel", id);
  json_t *c = NULL, *body = json_object();
  if (gp_cli_call(&cli, "POST", cp, body, &c) == 0)
    fprintf(stderr, "gpool alloc: relinquishing job allocation %s\n", id);
  json_decref(body);
  json_decref(c);
out:
  json_decref(answer);
  gp_submit_done(&s);
  gp_cli_done(&cli);
  free(args);
  return code;
}
