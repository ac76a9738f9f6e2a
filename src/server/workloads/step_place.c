/* SPDX-License-Identifier: Apache-2.0 */
/* Where a step's tasks go in the job's allocation (steps.h): srun's -N, -n,
 * --ntasks-per-node and -w chosen over the job's tasks as placed, the way Slurm lays a step
 * out in its allocation (block distribution, nodes in the allocation's order). What the
 * allocation cannot hold is refused naming the option, never shrunk. Pure. */
#include <stdlib.h>
#include <string.h>

#include "server/workloads/steps.h"
#include "util/mem.h"

static int refuse(gp_err *err, const char *field, const char *fmt, long a, long b) {
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, fmt, a, b);
}

int gp__srv_step_place(const int *alloc_node, const char *const *alloc_name, int n_alloc,
                       const gp_srv_step_ask *ask, int *ret_alloc, int *ret_n, gp_err *err) {
  *ret_n = 0;
  if (n_alloc <= 0) return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "the job holds no allocation");
  /* The allocation's nodes in the order of their first task, with their task counts. */
  int *node = gp_xcalloc((size_t)n_alloc, sizeof *node), *cap = gp_xcalloc((size_t)n_alloc, sizeof *cap);
  int *first = gp_xcalloc((size_t)n_alloc, sizeof *first), n_nodes = 0;
  for (int t = 0; t < n_alloc; t++) {
    int k = 0;
    while (k < n_nodes && node[k] != alloc_node[t]) k++;
    if (k == n_nodes) {
      node[n_nodes] = alloc_node[t];
      first[n_nodes++] = t;
    }
    cap[k]++;
  }
  bool *use = gp_xcalloc((size_t)n_nodes, sizeof *use);
  int *put = gp_xcalloc((size_t)n_nodes, sizeof *put);
  int r = 0, chosen = 0;
  if (ask->n_nodelist > 0) {
    for (int i = 0; i < ask->n_nodelist && !r; i++) {
      int k = 0;
      while (k < n_nodes && strcmp(alloc_name[first[k]], ask->nodelist[i]) != 0) k++;
      if (k == n_nodes)
        r = gp_err_set(err, GP_EINVAL, NULL, 0, "nodelist",
                       "-w/--nodelist: node %.200s is not in the job's allocation", ask->nodelist[i]);
      else if (!use[k]) {
        use[k] = true;
        chosen++;
      }
    }
    if (!r && ask->nodes > 0 && ask->nodes != chosen)
      r = refuse(err, "nodes", "-N/--nodes: %ld nodes asked, but -w/--nodelist names %ld", ask->nodes, chosen);
  } else {
    int want = ask->nodes > 0 ? ask->nodes : n_nodes;
    if (ask->nodes > n_nodes)
      r = refuse(err, "nodes", "-N/--nodes: %ld nodes asked, the job's allocation has %ld", ask->nodes, n_nodes);
    /* -n below the node count (without -N) uses that many nodes, as Slurm does. */
    if (!r && ask->nodes <= 0 && ask->ntasks > 0 && ask->ntasks < want) want = ask->ntasks;
    if (!r && ask->nodes <= 0 && ask->ntasks_per_node > 0 && ask->ntasks > 0) {
      int need = (ask->ntasks + ask->ntasks_per_node - 1) / ask->ntasks_per_node;
      if (need < want) want = need;
    }
    for (int k = 0; k < n_nodes && chosen < want && !r; k++) {
      use[k] = true;
      chosen++;
    }
  }
  int holds = 0;
  for (int k = 0; k < n_nodes; k++) holds += use[k] ? cap[k] : 0;
  int total = 0;
  if (!r && ask->ntasks_per_node > 0) {
    for (int k = 0; k < n_nodes && !r; k++) {
      if (!use[k]) continue;
      if (ask->ntasks_per_node > cap[k])
        r = refuse(err, "ntasks_per_node",
                   "--ntasks-per-node: %ld tasks asked on a node where the job has %ld", ask->ntasks_per_node, cap[k]);
      put[k] = ask->ntasks_per_node;
      total += put[k];
    }
    if (!r && ask->ntasks > 0 && ask->ntasks != total) {
      if (ask->ntasks > total)
        r = refuse(err, "ntasks", "-n/--ntasks: %ld tasks asked, --ntasks-per-node and the nodes hold %ld",
                   ask->ntasks, total);
      else { /* fewer: the last nodes get fewer, each keeps at least one */
        int extra = total - ask->ntasks;
        for (int k = n_nodes - 1; k >= 0 && extra > 0; k--)
          while (use[k] && put[k] > 1 && extra > 0) {
            put[k]--;
            extra--;
          }
        if (extra > 0)
          r = refuse(err, "ntasks", "-n/--ntasks: %ld tasks cannot cover the %ld nodes chosen", ask->ntasks, chosen);
        total = ask->ntasks;
      }
    }
  } else if (!r && ask->ntasks > 0) {
    if (ask->ntasks > holds)
      r = refuse(err, "ntasks", "-n/--ntasks: %ld tasks asked, the job's allocation holds %ld there",
                 ask->ntasks, holds);
    else if (ask->ntasks < chosen)
      r = refuse(err, "ntasks", "-n/--ntasks: %ld tasks cannot cover the %ld nodes chosen", ask->ntasks, chosen);
    /* One on each chosen node, then the rest in blocks, node by node. */
    int left = ask->ntasks;
    for (int k = 0; k < n_nodes && !r; k++)
      if (use[k]) {
        put[k] = 1;
        left--;
      }
    for (int k = 0; k < n_nodes && !r && left > 0; k++)
      while (use[k] && put[k] < cap[k] && left > 0) {
        put[k]++;
        left--;
      }
    total = ask->ntasks;
  } else if (!r) {
    for (int k = 0; k < n_nodes; k++) put[k] = use[k] ? cap[k] : 0;
    total = holds;
  }
  if (!r) {
    /* Ranks in blocks per node; a node's step tasks take its job tasks in task order. */
    for (int k = 0; k < n_nodes; k++) {
      int left = put[k];
      for (int t = 0; t < n_alloc && left > 0; t++)
        if (alloc_node[t] == node[k]) {
          ret_alloc[(*ret_n)++] = t;
          left--;
        }
    }
  }
  (void)total;
  free(node);
  free(cap);
  free(first);
  free(use);
  free(put);
  return r;
}

bool gp__srv_step_own_gpus(const int *alloc_node, int n_alloc, const int *step_alloc, int n, int i) {
  int nd = alloc_node[step_alloc[i]], here = 0, tasks = 0;
  for (int k = 0; k < n; k++) here += alloc_node[step_alloc[k]] == nd;
  for (int t = 0; t < n_alloc; t++) tasks += alloc_node[t] == nd;
  return here == tasks;
}
