/* SPDX-License-Identifier: Apache-2.0 */
/* Placement policies for shared GPUs: given one candidate node's free resources and one
 * request, say whether the request fits there, how good the placement is, and which GPU(s)
 * it would use. The scheduler core (and `gpool sim frag`) call gp_share_score() once per
 * candidate node and keep the node with the highest score; gp_share_pick() does that loop,
 * with a deterministic, seeded tie-break.
 *
 * Policies (gp_share_policy in core/model.h):
 *   RANDOM      every feasible node scores the same; the seeded tie-break picks one.
 *   DOTPRODUCT  prefer the node whose free (CPU, GPU) vector is least aligned with the request.
 *   GPUPACKING  prefer partly used GPUs, then nodes with used GPUs, then idle nodes.
 *   BESTFIT     prefer the node with the least CPU+GPU left after the placement.
 *   FGD         fragmentation gradient descent (Weng et al., ATC'23): prefer the placement
 *               that raises the node's expected fragmentation for the workload mix least.
 *   GPOOL       gpool's default: FGD, plus CPU-only work onto nodes whose GPUs are taken,
 *               GPU that the node's CPU could not feed counted as (light) fragment, and
 *               work kept off GPU models that the requests limited to them need (policy.c,
 *               docs).
 *
 * Units: compute in milli-GPU (1000 = a whole GPU), memory in MiB, CPU in milli-cores.
 * The functions are pure (no clock, no I/O); the only memory allocated is a gp_share_mix. */
#ifndef GP_CORE_SHARE_SHARE_H
#define GP_CORE_SHARE_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "util/error.h"

/* Free resources of one candidate node, as the caller sees them right now (after the
 * placements it has already decided in this cycle). GPUs not usable for sharing (failed,
 * drained, MIG, exclusive and busy) should be given 0 free milli. */
typedef struct gp_share_node {
  const char *model;                        /* GPU model; NULL or "": none (CPU node) */
  int n_gpus;                               /* 0..GP_MAX_NODE_GPUS */
  int gpu_free_milli[GP_MAX_NODE_GPUS];     /* 0..1000 per GPU */
  int64_t gpu_free_mem_mib[GP_MAX_NODE_GPUS]; /* free memory per GPU; checked only when a
                                                 request asks for gpu_mem_mib */
  int64_t cpu_free_milli;
  int64_t mem_free_mib;
} gp_share_node;

/* One task's request. A fraction: n_gpus = 1, gpu_milli 1..999. Whole GPUs: n_gpus >= 1,
 * gpu_milli = 1000. CPU only: n_gpus = 0 (gpu_milli ignored). A request by memory
 * (`--gpu-mem 20G`) is turned by the caller into gpu_milli for the candidate's model
 * (ceil(mem * 1000 / gpu capacity)) plus gpu_mem_mib, so each GPU must have both free. */
typedef struct gp_share_req {
  int n_gpus;
  int gpu_milli;                  /* per GPU: 1..1000 */
  int64_t gpu_mem_mib;            /* per GPU; 0: not asked */
  int64_t cpu_milli;
  int64_t mem_mib;
  int n_models;
  const char *const *models;      /* accepted GPU models; none: any */
} gp_share_req;

/* The milli-GPU share a request by memory (`--gpu-mem`) needs on a GPU with gpu_mem_mib of
 * memory: ceil(mem_mib * 1000 / gpu_mem_mib), at least 1. GP_EINVAL when the GPU has no
 * memory figure or the request does not fit in one GPU (more than gpu_mem_mib). */
int gp_share_milli_for_mem(int64_t mem_mib, int64_t gpu_mem_mib, int *ret_milli, gp_err *err);

/* The workload mix FGD measures fragmentation against: request shapes with their
 * popularity. Build it from what you expect to arrive (the simulator: the whole trace;
 * the core: pending requests plus recent arrivals), add each request (equal shapes are
 * merged), then gp_share_mix_finish(). The mix copies the model lists it is given. */
typedef struct gp_share_mix gp_share_mix;

gp_share_mix *gp_share_mix_new(void);
void gp_share_mix_free(gp_share_mix *mix); /* accepts NULL */
/* Adds `weight` (> 0, e.g. 1 per request seen) to the shape of *req. GP_EINVAL for a
 * malformed request, GP_ELIMIT past 4096 distinct shapes. */
int gp_share_mix_add(gp_share_mix *mix, const gp_share_req *req, double weight, gp_err *err);
/* Normalises popularities to sum to 1 and keeps the most popular shapes covering
 * `popularity_pct` percent of the weight (the paper keeps 95; 100 keeps all). Call once
 * after the last add and before scoring; adding afterwards is GP_ESTATE. */
int gp_share_mix_finish(gp_share_mix *mix, double popularity_pct, gp_err *err);
/* The cluster's GPUs of one GPU model (call once per model, before finish): what gpool's
 * placement weighs model-limited demand against (rule 4 in policy.c). GP_EINVAL for an
 * empty model or a negative count, GP_ESTATE after finish, GP_ELIMIT past 256 models. */
int gp_share_mix_set_capacity(gp_share_mix *mix, const char *model, double gpus, gp_err *err);
/* A model's pressure: the share of the mix's GPU demand limited to models that names it
 * (a request naming k models counts 1/k toward each) over the model's share of the GPUs
 * given by gp_share_mix_set_capacity. 1: the requests that need this model ask as large a
 * part of the demand as the model is of the cluster. 0 when nothing names the model or no
 * capacity was given. */
double gp_share_mix_pressure(const gp_share_mix *mix, const char *model);
int gp_share_mix_count(const gp_share_mix *mix);
/* Shape i (0-based, most popular first) and its popularity in [0,1]. */
const gp_share_req *gp_share_mix_shape(const gp_share_mix *mix, int i, double *ret_popularity);

/* Expected fragmentation of a node for the mix, in milli-GPU (the paper's F_n(M)): for each
 * shape, the node's free GPU milli that this shape could not use, weighted by popularity. */
double gp_share_node_frag(const gp_share_mix *mix, const gp_share_node *node);

/* How gp_share_pick breaks ties between equally scored nodes. */
typedef enum gp_share_tie {
  GP_SHARE_TIE_HASH = 0, /* a hash of (seed, round, node index): spreads ties reproducibly */
  GP_SHARE_TIE_FIRST,    /* the lowest node index (the paper's simulator: first node name);
                            ignored by RANDOM, whose every node ties */
} gp_share_tie;

/* Everything a policy needs besides the node and the request. */
typedef struct gp_share_ctx {
  gp_share_policy policy;
  const gp_share_mix *mix;  /* FGD and GPOOL: required (finished); others ignore it */
  uint64_t seed;            /* for the tie-break (and so for RANDOM) */
  uint64_t round;           /* the caller increments it per placement decision, so
                               ties break differently each time but reproducibly */
  gp_share_tie tie;
} gp_share_ctx;

typedef struct gp_share_choice {
  bool fits;            /* false: the request cannot be placed on this node */
  double score;         /* higher is better; comparable across nodes for one request */
  uint32_t gpu_mask;    /* the GPUs the request would use (bit i = GPU i) */
} gp_share_choice;

/* Scores one node. Returns 0 and fills *ret (fits may be false), or GP_EINVAL for a
 * malformed request or node (details in *err). Deterministic: same inputs, same result. */
int gp_share_score(const gp_share_ctx *ctx, const gp_share_node *node,
                   const gp_share_req *req, gp_share_choice *ret, gp_err *err);

/* True when the node's model is one of the request's (or the request names none). */
bool gp_share_model_ok(const gp_share_node *node, const gp_share_req *req);

/* Scores every node and picks the best; ties (equal score) are broken as ctx->tie says,
 * so equal inputs give equal picks. Returns 0 with *ret_node
 * set to the chosen index and *ret filled, GP_ENOENT when no node fits, or GP_EINVAL. */
int gp_share_pick(const gp_share_ctx *ctx, const gp_share_node *nodes, int n_nodes,
                  const gp_share_req *req, int *ret_node, gp_share_choice *ret, gp_err *err);

/* The tie-break key gp_share_pick uses for node `index`: the larger wins (exposed for
 * callers that cache scores and pick themselves, like the simulator). */
uint64_t gp_share_tiebreak(const gp_share_ctx *ctx, int index);

#endif
