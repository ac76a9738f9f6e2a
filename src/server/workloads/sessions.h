/* SPDX-License-Identifier: Apache-2.0 */
/* Interactive sessions through the server (docs/interactive.md): GET /v1/jobs/{id}/session
 * upgraded to a WebSocket (tls/ws.h), relayed to the job task's agent over a WebSocket of
 * its own (the agent's token, verified like the log proxy's calls).
 *
 * The state thread decides who may open one (session_api.c: the job's owner and admins)
 * and where; the HTTP thread checks the upgrade's headers and the limits (sessions_per_user,
 * sessions_max: 429 past them) and answers 101; a thread per session then dials the agent
 * and relays messages both ways. Flow control: a message is taken from one side only when
 * the other side's output has room for the largest message, and a side is not read while
 * it has none, so each session holds at most its four bounded buffers (about 1 MiB) however
 * slow a reader is. A session silent both ways for session_idle_timeout_s is closed (1008);
 * a stopping server closes every session with 1001 and a reason the CLI prints; the job
 * runs on (only what the session started on the node ends). Counted in /metrics. */
#ifndef GP_SERVER_SESSIONS_H
#define GP_SERVER_SESSIONS_H

#include <microhttpd.h>
#include <stdbool.h>

#include "server/state/server_int.h"
#include "tls/dial.h"
#include "tls/ws.h"
#include "util/buf.h"

typedef struct gp_srv_sessions gp_srv_sessions;

/* `dial` copied (its paths borrowed for the life of the server). */
gp_srv_sessions *gp__srv_sessions_new(const gp_tls_dial *dial, int per_user, int max, int idle_s);

/* Is `path` a session route (/v1/jobs/{id}/session)? */
bool gp__srv_sessions_path(const char *path);

/* HTTP thread, before the state thread: the upgrade's headers. MHD_YES with nothing queued
 * when they are good; otherwise the 400 is queued (*answered set). */
enum MHD_Result gp__srv_sessions_check(struct MHD_Connection *c, const gp_srv_req *r, bool *answered);

/* HTTP thread, once the state thread allowed it (r->session_spec): the limits, then 101. */
enum MHD_Result gp__srv_sessions_upgrade(gp_srv_sessions *S, struct MHD_Connection *c, gp_srv_req *r);

/* Opens the WebSocket to the agent a session's spec names ("URL\nTOKEN\nNODE", written by
 * session_api.c; the URL's path starts at /sessions/), for a session and for a console
 * link's relay (webproxy.c). Cuts `spec` in place; *node points at its node's name.
 * Returns as gp_tls_ws_dial. */
int gp__srv_sessions_dial_agent(gp_srv_sessions *S, char *spec, const char **node, gp_tls_ws **ret,
                                gp_tls_ws_refusal *refused, gp_err *err);

/* For the console links' relays (webproxy.c): a relay counted while it runs, so that
 * stopping waits for it: 0, -1 when the server is stopping, -2 when sessions_max relays
 * run already. */
int gp__srv_sessions_proxy_enter(gp_srv_sessions *S);
void gp__srv_sessions_proxy_leave(gp_srv_sessions *S);
bool gp__srv_sessions_stopping(gp_srv_sessions *S);

/* The sessions' lines of /metrics. */
void gp__srv_sessions_metrics(gp_srv_sessions *S, gp_buf *out);

/* Closes every session (1001, "the server is stopping") and waits for their threads; later
 * upgrades are refused. Accepts NULL. */
void gp__srv_sessions_stop(gp_srv_sessions *S);
void gp__srv_sessions_free(gp_srv_sessions *S); /* accepts NULL */

/* session_api.c, on the state thread. */
void gp__srv_session_route(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j);

#endif
