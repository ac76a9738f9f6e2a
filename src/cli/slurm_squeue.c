/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's `squeue` answered from gpool's job list (slurm.h): Slurm's default columns and
 * its -o/--format fields %i %j %u %t %T %M %D %R %P %N %l %S (with Slurm's "%.8j" width and
 * alignment), filtered by -u/--me, -j, -t, -p. An array's pending elements fold into one
 * "J_[8-98:2%8]" line as Slurm prints them. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/slurm.h"
#include "util/buf.h"

#define SQUEUE_DEFAULT "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"

static const char usage[] =
  "Usage: squeue [-u USER[,USER]] [--me] [-j ID[,ID]] [-t STATE[,STATE]] [-p QUEUE[,QUEUE]]\n"
  "              [-h|--noheader] [-o|--format FORMAT]\n"
  "gpool's squeue: FORMAT fields %i %j %u %t %T %M %D %R %P %N %l %S (Slurm's %.Nx widths).\n";

enum { O_USER = 1, O_ME, O_JOBS, O_STATES, O_PART, O_NOHEAD, O_FORMAT, O_HELP };
static const gp_opt opts[] = {
  {'u', "user", true, O_USER},       {0, "me", false, O_ME},
  {'j', "jobs", true, O_JOBS},       {'t', "states", true, O_STATES},
  {0, "state", true, O_STATES},      {'p', "partition", true, O_PART},
  {'h', "noheader", false, O_NOHEAD}, {'o', "format", true, O_FORMAT},
  {0, "help", false, O_HELP},        {0, NULL, false, 0},
};

/* Whether `word` is one of the comma-separated items of `list` (NULL: any). */
static bool listed(const char *list, const char *word) {
  if (!list) return true;
  if (!word) return false;
  size_t n = strlen(word);
  for (const char *p = list; *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == n && strncmp(p, word, n) == 0) return true;
    if (!c) break;
    p = c + 1;
  }
  return false;
}

static const char *header(char f) {
  switch (f) {
  case 'i': return "JOBID";
  case 'j': return "NAME";
  case 'u': return "USER";
  case 't': return "ST";
  case 'T': return "STATE";
  case 'M': return "TIME";
  case 'D': return "NODES";
  case 'R': return "NODELIST(REASON)";
  case 'P': return "PARTITION";
  case 'N': return "NODELIST";
  case 'l': return "TIME_LIMIT";
  case 'S': return "START_TIME";
  default: return NULL;
  }
}

/* One field's text for a job; `id` is the id to show (the folded form for an array). */
static void field(char f, json_t *job, const char *id, int64_t now, char *out, size_t cap) {
  const char *state = gp_slurm_str(job, "state", "");
  bool pending = strcmp(state, "pending") == 0 || strcmp(state, "held") == 0;
  char nodes[4096];
  int n_nodes = gp_slurm_nodelist(job, nodes, sizeof nodes);
  switch (f) {
  case 'i': snprintf(out, cap, "%s", id); break;
  case 'j': snprintf(out, cap, "%s", gp_slurm_str(job, "name", "")); break;
  case 'u': snprintf(out, cap, "%s", gp_slurm_str(job, "user", "")); break;
  case 't': snprintf(out, cap, "%s", gp_slurm_state_code(state)); break;
  case 'T': snprintf(out, cap, "%s", gp_slurm_state_long(state)); break;
  case 'M': gp_slurm_fmt_elapsed(pending ? 0 : gp_slurm_elapsed(job, now), out, cap); break;
  case 'D': {
    /* Pending: the nodes it asks for at least (one per task unless tasks share them). */
    int64_t tasks = gp_slurm_int(job, "tasks"), per = gp_slurm_int(job, "tasks_per_node");
    int64_t want = per > 0 && tasks > 0 ? (tasks + per - 1) / per : 1;
    if (gp_slurm_int(job, "nodes") > 0) want = gp_slurm_int(job, "nodes"); /* an exact count */
    snprintf(out, cap, "%lld", pending || !n_nodes ? (long long)want : (long long)n_nodes);
    break;
  }
  case 'R':
    if (pending) {
      const char *r = gp_slurm_str(job, "pending_reason", "None");
      snprintf(out, cap, "(%s)", strcmp(state, "held") == 0 ? "JobHeldUser" : r);
    } else {
      snprintf(out, cap, "%s", nodes);
    }
    break;
  case 'P': snprintf(out, cap, "%s", gp_slurm_str(job, "queue", "")); break;
  case 'N': snprintf(out, cap, "%s", nodes); break;
  case 'l': gp_slurm_fmt_limit(gp_slurm_int(job, "time_limit"), out, cap); break;
  case 'S': {
    int64_t t = gp_slurm_int(job, "started_at");
    if (pending) t = gp_slurm_int(job, "estimated_start");
    gp_slurm_fmt_time(t, "N/A", out, cap);
    break;
  }
  default: out[0] = '\0';
  }
}

/* Walks FORMAT: literal text is copied; "%[.][W]X" prints field X (job NULL: its header)
 * padded to W, right-aligned with '.', cut to W as Slurm does. */
static int render(const char *fmt, json_t *job, const char *id, int64_t now, gp_buf *line) {
  for (const char *p = fmt; *p; p++) {
    if (*p != '%') {
      gp_buf_printf(line, "%c", *p);
      continue;
    }
    p++;
    if (*p == '%') {
      gp_buf_printf(line, "%%");
      continue;
    }
    bool right = false;
    if (*p == '.') {
      right = true;
      p++;
    }
    int width = 0;
    while (isdigit((unsigned char)*p) && width < 1000) width = width * 10 + (*p++ - '0');
    if (!*p || !header(*p))
      return gp_slurm_usage("squeue", "format field '%%%c' is not supported by gpool's squeue "
                            "(it knows %%i %%j %%u %%t %%T %%M %%D %%R %%P %%N %%l %%S)",
                            *p ? *p : ' ');
    char text[4200];
    if (job) field(*p, job, id, now, text, sizeof text);
    else snprintf(text, sizeof text, "%s", header(*p));
    if (width > 0 && (int)strlen(text) > width) text[width] = '\0';
    if (width > 0) gp_buf_printf(line, right ? "%*s" : "%-*s", width, text);
    else gp_buf_printf(line, "%s", text);
  }
  return 0;
}

typedef struct args {
  const char *users, *jobs, *parts, *format;
  json_t *states; /* gpool states asked for; empty: the active ones */
  bool me, noheader, help;
} args;

static int parse(args *a, int argc, char **argv) {
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  for (;;) {
    const char *v = NULL;
    gp_err err = {0};
    int id = gp_opt_next(&it, opts, &v, &err);
    if (id == GP_OPT_END && !it.dashdash) return 0;
    if (id == GP_OPT_POSITIONAL || id == GP_OPT_END)
      return gp_slurm_usage("squeue", "unexpected argument '%s' (gpool's squeue takes options only)",
                            it.argv[it.i - 1]);
    if (id < 0) return gp_slurm_usage("squeue", "%s (not supported by gpool's squeue)", err.message);
    switch (id) {
    case O_USER: a->users = v; break;
    case O_ME: a->me = true; break;
    case O_JOBS: a->jobs = v; break;
    case O_PART: a->parts = v; break;
    case O_NOHEAD: a->noheader = true; break;
    case O_FORMAT: a->format = v; break;
    case O_HELP: a->help = true; break;
    case O_STATES: {
      char buf[512];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (!gp_slurm_state_word(w, a->states))
          return gp_slurm_usage("squeue", "invalid job state '%s' (PD R CG CD F CA TO PR or their names)", w);
      break;
    }
    }
  }
}

int gp_cmd_squeue(int argc, char **argv) {
  args a = {.states = json_object()};
  gp_cli cli = {0};
  json_t *all = json_array(), *who = NULL, *folded = NULL;
  gp_buf line = {0};
  int code = parse(&a, argc, argv);
  if (code || a.help) {
    if (a.help) fputs(usage, stdout);
    goto out;
  }
  const char *fmt = a.format ? a.format : SQUEUE_DEFAULT;
  if ((code = render(fmt, NULL, NULL, 0, &line))) goto out; /* refuses a bad format first */
  if ((code = gp_slurm_connect(&cli, "squeue"))) goto out;
  const char *me = NULL;
  if (a.me) {
    if ((code = gp_cli_call(&cli, "GET", "/v1/whoami", NULL, &who))) goto out;
    me = gp_slurm_str(who, "user", "");
  }
  bool ended = json_object_size(a.states) == 0 ? false : true;
  const char *base = "/v1/jobs?state=pending,held,running,stopping&";
  if (ended) base = "/v1/jobs?"; /* the ended ones the server still holds too */
  if ((code = gp_slurm_fetch_jobs(&cli, base, "next", all))) goto out;
  if (!a.noheader) printf("%s\n", line.data ? line.data : "");
  int64_t now = gp_cli_now();
  size_t i;
  json_t *job;
  /* Arrays whose own line stands for their pending elements (jobs_cmd.c does the same). */
  folded = json_object();
  json_array_foreach(all, i, job) {
    if (gp_slurm_str(json_object_get(job, "array"), "pending", NULL))
      json_object_set_new(folded, gp_slurm_str(job, "id", "?"), json_true());
  }
  json_array_foreach(all, i, job) {
    const char *state = gp_slurm_str(job, "state", "");
    bool active = !strcmp(state, "pending") || !strcmp(state, "held") ||
                  !strcmp(state, "running") || !strcmp(state, "stopping");
    if (json_object_size(a.states) ? !json_object_get(a.states, state) : !active) continue;
    if (!listed(a.users, gp_slurm_str(job, "user", NULL))) continue;
    if (me && strcmp(me, gp_slurm_str(job, "user", "")) != 0) continue;
    if (!listed(a.parts, gp_slurm_str(job, "queue", NULL))) continue;
    const char *parent = gp_slurm_str(job, "array_job_id", NULL);
    if (parent && json_object_get(folded, parent) && !strcmp(state, "pending") &&
        !(a.jobs && listed(a.jobs, gp_slurm_job_id(job))))
      continue;
    char id[256];
    json_t *arr = json_object_get(job, "array");
    if (arr) {
      /* The array's own job stands for its pending elements; none left: no line. */
      const char *pend = gp_slurm_str(arr, "pending", NULL);
      if (!pend || !active) continue;
      int64_t limit = gp_slurm_int(arr, "limit");
      char lim[32] = "";
      if (limit > 0) snprintf(lim, sizeof lim, "%%%lld", (long long)limit);
      snprintf(id, sizeof id, "%s_[%.200s%s]", gp_slurm_str(job, "id", "?"), pend, lim);
    } else {
      snprintf(id, sizeof id, "%s", gp_slurm_job_id(job));
    }
    if (a.jobs) {
      bool hit = false;
      char buf[2048];
      snprintf(buf, sizeof buf, "%s", a.jobs);
      for (char *save = NULL, *w = strtok_r(buf, ",", &save); w && !hit; w = strtok_r(NULL, ",", &save))
        hit = gp_slurm_id_matches(job, w);
      if (!hit) continue;
    }
    gp_buf_reset(&line);
    render(fmt, job, id, now, &line);
    printf("%s\n", line.data ? line.data : "");
  }
out:
  gp_buf_done(&line);
  json_decref(folded);
  json_decref(all);
  json_decref(who);
  json_decref(a.states);
  gp_cli_done(&cli);
  return code;
}
