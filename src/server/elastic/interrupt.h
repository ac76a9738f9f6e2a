/* SPDX-License-Identifier: Apache-2.0 */
/* Spot interruption notices (interrupt.c): a node that will be reclaimed is drained and
 * its jobs stopped within the time left, then requeued where they allow it.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_INTERRUPT_H
#define GP_SERVER_INTERRUPT_H

#include <stdbool.h>
#include <stdint.h>

#include "server/state/server_int.h"

/* The sources a notice comes from, for the metrics: aws, gcp, azure, admin, other. */
extern const char *const gp__srv_interrupt_sources[GP_SRV_INTERRUPT_SOURCES];
typedef struct gp_srv_interrupt {
  int64_t deadline;     /* epoch seconds the node goes */
  const char *source;   /* aws, gcp, azure, admin (anything else counts as other) */
  const char *detail;   /* what the notice said, for the log; may be NULL */
  int64_t noticed_ms;   /* epoch ms the notice was seen; 0: not known */
} gp_srv_interrupt;
/* The node will be reclaimed at in->deadline: it is drained, and each running job on it is
 * stopped ("interrupted") with its grace capped to the time left, then requeued when it
 * allows it. A node already drained for an interruption is left as it is (a repeated notice
 * changes nothing). *ret_stopped: the jobs stopped (may be NULL). */
int gp__srv_node_interrupt(gp_srv_state *s, gp_srv_node *n, const gp_srv_interrupt *in,
                           int64_t now_s, int *ret_stopped, gp_err *err);
/* True when the node is drained for an interruption. */
bool gp__srv_node_interrupted(const gp_srv_node *n);

/* POST /v1/nodes/{name}/interrupt (interrupt.c). */
int gp__srv_interrupt_route(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, int64_t now_s,
                            gp_err *err);

#endif
