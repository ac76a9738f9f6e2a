/* SPDX-License-Identifier: Apache-2.0 */
/* The job commands other than submit: `gpool jobs`, `show`, `why`, `cancel`, `hold` and
 * `release`. Each is a thin layer over one API route (docs/internals/protocol.md) plus the
 * formatting in job_format.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "client/client.h"
#include "util/buf.h"
#include "util/mem.h"

/* ---- gpool jobs ---- */

enum { J_STATE = 1, J_QUEUE, J_USER, J_ALL, J_LIMIT, J_FROM, J_TO };
static const gp_opt jobs_opts[] = {
  {'s', "state", true, J_STATE}, {'q', "queue", true, J_QUEUE}, {'u', "user", true, J_USER},
  {'a', "all", false, J_ALL},    {0, "limit", true, J_LIMIT},   {0, "from", true, J_FROM},
  {0, "to", true, J_TO},         GP_CLI_COMMON_OPTS,
};

static const char jobs_usage[] =
  "Usage: gpool jobs [-s STATE[,STATE]] [-q QUEUE] [-u USER] [-a [--from T] [--to T]]\n"
  "                  [--limit N] [-o json]\n"
  "  Lists jobs. Without -s or -a: pending, held, running and stopping jobs.\n"
  "  -a: every job, the active ones and then every ended one, the last ended first;\n"
  "  with --from/--to, the jobs that ended in [from, to). T: 2026-01-31, RFC 3339 or\n"
  "  Unix seconds.\n"
  "  States: pending held running stopping completed failed cancelled preempted timeout\n";

/* Appends key=value; false when the value is too long to send (a filter is never dropped:
 * the list would come back wider than asked). */
static bool add_query(gp_buf *q, const char *key, const char *value) {
  char esc[1024];
  if (gp_client_escape(value, 0, esc, sizeof esc)) return false;
  /* commas separate states and must stay literal for the server */
  gp_buf_printf(q, "%c%s=", q->len ? '&' : '?', key);
  for (const char *p = esc; *p; p++) {
    if (!strncmp(p, "%2C", 3)) {
      gp_buf_puts(q, ",");
      p += 2;
    } else {
      gp_buf_append(q, p, 1);
    }
  }
  return true;
}

typedef struct jobs_args {
  const char *state, *queue, *user, *limit, *from, *to;
  bool all;
} jobs_args;

static int jobs_opt(void *arg, int id, const char *v) {
  jobs_args *a = arg;
  switch (id) {
  case J_STATE: a->state = v; break;
  case J_QUEUE: a->queue = v; break;
  case J_USER: a->user = v; break;
  case J_ALL: a->all = true; break;
  case J_LIMIT: a->limit = v; break;
  case J_FROM: a->from = v; break;
  case J_TO: a->to = v; break;
  }
  return 0;
}

static int jobs_table(gp_cli *cli, json_t *jobs, json_t *answer, void *arg) {
  (void)cli;
  const jobs_args *a = arg;
  static const char *const head[] = {"ID", "NAME", "USER", "QUEUE", "STATE", "GPUS", "TIME", "NODES", "REASON"};
  gp_table *t = gp_table_new(9, head);
  int64_t now = gp_cli_now();
  size_t i;
  json_t *job;
  /* Arrays listed here: their pending elements fold into one line, as squeue's 12_[3-99%8]. */
  json_t *arrays = json_object();
  json_array_foreach(jobs, i, job) {
    if (json_is_object(json_object_get(job, "array")))
      json_object_set(arrays, json_string_value(json_object_get(job, "id")), json_true());
  }
  json_array_foreach(jobs, i, job) {
    char gpus[64], time_s[32], nodes[256], id[160];
    const json_t *arr = json_object_get(job, "array");
    const char *st = json_string_value(json_object_get(job, "state"));
    const char *aj = json_string_value(json_object_get(job, "array_job_id"));
    bool final = st && strcmp(st, "pending") && strcmp(st, "held") && strcmp(st, "running") && strcmp(st, "stopping");
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(job, "id")));
    if (aj) {
      if (st && !strcmp(st, "pending") && json_object_get(arrays, aj)) continue;
      snprintf(id, sizeof id, "%s", json_string_value(json_object_get(job, "array_id")));
    } else if (json_is_object(arr)) {
      const char *pend = json_string_value(json_object_get(arr, "pending"));
      json_int_t lim = json_integer_value(json_object_get(arr, "limit"));
      if (!final && (!pend || !*pend)) continue; /* every element is listed on its own */
      if (!final) {
        char l[32] = "";
        if (lim > 0) snprintf(l, sizeof l, "%%%lld", (long long)lim);
        snprintf(id, sizeof id, "%s_[%.100s%s]", json_string_value(json_object_get(job, "id")), pend, l);
      }
    }
    gp_job_fmt_gpus(job, gpus, sizeof gpus);
    gp_cli_fmt_duration(gp_job_elapsed(job, now), time_s, sizeof time_s);
    gp_job_fmt_nodes(job, nodes, sizeof nodes);
    const char *row[] = {
      id,                                               json_string_value(json_object_get(job, "name")),
      json_string_value(json_object_get(job, "user")),  json_string_value(json_object_get(job, "queue")),
      json_string_value(json_object_get(job, "state")), gpus, time_s, nodes, gp_job_reason(job),
    };
    gp_table_add(t, row);
  }
  json_decref(arrays);
  if (json_array_size(jobs)) gp_table_print(t, stdout);
  else printf("No jobs%s.\n", a->state || a->all ? " match" : " pending or running (gpool jobs -a lists finished ones)");
  gp_table_free(t);
  if (json_object_get(answer, "next") && !json_is_null(json_object_get(answer, "next")))
    fprintf(stderr, "(more jobs than --limit %s; narrow with -s, -q or -u)\n", a->limit);
  return 0;
}

/* Does a job's state appear in the comma-separated list (NULL: every state)? */
static bool state_listed(const char *list, const json_t *job) {
  const char *st = json_string_value(json_object_get(job, "state"));
  if (!list) return true;
  if (!st) return false;
  size_t n = strlen(st);
  for (const char *p = list; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, st, n) == 0) return true;
    p = comma ? comma + 1 : p + len;
  }
  return false;
}

/* GET base page after page (the server also ends a page at a size in bytes) until `limit`
 * jobs or the end, appending to `all` those whose state `states` lists (NULL: all);
 * `cursor_key` names the cursor parameter. *ret_next: the cursor left, or NULL (caller
 * frees). */
static int fetch_pages(gp_cli *cli, const char *base, const char *cursor_key, const char *states,
                       long long limit, json_t *all, char **ret_next) {
  char path[9200];
  char *next = NULL;
  long long left = limit - (long long)json_array_size(all);
  snprintf(path, sizeof path, "%slimit=%lld", base, left > 0 ? left : 1);
  int code = 0;
  while (left > 0) {
    json_t *page = NULL;
    code = gp_cli_call(cli, "GET", path, NULL, &page);
    if (code) break;
    size_t i;
    json_t *job;
    json_array_foreach(json_object_get(page, "jobs"), i, job) {
      if (state_listed(states, job) && (long long)json_array_size(all) < limit)
        json_array_append(all, job);
    }
    const char *cursor = json_string_value(json_object_get(page, "next"));
    left = limit - (long long)json_array_size(all);
    free(next);
    next = cursor ? gp_xstrdup(cursor) : NULL;
    json_decref(page);
    if (!next) break;
    snprintf(path, sizeof path, "%slimit=%lld&%s=%s", base, left > 0 ? left : 1, cursor_key, next);
  }
  if (code) free(next);
  else *ret_next = next;
  return code;
}

/* -a: the active jobs (memory), then the ended ones (the store's history), up to `limit`;
 * with a period, only the jobs that ended in it. */
static int fetch_all(gp_cli *cli, const jobs_args *a, long long limit, json_t **ret) {
  gp_buf q;
  gp_buf_init(&q, 8192);
  bool ok = true;
  if (a->queue) ok = add_query(&q, "queue", a->queue);
  if (ok && a->user) ok = add_query(&q, "user", a->user);
  if (!ok) {
    gp_buf_done(&q);
    return gp_cli_usage_error(cli->cmd, "a -q or -u value is too long");
  }
  char base[9000];
  json_t *all = json_array();
  char *next = NULL;
  int code = 0;
  if (!a->from && !a->to) {
    snprintf(base, sizeof base, "/v1/jobs%s%cstate=pending,held,running,stopping&",
             q.data ? q.data : "", q.len ? '&' : '?');
    code = fetch_pages(cli, base, "next", a->state, limit, all, &next);
  }
  if (!code && !next) {
    gp_buf_printf(&q, "%call=1", q.len ? '&' : '?');
    if (a->from) add_query(&q, "from", a->from);
    if (a->to) add_query(&q, "to", a->to);
    snprintf(base, sizeof base, "/v1/jobs%s&", q.data);
    code = fetch_pages(cli, base, "cursor", a->state, limit, all, &next);
  }
  gp_buf_done(&q);
  if (code) {
    json_decref(all);
    return code;
  }
  *ret = json_pack("{s:o,s:o}", "jobs", all, "next", next ? json_string(next) : json_null());
  free(next);
  return 0;
}

/* GET /v1/jobs (the jobs in memory) page after page: *ret is {"jobs": [...], "next":
 * cursor or null}. */
static int fetch_memory(gp_cli *cli, const char *base, long long limit, json_t **ret) {
  json_t *all = json_array();
  char *next = NULL;
  int code = fetch_pages(cli, base, "next", NULL, limit, all, &next);
  if (code) {
    json_decref(all);
    return code;
  }
  *ret = json_pack("{s:o,s:o}", "jobs", all, "next", next ? json_string(next) : json_null());
  free(next);
  return 0;
}

/* Fetches the jobs (the whole history with -a, else those in memory from `base`), prints
 * them and ends the command. */
static int print_jobs(gp_cli *cli, jobs_args *a, const char *base) {
  int code = gp_cli_connect(cli);
  json_t *answer = NULL;
  long long limit = strtoll(a->limit, NULL, 10);
  if (!code) code = base ? fetch_memory(cli, base, limit, &answer) : fetch_all(cli, a, limit, &answer);
  if (!code) {
    if (cli->json) gp_cli_print_json(json_object_get(answer, "jobs"));
    else code = jobs_table(cli, json_object_get(answer, "jobs"), answer, a);
  }
  json_decref(answer);
  gp_cli_done(cli);
  return code;
}

int gp_cmd_jobs(int argc, char **argv) {
  gp_cli cli = {.cmd = "jobs"};
  jobs_args a = {.limit = "1000"};
  int code = gp_cli_parse(&cli, argc, argv, jobs_opts, jobs_opt, NULL, &a, jobs_usage);
  if (code) return code < 0 ? 0 : code;
  if (!gp_cli_valid_id(a.limit)) return gp_cli_usage_error(cli.cmd, "--limit takes a number, not '%s'", a.limit);
  if ((a.from || a.to) && !a.all) return gp_cli_usage_error(cli.cmd, "--from and --to go with -a");
  if (a.all) return print_jobs(&cli, &a, NULL);
  gp_buf q;
  gp_buf_init(&q, 8192);
  bool ok = true;
  if (a.state) ok = add_query(&q, "state", a.state);
  else ok = add_query(&q, "state", "pending,held,running,stopping");
  if (ok && a.queue) ok = add_query(&q, "queue", a.queue);
  if (ok && a.user) ok = add_query(&q, "user", a.user);
  if (!ok) {
    gp_buf_done(&q);
    return gp_cli_usage_error(cli.cmd, "a -s, -q or -u value is too long");
  }
  char base[9000];
  snprintf(base, sizeof base, "/v1/jobs%s%c", q.data ? q.data : "", q.len ? '&' : '?');
  gp_buf_done(&q);
  return print_jobs(&cli, &a, base);
}

/* ---- commands on one or more job ids ---- */

static const gp_opt id_opts[] = {GP_CLI_COMMON_OPTS};

/* Reads "CMD ID [ID...] [common options]" into ids; returns 0 or an exit code. */
static int parse_ids(gp_cli *cli, int argc, char **argv, const char **ids, int *n_ids, int max,
                     const char *usage) {
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  gp_err err = {0};
  *n_ids = 0;
  for (;;) {
    const char *v = NULL;
    int id = gp_opt_next(&it, id_opts, &v, &err);
    if (id == GP_OPT_END && it.dashdash && it.i < it.argc) {
      id = GP_OPT_POSITIONAL; /* "--": the words after it are ids, one at a time */
      v = it.argv[it.i++];
    }
    if (id == GP_OPT_END) break;
    if (id == GP_OPT_POSITIONAL) {
      if (!gp_cli_valid_job_id(v))
        return gp_cli_usage_error(cli->cmd, "'%s' is not a job id (a number, or 12_7 for an array element)", v);
      if (*n_ids >= max) return gp_cli_usage_error(cli->cmd, "at most %d job ids at once", max);
      ids[(*n_ids)++] = v;
      continue;
    }
    if (id < 0) return gp_cli_usage_error(cli->cmd, "%s", err.message);
    int rc = gp_cli_common_opt(cli, id, v);
    if (rc) return rc;
  }
  if (cli->help) {
    fputs(usage, stdout);
    return -1;
  }
  if (*n_ids == 0) return gp_cli_usage_error(cli->cmd, "which job? give a job id");
  return 0;
}

static int get_job(gp_cli *cli, const char *id, json_t **ret_answer) {
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  return gp_cli_call(cli, "GET", path, NULL, ret_answer);
}

/* For `gpool why` of a pending job: its queue's and its user's fair-share rows from GET
 * /v1/shares, put in the job as "fairshare" for the formatter. Best effort: a server that
 * answers nothing useful leaves the line out. */
static void add_fairshare(gp_cli *cli, json_t *job) {
  const char *q = json_string_value(json_object_get(job, "queue"));
  const char *u = json_string_value(json_object_get(job, "user"));
  const char *st = json_string_value(json_object_get(job, "state"));
  char esc[1024], path[1100];
  if (!q || !st || strcmp(st, "pending") || gp_client_escape(q, 0, esc, sizeof esc)) return;
  snprintf(path, sizeof path, "/v1/shares?queue=%s", esc);
  json_t *answer = NULL;
  gp_err err = {0};
  if (gp_client_call(cli->client, "GET", path, NULL, &answer, NULL, &err) != 0) return;
  json_t *fs = json_object(), *row;
  size_t k;
  json_array_foreach(json_object_get(answer, "queues"), k, row) {
    const char *rq = json_string_value(json_object_get(row, "queue"));
    if (rq && !strcmp(rq, q)) json_object_set(fs, "queue", row);
  }
  json_array_foreach(json_object_get(answer, "users"), k, row) {
    const char *rq = json_string_value(json_object_get(row, "queue")), *ru = json_string_value(json_object_get(row, "user"));
    if (u && rq && ru && !strcmp(rq, q) && !strcmp(ru, u)) json_object_set(fs, "user", row);
  }
  json_object_set_new(job, "fairshare", fs);
  json_decref(answer);
}

static int show_or_why(int argc, char **argv, bool why) {
  gp_cli cli = {.cmd = why ? "why" : "show"};
  const char *ids[256];
  int n = 0;
  int code = parse_ids(&cli, argc, argv, ids, &n, 256,
                       why ? "Usage: gpool why ID...\n  Says in a sentence why a job is pending (or what it is doing).\n"
                           : "Usage: gpool show ID... [-o json]\n  Shows a job: request, placement, timeline, usage.\n");
  if (code) return code < 0 ? 0 : code;
  if ((code = gp_cli_connect(&cli))) return code;
  json_t *all = json_array();
  for (int i = 0; i < n; i++) {
    json_t *answer = NULL;
    int rc = get_job(&cli, ids[i], &answer);
    if (rc) {
      code = rc;
      continue;
    }
    json_t *job = json_object_get(answer, "job");
    if (cli.json) {
      json_array_append(all, job ? job : answer);
    } else {
      gp_buf out;
      gp_buf_init(&out, 1 << 20);
      if (why) add_fairshare(&cli, job);
      if (why) gp_job_fmt_why(job, gp_cli_now(), &out);
      else gp_job_fmt_show(job, gp_cli_now(), &out);
      if (i && !why) fputc('\n', stdout);
      fputs(out.data ? out.data : "", stdout);
      gp_buf_done(&out);
    }
    json_decref(answer);
  }
  if (cli.json) gp_cli_print_json(n == 1 && json_array_size(all) == 1 ? json_array_get(all, 0) : all);
  json_decref(all);
  gp_cli_done(&cli);
  return code;
}

int gp_cmd_show(int argc, char **argv) { return show_or_why(argc, argv, false); }
int gp_cmd_why(int argc, char **argv) { return show_or_why(argc, argv, true); }

/* cancel, hold, release: one POST per id; every id is tried, the exit code says whether
 * all of them succeeded. */
static int act(int argc, char **argv, const char *cmd, const char *verb, const char *done) {
  gp_cli cli = {.cmd = cmd};
  const char *ids[4096];
  int n = 0;
  char usage[256];
  snprintf(usage, sizeof usage, "Usage: gpool %s ID... [-o json]\n", cmd);
  int code = parse_ids(&cli, argc, argv, ids, &n, 4096, usage);
  if (code) return code < 0 ? 0 : code;
  if ((code = gp_cli_connect(&cli))) return code;
  json_t *all = json_array();
  for (int i = 0; i < n; i++) {
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s/%s", ids[i], verb);
    json_t *answer = NULL;
    int rc = gp_cli_call(&cli, "POST", path, NULL, &answer);
    if (rc) {
      code = rc;
      if (rc == 3) break; /* the server is unreachable: the other ids would fail alike */
      continue;
    }
    json_t *job = json_object_get(answer, "job");
    if (cli.json) json_array_append(all, job ? job : answer);
    else {
      const char *state = json_string_value(json_object_get(job, "state"));
      printf("%s %s (now %s)\n", done, ids[i], state ? state : "?");
    }
    json_decref(answer);
  }
  if (cli.json) gp_cli_print_json(all);
  json_decref(all);
  gp_cli_done(&cli);
  return code;
}

int gp_cmd_cancel(int argc, char **argv) { return act(argc, argv, "cancel", "cancel", "cancelled"); }
int gp_cmd_hold(int argc, char **argv) { return act(argc, argv, "hold", "hold", "held"); }
int gp_cmd_release(int argc, char **argv) { return act(argc, argv, "release", "release", "released"); }
