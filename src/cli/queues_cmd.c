/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool queues`: the queue tree with each queue's deserved GPUs, limit, weight, fair share,
 * allocated and pending GPUs, job counts, its budget with what the current period spent,
 * and its spot settings. The API lists queues flat with a `parent`;
 * the tree is rebuilt here, children sorted by name under their parent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"

enum { Q_VERBOSE = 1 };
static const gp_opt queues_opts[] = {{'v', "verbose", false, Q_VERBOSE}, GP_CLI_COMMON_OPTS};

static int queues_opt(void *arg, int id, const char *v) {
  (void)v;
  if (id == Q_VERBOSE) *(bool *)arg = true;
  return 0;
}

/* USER LIMITS (-v): "*: 4 GPUs, 100 pending, 500 GPU-h/month; alice: 8 GPUs"; "-" for none. */
static void fmt_user_limits(json_t *q, char *out, size_t cap) {
  json_t *ul = json_object_get(q, "user_limits"), *us = json_object_get(ul, "users");
  const char *period = json_string_value(json_object_get(ul, "period"));
  size_t o = 0;
  out[0] = '\0';
  const char *user;
  json_t *l;
  json_object_foreach(us, user, l) {
    char part[256];
    int w = snprintf(part, sizeof part, "%s%.64s:", o ? "; " : "", user);
    size_t pl = w > 0 ? (size_t)w : 0;
    json_t *g = json_object_get(l, "max_gpus"), *p = json_object_get(l, "max_pending_jobs"),
           *h = json_object_get(l, "max_gpu_hours");
    if (json_is_number(g)) pl += (size_t)snprintf(part + pl, sizeof part - pl, " %g GPUs", json_number_value(g));
    if (json_is_number(p) && pl < sizeof part)
      pl += (size_t)snprintf(part + pl, sizeof part - pl, "%s %lld pending", json_is_number(g) ? "," : "",
                             (long long)json_integer_value(p));
    if (json_is_number(h) && pl < sizeof part)
      snprintf(part + pl, sizeof part - pl, "%s %g GPU-h/%s", json_is_number(g) || json_is_number(p) ? "," : "",
               json_number_value(h), period ? period : "month");
    if (o + strlen(part) + 1 >= cap) break;
    memcpy(out + o, part, strlen(part) + 1);
    o += strlen(part);
  }
  if (!o) snprintf(out, cap, "-");
}

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static int by_name(const void *a, const void *b) {
  return strcmp(str(*(json_t *const *)a, "name"), str(*(json_t *const *)b, "name"));
}

static void gpus(json_t *q, const char *key, char *out, size_t cap) {
  json_t *v = json_object_get(q, key);
  if (!json_is_number(v)) snprintf(out, cap, "-");
  else gp_cli_fmt_gpus(json_number_value(v), out, cap);
}

/* The last path element: "org/team/a" -> "a" (a child is shown under its parent). */
static const char *leaf(const char *name) {
  const char *slash = strrchr(name, '/');
  return slash ? slash + 1 : name;
}

/* BUDGET ("500 GPU-h/month", "1200 USD/week"), SPENT in its unit and USED as a percentage;
 * "-" without a budget. */
static void fmt_budget(json_t *q, char *budget, size_t bcap, char *spent, size_t scap,
                       char *used, size_t ucap) {
  json_t *b = json_object_get(q, "budget");
  snprintf(budget, bcap, "-");
  snprintf(spent, scap, "-");
  snprintf(used, ucap, "-");
  if (!json_is_object(b)) return;
  bool money = json_object_get(b, "amount") != NULL;
  const char *unit = money ? str(q, "budget_unit") : "GPU-h";
  snprintf(budget, bcap, "%.6g %s/%s", gp_cli_num(json_object_get(b, money ? "amount" : "gpu_hours")),
           *unit ? unit : "?", str(b, "period"));
  if (!json_is_number(json_object_get(q, "budget_spent"))) return;
  snprintf(spent, scap, money ? "%.2f" : "%.1f", gp_cli_num(json_object_get(q, "budget_spent")));
  snprintf(used, ucap, "%.0f%%", 100 * gp_cli_num(json_object_get(q, "budget_used_ratio")));
}

/* SPOT: the preference and the share cap ("prefer 50%", "never", "neutral 50%"); "-" for
 * neither. */
static void fmt_spot(json_t *q, char *out, size_t cap) {
  json_t *s = json_object_get(q, "spot");
  const char *pref = str(s, "prefer");
  json_t *share = json_object_get(s, "share");
  bool neutral = !*pref || !strcmp(pref, "neutral");
  if (!json_is_number(share)) snprintf(out, cap, "%.16s", neutral ? "-" : pref);
  else snprintf(out, cap, "%.16s %.0f%%", *pref ? pref : "neutral", 100 * json_number_value(share));
}

static void add_subtree(gp_table *t, json_t **qs, size_t n, const char *parent, int depth, bool verbose) {
  if (depth > 32) return; /* a cycle in a hostile answer must not recurse forever */
  for (size_t i = 0; i < n; i++) {
    const char *p = str(qs[i], "parent");
    if (strcmp(p, parent)) continue;
    char name[512], des[32], lim[32], wt[32], fs[32], alloc[32], pend[32], jobs[48], users[256];
    snprintf(name, sizeof name, "%*s%s", depth * 2, "", depth ? leaf(str(qs[i], "name")) : str(qs[i], "name"));
    gpus(qs[i], "deserved", des, sizeof des);
    gpus(qs[i], "limit", lim, sizeof lim);
    gpus(qs[i], "weight", wt, sizeof wt);
    gpus(qs[i], "fair_share", fs, sizeof fs);
    gpus(qs[i], "allocated", alloc, sizeof alloc);
    gpus(qs[i], "pending", pend, sizeof pend);
    snprintf(jobs, sizeof jobs, "%lld/%lld",
             (long long)gp_cli_num(json_object_get(qs[i], "running_jobs")),
             (long long)gp_cli_num(json_object_get(qs[i], "pending_jobs")));
    users[0] = '\0';
    size_t k, o = 0;
    json_t *u;
    json_array_foreach(json_object_get(qs[i], "users"), k, u) {
      if (!json_is_string(u) || o + 1 >= sizeof users) continue;
      int w = snprintf(users + o, sizeof users - o, "%s%s", o ? "," : "", json_string_value(u));
      if (w > 0) o += (size_t)w;
    }
    char budget[64], spent[32], used[16], spot[32];
    fmt_budget(qs[i], budget, sizeof budget, spent, sizeof spent, used, sizeof used);
    fmt_spot(qs[i], spot, sizeof spot);
    char ulim[1024];
    fmt_user_limits(qs[i], ulim, sizeof ulim);
    const char *row[] = {name, des, lim, wt, fs, alloc, pend, jobs, budget, spent, used, spot, users, ulim};
    gp_table_add(t, row);
    add_subtree(t, qs, n, str(qs[i], "name"), depth + 1, verbose);
  }
}

static int queues_table(gp_cli *cli, json_t *queues, json_t *answer, void *arg) {
  (void)cli, (void)answer;
  bool verbose = *(bool *)arg;
  size_t n = json_array_size(queues);
  json_t **qs = calloc(n ? n : 1, sizeof *qs);
  for (size_t i = 0; i < n; i++) qs[i] = json_array_get(queues, i);
  qsort(qs, n, sizeof *qs, by_name);
  static const char *const head[] = {"QUEUE", "DESERVED", "LIMIT", "WEIGHT", "FAIR", "ALLOC",
                                     "PENDING", "JOBS", "BUDGET", "SPENT", "USED", "SPOT", "USERS",
                                     "USER_LIMITS"};
  gp_table *t = gp_table_new(verbose ? 14 : 13, head);
  add_subtree(t, qs, n, "", 0, verbose);
  /* Queues whose parent is missing from the answer still deserve a line. */
  for (size_t i = 0; i < n; i++) {
    const char *p = str(qs[i], "parent");
    bool found = !*p;
    for (size_t k = 0; k < n && !found; k++) found = !strcmp(str(qs[k], "name"), p);
    for (size_t k = 0; k < i && !found; k++) found = !strcmp(str(qs[k], "parent"), p); /* done */
    if (!found) add_subtree(t, qs, n, p, 0, verbose);
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
  free(qs);
  return 0;
}

static const char queues_usage[] =
  "Usage: gpool queues [-v] [-o json]\n"
  "  The queue tree. GPUs: DESERVED (guaranteed), LIMIT (ceiling), FAIR (fair share now),\n"
  "  ALLOC (running), PENDING (asked by pending jobs); JOBS running/pending.\n"
  "  BUDGET per period, SPENT in the current period (GPU-hours or currency), USED in %.\n"
  "  SPOT: how its jobs meet spot capacity (prefer, avoid, never) and the most of its GPUs\n"
  "  that may be on spot.\n"
  "  -v adds USER_LIMITS: per user of the queue (\"*\": every user), the most GPUs running,\n"
  "  jobs pending and GPU-hours per period.\n";

int gp_cmd_queues(int argc, char **argv) {
  gp_cli cli = {.cmd = "queues"};
  bool verbose = false;
  int code = gp_cli_parse(&cli, argc, argv, queues_opts, queues_opt, NULL, &verbose, queues_usage);
  if (code) return code < 0 ? 0 : code;
  return gp_cli_get_print(&cli, "/v1/queues", "queues", queues_table, &verbose);
}
