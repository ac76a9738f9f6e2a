/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's autoscaling (gp_replay_config.scale): the engine asks the core which nodes
 * to create and delete (core/scale.h, the server's own decisions) in passes at most one
 * autoscaling interval apart, and this module carries them out on the virtual cluster. A
 * create call's nodes come up after the provider delay in free node slots past the
 * fleet's; a delete removes an empty node at once; a reclaimed spot provider node is gone
 * and scale-up may replace it. Each provider node is paid for from its create call to its
 * deletion through the replay's cost ledger. Internal to src/sim/replay. */
#ifndef GP_SIM_REPLAY_SCALE_H
#define GP_SIM_REPLAY_SCALE_H

#include <stdbool.h>

#include "core/plan.h"
#include "sim/replay/sim.h"

/* Sets up autoscaling when the config has templates (s->scale stays NULL otherwise) and
 * the catalogue the replay is priced with (s->prices: the config's prices with the
 * templates' own prices added; NULL when nothing has a price). */
void gp__sim_scale_start(sim *s);
void gp__sim_scale_free(sim *s);

/* Adds the templates to a view of the replay's nodes. */
void gp__sim_scale_view(const sim *s, gp_view *v);

/* After a step of an autoscaling pass (made with its pending list) and before its plan is
 * applied: the core's proposal added to the plan. */
int gp__sim_scale_propose(sim *s, const gp_view *v, gp_plan *plan, gp_time now);
/* After the plan is applied: create calls and deletions. GP_ESTATE when a deletion names
 * a node that is not an empty provider node. */
int gp__sim_scale_apply(sim *s, const gp_plan *plan, gp_time now);

/* The engine's news: a job became pending (a pass may be due); node `node` got its first
 * placement, or lost its last one at t. */
void gp__sim_scale_pending(sim *s, gp_time t);
void gp__sim_scale_node_busy(sim *s, int node);
void gp__sim_scale_node_empty(sim *s, int node, gp_time t);

/* Handles an autoscaling event (a node up, a pass due); true when the core should be
 * called now. */
bool gp__sim_scale_event(sim *s, const gp__sim_event *e);

/* A spot interruption took node `node` at t (its jobs are already requeued): true when it
 * was a provider node, which is then gone, else false (the fleet's node is replaced). */
bool gp__sim_scale_reclaimed(sim *s, int node, gp_time t);

/* Nodes are being created, a pass is due or an empty provider node is yet to be deleted:
 * pending jobs may yet start. */
bool gp__sim_scale_busy(const sim *s);

/* The figures into s->r->scale, provider nodes that still exist counted up to t_end. */
void gp__sim_scale_finish(sim *s, gp_time t_end);

#endif
