/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes' credentials (node_credential.c): the first agent to register a name claims it,
 * and only that agent's credential may act as the node afterwards.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_NODE_CREDENTIAL_H
#define GP_SERVER_NODE_CREDENTIAL_H

#include <stdbool.h>
#include "server/state/server_int.h"

/* node_credential.c: may the agent request r act as node `name` (n: that node, NULL when
 * the pool has none)? Answers r with 403 or 409 when not. `registering`: a name without a
 * credential may be claimed (gp__srv_node_claim records it once the node exists). */
bool gp__srv_node_auth(gp_srv_state *s, gp_srv_req *r, const char *name, const gp_srv_node *n,
                       bool registering);
int gp__srv_node_claim(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, gp_err *err);
/* Drops the node's credential: the next agent to register the name claims it. */
int gp__srv_node_forget(gp_srv_state *s, gp_srv_node *n, gp_err *err);

#endif
