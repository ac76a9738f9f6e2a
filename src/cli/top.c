/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool top`: a live terminal view of the whole pool, like nvtop for a fleet. Every
 * refresh it reads the public API (GET /v1/nodes, /v1/queues, /v1/jobs) and draws:
 * a summary line, one block per node with a utilisation bar per GPU (memory, power,
 * temperature, health, jobs on it), the queue table (running, pending, allocated against
 * fair share and quota) and the running and pending jobs. `--once` draws one frame without
 * clearing the screen (scripts and tests); otherwise it redraws every --interval until
 * interrupted. Nothing here reaches past the HTTP API. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "util/buf.h"
#include "util/units.h"

enum { T_ONCE = 1, T_INTERVAL, T_JOBS, T_NO_COLOR };
static const gp_opt top_opts[] = {{0, "once", false, T_ONCE},
                                  {'n', "interval", true, T_INTERVAL},
                                  {0, "jobs", true, T_JOBS},
                                  {0, "no-color", false, T_NO_COLOR},
                                  GP_CLI_COMMON_OPTS};

static volatile sig_atomic_t stop_top;
static void on_sigint(int sig) {
  (void)sig;
  stop_top = 1;
}

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static double num(json_t *o, const char *key) { return gp_cli_num(json_object_get(o, key)); }

typedef struct style {
  bool color;
} style;

static const char *col(const style *st, const char *code) { return st->color ? code : ""; }

/* "[||||||||      ]" for pct in 0..100; width cells. */
static void bar(gp_buf *out, const style *st, double pct, int width) {
  if (pct < 0) pct = 0;
  if (pct > 100) pct = 100;
  int fill = (int)(pct * width / 100.0 + 0.5);
  const char *c = pct >= 80 ? "\033[32m" : pct >= 30 ? "\033[33m" : "\033[31m";
  gp_buf_puts(out, "[");
  gp_buf_puts(out, col(st, c));
  for (int i = 0; i < width; i++) gp_buf_puts(out, i < fill ? "|" : " ");
  gp_buf_puts(out, col(st, "\033[0m"));
  gp_buf_puts(out, "]");
}

static void jobs_list(json_t *arr, char *out, size_t cap) {
  size_t i, o = 0;
  json_t *j;
  out[0] = '\0';
  json_array_foreach(arr, i, j) {
    const char *id = json_string_value(j);
    if (!id || o + 1 >= cap) continue;
    int w = snprintf(out + o, cap - o, "%s%s", o ? "," : "", id);
    if (w > 0) o += (size_t)w;
  }
  if (!o) snprintf(out, cap, "-");
}

/* Counts for the summary line, added up while the nodes are drawn. */
typedef struct fleet_sum {
  int gpus, busy, failed, up, util_n;
  double util_sum;           /* over the GPUs that report a utilisation: failed ones do not */
} fleet_sum;

static void draw_nodes(gp_buf *out, const style *st, json_t *nodes, fleet_sum *sum) {
  size_t i;
  json_t *n;
  json_array_foreach(nodes, i, n) {
    const char *state = str(n, "state");
    bool up = !strcmp(state, "up");
    if (up) sum->up++;
    gp_buf_printf(out, "%s%s%s  %s  %s x%d", col(st, "\033[1m"), str(n, "name"), col(st, "\033[0m"),
                  up ? state : "", str(n, "model"), (int)num(n, "gpus"));
    if (!up) gp_buf_printf(out, "%s%s%s", col(st, "\033[31m"), state, col(st, "\033[0m"));
    const char *reason = str(n, "reason");
    if (*reason) gp_buf_printf(out, "  (%s)", reason);
    /* Node conditions the agent reports (thermal_throttling, power_throttling). */
    size_t ci;
    json_t *cond;
    json_array_foreach(json_object_get(n, "conditions"), ci, cond)
      if (json_is_string(cond))
        gp_buf_printf(out, "  %s%s%s", col(st, "\033[33m"), json_string_value(cond), col(st, "\033[0m"));
    gp_buf_puts(out, "\n");
    size_t k;
    json_t *g;
    json_array_foreach(json_object_get(n, "gpu_list"), k, g) {
      json_t *t = json_object_get(g, "telemetry");
      json_t *u = json_object_get(t, "gpu_util_pct");
      bool have_util = json_is_number(u) && json_number_value(u) >= 0;
      double util = have_util ? json_number_value(u) : 0;
      char mem[48] = "-", used[24], total[24], jobs[96];
      json_t *fb = json_object_get(t, "fb_used_mib");
      if (json_is_number(fb)) {
        gp_cli_fmt_mib((int64_t)json_number_value(fb), used, sizeof used);
        gp_cli_fmt_mib((int64_t)num(g, "mem_mib"), total, sizeof total);
        snprintf(mem, sizeof mem, "%s/%s", used, total);
      }
      jobs_list(json_object_get(g, "jobs"), jobs, sizeof jobs);
      sum->gpus++;
      if (strcmp(jobs, "-")) sum->busy++;
      if (!strcmp(str(g, "health"), "failed")) sum->failed++;
      if (have_util) {
        sum->util_sum += util;
        sum->util_n++;
      }
      gp_buf_printf(out, "  %2d ", (int)num(g, "index"));
      bar(out, st, util, 20);
      if (have_util) gp_buf_printf(out, " %3.0f%%", util);
      else gp_buf_puts(out, "    -");
      gp_buf_printf(out, "  %-13s", mem);
      json_t *p = json_object_get(t, "power_w"), *c = json_object_get(t, "temp_c");
      if (json_is_number(p) && json_number_value(p) >= 0) gp_buf_printf(out, " %4.0fW", json_number_value(p));
      else gp_buf_puts(out, "     -");
      if (json_is_number(c) && json_number_value(c) >= 0) gp_buf_printf(out, " %3.0fC", json_number_value(c));
      else gp_buf_puts(out, "    -");
      const char *health = str(g, "health");
      const char *mode = str(g, "mode");
      gp_buf_printf(out, "  %-9s", *mode ? mode : "exclusive");
      if (*health && strcmp(health, "healthy"))
        gp_buf_printf(out, "  %s%s: %s%s", col(st, "\033[31m"), health, str(g, "reason"), col(st, "\033[0m"));
      gp_buf_printf(out, "  jobs %s\n", jobs);
    }
  }
}

static void draw_queues(gp_buf *out, json_t *queues) {
  gp_buf_printf(out, "\n%-28s %7s %7s %9s %9s %9s\n", "QUEUE", "RUNNING", "PENDING", "ALLOCATED",
                "FAIR", "DESERVED");
  size_t i;
  json_t *q;
  json_array_foreach(queues, i, q) {
    char a[16], f[16], d[16];
    gp_cli_fmt_gpus(num(q, "allocated"), a, sizeof a);
    gp_cli_fmt_gpus(num(q, "fair_share"), f, sizeof f);
    gp_cli_fmt_gpus(num(q, "deserved"), d, sizeof d);
    gp_buf_printf(out, "%-28.28s %7d %7d %9s %9s %9s\n", str(q, "name"), (int)num(q, "running_jobs"),
                  (int)num(q, "pending_jobs"), a, f, d);
  }
}

static void draw_jobs(gp_buf *out, json_t *jobs, int max, int64_t now, int *ret_running,
                      int *ret_pending) {
  size_t i;
  json_t *j;
  json_array_foreach(jobs, i, j) {
    if (!strcmp(str(j, "state"), "running")) (*ret_running)++;
    else if (!strcmp(str(j, "state"), "pending")) (*ret_pending)++;
  }
  gp_buf_printf(out, "\n%-8s %-18s %-10s %-9s %5s %-16s %8s  %s\n", "JOB", "QUEUE", "USER", "STATE",
                "GPUS", "WHERE", "TIME", "NAME / WHY");
  int shown = 0;
  /* Running first, then pending, each in the API's order. */
  for (int pass = 0; pass < 2; pass++) {
    json_array_foreach(jobs, i, j) {
      const char *state = str(j, "state");
      if (strcmp(state, pass == 0 ? "running" : "pending") != 0) continue;
      if (shown == max) {
        gp_buf_printf(out, "... %d more (gpool jobs)\n", *ret_running + *ret_pending - shown);
        return;
      }
      shown++;
      char gpus[16], where[64] = "-", age[24];
      double fr = num(j, "gpu_fraction");
      if (fr > 0) gp_cli_fmt_gpus(fr, gpus, sizeof gpus);
      else if (json_is_string(json_object_get(j, "mig"))) snprintf(gpus, sizeof gpus, "mig");
      else gp_cli_fmt_gpus(num(j, "gpus") * (num(j, "tasks") > 0 ? num(j, "tasks") : 1), gpus, sizeof gpus);
      json_t *pl = json_array_get(json_object_get(j, "placements"), 0);
      if (pl) {
        json_t *ids = json_object_get(pl, "gpu_ids");
        size_t o = (size_t)snprintf(where, sizeof where, "%s:", str(pl, "node"));
        size_t k;
        json_t *id;
        json_array_foreach(ids, k, id) {
          if (o + 4 >= sizeof where) break;
          o += (size_t)snprintf(where + o, sizeof where - o, "%s%d", k ? "," : "", (int)gp_cli_num(id));
        }
        if (json_array_size(json_object_get(j, "placements")) > 1 && o + 4 < sizeof where)
          snprintf(where + o, sizeof where - o, "+");
      }
      int64_t since = (int64_t)num(j, pass == 0 ? "started_at" : "submitted_at");
      gp_cli_fmt_duration(since > 0 ? now - since : 0, age, sizeof age);
      const char *tail = pass == 0 ? str(j, "name") : str(j, "pending_reason");
      gp_buf_printf(out, "%-8.8s %-18.18s %-10.10s %-9s %5s %-16.16s %8s  %s\n", str(j, "id"),
                    str(j, "queue"), str(j, "user"), state, gpus, where, age, tail);
    }
  }
  if (!shown) gp_buf_puts(out, "(no running or pending jobs)\n");
}

/* One frame into `out`; returns 0 or the exit code of a failed API call. */
static int frame(gp_cli *cli, const style *st, int max_jobs, gp_buf *out) {
  json_t *nodes = NULL, *queues = NULL, *jobs = NULL;
  int code = gp_cli_call(cli, "GET", "/v1/nodes", NULL, &nodes);
  if (!code) code = gp_cli_call(cli, "GET", "/v1/queues", NULL, &queues);
  if (!code) code = gp_cli_call(cli, "GET", "/v1/jobs?state=running,pending&limit=1000", NULL, &jobs);
  if (code) goto out;
  int64_t now = gp_cli_now();
  gp_buf body;
  gp_buf_init(&body, 4u << 20);
  int running = 0, pending = 0;
  fleet_sum sum = {0};
  json_t *nl = json_object_get(nodes, "nodes");
  draw_nodes(&body, st, nl, &sum);
  if (!json_array_size(nl)) gp_buf_puts(&body, "(no nodes registered: start one with gpool agent or gpool up)\n");
  draw_queues(&body, json_object_get(queues, "queues"));
  draw_jobs(&body, json_object_get(jobs, "jobs"), max_jobs, now, &running, &pending);
  char ts[32];
  time_t tt = (time_t)now;
  struct tm tm;
  strftime(ts, sizeof ts, "%H:%M:%S", localtime_r(&tt, &tm));
  gp_buf_printf(out, "%sgpool top%s  %s  %s\n", col(st, "\033[1m"), col(st, "\033[0m"),
                gp_client_server(cli->client), ts);
  gp_buf_printf(out, "nodes %d/%d up   GPUs %d/%d allocated", sum.up, (int)json_array_size(nl),
                sum.busy, sum.gpus);
  if (sum.failed) gp_buf_printf(out, ", %d failed", sum.failed);
  gp_buf_printf(out, "   mean util %s", sum.util_n ? "" : "-");
  if (sum.util_n) gp_buf_printf(out, "%.0f%%", sum.util_sum / sum.util_n);
  gp_buf_printf(out, "   jobs %d running, %d pending\n\n", running, pending);
  gp_buf_append(out, body.data, body.len);
  gp_buf_done(&body);
out:
  json_decref(nodes);
  json_decref(queues);
  json_decref(jobs);
  return code;
}

typedef struct top_args {
  bool once, no_color;
  int64_t interval_s, max_jobs;
} top_args;

static int top_opt(void *arg, int id, const char *v) {
  top_args *a = arg;
  if (id == T_ONCE) a->once = true;
  else if (id == T_NO_COLOR) a->no_color = true;
  else if (id == T_INTERVAL) {
    if (gp_parse_duration_s(v, &a->interval_s) || a->interval_s < 1 || a->interval_s > 3600)
      return gp_cli_usage_error("top", "--interval: expected 1s to 1h, got '%s'", v);
  } else if (id == T_JOBS) {
    if (gp_parse_int64(v, &a->max_jobs) || a->max_jobs < 0 || a->max_jobs > 10000)
      return gp_cli_usage_error("top", "--jobs: expected 0 to 10000, got '%s'", v);
  }
  return 0;
}

static const char top_usage[] =
  "Usage: gpool top [--once] [-n|--interval DUR] [--jobs N] [--no-color]\n"
  "  A live view of the pool: per-node GPU utilisation bars with memory, power,\n"
  "  temperature, health and jobs; queues against their fair share; running and\n"
  "  pending jobs. Redraws every --interval (default 2s) until Ctrl-C; --once draws\n"
  "  one frame and exits. --jobs caps the job list (default 20).\n";

int gp_cmd_top(int argc, char **argv) {
  gp_cli cli = {.cmd = "top"};
  top_args a = {.interval_s = 2, .max_jobs = 20};
  int code = gp_cli_parse(&cli, argc, argv, top_opts, top_opt, NULL, &a, top_usage);
  if (code) return code < 0 ? 0 : code;
  bool once = a.once, no_color = a.no_color;
  int64_t interval_s = a.interval_s, max_jobs = a.max_jobs;
  if (cli.json) return gp_cli_usage_error(cli.cmd, "-o json is not offered: use gpool nodes/jobs/queues -o json");
  if ((code = gp_cli_connect(&cli))) return code;
  style st = {.color = !once && !no_color && isatty(STDOUT_FILENO) && !getenv("NO_COLOR")};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  if (!once) {
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
  }
  gp_buf out;
  gp_buf_init(&out, 8u << 20);
  while (!stop_top) {
    gp_buf_reset(&out);
    code = frame(&cli, &st, (int)max_jobs, &out);
    if (code) break;
    if (!once && isatty(STDOUT_FILENO)) fputs("\033[H\033[2J", stdout);
    fwrite(out.data, 1, out.len, stdout);
    fflush(stdout);
    if (once) break;
    for (int64_t i = 0; i < interval_s * 10 && !stop_top; i++) {
      struct timespec ts = {0, 100000000};
      nanosleep(&ts, NULL);
    }
  }
  gp_buf_done(&out);
  gp_cli_done(&cli);
  return code;
}
