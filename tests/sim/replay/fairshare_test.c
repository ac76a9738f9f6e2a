/* SPDX-License-Identifier: Apache-2.0 */
/* Fair share over time in a replay (src/sim/replay/usage.c): two equal queues on 9 GPUs,
 * queue a alone on 8 of them for a week, then both ask for 20 hours of work. Each is owed
 * 4.5 GPUs: each gets 4, and the ninth goes to the queue first in order. With a half-life
 * of an hour that is b, which did not run all week; without usage it is a (it sorts
 * first). Ten half-lives after the week the queues' decayed usage is 50/50 within 5%;
 * without decay a's week still weighs. The weekly cumulative Jain index is reported for
 * every replay. */
#include <stdio.h>
#include <stdlib.h>

#include "replay_util.h"

static char *week_then_both(void) {
  /* a: 8 GPUs for a week (8 one-GPU jobs of 7 days); then at 7 d, 480 jobs of 10 min each
   * for a and for b: 9,600 GPU-minutes on 8 GPUs, 20 hours, so both still want GPUs ten
   * half-lives (10 h) later, where the shares are taken. */
  size_t cap = 1 << 16, o = 0;
  char *csv = malloc(cap);
  o += (size_t)snprintf(csv + o, cap - o, "submit_time,duration,gpus,queue\n");
  for (int i = 0; i < 8; i++) o += (size_t)snprintf(csv + o, cap - o, "0,604800,1,a\n");
  for (int i = 0; i < 480; i++) {
    o += (size_t)snprintf(csv + o, cap - o, "604800,600,1,a\n");
    o += (size_t)snprintf(csv + o, cap - o, "604800,600,1,b\n");
  }
  return csv;
}

static gp_replay_result *run(const char *csv, bool usage, int64_t half_life) {
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.usage = usage;
  c.fairshare.half_life_s = half_life;
  c.usage_probe = 604800 + 10 * 3600;
  return replay_csv(csv, "1x9", false, &c);
}

static void a_queue_that_ran_alone_gives_way_and_usage_converges(void) {
  char *csv = week_then_both();
  gp_replay_result *r = run(csv, true, 3600);
  REQUIRE(r->n_queues == 2);
  CHECK_EQ_STR("a", r->queues[0].name);
  CHECK_EQ_INT(968, r->completed);
  /* b got the spare GPU: its jobs waited less than a's (whose week-long jobs, waiting 0,
   * are in a's mean too). */
  CHECK(r->queues[1].avg_wait_s < r->queues[0].avg_wait_s);
  /* Ten half-lives after the week, usage is shared 50/50 within 5%. */
  CHECK(r->queues[0].usage_share > 0.45 && r->queues[0].usage_share < 0.55);
  CHECK(r->queues[1].usage_share > 0.45 && r->queues[1].usage_share < 0.55);
  CHECK_NEAR(3600, r->usage_half_life_s, 1e-9);
  /* Weekly cumulative fairness: the first week (a alone: one queue), then the last. */
  CHECK_EQ_INT(2, r->n_weeks);
  CHECK_NEAR(1, r->weekly_jain[0], 1e-9);
  CHECK(r->weekly_jain[1] < 0.7); /* a's week still counts in the cumulative GPU-hours */
  double b_wait = r->queues[1].avg_wait_s;
  gp_replay_result_free(r);

  /* Without usage, a sorts first at equal allocation and gets the spare GPU. */
  r = run(csv, false, 0);
  CHECK(r->queues[1].avg_wait_s > b_wait);
  CHECK(r->queues[1].avg_wait_s > r->queues[0].avg_wait_s);
  CHECK(r->usage_half_life_s < 0);
  gp_replay_result_free(r);

  /* Without decay, a's week keeps weighing: far from 50/50. */
  r = run(csv, true, 0);
  CHECK(r->queues[0].usage_share > 0.9);
  gp_replay_result_free(r);
  free(csv);
}

GP_TESTS(a_queue_that_ran_alone_gives_way_and_usage_converges)
