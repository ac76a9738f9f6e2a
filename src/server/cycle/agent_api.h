/* SPDX-License-Identifier: Apache-2.0 */
/* The agent protocol on the state thread (agent_api.c): registrations, heartbeats and the
 * events agents report, each handed to the part it concerns, and the orders a heartbeat
 * carries back.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_AGENT_API_H
#define GP_SERVER_AGENT_API_H

#include <stdint.h>
#include "server/state/server_int.h"

/* Handles one request of an agent on the state thread; 0, or a store error (the batch is
 * rolled back). */
int gp__srv_agent_handle(gp_srv_state *s, gp_srv_req *r, int64_t now_s, int64_t now_ms, gp_err *err);
/* Builds the answer of a heartbeat: the node's orders with id > gen, as many as fit
 * GP_PROTO_ORDERS_BUDGET (at least one), and the store's id. */
void gp__srv_agent_reply_orders(const gp_srv_state *s, gp_srv_node *n, gp_srv_req *r, int64_t gen);

#endif
