/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool server` as a library: an HTTP/JSON API (libmicrohttpd, a thread pool), one state
 * thread that owns the cluster state, commits changes to the store in batches (group
 * commit: many submissions share one fsync, and none is acknowledged before its commit),
 * runs the scheduling core on each batch of events and on a timer, and hands orders to
 * agents' long polls once they are durable. Tests run it in-process on port 0. */
#ifndef GP_SERVER_SERVER_H
#define GP_SERVER_SERVER_H

#include <jansson.h>

#include "server/state/config.h"
#include "server/accounting/ledger_feed.h"
#include "store/store.h"
#include "util/error.h"

typedef struct gp_server gp_server;

/* Creates a server for `cfg` (borrowed; must outlive the server). `store` is taken over
 * when not NULL (tests pass a fault-injecting one); NULL opens <data_dir>/gpool.db.
 * Loads the stored state. Returns 0 or a GP_E* with details in *err. */
int gp_server_new(const gp_server_config *cfg, gp_store *store, gp_server **ret, gp_err *err);

/* Binds the listen address (port 0: any free port) and starts the threads. */
int gp_server_start(gp_server *srv, gp_err *err);

/* The port it listens on, after gp_server_start. */
int gp_server_port(const gp_server *srv);
/* The port of the agents' own listener (agent_listen), after gp_server_start; 0: none. */
int gp_server_agent_port(const gp_server *srv);

/* The store it uses (borrowed; for tests that inject faults). */
gp_store *gp_server_store(gp_server *srv);

/* Stops accepting, answers what is waiting with 503, joins the threads. */
void gp_server_stop(gp_server *srv);
void gp_server_free(gp_server *srv); /* stops first; accepts NULL */

#endif
