/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/whoami on a real server: each token is told its own user and role (the web
 * console's "Mine" needs nothing typed), an agent's token is refused as on every /v1 route
 * but its own, a write or a parameter is refused, and no token gets 401. */
#include "test.h"
#include "srv_util.h"

static const char *s_of(const json_t *o, const char *k) {
  const char *v = json_string_value(json_object_get(o, k));
  return v ? v : "(null)";
}

static void each_token_is_told_whose_it_is(void) {
  tsrv t = {0};
  tsrv_start(&t);
  static const struct { const char *token, *user, *role; } cases[] = {
      {ADMIN, "root", "admin"}, {ALICE, "alice", "user"}, {BOB, "bob", "user"},
      {VIEWER, "wall", "viewer"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/whoami", cases[i].token, NULL));
    CHECK_EQ_STR(cases[i].user, s_of(t.last, "user"));
    CHECK_EQ_STR(cases[i].role, s_of(t.last, "role"));
    CHECK_EQ_INT(2, json_object_size(t.last)); /* nothing but the token's own user and role */
  }
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", "/v1/whoami", AGENT, NULL));
  CHECK_EQ_INT(401, tsrv_req(&t, "GET", "/v1/whoami", NULL, NULL));
  CHECK_EQ_INT(401, tsrv_req(&t, "GET", "/v1/whoami", "not-a-token-at-all", NULL));
  CHECK_EQ_INT(405, tsrv_req(&t, "POST", "/v1/whoami", ALICE, "{}"));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/whoami?user=bob", ALICE, NULL));
  CHECK_EQ_STR("user", err_field(t.last));
  tsrv_stop(&t);
}

GP_TESTS(each_token_is_told_whose_it_is)
