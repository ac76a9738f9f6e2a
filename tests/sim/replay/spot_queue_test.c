/* SPDX-License-Identifier: Apache-2.0 */
/* A queues file's `spot:` settings in `gpool sim replay`: the same job on the same fleet,
 * with the same seeded interruptions, runs on the spot node (and is cut by the reclaim)
 * when its queue is neutral, and off it when the queue avoids or refuses spot; a share cap
 * keeps half of a queue's GPUs off spot; a bad value is refused naming the file's field. */
#include <jansson.h>

#include "replay_util.h"
#include "test.h"

/* Seed 2 at rate 99% reclaims node 0 (the spot node: the first, so bin-packing's tie picks
 * it) 115,754 s after it starts: inside the job's 200,000 s (spot_test.c pins the draw). */
static const char trace[] = "submit_time,duration,gpus,queue\n1000,200000,2,a\n";

static const char *bin(void) {
  const char *b = getenv("GPOOL_BIN");
  REQUIRE(b);
  return b;
}

/* Replays the trace with `queues` as the queues file; returns the parsed JSON (or NULL)
 * and the exit status in *rc. */
static json_t *replay(const char *csv, const char *fleet, const char *queues, int *rc) {
  char *t = write_tmp("spotq_trace.csv", csv);
  char *q = write_tmp("spotq_queues.yaml", queues);
  char cmd[2048], *out = NULL;
  snprintf(cmd, sizeof cmd,
           "%s sim replay --trace %s --queues %s --fleet %s --seed 2 "
           "--spot-interruptions 0.99 -o json 2>/tmp/gp_replay_%d_spotq.err",
           bin(), t, q, fleet, (int)getpid());
  *rc = run_cmd(cmd, &out);
  json_t *j = json_loads(out, 0, NULL);
  free(out);
  unlink(t);
  unlink(q);
  free(t);
  free(q);
  return j;
}

static long long interrupted(const json_t *j) {
  return json_integer_value(json_object_get(json_object_get(j, "spot"), "jobs_interrupted"));
}

static void the_queues_preference_decides_what_runs_on_spot(void) {
  const char *fleet = "1x8xH100:spot,1x8xH100:on-demand";
  int rc;
  json_t *j = replay(trace, fleet, "queues:\n  - {name: a}\n", &rc);
  CHECK_EQ_INT(0, rc);
  REQUIRE(j);
  CHECK_EQ_INT(1, interrupted(j)); /* neutral: on the spot node, cut by its reclaim */
  json_decref(j);
  static const char *const off[] = {"queues:\n  - {name: a, spot: avoid}\n",
                                    "queues:\n  - {name: a, spot: {prefer: never}}\n"};
  for (int i = 0; i < 2; i++) {
    j = replay(trace, fleet, off[i], &rc);
    CHECK_EQ_INT(0, rc);
    REQUIRE(j);
    CHECK_EQ_INT(0, interrupted(j)); /* on the on-demand node: never cut */
    CHECK_EQ_INT(1, json_integer_value(json_object_get(j, "completed")));
    CHECK_NEAR(0, json_number_value(json_object_get(j, "avg_wait_s")), 1e-9);
    json_decref(j);
  }
}

static void a_share_keeps_half_of_a_queues_gpus_off_spot(void) {
  /* Two 1-GPU jobs side by side in a queue that prefers spot: both go there; with share 0.5
   * the first goes to the on-demand node (1 of 1 on spot would pass half), the second to
   * spot. Only jobs on spot are cut. */
  const char *two = "submit_time,duration,gpus,queue\n1000,200000,1,a\n1000,200000,1,a\n";
  const char *fleet = "1x8xH100:spot,1x8xH100:on-demand";
  int rc;
  json_t *j = replay(two, fleet, "queues:\n  - {name: a, spot: prefer}\n", &rc);
  CHECK_EQ_INT(0, rc);
  REQUIRE(j);
  CHECK_EQ_INT(2, interrupted(j));
  json_decref(j);
  j = replay(two, fleet, "queues:\n  - {name: a, spot: {prefer: prefer, share: 0.5}}\n", &rc);
  CHECK_EQ_INT(0, rc);
  REQUIRE(j);
  CHECK_EQ_INT(1, interrupted(j));
  CHECK_EQ_INT(2, json_integer_value(json_object_get(j, "completed")));
  json_decref(j);
}

static void a_bad_spot_value_names_the_field(void) {
  int rc;
  json_t *j = replay(trace, "1x8xH100:spot", "queues:\n  - {name: a, spot: {prefer: cheap}}\n", &rc);
  CHECK(rc != 0);
  CHECK(j == NULL);
  char path[128], *err = NULL;
  snprintf(path, sizeof path, "cat /tmp/gp_replay_%d_spotq.err", (int)getpid());
  run_cmd(path, &err);
  CHECK_CONTAINS(err, "queues[0].spot.prefer");
  CHECK_CONTAINS(err, "neutral, prefer, avoid, never");
  free(err);
  snprintf(path, sizeof path, "/tmp/gp_replay_%d_spotq.err", (int)getpid());
  unlink(path);
}

GP_TESTS(the_queues_preference_decides_what_runs_on_spot, a_share_keeps_half_of_a_queues_gpus_off_spot,
         a_bad_spot_value_names_the_field)
