/* SPDX-License-Identifier: Apache-2.0 */
/* What an agent says its node holds against what the server believes runs there
 * (node_report.c, docs/internals/protocol.md "Reconciliation"). */
#ifndef GP_SERVER_NODE_REPORT_H
#define GP_SERVER_NODE_REPORT_H

#include "server/state/state.h"

/* Keeps the job lists of a heartbeat (`jobs`: running, `ended`: ended, end not yet sent);
 * a heartbeat without a readable list leaves the node unchecked until the next one. */
void gp__srv_node_report_take(gp_srv_node *n, const json_t *jobs, const json_t *ended);
/* The agent re-registered (its list was reconciled then) or the node went down. */
void gp__srv_node_report_reset(gp_srv_node *n);
/* Ends each running job that a live node's agent has not listed for a grace of a heartbeat
 * period and at least two heartbeats, and that has no start order waiting for that agent:
 * its end was lost (requeued or failed as for a lost node; a stopping job ends as its stop
 * asked). Its GPUs are free again. */
int gp__srv_node_reports_check(gp_srv_state *s, int64_t now_s, int64_t now_ms, gp_err *err);

#endif
