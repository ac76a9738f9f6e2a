/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool nodes [-v]` and the node actions `drain`, `cordon` and `resume`. With -v each
 * GPU gets a line: its sharing mode (and MIG instances), health and why, the jobs holding
 * it, and the live figures the agent reported (utilisation, memory, power, temperature). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "util/buf.h"

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static long long num(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_number(v) ? (long long)json_number_value(v) : 0;
}

enum { N_VERBOSE = 1 };
static const gp_opt nodes_opts[] = {{'v', "verbose", false, N_VERBOSE}, GP_CLI_COMMON_OPTS};

static void gpu_mode(json_t *gpu, char *out, size_t cap) {
  const char *mode = str(gpu, "mode");
  if (!strcmp(mode, "timeslice")) snprintf(out, cap, "timeslice:%lld", num(gpu, "replicas"));
  else snprintf(out, cap, "%s", *mode ? mode : "exclusive");
}

/* Who holds what, from the running jobs' placements: "node/gpu" -> "12:500,13:250"
 * (milli-GPU of each share) and "MIG-uuid" -> "14". Built once per `gpool nodes -v`. */
static json_t *holders_index(json_t *jobs) {
  json_t *idx = json_object();
  size_t i, k, g;
  json_t *job, *p, *gid;
  json_array_foreach(jobs, i, job) {
    const char *id = json_string_value(json_object_get(job, "id"));
    if (!id) continue;
    json_array_foreach(json_object_get(job, "placements"), k, p) {
      const char *node = json_string_value(json_object_get(p, "node"));
      const char *mig = json_string_value(json_object_get(p, "mig_uuid"));
      long long milli = (long long)gp_cli_num(json_object_get(p, "gpu_milli"));
      char key[400], entry[64];
      if (mig) {
        json_object_set_new(idx, mig, json_string(id));
        continue;
      }
      if (!node) continue;
      json_array_foreach(json_object_get(p, "gpu_ids"), g, gid) {
        snprintf(key, sizeof key, "%s/%lld", node, (long long)json_integer_value(gid));
        if (milli > 0 && milli < 1000) snprintf(entry, sizeof entry, "%s:%lld", id, milli);
        else snprintf(entry, sizeof entry, "%s", id);
        const char *old = json_string_value(json_object_get(idx, key));
        if (old) {
          char joined[1024];
          snprintf(joined, sizeof joined, "%s,%s", old, entry);
          json_object_set_new(idx, key, json_string(joined));
        } else {
          json_object_set_new(idx, key, json_string(entry));
        }
      }
    }
  }
  return idx;
}

/* The jobs on a GPU: from the placements index when it knows them (it adds each share's
 * milli-GPU), else the node's own list. */
static void gpu_jobs(json_t *node, json_t *gpu, json_t *holders, char *out, size_t cap) {
  char key[400];
  snprintf(key, sizeof key, "%s/%lld", str(node, "name"), num(gpu, "index"));
  const char *known = json_string_value(json_object_get(holders, key));
  if (known) {
    snprintf(out, cap, "%s", known);
    return;
  }
  json_t *jobs = json_object_get(gpu, "jobs");
  size_t i, o = 0;
  json_t *j;
  out[0] = '\0';
  json_array_foreach(jobs, i, j) {
    const char *id = json_string_value(j);
    if (!id || o + 1 >= cap) continue;
    int w = snprintf(out + o, cap - o, "%s%s", o ? "," : "", id);
    if (w > 0) o += (size_t)w;
  }
  if (!o) snprintf(out, cap, "-");
}

/* "87%", "30.5G/80G", "450W", "65C" or "-" each, from the GPU's telemetry. */
static void live(json_t *gpu, char *util, char mem[64], char *power, char *temp, size_t cap) {
  json_t *t = json_object_get(gpu, "telemetry");
  json_t *u = json_object_get(t, "gpu_util_pct"), *fb = json_object_get(t, "fb_used_mib"),
         *p = json_object_get(t, "power_w"), *c = json_object_get(t, "temp_c");
  if (json_is_number(u)) snprintf(util, cap, "%.0f%%", json_number_value(u));
  else snprintf(util, cap, "-");
  if (json_is_number(fb)) {
    char used[24], total[24];
    gp_cli_fmt_mib((int64_t)json_number_value(fb), used, sizeof used);
    gp_cli_fmt_mib(num(gpu, "mem_mib"), total, sizeof total);
    if (num(gpu, "mem_mib") > 0) snprintf(mem, 64, "%s/%s", used, total);
    else snprintf(mem, 64, "%s", used);
  } else {
    snprintf(mem, 64, "-");
  }
  if (json_is_number(p)) snprintf(power, cap, "%.0fW", json_number_value(p));
  else snprintf(power, cap, "-");
  if (json_is_number(c)) snprintf(temp, cap, "%.0fC", json_number_value(c));
  else snprintf(temp, cap, "-");
}

static void print_gpus(json_t *node, json_t *holders) {
  static const char *const head[] = {"  GPU", "UUID", "MODE", "HEALTH", "JOBS", "UTIL", "MEM", "POWER", "TEMP", "NOTE"};
  gp_table *t = gp_table_new(10, head);
  json_t *gpus = json_object_get(node, "gpu_list");
  size_t i;
  json_t *g;
  json_array_foreach(gpus, i, g) {
    char idx[24], mode[48], jobs[256], util[32], mem[64], power[32], temp[32], note[600];
    snprintf(idx, sizeof idx, "  %lld", num(g, "index"));
    gpu_mode(g, mode, sizeof mode);
    gpu_jobs(node, g, holders, jobs, sizeof jobs);
    live(g, util, mem, power, temp, 32);
    snprintf(note, sizeof note, "%s", str(g, "reason"));
    const char *row[] = {idx, str(g, "uuid"), mode, *str(g, "health") ? str(g, "health") : "healthy",
                         jobs, util, mem, power, temp, note};
    gp_table_add(t, row);
    /* MIG instances, one line each under their GPU. */
    size_t k;
    json_t *m;
    json_array_foreach(json_object_get(g, "mig"), k, m) {
      char slot[48];
      snprintf(slot, sizeof slot, "%s@%lld", str(m, "profile"), num(m, "start_slot"));
      const char *holder = json_string_value(json_object_get(holders, str(m, "uuid")));
      const char *sub[] = {"", str(m, "uuid"), slot, "", holder ? holder : "-", "", "", "", "", ""};
      gp_table_add(t, sub);
    }
  }
  gp_table_print(t, stdout);
  gp_table_free(t);
}

static int nodes_opt(void *arg, int id, const char *v) {
  (void)id, (void)v;
  *(bool *)arg = true; /* -v, the only option of its own */
  return 0;
}

/* The node table, or with -v one block per node: its summary line, then its GPUs. */
static int nodes_table(gp_cli *cli, json_t *nodes, json_t *answer, void *arg) {
  (void)answer;
  bool verbose = *(bool *)arg;
  if (!json_array_size(nodes)) {
    printf("No nodes have registered yet (start an agent: gpool agent, or a whole pool: gpool up).\n");
    return 0;
  }
  static const char *const head[] = {"NAME", "STATE", "GPUS", "FREE", "MODEL", "CPUS", "MEM", "HEARTBEAT", "REASON"};
  int64_t now = gp_cli_now();
  size_t i;
  json_t *n;
  gp_table *t = gp_table_new(9, head);
  json_array_foreach(nodes, i, n) {
    char gpus[24], free_s[24], cpus[24], mem[24], hb[32];
    long long total = num(n, "gpus"), busy = 0, bad = 0;
    size_t k;
    json_t *g;
    json_array_foreach(json_object_get(n, "gpu_list"), k, g) {
      if (json_array_size(json_object_get(g, "jobs"))) busy++;
      else if (*str(g, "health") && strcmp(str(g, "health"), "healthy")) bad++;
    }
    if (!total) total = (long long)json_array_size(json_object_get(n, "gpu_list"));
    snprintf(gpus, sizeof gpus, "%lld", total);
    snprintf(free_s, sizeof free_s, "%lld", total - busy - bad > 0 ? total - busy - bad : 0);
    snprintf(cpus, sizeof cpus, "%lld", num(n, "cpus"));
    gp_cli_fmt_mib(num(n, "mem_mib"), mem, sizeof mem);
    if (num(n, "last_heartbeat") > 0) {
      gp_cli_fmt_duration(now - num(n, "last_heartbeat"), hb, sizeof hb);
      strncat(hb, " ago", sizeof hb - strlen(hb) - 1);
    } else {
      snprintf(hb, sizeof hb, "-");
    }
    /* The agent's health conditions (thermal or power throttling, ...) follow the reason. */
    char reason[600];
    snprintf(reason, sizeof reason, "%s", str(n, "reason"));
    json_t *cond;
    json_array_foreach(json_object_get(n, "conditions"), k, cond) {
      size_t len = strlen(reason);
      if (json_is_string(cond) && len + 2 < sizeof reason)
        snprintf(reason + len, sizeof reason - len, "%s%s", len ? ", " : "", json_string_value(cond));
    }
    /* An advance reservation in force shows as the state (Slurm's sinfo: maint, resv), and
     * one to come follows the reason. */
    const char *state = str(n, "state");
    json_t *rv = json_object_get(n, "reservation");
    if (json_is_object(rv)) {
      bool active = json_is_true(json_object_get(rv, "active")), maint = json_is_true(json_object_get(rv, "maint"));
      if (active && !strcmp(state, "up")) state = maint ? "maint" : "resv";
      size_t len = strlen(reason);
      if (len + 2 < sizeof reason) {
        char w[64];
        gp_cli_fmt_duration(active ? num(rv, "end") - now : num(rv, "start") - now, w, sizeof w);
        snprintf(reason + len, sizeof reason - len, "%s%s %s %s %s", len ? ", " : "",
                 maint ? "maintenance" : "reserved", str(rv, "name"), active ? "ends in" : "in", w);
      }
    }
    const char *row[] = {str(n, "name"), state, gpus, free_s, str(n, "model"), cpus, mem, hb, reason};
    gp_table_add(t, row);
  }
  if (!verbose) gp_table_print(t, stdout);
  gp_table_free(t);
  if (!verbose) return 0;
  json_t *running = NULL;
  int code = gp_cli_call(cli, "GET", "/v1/jobs?state=running,stopping&limit=10000", NULL, &running);
  if (code) return code;
  json_t *holders = holders_index(json_object_get(running, "jobs"));
  json_array_foreach(nodes, i, n) {
    if (i) fputc('\n', stdout);
    printf("%s  %s%s%s  %s x%lld%s  %lld CPUs  ", str(n, "name"), str(n, "state"),
           *str(n, "reason") ? ": " : "", str(n, "reason"), str(n, "model"), num(n, "gpus"),
           !strcmp(str(n, "gpu_backend"), "sim") ? " (simulated)" : "", num(n, "cpus"));
    char mem[24];
    gp_cli_fmt_mib(num(n, "mem_mib"), mem, sizeof mem);
    printf("%s memory  %s", mem, str(n, "capacity"));
    json_t *labels = json_object_get(n, "labels");
    const char *key;
    json_t *val;
    json_object_foreach(labels, key, val) printf("  %s=%s", key, json_string_value(val) ? json_string_value(val) : "");
    json_t *prov = json_object_get(n, "provider");
    if (json_is_object(prov)) {
      printf("  template %s, instance %s", str(prov, "template"), str(prov, "instance_id"));
      if (json_is_number(json_object_get(prov, "price")))
        printf(", %.4g per GPU-hour", json_number_value(json_object_get(prov, "price")));
    }
    printf("\n");
    print_gpus(n, holders);
  }
  json_decref(holders);
  json_decref(running);
  return 0;
}

static const char nodes_usage[] =
  "Usage: gpool nodes [-v] [-o json]\n"
  "  Lists nodes; -v adds one line per GPU: mode, MIG instances, health, the jobs holding\n"
  "  it (JOB:MILLI for a share of a shared GPU), live figures.\n";

int gp_cmd_nodes(int argc, char **argv) {
  gp_cli cli = {.cmd = "nodes"};
  bool verbose = false;
  int code = gp_cli_parse(&cli, argc, argv, nodes_opts, nodes_opt, NULL, &verbose, nodes_usage);
  if (code) return code < 0 ? 0 : code;
  return gp_cli_get_print(&cli, "/v1/nodes", "nodes", nodes_table, &verbose);
}

/* ---- drain, cordon, resume ---- */

enum { A_REASON = 1 };
static const gp_opt action_opts[] = {{'r', "reason", true, A_REASON}, GP_CLI_COMMON_OPTS};

/* "n1" or "n1:3" (one GPU). */
static int split_target(const char *target, char *node, size_t cap, int *gpu) {
  const char *colon = strrchr(target, ':');
  *gpu = -1;
  if (colon && colon[1]) {
    const char *p = colon + 1;
    bool digits = true;
    for (; *p; p++) digits = digits && isdigit((unsigned char)*p);
    if (digits && strlen(colon + 1) <= 3) {
      *gpu = atoi(colon + 1);
      if ((size_t)(colon - target) >= cap) return -1;
      memcpy(node, target, (size_t)(colon - target));
      node[colon - target] = '\0';
      return colon == target ? -1 : 0;
    }
  }
  if (strlen(target) >= cap || !*target) return -1;
  snprintf(node, cap, "%s", target);
  return 0;
}

typedef struct action_args {
  const char *verb, *target, *reason;
} action_args;

static int action_opt(void *arg, int id, const char *v) {
  (void)id;
  ((action_args *)arg)->reason = v; /* --reason, the only option of its own */
  return 0;
}

static int action_word(void *arg, const char *v) {
  action_args *a = arg;
  if (a->target) return gp_cli_usage_error(a->verb, "one node at a time");
  a->target = v;
  return 0;
}

static int node_action(int argc, char **argv, const char *verb, bool need_reason, bool gpu_ok) {
  gp_cli cli = {.cmd = verb};
  action_args a = {.verb = verb};
  int code = gp_cli_parse(&cli, argc, argv, action_opts, action_opt, action_word, &a, NULL);
  if (code) return code;
  const char *target = a.target, *reason = a.reason;
  if (cli.help) {
    printf("Usage: gpool %s NODE%s%s\n", verb, gpu_ok ? "[:GPU]" : "",
           need_reason ? " --reason TEXT" : " [--reason TEXT]");
    return 0;
  }
  char node[256];
  int gpu = -1;
  if (!target) return gp_cli_usage_error(verb, "which node? give a node name%s", gpu_ok ? " (or NODE:GPU)" : "");
  if (split_target(target, node, sizeof node, &gpu)) return gp_cli_usage_error(verb, "'%s' is not NODE or NODE:GPU", target);
  if (gpu >= 0 && !gpu_ok) return gp_cli_usage_error(verb, "%s applies to whole nodes, not one GPU", verb);
  if (need_reason && (!reason || !*reason))
    return gp_cli_usage_error(verb, "say why with --reason (it is shown to everyone in 'gpool nodes')");
  char esc[800], path[1000];
  if (gp_client_escape(node, 0, esc, sizeof esc)) return gp_cli_usage_error(verb, "node name too long");
  snprintf(path, sizeof path, "/v1/nodes/%s/%s", esc, verb);
  json_t *body = json_object();
  if (reason) json_object_set_new(body, "reason", json_string(reason));
  if (gpu >= 0) json_object_set_new(body, "gpu", json_integer(gpu));
  json_t *answer = NULL;
  code = gp_cli_connect(&cli);
  if (!code) code = gp_cli_call(&cli, "POST", path, body, &answer);
  if (!code) {
    json_t *n = json_object_get(answer, "node");
    if (cli.json) {
      gp_cli_print_json(n ? n : answer);
    } else if (gpu >= 0) {
      json_t *g = json_array_get(json_object_get(n, "gpu_list"), (size_t)gpu);
      printf("%s GPU %d: %s\n", node, gpu, *str(g, "health") ? str(g, "health") : (strcmp(verb, "resume") ? "drained" : "healthy"));
    } else {
      if (*str(n, "reason")) printf("%s: %s (%s)\n", node, str(n, "state"), str(n, "reason"));
      else printf("%s: %s\n", node, str(n, "state"));
    }
  }
  json_decref(body);
  json_decref(answer);
  gp_cli_done(&cli);
  return code;
}

int gp_cmd_drain(int argc, char **argv) { return node_action(argc, argv, "drain", true, true); }
int gp_cmd_cordon(int argc, char **argv) { return node_action(argc, argv, "cordon", true, false); }
int gp_cmd_resume(int argc, char **argv) { return node_action(argc, argv, "resume", false, true); }

/* ---- forget ---- */

static int forget_word(void *arg, const char *v) {
  const char **node = arg;
  if (*node) return gp_cli_usage_error("nodes forget", "one node at a time");
  *node = v;
  return 0;
}

static const gp_opt forget_opts[] = {GP_CLI_COMMON_OPTS};

static const char forget_usage[] =
  "Usage: gpool nodes forget NODE\n"
  "  Forgets NODE's agent credential (admins): the next agent to register NODE claims the\n"
  "  name. For a machine reinstalled without its agent's data directory.\n";

/* `gpool nodes forget NODE`: drops the node's agent credential (docs/agent.md), for a machine
 * whose agent lost its data directory; the next agent to register the name claims it. */
int gp_cmd_nodes_forget(int argc, char **argv) {
  gp_cli cli = {.cmd = "nodes forget"};
  const char *node = NULL;
  int code = gp_cli_parse(&cli, argc, argv, forget_opts, NULL, forget_word, &node, forget_usage);
  if (code) return code < 0 ? 0 : code;
  if (!node || !*node) return gp_cli_usage_error("nodes forget", "which node? give a node name");
  char esc[800], path[1000];
  if (gp_client_escape(node, 0, esc, sizeof esc)) return gp_cli_usage_error("nodes forget", "node name too long");
  snprintf(path, sizeof path, "/v1/nodes/%s/credential", esc);
  json_t *answer = NULL;
  code = gp_cli_connect(&cli);
  if (!code) code = gp_cli_call(&cli, "DELETE", path, NULL, &answer);
  if (!code) {
    if (cli.json) gp_cli_print_json(answer);
    else printf("%s: credential forgotten; the next agent to register %s claims the name\n", node, node);
  }
  json_decref(answer);
  gp_cli_done(&cli);
  return code;
}

/* ---- delete ---- */

enum { D_FORCE = 1 };
static const gp_opt delete_opts[] = {{0, "force", false, D_FORCE}, GP_CLI_COMMON_OPTS};

typedef struct delete_args {
  const char *node;
  bool force;
} delete_args;

static int delete_opt(void *arg, int id, const char *v) {
  (void)id, (void)v;
  ((delete_args *)arg)->force = true; /* --force, the only option of its own */
  return 0;
}

static int delete_word(void *arg, const char *v) {
  delete_args *a = arg;
  if (a->node) return gp_cli_usage_error("nodes delete", "one node at a time");
  a->node = v;
  return 0;
}

static const char delete_usage[] =
  "Usage: gpool nodes delete NODE [--force]\n"
  "  Deletes NODE (admins): it leaves the node list, its credential is freed and an agent\n"
  "  registering the name later is a new node. Only a drained, cordoned or down node that\n"
  "  runs no job, unless --force: its jobs are then requeued (or failed) as on a lost node.\n";

/* `gpool nodes delete NODE [--force]`: DELETE /v1/nodes/{name} (docs/api.md). */
int gp_cmd_nodes_delete(int argc, char **argv) {
  gp_cli cli = {.cmd = "nodes delete"};
  delete_args a = {0};
  int code = gp_cli_parse(&cli, argc, argv, delete_opts, delete_opt, delete_word, &a, delete_usage);
  if (code) return code < 0 ? 0 : code;
  if (!a.node || !*a.node) return gp_cli_usage_error("nodes delete", "which node? give a node name");
  char esc[800], path[1000];
  if (gp_client_escape(a.node, 0, esc, sizeof esc)) return gp_cli_usage_error("nodes delete", "node name too long");
  snprintf(path, sizeof path, "/v1/nodes/%s%s", esc, a.force ? "?force=1" : "");
  json_t *answer = NULL;
  code = gp_cli_connect(&cli);
  if (!code) code = gp_cli_call(&cli, "DELETE", path, NULL, &answer);
  if (!code) {
    if (cli.json) gp_cli_print_json(answer);
    else printf("%s: deleted\n", a.node);
  }
  json_decref(answer);
  gp_cli_done(&cli);
  return code;
}
