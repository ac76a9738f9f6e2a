/* SPDX-License-Identifier: Apache-2.0 */
/* Where a job lands: bin-packing and spread, NVLink domains inside a node, and every
 * filter (node state, GPU health, model, GPU memory, CPU, host memory, labels, spot), and
 * the preference for a node that holds the job's container image. */
#include "fixture.h"

static int node_of(const fx *f, const gp_plan *p, const char *id) {
  const gp_plan_start *s = fx_start(f, p, id);
  return s ? s->placements[0].node : -1;
}

static void binpack_fills_the_most_used_node_that_fits(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_node(f, "n2", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r1", "a", 6, 1), 1, 0x3f, 0); /* n1 has 2 free */
  fx_run(f, fx_job(f, "r2", "a", 4, 1), 2, 0x0f, 0); /* n2 has 4 free */
  fx_job(f, "small", "a", 2, 1);
  fx_job(f, "mid", "a", 3, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(1, node_of(f, p, "small")); /* 2 free: the fullest that fits */
  CHECK_EQ_INT(2, node_of(f, p, "mid"));   /* 4 free; n0 stays whole */
  CHECK_EQ_INT(0x30, fx_start(f, p, "mid")->placements[0].gpu_mask & 0x30);
  gp_plan_free(p);
  fx_free(f);
}

static void spread_takes_the_emptiest_node(void) {
  fx *f = fx_new();
  f->pol.placement = GP_PLACE_SPREAD;
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r1", "a", 1, 1), 0, 0x1, 0);
  fx_job(f, "i1", "a", 1, 1);
  fx_job(f, "i2", "a", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(1, node_of(f, p, "i1"));
  CHECK_EQ_INT(0, node_of(f, p, "i2")); /* both now have 7 free: lowest index */
  gp_plan_free(p);
  fx_free(f);
}

/* A service's replicas ask to spread (gp_request.spread) under a bin-packing pool: each goes
 * to the emptiest node, while an ordinary job still packs. */
static void a_spread_request_goes_apart_under_binpack(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r1", "a", 1, 1), 0, 0x1, 0);
  fx_job(f, "rep1", "a", 1, 1)->req.spread = true;
  fx_job(f, "rep2", "a", 1, 1)->req.spread = true;
  fx_job(f, "batch", "a", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(1, node_of(f, p, "rep1")); /* n1 is empty */
  CHECK_EQ_INT(0, node_of(f, p, "rep2")); /* then 7 free each: lowest index */
  CHECK_EQ_INT(0, node_of(f, p, "batch")); /* packs onto the most used node */
  gp_plan_free(p);
  fx_free(f);
}

/* With racks (topology.block labels), a spread request goes to the emptiest rack first, then
 * to its emptiest node: rack A (a0 with 4 GPUs busy, a1) has 12 free, rack B (b0 with 1
 * busy, b1) 15. By node alone the first replica would take a1 (8 free, the lowest index of
 * the emptiest nodes); by rack it takes b1, and the next ones follow the racks' free GPUs. */
static void a_spread_request_takes_the_emptiest_rack_then_node(void) {
  fx *f = fx_new();
  fx_label(f, fx_node(f, "a0", "H100", 8), "topology.block", "A");
  fx_label(f, fx_node(f, "a1", "H100", 8), "topology.block", "A");
  fx_label(f, fx_node(f, "b0", "H100", 8), "topology.block", "B");
  fx_label(f, fx_node(f, "b1", "H100", 8), "topology.block", "B");
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r1", "a", 4, 1), 0, 0x0f, 0);  /* A: 12 free */
  fx_run(f, fx_job(f, "r2", "a", 1, 1), 2, 0x01, 0);  /* B: 15 free */
  fx_job(f, "rep1", "a", 2, 1)->req.spread = true;
  fx_job(f, "rep2", "a", 2, 1)->req.spread = true;
  fx_job(f, "rep3", "a", 2, 1)->req.spread = true;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(3, node_of(f, p, "rep1")); /* B (15 free), its emptiest node b1 (8) */
  CHECK_EQ_INT(2, node_of(f, p, "rep2")); /* B (13) over A (12): b0 (7) over b1 (6) */
  CHECK_EQ_INT(1, node_of(f, p, "rep3")); /* A (12) over B (11): a1 (8) */
  gp_plan_free(p);
  fx_free(f);
}

static void a_four_gpu_job_stays_inside_one_nvlink_domain(void) {
  fx *f = fx_new();
  gp_node *n = fx_node(f, "n0", "H100", 8);
  int dom[] = {0, 0, 0, 0, 1, 1, 1, 1};
  fx_nvlink(f, n, dom);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r1", "a", 1, 1), 0, 0x1, 0); /* domain 0 has 3 free, domain 1 has 4 */
  fx_job(f, "two", "a", 2, 1);
  fx_job(f, "four", "a", 4, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  /* "two" goes to the fuller domain (0: GPUs 1,2), keeping domain 1 whole for "four". */
  CHECK_EQ_INT(0x06, fx_start(f, p, "two")->placements[0].gpu_mask);
  CHECK_EQ_INT(0xf0, fx_start(f, p, "four")->placements[0].gpu_mask);
  gp_plan_free(p);
  fx_free(f);
}

static void a_job_larger_than_any_domain_spans_the_fewest(void) {
  fx *f = fx_new();
  gp_node *n = fx_node(f, "n0", "H100", 8);
  int dom[] = {0, 0, 1, 1, 1, 2, 2, 2};
  fx_nvlink(f, n, dom);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "five", "a", 5, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p && fx_started(f, p, "five"));
  /* Domains 1 (GPUs 2-4) and 2 (5-7) hold 6: take 3 from domain 1, then 2 from domain 2. */
  CHECK_EQ_INT(0x7c, fx_start(f, p, "five")->placements[0].gpu_mask);
  gp_plan_free(p);
  fx_free(f);
}

static void filters_keep_jobs_off_nodes_that_cannot_take_them(void) {
  fx *f = fx_new();
  fx_node(f, "down", "H100", 8)->state = GP_NODE_DOWN;
  fx_node(f, "drain", "H100", 8)->state = GP_NODE_DRAIN;
  fx_node(f, "cordon", "H100", 8)->state = GP_NODE_CORDON;
  gp_node *sick = fx_node(f, "sick", "H100", 2);
  f->gpus[3][0].health = GP_GPU_FAILED;
  f->gpus[3][1].health = GP_GPU_DRAINED;
  gp_node *a100 = fx_node(f, "a100", "A100", 8);
  a100->gpu_mem_mib = 40960;
  gp_node *spot = fx_node(f, "spot", "H100", 8);
  spot->capacity = GP_CAP_SPOT;
  gp_node *lab = fx_node(f, "labelled", "H100", 8);
  fx_label(f, lab, "zone", "b");
  lab->cpu_milli = 8000;
  (void)sick;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *h = fx_job(f, "wants-h100", "a", 1, 1);
  fx_models(f, h, "H100");
  gp_job *big = fx_job(f, "wants-80g", "a", 1, 1);
  big->req.min_gpu_mem_mib = 80000;
  gp_job *sel = fx_job(f, "wants-zone-b", "a", 1, 1);
  f->selectors[sel - f->jobs][0] = (gp_label){"zone", "b"};
  sel->req.node_selector = f->selectors[sel - f->jobs];
  sel->req.n_node_selector = 1;
  gp_job *cpu = fx_job(f, "wants-cpu", "a", 1, 1);
  cpu->req.cpu_milli = 64000;
  gp_job *sp = fx_job(f, "spot-ok", "a", 8, 1);
  sp->req.allow_spot = true;
  gp_job *a = fx_job(f, "wants-a100", "a", 1, 1);
  fx_models(f, a, "A100");
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(6, node_of(f, p, "wants-h100"));  /* not down/drain/cordon/sick/spot */
  CHECK_EQ_INT(6, node_of(f, p, "wants-80g"));
  CHECK_EQ_INT(6, node_of(f, p, "wants-zone-b"));
  CHECK_EQ_INT(4, node_of(f, p, "wants-a100"));
  CHECK(node_of(f, p, "wants-cpu") != 6);        /* "labelled" has only 8 cores */
  CHECK_EQ_INT(5, node_of(f, p, "spot-ok"));     /* only the spot node has 8 free left */
  gp_plan_free(p);
  fx_free(f);
}

static void a_job_without_spot_never_lands_on_spot(void) {
  fx *f = fx_new();
  fx_node(f, "spot", "H100", 8)->capacity = GP_CAP_SPOT;
  fx_node(f, "od", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r", "a", 8, 1), 1, 0xff, 0);
  fx_job(f, "j", "a", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "j"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "j"));
  gp_plan_free(p);
  fx_free(f);
}

static void an_equal_node_holding_the_image_draws_the_job(void) {
  static const uint64_t held[] = {7, 42, 99};
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  gp_node *n1 = fx_node(f, "n1", "H100", 8);
  n1->images = held;
  n1->n_images = 3;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "imaged", "a", 1, 1)->req.image = 42;
  fx_job(f, "other-image", "a", 8, 1)->req.image = 43;
  fx_job(f, "bare", "a", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(1, node_of(f, p, "imaged"));      /* n0 comes first without the image */
  CHECK_EQ_INT(0, node_of(f, p, "other-image")); /* nobody holds 43: the usual choice */
  CHECK_EQ_INT(1, node_of(f, p, "bare"));        /* binpack: n1 is the fuller one now */
  gp_plan_free(p);
  fx_free(f);
  /* The same nodes and a job without an image: the choice of old, n0. */
  f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8)->images = held;
  f->nodes[1].n_images = 3;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "bare", "a", 1, 1);
  p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(0, node_of(f, p, "bare"));
  gp_plan_free(p);
  fx_free(f);
}

static void the_image_is_a_preference_below_the_placement_policy(void) {
  static const uint64_t held[] = {42};
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8)->images = held; /* holds it but has more free: binpack wins */
  f->nodes[0].n_images = 1;
  fx_node(f, "n1", "H100", 8);
  fx_node(f, "n2", "H100", 1)->images = held; /* holds it but too small: never a constraint */
  f->nodes[2].n_images = 1;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r", "a", 4, 1), 1, 0x0f, 0);
  fx_job(f, "j", "a", 2, 1)->req.image = 42;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(1, node_of(f, p, "j"));
  gp_plan_free(p);
  fx_free(f);
}

static void unsorted_node_images_are_refused(void) {
  static const uint64_t bad[] = {9, 3};
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8)->images = bad;
  f->nodes[0].n_images = 2;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "j", "a", 1, 1);
  gp_plan *p = fx_step(f, 10);
  CHECK(p == NULL);
  CHECK_EQ_STR("nodes[0].images", f->err.field);
  gp_plan_free(p);
  fx_free(f);
}

/* A job's model (gp_request.model) draws it to an equal node holding it, as an image does;
 * a node holding both its image and model comes before one holding either. Model and image
 * hashes share gp_node.images (the callers keep their hash spaces apart). */
static void an_equal_node_holding_the_model_draws_the_job(void) {
  static const uint64_t model[] = {77}, image[] = {42}, both[] = {42, 77};
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8)->images = model;
  f->nodes[1].n_images = 1;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "served", "a", 1, 1)->req.model = 77;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(1, node_of(f, p, "served"));
  gp_plan_free(p);
  fx_free(f);
  /* Without a model: the choice of old, n0. */
  f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8)->images = model;
  f->nodes[1].n_images = 1;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "bare", "a", 1, 1);
  p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(0, node_of(f, p, "bare"));
  gp_plan_free(p);
  fx_free(f);
  /* Image and model: the node holding both wins over one holding either. */
  f = fx_new();
  fx_node(f, "n0", "H100", 8)->images = image;
  f->nodes[0].n_images = 1;
  fx_node(f, "n1", "H100", 8)->images = model;
  f->nodes[1].n_images = 1;
  fx_node(f, "n2", "H100", 8)->images = both;
  f->nodes[2].n_images = 2;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *j = fx_job(f, "j", "a", 1, 1);
  j->req.image = 42;
  j->req.model = 77;
  p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(2, node_of(f, p, "j"));
  gp_plan_free(p);
  fx_free(f);
}

/* A service's replica (spread, with racks) takes the node holding its model when racks and
 * free GPUs tie; it never trades rack spread for it. */
static void a_spread_replica_prefers_the_model_after_rack_and_node(void) {
  static const uint64_t model[] = {77};
  for (int with = 0; with < 2; with++) {
    fx *f = fx_new();
    fx_label(f, fx_node(f, "a0", "H100", 8), "topology.block", "A");
    fx_label(f, fx_node(f, "a1", "H100", 8), "topology.block", "A");
    fx_label(f, fx_node(f, "b0", "H100", 8), "topology.block", "B");
    fx_label(f, fx_node(f, "b1", "H100", 8), "topology.block", "B");
    f->nodes[3].images = model;
    f->nodes[3].n_images = 1;
    fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
    gp_job *r = fx_job(f, "rep", "a", 2, 1);
    r->req.spread = true;
    if (with) r->req.model = 77;
    gp_plan *p = fx_step(f, 10);
    REQUIRE(p);
    CHECK_EQ_INT(with ? 3 : 0, node_of(f, p, "rep"));
    gp_plan_free(p);
    fx_free(f);
  }
  /* Rack A emptier (a job runs in rack B): rack spread wins over the model held in B. */
  fx *f = fx_new();
  fx_label(f, fx_node(f, "a0", "H100", 8), "topology.block", "A");
  fx_label(f, fx_node(f, "a1", "H100", 8), "topology.block", "A");
  fx_label(f, fx_node(f, "b0", "H100", 8), "topology.block", "B");
  fx_label(f, fx_node(f, "b1", "H100", 8), "topology.block", "B");
  f->nodes[3].images = model;
  f->nodes[3].n_images = 1;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "busy", "a", 8, 1), 2, 0xff, 0);
  gp_job *r = fx_job(f, "rep", "a", 2, 1);
  r->req.spread = true;
  r->req.model = 77;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(0, node_of(f, p, "rep"));
  gp_plan_free(p);
  fx_free(f);
}

GP_TESTS(binpack_fills_the_most_used_node_that_fits, spread_takes_the_emptiest_node,
         a_spread_request_goes_apart_under_binpack, a_spread_request_takes_the_emptiest_rack_then_node,
         a_four_gpu_job_stays_inside_one_nvlink_domain, a_job_larger_than_any_domain_spans_the_fewest,
         filters_keep_jobs_off_nodes_that_cannot_take_them, a_job_without_spot_never_lands_on_spot,
         an_equal_node_holding_the_image_draws_the_job,
         the_image_is_a_preference_below_the_placement_policy, unsorted_node_images_are_refused,
         an_equal_node_holding_the_model_draws_the_job, a_spread_replica_prefers_the_model_after_rack_and_node)
