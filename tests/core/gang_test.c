/* SPDX-License-Identifier: Apache-2.0 */
/* Gangs: N tasks x G GPUs start together or not at all, preferably inside one topology
 * block, on one GPU model and kind unless the job names several types, and a failed gang
 * leaves no trace on the capacity others see. */
#include "fixture.h"

static void a_gang_that_does_not_fit_takes_nothing(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r", "a", 4, 1), 1, 0x0f, 0);
  f->pol.backfill = false;
  fx_job(f, "gang", "a", 8, 2);  /* needs two empty nodes: only n0 is */
  fx_job(f, "after", "a", 8, 1); /* fits n0 once the gang rolled back */
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "gang"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "gang"));
  CHECK(fx_started(f, p, "after"));
  CHECK_EQ_INT(0, fx_start(f, p, "after")->placements[0].node);
  gp_plan_free(p);
  fx_free(f);
}

static void a_gang_starts_every_task_with_its_own_placement(void) {
  fx *f = fx_new();
  for (int i = 0; i < 4; i++) fx_node(f, i == 0 ? "n0" : i == 1 ? "n1" : i == 2 ? "n2" : "n3", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "gang", "a", 4, 3);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  const gp_plan_start *s = fx_start(f, p, "gang");
  REQUIRE(s);
  CHECK_EQ_INT(3, s->n_placements);
  int gpus = 0;
  for (int t = 0; t < 3; t++) gpus += __builtin_popcount(s->placements[t].gpu_mask);
  CHECK_EQ_INT(12, gpus);
  /* Bin-packing puts two tasks on the first node and the third on the next one. */
  CHECK_EQ_INT(s->placements[0].node, s->placements[1].node);
  CHECK(s->placements[0].gpu_mask != s->placements[1].gpu_mask);
  gp_plan_free(p);
  fx_free(f);
}

static void a_multi_node_gang_prefers_one_block(void) {
  fx *f = fx_new();
  const char *names[] = {"a0", "a1", "b0", "b1", "b2"};
  const char *blocks[] = {"A", "A", "B", "B", "B"};
  for (int i = 0; i < 5; i++) fx_label(f, fx_node(f, names[i], "H100", 8), "topology.block", blocks[i]);
  fx_queue(f, "q", 0, GP_NO_LIMIT, 1);
  /* Block A has 8 + 4 free, block B 3 x 8: a 2 x 8 gang fits only in B; spreading it over
   * a0 and b0 would be the lowest indexes but crosses blocks. */
  fx_run(f, fx_job(f, "r", "q", 4, 1), 1, 0x0f, 0);
  fx_job(f, "gang", "q", 8, 2);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  const gp_plan_start *s = fx_start(f, p, "gang");
  REQUIRE(s);
  CHECK(s->placements[0].node >= 2 && s->placements[1].node >= 2);
  CHECK(s->placements[0].node != s->placements[1].node);
  gp_plan_free(p);
  fx_free(f);
}

static void a_gang_goes_wide_when_no_block_can_hold_it(void) {
  fx *f = fx_new();
  fx_label(f, fx_node(f, "a0", "H100", 8), "topology.block", "A");
  fx_label(f, fx_node(f, "b0", "H100", 8), "topology.block", "B");
  fx_queue(f, "q", 0, GP_NO_LIMIT, 1);
  fx_job(f, "gang", "q", 8, 2);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(fx_started(f, p, "gang"));
  gp_plan_free(p);
  fx_free(f);
}

/* The model of the node a task of the gang went to. */
static const char *task_model(const fx *f, const gp_plan_start *s, int t) {
  return f->nodes[s->placements[t].node].model;
}

static void a_gang_of_one_gpu_tasks_does_not_mix_whole_gpus_and_shares(void) {
  fx *f = fx_new();
  fx_node(f, "h0", "H100", 1);
  fx_node(f, "a0", "A100", 1);
  f->gpus[1][0].mode = GP_SHARE_TIMESLICE;
  f->gpus[1][0].timeslice_replicas = 2;
  fx_node(f, "h1", "H100", 1);
  fx_queue(f, "q", 0, GP_NO_LIMIT, 1);
  fx_running(f, "busy", "q", 1, 2, 0x1, 0); /* h1's GPU is taken */
  fx_job(f, "gang", "q", 1, 2);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  /* Not h0's whole H100 with a time-sliced A100 share beside it: two shares of a0. */
  const gp_plan_start *s = fx_start(f, p, "gang");
  REQUIRE(s);
  CHECK_EQ_STR("A100", task_model(f, s, 0));
  CHECK_EQ_STR("A100", task_model(f, s, 1));
  CHECK_EQ_INT(s->placements[0].gpu_milli, s->placements[1].gpu_milli);
  CHECK(s->placements[0].gpu_milli < 1000);
  gp_plan_free(p);
  fx_free(f);
}

static void a_gang_takes_whole_gpus_of_one_model_when_they_are_free(void) {
  fx *f = fx_new();
  fx_node(f, "h0", "H100", 1);
  fx_node(f, "a0", "A100", 1);
  f->gpus[1][0].mode = GP_SHARE_TIMESLICE;
  f->gpus[1][0].timeslice_replicas = 2;
  fx_node(f, "h1", "H100", 1);
  fx_queue(f, "q", 0, GP_NO_LIMIT, 1);
  fx_job(f, "gang", "q", 1, 2);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  const gp_plan_start *s = fx_start(f, p, "gang");
  REQUIRE(s);
  CHECK_EQ_INT(0, s->placements[0].node);
  CHECK_EQ_INT(2, s->placements[1].node);
  CHECK_EQ_INT(1000, s->placements[1].gpu_milli);
  gp_plan_free(p);
  fx_free(f);
}

static void a_gang_looks_past_the_first_model_that_cannot_hold_it(void) {
  fx *f = fx_new();
  fx_node(f, "h0", "H100", 8);
  fx_node(f, "a0", "A100", 8);
  fx_node(f, "a1", "A100", 8);
  fx_queue(f, "q", 0, GP_NO_LIMIT, 1);
  fx_job(f, "gang", "q", 8, 2); /* h0 comes first, but one H100 node cannot hold it */
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  const gp_plan_start *s = fx_start(f, p, "gang");
  REQUIRE(s);
  CHECK_EQ_STR("A100", task_model(f, s, 0));
  CHECK_EQ_STR("A100", task_model(f, s, 1));
  gp_plan_free(p);
  fx_free(f);
}

static void naming_several_gpu_types_lets_a_gang_mix_them(void) {
  fx *f = fx_new();
  fx_node(f, "h0", "H100", 4);
  fx_node(f, "a0", "A100", 4);
  fx_queue(f, "q", 0, GP_NO_LIMIT, 1);
  fx_job(f, "one-model", "q", 4, 2); /* one node of each model: never on one model */
  gp_job *mixed = fx_job(f, "mixed", "q", 4, 2);
  fx_models(f, mixed, "H100");
  fx_models(f, mixed, "A100");
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "one-model"));
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(f, p, "one-model"));
  const gp_plan_start *s = fx_start(f, p, "mixed");
  REQUIRE(s);
  CHECK(strcmp(task_model(f, s, 0), task_model(f, s, 1)) != 0);
  gp_end_reason why = GP_END_INVALID_REQUEST;
  CHECK(!gp_sched_could_ever_run(f->nodes, 2, &f->jobs[0].req, &why));
  CHECK(gp_sched_could_ever_run(f->nodes, 2, &mixed->req, &why));
  gp_plan_free(p);
  fx_free(f);
}

/* How many of the gang's tasks went to node `node`. */
static int tasks_on(const gp_plan_start *s, int node) {
  int n = 0;
  for (int t = 0; t < s->n_placements; t++) n += s->placements[t].node == node;
  return n;
}

/* --ntasks-per-node: bin-packing would put all four 1-GPU tasks on one node; a bound of two
 * a node spreads them two and two, and a bound the fleet cannot meet never starts the gang
 * (it ends: no set of nodes could hold it), while the same numbers without it start. */
static void a_gang_keeps_to_its_tasks_per_node(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "free", "a", 1, 4);
  fx_job(f, "two", "a", 1, 4)->req.max_tasks_per_node = 2;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  const gp_plan_start *s = fx_start(f, p, "free");
  REQUIRE(s);
  CHECK_EQ_INT(4, tasks_on(s, s->placements[0].node)); /* unbound: one node */
  s = fx_start(f, p, "two");
  REQUIRE(s);
  CHECK_EQ_INT(2, tasks_on(s, 0));
  CHECK_EQ_INT(2, tasks_on(s, 1));
  gp_plan_free(p);
  fx_free(f);

  f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  f->pol.backfill = false;
  fx_job(f, "one", "a", 1, 3)->req.max_tasks_per_node = 1; /* three nodes needed, two exist */
  fx_job(f, "same", "a", 1, 3);                               /* same numbers, no bound */
  p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "one"));
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(f, p, "one"));
  CHECK(fx_started(f, p, "same")); /* a bound is a class of its own: no shared failure */
  gp_plan_free(p);
  fx_free(f);
}

static int nodes_of(const gp_plan_start *s) {
  int n = 0;
  for (int t = 0; t < s->n_placements; t++) {
    bool first = true;
    for (int u = 0; u < t && first; u++) first = s->placements[u].node != s->placements[t].node;
    n += first;
  }
  return n;
}

/* Slurm's -N 2 --ntasks-per-node 4: exactly 4 tasks on each of exactly 2 nodes. The fullest
 * node (n0, 3 GPUs free) would take the first three tasks under bin-packing and leave the
 * gang on 3 nodes (3 + 4 + 1); a node the gang opens must hold its 4. -N 3 with 4 tasks
 * (2 a node at most) is on 3 nodes, not the 2 the bound alone allows; -N 1 keeps a gang on
 * one node. A count no node set can meet now leaves the gang waiting. */
static void a_gang_keeps_to_its_exact_node_count(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_node(f, "n2", "H100", 8);
  fx_node(f, "n3", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  f->pol.backfill = false;
  fx_running(f, "busy", "a", 5, 0, 0x1f, 0);
  gp_job *j = fx_job(f, "exact", "a", 1, 8);
  j->req.max_tasks_per_node = 4;
  j->req.nodes = 2;
  j = fx_job(f, "three", "a", 1, 4);
  j->req.max_tasks_per_node = 2;
  j->req.nodes = 3;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  const gp_plan_start *s = fx_start(f, p, "exact");
  REQUIRE(s);
  CHECK_EQ_INT(2, nodes_of(s));
  CHECK_EQ_INT(0, tasks_on(s, 0)); /* n0 cannot hold 4 */
  for (int t = 0; t < s->n_placements; t++) CHECK_EQ_INT(4, tasks_on(s, s->placements[t].node));
  s = fx_start(f, p, "three");
  REQUIRE(s);
  CHECK_EQ_INT(3, nodes_of(s));
  gp_plan_free(p);
  fx_free(f);

  f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  f->pol.backfill = false;
  fx_job(f, "one", "a", 1, 6)->req.nodes = 1;
  fx_running(f, "busy", "a", 4, 1, 0x0f, 0);
  j = fx_job(f, "wide", "a", 1, 8); /* 4 + 4 on 2 nodes: n0 has 2 left, n1 4 */
  j->req.max_tasks_per_node = 4;
  j->req.nodes = 2;
  p = fx_step(f, 10);
  REQUIRE(p);
  s = fx_start(f, p, "one");
  REQUIRE(s);
  CHECK_EQ_INT(1, nodes_of(s));
  CHECK(!fx_started(f, p, "wide"));
  gp_plan_free(p);
  fx_free(f);

  /* -N 3 on a pool of 2 nodes could never run: it ends, where the same tasks without the
   * count start. */
  f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  f->pol.backfill = false;
  j = fx_job(f, "three", "a", 1, 4);
  j->req.max_tasks_per_node = 2;
  j->req.nodes = 3;
  fx_job(f, "two", "a", 1, 4)->req.max_tasks_per_node = 2;
  p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "three"));
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(f, p, "three"));
  CHECK(fx_started(f, p, "two"));
  gp_plan_free(p);
  fx_free(f);
}

GP_TESTS(a_gang_keeps_to_its_exact_node_count, a_gang_keeps_to_its_tasks_per_node, a_gang_that_does_not_fit_takes_nothing, a_gang_starts_every_task_with_its_own_placement,
         a_multi_node_gang_prefers_one_block, a_gang_goes_wide_when_no_block_can_hold_it,
         a_gang_of_one_gpu_tasks_does_not_mix_whole_gpus_and_shares,
         a_gang_takes_whole_gpus_of_one_model_when_they_are_free,
         a_gang_looks_past_the_first_model_that_cannot_hold_it,
         naming_several_gpu_types_lets_a_gang_mix_them)
