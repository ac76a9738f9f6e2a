/* SPDX-License-Identifier: Apache-2.0 */
/* The placement policies for shared GPUs (see share.h for what each prefers).
 *
 * The five published policies follow the definitions of the FGD paper's simulator
 * (Weng et al., ATC'23, and its Kubernetes scheduler plugins), including their integer
 * scores 0..100: the simulator ranks nodes by those integers and gives ties to the first
 * node, and that coarseness is part of the published results, so a faithful reproduction
 * keeps it (GP_SHARE_TIE_FIRST). GPU choice inside a node is "best fit" (the fitting GPU
 * with the least free room) for BestFit, GpuPacking and DotProduct, random for Random, and
 * the fragmentation-minimising GPU for FGD. Whole-GPU requests take the lowest-numbered
 * idle GPUs.
 *
 * gpool's own policy (GPOOL) is FGD plus four rules, each measured on the paper's protocol
 * (score_gpool below; docs/sharing.md and docs/performance.md have the figures). The
 * normalising constants (128 cores, 8 GPUs) are the paper's. */
#include <math.h>
#include <string.h>

#include "core/share/share.h"
#include "core/share/share_internal.h"

#define MAX_SPEC_CPU 128000.0 /* milli-CPU: the paper simulator's normaliser */
#define MAX_SPEC_GPU 8000.0   /* milli-GPU: 8 GPUs */
/* gpool's rule 4: a model whose pressure (share.h) is above PRESSURE_FREE costs
   PRESSURE_LEVELS FGD levels per unit of pressure above it (measured on the workload
   families, seeds 1-10: 3 to 20 levels per unit and a free share of 0.3 to 0.8 tried). */
#define PRESSURE_FREE 0.5
#define PRESSURE_LEVELS 6.0
/* gpool's rule 2: GPU that a shape could use but the node's CPU could not feed counts as
   fragment at this weight per milli-GPU, times 1 + the multi-GPU share of the mix's GPU
   demand (measured on the 16 workload-family members and the four openb traces: 1 and
   0.15 lose the multi-GPU members; 0.02-0.05 win most members, 0.03 all of them; the
   factor lifts gpool - FGD on openb's multigpu50 from -0.08 / -0.07 to +0.00 / +0.00 at
   seeds 42-51 and from +0.01 / +0.00 to +0.06 / +0.06 at seeds 100-199). */
#define CPU_STRAND 0.03

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t gp_share_tiebreak(const gp_share_ctx *ctx, int index) {
  if (ctx->tie == GP_SHARE_TIE_FIRST && ctx->policy != GP_SHARE_POLICY_RANDOM)
    return UINT64_MAX - (uint64_t)(uint32_t)index;
  return splitmix64(splitmix64(ctx->seed ^ 0x5eedULL) ^ splitmix64(ctx->round) ^
                    ((uint64_t)(uint32_t)index * 0x2545f4914f6cdd1dULL));
}

int gp_share_milli_for_mem(int64_t mem_mib, int64_t gpu_mem_mib, int *ret_milli, gp_err *err) {
  if (gpu_mem_mib <= 0)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_mem", "the GPU's memory is unknown");
  if (mem_mib <= 0 || mem_mib > gpu_mem_mib)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_mem",
                      "%lld MiB does not fit one GPU of %lld MiB", (long long)mem_mib,
                      (long long)gpu_mem_mib);
  int64_t m = (mem_mib * GP_GPU_MILLI + gpu_mem_mib - 1) / gpu_mem_mib;
  *ret_milli = m < 1 ? 1 : (int)m;
  return 0;
}

static bool gpu_fits(const gp_share_node *node, const gp_share_req *req, int g) {
  if (node->gpu_free_milli[g] < req->gpu_milli) return false;
  if (req->gpu_mem_mib > 0 && node->gpu_free_mem_mib[g] < req->gpu_mem_mib) return false;
  return true;
}

static int64_t gpu_free_total(const gp_share_node *node) {
  int64_t t = 0;
  for (int g = 0; g < node->n_gpus; g++) t += node->gpu_free_milli[g];
  return t;
}

/* The lowest-numbered GPUs with room, n of them (whole GPUs: idle ones). */
static uint32_t first_fit_mask(const gp_share_node *node, const gp_share_req *req) {
  uint32_t mask = 0;
  int need = req->n_gpus;
  for (int g = 0; g < node->n_gpus && need > 0; g++) {
    if (gpu_fits(node, req, g)) mask |= 1u << g, need--;
  }
  return need == 0 ? mask : 0;
}

/* The fitting GPU with the least free room; lowest index on ties. -1: none. */
static int tightest_gpu(const gp_share_node *node, const gp_share_req *req) {
  int best = -1;
  for (int g = 0; g < node->n_gpus; g++) {
    if (gpu_fits(node, req, g) &&
        (best < 0 || node->gpu_free_milli[g] < node->gpu_free_milli[best]))
      best = g;
  }
  return best;
}

static bool is_fraction(const gp_share_req *req) {
  return req->n_gpus == 1 && req->gpu_milli < GP_GPU_MILLI;
}

/* The default GPU choice: tightest fit for a fraction, first idle GPUs otherwise. */
static uint32_t best_gpu_mask(const gp_share_node *node, const gp_share_req *req) {
  if (req->n_gpus == 0) return 0;
  if (is_fraction(req)) {
    int g = tightest_gpu(node, req);
    return g < 0 ? 0 : 1u << g;
  }
  return first_fit_mask(node, req);
}

static double sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}

static void apply(const gp_share_node *node, const gp_share_req *req, uint32_t mask, int *free_after) {
  memcpy(free_after, node->gpu_free_milli, sizeof(int) * (size_t)node->n_gpus);
  for (int g = 0; g < node->n_gpus; g++) {
    if (mask & (1u << g)) free_after[g] -= req->gpu_milli;
  }
}

/* The weight of CPU-stranded GPU in the policy's fragmentation measure (0: FGD's). The
 * weight is light because shapes asking less CPU may still use that GPU; the more of the
 * demand multi-GPU shapes ask (each needing a set of GPUs and their CPU at once), the
 * fewer such shapes there are to use it, so the heavier the weight. */
static double strand_weight(const gp_share_ctx *ctx) {
  if (ctx->policy != GP_SHARE_POLICY_GPOOL) return 0;
  return CPU_STRAND * (1.0 + (ctx->mix ? ctx->mix->multi_share : 0));
}

/* The fragmentation change of placing `req` on the GPUs of `mask`, with the node's access
 * vector and its current fragmentation `before` (milli-GPU; positive = less fragmented). */
static double frag_delta(const gp_share_ctx *ctx, const gp_share_node *node, const bool *acc,
                         double before, const gp_share_req *req, uint32_t mask) {
  int after[GP_MAX_NODE_GPUS];
  apply(node, req, mask, after);
  return before - gp_share_frag_acc(ctx->mix, acc, node->n_gpus, after,
                                    node->cpu_free_milli - req->cpu_milli, strand_weight(ctx));
}

/* FGD's node score: the fragmentation decrease through a sigmoid, as an integer 0..100
 * (the paper's simulator ranks nodes by this integer). */
static double fgd_level(double delta) {
  return floor(sigmoid(delta / 1000.0) * 100.0);
}

/* FGD as published: for a fraction, the GPU with the best (integer) score, the lowest
 * index on ties; whole GPUs: the lowest-numbered idle ones. GPUs with equal free room give
 * equal scores, so only the first of each is evaluated. */
static void score_fgd(const gp_share_ctx *ctx, const gp_share_node *node, const gp_share_req *req,
                      const bool *acc, double before, gp_share_choice *ret) {
  if (!is_fraction(req)) {
    ret->gpu_mask = first_fit_mask(node, req);
    ret->score = fgd_level(frag_delta(ctx, node, acc, before, req, ret->gpu_mask));
    return;
  }
  bool have = false;
  for (int g = 0; g < node->n_gpus; g++) {
    if (!gpu_fits(node, req, g)) continue;
    bool seen = false;
    for (int h = 0; h < g && !seen; h++)
      seen = gpu_fits(node, req, h) && node->gpu_free_milli[h] == node->gpu_free_milli[g] &&
             node->gpu_free_mem_mib[h] == node->gpu_free_mem_mib[g];
    if (seen) continue;
    double sc = fgd_level(frag_delta(ctx, node, acc, before, req, 1u << g));
    if (!have || sc > ret->score) ret->score = sc, ret->gpu_mask = 1u << g, have = true;
  }
}

/* gpool's default. Four changes to FGD, each measured on the paper's protocol (see
 * docs/sharing.md):
 * 1. CPU-only requests go where the GPUs are already taken (least free GPU first): CPU used
 *    there strands no GPU, whereas FGD sees no fragmentation change for them, ties them
 *    all and piles them on the first nodes, whose GPUs then lack CPU.
 * 2. GPU stranded by CPU counts as fragment, lightly: where a shape fits, the GPU of the
 *    copies of it that the node's GPUs could hold beyond those its free CPU can feed is
 *    added at CPU_STRAND x (1 + the multi-GPU share of the mix's GPU demand) per
 *    milli-GPU. FGD counts a node's GPU as lost to a shape only
 *    when not one copy fits, so it drains a node's CPU beside free GPUs as readily as
 *    elsewhere; the light weight says that other shapes, asking less CPU, may still use
 *    that GPU. (Keeping idle nodes whole when a used node scores the same, tried beside
 *    it, lost on the GPU-sharing members: docs/performance.md.)
 * 3. Fragmentation changes are compared at FGD's resolution (1/100 of the sigmoid), not
 *    exactly: ranking by the exact change spreads work over many nodes, which we measured
 *    to cost ~0.8 points of allocation; near-equal placements are left to the
 *    caller's tie rule, which consolidates.
 * 4. A GPU model that the requests limited to it need (their share of the demand near or
 *    above the model's share of the GPUs) costs levels, the more the scarcer: work that
 *    could run on another model leaves it to them, and a request limited to that model
 *    alone pays the same on every node it can use, so its choice is unchanged. FGD sees
 *    a model's scarcity only as a fragment on nodes others cannot use. */
static void score_gpool(const gp_share_ctx *ctx, const gp_share_node *node, const gp_share_req *req,
                        const bool *acc, double before, gp_share_choice *ret) {
  if (req->n_gpus == 0) {
    double delta = frag_delta(ctx, node, acc, before, req, 0);
    double cpu_left = (double)(node->cpu_free_milli - req->cpu_milli) / MAX_SPEC_CPU;
    ret->score = -(double)gpu_free_total(node) / GP_GPU_MILLI + delta * 1e-6 + cpu_left * 1e-3;
    ret->gpu_mask = 0;
    return;
  }
  score_fgd(ctx, node, req, acc, before, ret);
  double pressure = gp_share_mix_pressure(ctx->mix, node->model);
  if (pressure > PRESSURE_FREE) ret->score -= PRESSURE_LEVELS * (pressure - PRESSURE_FREE);
}

static void score_bestfit(const gp_share_node *node, const gp_share_req *req, gp_share_choice *ret) {
  double cpu_left = (double)(node->cpu_free_milli - req->cpu_milli);
  double gpu_left = (double)(gpu_free_total(node) - (int64_t)req->n_gpus * req->gpu_milli);
  double s = cpu_left / MAX_SPEC_CPU * 0.5 + gpu_left / MAX_SPEC_GPU * 0.5;
  ret->score = floor((1.0 - s) * 100.0);
  ret->gpu_mask = best_gpu_mask(node, req);
}

static void score_dotproduct(const gp_share_node *node, const gp_share_req *req,
                             gp_share_choice *ret) {
  double dot = ((double)node->cpu_free_milli / MAX_SPEC_CPU) * ((double)req->cpu_milli / MAX_SPEC_CPU) +
               ((double)gpu_free_total(node) / MAX_SPEC_GPU) *
                   ((double)req->n_gpus * req->gpu_milli / MAX_SPEC_GPU);
  ret->score = floor(100.0 * (1.0 - dot / 2.0));
  ret->gpu_mask = best_gpu_mask(node, req);
}

/* Partly used GPUs first (the less room left on them the better), then nodes that would
 * open idle GPUs but already run something, then idle nodes. */
static void score_gpupacking(const gp_share_node *node, const gp_share_req *req,
                             gp_share_choice *ret) {
  ret->gpu_mask = best_gpu_mask(node, req);
  if (req->n_gpus == 0) {
    ret->score = 0;
    return;
  }
  int idle = 0;
  for (int g = 0; g < node->n_gpus; g++) idle += node->gpu_free_milli[g] == GP_GPU_MILLI;
  if (idle == node->n_gpus) {
    double s = 100 / 3 - idle;
    ret->score = s > idle ? s : idle;
    return;
  }
  /* The GPUs a best-fit walk over increasing free room would use. */
  int order[GP_MAX_NODE_GPUS], n = node->n_gpus;
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = 1; i < n; i++) {
    int v = order[i], j = i - 1;
    while (j >= 0 && node->gpu_free_milli[order[j]] > node->gpu_free_milli[v]) order[j + 1] = order[j], j--;
    order[j + 1] = v;
  }
  int need = req->n_gpus, idle_used = 0;
  int64_t free_ratio = 0;
  for (int i = 0; i < n && need > 0; i++) {
    int g = order[i];
    if (!gpu_fits(node, req, g)) continue;
    need--;
    if (node->gpu_free_milli[g] == GP_GPU_MILLI) idle_used++;
    free_ratio += (int64_t)node->gpu_free_milli[g] * 100 / GP_GPU_MILLI;
  }
  if (idle_used > 0) {
    double s = 100 / 2 - idle_used;
    ret->score = s > 100 / 3 ? s : 100 / 3;
    return;
  }
  double s = (double)(100 - free_ratio / 10);
  ret->score = s > 100 / 2 ? s : 100 / 2;
}

static void score_random(const gp_share_ctx *ctx, const gp_share_node *node, const gp_share_req *req,
                         gp_share_choice *ret) {
  ret->score = 0;
  if (!is_fraction(req)) {
    ret->gpu_mask = first_fit_mask(node, req);
    return;
  }
  uint64_t best = 0;
  for (int g = 0; g < node->n_gpus; g++) {
    if (!gpu_fits(node, req, g)) continue;
    uint64_t h = splitmix64(splitmix64(ctx->seed ^ 0x9a11ULL) ^ splitmix64(ctx->round) ^ (uint64_t)g);
    if (!ret->gpu_mask || h > best) best = h, ret->gpu_mask = 1u << g;
  }
}

static bool node_fits(const gp_share_node *node, const gp_share_req *req) {
  if (node->cpu_free_milli < req->cpu_milli || node->mem_free_mib < req->mem_mib) return false;
  if (req->n_gpus == 0) return true;
  if (!gp_share_model_ok(node, req)) return false;
  int fitting = 0;
  for (int g = 0; g < node->n_gpus; g++) fitting += gpu_fits(node, req, g);
  return fitting >= req->n_gpus;
}

int gp_share_score(const gp_share_ctx *ctx, const gp_share_node *node, const gp_share_req *req,
                   gp_share_choice *ret, gp_err *err) {
  int rc = gp_share_req_check(req, err);
  if (rc) return rc;
  if (!node || node->n_gpus < 0 || node->n_gpus > GP_MAX_NODE_GPUS)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "n_gpus", "a node has 0..%d GPUs", GP_MAX_NODE_GPUS);
  for (int g = 0; g < node->n_gpus; g++) {
    if (node->gpu_free_milli[g] < 0 || node->gpu_free_milli[g] > GP_GPU_MILLI)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_free_milli",
                        "GPU %d has %d milli free (must be 0..1000)", g, node->gpu_free_milli[g]);
  }
  if ((ctx->policy == GP_SHARE_POLICY_FGD || ctx->policy == GP_SHARE_POLICY_GPOOL) &&
      (!ctx->mix || !ctx->mix->finished))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "mix",
                      "FGD and gpool placement need a finished workload mix");
  gp_share_choice c = {.fits = false, .score = 0, .gpu_mask = 0};
  if (node_fits(node, req)) {
    c.fits = true;
    switch (ctx->policy) {
    case GP_SHARE_POLICY_FGD:
    case GP_SHARE_POLICY_GPOOL: {
      bool acc[GP_SHARE_MAX_SHAPES];
      gp_share_mix_access(ctx->mix, node, acc);
      double before = gp_share_frag_acc(ctx->mix, acc, node->n_gpus, node->gpu_free_milli,
                                        node->cpu_free_milli, strand_weight(ctx));
      if (ctx->policy == GP_SHARE_POLICY_FGD) score_fgd(ctx, node, req, acc, before, &c);
      else score_gpool(ctx, node, req, acc, before, &c);
      break;
    }
    case GP_SHARE_POLICY_BESTFIT: score_bestfit(node, req, &c); break;
    case GP_SHARE_POLICY_GPUPACKING: score_gpupacking(node, req, &c); break;
    case GP_SHARE_POLICY_DOTPRODUCT: score_dotproduct(node, req, &c); break;
    case GP_SHARE_POLICY_RANDOM: score_random(ctx, node, req, &c); break;
    default:
      return gp_err_set(err, GP_EINVAL, NULL, 0, "policy", "unknown sharing policy %d",
                        (int)ctx->policy);
    }
  }
  *ret = c;
  return 0;
}

int gp_share_pick(const gp_share_ctx *ctx, const gp_share_node *nodes, int n_nodes,
                  const gp_share_req *req, int *ret_node, gp_share_choice *ret, gp_err *err) {
  int best = -1;
  gp_share_choice best_c = {0};
  uint64_t best_tie = 0;
  for (int i = 0; i < n_nodes; i++) {
    gp_share_choice c;
    int rc = gp_share_score(ctx, &nodes[i], req, &c, err);
    if (rc) return rc;
    if (!c.fits) continue;
    uint64_t tie = gp_share_tiebreak(ctx, i);
    if (best < 0 || c.score > best_c.score || (c.score == best_c.score && tie > best_tie)) {
      best = i, best_c = c, best_tie = tie;
    }
  }
  if (best < 0) return gp_err_set(err, GP_ENOENT, NULL, 0, "request", "no node fits the request");
  *ret_node = best;
  *ret = best_c;
  return 0;
}
