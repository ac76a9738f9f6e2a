/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's event queue: a binary min-heap ordered by (time, kind, sequence number), so
 * events at one instant come out in a fixed order (completions before failures) and ties
 * fall back to the order they were scheduled: the replay is deterministic. Internal to
 * src/sim/replay. */
#ifndef GP_SIM_REPLAY_HEAP_H
#define GP_SIM_REPLAY_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

typedef enum gp__sim_ev_kind {
  GP__EV_COMPLETE = 0, /* a run ends: work done or time limit reached */
  GP__EV_GRACE_END,    /* a preempted job's grace period is over: it lets go of its GPUs */
  GP__EV_NODE_FAIL,
  GP__EV_NODE_REPAIR,
  GP__EV_IDLE,         /* a run's idle stretch has lasted the idle policy's window */
  GP__EV_SPOT_NOTICE,  /* a spot node's interruption notice: it drains, jobs checkpoint */
  GP__EV_SPOT_RECLAIM, /* a spot node is taken back: what still runs there is cut */
  GP__EV_SPOT_BACK,    /* its replacement is up (after the provider delay) */
  GP__EV_NODE_UP,      /* a provider node asked for by autoscaling is up (id: its creation) */
  GP__EV_SCALE_CHECK,  /* a provider node (id) has been empty for scale_down_after */
  GP__EV_SCALE_TICK,   /* an autoscaling pass for the jobs that became pending */
} gp__sim_ev_kind;

typedef struct gp__sim_event {
  gp_time t;
  uint64_t seq;
  int kind;
  int id;        /* job or node index (GP__EV_NODE_UP: the creation) */
  uint32_t gen;  /* the job's run generation when scheduled (spot events: the node's life):
                    stale events are dropped */
} gp__sim_event;

typedef struct gp__sim_heap {
  size_t n, cap;
  uint64_t next_seq;
  gp__sim_event *ev;
} gp__sim_heap;

void gp__sim_heap_push(gp__sim_heap *h, gp_time t, int kind, int id, uint32_t gen);
/* Removes the earliest event into *ret; the heap must not be empty. */
void gp__sim_heap_pop(gp__sim_heap *h, gp__sim_event *ret);
static inline const gp__sim_event *gp__sim_heap_top(const gp__sim_heap *h) { return h->n ? &h->ev[0] : NULL; }
void gp__sim_heap_done(gp__sim_heap *h);

#endif
