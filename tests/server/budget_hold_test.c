/* SPDX-License-Identifier: Apache-2.0 */
/* A spent budget's hold (action hold_new, src/server/state/budget_hold.c) is not its owner's to
 * lift: `release` by the owner answers 403 and the job stays held, whether the budget held
 * it alone or it was submitted --hold as well; an admin releases it, and so does the next
 * period (which leaves the owner's own hold in place). The job's pending message says why
 * it is held and never tells its owner to release it. A real server on 127.0.0.1 with a
 * real SQLite file. */
#include "test.h"
#include "server/state/budget.h"
#include "srv_util.h"

static long act(tsrv *t, const char *token, const char *id, const char *action) {
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%s/%s", id, action);
  return tsrv_req(t, "POST", path, token, NULL);
}

static const char *state_of(tsrv *t, const char *id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  CHECK_EQ_INT(200, tsrv_req(t, "GET", path, ALICE, NULL));
  return job_str(t->last, "state");
}

/* Polls the queue until its budget is spent (about 5 s at most). */
static bool budget_spent(tsrv *t) {
  for (int i = 0; i < 500; i++) {
    if (tsrv_req(t, "GET", "/v1/queues/lab/b", ALICE, NULL) == 200) {
      const json_t *r = json_object_get(json_object_get(t->last, "queue"), "budget_used_ratio");
      if (json_is_number(r) && json_number_value(r) >= 1) return true;
    }
    usleep(10000);
  }
  return false;
}

static void only_an_admin_or_the_next_period_lifts_a_budget_hold(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 4, NULL));
  /* 0.72 GPU-seconds: spent in about 0.2 s on four GPUs. */
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/lab/b", ADMIN,
                             "{\"users\": [\"alice\"], \"budget\": {\"gpu_hours\": 0.0002, "
                             "\"period\": \"month\", \"action\": \"hold_new\"}}"));
  char *run = tsrv_submit(&t, ALICE, "{\"queue\": \"lab/b\", \"command\": [\"x\"], \"gpus\": 4}");
  REQUIRE(run);
  json_decref(tsrv_heartbeat(&t, "n1", 0, 1000, NULL));
  REQUIRE(tsrv_wait_state(&t, run, "running"));
  REQUIRE(budget_spent(&t));

  /* Held by the budget alone: its owner may not release it, and is not told to. */
  char *a = tsrv_submit(&t, ALICE, "{\"queue\": \"lab/b\", \"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(a);
  CHECK_EQ_STR("held", state_of(&t, a));
  CHECK_CONTAINS(job_str(t.last, "pending_message"), "spent its monthly budget");
  CHECK_CONTAINS(job_str(t.last, "pending_message"), "an admin releases it");
  CHECK(!strstr(job_str(t.last, "pending_message"), "gpool release"));
  CHECK_EQ_INT(403, act(&t, ALICE, a, "release"));
  CHECK_EQ_STR("permission_denied", err_code(t.last));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(t.last, "error"), "message")),
                 "only an admin may release it");
  CHECK_EQ_STR("held", state_of(&t, a));

  /* Submitted --hold while the budget is spent: both holds. The owner's release changes
   * nothing (not even its own hold: the answer is a refusal, not half a release). */
  char *b = tsrv_submit(&t, ALICE, "{\"queue\": \"lab/b\", \"command\": [\"x\"], \"gpus\": 1, \"hold\": true}");
  REQUIRE(b);
  CHECK_EQ_STR("held", state_of(&t, b));
  CHECK_CONTAINS(job_str(t.last, "pending_message"), "spent its monthly budget");
  CHECK_EQ_INT(403, act(&t, ALICE, b, "release"));
  CHECK_EQ_STR("held", state_of(&t, b));
  usleep(300000); /* a few scheduler steps: still held */
  CHECK_EQ_STR("held", state_of(&t, a));
  CHECK_EQ_STR("held", state_of(&t, b));

  /* The owner holds a budget-held job too; an admin's release lifts both holds. */
  char *c = tsrv_submit(&t, ALICE, "{\"queue\": \"lab/b\", \"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(c);
  CHECK_EQ_INT(200, act(&t, ALICE, c, "hold"));
  CHECK_EQ_INT(200, act(&t, ADMIN, c, "release"));
  CHECK_EQ_STR("pending", job_str(t.last, "state"));
  /* An owner's own hold of a job the budget does not hold is still theirs to lift. */
  char *other = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"x\"], \"gpus\": 1, \"hold\": true}");
  REQUIRE(other);
  CHECK_EQ_INT(200, act(&t, ALICE, other, "release"));
  CHECK_EQ_STR("pending", job_str(t.last, "state"));

  /* The next month lifts the budget's holds only: a is free, b stays held by its owner,
   * who then releases it. */
  gp_budget_test_clock_shift(32 * 86400);
  CHECK(tsrv_wait_state(&t, a, "pending") || tsrv_wait_state(&t, a, "running"));
  usleep(300000);
  CHECK_EQ_STR("held", state_of(&t, b));
  CHECK_EQ_STR("The job is held; release it with `gpool release`.", job_str(t.last, "pending_message"));
  CHECK_EQ_INT(200, act(&t, ALICE, b, "release"));
  CHECK(strcmp(job_str(t.last, "state"), "held") != 0);
  gp_budget_test_clock_shift(0);
  free(run);
  free(a);
  free(b);
  free(c);
  free(other);
  tsrv_stop(&t);
}

GP_TESTS(only_an_admin_or_the_next_period_lifts_a_budget_hold)
