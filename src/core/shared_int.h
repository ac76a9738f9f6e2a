/* SPDX-License-Identifier: Apache-2.0 */
/* What shared.c (the search over the nodes with shared GPUs, dynamic MIG) and
 * shared_node.c (shared GPUs on one node) share: the step's shared-GPU state
 * (gp__core_place.sh) and the timeslice replica choice. Internal to those two files. */
#ifndef GP_CORE_SHARED_INT_H
#define GP_CORE_SHARED_INT_H

#include "core/mig.h"
#include "core/place.h"
#include "core/share/share.h"

struct gp__core_shared {
  int *nodes, n_nodes;       /* up nodes with shared, timeslice or MIG GPUs, view order */
  gp_share_mix *mix;         /* FGD / gpool policies: the pending fractional mix */
  gp_mig_demand *demand;     /* pending MIG demand by profile */
  int n_demand;
  uint8_t *planned;          /* per GPU: 1 = being re-partitioned in this plan */
  struct planned_inst { int node; const char *profile; } *insts; /* unclaimed new instances */
  size_t n_insts, cap_insts;
};

/* The node's fullest timeslice GPU with a free replica for r, or -1; *ret_free: its free
 * replicas. */
int gp__core_fullest_replica(const gp__core_ctx *c, const gp__core_req *r, int node, int *ret_free);

#endif
