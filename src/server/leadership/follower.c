/* SPDX-License-Identifier: Apache-2.0 */
/* The answers of a server that does not lead (follower.h). A redirect keeps the request's
 * method and body (307, not 302), so a client resends the very same write to the leader.
 * Its Location is the leader's base URL (checked: scheme://host[:port], nothing more)
 * followed by the request's target only when that is a plain origin-form path and query
 * (RFC 3986 characters after one leading '/'): a target such as "@evil.example/x" would
 * otherwise make the leader's URL a user name and send the client to another host. */
#include "server/cycle/parts.h"
#include "server/leadership/follower.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "server/accounting/ledger.h"
#include "server/state/heartbeats.h"
#include "util/mem.h"
#include "util/urls.h"

bool gp__srv_follower_is_write(const gp_srv_req *r) {
  return strcmp(r->method, "GET") != 0 || strncmp(r->path, "/v1/agent/", 10) == 0;
}

/* An origin-form target: '/' first, then only unreserved, sub-delims, ':', '@', '/', '?'
 * and %XX escapes; no fragment, space, backslash or control byte. */
static bool target_is_path(const char *t) {
  if (t[0] != '/') return false;
  for (const char *p = t; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) continue;
    if (c == '%') {
      if (!isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2])) return false;
      p += 2;
      continue;
    }
    if (!strchr("-._~!$&'()*+,;=:@/?", c)) return false;
  }
  return true;
}

void gp__srv_follower_redirect(gp_srv_req *r, gp_srv_leader *l) {
  gp_srv_leader_info info = {0};
  if (l) gp__srv_leader_info_get(l, &info);
  bool known = l && info.leader_url[0] && !info.mine;
  const char *target = r->target ? r->target : r->path;
  gp_urls base;
  gp_err ignored = {0};
  if (known && gp_urls_parse(info.leader_url, "leader", &base, &ignored) == 0 && base.n == 1) {
    if (!target || !target_is_path(target) || strlen(target) > 8192) {
      gp__srv_reply_error(r, 400, "invalid_argument", "path",
                          "the request target must be a path starting with '/' (it is sent on to the leader)");
      return;
    }
    size_t n = strlen(base.url[0]);
    char *loc = gp_xmalloc(n + strlen(target) + 1);
    memcpy(loc, base.url[0], n);
    strcpy(loc + n, target);
    free(r->location);
    r->location = loc;
    gp__srv_reply_error(r, 307, "not_leader", NULL, "this server does not lead; the leader is %s",
                        base.url[0]);
    return;
  }
  r->retry_after_s = 1;
  if (known)
    gp__srv_reply_error(r, 503, "no_leader", NULL,
                        "no leader to send this to: the leader's advertised URL '%.200s' is not a "
                        "scheme://host[:port] URL; retry in a second", info.leader_url);
  else
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
    json_object_set_new(o, "servers", json_pack("[s]", self));
    json_object_set_new(o, "conflict", json_null());
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
  /* Every live server on the store, this one first (`gpool up` gives them to its agent). */
  json_t *servers = json_array();
  json_array_append_new(servers, json_string(gp__srv_leader_self(l)));
  for (int i = 0; i < info.n_servers; i++) json_array_append_new(servers, json_string(info.servers[i]));
  json_object_set_new(o, "servers", servers);
  json_object_set_new(o, "conflict", info.conflict[0] ? json_string(info.conflict) : json_null());
  return o;
}

gp_srv_state *gp__srv_follower_load(const gp_server_config *cfg, gp_store *store, int64_t now_s,
                                    int64_t now_ms, gp_err *err) {
  gp_srv_state *s = gp__srv_state_make(cfg, store);
  gp__srv_ledger_set_off(s, true); /* its repairs write; a follower never does */
  if (gp__srv_state_load(s, now_s, now_ms, err)) {
    gp__srv_state_free(s);
    return NULL;
  }
  gp__srv_heartbeats_apply(s, true); /* heartbeats reach the leader only: the store has its word */
  return s;
}
