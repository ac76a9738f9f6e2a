/* SPDX-License-Identifier: Apache-2.0 */
/* Spot-aware placement per queue (spot.c): a queue's preference for spot capacity
 * (neutral, prefer, avoid, never) and its cap on the share of its GPUs on spot, as they
 * apply to its jobs' placements. A leaf takes its own settings; a setting it leaves unset
 * (neutral, no share) comes from the nearest ancestor that sets it. The job's own
 * allow_spot is checked apart (placement.c): no queue setting lets a job on spot that does
 * not allow it. Internal to src/core. */
#ifndef GP_CORE_SPOT_H
#define GP_CORE_SPOT_H

#include "core/classify.h"

/* Per tree queue: the settings in force, the GPUs held on spot start at 0 (classification
 * adds running jobs'). Before classification. */
void gp__core_spot_setup(gp__core_ctx *c);
/* What of job j's queue settings changes where it may go (a part of its request shape):
 * 0 when none does. */
uint32_t gp__core_spot_key(const gp__core_ctx *c, int j);
/* May job j never use spot nodes (it does not allow them, or its queue refuses them)? */
bool gp__core_spot_refused(const gp__core_ctx *c, int j);
/* Why job j, which allows spot, may not use it now (GP__SPOT_WHY_*): its queue refuses
 * spot, or is at its share of GPUs there (by what the queue holds now). */
int gp__core_spot_why(const gp__core_ctx *c, int j);
/* Fills r's spot_deny, spot_first and spot_why from its queue's settings and, for the cap,
 * the GPUs its queue holds now. */
void gp__core_spot_req(gp__core_ctx *c, gp__core_req *r);
/* Adds GPUs held on spot nodes to leaf and its ancestors (negative to remove). */
void gp__core_spot_add_held(gp__core_ctx *c, int leaf, double gpus);
/* A start: its GPUs on spot nodes count for its queue (fits: r->tasks entries). */
void gp__core_spot_started(gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *fits);
/* May r use spot nodes at all? */
static inline bool gp__core_spot_tried(const gp__core_req *r) { return !(r->spot_deny & GP__DENY_SPOT); }
/* Does node i's capacity class suit r (spot_deny)? */
static inline bool gp__core_spot_node_ok(const gp__core_ctx *c, const gp__core_req *r, int node) {
  bool spot = c->view->nodes[node].capacity == GP_CAP_SPOT;
  return !(r->spot_deny & (spot ? GP__DENY_SPOT : GP__DENY_OTHER));
}
/* The sentence of a job that waits only because its queue keeps it off spot (why:
 * GP__SPOT_WHY_*), or NULL. */
const char *gp__core_spot_message(int why);

#endif
