/* SPDX-License-Identifier: Apache-2.0 */
/* The console's links to a job's HTTP port (docs/interactive.md, "A link in the console").
 *
 * POST /v1/jobs/{id}/proxy {"port": N, "task": T} (the job's owner or an admin) makes a
 * capability: 256 random bits, bound to (job, task, port, user), good for
 * link_ttl_s (8 h) and revoked when the job's task stops running. The link
 * /proxy/<capability>/<port>/... needs no token: whoever holds it reaches that port, the
 * way the owner handed it on. Links live in the leader's memory only (a restart or a
 * failover revokes them all; the console makes a new one).
 *
 * A request under a link is relayed by its own thread over the session transport (the
 * agent's port-forward: a process of the job must hold the listening socket) as one
 * HTTP/1.0 exchange: the client's Authorization, Cookie and hop-by-hop headers never reach
 * the app; the app's Set-Cookie, hop-by-hop and origin-wide headers (HSTS,
 * Clear-Site-Data) never reach the client. Every answer carries
 * `Content-Security-Policy: sandbox allow-scripts allow-forms allow-popups allow-downloads`
 * (no allow-same-origin: the page runs in an opaque origin and cannot read the console's
 * stored token nor call the API as the console) and `Referrer-Policy: no-referrer`. The
 * request body is bounded like every body (1 MiB), the response head to 64 KiB, and the
 * response body streams through a 256 KiB buffer (the app is not read while the client
 * is slow). */
#ifndef GP_SERVER_WEBPROXY_H
#define GP_SERVER_WEBPROXY_H

#include <microhttpd.h>

#include "server/state/server_int.h"
#include "server/workloads/webproxy_links.h"

struct gp_srv_sessions;

/* Called when the state thread allowed a link's request (r->link_port > 0): starts its
 * relay (the connection suspended), and once the app's head is in, answers with it. */
enum MHD_Result gp__srv_webproxy_serve(struct gp_srv_sessions *S, struct MHD_Connection *c, gp_srv_req *r);
/* Drops the request's hold on its relay (req_free). */
void gp__srv_webproxy_req_done(gp_srv_req *r);

#endif
