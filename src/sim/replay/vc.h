/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to src/sim/replay: the "vc,node num" file of virtual-cluster sizes
 * (traces/philly/philly_vc_nodes.csv), read for the fleet and the queues. */
#ifndef GP_SIM_REPLAY_VC_H
#define GP_SIM_REPLAY_VC_H

#include "util/error.h"

typedef struct gp__sim_vc_entry {
  char name[64];
  int nodes;
  int line;
} gp__sim_vc_entry;

/* Reads the file (an optional header, then "name,nodes" rows). Returns 0 and a malloc'd
 * array, or GP_EIO/GP_EINVAL/GP_ELIMIT naming the file and line. */
int gp__sim_read_vc_file(const char *path, gp__sim_vc_entry **ret, int *ret_n, gp_err *err);

#endif
