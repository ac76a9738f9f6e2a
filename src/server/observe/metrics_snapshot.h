/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics (metrics_snapshot.c): the Prometheus text of every part's figures, taken on
 * the state thread.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_METRICS_SNAPSHOT_H
#define GP_SERVER_METRICS_SNAPSHOT_H

#include "server/state/state.h"

/* GET /metrics body (Prometheus text). */
char *gp__srv_metrics_text(const gp_srv_state *s);

#endif
