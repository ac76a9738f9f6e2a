/* SPDX-License-Identifier: Apache-2.0 */
/* What a server that does not lead answers (docs/api.md, "High availability"): reads from
 * a state reloaded from the store about every second (read-only: no scheduling, no
 * orders, no agent traffic), writes sent to the leader (307 with Location) or refused
 * while there is none (503, Retry-After: 1), and the health routes every server answers:
 * GET /livez, GET /readyz, GET /v1/leader. */
#ifndef GP_SERVER_FOLLOWER_H
#define GP_SERVER_FOLLOWER_H

#include <stdbool.h>

#include "server/leadership/leader.h"
#include "server/state/server_int.h"

/* How often a follower reloads its state from the store. */
#define GP_SRV_FOLLOW_REFRESH_MS 1000

/* The server's role as the health routes tell it. */
typedef enum gp_srv_role {
  GP_SRV_LOADING = 0,   /* no state yet */
  GP_SRV_FOLLOWER,      /* a state loaded from the store, reads only */
  GP_SRV_LEADER,        /* holds the lease (or runs alone) and acts */
} gp_srv_role;

/* Does r write (anything but GET, and every /v1/agent/ call)? Only the leader takes it. */
bool gp__srv_follower_is_write(const gp_srv_req *r);

/* Answers r, a write that reached a server that does not lead: 307 to the leader's URL
 * with r's path and query, or 503 "no leader" when none is known (or it is this server,
 * still taking over). `l` may be NULL (a server alone: 503). */
void gp__srv_follower_redirect(gp_srv_req *r, gp_srv_leader *l);

/* GET /v1/leader's document. `l` NULL: a server alone, which leads. */
json_t *gp__srv_follower_leader_doc(gp_srv_leader *l, const char *self, gp_srv_role role);

/* A follower's fresh state from the store: everything a leader would load, nothing
 * written (the ledger's repairs are the leader's). NULL with *err on failure. */
gp_srv_state *gp__srv_follower_load(const gp_server_config *cfg, gp_store *store, int64_t now_s,
                                    int64_t now_ms, gp_err *err);

#endif
