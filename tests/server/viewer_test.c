/* SPDX-License-Identifier: Apache-2.0 */
/* The viewer role (a read-only token for wall screens): it reads every job, node, queue
 * and report as an admin does, never a job's command, environment or log, and every write
 * is refused with 403. A real server on 127.0.0.1 with a real SQLite file. */
#include "test.h"
#include "srv_util.h"

static const char *job_body =
    "{\"queue\": \"org/a\", \"name\": \"train\", \"command\": [\"python\", \"secret.py\"],"
    " \"env\": {\"API_KEY\": \"s3cr3t\"}, \"gpus\": 1}";

static void a_viewer_reads_every_job_but_not_its_secrets(void) {
  tsrv t = {0};
  tsrv_start(&t);
  char *id = tsrv_submit(&t, ALICE, job_body);
  REQUIRE(id);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", VIEWER, NULL));
  const json_t *jobs = json_object_get(t.last, "jobs");
  CHECK_EQ_INT(1, json_array_size(jobs));
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, VIEWER, NULL));
  CHECK_EQ_STR("alice", job_str(t.last, "user"));
  char *text = json_dumps(t.last, JSON_COMPACT);
  CHECK(!strstr(text, "secret.py"));
  CHECK(!strstr(text, "s3cr3t"));
  free(text);
  snprintf(path, sizeof path, "/v1/jobs/%s/log", id);
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", path, VIEWER, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/nodes", VIEWER, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues", VIEWER, NULL));
  /* The ended jobs of every user, as an admin lists them. */
  snprintf(path, sizeof path, "/v1/jobs/%s/cancel", id);
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", path, ALICE, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?all=1", VIEWER, NULL));
  CHECK_EQ_INT(1, json_array_size(json_object_get(t.last, "jobs")));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs?all=1", BOB, NULL));
  CHECK_EQ_INT(0, json_array_size(json_object_get(t.last, "jobs")));
  /* Reports across users (a user's scan reads only their own intervals). */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/idle", VIEWER, NULL));
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", "/v1/reports/idle", BOB, NULL));
  free(id);
  tsrv_stop(&t);
}

static void a_viewer_changes_nothing(void) {
  tsrv t = {0};
  tsrv_start(&t);
  REQUIRE(tsrv_register(&t, "n1", 2, NULL) == 201);
  char *id = tsrv_submit(&t, ALICE, job_body);
  REQUIRE(id);
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/jobs", VIEWER, "{\"command\": [\"true\"], \"gpus\": 1}"));
  CHECK_EQ_STR("permission_denied", err_code(t.last));
  /* Refused for the role, not for the body: a viewer learns nothing by submitting. */
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/jobs", VIEWER, "{\"gpus\": \"many\"}"));
  const char *actions[] = {"cancel", "hold", "release"};
  for (int i = 0; i < 3; i++) {
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%s/%s", id, actions[i]);
    CHECK_EQ_INT(403, tsrv_req(&t, "POST", path, VIEWER, NULL));
  }
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/nodes/n1/drain", VIEWER, "{}"));
  CHECK_EQ_INT(403, tsrv_req(&t, "DELETE", "/v1/nodes/n1", VIEWER, NULL));
  CHECK_EQ_INT(403, tsrv_req(&t, "PUT", "/v1/queues/wall", VIEWER, "{\"deserved\": 1}"));
  CHECK_EQ_INT(403, tsrv_req(&t, "PUT", "/v1/prices", VIEWER, "{}"));
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/agent/heartbeat", VIEWER, "{\"node\": \"n1\"}"));
  /* Nothing moved: the job is still alice's and not cancelled, the node up, no queue. */
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, ADMIN, NULL));
  CHECK(strcmp(job_str(t.last, "state"), "cancelled") != 0);
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/v1/queues/wall", ADMIN, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/nodes/n1", ADMIN, NULL));
  CHECK_EQ_STR("up", json_string_value(json_object_get(json_object_get(t.last, "node"), "state")));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL); /* the node's agent is still answered */
  CHECK(hb != NULL);
  json_decref(hb);
  free(id);
  tsrv_stop(&t);
}

static void the_config_reads_the_viewer_role(void) {
  const char *text = "tokens:\n  - {token: wall-token-1, user: wall, role: viewer}\n"
                     "  - {token: bad-token-12, user: x, role: watcher}\n";
  gp_server_config *c = NULL;
  gp_err e = {0};
  CHECK(gp_server_config_parse("t.yaml", text, strlen(text), &c, &e) != 0);
  CHECK_CONTAINS(e.message, "viewer");
  CHECK_EQ_STR("tokens[1].role", e.field);
  const char *good = "tokens:\n  - {token: wall-token-1, user: wall, role: viewer}\n";
  REQUIRE(gp_server_config_parse("t.yaml", good, strlen(good), &c, &e) == 0);
  CHECK_EQ_INT(GP_ROLE_VIEWER, c->tokens[0].role);
  CHECK_EQ_STR("viewer", gp_role_name(c->tokens[0].role));
  gp_server_config_free(c);
}

GP_TESTS(a_viewer_reads_every_job_but_not_its_secrets, a_viewer_changes_nothing,
         the_config_reads_the_viewer_role)
