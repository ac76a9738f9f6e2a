/* SPDX-License-Identifier: Apache-2.0 */
/* A gang's layout for each task (rendezvous.h): ranks, node ranks, MASTER_ADDR, host files.
 * The start order names every task's node (`hosts`) and that node's address (`addrs`) by
 * task index; tasks on one node share its name. */
#include "agent/rendezvous.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void gp__agent_url_host(const char *url, const char *dflt, char *buf, size_t size) {
  const char *u = url ? strstr(url, "://") : NULL;
  snprintf(buf, size, "%s", dflt);
  if (!u) return;
  u += 3;
  size_t len = *u == '[' ? strcspn(++u, "]") : strcspn(u, ":/");
  if (len > 0 && len < size) snprintf(buf, size, "%.*s", (int)len, u);
}

static bool listed(const gp_proto_start *o) {
  return o->n_hosts == o->tasks && o->task_index < o->n_hosts;
}

static const char *task_addr(const gp_proto_start *o, int t) {
  return o->n_addrs == o->n_hosts && t < o->n_addrs ? o->addrs[t] : o->hosts[t];
}

/* Is task t the first of the gang on its node? */
static bool first_on_node(const gp_proto_start *o, int t) {
  for (int u = 0; u < t; u++)
    if (strcmp(o->hosts[u], o->hosts[t]) == 0) return false;
  return true;
}

void gp__agent_layout_of(const gp_proto_start *o, const char *self, gp__agent_layout *l) {
  memset(l, 0, sizeof *l);
  l->tasks = o->tasks;
  l->rank = o->task_index;
  l->master = self;
  if (!listed(o)) {
    l->local_rank = o->task_index;
    l->local_size = o->tasks;
    l->nodes = 1;
    return;
  }
  const char *mine = o->hosts[o->task_index];
  l->master = task_addr(o, 0);
  int mine_first = -1; /* the first task on this task's node */
  for (int t = 0; t < o->n_hosts; t++) {
    bool first = first_on_node(o, t), here = strcmp(o->hosts[t], mine) == 0;
    if (here && mine_first < 0) mine_first = t;
    if (first && mine_first < 0) l->node_rank++; /* a node whose first task comes before ours */
    l->nodes += first;
    if (here) {
      if (t < o->task_index) l->local_rank++;
      l->local_size++;
    }
  }
}

int gp__agent_hostfiles_write(const gp_proto_start *o, const char *self, const char *ompi,
                              const char *mpich) {
  FILE *f = fopen(ompi, "we"), *g = fopen(mpich, "we");
  bool ok = f && g;
  if (!listed(o)) {
    if (f) fprintf(f, "%s slots=%d\n", self, o->tasks);
    if (g) fprintf(g, "%s:%d\n", self, o->tasks);
  } else {
    for (int t = 0; t < o->n_hosts; t++) {
      if (!first_on_node(o, t)) continue;
      int slots = 0;
      for (int u = t; u < o->n_hosts; u++) slots += strcmp(o->hosts[u], o->hosts[t]) == 0;
      if (f) fprintf(f, "%s slots=%d\n", task_addr(o, t), slots);
      if (g) fprintf(g, "%s:%d\n", task_addr(o, t), slots);
    }
  }
  if (f && fclose(f) != 0) ok = false;
  if (g && fclose(g) != 0) ok = false;
  return ok ? 0 : -1;
}
