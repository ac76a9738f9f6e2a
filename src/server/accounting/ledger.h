/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger's own record (ledger.c), behind gp_srv_state.ledger: whether the ledger's
 * writes are off (GPOOL_LEDGER_OFF=1, a benchmark switch; a follower and an HA server
 * still loading, which never write), and the totals of the intervals closed since the
 * server started per (queue, model, capacity), which metrics and budgets read through
 * gp__srv_usage_totals and which a reload carries over (gp__srv_usage_adopt). NULL until
 * used; freed with the state (parts.c). The ledger's intervals themselves are declared in
 * state.h (ledger.c's section).
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_LEDGER_H
#define GP_SERVER_LEDGER_H

#include <stdbool.h>

#include "server/state/state.h"

/* Whether GPOOL_LEDGER_OFF=1 (read once, when the server starts). */
bool gp__srv_ledger_off_env(void);
/* Turns the ledger's writes to the store off (or on again) for state s: intervals,
 * figures and fair-share charges stay in memory only. Made states start with them on
 * unless GPOOL_LEDGER_OFF=1 (parts.c). */
void gp__srv_ledger_set_off(gp_srv_state *s, bool off);
bool gp__srv_ledger_is_off(const gp_srv_state *s);
/* Frees the ledger's record of s (NULL: nothing). */
void gp__srv_ledger_free(gp_srv_state *s);
/* After a reload: the new state takes the old one's totals (they are the server's since it
 * started, not the store's); its own off switch stays as it was made. */
void gp__srv_usage_adopt(gp_srv_state *s, gp_srv_state *old);

#endif
