/* SPDX-License-Identifier: Apache-2.0 */
/* The public API as a user meets it: tokens, submissions, lists, permissions, holds and
 * cancels, queues created through the API surviving a restart, node drains, and clear
 * 4xx answers for bad input. A real server on 127.0.0.1 with a real SQLite file. */
#include "test.h"
#include "srv_util.h"
#include "store/store.h"

static void health_needs_no_token_but_the_api_does(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  CHECK_EQ_INT(401, tsrv_req(&t, "GET", "/v1/jobs", NULL, NULL));
  CHECK_EQ_STR("unauthenticated", err_code(t.last));
  CHECK_EQ_INT(401, tsrv_req(&t, "GET", "/v1/jobs", "wrong-token-123", NULL));
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", "/v1/jobs", AGENT, NULL));
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/v1/nothing", ALICE, NULL));
  CHECK_EQ_STR("not_found", err_code(t.last));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/metrics", NULL, NULL));
  tsrv_stop(&t);
}

static void a_submitted_job_is_shown_and_listed_with_filters(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_req(&t, "POST", "/v1/jobs", ALICE,
                             "{\"queue\": \"org/a\", \"name\": \"train\", \"command\": [\"python\", \"train.py\"],"
                             " \"gpus\": 2, \"time_limit\": 3600, \"requeue\": true, \"signal\": \"SIGUSR1\"}"));
  CHECK_EQ_STR("1", job_str(t.last, "id"));
  CHECK_EQ_STR("pending", job_str(t.last, "state"));
  CHECK_EQ_STR("alice", job_str(t.last, "user"));
  CHECK_EQ_STR("USR1", job_str(t.last, "signal"));
  CHECK_EQ_STR("submitted", json_string_value(json_object_get(
                                json_array_get(json_object_get(json_object_get(t.last, "job"), "timeline"), 0), "event")));
  /* Without a queue, the user's default queue. */
  char *id2 = tsrv_submit(&t, BOB, "{\"command\": [\"true\"]}");
  REQUIRE(id2);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs/2", BOB, NULL));
  CHECK_EQ_STR("default", job_str(t.last, "queue"));
  free(id2);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?user=alice&state=pending,running", ALICE, NULL));
  CHECK_EQ_INT(1, json_array_size(json_object_get(t.last, "jobs")));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?queue=org", ALICE, NULL));
  CHECK_EQ_INT(1, json_array_size(json_object_get(t.last, "jobs")));
  /* Paging: one at a time with the cursor. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?limit=1", ALICE, NULL));
  CHECK_EQ_INT(1, json_array_size(json_object_get(t.last, "jobs")));
  CHECK_EQ_STR("2", json_string_value(json_object_get(t.last, "next")));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?limit=1&next=2", ALICE, NULL));
  CHECK_EQ_STR("2", json_string_value(json_object_get(json_array_get(json_object_get(t.last, "jobs"), 0), "id")));
  CHECK(json_is_null(json_object_get(t.last, "next")));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?limit=10001", ALICE, NULL));
  CHECK_EQ_STR("limit", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?state=sleeping", ALICE, NULL));
  CHECK_EQ_STR("state", err_field(t.last));
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/v1/jobs/99", ALICE, NULL));
  tsrv_stop(&t);
}

static void bad_requests_get_clear_errors(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\""));
  CHECK_EQ_STR("invalid_argument", err_code(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"colour\": 1}"));
  CHECK_EQ_STR("colour", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"gpus\": 1}"));
  CHECK_EQ_STR("command", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"gpus\": \"two\"}"));
  CHECK_EQ_STR("gpus", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"gpus\": 33}"));
  CHECK_EQ_STR("gpus", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"after\": [\"77\"]}"));
  CHECK_EQ_STR("after[0]", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"queue\": \"nope\"}"));
  CHECK_EQ_STR("queue", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"priority\": \"vip\"}"));
  CHECK_EQ_STR("priority", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "[1, 2]"));
  /* An oversized body: 413, and nothing is created. */
  size_t big = (1u << 20) + 100;
  char *body = malloc(big + 64);
  strcpy(body, "{\"command\": [\"");
  memset(body + strlen(body), 'a', big);
  strcpy(body + 14 + big, "\"]}");
  CHECK_EQ_INT(413, tsrv_req(&t, "POST", "/v1/jobs", ALICE, body));
  CHECK_EQ_STR("too_large", err_code(t.last));
  /* Exactly 1 MiB is read whole (here it names an unknown key), not cut short at the
   * limit and then taken for broken JSON. */
  const char *head = "{\"command\": [\"x\"], \"pad\": \"";
  size_t fill = ((size_t)1 << 20) - strlen(head) - 2;
  strcpy(body, head);
  memset(body + strlen(head), 'a', fill);
  strcpy(body + strlen(head) + fill, "\"}");
  CHECK_EQ_INT((long)1 << 20, (long)strlen(body));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, body));
  CHECK_EQ_STR("pad", err_field(t.last));
  free(body);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", ADMIN, NULL));
  CHECK_EQ_INT(0, json_array_size(json_object_get(t.last, "jobs")));
  CHECK_EQ_INT(405, tsrv_req(&t, "DELETE", "/v1/jobs", ADMIN, NULL));
  tsrv_stop(&t);
}

static void users_stay_in_their_queues_and_jobs(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/jobs", BOB, "{\"queue\": \"org/a\", \"command\": [\"x\"]}"));
  CHECK_EQ_STR("permission_denied", err_code(t.last));
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/jobs", BOB, "{\"command\": [\"x\"], \"user\": \"alice\"}"));
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"x\"]}");
  REQUIRE(id);
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/jobs/1/cancel", BOB, NULL));
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/jobs/1/hold", BOB, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/jobs/1/hold", ALICE, NULL));
  CHECK_EQ_STR("held", job_str(t.last, "state"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs/1", ALICE, NULL));
  CHECK_EQ_STR("Held", job_str(t.last, "pending_reason"));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/jobs/1/release", ALICE, NULL));
  CHECK_EQ_STR("pending", job_str(t.last, "state"));
  /* An admin may act on anyone's job. */
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/jobs/1/cancel", ADMIN, NULL));
  CHECK_EQ_STR("cancelled", job_str(t.last, "state"));
  CHECK_EQ_INT(409, tsrv_req(&t, "POST", "/v1/jobs/1/cancel", ALICE, NULL));
  CHECK_EQ_STR("conflict", err_code(t.last));
  CHECK_EQ_INT(409, tsrv_req(&t, "POST", "/v1/jobs/1/release", ALICE, NULL));
  free(id);
  /* A job's command and environment are its owner's (and the admins'): others see their
   * shape only, in the list and alone. */
  free(tsrv_submit(&t, ALICE, "{\"command\": [\"train\", \"--token=s3cret\"], \"env\": {\"API_KEY\": \"k3y\"}}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs/2", BOB, NULL));
  char *seen = json_dumps(t.last, JSON_COMPACT);
  CHECK(!strstr(seen, "s3cret") && !strstr(seen, "k3y"));
  CHECK_CONTAINS(seen, "\"API_KEY\":\"(hidden)\"");
  free(seen);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", BOB, NULL));
  seen = json_dumps(t.last, JSON_COMPACT);
  CHECK(!strstr(seen, "s3cret") && !strstr(seen, "k3y"));
  free(seen);
  for (int k = 0; k < 2; k++) {
    CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs/2", k ? ADMIN : ALICE, NULL));
    seen = json_dumps(t.last, JSON_COMPACT);
    CHECK_CONTAINS(seen, "--token=s3cret");
    CHECK_CONTAINS(seen, "k3y");
    free(seen);
  }
  tsrv_stop(&t);
}

static json_t *find_queue(json_t *list, const char *name) {
  for (size_t i = 0; i < json_array_size(list); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(list, i), "name")), name) == 0)
      return json_array_get(list, i);
  return NULL;
}

static void queues_form_a_tree_and_api_queues_survive_a_restart(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues", ALICE, NULL));
  json_t *qs = json_object_get(t.last, "queues");
  REQUIRE(find_queue(qs, "org") && find_queue(qs, "org/a"));
  CHECK_EQ_STR("org", json_string_value(json_object_get(find_queue(qs, "org/a"), "parent")));
  CHECK_NEAR(8.0, json_number_value(json_object_get(find_queue(qs, "org"), "deserved")), 1e-9);
  CHECK_EQ_INT(403, tsrv_req(&t, "PUT", "/v1/queues/lab/x", ALICE, "{\"deserved\": 2}"));
  CHECK_EQ_INT(409, tsrv_req(&t, "PUT", "/v1/queues/org/a", ADMIN, "{\"deserved\": 2}"));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/queues/lab/x", ADMIN, "{\"deserved\": 2, \"limit\": 1}"));
  CHECK_EQ_STR("limit", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/queues/lab/x", ADMIN, "{\"size\": 2}"));
  CHECK_EQ_STR("size", err_field(t.last));
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/lab/x", ADMIN,
                             "{\"deserved\": 2, \"limit\": 6, \"users\": [\"bob\"]}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/queues/lab/x", ADMIN, "{\"weight\": 3}"));
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start(&t); /* same data dir */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/lab/x", BOB, NULL));
  CHECK_NEAR(2.0, json_number_value(json_object_get(json_object_get(t.last, "queue"), "deserved")), 1e-9);
  CHECK_NEAR(3.0, json_number_value(json_object_get(json_object_get(t.last, "queue"), "weight")), 1e-9);
  char *id = tsrv_submit(&t, BOB, "{\"queue\": \"lab/x\", \"command\": [\"x\"]}");
  REQUIRE(id);
  CHECK_EQ_INT(409, tsrv_req(&t, "DELETE", "/v1/queues/lab/x", ADMIN, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/jobs/1/cancel", BOB, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "DELETE", "/v1/queues/lab/x", ADMIN, NULL));
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/v1/queues/lab/x", BOB, NULL));
  free(id);
  tsrv_stop(&t);
}

static void admins_drain_and_resume_nodes_and_gpus(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 4, NULL));
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/nodes/n1/drain", ALICE, "{\"reason\": \"x\"}"));
  CHECK_EQ_INT(404, tsrv_req(&t, "POST", "/v1/nodes/n9/drain", ADMIN, "{\"reason\": \"x\"}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/drain", ADMIN, "{\"reason\": \"bad fan\"}"));
  CHECK_EQ_STR("drain", json_string_value(json_object_get(json_object_get(t.last, "node"), "state")));
  CHECK_EQ_STR("bad fan", json_string_value(json_object_get(json_object_get(t.last, "node"), "reason")));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/resume", ADMIN, NULL));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/nodes/n1/drain", ADMIN, "{\"gpu\": 4}"));
  CHECK_EQ_STR("gpu", err_field(t.last));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/drain", ADMIN, "{\"gpu\": 3, \"reason\": \"ecc\"}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/nodes", ALICE, NULL));
  json_t *n1 = json_array_get(json_object_get(t.last, "nodes"), 0);
  CHECK_EQ_STR("up", json_string_value(json_object_get(n1, "state")));
  json_t *g3 = json_array_get(json_object_get(n1, "gpu_list"), 3);
  CHECK_EQ_STR("drained", json_string_value(json_object_get(g3, "health")));
  CHECK_EQ_STR("GPU-n1-3", json_string_value(json_object_get(g3, "uuid")));
  /* Simulated faults are checked before they are sent. */
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/nodes/n1/inject", ADMIN, "{\"fault\": \"xid:79\"}"));
  CHECK_EQ_STR("fault", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/nodes/n1/inject", ADMIN, "{\"fault\": \"xid:79@gpu9\"}"));
  /* The agent is told too. */
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  json_t *order = json_array_get(json_object_get(hb, "orders"), 0);
  CHECK_EQ_STR("drain_gpu", json_string_value(json_object_get(order, "kind")));
  json_decref(hb);
  tsrv_stop(&t);
}

static void a_failed_commit_answers_503_and_acknowledges_nothing(void) {
  tsrv t = {0};
  tsrv_start_faulty(&t);
  char *ok = tsrv_submit(&t, ALICE, "{\"command\": [\"first\"]}");
  REQUIRE(ok);
  gp_store_fault_arm(gp_server_store(t.srv), 1, true);
  CHECK_EQ_INT(503, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"second\"]}"));
  CHECK_EQ_STR("unavailable", err_code(t.last));
  gp_store_fault_arm(gp_server_store(t.srv), 0, false);
  /* The server reloaded the truth: the failed job does not exist, the next id is free. */
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/v1/jobs/2", ALICE, NULL));
  /* Writes are taken again once a probe of the store succeeds (store_health.h). */
  for (int i = 0; i < 500 && tsrv_req(&t, "GET", "/healthz", NULL, NULL) != 200; i++) usleep(10000);
  char *third = tsrv_submit(&t, ALICE, "{\"command\": [\"third\"]}");
  REQUIRE(third);
  CHECK_EQ_STR("2", third);
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", ADMIN, NULL));
  json_t *jobs = json_object_get(t.last, "jobs");
  CHECK_EQ_INT(2, json_array_size(jobs));
  CHECK_EQ_STR("third", json_string_value(json_array_get(json_object_get(json_array_get(jobs, 1), "command"), 0)));
  free(ok);
  free(third);
  tsrv_stop(&t);
}

static void impossible_requests_are_refused_at_submit_when_the_fleet_is_known(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"gpus\": 16}"));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(t.last, "error"), "message")), "NoMatchingNodes");
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE,
                             "{\"command\": [\"x\"], \"gpus\": 1, \"gpu_types\": [\"A100-40GB\"]}"));
  CHECK_EQ_STR("gpu_types", err_field(t.last));
  CHECK_EQ_INT(201, tsrv_req(&t, "POST", "/v1/jobs", ALICE,
                             "{\"command\": [\"x\"], \"gpus\": 8, \"gpu_types\": [\"h100-80gb\"]}"));
  /* Spelled as the fleet spells it, so that the scheduler, which compares exactly, finds it. */
  CHECK_EQ_STR("H100-80GB", json_string_value(json_array_get(json_object_get(json_object_get(t.last, "job"), "gpu_types"), 0)));
  /* The scheduler's own test: two 8-GPU tasks need two such nodes; the pool has one. */
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"gpus\": 8, \"tasks\": 2}"));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(t.last, "error"), "message")), "NoMatchingNodes");
  CHECK_EQ_INT(201, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"gpus\": 4, \"tasks\": 2}"));
  tsrv_stop(&t);
}

GP_TESTS(health_needs_no_token_but_the_api_does, a_submitted_job_is_shown_and_listed_with_filters,
         bad_requests_get_clear_errors, users_stay_in_their_queues_and_jobs,
         queues_form_a_tree_and_api_queues_survive_a_restart,
         admins_drain_and_resume_nodes_and_gpus,
         a_failed_commit_answers_503_and_acknowledges_nothing,
         impossible_requests_are_refused_at_submit_when_the_fleet_is_known)
