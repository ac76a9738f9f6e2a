/* SPDX-License-Identifier: Apache-2.0 */
/* The log proxy: GET /v1/jobs/{id}/log is read from the job's agent by one thread of its
 * own (libcurl multi), while the client's connection stays suspended, so a slow or stopped
 * agent never holds an HTTP thread. At most GP_SRV_PROXY_MAX reads are in flight; each
 * has GP_SRV_PROXY_TIMEOUT_MS to finish. */
#ifndef GP_SERVER_LOGPROXY_H
#define GP_SERVER_LOGPROXY_H

#include <stdbool.h>

#include "server/state/server_int.h"
#include "tls/dial.h"

#define GP_SRV_PROXY_MAX 64
#define GP_SRV_PROXY_TIMEOUT_MS 5000L
#define GP_SRV_PROXY_CONNECT_MS 2000L

typedef struct gp_srv_proxy gp_srv_proxy;

/* Starts the proxy's thread; NULL when it cannot. `dial` (copied; its paths borrowed for
 * the proxy's life) says how agents are verified (tls.agent_ca). */
gp_srv_proxy *gp__srv_proxy_new(const gp_tls_dial *dial);

/* Takes `r` (its connection suspended, r->proxy_url "URL\nTOKEN"): when the agent has
 * answered or failed, r->status and r->resp hold the answer, r->proxy_url is cleared and
 * the connection is resumed. Returns false (nothing taken) when GP_SRV_PROXY_MAX reads are
 * in flight or the proxy is stopping. */
bool gp__srv_proxy_take(gp_srv_proxy *p, gp_srv_req *r);

/* Answers every read in flight with 503 and joins the thread; later takes are refused.
 * Accepts NULL. */
void gp__srv_proxy_stop(gp_srv_proxy *p);

/* Stops (if not yet) and frees; call once no HTTP thread can call gp__srv_proxy_take.
 * Accepts NULL. */
void gp__srv_proxy_free(gp_srv_proxy *p);

#endif
