/* SPDX-License-Identifier: Apache-2.0 */
/* The start orders a scheduling cycle sends to agents (start_order.c): each task's
 * order, and the run's rendezvous port.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_START_ORDER_H
#define GP_SERVER_START_ORDER_H

#include <jansson.h>

#include "server/state/state.h"

/* The start order of task `task` of a job the plan starts, built from the protocol's start
 * struct (start_order.c); a new reference. */
json_t *gp__srv_start_order(const gp_srv_state *s, const gp_srv_job *j, int task);
/* This run's rendezvous port (MASTER_PORT): a function of the job's id and run, moved to the
 * next port while another running job with its task 0 on the same node holds it. */
int gp__srv_master_port(const gp_srv_state *s, const gp_srv_job *j);

#endif
