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
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/healthz", NULL, NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(401, tsrv_call(&t, "GET", "/v1/jobs", NULL, NULL, &o));
  CHECK_EQ_STR("unauthenticated", err_code(o));
  json_decref(o);
  CHECK_EQ_INT(401, tsrv_call(&t, "GET", "/v1/jobs", "wrong-token-123", NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(403, tsrv_call(&t, "GET", "/v1/jobs", AGENT, NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(404, tsrv_call(&t, "GET", "/v1/nothing", ALICE, NULL, &o));
  CHECK_EQ_STR("not_found", err_code(o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/metrics", NULL, NULL, NULL));
  tsrv_stop(&t);
}

static void a_submitted_job_is_shown_and_listed_with_filters(void) {
  tsrv t = {0};
  tsrv_start(&t);
  json_t *o = NULL;
  CHECK_EQ_INT(201, tsrv_call(&t, "POST", "/v1/jobs", ALICE,
                              "{\"queue\": \"org/a\", \"name\": \"train\", \"command\": [\"python\", \"train.py\"],"
                              " \"gpus\": 2, \"time_limit\": 3600, \"requeue\": true, \"signal\": \"SIGUSR1\"}",
                              &o));
  CHECK_EQ_STR("1", job_str(o, "id"));
  CHECK_EQ_STR("pending", job_str(o, "state"));
  CHECK_EQ_STR("alice", job_str(o, "user"));
  CHECK_EQ_STR("USR1", job_str(o, "signal"));
  CHECK_EQ_STR("submitted", json_string_value(json_object_get(
                                json_array_get(json_object_get(json_object_get(o, "job"), "timeline"), 0), "event")));
  json_decref(o);
  /* Without a queue, the user's default queue. */
  char *id2 = tsrv_submit(&t, BOB, "{\"command\": [\"true\"]}");
  REQUIRE(id2);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/jobs/2", BOB, NULL, &o));
  CHECK_EQ_STR("default", job_str(o, "queue"));
  json_decref(o);
  free(id2);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/jobs?user=alice&state=pending,running", ALICE, NULL, &o));
  CHECK_EQ_INT(1, json_array_size(json_object_get(o, "jobs")));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/jobs?queue=org", ALICE, NULL, &o));
  CHECK_EQ_INT(1, json_array_size(json_object_get(o, "jobs")));
  json_decref(o);
  /* Paging: one at a time with the cursor. */
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/jobs?limit=1", ALICE, NULL, &o));
  CHECK_EQ_INT(1, json_array_size(json_object_get(o, "jobs")));
  CHECK_EQ_STR("2", json_string_value(json_object_get(o, "next")));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/jobs?limit=1&next=2", ALICE, NULL, &o));
  CHECK_EQ_STR("2", json_string_value(json_object_get(json_array_get(json_object_get(o, "jobs"), 0), "id")));
  CHECK(json_is_null(json_object_get(o, "next")));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "GET", "/v1/jobs?limit=10001", ALICE, NULL, &o));
  CHECK_EQ_STR("limit", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "GET", "/v1/jobs?state=sleeping", ALICE, NULL, &o));
  CHECK_EQ_STR("state", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(404, tsrv_call(&t, "GET", "/v1/jobs/99", ALICE, NULL, &o));
  json_decref(o);
  tsrv_stop(&t);
}

static void bad_requests_get_clear_errors(void) {
  tsrv t = {0};
  tsrv_start(&t);
  json_t *o = NULL;
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"", &o));
  CHECK_EQ_STR("invalid_argument", err_code(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"colour\": 1}", &o));
  CHECK_EQ_STR("colour", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"gpus\": 1}", &o));
  CHECK_EQ_STR("command", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"gpus\": \"two\"}", &o));
  CHECK_EQ_STR("gpus", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"gpus\": 33}", &o));
  CHECK_EQ_STR("gpus", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"after\": [\"77\"]}", &o));
  CHECK_EQ_STR("after[0]", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"queue\": \"nope\"}", &o));
  CHECK_EQ_STR("queue", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"priority\": \"vip\"}", &o));
  CHECK_EQ_STR("priority", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "[1, 2]", &o));
  json_decref(o);
  /* An oversized body: 413, and nothing is created. */
  size_t big = (1u << 20) + 100;
  char *body = malloc(big + 64);
  strcpy(body, "{\"command\": [\"");
  memset(body + strlen(body), 'a', big);
  strcpy(body + 14 + big, "\"]}");
  CHECK_EQ_INT(413, tsrv_call(&t, "POST", "/v1/jobs", ALICE, body, &o));
  CHECK_EQ_STR("too_large", err_code(o));
  json_decref(o);
  /* Exactly 1 MiB is read whole (here it names an unknown key), not cut short at the
   * limit and then taken for broken JSON. */
  const char *head = "{\"command\": [\"x\"], \"pad\": \"";
  size_t fill = ((size_t)1 << 20) - strlen(head) - 2;
  strcpy(body, head);
  memset(body + strlen(head), 'a', fill);
  strcpy(body + strlen(head) + fill, "\"}");
  CHECK_EQ_INT((long)1 << 20, (long)strlen(body));
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, body, &o));
  CHECK_EQ_STR("pad", err_field(o));
  json_decref(o);
  free(body);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/jobs", ADMIN, NULL, &o));
  CHECK_EQ_INT(0, json_array_size(json_object_get(o, "jobs")));
  json_decref(o);
  CHECK_EQ_INT(405, tsrv_call(&t, "DELETE", "/v1/jobs", ADMIN, NULL, &o));
  json_decref(o);
  tsrv_stop(&t);
}

static void users_stay_in_their_queues_and_jobs(void) {
  tsrv t = {0};
  tsrv_start(&t);
  json_t *o = NULL;
  CHECK_EQ_INT(403, tsrv_call(&t, "POST", "/v1/jobs", BOB, "{\"queue\": \"org/a\", \"command\": [\"x\"]}", &o));
  CHECK_EQ_STR("permission_denied", err_code(o));
  json_decref(o);
  CHECK_EQ_INT(403, tsrv_call(&t, "POST", "/v1/jobs", BOB, "{\"command\": [\"x\"], \"user\": \"alice\"}", &o));
  json_decref(o);
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"x\"]}");
  REQUIRE(id);
  CHECK_EQ_INT(403, tsrv_call(&t, "POST", "/v1/jobs/1/cancel", BOB, NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(403, tsrv_call(&t, "POST", "/v1/jobs/1/hold", BOB, NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/jobs/1/hold", ALICE, NULL, &o));
  CHECK_EQ_STR("held", job_str(o, "state"));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/jobs/1", ALICE, NULL, &o));
  CHECK_EQ_STR("Held", job_str(o, "pending_reason"));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/jobs/1/release", ALICE, NULL, &o));
  CHECK_EQ_STR("pending", job_str(o, "state"));
  json_decref(o);
  /* An admin may act on anyone's job. */
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/jobs/1/cancel", ADMIN, NULL, &o));
  CHECK_EQ_STR("cancelled", job_str(o, "state"));
  json_decref(o);
  CHECK_EQ_INT(409, tsrv_call(&t, "POST", "/v1/jobs/1/cancel", ALICE, NULL, &o));
  CHECK_EQ_STR("conflict", err_code(o));
  json_decref(o);
  CHECK_EQ_INT(409, tsrv_call(&t, "POST", "/v1/jobs/1/release", ALICE, NULL, &o));
  json_decref(o);
  free(id);
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
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/queues", ALICE, NULL, &o));
  json_t *qs = json_object_get(o, "queues");
  REQUIRE(find_queue(qs, "org") && find_queue(qs, "org/a"));
  CHECK_EQ_STR("org", json_string_value(json_object_get(find_queue(qs, "org/a"), "parent")));
  CHECK_NEAR(8.0, json_number_value(json_object_get(find_queue(qs, "org"), "deserved")), 1e-9);
  json_decref(o);
  CHECK_EQ_INT(403, tsrv_call(&t, "PUT", "/v1/queues/lab/x", ALICE, "{\"deserved\": 2}", &o));
  json_decref(o);
  CHECK_EQ_INT(409, tsrv_call(&t, "PUT", "/v1/queues/org/a", ADMIN, "{\"deserved\": 2}", &o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "PUT", "/v1/queues/lab/x", ADMIN, "{\"deserved\": 2, \"limit\": 1}", &o));
  CHECK_EQ_STR("limit", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "PUT", "/v1/queues/lab/x", ADMIN, "{\"size\": 2}", &o));
  CHECK_EQ_STR("size", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(201, tsrv_call(&t, "PUT", "/v1/queues/lab/x", ADMIN,
                              "{\"deserved\": 2, \"limit\": 6, \"users\": [\"bob\"]}", &o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "PUT", "/v1/queues/lab/x", ADMIN, "{\"weight\": 3}", &o));
  json_decref(o);
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start(&t); /* same data dir */
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/queues/lab/x", BOB, NULL, &o));
  CHECK_NEAR(2.0, json_number_value(json_object_get(json_object_get(o, "queue"), "deserved")), 1e-9);
  CHECK_NEAR(3.0, json_number_value(json_object_get(json_object_get(o, "queue"), "weight")), 1e-9);
  json_decref(o);
  char *id = tsrv_submit(&t, BOB, "{\"queue\": \"lab/x\", \"command\": [\"x\"]}");
  REQUIRE(id);
  CHECK_EQ_INT(409, tsrv_call(&t, "DELETE", "/v1/queues/lab/x", ADMIN, NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/jobs/1/cancel", BOB, NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "DELETE", "/v1/queues/lab/x", ADMIN, NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(404, tsrv_call(&t, "GET", "/v1/queues/lab/x", BOB, NULL, &o));
  json_decref(o);
  free(id);
  tsrv_stop(&t);
}

static void admins_drain_and_resume_nodes_and_gpus(void) {
  tsrv t = {0};
  tsrv_start(&t);
  json_t *o = NULL;
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 4, NULL));
  CHECK_EQ_INT(403, tsrv_call(&t, "POST", "/v1/nodes/n1/drain", ALICE, "{\"reason\": \"x\"}", &o));
  json_decref(o);
  CHECK_EQ_INT(404, tsrv_call(&t, "POST", "/v1/nodes/n9/drain", ADMIN, "{\"reason\": \"x\"}", &o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/nodes/n1/drain", ADMIN, "{\"reason\": \"bad fan\"}", &o));
  CHECK_EQ_STR("drain", json_string_value(json_object_get(json_object_get(o, "node"), "state")));
  CHECK_EQ_STR("bad fan", json_string_value(json_object_get(json_object_get(o, "node"), "reason")));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/nodes/n1/resume", ADMIN, NULL, &o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/nodes/n1/drain", ADMIN, "{\"gpu\": 4}", &o));
  CHECK_EQ_STR("gpu", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/nodes/n1/drain", ADMIN, "{\"gpu\": 3, \"reason\": \"ecc\"}", &o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/nodes", ALICE, NULL, &o));
  json_t *n1 = json_array_get(json_object_get(o, "nodes"), 0);
  CHECK_EQ_STR("up", json_string_value(json_object_get(n1, "state")));
  json_t *g3 = json_array_get(json_object_get(n1, "gpu_list"), 3);
  CHECK_EQ_STR("drained", json_string_value(json_object_get(g3, "health")));
  CHECK_EQ_STR("GPU-n1-3", json_string_value(json_object_get(g3, "uuid")));
  json_decref(o);
  /* Simulated faults are checked before they are sent. */
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/nodes/n1/inject", ADMIN, "{\"fault\": \"xid:79\"}", &o));
  CHECK_EQ_STR("fault", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/nodes/n1/inject", ADMIN, "{\"fault\": \"xid:79@gpu9\"}", &o));
  json_decref(o);
  /* The agent is told too. */
  o = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(o);
  json_t *order = json_array_get(json_object_get(o, "orders"), 0);
  CHECK_EQ_STR("drain_gpu", json_string_value(json_object_get(order, "kind")));
  json_decref(o);
  tsrv_stop(&t);
}

static void a_failed_commit_answers_503_and_acknowledges_nothing(void) {
  tsrv t = {0};
  snprintf(t.dir, sizeof t.dir, "/tmp/gp_srv_test_XXXXXX");
  REQUIRE(mkdtemp(t.dir) != NULL);
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t.dir);
  gp_store *inner = NULL, *fs = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &inner, &e) == 0);
  REQUIRE(gp_store_fault_open(inner, &fs) == 0);
  tsrv_start_with(&t, NULL, fs);
  char *ok = tsrv_submit(&t, ALICE, "{\"command\": [\"first\"]}");
  REQUIRE(ok);
  gp_store_fault_arm(gp_server_store(t.srv), 1, true);
  json_t *o = NULL;
  CHECK_EQ_INT(503, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"second\"]}", &o));
  CHECK_EQ_STR("unavailable", err_code(o));
  json_decref(o);
  gp_store_fault_arm(gp_server_store(t.srv), 0, false);
  /* The server reloaded the truth: the failed job does not exist, the next id is free. */
  CHECK_EQ_INT(404, tsrv_call(&t, "GET", "/v1/jobs/2", ALICE, NULL, &o));
  json_decref(o);
  char *third = tsrv_submit(&t, ALICE, "{\"command\": [\"third\"]}");
  REQUIRE(third);
  CHECK_EQ_STR("2", third);
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start(&t);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/jobs", ADMIN, NULL, &o));
  json_t *jobs = json_object_get(o, "jobs");
  CHECK_EQ_INT(2, json_array_size(jobs));
  CHECK_EQ_STR("third", json_string_value(json_array_get(json_object_get(json_array_get(jobs, 1), "command"), 0)));
  json_decref(o);
  free(ok);
  free(third);
  tsrv_stop(&t);
}

static void impossible_requests_are_refused_at_submit_when_the_fleet_is_known(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  json_t *o = NULL;
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"x\"], \"gpus\": 16}", &o));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(o, "error"), "message")), "NoMatchingNodes");
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_call(&t, "POST", "/v1/jobs", ALICE,
                              "{\"command\": [\"x\"], \"gpus\": 1, \"gpu_types\": [\"A100-40GB\"]}", &o));
  CHECK_EQ_STR("gpu_types", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(201, tsrv_call(&t, "POST", "/v1/jobs", ALICE,
                              "{\"command\": [\"x\"], \"gpus\": 8, \"gpu_types\": [\"h100-80gb\"]}", &o));
  json_decref(o);
  tsrv_stop(&t);
}

GP_TESTS(health_needs_no_token_but_the_api_does, a_submitted_job_is_shown_and_listed_with_filters,
         bad_requests_get_clear_errors, users_stay_in_their_queues_and_jobs,
         queues_form_a_tree_and_api_queues_survive_a_restart,
         admins_drain_and_resume_nodes_and_gpus,
         a_failed_commit_answers_503_and_acknowledges_nothing,
         impossible_requests_are_refused_at_submit_when_the_fleet_is_known)
