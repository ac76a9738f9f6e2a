/* SPDX-License-Identifier: Apache-2.0 */
/* The server's parts put together (parts.c): a state with every feature's hooks
 * registered. Whoever makes a state for serving (server.c, the reload in server_loop.c,
 * a follower's copy in follower.c) makes it here.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_PARTS_H
#define GP_SERVER_PARTS_H

#include "server/state/state.h"

/* gp__srv_state_new, then each feature's handlers registered on its hooks. */
gp_srv_state *gp__srv_state_make(const gp_server_config *cfg, gp_store *store);

#endif
