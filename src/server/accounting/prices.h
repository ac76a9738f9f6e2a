/* SPDX-License-Identifier: Apache-2.0 */
/* The prices' own record (prices.c), behind gp_srv_state.pricing: the catalogue in force
 * and the one an admin set through PUT /v1/prices (kept in the store as the
 * GP_SRV_SETTING_PRICES setting, read back at load through the SETTING hook). NULL until
 * the setting or the load's end makes it; freed with the state (parts.c). Budgets,
 * metrics, reports and advice read the catalogue through gp__srv_prices.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_PRICES_H
#define GP_SERVER_PRICES_H

#include <jansson.h>

#include "server/state/server_int.h"

struct gp_prices;

/* The store setting that holds the catalogue an admin set through PUT /v1/prices. */
#define GP_SRV_SETTING_PRICES "prices"

/* The catalogue in force (borrowed: valid until it changes, on the state thread), NULL:
 * none. */
const struct gp_prices *gp__srv_prices(const gp_srv_state *s);
/* The same as a new reference (gp_prices_free), for a reader that outlives the state
 * thread's turn (reports and advice run on HTTP threads); NULL: none. */
struct gp_prices *gp__srv_prices_ref(const gp_srv_state *s);
/* The stored admin's catalogue (JSON text), read at load; put in force by
 * gp__srv_prices_init. */
void gp__srv_prices_loaded(gp_srv_state *s, const char *doc);
/* Puts the catalogue in force: the admin's when it reads, else the config's. */
int gp__srv_prices_init(gp_srv_state *s, gp_err *err);
/* The catalogue in force as the API shows it, with its source ("config", "admin", "none"). */
json_t *gp__srv_prices_json(const gp_srv_state *s);
void gp__srv_prices_free(gp_srv_state *s);

/* prices.c: GET, PUT and DELETE /v1/prices. */
int gp__srv_prices_route(gp_srv_state *s, gp_srv_req *r, gp_err *err);

#endif
