/* SPDX-License-Identifier: Apache-2.0 */
/* Notifications through the API (src/server/state/notify_job.c) on a real server on 127.0.0.1
 * with a real SQLite file: each user's own settings (read, changed field by field, checked,
 * kept across a restart, never shown to another user), and submissions that ask for mail
 * refused when there is no address or no sendmail, naming the field. */
#include <sys/stat.h>

#include "test.h"
#include "srv_util.h"

static const char *err_message(json_t *o) {
  return json_string_value(json_object_get(json_object_get(o, "error"), "message"));
}

static void each_user_has_settings_of_their_own(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "notify: {sendmail: /bin/true, webhooks: any}\n", NULL);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/notify", BOB, NULL));
  CHECK(json_is_null(json_object_get(t.last, "webhook")));
  CHECK_EQ_STR("end,fail", json_string_value(json_object_get(t.last, "events")));
  CHECK(json_is_true(json_object_get(t.last, "mail_enabled")));
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/notify", BOB,
                             "{\"webhook\": \"https://hooks.example.org/T/secret\", \"events\": \"BEGIN,END\"}"));
  CHECK_EQ_STR("begin,end", json_string_value(json_object_get(t.last, "events")));
  /* A field left out keeps its value. */
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/notify", BOB, "{\"mail\": \"bob@example.org\"}"));
  CHECK_EQ_STR("https://hooks.example.org/T/secret", json_string_value(json_object_get(t.last, "webhook")));
  CHECK_EQ_STR("bob@example.org", json_string_value(json_object_get(t.last, "mail")));
  /* Alice sees hers, not bob's; a viewer may read but not set. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/notify", ALICE, NULL));
  CHECK(json_is_null(json_object_get(t.last, "webhook")));
  CHECK_EQ_INT(403, tsrv_req(&t, "PUT", "/v1/notify", VIEWER, "{\"events\": \"end\"}"));
  /* Mistakes name the field and change nothing. */
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/notify", BOB, "{\"webhook\": \"file:///etc/passwd\"}"));
  CHECK_EQ_STR("webhook", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/notify", BOB, "{\"mail\": \"bob@example.org\\r\\nBcc: x@y.org\"}"));
  CHECK_EQ_STR("mail", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/notify", BOB, "{\"events\": \"END,STAGE_OUT\"}"));
  CHECK_EQ_STR("events", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/notify", BOB, "{\"pager\": \"on\"}"));
  CHECK_EQ_INT(405, tsrv_req(&t, "POST", "/v1/notify", BOB, "{}"));
  /* Kept in the store. */
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start_with(&t, "notify: {sendmail: /bin/true, webhooks: any}\n", NULL);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/notify", BOB, NULL));
  CHECK_EQ_STR("https://hooks.example.org/T/secret", json_string_value(json_object_get(t.last, "webhook")));
  CHECK_EQ_STR("begin,end", json_string_value(json_object_get(t.last, "events")));
  /* Bob's address is the default of his jobs' mail. */
  CHECK_EQ_INT(201, tsrv_req(&t, "POST", "/v1/jobs", BOB, "{\"command\": [\"true\"], \"mail_type\": \"END\"}"));
  CHECK_EQ_STR("end", job_str(t.last, "mail_type"));
  CHECK_EQ_INT(200, tsrv_req(&t, "DELETE", "/v1/notify", BOB, NULL));
  CHECK(json_is_null(json_object_get(t.last, "webhook")));
  CHECK(json_is_null(json_object_get(t.last, "mail")));
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", BOB, "{\"command\": [\"true\"], \"mail_type\": \"END\"}"));
  CHECK_EQ_STR("mail_type", err_field(t.last));
  CHECK_CONTAINS(err_message(t.last), "no address to mail");
  tsrv_stop(&t);
}

static void mail_is_refused_where_the_server_cannot_send_it(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "notify: {sendmail: /nonexistent/sendmail, webhooks: off}\n", NULL);
  CHECK_EQ_INT(400, tsrv_req(&t, "POST", "/v1/jobs", BOB,
                             "{\"command\": [\"true\"], \"mail_type\": \"END\", \"mail_user\": \"bob@example.org\"}"));
  CHECK_EQ_STR("mail_user", err_field(t.last));
  CHECK_CONTAINS(err_message(t.last), "/nonexistent/sendmail is not installed");
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/notify", BOB, "{\"mail\": \"bob@example.org\"}"));
  CHECK_EQ_STR("mail", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/notify", BOB, "{\"webhook\": \"https://x.example.org/h\"}"));
  CHECK_CONTAINS(err_message(t.last), "notify.webhooks is off");
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/notify", BOB, NULL));
  CHECK(json_is_false(json_object_get(t.last, "mail_enabled")));
  CHECK_EQ_STR("off", json_string_value(json_object_get(t.last, "webhooks")));
  /* A job without mail fields is untouched by all this. */
  CHECK_EQ_INT(201, tsrv_req(&t, "POST", "/v1/jobs", BOB, "{\"command\": [\"true\"]}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs/1", BOB, NULL));
  CHECK(json_is_null(json_object_get(json_object_get(t.last, "job"), "mail_type")));
  CHECK(json_is_null(json_object_get(json_object_get(t.last, "job"), "mail_user")));
  tsrv_stop(&t);
}

GP_TESTS(each_user_has_settings_of_their_own, mail_is_refused_where_the_server_cannot_send_it)
