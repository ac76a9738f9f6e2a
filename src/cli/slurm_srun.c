/* SPDX-License-Identifier: Apache-2.0 */
/* `srun` inside a job (docs/slurm.md#steps): asks the server for a step of the job
 * (POST /v1/jobs/{id}/steps, with the job's step credential GPOOL_JOB_KEY, or a user
 * token), relays every step task's stdout and stderr to its own (-l: "N: " before each
 * line) while it runs, cancels the step on SIGINT/SIGTERM, and exits with the highest task
 * exit code (128 + N for a task killed by signal N). The agents start the tasks; nothing
 * here reaches a node. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/slurm.h"
#include "cli/run_job.h"
#include "cli/srun_args.h"
#include "cli/submit_args.h"
#include "client/client.h"
#include "protocol/outpath.h"
#include "util/buf.h"
#include "util/mem.h"

extern char **environ;

static volatile sig_atomic_t signals_seen;
static volatile sig_atomic_t last_signal;

static void on_signal(int sig) {
  signals_seen++;
  last_signal = sig;
}

static const char *env_of(const char *name) { return getenv(name); }

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !signals_seen) {}
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What has been relayed of one stream of one task, and (with -l) its unfinished line. */
typedef struct relay {
  int64_t offset;
  gp_buf line;
} relay;

typedef struct srun {
  gp_client *client;
  char job[48];
  int step, ntasks;
  bool label;
  relay *out;    /* [2 * ntasks]: stdout, stderr of each task */
  FILE **sink;   /* [2 * ntasks]: its -o/-e file, NULL: srun's own stdout/stderr */
  json_t *files; /* name -> index in `opened` */
  FILE **opened;
  size_t n_opened;
} srun;

/* -o/-e: each task's files, named by Slurm's patterns for the step (one file may take
 * several tasks' lines), opened here, relative to srun's working directory. */
static int open_sinks(srun *r, const gp_srun_opts *o, const json_t *step, char *msg, size_t size) {
  if (!o->output && !o->error) return 0;
  r->sink = gp_xcalloc((size_t)r->ntasks * 2, sizeof *r->sink);
  r->opened = gp_xcalloc((size_t)r->ntasks * 2, sizeof *r->opened);
  r->files = json_object();
  const json_t *tasks = json_object_get(step, "tasks"), *nodes = json_object_get(step, "nodes");
  char step_id[24];
  snprintf(step_id, sizeof step_id, "%d", r->step);
  const char *user = getenv("SLURM_JOB_USER");
  for (int t = 0; t < r->ntasks; t++) {
    const char *node = json_string_value(json_object_get(json_array_get(tasks, (size_t)t), "node"));
    int node_index = 0;
    for (size_t k = 0; node && k < json_array_size(nodes); k++)
      if (strcmp(json_string_value(json_array_get(nodes, k)), node) == 0) node_index = (int)k;
    gp_outpath_vars v = {.job_id = r->job, .name = getenv("SLURM_JOB_NAME"), .user = user ? user : getenv("USER"),
                         .node = node, .array_id = getenv("SLURM_ARRAY_JOB_ID"),
                         .array_index = getenv("SLURM_ARRAY_TASK_ID"), .task = t, .step = step_id,
                         .has_node_index = true, .node_index = node_index};
    for (int s = 0; s < 2; s++) {
      const char *pattern = s == 0 ? o->output : o->error ? o->error : o->output;
      char name[GP_OUTPATH_MAX + 1];
      if (!pattern) continue;
      if (gp_outpath_expand(pattern, &v, name, sizeof name)) {
        snprintf(msg, size, "%s '%.200s' does not expand to a file name for task %d", s ? "--error" : "--output",
                 pattern, t);
        return -1;
      }
      const json_t *at = json_object_get(r->files, name);
      if (!at) {
        FILE *f = fopen(name, o->append ? "ae" : "we");
        if (!f) {
          snprintf(msg, size, "cannot open the step's output file '%.300s': %s", name, strerror(errno));
          return -1;
        }
        json_object_set_new(r->files, name, json_integer((json_int_t)r->n_opened));
        r->opened[r->n_opened++] = f;
        at = json_object_get(r->files, name);
      }
      r->sink[2 * t + s] = r->opened[json_integer_value(at)];
    }
  }
  return 0;
}

static void emit(srun *r, int task, int stream, const char *data, size_t len, bool flush) {
  FILE *f = r->sink && r->sink[2 * task + stream] ? r->sink[2 * task + stream] : stream ? stderr : stdout;
  if (!r->label) {
    fwrite(data, 1, len, f);
    fflush(f);
    return;
  }
  relay *rl = &r->out[2 * task + stream];
  gp_buf_append(&rl->line, data, len);
  size_t start = 0;
  for (size_t i = 0; i < rl->line.len; i++)
    if (rl->line.data[i] == '\n') {
      fprintf(f, "%d: %.*s\n", task, (int)(i - start), rl->line.data + start);
      start = i + 1;
    }
  if (flush && start < rl->line.len) {
    fprintf(f, "%d: %.*s\n", task, (int)(rl->line.len - start), rl->line.data + start);
    start = rl->line.len;
  }
  memmove(rl->line.data, rl->line.data + start, rl->line.len - start);
  rl->line.len -= start;
  fflush(f);
}

/* Relays what task `task` wrote to `stream` since the last call, up to `upto` bytes (< 0:
 * whatever there is now). Returns 0, or -1 when the server could not say. */
static int relay_stream(srun *r, int task, int stream, int64_t upto) {
  relay *rl = &r->out[2 * task + stream];
  int failures = 0;
  for (int rounds = 0; rounds < 4096; rounds++) {
    if (upto >= 0 && rl->offset >= upto) return 0;
    char path[256];
    snprintf(path, sizeof path, "/v1/jobs/%s/steps/%d/output?task=%d&stream=%s&offset=%lld", r->job, r->step, task,
             stream ? "stderr" : "stdout", (long long)rl->offset);
    json_t *doc = NULL;
    gp_err err = {0};
    if (gp_client_call(r->client, "GET", path, NULL, &doc, NULL, &err)) {
      /* While it runs the next round reads it; at the end what is left must come (the
       * server's log proxy answers 503 while busy). */
      if (upto < 0 || ++failures > 100) {
        if (upto >= 0) fprintf(stderr, "srun: error: task %d's %s: %s\n", task, stream ? "stderr" : "stdout", err.message);
        return -1;
      }
      nap_ms(100);
      continue;
    }
    const char *data = json_string_value(json_object_get(doc, "data"));
    size_t len = json_string_length(json_object_get(doc, "data"));
    json_int_t next = json_integer_value(json_object_get(doc, "offset"));
    if (data && len) emit(r, task, stream, data, len, false);
    bool moved = next > rl->offset;
    if (moved) rl->offset = next;
    json_decref(doc);
    if (!moved) return 0; /* nothing more now */
  }
  return 0;
}

static void relay_all(srun *r, const json_t *step, bool final) {
  const json_t *tasks = json_object_get(step, "tasks");
  for (int t = 0; t < r->ntasks; t++) {
    const json_t *x = json_array_get(tasks, (size_t)t);
    for (int s = 0; s < 2; s++) {
      int64_t size = json_integer_value(json_object_get(x, s ? "err_bytes" : "out_bytes"));
      /* At the end only what the agent said was written: nothing to fetch for a silent task. */
      if (final && r->out[2 * t + s].offset >= size) continue;
      relay_stream(r, t, s, final ? size : -1);
      if (final) emit(r, t, s, "", 0, true);
    }
  }
}

/* Slurm's lines for tasks that did not end well. */
static void report_tasks(const json_t *step, bool quiet) {
  const json_t *tasks = json_object_get(step, "tasks");
  for (size_t t = 0; t < json_array_size(tasks); t++) {
    const json_t *x = json_array_get(tasks, t);
    const char *node = json_string_value(json_object_get(x, "node"));
    const char *reason = json_string_value(json_object_get(x, "reason"));
    const char *message = json_string_value(json_object_get(x, "message"));
    const json_t *ec = json_object_get(x, "exit_code");
    json_int_t sig = json_integer_value(json_object_get(x, "signal"));
    if (sig)
      fprintf(stderr, "srun: error: %s: task %zu: Killed by signal %lld\n", node ? node : "?", t, (long long)sig);
    else if (json_is_integer(ec) && json_integer_value(ec) != 0 && !quiet)
      fprintf(stderr, "srun: error: %s: task %zu: Exited with exit code %lld\n", node ? node : "?", t,
              (long long)json_integer_value(ec));
    else if (!json_is_integer(ec))
      fprintf(stderr, "srun: error: %s: task %zu: %s%s%s\n", node ? node : "?", t, reason ? reason : "ended",
              message ? ": " : "", message ? message : "");
  }
}

static int start(srun *r, const gp_srun_opts *o, json_t *env, json_t **ret_step) {
  json_t *body = json_object(), *cmd = json_array();
  for (int i = 0; i < o->argc; i++) json_array_append_new(cmd, json_string(o->argv[i]));
  json_object_set_new(body, "command", cmd);
  json_object_set_new(body, "env", env);
  if (o->nodes) json_object_set_new(body, "nodes", json_integer(o->nodes));
  if (o->ntasks) json_object_set_new(body, "ntasks", json_integer(o->ntasks));
  if (o->ntasks_per_node) json_object_set_new(body, "ntasks_per_node", json_integer(o->ntasks_per_node));
  if (o->nodelist) json_object_set(body, "nodelist", o->nodelist);
  json_object_set_new(body, "kill_on_bad_exit", json_boolean(o->kill_on_bad_exit));
  if (o->exclusive) json_object_set_new(body, "exclusive", json_true());
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%s/steps", r->job);
  json_t *doc = NULL;
  gp_err err = {0};
  int rc;
  /* --exclusive: while the job's other --exclusive steps hold the tasks it needs, wait for
   * them, as Slurm's srun does. */
  for (bool said = false;; said = true) {
    memset(&err, 0, sizeof err);
    rc = gp_client_call(r->client, "POST", path, body, &doc, NULL, &err);
    if (rc != GP_ESTATE || strcmp(err.field, "exclusive") != 0 || signals_seen) break;
    if (!said && !o->quiet) fprintf(stderr, "srun: Job step creation temporarily disabled, retrying\n");
    nap_ms(200);
  }
  json_decref(body);
  if (rc) {
    fprintf(stderr, "srun: error: %s%s%s\n", err.field[0] ? err.field : "", err.field[0] ? ": " : "", err.message);
    return 1;
  }
  const json_t *step = json_object_get(doc, "step");
  r->step = (int)json_integer_value(json_object_get(step, "id"));
  r->ntasks = (int)json_integer_value(json_object_get(step, "ntasks"));
  *ret_step = json_incref((json_t *)step);
  json_decref(doc);
  if (r->ntasks < 1 || r->ntasks > 100000) {
    fprintf(stderr, "srun: error: the server answered a step without tasks\n");
    return 1;
  }
  r->out = gp_xcalloc((size_t)r->ntasks * 2, sizeof *r->out);
  return 0;
}

/* Waits for the step's end, relaying output; cancels it on a signal (a second one leaves
 * at once, as Slurm's srun does). Returns the step's document. */
static json_t *wait_step(srun *r, bool quiet) {
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%s/steps/%d", r->job, r->step);
  long nap = 2;
  int64_t next_relay = now_ms() + 200;
  bool cancelled = false;
  int failures = 0;
  for (;;) {
    if (signals_seen >= 2) return NULL;
    if (signals_seen && !cancelled) {
      char cpath[160];
      snprintf(cpath, sizeof cpath, "%s/cancel", path);
      gp_err err = {0};
      if (!quiet) fprintf(stderr, "srun: interrupt (one more within the step's end aborts srun)\n");
      gp_client_call(r->client, "POST", cpath, NULL, NULL, NULL, &err);
      cancelled = true;
    }
    json_t *doc = NULL;
    gp_err err = {0};
    if (gp_client_call(r->client, "GET", path, NULL, &doc, NULL, &err)) {
      if (++failures >= 30) {
        fprintf(stderr, "srun: error: %s\n", err.message);
        return NULL;
      }
      nap_ms(1000);
      continue;
    }
    failures = 0;
    json_t *step = json_incref(json_object_get(doc, "step"));
    json_decref(doc);
    const char *state = json_string_value(json_object_get(step, "state"));
    if (state && strcmp(state, "running") != 0) return step;
    if (now_ms() >= next_relay) {
      relay_all(r, step, false);
      next_relay = now_ms() + 300;
    }
    json_decref(step);
    nap_ms(nap);
    nap = nap < 100 ? nap * 2 : 100; /* short steps end within milliseconds */
  }
}

/* `srun [OPTIONS] --pty CMD` outside an allocation (no job in the environment, no
 * --jobid): Slurm makes an allocation and runs CMD on its terminal; here that is `gpool
 * run --pty` (run_cmd.c), with srun's options read as one #SBATCH line (as sbatch reads
 * its command line). Returns -1 when argv is not that. */
static int pty_outside(int argc, char **argv) {
  const char *mine = getenv("SLURM_JOB_ID");
  if (!mine || !*mine) mine = getenv("GPOOL_JOB_ID");
  if (mine && *mine) return -1;
  static const char *const flags[] = {"--pty", "--exclusive", "-l", "--label", "-K", "-Q", "--quiet",
                                      "--overlap", "--requeue", "--no-requeue", "-H", "--hold", NULL};
  bool pty = false;
  int i = 1;
  for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    const char *w = argv[i];
    if (!strcmp(w, "--")) break;
    if (!strncmp(w, "--jobid", 7)) return -1;
    if (!strcmp(w, "--pty")) pty = true;
    bool flag = false;
    for (int k = 0; flags[k]; k++) flag |= !strcmp(w, flags[k]);
    if (!flag && !strchr(w, '=') && !(w[1] != '-' && w[2])) i++;
  }
  if (!pty) return -1;
  gp_buf line = {0};
  gp_buf_puts(&line, "#SBATCH");
  int end = i;
  for (i = 1; i < end; i++) {
    const char *w = argv[i];
    if (!strcmp(w, "--pty") || !strcmp(w, "-l") || !strcmp(w, "--label") || !strcmp(w, "-Q") ||
        !strcmp(w, "--quiet") || !strcmp(w, "-K") || !strcmp(w, "--overlap"))
      continue; /* srun's own, not the allocation's */
    if (strchr(w, '\'') || strchr(w, '\n')) {
      gp_buf_done(&line);
      fprintf(stderr, "srun: error: option value '%.100s' holds a quote or a newline\n", w);
      return 2;
    }
    gp_buf_printf(&line, " '%s'", w);
  }
  gp_buf_puts(&line, "\n");
  if (end < argc && !strcmp(argv[end], "--")) end++;
  if (end >= argc) {
    gp_buf_done(&line);
    fprintf(stderr, "srun: error: --pty needs a command (srun --pty bash)\n");
    return 2;
  }
  gp_submit s;
  gp_submit_init(&s);
  s.args = argv + end;
  s.n_args = argc - end;
  s.dashdash = true;
  s.sbatch = true; /* srun passes the caller's environment, as sbatch does */
  gp_err err = {0};
  gp_cli cli = {.cmd = "srun"};
  int code;
  size_t before = s.warnings.len;
  if (gp_submit_parse_script(&s, "srun command line", line.data, line.len, &err)) {
    fprintf(stderr, "srun: error: %s\n", err.message);
    code = 2;
  } else if (s.warnings.len > before) {
    fprintf(stderr, "srun: error: %s", s.warnings.data + before);
    code = 2;
  } else code = gp_cli_run_job(&cli, &s, true);
  gp_buf_done(&line);
  gp_submit_done(&s);
  gp_cli_done(&cli);
  return code;
}

int gp_cmd_srun(int argc, char **argv) {
  int pty = pty_outside(argc, argv);
  if (pty >= 0) return pty;
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: srun [-N NODES] [-n NTASKS] [--ntasks-per-node N] [-w NODELIST] [-l] [-K]\n"
           "            [--export=ALL|NONE|VARS] [--jobid ID] COMMAND [ARGS...]\n"
           "Runs COMMAND as a step of the job it is called in, through gpool's agents (docs/slurm.md).\n");
    return 0;
  }
  gp_srun_opts o;
  char msg[700];
  if (gp_srun_parse(argc, argv, env_of, &o, msg, sizeof msg)) {
    fprintf(stderr, "srun: error: %s\n", msg);
    gp_srun_opts_done(&o);
    return 2;
  }
  const char *mine = getenv("SLURM_JOB_ID");
  if (!mine || !*mine) mine = getenv("GPOOL_JOB_ID");
  const char *job = o.jobid ? o.jobid : mine;
  if (!job || !*job) {
    fprintf(stderr, "srun: error: srun outside an allocation: use gpool submit / sbatch (srun runs a step "
                    "inside a job)\n");
    gp_srun_opts_done(&o);
    return 1;
  }
  srun r = {0};
  snprintf(r.job, sizeof r.job, "%s", job);
  r.label = o.label;
  if (!gp_cli_valid_job_id(r.job)) {
    fprintf(stderr, "srun: error: '%.40s' is not a job id\n", job);
    gp_srun_opts_done(&o);
    return 2;
  }
  char *server = NULL, *token = NULL, *ca = NULL;
  gp_err err = {0};
  int rc = 1;
  if (gp_client_resolve(NULL, NULL, &server, &token, &err) || gp_client_resolve_ca(NULL, &ca, &err)) {
    fprintf(stderr, "srun: error: %s\n", err.message);
    goto out;
  }
  /* The job's own credential for its own steps; a user token for another job's. */
  const char *key = getenv("GPOOL_JOB_KEY");
  if (key && *key && mine && strcmp(mine, r.job) == 0) {
    free(token);
    token = gp_xstrdup(key);
  }
  if (!token) {
    fprintf(stderr, "srun: error: no credential: GPOOL_JOB_KEY is set in a job's tasks; outside one pass "
                    "GPOOL_TOKEN\n");
    goto out;
  }
  r.client = gp_client_new(server, token);
  if (!r.client) goto out;
  gp_client_set_ca(r.client, ca);
  json_t *env = gp_srun_env(&o, environ, msg, sizeof msg);
  if (!env) {
    fprintf(stderr, "srun: error: %s\n", msg);
    rc = 2;
    goto out;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  json_t *created = NULL;
  if ((rc = start(&r, &o, env, &created)) != 0) goto out;
  if (open_sinks(&r, &o, created, msg, sizeof msg)) {
    char cpath[160];
    snprintf(cpath, sizeof cpath, "/v1/jobs/%s/steps/%d/cancel", r.job, r.step);
    gp_client_call(r.client, "POST", cpath, NULL, NULL, NULL, &err);
    fprintf(stderr, "srun: error: %s (step %s.%d cancelled)\n", msg, r.job, r.step);
    json_decref(created);
    rc = 1;
    goto out;
  }
  json_decref(created);
  json_t *step = wait_step(&r, o.quiet);
  if (!step) {
    rc = signals_seen ? 128 + (int)last_signal : 1;
    goto out;
  }
  relay_all(&r, step, true);
  report_tasks(step, o.quiet);
  json_int_t code = json_integer_value(json_object_get(step, "exit_code"));
  rc = code < 0 ? 1 : code > 255 ? 255 : (int)code;
  json_decref(step);
out:
  for (int i = 0; r.out && i < 2 * r.ntasks; i++) gp_buf_done(&r.out[i].line);
  free(r.out);
  for (size_t i = 0; i < r.n_opened; i++) fclose(r.opened[i]);
  free(r.opened);
  free(r.sink);
  json_decref(r.files);
  gp_client_free(r.client);
  free(server);
  free(token);
  free(ca);
  gp_srun_opts_done(&o);
  return rc;
}
