/* SPDX-License-Identifier: Apache-2.0 */
/* The connections of a libmicrohttpd endpoint (the server's API, the agent's endpoint):
 * how many one address and all addresses may hold, and each request's deadline.
 *
 * Limits. libmicrohttpd's own per-address limit refuses a new connection while the address
 * holds its share, however idle those connections are: a job could open them and lock its
 * own agent out, or the server's log reads out of the agent. Here a new connection past a
 * limit first closes the oldest idle connection of that address (past the whole
 * endpoint's limit: of any address), so a flood only churns its own connections. Idle is
 * "no request being handled": between requests, or a request still arriving.
 * Connections that carried an authenticated request of the endpoint's trusted peer (an
 * agent at the server, the server at an agent: gp_tls_conns_trust) have their own
 * allowance: they do not count against their address's limit, and they are closed for
 * room only when no other idle connection is left. When nothing of the address is idle
 * (every connection is busy with a request), the new connection is admitted on probation:
 * it may carry only a trusted request; anything else is answered 503 and closed
 * (gp_tls_conns_on_probation). At most GP_TLS_CONNS_PROBATION such connections per
 * address; past that the oldest of them is closed.
 *
 * Deadline. libmicrohttpd closes a connection only after it has been silent for the idle
 * timeout, so a client that sends one header line every few seconds could hold one for
 * ever. With a request timeout, each request has a deadline: from the connection's
 * opening (or the previous answer on it) to the request's last byte. Requests being
 * handled (suspended, answering) have no deadline here.
 *
 * Closing is shutdown(2): libmicrohttpd then sees the end of the stream and closes the
 * connection itself, so the descriptor stays libmicrohttpd's to close. */
#ifndef GP_TLS_CONNS_H
#define GP_TLS_CONNS_H

#include <microhttpd.h>
#include <stdbool.h>

#define GP_TLS_CONNS_PROBATION 8

typedef struct gp_tls_conns gp_tls_conns;

typedef struct gp_tls_conns_limits {
  int max;               /* connections in all; the daemon's own limit must be higher
                          * (gp_tls_conns_hard_limit) so that a new one can make room */
  int per_address;       /* connections from one address, trusted ones aside */
  int request_timeout_s; /* 0: no deadline (and no thread) */
} gp_tls_conns_limits;

/* Starts the deadline thread (when there is a deadline); NULL when it cannot. */
gp_tls_conns *gp_tls_conns_new(const gp_tls_conns_limits *limits);

/* What to give libmicrohttpd as MHD_OPTION_CONNECTION_LIMIT for `max`. */
unsigned gp_tls_conns_hard_limit(int max);

/* The MHD_OPTION_NOTIFY_CONNECTION callback (cls: the table). */
void gp_tls_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                         enum MHD_ConnectionNotificationCode code);

/* The connection's request has arrived whole: it is busy (not idle, no deadline). */
void gp_tls_conns_request_in(struct MHD_Connection *c);

/* The connection's answer is out: idle again, and the next request's clock starts. */
void gp_tls_conns_answered(struct MHD_Connection *c);

/* The connection carried an authenticated request of the trusted peer. */
void gp_tls_conns_trust(struct MHD_Connection *c);

/* Whether the connection was admitted past its address's limit and may carry only a
 * trusted request (answer anything else 503 with gp_tls_conns_refuse). */
bool gp_tls_conns_on_probation(struct MHD_Connection *c);

/* Queues the 503 (JSON error, Retry-After: 1, Connection: close) for a connection on
 * probation whose request is not trusted. */
enum MHD_Result gp_tls_conns_refuse(struct MHD_Connection *c);

/* Joins the thread and frees; call after MHD_stop_daemon. Accepts NULL. */
void gp_tls_conns_free(gp_tls_conns *t);

#endif
