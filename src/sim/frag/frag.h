/* SPDX-License-Identifier: Apache-2.0 */
/* The FGD paper's fragmentation experiment (Weng et al., ATC'23), run through gpool's
 * placement policies (core/share): shuffle the pods with the seed, resample them with
 * replacement until the GPU they ask reaches 1.3 x the cluster's GPU capacity (or drop
 * random pods when the list asks more), let them arrive one by one and never leave, skip
 * (and count) a pod that fits nowhere, and record after each 1% of capacity arrived the
 * allocated share of all GPU capacity. See traces/README.md and docs/sharing.md. */
#ifndef GP_SIM_FRAG_FRAG_H
#define GP_SIM_FRAG_FRAG_H

#include <stdint.h>

#include "core/model.h"
#include "sim/frag/trace.h"
#include "util/error.h"

#define GP_FRAG_MAX_PCT 200 /* highest arrived percentage recorded */

typedef struct gp_frag_opts {
  gp_share_policy policy;
  uint64_t seed;
  double inflate;         /* arrived demand target, x cluster GPU capacity (1.3) */
  double popularity_pct;  /* the FGD workload mix keeps the shapes covering this much (95) */
} gp_frag_opts;

void gp_frag_opts_init(gp_frag_opts *o); /* FGD, seed 42, 1.3, 95 */

typedef struct gp_frag_result {
  int max_pct;                          /* points 0..max_pct are filled */
  double alloc_pct[GP_FRAG_MAX_PCT + 1]; /* allocated GPU milli / total, in percent */
  int64_t gpu_capacity_milli;
  int pods_arrived, pods_failed;
  int64_t gpu_arrived_milli, gpu_failed_milli;
} gp_frag_result;

/* Runs one (trace, policy, seed) experiment. Deterministic. 0, or GP_EINVAL for bad
 * options (details in err). */
int gp_frag_run(const gp_frag_trace *t, const gp_frag_opts *o, gp_frag_result *ret, gp_err *err);

#endif
