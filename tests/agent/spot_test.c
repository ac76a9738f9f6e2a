/* SPDX-License-Identifier: Apache-2.0 */
/* The spot watcher's reading of each cloud's metadata answers (spot.c): a notice only from a
 * well-formed positive answer, nothing from a negative one, and an error, never a notice,
 * from a 5xx, garbage, an oversized body or a deadline nobody sent. Also the `spot:` keys
 * of agent.yaml. */
#include <sys/stat.h>

#include "agent/agent_int.h"
#include "test.h"

#define NOW 1796119200 /* 2026-12-01T10:00:00Z */

static int parse(gp_agent_spot_provider p, long status, const char *body,
                 gp__agent_spot_notice *n) {
  char why[300];
  int rc = gp__agent_spot_parse(p, status, body, strlen(body), NOW, n, why, sizeof why);
  if (rc == GP__AGENT_SPOT_ERROR) CHECK(why[0] != '\0'); /* an error always says why */
  return rc;
}

static void aws_notice_and_no_notice(void) {
  gp__agent_spot_notice n;
  CHECK_EQ_INT(GP__AGENT_SPOT_NOTICE,
               parse(GP_SPOT_AWS, 200, "{\"action\":\"terminate\",\"time\":\"2026-12-01T10:02:00Z\"}", &n));
  CHECK_EQ_INT(NOW + 120, (int)n.deadline);
  CHECK_CONTAINS(n.detail, "terminate");
  CHECK_EQ_INT(GP__AGENT_SPOT_NOTICE,
               parse(GP_SPOT_AWS, 200, "{\"action\":\"stop\",\"time\":\"2026-12-01T10:01:00.000Z\"}", &n));
  CHECK_EQ_INT(NOW + 60, (int)n.deadline);
  CHECK_EQ_INT(GP__AGENT_SPOT_NONE, parse(GP_SPOT_AWS, 404, "<html>Not Found</html>", &n));
}

static void aws_garbage_is_no_notice(void) {
  gp__agent_spot_notice n;
  const char *bad[] = {
      "",
      "terminate",
      "[]",
      "{\"action\":\"terminate\"}",                                      /* no time */
      "{\"time\":\"2026-12-01T10:02:00Z\"}",                             /* no action */
      "{\"action\":\"reboot\",\"time\":\"2026-12-01T10:02:00Z\"}",       /* not a reclaim */
      "{\"action\":\"terminate\",\"time\":\"tomorrow\"}",
      "{\"action\":\"terminate\",\"time\":\"2026-12-01 10:02:00\"}",     /* no zone */
      "{\"action\":\"terminate\",\"time\":\"2031-12-01T10:02:00Z\"}",    /* years ahead */
      "{\"action\":\"terminate\",\"time\":\"2020-12-01T10:02:00Z\"}",    /* years past */
      "{\"action\":7,\"time\":\"2026-12-01T10:02:00Z\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (parse(GP_SPOT_AWS, 200, bad[i], &n) != GP__AGENT_SPOT_ERROR)
      fprintf(stderr, "  taken as a notice or none: %s\n", bad[i]);
    CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_AWS, 200, bad[i], &n));
  }
  const char *ok = "{\"action\":\"terminate\",\"time\":\"2026-12-01T10:02:00Z\"}";
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_AWS, 500, ok, &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_AWS, 503, "", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_AWS, 302, ok, &n));
}

static void gcp_true_false_and_garbage(void) {
  gp__agent_spot_notice n;
  CHECK_EQ_INT(GP__AGENT_SPOT_NOTICE, parse(GP_SPOT_GCP, 200, "TRUE", &n));
  CHECK_EQ_INT(NOW + 30, (int)n.deadline);
  CHECK_EQ_INT(GP__AGENT_SPOT_NOTICE, parse(GP_SPOT_GCP, 200, "TRUE\n", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_NONE, parse(GP_SPOT_GCP, 200, "FALSE", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_GCP, 200, "true", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_GCP, 200, "TRUEISH", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_GCP, 200, "", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_GCP, 500, "TRUE", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_GCP, 404, "TRUE", &n));
}

static void azure_preempt_other_events_and_garbage(void) {
  gp__agent_spot_notice n;
  CHECK_EQ_INT(GP__AGENT_SPOT_NONE, parse(GP_SPOT_AZURE, 200, "{\"DocumentIncarnation\":1,\"Events\":[]}", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_NONE,
               parse(GP_SPOT_AZURE, 200,
                     "{\"Events\":[{\"EventId\":\"a\",\"EventType\":\"Reboot\",\"NotBefore\":\"\"}]}", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_NOTICE,
               parse(GP_SPOT_AZURE, 200,
                     "{\"Events\":[{\"EventType\":\"Freeze\"},{\"EventType\":\"Preempt\","
                     "\"NotBefore\":\"Tue, 01 Dec 2026 10:00:30 GMT\"}]}", &n));
  CHECK_EQ_INT(NOW + 30, (int)n.deadline);
  CHECK_EQ_INT(GP__AGENT_SPOT_NOTICE,
               parse(GP_SPOT_AZURE, 200, "{\"Events\":[{\"EventType\":\"Preempt\",\"NotBefore\":\"\"}]}", &n));
  CHECK_EQ_INT(NOW + 30, (int)n.deadline);
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_AZURE, 200, "{\"Events\":{}}", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_AZURE, 200, "{}", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_AZURE, 200, "{\"Events\":[42]}", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR,
               parse(GP_SPOT_AZURE, 200, "{\"Events\":[{\"EventType\":\"Preempt\",\"NotBefore\":\"soon\"}]}", &n));
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, parse(GP_SPOT_AZURE, 500, "{\"Events\":[]}", &n));
}

static void oversized_body_is_no_notice(void) {
  size_t len = 70000;
  char *body = malloc(len + 1);
  REQUIRE(body);
  memset(body, ' ', len);
  memcpy(body, "TRUE", 4);
  body[len] = '\0';
  gp__agent_spot_notice n;
  char why[300];
  CHECK_EQ_INT(GP__AGENT_SPOT_ERROR, gp__agent_spot_parse(GP_SPOT_GCP, 200, body, len, NOW, &n, why, sizeof why));
  free(body);
}

static const char *write_tmp(const char *text) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/gpool-spot-cfg-XXXXXX");
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  return path;
}

static int load(const char *text, gp_agent_config *c, gp_err *err) {
  gp_agent_config_init(c);
  const char *path = write_tmp(text);
  int rc = gp_agent_config_load(path, c, err);
  unlink(path);
  return rc;
}

static void config_spot_keys(void) {
  gp_agent_config c;
  gp_err err = {0};
  REQUIRE(load("name: n1\n", &c, &err) == 0);
  CHECK_EQ_INT(GP_SPOT_NONE, c.spot.provider);
  REQUIRE(load("spot: {provider: gcp, url: \"http://127.0.0.1:8080\", interval: 1s}\n", &c, &err) == 0);
  CHECK_EQ_INT(GP_SPOT_GCP, c.spot.provider);
  CHECK_EQ_STR("http://127.0.0.1:8080", c.spot.url);
  CHECK_EQ_INT(1, c.spot.interval_s);
  REQUIRE(load("spot: {provider: azure, url: \"http://127.0.0.1:8080/\"}\n", &c, &err) == 0);
  CHECK_EQ_STR("http://127.0.0.1:8080", c.spot.url);
  REQUIRE(load("spot: {provider: aws}\n", &c, &err) == 0);
  CHECK_EQ_INT(2, c.spot.interval_s);
  CHECK_EQ_STR("", c.spot.url);
  CHECK(load("spot: {provider: oracle}\n", &c, &err) != 0);
  CHECK_EQ_STR("spot.provider", err.field);
  CHECK(load("spot: {url: \"http://x\"}\n", &c, &err) != 0);
  CHECK_EQ_STR("spot.provider", err.field);
  CHECK(load("spot: {provider: aws, url: \"ftp://x\"}\n", &c, &err) != 0);
  CHECK_EQ_STR("spot.url", err.field);
  CHECK(load("spot: {provider: aws, interval: 5m}\n", &c, &err) != 0);
  CHECK_EQ_STR("spot.interval", err.field);
  CHECK(load("spot: {provider: aws, every: 5s}\n", &c, &err) != 0);
  CHECK(load("spot: aws\n", &c, &err) != 0);
}

GP_TESTS(aws_notice_and_no_notice, aws_garbage_is_no_notice, gcp_true_false_and_garbage,
         azure_preempt_other_events_and_garbage, oversized_body_is_no_notice, config_spot_keys)
