/* SPDX-License-Identifier: Apache-2.0 */
/* Backfill: the blocked job gets a reservation from running jobs' time limits; later jobs
 * start only when they end before it or use GPUs it does not need. */
#include "fixture.h"

static const gp_plan_reservation *resv_of(const fx *f, const gp_plan *p, const char *id) {
  int j = fx_index(f, id);
  for (int i = 0; p && i < p->n_reservations; i++)
    if (p->reservations[i].job == j) return &p->reservations[i];
  return NULL;
}

static fx *half_busy_node(void) {
  /* n0: r1 holds GPUs 0-3 until 100 + 3600 = 3700; GPUs 4-7 are free at now = 1000. */
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *r1 = fx_job(f, "r1", "a", 4, 1);
  r1->time_limit = 3600;
  fx_run(f, r1, 0, 0x0f, 100);
  return f;
}

static void a_short_job_backfills_but_a_long_one_would_delay_the_reservation(void) {
  fx *f = half_busy_node();
  fx_job(f, "big", "a", 8, 1)->time_limit = 3600;
  fx_job(f, "long", "a", 4, 1)->time_limit = 5000;  /* would end at 6000 > 3700 */
  fx_job(f, "short", "a", 4, 1)->time_limit = 2000; /* ends at 3000 <= 3700 */
  gp_plan *p = fx_step(f, 1000);
  REQUIRE(p);
  const gp_plan_reservation *rv = resv_of(f, p, "big");
  REQUIRE(rv);
  CHECK_EQ_INT(3700, rv->at);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "big"));
  CHECK_EQ_STR("Reservation", fx_reason(f, p, "long"));
  CHECK(fx_started(f, p, "short"));
  gp_plan_free(p);
  fx_free(f);
}

/* "Reservation" means the job would fit if nothing were reserved: that is asked again
 * after every start, since a start may have taken what fitted. */
static void a_job_waits_for_resources_once_a_backfilled_start_took_what_fitted(void) {
  fx *f = half_busy_node();
  fx_job(f, "big", "a", 8, 1)->time_limit = 3600;
  gp_job *long1 = fx_job(f, "long1", "a", 4, 1), *shrt = fx_job(f, "short", "a", 4, 1);
  gp_job *long2 = fx_job(f, "long2", "a", 4, 1);
  long1->time_limit = long2->time_limit = 5000; /* would delay big */
  shrt->time_limit = 2000;                      /* ends before big's reservation */
  long1->submitted_at = 1, shrt->submitted_at = 2, long2->submitted_at = 3;
  gp_plan *p = fx_step(f, 1000);
  REQUIRE(p);
  CHECK_EQ_STR("Reservation", fx_reason(f, p, "long1"));
  CHECK(fx_started(f, p, "short"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "long2"));
  gp_plan_free(p);
  fx_free(f);
}

/* A job that holds no GPU frees none: a node whose GPUs all free at 3,700 can give a
 * whole-node job its slot then, even while a CPU-only job runs on there until 9,100. */
static void a_cpu_only_job_does_not_hold_back_a_whole_node_reservation(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *r0 = fx_job(f, "r0", "a", 8, 1), *r1 = fx_job(f, "r1", "a", 8, 1);
  gp_job *cpu = fx_job(f, "cpu", "a", 0, 1);
  r0->time_limit = 4900;  /* n0 frees at 5,000 */
  r1->time_limit = 3600;  /* n1's GPUs free at 3,700 */
  cpu->time_limit = 9000; /* n1's CPU-only job ends at 9,100 */
  cpu->req.cpu_milli = 1000;
  fx_run(f, r0, 0, 0xff, 100);
  fx_run(f, r1, 1, 0xff, 100);
  fx_run(f, cpu, 1, 0, 100);
  fx_job(f, "big", "a", 8, 1)->time_limit = 3600;
  gp_plan *p = fx_step(f, 1000);
  REQUIRE(p);
  const gp_plan_reservation *rv = resv_of(f, p, "big");
  REQUIRE(rv);
  CHECK_EQ_INT(3700, rv->at);
  gp_plan_free(p);
  fx_free(f);
}

static void without_backfill_a_strict_fifo_head_blocks_everyone(void) {
  fx *f = half_busy_node();
  f->pol.order = GP_ORDER_FIFO;
  f->pol.backfill = false;
  fx_job(f, "big", "a", 8, 1);
  fx_job(f, "short", "a", 4, 1)->time_limit = 60;
  gp_plan *p = fx_step(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_starts);
  CHECK_EQ_INT(0, p->n_reservations);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "big"));
  CHECK_EQ_STR("Priority", fx_reason(f, p, "short"));
  gp_plan_free(p);
  fx_free(f);
}

static void on_a_full_cluster_the_strict_head_still_blocks_everyone(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r1", "a", 8, 1), 0, 0xff, 100);
  f->pol.order = GP_ORDER_FIFO;
  f->pol.backfill = false;
  fx_job(f, "head", "a", 2, 1);
  fx_job(f, "next", "a", 1, 1);
  gp_plan *p = fx_step(f, 1000);
  REQUIRE(p);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "head"));
  CHECK_EQ_STR("Priority", fx_reason(f, p, "next"));
  gp_plan_free(p);
  fx_free(f);
}

static void a_job_may_use_gpus_the_reservation_does_not_need(void) {
  fx *f = half_busy_node();
  fx_node(f, "n1", "H100", 8);
  gp_job *r2 = fx_job(f, "r2", "a", 6, 1);
  r2->time_limit = 1900;
  fx_run(f, r2, 1, 0x3f, 100); /* n1 frees all 8 at 2000 */
  f->pol.order = GP_ORDER_PRIORITY;  /* EASY backfill */
  fx_job(f, "big", "a", 8, 1);
  fx_job(f, "endless", "a", 4, 1);   /* no time limit: may not touch reserved GPUs */
  gp_plan *p = fx_step(f, 1000);
  REQUIRE(p);
  const gp_plan_reservation *rv = resv_of(f, p, "big");
  REQUIRE(rv);
  CHECK_EQ_INT(2000, rv->at);
  const gp_plan_start *s = fx_start(f, p, "endless");
  REQUIRE(s);
  CHECK_EQ_INT(0, s->placements[0].node); /* n0's free GPUs, not n1's reserved ones */
  gp_plan_free(p);
  fx_free(f);
}

static void jobs_without_any_time_limit_get_no_reservation(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r1", "a", 4, 1), 0, 0x0f, 100);
  fx_job(f, "big", "a", 8, 1);
  fx_job(f, "small", "a", 4, 1);
  gp_plan *p = fx_step(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_reservations);
  CHECK(fx_started(f, p, "small"));
  gp_plan_free(p);
  /* The queue's default time limit makes r1's end known, and the policy default too. */
  f->queues[0].default_time_limit = 1000;
  p = fx_step(f, 1000);
  REQUIRE(p);
  REQUIRE(resv_of(f, p, "big"));
  CHECK_EQ_INT(1100, resv_of(f, p, "big")->at);
  CHECK_EQ_STR("Reservation", fx_reason(f, p, "small")); /* small's own limit is 1000 too */
  gp_plan_free(p);
  fx_free(f);
}

/* An exact node count (Slurm's -N): the reservation is for as many distinct nodes as
 * placement will use. n0 frees all 8 GPUs at 3,700, n1 at 5,000, n2 at 9,100: a gang of
 * 2 x 4 GPUs on exactly 2 nodes can start at 5,000 (n0 and n1), not at 3,700 on n0 alone.
 * Without the count, the gang's reservation is n0's, at 3,700; and with -N 1 too. */
static void a_reservation_spans_the_jobs_exact_node_count(void) {
  for (int nodes = 0; nodes <= 2; nodes++) {
    fx *f = fx_new();
    fx_node(f, "n0", "H100", 8);
    fx_node(f, "n1", "H100", 8);
    fx_node(f, "n2", "H100", 8);
    fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
    gp_job *r0 = fx_job(f, "r0", "a", 8, 1), *r1 = fx_job(f, "r1", "a", 8, 1), *r2 = fx_job(f, "r2", "a", 8, 1);
    r0->time_limit = 3600;
    r1->time_limit = 4900;
    r2->time_limit = 9000;
    fx_run(f, r0, 0, 0xff, 100);
    fx_run(f, r1, 1, 0xff, 100);
    fx_run(f, r2, 2, 0xff, 100);
    gp_job *big = fx_job(f, "big", "a", 4, 2);
    big->time_limit = 3600;
    big->req.nodes = nodes;
    gp_plan *p = fx_step(f, 1000);
    REQUIRE(p);
    const gp_plan_reservation *rv = resv_of(f, p, "big");
    REQUIRE(rv);
    CHECK_EQ_INT(nodes == 2 ? 5000 : 3700, rv->at);
    gp_plan_free(p);
    fx_free(f);
  }
  /* Three nodes asked, two tasks' worth of slots on the nodes that free first: n2 too. */
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_node(f, "n2", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *r0 = fx_job(f, "r0", "a", 8, 1), *r1 = fx_job(f, "r1", "a", 8, 1), *r2 = fx_job(f, "r2", "a", 8, 1);
  r0->time_limit = 3600;
  r1->time_limit = 4900;
  r2->time_limit = 9000;
  fx_run(f, r0, 0, 0xff, 100);
  fx_run(f, r1, 1, 0xff, 100);
  fx_run(f, r2, 2, 0xff, 100);
  gp_job *big = fx_job(f, "big", "a", 2, 4);
  big->time_limit = 3600;
  big->req.nodes = 3;
  gp_plan *p = fx_step(f, 1000);
  REQUIRE(p);
  REQUIRE(resv_of(f, p, "big"));
  CHECK_EQ_INT(9100, resv_of(f, p, "big")->at);
  gp_plan_free(p);
  fx_free(f);
}

GP_TESTS(a_short_job_backfills_but_a_long_one_would_delay_the_reservation,
         a_job_waits_for_resources_once_a_backfilled_start_took_what_fitted,
         a_cpu_only_job_does_not_hold_back_a_whole_node_reservation,
         without_backfill_a_strict_fifo_head_blocks_everyone,
         on_a_full_cluster_the_strict_head_still_blocks_everyone,
         a_job_may_use_gpus_the_reservation_does_not_need,
         jobs_without_any_time_limit_get_no_reservation,
         a_reservation_spans_the_jobs_exact_node_count)
