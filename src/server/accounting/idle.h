/* SPDX-License-Identifier: Apache-2.0 */
/* The queues' idle-GPU policy acting on running jobs (idle.c): measuring each job's
 * idleness from the ledger's figures and acting once per idle stretch. What a rule says
 * of a job, read without acting, is the state's (idle_rule.c, in state.h).
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_IDLE_H
#define GP_SERVER_IDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "server/state/state.h"

/* An agent reported the job's use: its idleness is measured again from the ledger's
 * figures; `known` false (the report had no SM figure) makes its use unknown. */
void gp__srv_idle_measure(gp_srv_state *s, gp_srv_job *j, bool known, int64_t now);
/* A run ended: its idleness is forgotten. */
void gp__srv_idle_reset(gp_srv_job *j);
/* Acts on the running jobs idle past their queue's rule: once per idle stretch, an `idle`
 * event with the figures, then a notice, or a stop for a requeue or a cancel. */
int gp__srv_idle_tick(gp_srv_state *s, int64_t now, gp_err *err);

#endif
