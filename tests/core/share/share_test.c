/* SPDX-License-Identifier: Apache-2.0 */
/* Placement policies for shared GPUs, on hand-made nodes whose right answer is known:
 * BestFit takes the tightest node, FGD fills a half-used GPU instead of breaking a whole
 * one, GpuPacking prefers used GPUs, gpool puts CPU-only work where the GPUs are taken and
 * leaves CPU beside the GPUs it does not take (the more so the more of the demand is
 * multi-GPU), Random is reproducible, and every policy refuses what does not fit. */
#include "test.h"
#include "core/share/share.h"

static gp_share_node node(const char *model, int n, const int *free_milli, int64_t cpu, int64_t mem) {
  gp_share_node nd;
  memset(&nd, 0, sizeof(nd));
  nd.model = model;
  nd.n_gpus = n;
  for (int i = 0; i < n; i++) nd.gpu_free_milli[i] = free_milli[i], nd.gpu_free_mem_mib[i] = 16384;
  nd.cpu_free_milli = cpu;
  nd.mem_free_mib = mem;
  return nd;
}

static gp_share_req req(int n_gpus, int milli, int64_t cpu) {
  gp_share_req r;
  memset(&r, 0, sizeof(r));
  r.n_gpus = n_gpus;
  r.gpu_milli = milli;
  r.cpu_milli = cpu;
  r.mem_mib = 1024;
  return r;
}

/* Half the requests want a whole GPU, half want half of one. */
static gp_share_mix *half_and_whole_mix(void) {
  gp_share_mix *m = gp_share_mix_new();
  gp_share_req whole = req(1, 1000, 1000), half = req(1, 500, 1000);
  REQUIRE(gp_share_mix_add(m, &whole, 1, NULL) == 0);
  REQUIRE(gp_share_mix_add(m, &half, 1, NULL) == 0);
  REQUIRE(gp_share_mix_finish(m, 100, NULL) == 0);
  return m;
}

static int pick(gp_share_policy p, const gp_share_mix *mix, const gp_share_node *nodes, int n,
                const gp_share_req *r, gp_share_choice *c) {
  gp_share_ctx ctx = {.policy = p, .mix = mix, .seed = 42, .round = 0, .tie = GP_SHARE_TIE_FIRST};
  int idx = -1;
  gp_err e = {0};
  int rc = gp_share_pick(&ctx, nodes, n, r, &idx, c, &e);
  return rc == 0 ? idx : rc;
}

static void bestfit_takes_the_node_with_least_left_over(void) {
  int roomy[] = {1000, 1000, 1000, 1000}, tight[] = {300, 1000};
  gp_share_node nodes[] = {node("T4", 4, roomy, 32000, 65536), node("T4", 2, tight, 32000, 65536)};
  gp_share_req r = req(1, 250, 1000);
  gp_share_choice c;
  CHECK_EQ_INT(1, pick(GP_SHARE_POLICY_BESTFIT, NULL, nodes, 2, &r, &c));
  CHECK_EQ_INT(1u << 0, c.gpu_mask); /* and the tightest GPU on it: 300 free */
}

static void fgd_fills_a_half_used_gpu_instead_of_breaking_a_whole_one(void) {
  gp_share_mix *mix = half_and_whole_mix();
  /* Node 0: one idle GPU. Node 1: one GPU with 500 free (useless for whole-GPU requests). */
  int idle[] = {1000}, half[] = {500};
  gp_share_node nodes[] = {node("T4", 1, idle, 32000, 65536), node("T4", 1, half, 32000, 65536)};
  gp_share_req r = req(1, 500, 1000);
  gp_share_choice c;
  CHECK_EQ_INT(1, pick(GP_SHARE_POLICY_FGD, mix, nodes, 2, &r, &c));
  CHECK_EQ_INT(1, pick(GP_SHARE_POLICY_GPOOL, mix, nodes, 2, &r, &c));
  /* Inside one node: the GPU with 500 free, not the idle one. */
  int mixed[] = {1000, 500};
  gp_share_node one = node("T4", 2, mixed, 32000, 65536);
  CHECK_EQ_INT(0, pick(GP_SHARE_POLICY_FGD, mix, &one, 1, &r, &c));
  CHECK_EQ_INT(1u << 1, c.gpu_mask);
  gp_share_mix_free(mix);
}

static void fragmentation_is_the_capacity_each_shape_cannot_use(void) {
  gp_share_mix *mix = half_and_whole_mix();
  /* GPUs free: 1000 and 300. Whole-GPU shape: the 300 is a fragment; half shape: the 300
   * too. F = 0.5 * 300 + 0.5 * 300 = 300. */
  int f[] = {1000, 300};
  gp_share_node nd = node("T4", 2, f, 32000, 65536);
  CHECK_NEAR(300.0, gp_share_node_frag(mix, &nd), 1e-9);
  /* Without CPU nothing fits: everything free is a fragment. */
  nd.cpu_free_milli = 500;
  CHECK_NEAR(1300.0, gp_share_node_frag(mix, &nd), 1e-9);
  gp_share_mix_free(mix);
}

static void the_mix_merges_equal_shapes_and_keeps_the_popular_ones(void) {
  gp_share_mix *m = gp_share_mix_new();
  gp_share_req a = req(1, 500, 1000), b = req(1, 250, 1000), c = req(2, 1000, 8000);
  a.mem_mib = 1; /* host memory is not part of a shape */
  CHECK_EQ_INT(0, gp_share_mix_add(m, &a, 6, NULL));
  a.mem_mib = 999;
  CHECK_EQ_INT(0, gp_share_mix_add(m, &a, 2, NULL));
  CHECK_EQ_INT(0, gp_share_mix_add(m, &b, 1.5, NULL));
  CHECK_EQ_INT(0, gp_share_mix_add(m, &c, 0.5, NULL));
  CHECK_EQ_INT(3, gp_share_mix_count(m));
  CHECK_EQ_INT(0, gp_share_mix_finish(m, 90, NULL)); /* 8 + 1.5 = 95% of 10 covers 90% */
  CHECK_EQ_INT(2, gp_share_mix_count(m));
  double p = 0;
  const gp_share_req *s0 = gp_share_mix_shape(m, 0, &p);
  REQUIRE(s0);
  CHECK_EQ_INT(500, s0->gpu_milli);
  CHECK_NEAR(8.0 / 9.5, p, 1e-12);
  gp_err e = {0};
  CHECK_EQ_INT(GP_ESTATE, gp_share_mix_add(m, &b, 1, &e));
  gp_share_mix_free(m);
}

static void gpupacking_prefers_a_used_gpu_then_a_used_node(void) {
  int idle_node[] = {1000, 1000}, used_gpu[] = {1000, 600}, used_node[] = {0, 1000};
  gp_share_node nodes[] = {node("T4", 2, idle_node, 32000, 65536),
                           node("T4", 2, used_node, 32000, 65536),
                           node("T4", 2, used_gpu, 32000, 65536)};
  gp_share_req r = req(1, 500, 1000);
  gp_share_choice c;
  CHECK_EQ_INT(2, pick(GP_SHARE_POLICY_GPUPACKING, NULL, nodes, 3, &r, &c));
  CHECK_EQ_INT(1u << 1, c.gpu_mask);
  CHECK_EQ_INT(1, pick(GP_SHARE_POLICY_GPUPACKING, NULL, nodes, 2, &r, &c));
}

static void gpool_puts_cpu_only_work_where_the_gpus_are_taken(void) {
  gp_share_mix *mix = half_and_whole_mix();
  int idle[] = {1000, 1000}, full[] = {0, 0};
  gp_share_node nodes[] = {node("T4", 2, idle, 32000, 65536), node("T4", 2, full, 32000, 65536)};
  gp_share_req cpu_only = req(0, 0, 4000);
  gp_share_choice c;
  CHECK_EQ_INT(1, pick(GP_SHARE_POLICY_GPOOL, mix, nodes, 2, &cpu_only, &c));
  CHECK_EQ_INT(0, c.gpu_mask);
  gp_share_mix_free(mix);
}

/* Every request of the mix wants one whole GPU and 4 cores. A 16-core request fits both
 * 4-GPU nodes; on node 0 (20 cores) it would leave 3 idle GPUs beside 4 cores, enough for
 * one of them, on node 1 (32 cores) 16 cores, enough for all three. FGD sees no fragment
 * on either (one copy of the shape still fits) and gives the tie to the first node; gpool
 * counts the two GPUs node 0's CPU could not feed and takes node 1. */
static void gpool_leaves_cpu_for_the_gpus_it_does_not_take(void) {
  gp_share_mix *m = gp_share_mix_new();
  gp_share_req shape = req(1, 1000, 4000);
  REQUIRE(gp_share_mix_add(m, &shape, 1, NULL) == 0);
  REQUIRE(gp_share_mix_finish(m, 100, NULL) == 0);
  int idle[] = {1000, 1000, 1000, 1000};
  gp_share_node nodes[] = {node("T4", 4, idle, 20000, 65536), node("T4", 4, idle, 32000, 65536)};
  gp_share_req big_cpu = req(1, 1000, 16000);
  gp_share_choice c;
  CHECK_EQ_INT(0, pick(GP_SHARE_POLICY_FGD, m, nodes, 2, &big_cpu, &c));
  CHECK_EQ_INT(1, pick(GP_SHARE_POLICY_GPOOL, m, nodes, 2, &big_cpu, &c));
  /* FGD's measure itself is unchanged: a node whose CPU feeds one copy has no fragment. */
  gp_share_node after = node("T4", 3, idle, 4000, 65536);
  CHECK(gp_share_node_frag(m, &after) == 0);
  gp_share_mix_free(m);
}

/* Half the mix's GPU demand is multi-GPU: one-GPU pods with 2 cores (popularity 2) and
 * two-GPU pods with 8 cores (popularity 1). A one-GPU request with 14 cores fits both idle
 * 4-GPU nodes; on node 0 (16 cores) it leaves 2 cores, which feed one of the 3 idle GPUs
 * left, on node 1 (20 cores) 6, which feed all three. At the base weight the two GPUs node 0
 * would strand keep it within FGD's level of node 1 (a tie, the first node); weighed 1.5
 * times, as half the demand asks several GPUs with their CPU at once, they cost a level,
 * and gpool takes node 1. */
static void gpool_weighs_stranded_gpu_more_when_demand_is_multi_gpu(void) {
  gp_share_mix *m = gp_share_mix_new();
  gp_share_req one = req(1, 1000, 2000), two = req(2, 1000, 8000);
  REQUIRE(gp_share_mix_add(m, &one, 2, NULL) == 0);
  REQUIRE(gp_share_mix_add(m, &two, 1, NULL) == 0);
  REQUIRE(gp_share_mix_finish(m, 100, NULL) == 0);
  int idle[] = {1000, 1000, 1000, 1000};
  gp_share_node nodes[] = {node("T4", 4, idle, 16000, 65536), node("T4", 4, idle, 20000, 65536)};
  gp_share_req big_cpu = req(1, 1000, 14000);
  gp_share_choice c;
  CHECK_EQ_INT(0, pick(GP_SHARE_POLICY_FGD, m, nodes, 2, &big_cpu, &c));
  CHECK_EQ_INT(1, pick(GP_SHARE_POLICY_GPOOL, m, nodes, 2, &big_cpu, &c));
  gp_share_mix_free(m);
}

static void random_is_reproducible_and_spreads(void) {
  int f[] = {1000};
  gp_share_node nodes[8];
  for (int i = 0; i < 8; i++) nodes[i] = node("T4", 1, f, 32000, 65536);
  gp_share_req r = req(1, 100, 100);
  int seen = 0;
  for (uint64_t round = 0; round < 64; round++) {
    gp_share_ctx ctx = {.policy = GP_SHARE_POLICY_RANDOM, .seed = 7, .round = round};
    int a = -1, b = -1;
    gp_share_choice c;
    REQUIRE(gp_share_pick(&ctx, nodes, 8, &r, &a, &c, NULL) == 0);
    REQUIRE(gp_share_pick(&ctx, nodes, 8, &r, &b, &c, NULL) == 0);
    CHECK_EQ_INT(a, b);
    seen |= 1 << a;
  }
  CHECK(seen == 0xff); /* 64 draws over 8 nodes reach every node */
}

static void nothing_is_placed_where_it_does_not_fit(void) {
  gp_share_mix *mix = half_and_whole_mix();
  int f[] = {1000, 400};
  gp_share_node nd = node("T4", 2, f, 4000, 8192);
  const char *p100[] = {"P100"};
  gp_share_req wrong_model = req(1, 100, 100);
  wrong_model.n_models = 1, wrong_model.models = p100;
  gp_share_req too_much_cpu = req(1, 100, 5000), two_whole = req(2, 1000, 100);
  gp_share_req too_much_mem = req(1, 100, 100), too_much_gpu_mem = req(1, 100, 100);
  too_much_mem.mem_mib = 9000;
  too_much_gpu_mem.gpu_mem_mib = 20000;
  const gp_share_req *bad[] = {&wrong_model, &too_much_cpu, &two_whole, &too_much_mem, &too_much_gpu_mem};
  for (gp_share_policy p = GP_SHARE_POLICY_GPOOL; p <= GP_SHARE_POLICY_RANDOM; p++) {
    gp_share_ctx ctx = {.policy = p, .mix = mix, .seed = 1};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
      gp_share_choice c;
      CHECK_EQ_INT(0, gp_share_score(&ctx, &nd, bad[i], &c, NULL));
      CHECK(!c.fits);
    }
    gp_share_choice c;
    gp_share_req ok = req(1, 400, 100);
    CHECK_EQ_INT(0, gp_share_score(&ctx, &nd, &ok, &c, NULL));
    CHECK(c.fits);
  }
  gp_share_mix_free(mix);
}

static void malformed_requests_and_missing_mix_are_errors(void) {
  int f[] = {1000};
  gp_share_node nd = node("T4", 1, f, 4000, 8192);
  gp_share_ctx fgd = {.policy = GP_SHARE_POLICY_FGD, .mix = NULL};
  gp_share_req r = req(1, 100, 100);
  gp_share_choice c;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_share_score(&fgd, &nd, &r, &c, &e));
  CHECK_CONTAINS(e.message, "mix");
  gp_share_ctx bf = {.policy = GP_SHARE_POLICY_BESTFIT};
  gp_share_req frac2 = req(2, 500, 100), zero = req(1, 0, 100);
  CHECK_EQ_INT(GP_EINVAL, gp_share_score(&bf, &nd, &frac2, &c, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_share_score(&bf, &nd, &zero, &c, &e));
  nd.gpu_free_milli[0] = 1200;
  CHECK_EQ_INT(GP_EINVAL, gp_share_score(&bf, &nd, &r, &c, &e));
  int idx = 0;
  nd.gpu_free_milli[0] = 50;
  CHECK_EQ_INT(GP_ENOENT, gp_share_pick(&bf, &nd, 1, &r, &idx, &c, &e));
}

static void a_request_by_memory_becomes_a_share_of_each_gpu(void) {
  int milli = 0;
  CHECK_EQ_INT(0, gp_share_milli_for_mem(20480, 81920, &milli, NULL)); /* 20G of 80G */
  CHECK_EQ_INT(250, milli);
  CHECK_EQ_INT(0, gp_share_milli_for_mem(20480, 24576, &milli, NULL)); /* 20G of 24G: rounds up */
  CHECK_EQ_INT(834, milli);
  CHECK_EQ_INT(0, gp_share_milli_for_mem(1, 1000000, &milli, NULL));
  CHECK_EQ_INT(1, milli);
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_share_milli_for_mem(30000, 24576, &milli, &e));
  CHECK_CONTAINS(e.message, "does not fit one GPU");
  CHECK_EQ_INT(GP_EINVAL, gp_share_milli_for_mem(100, 0, &milli, &e));
}

static void hashed_ties_depend_on_the_seed_and_round(void) {
  int f[] = {1000};
  gp_share_node nodes[16];
  for (int i = 0; i < 16; i++) nodes[i] = node("T4", 1, f, 32000, 65536);
  gp_share_req r = req(1, 1000, 100);
  int seen = 0;
  for (uint64_t seed = 0; seed < 32; seed++) {
    gp_share_ctx ctx = {.policy = GP_SHARE_POLICY_BESTFIT, .seed = seed, .round = 3};
    int idx = -1;
    gp_share_choice c;
    REQUIRE(gp_share_pick(&ctx, nodes, 16, &r, &idx, &c, NULL) == 0);
    seen |= 1 << idx;
  }
  CHECK(__builtin_popcount((unsigned)seen) > 8); /* ties spread over the equal nodes */
  gp_share_ctx first = {.policy = GP_SHARE_POLICY_BESTFIT, .seed = 9, .tie = GP_SHARE_TIE_FIRST};
  int idx = -1;
  gp_share_choice c;
  REQUIRE(gp_share_pick(&first, nodes, 16, &r, &idx, &c, NULL) == 0);
  CHECK_EQ_INT(0, idx);
}

/* A quarter of the demand can run only on T4, which is 2 of the cluster's 22 GPUs; another
 * quarter only on G2 (20 GPUs). FGD sees the two idle nodes alike (each is a fragment for
 * the shape the other model serves) and takes the first, the scarce T4; gpool leaves T4 to
 * the requests that have nowhere else to go. A T4-only request still gets T4. */
static void gpool_leaves_a_scarce_model_to_the_requests_limited_to_it(void) {
  const char *t4[] = {"T4"}, *g2[] = {"G2"};
  gp_share_req only_t4 = req(1, 1000, 1000), only_g2 = req(1, 1000, 1000), any = req(1, 1000, 1000);
  only_t4.n_models = 1, only_t4.models = t4;
  only_g2.n_models = 1, only_g2.models = g2;
  gp_share_mix *mix = gp_share_mix_new();
  gp_err e = {0};
  REQUIRE(gp_share_mix_add(mix, &only_t4, 1, NULL) == 0);
  REQUIRE(gp_share_mix_add(mix, &only_g2, 1, NULL) == 0);
  REQUIRE(gp_share_mix_add(mix, &any, 2, NULL) == 0);
  REQUIRE(gp_share_mix_set_capacity(mix, "T4", 2, NULL) == 0);
  REQUIRE(gp_share_mix_set_capacity(mix, "G2", 20, NULL) == 0);
  CHECK_EQ_INT(GP_EINVAL, gp_share_mix_set_capacity(mix, "", 2, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_share_mix_set_capacity(mix, "A10", -1, &e));
  REQUIRE(gp_share_mix_finish(mix, 100, NULL) == 0);
  CHECK_EQ_INT(GP_ESTATE, gp_share_mix_set_capacity(mix, "A10", 8, &e));
  CHECK_NEAR(0.25 / (2.0 / 22.0), gp_share_mix_pressure(mix, "T4"), 1e-9);
  CHECK_NEAR(0.25 / (20.0 / 22.0), gp_share_mix_pressure(mix, "G2"), 1e-9);
  CHECK_NEAR(0.0, gp_share_mix_pressure(mix, "A10"), 1e-12);
  int idle[] = {1000, 1000};
  gp_share_node nodes[] = {node("T4", 2, idle, 32000, 65536), node("G2", 2, idle, 32000, 65536)};
  gp_share_choice c;
  CHECK_EQ_INT(0, pick(GP_SHARE_POLICY_FGD, mix, nodes, 2, &any, &c));
  CHECK_EQ_INT(1, pick(GP_SHARE_POLICY_GPOOL, mix, nodes, 2, &any, &c));
  CHECK_EQ_INT(0, pick(GP_SHARE_POLICY_GPOOL, mix, nodes, 2, &only_t4, &c));
  gp_share_mix_free(mix);
}

GP_TESTS(gpool_leaves_a_scarce_model_to_the_requests_limited_to_it,
         a_request_by_memory_becomes_a_share_of_each_gpu, hashed_ties_depend_on_the_seed_and_round,
         bestfit_takes_the_node_with_least_left_over,
         fgd_fills_a_half_used_gpu_instead_of_breaking_a_whole_one,
         fragmentation_is_the_capacity_each_shape_cannot_use,
         the_mix_merges_equal_shapes_and_keeps_the_popular_ones,
         gpupacking_prefers_a_used_gpu_then_a_used_node,
         gpool_puts_cpu_only_work_where_the_gpus_are_taken,
         gpool_leaves_cpu_for_the_gpus_it_does_not_take,
         gpool_weighs_stranded_gpu_more_when_demand_is_multi_gpu, random_is_reproducible_and_spreads,
         nothing_is_placed_where_it_does_not_fit, malformed_requests_and_missing_mix_are_errors)
