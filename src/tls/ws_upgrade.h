/* SPDX-License-Identifier: Apache-2.0 */
/* The accepting side of a WebSocket handshake (RFC 6455 §4.2) on libmicrohttpd, written
 * once for the server's session endpoint and the agent's: the check of an upgrade
 * request's headers, the 101 answer, and the hand-over of the socket to a thread of its own
 * that speaks WebSocket on it (tls/ws.h).
 *
 * libmicrohttpd hands an upgraded socket over on its own thread and takes it back with
 * MHD_upgrade_action(CLOSE); what comes between is the caller's: `run` on a detached thread
 * with the endpoint, then `done`, always, once the socket went back (or alone when the
 * upgrade never happened), so a caller's count of open sessions drops only after
 * libmicrohttpd no longer holds the connection. */
#ifndef GP_TLS_WS_UPGRADE_H
#define GP_TLS_WS_UPGRADE_H

#include <microhttpd.h>
#include <stddef.h>

#include "tls/ws.h"

/* Checks the upgrade headers of the request on `c`: Upgrade: websocket, a Connection that
 * names upgrade, Sec-WebSocket-Version 13, a Sec-WebSocket-Key of 16 bytes. NULL when they
 * are good, with `accept` filled (the Sec-WebSocket-Accept to answer with); otherwise the
 * name of the header at fault, and *why a sentence for the caller's 400. */
const char *gp_tls_ws_upgrade_check(struct MHD_Connection *c, char accept[GP_TLS_WS_ACCEPT_LEN + 1],
                                    const char **why);

/* Queues "101 Switching Protocols" on `c` with `accept`. Once libmicrohttpd hands the
 * socket over, a detached thread wraps it in a server-side endpoint (out_cap bytes of
 * output; the bytes that came with the handshake parsed first), calls run(arg, w), frees
 * the endpoint, gives the socket back (closed) and calls done(arg). When the answer cannot
 * be queued or no thread starts, only done(arg) is called. Returns what MHD_queue_response
 * returned. */
enum MHD_Result gp_tls_ws_upgrade(struct MHD_Connection *c, const char *accept, size_t out_cap,
                                  void (*run)(void *arg, gp_tls_ws *w), void (*done)(void *arg), void *arg);

#endif
