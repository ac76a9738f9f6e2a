/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's `sacct` from gpool's jobs (slurm.h): the live list (active and recently ended
 * jobs) and the store's history, merged by id. Fields (--format) JobID, JobIDRaw, JobName,
 * Partition, User, State, ExitCode (Slurm's "code:signal"), Elapsed, Timelimit, Submit,
 * Start, End, NNodes, NodeList, NTasks, AllocCPUS, with Slurm's "Name%W" widths and -P/-p.
 * Without -j the window starts at today's midnight, as Slurm's. A job's srun steps follow
 * it as "J.N" lines (no .batch/.extern lines: gpool has no such steps); -X leaves them out. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/slurm.h"
#include "cli/submit_batch.h"
#include "util/buf.h"
#include "util/mem.h"

static const char usage[] =
  "Usage: sacct [-j ID[,ID]] [-X] [-u USER|-a] [-S TIME] [-E TIME] [-n] [-P|-p]\n"
  "             [--format=JobID,JobName,State,ExitCode,Elapsed,...]\n";

enum { O_JOBS = 1, O_ALLOC, O_USER, O_ALL, O_START, O_END, O_NOHEAD, O_P2, O_P, O_FORMAT, O_HELP };
static const gp_opt opts[] = {
  {'j', "jobs", true, O_JOBS},         {'X', "allocations", false, O_ALLOC},
  {'u', "user", true, O_USER},         {'a', "allusers", false, O_ALL},
  {'S', "starttime", true, O_START},   {'E', "endtime", true, O_END},
  {'n', "noheader", false, O_NOHEAD},  {'P', "parsable2", false, O_P2},
  {'p', "parsable", false, O_P},       {'o', "format", true, O_FORMAT},
  {0, "help", false, O_HELP},          {0, NULL, false, 0},
};

static const struct {
  const char *name;
  int width;
  bool right;
} fields[] = {
  {"JobID", 12, false},    {"JobIDRaw", 12, false}, {"JobName", 10, false},
  {"Partition", 10, false}, {"User", 9, false},     {"State", 10, false},
  {"ExitCode", 8, true},   {"Elapsed", 10, true},   {"Timelimit", 10, true},
  {"Submit", 19, false},   {"Start", 19, false},    {"End", 19, false},
  {"NNodes", 8, true},     {"NodeList", 15, false}, {"NTasks", 8, true},
  {"AllocCPUS", 10, true},
};
#define N_FIELDS (int)(sizeof fields / sizeof fields[0])
#define MAX_COLS 64

static void value(int f, json_t *job, int64_t now, char *out, size_t cap) {
  const char *name = fields[f].name;
  const char *state = gp_slurm_str(job, "state", "");
  bool ended = gp_slurm_int(job, "ended_at") > 0;
  char nodes[4096];
  int n_nodes = gp_slurm_nodelist(job, nodes, sizeof nodes);
  if (!strcmp(name, "JobID")) snprintf(out, cap, "%s", gp_slurm_job_id(job));
  else if (!strcmp(name, "JobIDRaw")) snprintf(out, cap, "%s", gp_slurm_str(job, "id", ""));
  else if (!strcmp(name, "JobName")) snprintf(out, cap, "%s", gp_slurm_str(job, "name", ""));
  else if (!strcmp(name, "Partition")) snprintf(out, cap, "%s", gp_slurm_str(job, "queue", ""));
  else if (!strcmp(name, "User")) snprintf(out, cap, "%s", gp_slurm_str(job, "user", ""));
  else if (!strcmp(name, "State")) snprintf(out, cap, "%s", gp_slurm_state_long(state));
  else if (!strcmp(name, "ExitCode")) {
    /* Slurm's code:signal: a process killed by a signal has no exit code of its own (0). */
    json_t *c = json_object_get(job, "exit_code");
    int64_t sig = gp_slurm_int(job, "exit_signal");
    if (sig > 0) snprintf(out, cap, "0:%lld", (long long)sig);
    else snprintf(out, cap, "%lld:0", json_is_integer(c) ? (long long)json_integer_value(c) : 0LL);
  } else if (!strcmp(name, "Elapsed")) {
    int64_t s = gp_slurm_elapsed(job, now);
    snprintf(out, cap, "%02lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
             (long long)(s % 60));
    if (s >= 86400)
      snprintf(out, cap, "%lld-%02lld:%02lld:%02lld", (long long)(s / 86400),
               (long long)(s / 3600 % 24), (long long)(s / 60 % 60), (long long)(s % 60));
  } else if (!strcmp(name, "Timelimit")) gp_slurm_fmt_limit(gp_slurm_int(job, "time_limit"), out, cap);
  else if (!strcmp(name, "Submit")) gp_slurm_fmt_time(gp_slurm_int(job, "submitted_at"), "Unknown", out, cap);
  else if (!strcmp(name, "Start")) gp_slurm_fmt_time(gp_slurm_int(job, "started_at"), "Unknown", out, cap);
  else if (!strcmp(name, "End")) gp_slurm_fmt_time(ended ? gp_slurm_int(job, "ended_at") : 0, "Unknown", out, cap);
  else if (!strcmp(name, "NNodes")) snprintf(out, cap, "%d", n_nodes ? n_nodes : 1);
  else if (!strcmp(name, "NodeList")) snprintf(out, cap, "%s", n_nodes ? nodes : "None assigned");
  else if (!strcmp(name, "NTasks")) snprintf(out, cap, "%lld", (long long)gp_slurm_int(job, "tasks"));
  else if (!strcmp(name, "AllocCPUS")) {
    int64_t t = gp_slurm_int(job, "tasks"), c = gp_slurm_int(job, "cpus");
    snprintf(out, cap, "%lld", (long long)((t > 0 ? t : 1) * c));
  }
}

/* One line of the listing. */
static void print_row(json_t *job, int64_t now, const int *col, const int *width, int n_cols, char sep,
                      bool trailing) {
  gp_buf line = {0};
  for (int c = 0; c < n_cols; c++) {
    char text[4200];
    value(col[c], job, now, text, sizeof text);
    if (sep) {
      gp_buf_printf(&line, "%s%s", text, c + 1 < n_cols || trailing ? "|" : "");
      continue;
    }
    if ((int)strlen(text) > width[c]) { /* Slurm cuts with a '+' */
      text[width[c] - 1] = '+';
      text[width[c]] = '\0';
    }
    gp_buf_printf(&line, "%s%*s", c ? " " : "", fields[col[c]].right ? width[c] : -width[c], text);
  }
  printf("%s\n", line.data ? line.data : "");
  gp_buf_done(&line);
}

/* A step of the job (srun) as the line Slurm prints for it: "J.N", the command's name, its
 * tasks, nodes, state and exit code. */
static json_t *step_row(json_t *job, json_t *step) {
  json_t *r = json_object();
  char id[96];
  snprintf(id, sizeof id, "%s.%lld", gp_slurm_job_id(job), (long long)gp_slurm_int(step, "id"));
  json_object_set_new(r, "id", json_string(id));
  const char *cmd = json_string_value(json_array_get(json_object_get(step, "command"), 0));
  const char *base = cmd && strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
  json_object_set_new(r, "name", json_string(base ? base : ""));
  json_object_set(r, "queue", json_object_get(job, "queue"));
  json_object_set(r, "user", json_object_get(job, "user"));
  json_object_set(r, "state", json_object_get(step, "state"));
  /* Slurm's step code:signal: the highest exit code of its tasks, or when none exited
   * with one, the highest signal that killed one (the step's own exit_code is srun's,
   * 128 + N for a signal, and 1 for a task lost with neither). */
  if (json_is_integer(json_object_get(step, "exit_code"))) {
    json_int_t code = 0, sig = 0;
    size_t k;
    json_t *t;
    json_array_foreach(json_object_get(step, "tasks"), k, t) {
      json_int_t c = json_integer_value(json_object_get(t, "exit_code"));
      json_int_t g = json_integer_value(json_object_get(t, "signal"));
      if (c > code) code = c;
      if (g > sig) sig = g;
    }
    if (!code && !sig) code = json_integer_value(json_object_get(step, "exit_code")); /* a lost task: 1 */
    json_object_set_new(r, "exit_code", json_integer(code));
    if (!code && sig > 0) json_object_set_new(r, "exit_signal", json_integer(sig));
  }
  json_object_set(r, "submitted_at", json_object_get(step, "created_at"));
  json_object_set(r, "started_at", json_object_get(step, "created_at"));
  json_object_set(r, "ended_at", json_object_get(step, "ended_at"));
  json_object_set(r, "tasks", json_object_get(step, "ntasks"));
  json_object_set(r, "cpus", json_object_get(job, "cpus"));
  json_t *pl = json_array();
  size_t i;
  json_t *t;
  json_array_foreach(json_object_get(step, "tasks"), i, t) {
    json_t *p = json_object();
    json_object_set(p, "node", json_object_get(t, "node"));
    json_array_append_new(pl, p);
  }
  json_object_set_new(r, "placements", pl);
  return r;
}

/* "now-2days", Slurm dates and times (local), or Unix seconds. */
static int parse_time(const char *v, int64_t now, int64_t *ret) {
  if (strncmp(v, "now-", 4) == 0) {
    char plus[128];
    snprintf(plus, sizeof plus, "now+%s", v + 4);
    int64_t t;
    if (gp_submit_parse_begin(plus, now, &t) != 0) return -1;
    *ret = now - (t - now);
    return 0;
  }
  char *end;
  long long n = strtoll(v, &end, 10);
  if (*v && !*end && strlen(v) > 8) {
    *ret = n;
    return 0;
  }
  return gp_submit_parse_begin(v, now, ret);
}

static int by_id(const void *a, const void *b) {
  long long x = strtoll(gp_slurm_str(*(json_t *const *)a, "id", "0"), NULL, 10);
  long long y = strtoll(gp_slurm_str(*(json_t *const *)b, "id", "0"), NULL, 10);
  return x < y ? -1 : x > y;
}

/* Slurm lists by job id; the live list and the history come in other orders. */
static void sort_by_id(json_t *rows) {
  size_t n = json_array_size(rows);
  if (n < 2) return;
  json_t **v = gp_xmalloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(rows, i));
  qsort(v, n, sizeof *v, by_id);
  json_array_clear(rows);
  for (size_t i = 0; i < n; i++) json_array_append_new(rows, v[i]);
  free(v);
}

int gp_cmd_sacct(int argc, char **argv) {
  const char *jobs = NULL, *user = NULL, *format = "JobID,JobName,Partition,User,State,ExitCode,Elapsed";
  bool all_users = false, noheader = false, alloc_only = false;
  int sep = 0; /* '|' with -P/-p */
  bool trailing = false;
  int64_t now = gp_cli_now(), from = -1, to = -1;
  gp_cli cli = {0};
  json_t *live = json_array(), *hist = json_array(), *who = NULL, *seen = json_object();
  int code = 0;
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  for (;;) {
    const char *v = NULL;
    gp_err err = {0};
    int id = gp_opt_next(&it, opts, &v, &err);
    if (id == GP_OPT_END && !it.dashdash) break;
    if (id == GP_OPT_POSITIONAL || id == GP_OPT_END) {
      code = gp_slurm_usage("sacct", "unexpected argument '%s'", it.argv[it.i - 1]);
      goto out;
    }
    if (id < 0) {
      code = gp_slurm_usage("sacct", "%s (not supported by gpool's sacct)", err.message);
      goto out;
    }
    switch (id) {
    case O_HELP: fputs(usage, stdout); goto out;
    case O_JOBS: jobs = v; break;
    case O_ALLOC: alloc_only = true; break; /* no step lines */
    case O_USER: user = v; break;
    case O_ALL: all_users = true; break;
    case O_NOHEAD: noheader = true; break;
    case O_P2: sep = '|'; trailing = false; break;
    case O_P: sep = '|'; trailing = true; break;
    case O_FORMAT: format = v; break;
    case O_START:
    case O_END:
      if (parse_time(v, now, id == O_START ? &from : &to) != 0) {
        code = gp_slurm_usage("sacct", "invalid time '%s' for %s (YYYY-MM-DD[THH:MM[:SS]], now-N[units], Unix seconds)",
                              v, id == O_START ? "--starttime" : "--endtime");
        goto out;
      }
      break;
    }
  }
  /* The columns, checked before anything is asked of the server. */
  int col[MAX_COLS], width[MAX_COLS], n_cols = 0;
  char fbuf[1024];
  snprintf(fbuf, sizeof fbuf, "%s", format);
  for (char *save = NULL, *w = strtok_r(fbuf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    char *pct = strchr(w, '%');
    int wd = -1;
    if (pct) {
      *pct = '\0';
      char *end;
      long n = strtol(pct + 1, &end, 10);
      if (*end || n < 1 || n > 1000) {
        code = gp_slurm_usage("sacct", "invalid width in --format field '%s%%%s'", w, pct + 1);
        goto out;
      }
      wd = (int)n;
    }
    int f = 0;
    while (f < N_FIELDS && strcasecmp(fields[f].name, w) != 0) f++;
    if (f == N_FIELDS || n_cols == MAX_COLS) {
      code = gp_slurm_usage("sacct", "--format field '%s' is not supported by gpool's sacct (it knows "
                            "JobID JobIDRaw JobName Partition User State ExitCode Elapsed Timelimit "
                            "Submit Start End NNodes NodeList NTasks AllocCPUS)", w);
      goto out;
    }
    col[n_cols] = f;
    width[n_cols++] = wd > 0 ? wd : fields[f].width;
  }
  if (from < 0 && !jobs) {
    time_t t = (time_t)now;
    struct tm tm;
    localtime_r(&t, &tm);
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    tm.tm_isdst = -1;
    from = (int64_t)mktime(&tm); /* Slurm's default: since midnight */
  }
  if ((code = gp_slurm_connect(&cli, "sacct"))) goto out;
  if (!all_users && !user && !jobs) { /* Slurm's default: your own jobs (-j: those jobs) */
    if ((code = gp_cli_call(&cli, "GET", "/v1/whoami", NULL, &who))) goto out;
    user = gp_slurm_str(who, "user", "");
  }
  bool lists = !jobs;
  if (jobs) {
    /* Each job asked for, however old; an array's elements come from the lists, from
     * when the array was submitted. */
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", jobs);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
      if (!gp_cli_valid_job_id(w)) {
        code = gp_slurm_usage("sacct", "invalid job id '%.100s'", w);
        goto out;
      }
      char path[300];
      json_t *answer = NULL;
      snprintf(path, sizeof path, "/v1/jobs/%s", w);
      if ((code = gp_cli_call(&cli, "GET", path, NULL, &answer))) goto out;
      json_t *job = json_object_get(answer, "job");
      if (job) json_array_append(live, job);
      if (json_object_get(job, "array")) {
        int64_t sub = gp_slurm_int(job, "submitted_at");
        if (!lists || sub < from) from = sub;
        lists = true;
      }
      json_decref(answer);
    }
  }
  if (lists) {
    char base[600];
    snprintf(base, sizeof base, "/v1/jobs?all=1&");
    size_t bl = strlen(base);
    if (from >= 0) bl += (size_t)snprintf(base + bl, sizeof base - bl, "from=%lld&", (long long)from);
    if (to >= 0) bl += (size_t)snprintf(base + bl, sizeof base - bl, "to=%lld&", (long long)to);
    if ((code = gp_slurm_fetch_jobs(&cli, "/v1/jobs?", "next", live)) ||
        (code = gp_slurm_fetch_jobs(&cli, base, "cursor", hist)))
      goto out;
  }
  json_t *rows = json_array();
  size_t i;
  json_t *job;
  json_array_foreach(live, i, job) json_array_append(rows, job);
  json_array_foreach(hist, i, job) json_array_append(rows, job);
  sort_by_id(rows);
  if (!noheader) {
    gp_buf h = {0}, d = {0};
    for (int c = 0; c < n_cols; c++) {
      const char *name = fields[col[c]].name;
      if (sep) {
        gp_buf_printf(&h, "%s%s", name, c + 1 < n_cols || trailing ? "|" : "");
        continue;
      }
      gp_buf_printf(&h, "%s%*.*s", c ? " " : "", fields[col[c]].right ? width[c] : -width[c], width[c], name);
      gp_buf_printf(&d, "%s", c ? " " : "");
      for (int k = 0; k < width[c]; k++) gp_buf_puts(&d, "-");
    }
    printf("%s\n", h.data ? h.data : "");
    if (!sep) printf("%s\n", d.data ? d.data : "");
    gp_buf_done(&h);
    gp_buf_done(&d);
  }
  json_array_foreach(rows, i, job) {
    const char *id = gp_slurm_str(job, "id", "?");
    if (json_object_get(seen, id) || json_object_get(job, "array")) continue; /* elements stand for it */
    json_object_set_new(seen, id, json_true());
    if (user && strcmp(user, gp_slurm_str(job, "user", "")) != 0) continue;
    int64_t end = gp_slurm_int(job, "ended_at"), sub = gp_slurm_int(job, "submitted_at");
    if (from >= 0 && end > 0 && end < from) continue;
    if (to >= 0 && sub >= to) continue;
    if (jobs) {
      bool hit = false;
      char buf[2048];
      snprintf(buf, sizeof buf, "%s", jobs);
      for (char *save = NULL, *w = strtok_r(buf, ",", &save); w && !hit; w = strtok_r(NULL, ",", &save))
        hit = gp_slurm_id_matches(job, w);
      if (!hit) continue;
    }
    print_row(job, now, col, width, n_cols, sep, trailing);
    size_t k;
    json_t *step;
    json_array_foreach(alloc_only ? NULL : json_object_get(job, "steps"), k, step) {
      json_t *row = step_row(job, step);
      print_row(row, now, col, width, n_cols, sep, trailing);
      json_decref(row);
    }
  }
  json_decref(rows);
out:
  json_decref(live);
  json_decref(hist);
  json_decref(who);
  json_decref(seen);
  gp_cli_done(&cli);
  return code;
}
