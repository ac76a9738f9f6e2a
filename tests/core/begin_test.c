/* SPDX-License-Identifier: Apache-2.0 */
/* --begin (gp_job.begin_at, src/core/jobs.c): a job waits with the reason BeginTime while
 * the view's now is before its begin time and starts once it is not, with the plain step
 * and with the memo, which must not replay a wait that the clock ended (the job's rev does
 * not change when its begin time passes). */
#include "core/fixture.h"

static void a_job_waits_for_its_begin_time(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "later", "a", 1, 1)->begin_at = 200;
  fx_job(f, "now", "a", 1, 1)->begin_at = 100;
  fx_job(f, "any", "a", 1, 1);
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK_EQ_STR("BeginTime", fx_reason(f, p, "later"));
  CHECK(fx_started(f, p, "now"));
  CHECK(fx_started(f, p, "any"));
  for (int i = 0; i < p->n_pending; i++)
    if (p->pending[i].job == fx_index(f, "later")) CHECK_CONTAINS(p->pending[i].message, "--begin");
  gp_plan_free(p);
  p = fx_step(f, 200);
  REQUIRE(p);
  CHECK(fx_started(f, p, "later"));
  gp_plan_free(p);
  fx_free(f);
}

static void the_memo_does_not_keep_a_wait_the_clock_ends(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "later", "a", 1, 1)->begin_at = 200;
  uint64_t revs[1] = {7};
  f->view.rev = 1;
  f->view.job_revs = revs;
  gp_sched_memo *m = gp_sched_memo_new();
  gp_plan *p = NULL;
  REQUIRE(gp_sched_step_memo(m, &f->pol, &f->view, 100, 0, &p, &f->err) == 0);
  CHECK_EQ_STR("BeginTime", fx_reason(f, p, "later"));
  gp_plan_free(p);
  p = NULL;
  REQUIRE(gp_sched_step_memo(m, &f->pol, &f->view, 150, 0, &p, &f->err) == 0);
  CHECK_EQ_STR("BeginTime", fx_reason(f, p, "later"));
  gp_plan_free(p);
  p = NULL;
  REQUIRE(gp_sched_step_memo(m, &f->pol, &f->view, 201, 0, &p, &f->err) == 0);
  CHECK(fx_started(f, p, "later")); /* same rev, later clock */
  gp_plan_free(p);
  gp_sched_memo_free(m);
  fx_free(f);
}

GP_TESTS(a_job_waits_for_its_begin_time, the_memo_does_not_keep_a_wait_the_clock_ends)
