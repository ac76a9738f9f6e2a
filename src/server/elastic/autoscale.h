/* SPDX-License-Identifier: Apache-2.0 */
/* The server's autoscaler (docs/providers.md, "Autoscaling"): after a scheduling step it
 * asks the core (gp_scale_propose) which nodes to create and which provider nodes to give
 * back, and carries that out through the node templates' providers. Provider calls run on
 * worker threads, never on the state thread, so a slow provider delays neither
 * scheduling nor the API; their answers come back to the state thread, which alone
 * changes the cluster state. The autoscaler belongs to the server, not to a gp_srv_state,
 * so what it knows (instances being created, backoffs, counters) survives a reload of the
 * state; what it cannot keep over a restart it asks back of each provider (`list`).
 *
 * Internal to src/server (gp__srv_ names). State thread only, but gp__srv_autoscale_new and
 * gp__srv_autoscale_free. */
#ifndef GP_SERVER_AUTOSCALE_H
#define GP_SERVER_AUTOSCALE_H

#include <jansson.h>
#include <stdint.h>

#include "core/plan.h"
#include "server/state/state.h"
#include "util/buf.h"

typedef struct gp_srv_autoscale gp_srv_autoscale;

/* NULL when the config has no node templates (a fixed fleet). Starts the workers and
 * queues each template's `list`, whose answer adopts the instances that exist. */
gp_srv_autoscale *gp__srv_autoscale_new(const gp_server_config *cfg);
/* Stops the workers (a call in flight runs to its deadline at most). Accepts NULL. */
void gp__srv_autoscale_free(gp_srv_autoscale *a);

/* The templates' shapes for the scheduler's view (gp_view.templates), n in *ret_n. */
const gp_template *gp__srv_autoscale_templates(const gp_srv_autoscale *a, int *ret_n);

/* Before a step: takes in the answers of finished provider calls, counts created nodes
 * whose agents registered (cordoning one with fewer GPUs than promised), deletes instances
 * past resume_timeout and provider nodes whose spot interruption is over, so that the step
 * sees the fleet as it is. */
int gp__srv_autoscale_before(gp_srv_state *s, int64_t now, gp_err *err);
/* After a step that made `plan` from view `v` (with its pending list): proposes (at most
 * every `interval`), calls the providers for the creations, starts the deletions, and
 * writes each pending job's scale note into its pending reason. */
int gp__srv_autoscale_after(gp_srv_state *s, const gp_view *v, gp_plan *plan, int64_t now,
                            gp_err *err);

/* Could nodes of some template hold this request (gp_scale_could_hold)? */
bool gp__srv_autoscale_could_run(const gp_srv_autoscale *a, const gp_request *r);

/* GET /v1/templates (users and admins). */
int gp__srv_templates_route(gp_srv_state *s, struct gp_srv_req *r, int64_t now, gp_err *err);
/* ---- fleet.c ---- */
/* Spells the job's GPU models as the fleet (or a node template) does ("h100-80gb" ->
 * "H100-80GB"), so that the core, which compares model names exactly, finds them. */
void gp__srv_job_fleet_models(const gp_srv_state *s, gp_srv_job *j);
/* A submission that no node of the fleet, nor of a node template, could ever run (checked
 * at submit time). */
int gp__srv_check_feasible(gp_srv_state *s, const gp_srv_job *j, gp_err *err);

/* Appends the autoscaler's Prometheus families to `out` (nothing when a is NULL). */
void gp__srv_autoscale_metrics(const gp_srv_state *s, gp_buf *out);

#endif
