/* SPDX-License-Identifier: Apache-2.0 */
/* A scheduling cycle (schedule.c): the autoscaler before, the core's step on the kept
 * view, the plan applied (starts, stops, preemptions, reservations' reasons), the
 * autoscaler after.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_SCHEDULE_H
#define GP_SERVER_SCHEDULE_H

#include <stdint.h>

#include "server/state/state.h"

/* Builds a view, runs the core, applies the plan (persisting everything). */
int gp__srv_schedule(gp_srv_state *s, int64_t now, gp_err *err);

#endif
