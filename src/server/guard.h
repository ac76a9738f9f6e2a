/* SPDX-License-Identifier: Apache-2.0 */
/* The request deadline of the HTTP front door. libmicrohttpd closes a connection only after
 * it has been silent for the idle timeout, so a client that sends one header line every few
 * seconds could hold a connection for ever. The guard gives each request a deadline: from
 * the connection's opening (or the previous answer on it) to the request's last byte. A
 * connection past it is shut down (shutdown(2): libmicrohttpd then sees the end of the
 * stream and closes it itself, so the descriptor stays libmicrohttpd's to close). Requests
 * being handled (suspended, answering) have no deadline here. */
#ifndef GP_SERVER_GUARD_H
#define GP_SERVER_GUARD_H

#include <microhttpd.h>

typedef struct gp_srv_guard gp_srv_guard;

/* Starts the guard's thread; NULL when it cannot. */
gp_srv_guard *gp__srv_guard_new(int request_timeout_s);

/* The MHD_OPTION_NOTIFY_CONNECTION callback (cls: the guard). */
void gp__srv_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code);

/* The connection's request has arrived whole: its clock stops. */
void gp__srv_guard_request_in(struct MHD_Connection *c);

/* The connection's answer is out: the clock starts again for the next request. */
void gp__srv_guard_answered(struct MHD_Connection *c);

/* Joins the thread and frees; call after MHD_stop_daemon. Accepts NULL. */
void gp__srv_guard_free(gp_srv_guard *g);

#endif
