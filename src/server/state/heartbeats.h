/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes' heartbeats as the followers of a pool of several servers see them (heartbeats.c,
 * docs/ha.md): the leader keeps them in one store setting, followers apply it. */
#ifndef GP_SERVER_HEARTBEATS_H
#define GP_SERVER_HEARTBEATS_H

#include "server/state/state.h"

/* The store setting where a leader keeps nodes' last heartbeats and liveness for followers. */
#define GP_SRV_SETTING_HEARTBEATS "node_heartbeats"

/* How often a leader of several servers writes them (when they changed). */
#define GP_SRV_HEARTBEATS_WRITE_MS 2000
/* The leader (with `ha:`) writes every node's last heartbeat and liveness, at most every
 * GP_SRV_HEARTBEATS_WRITE_MS; a lone server writes nothing. */
int gp__srv_heartbeats_write(gp_srv_state *s, int64_t now_ms, gp_err *err);
/* The setting as loaded (kept on s until applied or freed with it). */
void gp__srv_heartbeats_loaded(gp_srv_state *s, const char *doc);
/* Nodes' last heartbeats as the leader last wrote them (a new leader shows them until its
 * agents' first heartbeats); with `liveness`, a follower's, whether each node is up too. */
void gp__srv_heartbeats_apply(gp_srv_state *s, bool liveness);
/* Frees what the part keeps on s (the loaded document, the last write's figures). */
void gp__srv_heartbeats_free(gp_srv_state *s);

#endif
