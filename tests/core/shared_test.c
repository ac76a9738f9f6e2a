/* SPDX-License-Identifier: Apache-2.0 */
/* Requests that do not take whole GPUs: fractions and memory shares on shared GPUs,
 * replicas of time-sliced GPUs, MIG instances and dynamic re-partitioning. */
#include "fixture.h"

static void fractions_share_a_gpu_and_carry_their_memory(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 2);
  for (int g = 0; g < 2; g++) f->gpus[0][g].mode = GP_SHARE_SHARED;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "q1", "a", 0, 1)->req.gpu_milli = 250;
  fx_job(f, "q2", "a", 0, 1)->req.gpu_milli = 250;
  fx_job(f, "m20g", "a", 0, 1)->req.gpu_mem_mib = 20480;
  fx_job(f, "whole", "a", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  const gp_plan_start *a = fx_start(f, p, "q1"), *b = fx_start(f, p, "q2");
  REQUIRE(a && b);
  CHECK_EQ_INT(a->placements[0].gpu_mask, b->placements[0].gpu_mask); /* packed together */
  CHECK_EQ_INT(250, a->placements[0].gpu_milli);
  CHECK_EQ_INT(20480, a->placements[0].gpu_mem_mib); /* a quarter of 80 GiB */
  const gp_plan_start *m = fx_start(f, p, "m20g");
  REQUIRE(m);
  CHECK_EQ_INT(20480, m->placements[0].gpu_mem_mib);
  CHECK_EQ_INT(250, m->placements[0].gpu_milli);
  /* The whole-GPU job takes the GPU nobody shares. */
  const gp_plan_start *w = fx_start(f, p, "whole");
  REQUIRE(w);
  CHECK((w->placements[0].gpu_mask & a->placements[0].gpu_mask) == 0);
  gp_plan_free(p);
  fx_free(f);
}

static void the_sharing_policy_decides_where_a_fraction_goes(void) {
  /* Node "packed" has a half-used GPU and plenty of CPU; node "tight" has one idle GPU and
   * little CPU. GpuPacking prefers the partly used GPU; BestFit prefers the node with the
   * least left after the placement. The core asks core/share, so the policy decides. */
  fx *f = fx_new();
  gp_node *packed = fx_node(f, "packed", "H100", 2);
  gp_node *tight = fx_node(f, "tight", "H100", 1);
  (void)packed;
  tight->cpu_milli = 2000;
  tight->mem_mib = 8192;
  for (int g = 0; g < 2; g++) f->gpus[0][g].mode = GP_SHARE_SHARED;
  f->gpus[1][0].mode = GP_SHARE_SHARED;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *half = fx_job(f, "running-half", "a", 0, 1);
  half->req.gpu_milli = 500;
  half->state = GP_JOB_RUNNING;
  f->placements[0][half->n_placements++] =
      (gp_placement){.node = 0, .gpu_mask = 1, .gpu_milli = 500, .gpu_mem_mib = 40960, .mig_instance = -1};
  gp_job *q = fx_job(f, "half", "a", 0, 1);
  q->req.gpu_milli = 500;
  q->req.cpu_milli = 1000;
  f->pol.share = GP_SHARE_POLICY_GPUPACKING;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p && fx_started(f, p, "half"));
  CHECK_EQ_INT(0, fx_start(f, p, "half")->placements[0].node);
  CHECK_EQ_INT(1, fx_start(f, p, "half")->placements[0].gpu_mask); /* the half-used GPU */
  gp_plan_free(p);
  f->pol.share = GP_SHARE_POLICY_BESTFIT;
  p = fx_step(f, 10);
  REQUIRE(p && fx_started(f, p, "half"));
  CHECK_EQ_INT(1, fx_start(f, p, "half")->placements[0].node);
  gp_plan_free(p);
  fx_free(f);
}

static void exclusive_gpus_never_take_fractions(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 2);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "q", "a", 0, 1)->req.gpu_milli = 500;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "q"));
  CHECK_EQ_STR("NoMatchingNodes", fx_reason(f, p, "q"));
  gp_plan_free(p);
  fx_free(f);
}

static void timesliced_gpus_hand_out_replicas(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "T4", 1);
  f->gpus[0][0].mode = GP_SHARE_TIMESLICE;
  f->gpus[0][0].timeslice_replicas = 2;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "r1", "a", 0, 1)->req.gpu_milli = 100;
  fx_job(f, "r2", "a", 0, 1)->req.gpu_milli = 100;
  fx_job(f, "r3", "a", 0, 1)->req.gpu_milli = 100;
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(fx_started(f, p, "r1") && fx_started(f, p, "r2"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "r3"));
  gp_plan_free(p);
  fx_free(f);
}

static void mig_jobs_take_a_free_instance_of_their_profile(void) {
  fx *f = fx_new();
  fx_node(f, "m0", "A100-80GB", 1);
  static const gp_mig_instance layout[] = {{"3g.40gb", 4, NULL}, {"2g.20gb", 0, NULL}, {"1g.10gb", 2, NULL}, {"1g.10gb", 3, NULL}};
  f->gpus[0][0].mode = GP_SHARE_MIG;
  f->gpus[0][0].mig = layout;
  f->gpus[0][0].n_mig = 4;
  f->pol.dynamic_mig = false;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *busy = fx_job(f, "busy", "a", 0, 1);
  busy->req.mig_profile = "1g.10gb";
  busy->state = GP_JOB_RUNNING;
  f->placements[0][busy->n_placements++] = (gp_placement){.node = 0, .gpu_mask = 1, .mig_instance = 2};
  fx_job(f, "small", "a", 0, 1)->req.mig_profile = "1g.10gb";
  fx_job(f, "small2", "a", 0, 1)->req.mig_profile = "1g.10gb";
  fx_job(f, "mid", "a", 0, 1)->req.mig_profile = "3g.40gb";
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  REQUIRE(fx_started(f, p, "small"));
  CHECK_EQ_INT(3, fx_start(f, p, "small")->placements[0].mig_instance);
  CHECK_EQ_INT(0, fx_start(f, p, "mid")->placements[0].mig_instance);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "small2"));
  CHECK_NEAR(1.0 / 7 + 1.0 / 7 + 3.0 / 7, fx_plan_queue(p, "a")->allocated, 1e-9);
  gp_plan_free(p);
  fx_free(f);
}

static void an_idle_mig_gpu_is_repartitioned_for_pending_demand(void) {
  fx *f = fx_new();
  fx_node(f, "m0", "A100-80GB", 2);
  static const gp_mig_instance big[] = {{"7g.80gb", 0, NULL}};
  for (int g = 0; g < 2; g++) {
    f->gpus[0][g].mode = GP_SHARE_MIG;
    f->gpus[0][g].mig = big;
    f->gpus[0][g].n_mig = 1;
  }
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *busy = fx_job(f, "busy", "a", 0, 1);
  busy->req.mig_profile = "7g.80gb";
  busy->state = GP_JOB_RUNNING;
  f->placements[0][busy->n_placements++] = (gp_placement){.node = 0, .gpu_mask = 1, .mig_instance = 0};
  fx_job(f, "s1", "a", 0, 1)->req.mig_profile = "1g.10gb";
  fx_job(f, "s2", "a", 0, 1)->req.mig_profile = "1g.10gb";
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  REQUIRE(p->n_mig == 1);
  CHECK_EQ_INT(1, p->mig[0].gpu); /* the idle GPU, never the busy one */
  int small = 0;
  for (int i = 0; i < p->mig[0].n_instances; i++) small += strcmp(p->mig[0].profiles[i], "1g.10gb") == 0;
  CHECK(small >= 2);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "s1"));
  for (int i = 0; i < p->n_pending; i++) CHECK_CONTAINS(p->pending[i].message, "re-partitioned");
  gp_plan_free(p);
  fx_free(f);
}

static void one_gpu_jobs_take_a_replica_when_no_whole_gpu_is_free(void) {
  /* "ex" has one exclusive T4; "ts" has two T4s time-sliced 2 ways, and GPU 1 already runs
   * a one-GPU job on one of its replicas. One-GPU jobs take the exclusive GPU first, then
   * replicas, fullest GPU first, one replica per task (a gang's tasks may share a GPU).
   * A two-GPU job never gets replicas: two replicas are not two GPUs. */
  fx *f = fx_new();
  fx_node(f, "ex", "T4", 1);
  fx_node(f, "ts", "T4", 2);
  for (int g = 0; g < 2; g++) {
    f->gpus[1][g].mode = GP_SHARE_TIMESLICE;
    f->gpus[1][g].timeslice_replicas = 2;
  }
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *old = fx_job(f, "old", "a", 1, 1);
  old->state = GP_JOB_RUNNING;
  f->placements[0][old->n_placements++] =
      (gp_placement){.node = 1, .gpu_mask = 2, .gpu_milli = 500, .mig_instance = -1};
  fx_job(f, "w1", "a", 1, 1);
  fx_job(f, "w2", "a", 1, 1);
  fx_job(f, "gang", "a", 1, 2);
  fx_job(f, "pair", "a", 2, 1);
  fx_job(f, "w3", "a", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  const gp_plan_start *w1 = fx_start(f, p, "w1"), *w2 = fx_start(f, p, "w2");
  const gp_plan_start *gang = fx_start(f, p, "gang");
  REQUIRE(w1 && w2 && gang);
  CHECK_EQ_INT(0, w1->placements[0].node); /* the exclusive GPU first */
  CHECK_EQ_INT(1000, w1->placements[0].gpu_milli);
  CHECK_EQ_INT(1, w2->placements[0].node); /* then the fullest time-sliced GPU */
  CHECK_EQ_INT(2, w2->placements[0].gpu_mask);
  CHECK_EQ_INT(500, w2->placements[0].gpu_milli); /* 1000 / 2 replicas */
  CHECK_EQ_INT(0, w2->placements[0].gpu_mem_mib);
  CHECK_EQ_INT(-1, w2->placements[0].mig_instance);
  REQUIRE(gang->n_placements == 2);
  for (int t = 0; t < 2; t++) {
    CHECK_EQ_INT(1, gang->placements[t].node);
    CHECK_EQ_INT(1, gang->placements[t].gpu_mask); /* both replicas of GPU 0 */
    CHECK_EQ_INT(500, gang->placements[t].gpu_milli);
  }
  CHECK(!fx_started(f, p, "pair"));
  CHECK_EQ_STR("NoMatchingNodes", fx_reason(f, p, "pair"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "w3")); /* every replica is taken */
  /* Allocation: old's replica (0.5), w1's whole GPU (1), w2's and gang's three replicas
   * (0.5 each): what the next step counts from their placements once they run. */
  CHECK_NEAR(0.5 + 1 + 3 * 0.5, fx_plan_queue(p, "a")->allocated, 1e-9);
  gp_plan_free(p);

  /* With the exclusive GPU busy and every replica taken, nothing more starts, and a gang of
   * one-GPU tasks as large as the replicas of the fleet still counts as feasible. */
  fx_run(f, &f->jobs[fx_index(f, "w1")], 0, 1, 5);
  gp_job *big = fx_job(f, "big", "a", 1, 5);
  big->submitted_at = 100;
  p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "big"));
  gp_plan_free(p);
  fx_free(f);
}

GP_TESTS(fractions_share_a_gpu_and_carry_their_memory, the_sharing_policy_decides_where_a_fraction_goes,
         exclusive_gpus_never_take_fractions,
         timesliced_gpus_hand_out_replicas, mig_jobs_take_a_free_instance_of_their_profile,
         an_idle_mig_gpu_is_repartitioned_for_pending_demand,
         one_gpu_jobs_take_a_replica_when_no_whole_gpu_is_free)
