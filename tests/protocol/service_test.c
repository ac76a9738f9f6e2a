/* SPDX-License-Identifier: Apache-2.0 */
/* A service replica's part of a start order (src/protocol/service.c): it survives encoding
 * and decoding, bad fields are refused by name, and a replica's metrics page (untrusted
 * text) gives a figure only when it reads as one. */
#include "test.h"

#include <jansson.h>
#include <string.h>

#include "protocol/order.h"
#include "protocol/service.h"

static void round_trip(void) {
  json_t *job = json_pack("{s:s, s:s, s:[s], s:{}, s:{s:s, s:{s:s, s:i}, s:n, s:{s:s, s:i, s:i}, s:{s:s, s:s}}}", "id",
                          "7", "user", "bob", "command", "true", "env", "service", "name", "chat", "readiness", "path",
                          "/healthz", "period_s", 1, "startup", "liveness", "path", "/live", "period_s", 5,
                          "failure_threshold", 4, "metrics", "path", "/metrics", "name", "vllm:num_requests_running");
  gp_proto_start s;
  gp_err err = {0};
  REQUIRE(gp_proto_start_decode(job, &s, &err) == 0);
  REQUIRE(s.service != NULL);
  CHECK_EQ_STR("chat", s.service->name);
  CHECK(s.service->readiness.set);
  CHECK_EQ_STR("/healthz", s.service->readiness.path);
  CHECK_EQ_INT(1, s.service->readiness.period_s);
  CHECK_EQ_INT(3, s.service->readiness.failure_threshold); /* the default */
  CHECK(!s.service->startup.set);
  CHECK_EQ_INT(4, s.service->liveness.failure_threshold);
  CHECK_EQ_STR("vllm:num_requests_running", s.service->metric);
  CHECK_EQ_INT(2, s.service->metrics_period_s);
  json_t *again = gp_proto_start_encode(&s);
  gp_proto_start t;
  REQUIRE(gp_proto_start_decode(again, &t, &err) == 0);
  CHECK(t.service && memcmp(t.service, s.service, sizeof *s.service) == 0);
  gp_proto_start_done(&t);
  gp_proto_start_done(&s);
  json_decref(again);
  json_decref(job);
}

static void refused(void) {
  static const char *const bad[][2] = {
      {"{\"name\": \"Chat\"}", "job.service.name"},
      {"{\"name\": \"chat\", \"readiness\": {\"path\": \"healthz\"}}", "job.service.readiness.path"},
      {"{\"name\": \"chat\", \"readiness\": {\"path\": \"/a b\"}}", "job.service.readiness.path"},
      {"{\"name\": \"chat\", \"liveness\": {\"path\": \"/l\", \"period_s\": 0}}", "job.service.liveness.period_s"},
      {"{\"name\": \"chat\", \"metrics\": {\"path\": \"/m\", \"name\": \"1bad\"}}", "job.service.metrics.name"},
      {"[]", "job.service"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *job = json_pack("{s:s, s:s, s:[s], s:{}}", "id", "7", "user", "bob", "command", "true", "env");
    json_object_set_new(job, "service", json_loads(bad[i][0], 0, NULL));
    gp_proto_start s;
    gp_err err = {0};
    CHECK_EQ_INT(GP_EINVAL, gp_proto_start_decode(job, &s, &err));
    CHECK_EQ_STR(bad[i][1], err.field);
    json_decref(job);
  }
}

static void metrics_page(void) {
  const char *page = "# HELP load the load\n# TYPE load gauge\nload{model=\"a\",x=\"}\"} 3\nload 4.5\n"
                     "load_other 100\nloadx 7\n\nnot a line\nload{a=\"b\"} 1e1\n";
  double v = -1;
  CHECK(gp_proto_metric_sum(page, strlen(page), "load", &v));
  CHECK_NEAR(17.5, v, 1e-9);
  CHECK(!gp_proto_metric_sum(page, strlen(page), "absent", &v));
  const char *nan = "load NaN\n";
  CHECK(!gp_proto_metric_sum(nan, strlen(nan), "load", &v));
  const char *neg = "load -1\n";
  CHECK(!gp_proto_metric_sum(neg, strlen(neg), "load", &v));
  const char *huge = "load 1e300\n";
  CHECK(!gp_proto_metric_sum(huge, strlen(huge), "load", &v));
  const char *open = "load{a=\"b\" 5\n"; /* an unclosed label set is no sample */
  CHECK(!gp_proto_metric_sum(open, strlen(open), "load", &v));
  char cut[] = "load 12"; /* not NUL-ended past len: only len bytes are read */
  CHECK(gp_proto_metric_sum(cut, 6, "load", &v));
  CHECK_NEAR(1, v, 1e-9);
  CHECK(gp_proto_metric_name_valid("vllm:num_requests_waiting"));
  CHECK(!gp_proto_metric_name_valid("9x"));
  CHECK(!gp_proto_metric_name_valid(""));
}

GP_TESTS(round_trip, refused, metrics_page)
