/* SPDX-License-Identifier: Apache-2.0 */
/* Pricing a replay (gp_replay_config.prices): the engine records each run of each job on
 * each node as an interval (its GPUs and its share of each); at the end one "up" interval
 * per node over the whole replay and then every job interval go through the ledger's
 * report (src/ledger/report.h) grouped by queue, and the money figures land in the result.
 * It is the accumulator the server's reports use, so a replay is priced by the same rules:
 * shares, price changes, commitments, and conservation (jobs + idle + unused commitment =
 * fleet). */
#ifndef GP_SIM_REPLAY_COST_H
#define GP_SIM_REPLAY_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "ledger/prices.h"
#include "sim/replay/replay.h"

typedef struct gp__sim_cost gp__sim_cost;

gp__sim_cost *gp__sim_cost_new(void);
void gp__sim_cost_free(gp__sim_cost *c); /* accepts NULL */

/* A provider node (autoscaling) that exists from `start`, the create call: paid for from
 * then to gp__sim_cost_node_end (or the end of the priced period) at the price of
 * `price_model` (the template's own price key, or its GPU model) on its capacity type.
 * `shape` gives its model, GPUs and capacity; strings are borrowed until the finish.
 * Returns its node id: ids 0 .. n_fleet - 1 are the fleet's nodes, then one per call. */
int gp__sim_cost_node_new(gp__sim_cost *c, int n_fleet, const gp_node *shape, const char *name,
                          const char *price_model, gp_time start);
void gp__sim_cost_node_end(gp__sim_cost *c, int id, gp_time end);

/* One run of job `job` (its attempt-th, from 1) on node id `node` (a fleet index or an id
 * from gp__sim_cost_node_new): the GPUs of `gpu_mask`,
 * each held `gpu_milli` / 1000, over [start, end). `user` is borrowed until
 * gp__sim_cost_finish (the trace's names outlive the replay). */
void gp__sim_cost_add(gp__sim_cost *c, int job, int attempt, int queue, const char *user,
                      int node, uint32_t gpu_mask, int gpu_milli, gp_time start, gp_time end);

/* A stretch of a run held idle (released false) or freed by the idle policy (released
 * true: the GPUs the run would have held idle after the policy acted), priced at the
 * finish as the job's GPU-hours would be, so the money the idle policy frees is the job
 * cost it takes off the idle stretches. */
void gp__sim_cost_add_idle(gp__sim_cost *c, bool released, int job, int queue, const char *user,
                           int node, uint32_t gpu_mask, int gpu_milli, gp_time start,
                           gp_time end);

/* Node `node` is not paid for over [start, end) (a reclaimed spot node until its
 * replacement is up); the stretch is clipped to the priced period. Stretches of one node
 * are recorded in time order and do not overlap. */
void gp__sim_cost_node_gap(gp__sim_cost *c, int node, gp_time start, gp_time end);

/* Prices what was recorded over [from, to) with `prices` (borrowed) on `fleet` and the
 * provider nodes, and fills r->cost, r->queues[].cost / cost_unknown, r->idle's money and
 * the provider nodes' cost in r->scale (strings in r->arena). GP_ESTATE when the
 * ledger finds the recorded intervals inconsistent with the fleet (a bug in the engine). */
int gp__sim_cost_finish(gp__sim_cost *c, const gp_prices *prices, const gp_fleet *fleet,
                        const gp_replay_queues *queues, gp_time from, gp_time to,
                        gp_replay_result *r, gp_err *err);

#endif
