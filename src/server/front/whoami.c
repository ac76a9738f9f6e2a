/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/whoami: the user and role the request's token stands for, so a client (the web
 * console's "Mine") need not ask people to type the name their token already carries. It
 * tells a token's holder only what their own token says. */
#include <string.h>

#include "server/front/routes.h"
#include "server/state/server_int.h"

int gp__srv_whoami_route(gp_srv_state *s, gp_srv_req *r) {
  (void)s;
  if (strcmp(r->method, "GET") != 0) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/whoami");
    return 0;
  }
  const char *key;
  json_t *val;
  json_object_foreach(r->query, key, val) {
    gp__srv_reply_error(r, 400, "invalid_argument", key,
                        "unknown parameter \"%.64s\": whoami takes none", key);
    return 0;
  }
  gp__srv_reply_json(r, 200, json_pack("{s:s, s:s}", "user", r->user ? r->user : "",
                                       "role", gp_role_name(r->role)));
  return 0;
}
