/* SPDX-License-Identifier: Apache-2.0 */
/* Placement (node_fit.c, placement.c, gang.c, shared.c, shared_node.c): where a job's tasks
 * go, all or nothing, and the starts it records. One task on one node is node_fit.c's (the
 * searches all ask it); shared GPUs (fractions, time-slices, MIG instances and dynamic MIG
 * plans) have their own state in shared.c. */
#ifndef GP_CORE_PLACE_H
#define GP_CORE_PLACE_H

#include "core/classify.h"

typedef struct gp__core_place {
  gp__core_vec starts;       /* gp_plan_start, in decision order */
  gp__core_vec migs;         /* gp_plan_mig: dynamic MIG re-partitions planned */
  /* Jobs this plan starts, per node (for backfill): chains of start indexes. */
  int *started_head;    /* per node: first entry or -1 (allocated on the first start) */
  int *started_next, *started_start;
  size_t started_n, started_cap;
  struct gp__core_shared *sh;      /* shared.c's state */
  uint64_t share_round;       /* shared placements made: the sharing policy's round */
} gp__core_place;

/* Placement (placement.c, gang.c; the request and one node: node_fit.c). */
void gp__core_place_done(gp__core_ctx *c);
void gp__core_req_init(gp__core_ctx *c, int j, gp__core_req *r);
/* Fills in a request of which only `job` is set, once. */
void gp__core_req_need(gp__core_ctx *c, gp__core_req *r);
/* Can task r go on node i, given `extra` GPUs (and cpu/mem) counted as freed? On true,
 * fills *f. */
bool gp__core_node_fit(gp__core_ctx *c, const gp__core_req *r, int node, uint32_t extra, int64_t extra_cpu,
                  int64_t extra_mem, gp__core_fit *f);
/* Best node for one task through the index, or false. */
bool gp__core_fit_task(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *f);
/* Places all tasks of a job or none; on true the resources are taken and fits[] filled
 * (r->tasks entries). With commit false the resources are given back before returning.
 * With r->spot_first, on that narrower class of nodes first.
 * A gang's tasks all get the same GPU model and kind (see gp__core_gang_rest). */
bool gp__core_place_job(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *fits, bool commit);
/* The request for a gang's other tasks once its first is placed at `first`: held to the
 * first task's GPU model, unless the job names several GPU types (then any of them will
 * do), and for whole GPUs to its kind (whole GPUs or time-slice replicas). */
void gp__core_gang_rest(const gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *first,
                        gp__core_req *rest);
/* Task t of the gang (fits[t]) was placed: rest->n_open counts it when it opened a node. */
void gp__core_gang_opened(gp__core_req *rest, const gp__core_fit *fits, int t);
/* An exact node count (gp__core_req.nodes): how many of the gang's tasks `node` must still
 * be able to hold for the rest to fit on the nodes left (1 on a node the gang uses; more on
 * one it would open), or -1 when the count forbids the node. */
int gp__core_gang_nodes_need(const gp__core_req *r, int node);
/* The GPUs of node a task of `want` GPUs takes among `avail` (NVLink domains first). */
uint32_t gp__core_choose_gpus(const gp__core_ctx *c, int node, uint32_t avail, int want);
/* Records a start in the plan and updates queues. fits: r->tasks entries. */
void gp__core_start_job(gp__core_ctx *c, const gp__core_req *r, const gp__core_fit *fits);

/* Fractions, memory shares, time-slices and MIG instances (shared.c; the node filters
 * below are node_fit.c's, gp__core_node_fit_shared is shared_node.c's). */
void gp__core_shared_setup(gp__core_ctx *c);
void gp__core_shared_done(gp__core_ctx *c);
bool gp__core_node_static_ok(const gp__core_ctx *c, const gp__core_req *r, int node);
bool gp__core_node_excl_ok(const gp__core_ctx *c, const gp__core_req *r, int node);
/* gp__core_node_static_ok but for --exclusive, which a preemption walk judges once it
 * knows what its victims free. */
bool gp__core_node_static_ok_any_excl(const gp__core_ctx *c, const gp__core_req *r, int node);
bool gp__core_node_fit_shared(gp__core_ctx *c, const gp__core_req *r, int node, gp__core_fit *f);
bool gp__core_fit_shared(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *f);
/* A whole-GPU task of one GPU on a timeslice replica (the fullest GPU with a free replica),
 * for when no exclusive or shared GPU fits it. */
bool gp__core_fit_replica(gp__core_ctx *c, const gp__core_req *r, gp__core_fit *f);
/* Dynamic MIG: a MIG job that found no free instance waits for a re-partition planned in
 * this step (claiming one of its new instances, or planning one). True when it does. */
bool gp__core_mig_wait(gp__core_ctx *c, gp__core_req *r);

#endif
