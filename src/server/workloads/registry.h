/* SPDX-License-Identifier: Apache-2.0 */
/* Registry credentials per user and pool-wide (registry.c). */
#ifndef GP_SERVER_REGISTRY_H
#define GP_SERVER_REGISTRY_H

#include "server/state/state.h"

struct gp_srv_req;

#define GP_SRV_SETTING_REGISTRY "registry/"           /* + user/registry */
#define GP_SRV_SETTING_REGISTRY_POOL "registry-pool/" /* + registry */

/* A stored credential at load (name: the whole setting name). */
void gp__srv_registry_loaded(gp_srv_state *s, const char *name, const char *doc);
/* GET /v1/registries, PUT|DELETE /v1/registries/REG[?pool=true]; rest: after "/v1/registries". */
int gp__srv_registry_route(gp_srv_state *s, struct gp_srv_req *r, const char *rest, gp_err *err);
/* The start order `o` as sent to its node, with its job owner's credential for the job
 * image's registry (else the pool's): a new text, or NULL to send o->doc as it is. */
char *gp__srv_registry_order_doc(const gp_srv_state *s, const gp_srv_order *o);
void gp__srv_registry_free(gp_srv_state *s);

#endif
