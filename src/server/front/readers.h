/* SPDX-License-Identifier: Apache-2.0 */
/* Heavy reads off the HTTP threads: the job history (GET /v1/jobs?all=1), reports and
 * advice read the store for as long as their period takes (a page of the history of a
 * large store: tenths of a second; a year's report: seconds). On an HTTP thread such a
 * read holds every other connection libmicrohttpd gave that thread, agents' heartbeats
 * among them, and enough of them at once delayed heartbeats past node_timeout_s (a node
 * marked lost, its jobs killed). So they run here, on a few threads of their own at a
 * lower CPU priority, while the client's connection stays suspended; the HTTP threads only
 * parse and answer. At most GP_SRV_READERS(http_threads) run at once; one more is answered
 * 503 with Retry-After at once (no queue: a queue would hold connections for nothing). */
#ifndef GP_SERVER_READERS_H
#define GP_SERVER_READERS_H

#include <stdbool.h>

#include "server/state/server_int.h"
#include "store/store.h"

/* Heavy reads at once for a server of `http_threads` HTTP threads: half, at least 1. */
#define GP_SRV_READERS(http_threads) ((http_threads) > 2 ? (http_threads) / 2 : 1)

typedef struct gp_srv_readers gp_srv_readers;

/* Starts n threads reading `store` (borrowed); NULL when it cannot. */
gp_srv_readers *gp__srv_readers_new(int n, gp_store *store);

/* Is r a heavy read (a history list, or a report or advice the state thread prepared)? */
bool gp__srv_readers_wants(const gp_srv_req *r);

/* Takes r, whose connection the caller has suspended: its answer is set and the
 * connection resumed when the read is done. Returns false (nothing taken) when every
 * thread is busy or the pool is stopping: the caller answers 503 (gp__srv_readers_busy). */
bool gp__srv_readers_take(gp_srv_readers *p, gp_srv_req *r);

/* Sets r's answer to the 503 of a full pool (with Retry-After). */
void gp__srv_readers_busy(const gp_srv_readers *p, gp_srv_req *r);

/* Finishes the reads in flight and joins the threads; later takes are refused. Accepts
 * NULL. Call before MHD_stop_daemon (no connection may stay suspended). */
void gp__srv_readers_stop(gp_srv_readers *p);
void gp__srv_readers_free(gp_srv_readers *p); /* stops first; accepts NULL */

#endif
