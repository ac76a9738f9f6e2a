/* SPDX-License-Identifier: Apache-2.0 */
/* Priority preemption inside a queue, reclaim across queues, reserved pools, victim order,
 * min_runtime, transactions and the absence of ping-pong. */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

/* Backfill is off in most clusters here, so a job that starts does so by preemption's
 * decision, not by filling a gap. */
static fx *one_node_cluster(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  f->pol.backfill = false;
  return f;
}

/* One node of 8 GPUs, all deserved by queue a: only priority preemption applies. */
static fx *one_queue_cluster(void) {
  fx *f = one_node_cluster();
  fx_queue(f, "a", 8, GP_NO_LIMIT, 1);
  return f;
}

/* One node of 8 GPUs that queues a and b deserve half each: the ground of reclaim. */
static fx *two_queue_cluster(void) {
  fx *f = one_node_cluster();
  fx_queue(f, "a", 4, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 4, GP_NO_LIMIT, 1);
  return f;
}

/* Nodes n0 and n1 of 8 GPUs of the given models; queues a and b deserve 8 each. */
static fx *two_node_cluster(const char *model0, const char *model1) {
  fx *f = fx_new();
  fx_node(f, "n0", model0, 8);
  fx_node(f, "n1", model1, 8);
  f->pol.backfill = false;
  fx_queue(f, "a", 8, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 8, GP_NO_LIMIT, 1);
  return f;
}

/* One node labelled pool=infer, reserved for queue infer and lent to others; neither
 * queue deserves anything, so only the pool gives infer a right to it. */
static fx *pool_cluster(void) {
  fx *f = fx_new();
  gp_node *n = fx_node(f, "pool-node", "H100", 8);
  fx_label(f, n, "pool", "infer");
  fx_queue(f, "infer", 0, GP_NO_LIMIT, 1);
  fx_queue(f, "research", 0, GP_NO_LIMIT, 1);
  f->pools[f->view.n_pools++] = (gp_pool){"infer-pool", "infer", {"pool", "infer"}, true};
  return f;
}

static void a_higher_priority_job_preempts_inside_its_queue(void) {
  fx *f = one_queue_cluster();
  fx_running(f, "low", "a", 8, 0, 0xff, 0)->priority_class = "batch";
  fx_job(f, "high", "a", 4, 1)->priority_class = "training";
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK(fx_preempted(f, p, "low", "high", GP_PREEMPT_PRIORITY));
  CHECK_EQ_STR("WaitingForPreemption", fx_reason(f, p, "high"));
  CHECK(!fx_started(f, p, "high")); /* the victim still holds its GPUs while it stops */
  fx_free(f);
}

static void priority_preemption_never_crosses_queues_nor_equal_priorities(void) {
  fx *f = two_queue_cluster();
  f->pol.reclaim = false;
  fx_running(f, "other-queue", "b", 4, 0, 0x0f, 0)->priority_class = "batch";
  fx_running(f, "same-prio", "a", 4, 0, 0xf0, 0);
  fx_job(f, "high", "a", 4, 1);
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "high"));
  fx_free(f);
}

static void non_preemptible_and_young_jobs_are_never_victims(void) {
  fx *f = one_queue_cluster();
  f->pol.min_runtime = 600;
  fx_running(f, "inference", "a", 4, 0, 0x0f, 0)->priority_class = "inference";
  /* 100 s old at now = 1000 */
  fx_running(f, "young", "a", 4, 0, 0xf0, 900)->priority_class = "batch";
  fx_job(f, "interactive", "a", 4, 1)->priority_class = "interactive";
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  /* Once it is past min_runtime it may go. */
  p = fx_plan(f, 1600);
  REQUIRE(p);
  CHECK(fx_preempted(f, p, "young", "interactive", GP_PREEMPT_PRIORITY));
  fx_free(f);
}

static void victims_are_lowest_priority_then_least_work_lost_then_youngest(void) {
  fx *f = one_queue_cluster();
  fx_running(f, "opportunistic", "a", 2, 0, 0x03, 100)->priority_class = "opportunistic";
  gp_job *b1 = fx_running(f, "batch-checkpointed", "a", 2, 0, 0x0c, 100);
  b1->priority_class = "batch";
  b1->last_checkpoint_at = 950; /* loses 50 s */
  fx_running(f, "batch-old", "a", 2, 0, 0x30, 100)->priority_class = "batch"; /* loses 900 s */
  /* loses 50 s, younger than the checkpointed one */
  fx_running(f, "batch-young", "a", 2, 0, 0xc0, 950)->priority_class = "batch";
  fx_job(f, "needs4", "a", 4, 1)->priority_class = "training";
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(2, p->n_preemptions);
  CHECK(fx_preempted(f, p, "opportunistic", "needs4", GP_PREEMPT_PRIORITY));
  CHECK(fx_preempted(f, p, "batch-young", "needs4", GP_PREEMPT_PRIORITY));
  fx_free(f);
}

static void nothing_is_evicted_unless_the_preemptor_then_fits(void) {
  fx *f = one_queue_cluster();
  fx_running(f, "low", "a", 4, 0, 0x0f, 0)->priority_class = "batch";
  fx_running(f, "inference", "a", 4, 0, 0xf0, 0)->priority_class = "inference";
  fx_job(f, "needs8", "a", 8, 1)->priority_class = "training";
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "needs8"));
  fx_free(f);
}

static void a_failed_gang_preemption_leaves_the_victims_gpus_held(void) {
  /* Task 1 of the gang would fit on n0 by evicting low, task 2 cannot fit anywhere: the
   * simulation rolls back and nobody may use low's GPUs in this step. */
  fx *f = one_node_cluster();
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 16, GP_NO_LIMIT, 1);
  fx_running(f, "low", "a", 8, 0, 0xff, 0)->priority_class = "batch";
  fx_running(f, "inference", "a", 8, 1, 0xff, 0)->priority_class = "inference";
  fx_job(f, "gang", "a", 8, 2)->priority_class = "interactive";
  fx_job(f, "one", "a", 1, 1)->priority_class = "batch";
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  CHECK_EQ_INT(0, p->n_starts);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "one"));
  fx_free(f);
}

static void a_queue_below_its_share_reclaims_only_what_was_lent(void) {
  /* 8 GPUs, a and b deserve 4 each. b borrowed all 8 while a was idle; a now wants 4. */
  fx *f = two_queue_cluster();
  static const char *ids[] = {"b0", "b1", "b2", "b3"};
  for (int i = 0; i < 4; i++) fx_running(f, ids[i], "b", 2, 0, 0x3u << (2 * i), 100 + i);
  fx_job(f, "a-job", "a", 4, 1);
  fx_job(f, "a-more", "a", 4, 1);
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  /* Two of b's jobs (the youngest) go; a's second job would push a above its share. */
  CHECK_EQ_INT(2, p->n_preemptions);
  CHECK(fx_preempted(f, p, "b3", "a-job", GP_PREEMPT_RECLAIM));
  CHECK(fx_preempted(f, p, "b2", "a-job", GP_PREEMPT_RECLAIM));
  CHECK_EQ_STR("WaitingForPreemption", fx_reason(f, p, "a-job"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "a-more"));
  const gp_plan_queue *qa = fx_plan_queue(p, "a"), *qb = fx_plan_queue(p, "b");
  REQUIRE(qa && qb);
  CHECK_NEAR(4, qa->fair_share, 1e-9);
  CHECK_NEAR(4, qb->fair_share, 1e-9);
  fx_free(f);
}

/* Reclaim takes what keeps the lender at its share: of b's jobs, the 1-GPU one, though
 * two 4-GPU jobs come before it in victim order (each alone would take b below its share).
 * The second one must not look like a candidate because the first failed with as many
 * GPUs: it would take its node, which the 1-GPU job shares, out of the search. */
static void reclaim_passes_over_victims_too_big_for_the_lenders_share(void) {
  fx *f = two_node_cluster("H100", "H100");
  fx_running(f, "a0", "a", 4, 0, 0xf0, 0);
  fx_running(f, "a1", "a", 3, 1, 0xe0, 0);
  fx_running(f, "z1", "b", 4, 0, 0x0f, 500); /* youngest: first victim */
  fx_running(f, "z2", "b", 4, 1, 0x0f, 400);
  fx_running(f, "y", "b", 1, 1, 0x10, 300);
  fx_job(f, "j", "a", 1, 1);
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(1, p->n_preemptions);
  CHECK(fx_preempted(f, p, "y", "j", GP_PREEMPT_RECLAIM));
  fx_free(f);
}

static void reclaim_spares_non_preemptible_jobs_and_queues_at_their_share(void) {
  fx *f = two_queue_cluster();
  fx_running(f, "b-inference", "b", 8, 0, 0xff, 0)->priority_class = "inference";
  fx_job(f, "a-job", "a", 2, 1);
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  fx_free(f);
}

static void the_victims_stopping_make_the_preemptor_wait_without_new_victims(void) {
  /* The step after a reclaim: b3 and b2 are STOPPING. a-job must not pick more victims. */
  fx *f = two_queue_cluster();
  static const char *ids[] = {"b0", "b1", "b2", "b3"};
  for (int i = 0; i < 4; i++) {
    gp_job *j = fx_running(f, ids[i], "b", 2, 0, 0x3u << (2 * i), 100 + i);
    if (i >= 2) j->state = GP_JOB_STOPPING;
  }
  fx_job(f, "a-job", "a", 4, 1);
  const gp_plan *p = fx_plan(f, 1010);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  CHECK_EQ_STR("WaitingForPreemption", fx_reason(f, p, "a-job"));
  const gp_plan_queue *qb = fx_plan_queue(p, "b");
  CHECK_NEAR(8, qb->allocated, 1e-9); /* stopping jobs still hold their GPUs */
  fx_free(f);
}

static void a_job_waits_for_a_stopping_gang_on_the_gangs_second_node(void) {
  /* The stopping gang holds n0 (A100) and n1 (H100); only n1 suits the waiting job, so it
   * must find the gang among n1's stopping jobs, not just n0's. */
  fx *f = two_node_cluster("A100", "H100");
  gp_job *gang = fx_job(f, "b-gang", "b", 8, 2);
  fx_run(f, gang, 0, 0xffu, 100);
  fx_run(f, gang, 1, 0xffu, 100);
  gang->state = GP_JOB_STOPPING;
  fx_models(f, fx_job(f, "a-job", "a", 8, 1), "H100");
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  CHECK_EQ_STR("WaitingForPreemption", fx_reason(f, p, "a-job"));
  fx_free(f);
}

static void no_ping_pong_the_victim_queue_cannot_reclaim_back(void) {
  /* After the reclaim, a holds 4 (its share) and b 4 (its share). b's new job may not
   * take anything back from a. */
  fx *f = two_queue_cluster();
  fx_running(f, "a-job", "a", 4, 0, 0x0f, 1000);
  fx_running(f, "b-job", "b", 4, 0, 0xf0, 100);
  fx_job(f, "b-more", "b", 2, 1);
  const gp_plan *p = fx_plan(f, 2000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "b-more"));
  fx_free(f);
}

static void a_pool_owner_takes_its_nodes_back_from_borrowers(void) {
  fx *f = pool_cluster();
  f->pol.backfill = false;
  fx_running(f, "borrower", "research", 8, 0, 0xff, 0);
  fx_job(f, "owner", "infer", 4, 1);
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK(fx_preempted(f, p, "borrower", "owner", GP_PREEMPT_RECLAIM));
  /* The pool's right does not depend on priority preemption or reclaim being on. */
  f->pol.preemption = f->pol.reclaim = false;
  p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK(fx_preempted(f, p, "borrower", "owner", GP_PREEMPT_RECLAIM));
  fx_free(f);
}

static void pools_lend_only_to_preemptible_jobs_and_never_when_closed(void) {
  fx *f = pool_cluster();
  fx_job(f, "preemptible", "research", 1, 1);
  fx_job(f, "not-preemptible", "research", 1, 1)->priority_class = "interactive";
  const gp_plan *p = fx_plan(f, 10);
  REQUIRE(p);
  CHECK(fx_started(f, p, "preemptible"));
  CHECK(!fx_started(f, p, "not-preemptible"));
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(f, p, "not-preemptible"));
  f->pools[0].lend = false;
  p = fx_plan(f, 10);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "preemptible"));
  fx_free(f);
}

typedef struct vict { int prio, j; gp_time lost, started; } vict;
static int vict_cmp(const void *x, const void *y) { /* DESIGN.md's victim order, spelled out */
  const vict *a = x, *b = y;
  if (a->prio != b->prio) return a->prio < b->prio ? -1 : 1;
  if (a->lost != b->lost) return a->lost < b->lost ? -1 : 1;
  if (a->started != b->started) return a->started > b->started ? -1 : 1;
  return a->j < b->j ? -1 : a->j > b->j;
}

static void eight_preemptions_take_the_eight_cheapest_of_hundreds_of_victims(void) {
  /* 320 one-GPU jobs fill 40 nodes: three preemptible classes, start times and checkpoints
   * drawn from small ranges (many ties, so later keys and the view index decide), some
   * starts long ago, some checkpoints after now (negative work lost). Eight inference
   * jobs of the same queue each need one GPU: the step's eight simulations must take, in
   * order, exactly the eight first jobs of the victim order. */
  static char node_names[40][8], ids[330][8];
  static const char *cls[3] = {"training", "batch", "opportunistic"};
  static const int cls_prio[3] = {50, 20, 0};
  fx *f = fx_new();
  for (int i = 0; i < 40; i++) {
    snprintf(node_names[i], sizeof node_names[i], "n%02d", i);
    fx_node(f, node_names[i], "H100", 8);
  }
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  vict want[320];
  uint32_t x = 777;
  gp_time now = 1000;
  for (int k = 0; k < 320; k++) {
    x = x * 1103515245u + 12345u;
    snprintf(ids[k], sizeof ids[k], "r%03d", k);
    int c = (int)((x >> 16) % 3);
    gp_time started = (x >> 8) % 4 == 0 ? -4000000000LL + (gp_time)((x >> 4) % 3) : (gp_time)((x >> 12) % 5) * 100;
    gp_job *job = fx_running(f, ids[k], "a", 1, k / 8, 1u << (k % 8), started);
    job->priority_class = cls[c];
    x = x * 1103515245u + 12345u;
    job->last_checkpoint_at = (x >> 16) % 3 == 0 ? 0 : (gp_time)((x >> 8) % 4) * 400; /* up to 1200 > now */
    gp_time since = job->last_checkpoint_at > started ? job->last_checkpoint_at : started;
    want[k] = (vict){cls_prio[c], k, now - since, started};
  }
  static const char *urgent[8] = {"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7"};
  for (int k = 0; k < 8; k++) fx_job(f, urgent[k], "a", 1, 1)->priority_class = "inference";
  qsort(want, 320, sizeof *want, vict_cmp);
  const gp_plan *p = fx_plan(f, now);
  REQUIRE(p);
  CHECK_EQ_INT(8, p->n_preemptions);
  int bad = -1;
  for (int k = 0; k < p->n_preemptions && k < 8 && bad < 0; k++)
    if (p->preemptions[k].job != want[k].j) bad = k;
  CHECK_EQ_INT(-1, bad);
  fx_free(f);
}

/* --exclusive: a higher-priority exclusive job clears a node of preemptible lower-priority
 * jobs to have it whole, by the same rules as any preemption: n0 holds two preemptible
 * jobs, n1 a cheaper victim beside a non-preemptible job, which keeps n1 from ever being
 * whole, so n0's two are taken and n1's left. And a job may preempt an exclusive one to
 * use its node. */
static void an_exclusive_job_preempts_to_have_a_node_whole(void) {
  fx *f = two_node_cluster("H100", "H100");
  fx_running(f, "low-a", "a", 2, 0, 0x03, 0)->priority_class = "batch";
  fx_running(f, "low-b", "a", 2, 0, 0x0c, 0)->priority_class = "batch";
  fx_running(f, "inference", "a", 2, 1, 0x03, 0)->priority_class = "inference";
  fx_running(f, "cheap", "a", 1, 1, 0x04, 0)->priority_class = "opportunistic";
  gp_job *x = fx_job(f, "excl", "a", 4, 1);
  x->priority_class = "training";
  x->req.exclusive = true;
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK(fx_preempted(f, p, "low-a", "excl", GP_PREEMPT_PRIORITY));
  CHECK(fx_preempted(f, p, "low-b", "excl", GP_PREEMPT_PRIORITY));
  CHECK(!fx_preempted(f, p, "cheap", "excl", GP_PREEMPT_PRIORITY));
  CHECK(!fx_preempted(f, p, "inference", "excl", GP_PREEMPT_PRIORITY));
  CHECK_EQ_STR("WaitingForPreemption", fx_reason(f, p, "excl"));
  fx_free(f);

  f = one_queue_cluster();
  gp_job *low = fx_running(f, "low-excl", "a", 2, 0, 0x03, 0);
  low->priority_class = "batch";
  low->req.exclusive = true;
  fx_job(f, "high", "a", 4, 1)->priority_class = "training";
  p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK(fx_preempted(f, p, "low-excl", "high", GP_PREEMPT_PRIORITY));
  fx_free(f);

  /* A young victim (min_runtime) keeps its node: nothing is evicted. */
  f = one_queue_cluster();
  f->pol.min_runtime = 600;
  fx_running(f, "old", "a", 2, 0, 0x03, 0)->priority_class = "batch";
  fx_running(f, "young", "a", 2, 0, 0x0c, 900)->priority_class = "batch";
  x = fx_job(f, "excl", "a", 2, 1);
  x->priority_class = "training";
  x->req.exclusive = true;
  p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK(!fx_preempted(f, p, "old", "excl", GP_PREEMPT_PRIORITY));
  CHECK(!fx_started(f, p, "excl"));
  fx_free(f);
}

GP_TESTS(a_higher_priority_job_preempts_inside_its_queue, an_exclusive_job_preempts_to_have_a_node_whole,
         priority_preemption_never_crosses_queues_nor_equal_priorities,
         non_preemptible_and_young_jobs_are_never_victims,
         victims_are_lowest_priority_then_least_work_lost_then_youngest,
         nothing_is_evicted_unless_the_preemptor_then_fits,
         a_failed_gang_preemption_leaves_the_victims_gpus_held,
         a_queue_below_its_share_reclaims_only_what_was_lent,
         reclaim_passes_over_victims_too_big_for_the_lenders_share,
         reclaim_spares_non_preemptible_jobs_and_queues_at_their_share,
         the_victims_stopping_make_the_preemptor_wait_without_new_victims,
         a_job_waits_for_a_stopping_gang_on_the_gangs_second_node,
         no_ping_pong_the_victim_queue_cannot_reclaim_back,
         a_pool_owner_takes_its_nodes_back_from_borrowers,
         pools_lend_only_to_preemptible_jobs_and_never_when_closed,
         eight_preemptions_take_the_eight_cheapest_of_hundreds_of_victims)
