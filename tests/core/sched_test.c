/* SPDX-License-Identifier: Apache-2.0 */
/* gp_sched_step end to end on small clusters: what a user sees in the plan. */
#include "fixture.h"

static void two_jobs_start_on_one_node_by_binpacking(void) {
  fx *f = fx_new();
  fx_node(f, "n1", "H100", 8);
  fx_node(f, "n2", "H100", 8);
  fx_queue(f, "org/a", 8, GP_NO_LIMIT, 1);
  fx_job(f, "j1", "org/a", 2, 1);
  fx_job(f, "j2", "org/a", 4, 1);
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(2, p->n_starts);
  const gp_plan_start *s1 = fx_start(f, p, "j1"), *s2 = fx_start(f, p, "j2");
  REQUIRE(s1 && s2);
  CHECK_EQ_INT(s1->placements[0].node, s2->placements[0].node);
  CHECK_EQ_INT(0x3, s1->placements[0].gpu_mask);
  CHECK_EQ_INT(0x3c, s2->placements[0].gpu_mask);
  const gp_plan_queue *q = fx_plan_queue(p, "org/a");
  REQUIRE(q);
  CHECK_NEAR(6, q->allocated, 1e-9);
  REQUIRE(fx_plan_queue(p, "org"));
  CHECK_EQ_INT(-1, fx_plan_queue(p, "org")->parent);
  gp_plan_free(p);
  fx_free(f);
}

GP_TESTS(two_jobs_start_on_one_node_by_binpacking)
