/* SPDX-License-Identifier: Apache-2.0 */
/* Unknown input is refused, never dropped (docs/api.md, "Bodies" and "Targets and
 * queries"): an unknown field of a node interrupt's body, an unknown parameter of the job
 * history or of the job list is 400 naming it, and changes nothing. A real server on
 * 127.0.0.1 with a real SQLite file. */
#include "test.h"
#include "srv_util.h"

static void an_interrupt_refuses_a_field_it_does_not_know(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  /* A typo of notice_s would otherwise give the node the default two minutes. */
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/nodes/n1/interrupt", ADMIN, "{\"notice\": 30}"));
  CHECK_EQ_STR("invalid_argument", err_code(t.last));
  CHECK_EQ_STR("notice", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/nodes/n1/interrupt", ADMIN,
                             "{\"notice_s\": 30, \"source\": \"aws\"}"));
  CHECK_EQ_STR("source", err_field(t.last));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/nodes/n1", ADMIN, NULL));
  CHECK_EQ_STR("up", json_string_value(json_object_get(json_object_get(t.last, "node"), "state")));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/interrupt", ADMIN, "{\"notice_s\": 30}"));
  CHECK_EQ_STR("drain", json_string_value(json_object_get(json_object_get(t.last, "node"), "state")));
  tsrv_stop(&t);
}

static void job_lists_refuse_a_parameter_they_do_not_know(void) {
  tsrv t = {0};
  tsrv_start(&t);
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(id);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s/cancel", id);
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", path, ALICE, NULL));
  /* The history: `state` is the live list's filter; dropping it would list every state. */
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?all=1&state=failed", ADMIN, NULL));
  CHECK_EQ_STR("invalid_argument", err_code(t.last));
  CHECK_EQ_STR("state", err_field(t.last));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(t.last, "error"), "message")),
                 "unknown parameter \"state\"");
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?all=1&usr=bob", ADMIN, NULL));
  CHECK_EQ_STR("usr", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?all=1&next=5", ALICE, NULL));
  CHECK_EQ_STR("next", err_field(t.last));
  const char *good = "/v1/jobs?all=1&from=2000-01-01&to=2100-01-01&user=alice&queue=org&limit=5";
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", good, ADMIN, NULL));
  CHECK_EQ_INT(1, json_array_size(json_object_get(t.last, "jobs")));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?all=1&cursor=9999999999.1", ADMIN, NULL));
  /* The live list likewise. */
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?stat=running", ADMIN, NULL));
  CHECK_EQ_STR("stat", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/jobs?cursor=2", ADMIN, NULL));
  CHECK_EQ_STR("cursor", err_field(t.last));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?state=cancelled&queue=org&user=alice&limit=5&next=1", ADMIN, NULL));
  CHECK_EQ_INT(1, json_array_size(json_object_get(t.last, "jobs")));
  free(id);
  tsrv_stop(&t);
}

GP_TESTS(an_interrupt_refuses_a_field_it_does_not_know, job_lists_refuse_a_parameter_they_do_not_know)
