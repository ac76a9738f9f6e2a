/* SPDX-License-Identifier: Apache-2.0 */
/* The console's links to a job's HTTP port, as the state thread keeps them
 * (webproxy_links.c): made by POST /v1/jobs/{id}/proxy, looked up for each request under
 * /proxy/, revoked when the job's task stops running. What a link is and how its requests
 * are relayed: webproxy.h. */
#ifndef GP_SERVER_WEBPROXY_LINKS_H
#define GP_SERVER_WEBPROXY_LINKS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/state/server_int.h"

#define GP_SRV_LINK_PER_USER 32
#define GP_SRV_LINK_MAX 1024
#define GP_SRV_LINK_CSP "sandbox allow-scripts allow-forms allow-popups allow-downloads"

struct gp_srv_state;
struct gp_srv_job;

/* Is `path` under /proxy/ (a link, answered without a token)? */
bool gp__srv_webproxy_path(const char *path);

/* POST /v1/jobs/{id}/proxy. */
void gp__srv_links_create_route(struct gp_srv_state *s, gp_srv_req *r, struct gp_srv_job *j, int64_t now_s);
/* Any method on /proxy/...: 404 unless the link is live; otherwise r->session_spec and
 * r->link_port are set (status 200) for the HTTP thread to relay. */
void gp__srv_links_route(struct gp_srv_state *s, gp_srv_req *r, int64_t now_s);
void gp__srv_links_free(struct gp_srv_state *s);

#endif
