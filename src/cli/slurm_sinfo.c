/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's `sinfo` from gpool's queues and nodes (slurm.h). gpool's queues share the whole
 * fleet (a queue is a share of it, not a set of nodes), so each queue is a partition over
 * every node; nodes are grouped by Slurm's state for them: idle (no job), mix (some GPUs
 * busy), alloc (every GPU busy), drain/drng (drain or cordon, without/with jobs), down.
 * -N lists one line per node and partition; -l adds CPUs, memory, GPUs and the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/slurm.h"
#include "util/hostlist.h"
#include "util/mem.h"

static const char usage[] = "Usage: sinfo [-N] [-l] [-h|--noheader] [-p QUEUE]\n";

enum { O_NODES = 1, O_LONG, O_NOHEAD, O_PART, O_HELP };
static const gp_opt opts[] = {
  {'N', "Node", false, O_NODES}, {'l', "long", false, O_LONG}, {'h', "noheader", false, O_NOHEAD},
  {'p', "partition", true, O_PART}, {0, "help", false, O_HELP}, {0, NULL, false, 0},
};

static const char *node_state(json_t *node) {
  const char *s = gp_slurm_str(node, "state", "");
  size_t busy = 0, n = 0, i;
  json_t *g;
  json_array_foreach(json_object_get(node, "gpu_list"), i, g) {
    n++;
    if (json_array_size(json_object_get(g, "jobs")) > 0) busy++;
  }
  if (strcmp(s, "down") == 0) return "down";
  if (strcmp(s, "drain") == 0 || strcmp(s, "cordon") == 0) return busy ? "drng" : "drain";
  if (strcmp(s, "up") != 0) return "unk";
  return busy == 0 ? "idle" : busy == n ? "alloc" : "mix";
}

int gp_cmd_sinfo(int argc, char **argv) {
  bool by_node = false, lng = false, noheader = false;
  const char *part = NULL;
  json_t *queues = NULL, *nodes = NULL;
  gp_cli cli = {0};
  int code = 0;
  gp_opt_iter it;
  gp_opt_init(&it, argc, argv, 1);
  for (;;) {
    const char *v = NULL;
    gp_err err = {0};
    int id = gp_opt_next(&it, opts, &v, &err);
    if (id == GP_OPT_END && !it.dashdash) break;
    if (id == GP_OPT_POSITIONAL || id == GP_OPT_END)
      return gp_slurm_usage("sinfo", "unexpected argument '%s'", it.argv[it.i - 1]);
    if (id < 0) return gp_slurm_usage("sinfo", "%s (not supported by gpool's sinfo)", err.message);
    if (id == O_HELP) {
      fputs(usage, stdout);
      return 0;
    }
    if (id == O_NODES) by_node = true;
    if (id == O_LONG) lng = true;
    if (id == O_NOHEAD) noheader = true;
    if (id == O_PART) part = v;
  }
  if ((code = gp_slurm_connect(&cli, "sinfo")) ||
      (code = gp_cli_call(&cli, "GET", "/v1/queues", NULL, &queues)) ||
      (code = gp_cli_call(&cli, "GET", "/v1/nodes", NULL, &nodes)))
    goto out;
  json_t *nl = json_object_get(nodes, "nodes");
  size_t n_nodes = json_array_size(nl);
  const char **names = gp_xcalloc(n_nodes ? n_nodes : 1, sizeof *names);
  static const char *const order[] = {"alloc", "mix", "idle", "drng", "drain", "down", "unk"};
  if (!noheader) {
    if (by_node)
      printf(lng ? "%-15s %5s %-9s %-6s %6s %8s %-12s %s\n" : "%-15s %5s %-9s %-6s\n", "NODELIST",
             "NODES", "PARTITION", "STATE", "CPUS", "MEMORY", "GRES", "REASON");
    else
      printf("%-9s %5s %10s %5s %-6s %s\n", "PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE",
             "NODELIST");
  }
  size_t qi;
  json_t *q;
  json_array_foreach(json_object_get(queues, "queues"), qi, q) {
    /* Parents only group their children, which hold the jobs. */
    if (json_is_true(json_object_get(q, "implied"))) continue;
    const char *qname = gp_slurm_str(q, "name", "?");
    if (part && strcmp(part, qname) != 0) continue;
    char limit[64];
    /* A queue has a default limit, no maximum; none is Slurm's "infinite". */
    int64_t dl = gp_slurm_int(q, "default_time_limit");
    if (dl > 0) gp_slurm_fmt_limit(dl, limit, sizeof limit);
    else snprintf(limit, sizeof limit, "infinite");
    if (by_node) {
      size_t i;
      json_t *node;
      json_array_foreach(nl, i, node) {
        if (!lng) {
          printf("%-15s %5d %-9s %-6s\n", gp_slurm_str(node, "name", "?"), 1, qname, node_state(node));
          continue;
        }
        char mem[32], gres[64];
        snprintf(mem, sizeof mem, "%lld", (long long)gp_slurm_int(node, "mem_mib"));
        snprintf(gres, sizeof gres, "gpu:%lld", (long long)gp_slurm_int(node, "gpus"));
        printf("%-15s %5d %-9s %-6s %6lld %8s %-12s %s\n", gp_slurm_str(node, "name", "?"), 1, qname,
               node_state(node), (long long)gp_slurm_int(node, "cpus"), mem, gres,
               gp_slurm_str(node, "reason", "none"));
      }
      continue;
    }
    bool any = false;
    for (size_t s = 0; s < sizeof order / sizeof order[0]; s++) {
      size_t k = 0, i;
      json_t *node;
      json_array_foreach(nl, i, node) if (strcmp(node_state(node), order[s]) == 0) names[k++] =
          gp_slurm_str(node, "name", "?");
      if (!k) continue;
      any = true;
      size_t cap = k * 1100 + 1;
      char *list = gp_xmalloc(cap);
      if (gp_hostlist_compress(names, k, list, cap) != 0) {
        size_t len = 0;
        for (size_t j = 0; j < k; j++) len += (size_t)snprintf(list + len, cap - len, "%s%s", j ? "," : "", names[j]);
      }
      printf("%-9s %5s %10s %5zu %-6s %s\n", qname, "up", limit, k, order[s], list);
      free(list);
    }
    if (!any) printf("%-9s %5s %10s %5d %-6s %s\n", qname, "up", limit, 0, "n/a", ""); /* no node yet */
  }
  free(names);
out:
  json_decref(queues);
  json_decref(nodes);
  gp_cli_done(&cli);
  return code;
}
