/* SPDX-License-Identifier: Apache-2.0 */
/* Where a gang's tasks are, as each task is told (rendezvous.c): its rank among the tasks,
 * among those on its node and its node's rank, task 0's node address (MASTER_ADDR), and the
 * host files MPI launchers read. Pure but for the files it writes, so tests check every
 * layout. */
#ifndef GP_AGENT_RENDEZVOUS_H
#define GP_AGENT_RENDEZVOUS_H

#include <stddef.h>

#include "protocol/order.h"

typedef struct gp__agent_layout {
  int tasks, rank;           /* WORLD_SIZE, RANK */
  int local_rank, local_size; /* LOCAL_RANK, LOCAL_WORLD_SIZE: among the tasks on its node */
  int nodes, node_rank;      /* the gang's node count; NODE_RANK: nodes in the order of their
                                first task */
  const char *master;        /* task 0's node address (borrowed from the order or `self`) */
} gp__agent_layout;

/* The host of an agent URL ("http://10.0.0.5:7001" -> "10.0.0.5", "https://[fd00::5]:1" ->
 * "fd00::5"), or `dflt` when it has none. */
void gp__agent_url_host(const char *url, const char *dflt, char *buf, size_t size);

/* The layout of task o->task_index. A node's address is the order's `addrs` entry (its
 * name when the server sent none); without a host list (a server from before one was
 * sent) every task counts as on this node, whose address is `self`. */
void gp__agent_layout_of(const gp_proto_start *o, const char *self, gp__agent_layout *ret);

/* Writes the gang's nodes, one line each with its task count, in the order of their first
 * task: "ADDR slots=N" to `ompi` (OpenMPI's hostfile) and "ADDR:N" to `mpich`. 0, or -1
 * when a file could not be written. */
int gp__agent_hostfiles_write(const gp_proto_start *o, const char *self, const char *ompi,
                              const char *mpich);

#endif
