/* SPDX-License-Identifier: Apache-2.0 */
/* Fair share over time in a replay (src/sim/replay/usage.c, src/core/queue_tree.c): two
 * equal queues on 9 GPUs, queue a alone on 8 of them for a week, then both ask for 20
 * hours of work. Without usage each is owed 4.5 GPUs: each gets 4, and the ninth goes to
 * the queue first in order (a: it sorts first). With a half-life of an hour b, which did
 * not run all week, gets the idle capacity first, and more of it: a's usage shrinks its
 * over-quota share, so b holds about three quarters of the GPUs in the first hour. The
 * shares then converge: ten half-lives after the week the GPUs held and the decayed usage
 * are 50/50 within 5%; without decay a's week still weighs. The weekly cumulative Jain
 * index is reported for every replay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static gp_replay_result *run_series(const char *csv, bool usage, int64_t half_life, FILE *series) {
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.usage = usage;
  c.fairshare.half_life_s = half_life;
  c.usage_probe = 604800 + 10 * 3600;
  c.csv = series;
  return replay_csv(csv, "1x9", false, &c);
}

static gp_replay_result *run(const char *csv, bool usage, int64_t half_life) {
  return run_series(csv, usage, half_life, NULL);
}

/* From the replay's per-minute series: b's part of the GPUs the two queues held over
 * [from, to) seconds after the week. */
static double b_part(FILE *series, int from, int to) {
  char line[4096];
  rewind(series);
  REQUIRE(fgets(line, sizeof line, series) && strchr(line, '\n'));
  int ca = -1, cb = -1, col = 0;
  for (char *tok = strtok(line, ",\n"); tok; tok = strtok(NULL, ",\n"), col++) {
    if (!strcmp(tok, "a.gpus")) ca = col;
    if (!strcmp(tok, "b.gpus")) cb = col;
  }
  REQUIRE(ca >= 0 && cb >= 0);
  double sa = 0, sb = 0;
  while (fgets(line, sizeof line, series)) {
    REQUIRE(strchr(line, '\n'));
    double t = -1, ga = 0, gb = 0;
    col = 0;
    for (char *tok = strtok(line, ",\n"); tok; tok = strtok(NULL, ",\n"), col++) {
      if (col == 0) t = strtod(tok, NULL) - 604800;
      if (col == ca) ga = strtod(tok, NULL);
      if (col == cb) gb = strtod(tok, NULL);
    }
    if (t >= from && t < to) {
      sa += ga;
      sb += gb;
    }
  }
  REQUIRE(sa + sb > 0);
  return sb / (sa + sb);
}

static void a_queue_that_ran_alone_gives_way_and_usage_converges(void) {
  char *csv = week_then_both();
  FILE *series = tmpfile();
  REQUIRE(series);
  gp_replay_result *r = run_series(csv, true, 3600, series);
  REQUIRE(r->n_queues == 2);
  /* b gets the idle capacity first, and the larger part of it while a's week weighs
   * (5/9 when usage only ordered the queues); ten half-lives on, 50/50 within 5%. */
  double first = b_part(series, 0, 3600), tenth = b_part(series, 9 * 3600, 10 * 3600);
  CHECK(first > 0.65);
  CHECK(tenth > 0.45 && tenth < 0.55);
  fclose(series);
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
  series = tmpfile();
  REQUIRE(series);
  r = run_series(csv, false, 0, series);
  CHECK(b_part(series, 0, 3600) < 0.5);
  fclose(series);
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
