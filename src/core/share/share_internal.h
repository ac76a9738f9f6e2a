/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the files of src/core/share (not for other modules): the mix's
 * layout and the fragmentation of a hypothetical node state. */
#ifndef GP_CORE_SHARE_INTERNAL_H
#define GP_CORE_SHARE_INTERNAL_H

#include <stddef.h>

#include "core/share/share.h"

struct gp_share_mix {
  int n;
  size_t shape_cap, weight_cap;
  gp_share_req *shape; /* owns models[] and their strings */
  double *weight;      /* popularity; sums to 1 once finished */
  bool finished;
};

int gp_share_req_check(const gp_share_req *req, gp_err *err);

/* F_n(M) of `node` with its GPUs' free milli replaced by free_milli[] and its free CPU by
 * cpu_free (the state after a hypothetical placement). */
double gp_share_frag_of(const gp_share_mix *mix, const gp_share_node *node, const int *free_milli,
                        int64_t cpu_free);

#endif
