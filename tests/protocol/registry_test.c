/* SPDX-License-Identifier: Apache-2.0 */
/* Registries and their credentials in the start order (src/protocol/registry.c): which
 * registry an image comes from (the server and the agent must agree), the bounds of a
 * registry name, and a start order's `registry_auth` decoded only when it is bounded base64. */
#include "test.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "protocol/order.h"
#include "protocol/registry.h"

static void image_registry(void) {
  static const char *const cases[][2] = {
      {"127.0.0.1:5000/e2e/a:1", "127.0.0.1:5000"}, {"nvcr.io/nvidia/pytorch:24.01", "nvcr.io"},
      {"localhost/x:1", "localhost"},               {"library/ubuntu:22.04", "docker.io"},
      {"ubuntu", "docker.io"},                      {"reg:5000/a", "reg:5000"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char buf[GP_PROTO_REGISTRY_MAX + 1];
    REQUIRE(gp_proto_image_registry(cases[i][0], buf, sizeof buf));
    CHECK_EQ_STR(cases[i][1], buf);
  }
  char tiny[4];
  CHECK(!gp_proto_image_registry("nvcr.io/x", tiny, sizeof tiny)); /* never cut short */
}

static void registry_check(void) {
  CHECK(gp_proto_registry_check("127.0.0.1:5000") == NULL);
  CHECK(gp_proto_registry_check("nvcr.io") == NULL);
  static const char *const bad[] = {"", ":5000", "-x", "a b", "a/b", "a:0", "a:65536", "a:",
                                    "a:12x", "a\"b", "a:123456"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(gp_proto_registry_check(bad[i]) != NULL);
  char big[300];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK(gp_proto_registry_check(big) != NULL);
}

static void start_auth(void) {
  json_t *job = json_pack("{s:s, s:s, s:[s], s:{}, s:{s:s}, s:s}", "id", "7", "user", "alice",
                          "command", "true", "env", "container", "image", "reg:5000/a:1",
                          "registry_auth", "Y2Fyb2w6cHc=");
  gp_proto_start s;
  gp_err err = {0};
  REQUIRE(gp_proto_start_decode(job, &s, &err) == 0);
  CHECK_EQ_STR("Y2Fyb2w6cHc=", s.registry_auth);
  CHECK(!s.registry_auth_pool); /* no scope: the owner's own, the safe reading */
  gp_proto_start_done(&s);
  /* Its scope: the pool's or the owner's, nothing else. */
  json_object_set_new(job, "registry_auth_scope", json_string("pool"));
  REQUIRE(gp_proto_start_decode(job, &s, &err) == 0);
  CHECK(s.registry_auth_pool);
  gp_proto_start_done(&s);
  json_object_set_new(job, "registry_auth_scope", json_string("everyone"));
  CHECK(gp_proto_start_decode(job, &s, &err) != 0);
  CHECK(strstr(err.field, "registry_auth_scope") != NULL);
  json_object_set_new(job, "registry_auth_scope", json_string("user"));
  REQUIRE(gp_proto_start_decode(job, &s, &err) == 0);
  CHECK(!s.registry_auth_pool);
  gp_proto_start_done(&s);
  static const char *const bad[] = {"not base64!", "abc", "\"},\"x", "=abc"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_object_set_new(job, "registry_auth", json_string(bad[i]));
    CHECK(gp_proto_start_decode(job, &s, &err) != 0);
    CHECK(strstr(err.field, "registry_auth") != NULL);
  }
  char *huge = malloc(GP_PROTO_REGISTRY_AUTH_MAX + 5);
  memset(huge, 'A', GP_PROTO_REGISTRY_AUTH_MAX + 4);
  huge[GP_PROTO_REGISTRY_AUTH_MAX + 4] = '\0';
  json_object_set_new(job, "registry_auth", json_string(huge));
  CHECK(gp_proto_start_decode(job, &s, &err) != 0);
  free(huge);
  json_decref(job);
}

/* pull_image: an admin's pre-pull; its image is checked as a job's, its credential bounded. */
static void pull_order(void) {
  gp_proto_order o = {.kind = GP_PROTO_PULL_IMAGE};
  snprintf(o.u.pull.image, sizeof o.u.pull.image, "reg:5000/a:1");
  json_t *doc = gp_proto_order_encode(&o);
  json_object_set_new(doc, "id", json_string("o3"));
  gp_proto_order back;
  gp_err err = {0};
  REQUIRE(gp_proto_order_decode(doc, &back, &err) == 0);
  CHECK_EQ_INT(GP_PROTO_PULL_IMAGE, back.kind);
  CHECK_EQ_STR("reg:5000/a:1", back.u.pull.image);
  CHECK_EQ_STR("", back.u.pull.auth);
  gp_proto_order_done(&back);
  json_object_set_new(doc, "registry_auth", json_string("Y2Fyb2w6cHc="));
  REQUIRE(gp_proto_order_decode(doc, &back, &err) == 0);
  CHECK_EQ_STR("Y2Fyb2w6cHc=", back.u.pull.auth);
  gp_proto_order_done(&back);
  json_object_set_new(doc, "registry_auth", json_string("no!"));
  CHECK(gp_proto_order_decode(doc, &back, &err) != 0);
  json_object_del(doc, "registry_auth");
  json_object_set_new(doc, "image", json_string("-v/:/host"));
  CHECK(gp_proto_order_decode(doc, &back, &err) != 0);
  CHECK_EQ_STR("image", err.field);
  json_decref(doc);
}

GP_TESTS(image_registry, registry_check, start_auth, pull_order)
