/* SPDX-License-Identifier: Apache-2.0 */
/* The answers of a server that does not lead (follower.h). A redirect keeps the request's
 * method and body (307, not 302), so a client resends the very same write to the leader;
 * its Location is built from the raw request target, exactly as the client sent it. */
#include "server/follower.h"

#include <stdio.h>
#include <string.h>

#include "server/heartbeats.h"
#include "util/mem.h"

bool gp__srv_follower_is_write(const gp_srv_req *r) {
  return strcmp(r->method, "GET") != 0 || strncmp(r->path, "/v1/agent/", 10) == 0;
}

void gp__srv_follower_redirect(gp_srv_req *r, gp_srv_leader *l) {
  gp_srv_leader_info info = {0};
  if (l) gp__srv_leader_info_get(l, &info);
  bool known = l && info.leader_url[0] && strcmp(info.holder, gp__srv_leader_id(l)) != 0;
  const char *target = r->target ? r->target : r->path;
  if (known && strlen(info.leader_url) + strlen(target) < 8192) {
    size_t n = strlen(info.leader_url);
    while (n > 0 && info.leader_url[n - 1] == '/') n--; /* the target starts with one */
    char *loc = gp_xmalloc(n + strlen(target) + 1);
    memcpy(loc, info.leader_url, n);
    strcpy(loc + n, target);
    free(r->location);
    r->location = loc;
    gp__srv_reply_error(r, 307, "not_leader", NULL, "this server does not lead; the leader is %s",
                        info.leader_url);
    return;
  }
  r->retry_after_s = 1;
  gp__srv_reply_error(r, 503, "no_leader", NULL,
                      "no leader: no server holds the lease now; retry in a second");
}

json_t *gp__srv_follower_leader_doc(gp_srv_leader *l, const char *self, gp_srv_role role) {
  json_t *o = json_object();
  const char *role_name = role == GP_SRV_LEADER ? "leader" : "follower";
  if (!l) {
    json_object_set_new(o, "leader", json_string(self));
    json_object_set_new(o, "epoch", json_integer(0));
    json_object_set_new(o, "holder", json_string(""));
    json_object_set_new(o, "self", json_string(self));
    json_object_set_new(o, "role", json_string(role_name));
    json_object_set_new(o, "expires_in_ms", json_integer(0));
    return o;
  }
  gp_srv_leader_info info;
  gp__srv_leader_info_get(l, &info);
  json_object_set_new(o, "leader", info.leader_url[0] ? json_string(info.leader_url) : json_null());
  json_object_set_new(o, "epoch", json_integer(info.epoch));
  json_object_set_new(o, "holder", json_string(info.holder));
  json_object_set_new(o, "self", json_string(gp__srv_leader_self(l)));
  json_object_set_new(o, "role", json_string(role_name));
  json_object_set_new(o, "expires_in_ms", json_integer(info.expires_in_ms));
  json_object_set_new(o, "database", json_boolean(info.ok));
  return o;
}

gp_srv_state *gp__srv_follower_load(const gp_server_config *cfg, gp_store *store, int64_t now_s,
                                    int64_t now_ms, gp_err *err) {
  gp_srv_state *s = gp__srv_state_new(cfg, store);
  s->ledger_off = true; /* its repairs write; a follower never does */
  if (gp__srv_state_load(s, now_s, now_ms, err)) {
    gp__srv_state_free(s);
    return NULL;
  }
  gp__srv_heartbeats_apply(s, true); /* heartbeats reach the leader only: the store has its word */
  return s;
}
