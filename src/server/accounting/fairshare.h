/* SPDX-License-Identifier: Apache-2.0 */
/* Fair share over time on the server (fairshare.c, docs/scheduling.md): decayed usage per
 * queue node and per (leaf queue, user), charged in the transaction that closes a job's
 * ledger intervals, kept in the store as settings "fairshare/<queue>" and
 * "fairshare/<queue>:<user>" so that a restart changes nothing, handed to the scheduler
 * through the view (gp_view.usage), and shown by GET /v1/shares (`gpool shares`, `gpool
 * why`) and metrics. */
#ifndef GP_SERVER_FAIRSHARE_H
#define GP_SERVER_FAIRSHARE_H

#include <jansson.h>
#include <stdint.h>

#include "server/state/state.h"
#include "util/buf.h"

#define GP_SRV_SETTING_FAIRSHARE "fairshare/" /* + queue, or queue ":" user */
#define GP_SRV_FAIRSHARE_REFRESH_S 60         /* the view's usage is recomputed this often */

void gp__srv_fairshare_free(gp_srv_state *s);
/* A stored entry (load_setting): name without the prefix, its JSON {"v": , "at": }. An
 * entry that does not read is skipped with a line on stderr. */
void gp__srv_fairshare_loaded(gp_srv_state *s, const char *key, const char *doc);
/* Charges the run of job j that ends at `now` (its GPUs' shares weighted by model, over
 * the capacity up now) to its leaf, every ancestor and (leaf, user); writes them to the
 * store in the caller's transaction. */
int gp__srv_fairshare_charge(gp_srv_state *s, const gp_srv_job *j, int64_t now, gp_err *err);
/* Puts the usage in the view that gp__srv_view_sync just made (recomputed when a charge
 * happened or GP_SRV_FAIRSHARE_REFRESH_S passed; the view's rev changes then). */
void gp__srv_fairshare_view(gp_srv_state *s, int64_t now);
/* GET /v1/shares. */
struct gp_srv_req;
int gp__srv_shares_route(gp_srv_state *s, struct gp_srv_req *r, int64_t now);
/* gpool_fairshare_* metrics. */
void gp__srv_fairshare_metrics(gp_srv_state *s, int64_t now, gp_buf *out);

#endif
