/* SPDX-License-Identifier: Apache-2.0 */
/* Dependencies and holds, as a Slurm user expects them. */
#include "fixture.h"

static gp_job *dep(fx *f, gp_job *j, int kind, const char *on) {
  int i = (int)(j - f->jobs);
  f->deps[i][0] = on;
  if (kind == 0) j->after = f->deps[i], j->n_after = 1;
  if (kind == 1) j->after_ok = f->deps[i], j->n_after_ok = 1;
  if (kind == 2) j->after_any = f->deps[i], j->n_after_any = 1;
  return j;
}

static void dependencies_wait_start_or_end_as_slurm_says(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *run = fx_job(f, "running", "a", 1, 1);
  fx_run(f, run, 0, 0x1, 0);
  fx_job(f, "pend", "a", 1, 1)->state = GP_JOB_HELD;
  fx_job(f, "ok", "a", 1, 1)->state = GP_JOB_COMPLETED;
  fx_job(f, "bad", "a", 1, 1)->state = GP_JOB_FAILED;
  dep(f, fx_job(f, "after-running", "a", 1, 1), 0, "running");
  dep(f, fx_job(f, "after-held", "a", 1, 1), 0, "pend");
  dep(f, fx_job(f, "afterok-ok", "a", 1, 1), 1, "ok");
  dep(f, fx_job(f, "afterok-running", "a", 1, 1), 1, "running");
  dep(f, fx_job(f, "afterok-failed", "a", 1, 1), 1, "bad");
  dep(f, fx_job(f, "afterany-failed", "a", 1, 1), 2, "bad");
  dep(f, fx_job(f, "afterany-running", "a", 1, 1), 2, "running");
  dep(f, fx_job(f, "after-unknown", "a", 1, 1), 0, "ghost");
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "after-running"));
  CHECK_EQ_STR("Dependency", fx_reason(f, p, "after-held"));
  CHECK(fx_started(f, p, "afterok-ok"));
  CHECK_EQ_STR("Dependency", fx_reason(f, p, "afterok-running"));
  CHECK_EQ_STR("DependencyNeverSatisfied", fx_ended(f, p, "afterok-failed"));
  CHECK(fx_started(f, p, "afterany-failed"));
  CHECK_EQ_STR("Dependency", fx_reason(f, p, "afterany-running"));
  CHECK_EQ_STR("DependencyNeverSatisfied", fx_ended(f, p, "after-unknown"));
  CHECK_EQ_STR("Held", fx_reason(f, p, "pend"));
  /* The ended job's message names the failed dependency. */
  for (int i = 0; i < p->n_ended; i++)
    if (p->ended[i].job == fx_index(f, "afterok-failed")) CHECK_CONTAINS(p->ended[i].message, "bad");
  gp_plan_free(p);
  fx_free(f);
}

static void a_held_job_stays_held_even_when_everything_is_free(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "h", "a", 1, 1)->state = GP_JOB_HELD;
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_starts);
  CHECK_EQ_STR("Held", fx_reason(f, p, "h"));
  CHECK_EQ_INT(1, fx_plan_queue(p, "a")->pending_jobs);
  gp_plan_free(p);
  fx_free(f);
}

GP_TESTS(dependencies_wait_start_or_end_as_slurm_says, a_held_job_stays_held_even_when_everything_is_free)
