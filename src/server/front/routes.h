/* SPDX-License-Identifier: Apache-2.0 */
/* The front's routes: the state thread's request handler (api.c) and the routes it hands
 * requests to, the readers the HTTP threads run themselves (history.c), and the check of
 * a raw request target (intake.c).
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_ROUTES_H
#define GP_SERVER_ROUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "server/state/server_int.h"
#include "store/store.h"

/* Handles one request on the state thread. Returns 0 when an answer (or a park) was
 * decided, or a store error: the batch must then be rolled back. */
int gp__srv_api_handle(gp_srv_state *s, gp_srv_req *r, int64_t now_s, int64_t now_ms, gp_err *err);
/* A job's API document `o` (stolen, returned) as caller r may see it: a job's command
 * and environment (API keys, tokens on the command line) are its owner's and the
 * admins'; others see their shape, not their words. */
json_t *gp__srv_job_for(json_t *o, const gp_srv_req *r, const gp_srv_job *j);
/* history.c, on HTTP threads: answers r->history_job from the store. */
void gp__srv_history_job(gp_store *store, gp_srv_req *r);
/* Is r GET /v1/jobs?all=1 (the ended jobs in the store)? Then gp__srv_history_list
 * answers it, without the state thread. */
bool gp__srv_history_is_list(const gp_srv_req *r);
void gp__srv_history_list(gp_store *store, gp_srv_req *r);
/* Checks the raw request target (path and query, still %-encoded): no encoded NUL, at
 * most GP_SRV_MAX_QUERY_PARAMS parameters, names and values within their limits. Returns
 * true, or false with *bad filled (400 and the field at fault). */
bool gp__srv_intake_target_ok(const char *raw, gp_srv_bad *bad);
/* api_nodes.c: /v1/nodes and /v1/nodes/{name}[/action] (rest: what follows /v1/nodes/). */
int gp__srv_nodes_route(gp_srv_state *s, gp_srv_req *r, const char *rest, int64_t now,
                        gp_err *err);
/* api_queues.c: /v1/queues and /v1/queues/{name} (name: what follows /v1/queues/). */
int gp__srv_queues_route(gp_srv_state *s, gp_srv_req *r, const char *name, gp_err *err);
/* whoami.c: GET /v1/whoami, the token's user and role. */
int gp__srv_whoami_route(gp_srv_state *s, gp_srv_req *r);
/* POST /v1/jobs/{id}/requeue (requeue_api.c): the job's owner, an admin, or the job itself
 * with its step credential. */
bool gp__srv_requeue_path(const char *path, char *job_id, size_t size);
int gp__srv_requeue_route(gp_srv_state *s, gp_srv_req *r, const char *id, int64_t now, gp_err *err);
/* /v1/services and /v1/services/{name}[/action] (rest: what follows /v1/services). */
int gp__srv_services_route(struct gp_srv_state *s, struct gp_srv_req *r, const char *rest, int64_t now,
                           gp_err *err);
/* /v1/reservations and /v1/reservations/{name} (reservations_api.c; rest: what follows
 * /v1/reservations). */
int gp__srv_reservations_route(gp_srv_state *s, struct gp_srv_req *r, const char *rest, int64_t now,
                               gp_err *err);

#endif
