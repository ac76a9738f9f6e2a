/* SPDX-License-Identifier: Apache-2.0 */
/* Per-user limits of a leaf queue (src/core/user_limits.c): the GPUs one user's running
 * jobs may hold (UserGpuLimit), the GPU-hours per period (UserGpuHours), a named user's
 * limit over the queue's "*", starts of the same step counted, and bad limits refused. */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

static void a_user_at_max_gpus_waits_with_user_gpu_limit(void) {
  /* 8 GPUs; each user of "shared" may hold 3. alice asks 5 one-GPU jobs, bob 1: alice gets
   * 3 (one starts in this step counted with the running ones), bob 1. */
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  gp_queue *q = fx_queue(f, "shared", 0, GP_NO_LIMIT, 1);
  gp_user_limit lim[] = {{"*", 3, GP_NO_LIMIT}};
  q->user_limits = lim;
  q->n_user_limits = 1;
  fx_running(f, "a0", "shared", 1, 0, 1u << 0, 5);
  static const char *ids[] = {"a1", "a2", "a3", "a4"};
  for (int i = 0; i < 4; i++) fx_job(f, ids[i], "shared", 1, 1);
  fx_job(f, "b1", "shared", 1, 1)->user = "bob";
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "a1") && fx_started(f, p, "a2") && fx_started(f, p, "b1"));
  CHECK(!fx_started(f, p, "a3") && !fx_started(f, p, "a4"));
  CHECK_EQ_STR("UserGpuLimit", fx_reason(f, p, "a3"));
  CHECK_EQ_STR("UserGpuLimit", fx_reason(f, p, "a4"));
  bool said = false;
  for (int i = 0; i < p->n_pending; i++)
    if (p->pending[i].job == fx_index(f, "a3"))
      said = strstr(p->pending[i].message, "allows one user 3") != NULL;
  CHECK(said);
  gp_plan_free(p);
  /* A named user's own limit wins over "*". */
  gp_user_limit lim2[] = {{"*", 3, GP_NO_LIMIT}, {"alice", 10, GP_NO_LIMIT}};
  q->user_limits = lim2;
  q->n_user_limits = 2;
  p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "a3") && fx_started(f, p, "a4"));
  gp_plan_free(p);
  fx_free(f);
}

static void a_user_past_max_gpu_hours_waits_with_user_gpu_hours(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  gp_queue *q = fx_queue(f, "shared", 0, GP_NO_LIMIT, 1);
  gp_user_limit lim[] = {{"*", GP_NO_LIMIT, 100}};
  q->user_limits = lim;
  q->n_user_limits = 1;
  fx_job(f, "a1", "shared", 1, 1);
  fx_job(f, "b1", "shared", 1, 1)->user = "bob";
  gp_usage u[] = {{.queue = "shared", .user = "alice", .gpus = 1, .period_gpu_hours = 100.5},
                  {.queue = "shared", .user = "bob", .gpus = 1, .period_gpu_hours = 99}};
  f->view.usage = u;
  f->view.n_usage = 2;
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_started(f, p, "b1") && !fx_started(f, p, "a1"));
  CHECK_EQ_STR("UserGpuHours", fx_reason(f, p, "a1"));
  gp_plan_free(p);
  fx_free(f);
}

static void bad_limits_are_refused_with_their_field(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 1);
  gp_queue *q = fx_queue(f, "shared", 0, GP_NO_LIMIT, 1);
  gp_user_limit lim[] = {{"*", -2, GP_NO_LIMIT}};
  q->user_limits = lim;
  q->n_user_limits = 1;
  gp_plan *p = NULL;
  CHECK(gp_sched_step(&f->pol, &f->view, 1, &p, &f->err) == GP_EINVAL);
  CHECK_EQ_STR("queues[0].user_limits[0].max_gpus", f->err.field);
  lim[0] = (gp_user_limit){NULL, 1, GP_NO_LIMIT};
  CHECK(gp_sched_step(&f->pol, &f->view, 1, &p, &f->err) == GP_EINVAL);
  CHECK_EQ_STR("queues[0].user_limits[0].user", f->err.field);
  fx_free(f);
}

GP_TESTS(a_user_at_max_gpus_waits_with_user_gpu_limit, a_user_past_max_gpu_hours_waits_with_user_gpu_hours,
         bad_limits_are_refused_with_their_field)
