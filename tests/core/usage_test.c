/* SPDX-License-Identifier: Apache-2.0 */
/* Fair share over time and between users (src/core/usage.c, order.c, queue_tree.c): a
 * user's burst does not jump a colleague's jobs in the same leaf, decayed past usage orders
 * sibling queues and sizes their over-quota shares (never their deserved), a weight-0
 * queue ranks last, and the memo's kept order agrees with a plain step. */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

static char ids[64][16];

/* Issue 37's reproduction: alice submits 12 one-GPU jobs and holds 8 of 10 GPUs; bob
 * submits 2 a little later. When 2 GPUs are free, bob's jobs are next. */
static fx *burst(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 2);
  fx_queue(f, "shared", 0, GP_NO_LIMIT, 1);
  for (int i = 0; i < 12; i++) {
    snprintf(ids[i], sizeof ids[i], "a%d", i + 1);
    gp_job *j = fx_job(f, ids[i], "shared", 1, 1);
    if (i < 8) fx_run(f, j, 0, 1u << i, 5);
  }
  fx_job(f, "b1", "shared", 1, 1)->user = "bob";
  fx_job(f, "b2", "shared", 1, 1)->user = "bob";
  return f;
}

static void a_burst_of_one_user_does_not_jump_a_colleagues_jobs(void) {
  fx *f = burst();
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "b1") && fx_started(f, p, "b2"));
  CHECK(!fx_started(f, p, "a9") && !fx_started(f, p, "a10"));
  gp_plan_free(p);
  /* Off, the leaf is in age order again. */
  f->pol.fair_users = false;
  p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "a9") && fx_started(f, p, "a10") && !fx_started(f, p, "b1"));
  gp_plan_free(p);
  fx_free(f);
}

static void the_entry_penalty_counts_pending_jobs_before_they_run(void) {
  /* Nothing runs: alice's 6 pending jobs, then bob's 2, on 4 GPUs: the loads interleave
   * (alice 1, bob 1, alice 2, bob 2), so each gets 2. */
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 4);
  fx_queue(f, "shared", 0, GP_NO_LIMIT, 1);
  for (int i = 0; i < 6; i++) {
    snprintf(ids[i], sizeof ids[i], "a%d", i + 1);
    fx_job(f, ids[i], "shared", 1, 1);
  }
  fx_job(f, "b1", "shared", 1, 1)->user = "bob";
  fx_job(f, "b2", "shared", 1, 1)->user = "bob";
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "a1") && fx_started(f, p, "a2"));
  CHECK(fx_started(f, p, "b1") && fx_started(f, p, "b2"));
  CHECK(!fx_started(f, p, "a3"));
  gp_plan_free(p);
  fx_free(f);
}

static void a_users_decayed_usage_puts_a_light_user_first(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 1);
  fx_queue(f, "shared", 0, GP_NO_LIMIT, 1);
  fx_job(f, "c1", "shared", 1, 1)->user = "carol";
  fx_job(f, "d1", "shared", 1, 1)->user = "dave";
  gp_usage u[] = {{"shared", "carol", 3.5, 0}, {"shared", "dave", 0.25, 0}};
  f->view.usage = u;
  f->view.n_usage = 2;
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "d1") && !fx_started(f, p, "c1"));
  gp_plan_free(p);
  fx_free(f);
}

static void a_queue_that_used_the_cluster_gets_idle_capacity_last(void) {
  /* Equal queues; "a" ran alone all week (8 GPU-equivalents of decayed usage). One GPU
   * frees: "b" takes it, although "a" comes first by name and by age. */
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 1);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 0, GP_NO_LIMIT, 1);
  fx_job(f, "a1", "a", 1, 1);
  fx_job(f, "b1", "b", 1, 1);
  gp_usage u[] = {{"a", NULL, 8, 0}};
  f->view.usage = u;
  f->view.n_usage = 1;
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "b1") && !fx_started(f, p, "a1"));
  gp_plan_free(p);
  /* Usage under a parent counts for the parent when it has no entry of its own. */
  fx *g = fx_new();
  fx_node(g, "n0", "H100", 1);
  fx_queue(g, "x/p", 0, GP_NO_LIMIT, 1);
  fx_queue(g, "y/q", 0, GP_NO_LIMIT, 1);
  fx_job(g, "x1", "x/p", 1, 1);
  fx_job(g, "y1", "y/q", 1, 1);
  gp_usage v[] = {{"x/p", NULL, 2, 0}};
  g->view.usage = v;
  g->view.n_usage = 1;
  p = fx_step(g, 100);
  REQUIRE(p);
  CHECK(fx_started(g, p, "y1") && !fx_started(g, p, "x1"));
  gp_plan_free(p);
  fx_free(g);
  fx_free(f);
}

/* Past usage sizes the over-quota shares, not only their order: equal queues a and b,
 * deserved 2 each of 10 GPUs, both wanting all 10; a used the cluster (its part of the
 * siblings' usage 1, of their weights 0.5: factor 2^-2). The 6 GPUs over quota split
 * 0.25 : 1, so a's fair share is 2 + 1.2 and b's 2 + 4.8, and b starts 7 jobs to a's 3
 * (5 and 5 when only the order counted usage). Deserved is never reduced: a queue with
 * deserved 6 keeps 6 whatever it used. */
static void past_usage_sizes_the_over_quota_shares_not_the_deserved(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 2);
  fx_queue(f, "a", 2, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 2, GP_NO_LIMIT, 1);
  for (int i = 0; i < 10; i++) {
    snprintf(ids[i], sizeof ids[i], "a%d", i);
    snprintf(ids[10 + i], sizeof ids[10 + i], "b%d", i);
    fx_job(f, ids[i], "a", 1, 1);
    fx_job(f, ids[10 + i], "b", 1, 1);
  }
  gp_usage u[] = {{"a", NULL, 8, 0}};
  f->view.usage = u;
  f->view.n_usage = 1;
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK_NEAR(3.2, fx_plan_queue(p, "a")->fair_share, 1e-9);
  CHECK_NEAR(6.8, fx_plan_queue(p, "b")->fair_share, 1e-9);
  int na = 0, nb = 0;
  for (int i = 0; i < 10; i++) {
    na += fx_started(f, p, ids[i]);
    nb += fx_started(f, p, ids[10 + i]);
  }
  CHECK_EQ_INT(3, na);
  CHECK_EQ_INT(7, nb);
  gp_plan_free(p);
  /* Both used as much: the split is by weight again (5 and 5). */
  gp_usage even[] = {{"a", NULL, 8, 0}, {"b", NULL, 8, 0}};
  f->view.usage = even;
  f->view.n_usage = 2;
  p = fx_step(f, 100);
  REQUIRE(p);
  CHECK_NEAR(5, fx_plan_queue(p, "a")->fair_share, 1e-9);
  CHECK_NEAR(5, fx_plan_queue(p, "b")->fair_share, 1e-9);
  gp_plan_free(p);
  fx_free(f);

  /* a deserves 6 and did all the using: it keeps its 6, and only the 2 GPUs over quota
   * lean to b, 0.25 : 1. */
  f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 2);
  fx_queue(f, "a", 6, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 2, GP_NO_LIMIT, 1);
  for (int i = 0; i < 10; i++) {
    fx_job(f, ids[i], "a", 1, 1);
    fx_job(f, ids[10 + i], "b", 1, 1);
  }
  gp_usage heavy[] = {{"a", NULL, 1e12, 0}};
  f->view.usage = heavy;
  f->view.n_usage = 1;
  p = fx_step(f, 100);
  REQUIRE(p);
  CHECK_NEAR(6.4, fx_plan_queue(p, "a")->fair_share, 1e-9);
  CHECK_NEAR(3.6, fx_plan_queue(p, "b")->fair_share, 1e-9);
  gp_plan_free(p);
  fx_free(f);
}

static void a_weight_zero_queue_always_ranks_last(void) {
  /* "a" (weight 0) sorts first by name, its job is older, and "b" has a large usage:
   * "b" still comes first. */
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 1);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 0);
  fx_queue(f, "b", 0, GP_NO_LIMIT, 1);
  fx_job(f, "a1", "a", 1, 1);
  fx_job(f, "b1", "b", 1, 1);
  gp_usage u[] = {{"b", NULL, 1000, 0}};
  f->view.usage = u;
  f->view.n_usage = 1;
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "b1") && !fx_started(f, p, "a1"));
  CHECK_NEAR(0, fx_plan_queue(p, "a")->fair_share, 1e-9);
  gp_plan_free(p);
  fx_free(f);
  /* What nobody else wants goes to it: 3 GPUs, b wants 1, a gets the other 2. */
  f = fx_new();
  fx_node(f, "n0", "H100", 3);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 0);
  fx_queue(f, "b", 0, GP_NO_LIMIT, 1);
  fx_job(f, "a1", "a", 1, 1);
  fx_job(f, "a2", "a", 1, 1);
  fx_job(f, "a3", "a", 1, 1);
  fx_job(f, "b1", "b", 1, 1);
  p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "b1") && fx_started(f, p, "a1") && fx_started(f, p, "a2"));
  CHECK_NEAR(2, fx_plan_queue(p, "a")->fair_share, 1e-9);
  CHECK_NEAR(1, fx_plan_queue(p, "b")->fair_share, 1e-9);
  gp_plan_free(p);
  fx_free(f);
}

static void bad_usage_entries_are_refused_with_their_field(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 1);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  gp_usage u[] = {{"a", NULL, 1, 0}, {"a", "x", -1, 0}};
  f->view.usage = u;
  f->view.n_usage = 2;
  gp_plan *p = NULL;
  CHECK(gp_sched_step(&f->pol, &f->view, 1, &p, &f->err) == GP_EINVAL);
  CHECK_EQ_STR("usage[1].gpus", f->err.field);
  u[1] = (gp_usage){"gone", NULL, 1, 0}; /* a removed queue: ignored */
  CHECK(gp_sched_step(&f->pol, &f->view, 1, &p, &f->err) == 0);
  gp_plan_free(p);
  fx_free(f);
}

static void the_memo_agrees_with_a_plain_step_as_users_come_and_go(void) {
  fx *f = burst();
  uint64_t revs[FX_MAX];
  for (int j = 0; j < f->view.n_jobs; j++) revs[j] = (uint64_t)j + 1;
  f->view.job_revs = revs;
  f->view.rev = 1;
  gp_sched_memo *m = gp_sched_memo_new();
  for (int step = 0; step < 4; step++) {
    gp_plan *a = NULL, *b = NULL;
    gp_err e = {0};
    REQUIRE(gp_sched_step_memo(m, &f->pol, &f->view, 100 + step, 0, &a, &e) == 0);
    REQUIRE(gp_sched_step(&f->pol, &f->view, 100 + step, &b, &e) == 0);
    CHECK_EQ_INT(b->n_starts, a->n_starts);
    for (int i = 0; i < a->n_starts && i < b->n_starts; i++)
      CHECK_EQ_INT(b->starts[i].job, a->starts[i].job);
    /* bob's jobs go (one user left: the plain order, which may use the kept one), then
     * come back. */
    int b1 = fx_index(f, "b1"), b2 = fx_index(f, "b2");
    gp_job_state st = step % 2 == 0 ? GP_JOB_CANCELLED : GP_JOB_PENDING;
    f->jobs[b1].state = f->jobs[b2].state = st;
    revs[b1] += 100;
    revs[b2] += 100;
    gp_plan_free(a);
    gp_plan_free(b);
  }
  gp_sched_memo_free(m);
  fx_free(f);
}

GP_TESTS(a_burst_of_one_user_does_not_jump_a_colleagues_jobs,
         the_entry_penalty_counts_pending_jobs_before_they_run,
         a_users_decayed_usage_puts_a_light_user_first,
         a_queue_that_used_the_cluster_gets_idle_capacity_last,
         past_usage_sizes_the_over_quota_shares_not_the_deserved, a_weight_zero_queue_always_ranks_last,
         bad_usage_entries_are_refused_with_their_field,
         the_memo_agrees_with_a_plain_step_as_users_come_and_go)
