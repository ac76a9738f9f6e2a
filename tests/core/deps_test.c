/* SPDX-License-Identifier: Apache-2.0 */
/* Dependencies and holds, as a Slurm user expects them. */
#include "fixture.h"

static gp_job *dep(fx *f, gp_job *j, int kind, const char *on) {
  int i = (int)(j - f->jobs);
  f->deps[i][0] = on;
  if (kind == 0) j->after = f->deps[i], j->n_after = 1;
  if (kind == 1) j->after_ok = f->deps[i], j->n_after_ok = 1;
  if (kind == 2) j->after_any = f->deps[i], j->n_after_any = 1;
  if (kind == 3) j->after_not_ok = f->deps[i], j->n_after_not_ok = 1;
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

static void afternotok_starts_on_failure_and_ends_when_the_job_completed(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_job *run = fx_job(f, "running", "a", 1, 1);
  fx_run(f, run, 0, 0x1, 0);
  fx_job(f, "ok", "a", 1, 1)->state = GP_JOB_COMPLETED;
  fx_job(f, "bad", "a", 1, 1)->state = GP_JOB_FAILED;
  fx_job(f, "gone", "a", 1, 1)->state = GP_JOB_CANCELLED;
  fx_job(f, "late", "a", 1, 1)->state = GP_JOB_TIMEOUT;
  dep(f, fx_job(f, "notok-failed", "a", 1, 1), 3, "bad");
  dep(f, fx_job(f, "notok-cancelled", "a", 1, 1), 3, "gone");
  dep(f, fx_job(f, "notok-timeout", "a", 1, 1), 3, "late");
  dep(f, fx_job(f, "notok-running", "a", 1, 1), 3, "running");
  dep(f, fx_job(f, "notok-completed", "a", 1, 1), 3, "ok");
  dep(f, fx_job(f, "notok-unknown", "a", 1, 1), 3, "ghost");
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "notok-failed"));
  CHECK(fx_started(f, p, "notok-cancelled"));
  CHECK(fx_started(f, p, "notok-timeout"));
  CHECK_EQ_STR("Dependency", fx_reason(f, p, "notok-running"));
  CHECK_EQ_STR("DependencyNeverSatisfied", fx_ended(f, p, "notok-completed"));
  CHECK_EQ_STR("DependencyNeverSatisfied", fx_ended(f, p, "notok-unknown"));
  for (int i = 0; i < p->n_ended; i++)
    if (p->ended[i].job == fx_index(f, "notok-completed")) {
      CHECK_CONTAINS(p->ended[i].message, "ok");
      CHECK_CONTAINS(p->ended[i].message, "completed");
    }
  gp_plan_free(p);
  fx_free(f);
}

static gp_job *single(fx *f, const char *id, const char *user, const char *name) {
  gp_job *j = fx_job(f, id, "a", 1, 1);
  j->user = user;
  j->name = name;
  j->singleton = true;
  return j;
}

static void singleton_runs_one_job_of_a_name_and_user_at_a_time(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  /* Three of alice's "train" in one step: only the first starts. */
  single(f, "t1", "alice", "train");
  single(f, "t2", "alice", "train");
  single(f, "t3", "alice", "train");
  /* Another user's, another name's: not held back by alice's. */
  single(f, "b1", "bob", "train");
  single(f, "e1", "alice", "eval");
  /* A running job of the name holds back a later singleton, even when it is not one. */
  gp_job *r = fx_job(f, "r", "a", 1, 1);
  r->user = "carol", r->name = "sweep";
  fx_run(f, r, 0, 0x80, 0);
  single(f, "s1", "carol", "sweep");
  /* Without a name there is no key: nothing to wait for. */
  single(f, "anon", "carol", NULL);
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "t1"));
  CHECK(!fx_started(f, p, "t2"));
  CHECK(!fx_started(f, p, "t3"));
  CHECK_EQ_STR("Dependency", fx_reason(f, p, "t2"));
  CHECK_EQ_STR("Dependency", fx_reason(f, p, "t3"));
  CHECK(fx_started(f, p, "b1"));
  CHECK(fx_started(f, p, "e1"));
  CHECK(!fx_started(f, p, "s1"));
  CHECK_EQ_STR("Dependency", fx_reason(f, p, "s1"));
  CHECK(fx_started(f, p, "anon"));
  gp_plan_free(p);
  /* t1 runs now: t2 still waits (and t3 behind it); once t1 ended, t2 starts, t3 not. */
  fx_run(f, &f->jobs[fx_index(f, "t1")], 0, 0x1, 100);
  p = fx_step(f, 101);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "t2"));
  gp_plan_free(p);
  f->jobs[fx_index(f, "t1")].state = GP_JOB_COMPLETED;
  f->jobs[fx_index(f, "t1")].n_placements = 0;
  p = fx_step(f, 102);
  REQUIRE(p);
  CHECK(fx_started(f, p, "t2"));
  CHECK(!fx_started(f, p, "t3"));
  for (int i = 0; i < p->n_pending; i++)
    if (p->pending[i].job == fx_index(f, "t3")) CHECK_CONTAINS(p->pending[i].message, "t2");
  gp_plan_free(p);
  fx_free(f);
}

GP_TESTS(dependencies_wait_start_or_end_as_slurm_says, afternotok_starts_on_failure_and_ends_when_the_job_completed,
         singleton_runs_one_job_of_a_name_and_user_at_a_time, a_held_job_stays_held_even_when_everything_is_free)
