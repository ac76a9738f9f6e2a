/* SPDX-License-Identifier: Apache-2.0 */
/* A pending job's place in its queue and its estimated start (src/server/state/jobrank.c): the
 * scheduler's order inside a queue (priority, then age), 1 for the job it starts next, null
 * for a held job; the estimated start is the backfill reservation, null when there is none.
 * A real server on 127.0.0.1 with a real SQLite file. */
#include "test.h"
#include "srv_util.h"

static int64_t position_of(tsrv *t, const char *id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  REQUIRE(tsrv_req(t, "GET", path, ALICE, NULL) == 200);
  const json_t *p = json_object_get(json_object_get(t->last, "job"), "queue_position");
  return json_is_integer(p) ? json_integer_value(p) : 0;
}

/* Waits (at most ~5 s) until a step ranked job `id` at `want` (0: unranked). */
static bool wait_position(tsrv *t, const char *id, int64_t want) {
  for (int i = 0; i < 500; i++) {
    if (position_of(t, id) == want) return true;
    usleep(10000);
  }
  return false;
}

static void pending_jobs_show_their_place_in_the_queue_and_their_start(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  char *run = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"a\"], \"gpus\": 1, \"time_limit\": 3600}");
  REQUIRE(run && tsrv_wait_state(&t, run, "running"));
  char *batch = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"b\"], \"gpus\": 1, \"priority\": \"batch\", \"time_limit\": 60}");
  char *first = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"c\"], \"gpus\": 1, \"time_limit\": 60}");
  char *second = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"d\"], \"gpus\": 1, \"time_limit\": 60}");
  char *other = tsrv_submit(&t, BOB, "{\"queue\": \"org/b\", \"command\": [\"e\"], \"gpus\": 1, \"time_limit\": 60}");
  REQUIRE(batch && first && second && other);
  /* Training (the default class) before batch, older before younger; each queue apart.
   * Once a step ranked the last job submitted, it ranked every other. */
  REQUIRE(wait_position(&t, other, 1));
  CHECK_EQ_INT(3, position_of(&t, batch));
  CHECK_EQ_INT(1, position_of(&t, first));
  CHECK_EQ_INT(2, position_of(&t, second));
  CHECK_EQ_INT(1, position_of(&t, other));
  CHECK_EQ_INT(0, position_of(&t, run)); /* running: null */
  /* The estimated start is the reservation the backfill made, and null otherwise. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?state=pending", ADMIN, NULL));
  const json_t *jobs = json_object_get(t.last, "jobs");
  bool some_estimate = false;
  for (size_t i = 0; i < json_array_size(jobs); i++) {
    const json_t *j = json_array_get(jobs, i);
    const json_t *est = json_object_get(j, "estimated_start"), *res = json_object_get(j, "reservation_at");
    CHECK(json_equal(est, res));
    some_estimate = some_estimate || json_is_integer(est);
  }
  CHECK(some_estimate);
  /* A held job leaves the order; the next step closes the gap. */
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s/hold", first);
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", path, ALICE, NULL));
  CHECK(wait_position(&t, second, 1));
  CHECK_EQ_INT(0, position_of(&t, first));
  CHECK_EQ_INT(2, position_of(&t, batch));
  /* Position 1 is the job the scheduler starts next, when the GPU frees. Bob's job, first
   * in its own queue, is held first: org/a has used the GPU and org/b has not, so fair share
   * would give bob the GPU whenever `run` had run for a second (a loaded machine). The node
   * heartbeats again, as an agent would, before its 2 s node timeout can pass. */
  snprintf(path, sizeof path, "/v1/jobs/%s/hold", other);
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", path, BOB, NULL));
  json_decref(tsrv_heartbeat(&t, "n1", 0, 0, NULL));
  snprintf(path, sizeof path, "/v1/jobs/%s/cancel", run);
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", path, ALICE, NULL));
  char ev[128];
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 143}]", run);
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, ev);
  json_decref(hb);
  CHECK(tsrv_wait_state(&t, second, "running"));
  CHECK(wait_position(&t, batch, 1));
  free(run);
  free(batch);
  free(first);
  free(second);
  free(other);
  tsrv_stop(&t);
}

/* Shortest job first: the time limit the scheduler reads, the policy's default for a job
 * that names none. */
static void under_sjf_the_shorter_limit_comes_first(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "policy: {order: sjf, default_time_limit: 100}\n", NULL);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  char *run = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"a\"], \"gpus\": 1, \"time_limit\": 3600}");
  REQUIRE(run && tsrv_wait_state(&t, run, "running"));
  char *none = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"b\"], \"gpus\": 1}");
  char *shortest = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"c\"], \"gpus\": 1, \"time_limit\": 50}");
  char *longest = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"d\"], \"gpus\": 1, \"time_limit\": 200}");
  REQUIRE(none && shortest && longest);
  REQUIRE(wait_position(&t, longest, 3));
  CHECK_EQ_INT(1, position_of(&t, shortest));
  CHECK_EQ_INT(2, position_of(&t, none));
  free(run);
  free(none);
  free(shortest);
  free(longest);
  tsrv_stop(&t);
}

GP_TESTS(pending_jobs_show_their_place_in_the_queue_and_their_start,
         under_sjf_the_shorter_limit_comes_first)
